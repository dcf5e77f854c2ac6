#!/usr/bin/python3
"""Gradient fixtures for the training graph, computed by PyTorch autograd.

For each case below: a tiny model (weights drawn from a seeded torch
generator, rounded to float32 and written as model.safetensors), one fixed
ragged batch (batch.safetensors: src [N,S] I32 with 0 past each line's end,
lens [N] I32, tgt [N,T+1] I32 with -1 past each line's end), and the gradient
of the mean cross-entropy over every valid label with respect to every
parameter (grads.safetensors, same names as the parameters, plus `loss` []).

The reference runs tools/seq2seq_reference.py's Seq2Seq in float64 on the
float32-rounded weights, so the stored gradients carry float64 accuracy
rounded once to float32. An embedding row equal to pad_id is frozen
(torch.nn.Embedding padding_idx), as seqcl's training does.

Cases with dropout run masked_forward below instead: the same modules, with
every encoder layer and direction unrolled so that seqcl's masks multiply the
tensors explicitly where seqcl drops (both embeddings, each encoder layer's
output but the top one, the output layer's input). The masks are computed here
from seqcl's definition (Philox4x32-10, checked against Random123's published
answers), and batch.safetensors carries `dropout_p` [1] and `dropout_key` [3]
(seed low word, seed high word, step). With p = 0 masked_forward must give
Seq2Seq's loss, which checks the unrolled encoder against nn.GRU's packed one.

    /usr/bin/python3 tests/golden_grad/make_grad_golden.py [OUT_DIR]
"""
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import export_pytorch  # noqa: E402
import seq2seq_reference as ref  # noqa: E402

# name: (score, bidirectional, init, pad_id, H, H_d, A[, layers, output])
CASES = {
    "uni_additive_zeros": ("additive", False, "zeros", None, 5, 5, 6),
    "bi_additive_bridge": ("additive", True, "bridge", 0, 4, 6, 5),
    "uni_general_bridge": ("general", False, "bridge", 0, 5, 7, 0),
    "bi_general_zeros": ("general", True, "zeros", None, 4, 6, 0),
    "uni_dot_zeros": ("dot", False, "zeros", 0, 6, 6, 0),
    "bi_scaled_dot_bridge": ("scaled_dot", True, "bridge", None, 3, 6, 0),
    # stacked encoders (layer l > 0 reads the whole previous layer's output) and
    # the [s_t ; c_t] output layer
    "uni2_additive_zeros_ctx": ("additive", False, "zeros", None, 5, 6, 4, 2, "state_context"),
    "bi2_additive_bridge_ctx": ("additive", True, "bridge", 0, 4, 6, 5, 2, "state_context"),
    "bi3_general_bridge": ("general", True, "bridge", None, 3, 5, 0, 3, "state"),
    "uni3_dot_zeros_ctx": ("dot", False, "zeros", 0, 5, 5, 0, 3, "state_context"),
    "bi2_scaled_dot_bridge_ctx": ("scaled_dot", True, "bridge", None, 3, 6, 0, 2, "state_context"),
    "uni4_general_zeros_ctx": ("general", False, "zeros", 0, 4, 6, 0, 4, "state_context"),
    "bi1_additive_zeros_ctx": ("additive", True, "zeros", None, 4, 5, 6, 1, "state_context"),
    "uni2_scaled_dot_bridge": ("scaled_dot", False, "bridge", 0, 6, 6, 0, 2, "state"),
    "bi4_additive_bridge_ctx": ("additive", True, "bridge", 0, 3, 4, 3, 4, "state_context"),
}
# score "none" (a fixed context: the top layer's final state at every step, so
# dL/dc of every step flows into each direction's last step); seeds from 100
NONE_CASES = {
    "uni_none_zeros": ("none", False, "zeros", None, 5, 7, 0),
    "bi_none_bridge": ("none", True, "bridge", 0, 4, 6, 0),
    "bi2_none_zeros_ctx": ("none", True, "zeros", None, 3, 5, 0, 2, "state_context"),
    "uni3_none_bridge_ctx": ("none", False, "bridge", 0, 4, 6, 0, 3, "state_context"),
}
NONE_DROPOUT_CASES = {
    "bi2_none_bridge_ctx_drop": (("none", True, "bridge", 0, 3, 5, 0, 2, "state_context"),
                                 (0.2, 77, 3)),
}
# name: the case above plus (dropout p, seed, step)
DROPOUT_CASES = {
    "bi2_additive_bridge_ctx_drop": (("additive", True, "bridge", 0, 4, 6, 5, 2, "state_context"),
                                     (0.25, 0x12345678 | (5 << 32), 7)),
    "uni3_general_zeros_drop": (("general", False, "zeros", None, 5, 6, 0, 3, "state"),
                                (0.3, 99, 0)),
    "bi2_scaled_dot_bridge_ctx_drop": (("scaled_dot", True, "bridge", None, 3, 6, 0, 2,
                                        "state_context"), (0.2, 2026, 123456)),
}

