"""seqcl.export: PyTorch modules -> a seqcl model directory (config.json +
model.safetensors, SPEC §2), and verify() to check the result against the
PyTorch model.

Accepted layouts (collect() finds them, names= maps your own attribute names
onto the roles; see LAYOUTS and the README's "From Python"):

* encoder: an ``nn.Embedding`` and an ``nn.GRU`` (any number of layers, uni-
  or bidirectional; ``batch_first`` does not matter for the weights);
* bridge (optional, init "bridge"): an ``nn.Linear(H_e, H_d)``; seqcl applies
  tanh to it. init "final" (no bridge): s_0 = the encoder's final state
  [h_fwd ; h_bwd] itself (H_d = H_e); init "zeros": s_0 = 0;
* decoder: an ``nn.Embedding``, an ``nn.GRUCell`` or a single-layer
  unidirectional ``nn.GRU`` reading ``[embedding ; context]``, and an
  ``nn.Linear`` output over ``s_t`` ("state") or ``[s_t ; c_t]``
  ("state_context");
* attention: Bahdanau with ``key``/``query``/``energy`` Linears (seed 000),
  ch08's ``w1``/``w2``/``v`` (w1 on the decoder state = query, w2 on the
  encoder outputs = key, v = energy), the paper's ``W_a``/``U_a``/``v_a``
  (W_a on the decoder state, U_a on the encoder outputs) or the PyTorch
  tutorial's ``Wa``/``Ua``/``Va``; Luong "general" with one ``w``, ``query``
  or ``W_a`` Linear; ``None`` for ``dot`` / ``scaled_dot`` and for ``none``
  (no attention: seed 000 §01's fixed context c = h_S, the encoder's final
  state, read at every step; ``FixedContextSeq2Seq`` below is that model).

The safetensors file is written here directly (8-byte little-endian header
length, JSON header padded with spaces to a multiple of 8, raw little-endian
data), so the ``safetensors`` package is not needed. The command-line
wrapper is tools/export_pytorch.py.
"""
import json
import os
import struct
import tempfile

import numpy as np
import torch
from torch import nn

# ----------------------------------------------------------------------------
# safetensors reading and writing

_DTYPES = {
    "F32": (torch.float32, 4),
    "F16": (torch.float16, 2),
    "BF16": (torch.bfloat16, 2),
    "I32": (torch.int32, 4),
    "I64": (torch.int64, 8),
}
_DTYPE_NAMES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
                torch.int32: "I32", torch.int64: "I64"}
# Same-width integer views used to get at the raw bytes of each dtype.
_RAW_VIEW = {torch.float32: torch.int32, torch.float16: torch.int16,
             torch.bfloat16: torch.int16, torch.int32: torch.int32, torch.int64: torch.int64}
_NUMPY_LE = {torch.int16: "<i2", torch.int32: "<i4", torch.int64: "<i8"}

DTYPE_OPTIONS = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def _tensor_bytes(t):
    """Raw little-endian bytes of a tensor (any byte order of the host)."""
    t = t.detach().cpu().contiguous()
    raw = t.view(_RAW_VIEW[t.dtype]) if t.dim() > 0 else t.reshape(1).view(_RAW_VIEW[t.dtype])
    return raw.numpy().astype(_NUMPY_LE[raw.dtype], copy=False).tobytes()


