"""Live PyTorch: from_torch, the names= mapping, init "final", the refusals
and verify(), with a tutorial-style model (bidirectional nn.GRU encoder with an
fc bridge, BahdanauAttention with W_a/U_a/v_a, a GRUCell decoder, output over
[s; c]). Skipped where torch is not installed."""
import os
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="python3-torch is not installed here (the live "
                            "PyTorch tests need it; the fixture tests do not)")
from torch import nn  # noqa: E402

import seqcl  # noqa: E402
from seqcl import export  # noqa: E402
from conftest import DEVICES  # noqa: E402

# the example's model (examples/python/from_torch.py), at other sizes below
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python"))
import from_torch  # noqa: E402

V, D, H, HD, A, BOS, EOS = 14, 12, 16, 24, 20, 12, 13


class Seq2Seq(from_torch.Seq2Seq):
    """The example's model at this test's sizes, with PyTorch's own decoding
    of ragged batches to compare against."""

    def __init__(self):
        super().__init__(V, D, H, HD, A)

    @torch.no_grad()
    def teacher_forced(self, src_lines, tgt_lines):
        lens = torch.tensor([len(s) for s in src_lines])
        src = torch.tensor([s + [0] * (max(lens) - len(s)) for s in src_lines])
        T = max(len(t) for t in tgt_lines) - 1
        inp = torch.tensor([t[:-1] + [BOS] * (T + 1 - len(t)) for t in tgt_lines])
        return self(src, inp, lens)

    @torch.no_grad()
    def greedy(self, line, max_steps):
        lens = torch.tensor([len(line)])
        keys, s = self.encoder(torch.tensor([line]), lens)
        mask = torch.ones(1, len(line), dtype=torch.bool)
        y, out = torch.tensor([BOS]), []
        for _ in range(max_steps):
            lg, s = self.decoder.step(y, s, keys, mask)
            y = lg.argmax(1)
            if int(y) == EOS:
                break
            out.append(int(y))
        return out


def tutorial_model(seed=0):
    torch.manual_seed(seed)
    m = Seq2Seq().eval()
    with torch.no_grad():  # spread the logits so greedy choices are clear
        m.decoder.out.weight.mul_(4.0)
        m.decoder.out.bias[EOS] += 0.5
    return m


def lines(n=40, seed=3):
    g = np.random.default_rng(seed)
    return [list(map(int, g.integers(0, BOS, int(g.integers(1, 9))))) for _ in range(n)]


NAMES = from_torch.NAMES


@pytest.mark.parametrize("device", DEVICES)
def test_tutorial_model_decodes_like_pytorch(device):
    tm = tutorial_model()
    with seqcl.Context(device) as ctx:
        m = seqcl.Model.from_torch(tm, names=NAMES, bos_id=BOS, eos_id=EOS, ctx=ctx)
        assert m.config["decoder"]["init"] == "bridge" and m.config["output"] == "state_context"
        src = lines()
        got = m.decode(src, max_steps=20).tokens
        want = [tm.greedy(s, 20) for s in src]
        assert got == want
        report = export.verify(tm.teacher_forced, m, src, max_steps=20)
        assert report["ok"] and report["logits_agree"], report
        assert report["decoded_agree"] + report["near_ties"] == len(src)


def test_found_without_names():
    """W_a/U_a/v_a is a known layout and fc a known bridge name."""
    tm = tutorial_model(1)
    cfg, tensors = export.collect(tm, bos_id=BOS, eos_id=EOS)
    ref_cfg, ref = export.collect(tm, names=NAMES, bos_id=BOS, eos_id=EOS)
    assert cfg == ref_cfg and all(torch.equal(tensors[k], ref[k]) for k in ref)


def test_init_final(tmp_path):
    """The tutorials' "decoder starts from the encoder's last state": s_0 =
    [h_fwd ; h_bwd] (H_d = H_e), exported with init="final"."""
    tm = tutorial_model(2)
    tm.decoder.gru = nn.GRUCell(D + 2 * H, 2 * H)
    tm.decoder.attention.W_a = nn.Linear(2 * H, A)
    tm.decoder.out = nn.Linear(4 * H, V)
    tm.eval()

    tm.encoder.forward = tm.encoder.states  # no bridge: the final states themselves
    with seqcl.Context("cpu") as ctx:
        m = seqcl.Model.from_torch(tm, init="final", bos_id=BOS, eos_id=EOS, ctx=ctx)
        assert m.config["decoder"]["init"] == "final"
        src = lines(30, 5)
        assert m.decode(src, max_steps=15).tokens == [tm.greedy(s, 15) for s in src]
        assert export.verify(tm.teacher_forced, m, src, max_steps=15)["ok"]
        m.save(tmp_path / "final")
        assert seqcl.Model.load(tmp_path / "final", ctx).config["decoder"]["init"] == "final"


def test_refusals():
    tm = tutorial_model()
    with pytest.raises(ValueError) as e:  # unknown layout: the message lists the accepted ones
        class Concat(nn.Module):
            def __init__(self):
                super().__init__()
                self.attn = nn.Linear(HD + 2 * H, A)
                self.score = nn.Linear(A, 1)
        export.collect(encoder=tm.encoder, decoder=tm.decoder, attention=Concat(), bos_id=BOS,
                       eos_id=EOS)
    assert "W_a/U_a/v_a" in str(e.value) and "key/query/energy" in str(e.value)
    tm.decoder.out = nn.Linear(HD + 2 * H + D, V)  # output over [s; c; emb]
    with pytest.raises(ValueError, match=r"\[s; c; emb\] is not supported"):
        export.collect(tm, bos_id=BOS, eos_id=EOS)
    tm = tutorial_model()
    with pytest.raises(ValueError, match="H_d == H_e"):
        export.collect(tm, init="final", bos_id=BOS, eos_id=EOS)
    with pytest.raises(ValueError, match="no attribute path"):
        export.collect(tm, names={"bridge": "nope"}, bos_id=BOS, eos_id=EOS)
    with pytest.raises(ValueError, match="unknown role"):
        export.collect(tm, names={"wibble": "fc"}, bos_id=BOS, eos_id=EOS)
    tm.decoder.attention.W_a, tm.decoder.attention.U_a = (nn.Linear(2 * H, A), nn.Linear(HD, A))
    with pytest.raises(ValueError, match="swapped"):
        export.collect(tm, bos_id=BOS, eos_id=EOS)


def test_cli_wrapper_help_needs_no_torch():
    import subprocess
    import sys
    tool = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "export_pytorch.py")
    code = ("import sys, runpy; sys.modules['torch'] = None; sys.modules['numpy'] = None; "
            f"sys.argv = ['export_pytorch.py', '--help']; runpy.run_path({tool!r}, run_name='__main__')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0 and "--demo" in r.stdout, r.stderr


def test_example_runs():
    """examples/python/from_torch.py, shortened: trains, exports, decodes, verifies."""
    import subprocess
    import sys
    ex = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python", "from_torch.py")
    r = subprocess.run([sys.executable, ex, "--device", "cpu", "--steps", "40"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "verify: max logit difference" in r.stdout
