#!/usr/bin/env python3
"""From a PyTorch nn.Module to decoding on an OpenCL device.

A tutorial-style attention model (bidirectional nn.GRU encoder with an fc
bridge, BahdanauAttention with W_a/U_a/v_a, a GRUCell decoder, output over
[s; c]) learns to reverse digit strings for a few hundred PyTorch steps; then
seqcl takes the module as it is, decodes with it on a device and checks it
against PyTorch.

    PYTHONPATH=python SEQCL_LIBRARY=build/src/libseqcl.so \\
        /usr/bin/python3 examples/python/from_torch.py [--device opencl:0] [--steps 300]

Needs PyTorch (Debian: python3-torch) and numpy.
"""
import argparse

import torch
from torch import nn

import seqcl

V, D, H, HD, A = 12, 16, 32, 64, 32
BOS, EOS = 10, 11


# The model is written once here for any sizes; tests/python/test_torch.py
# builds it at other sizes, padded batches and all.
class Encoder(nn.Module):
    def __init__(self, V, D, H, HD):
        super().__init__()
        self.embedding = nn.Embedding(V, D)
        self.gru = nn.GRU(D, H, bidirectional=True, batch_first=True)
        self.fc = nn.Linear(2 * H, HD)

    def states(self, src, lens=None):
        """The GRU outputs and the final [forward ; backward] state; lens: each
        line's length in a padded batch (None: no padding)."""
        x = self.embedding(src)
        if lens is not None:
            x = nn.utils.rnn.pack_padded_sequence(x, lens, batch_first=True, enforce_sorted=False)
        out, h = self.gru(x)
        if lens is not None:
            out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True,
                                                      total_length=src.shape[1])
        return out, torch.cat([h[-2], h[-1]], dim=1)

    def forward(self, src, lens=None):
        out, h = self.states(src, lens)
        return out, torch.tanh(self.fc(h))


class BahdanauAttention(nn.Module):
    def __init__(self, HD, H, A):
        super().__init__()
        self.W_a = nn.Linear(HD, A)      # on the decoder state
        self.U_a = nn.Linear(2 * H, A)   # on the encoder outputs
        self.v_a = nn.Linear(A, 1)

    def forward(self, s, keys, mask=None):
        """The context and the weights; mask: the source positions to attend
        (None: all)."""
        e = self.v_a(torch.tanh(self.W_a(s)[:, None] + self.U_a(keys))).squeeze(-1)
        if mask is not None:
            e = e.masked_fill(~mask, float("-inf"))
        w = torch.softmax(e, dim=-1)
        return torch.bmm(w[:, None], keys).squeeze(1), w


class Decoder(nn.Module):
    def __init__(self, V, D, H, HD, A):
        super().__init__()
        self.embedding = nn.Embedding(V, D)
        self.attention = BahdanauAttention(HD, H, A)
        self.gru = nn.GRUCell(D + 2 * H, HD)
        self.out = nn.Linear(HD + 2 * H, V)

    def step(self, y, s, keys, mask=None):
        c, _ = self.attention(s, keys, mask)
        s = self.gru(torch.cat([self.embedding(y), c], dim=1), s)
        return self.out(torch.cat([s, c], dim=1)), s


class Seq2Seq(nn.Module):
    def __init__(self, V=V, D=D, H=H, HD=HD, A=A):
        super().__init__()
        self.encoder, self.decoder = Encoder(V, D, H, HD), Decoder(V, D, H, HD, A)

    def forward(self, src, tgt_in, lens=None):
        """Teacher-forced logits [N, T, V]; lens as in Encoder.states."""
        keys, s = self.encoder(src, lens)
        mask = None if lens is None else torch.arange(src.shape[1])[None] < lens[:, None]
        logits = []
        for t in range(tgt_in.shape[1]):
            lg, s = self.decoder.step(tgt_in[:, t], s, keys, mask)
            logits.append(lg)
        return torch.stack(logits, 1)


# seqcl's roles (SPEC §2) -> this model's attribute paths
NAMES = {"attention.key": "U_a", "attention.query": "W_a", "attention.energy": "v_a",
         "bridge": "fc", "decoder.output": "out"}


def batch(n, length=6):
    src = torch.randint(0, 10, (n, length))
    tgt = torch.cat([torch.full((n, 1), BOS), src.flip(1), torch.full((n, 1), EOS)], dim=1)
    return src, tgt


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="auto", help="SPEC §3 selector (default auto)")
    p.add_argument("--steps", type=int, default=300, help="PyTorch training steps")
    args = p.parse_args()
    torch.manual_seed(0)
    net = Seq2Seq()
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    for step in range(args.steps):
        src, tgt = batch(64)
        loss = nn.functional.cross_entropy(net(src, tgt[:, :-1]).reshape(-1, V), tgt[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    net.eval()
    print(f"PyTorch: {args.steps} steps, loss {loss.item():.4f}")

    # --- the five lines: nn.Module -> seqcl model on a device -> decode ---
    model = seqcl.Model.from_torch(net, names=NAMES, bos_id=BOS, eos_id=EOS, ctx=args.device)
    tokens, scores, alignments = model.decode([[1, 2, 3, 4, 5, 6]], beam=4)
    print(f"seqcl on {model.ctx.selector}: 1 2 3 4 5 6 -> {' '.join(map(str, tokens[0]))} "
          f"(score {scores[0]:.4f}; alignments {alignments[0].shape})")

    # --- and a check against PyTorch (SPEC §5) on 64 sample lines ---
    src, _ = batch(64)
    lines = src.tolist()

    def teacher_forced(src_lines, tgt_lines):
        T = max(len(t) for t in tgt_lines) - 1
        tin = torch.tensor([t[:-1] + [BOS] * (T + 1 - len(t)) for t in tgt_lines])
        with torch.no_grad():
            return net(torch.tensor(src_lines), tin)

    report = seqcl.export.verify(teacher_forced, model, lines, max_steps=8)
    print(f"verify: max logit difference {report['max_logit_diff']:.2e} "
          f"(max |logit| {report['max_abs_logit']:.1f}); greedy lines equal "
          f"{report['decoded_agree']}/{report['lines']} (near-ties {report['near_ties']})")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
