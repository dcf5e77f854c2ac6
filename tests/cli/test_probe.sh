#!/bin/bash
# seqcl probe on a reversal model trained here (host path): the intervention
# map peaks on the mirrored source position; the maps and edits agree with a
# direct computation from `seqcl forward` (a deleted last token equals that
# position hidden, since the encoder is unidirectional and the decoder starts
# from zeros); rho is Spearman's of the two maps; the SVG; usage errors.
#
#   test_probe.sh SEQCL_BINARY SOURCE_ROOT
set -u
seqcl=$1
. "$(dirname "$0")/lib.sh"
enter_work probe

expect() { expect_sub probe "$@"; }

"$seqcl" -q train --task reverse --length 5 --steps 800 --save m >train.log 2>&1 ||
  { echo "training failed: $(cat train.log)" >&2; exit 1; }
printf '3 1 4 1 5\n2 7 1 8 2\n' >src.txt
expect probe 0 "" --model m --src src.txt --line 2 --replace 3=9 --delete 5 --json p.json --svg p.svg
grep -q '^invariants of the decode: pass' out || fail "probe: no passing invariants line: $(head -3 out)"

# the teacher-forced target, and the edited sources, for seqcl forward
"$py" - p.json <<'PY' || fail "could not write the forward inputs"
import json, sys
p = json.load(open(sys.argv[1]))
src = p["source"]
tgt = " ".join(str(x) for x in [10] + p["output"] + ([11] if p["finished"] else []))
cut = src[:4]
rep = src[:2] + [9] + src[3:]
open("fw_src.txt", "w").write("\n".join(" ".join(map(str, s)) for s in (src, cut, rep)) + "\n")
open("fw_tgt.txt", "w").write((tgt + "\n") * 3)
PY
expect_sub forward forward 0 "" --model m --src fw_src.txt --tgt fw_tgt.txt --out fw.safetensors

