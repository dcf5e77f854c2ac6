#!/usr/bin/env python3
"""Python overhead of seqcl.Model.decode over the C API, one line at batch 1.

The model is G2P-sized (bidirectional 1 x 128 encoder, decoder 256, additive
attention 256, output over [s; c], V = 40 both sides) with the random
weights seqcl.train's initialisation gives (one training step, no torch
needed); the source line is one of 10 ids that this model decodes for exactly
20 steps (no EOS before max_steps = 20). Both sides run greedy decoding
with alignments on the same context:

  C API:  seqcl_model_decode + seqcl_decode_result_free called through
          ctypes with the seqcl_seqs and options built once (what a C caller
          pays, plus one ctypes call);
  Python: model.decode([line], max_steps=20) - input checks, packing, the
          call, tokens / scores / alignments copied out into numpy.

Blocks of calls alternate (C, Python, C, Python, ...), timed in CPU time
(user + sys) of the whole process (the host backend's worker threads
included) and of the calling thread alone, so other load on the machine
inflates both sides alike; the medians of the blocks are compared.

    PYTHONPATH=python SEQCL_LIBRARY=build/src/libseqcl.so \\
        /usr/bin/python3 bench/python_overhead.py [--device cpu] [--rounds 10] [--calls 50]
"""
import argparse
import ctypes
import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import seqcl  # noqa: E402
from seqcl import _lib  # noqa: E402

CONFIG = {"format": "seqcl.seq2seq", "version": 1, "src_vocab_size": 40, "tgt_vocab_size": 40,
          "embed_dim": 64, "bos_id": 1, "eos_id": 2, "pad_id": 0,
          "encoder": {"hidden_size": 128, "num_layers": 1, "bidirectional": True},
          "decoder": {"hidden_size": 256, "init": "bridge"},
          "attention": {"score": "additive", "dim": 256}, "output": "state_context"}
STEPS = 20


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--calls", type=int, default=50)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp, seqcl.Context(args.device) as ctx:
        rng = np.random.default_rng(0)
        src = [list(map(int, rng.integers(3, 40, 10))) for _ in range(8)]
        tgt = [[1] + list(map(int, rng.integers(3, 40, 9))) + [2] for _ in range(8)]
        model = seqcl.train(CONFIG, src, tgt, save=os.path.join(tmp, "g2p"), steps=1,
                            batch_size=8, seed=3, ctx=ctx).model
        line = None
        for seed in range(200):
            cand = list(map(int, np.random.default_rng(seed).integers(3, 40, 10)))
            if int(model.decode([cand], max_steps=STEPS).steps[0]) == STEPS:
                line = cand
                break
        if line is None:
            sys.exit("no 10-id line decodes for 20 steps with this model")
        L = _lib.lib()
        ids = np.array(line, dtype=np.int32)
        offsets = np.array([0, len(line)], dtype=np.uintp)
        seqs = _lib.Seqs(1, ids.ctypes.data, offsets.ctypes.data)
        opts = _lib.DecodeOptions()
        L.seqcl_decode_options_init(ctypes.byref(opts))
        opts.max_steps, opts.want_alignments = STEPS, 1
        res = ctypes.POINTER(_lib.DecodeResult)()
        handle, sref, oref, rref = model._handle(), ctypes.byref(seqs), ctypes.byref(opts), ctypes.byref(res)
        decode, free = L.seqcl_model_decode, L.seqcl_decode_result_free

        def c_api(n):
            for _ in range(n):
                if decode(handle, sref, oref, rref):
                    raise RuntimeError(L.seqcl_last_message())
                free(res)

        def python(n):
            for _ in range(n):
                model.decode([line], max_steps=STEPS)

        c_api(args.calls)  # warm-up: programs built, workspace sized
        python(args.calls)
        clocks = {"process CPU": time.process_time, "calling thread CPU": time.thread_time}
        times = {(k, side): [] for k in clocks for side in ("C", "Python")}
        for _ in range(args.rounds):
            for side, fn in (("C", c_api), ("Python", python)):
                t0 = {k: c() for k, c in clocks.items()}
                fn(args.calls)
                for k, c in clocks.items():
                    times[(k, side)].append((c() - t0[k]) / args.calls)
        print(f"device {ctx.selector}, one line of {len(line)} ids, {STEPS} decoder steps, "
              f"{args.rounds} x {args.calls} calls each side, alternated")
        for k in clocks:
            c_med = statistics.median(times[(k, "C")])
            py_med = statistics.median(times[(k, "Python")])
            print(f"{k:>18}: C API {c_med * 1e6:8.1f} us/call, seqcl.Model.decode "
                  f"{py_med * 1e6:8.1f} us/call: overhead {(py_med - c_med) * 1e6:6.1f} us "
                  f"= {100 * (py_med / c_med - 1):5.2f} %")
        model.close()


if __name__ == "__main__":
    main()