# ---- seqcl's dropout masks ----
M32 = 0xFFFFFFFF
DROP_ENC_EMB, DROP_DEC_EMB, DROP_LAYER, DROP_OUT_STATE, DROP_OUT_CTX = 0, 1, 2, 8, 9


def philox4x32_10(ctr, key):
    c0, c1, c2, c3 = ctr
    k0, k1 = key
    for _ in range(10):
        p0, p1 = 0xD2511F53 * c0, 0xCD9E8D57 * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & M32, (p0 >> 32) ^ c3 ^ k1, p0 & M32
        k0, k1 = (k0 + 0x9E3779B9) & M32, (k1 + 0xBB67AE85) & M32
    return c0, c1, c2, c3


assert philox4x32_10((0, 0, 0, 0), (0, 0)) == (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)
assert philox4x32_10((M32,) * 4, (M32,) * 2) == (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)
assert philox4x32_10((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0)) \
    == (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)


def mask(p, seed, step, tensor, rows, cols):
    """seqcl's inverted-dropout factor for a [rows, cols] tensor: element
    e = r * cols + c is kept iff word e % 4 of Philox4x32-10 at counter
    (e / 4, tensor, step low, step high), key (seed low, seed high) is >= the
    threshold floor(p * 2^32); kept elements are scaled by float32(1 / (1 - p))."""
    threshold = int(p * 4294967296.0)
    scale = float(torch.tensor(1.0 / (1.0 - p), dtype=torch.float32))
    out = torch.zeros(rows * cols, dtype=torch.float64)
    block = None
    for e in range(rows * cols):
        if e % 4 == 0:
            block = philox4x32_10((e >> 2, tensor, step & M32, step >> 32), (seed & M32, seed >> 32))
        out[e] = scale if block[e % 4] >= threshold else 0.0
    return out.reshape(rows, cols)


def packed_mask(p, seed, step, tensor, lens, cols):
    """seqcl's mask of an encoder tensor, drawn over its packed [tokens, cols]
    form (pack_padded_sequence's order: lines ranked longest first, ties in
    batch order; the tokens at position s of the lines longer than s, by
    rank), returned batch-major [N, S, cols] (1 at padding, never read)."""
    lens = [int(v) for v in lens]
    N, S = len(lens), max(lens)
    order = sorted(range(N), key=lambda n: -lens[n])  # stable: ties in batch order
    rank = {n: r for r, n in enumerate(order)}
    cum = [0]
    for s in range(S):
        cum.append(cum[-1] + sum(1 for v in lens if v > s))
    flat = mask(p, seed, step, tensor, cum[S], cols)
    out = torch.ones(N, S, cols, dtype=torch.float64)
    for n in range(N):
        for s in range(lens[n]):
            out[n, s] = flat[cum[s] + rank[n]]
    return out


def decoder_mask(p, seed, step, tensor, tgt_lines, cols):
    """seqcl's mask of a decoder tensor, drawn over its packed [rows, cols]
    form: step t holds the rows 0 .. R_t - 1, R_t = 1 + the last line with a
    label at step t or later (its rows in batch order); returned [T, N, cols]
    (1 on rows not packed, whose labels are all past)."""
    N, T = len(tgt_lines), max(len(l) for l in tgt_lines) - 1
    last = [len(l) - 2 for l in tgt_lines]  # each line's last labelled step
    R = [1 + max([n for n in range(N) if last[n] >= t], default=-1) for t in range(T)]
    flat = mask(p, seed, step, tensor, sum(R), cols)
    out = torch.ones(T, N, cols, dtype=torch.float64)
    at = 0
    for t in range(T):
        out[t, :R[t]] = flat[at:at + R[t]]
        at += R[t]
    return out


