"""seqcl from Python: attention GRU seq2seq models on any OpenCL device.

    import seqcl
    seqcl.devices()                                  # what `seqcl devices --json` lists
    with seqcl.Context("opencl:0") as ctx:
        model = seqcl.Model.load("model_dir", ctx)   # or Model.from_torch(...)
        tokens, scores, alignments = model.decode([[3, 1, 4]], beam=4)
        out = model.forward(src, tgt)                # logits, alignments, loss

seqcl.train(...) trains on token files or id lists, seqcl.check(...) runs the
cross-vendor correctness suite, seqcl.ops.<op>(...) runs one operation on
your own inputs, and seqcl.export turns PyTorch modules into model folders.
Errors are seqcl.Error subclasses (seqcl.errors)."""
from . import errors
from .device import Context, devices
from .errors import *  # noqa: F401,F403  the Error classes
from .errors import Error
from .model import Decoded, Forwarded, Hypothesis, Model
from .training import TrainResult, train
from .checking import check
from . import ops

__all__ = ["Context", "Decoded", "Error", "Forwarded", "Hypothesis", "Model", "TrainResult",
           "check", "devices", "errors", "export", "ops", "train", "version",
           "library_path"] + errors.__all__[1:]


def version():
    """The library's "MAJOR.MINOR.PATCH"."""
    from . import _lib
    return _lib.lib().seqcl_version().decode()


def library_path():
    """The libseqcl.so this package loaded (see seqcl._lib for the search order)."""
    from . import _lib
    return _lib.library_path()


def __getattr__(name):
    # seqcl.export needs torch: imported on first use, so `import seqcl` does not.
    if name == "export":
        import importlib
        return importlib.import_module(".export", __name__)
    raise AttributeError(f"module 'seqcl' has no attribute {name!r}")
