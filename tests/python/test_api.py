"""devices, contexts in threads, check, ops, train, save/load and memory over
10 000 calls."""
import os
import resource
import threading

import numpy as np

import seqcl
from conftest import DEVICES, GOLDEN, golden_names, read_lines

NAME = golden_names()[0]
MODEL = os.path.join(GOLDEN, NAME)


def test_devices_fields():
    devs = seqcl.devices()
    assert devs[0]["selector"] == "cpu" and devs[0]["type"] == "host"
    keys = {"selector", "type", "index", "platform_index", "device_index", "name", "vendor",
            "platform", "driver_version", "opencl_version", "compute_units", "global_mem_bytes",
            "local_mem_bytes", "max_work_group_size", "fp64", "fp16", "subgroups", "default"}
    assert all(set(d) == keys for d in devs)
    assert sum(d["default"] for d in devs) == 1
    assert [d["selector"] for d in seqcl.devices("cpu")] == ["cpu"]


def test_two_contexts_two_threads():
    src = read_lines(os.path.join(MODEL, "src.txt"))
    want = read_lines(os.path.join(MODEL, "greedy.txt"))
    errors, results = [], {}

    def work(sel):
        try:
            with seqcl.Context(sel) as c:
                m = seqcl.Model.load(MODEL, c)
                for _ in range(20):
                    results.setdefault(sel, []).append(m.decode(src, max_steps=22).tokens)
        except Exception as e:  # reported to the main thread
            errors.append(e)

    sels = [DEVICES[-1], "cpu"] if len(DEVICES) > 1 else ["cpu", "cpu"]
    threads = [threading.Thread(target=work, args=(s,)) for s in sels]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert all(r == want for rs in results.values() for r in rs)


def test_check_rows():
    rows = seqcl.check(DEVICES[-1], ops=["gemm", "grad.bias", "attn_scores"], quick=True)
    assert [r["op"] for r in rows] == ["gemm", "grad.bias", "attn_scores.additive",
                                       "attn_scores.general", "attn_scores.dot",
                                       "attn_scores.scaled_dot"]
    assert all(r["verdict"] == "passed" and r["cases"] >= 1 for r in rows), rows
    one = seqcl.check("cpu", "gemm", shape={"M": 3, "N": 5, "K": 7})
    assert one[0]["cases"] == 1 and one[0]["worst_shape"] == "M=3,N=5,K=7"


def test_ops_against_numpy():
    """One op on the user's inputs: gemm and the masked softmax against numpy."""
    rng = np.random.default_rng(1)
    ins = seqcl.ops.inputs("gemm", "M=3,N=4,K=5")
    A = rng.uniform(-1, 1, 15).astype(np.float32)
    B = rng.uniform(-1, 1, 20).astype(np.float32)
    for dev in DEVICES:
        out = seqcl.ops.gemm("M=3,N=4,K=5", device=dev, A=A, B=B, C0=np.zeros_like(ins["C0"]))
        want = A.reshape(3, 5).astype(np.float64) @ B.reshape(5, 4)
        assert np.allclose(out["C"].reshape(3, 4), want, atol=1e-5), dev
    ins = seqcl.ops.inputs("masked_softmax", "N=2,S=5")
    x = rng.uniform(-3, 3, 10).astype(np.float32)
    lens = np.array([5, 2], np.int32)
    got = seqcl.ops.masked_softmax("N=2,S=5", x=x, lens=lens)
    (name,) = got
    y = got[name].reshape(2, 5)
    e = np.exp(x.reshape(2, 5) - x.reshape(2, 5).max(1, keepdims=True))
    e[1, 2:] = 0
    assert np.allclose(y, e / e.sum(1, keepdims=True), atol=1e-6)
    assert not y[1, 2:].any()
    assert "grad_bias" in dir(seqcl.ops)


def test_train_from_config_and_save(tmp_path):
    """seqcl.train on id lists from a config dict, then save / load."""
    cfg = {"format": "seqcl.seq2seq", "version": 1, "src_vocab_size": 12, "tgt_vocab_size": 12,
           "embed_dim": 8, "bos_id": 10, "eos_id": 11, "pad_id": None,
           "encoder": {"hidden_size": 8, "num_layers": 1, "bidirectional": True},
           "decoder": {"hidden_size": 16, "init": "final"},
           "attention": {"score": "additive", "dim": 8}, "output": "state_context"}
    rng = np.random.default_rng(0)
    src = [list(rng.integers(0, 10, 4)) for _ in range(64)]
    tgt = [[10] + s[::-1] + [11] for s in src]
    events = []
    r = seqcl.train(cfg, src, tgt, save=tmp_path / "m", steps=30, batch_size=16, seed=1,
                    ctx="cpu", callback=events.append)
    assert r.steps_done == 30 and len(events) == 30 and not r.stopped
    assert events[-1]["loss"] < events[0]["loss"]
    r.model.save(tmp_path / "copy")
    with seqcl.Context("cpu") as c:
        again = seqcl.Model.load(tmp_path / "copy", c)
        assert again.config["decoder"]["init"] == "final"
        assert again.decode(src[:4]).tokens == r.model.decode(src[:4]).tokens
    r.model.close()


def rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def test_ten_thousand_calls_leak_nothing():
    """10 000 decode / forward / error calls; RSS after a warm-up stays put."""
    with seqcl.Context("cpu") as c:
        m = seqcl.Model.load(MODEL, c)
        src = read_lines(os.path.join(MODEL, "src.txt"))[:2]
        tgt = read_lines(os.path.join(MODEL, "tgt.txt"))[:2]

        def burst(n):
            for i in range(n):
                k = i % 4
                if k == 0:
                    m.decode(src, max_steps=8)
                elif k == 1:
                    m.decode(src, beam=2, nbest=2, max_steps=8)
                elif k == 2:
                    m.forward(src, tgt)
                else:
                    try:
                        m.decode([[0, 999]])
                    except seqcl.InvalidArgumentError:
                        pass
        burst(1000)
        before = rss_kb()
        burst(9000)
        after = rss_kb()
    # 9000 calls; a leak of even 100 bytes a call would show as ~900 kB
    assert after - before < 512, (before, after)
