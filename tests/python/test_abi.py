"""The ctypes structs of seqcl._lib against the C compiler's layout of
include/seqcl/*.h: a field added on the C side without the Python side
would otherwise corrupt memory (a struct the library fills is too small)."""
import ctypes
import os
import shutil
import subprocess

import pytest

from seqcl import _lib

INCLUDE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "include")
PAIRS = {"seqcl_device_info": _lib.DeviceInfo, "seqcl_model_config": _lib.ModelConfig,
         "seqcl_seqs": _lib.Seqs, "seqcl_forward_result": _lib.ForwardResult,
         "seqcl_hypothesis": _lib.Hypothesis, "seqcl_decode_options": _lib.DecodeOptions,
         "seqcl_decode_result": _lib.DecodeResult, "seqcl_train_event": _lib.TrainEvent,
         "seqcl_train_files_options": _lib.TrainFilesOptions,
         "seqcl_train_files_result": _lib.TrainFilesResult, "seqcl_check_row": _lib.CheckRow,
         "seqcl_op_tensor": _lib.OpTensor, "seqcl_model_options": _lib.ModelOptions}


def test_struct_sizes(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        pytest.skip("no C compiler to measure the headers' structs with")
    body = "".join(f'  printf("{n} %zu\\n", sizeof({n}));\n' for n in PAIRS)
    src = tmp_path / "sizes.c"
    src.write_text("#include <stdio.h>\n#include <seqcl/seqcl.h>\nint main(void) {\n" + body
                   + "  return 0;\n}\n")
    exe = tmp_path / "sizes"
    subprocess.run([cc, "-std=c11", "-I", INCLUDE, str(src), "-o", str(exe)], check=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    sizes = dict(line.split() for line in out.splitlines())
    for name, struct in PAIRS.items():
        assert int(sizes[name]) == ctypes.sizeof(struct), name
