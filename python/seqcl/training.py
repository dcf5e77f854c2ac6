"""seqcl.train: the file-training loop of `seqcl train --src/--tgt`, with
progress through a Python callback that may stop the run."""
import ctypes
import json
import math
import os
import tempfile
from collections import namedtuple

import numpy as np

from . import _lib, _seqs
from .device import as_context
from .errors import CancelledError, InvalidArgumentError

TrainResult = namedtuple("TrainResult", "steps_done start_step final_loss valid_loss valid_correct "
                         "valid_count train_seconds save_dir stopped model")
TrainResult.__doc__ = ("What seqcl.train returns; model is the trained seqcl.Model (on the "
                       "training context), stopped is True when the callback stopped the run.")


def _write_tokens(path, lines, vocab_size, what, min_len):
    packed = _seqs.pack(lines, vocab_size, what, min_len)
    off = [int(v) for v in packed.offsets]
    ids = [int(v) for v in packed.ids]
    with open(path, "w") as f:
        for i in range(packed.count):
            f.write(" ".join(map(str, ids[off[i]:off[i + 1]])) + "\n")


def _path_arg(name, v):
    if v is None:
        return None
    if not isinstance(v, (str, os.PathLike)):
        raise InvalidArgumentError(f"{name} must be a path, not {type(v).__name__}")
    p = os.fspath(v)
    if "\0" in p:
        raise InvalidArgumentError(f"{name} contains a NUL character")
    return p.encode("utf-8")


def train(config_or_model, src, tgt, *, save, valid_src=None, valid_tgt=None, steps=1000,
          batch_size=64, lr=1e-3, clip=None, seed=None, dropout=None, checkpoint_every=0,
          valid_every=0, overwrite=False, callback=None, ctx=None):
    """Trains with Adam on (src, tgt) and saves the model to `save`.

    config_or_model: a config dict (SPEC §2), a config.json path, or a
    seqcl.Model (its weights are the start). src / tgt: token file paths, or
    lists of id sequences (targets: BOS, labels, EOS). callback(event) is
    called after every step with a dict (step, steps, loss, validated,
    valid_loss, valid_correct, valid_count, checkpointed); returning True
    stops the run after saving (stopped=True in the result). An exception in
    the callback stops the run too, and is raised after the model is saved."""
    from .model import Model
    ctx_obj, owned = as_context(ctx if ctx is not None or not isinstance(config_or_model, Model)
                                else config_or_model.ctx)
    for name, v in (("steps", steps), ("batch_size", batch_size), ("checkpoint_every", checkpoint_every),
                    ("valid_every", valid_every)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0 or v > 1 << 30:
            raise InvalidArgumentError(f"{name} must be a non-negative integer, not {v!r}")
    if callback is not None and not callable(callback):
        raise InvalidArgumentError("callback must be callable")
    with tempfile.TemporaryDirectory(prefix="seqcl-train-") as tmp:
        o = _lib.TrainFilesOptions()
        _lib.lib().seqcl_train_files_options_init(ctypes.byref(o))
        keep = []  # byte strings the options point at
        cfg = None
        if isinstance(config_or_model, Model):
            init_dir = os.path.join(tmp, "init")
            config_or_model.save(init_dir)
            o.init_dir = _path_arg("init", init_dir)
            cfg = config_or_model.config
        elif isinstance(config_or_model, dict):
            path = os.path.join(tmp, "config.json")
            with open(path, "w") as f:
                json.dump(config_or_model, f)
            o.config_path = _path_arg("config", path)
            cfg = config_or_model
        else:
            o.config_path = _path_arg("config", config_or_model)
        vs = (cfg or {}).get("src_vocab_size"), (cfg or {}).get("tgt_vocab_size")

        def files(name, lines, vocab, min_len):
            if lines is None or isinstance(lines, (str, os.PathLike)):
                return _path_arg(name, lines)
            if not isinstance(vocab, int):
                raise InvalidArgumentError(f"{name} given as id lists needs a config dict or a "
                                           f"Model (to check the ids against the vocabulary)")
            path = os.path.join(tmp, name + ".txt")
            _write_tokens(path, lines, vocab, name, min_len)
            return _path_arg(name, path)

        o.src_path, o.tgt_path = files("src", src, vs[0], 1), files("tgt", tgt, vs[1], 2)
        o.valid_src_path = files("valid_src", valid_src, vs[0], 1)
        o.valid_tgt_path = files("valid_tgt", valid_tgt, vs[1], 2)
        o.save_dir = _path_arg("save", save)
        o.steps, o.batch_size, o.lr = int(steps), int(batch_size), float(lr)
        if not (math.isfinite(o.lr) and o.lr > 0):
            raise InvalidArgumentError(f"lr must be a positive number, not {lr!r}")
        if clip is not None:
            o.clip = float(clip)
        if seed is not None:
            o.seed = int(seed)
        if dropout is not None:
            o.dropout = float(dropout)
        o.checkpoint_every, o.valid_every = int(checkpoint_every), int(valid_every)
        o.overwrite = 1 if overwrite else 0
        state = {"stopped": False, "error": None}

        def progress(_user, ev):
            e = ev.contents
            try:
                stop = callback({"step": e.step, "steps": e.steps, "loss": e.loss,
                                 "validated": bool(e.validated),
                                 "valid_loss": e.valid_loss if e.validated else None,
                                 "valid_correct": e.valid_correct, "valid_count": e.valid_count,
                                 "checkpointed": bool(e.checkpointed)})
            except BaseException as exc:  # KeyboardInterrupt included: stop, then raise
                state["error"] = exc
                return 1
            if stop:
                state["stopped"] = True
                return 1
            return 0

        cb = _lib.TRAIN_PROGRESS(progress) if callback is not None else None
        keep.append(cb)
        if cb is not None:
            o.progress = ctypes.cast(cb, ctypes.c_void_p)
        res = _lib.TrainFilesResult()
        try:
            with ctx_obj._lock:
                st = _lib.lib().seqcl_train_files(ctx_obj._handle(), ctypes.byref(o),
                                                  ctypes.byref(res))
            if state["error"] is not None:
                raise state["error"]
            try:
                _lib.check(st, "seqcl_train_files")
            except CancelledError:
                if not state["stopped"]:
                    raise
            save_dir = res.save_dir.decode("utf-8", "replace")
            model = Model.load(save_dir, ctx_obj)
            if owned:
                model._owns_ctx = True
                owned = False
            return TrainResult(res.steps_done, res.start_step, float(res.final_loss),
                               res.valid_loss if res.validated else None, res.valid_correct,
                               res.valid_count, res.train_seconds, save_dir, state["stopped"],
                               model)
        finally:
            if owned:
                ctx_obj.close()
