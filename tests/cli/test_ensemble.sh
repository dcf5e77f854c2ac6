#!/bin/bash
# --model given more than once (decode, eval): an ensemble. The ids equal
# PyTorch's ensemble decoding (tests/golden/ensemble); with --text the first
# folder's vocabularies are read and the others' must hold the same tokens;
# members of other vocabulary sizes, alignments, the attention metric and a
# 17th model are usage errors naming what is wrong. Host path only.
#
#   test_ensemble.sh SEQCL_BINARY SOURCE_ROOT
set -u
seqcl=$1
golden=$2/tests/golden
ens=$golden/ensemble
. "$(dirname "$0")/lib.sh"
enter_work ensemble

expect() { local sub=$1; shift; expect_sub "$sub" "$@"; }
same() { cmp -s "$2" "$3" || fail "$1: $2 and $3 differ: $(head -c 300 "$2") / $(head -c 300 "$3")"; }

m=()
while read -r name; do m+=("$golden/$name"); done <"$ens/members.txt"
[ "${#m[@]}" = 3 ] || fail "members.txt: ${#m[@]} members, want 3"

# ids: PyTorch's outputs for the first two and for all three members
expect decode ens2_greedy 0 "" --model "${m[0]}" --model "${m[1]}" --src "$ens/src.txt" --max-steps 10
same ens2_greedy out "$ens/2_greedy.txt"
expect decode ens3_greedy 0 "" --model "${m[0]}" --model "${m[1]}" --model "${m[2]}" --src "$ens/src.txt" --max-steps 10
same ens3_greedy out "$ens/3_greedy.txt"
expect decode ens3_beam 0 "" --model "${m[0]}" --model "${m[1]}" --model "${m[2]}" --src "$ens/src.txt" --max-steps 10 --beam 3
same ens3_beam out "$ens/3_beam3.txt"
expect decode ens3_beam_lp 0 "" --model "${m[0]}" --model "${m[1]}" --model "${m[2]}" --src "$ens/src.txt" --max-steps 10 --beam 3 --length-penalty 1
same ens3_beam_lp out "$ens/3_beam3_lp.txt"
# one model is the plain decode; the ensemble is not any one member's output
expect decode single 0 "" --model "${m[0]}" --src "$ens/src.txt" --max-steps 10
cp out single.txt
cmp -s single.txt "$ens/3_greedy.txt" && fail "ensemble: the three members' output equals the first member's"
# eval scores the ensemble's output: against its own output every line is exact
expect eval ens_eval 0 "" --model "${m[0]}" --model "${m[1]}" --model "${m[2]}" --src "$ens/src.txt" --ref "$ens/3_greedy.txt" --max-steps 10
grep -q '^exact: 100.00 %' out || fail "ens_eval: $(cat out)"
grep -q '^attention' out && fail "ens_eval: an attention line for an ensemble: $(cat out)"
# -v says the attention is not measured
expect decode ens_verbose 0 "ensemble of 2" -v --model "${m[0]}" --model "${m[1]}" --src "$ens/src.txt" --max-steps 10
same ens_verbose out "$ens/2_greedy.txt"

# refusals, before any decoding
expect decode ens_vocab_size 2 "tgt_vocab_size 12 / 13|bi1_dot_bridge_state" --model "${m[0]}" --model "$golden/bi1_dot_bridge_state" --src "$ens/src.txt"
expect decode ens_alignments 2 "--alignments|one --model" --model "${m[0]}" --model "${m[1]}" --src "$ens/src.txt" --alignments a.safetensors
[ -e a.safetensors ] && fail "ens_alignments: a.safetensors was written"
expect decode ens_svg 2 "--svg|ensemble" --model "${m[0]}" --model "${m[1]}" --src "$ens/src.txt" --svg a.svg
expect eval ens_attention 2 "--metric attention|ensemble" --model "${m[0]}" --model "${m[1]}" --src "$ens/src.txt" --ref "$ens/2_greedy.txt" --metric exact,attention
many=()
for i in $(seq 17); do many+=(--model "${m[0]}"); done
expect decode ens_17 2 "at most 16" "${many[@]}" --src "$ens/src.txt"
expect decode ens_missing 2 "nope" --model "${m[0]}" --model nope --src "$ens/src.txt"

# --text: the first folder's vocabularies; the others must hold the same tokens
for k in 0 1; do
  mkdir t$k
  cp "${m[$k]}/config.json" "${m[$k]}/model.safetensors" t$k/
  printf '%s\n' a b c d e f g h i j k l >t$k/src.vocab
  printf '%s\n' A B C D E F G H I J K L >t$k/tgt.vocab
done
to_chars() { awk 'BEGIN{split("a|b|c|d|e|f|g|h|i|j|k|l",v,"|")} {s=""; for(i=1;i<=NF;i++) s=s v[$i+1]; print s}' "$1"; }
to_words() { awk 'BEGIN{split("A|B|C|D|E|F|G|H|I|J|K|L",v,"|")} {s=""; for(i=1;i<=NF;i++) s=s (i>1?" ":"") v[$i+1]; print s}' "$1"; }
to_chars "$ens/src.txt" >src.chars
to_words "$ens/2_greedy.txt" >want.words
expect decode ens_text 0 "" --model t0 --model t1 --src src.chars --text chars,words --max-steps 10
same ens_text out want.words
expect eval ens_text_eval 0 "" --model t0 --model t1 --src src.chars --ref want.words --text chars,words --max-steps 10
grep -q '^exact: 100.00 %' out || fail "ens_text_eval: $(cat out)"
printf '%s\n' A B C D E F G H I J X L >t1/tgt.vocab
expect decode ens_text_vocab 2 "tgt.vocab differs at id 10|K against X|t0|t1" --model t0 --model t1 --src src.chars --text chars,words
# a vocabulary given on the command line serves every member
expect decode ens_text_given 0 "" --model t0 --model t1 --src src.chars --text chars,words --tgt-vocab t0/tgt.vocab --max-steps 10
same ens_text_given out want.words

[ "$failures" = 0 ] || { echo "$failures failure(s)" >&2; exit 1; }
echo "ensemble: all cases passed"