"$py" - p.json fw.safetensors <<'PY' || fail "maps: see above"
import json, math, struct, sys
p = json.load(open(sys.argv[1]))
b = open(sys.argv[2], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
head = json.loads(b[8:8 + n])
def tensor(name):
    h = head[name]
    lo, hi = h["data_offsets"]
    flat = struct.unpack("<%df" % ((hi - lo) // 4), b[8 + n + lo:8 + n + hi])
    return flat, h["shape"]
logits, (N, T, V) = tensor("logits")
align, (_, _, S) = tensor("alignments")
bad = []
def want(c, what):
    if not c:
        bad.append(what)
def logsm(x):
    m = max(x)
    l = m + math.log(sum(math.exp(v - m) for v in x))
    return [v - l for v in x]
def row(k, t):
    return logits[(k * T + t) * V:(k * T + t + 1) * V]
def kl(t, k):
    lp, lq = logsm(row(0, t)), logsm(row(k, t))
    return sum(math.exp(a) * (a - c) for a, c in zip(lp, lq))
def am(x):
    return max(range(len(x)), key=lambda i: (x[i], -i))
src = p["source"]
want(src == [2, 7, 1, 8, 2] and p["steps"] == T and p["finished"], "source/steps %r" % p)
want(p["output"] == src[::-1], "the model does not reverse line 2: %r" % p["output"])
inv = p["invariants"]
want(inv["pass"] and inv["worst_padding_weight"] == 0 and inv["nonfinite"] == 0, "invariants")
K, A = p["intervention_kl"], p["attention"]
# the reversal task's causal structure: step t reads position S - 1 - t
for t in range(S):
    want(am(K[t]) == S - 1 - t, "step %d: KL peaks at %d, want %d: %r" % (t + 1, am(K[t]) + 1, S - t, K[t]))
    want(am(A[t]) == S - 1 - t, "step %d: attention peaks at %d" % (t + 1, am(A[t]) + 1))
    want(p["argmax_changed"][t][S - 1 - t], "step %d: hiding the mirrored position keeps the argmax" % (t + 1))
tol = lambda ref: 1e-4 * max(1.0, abs(ref))
for t in range(T):
    for j in range(S):
        ref = align[t * S + j]
        want(abs(A[t][j] - ref) <= 1e-5, "attention[%d][%d] %g, forward %g" % (t, j, A[t][j], ref))
    # hiding the last position = deleting it (line 1 of the forward batch)
    d = kl(t, 1)
    want(abs(K[t][S - 1] - d) <= tol(d), "KL hide 5, step %d: %g, direct %g" % (t + 1, K[t][S - 1], d))
    e = {x["kind"]: x for x in p["edits"]}
    want(abs(e["delete"]["kl"][t] - d) <= tol(d), "KL delete 5, step %d" % (t + 1))
    r = kl(t, 2)
    want(abs(e["replace"]["kl"][t] - r) <= tol(r), "KL replace 3=9, step %d: %g, direct %g" % (t + 1, e["replace"]["kl"][t], r))
    want(e["replace"]["argmax_changed"][t] == (am(row(2, t)) != am(row(0, t))), "replace flip %d" % t)
# Spearman: Pearson of average ranks
def ranks(x):
    return [sum(v < a for v in x) + (sum(v == a for v in x) - 1) / 2 for a in x]
for t in range(T):
    ra, rk = ranks(A[t]), ranks(K[t])
    ma, mk = sum(ra) / S, sum(rk) / S
    sab = sum((a - ma) * (k - mk) for a, k in zip(ra, rk))
    saa = sum((a - ma) ** 2 for a in ra)
    skk = sum((k - mk) ** 2 for k in rk)
    rho = sab / math.sqrt(saa * skk) if saa > 0 and skk > 0 else None
    got = p["rank_correlation"][t]
    want((rho is None and got is None) or abs(got - rho) < 1e-9, "rho step %d: %r, want %r" % (t + 1, got, rho))
for w in bad:
    print("FAIL:", w)
sys.exit(1 if bad else 0)
PY
grep -q '<svg' p.svg && [ "$(grep -c 'rotate(-90' p.svg)" = 2 ] && grep -q 'KL, position j hidden' p.svg \
  || fail "svg: want two heatmaps (attention and KL)"

# a fixed-context model: no attention map, nothing to hide; the edits still measure
none=$2/tests/golden/uni1_none_zeros_state
expect none 0 "" --model "$none" --src "$none/src.txt" --replace 1=3 --json none.json
"$py" -c 'import json,sys; p=json.load(open("none.json")); sys.exit(0 if not p["attends"] and p["attention"] is None and p["invariants"] is None and len(p["edits"][0]["kl"]) == p["steps"] and all(v is not None and v >= 0 for v in p["edits"][0]["kl"]) else 1)' ||
  fail "none: want attends false, no attention, the edit's KL per step"
expect none_svg 2 '--svg|"none"' --model "$none" --src "$none/src.txt" --svg none.svg

printf '4\n' >one.txt
expect one_token 0 "" --model m --src one.txt --json one.json
"$py" -c 'import json,sys; p=json.load(open("one.json")); sys.exit(0 if all(v is None for r in p["intervention_kl"] for v in r) and all(r is None for r in p["rank_correlation"]) else 1)' ||
  fail "one_token: a one-position line has nothing to hide: KL and rho should be null"
expect bad_replace 2 "--replace|'3'" --model m --src src.txt --replace 3
expect bad_position 2 "delete 6|positions 1..5" --model m --src src.txt --delete 6
expect delete_only 2 "empty line" --model m --src one.txt --delete 1
expect bad_id 2 "replace at position 1|id 12" --model m --src src.txt --replace 1=12
expect bad_line 2 "--line 3|2 lines" --model m --src src.txt --line 3
expect bad_json 2 "--json|nodir" --model m --src src.txt --json nodir/p.json

[ "$failures" = 0 ] || { echo "$failures failure(s)" >&2; exit 1; }
echo "all probe checks passed"
