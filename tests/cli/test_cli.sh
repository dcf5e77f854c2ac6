#!/bin/bash
# The command line as a user meets it: every case runs the seqcl binary and
# checks the exit status, that stderr names the option, variable, file or line
# concerned, that no message repeats its prefix ("seqcl forward: forward:"),
# and, where a case has outputs, that nothing is left at them.
#
#   test_cli.sh SEQCL_BINARY SOURCE_ROOT [GROUP...]
#
# GROUP: options env errors train progress info (default: all). Runs on the
# host path (--device cpu), so it needs no OpenCL device.
set -u
seqcl=$1
src_root=$2
shift 2
groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=(options env errors train progress info)

work=$(mktemp -d "${TMPDIR:-/tmp}/seqcl-cli-XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
gold=$src_root/tests/golden/uni1_additive_zeros_state
gold_bf16=$src_root/tests/golden/bf16_bi1_general_bridge_ctx
gold_none=$src_root/tests/golden/uni1_none_zeros_state # attention.score "none"
export SEQCL_DEVICE=cpu
unset SEQCL_LOG SEQCL_THREADS SEQCL_KERNEL_DIR
failures=0
cases=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# run_case NAME STATUS "WORD|WORD..." -- ARGS...   (words: each must be in stderr)
run_case() {
  local name=$1 want=$2 words=$3
  shift 4
  cases=$((cases + 1))
  if [ "$1" = env ]; then # env VAR=VALUE... "$seqcl" ARGS
    "$@" >"$work/out" 2>"$work/err" </dev/null
  else
    "$seqcl" "$@" >"$work/out" 2>"$work/err" </dev/null
  fi
  local got=$?
  if [ "$got" != "$want" ]; then
    fail "$name: exit $got, want $want: $(head -c 600 "$work/err")"
    return
  fi
  local IFS='|'
  for w in $words; do
    grep -qF -- "$w" "$work/err" || fail "$name: stderr does not name '$w': $(head -c 600 "$work/err")"
  done
  if grep -qE 'seqcl ([a-z]+)( [a-z]+)?: \1: ' "$work/err"; then
    fail "$name: doubled prefix: $(head -c 300 "$work/err")"
  fi
}

absent() {
  for p in "$@"; do [ -e "$p" ] && fail "$p was left behind"; done
}

printf '1 2 3\n4 5\n' >src2.txt
printf '10 1 2 11\n10 3 11\n' >tgt2.txt
printf '1 2 11\n10 3 11\n' >tgt2_nobos.txt
printf '1 2 11\n10\n' >tgt2_nobos_short.txt

group_options() {
  # -v and --opt=value anywhere, after the command and among its options
  run_case "check -v at the end, --opt=value" 0 "" -- check --op=masked_softmax \
    --shape=N=2,S=3 --device=cpu -v
  grep -q "passed" out || fail "check with --opt=value did not run"
  run_case "info -v" 0 "" -- info -v --model="$gold"
  run_case "decode --beam=3 matches --beam 3" 0 "" -- decode --model "$gold" --src "$gold/src.txt" \
    --beam=3 --out=beam.txt
  cmp -s beam.txt "$gold/beam3.txt" || fail "--beam=3 output differs from the fixture"
  # one wording for every number
  run_case "train --lr -1" 2 "--lr: '-1' is not a positive number" -- train --task reverse \
    --lr -1 --save m
  run_case "train --clip x" 2 "--clip: 'x' is not a non-negative number" -- train --task reverse \
    --clip x --save m
  run_case "decode --beam 0" 2 "--beam: '0' is not an integer in [1, 16]" -- decode \
    --model "$gold" --src "$gold/src.txt" --beam 0
  run_case "forward --batch-size 1.5" 2 "--batch-size: '1.5' is not a positive integer" -- \
    forward --model "$gold" --src src2.txt --tgt tgt2.txt --out f.st --batch-size 1.5
  run_case "check --seed -3" 2 "--seed: '-3' is not a non-negative integer" -- check --seed -3
  run_case "heatmap --line 0" 2 "--line: '0' is not a positive integer" -- heatmap \
    --alignments a.st --src src2.txt --line 0
  run_case "demo --steps abc" 2 "--steps: 'abc' is not a positive integer" -- demo --steps abc
  run_case "bench --reps 0" 2 "--reps: '0' is not an integer in [1, 1000000]" -- bench --reps 0
  run_case "bench --beam without a model" 2 "--beam needs --model and --src" -- bench --beam 2
  run_case "bench --grid --model" 2 "--grid and --model are separate modes" -- bench --grid \
    --model "$gold" --src "$gold/src.txt"
  # the peer mode's columns: the step's FLOPs and bytes counted from the shapes
  # (H_d = H_e = A = 8, D 6, V 12, 2 lines x beam 2 = 4 rows, S 6; the input
  # product over the context alone, the embedding table's rows gathered instead:
  # products 2*4*(32*8 + 24*8 + 12*8) = 4352, attention 4*6*(3*8 + 2*8) = 960;
  # floats: weights 544, keys 4*6*(8 + 8) = 384, table rows 4*24 = 96)
  run_case "bench --model --beam" 0 "" -- bench --device cpu --model "$gold" \
    --src "$gold/src.txt" --batch-size 2 --beam 2 --max-steps 3 --reps 1 --json bench.json
  json_near() { # KEY VALUE: the number bench.json holds for KEY is VALUE to 1e-9
    awk -v k="\"$1\":" -v want="$2" '$1 == k { v = $2 + 0; d = v - want; ok = d < 1e-9 && d > -1e-9 }
      END { exit ok ? 0 : 1 }' bench.json
  }
  json_near step_mflop 0.005312 || fail "bench: step FLOPs: $(grep mflop bench.json)"
  json_near step_weight_mb 0.004096 || fail "bench: step bytes: $(grep _mb bench.json)"
  grep -q '"process_tokens_per_s": [1-9]' bench.json || fail "bench: no whole-process figure"
  grep -q '"bound": "copy"' bench.json || fail "bench: 4 rows are bound by bandwidth"
  # the decode heatmap options have the heatmap command's names; the old ones stay
  run_case "decode --svg --line" 0 "" -- decode --model "$gold" --src "$gold/src.txt" \
    --svg a.svg --line 2 --out o.txt
  [ -s a.svg ] || fail "decode --svg wrote no picture"
  run_case "decode --heatmap --heatmap-line (aliases)" 0 "" -- decode --model "$gold" \
    --src "$gold/src.txt" --heatmap b.svg --heatmap-line 2 --out o.txt
  cmp -s a.svg b.svg || fail "--heatmap and --svg draw different pictures"
}

group_env() {
  run_case "SEQCL_THREADS=abc" 2 "SEQCL_THREADS|abc" -- env SEQCL_THREADS=abc "$seqcl" devices
  run_case "SEQCL_THREADS=0" 2 "SEQCL_THREADS" -- env SEQCL_THREADS=0 "$seqcl" info --model "$gold"
  run_case "SEQCL_HOST_ISA=avx" 2 "SEQCL_HOST_ISA|avx" -- env SEQCL_HOST_ISA=avx "$seqcl" devices
  run_case "SEQCL_HOST_ISA=base" 0 "" -- env SEQCL_HOST_ISA=base "$seqcl" decode --model "$gold" \
    --src "$gold/src.txt" --out o_base.txt
  run_case "SEQCL_HOST_ISA=auto" 0 "" -- env SEQCL_HOST_ISA=auto "$seqcl" decode --model "$gold" \
    --src "$gold/src.txt" --out o_auto.txt
  [ -s o_base.txt ] && [ -s o_auto.txt ] || fail "SEQCL_HOST_ISA decodes wrote nothing"
  run_case "SEQCL_LOG=loud" 2 "SEQCL_LOG|loud" -- env SEQCL_LOG=loud "$seqcl" devices
  run_case "SEQCL_CACHE=no" 2 "SEQCL_CACHE" -- env SEQCL_CACHE=no "$seqcl" devices
  run_case "SEQCL_SELFCHECK=maybe" 2 "SEQCL_SELFCHECK" -- env SEQCL_SELFCHECK=maybe "$seqcl" devices
  run_case "SEQCL_KERNEL_DIR missing" 2 "SEQCL_KERNEL_DIR" -- env SEQCL_KERNEL_DIR=/nonexistent \
    "$seqcl" devices
  run_case "SEQCL_LOG=info" 0 "device cpu" -- env SEQCL_LOG=info "$seqcl" decode --model "$gold" \
    --src "$gold/src.txt"
  run_case "SEQCL_GEMM=fastest" 2 "SEQCL_GEMM='fastest'|environment|small" -- \
    env SEQCL_GEMM=fastest "$seqcl" decode --model "$gold" --src "$gold/src.txt"
  run_case "SEQCL_KERNELS=fast" 2 "SEQCL_KERNELS='fast'|environment|gpu" -- \
    env SEQCL_KERNELS=fast "$seqcl" decode --model "$gold" --src "$gold/src.txt"
  # the test-only hooks (builds with fault injection): a value they do not know
  # is reported, not silently unused
  if ! env SEQCL_FAULT=alloc:3 "$seqcl" decode --model "$gold" --src "$gold/src.txt" \
    >/dev/null 2>&1; then
    run_case "SEQCL_FAULT=often" 0 "SEQCL_FAULT='often'|alloc:N" -- \
      env SEQCL_FAULT=often "$seqcl" decode --model "$gold" --src "$gold/src.txt"
    run_case "SEQCL_FAULT_GEMM=all" 0 "SEQCL_FAULT_GEMM='all'|batched" -- \
      env SEQCL_FAULT_GEMM=all "$seqcl" decode --model "$gold" --src "$gold/src.txt"
    # CLBlast is loaded when an OpenCL device opens: without it, that open
    # fails with the loader's reason, and nothing is written
    if "$seqcl" devices 2>/dev/null | grep -q ' opencl:0 '; then
      run_case "CLBlast missing" 1 "opening opencl:0|cannot load CLBlast|libclblast" -- \
        env SEQCL_FAULT_GEMM=unloadable "$seqcl" decode --model "$gold" --src "$gold/src.txt" \
        --device opencl:0 --out nolib.txt
      absent nolib.txt
    fi
  fi
  run_case "SEQCL_DEVICE matches nothing" 2 "SEQCL_DEVICE='opencl:99'|environment|--device" -- \
    env SEQCL_DEVICE=opencl:99 "$seqcl" decode --model "$gold" --src "$gold/src.txt"
  run_case "SEQCL_DEVICE malformed, check" 2 "SEQCL_DEVICE='bogus'|environment" -- \
    env SEQCL_DEVICE=bogus "$seqcl" check --op masked_softmax
  run_case "SEQCL_DEVICE bad, --device wins" 0 "" -- env SEQCL_DEVICE=bogus "$seqcl" decode \
    --model "$gold" --src "$gold/src.txt" --device cpu
}

group_errors() {
  # options that would silently do nothing are errors
  run_case "--length-penalty with greedy" 2 "--length-penalty|--beam" -- decode --model "$gold" \
    --src "$gold/src.txt" --length-penalty 0.5 --out o1.txt
  absent o1.txt
  run_case "--heatmap-line without --heatmap" 2 "--heatmap-line|--heatmap OUT.svg" -- decode \
    --model "$gold" --src "$gold/src.txt" --heatmap-line 2 --out o2.txt
  absent o2.txt
  run_case "--line without --svg" 2 "--line|--svg" -- decode --model "$gold" \
    --src "$gold/src.txt" --line 2 --out o3.txt
  absent o3.txt
  # an option given twice would have its first value ignored
  run_case "--beam given twice" 2 "--beam given twice|'3', then '1'" -- decode --model "$gold" \
    --src "$gold/src.txt" --beam 3 --beam=1 --out o4.txt
  absent o4.txt
  run_case "train --lr given twice" 2 "--lr given twice" -- train --task reverse --lr 0.01 \
    --steps 2 --lr 0.02 --save r_twice
  absent r_twice
  run_case "check --shape Q=3" 2 "Q|masked_softmax" -- check --op masked_softmax --shape Q=3
  run_case "forward without BOS" 2 "tgt2_nobos.txt:1|BOS" -- forward --model "$gold" \
    --src src2.txt --tgt tgt2_nobos.txt --out f1.st
  run_case "forward: the first bad target line is named" 2 "tgt2_nobos_short.txt:1|BOS" -- \
    forward --model "$gold" --src src2.txt --tgt tgt2_nobos_short.txt --out f1.st
  absent f1.st
  # a full disk after the work is a runtime failure (exit 1) that says so, for
  # files written at the end and for what a command prints
  if [ -c /dev/full ]; then
    for c in "info --model $gold" "devices" "decode --model $gold --src $gold/src.txt"; do
      # shellcheck disable=SC2086
      "$seqcl" $c >/dev/full 2>err.full
      rc=$?
      { [ $rc = 1 ] && grep -qF "standard output: write failed" err.full; } ||
        fail "$c >/dev/full: exit $rc, want 1 naming standard output: $(cat err.full)"
    done
    run_case "forward --out /dev/full" 1 "/dev/full|write failed" -- forward --model "$gold" \
      --src "$gold/src.txt" --tgt "$gold/tgt.txt" --out /dev/full
  fi
  "$seqcl" decode --model "$gold" --src "$gold/src.txt" --alignments al.st >/dev/null 2>&1 ||
    fail "decode --alignments failed"
  run_case "heatmap, source of another line count" 2 "src2.txt|2 lines|al.st" -- heatmap \
    --alignments al.st --src src2.txt --svg h1.svg
  absent h1.svg
  run_case "heatmap, matching source" 0 "" -- heatmap --alignments al.st --src "$gold/src.txt"
  # a fixed-context model has no alignments: asking for them is a usage error
  run_case "decode --alignments, score none" 2 "--alignments|none|$gold_none/config.json" -- \
    decode --model "$gold_none" --src "$gold_none/src.txt" --alignments al5.st --out o5.txt
  absent al5.st o5.txt
  run_case "decode --svg, score none" 2 "--svg|none|alignments" -- decode --model "$gold_none" \
    --src "$gold_none/src.txt" --svg h5.svg
  absent h5.svg
  run_case "decode --heatmap, score none" 2 "--heatmap|none" -- decode --model "$gold_none" \
    --src "$gold_none/src.txt" --heatmap h6.svg
  absent h6.svg
  run_case "forward, score none" 0 "" -- forward --model "$gold_none" --src "$gold_none/src.txt" \
    --tgt "$gold_none/tgt.txt" --out f5.st
  { grep -qF '"logits"' f5.st && ! grep -qF '"alignments"' f5.st; } ||
    fail "forward of a score none model: want logits and no alignments tensor"
  run_case "heatmap of a score none forward file" 2 "f5.st|alignments|none" -- heatmap \
    --alignments f5.st --src "$gold_none/src.txt"
  run_case "train --valid-src alone" 2 "--valid-src|--valid-tgt" -- train --src src2.txt \
    --tgt tgt2.txt --config "$gold/config.json" --valid-src src2.txt --save m1
  absent m1
  run_case "train --steps 0" 2 "--steps: '0'" -- train --task reverse --steps 0 --save m0
  absent m0
  run_case "train files --steps 0" 2 "--steps: '0'" -- train --src src2.txt --tgt tgt2.txt \
    --config "$gold/config.json" --steps 0 --save m0
  absent m0
  # The load allocates three buffers on the host (the weights, the decoder's
  # table and the packed copy its product reads): the fourth is the decode's.
  if "$seqcl" --version >/dev/null && env SEQCL_FAULT=alloc:4 "$seqcl" decode --model "$gold" \
    --src "$gold/src.txt" >/dev/null 2>&1; then
    echo "note: fault injection is compiled out; allocation-failure cases skipped"
  else
    run_case "decode allocation failure names the options" 1 \
      "bytes|5 lines|--batch-size|--beam|--max-steps" -- env SEQCL_FAULT=alloc:4 "$seqcl" \
      decode --model "$gold" --src "$gold/src.txt" --out o4.txt
    absent o4.txt
    run_case "forward allocation failure names the option" 1 "bytes|--batch-size" -- \
      env SEQCL_FAULT=alloc:4 "$seqcl" forward --model "$gold" --src "$gold/src.txt" \
      --tgt "$gold/tgt.txt" --out f2.st
    absent f2.st
  fi
}

# Waits until a -v run has opened its device (it prints it), then a little
# longer, so that a Ctrl-C lands in the training loop.
started() {
  for _ in $(seq 600); do
    grep -q "device" "$1" 2>/dev/null && break
    sleep 0.1
  done
  sleep 1
}

# The step count of a checkpoint.
ckpt_step() { sed -n 's/^ *"step": \([0-9]*\),*/\1/p' "$1/checkpoint/training.json"; }

group_train() {
  # Ctrl-C during the reversal task saves and says how to continue
  "$seqcl" train -v --task reverse --length 3 --batch-size 8 --steps 100000000 --save rev \
    >/dev/null 2>err.rev &
  local pid=$!
  started err.rev
  kill -INT $pid
  wait $pid
  local rc=$?
  cases=$((cases + 1))
  [ $rc = 130 ] || fail "reverse Ctrl-C: exit $rc, want 130: $(cat err.rev)"
  grep -qF "seqcl train --resume rev" err.rev || fail "reverse Ctrl-C: no resume hint: $(cat err.rev)"
  [ -f rev/model.safetensors ] && [ -f rev/checkpoint/training.json ] ||
    fail "reverse Ctrl-C: the model or the checkpoint is missing"
  local s1
  s1=$(ckpt_step rev)
  # --resume DIR alone continues it (options, data stream, total from the checkpoint)
  "$seqcl" train -v --resume rev >/dev/null 2>err.rev2 &
  pid=$!
  started err.rev2
  kill -INT $pid
  wait $pid
  rc=$?
  cases=$((cases + 1))
  [ $rc = 130 ] || fail "reverse --resume alone: exit $rc, want 130: $(cat err.rev2)"
  local s2
  s2=$(ckpt_step rev)
  [ "${s2:-0}" -gt "${s1:-0}" ] || fail "reverse --resume alone: step $s1 -> $s2"
  grep -qF "of 100000000" err.rev2 || fail "reverse --resume alone lost the total: $(cat err.rev2)"

  # a resumed reversal run equals an uninterrupted one, bit for bit
  "$seqcl" train --task reverse --length 3 --steps 30 --save r30 >/dev/null 2>&1 ||
    fail "reverse 30 steps failed"
  "$seqcl" train --task reverse --length 3 --steps 12 --save r12 >/dev/null 2>&1 ||
    fail "reverse 12 steps failed"
  run_case "reverse --resume --steps 30" 0 "" -- train --resume r12 --steps 30
  cmp -s r12/model.safetensors r30/model.safetensors || fail "reverse: resumed weights differ"
  run_case "reverse resume, --lr differs" 2 "--lr 0.01|0.001" -- train --resume r12 --steps 40 \
    --lr 0.01
  run_case "reverse resume, --length differs" 2 "--length 5|3" -- train --resume r12 --steps 40 \
    --length 5
  run_case "reverse resume, nothing left to do" 2 "--steps|30" -- train --resume r12

  # token files: --resume DIR with only the new total, from another folder
  awk 'BEGIN { srand(3); for (i = 0; i < 64; i++) { n = 2 + int(rand() * 4); s = ""; t = "10";
         for (j = 0; j < n; j++) { d[j] = int(rand() * 10); s = s (j ? " " : "") d[j] }
         for (j = n - 1; j >= 0; j--) t = t " " d[j]; print s > "tr_src.txt"; print t " 11" > "tr_tgt.txt" } }'
  "$seqcl" train --src tr_src.txt --tgt tr_tgt.txt --config "$gold/config.json" --steps 20 \
    --batch-size 8 --save full >/dev/null 2>&1 || fail "files: 20 steps failed"
  "$seqcl" train --src tr_src.txt --tgt tr_tgt.txt --config "$gold/config.json" --steps 10 \
    --batch-size 8 --save half >/dev/null 2>&1 || fail "files: 10 steps failed"
  mkdir -p elsewhere
  (cd elsewhere && "$seqcl" train --resume ../half --steps 20 >../out 2>../err)
  cases=$((cases + 1))
  [ $? = 0 ] || fail "files --resume DIR --steps N: $(cat err)"
  cmp -s half/model.safetensors full/model.safetensors || fail "files: resumed weights differ"
  # the rate after a resume counts this run's steps only: resuming at step
  # 10000 for 3 more steps must not report thousands of steps per second
  "$seqcl" train --src tr_src.txt --tgt tr_tgt.txt --config "$gold/config.json" --steps 400 \
    --batch-size 2 --save many >/dev/null 2>err.many || fail "files: 400 steps failed"
  local r1
  r1=$(sed -n 's/^step 400\/400 .* \([0-9]*\)[.0-9]* steps\/s.*$/\1/p' err.many)
  "$seqcl" train --resume many --steps 403 >/dev/null 2>err.more || fail "files: resume failed"
  local r2
  r2=$(sed -n 's/^step 403\/403 .* \([0-9]*\)[.0-9]* steps\/s.*$/\1/p' err.more)
  cases=$((cases + 1))
  if [ -z "$r1" ] || [ -z "$r2" ] || [ "$r2" -gt $((r1 * 20 + 50)) ]; then
    fail "steps/s after a resume: $r2 (a fresh run: $r1): $(tail -2 err.more)"
  fi
  run_case "files resume, --src differs" 2 "--src|tr_tgt.txt|tr_src.txt" -- train --resume half \
    --steps 30 --src tr_tgt.txt
  run_case "files resume, --batch-size differs" 2 "--batch-size 4|8" -- train --resume half \
    --steps 30 --batch-size 4
  run_case "--task with a files checkpoint" 2 "--task" -- train --task reverse --resume half
}

