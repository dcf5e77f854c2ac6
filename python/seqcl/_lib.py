"""Finding libseqcl.so and declaring its C API for ctypes.

Where the library comes from, first match wins:
  1. $SEQCL_LIBRARY (a path to libseqcl.so);
  2. the library directory recorded when `meson install` installed this
     package (_install.py, written by meson);
  3. a build tree next to the package's source tree (<repo>/build*/src/), so
     PYTHONPATH=python works in a checkout;
  4. the system loader ("libseqcl.so.0" on its search path).
The library is loaded on the first call that needs it, so `import seqcl` and
seqcl.export work without it."""
import ctypes
import glob
import os
import threading

c_int, c_size_t, c_double, c_float = ctypes.c_int, ctypes.c_size_t, ctypes.c_double, ctypes.c_float
c_char_p, c_void_p = ctypes.c_char_p, ctypes.c_void_p
P = ctypes.POINTER


class DeviceInfo(ctypes.Structure):
    _fields_ = [("index", c_int), ("platform_index", c_int), ("device_index", c_int),
                ("selector", ctypes.c_char * 32), ("name", ctypes.c_char * 256),
                ("vendor", ctypes.c_char * 256), ("platform", ctypes.c_char * 256),
                ("driver_version", ctypes.c_char * 128), ("opencl_version", ctypes.c_char * 128),
                ("type", c_int), ("compute_units", ctypes.c_uint),
                ("global_mem_bytes", ctypes.c_uint64), ("local_mem_bytes", ctypes.c_uint64),
                ("max_work_group_size", c_size_t), ("fp64", c_int), ("fp16", c_int),
                ("subgroups", c_int), ("is_default", c_int)]


class ModelConfig(ctypes.Structure):
    _fields_ = [(n, c_int) for n in (
        "src_vocab_size", "tgt_vocab_size", "embed_dim", "bos_id", "eos_id", "pad_id",
        "encoder_hidden", "encoder_layers", "bidirectional", "encoder_width", "decoder_hidden",
        "decoder_init_bridge", "score", "attention_dim", "output_state_context", "decoder_init")]


class Seqs(ctypes.Structure):
    _fields_ = [("count", c_size_t), ("ids", c_void_p), ("offsets", c_void_p)]


class ForwardResult(ctypes.Structure):
    _fields_ = [("N", c_size_t), ("T", c_int), ("S", c_int), ("V", c_int), ("steps", P(c_int)),
                ("logits", P(c_float)), ("alignments", P(c_float)), ("loss", c_float),
                ("labels", c_size_t)]


class Hypothesis(ctypes.Structure):
    _fields_ = [("ids", P(ctypes.c_int32)), ("len", c_size_t), ("finished", c_int),
                ("steps", c_int), ("logprob", c_double), ("score", c_double)]


ON_LINES = ctypes.CFUNCTYPE(c_int, c_void_p, c_size_t, c_size_t, P(Hypothesis), P(c_int), c_int)


class ModelOptions(ctypes.Structure):
    """seqcl_model_options."""
    _fields_ = [("precision", ctypes.c_int)]


class DecodeOptions(ctypes.Structure):
    _fields_ = [("max_steps", c_int), ("beam", c_int), ("length_penalty", c_double),
                ("nbest", c_int), ("batch_size", c_int), ("want_alignments", c_int),
                ("on_lines", c_void_p), ("user", c_void_p)]


class DecodeResult(ctypes.Structure):
    _fields_ = [("count", c_size_t), ("ids", P(ctypes.c_int32)), ("offsets", P(c_size_t)),
                ("steps", P(c_int)), ("scores", P(c_double)), ("nbest", c_int),
                ("hyp_counts", P(c_int)), ("hyps", P(Hypothesis)), ("T", c_int), ("S", c_int),
                ("alignments", P(c_float))]


class TrainEvent(ctypes.Structure):
    _fields_ = [("step", c_int), ("steps", c_int), ("loss", c_float), ("validated", c_int),
                ("valid_loss", c_double), ("valid_correct", c_int), ("valid_count", c_int),
                ("checkpointed", c_int), ("lr", c_double), ("lines", c_int), ("tokens", c_int),
                ("valid_ter", c_double), ("best", c_int), ("decayed", c_int),
                ("stopping", c_int)]