def safetensors_bytes(tensors, metadata=None):
    """Serialises an ordered {name: tensor} map; tensors are stored in the
    order given, back to back, so their byte ranges tile the data section."""
    header = {}
    chunks = []
    offset = 0
    for name, t in tensors.items():
        if t.dtype not in _DTYPE_NAMES:
            raise ValueError(f"tensor {name}: dtype {t.dtype} cannot be stored")
        data = _tensor_bytes(t)
        header[name] = {"dtype": _DTYPE_NAMES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


def _write_atomic(path, data):
    """Writes to a temporary file in the same folder, then renames it."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".tmp.", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the usual mode
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_safetensors(path, tensors, metadata=None):
    _write_atomic(path, safetensors_bytes(tensors, metadata))


def read_safetensors(path):
    """Returns an ordered {name: tensor} map in the file's dtypes."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise ValueError(f"{path}: shorter than the 8-byte header length")
    (hlen,) = struct.unpack("<Q", blob[:8])
    if hlen > 100_000_000 or 8 + hlen > len(blob):
        raise ValueError(f"{path}: header length {hlen} is out of range")
    header = json.loads(blob[8:8 + hlen].decode("utf-8"))
    data = blob[8 + hlen:]
    out = {}
    entries = sorted(((k, v) for k, v in header.items() if k != "__metadata__"),
                     key=lambda kv: kv[1]["data_offsets"][0])
    for name, info in entries:
        dtype, width = _DTYPES[info["dtype"]]
        begin, end = info["data_offsets"]
        shape = info["shape"]
        count = 1
        for d in shape:
            count *= d
        if end - begin != count * width or end > len(data):
            raise ValueError(f"{path}: tensor {name}: bad byte range [{begin}, {end})")
        if count:
            le = np.frombuffer(data[begin:end], dtype=_NUMPY_LE[_RAW_VIEW[dtype]])
            native = le.astype(le.dtype.newbyteorder("="))
            t = torch.from_numpy(native).view(dtype).reshape(shape)
        else:
            t = torch.zeros(shape, dtype=dtype)
        out[name] = t
    return out


# ----------------------------------------------------------------------------
# config.json

def make_config(*, src_vocab_size, tgt_vocab_size, embed_dim, bos_id, eos_id, pad_id,
                enc_hidden, enc_layers, bidirectional, dec_hidden, init, score, attn_dim,
                output):
    """The config.json dictionary of SPEC §2, keys in the SPEC's order."""
    attention = {"score": score}
    if score == "additive":
        attention["dim"] = int(attn_dim)
    return {
        "format": "seqcl.seq2seq", "version": 1,
        "src_vocab_size": int(src_vocab_size), "tgt_vocab_size": int(tgt_vocab_size),
        "embed_dim": int(embed_dim),
        "bos_id": int(bos_id), "eos_id": int(eos_id),
        "pad_id": None if pad_id is None else int(pad_id),
        "encoder": {"hidden_size": int(enc_hidden), "num_layers": int(enc_layers),
                    "bidirectional": bool(bidirectional)},
        "decoder": {"hidden_size": int(dec_hidden), "init": init},
        "attention": attention,
        "output": output,
    }


def save_model_dir(out_dir, config, tensors, dtype="f32"):
    """Writes config.json and model.safetensors; tensors ({SPEC name: tensor})
    are converted to dtype ("f32", "f16" or "bf16")."""
    if dtype not in DTYPE_OPTIONS:
        raise ValueError(f"dtype must be one of {sorted(DTYPE_OPTIONS)}, not {dtype!r}")
    os.makedirs(out_dir, exist_ok=True)
    target = DTYPE_OPTIONS[dtype]
    converted = {name: t.detach().to(torch.float32).to(target) for name, t in tensors.items()}
    write_safetensors(os.path.join(out_dir, "model.safetensors"), converted)
    _write_atomic(os.path.join(out_dir, "config.json"),
                  (json.dumps(config, indent=2) + "\n").encode("utf-8"))


def load_model_dir(model_dir):
    """Returns (config dict, {name: float32 tensor})."""
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    tensors = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    return config, {k: v.to(torch.float32) for k, v in tensors.items()}


# ----------------------------------------------------------------------------
# PyTorch modules -> SPEC tensor names

def _linear_tensors(prefix, lin, want_bias=True):
    out = {prefix + ".weight": lin.weight}
    if lin.bias is not None:
        out[prefix + ".bias"] = lin.bias
    elif want_bias:
        out[prefix + ".bias"] = torch.zeros(lin.out_features)
    return out


def _gru_bias(gru, name, rows):
    b = getattr(gru, name, None)
    return b if b is not None else torch.zeros(rows)


# Attention layouts: (description, {role: child name}). Additive needs key,
# query and energy; Luong general needs query only. names= adds the user's own.
LAYOUTS = [
    ("key/query/energy (seqcl's own names, seed 000)", {"key": "key", "query": "query", "energy": "energy"}),
    ("w1/w2/v (ch08_seq2seq.py: w1 on the decoder state, w2 on the encoder outputs)",
     {"key": "w2", "query": "w1", "energy": "v"}),
    ("W_a/U_a/v_a (Bahdanau et al.: W_a on the decoder state, U_a on the encoder outputs)",
     {"key": "U_a", "query": "W_a", "energy": "v_a"}),
    ("Wa/Ua/Va (the PyTorch seq2seq tutorial)", {"key": "Ua", "query": "Wa", "energy": "Va"}),
    ("w alone (Luong general, ch08's LuongAttention)", {"query": "w"}),
    ("query alone (Luong general)", {"query": "query"}),
    ("W_a alone (Luong general)", {"query": "W_a"}),
]
ROLES = ("encoder.embedding", "encoder.rnn", "bridge", "decoder.embedding", "decoder.rnn",
         "attention.key", "attention.query", "attention.energy", "decoder.output")
_SHORT = {"key": "attention.key", "query": "attention.query", "energy": "attention.energy",
          "output": "decoder.output", "embedding": None, "rnn": None}


def _layouts_text():
    return "; ".join(d for d, _ in LAYOUTS)


def _get_path(obj, path, role):
    cur = obj
    for part in path.split("."):
        if not hasattr(cur, part):
            raise ValueError(f"names[{role!r}] = {path!r}: {type(obj).__name__} has no "
                             f"attribute path {path!r} (missing {part!r})")
        cur = getattr(cur, part)
    return cur


def _attention_tensors(attention, score, names=None):
    """Maps an attention module to (score, {name: tensor}, attention dim)."""
    names = names or {}
    if attention is None:
        if score not in ("dot", "scaled_dot", "none"):
            raise ValueError("an attention module is needed unless score is dot, scaled_dot or none")
        return score, {}, None
    children = {n for n, _ in attention.named_children()}
    mapped = {r.split(".")[1]: names[r] for r in ("attention.key", "attention.query",
                                                 "attention.energy") if r in names}
    found = None
    if mapped:
        found = {role: _get_path(attention, path, "attention." + role) for role, path in mapped.items()}
    else:
        for _, layout in LAYOUTS:
            if set(layout.values()) <= children:
                found = {role: getattr(attention, child) for role, child in layout.items()}
                break
    if found is None:
        raise ValueError(f"unrecognised attention module {type(attention).__name__} with children "
                         f"{sorted(children)}; accepted layouts: {_layouts_text()}. Map your own "
                         f"names with names={{'attention.key': ..., 'attention.query': ..., "
                         f"'attention.energy': ...}} (additive) or {{'attention.query': ...}} "
                         f"(Luong general)")
    for role, lin in found.items():
        if not isinstance(lin, nn.Linear):
            raise ValueError(f"attention {role} must be an nn.Linear, not {type(lin).__name__}")
    if set(found) == {"query"}:
        if score not in (None, "general"):
            raise ValueError(f"attention with one Linear is Luong general, not {score}")
        return "general", _linear_tensors("decoder.attention.query", found["query"],
                                          want_bias=False), None
    if set(found) != {"key", "query", "energy"}:
        raise ValueError(f"additive attention needs key, query and energy Linears; got "
                         f"{sorted(found)}")
    key, query, energy = found["key"], found["query"], found["energy"]
    if score not in (None, "additive"):
        raise ValueError(f"key/query/energy attention is additive, not {score}")
    if energy.out_features != 1 or energy.in_features != key.out_features \
            or query.out_features != key.out_features:
        raise ValueError(f"additive attention: key [{key.out_features}, {key.in_features}], query "
                         f"[{query.out_features}, {query.in_features}] and energy [{energy.out_features}, "
                         f"{energy.in_features}] do not fit v . tanh(W_k h + W_q s) (energy must be "
                         f"[1, A], key and query [A, *])")
    t = {}
    t.update(_linear_tensors("decoder.attention.key", key, want_bias=False))
    t.update(_linear_tensors("decoder.attention.query", query, want_bias=False))
    t.update(_linear_tensors("decoder.attention.energy", energy, want_bias=False))
    return "additive", t, key.out_features


def collect_tensors(*, encoder_embedding, encoder_rnn, decoder_embedding, decoder_rnn,
                    attention, output, bridge=None, score=None, bos_id, eos_id, pad_id=None,
                    init=None, attention_names=None):
    """Returns (config, {SPEC tensor name: tensor}) for the given modules.
    init: "zeros", "bridge" (needs bridge) or "final"; None = "bridge" when a
    bridge is given, else "zeros"."""
    if init is None:
        init = "bridge" if bridge is not None else "zeros"
    if init not in ("zeros", "bridge", "final"):
        raise ValueError(f"init must be 'zeros', 'bridge' or 'final', not {init!r}")
    if (init == "bridge") != (bridge is not None):
        raise ValueError("init 'bridge' needs a bridge Linear" if init == "bridge" else
                         f"init {init!r} takes no bridge (a bridge Linear was given)")
    enc = encoder_rnn
    if not isinstance(enc, nn.GRU):
        raise TypeError("encoder_rnn must be an nn.GRU")
    src_vocab, embed_dim = encoder_embedding.weight.shape
    tgt_vocab, dec_embed_dim = decoder_embedding.weight.shape
    if dec_embed_dim != embed_dim or enc.input_size != embed_dim:
        raise ValueError("encoder and decoder embeddings and the encoder GRU input must share D")
    H = enc.hidden_size
    dirs = 2 if enc.bidirectional else 1
    enc_width = dirs * H
    tensors = {"encoder.embedding.weight": encoder_embedding.weight}
    for layer in range(enc.num_layers):
        for sfx in ([""] if dirs == 1 else ["", "_reverse"]):
            for kind in ("weight_ih", "weight_hh"):
                tensors[f"encoder.rnn.{kind}_l{layer}{sfx}"] = getattr(enc, f"{kind}_l{layer}{sfx}")
            for kind in ("bias_ih", "bias_hh"):
                tensors[f"encoder.rnn.{kind}_l{layer}{sfx}"] = _gru_bias(
                    enc, f"{kind}_l{layer}{sfx}", 3 * H)

    if isinstance(decoder_rnn, nn.GRUCell):
        dec = {k: getattr(decoder_rnn, k, None) for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")}
    elif isinstance(decoder_rnn, nn.GRU):
        if decoder_rnn.num_layers != 1 or decoder_rnn.bidirectional:
            raise ValueError("a decoder nn.GRU must have one layer and one direction")
        dec = {k: getattr(decoder_rnn, k + "_l0", None) for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")}
    else:
        raise TypeError("decoder_rnn must be an nn.GRUCell or a one-layer nn.GRU")
    dec_hidden = decoder_rnn.hidden_size
    if decoder_rnn.input_size != embed_dim + enc_width:
        raise ValueError(f"decoder GRU input is {decoder_rnn.input_size}, expected D + H_e = "
                         f"{embed_dim} + {enc_width}")

    if bridge is not None:
        if (bridge.in_features, bridge.out_features) != (enc_width, dec_hidden):
            raise ValueError(f"bridge must be Linear({enc_width}, {dec_hidden})")
        tensors.update(_linear_tensors("bridge", bridge))
    tensors["decoder.embedding.weight"] = decoder_embedding.weight

    if init == "final" and enc_width != dec_hidden:
        raise ValueError(f"init 'final' (s_0 = the encoder's final state) needs H_d == H_e "
                         f"({dec_hidden} != {enc_width})")
    score, att, attn_dim = _attention_tensors(attention, score, attention_names)
    if score == "additive" and (att["decoder.attention.key.weight"].shape[1] != enc_width or
                                att["decoder.attention.query.weight"].shape[1] != dec_hidden):
        kw, qw = att["decoder.attention.key.weight"], att["decoder.attention.query.weight"]
        raise ValueError(f"additive attention: the key Linear reads {kw.shape[1]} features and the "
                         f"query Linear {qw.shape[1]}; the key reads the encoder outputs (H_e = "
                         f"{enc_width}) and the query the decoder state (H_d = {dec_hidden})"
                         + (" - are key and query swapped? map them with names=" if
                            kw.shape[1] == dec_hidden and qw.shape[1] == enc_width else ""))
    if score == "general" and att["decoder.attention.query.weight"].shape != (enc_width, dec_hidden):
        raise ValueError(f"Luong general attention must be Linear({dec_hidden}, {enc_width}) "
                         f"(decoder state -> encoder width)")
    if score in ("dot", "scaled_dot") and enc_width != dec_hidden:
        raise ValueError(f"{score} attention needs H_e == H_d ({enc_width} != {dec_hidden})")
    tensors.update(att)

    tensors["decoder.rnn.weight_ih"] = dec["weight_ih"]
    tensors["decoder.rnn.weight_hh"] = dec["weight_hh"]
    tensors["decoder.rnn.bias_ih"] = dec["bias_ih"] if dec["bias_ih"] is not None else torch.zeros(3 * dec_hidden)
    tensors["decoder.rnn.bias_hh"] = dec["bias_hh"] if dec["bias_hh"] is not None else torch.zeros(3 * dec_hidden)

    if output.in_features == dec_hidden:
        out_kind = "state"
    elif output.in_features == dec_hidden + enc_width:
        out_kind = "state_context"
    elif output.in_features == dec_hidden + enc_width + embed_dim:
        raise ValueError(f"output Linear reads {output.in_features} = H_d + H_e + D features: an "
                         f"output over [s; c; emb] is not supported (SPEC §1: [s] or [s; c])")
    else:
        raise ValueError(f"output Linear reads {output.in_features} features; expected H_d "
                         f"({dec_hidden}) or H_d + H_e ({dec_hidden + enc_width})")
    if output.out_features != tgt_vocab:
        raise ValueError("output Linear must produce V_tgt logits")
    tensors.update(_linear_tensors("decoder.output", output))

    config = make_config(src_vocab_size=src_vocab, tgt_vocab_size=tgt_vocab, embed_dim=embed_dim,
                         bos_id=bos_id, eos_id=eos_id, pad_id=pad_id, enc_hidden=H,
                         enc_layers=enc.num_layers, bidirectional=enc.bidirectional,
                         dec_hidden=dec_hidden, init=init,
                         score=score, attn_dim=attn_dim, output=out_kind)
    return config, {k: v.detach().cpu() for k, v in tensors.items()}


def export_modules(out_dir, dtype="f32", **modules):
    """Exports modules (see collect_tensors) to the model directory out_dir."""
    config, tensors = collect_tensors(**modules)
    save_model_dir(out_dir, config, tensors, dtype)
    return config


# ----------------------------------------------------------------------------
# users' own modules: find the roles, or take them from names=

def _normalise_names(names):
    out = {}
    for k, v in (names or {}).items():
        role = _SHORT.get(k, k) if k in _SHORT else k
        if role is None or role not in ROLES + ("encoder", "decoder", "attention"):
            raise ValueError(f"names: unknown role {k!r}; the roles are "
                             f"{', '.join(ROLES + ('encoder', 'decoder', 'attention'))} "
                             f"(key, query, energy and output are short for attention.* and "
                             f"decoder.output)")
        if not isinstance(v, str) or not v:
            raise ValueError(f"names[{k!r}] must be an attribute name or dotted path")
        out[role] = v
    return out


def _children(module, kinds, skip=()):
    """Submodules of the given types in definition order, not inside skip."""
    skip_ids = {id(m) for s in skip if s is not None for m in s.modules()}
    return [(n, m) for n, m in module.named_modules()
            if isinstance(m, kinds) and id(m) not in skip_ids and m is not module]


_BRIDGE_NAMES = ("bridge", "fc", "fc_hidden", "hidden_fc", "bridge_fc", "init_fc")
_OUTPUT_NAMES = ("output", "out", "fc_out", "fc", "head", "generator", "proj", "out_proj")


def collect(model=None, *, encoder=None, attention=None, decoder=None, bridge=None, names=None,
            init=None, score=None, bos_id, eos_id, pad_id=None):
    """(config, {SPEC tensor name: tensor}) from a user's modules.

    Give the whole model (with .encoder and .decoder) or encoder= and
    decoder= (attention= when it is not the decoder's .attention / .attn).
    Each SPEC role is found by type (the first nn.Embedding and nn.GRU of the
    encoder; the decoder's nn.Embedding, nn.GRUCell/nn.GRU and the nn.Linear
    producing V_tgt logits; a bridge Linear called bridge or fc) or taken from
    names={role: attribute path}, e.g.
        names={"attention.key": "U_a", "attention.query": "W_a",
               "attention.energy": "v_a", "bridge": "fc", "decoder.output": "out"}
    Paths are relative to the role's module (the encoder for encoder.* and
    bridge, the attention module for attention.*, the decoder), else to
    model. init: "zeros",
    "bridge" or "final" (s_0 = the encoder's final state); None = "bridge"
    when a bridge is found, else "zeros". What the exporter cannot express
    is refused with a message naming it."""
    names = _normalise_names(names)

    def at(owner, role):
        # the role's own module first (encoder, decoder), then the whole model
        for root in (owner, model):
            if root is None:
                continue
            try:
                return _get_path(root, names[role], role)
            except ValueError:
                last = root
        return _get_path(last, names[role], role)

    if model is not None:
        encoder = encoder if encoder is not None else (
            at(model, "encoder") if "encoder" in names else getattr(model, "encoder", None))
        decoder = decoder if decoder is not None else (
            at(model, "decoder") if "decoder" in names else getattr(model, "decoder", None))
    if encoder is None or decoder is None:
        raise ValueError("collect needs the encoder and the decoder: pass model= (with .encoder "
                         "and .decoder, or names={'encoder': ..., 'decoder': ...}) or encoder= "
                         "and decoder=")
    if attention is None:
        if "attention" in names:
            attention = at(decoder, "attention")
        else:
            for holder in (decoder, model):
                for attr in ("attention", "attn"):
                    if holder is not None and isinstance(getattr(holder, attr, None), nn.Module):
                        attention = getattr(holder, attr)
                        break
                if attention is not None:
                    break

    def find(role, owner, kinds, what, skip=()):
        if role in names:
            m = at(owner, role)
            if not isinstance(m, kinds):
                raise ValueError(f"names[{role!r}] = {names[role]!r} is a {type(m).__name__}, "
                                 f"not {what}")
            return m
        found = _children(owner, kinds, skip)
        if not found:
            raise ValueError(f"{role}: no {what} in {type(owner).__name__}; name it with "
                             f"names={{{role!r}: 'attribute'}}")
        return found[0][1]

    enc_emb = find("encoder.embedding", encoder, nn.Embedding, "an nn.Embedding")
    enc_rnn = find("encoder.rnn", encoder, nn.GRU, "an nn.GRU")
    dec_emb = find("decoder.embedding", decoder, nn.Embedding, "an nn.Embedding", (attention,))
    dec_rnn = find("decoder.rnn", decoder, (nn.GRUCell, nn.GRU), "an nn.GRUCell or nn.GRU",
                   (attention,))
    for bad in _children(decoder, (nn.LSTM, nn.LSTMCell, nn.RNN, nn.RNNCell), (attention,)):
        raise ValueError(f"decoder: {bad[0]} is an {type(bad[1]).__name__}; seqcl runs GRUs only")
    V = dec_emb.weight.shape[0]
    if "decoder.output" in names:
        output = at(decoder, "decoder.output")
    else:
        lins = [(n, m) for n, m in _children(decoder, nn.Linear, (attention,))
                if m.out_features == V]
        named = [m for n, m in lins if n in _OUTPUT_NAMES]
        if not lins:
            raise ValueError(f"decoder: no nn.Linear producing V_tgt = {V} logits; name it with "
                             f"names={{'decoder.output': 'attribute'}}")
        output = named[0] if named else lins[-1][1]
    if bridge is None and init in (None, "bridge"):
        if "bridge" in names:
            try:
                bridge = at(encoder, "bridge")
            except ValueError:
                bridge = at(decoder, "bridge")
        else:
            for owner in (encoder, decoder):
                for n in _BRIDGE_NAMES:
                    m = getattr(owner, n, None)
                    if isinstance(m, nn.Linear) and m is not output:
                        bridge = m
                        break
                if bridge is not None:
                    break
        if bridge is None and init == "bridge":
            raise ValueError("init 'bridge': no bridge Linear found; name it with "
                             "names={'bridge': 'attribute'}")
    # attention paths in names are relative to the attention module
    att_names = {k: v for k, v in names.items() if k.startswith("attention.")}
    return collect_tensors(encoder_embedding=enc_emb, encoder_rnn=enc_rnn, decoder_embedding=dec_emb,
                           decoder_rnn=dec_rnn, attention=attention, output=output, bridge=bridge,
                           score=score, bos_id=bos_id, eos_id=eos_id, pad_id=pad_id, init=init,
                           attention_names=att_names)


def export(out_dir, model=None, *, dtype="f32", **kwargs):
    """collect(model, **kwargs), written to out_dir; returns the config."""
    config, tensors = collect(model, **kwargs)
    save_model_dir(out_dir, config, tensors, dtype)
    return config


# ----------------------------------------------------------------------------
# verify: the PyTorch model against the seqcl model (SPEC §5)

LOGIT_TOLERANCE = 1e-4  # max |seqcl - torch| <= 1e-4 x max |torch| over valid positions
NEAR_TIE = 1e-3         # two best logits closer than this: either choice is right


def _as_numpy(x):
    if hasattr(x, "detach"):
        x = x.detach().cpu().double().numpy()
    return np.asarray(x, dtype=np.float64)


def verify(torch_model, seqcl_model, src, tgt=None, max_steps=None):
    """Runs both models on sample lines and compares them (SPEC §5).

    torch_model(src_lines, tgt_lines) -> logits [N, T, V] is your PyTorch
    model under teacher forcing (lists of ids in; targets start with BOS),
    e.g. a lambda around its forward. tgt: the targets to force; None = the
    seqcl model's own greedy outputs (+ EOS), so that torch's argmax at each
    step says whether torch's greedy decoding produces the same line.

    Returns a dict: lines, max_logit_diff, max_abs_logit, logits_agree
    (diff <= 1e-4 x max |torch| over valid steps), decoded_agree (lines whose
    greedy output torch reproduces), near_ties (lines that differ only after
    a near-tie, which SPEC §5 accepts), differing (indices of the other
    lines; only with tgt=None), ok."""
    decoded = None
    if tgt is None:
        decoded = seqcl_model.decode(src, max_steps=max_steps, alignments=False)
        eos, bos = seqcl_model.eos_id, seqcl_model.bos_id
        tgt = [[bos] + list(toks) + ([eos] if int(steps) == len(toks) + 1 else [])
               for toks, steps in zip(decoded.tokens, decoded.steps)]
        tgt = [t if len(t) >= 2 else t + [eos] for t in tgt]
    src_lines = [list(map(int, l)) for l in src]
    tgt_lines = [list(map(int, l)) for l in tgt]
    ours = seqcl_model.forward(src_lines, tgt_lines)
    theirs = _as_numpy(torch_model(src_lines, tgt_lines))
    N, T, V = ours.logits.shape
    if theirs.shape[0] != N or theirs.shape[2] != V or theirs.shape[1] < T:
        raise ValueError(f"torch_model returned logits of shape {theirs.shape}; expected "
                         f"[{N}, {T}, {V}] (lines, decoder steps, V_tgt)")
    theirs = theirs[:, :T]
    diff, scale = 0.0, 0.0
    agree, ties, differing = 0, 0, []
    for n in range(N):
        L = len(tgt_lines[n]) - 1
        a, b = ours.logits[n, :L].astype(np.float64), theirs[n, :L]
        diff = max(diff, float(np.max(np.abs(a - b))))
        scale = max(scale, float(np.max(np.abs(b))))
        if decoded is not None:
            want = tgt_lines[n][1:]
            picks = np.argmax(b, axis=1)
            wrong = [t for t in range(L) if picks[t] != want[t]]
            if not wrong:
                agree += 1
            else:
                top = np.sort(b[wrong[0]])[-2:]
                if top[1] - b[wrong[0], want[wrong[0]]] < NEAR_TIE:
                    ties += 1
                else:
                    differing.append(n)
    logits_ok = diff <= LOGIT_TOLERANCE * scale
    out = {"lines": N, "max_logit_diff": diff, "max_abs_logit": scale,
           "logits_agree": logits_ok}
    if decoded is not None:
        out.update(decoded_agree=agree, near_ties=ties, differing=differing)
    out["ok"] = logits_ok and not differing
    return out


# ----------------------------------------------------------------------------
# ch08_seq2seq.py (seed 004): Seq2Seq(encoder.embed/gru, decoder.attn/embed/gru/head)

CH08_SOS, CH08_EOS = 10, 11


def ch08_state_dict_to_tensors(sd):
    """Maps a ch08 Seq2Seq state_dict to (score, {SPEC name: tensor})."""
    t = {}
    for k, v in sd.items():
        if k.startswith("encoder.embed."):
            t["encoder.embedding." + k[len("encoder.embed."):]] = v
        elif k.startswith("encoder.gru."):
            t["encoder.rnn." + k[len("encoder.gru."):]] = v
        elif k.startswith("decoder.embed."):
            t["decoder.embedding." + k[len("decoder.embed."):]] = v
        elif k.startswith("decoder.gru."):
            t["decoder.rnn." + k[len("decoder.gru."):].replace("_l0", "")] = v
        elif k.startswith("decoder.head."):
            t["decoder.output." + k[len("decoder.head."):]] = v
        elif k.startswith("decoder.attn."):
            rest = k[len("decoder.attn."):]
            mod, _, param = rest.partition(".")
            name = {"w1": "query", "w2": "key", "v": "energy", "w": "query"}[mod]
            t[f"decoder.attention.{name}.{param}"] = v
        else:
            raise ValueError(f"unexpected ch08 tensor {k}")
    score = "additive" if "decoder.attention.key.weight" in t else "general"
    return score, {k: v.detach().cpu() for k, v in t.items()}


def export_from_ch08(model, score=None, out_dir=None, dtype="f32"):
    """Exports a ch08_seq2seq.py Seq2Seq (or its state_dict) to out_dir.

    score, when given, must match the attention found ("additive" for
    BahdanauAttention, "general" for LuongAttention). Returns the config."""
    sd = model.state_dict() if isinstance(model, nn.Module) else model
    found, tensors = ch08_state_dict_to_tensors(sd)
    if score is not None and score != found:
        raise ValueError(f"the model's attention is {found}, not {score}")
    vocab, embed = tensors["encoder.embedding.weight"].shape
    hidden = tensors["encoder.rnn.weight_hh_l0"].shape[1]
    dec_hidden = tensors["decoder.rnn.weight_hh"].shape[1]
    attn_dim = tensors["decoder.attention.key.weight"].shape[0] if found == "additive" else None
    config = make_config(src_vocab_size=vocab, tgt_vocab_size=tensors["decoder.output.weight"].shape[0],
                         embed_dim=embed, bos_id=CH08_SOS, eos_id=CH08_EOS, pad_id=None,
                         enc_hidden=hidden, enc_layers=1, bidirectional=False,
                         dec_hidden=dec_hidden, init="zeros", score=found, attn_dim=attn_dim,
                         output="state")
    if out_dir is not None:
        save_model_dir(out_dir, config, tensors, dtype)
    return config


# ----------------------------------------------------------------------------
# demo: a small random model shaped like seed 000 (bidirectional encoder,
# bridge, additive attention without key/query biases, output on [s ; c])

def build_demo_modules(seed=0):
    torch.manual_seed(seed)
    vocab, embed, hidden, dec_hidden, attn_dim = 12, 16, 24, 32, 20

    class AdditiveAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.key = nn.Linear(2 * hidden, attn_dim, bias=False)
            self.query = nn.Linear(dec_hidden, attn_dim, bias=False)
            self.energy = nn.Linear(attn_dim, 1, bias=True)

    return dict(
        encoder_embedding=nn.Embedding(vocab, embed),
        encoder_rnn=nn.GRU(embed, hidden, num_layers=2, batch_first=True, bidirectional=True),
        bridge=nn.Linear(2 * hidden, dec_hidden),
        decoder_embedding=nn.Embedding(vocab, embed, padding_idx=0),
        attention=AdditiveAttention(),
        decoder_rnn=nn.GRUCell(embed + 2 * hidden, dec_hidden),
        output=nn.Linear(dec_hidden + 2 * hidden, vocab),
        bos_id=10, eos_id=11, pad_id=0,
    )


# ----------------------------------------------------------------------------
# seed 000 §01: the encoder-decoder without attention (score "none")

class FixedContextSeq2Seq(nn.Module):
    """Seed 000 §01's encoder-decoder with a fixed context, written the seed's
    way:

        h_s = GRU_enc(x_s, h_{s-1}),  c = h_S
        s_t = GRU_dec([y_{t-1} ; c], s_{t-1}),  p(y_t) = softmax(W_o s_t + b_o)

    h_S is read from the encoder outputs at each line's last token (and, when
    bidirectional, the reverse direction's output at its first token: its
    last step), so c = [h_fwd_final ; h_bwd_final] of the top layer. Optional
    pieces seqcl also has: a tanh bridge for s_0 and an output over [s_t ; c]."""

    def __init__(self, src_vocab, tgt_vocab, embed, hidden, dec_hidden=None, layers=1,
                 bidirectional=False, bridge=False, output_context=False):
        super().__init__()
        dirs = 2 if bidirectional else 1
        self.hidden, self.dirs = hidden, dirs
        self.dec_hidden = dec_hidden or dirs * hidden
        self.src_embed = nn.Embedding(src_vocab, embed)
        self.encoder = nn.GRU(embed, hidden, num_layers=layers, batch_first=True,
                              bidirectional=bidirectional)
        self.bridge = nn.Linear(dirs * hidden, self.dec_hidden) if bridge else None
        self.tgt_embed = nn.Embedding(tgt_vocab, embed)
        self.decoder = nn.GRUCell(embed + dirs * hidden, self.dec_hidden)
        self.output_context = output_context
        self.out = nn.Linear(self.dec_hidden + (dirs * hidden if output_context else 0), tgt_vocab)

    def context(self, src, lengths):
        """src [N,S] ids (padded), lengths [N] -> c = h_S [N, dirs*H]."""
        from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
        packed = pack_padded_sequence(self.src_embed(src), lengths.cpu(), batch_first=True,
                                      enforce_sorted=False)
        out, _ = pad_packed_sequence(self.encoder(packed)[0], batch_first=True)
        rows = torch.arange(src.shape[0])
        c = out[rows, lengths - 1, :self.hidden]
        if self.dirs == 2:
            c = torch.cat([c, out[:, 0, self.hidden:]], dim=-1)
        return c

    def forward(self, src, lengths, tgt_in):
        """Teacher forcing: tgt_in [N,T] decoder inputs (BOS first) -> logits [N,T,V]."""
        c = self.context(src, lengths)
        s = (torch.tanh(self.bridge(c)) if self.bridge is not None
             else torch.zeros(src.shape[0], self.dec_hidden, dtype=c.dtype))
        logits = []
        for t in range(tgt_in.shape[1]):
            s = self.decoder(torch.cat([self.tgt_embed(tgt_in[:, t]), c], dim=-1), s)
            logits.append(self.out(torch.cat([s, c], dim=-1) if self.output_context else s))
        return torch.stack(logits, dim=1)

    def modules_for_export(self, bos_id, eos_id, pad_id=None):
        return dict(encoder_embedding=self.src_embed, encoder_rnn=self.encoder,
                    decoder_embedding=self.tgt_embed, decoder_rnn=self.decoder, attention=None,
                    score="none", output=self.out, bridge=self.bridge, bos_id=bos_id,
                    eos_id=eos_id, pad_id=pad_id)


def export_fixed_context(model, out_dir, bos_id, eos_id, pad_id=None, dtype="f32"):
    """Exports a FixedContextSeq2Seq to the model directory out_dir."""
    return export_modules(out_dir, dtype=dtype, **model.modules_for_export(bos_id, eos_id, pad_id))


def run_cli(args):
    """tools/export_pytorch.py after its argument parsing (args.demo,
    args.demo_none, args.ch08, args.out_dir, args.dtype, args.seed)."""
    if args.demo:
        config = export_modules(args.out_dir, dtype=args.dtype, **build_demo_modules(args.seed))
    elif getattr(args, "demo_none", False):
        torch.manual_seed(args.seed)
        model = FixedContextSeq2Seq(12, 12, 16, 24, dec_hidden=32, layers=2, bidirectional=True,
                                    bridge=True, output_context=True)
        config = export_fixed_context(model, args.out_dir, bos_id=10, eos_id=11, dtype=args.dtype)
    else:
        sd = torch.load(args.ch08, map_location="cpu")
        if isinstance(sd, nn.Module):
            sd = sd.state_dict()
        config = export_from_ch08(sd, out_dir=args.out_dir, dtype=args.dtype)
    print(f"wrote {args.out_dir}/config.json and model.safetensors "
          f"({config['attention']['score']}, {args.dtype})")
    return 0
