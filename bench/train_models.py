"""Training step time of seqcl against the same model in PyTorch, at two sizes
(imported by compare_pytorch.py --train).

  small  bidirectional encoder 2 x 128, decoder 256, additive attention 128,
         embed 64, output "state", no dropout (the CMU-dictionary G2P model)
  g2p    bidirectional 2-layer encoder of 256 per direction, decoder 512,
         additive attention 256, embed 64, output "state_context", dropout 0.2

Both: vocabularies 30 -> 45, sources and targets of 4-20 tokens (uniform),
batch 64, bridge init, Adam at 1e-3. The same token files feed both sides,
the same number of steps (seqcl draws its batches by its shuffle, PyTorch by
a seeded draw; both pad a batch to its own longest line).
PyTorch: nn.Embedding, nn.GRU(dropout=) over packed sequences, an additive
attention with the key projection hoisted, nn.GRUCell, nn.Linear, Adam; its
time is the faster of 1 and 2 threads. seqcl: `seqcl train --src --tgt
--config`, whose reported training seconds exclude loading. The two sides are
alternated (seqcl, torch 1, torch 2, then again) and each keeps its best.

GFLOP/s counts the multiply-adds of the GEMMs (forward x 3 for forward plus
backward), not the elementwise work.
"""
import json
import os
import random
import re
import subprocess
import tempfile
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

V_SRC, V_TGT, BATCH = 30, 45, 64
MODELS = {
    "small": dict(embed=64, hidden=128, layers=1, dec=256, attn=128, output="state", dropout=0.0),
    "g2p": dict(embed=64, hidden=256, layers=2, dec=512, attn=256, output="state_context",
                dropout=0.2),
}


def make_data(path, lines, seed):
    rng = random.Random(seed)
    src, tgt = [], []
    for _ in range(lines):
        src.append([rng.randrange(V_SRC) for _ in range(rng.randint(4, 20))])
        tgt.append([V_TGT - 2] + [rng.randrange(V_TGT - 2) for _ in range(rng.randint(4, 20))]
                   + [V_TGT - 1])
    for name, seqs in (("train.src", src), ("train.tgt", tgt)):
        with open(os.path.join(path, name), "w") as f:
            f.write("".join(" ".join(map(str, s)) + "\n" for s in seqs))
    return src, tgt


def config(m):
    return {"format": "seqcl.seq2seq", "version": 1, "src_vocab_size": V_SRC,
            "tgt_vocab_size": V_TGT, "embed_dim": m["embed"], "bos_id": V_TGT - 2,
            "eos_id": V_TGT - 1, "pad_id": None,
            "encoder": {"hidden_size": m["hidden"], "num_layers": m["layers"],
                        "bidirectional": True},
            "decoder": {"hidden_size": m["dec"], "init": "bridge"},
            "attention": {"score": "additive", "dim": m["attn"]}, "output": m["output"]}


class Model(nn.Module):
    def __init__(self, m):
        super().__init__()
        He, Hd, A, D = 2 * m["hidden"], m["dec"], m["attn"], m["embed"]
        self.p, self.ctx = m["dropout"], m["output"] == "state_context"
        self.src_emb, self.tgt_emb = nn.Embedding(V_SRC, D), nn.Embedding(V_TGT, D)
        self.rnn = nn.GRU(D, m["hidden"], num_layers=m["layers"], bidirectional=True,
                          batch_first=True, dropout=m["dropout"] if m["layers"] > 1 else 0.0)
        self.bridge = nn.Linear(He, Hd)
        self.key, self.query, self.energy = nn.Linear(He, A), nn.Linear(Hd, A), nn.Linear(A, 1)
        self.cell = nn.GRUCell(D + He, Hd)
        self.out = nn.Linear(Hd + (He if self.ctx else 0), V_TGT)

    def forward(self, src, lens, tin, tout):
        x = F.dropout(self.src_emb(src), self.p, self.training)
        packed = pack_padded_sequence(x, lens, batch_first=True, enforce_sorted=False)
        keys, h = self.rnn(packed)
        keys, _ = pad_packed_sequence(keys, batch_first=True, total_length=src.shape[1])
        s = torch.tanh(self.bridge(torch.cat([h[-2], h[-1]], dim=-1)))
        pk = self.key(keys)
        valid = torch.arange(src.shape[1])[None, :] < lens[:, None]
        emb = F.dropout(self.tgt_emb(tin), self.p, self.training)
        logits = []
        for t in range(tin.shape[1]):
            e = self.energy(torch.tanh(pk + self.query(s)[:, None, :])).squeeze(-1)
            a = torch.softmax(e.masked_fill(~valid, float("-inf")), dim=-1)
            c = torch.bmm(a[:, None, :], keys).squeeze(1)
            s = self.cell(torch.cat([emb[:, t], c], dim=-1), s)
            feats = torch.cat([s, c], dim=-1) if self.ctx else s
            logits.append(self.out(F.dropout(feats, self.p, self.training)))
        logits = torch.stack(logits, dim=1)
        return F.cross_entropy(logits.reshape(-1, V_TGT), tout.reshape(-1), ignore_index=-100)


