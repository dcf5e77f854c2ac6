#!/usr/bin/python3
"""seqcl against PyTorch (eager) on the same model and the same inputs.

Builds an attention GRU seq2seq model in PyTorch the way seed 000 writes it
(nn.Embedding + nn.GRU encoder; an AdditiveAttention with key / query / energy
Linears that projects the keys at every step; an nn.GRUCell decoder reading
[embedding ; context]; an output Linear over [s_t ; c_t]), exports it with
tools/export_pytorch.py, and times greedy decoding back to back:

  torch-seed000    the seed's step as written (keys projected at every step)
  torch-keys-once  the same model with the key projection hoisted out of the
                   loop (the honest PyTorch baseline for seqcl's design)
  seqcl            `seqcl bench --model DIR --src FILE` (decode in one process,
                   median of --reps, after a warm-up)

Every run decodes the same `--lines` random source lines of length S for a
fixed number of steps (the EOS logit's bias is -1e4 so no line stops early),
in batches of B lines. The greedy outputs of seqcl and PyTorch are compared
(SPEC §5: identical except at near-ties, where the reference's two best
logits are within 1e-3). PyTorch keeps its default thread count.

--torch-device cpu|cuda|xpu runs the PyTorch side there (a GPU peer for seqcl
on the same GPU's OpenCL platform); the clocks are read only after
torch.cuda.synchronize() / torch.xpu.synchronize(). A device this torch build
or machine lacks is an error, not a silent fall-back to the CPU.

With --train it also times shared/seeds/ch08_seq2seq.py (trains Bahdanau and
Luong-dot models, 1200 Adam steps each) against `seqcl train --task reverse`
with --score additive and --score dot, and a training step of two real-sized
models against the same modules in PyTorch (bench/train_models.py:
--train-steps steps each, the CMU-dictionary G2P model and a larger one with a
2-layer encoder, [s; c] output and dropout 0.2).
With --grid (and --quick for its subset) it runs the points of
`seqcl bench --grid` instead, one factor at a time around the base point (H 256,
embed 128, A 256, S 20, V 1000, one-way one-layer encoder, output over s_t,
additive, greedy): bidirectional (2 x 128), 2 layers, [s_t ; c_t], V 8000 and
32000, S 50 and 100, beam 5, general, each at batch 1 and 64 (the base also
16). Per point: PyTorch both ways, seqcl in-process and as a whole
`seqcl decode` process, the ratios, and seqcl's GFLOP/s with its fraction of
the GEMM ceiling (16+ rows) or of copy bandwidth over the weights (fewer), as
`seqcl bench --model` reports them. Beam points compare the best hypotheses
(identical count only: beams have no near-tie rule here).

The seed script runs on --torch-device too (it picks CUDA by itself whenever
CUDA is present, so for cpu it runs with no GPU visible); the train_models
step times stay on the CPU.

    /usr/bin/python3 bench/compare_pytorch.py --seqcl build/cli/seqcl \
        [--device cpu] [--torch-device cpu] [--hidden 256] [--src-len 20] \
        [--batch 1 64] [--train]
    /usr/bin/python3 bench/compare_pytorch.py --seqcl build/cli/seqcl --grid [--quick]

torch 1.13 lives in /usr/bin/python3 on the benchmark machine.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import export_pytorch  # noqa: E402
sys.path.insert(0, HERE)
import train_models  # noqa: E402


def torch_device_ready(name):
    """Checks that PyTorch can run on `name`; returns a message when it cannot."""
    if name == "cpu":
        return None
    if name == "cuda":
        if not torch.cuda.is_available():
            return (f"--torch-device cuda: torch {torch.__version__} sees no CUDA device "
                    f"(built with CUDA {torch.version.cuda}; no NVIDIA GPU or driver?)")
        return None
    if name == "xpu":
        if not (hasattr(torch, "xpu") and torch.xpu.is_available()):
            return (f"--torch-device xpu: torch {torch.__version__} has no usable XPU "
                    "(needs a torch build with Intel GPU support and its driver)")
        return None
    return f"--torch-device {name}: expected cpu, cuda or xpu"


def sync(device):
    """Waits for the device's queued work, so a clock read after it is honest."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "xpu":
        torch.xpu.synchronize(device)