TRAIN_PROGRESS = ctypes.CFUNCTYPE(c_int, c_void_p, P(TrainEvent))


class TrainFilesOptions(ctypes.Structure):
    _fields_ = [("src_path", c_char_p), ("tgt_path", c_char_p), ("valid_src_path", c_char_p),
                ("valid_tgt_path", c_char_p), ("config_path", c_char_p), ("init_dir", c_char_p),
                ("resume_dir", c_char_p), ("save_dir", c_char_p), ("steps", c_int),
                ("batch_size", c_int), ("lr", c_double), ("clip", c_double),
                ("seed", ctypes.c_longlong), ("checkpoint_every", c_int), ("valid_every", c_int),
                ("progress", c_void_p), ("user", c_void_p), ("overwrite", c_int),
                ("dropout", c_double), ("text", c_char_p), ("src_vocab_path", c_char_p),
                ("tgt_vocab_path", c_char_p), ("epochs", c_double), ("bucket", c_int),
                ("batch_tokens", ctypes.c_long), ("warmup", c_int), ("lr_decay", c_double),
                ("decay_patience", c_int), ("min_lr", c_double), ("patience", c_int),
                ("metric", c_char_p), ("keep_best", c_int), ("init_optimizer", c_int)]


class TrainFilesResult(ctypes.Structure):
    _fields_ = [("steps_done", c_int), ("start_step", c_int), ("final_loss", c_float),
                ("validated", c_int), ("valid_loss", c_double), ("valid_correct", c_int),
                ("valid_count", c_int), ("train_seconds", c_double), ("train_lines", c_int),
                ("max_src_len", c_int), ("max_tgt_len", c_int), ("save_dir", ctypes.c_char * 1024),
                ("unknown", c_size_t * 2), ("vocab_size", c_int * 2), ("vocab_built", c_int * 2),
                ("valid_ter", c_double), ("best_step", c_int), ("best_value", c_double),
                ("stopped_early", c_int), ("kept_best", c_int), ("metric", ctypes.c_char * 8),
                ("final_lr", c_double)]


class CheckRow(ctypes.Structure):
    _fields_ = [("op", ctypes.c_char * 48), ("cases", c_int), ("passed", c_int),
                ("failed", c_int), ("skipped", c_int), ("verdict", c_int),
                ("worst_err", c_double), ("worst_tol", c_double), ("worst_ratio", c_double),
                ("worst_shape", ctypes.c_char * 160), ("fail_shape", ctypes.c_char * 160),
                ("message", ctypes.c_char * 512)]


class OpTensor(ctypes.Structure):
    _fields_ = [("name", c_char_p), ("count", c_size_t), ("is_int", c_int), ("data", c_void_p)]