group_progress() {
  awk 'BEGIN { srand(5); for (i = 0; i < 60000; i++) { n = 3 + int(rand() * 9); s = "";
         for (j = 0; j < n; j++) s = s (j ? " " : "") int(rand() * 10); print s } }' >big.txt
  awk '{ t = "10"; for (i = NF; i >= 1; i--) t = t " " $i; print t " 11" }' big.txt >big_t.txt
  # a terminal shows the bar (lines done, lines/s, ETA) on stderr; script(1) gives it one
  if command -v script >/dev/null; then
    cases=$((cases + 1))
    SEQCL_PROGRESS_AFTER=0 script -qec "$seqcl decode --model $gold --src big.txt --out tty.txt --batch-size 16" \
      /dev/null >tty.log 2>&1 </dev/null
    grep -q "lines/s" tty.log && grep -q "ETA" tty.log && grep -q "60000/60000 lines" tty.log ||
      fail "no progress bar on a terminal: $(head -c 300 tty.log)"
    cmp -s tty.txt <("$seqcl" decode --model "$gold" --src big.txt 2>/dev/null) ||
      fail "the output under a terminal differs"
    cases=$((cases + 1))
    SEQCL_PROGRESS_AFTER=0 script -qec "$seqcl decode -q --model $gold --src big.txt --out tty.txt --batch-size 16" \
      /dev/null >tty.log 2>&1 </dev/null
    ! grep -q "lines/s" tty.log || fail "--quiet still shows the bar"
    cases=$((cases + 1))
    SEQCL_PROGRESS_AFTER=0 script -qec "$seqcl forward --model $gold --src big.txt --tgt big_t.txt --out fw.st --batch-size 8" \
      /dev/null >tty.log 2>&1 </dev/null
    grep -q "lines/s" tty.log && grep -q "60000/60000 lines" tty.log ||
      fail "forward: no progress bar on a terminal: $(head -c 300 tty.log)"
  fi
  # not a terminal: nothing without -v, periodic plain lines with -v
  run_case "decode, no terminal, quiet by default" 0 "" -- decode --model "$gold" --src big.txt \
    --out nt.txt --batch-size 16
  [ -s err ] && fail "decode printed progress off a terminal without -v: $(head -c 200 err)"
  run_case "decode -v, no terminal" 0 "lines/s|60000/60000 lines" -- env SEQCL_PROGRESS_AFTER=0 \
    "$seqcl" decode -v --model "$gold" \
    --src big.txt --out nt.txt --batch-size 16
  run_case "forward -v, no terminal" 0 "lines/s|60000/60000 lines" -- env SEQCL_PROGRESS_AFTER=0 \
    "$seqcl" forward -v --model "$gold" \
    --src big.txt --tgt big_t.txt --out fw.st --batch-size 512
  run_case "SEQCL_PROGRESS_AFTER not a number" 2 "SEQCL_PROGRESS_AFTER|soon" -- \
    env SEQCL_PROGRESS_AFTER=soon "$seqcl" decode --model "$gold" --src big.txt
  # a pipe sees the first lines long before the last: each batch is written when final
  cases=$((cases + 1))
  "$seqcl" decode --model "$gold" --src big.txt --batch-size 16 2>/dev/null | python3 -c '