def attend(scores, source_valid, encoder_states):
    """The seed's masked softmax over the source and the weighted sum of its
    states: (context, weights)."""
    scores = scores.masked_fill(~source_valid, float("-inf"))
    weights = scores.softmax(dim=-1)
    context = torch.bmm(weights.unsqueeze(1), encoder_states).squeeze(1)
    return context, weights


class AdditiveAttention(nn.Module):
    """Seed 000's AdditiveAttention: keys projected inside forward, every step."""

    def __init__(self, encoder_dim, decoder_dim, attention_dim):
        super().__init__()
        self.key = nn.Linear(encoder_dim, attention_dim, bias=False)
        self.query = nn.Linear(decoder_dim, attention_dim, bias=False)
        self.energy = nn.Linear(attention_dim, 1, bias=True)

    def project_keys(self, encoder_states):
        return self.key(encoder_states)

    def forward(self, encoder_states, decoder_state, source_valid, projected_keys=None):
        keys = self.key(encoder_states) if projected_keys is None else projected_keys
        features = torch.tanh(keys + self.query(decoder_state)[:, None])
        return attend(self.energy(features).squeeze(-1), source_valid, encoder_states)


class GeneralAttention(nn.Module):
    """Luong's general score h_j . (W q): nothing to hoist out of the loop."""

    def __init__(self, encoder_dim, decoder_dim):
        super().__init__()
        self.query = nn.Linear(decoder_dim, encoder_dim, bias=False)

    def project_keys(self, encoder_states):
        return None

    def forward(self, encoder_states, decoder_state, source_valid, projected_keys=None):
        q = self.query(decoder_state)
        return attend(torch.bmm(encoder_states, q.unsqueeze(2)).squeeze(2), source_valid,
                      encoder_states)


class Model(nn.Module):
    """The seed's model; enc_hidden per direction, output over s_t or [s_t ; c_t]."""

    def __init__(self, V, D, H, A, *, enc_hidden=None, layers=1, bidirectional=False,
                 score="additive", state_context=True):
        super().__init__()
        He_dir = enc_hidden or H
        He = He_dir * (2 if bidirectional else 1)
        self.src_embedding = nn.Embedding(V, D)
        self.encoder = nn.GRU(D, He_dir, num_layers=layers, bidirectional=bidirectional,
                              batch_first=True)
        self.tgt_embedding = nn.Embedding(V, D)
        self.attention = (AdditiveAttention(He, H, A) if score == "additive"
                          else GeneralAttention(He, H))
        self.cell = nn.GRUCell(D + He, H)
        self.state_context = state_context
        self.output = nn.Linear(H + He if state_context else H, V)
        self.H = H

    def start(self, src, keys_once):
        enc, _ = self.encoder(self.src_embedding(src))          # [N,S,He]
        valid = torch.ones(src.shape, dtype=torch.bool, device=src.device)
        pk = self.attention.project_keys(enc) if keys_once else None
        return enc, valid, pk

    def step(self, enc, valid, pk, state, prev):
        context, _ = self.attention(enc, state, valid, pk)
        state = self.cell(torch.cat([self.tgt_embedding(prev), context], dim=-1), state)
        logits = self.output(torch.cat([state, context], dim=-1) if self.state_context else state)
        return state, logits

    def greedy(self, src, steps, bos, eos, keys_once):
        n, dev = src.shape[0], src.device
        enc, valid, pk = self.start(src, keys_once)
        state = torch.zeros(n, self.H, device=dev)
        prev = torch.full((n,), bos, dtype=torch.long, device=dev)
        finished = torch.zeros(n, dtype=torch.bool, device=dev)
        out, logits_all = [], []
        for _ in range(steps):
            state, logits = self.step(enc, valid, pk, state, prev)
            tok = logits.argmax(-1)
            tok = torch.where(finished, torch.full_like(tok, eos), tok)
            finished |= tok == eos
            out.append(tok)
            logits_all.append(logits)
            prev = tok
            if bool(finished.all()):   # the usual per-step check (a host sync on a GPU)
                break
        return torch.stack(out, 1), torch.stack(logits_all, 1)

    def beam(self, src, steps, bos, eos, keys_once, K):
        """Batched beam search as usually written: top-K over K x V per line,
        states reordered by index. EOS is blocked in these models, so no
        hypothesis finishes early and the best is the highest sum of log p."""
        n, dev = src.shape[0], src.device
        enc, valid, pk = self.start(src, keys_once)
        rep = lambda t: None if t is None else t.repeat_interleave(K, 0)
        enc, valid, pk = rep(enc), rep(valid), rep(pk)
        state = torch.zeros(n * K, self.H, device=dev)
        prev = torch.full((n * K,), bos, dtype=torch.long, device=dev)
        score = torch.full((n, K), float("-inf"), device=dev)
        score[:, 0] = 0
        hist = torch.zeros(n, K, 0, dtype=torch.long, device=dev)
        V = self.output.out_features
        for _ in range(steps):
            state, logits = self.step(enc, valid, pk, state, prev)
            lp = logits.log_softmax(-1).view(n, K, V) + score[:, :, None]
            score, idx = lp.view(n, K * V).topk(K, dim=-1)
            origin, tok = idx // V, idx % V
            rows = (origin + torch.arange(n, device=dev)[:, None] * K).view(-1)
            state = state[rows]
            hist = torch.cat([hist.gather(1, origin[:, :, None].expand(-1, -1, hist.shape[2])),
                              tok[:, :, None]], 2)
            prev = tok.view(-1)
        return hist[:, 0], None


