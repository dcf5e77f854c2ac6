"""Shared pieces of the Python suite: the devices to run on (the host path,
and PoCL when it is there), the golden fixtures of tests/golden and a small
safetensors reader (numpy only)."""
import json
import os
import struct

import numpy as np
import pytest

import seqcl

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.environ.get("SEQCL_GOLDEN_DIR", os.path.join(HERE, "..", "golden"))


def golden_names():
    with open(os.path.join(GOLDEN, "fixtures.txt")) as f:
        return [l.strip() for l in f if l.strip()]


def pick_devices():
    """cpu always; PoCL's first device when the library has OpenCL and PoCL is installed."""
    out = ["cpu"]
    for d in seqcl.devices():
        if d["type"] != "host" and "portable computing language" in d["platform"].lower():
            out.append(d["selector"])
            break
    return out


DEVICES = pick_devices()


def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        assert info["dtype"] == "F32"
        out[name] = np.frombuffer(data[a:b], dtype="<f4").reshape(info["shape"])
    return out


def read_lines(path):
    with open(path) as f:
        return [[int(t) for t in l.split()] for l in f.read().splitlines()]


@pytest.fixture(scope="session", params=DEVICES)
def ctx(request):
    with seqcl.Context(request.param) as c:
        yield c
