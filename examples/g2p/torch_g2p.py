#!/usr/bin/python3
"""The G2P recipe's model and training in PyTorch, for comparison with seqcl.

Reads the files `recipe.py --prepare-only` writes (WORK/{train,valid,test}
.{words,phones}) and trains the same model as the recipe's seqcl run: character
embeddings, a bidirectional GRU encoder, a tanh bridge to the decoder's first
state, additive (Bahdanau) attention, a GRUCell over [embedding; context], the
output layer on the state; dropout on both embeddings and the output layer's
input; Adam with the same rate, clipping, batch size and step count, batches
from a per-epoch shuffle padded to their own longest line. Then greedy and
beam search on the test words, scored as `seqcl eval` does (WER = lines not
equal to the reference, PER = Levenshtein edits / reference phonemes).

    /usr/bin/python3 examples/g2p/torch_g2p.py --work /tmp/g2p --steps 12640 --threads 1

The defaults are the recipe's (recipe.py DEFAULTS); --threads 1 was PyTorch's
fastest setting for this model on a 2-core machine (measure 1 and 2).
"""
import argparse
import collections
import math
import os
import random
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

UNK, BOS, EOS = 0, 1, 2


def read(path, chars):
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    return [list(l) if chars else l.split() for l in lines]


def vocab(lines):
    # as `seqcl vocab build` (and train --text) makes it: <unk> <s> </s>,
    # then by falling count, ties in byte order
    c = collections.Counter(t for l in lines for t in l)
    toks = sorted(c, key=lambda t: (-c[t], t.encode()))
    return {t: i + 3 for i, t in enumerate(toks)}, ["<unk>", "<s>", "</s>"] + toks


class G2P(nn.Module):
    def __init__(self, vs, vt, d, h, hd, a, p):
        super().__init__()
        self.src_emb = nn.Embedding(vs, d)
        self.enc = nn.GRU(d, h, batch_first=True, bidirectional=True)
        self.bridge = nn.Linear(2 * h, hd)
        self.tgt_emb = nn.Embedding(vt, d)
        self.key = nn.Linear(2 * h, a)
        self.query = nn.Linear(hd, a)
        self.energy = nn.Linear(a, 1)
        self.cell = nn.GRUCell(d + 2 * h, hd)
        self.out = nn.Linear(hd, vt)
        self.drop = nn.Dropout(p)

    def encode(self, src, lens):
        x = self.drop(self.src_emb(src))
        packed = nn.utils.rnn.pack_padded_sequence(x, lens.cpu(), batch_first=True, enforce_sorted=False)
        out, hn = self.enc(packed)
        out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])
        s = torch.tanh(self.bridge(torch.cat([hn[0], hn[1]], 1)))
        mask = torch.arange(src.shape[1])[None, :] < lens[:, None]
        return out, self.key(out), mask, s

    def step(self, y, s, H, K, mask):
        e = self.energy(torch.tanh(K + self.query(s)[:, None, :])).squeeze(2)
        alpha = torch.softmax(e.masked_fill(~mask, float("-inf")), 1)
        c = torch.bmm(alpha[:, None, :], H).squeeze(1)
        s = self.cell(torch.cat([self.drop(self.tgt_emb(y)), c], 1), s)
        return self.out(self.drop(s)), s

    def loss(self, src, lens, tgt):
        H, K, mask, s = self.encode(src, lens)
        logits = []
        for t in range(tgt.shape[1] - 1):
            lo, s = self.step(tgt[:, t].clamp(min=0), s, H, K, mask)
            logits.append(lo)
        lo = torch.stack(logits, 1)
        return F.cross_entropy(lo.reshape(-1, lo.shape[2]), tgt[:, 1:].reshape(-1), ignore_index=-1)


def pad(rows, fill):
    n = max(len(r) for r in rows)
    return torch.tensor([r + [fill] * (n - len(r)) for r in rows], dtype=torch.long)


def greedy(m, src, lens, max_steps):
    H, K, mask, s = m.encode(src, lens)
    y = torch.full((src.shape[0],), BOS, dtype=torch.long)
    out, done = [], torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_steps):
        lo, s = m.step(y, s, H, K, mask)
        y = lo.argmax(1)
        y = torch.where(done, torch.full_like(y, EOS), y)
        out.append(y)
        done |= y == EOS
        if done.all():
            break
    res = []
    for row in torch.stack(out, 1).tolist():
        res.append(row[:row.index(EOS)] if EOS in row else row)
    return res


