#!/bin/bash
# seqcl vocab build through the binary: the special ids, character (UTF-8)
# and word splitting, --min-count/--max-size, that the file reads back as a
# vocabulary, and bad inputs (exit 2, a message naming file and line, nothing
# left at --out).
#
#   test_vocab.sh SEQCL_BINARY
set -u
seqcl=$1
. "$(dirname "$0")/lib.sh" # before the cd: $0 may be relative
enter_work vocab
# expect NAME STATUS "WORD|WORD" ARGS...: exit status, every word in stderr
expect() { expect_sub vocab "$@"; }
same() { [ "$(tr '\n' ' ' <"$2")" = "$3" ] || fail "$1: got '$(tr '\n' ' ' <"$2")', want '$3'"; }

printf 'héllo wörld\nhello  a\r\n' >t.txt
# characters: code points, ties in byte order, a space is <space>, CRLF is a line end
expect chars 0 "14 tokens|<unk> 0, <s> 1, </s> 2" build --split chars --out chars.vocab t.txt
same chars chars.vocab "<unk> <s> </s> l <space> h o a d e r w é ö "
# words, with <pad> at 0 and --max-size counting the specials
expect words 0 "<pad> 0, <unk> 1|2 past --max-size" build --split words --pad --max-size 6 --out words.vocab t.txt
same words words.vocab "<pad> <unk> <s> </s> a hello "
# a and b are both seen 3 times (t.txt has an a): byte order decides
printf "b a b c b a\n" >u.txt
expect min_count 0 "4 below --min-count" build --split words --min-count 2 --out m.vocab u.txt t.txt
same min_count m.vocab "<unk> <s> </s> a b "
# a special token in the text is that token, not a second entry
printf '<s> x </s>\n' >s.txt
expect specials_in_text 0 "" build --split words --out s.vocab s.txt
same specials_in_text s.vocab "<unk> <s> </s> x "
# the file reads back as a vocabulary (decode's --src-vocab reader)
printf 'l h\n' >src.txt
gold=${2:-}/tests/golden/uni1_additive_zeros_state
if [ -n "${2:-}" ]; then
  "$seqcl" decode --device cpu --model "$gold" --src src.txt --src-vocab chars.vocab >/dev/null 2>err ||
    fail "read back: $(cat err)"
fi

printf 'ok\nb\xffc\n' >bad.txt
expect bad_utf8 2 "bad.txt:2|UTF-8" build --split chars --out bad.vocab t.txt bad.txt
[ -e bad.vocab ] && fail "bad_utf8: bad.vocab was left behind"
expect missing 2 "nowhere.txt" build --split words --out x.vocab nowhere.txt
expect no_split 2 "--split" build --out x.vocab t.txt
expect bad_split 2 "--split|'bytes'" build --split bytes --out x.vocab t.txt
expect no_out 2 "--out" build --split words t.txt
expect no_input 2 "text file" build --split words --out x.vocab
expect small_max 2 "--max-size 3" build --split words --max-size 3 --out x.vocab t.txt
expect bad_min 2 "--min-count" build --split words --min-count 0 --out x.vocab t.txt
expect unknown_sub 2 "'make'" make --split words
expect unknown_opt 2 "--frobnicate" build --split words --frobnicate --out x.vocab t.txt
expect out_dir 2 "--out" build --split words --out "$work" t.txt

if [ "$failures" -gt 0 ]; then
  echo "$failures failure(s)" >&2
  exit 1
fi
echo "vocab: all cases passed"
