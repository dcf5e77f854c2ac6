"""decode and forward through the Python API against the PyTorch fixtures of
tests/golden (made by tests/golden/make_golden.py), on the host and PoCL.
SPEC §5: logits and alignments within 1e-4 x max |torch| over valid
positions, exact zeros at invalid ones, identical decoded lines."""
import json
import os

import numpy as np
import pytest

import seqcl
from conftest import GOLDEN, golden_names, read_lines, read_safetensors

NAMES = golden_names()


def load(ctx, name):
    d = os.path.join(GOLDEN, name)
    with open(os.path.join(d, "fixture.json")) as f:
        fx = json.load(f)
    return d, fx, seqcl.Model.load(d, ctx)


def close(got, want):
    scale = float(np.max(np.abs(want))) if want.size else 0.0
    return float(np.max(np.abs(got - want))) <= 1e-4 * scale if want.size else True


def test_enough_configurations():
    assert len(NAMES) >= 6


@pytest.mark.parametrize("name", NAMES)
def test_forward(ctx, name):
    d, fx, m = load(ctx, name)
    src, tgt = read_lines(os.path.join(d, "src.txt")), read_lines(os.path.join(d, "tgt.txt"))
    exp = read_safetensors(os.path.join(d, "expected.safetensors"))
    out = m.forward(src, tgt)
    assert out.logits.shape == exp["logits"].shape
    assert out.logits.dtype == np.float32
    assert close(out.logits, exp["logits"])
    if m.score == "none":  # a fixed context: no alignments at all
        assert out.alignments is None and "alignments" not in exp
    else:
        assert close(out.alignments, exp["alignments"])
    # exact zeros where the reference has them at invalid positions
    for n, (s, t) in enumerate(zip(src, tgt)):
        if out.alignments is not None:
            assert not out.alignments[n, :, len(s):].any()
        assert not out.logits[n, len(t) - 1:].any()
    assert abs(out.loss - float(exp["loss"])) <= 1e-4 * abs(float(exp["loss"]))
    assert list(out.steps) == [len(t) - 1 for t in tgt]
    m.close()


@pytest.mark.parametrize("name", NAMES)
def test_decode(ctx, name):
    d, fx, m = load(ctx, name)
    src = read_lines(os.path.join(d, "src.txt"))
    has_al = m.score != "none"
    aligns = read_safetensors(os.path.join(d, "decode_alignments.safetensors")) if has_al else {}
    if not has_al:
        with pytest.raises(seqcl.InvalidArgumentError):
            m.decode(src)  # alignments asked for (the default) from a model without them
    for key, beam, lp in (("greedy", 1, 0.0), ("beam3", 3, 0.0), ("beam3_lp", 3, 1.0)):
        want = read_lines(os.path.join(d, key + ".txt"))
        got = m.decode(src, beam=beam, length_penalty=lp, max_steps=fx["max_steps"],
                       alignments=has_al)
        tokens, scores, al = got
        assert tokens == want, key
        for n, a in enumerate(al or []):
            ref = aligns[key][n, :a.shape[0], :a.shape[1]]
            assert a.shape[1] == len(src[n])
            assert close(a, ref), (key, n)
            assert not aligns[key][n, a.shape[0]:].any()  # nothing after the EOS step
        if beam > 1:
            assert np.all(np.isfinite(scores))
    # beam 1 with scores: the greedy lines, with finite scores
    g = m.decode(src, max_steps=fx["max_steps"], scores=True, alignments=has_al)
    assert g.tokens == read_lines(os.path.join(d, "greedy.txt"))
    assert np.all(np.isfinite(g.scores)) and np.all(g.scores <= 0)
    # one line at a time (the one-line path of decode) gives the same lines
    for n, line in enumerate(src):
        one = m.decode([line], max_steps=fx["max_steps"], alignments=has_al)
        assert one.tokens == [g.tokens[n]] and one.steps[0] == g.steps[n]
        if has_al:
            assert close(one.alignments[0], read_safetensors(os.path.join(
                d, "decode_alignments.safetensors"))["greedy"][n, :one.steps[0], :len(line)])
    # batch size only splits the work
    assert m.decode(src, max_steps=fx["max_steps"], batch_size=2, alignments=has_al).tokens \
        == g.tokens
    m.close()


