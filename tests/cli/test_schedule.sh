#!/bin/bash
# Training schedules through the binary (host path): --epochs, length-bucketed
# and token-capped batches, warm-up, decay on a plateau, patience, --keep-best,
# a new --lr on resume, --init-optimizer; a run of N steps and a run of N/2
# steps resumed for N/2 more give the same weights, optimizer state and best
# model bit for bit, with every schedule on.
#
#   test_schedule.sh SEQCL_BINARY SOURCE_ROOT
set -u
seqcl=$1
. "$(dirname "$0")/lib.sh"
enter_work sched

expect() { expect_sub train "$@"; }
same() { cmp -s "$2" "$3" || fail "$1: $2 and $3 differ"; }
has() { grep -qF -- "$2" "$3" || fail "$1: no '$2' in $3: $(grep -v '^step [0-9]*/' "$3" | head -c 600)"; }

# ragged reversal data: 1..8 digits, targets BOS 10, the digits reversed, EOS 11
gen() { awk -v seed="$1" -v n="$2" 'BEGIN{srand(seed); for(i=0;i<n;i++){l=1+int(rand()*8); s=""; t="10";
  for(j=0;j<l;j++){d[j]=int(rand()*10); s=s (j?" ":"") d[j]}; for(j=l-1;j>=0;j--) t=t " " d[j];
  print s > "src"seed".txt"; print t " 11" > "tgt"seed".txt"}}'; }
gen 1 400
gen 2 60
bi_additive_config cfg.json 12 10 11 16
data="--src src1.txt --tgt tgt1.txt --valid-src src2.txt --valid-tgt tgt2.txt --config cfg.json"

# --epochs: plain batches: ceil(3 x 400 / 32) = 38 steps
expect epochs_plain 0 "" $data --save e1 --epochs 3 --batch-size 32
has epochs_plain "trained steps 0..38 " out
# bucketed: windows of 4 x 32 lines cut into batches of 32: 13 batches an epoch
expect epochs_bucket 0 "" $data --save e2 --epochs 3 --batch-size 32 --bucket 4
has epochs_bucket "trained steps 0..39 " out
# token-capped batches are smaller: more steps for the same epochs
expect epochs_tokens 0 "" $data --save e3 --epochs 1 --batch-size 64 --batch-tokens 200
steps=$(sed -n 's/^trained steps 0\.\.\([0-9]*\) .*/\1/p' out)
[ -n "$steps" ] && [ "$steps" -gt 7 ] || fail "epochs_tokens: $steps steps (400 lines at <= 200 tokens need more than 7)"
grep -q '"bucket": 100' e3/checkpoint/training.json || fail "epochs_tokens: --batch-tokens did not imply --bucket 100"

# warm-up: the rate rises linearly (non-terminal progress prints every step of a 10-step run)
expect warmup 0 "" $data --save w1 --steps 10 --batch-size 16 --lr 0.01 --warmup 4
has warmup "step 1/10 loss" err
grep -q "^step 1/10 .* lr 0.0025 " err && grep -q "^step 4/10 .* lr 0.01 " err &&
  grep -q "^step 9/10 .* lr 0.01 " err || fail "warmup: rates $(grep -o 'step [0-9]*/10 loss [0-9.]* lr [0-9.e-]*' err | tr '\n' ';')"

# nothing is learnt at lr 1e-7: exact match stays 0, so after the first
# validation none improves: the rate decays at each, patience 2 stops the run
expect patience 0 "patience ran out: stopping|rate decayed" $data --save p1 --steps 100 --batch-size 16 --lr 1e-7 \
  --valid-every 5 --keep-best exact --lr-decay 0.5 --patience 2
has patience "stopped early: --patience ran out after step 15" out
has patience "saved model: the best validation's, after step 5" out
grep -q '"lr_scale": 0.25' p1/checkpoint/training.json || fail "patience: lr_scale not 0.25 after two decays"
# keep-best: the saved model is the one a run stopped at the best step has
expect best_ref 0 "" $data --save p2 --steps 5 --batch-size 16 --lr 1e-7
same keep_best p1/model.safetensors p2/model.safetensors
cmp -s p1/model.safetensors p1/checkpoint/model.safetensors && fail "keep_best: the checkpoint is not the last state"

# resume continues every schedule bit for bit: 60 steps == 30 + resume to 60
sched="$data --batch-size 24 --lr 0.02 --bucket 3 --batch-tokens 260 --warmup 8 --lr-decay 0.7 --patience 50 --keep-best ter --valid-every 6 --dropout 0.1 --seed 5"
expect full 0 "" $sched --save r1 --steps 60
expect half 0 "" $sched --save r2 --steps 30
expect resume 0 "" --resume r2 --steps 60
for f in model.safetensors checkpoint/model.safetensors checkpoint/optimizer.safetensors; do
  same resume_bits "r1/$f" "r2/$f"
done
grep -v '"src"\|"tgt"\|"valid_src"\|"valid_tgt"' r1/checkpoint/training.json >a.json
grep -v '"src"\|"tgt"\|"valid_src"\|"valid_tgt"' r2/checkpoint/training.json >b.json
same resume_state a.json b.json
# a stream setting cannot change on resume; the rate can
expect resume_bucket 2 "--bucket|checkpoint" --resume r2 --steps 70 --bucket 5
expect resume_lr 0 "" --resume r2 --steps 66 --lr 0.005
grep -q '"lr": 0.005' r2/checkpoint/training.json || fail "resume_lr: the new rate is not recorded"
# fine-tuning from --init with its Adam state
expect init_opt 0 "" --src src1.txt --tgt tgt1.txt --init r1 --init-optimizer --save f1 --steps 3
grep -q '"adam_offset": 60' f1/checkpoint/training.json || fail "init_opt: Adam's step not continued"
expect init_opt_no_init 2 "--init" $data --save f2 --init-optimizer
# bad uses
expect no_valid 2 "--valid-src" --src src1.txt --tgt tgt1.txt --config cfg.json --save x1 --keep-best loss
expect bad_metric 2 "--keep-best|'wer'" $data --save x2 --keep-best wer
expect bad_decay 2 "--lr-decay" $data --save x3 --lr-decay 1.5
expect reverse_sched 2 "--epochs" --task reverse --save x4 --epochs 2

[ "$failures" = 0 ] || { echo "$failures failure(s)" >&2; exit 1; }
echo "schedule: all cases passed"
