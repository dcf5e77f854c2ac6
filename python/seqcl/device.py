"""seqcl.devices() and seqcl.Context: the devices and one open device."""
import ctypes
import threading

from . import _lib
from .errors import InvalidArgumentError

_TYPES = {0: "host", 1: "cpu", 2: "gpu", 3: "accelerator", 4: "other"}


def _text(b):
    return b.decode("utf-8", "replace")


def _info_dict(d):
    """The fields of `seqcl devices --json`, under the same names."""
    return {"selector": _text(d.selector), "type": _TYPES.get(d.type, "other"),
            "index": d.index, "platform_index": d.platform_index,
            "device_index": d.device_index, "name": _text(d.name), "vendor": _text(d.vendor),
            "platform": _text(d.platform), "driver_version": _text(d.driver_version),
            "opencl_version": _text(d.opencl_version), "compute_units": d.compute_units,
            "global_mem_bytes": d.global_mem_bytes, "local_mem_bytes": d.local_mem_bytes,
            "max_work_group_size": d.max_work_group_size, "fp64": bool(d.fp64),
            "fp16": bool(d.fp16), "subgroups": bool(d.subgroups), "default": bool(d.is_default)}


def _selector_bytes(selector):
    if selector is None:
        return None
    if not isinstance(selector, str):
        raise InvalidArgumentError(f"device selector must be a str, not {type(selector).__name__}")
    if "\0" in selector:
        raise InvalidArgumentError("device selector contains a NUL character")
    return selector.encode("utf-8")


def _list(selector=None, select=False):
    L = _lib.lib()
    ptr = ctypes.POINTER(_lib.DeviceInfo)()
    n = ctypes.c_size_t()
    if select:
        _lib.check(L.seqcl_devices_select(_selector_bytes(selector), ctypes.byref(ptr),
                                          ctypes.byref(n)), "seqcl_devices_select")
    else:
        _lib.check(L.seqcl_devices_list(ctypes.byref(ptr), ctypes.byref(n)), "seqcl_devices_list")
    try:
        return [_lib.DeviceInfo.from_buffer_copy(ptr[i]) for i in range(n.value)]
    finally:
        L.seqcl_devices_free(ptr)


def devices(selector=None):
    """Every device as a dict (the fields of `seqcl devices --json`), the host
    first; with a selector (SPEC §3, "all" and lists included), the devices it
    names."""
    infos = _list() if selector is None else _list(selector, select=True)
    return [_info_dict(d) for d in infos]


class Context:
    """One device, its queue, program cache and workspace.

        with seqcl.Context("opencl:0") as ctx:
            model = seqcl.Model.load("g2p", ctx)

    device: "auto" (SPEC §3: first GPU, else first accelerator, else the
    host), None (SEQCL_DEVICE, else auto), or any single-device selector.
    A context is used by one thread at a time (calls from several threads on
    one context are serialised); contexts in different threads run
    concurrently. Closing it closes the models made with it first."""

    def __init__(self, device="auto", *, _info=None):
        L = _lib.lib()
        handle = ctypes.c_void_p()
        if _info is not None:
            _lib.check(L.seqcl_ctx_open_info(ctypes.byref(_info), ctypes.byref(handle)),
                       "seqcl_ctx_open_info")
        else:
            _lib.check(L.seqcl_ctx_open(_selector_bytes(device), ctypes.byref(handle)),
                       "seqcl_ctx_open")
        self._h = handle.value
        self._lock = threading.RLock()
        # Each model's handle box, held strongly: at interpreter exit the
        # collector may clear weak references (and so a WeakSet of models)
        # before it runs the finalizers, and a model freed after its context
        # would touch freed memory.
        self._boxes = set()
        self.device = _info_dict(L.seqcl_ctx_device(self._h).contents)

    @property
    def selector(self):
        return self.device["selector"]

    @property
    def closed(self):
        return self._h is None

    def _handle(self):
        if self._h is None:
            raise InvalidArgumentError("this seqcl.Context is closed")
        return self._h

    def close(self):
        """Closes every model of this context, then the context (idempotent)."""
        if getattr(self, "_h", None) is None:
            return
        with self._lock:
            L = _lib.lib()
            for box in list(self._boxes):
                if box.h is not None:
                    L.seqcl_model_free(box.h)
                    box.h = None
            self._boxes.clear()
            L.seqcl_ctx_close(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may be gone
            pass

    def __repr__(self):
        state = "closed" if self._h is None else self.device["name"]
        return f"<seqcl.Context {self.device['selector']} ({state})>"


class Handle:
    """A C handle shared by a model and its context: whichever closes first
    frees it and sets h to None."""

    __slots__ = ("h",)

    def __init__(self, h):
        self.h = h


def as_context(ctx):
    """(Context, owned): a Context as given, else one opened on a selector."""
    if isinstance(ctx, Context):
        return ctx, False
    if ctx is None or isinstance(ctx, str):  # None: SEQCL_DEVICE, else auto (SPEC §3)
        return Context(ctx), True
    raise InvalidArgumentError(f"ctx must be a seqcl.Context or a device selector, not "
                               f"{type(ctx).__name__}")