def gru_direction(x, lens, w_ih, w_hh, b_ih, b_hh, reverse):
    """One GRU direction over a padded batch with pack_padded_sequence's
    semantics: row n runs over t < lens[n] (backwards from lens[n] - 1 when
    reverse) from a zero state; outputs are 0 past the end."""
    N, S, _ = x.shape
    H = w_hh.shape[1]
    h = torch.zeros(N, H, dtype=x.dtype)
    outs = [None] * S
    for t in (reversed(range(S)) if reverse else range(S)):
        gi = x[:, t] @ w_ih.T + b_ih
        gh = h @ w_hh.T + b_hh
        r = torch.sigmoid(gi[:, :H] + gh[:, :H])
        z = torch.sigmoid(gi[:, H:2 * H] + gh[:, H:2 * H])
        n = torch.tanh(gi[:, 2 * H:] + r * gh[:, 2 * H:])
        hn = (1 - z) * n + z * h
        active = (t < lens)[:, None]
        h = torch.where(active, hn, h)
        outs[t] = torch.where(active, hn, torch.zeros_like(hn))
    return torch.stack(outs, dim=1), h


def masked_forward(model, cfg, src_lines, tgt_lines, p, seed, step):
    """Mean cross-entropy of the teacher-forced batch with seqcl's dropout."""
    enc, dec = model.encoder, model.decoder
    layers, bidir = cfg["encoder"]["num_layers"], cfg["encoder"]["bidirectional"]
    N = len(src_lines)
    S = max(len(l) for l in src_lines)
    T = max(len(l) for l in tgt_lines) - 1
    lens = torch.tensor([len(l) for l in src_lines])
    src = torch.tensor([l + [0] * (S - len(l)) for l in src_lines])
    x = enc.embedding(src)
    x = x * packed_mask(p, seed, step, DROP_ENC_EMB, lens, x.shape[2])
    finals = None
    for l in range(layers):
        outs, finals = [], []
        for d in range(2 if bidir else 1):
            sfx = f"_l{l}" + ("_reverse" if d else "")
            o, h = gru_direction(x, lens, *(getattr(enc.rnn, n + sfx) for n in
                                            ("weight_ih", "weight_hh", "bias_ih", "bias_hh")),
                                 reverse=d == 1)
            outs.append(o)
            finals.append(h)
        x = torch.cat(outs, dim=-1)
        if l < layers - 1:
            x = x * packed_mask(p, seed, step, DROP_LAYER + l, lens, x.shape[2])
    keys, He = x, x.shape[2]
    valid = torch.arange(S)[None, :] < lens[:, None]
    Hd = cfg["decoder"]["hidden_size"]
    state = torch.tanh(model.bridge(torch.cat(finals, dim=-1))) if model.bridge is not None \
        else torch.zeros(N, Hd, dtype=keys.dtype)
    inputs = torch.tensor([[l[t] if t < len(l) - 1 else 0 for t in range(T)] for l in tgt_lines])
    labels = torch.tensor([[l[t + 1] if t < len(l) - 1 else -100 for t in range(T)]
                           for l in tgt_lines])
    m_emb = decoder_mask(p, seed, step, DROP_DEC_EMB, tgt_lines, cfg["embed_dim"])
    m_s = decoder_mask(p, seed, step, DROP_OUT_STATE, tgt_lines, Hd)
    m_c = decoder_mask(p, seed, step, DROP_OUT_CTX, tgt_lines, He)
    logits = []
    for t in range(T):
        context, _ = dec.attention(state, keys, valid, torch.cat(finals, dim=-1))
        state = dec.rnn(torch.cat([dec.embedding(inputs[:, t]) * m_emb[t], context], dim=-1), state)
        feats = state * m_s[t]
        if dec.output_kind == "state_context":
            feats = torch.cat([feats, context * m_c[t]], dim=-1)
        logits.append(dec.output(feats))
    logits = torch.stack(logits, dim=1)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                           ignore_index=-100, reduction="mean")

