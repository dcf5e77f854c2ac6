#!/usr/bin/env python3
"""Checks the PyTorch reference (tools/seq2seq_reference.py), the exporter and
the committed golden fixtures against each other and against the seed models.

    python3 tests/golden/check_reference.py [--ch08 PATH/ch08_seq2seq.py]

Needs PyTorch. Exits 0 when every check passed, 1 otherwise.
"""
import argparse
import ast
import json
import os
import struct
import sys
import tempfile

import torch
import torch.nn.functional as F
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import export_pytorch  # noqa: E402
import seq2seq_reference as ref  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import compare_pytorch  # noqa: E402

failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


def rel_err(a, b):
    return float((a - b).abs().max() / max(b.abs().max(), 1e-30))


def read_lines(path):
    with open(path) as f:
        return [[int(t) for t in line.split()] for line in f.read().splitlines()]


# ----------------------------------------------------------------------------
# Seed 000's modules, transcribed: its AdditiveAttention (without its asserts)
# is the one bench/compare_pytorch.py times.

Seed000AdditiveAttention = compare_pytorch.AdditiveAttention


class Seed000AttentiveDecoder(nn.Module):
    def __init__(self, vocab_size, embed_dim, encoder_dim, decoder_dim, attention_dim, pad_id):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=pad_id)
        self.attention = Seed000AdditiveAttention(encoder_dim, decoder_dim, attention_dim)
        self.cell = nn.GRUCell(embed_dim + encoder_dim, decoder_dim)
        self.output = nn.Linear(decoder_dim + encoder_dim, vocab_size)

    def step(self, previous_token, state, encoder_states, source_valid):
        token_vector = self.embedding(previous_token)
        context, weights = self.attention(encoder_states, state, source_valid)
        state = self.cell(torch.cat([token_vector, context], dim=-1), state)
        logits = self.output(torch.cat([state, context], dim=-1))
        return logits, state, weights

    def forward(self, target_input, initial_state, encoder_states, source_valid):
        state = initial_state
        logits_steps, attention_steps = [], []
        for t in range(target_input.shape[1]):
            logits, state, weights = self.step(target_input[:, t], state, encoder_states, source_valid)
            logits_steps.append(logits)
            attention_steps.append(weights)
        return torch.stack(logits_steps, dim=1), torch.stack(attention_steps, dim=1)


def check_seed000():
    """Seed-000-style model (bidirectional 2-layer encoder, bridge, additive
    attention with only the energy bias, output on [s ; c]) exported with
    export_modules: the seed's decoder on a ragged batch vs the reference."""
    torch.manual_seed(3)
    V, D, H, Hd, A = 12, 6, 5, 9, 7
    emb = nn.Embedding(V, D)
    enc = nn.GRU(D, H, num_layers=2, batch_first=True, bidirectional=True)
    bridge = nn.Linear(2 * H, Hd)
    dec = Seed000AttentiveDecoder(V, D, 2 * H, Hd, A, pad_id=0)
    with tempfile.TemporaryDirectory() as d:
        export_pytorch.export_modules(d, encoder_embedding=emb, encoder_rnn=enc, bridge=bridge,
                                      decoder_embedding=dec.embedding, attention=dec.attention,
                                      decoder_rnn=dec.cell, output=dec.output,
                                      bos_id=10, eos_id=11, pad_id=0)
        model = ref.load_model(d, dtype=torch.float32)
    src = [[1, 2, 3, 4, 5], [6], [7, 8, 9]]
    tgt = [[10, 1, 2, 3, 11], [10, 4, 11], [10, 5, 6, 7, 8, 9, 11]]
    logits, aligns, _ = model.teacher_forced(src, tgt)
    with torch.no_grad():
        lengths = torch.tensor([len(s) for s in src])
        padded = torch.tensor([s + [0] * (5 - len(s)) for s in src])
        packed = nn.utils.rnn.pack_padded_sequence(emb(padded), lengths, batch_first=True,
                                                   enforce_sorted=False)
        out, h_n = enc(packed)
        out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=5)
        s0 = torch.tanh(bridge(torch.cat([h_n[-2], h_n[-1]], dim=-1)))
        valid = torch.arange(5)[None] < lengths[:, None]
        tin = torch.tensor([t[:-1] + [0] * (7 - len(t)) for t in tgt])
        want_logits, want_aligns = dec(tin, s0, out, valid)
    steps = torch.tensor([len(t) - 1 for t in tgt])
    live = (torch.arange(6)[None] < steps[:, None])[:, :, None]
    check(rel_err(logits, want_logits * live) <= 1e-5,
          f"seed 000 AttentiveDecoder (ragged, bidirectional 2-layer, bridge) logits: "
          f"rel err {rel_err(logits, want_logits * live):.2e} <= 1e-5")
    check(rel_err(aligns, want_aligns * live) <= 1e-5,
          f"seed 000 alignments: rel err {rel_err(aligns, want_aligns * live):.2e} <= 1e-5")