def torch_batches(src, tgt, steps, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(steps):
        idx = [rng.randrange(len(src)) for _ in range(BATCH)]
        S = max(len(src[i]) for i in idx)
        T = max(len(tgt[i]) for i in idx) - 1
        s = torch.tensor([src[i] + [0] * (S - len(src[i])) for i in idx])
        lens = torch.tensor([len(src[i]) for i in idx])
        tin = torch.tensor([tgt[i][:-1] + [0] * (T + 1 - len(tgt[i])) for i in idx])
        tout = torch.tensor([tgt[i][1:] + [-100] * (T + 1 - len(tgt[i])) for i in idx])
        out.append((s, lens, tin, tout))
    return out


def time_torch(m, batches, threads):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = Model(m)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for b in batches[:2]:  # warm-up
        opt.zero_grad()
        model(*b).backward()
        opt.step()
    t0 = time.perf_counter()
    for b in batches:
        opt.zero_grad()
        model(*b).backward()
        opt.step()
    return (time.perf_counter() - t0) / len(batches)


def time_seqcl(seqcl, device, tmp, m, steps):
    save = os.path.join(tmp, "out")
    subprocess.run(["rm", "-rf", save], check=True)
    cmd = [seqcl, "train", "--src", os.path.join(tmp, "train.src"), "--tgt",
           os.path.join(tmp, "train.tgt"), "--config", os.path.join(tmp, "config.json"),
           "--steps", str(steps), "--batch-size", str(BATCH), "--dropout", str(m["dropout"]),
           "--save", save, "--device", device]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return float(re.search(r" in ([0-9.]+) s", out).group(1)) / steps


def gemm_flops(m, S, T):
    """Multiply-add FLOPs of one training step's GEMMs (x 3: forward, and the
    two backward products of each)."""
    D, H, Hd, A, N = m["embed"], m["hidden"], m["dec"], m["attn"], BATCH
    He = 2 * H
    enc = sum(2 * 2 * N * S * 3 * H * ((D if l == 0 else He) + H) for l in range(m["layers"]))
    keys = 2 * N * S * He * A
    Ow = Hd + (He if m["output"] == "state_context" else 0)
    step = 2 * N * (3 * Hd * (D + He + Hd) + A * Hd + S * He + V_TGT * Ow)
    return 3 * (enc + keys + T * step + 2 * N * He * Hd)


def run(seqcl, device, steps, rounds=2):
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        src, tgt = make_data(tmp, 2000, 1)
        batches = torch_batches(src, tgt, steps, 2)
        mean_s = sum(b[0].shape[1] for b in batches) / len(batches)
        mean_t = sum(b[2].shape[1] for b in batches) / len(batches)
        labels = sum(int((b[3] >= 0).sum()) for b in batches) / len(batches)
        for name, m in MODELS.items():
            with open(os.path.join(tmp, "config.json"), "w") as f:
                json.dump(config(m), f)
            best = {"seqcl": float("inf"), "torch1": float("inf"), "torch2": float("inf")}
            for _ in range(rounds):
                best["seqcl"] = min(best["seqcl"], time_seqcl(seqcl, device, tmp, m, steps))
                best["torch1"] = min(best["torch1"], time_torch(m, batches, 1))
                best["torch2"] = min(best["torch2"], time_torch(m, batches, 2))
            torch_s = min(best["torch1"], best["torch2"])
            fl = gemm_flops(m, mean_s, mean_t)
            results[name] = {
                "model": m, "steps": steps, "device": device,
                "seqcl_ms_per_step": 1e3 * best["seqcl"],
                "torch_ms_per_step": 1e3 * torch_s,
                "torch_threads": 1 if best["torch1"] <= best["torch2"] else 2,
                "ratio": best["seqcl"] / torch_s,
                "seqcl_tokens_per_s": labels / best["seqcl"],
                "torch_tokens_per_s": labels / torch_s,
                "seqcl_gflops": fl / best["seqcl"] / 1e9,
                "torch_gflops": fl / torch_s / 1e9,
            }
    return results