import sys, time
t0 = time.monotonic(); first = sys.stdin.readline(); t1 = time.monotonic()
rest = sys.stdin.read(); t2 = time.monotonic()
n = 1 + rest.count("\n")
print(f"{t1 - t0:.3f} {t2 - t0:.3f} {n}")' >stream.txt
  read -r first last n <stream.txt
  [ "$n" = 60000 ] || fail "streamed decode wrote $n lines"
  python3 -c "import sys; sys.exit(0 if $first < 0.5 * $last and $last > 0.3 else 1)" ||
    fail "decode to a pipe: first line after $first s, last after $last s (not streamed)"
  # a FIFO is written in place, as it goes
  mkfifo fifo
  cases=$((cases + 1))
  (cat fifo >fifo.txt) &
  "$seqcl" decode --model "$gold" --src "$gold/src.txt" --out fifo 2>err || fail "decode to a FIFO"
  wait
  cmp -s fifo.txt "$gold/greedy.txt" || fail "decode to a FIFO delivered other bytes"
  [ -p fifo ] || fail "the FIFO was replaced"
}

group_info() {
  run_case "info" 0 "" -- info --model "$gold"
  for w in '"score": "additive"' "encoder.embedding" "decoder.attention" "total" "1365" "F32" \
    "model.safetensors" "bytes"; do
    grep -qF -- "$w" out || fail "info does not print '$w'"
  done
  run_case "info bf16" 0 "" -- info --model "$gold_bf16"
  grep -q "BF16" out || fail "info does not show the on-disk dtype BF16"
  run_case "info, missing folder" 2 "nowhere" -- info --model nowhere
  run_case "info, no --model" 2 "--model" -- info
}

for g in "${groups[@]}"; do
  "group_$g"
done
echo "$cases cases, $failures failures"
[ "$failures" = 0 ]
