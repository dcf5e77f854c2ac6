"""CPU time and wall time per training step of two seqcl builds and of PyTorch
(one thread) on the bench/train_models.py models and data, alternated
(A, B, torch, A, B, torch, ...). On a machine loaded by other work the wall
times mean little; the CPU time (both of seqcl's threads, getrusage of the
child) still compares the builds.

  /usr/bin/python3 bench/train_cpu_ab.py --seqcl A=old/build/cli/seqcl \\
      --seqcl B=build/cli/seqcl [--steps 6] [--rounds 2] [--device cpu] [--no-torch]

seqcl's CPU per step = (CPU of an N-step run - CPU of a 1-step run) / (N - 1),
which removes loading, the first step's allocations and saving; its wall per
step is the reported training time over N steps. PyTorch: process time and
wall over N steps after two warm-up steps.
"""
import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_models as tm  # noqa: E402


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_seqcl(binary, tmp, m, steps, device):
    save = os.path.join(tmp, "out")
    subprocess.run(["rm", "-rf", save], check=True)
    cmd = [binary, "train", "--src", os.path.join(tmp, "train.src"), "--tgt",
           os.path.join(tmp, "train.tgt"), "--config", os.path.join(tmp, "config.json"),
           "--steps", str(steps), "--batch-size", str(tm.BATCH), "--dropout", str(m["dropout"]),
           "--save", save, "--device", device]
    c0 = child_cpu()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return float(re.search(r" in ([0-9.]+) s", out).group(1)), child_cpu() - c0


def torch_step(m, batches):
    import torch
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = tm.Model(m)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for b in batches[:2]:
        opt.zero_grad()
        model(*b).backward()
        opt.step()
    c0, w0 = time.process_time(), time.perf_counter()
    for b in batches:
        opt.zero_grad()
        model(*b).backward()
        opt.step()
    return (time.perf_counter() - w0) / len(batches), (time.process_time() - c0) / len(batches)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seqcl", action="append", required=True, metavar="NAME=PATH")
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--device", default="cpu")
    p.add_argument("--models", default="small,g2p")
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--json")
    a = p.parse_args()
    if a.steps < 2:
        p.error("--steps must be at least 2")
    bins = dict(s.split("=", 1) for s in a.seqcl)
    res = {}
    with tempfile.TemporaryDirectory() as tmp:
        src, tgt = tm.make_data(tmp, 2000, 1)
        batches = tm.torch_batches(src, tgt, a.steps, 2)
        for name in a.models.split(","):
            m = tm.MODELS[name]
            with open(os.path.join(tmp, "config.json"), "w") as f:
                json.dump(tm.config(m), f)
            base = {k: run_seqcl(b, tmp, m, 1, a.device)[1] for k, b in bins.items()}
            r = {k: [] for k in list(bins) + ([] if a.no_torch else ["torch1"])}
            for _ in range(a.rounds):
                for k, b in bins.items():
                    w, c = run_seqcl(b, tmp, m, a.steps, a.device)
                    r[k].append({"wall_ms": 1e3 * w / a.steps,
                                 "cpu_ms": 1e3 * (c - base[k]) / (a.steps - 1)})
                if not a.no_torch:
                    w, c = torch_step(m, batches)
                    r["torch1"].append({"wall_ms": 1e3 * w, "cpu_ms": 1e3 * c})
            r["load"] = os.getloadavg()
            res[name] = r
            for k, v in r.items():
                if k != "load":
                    print(name, k, "  ".join("wall %.0f cpu %.0f" % (x["wall_ms"], x["cpu_ms"])
                                             for x in v), "ms/step", flush=True)
            print(name, "load average", " ".join("%.1f" % x for x in r["load"]), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
