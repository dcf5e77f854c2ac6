"""Every seqcl.Error class: raised by the call that fails, with the status
name and the library's message; bad input is refused before the C call and
never crashes the interpreter."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import seqcl
from seqcl import _lib, errors
from conftest import DEVICES, GOLDEN, golden_names

MODEL = os.path.join(GOLDEN, golden_names()[0])


@pytest.fixture(scope="module")
def model():
    with seqcl.Context("cpu") as c:
        m = seqcl.Model.load(MODEL, c)
        yield m


def test_table_matches_library():
    L = _lib.lib()
    for value, name, cls, _ in errors.STATUSES:
        assert L.seqcl_status_name(value).decode() == name
        klass = getattr(seqcl, cls)
        assert issubclass(klass, seqcl.Error) and klass.status == value
        e = errors.error_for(value, "why")
        assert isinstance(e, klass) and e.status_name == name and e.message == "why"
        assert str(e) == f"{name}: why"
    assert L.seqcl_status_name(len(errors.STATUSES) + 1).decode() == "SEQCL_UNKNOWN_STATUS"


def test_invalid_argument(model):
    for bad in ([[0, 99]], [[-1]], [["a"]], [[1.5]], [np.array([1.0])], "3 4", 7, [[True]]):
        with pytest.raises(seqcl.InvalidArgumentError):
            model.decode(bad)
    for kw in ({"beam": 0}, {"beam": 17}, {"nbest": 4, "beam": 3}, {"max_steps": 0},
               {"batch_size": 0}, {"length_penalty": float("nan")}, {"beam": 2.0}):
        with pytest.raises(seqcl.InvalidArgumentError):
            model.decode([[1, 2]], **kw)
    with pytest.raises(seqcl.InvalidArgumentError) as e:
        model.decode([[1, 2], [3, model.src_vocab_size]])
    assert "line 2" in e.value.message and str(model.src_vocab_size) in e.value.message
    with pytest.raises(seqcl.InvalidArgumentError):
        model.forward([[1]], [[model.bos_id, 1], [model.bos_id, 2]])  # line counts differ
    with pytest.raises(seqcl.InvalidArgumentError):
        seqcl.ops.run("no_such_op")
    with pytest.raises(seqcl.InvalidArgumentError):
        seqcl.check("cpu", ops=["no_such_op"])


def test_empty_sequence(model):
    with pytest.raises(seqcl.EmptySequenceError):
        model.decode([[1], []])
    with pytest.raises(seqcl.EmptySequenceError):
        model.decode([])
    with pytest.raises(seqcl.EmptySequenceError) as e:
        model.forward([[1, 2]], [[model.bos_id]])
    assert "tgt line 1" in e.value.message


def test_shape():
    with pytest.raises(seqcl.ShapeError):
        seqcl.ops.gemm("M=2,N=3,K=4", A=np.zeros(5, np.float32))
    with pytest.raises(seqcl.InvalidArgumentError):
        seqcl.ops.gemm("M=2,N=3,K=4", A=np.zeros(8, np.float64))
    # the library's own shape check, behind the op's front
    with pytest.raises(seqcl.InvalidArgumentError):
        seqcl.ops.gemm("M=0,N=3,K=4")


def test_selectors():
    with pytest.raises(seqcl.BadSelectorError) as e:
        seqcl.Context("opencl:")
    assert e.value.status_name == "SEQCL_ERR_BAD_SELECTOR"
    with pytest.raises(seqcl.NoDeviceError) as e:
        seqcl.Context("opencl:~no-such-device-here")
    assert "cpu" in e.value.message  # the message lists the devices that exist
    with pytest.raises(seqcl.InvalidArgumentError):
        seqcl.Context("all")
    with pytest.raises(seqcl.InvalidArgumentError):
        seqcl.Context(3)


def test_io_and_bad_model(tmp_path):
    with seqcl.Context("cpu") as c:
        with pytest.raises(seqcl.FileIOError) as e:
            seqcl.Model.load(tmp_path / "missing", c)
        assert "missing" in e.value.message
        bad = tmp_path / "bad"
        shutil.copytree(MODEL, bad)
        cfg = json.loads((bad / "config.json").read_text())
        cfg["decoder"]["init"] = "random"
        (bad / "config.json").write_text(json.dumps(cfg))
        with pytest.raises(seqcl.BadModelError) as e:
            seqcl.Model.load(bad, c)
        assert "decoder.init" in e.value.message


def test_bad_tokens_and_stop(tmp_path):
    with seqcl.Context("cpu") as c:
        m = seqcl.Model.load(MODEL, c)
        (tmp_path / "s.txt").write_text("1 2\n3 x\n")
        (tmp_path / "t.txt").write_text(f"{m.bos_id} 1 {m.eos_id}\n{m.bos_id} 2 {m.eos_id}\n")
        with pytest.raises(seqcl.BadTokensError) as e:
            seqcl.train(m, str(tmp_path / "s.txt"), str(tmp_path / "t.txt"),
                        save=str(tmp_path / "out"), steps=2, ctx=c)
        assert "s.txt:2" in e.value.message


def test_closed_objects():
    c = seqcl.Context("cpu")
    m = seqcl.Model.load(MODEL, c)
    c.close()  # closes the model first
    with pytest.raises(seqcl.InvalidArgumentError):
        m.decode([[1]])
    with pytest.raises(seqcl.InvalidArgumentError):
        seqcl.Model.load(MODEL, c)


FAULT_SCRIPT = r"""
import sys, seqcl
try:
    with seqcl.Context(sys.argv[1]) as c:
        m = seqcl.Model.load(sys.argv[2], c)
        m.decode([[1, 2, 3]])
