#!/usr/bin/env python3
"""Write a seqcl model directory (config.json + model.safetensors, SPEC §2)
from PyTorch modules: the command line over seqcl.export (python/seqcl/export.py),
which holds the layouts it accepts and the names= mapping for your own.

    python3 tools/export_pytorch.py --demo OUTDIR [--dtype f32|f16|bf16]
    python3 tools/export_pytorch.py --demo-none OUTDIR [--dtype ...]
    python3 tools/export_pytorch.py --ch08 STATE_DICT.pt OUTDIR [--dtype ...]

Imported as a module (as the fixture scripts do) it is seqcl.export itself.
"""
import argparse
import os
import sys

_PYTHON = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python")
if _PYTHON not in sys.path:
    sys.path.insert(0, _PYTHON)


def _parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--demo", action="store_true",
                     help="export a small random seed-000-style model")
    src.add_argument("--demo-none", action="store_true",
                     help="export a small random seed-000-§01 fixed-context model (score none)")
    src.add_argument("--ch08", metavar="STATE_DICT",
                     help="export a ch08_seq2seq.py Seq2Seq saved with torch.save(model.state_dict())")
    p.add_argument("out_dir", help="model directory to write")
    p.add_argument("--dtype", choices=["bf16", "f16", "f32"], default="f32",
                   help="tensor dtype in model.safetensors (default f32)")
    p.add_argument("--seed", type=int, default=0, help="random seed for --demo")
    return p


def main(argv=None):
    # Arguments first: --help and usage errors need neither torch nor numpy.
    args = _parser().parse_args(argv)
    from seqcl import export
    return export.run_cli(args)


if __name__ == "__main__":
    sys.exit(main())
else:
    from seqcl.export import *  # noqa: F401,F403,E402
    from seqcl.export import _linear_tensors, _tensor_bytes  # noqa: F401,E402
