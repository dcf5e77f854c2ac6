#!/bin/bash
# seqcl eval through the binary: scores of a golden model's decoding and of
# existing files, and bad inputs (exit status 2 and a message naming the file
# and line or the option). Host path only.
#
#   test_eval.sh SEQCL_BINARY SOURCE_ROOT
set -u
seqcl=$1
gold=$2/tests/golden/uni1_additive_zeros_state
. "$(dirname "$0")/lib.sh" # before the cd: $0 may be relative
enter_work eval

# expect NAME STATUS "WORD|WORD" ARGS...: exit status, every word in stderr
expect() { expect_sub eval "$@"; }

# stdout must hold this line
has() { grep -qxF -- "$2" out || fail "$1: no line '$2' in: $(cat out)"; }

# The model's greedy output is PyTorch's (greedy.txt): everything matches. BLEU
# is not 100 because lines shorter than 4 tokens count 1 in the 4-gram
# denominator with no match (NLTK's rule).
expect greedy_self 0 "" --model "$gold" --src "$gold/src.txt" --ref "$gold/greedy.txt"
has greedy_self "exact: 100.00 % (5 of 5 lines; word error rate 0.00 %)"
has greedy_self "ter: 0.00 % (0 edits over 37 reference tokens)"
# beam 3 against PyTorch's beam-3 output
expect beam3_self 0 "" --model "$gold" --src "$gold/src.txt" --ref "$gold/beam3.txt" --beam 3 --metric exact
has beam3_self "exact: 100.00 % (5 of 5 lines; word error rate 0.00 %)"
grep -q '^ter' out && fail "beam3_self: --metric exact printed ter"
# training targets (BOS ... EOS) serve as references: BOS and EOS are dropped
expect targets 0 "" --model "$gold" --src "$gold/src.txt" --ref "$gold/tgt.txt" --metric ter
has targets "ter: 345.45 % (38 edits over 11 reference tokens)"

# --hyp: strings compared as given, empty lines allowed; BLEU is NLTK's
# (corpus_bleu([[r] for r in refs], hyps) * 100 = 61.4788...)
printf 'the cat sat on the mat\n\nà b c d e\n' >hyp.txt
printf 'the cat sat on a mat\nx y\nà b c d e f\n' >ref.txt
expect hyp_files 0 "" --hyp hyp.txt --ref ref.txt
has hyp_files "exact: 0.00 % (0 of 3 lines; word error rate 100.00 %)"
has hyp_files "ter: 28.57 % (4 edits over 14 reference tokens)"
/usr/bin/python3 - <<'PY' >want 2>/dev/null
from nltk.translate.bleu_score import corpus_bleu
h = [l.split() for l in open('hyp.txt', encoding='utf-8').read().splitlines()]
r = [[l.split()] for l in open('ref.txt', encoding='utf-8').read().splitlines()]
print('bleu: %.2f' % (100 * corpus_bleu(r, h)), end='')
PY
sed -i 's/ (precisions.*//' out
if [ -s want ]; then has hyp_bleu "$(cat want)"; else fail "hyp_bleu: no value from NLTK (python3-nltk for /usr/bin/python3)"; fi

# bad inputs
expect lines_differ 2 "hyp.txt has 3 lines|$gold/greedy.txt has 5" --hyp hyp.txt --ref "$gold/greedy.txt"
printf '1 2\n3 x 4\n' >bad_ref.txt
expect bad_ref_token 2 "bad_ref.txt:2|'x'" --model "$gold" --src "$gold/src.txt" --ref bad_ref.txt
printf '1 2\n3 99\n' >range_ref.txt
expect ref_out_of_range 2 "range_ref.txt:2|99" --model "$gold" --src "$gold/src.txt" --ref range_ref.txt
printf 'a\nb \xff c\n' >bad_utf8.txt
expect bad_utf8 2 "bad_utf8.txt:2|UTF-8" --hyp bad_utf8.txt --ref ref.txt
: >empty.txt
expect empty_ref 2 "empty.txt|empty" --hyp hyp.txt --ref empty.txt
expect missing_file 2 "nowhere.txt" --hyp nowhere.txt --ref ref.txt
expect no_ref 2 "--ref" --hyp hyp.txt
expect no_model 2 "--model" --src "$gold/src.txt" --ref ref.txt
expect hyp_and_model 2 "--hyp" --hyp hyp.txt --ref ref.txt --model "$gold"
expect bad_metric 2 "--metric|'wer'" --hyp hyp.txt --ref ref.txt --metric exact,wer
expect lp_greedy 2 "--length-penalty" --model "$gold" --src "$gold/src.txt" --ref ref.txt --length-penalty 1
expect bad_beam 2 "--beam" --model "$gold" --src "$gold/src.txt" --ref ref.txt --beam 0
expect bad_model 2 "nomodel" --model nomodel --src "$gold/src.txt" --ref "$gold/greedy.txt"

# unknown words: mapped to the config's src_unk_id / tgt_unk_id with a count
# on stderr, an error naming the word where the config has none
mkdir unk
cp "$gold/model.safetensors" unk/
sed 's/"bos_id"/"src_unk_id": 3, "tgt_unk_id": 4, "bos_id"/' "$gold/config.json" >unk/config.json
for i in 0 1 2 3 4 5 6 7 8 9 10 11; do echo "w$i"; done >words.vocab
printf 'w1 w2 zz w3\nw4 yy xx\n' >words.src
printf 'w3 w2 w1\nqq w4\n' >words.ref
expect unk_mapped 0 "words.src: 3 unknown words mapped to src_unk_id 3|words.ref: 1 unknown word mapped to tgt_unk_id 4" \
  --model unk --src words.src --src-vocab words.vocab --tgt-vocab words.vocab --ref words.ref