# The structs above mirror include/seqcl/*.h field for field; test_abi.py
# compares their sizes with the C compiler's.
# name: (restype, argtypes); restype c_int = a seqcl_status
_API = {
    "seqcl_status_name": (c_char_p, [c_int]),
    "seqcl_last_message": (c_char_p, []),
    "seqcl_version": (c_char_p, []),
    "seqcl_has_opencl": (c_int, []),
    "seqcl_devices_list": (c_int, [P(P(DeviceInfo)), P(c_size_t)]),
    "seqcl_devices_select": (c_int, [c_char_p, P(P(DeviceInfo)), P(c_size_t)]),
    "seqcl_devices_free": (None, [P(DeviceInfo)]),
    "seqcl_ctx_open": (c_int, [c_char_p, P(c_void_p)]),
    "seqcl_ctx_open_info": (c_int, [P(DeviceInfo), P(c_void_p)]),
    "seqcl_ctx_close": (None, [c_void_p]),
    "seqcl_ctx_device": (P(DeviceInfo), [c_void_p]),
    "seqcl_model_load": (c_int, [c_void_p, c_char_p, P(c_void_p)]),
    "seqcl_model_load_with": (c_int, [c_void_p, c_char_p, P(ModelOptions), P(c_void_p)]),
    "seqcl_model_options_init": (None, [P(ModelOptions)]),
    "seqcl_precision_parse": (c_int, [c_char_p, P(c_int)]),
    "seqcl_model_precision": (c_int, [c_void_p]),
    "seqcl_model_free": (None, [c_void_p]),
    "seqcl_model_get_config": (c_int, [c_void_p, P(ModelConfig)]),
    "seqcl_model_forward": (c_int, [c_void_p, P(Seqs), P(Seqs), c_int, P(P(ForwardResult))]),
    "seqcl_forward_result_free": (None, [P(ForwardResult)]),
    "seqcl_decode_options_init": (None, [P(DecodeOptions)]),
    "seqcl_model_decode": (c_int, [c_void_p, P(Seqs), P(DecodeOptions), P(P(DecodeResult))]),
    "seqcl_ensemble_decode": (c_int, [P(c_void_p), c_int, P(Seqs), P(DecodeOptions),
                                      P(P(DecodeResult))]),
    "seqcl_decode_result_free": (None, [P(DecodeResult)]),
    "seqcl_train_files_options_init": (None, [P(TrainFilesOptions)]),
    "seqcl_train_files": (c_int, [c_void_p, P(TrainFilesOptions), P(TrainFilesResult)]),
    "seqcl_op_count": (c_size_t, []),
    "seqcl_op_name": (c_char_p, [c_size_t]),
    "seqcl_op_tolerance": (c_char_p, [c_size_t]),
    "seqcl_op_shape": (c_char_p, [c_size_t, c_int, c_size_t]),
    "seqcl_check_run": (c_int, [c_void_p, c_void_p, c_char_p, c_char_p, c_int,
                                ctypes.c_ulonglong, P(CheckRow)]),
    "seqcl_op_case_new": (c_int, [c_char_p, c_char_p, ctypes.c_ulonglong, P(c_void_p)]),
    "seqcl_op_case_free": (None, [c_void_p]),
    "seqcl_op_case_inputs": (c_int, [c_void_p]),
    "seqcl_op_case_outputs": (c_int, [c_void_p]),
    "seqcl_op_case_input": (c_int, [c_void_p, c_int, P(OpTensor)]),
    "seqcl_op_case_output": (c_int, [c_void_p, c_int, P(OpTensor)]),
    "seqcl_op_case_run": (c_int, [c_void_p, c_void_p, P(P(c_double))]),
}

_lock = threading.Lock()
_lib = None
_path = None


def _candidates():
    env = os.environ.get("SEQCL_LIBRARY")
    if env:
        return [env], True
    found = []
    try:
        from . import _install  # written by meson install
        found.append(os.path.join(_install.LIBDIR, "libseqcl.so"))
    except ImportError:
        pass
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    found += sorted(glob.glob(os.path.join(repo, "build*", "src", "libseqcl.so")))
    found.append("libseqcl.so.0")
    return found, False


def lib():
    """The loaded library (loads it on first use)."""
    global _lib, _path
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        paths, explicit = _candidates()
        errors = []
        for p in paths:
            if os.sep in p and not os.path.exists(p):
                errors.append(f"{p}: no such file")
                continue
            try:
                handle = ctypes.CDLL(p)
            except OSError as e:
                errors.append(f"{p}: {e}")
                continue
            for name, (res, args) in _API.items():
                try:
                    fn = getattr(handle, name)
                except AttributeError:
                    errors.append(f"{p}: has no {name} (an older libseqcl?)")
                    handle = None
                    break
                fn.restype, fn.argtypes = res, args
            if handle is not None:
                _lib, _path = handle, p
                return _lib
        from .errors import FileIOError
        where = "SEQCL_LIBRARY" if explicit else "the installed library, the build tree and the system loader"
        raise FileIOError("cannot load libseqcl.so from " + where + ": " + "; ".join(errors)
                          + " (set SEQCL_LIBRARY to the path of libseqcl.so)")


def library_path():
    lib()
    return _path


def check(status, call):
    """Raises the seqcl.Error subclass of a failed status, with the library's message."""
    if status == 0:
        return
    from .errors import error_for
    msg = lib().seqcl_last_message()
    msg = msg.decode("utf-8", "replace") if msg else ""
    raise error_for(status, msg or f"{call} failed")