# ----------------------------------------------------------------------------
# ch08_seq2seq.py (seed 004)

def load_ch08(path):
    """The script's definitions without its top-level calls (which train)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    tree.body = [n for n in tree.body
                 if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Call))]
    ns = {"__name__": "ch08"}
    exec(compile(tree, path, "exec"), ns)
    ns["device"] = "cpu"
    return ns


def check_ch08(path, train_steps):
    ns = load_ch08(path)
    for score, attn_cls in (("additive", "BahdanauAttention"), ("general", "LuongAttention")):
        torch.manual_seed(0)
        model = ns["Seq2Seq"](ns[attn_cls]())
        if train_steps:
            opt = torch.optim.Adam(model.parameters(), lr=1e-3)
            g = torch.Generator().manual_seed(0)
            for _ in range(train_steps):
                src, tgt = ns["make_batch"](64, g)
                opt.zero_grad()
                F.cross_entropy(model(src, tgt[:, :-1]).transpose(1, 2), tgt[:, 1:]).backward()
                opt.step()
        model.eval()
        g = torch.Generator().manual_seed(1)
        src, tgt = ns["make_batch"](16, g)
        with torch.no_grad():
            want = model(src, tgt[:, :-1])
            want_loss = F.cross_entropy(want.transpose(1, 2), tgt[:, 1:])
        with tempfile.TemporaryDirectory() as d:
            cfg = export_pytorch.export_from_ch08(model, score, d)
            mine32 = ref.load_model(d, dtype=torch.float32)
            mine64 = ref.load_model(d, dtype=torch.float64)
        logits, _, loss = mine32.teacher_forced(src.tolist(), tgt.tolist())
        err = rel_err(logits, want)
        check(cfg["attention"]["score"] == score and err <= 1e-5,
              f"ch08 {attn_cls} ({train_steps} training steps): reference float32 logits vs "
              f"ch08 Seq2Seq.forward rel err {err:.2e} <= 1e-5")
        check(abs(loss.item() - want_loss.item()) <= 1e-5 * abs(want_loss.item()),
              f"ch08 {attn_cls}: loss {loss.item():.6f} vs {want_loss.item():.6f}")
        logits64, _, _ = mine64.teacher_forced(src.tolist(), tgt.tolist())
        check(rel_err(logits64, want.double()) <= 1e-5,
              f"ch08 {attn_cls}: float64 reference vs ch08 float32 rel err "
              f"{rel_err(logits64, want.double()):.2e} <= 1e-5")
        # greedy: ch08's decode_greedy runs SEQ_LEN + 1 steps without freezing
        pred = ns["decode_greedy"](model, src).tolist()
        got, _, ties, gap = mine64.greedy(src.tolist(), max_steps=ns["SEQ_LEN"] + 1)
        want_lines = [p[:p.index(ns["EOS"])] if ns["EOS"] in p else p for p in pred]
        tie_lines = {n for n, _, _ in ties}
        same = all(a == b for n, (a, b) in enumerate(zip(got, want_lines)) if n not in tie_lines)
        exact = sum(g == t[1:-1] for g, t in zip(got, tgt.tolist()))
        check(same, f"ch08 {attn_cls}: greedy lines equal ch08 decode_greedy "
                    f"({len(tie_lines)} near-tie lines skipped; {exact}/16 correct reversals)")


# ----------------------------------------------------------------------------
# fixtures

def check_safetensors_layout(path):
    with open(path, "rb") as f:
        blob = f.read()
    (hlen,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + hlen])
    ranges = sorted(v["data_offsets"] for k, v in header.items() if k != "__metadata__")
    pos = 0
    for b, e in ranges:
        if b != pos:
            return False
        pos = e
    return hlen % 8 == 0 and pos == len(blob) - 8 - hlen


def check_fixture(name):
    d = os.path.join(HERE, name)
    info = json.load(open(os.path.join(d, "fixture.json")))
    model = ref.load_model(d, dtype=torch.float64)
    src = read_lines(os.path.join(d, "src.txt"))
    tgt = read_lines(os.path.join(d, "tgt.txt"))
    exp = export_pytorch.read_safetensors(os.path.join(d, "expected.safetensors"))
    # score "none" has no alignments: no tensor, no file; its logits come from
    # export_pytorch.FixedContextSeq2Seq (the seed's c = h_S), so they agree with
    # the reference to float32 rounding rather than bit for bit
    has_al = info.get("alignments", True)
    al_files = ("decode_alignments.safetensors",) if has_al else ()
    dec_al = (export_pytorch.read_safetensors(os.path.join(d, "decode_alignments.safetensors"))
              if has_al else None)
    raw = export_pytorch.read_safetensors(os.path.join(d, "model.safetensors"))
    max_steps = info["max_steps"]
    bos, eos = model.bos_id, model.eos_id
    N, S = len(src), max(len(s) for s in src)
    T = max(len(t) for t in tgt) - 1

    dtypes = {str(t.dtype) for t in raw.values()}
    want_dtype = {"F32": "torch.float32", "F16": "torch.float16", "BF16": "torch.bfloat16"}[
        info["weights_dtype"]]
    layout_ok = all(check_safetensors_layout(os.path.join(d, f)) for f in
                    ("model.safetensors", "expected.safetensors") + al_files)
    check(dtypes == {want_dtype} and layout_ok,
          f"{name}: weights stored as {info['weights_dtype']}; headers padded to 8, ranges tile")
    check(all(t[0] == bos and t[-1] == eos for t in tgt) and len({len(t) for t in tgt}) > 1
          and all(len(s) >= 1 for s in src),
          f"{name}: targets BOS…EOS with {len({len(t) for t in tgt})} lengths, sources ragged "
          f"{[len(s) for s in src]}")

    logits, aligns, loss = model.teacher_forced(src, tgt)
    if not has_al:
        check_fixture_none(name, d, model, src, tgt, exp, logits, loss, max_steps, info)
        return
    same = (torch.equal(logits.float(), exp["logits"]) and torch.equal(aligns.float(), exp["alignments"])
            and torch.equal(loss.float(), exp["loss"]))
    check(same and tuple(exp["logits"].shape) == (N, T, model.cfg["tgt_vocab_size"])
          and tuple(exp["alignments"].shape) == (N, T, S) and exp["loss"].dim() == 0,
          f"{name}: expected.safetensors reproduced bit for bit from the files on disk "
          f"(logits {list(exp['logits'].shape)}, alignments {list(exp['alignments'].shape)})")

    # loss = mean CE over valid labels, computed independently
    total, count = 0.0, 0
    for n, t in enumerate(tgt):
        for s in range(len(t) - 1):
            total -= torch.log_softmax(logits[n, s], -1)[t[s + 1]].item()
            count += 1
    check(abs(total / count - loss.item()) < 1e-12, f"{name}: loss {loss.item():.6f} is the mean "
          f"of {count} label cross-entropies")

    # alignment invariants (stored float32 values)
    al = exp["alignments"].double()
    valid_s = torch.arange(S)[None, :] < torch.tensor([len(s) for s in src])[:, None]
    live_t = torch.arange(T)[None, :] < torch.tensor([len(t) - 1 for t in tgt])[:, None]
    sums = al.sum(-1)
    ok = bool(((sums - 1).abs()[live_t] < 1e-6).all()) and bool((sums[~live_t] == 0).all())
    ok = ok and bool((al.masked_select(~valid_s[:, None, :].expand_as(al)) == 0).all())
    ok = ok and bool((exp["logits"][~live_t] == 0).all())
    check(ok, f"{name}: alignment rows sum to 1 at live steps, exactly 0 at invalid source "
              f"positions and past target ends; logits 0 past ends")

    # batch independence: each line alone gives the batched rows
    worst = 0.0
    for n in range(N):
        l1, a1, _ = model.teacher_forced([src[n]], [tgt[n]])
        steps = len(tgt[n]) - 1
        worst = max(worst, rel_err(l1[0], logits[n, :steps]),
                    float((a1[0, :, :len(src[n])] - aligns[n, :steps, :len(src[n])]).abs().max()))
    check(worst < 1e-12, f"{name}: lines decoded alone match the padded batch ({worst:.1e})")

    # float32 torch vs the float64 reference
    m32 = ref.load_model(d, dtype=torch.float32)
    l32, a32, _ = m32.teacher_forced(src, tgt)
    e_l, e_a = rel_err(l32.double(), logits), rel_err(a32.double(), aligns)
    check(e_l <= 1e-5 and e_a <= 1e-5, f"{name}: float32 PyTorch vs float64 reference: logits "
          f"{e_l:.1e}, alignments {e_a:.1e} (<= 1e-5)")

    # decoding reproduced; greedy == beam 1
    greedy, g_al, g_ties, _ = model.greedy(src, max_steps)
    check(greedy == read_lines(os.path.join(d, "greedy.txt"))
          and torch.equal(g_al.float(), dec_al["greedy"]),
          f"{name}: greedy.txt and its alignments reproduced (max_steps {max_steps})")
    b1_same, b1_al = True, 0.0
    for n, line in enumerate(src):
        toks, al1, _, _ = model.beam_search(line, 1, 0.0, max_steps)
        b1_same &= toks == greedy[n]
        b1_al = max(b1_al, float((al1 - g_al[n, :al1.shape[0], :len(line)]).abs().max()))
    check(b1_same and b1_al < 1e-12, f"{name}: beam 1 == greedy (tokens; alignments {b1_al:.1e})")
    steps_taken = [min(len(g) + 1, max_steps) for g in greedy]
    ok = all(bool((g_al[n, steps_taken[n]:] == 0).all()) and
             bool(((g_al[n, :steps_taken[n]].sum(-1) - 1).abs() < 1e-12).all())
             for n in range(N)) and g_al.shape[1] == max(steps_taken)
    check(ok, f"{name}: greedy alignments [N,{g_al.shape[1]},S]: rows sum to 1 up to each "
              f"line's EOS, 0 after")
    for kind, beam, lp in (("beam3", 3, 0.0), ("beam3_lp", 3, 1.0)):
        meta = info["decode"][kind]
        lines = [model.beam_search(s, beam, lp, max_steps)[0] for s in src]
        check(meta["beam"] == beam and meta["length_penalty"] == lp
              and lines == read_lines(os.path.join(d, kind + ".txt")),
              f"{name}: {kind}.txt reproduced (beam {beam}, length penalty {lp})")
    with open(os.path.join(d, "near_ties.txt")) as f:
        listed = f.read().split("\n")
    check(len(g_ties) == sum(1 for l in listed if l.startswith("greedy ")),
          f"{name}: near_ties.txt lists {len([l for l in listed if l])} near-ties")


def check_fixture_none(name, d, model, src, tgt, exp, logits, loss, max_steps, info):
    N, T = len(src), max(len(t) for t in tgt) - 1
    check(set(exp) == {"logits", "loss"} and aligns_absent(d)
          and tuple(exp["logits"].shape) == (N, T, model.cfg["tgt_vocab_size"]),
          f"{name}: score none: expected.safetensors holds logits and loss only, no "
          f"decode_alignments.safetensors")
    e_l = rel_err(logits, exp["logits"].double())
    e_loss = abs(loss.item() - exp["loss"].item()) / abs(exp["loss"].item())
    check(e_l <= 1e-6 and e_loss <= 1e-6, f"{name}: the reference reproduces the seed-style "
          f"model's logits ({e_l:.1e}) and loss ({e_loss:.1e})")
    worst, none_alone = 0.0, True
    for n in range(N):
        l1, a1, _ = model.teacher_forced([src[n]], [tgt[n]])
        worst = max(worst, rel_err(l1[0], logits[n, :len(tgt[n]) - 1]))
        none_alone &= a1 is None
    check(none_alone, f"{name}: no line alone has alignments either")
    check(worst < 1e-12, f"{name}: lines decoded alone match the padded batch ({worst:.1e})")
    m32 = ref.load_model(d, dtype=torch.float32)
    e32 = rel_err(m32.teacher_forced(src, tgt)[0].double(), logits)
    check(e32 <= 1e-5, f"{name}: float32 PyTorch vs float64 reference: logits {e32:.1e}")
    greedy, g_al, g_ties, _ = model.greedy(src, max_steps)
    check(greedy == read_lines(os.path.join(d, "greedy.txt")) and g_al is None,
          f"{name}: greedy.txt reproduced (max_steps {max_steps})")
    b1 = all(model.beam_search(line, 1, 0.0, max_steps)[0] == greedy[n] for n, line in enumerate(src))
    check(b1, f"{name}: beam 1 == greedy")
    for kind, beam, lp in (("beam3", 3, 0.0), ("beam3_lp", 3, 1.0)):
        lines = [model.beam_search(s, beam, lp, max_steps)[0] for s in src]
        check(lines == read_lines(os.path.join(d, kind + ".txt")),
              f"{name}: {kind}.txt reproduced (beam {beam}, length penalty {lp})")


def aligns_absent(d):
    return not os.path.exists(os.path.join(d, "decode_alignments.safetensors"))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ch08", help="path of ch08_seq2seq.py (seed 004) to compare with")
    p.add_argument("--train-steps", type=int, default=150,
                   help="Adam steps on the ch08 models before comparing (default 150)")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    check_seed000()
    if args.ch08:
        check_ch08(args.ch08, 0)
        check_ch08(args.ch08, args.train_steps)
    else:
        print("skip  ch08 comparison (no --ch08 PATH)")
    with open(os.path.join(HERE, "fixtures.txt")) as f:
        names = [l.strip() for l in f if l.strip()]
    for name in names:
        check_fixture(name)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
