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

    /usr/bin/python3 tests/golden_grad/make_grad_golden.py [OUT_DIR]
"""
import os
import sys

import torch

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

V_SRC, V_TGT, D, BOS, EOS = 7, 8, 4, 6, 7
SRC = [[1, 2, 3, 4, 5], [3, 0, 2], [5], [4, 4, 1, 2]]
TGT = [[BOS, 5, 4, 3, EOS], [BOS, 2, EOS], [BOS, 1, 5, 0, 2, EOS], [BOS, 3, EOS]]


def make_case(name, score, bidir, init, pad, H, Hd, A, layers=1, output="state", seed=0):
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
    _, _, loss = ref.Seq2Seq.teacher_forced.__wrapped__(model, SRC, TGT)
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
    export_pytorch.write_safetensors(os.path.join(out, "batch.safetensors"), batch)
    print(f"{name}: loss {loss.item():.6f}")


OUT = sys.argv[1] if len(sys.argv) > 1 else HERE
if __name__ == "__main__":
    for i, (name, case) in enumerate(CASES.items()):
        make_case(name, *case, seed=i)
    with open(os.path.join(OUT, "cases.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(CASES) + "\n")