def build(V, D, H, A, seed, **shape):
    torch.manual_seed(seed)
    m = Model(V, D, H, A, **shape).eval()
    with torch.no_grad():
        m.output.bias[V - 1] = -1e4   # EOS never wins: every run does the same work
    return m


def export(m, out_dir, V):
    export_pytorch.export_modules(
        out_dir, encoder_embedding=m.src_embedding, encoder_rnn=m.encoder,
        decoder_embedding=m.tgt_embedding, decoder_rnn=m.cell, attention=m.attention,
        output=m.output, bos_id=V - 2, eos_id=V - 1, pad_id=None)


def time_torch(m, src, batch, steps, bos, eos, keys_once, reps, beam=1, warm=True):
    """Median seconds over reps (model and src on the same device) and the outputs
    of the last run, on the CPU; warm=False skips the warm-up run."""
    def run():
        outs = []
        with torch.no_grad():
            for i in range(0, src.shape[0], batch):
                if beam == 1:
                    outs.append(m.greedy(src[i:i + batch], steps, bos, eos, keys_once))
                else:
                    outs.append(m.beam(src[i:i + batch], steps, bos, eos, keys_once, beam))
        return outs
    if warm:
        run()                               # warm-up
    times = []
    for _ in range(reps):
        sync(src.device)
        t0 = time.perf_counter()
        outs = run()
        sync(src.device)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), [(tok.cpu(), None if logit is None else logit.cpu())
                                      for tok, logit in outs]


def agree(seqcl_lines, torch_outs, eos):
    """(identical lines, near-tie lines, disagreeing lines) per SPEC §5."""
    tok = torch.cat([o[0] for o in torch_outs], 0)
    logit = torch.cat([o[1] for o in torch_outs], 0)
    same = tie = bad = 0
    for i, line in enumerate(seqcl_lines):
        ref = tok[i].tolist()
        if eos in ref:
            ref = ref[:ref.index(eos)]
        if line == ref:
            same += 1
            continue
        t = next((k for k in range(min(len(line), len(ref))) if line[k] != ref[k]),
                 min(len(line), len(ref)))
        top2 = torch.topk(logit[i, t], 2).values
        if float(top2[0] - top2[1]) <= 1e-3:
            tie += 1
        else:
            bad += 1
    return same, tie, bad


