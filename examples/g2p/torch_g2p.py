#!/usr/bin/python3
"""The G2P recipe's model and training in PyTorch, for comparison with seqcl.

Reads the files `recipe.py --prepare-only` writes (WORK/{train,valid,test}
.{words,phones}) and trains the same model as the recipe's seqcl run: character
embeddings, a bidirectional GRU encoder, a tanh bridge to the decoder's first
state, additive (Bahdanau) attention, a GRUCell over [embedding; context], the
output layer on [state; context] (--output state: on the state); dropout on
both embeddings and the output layer's input; Adam with the same rate, clipping, batch size and step count; the same
schedule rules as seqcl's (length-bucketed batches: each epoch's shuffled
lines sorted by length within windows of --bucket batches, cut into batches,
the batches shuffled; linear warm-up; the rate halved when validation exact
match stops improving, down to --min-lr; the model kept is the best
validation's). Then greedy and beam search on the test words, scored as
`seqcl eval` does (WER = lines not equal to the reference, PER = Levenshtein
edits / reference phonemes). The random streams (weights, shuffles, dropout
masks) are PyTorch's and Python's, so the two runs agree in distribution,
not bit for bit.

    /usr/bin/python3 examples/g2p/torch_g2p.py --work /tmp/g2p --threads 1
    # the earlier default: output over s_t, patience 1, 8 epochs
    /usr/bin/python3 examples/g2p/torch_g2p.py --work /tmp/g2p --epochs 8 --output state \
        --decay-patience 1 --threads 1

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
    def __init__(self, vs, vt, d, h, hd, a, p, layers=1, state_context=False):
        super().__init__()
        self.src_emb = nn.Embedding(vs, d)
        # dropout between stacked layers, as seqcl's --dropout puts it
        self.enc = nn.GRU(d, h, num_layers=layers, batch_first=True, bidirectional=True,
                          dropout=p if layers > 1 else 0.0)
        self.state_context = state_context
        self.bridge = nn.Linear(2 * h, hd)
        self.tgt_emb = nn.Embedding(vt, d)
        self.key = nn.Linear(2 * h, a)
        self.query = nn.Linear(hd, a)
        self.energy = nn.Linear(a, 1)
        self.cell = nn.GRUCell(d + 2 * h, hd)
        # the output layer over s_t, or over [s_t ; c_t] (config "state_context")
        self.out = nn.Linear(hd + (2 * h if state_context else 0), vt)
        self.drop = nn.Dropout(p)

    def encode(self, src, lens):
        x = self.drop(self.src_emb(src))
        packed = nn.utils.rnn.pack_padded_sequence(x, lens.cpu(), batch_first=True, enforce_sorted=False)
        out, hn = self.enc(packed)
        out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])
        # the bridge reads the top layer's final states, forward and reverse
        s = torch.tanh(self.bridge(torch.cat([hn[-2], hn[-1]], 1)))
        mask = torch.arange(src.shape[1])[None, :] < lens[:, None]
        return out, self.key(out), mask, s

    def step(self, y, s, H, K, mask):
        e = self.energy(torch.tanh(K + self.query(s)[:, None, :])).squeeze(2)
        alpha = torch.softmax(e.masked_fill(~mask, float("-inf")), 1)
        c = torch.bmm(alpha[:, None, :], H).squeeze(1)
        s = self.cell(torch.cat([self.drop(self.tgt_emb(y)), c], 1), s)
        o = torch.cat([s, c], 1) if self.state_context else s
        return self.out(self.drop(o)), s

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
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--epochs", type=float, default=16, help="the recipe's 16 (--steps N instead)")
    ap.add_argument("--bucket", type=int, default=50, help="batches per sorted window (0: plain shuffle)")
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--lr-decay", type=float, default=0.5)
    ap.add_argument("--decay-patience", type=int, default=3)
    ap.add_argument("--min-lr", type=float, default=1e-4)
    ap.add_argument("--valid-every", type=int, default=0, help="default: half an epoch")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--clip", type=float, default=5.0)
    ap.add_argument("--dropout", type=float, default=0.2)
    ap.add_argument("--embed", type=int, default=64)
    ap.add_argument("--enc-hidden", type=int, default=128)
    ap.add_argument("--dec-hidden", type=int, default=256)
    ap.add_argument("--attn", type=int, default=256)
    ap.add_argument("--layers", type=int, default=1, help="encoder layers")
    ap.add_argument("--output", choices=["state", "state_context"], default="state_context",
                    help="the output layer over s_t or over [s_t ; c_t]")
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
    va_s, va_t = read(w("valid.words"), True), read(w("valid.phones"), False)
    m = G2P(len(sv) + 3, len(tv) + 3, a.embed, a.enc_hidden, a.dec_hidden, a.attn, a.dropout,
            a.layers, a.output == "state_context")
    opt = torch.optim.Adam(m.parameters(), lr=a.lr)

    def epoch_batches():
        order = list(range(len(src)))
        rng.shuffle(order)
        if not a.bucket:
            return None, order
        batches, win = [], a.bucket * a.batch
        for w0 in range(0, len(order), win):
            part = sorted(order[w0:w0 + win], key=lambda i: (len(src[i]), len(tgt[i]), i))
            batches += [part[k:k + a.batch] for k in range(0, len(part), a.batch)]
        rng.shuffle(batches)
        return batches, order

    per_epoch = math.ceil(len(src) / a.batch) if not a.bucket else len(epoch_batches()[0])
    steps = a.steps or int(math.ceil(a.epochs * per_epoch))
    valid_every = a.valid_every or max(per_epoch // 2, 1)
    rng = random.Random(a.seed)  # the stream starts here (per_epoch drew one epoch)

    def valid_exact():
        m.eval()
        with torch.no_grad():
            hyps = []
            for i in range(0, len(va_s), 256):
                chunk = [ids(l, sv) for l in va_s[i:i + 256]]
                hyps += greedy(m, pad(chunk, 0), torch.tensor([len(c) for c in chunk]),
                               2 * max(len(c) for c in chunk) + 10)
        m.train()
        return 100.0 - score([[tv_words[x] for x in h] for h in hyps], va_t)[0]

    batches, order, cursor = None, [], len(src)
    scale, best, best_state, since_decay = 1.0, -1.0, None, 0
    t0 = time.time()
    for step in range(steps):
        if a.bucket:
            if not batches:
                batches, _ = epoch_batches()
            rows = batches.pop(0)
        else:
            rows = []
            for _ in range(a.batch):
                if cursor == len(src):
                    _, order = epoch_batches()
                    cursor = 0
                rows.append(order[cursor])
                cursor += 1
        lr = a.lr * scale
        if scale < 1 and lr < a.min_lr:
            lr = a.min_lr
        if a.warmup and step < a.warmup:
            lr *= (step + 1) / a.warmup
        for g in opt.param_groups:
            g["lr"] = lr
        s = pad([src[i] for i in rows], 0)
        lens = torch.tensor([len(src[i]) for i in rows])
        t = pad([tgt[i] for i in rows], -1)
        opt.zero_grad()
        loss = m.loss(s, lens, t)
        loss.backward()
        if a.clip > 0:
            nn.utils.clip_grad_norm_(m.parameters(), a.clip)
        opt.step()
        if (step + 1) % valid_every == 0 or step + 1 == steps:
            ex = valid_exact()
            if ex > best:
                best, best_state = ex, {k: v.clone() for k, v in m.state_dict().items()}
                since_decay = 0
            else:
                since_decay += 1
                if a.lr_decay and since_decay >= a.decay_patience:
                    scale *= a.lr_decay
                    since_decay = 0
            print("step %d/%d loss %.4f lr %.3g valid exact %.2f%% (best %.2f) %.0f s" %
                  (step + 1, steps, loss.item(), lr, ex, best, time.time() - t0), flush=True)
    m.load_state_dict(best_state)
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
          (torch.__version__, a.threads, steps, train_s, g[0], g[1], g_s))
    print("| PyTorch %s, %d thread(s) | %d | %.0f | beam %d | %.2f | %.2f | %.1f |" %
          (torch.__version__, a.threads, steps, train_s, a.beam, b[0], b[1], b_s))


if __name__ == "__main__":
    main()
