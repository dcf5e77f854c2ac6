#!/bin/bash
# The G2P recipe's whole path, quickly (examples/g2p/recipe.py --quick): the
# Festival lexicon parsed (every word, first pronunciation, 39 ARPAbet
# phonemes), the keyed-hash split, train --text building the vocabularies,
# eval --text greedy and beam of each of the two members and of their
# ensemble (--model twice); the models must have learnt something (PER well
# below an untrained model's ~100 %). Skipped (77) without festlex-cmu.
#
#   check_g2p_quick.sh PYTHON SEQCL_BINARY SOURCE_ROOT
set -u
python=$1 seqcl=$2 root=$3
lex=/usr/share/festival/dicts/cmu/cmudict-0.4.out
[ -r "$lex" ] || { echo "no $lex (festlex-cmu): skipped"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/seqcl-g2p-XXXXXX")
trap 'rm -rf "$work"' EXIT
export SEQCL_DEVICE=cpu
"$python" "$root/examples/g2p/recipe.py" --quick --work "$work" --seqcl "$seqcl" >"$work/out" 2>&1 ||
  { cat "$work/out"; exit 1; }
cat "$work/out"
ok=1
grep -q "^data: 105664 words" "$work/out" || { echo "FAIL: not 105664 distinct words parsed"; ok=0; }
grep -q "train 400, valid 100, test 100" "$work/out" || { echo "FAIL: quick split sizes"; ok=0; }
phones=$(tr ' ' '\n' <"$work/train.phones" | sort -u | grep -c .)
[ "$(cat "$work"/*.phones | tr ' ' '\n' | grep -c '^AX$')" = 0 ] || { echo "FAIL: ax not mapped to AH"; ok=0; }
[ "$phones" -le 39 ] || { echo "FAIL: $phones phonemes (ARPAbet has 39)"; ok=0; }
for d in model model.2; do
  for f in src.vocab tgt.vocab config.json model.safetensors; do
    [ -s "$work/$d/$f" ] || { echo "FAIL: no $d/$f"; ok=0; }
  done
done
cmp -s "$work/model/model.safetensors" "$work/model.2/model.safetensors" &&
  { echo "FAIL: the two members are the same model (one seed)"; ok=0; }
# PER of each member's greedy and of the ensemble's greedy and beam: a number,
# and learnt (the quick models reach ~75 %)
for row in "model (seed 1) | .* | greedy" "model.2 (seed 101) | .* | greedy" \
           "ensemble of 2 | .* | greedy" "ensemble of 2 | .* | beam 3"; do
  per=$(grep "^| seqcl, $row |" "$work/out" | awk -F'|' '{print $7}')
  [ "$(echo "$per" | grep -c .)" = 1 ] && awk -v p="$per" 'BEGIN{exit !(p < 85)}' ||
    { echo "FAIL: '$row' PER '$per' (want one figure < 85)"; ok=0; }
done
[ "$ok" = 1 ] && echo "g2p quick: passed"
[ "$ok" = 1 ]
