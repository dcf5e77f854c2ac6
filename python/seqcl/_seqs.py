"""Ragged id sequences in, checked before any C call (ids in range, no empty
line, integer dtype), packed flat as seqcl_seqs wants them."""
import ctypes

import numpy as np

from . import _lib
from .errors import EmptySequenceError, InvalidArgumentError

_INT_KINDS = "iu"


def _as_ids(line, what, i):
    """One line as an int32 array (zero-copy when it already is one)."""
    if hasattr(line, "detach") and hasattr(line, "numpy"):  # a torch tensor
        line = line.detach().cpu().numpy()
    if isinstance(line, np.ndarray):
        if line.dtype.kind not in _INT_KINDS:
            raise InvalidArgumentError(f"{what} line {i + 1}: ids must be integers, "
                                       f"got dtype {line.dtype}")
        if line.ndim != 1:
            raise InvalidArgumentError(f"{what} line {i + 1}: expected a 1-D id array, "
                                       f"got shape {line.shape}")
        if line.dtype != np.int32:
            if line.size and (line.min() < -2**31 or line.max() >= 2**31):
                raise InvalidArgumentError(f"{what} line {i + 1}: an id does not fit in int32")
            line = line.astype(np.int32)
        return line
    if isinstance(line, (str, bytes)):
        raise InvalidArgumentError(f"{what} line {i + 1}: a string needs the model's vocabulary "
                                   f"(the model folder's src.vocab / tgt.vocab)")
    try:
        seq = list(line)
    except TypeError:
        raise InvalidArgumentError(f"{what} line {i + 1}: expected a sequence of ids, got "
                                   f"{type(line).__name__}") from None
    for j, v in enumerate(seq):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise InvalidArgumentError(f"{what} line {i + 1}, position {j + 1}: id {v!r} is not "
                                       f"an integer")
    try:
        return np.array(seq, dtype=np.int32)
    except OverflowError:
        raise InvalidArgumentError(f"{what} line {i + 1}: an id does not fit in int32") from None


class Packed:
    """seqcl_seqs over arrays kept alive with it (numpy arrays, or ctypes
    arrays on the short path); lens is a list of ints."""

    __slots__ = ("ids", "offsets", "lens", "seqs", "ref")

    def __init__(self, ids, offsets, lens, ids_addr, offsets_addr):
        self.ids, self.offsets, self.lens = ids, offsets, lens
        self.seqs = _lib.Seqs(len(lens), ids_addr, offsets_addr)
        self.ref = ctypes.byref(self.seqs)

    @property
    def count(self):
        return len(self.lens)


def _short_line(line):
    """A list or tuple of plain ints, checked in Python (fast for the short
    lines of an interactive call); None when line is anything else."""
    if type(line) not in (list, tuple):
        return None
    for v in line:
        if type(v) is not int:
            return None
    return line


def _range_error(what, i, bad, vocab_size):
    return InvalidArgumentError(f"{what} line {i + 1}: id {bad} is outside the vocabulary "
                                f"[0, {vocab_size})")


def _empty_error(what, i, n, min_len):
    need = "a token" if min_len == 1 else f"{min_len} tokens (BOS and a label)"
    return EmptySequenceError(f"{what} line {i + 1}: has {n} tokens, needs at least {need}")


def pack(lines, vocab_size, what, min_len=1):
    """Checks and packs lines (a list of id sequences, or a 2-D integer array)."""
    if isinstance(lines, np.ndarray) and lines.ndim == 2:
        lines = list(lines)
    elif hasattr(lines, "detach") and getattr(lines, "ndim", 0) == 2:
        lines = list(lines.detach().cpu().numpy())
    if isinstance(lines, (str, bytes)) or not hasattr(lines, "__len__"):
        raise InvalidArgumentError(f"{what}: expected a list of id sequences, got "
                                   f"{type(lines).__name__}")
    if len(lines) == 0:
        raise EmptySequenceError(f"{what}: no lines")
    flat, lens, arrays = [], [], None
    for i, line in enumerate(lines):
        short = _short_line(line)
        if short is None:  # arrays, tensors, anything else: the general path
            arrays = [_as_ids(l, what, k) for k, l in enumerate(lines)]
            break
        n = len(short)
        if n < min_len:
            raise _empty_error(what, i, n, min_len)
        if n:
            lo, hi = min(short), max(short)
            if lo < 0 or hi >= vocab_size:
                raise _range_error(what, i, lo if lo < 0 else hi, vocab_size)
        flat.extend(short)
        lens.append(n)
    if arrays is None:
        # ctypes arrays: cheaper than numpy for the few ids of a short call
        # (ctypes caches the array types; numpy's .ctypes is not free)
        ids = (ctypes.c_int32 * max(len(flat), 1))(*flat)
        if len(lens) == 1:
            offsets = (ctypes.c_size_t * 2)(0, lens[0])
        else:
            offsets = (ctypes.c_size_t * (len(lens) + 1))(0, *np.cumsum(lens).tolist())
        return Packed(ids, offsets, lens, ctypes.addressof(ids), ctypes.addressof(offsets))
    else:
        lens = [int(a.size) for a in arrays]
        for i, a in enumerate(arrays):
            if a.size < min_len:
                raise _empty_error(what, i, a.size, min_len)
            if a.size:
                lo, hi = int(a.min()), int(a.max())
                if lo < 0 or hi >= vocab_size:
                    raise _range_error(what, i, lo if lo < 0 else hi, vocab_size)
        ids = np.ascontiguousarray(np.concatenate(arrays) if len(arrays) > 1 else arrays[0],
                                   dtype=np.int32)
    offsets = np.zeros(len(lens) + 1, dtype=np.uintp)
    np.cumsum(lens, out=offsets[1:])
    return Packed(ids, offsets, lens, ids.ctypes.data, offsets.ctypes.data)
