"""seqcl.Model: a model directory (SPEC §2) loaded on a Context, with
decode (greedy / beam search) and forward (teacher forcing)."""
import ctypes
import json
import math
import os
import tempfile
from collections import namedtuple

import numpy as np

from . import _lib, _seqs
from .device import Handle, as_context
from .errors import InvalidArgumentError

_SCORES = {0: "additive", 1: "general", 2: "dot", 3: "scaled_dot", 4: "none"}
_FILES = ("config.json", "model.safetensors", "src.vocab", "tgt.vocab")
MAX_BEAM = 16

Hypothesis = namedtuple("Hypothesis", "tokens score logprob finished steps")
Forwarded = namedtuple("Forwarded", "logits alignments loss steps labels")


class Decoded:
    """What Model.decode returns; unpacks as tokens, scores, alignments.

    tokens: one list of ids per line (text when the input was text);
    scores: float64 [N], the best hypothesis's Σ log p / L^A (NaN on the greedy
    path unless scores=True); alignments: one float32 [T_i, S_i] array per
    line (T_i = its decoder steps, S_i = its source length), or None;
    steps: int [N]; hypotheses: per line, the nbest Hypothesis tuples best
    first (None when nbest == 1)."""

    __slots__ = ("tokens", "scores", "alignments", "steps", "hypotheses")

    def __init__(self, tokens, scores, alignments, steps, hypotheses):
        self.tokens, self.scores, self.alignments = tokens, scores, alignments
        self.steps, self.hypotheses = steps, hypotheses

    def __iter__(self):
        return iter((self.tokens, self.scores, self.alignments))

    def __len__(self):
        return len(self.tokens)

    def __repr__(self):
        return f"<seqcl.Decoded {len(self.tokens)} lines>"


def _int_arg(name, v, lo, hi):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise InvalidArgumentError(f"{name} must be an integer, not {v!r}")
    if not lo <= v <= hi:
        raise InvalidArgumentError(f"{name} = {v} is outside [{lo}, {hi}]")
    return int(v)


