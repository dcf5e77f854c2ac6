"""seqcl.check: the rows of `seqcl check` as dicts."""
import ctypes

from . import _lib
from .device import Context, _list
from .errors import InvalidArgumentError

_VERDICTS = {0: "passed", 1: "failed", 2: "skipped"}


def op_names():
    """The operations of the op list, in `seqcl check`'s order."""
    L = _lib.lib()
    return [L.seqcl_op_name(i).decode() for i in range(L.seqcl_op_count())]


def check(device="all", ops=None, *, shape=None, quick=False, seed=0):
    """Runs the correctness suite: each op of ops (None = all; names or
    families such as "grad" or "attn_scores") on each device the selector
    names, against the host backend. Returns one dict per (device, op):
    device, op, verdict ("passed", "failed", "skipped"), cases, passed,
    failed, skipped, worst_err, worst_tol, worst_ratio, worst_shape,
    fail_shape, message."""
    names = op_names()
    if ops is None:
        chosen = names
    else:
        if isinstance(ops, str):
            ops = [ops]
        chosen = []
        for pat in ops:
            hits = [n for n in names if n == pat or n.split(".")[0] == pat
                    or n.startswith(pat + ".")]
            if not hits:
                raise InvalidArgumentError(f"unknown operation {pat!r}; the operations are: "
                                           + ", ".join(names))
            chosen += [h for h in hits if h not in chosen]
    if shape is not None and len(chosen) != 1:
        raise InvalidArgumentError("shape= needs exactly one operation")
    if isinstance(shape, dict):
        shape = ",".join(f"{k}={v}" for k, v in shape.items())
    L = _lib.lib()
    rows = []
    with Context("cpu") as host:
        for info in _list(device, select=True):
            with Context(_info=info) as dev:
                for name in chosen:
                    row = _lib.CheckRow()
                    _lib.check(L.seqcl_check_run(dev._handle(), host._handle(), name.encode(),
                                                 shape.encode() if shape else None,
                                                 1 if quick else 0, int(seed), ctypes.byref(row)),
                               "seqcl_check_run")
                    rows.append({"device": dev.selector, "op": row.op.decode(),
                                 "verdict": _VERDICTS.get(row.verdict, "failed"),
                                 "cases": row.cases, "passed": row.passed, "failed": row.failed,
                                 "skipped": row.skipped, "worst_err": row.worst_err,
                                 "worst_tol": row.worst_tol, "worst_ratio": row.worst_ratio,
                                 "worst_shape": row.worst_shape.decode(),
                                 "fail_shape": row.fail_shape.decode(),
                                 "message": row.message.decode("utf-8", "replace")})
    return rows
