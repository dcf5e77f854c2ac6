"""seqcl.Error and one subclass per library status (include/seqcl/status.h).

Every failing call raises the subclass of its status, carrying the status
name ("SEQCL_ERR_SHAPE") and the library's message (which call, file, line,
tensor or device). Checks made in Python before a C call raise the same
classes, so a caller catches one family whatever side found the problem."""

# (value, status name, class name, extra built-in base): the order and values
# of SEQCL_STATUS_MAP; tests compare this table with seqcl_status_name().
STATUSES = [
    (1, "SEQCL_ERR_INVALID_ARGUMENT", "InvalidArgumentError", ValueError),
    (2, "SEQCL_ERR_SHAPE", "ShapeError", ValueError),
    (3, "SEQCL_ERR_EMPTY_SEQUENCE", "EmptySequenceError", ValueError),
    (4, "SEQCL_ERR_OUT_OF_MEMORY", "OutOfMemoryError", MemoryError),
    (5, "SEQCL_ERR_DEVICE_OUT_OF_MEMORY", "DeviceOutOfMemoryError", None),
    (6, "SEQCL_ERR_BAD_SELECTOR", "BadSelectorError", ValueError),
    (7, "SEQCL_ERR_NO_DEVICE", "NoDeviceError", LookupError),
    (8, "SEQCL_ERR_OPENCL", "OpenCLError", None),
    (9, "SEQCL_ERR_BUILD", "BuildError", None),
    (10, "SEQCL_ERR_UNSUPPORTED", "UnsupportedError", None),
    (11, "SEQCL_ERR_IO", "FileIOError", None),
    (12, "SEQCL_ERR_BAD_MODEL", "BadModelError", ValueError),
    (13, "SEQCL_ERR_BAD_TOKENS", "BadTokensError", ValueError),
    (14, "SEQCL_ERR_NON_FINITE", "NonFiniteError", ArithmeticError),
    (15, "SEQCL_ERR_SELFCHECK", "SelfCheckError", None),
    (16, "SEQCL_ERR_CANCELLED", "CancelledError", None),
    (17, "SEQCL_ERR_CHECK_FAILED", "CheckFailedError", None),
    (18, "SEQCL_ERR_INTERNAL", "InternalError", None),
]


class Error(Exception):
    """A seqcl failure: .status (int), .status_name and .message."""

    status = -1
    status_name = "SEQCL_UNKNOWN_STATUS"

    def __init__(self, message, status=None, status_name=None):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status
        if status_name is not None:
            self.status_name = status_name

    def __str__(self):
        return f"{self.status_name}: {self.message}"


BY_STATUS = {}
__all__ = ["Error", "error_for"]
for _value, _name, _cls, _base in STATUSES:
    _bases = (Error,) if _base is None else (Error, _base)
    _klass = type(_cls, _bases, {"status": _value, "status_name": _name,
                                 "__doc__": f"{_name} ({_value})", "__module__": "seqcl"})
    globals()[_cls] = _klass
    BY_STATUS[_value] = _klass
    __all__.append(_cls)


def error_for(status, message):
    """The exception for a status value and message."""
    klass = BY_STATUS.get(int(status))
    if klass is None:
        return Error(message, int(status))
    return klass(message)