def beam(m, src_row, k, max_steps):
    src = torch.tensor([src_row])
    H, K, mask, s = m.encode(src, torch.tensor([len(src_row)]))
    alive = [(0.0, [BOS], s[0])]
    finished = []
    for _ in range(max_steps):
        y = torch.tensor([h[1][-1] for h in alive])
        st = torch.stack([h[2] for h in alive])
        n = len(alive)
        lo, st = m.step(y, st, H.expand(n, -1, -1), K.expand(n, -1, -1), mask.expand(n, -1))
        lp = torch.log_softmax(lo, 1)
        top = lp.topk(k, 1)
        cand = []
        for i in range(n):
            for v, t in zip(top.values[i].tolist(), top.indices[i].tolist()):
                cand.append((alive[i][0] + v, alive[i][1] + [t], st[i]))
        cand.sort(key=lambda c: -c[0])
        alive = []
        for c in cand[:k]:
            (finished if c[1][-1] == EOS else alive).append(c)
        if len(finished) >= k or not alive:
            break
    best = max(finished or alive, key=lambda c: c[0])[1][1:]
    return best[:-1] if best and best[-1] == EOS else best


def edits(a, b):
    d = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, d[0] = d[0], i
        for j, y in enumerate(b, 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (x != y))
    return d[len(b)]


def score(hyps, refs):
    wrong = sum(h != r for h, r in zip(hyps, refs))
    e = sum(edits(h, r) for h, r in zip(hyps, refs))
    return 100.0 * wrong / len(refs), 100.0 * e / sum(len(r) for r in refs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--clip", type=float, default=5.0)
    ap.add_argument("--dropout", type=float, default=0.2)
    ap.add_argument("--embed", type=int, default=64)
    ap.add_argument("--enc-hidden", type=int, default=128)
    ap.add_argument("--dec-hidden", type=int, default=256)
    ap.add_argument("--attn", type=int, default=256)
    ap.add_argument("--beam", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    rng = random.Random(a.seed)
    w = lambda n: os.path.join(a.work, n)
    tr_s, tr_t = read(w("train.words"), True), read(w("train.phones"), False)
    te_s, te_t = read(w("test.words"), True), read(w("test.phones"), False)
    sv, _ = vocab(tr_s)
    tv, tv_words = vocab(tr_t)
    ids = lambda l, v: [v.get(t, UNK) for t in l]
    src = [ids(l, sv) for l in tr_s]
    tgt = [[BOS] + ids(l, tv) + [EOS] for l in tr_t]
    m = G2P(len(sv) + 3, len(tv) + 3, a.embed, a.enc_hidden, a.dec_hidden, a.attn, a.dropout)
    opt = torch.optim.Adam(m.parameters(), lr=a.lr)
    order, cursor = [], len(src)
    t0 = time.time()
    for step in range(a.steps):
        rows = []
        for _ in range(a.batch):
            if cursor == len(src):
                order = list(range(len(src)))
                rng.shuffle(order)
                cursor = 0
            rows.append(order[cursor])
            cursor += 1
        s = pad([src[i] for i in rows], 0)
        lens = torch.tensor([len(src[i]) for i in rows])
        t = pad([tgt[i] for i in rows], -1)
        opt.zero_grad()
        loss = m.loss(s, lens, t)
        loss.backward()
        if a.clip > 0:
            nn.utils.clip_grad_norm_(m.parameters(), a.clip)
        opt.step()
        if (step + 1) % max(a.steps // 10, 1) == 0:
            print("step %d/%d loss %.4f %.1f s" % (step + 1, a.steps, loss.item(), time.time() - t0), flush=True)
    train_s = time.time() - t0
    m.eval()
    refs = te_t
    with torch.no_grad():
        t0 = time.time()
        hyps = []
        for i in range(0, len(te_s), 256):
            chunk = [ids(l, sv) for l in te_s[i:i + 256]]
            mx = 2 * max(len(c) for c in chunk) + 10
            hyps += greedy(m, pad(chunk, 0), torch.tensor([len(c) for c in chunk]), mx)
        g_s = time.time() - t0
        g = score([[tv_words[x] for x in h] for h in hyps], refs)
        t0 = time.time()
        bh = [beam(m, ids(l, sv), a.beam, 2 * len(l) + 10) for l in te_s]
        b_s = time.time() - t0
        b = score([[tv_words[x] for x in h] for h in bh], refs)
    print("| system | steps | train s | decode | WER % | PER % | decode s |")
    print("|---|---|---|---|---|---|---|")
    print("| PyTorch %s, %d thread(s) | %d | %.0f | greedy | %.2f | %.2f | %.1f |" %
          (torch.__version__, a.threads, a.steps, train_s, g[0], g[1], g_s))
    print("| PyTorch %s, %d thread(s) | %d | %.0f | beam %d | %.2f | %.2f | %.1f |" %
          (torch.__version__, a.threads, a.steps, train_s, a.beam, b[0], b[1], b_s))


if __name__ == "__main__":
    main()
