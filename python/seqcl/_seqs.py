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
    """seqcl_seqs over arrays kept alive with it."""

    __slots__ = ("ids", "offsets", "lens", "seqs", "ref")

    def __init__(self, ids, offsets):
        self.ids, self.offsets = ids, offsets
        self.lens = np.diff(offsets)
        self.seqs = _lib.Seqs(len(offsets) - 1, ids.ctypes.data, offsets.ctypes.data)
        self.ref = ctypes.byref(self.seqs)

    @property
    def count(self):
        return len(self.offsets) - 1


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
    arrays = [_as_ids(l, what, i) for i, l in enumerate(lines)]
    offsets = np.zeros(len(arrays) + 1, dtype=np.uintp)
    np.cumsum([a.size for a in arrays], out=offsets[1:])
    ids = arrays[0] if len(arrays) == 1 else np.concatenate(arrays)
    ids = np.ascontiguousarray(ids, dtype=np.int32)
    for i, a in enumerate(arrays):
        if a.size < min_len:
            need = "a token" if min_len == 1 else f"{min_len} tokens (BOS and a label)"
            raise EmptySequenceError(f"{what} line {i + 1}: has {a.size} tokens, needs at "
                                     f"least {need}")
    if ids.size:
        lo, hi = int(ids.min()), int(ids.max())
        if lo < 0 or hi >= vocab_size:
            bad = lo if lo < 0 else hi
            line = next(i for i, a in enumerate(arrays) if a.size and (a.min() == bad or a.max() == bad))
            raise InvalidArgumentError(f"{what} line {line + 1}: id {bad} is outside the "
                                       f"vocabulary [0, {vocab_size})")
    return Packed(ids, offsets)