def _read_vocab(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\r\n") for line in f]


class Model:
    """A loaded model. Model.load(dir, ctx) or Model.from_torch(...); the
    model borrows its context (keep the Context open while it is used;
    closing the Context closes its models)."""

    def __init__(self, _handle, ctx, owns_ctx, files, path=None):
        self._box = Handle(_handle)
        self.ctx = ctx
        self._owns_ctx = owns_ctx
        self._files = files
        self.path = path
        ctx._boxes.add(self._box)
        cfg = _lib.ModelConfig()
        _lib.check(_lib.lib().seqcl_model_get_config(_handle, ctypes.byref(cfg)),
                   "seqcl_model_get_config")
        self._cfg = cfg
        self.config = json.loads(files["config.json"].decode("utf-8"))
        self.src_vocab = self._vocab("src.vocab")
        self.tgt_vocab = self._vocab("tgt.vocab")
        self._src_index = {w: i for i, w in enumerate(self.src_vocab)} if self.src_vocab else None
        self._opts_cache = {}
        res = ctypes.POINTER(_lib.DecodeResult)()
        self._res = (res, ctypes.byref(res))
        self._L = _lib.lib()
        ids, offsets = (ctypes.c_int32 * 4096)(), (ctypes.c_size_t * 2)()
        seqs = _lib.Seqs(1, ctypes.addressof(ids), ctypes.addressof(offsets))
        self._one = (ids, offsets, ctypes.byref(seqs), res, self._res[1], seqs)

    def _vocab(self, name):
        data = self._files.get(name)
        if data is None:
            return None
        lines = data.decode("utf-8").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return [l[:-1] if l.endswith("\r") else l for l in lines]

    # ---- making and saving -------------------------------------------------

    @classmethod
    def load(cls, path, ctx=None, precision="f32"):
        """Loads PATH/config.json and PATH/model.safetensors (and src.vocab /
        tgt.vocab when present) on ctx (a Context, or a selector; None =
        SEQCL_DEVICE, else auto). precision "bf16" or "f16" rounds every
        weight to that width and has the products read 16-bit weights (the
        host path on a CPU with AVX-512F; float32 arithmetic throughout)."""
        if not isinstance(precision, str) or "\0" in precision:
            raise InvalidArgumentError(f"precision must be 'f32', 'bf16' or 'f16', not {precision!r}")
        # the library's one name table decides (and names the accepted values)
        prec = ctypes.c_int()
        _lib.check(_lib.lib().seqcl_precision_parse(precision.encode(), ctypes.byref(prec)),
                   "seqcl_precision_parse")
        if not isinstance(path, (str, os.PathLike)):
            raise InvalidArgumentError(f"model path must be a str or path, not {type(path).__name__}")
        path = os.fspath(path)
        if "\0" in path:
            raise InvalidArgumentError("model path contains a NUL character")
        ctx, owned = as_context(ctx)
        try:
            handle = ctypes.c_void_p()
            with ctx._lock:
                L = _lib.lib()
                opts = _lib.ModelOptions()
                L.seqcl_model_options_init(ctypes.byref(opts))
                opts.precision = prec.value
                _lib.check(L.seqcl_model_load_with(ctx._handle(), path.encode("utf-8"),
                                                   ctypes.byref(opts), ctypes.byref(handle)),
                           "seqcl_model_load")
            files = {}
            for name in _FILES:
                p = os.path.join(path, name)
                if os.path.exists(p):
                    with open(p, "rb") as f:
                        files[name] = f.read()
            return cls(handle.value, ctx, owned, files, path)
        except BaseException:
            if owned:
                ctx.close()
            raise

    @classmethod
    def from_torch(cls, model=None, *, encoder=None, attention=None, decoder=None, bridge=None,
                   names=None, init=None, score=None, bos_id, eos_id, pad_id=None,
                   src_vocab=None, tgt_vocab=None, ctx=None):
        """Exports PyTorch modules (see seqcl.export.collect for the layouts it
        accepts and names= for your own attribute names) and loads them."""
        from . import export
        config, tensors = export.collect(model, encoder=encoder, attention=attention,
                                         decoder=decoder, bridge=bridge, names=names, init=init,
                                         score=score, bos_id=bos_id, eos_id=eos_id, pad_id=pad_id)
        with tempfile.TemporaryDirectory(prefix="seqcl-model-") as tmp:
            export.save_model_dir(tmp, config, tensors)
            for name, vocab in (("src.vocab", src_vocab), ("tgt.vocab", tgt_vocab)):
                if vocab is not None:
                    with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
                        f.write("".join(f"{w}\n" for w in vocab))
            m = cls.load(tmp, ctx)
            m.path = None
            return m

    def save(self, path):
        """Writes config.json, model.safetensors (and the vocabularies) to PATH
        (created if missing), each through a temporary file and a rename."""
        path = os.fspath(path)
        os.makedirs(path, exist_ok=True)
        for name, data in self._files.items():
            fd, tmp = tempfile.mkstemp(prefix=name + ".tmp.", dir=path)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                umask = os.umask(0)
                os.umask(umask)
                os.chmod(tmp, 0o666 & ~umask)
                os.replace(tmp, os.path.join(path, name))
            except BaseException:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise

    def close(self):
        """Frees the model (idempotent); a later call raises."""
        box = getattr(self, "_box", None)
        if box is None:
            return
        with self.ctx._lock:
            if box.h is not None:
                _lib.lib().seqcl_model_free(box.h)
                box.h = None
            self.ctx._boxes.discard(box)
        if self._owns_ctx:
            self.ctx.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _handle(self):
        h = self._box.h
        if h is None:
            raise InvalidArgumentError("this seqcl.Model is closed")
        return h

    # ---- properties ----------------------------------------------------------

    @property
    def src_vocab_size(self):
        return self._cfg.src_vocab_size

    @property
    def tgt_vocab_size(self):
        return self._cfg.tgt_vocab_size

    @property
    def bos_id(self):
        return self._cfg.bos_id

    @property
    def eos_id(self):
        return self._cfg.eos_id

    @property
    def score(self):
        return _SCORES.get(self._cfg.score, str(self._cfg.score))

    def __repr__(self):
        c = self._cfg
        return (f"<seqcl.Model {self.score} H_e={c.encoder_width} H_d={c.decoder_hidden} "
                f"V={c.src_vocab_size}/{c.tgt_vocab_size} on {self.ctx.selector}>")

    # ---- text ----------------------------------------------------------------

    def _encode_text(self, lines, vocab, index, unk_key, what):
        if vocab is None:
            raise InvalidArgumentError(f"{what}: text lines need the model's {what}.vocab "
                                       f"(none in the model folder)")
        if index is None:
            index = {w: i for i, w in enumerate(vocab)}
        unk = self.config.get(unk_key)
        out = []
        for n, line in enumerate(lines):
            if not isinstance(line, str):
                raise InvalidArgumentError(f"{what} line {n + 1}: mixed text and ids")
            ids = []
            for w in line.split():
                i = index.get(w, unk)
                if i is None:
                    raise InvalidArgumentError(f"{what} line {n + 1}: unknown word {w!r} (no "
                                               f"{unk_key} in the config)")
                ids.append(i)
            out.append(ids)
        return out

    def _pack_src(self, src):
        text = type(src) in (list, tuple) and len(src) > 0 and isinstance(src[0], str)
        if text:
            src = self._encode_text(src, self.src_vocab, self._src_index, "src_unk_id", "src")
        return _seqs.pack(src, self._cfg.src_vocab_size, "src"), text

    # ---- decoding ------------------------------------------------------------

    def decode(self, src, beam=1, max_steps=None, length_penalty=0.0, nbest=1, batch_size=64,
               alignments=True, scores=None, ensemble=()):
        """Decodes each source line (SPEC §1 greedy, §4 beam search).

        src: a list of id sequences (lists, int arrays, tensors), a 2-D int
        array, or a list of strings split on spaces through src.vocab.
        scores=None computes scores where the beam path runs (beam > 1 or
        nbest > 1); scores=True runs it at beam 1 too (same tokens as greedy,
        SPEC §4). ensemble: other Models on this one's Context, of the same
        vocabularies, decoding together with it (seqcl_ensemble_decode: each
        step by the mean of the models' probabilities; no alignments then).
        Returns Decoded (tokens, scores, alignments)."""
        if ensemble:
            return self._decode_ensemble(src, list(ensemble), beam, max_steps, length_penalty,
                                         nbest, batch_size, scores)
        # The options struct is built once per distinct set of arguments and
        # reused: a one-line decode is a few milliseconds, and every Python
        # step on the way to the C call counts against it.
        key = (beam, max_steps, length_penalty, nbest, batch_size, bool(alignments), scores)
        cached = self._opts_cache.get(key)
        if cached is None:
            cached = self._decode_options(*key)
        opts_ref, nbest = cached
        if nbest == 1 and type(src) is list and len(src) == 1 and type(src[0]) is list:
            out = self._decode_one(src[0], opts_ref, alignments)
            if out is not None:
                return out
        packed, text = self._pack_src(src)
        L = _lib.lib()
        with self.ctx._lock:  # the result pointer is the model's, reused under the lock
            res, res_ref = self._res
            _lib.check(L.seqcl_model_decode(self._handle(), packed.ref, opts_ref, res_ref),
                       "seqcl_model_decode")
            try:
                return self._decoded(res.contents, packed, text, nbest, alignments)
            finally:
                L.seqcl_decode_result_free(res)

    def _decode_ensemble(self, src, others, beam, max_steps, length_penalty, nbest, batch_size,
                         scores):
        for m in others:
            if not isinstance(m, Model):
                raise InvalidArgumentError("ensemble: %r is not a seqcl.Model" % (m,))
            if m.ctx is not self.ctx:
                raise InvalidArgumentError("ensemble: every model must be on this model's Context")
        opts_ref, nbest = self._decode_options(beam, max_steps, length_penalty, nbest,
                                               batch_size, False, scores)
        packed, text = self._pack_src(src)
        models = [self] + others
        handles = (ctypes.c_void_p * len(models))(*[m._handle() for m in models])
        L = _lib.lib()
        res = ctypes.POINTER(_lib.DecodeResult)()
        with self.ctx._lock:
            _lib.check(L.seqcl_ensemble_decode(handles, len(models), packed.ref, opts_ref,
                                               ctypes.byref(res)), "seqcl_ensemble_decode")
            try:
                return self._decoded(res.contents, packed, text, nbest, False)
            finally:
                L.seqcl_decode_result_free(res)

    def _decode_one(self, line, opts_ref, want_al):
        """One line of plain ints, inlined end to end: the interactive call
        runs right after a decode has streamed the weights through the
        caches, so every Python step on the way costs a cold start; the id
        buffer and the seqcl_seqs are the model's, reused under the lock.
        None when the line needs the general path (a non-int, an id out of
        range, an empty line: that path raises the error)."""
        n = len(line)
        if not n or n > 4096:
            return None
        for v in line:
            if type(v) is not int:
                return None
        if min(line) < 0 or max(line) >= self._cfg.src_vocab_size:
            return None
        h = self._box.h
        if h is None:
            raise InvalidArgumentError("this seqcl.Model is closed")
        L = self._L
        with self.ctx._lock:
            ids, offsets, seqs_ref, res, res_ref, _ = self._one
            ids[:n] = line
            offsets[1] = n
            st = L.seqcl_model_decode(h, seqs_ref, opts_ref, res_ref)
            if st:
                _lib.check(st, "seqcl_model_decode")
            try:
                r = res.contents
                k = r.offsets[1]
                steps = r.steps[0]
                aligns = None
                if want_al and r.alignments:
                    S = r.S  # = n: one line; rows [0, steps) are contiguous
                    aligns = [np.frombuffer(ctypes.string_at(r.alignments, 4 * steps * S),
                                            dtype=np.float32).reshape(steps, S).copy()]
                return Decoded([r.ids[:k] if k else []], np.array([r.scores[0]]), aligns,
                               np.array([steps], dtype=np.int32), None)
            finally:
                L.seqcl_decode_result_free(res)

    def _decode_options(self, beam, max_steps, length_penalty, nbest, batch_size, alignments,
                        scores):
        """Checks decode's arguments; (byref(seqcl_decode_options), nbest), cached."""
        key = (beam, max_steps, length_penalty, nbest, batch_size, alignments, scores)
        beam = _int_arg("beam", beam, 1, MAX_BEAM)
        nbest = _int_arg("nbest", nbest, 1, beam)
        batch_size = _int_arg("batch_size", batch_size, 1, 1 << 20)
        if max_steps is not None:
            max_steps = _int_arg("max_steps", max_steps, 1, 1 << 20)
        if isinstance(length_penalty, bool) or not isinstance(length_penalty, (int, float, np.floating)) \
                or not math.isfinite(length_penalty):
            raise InvalidArgumentError(f"length_penalty must be a finite number, not {length_penalty!r}")
        if alignments and self._cfg.score == 4:
            raise InvalidArgumentError("a model with score \"none\" has no alignments: pass "
                                       "alignments=False")
        opts = _lib.DecodeOptions(max_steps or 0, beam, float(length_penalty),
                                  nbest if (beam > 1 or nbest > 1 or scores) else 0,
                                  batch_size, 1 if alignments else 0, None, None)
        if len(self._opts_cache) >= 64:
            self._opts_cache.clear()
        try:
            self._opts_cache[key] = entry = (ctypes.byref(opts), nbest)
        except TypeError:  # an unhashable argument slipped through the checks
            entry = (ctypes.byref(opts), nbest)
        return entry

    def _decoded(self, r, packed, text, nbest, want_al):
        # ctypes pointer slices and one memmove per array: np.ctypeslib.as_array
        # builds a ctypes type per call, which costs more than a short decode.
        n = r.count
        off = r.offsets[:n + 1]
        total = off[n]
        ids = r.ids[:total] if total else []
        tokens = [ids[off[i]:off[i + 1]] for i in range(n)]
        steps = np.array(r.steps[:n], dtype=np.int32)
        scores = np.array(r.scores[:n], dtype=np.float64)
        aligns = None
        if want_al and r.alignments:
            T, S = r.T, r.S
            full = np.frombuffer(ctypes.string_at(r.alignments, 4 * n * T * S),
                                 dtype=np.float32).reshape(n, T, S)
            lens = packed.lens
            aligns = [full[i, :steps[i], :lens[i]].copy() for i in range(n)]
        hyps = None
        if nbest > 1:
            counts = r.hyp_counts[:n]
            hyps = []
            for i in range(n):
                row = []
                for k in range(counts[i]):
                    h = r.hyps[i * r.nbest + k]
                    toks = h.ids[:h.len] if h.len else []
                    row.append(Hypothesis(toks, h.score, h.logprob, bool(h.finished), h.steps))
                hyps.append(row)
        if text:
            tokens = [self._detok(t) for t in tokens]
            if hyps:
                hyps = [[h._replace(tokens=self._detok(h.tokens)) for h in row] for row in hyps]
        return Decoded(tokens, scores, aligns, steps, hyps)

    def _detok(self, ids):
        v = self.tgt_vocab
        if v is None:
            raise InvalidArgumentError("text output needs the model's tgt.vocab")
        return " ".join(v[i] if i < len(v) else str(i) for i in ids)

    # ---- teacher forcing ---------------------------------------------------

    def forward(self, src, tgt, batch_size=0):
        """Teacher forcing (SPEC §4 forward): target lines hold BOS, the labels
        (and usually EOS). Returns Forwarded(logits [N,T,V], alignments
        [N,T,S] (None for score "none"), loss, steps [N], labels)."""
        batch_size = _int_arg("batch_size", batch_size, 0, 1 << 20)
        packed_src, _ = self._pack_src(src)
        if isinstance(tgt, (list, tuple)) and tgt and isinstance(tgt[0], str):
            tgt = self._encode_text(tgt, self.tgt_vocab, None, "tgt_unk_id", "tgt")
        packed_tgt = _seqs.pack(tgt, self._cfg.tgt_vocab_size, "tgt", min_len=2)
        if packed_src.count != packed_tgt.count:
            raise InvalidArgumentError(f"src has {packed_src.count} lines and tgt "
                                       f"{packed_tgt.count}; they must match")
        L = _lib.lib()
        res = ctypes.POINTER(_lib.ForwardResult)()
        with self.ctx._lock:
            _lib.check(L.seqcl_model_forward(self._handle(), packed_src.ref, packed_tgt.ref,
                                             batch_size, ctypes.byref(res)), "seqcl_model_forward")
        try:
            r = res.contents
            N, T, S, V = r.N, r.T, r.S, r.V
            logits = np.zeros((N, T, V), np.float32)
            if logits.size:
                ctypes.memmove(logits.ctypes.data, r.logits, logits.nbytes)
            al = None
            if r.alignments:
                al = np.zeros((N, T, S), np.float32)
                if al.size:
                    ctypes.memmove(al.ctypes.data, r.alignments, al.nbytes)
            steps = np.array(r.steps[:N], dtype=np.int32)
            return Forwarded(logits, al, float(r.loss), steps, int(r.labels))
        finally:
            L.seqcl_forward_result_free(res)