def torch_thread_counts(args):
    """The CPU thread counts PyTorch is timed at (its faster is reported): 1 and
    the machine's core count, the count seqcl's pool uses by default, unless
    --torch-threads names them. Debian's torch 1.13 starts with one thread on
    some machines and with one per core on others: taking its default alone
    compared seqcl's two threads with PyTorch's one. A GPU device: as it is."""
    if args.torch_device != "cpu":
        return [torch.get_num_threads()]
    if args.torch_threads:
        return sorted(set(args.torch_threads))
    return sorted({1, os.cpu_count() or 1})


def decode_peer(args, V, D, H, A, S, batch, beam=1, lines=None, **shape):
    """One point: PyTorch both ways and seqcl in-process and as a whole process,
    on the same exported model and lines."""
    lines = lines or args.lines
    m = build(V, D, H, A, args.seed, **shape)
    g = torch.Generator().manual_seed(args.seed + 1)
    src = torch.randint(0, V - 2, (lines, S), generator=g)
    bos, eos = V - 2, V - 1
    with tempfile.TemporaryDirectory() as tmp:
        mdir = os.path.join(tmp, "model")
        export(m, mdir, V)
        src_file = os.path.join(tmp, "src.txt")
        with open(src_file, "w") as f:
            for row in src.tolist():
                f.write(" ".join(map(str, row)) + "\n")
        out_file = os.path.join(tmp, "out.txt")
        dec_cmd = [args.seqcl, "decode", "--device", args.device, "--model", mdir, "--src",
                   src_file, "--max-steps", str(args.steps), "--batch-size", str(batch),
                   "--beam", str(beam), "--out", out_file]
        subprocess.run(dec_cmd, check=True)
        with open(out_file) as f:
            seqcl_lines = [list(map(int, ln.split())) for ln in f]
        json_file = os.path.join(tmp, "bench.json")
        bench_cmd = [args.seqcl, "bench", "--device", args.device, "--model", mdir, "--src",
                     src_file, "--max-steps", str(args.steps), "--batch-size", str(batch),
                     "--beam", str(beam), "--reps", "1", "--json", json_file]
        dev = torch.device(args.torch_device)
        m, src_dev = m.to(dev), src.to(dev)   # exported above, from the CPU copy
        # The three are timed in turns, one repetition each, so that a change
        # in the machine's load falls on all of them alike; PyTorch at each of
        # its thread counts in turn too, the faster count's median kept.
        counts, threads0 = torch_thread_counts(args), torch.get_num_threads()
        ts, to, sqs = {c: [] for c in counts}, {c: [] for c in counts}, []
        for c in counts:
            torch.set_num_threads(c)
            _, outs = time_torch(m, src_dev, batch, args.steps, bos, eos, False, 1, beam)
            time_torch(m, src_dev, batch, args.steps, bos, eos, True, 1, beam, warm=False)
        for _ in range(args.reps):
            for c in counts:
                torch.set_num_threads(c)
                t, outs = time_torch(m, src_dev, batch, args.steps, bos, eos, False, 1, beam,
                                     warm=False)
                ts[c].append(t)
            subprocess.run(bench_cmd, check=True, stdout=subprocess.DEVNULL)
            with open(json_file) as f:
                sqs.append(json.load(f))
            for c in counts:
                torch.set_num_threads(c)
                to[c].append(time_torch(m, src_dev, batch, args.steps, bos, eos, True, 1, beam,
                                        warm=False)[0])
        torch.set_num_threads(threads0)
        c_torch = min(counts, key=lambda c: statistics.median(ts[c]))
        c_once = min(counts, key=lambda c: statistics.median(to[c]))
        t_torch, t_once = statistics.median(ts[c_torch]), statistics.median(to[c_once])
        sqs.sort(key=lambda r: r["decode_seconds"])
        sq = sqs[len(sqs) // 2]   # the median run's figures, all from one run
        t_proc = statistics.median(r["process_seconds"] for r in sqs)
    if beam == 1:
        same, tie, bad = agree(seqcl_lines, outs, eos)
    else:   # no near-tie rule for beams: identical best hypotheses are reported only
        ref = torch.cat([o[0] for o in outs], 0).tolist()
        same = sum(a == b for a, b in zip(seqcl_lines, ref))
        tie, bad = 0, 0
    tokens = lines * args.steps
    t_seqcl = sq["decode_seconds"]
    return {
        "hidden": H, "embed": D, "vocab": V, "attention_dim": A, "src_len": S, "batch": batch,
        "beam": beam, "lines": lines, "steps": args.steps, "device": args.device,
        "enc_hidden": shape.get("enc_hidden") or H, "enc_layers": shape.get("layers", 1),
        "bidirectional": shape.get("bidirectional", False),
        "score": shape.get("score", "additive"),
        "output": "state_context" if shape.get("state_context", True) else "state",
        "torch_device": args.torch_device, "torch_threads_tried": counts,
        "torch_threads": c_torch, "torch_keys_once_threads": c_once,
        "torch_seed000_s": t_torch, "torch_keys_once_s": t_once, "seqcl_s": t_seqcl,
        "seqcl_process_s": t_proc,
        "torch_seed000_tok_s": tokens / t_torch, "torch_keys_once_tok_s": tokens / t_once,
        "seqcl_tok_s": tokens / t_seqcl, "seqcl_process_tok_s": tokens / t_proc,
        "speedup_vs_seed000": t_torch / t_seqcl, "speedup_vs_keys_once": t_once / t_seqcl,
        "process_speedup_vs_seed000": t_torch / t_proc,
        "process_speedup_vs_keys_once": t_once / t_proc,
        "seqcl_gflops": sq["gflops"], "seqcl_bound": sq["bound"],
        "seqcl_ceiling": sq.get("gemm_ceiling_gflops", sq.get("copy_gbps")),
        "seqcl_fraction_of_ceiling": sq["fraction_of_ceiling"],
        "seqcl_step_mflop": sq["step_mflop"],
        "outputs_identical": same, "outputs_near_tie": tie, "outputs_disagree": bad,
        "seqcl_command": " ".join(bench_cmd).replace(tmp, "$TMP"),
    }


# The grid: one factor at a time around the base point (H 256, embed 128,
# A = H, S 20, V 1000, one-way one-layer encoder, output over s_t, additive,
# greedy), as `seqcl bench --grid` runs it. The bidirectional encoder is
# 2 x 128 so that H_e stays 256. (label, shape, V, S, beam, batches, quick)
GRID = [
    ("base", {}, 1000, 20, 1, (1, 16, 64), (1, 64)),
    ("bidirectional", {"bidirectional": True, "enc_hidden": 128}, 1000, 20, 1, (1, 64), (64,)),
    ("2 layers", {"layers": 2}, 1000, 20, 1, (1, 64), ()),
    ("state_context", {"state_context": True}, 1000, 20, 1, (1, 64), (64,)),
    ("V 8000", {}, 8000, 20, 1, (1, 64), ()),
    ("V 32000", {}, 32000, 20, 1, (1, 64), (64,)),
    ("S 50", {}, 1000, 50, 1, (1, 64), ()),
    ("S 100", {}, 1000, 100, 1, (1, 64), ()),
    ("beam 5", {}, 1000, 20, 5, (1, 64), (64,)),
    ("general", {"score": "general"}, 1000, 20, 1, (1, 64), ()),
]


def grid_lines(quick, batch):
    """Lines per point: 16 single lines or 4 batches (--quick: 8, or one batch)."""
    if quick:
        return 8 if batch == 1 else batch
    return 16 if batch == 1 else 4 * batch


def run_grid(args, results):
    print(f"{'point':<14} {'B':>3} {'K':>2} {'torch s000':>10} {'torch k1x':>10} "
          f"{'seqcl':>9} {'process':>9} {'x s000':>7} {'x k1x':>6} {'proc x s000':>11} "
          f"{'GF/s':>6} {'of ceiling':>14} {'torch thr':>9}  outputs")
    for label, shape, V, S, beam, batches, quick in GRID:
        for B in (quick if args.quick else batches):
            sh = {"state_context": False, **shape}
            r = decode_peer(args, V, args.embed, 256, 256, S, B, beam,
                            grid_lines(args.quick, B), **sh)
            r["point"] = label
            results["grid"].append(r)
            unit = "GF" if r["seqcl_bound"] == "gemm" else "GB"
            print(f"{label:<14} {B:>3} {beam:>2} {r['torch_seed000_tok_s']:>8.0f}/s "
                  f"{r['torch_keys_once_tok_s']:>8.0f}/s {r['seqcl_tok_s']:>7.0f}/s "
                  f"{r['seqcl_process_tok_s']:>7.0f}/s {r['speedup_vs_seed000']:>6.2f}x "
                  f"{r['speedup_vs_keys_once']:>5.2f}x {r['process_speedup_vs_seed000']:>10.2f}x "
                  f"{r['seqcl_gflops']:>6.1f} {100 * r['seqcl_fraction_of_ceiling']:>4.0f}% of "
                  f"{r['seqcl_ceiling']:>5.1f} {unit} "
                  f"{r['torch_threads']:>4}/{r['torch_keys_once_threads']:<4}"
                  f"  {r['outputs_identical']} same, "
                  f"{r['outputs_near_tie']} near-tie, {r['outputs_disagree']} differ",
                  flush=True)


# Runs the seed script with its device line pinned to argv[2]: the script picks
# CUDA by itself whenever it is present and knows no XPU. The final loss.item()
# waits for the device; the synchronize below covers any work after it.
SEED_RUNNER = r"""
import sys, torch
path, dev = sys.argv[1], sys.argv[2]
src = open(path, encoding="utf-8").read()
line = 'device = "cuda" if torch.cuda.is_available() else "cpu"'
if line not in src:
    sys.exit(f"{path}: its device line changed; cannot pin it to {dev}")
sys.argv = [path]
exec(compile(src.replace(line, f"device = {dev!r}"), path, "exec"), {"__name__": "__main__"})
if dev == "cuda":
    torch.cuda.synchronize()
elif dev == "xpu":
    torch.xpu.synchronize()
"""


def time_cmd(cmd, env=None):
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t0


def train_peer(args):
    seed_script = os.path.join(HERE, "..", "..", "shared", "seeds", "ch08_seq2seq.py")
    if not os.path.exists(seed_script):
        seed_script = "/work/shared/seeds/ch08_seq2seq.py"
    res = {"seed_script": seed_script, "torch_threads": torch.get_num_threads(),
           "torch_device": args.torch_device}
    res["seed_script_s"] = time_cmd([sys.executable, "-c", SEED_RUNNER, seed_script,
                                     args.torch_device])
    with tempfile.TemporaryDirectory() as tmp:
        for score in ("additive", "dot"):
            cmd = [args.seqcl, "train", "--task", "reverse", "--score", score, "--device",
                   args.device, "--save", os.path.join(tmp, score)]
            res[f"seqcl_train_{score}_s"] = time_cmd(cmd)
    both = res["seqcl_train_additive_s"] + res["seqcl_train_dot_s"]
    res["seqcl_both_s"] = both
    res["ratio_both_to_seed"] = both / res["seed_script_s"]
    return res


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seqcl", default=os.path.join(HERE, "..", "build", "cli", "seqcl"))
    p.add_argument("--device", default="cpu", help="seqcl's device (a SEQCL_DEVICE selector)")
    p.add_argument("--torch-device", default="cpu", choices=["cpu", "cuda", "xpu"],
                   help="where the PyTorch side runs (default cpu)")
    p.add_argument("--torch-threads", type=int, nargs="+",
                   help="PyTorch's CPU thread counts to time decoding at, the faster kept "
                        "(default: 1 and the core count)")
    p.add_argument("--hidden", type=int, nargs="+", default=[256])
    p.add_argument("--src-len", type=int, nargs="+", default=[20])
    p.add_argument("--batch", type=int, nargs="+", default=[1, 64])
    p.add_argument("--embed", type=int, default=128)
    p.add_argument("--vocab", type=int, default=1000)
    p.add_argument("--lines", type=int, default=64)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--train", action="store_true", help="also time the ch08 seed vs seqcl train")
    p.add_argument("--train-steps", type=int, default=20,
                   help="steps per side and model of the real-sized training comparison")
    p.add_argument("--grid", action="store_true",
                   help="the grid of shapes (seqcl bench --grid's points) instead")
    p.add_argument("--quick", action="store_true", help="with --grid: its quick subset")
    p.add_argument("--json", help="write every result here")
    args = p.parse_args()
    problem = torch_device_ready(args.torch_device)
    if problem:
        print(f"compare_pytorch.py: {problem}", file=sys.stderr)
        return 2
    results = {"decode": [], "torch_version": torch.__version__,
               "torch_device": args.torch_device}
    print(f"torch {torch.__version__} on {args.torch_device}, decoding timed at "
          f"{' and '.join(map(str, torch_thread_counts(args)))} CPU thread(s), the faster kept "
          f"(its default here: {torch.get_num_threads()}); seqcl {args.seqcl} on {args.device}")
    hdr = (f"{'H':>4} {'S':>3} {'B':>3} {'torch seed000':>14} {'torch keys1x':>13} "
           f"{'seqcl':>10} {'x seed000':>10} {'x keys1x':>9}  outputs")
    if args.grid:
        results["grid"] = []
        run_grid(args, results)
    else:
        print(hdr)
    for H in ([] if args.grid else args.hidden):
        for S in args.src_len:
            for B in args.batch:
                r = decode_peer(args, args.vocab, args.embed, H, H, S, B)
                results["decode"].append(r)
                print(f"{H:>4} {S:>3} {B:>3} {r['torch_seed000_tok_s']:>12.0f}/s "
                      f"{r['torch_keys_once_tok_s']:>11.0f}/s {r['seqcl_tok_s']:>8.0f}/s "
                      f"{r['speedup_vs_seed000']:>9.2f}x {r['speedup_vs_keys_once']:>8.2f}x  "
                      f"{r['outputs_identical']} same, {r['outputs_near_tie']} near-tie, "
                      f"{r['outputs_disagree']} differ", flush=True)
    if args.train:
        t = train_peer(args)
        results["train"] = t
        print(f"train: seed script (Bahdanau + Luong-dot, 1200 steps each) {t['seed_script_s']:.1f} s; "
              f"seqcl additive {t['seqcl_train_additive_s']:.1f} s + dot {t['seqcl_train_dot_s']:.1f} s "
              f"= {t['seqcl_both_s']:.1f} s ({t['ratio_both_to_seed']:.2f}x the seed's time)")
        sizes = train_models.run(args.seqcl, args.device, args.train_steps)
        results["train_sizes"] = sizes
        print(f"{'model':>6} {'seqcl ms/step':>14} {'torch ms/step':>14} {'ratio':>6} "
              f"{'seqcl tok/s':>12} {'torch tok/s':>12} {'seqcl GF/s':>11} {'torch GF/s':>11}")
        for name, r in sizes.items():
            print(f"{name:>6} {r['seqcl_ms_per_step']:>14.1f} {r['torch_ms_per_step']:>11.1f} "
                  f"({r['torch_threads']}t) {r['ratio']:>5.2f}x {r['seqcl_tokens_per_s']:>12.0f} "
                  f"{r['torch_tokens_per_s']:>12.0f} {r['seqcl_gflops']:>11.1f} "
                  f"{r['torch_gflops']:>11.1f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    bad = sum(r["outputs_disagree"] for r in results["decode"] + results.get("grid", []))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