"$seqcl" decode --model unk --src words.src --src-vocab words.vocab >out 2>err ||
  fail "decode with unknown words: $(cat err)"
grep -qF "words.src: 3 unknown words mapped to src_unk_id 3" err || fail "decode: no unknown count: $(cat err)"
expect unk_none 2 "words.ref:2|'qq'" --model "$gold" --src words.src --src-vocab words.vocab --tgt-vocab words.vocab --ref words.ref
expect unk_none_src 2 "words.src:1|'zz'" --model "$gold" --src words.src --src-vocab words.vocab --ref "$gold/greedy.txt"
sed 's/"bos_id"/"src_unk_id": 12, "bos_id"/' "$gold/config.json" >unk/config.json
expect unk_out_of_range 2 "src_unk_id" --model unk --src words.src --src-vocab words.vocab --ref words.ref

# --text: the golden model's ids as characters (source) and words (target)
# through the model folder's src.vocab / tgt.vocab; the scores equal those of
# the ids
mkdir txt
cp "$gold/model.safetensors" "$gold/config.json" txt/
printf '%s\n' a b c d e f g h i j k '<space>' >txt/src.vocab
printf '%s\n' w0 w1 w2 w3 w4 w5 w6 w7 w8 w9 '<s>' '</s>' >txt/tgt.vocab
awk '{ s = ""; for (i = 1; i <= NF; i++) s = s ($i == 11 ? " " : substr("abcdefghijk", $i + 1, 1)); print s }' \
  "$gold/src.txt" >text.src
awk '{ s = ""; for (i = 1; i <= NF; i++) s = s (i > 1 ? " " : "") "w" $i; print s }' "$gold/greedy.txt" >text.ref
expect text_self 0 "" --model txt --src text.src --ref text.ref --text chars,words
has text_self "exact: 100.00 % (5 of 5 lines; word error rate 0.00 %)"
has text_self "ter: 0.00 % (0 edits over 37 reference tokens)"
printf 'abz\n' >text_bad.src
expect text_unknown 2 "text_bad.src:1|'z'" --model txt --src text_bad.src --ref text.ref --text chars,words
expect text_no_vocab 2 "$gold/src.vocab" --model "$gold" --src text.src --ref text.ref --text chars
expect text_bad_split 2 "--text|'chars,bytes'" --model txt --src text.src --ref text.ref --text chars,bytes
expect text_with_hyp 2 "--text" --hyp hyp.txt --ref ref.txt --text words

# attention entropy and invariants of the decoding, against PyTorch's greedy
# alignments of the same lines (decode_alignments.safetensors) computed here:
# mean over each line's steps (its greedy.txt tokens + the EOS step, at most
# the T steps decoding ran) of
# -sum a ln a over its source positions, and of that over ln(source length)
python3 - "$gold" <<'PY' >want_attention || fail "attention: no reference value"
import json, math, struct, sys
g = sys.argv[1]
b = open(g + "/decode_alignments.safetensors", "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])["greedy"]
N, T, S = h["shape"]
flat = struct.unpack("<%df" % (N * T * S), b[8 + n + h["data_offsets"][0]:8 + n + h["data_offsets"][1]])
a = [[flat[(i * T + t) * S:(i * T + t + 1) * S] for t in range(T)] for i in range(N)]
src = [l.split() for l in open(g + "/src.txt")]
hyp = [l.split() for l in open(g + "/greedy.txt")]
ent, norm, steps = 0.0, 0.0, 0
for i, (s, y) in enumerate(zip(src, hyp)):
    for t in range(min(len(y) + 1, T)):  # a line that never produced EOS ran T steps
        w = a[i][t][:len(s)]
        e = -sum(x * math.log(x) for x in w if x > 0)
        ent += e
        norm += e / math.log(len(s)) if len(s) > 1 else 0.0
        steps += 1
print("%.4f %d %.4f" % (ent / steps, steps, norm / steps))
PY
expect attention 0 "" --model "$gold" --src "$gold/src.txt" --ref "$gold/greedy.txt" --metric attention
read -r went wsteps wnorm <want_attention
has attention "attention entropy: $went nats mean over $wsteps decoder steps ($wnorm of ln S)"
grep -q '^attention invariants: pass (worst |sum - 1| [0-9.e+-]* at line [0-9]* step [0-9]*, tolerance 1e-05; worst padding weight 0; non-finite weights 0)$' out ||
  fail "attention: invariants line: $(cat out)"
grep -q '^exact' out && fail "attention: --metric attention printed exact"
# decode -v reports the same figures on stderr
expect_sub decode decode_v 0 "attention entropy: $went nats mean over $wsteps decoder steps ($wnorm of ln S)|attention invariants: pass" \
  -v --model "$gold" --src "$gold/src.txt"
# a fixed-context model (attention.score "none") has no alignments: n/a, not an error
none=$(dirname "$gold")/uni1_none_zeros_state
expect attention_none 0 "" --model "$none" --src "$none/src.txt" --ref "$none/greedy.txt"
has attention_none 'attention entropy: n/a (attention.score "none": a fixed context, no alignments)'
has attention_none "exact: 100.00 % (5 of 5 lines; word error rate 0.00 %)"
expect_sub decode decode_v_none 0 "attention invariants: n/a" -v --model "$none" --src "$none/src.txt"
expect attention_hyp 2 "--metric attention|--model" --hyp "$gold/greedy.txt" --ref "$gold/greedy.txt" --metric attention

if [ "$failures" -gt 0 ]; then
  echo "$failures failure(s)" >&2
  exit 1
fi
echo "eval: all cases passed"
