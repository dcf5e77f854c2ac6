#!/bin/bash
# seqcl experiment length-sweep on a tiny grid (host path): the JSON's schema
# and values, the same seed giving the same numbers, another seed others, a
# one-digit source's entropy exactly 0, models that learn short reversal, the
# default scores (the fixed-context "none" among them, with no entropy), the
# SVG, and usage errors that name the option.
#
#   test_experiment.sh SEQCL_BINARY
set -u
seqcl=$1
. "$(dirname "$0")/lib.sh"
enter_work experiment

expect() { expect_sub experiment "$@"; }

# no --scores: the default list, none,additive,general
grid=(length-sweep --lengths 1,3 --steps 300 --batch-size 32)
expect tiny 0 "" "${grid[@]}" --json a.json --svg a.svg
[ "$(grep -c '^none\|^additive\|^general' out)" = 6 ] || fail "tiny: want 6 table rows: $(cat out)"
# the fixed context has no alignments: its H and H/lnL columns are '-'
[ "$(grep -c '^none .* - *- ' out)" = 2 ] || fail "tiny: none rows without '-' entropy: $(cat out)"
expect tiny_again 0 "" "${grid[@]}" --json b.json
expect other_seed 0 "" "${grid[@]}" --seed 5 --json c.json

"$py" - a.json b.json c.json <<'PY' || fail "json: see above"
import json, math, sys
a, b, c = (json.load(open(p)) for p in sys.argv[1:4])
bad = []
def want(cond, what):
    if not cond:
        bad.append(what)
keys = {"score", "length", "final_loss", "token_accuracy", "sequence_accuracy", "entropy",
        "entropy_normalized", "invariants", "train_seconds", "train_cpu_seconds",
        "train_samples_per_s", "decode_seconds", "decode_cpu_seconds", "decode_samples_per_s"}
want(a["experiment"] == "length-sweep" and a["steps"] == 300 and a["batch_size"] == 32
     and a["seed"] == 0 and a["eval_samples"] == 512 and a["device"]["selector"] == "cpu",
     "settings: %r" % {k: v for k, v in a.items() if k != "runs"})
runs = a["runs"]
want([(r["score"], r["length"]) for r in runs] ==
     [(s, n) for n in (1, 3) for s in ("none", "additive", "general")], "grid order")
for r in runs:
    name = "%s/%d" % (r["score"], r["length"])
    want(set(r) == keys, name + ": keys " + str(sorted(set(r) ^ keys)))
    want(0 <= r["sequence_accuracy"] <= r["token_accuracy"] <= 1, name + ": accuracies")
    if r["score"] == "none":
        # no alignments: no entropy and nothing to check, so nulls (not 0, not a pass)
        want(r["entropy"] is None and r["entropy_normalized"] is None, name + ": entropy not null")
        want(r["invariants"] == {"pass": None, "worst_sum_error": None,
                                 "worst_padding_weight": None}, name + ": invariants not null")
        want(r["length"] == 1 or r["sequence_accuracy"] > 0.9,
             name + ": sequence accuracy %g" % r["sequence_accuracy"])
        continue
    want(0 <= r["entropy"] <= math.log(r["length"]) + 1e-9, name + ": entropy in [0, ln L]")
    want(0 <= r["entropy_normalized"] <= 1 + 1e-9, name + ": normalised entropy in [0, 1]")
    want(r["invariants"]["pass"] and r["invariants"]["worst_padding_weight"] == 0
         and r["invariants"]["worst_sum_error"] <= 1e-5, name + ": invariants")
    want(r["train_samples_per_s"] > 0 and r["decode_samples_per_s"] > 0, name + ": rates")
    want(abs(r["train_samples_per_s"] * r["train_seconds"] - 300 * 32) < 1e-3 * 300 * 32,
         name + ": train rate = steps x batch / seconds")
    if r["length"] == 1:
        # one source position: its weight is 1, so entropy and normalised entropy are 0
        want(r["entropy"] == 0 and r["entropy_normalized"] == 0, name + ": L = 1 entropy")
    else:
        # 300 steps learn 3-digit reversal; attention that learned it is peaked
        want(r["sequence_accuracy"] > 0.9, name + ": sequence accuracy %g" % r["sequence_accuracy"])
        want(r["entropy_normalized"] < 0.7, name + ": entropy %g" % r["entropy_normalized"])
timing = {"train_seconds", "train_cpu_seconds", "train_samples_per_s", "decode_seconds",
          "decode_cpu_seconds", "decode_samples_per_s"}
strip = lambda d: [{k: v for k, v in r.items() if k not in timing} for r in d["runs"]]
want(strip(a) == strip(b), "same seed, different numbers")
want([r["final_loss"] for r in strip(a)] != [r["final_loss"] for r in strip(c)],
     "--seed 5 gave seed 0's losses")
for w in bad:
    print("FAIL:", w)
sys.exit(1 if bad else 0)
PY
grep -q '<svg' a.svg && grep -q 'source length L' a.svg && grep -q '>additive<' a.svg \
  && grep -q '>general<' a.svg && grep -q '>none<' a.svg && grep -q 'attention entropy' a.svg \
  || fail "svg: axes, labels or legend missing"
# two accuracy panels x 3 scores, the entropy panel x 2 (none has no entropy)
[ "$(grep -c '<polyline' a.svg)" = 8 ] || fail "svg: want 2 x 3 + 2 lines"

# usage errors name the option and leave nothing behind
expect bad_score 2 "--scores|bogus" length-sweep --scores additive,bogus --json x.json
expect dup_length 2 "--lengths|twice" length-sweep --lengths 3,3
expect zero_length 2 "--lengths" length-sweep --lengths 0
expect full_and_lengths 2 "--full|--lengths" length-sweep --full --lengths 5
expect bad_experiment 2 "width-sweep" width-sweep
expect bad_json_dir 2 "--json|nodir" length-sweep --lengths 1 --json nodir/x.json
[ -e x.json ] && fail "bad_score: x.json was written"

[ "$failures" = 0 ] || { echo "$failures failure(s)" >&2; exit 1; }
echo "all experiment checks passed"
