"""seqcl.ops.<op>(...): one operation of the op list on your own inputs, on a
chosen device, to compare it with your own PyTorch code.

    seqcl.ops.inputs("gemm", "M=3,N=4,K=5")    # the inputs: names, sizes, drawn values
    out = seqcl.ops.gemm(shape="M=3,N=4,K=5", device="opencl:0", A=a, B=b)
    out["C"]                                   # float32 array of the output's size

Names with a dot (grad.bias, attn_scores.additive) are reached with '_' for
'.' (seqcl.ops.grad_bias) or through seqcl.ops.run("grad.bias", ...).
Inputs you leave out keep the values drawn from seed. Each input is
flattened row-major; its element count and dtype (float32, or int32 for ids
and lengths) must be the case's, checked before the call."""
import ctypes

import numpy as np

from . import _lib
from .checking import op_names
from .device import as_context
from .errors import InvalidArgumentError, ShapeError


class _Case:
    def __init__(self, name, shape, seed):
        if isinstance(shape, dict):
            shape = ",".join(f"{k}={v}" for k, v in shape.items())
        if shape is not None and not isinstance(shape, str):
            raise InvalidArgumentError(f"shape must be a \"key=value,...\" str or a dict, not {shape!r}")
        h = ctypes.c_void_p()
        _lib.check(_lib.lib().seqcl_op_case_new(name.encode(), shape.encode() if shape else None,
                                               int(seed), ctypes.byref(h)), "seqcl_op_case_new")
        self.h = h.value

    def tensors(self, output):
        L = _lib.lib()
        count = (L.seqcl_op_case_outputs if output else L.seqcl_op_case_inputs)(self.h)
        get = L.seqcl_op_case_output if output else L.seqcl_op_case_input
        out = []
        for k in range(count):
            t = _lib.OpTensor()
            _lib.check(get(self.h, k, ctypes.byref(t)), "seqcl_op_case_tensor")
            out.append(t)
        return out

    def __del__(self):
        if getattr(self, "h", None):
            _lib.lib().seqcl_op_case_free(self.h)
            self.h = None


def _view(t):
    ct = ctypes.c_int32 if t.is_int else ctypes.c_float
    if not t.count:
        return np.zeros(0, np.int32 if t.is_int else np.float32)
    return np.ctypeslib.as_array(ctypes.cast(t.data, ctypes.POINTER(ct)), (t.count,))


def _resolve(name):
    names = op_names()
    if name in names:
        return name
    dotted = {n.replace(".", "_"): n for n in names}
    if name in dotted:
        return dotted[name]
    raise InvalidArgumentError(f"unknown operation {name!r}; the operations are: " + ", ".join(names))


def inputs(op, shape=None, seed=0):
    """{name: array} of the inputs the case of (op, shape, seed) draws."""
    c = _Case(_resolve(op), shape, seed)
    return {t.name.decode(): _view(t).copy() for t in c.tensors(False)}


def outputs(op, shape=None, seed=0):
    """{name: (count, dtype)} of the case's outputs."""
    c = _Case(_resolve(op), shape, seed)
    return {t.name.decode(): (t.count, np.int32 if t.is_int else np.float32)
            for t in c.tensors(True)}


def run(op, shape=None, *, device="cpu", ctx=None, seed=0, **given):
    """Runs op at shape on device (or ctx) with the given inputs; returns
    {output name: array} (float32, or int32 for ids)."""
    name = _resolve(op)
    c = _Case(name, shape, seed)
    ins = c.tensors(False)
    known = {t.name.decode(): t for t in ins}
    for key, value in given.items():
        if key not in known:
            raise InvalidArgumentError(f"{name}: no input {key!r}; its inputs are "
                                       + ", ".join(known))
        t = known[key]
        if hasattr(value, "detach") and hasattr(value, "numpy"):
            value = value.detach().cpu().numpy()
        arr = np.asarray(value)
        want = np.int32 if t.is_int else np.float32
        if arr.dtype != want:
            raise InvalidArgumentError(f"{name}: input {key} has dtype {arr.dtype}; it must be "
                                       f"{np.dtype(want).name} (use .astype(np.{np.dtype(want).name}))")
        if arr.size != t.count:
            raise ShapeError(f"{name}: input {key} has {arr.size} elements; at shape "
                             f"{shape or 'default'} it needs {t.count}")
        _view(t)[:] = np.ascontiguousarray(arr).reshape(-1)
    outs = c.tensors(True)
    bufs = [np.zeros(max(t.count, 1), np.float64) for t in outs]
    ptrs = (ctypes.POINTER(ctypes.c_double) * max(len(outs), 1))(
        *[b.ctypes.data_as(ctypes.POINTER(ctypes.c_double)) for b in bufs])
    ctx_obj, owned = as_context(ctx if ctx is not None else device)
    try:
        with ctx_obj._lock:
            _lib.check(_lib.lib().seqcl_op_case_run(ctx_obj._handle(), c.h, ptrs),
                       "seqcl_op_case_run")
    finally:
        if owned:
            ctx_obj.close()
    return {t.name.decode(): b[:t.count].astype(np.int32 if t.is_int else np.float32)
            for t, b in zip(outs, bufs)}


def __getattr__(attr):
    if attr.startswith("__"):
        raise AttributeError(attr)
    try:
        name = _resolve(attr)
    except InvalidArgumentError:
        raise AttributeError(f"seqcl.ops has no operation {attr!r}") from None

    def op(shape=None, *, device="cpu", ctx=None, seed=0, **given):
        return run(name, shape, device=device, ctx=ctx, seed=seed, **given)

    op.__name__ = attr
    op.__doc__ = f"Runs {name} (see seqcl.ops.run); its inputs: seqcl.ops.inputs({name!r}, shape)."
    return op


def __dir__():
    return sorted(list(globals()) + [n.replace(".", "_") for n in op_names()])
