#!/usr/bin/env python3
"""Write a seqcl model directory (config.json + model.safetensors, SPEC §2)
from PyTorch modules.

The modules may be laid out the way the seed notebooks lay them out:

* encoder: an ``nn.Embedding`` and an ``nn.GRU`` (any number of layers,
  uni- or bidirectional; ``batch_first`` does not matter for the weights);
* bridge (optional): an ``nn.Linear(H_e, H_d)``; seqcl applies tanh to it;
* decoder: an ``nn.Embedding``, an ``nn.GRUCell`` or a single-layer
  unidirectional ``nn.GRU`` reading ``[embedding ; context]``, and an
  ``nn.Linear`` output over ``s_t`` ("state") or ``[s_t ; c_t]``
  ("state_context");
* attention: Bahdanau with ``key``/``query``/``energy`` Linears (seed 000) or
  with ch08's ``w1``/``w2``/``v`` (w1 acts on the decoder state = query, w2 on
  the encoder outputs = key, v = energy); Luong "general" with a ``w`` or
  ``query`` Linear; ``None`` for ``dot`` / ``scaled_dot`` and for ``none``
  (no attention: seed 000 §01's fixed context c = h_S, the encoder's final
  state, read at every step; ``FixedContextSeq2Seq`` below is that model).

The safetensors file is written here directly (8-byte little-endian header
length, JSON header padded with spaces to a multiple of 8, raw little-endian
data), so the ``safetensors`` package is not needed.

    python3 tools/export_pytorch.py --demo OUTDIR [--dtype f32|f16|bf16]
    python3 tools/export_pytorch.py --demo-none OUTDIR [--dtype ...]
    python3 tools/export_pytorch.py --ch08 STATE_DICT.pt OUTDIR [--dtype ...]
"""
import argparse
import json
import os
import struct
import sys
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


def _attention_tensors(attention, score):
    """Maps an attention module to (score, {name: tensor}, attention dim)."""
    if attention is None:
        if score not in ("dot", "scaled_dot", "none"):
            raise ValueError("an attention module is needed unless score is dot, scaled_dot or none")
        return score, {}, None
    names = {n for n, _ in attention.named_children()}
    if {"key", "query", "energy"} <= names:
        key, query, energy = attention.key, attention.query, attention.energy
    elif {"w1", "w2", "v"} <= names:  # ch08: w1 reads h_dec (query), w2 reads enc_out (key)
        key, query, energy = attention.w2, attention.w1, attention.v
    elif "w" in names or names == {"query"}:
        lin = attention.w if "w" in names else attention.query
        if score not in (None, "general"):
            raise ValueError(f"attention with one Linear is Luong general, not {score}")
        return "general", _linear_tensors("decoder.attention.query", lin, want_bias=False), None
    else:
        raise ValueError(f"unrecognised attention module with children {sorted(names)}")
    if score not in (None, "additive"):
        raise ValueError(f"key/query/energy attention is additive, not {score}")
    t = {}
    t.update(_linear_tensors("decoder.attention.key", key, want_bias=False))
    t.update(_linear_tensors("decoder.attention.query", query, want_bias=False))
    t.update(_linear_tensors("decoder.attention.energy", energy, want_bias=False))
    return "additive", t, key.out_features


def collect_tensors(*, encoder_embedding, encoder_rnn, decoder_embedding, decoder_rnn,
                    attention, output, bridge=None, score=None, bos_id, eos_id, pad_id=None):
    """Returns (config, {SPEC tensor name: tensor}) for the given modules."""
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

    score, att, attn_dim = _attention_tensors(attention, score)
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
    else:
        raise ValueError(f"output Linear reads {output.in_features} features; expected H_d "
                         f"({dec_hidden}) or H_d + H_e ({dec_hidden + enc_width})")
    if output.out_features != tgt_vocab:
        raise ValueError("output Linear must produce V_tgt logits")
    tensors.update(_linear_tensors("decoder.output", output))

    config = make_config(src_vocab_size=src_vocab, tgt_vocab_size=tgt_vocab, embed_dim=embed_dim,
                         bos_id=bos_id, eos_id=eos_id, pad_id=pad_id, enc_hidden=H,
                         enc_layers=enc.num_layers, bidirectional=enc.bidirectional,
                         dec_hidden=dec_hidden, init="bridge" if bridge is not None else "zeros",
                         score=score, attn_dim=attn_dim, output=out_kind)
    return config, {k: v.detach().cpu() for k, v in tensors.items()}


def export_modules(out_dir, dtype="f32", **modules):
    """Exports modules (see collect_tensors) to the model directory out_dir."""
    config, tensors = collect_tensors(**modules)
    save_model_dir(out_dir, config, tensors, dtype)
    return config


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


def main(argv=None):
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
    p.add_argument("--dtype", choices=sorted(DTYPE_OPTIONS), default="f32",
                   help="tensor dtype in model.safetensors (default f32)")
    p.add_argument("--seed", type=int, default=0, help="random seed for --demo")
    args = p.parse_args(argv)
    if args.demo:
        config = export_modules(args.out_dir, dtype=args.dtype, **build_demo_modules(args.seed))
    elif args.demo_none:
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


if __name__ == "__main__":
    sys.exit(main())
