#!/bin/bash
# --text through the binary: train builds the vocabularies (or takes given
# ones), saves them in the model folder and the checkpoint and takes the config's
# vocabulary keys from them; decode, forward and eval read and write characters
# (UTF-8 code points, written without separators) or words (single-spaced)
# through the model folder's src.vocab/tgt.vocab; unknown tokens are mapped
# with a count or are an error; resuming a text run continues it bit for bit.
# Host path only.
#
#   test_text.sh SEQCL_BINARY SOURCE_ROOT
set -u
seqcl=$1
gold=$2/tests/golden/uni1_additive_zeros_state
. "$(dirname "$0")/lib.sh"
enter_work text

expect() { local sub=$1; shift; expect_sub "$sub" "$@"; }
same() { cmp -s "$2" "$3" || fail "$1: $2 and $3 differ: $(head -c 300 "$2") / $(head -c 300 "$3")"; }

# ---- decode/forward/eval on the golden model through made-up vocabularies ----
# ids 0..11 as characters (2-byte and 3-byte UTF-8 among them, id 1 a space)
# and as words; the golden model's id output is PyTorch's (greedy.txt)
mkdir g
cp "$gold/config.json" "$gold/model.safetensors" g/
printf '%s\n' a '<space>' é b 中 c d e f g h i >g/src.vocab
cp g/src.vocab g/tgt.vocab
printf '%s\n' w0 w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 >words.vocab
# id lines -> text through a vocabulary (chars: no separators, id 1 a space)
to_chars() { awk 'BEGIN{split("a| |é|b|中|c|d|e|f|g|h|i",v,"|")} {s=""; for(i=1;i<=NF;i++) s=s v[$i+1]; print s}' "$1"; }
to_words() { awk '{s=""; for(i=1;i<=NF;i++) s=s (i>1?" ":"") "w" $i; print s}' "$1"; }
to_chars "$gold/src.txt" >src.chars
to_chars "$gold/greedy.txt" >want.chars
to_words "$gold/src.txt" >src.words
to_words "$gold/greedy.txt" >want.words
expect decode decode_chars 0 "" --model g --src src.chars --text chars
same decode_chars out want.chars
grep -q '中' out || fail "decode_chars: no multi-byte character written: $(cat out)"
expect decode decode_words 0 "" --model g --src src.words --text words --src-vocab words.vocab --tgt-vocab words.vocab
same decode_words out want.words
expect decode decode_chars_words 0 "" --model g --src src.chars --text chars,words --tgt-vocab words.vocab
same decode_chars_words out want.words
expect decode decode_beam_nbest 0 "" --model g --src src.chars --text chars --beam 3 --nbest 1
cut -f3 out >nbest.txt
to_chars "$gold/beam3.txt" >want3.chars
same decode_beam_nbest nbest.txt want3.chars
# forward: text targets hold the tokens only; BOS/EOS are added, so the result
# is the id run's bit for bit
# (line 2 of tgt.txt, "10 11", has no token between BOS and EOS: text cannot
# say that, an empty line is an error)
sed 2d "$gold/src.txt" >src4.txt
sed 2d "$gold/tgt.txt" >tgt4.txt
expect forward forward_ids 0 "" --model g --src src4.txt --tgt tgt4.txt --out ids.safetensors
to_words src4.txt >src4.words
awk '{s=""; for(i=2;i<NF;i++) s=s (i>2?" ":"") "w" $i; print s}' tgt4.txt >tgt4.words
expect forward forward_text 0 "" --model g --src src4.words --tgt tgt4.words --text words --src-vocab words.vocab --tgt-vocab words.vocab --out text.safetensors
same forward_text ids.safetensors text.safetensors
printf 'w1\n\nw2\nw3\n' >tgt_empty.words
expect forward forward_empty_line 2 "tgt_empty.words:2|empty" --model g --src src4.words --tgt tgt_empty.words --text words --src-vocab words.vocab --tgt-vocab words.vocab --out e.safetensors
# eval --text reads the model folder's vocabularies the same way
expect eval eval_chars 0 "" --model g --src src.chars --ref want.chars --text chars --metric exact
grep -qF "exact: 100.00 %" out || fail "eval_chars: $(cat out)"
# unknown tokens: mapped with a count where the config has an unknown id ...
printf 'ab中x\nqqd\n' >unk.chars
expect decode decode_unknown_error 2 "unk.chars:1|'x'" --model g --src unk.chars --text chars
sed 's/"bos_id"/"src_unk_id": 0, "tgt_unk_id": 0, "bos_id"/' "$gold/config.json" >g/config.json
expect decode decode_unknown_mapped 0 "unk.chars: 3 unknown tokens mapped to src_unk_id 0" --model g --src unk.chars --text chars
cp "$gold/config.json" g/config.json
printf 'a\xffb\n' >bad.chars
expect decode decode_bad_utf8 2 "bad.chars:1|UTF-8" --model g --src bad.chars --text chars
expect decode decode_bad_split 2 "--text|'letters'" --model g --src src.chars --text letters
rm g/tgt.vocab
expect decode decode_no_vocab 2 "g/tgt.vocab" --model g --src src.chars --text chars