def test_nbest(ctx):
    d, fx, m = load(ctx, NAMES[0])
    src = read_lines(os.path.join(d, "src.txt"))
    out = m.decode(src, beam=3, nbest=3, max_steps=fx["max_steps"])
    assert out.tokens == read_lines(os.path.join(d, "beam3.txt"))
    for line, hyps in zip(out.tokens, out.hypotheses):
        assert 1 <= len(hyps) <= 3 and hyps[0].tokens == line
        assert all(a.score >= b.score for a, b in zip(hyps, hyps[1:]))


def test_inputs_as_arrays_and_tensors(ctx):
    d, fx, m = load(ctx, NAMES[0])
    src = read_lines(os.path.join(d, "src.txt"))
    want = m.decode(src, max_steps=fx["max_steps"]).tokens
    as_np = [np.array(s, dtype=np.int64) for s in src]
    assert m.decode(as_np, max_steps=fx["max_steps"]).tokens == want
    same = [s for s in src if len(s) == len(src[0])]
    grid = np.array(same, dtype=np.int32)
    assert len(m.decode(grid, max_steps=fx["max_steps"]).tokens) == len(same)


@pytest.mark.parametrize("precision", ["bf16", "f16"])
def test_precision(ctx, precision):
    """A reduced-precision model on the host agrees with float32 within the
    rule (1e-2 of each row's largest logit); OpenCL devices refuse it."""
    d = os.path.join(GOLDEN, NAMES[0])
    src, tgt = read_lines(os.path.join(d, "src.txt")), read_lines(os.path.join(d, "tgt.txt"))
    if not ctx.selector.startswith("cpu"):
        with pytest.raises(seqcl.UnsupportedError):
            seqcl.Model.load(d, ctx, precision=precision)
        return
    try:
        half = seqcl.Model.load(d, ctx, precision=precision)
    except seqcl.UnsupportedError:
        pytest.skip("this CPU has no AVX-512F")
    full = seqcl.Model.load(d, ctx)
    a, b = half.forward(src, tgt).logits, full.forward(src, tgt).logits
    scale = np.max(np.abs(b), axis=-1, keepdims=True)
    assert np.all(np.abs(a - b) <= 1e-2 * scale)
    assert not np.array_equal(a, b)  # the weights really were rounded
    with pytest.raises(seqcl.InvalidArgumentError):
        seqcl.Model.load(d, ctx, precision="fp8")
    half.close()
    full.close()


def test_ensemble(ctx):
    """Model.decode(ensemble=...) against PyTorch's ensemble decoding
    (tests/golden/ensemble, make_ensemble_golden.py): the ids of the first
    two and of all three members, greedy and beam 3; scores within 1e-4."""
    d = os.path.join(GOLDEN, "ensemble")
    with open(os.path.join(d, "members.txt")) as f:
        members = [seqcl.Model.load(os.path.join(GOLDEN, n.strip()), ctx) for n in f if n.strip()]
    src = read_lines(os.path.join(d, "src.txt"))
    for n in (2, 3):
        first, others = members[0], members[1:n]
        got = first.decode(src, max_steps=10, ensemble=others)
        assert got.tokens == read_lines(os.path.join(d, "%d_greedy.txt" % n))
        assert got.alignments is None
        got = first.decode(src, beam=3, max_steps=10, ensemble=others)
        assert got.tokens == read_lines(os.path.join(d, "%d_beam3.txt" % n))
        with open(os.path.join(d, "%d_beam3_scores.txt" % n)) as f:
            want = np.array([float(x) for x in f])
        assert np.all(np.abs(got.scores - want) <= 1e-4 * np.maximum(1.0, np.abs(want)))
    # a member of other vocabularies is refused, naming it
    other = seqcl.Model.load(os.path.join(GOLDEN, "bi1_dot_bridge_state"), ctx)
    with pytest.raises(seqcl.InvalidArgumentError, match="model 2"):
        members[0].decode(src, ensemble=[other])
    with pytest.raises(seqcl.InvalidArgumentError, match="not a seqcl.Model"):
        members[0].decode(src, ensemble=["nope"])