V_SRC, V_TGT, D, BOS, EOS = 7, 8, 4, 6, 7
SRC = [[1, 2, 3, 4, 5], [3, 0, 2], [5], [4, 4, 1, 2]]
TGT = [[BOS, 5, 4, 3, EOS], [BOS, 2, EOS], [BOS, 1, 5, 0, 2, EOS], [BOS, 3, EOS]]


def make_case(name, score, bidir, init, pad, H, Hd, A, layers=1, output="state", seed=0,
              dropout=None):
    cfg = export_pytorch.make_config(
        src_vocab_size=V_SRC, tgt_vocab_size=V_TGT, embed_dim=D, bos_id=BOS, eos_id=EOS,
        pad_id=pad, enc_hidden=H, enc_layers=layers, bidirectional=bidir, dec_hidden=Hd,
        init=init, score=score, attn_dim=A, output=output)
    torch.manual_seed(seed)
    model = ref.Seq2Seq(cfg)
    gen = torch.Generator().manual_seed(1000 + seed)
    with torch.no_grad():  # weights in [-1, 1] (never zero-initialised biases)
        for p in model.parameters():
            p.copy_(torch.rand(p.shape, generator=gen, dtype=torch.float32) * 2 - 1)
    out = os.path.join(OUT, name)
    ref.save_model(model, out, "f32")
    model = model.to(torch.float64)
    if pad is not None:
        model.encoder.embedding.padding_idx = pad
        model.decoder.embedding.padding_idx = pad
    model.zero_grad()
    if dropout is None:
        _, _, loss = ref.Seq2Seq.teacher_forced.__wrapped__(model, SRC, TGT)
    else:
        with torch.no_grad():  # the unrolled encoder is nn.GRU's
            _, _, plain = ref.Seq2Seq.teacher_forced.__wrapped__(model, SRC, TGT)
            same = masked_forward(model, cfg, SRC, TGT, 0.0, 0, 0)
            assert abs(plain.item() - same.item()) < 1e-12, (plain.item(), same.item())
        loss = masked_forward(model, cfg, SRC, TGT, *dropout)
    loss.backward()
    grads = {n: p.grad.to(torch.float32) if p.grad is not None else torch.zeros_like(p, dtype=torch.float32)
             for n, p in model.named_parameters()}
    grads["loss"] = loss.detach().to(torch.float32).reshape(())
    export_pytorch.write_safetensors(os.path.join(out, "grads.safetensors"), grads,
                                     {"made_by": "tests/golden_grad/make_grad_golden.py"})
    S = max(len(s) for s in SRC)
    T1 = max(len(t) for t in TGT)
    batch = {
        "src": torch.tensor([s + [0] * (S - len(s)) for s in SRC], dtype=torch.int32),
        "lens": torch.tensor([len(s) for s in SRC], dtype=torch.int32),
        "tgt": torch.tensor([t + [-1] * (T1 - len(t)) for t in TGT], dtype=torch.int32),
    }
    if dropout is not None:
        p, dseed, step = dropout
        assert dseed & M32 < 2 ** 31 and dseed >> 32 < 2 ** 31 and step < 2 ** 31
        batch["dropout_p"] = torch.tensor([p], dtype=torch.float32)
        batch["dropout_key"] = torch.tensor([dseed & M32, dseed >> 32, step], dtype=torch.int32)
    export_pytorch.write_safetensors(os.path.join(out, "batch.safetensors"), batch)
    print(f"{name}: loss {loss.item():.6f}")


OUT = sys.argv[1] if len(sys.argv) > 1 else HERE
if __name__ == "__main__":
    for i, (name, case) in enumerate(CASES.items()):
        make_case(name, *case, seed=i)
    for i, (name, (case, dropout)) in enumerate(DROPOUT_CASES.items()):
        make_case(name, *case, seed=len(CASES) + i, dropout=dropout)
    for i, (name, case) in enumerate(NONE_CASES.items()):
        make_case(name, *case, seed=100 + i)
    for i, (name, (case, dropout)) in enumerate(NONE_DROPOUT_CASES.items()):
        make_case(name, *case, seed=100 + len(NONE_CASES) + i, dropout=dropout)
    with open(os.path.join(OUT, "cases.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(list(CASES) + list(DROPOUT_CASES) + list(NONE_CASES)
                          + list(NONE_DROPOUT_CASES)) + "\n")