# ---- train --text ----
bi_additive_config cfg.json 4 1 2 12
printf 'cat\ndog\nbird\nfish\ncow\ncät\nhen\nowl\n' >w.txt
printf 'K AE T\nD AO G\nB ER D\nF IH SH\nK AW\nK AE T\nHH EH N\nAW L\n' >p.txt
printf 'cöt\nhen\n' >vw.txt
printf 'K AE T\nHH ZZ N\n' >vp.txt
expect train train_text 0 "source vocabulary built from w.txt: 20 tokens|target vocabulary built from p.txt: 19 tokens|1 unknown source token|1 unknown target token" \
  --text chars,words --src w.txt --tgt p.txt --valid-src vw.txt --valid-tgt vp.txt --config cfg.json --save m1 --steps 30 --batch-size 4 --lr 0.01
for f in m1/src.vocab m1/tgt.vocab m1/checkpoint/src.vocab m1/checkpoint/tgt.vocab; do
  [ -s "$f" ] || fail "train_text: no $f"
done
[ "$(head -3 m1/src.vocab | tr '\n' ' ')" = "<unk> <s> </s> " ] || fail "train_text: specials of src.vocab: $(head -3 m1/src.vocab)"
grep -qx 'ä' m1/src.vocab || fail "train_text: the code point ä is not one token of src.vocab"
grep -q '"src_vocab_size": 20' m1/config.json && grep -q '"tgt_vocab_size": 19' m1/config.json &&
  grep -q '"src_unk_id": 0' m1/config.json && grep -q '"bos_id": 1' m1/config.json ||
  fail "train_text: config keys not from the vocabularies: $(tr -d '\n' <m1/config.json)"
same train_text_vocab m1/src.vocab m1/checkpoint/src.vocab
# the built vocabulary is the one `seqcl vocab build` writes
"$seqcl" vocab build --split chars --out built.vocab w.txt 2>/dev/null
same train_text_vocab_build m1/src.vocab built.vocab
expect decode decode_trained 0 "" --model m1 --src w.txt --text chars,words
[ "$(wc -l <out)" = 8 ] || fail "decode_trained: $(wc -l <out) lines"
# resume continues the text run bit for bit (vocabularies from the checkpoint)
expect train train_half 0 "" --text chars,words --src w.txt --tgt p.txt --config cfg.json --save m2 --steps 15 --batch-size 4 --lr 0.01
expect train train_resume 0 "" --resume m2 --steps 30
"$seqcl" train -q --text chars,words --src w.txt --tgt p.txt --config cfg.json --save m3 --steps 30 --batch-size 4 --lr 0.01 >/dev/null 2>&1
same train_resume m2/model.safetensors m3/model.safetensors
expect train resume_other_text 2 "--text words|chars,words" --resume m2 --steps 40 --text words
expect train resume_vocab 2 "--src-vocab" --resume m2 --steps 40 --src-vocab m1/src.vocab
# given vocabularies; --init must match them
expect train train_given 0 "" --text chars,words --src w.txt --tgt p.txt --src-vocab m1/src.vocab --tgt-vocab m1/tgt.vocab --config cfg.json --save m4 --steps 2
same train_given m1/src.vocab m4/src.vocab
expect train init_text 0 "" --text chars,words --src w.txt --tgt p.txt --init m1 --save m5 --steps 2
expect train init_mismatch 2 "tgt_vocab_size|m1" --text chars,words --src w.txt --tgt p.txt --init m1 --tgt-vocab m1/src.vocab --save m6 --steps 2
printf '<unk>\n<s>\n</s>\nc\n' >small.vocab
expect train train_unk_counted 0 "unknown source tokens mapped to <unk>" --text chars,words --src w.txt --tgt p.txt --src-vocab small.vocab --config cfg.json --save m7 --steps 2
printf '<s>\n</s>\nc\n' >nounk.vocab
expect train train_no_unk 2 "w.txt:1|'a'" --text chars,words --src w.txt --tgt p.txt --src-vocab nounk.vocab --config cfg.json --save m8 --steps 2
printf '<unk>\n</s>\nK\n' >nobos.vocab
expect train train_no_bos 2 "<s>" --text chars,words --src w.txt --tgt p.txt --tgt-vocab nobos.vocab --config cfg.json --save m8 --steps 2
expect train vocab_without_text 2 "--text" --src w.txt --tgt p.txt --src-vocab small.vocab --config cfg.json --save m9
expect train text_reverse 2 "--text" --task reverse --text chars --save m9

[ "$failures" = 0 ] || { echo "$failures failure(s)" >&2; exit 1; }
echo "text: all cases passed"