except seqcl.Error as e:
    print(type(e).__name__, e.status_name)
else:
    print("no error")
"""


def run_faulted(selector, env):
    full = dict(os.environ, **env)
    r = subprocess.run([sys.executable, "-c", FAULT_SCRIPT, selector, MODEL], env=full,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr  # an error, never a crash
    return r.stdout.strip()


def fault_injection_built():
    return "no error" not in run_faulted("cpu", {"SEQCL_FAULT": "alloc:1"})


@pytest.mark.skipif(len(DEVICES) < 2, reason="needs PoCL for the device-side errors")
def test_device_errors():
    if not fault_injection_built():
        pytest.skip("this libseqcl.so has no fault-injection hook (a release build)")
    pocl = DEVICES[1]
    assert run_faulted("cpu", {"SEQCL_FAULT": "alloc:1"}) == "OutOfMemoryError SEQCL_ERR_OUT_OF_MEMORY"
    assert run_faulted(pocl, {"SEQCL_FAULT": "alloc:3"}).startswith("DeviceOutOfMemoryError")
    assert run_faulted(pocl, {"SEQCL_FAULT": "build:1"}).startswith("BuildError")
    assert run_faulted(pocl, {"SEQCL_FAULT": "launch:2"}).startswith("OpenCLError")
    out = run_faulted(pocl, {"SEQCL_FAULT_GEMM": "small", "SEQCL_SELFCHECK": "1",
                             "SEQCL_CACHE_DIR": os.environ["SEQCL_CACHE_DIR"] + "-selfcheck"})
    assert out.startswith("SelfCheckError"), out


def test_non_finite(tmp_path):
    """A learning rate that blows the weights up: SEQCL_ERR_NON_FINITE."""
    with seqcl.Context("cpu") as c:
        m = seqcl.Model.load(MODEL, c)
        src = [[1, 2, 3], [4, 5]] * 8
        tgt = [[m.bos_id, 1, 2, m.eos_id], [m.bos_id, 3, m.eos_id]] * 8
        with pytest.raises(seqcl.NonFiniteError):
            seqcl.train(m, src, tgt, save=str(tmp_path / "nf"), steps=50, lr=1e30, ctx=c)


def test_cancel_from_callback(tmp_path):
    """Stopping from Python: the model is saved, the result says stopped; an
    exception in the callback stops the run and is raised."""
    with seqcl.Context("cpu") as c:
        m = seqcl.Model.load(MODEL, c)
        src = [[1, 2, 3], [4, 5]] * 4
        tgt = [[m.bos_id, 1, 2, m.eos_id], [m.bos_id, 3, m.eos_id]] * 4
        seen = []
        r = seqcl.train(m, src, tgt, save=str(tmp_path / "a"), steps=100, ctx=c,
                        callback=lambda e: seen.append(e["step"]) or e["step"] >= 3)
        assert r.stopped and r.steps_done == 3 and seen == [1, 2, 3]
        assert r.model.decode([[1, 2]]).tokens is not None

        def boom(e):
            raise KeyError("from the callback")
        with pytest.raises(KeyError):
            seqcl.train(m, src, tgt, save=str(tmp_path / "b"), steps=100, ctx=c, callback=boom)
        # the C status behind a stop is SEQCL_ERR_CANCELLED
        assert errors.error_for(16, "x").status_name == "SEQCL_ERR_CANCELLED"


def test_check_failed_and_internal_names():
    for value, cls in ((17, seqcl.CheckFailedError), (18, seqcl.InternalError),
                       (10, seqcl.UnsupportedError)):
        assert isinstance(errors.error_for(value, "m"), cls)
