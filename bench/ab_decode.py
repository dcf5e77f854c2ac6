#!/usr/bin/env python3
"""Two seqcl builds decoding the same grid models in turns.

    /usr/bin/python3 bench/ab_decode.py --old OLD/cli/seqcl --new NEW/cli/seqcl
        [--work DIR] [--rounds N] [--mode process|inprocess] [--points NAME ...]

Writes the grid's models (bench/compare_pytorch.py's build and export: H 256,
embed 128, A 256, the EOS logit blocked) and 256 source lines of 20 ids (and
of 50 and 100 for S 50 and S 100) under --work, then for every point runs the old and the new
binary one after the other, alternating which goes first round by round.
process: the wall time of a whole `seqcl decode` (start-up and model load
included), the two outputs compared byte for byte every time; inprocess: the
tokens/s `seqcl bench --model` reports (the decode alone). Prints min and
median per side and their ratio: this VM's speed moves between minutes, so
only ratios of runs made in turns are quoted in bench/RESULTS.md."""
import argparse
import filecmp
import os
import random
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_pytorch as cp  # noqa: E402

MODELS = {"base": ({}, 1000), "bi": ({"bidirectional": True, "enc_hidden": 128}, 1000),
          "l2": ({"layers": 2}, 1000), "sc": ({"state_context": True}, 1000),
          "v8k": ({}, 8000), "gen": ({"score": "general"}, 1000)}
# name: (model, source length, batch, beam); "one line" decodes a single line
POINTS = {"base B1": ("base", 20, 1, 1), "base B8": ("base", 20, 8, 1),
          "base B16": ("base", 20, 16, 1), "base B64": ("base", 20, 64, 1),
          "bi B64": ("bi", 20, 64, 1), "2 layers B64": ("l2", 20, 64, 1),
          "[s;c] B64": ("sc", 20, 64, 1), "V8000 B16": ("v8k", 20, 16, 1),
          "V8000 B64": ("v8k", 20, 64, 1), "general B16": ("gen", 20, 16, 1),
          "general B64": ("gen", 20, 64, 1), "S50 B1": ("base", 50, 1, 1),
          "S50 B64": ("base", 50, 64, 1), "S100 B1": ("base", 100, 1, 1),
          "S100 B64": ("base", 100, 64, 1), "beam5 B1": ("base", 20, 1, 5),
          "beam5 B16": ("base", 20, 16, 5), "beam5 B64": ("base", 20, 64, 5),
          "one line": ("base", 1, 64, 1)}


def prepare(work):
    os.makedirs(work, exist_ok=True)
    for name, (shape, V) in MODELS.items():
        d = os.path.join(work, name)
        if not os.path.exists(os.path.join(d, "model.safetensors")):
            m = cp.build(V, 128, 256, 256, 0, **{"state_context": False, **shape})
            cp.export(m, d, V)
    rng = random.Random(1)
    for S, n in ((20, 256), (100, 256), (1, 1), (50, 256)):  # 50 last: the others as before
        path = os.path.join(work, f"src{S}.txt")
        if not os.path.exists(path):
            with open(path, "w") as f:
                for _ in range(n):
                    f.write(" ".join(str(rng.randrange(998)) for _ in range(max(S, 3))) + "\n")


def run(exe, mode, work, point, out):
    model, S, B, K = POINTS[point]
    args = ["--device", "cpu", "--model", os.path.join(work, model), "--src",
            os.path.join(work, f"src{S}.txt"), "--max-steps", "30", "--batch-size", str(B),
            "--beam", str(K)]
    if mode == "process":
        t0 = time.perf_counter()
        subprocess.run([exe, "decode", *args, "--out", out], check=True,
                       stdout=subprocess.DEVNULL)
        return time.perf_counter() - t0
    text = subprocess.run([exe, "bench", *args, "--reps", "3"], check=True,
                          capture_output=True, text=True).stdout
    return float(re.search(r"median of \d+\), (\d+) target tokens/s", text).group(1))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--old", required=True)
    p.add_argument("--new", required=True)
    p.add_argument("--work", default="/tmp/seqcl-ab")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--mode", choices=["process", "inprocess"], default="process")
    p.add_argument("--points", nargs="+", default=list(POINTS), choices=list(POINTS))
    a = p.parse_args()
    prepare(a.work)
    res = {pt: {"old": [], "new": []} for pt in a.points}
    for r in range(a.rounds):
        for pt in a.points:
            for side in (("old", "new") if r % 2 == 0 else ("new", "old")):
                out = os.path.join(a.work, f"out_{side}.txt")
                res[pt][side].append(run(getattr(a, side), a.mode, a.work, pt, out))
            if a.mode == "process" and not filecmp.cmp(os.path.join(a.work, "out_old.txt"),
                                                       os.path.join(a.work, "out_new.txt"),
                                                       shallow=False):
                print(f"{pt}: the outputs differ", flush=True)
    for pt in a.points:
        o, n = res[pt]["old"], res[pt]["new"]
        if a.mode == "process":   # seconds: old over new
            print(f"{pt:<14} old {1e3 * min(o):7.1f} / {1e3 * statistics.median(o):7.1f} ms  "
                  f"new {1e3 * min(n):7.1f} / {1e3 * statistics.median(n):7.1f} ms  "
                  f"old/new {min(o) / min(n):.2f} / {statistics.median(o) / statistics.median(n):.2f}")
        else:                     # tokens/s: new over old
            print(f"{pt:<14} old {max(o):8.0f} / {statistics.median(o):8.0f} tok/s  "
                  f"new {max(n):8.0f} / {statistics.median(n):8.0f}  "
                  f"new/old {max(n) / max(o):.2f} / {statistics.median(n) / statistics.median(o):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
