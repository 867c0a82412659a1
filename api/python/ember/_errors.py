"""The exceptions Ember raises (ARCHITECTURE.md, "Python", Note [Errors in Python] in
api/python/src/module.cpp). Each kind derives from ember.Error, a RuntimeError as most of
PyTorch's errors are, and from the builtin a Python programmer expects, so `except ValueError`
and `except RuntimeError` both catch a shape mismatch. Defined in Python so that type checkers
see them; ember._C raises them. Importing this module imports nothing else of Ember."""

import builtins

__all__ = [
    "Error", "ValueError", "ZeroDivisionError", "LinAlgError", "TypeError", "IndexError", "NotImplementedError", "OutOfMemoryError",
    "DeviceError", "IoError", "FileNotFoundError", "PluginError", "InternalError",
    "DistributedError", "KeyError",
]


class Error(RuntimeError):
    """Base of every error Ember raises (a RuntimeError)."""


class ValueError(Error, builtins.ValueError):
    """A shape, size or argument value out of its domain."""


class ZeroDivisionError(ValueError, builtins.ZeroDivisionError):
    """An integer division (//, %, fmod, div with a rounding mode) by zero."""


class LinAlgError(ValueError):
    """A matrix a linalg op cannot factor: singular, not positive-definite, non-finite
    (torch.linalg.LinAlgError; a ValueError too, as numpy.linalg.LinAlgError is)."""


class TypeError(Error, builtins.TypeError):
    """A dtype or device that does not fit."""


class IndexError(Error, builtins.IndexError):
    """A dim or index out of range."""


class NotImplementedError(Error, builtins.NotImplementedError):
    """No kernel for this op, dtype and device, or an unsupported combination."""


class OutOfMemoryError(Error):
    """An allocation failed."""


class DeviceError(Error):
    """The device or its vendor library failed."""


class IoError(Error, builtins.OSError):
    """A file could not be read or written, or its format is malformed."""


class FileNotFoundError(IoError, builtins.FileNotFoundError):
    """A file Ember was asked to read does not exist."""


class PluginError(Error):
    """Plugin loading failed or the plugin API was misused."""


class InternalError(Error):
    """An Ember bug (please report it)."""


class DistributedError(Error):
    """A collective or the rendezvous failed: a peer died or did not answer in time."""


class KeyError(Error, builtins.KeyError):
    """A name a registry refuses: a module attribute that already exists, an empty or dotted
    name (PyTorch's register_buffer, register_parameter and add_module raise KeyError)."""

    def __str__(self) -> str:
        # builtins.KeyError quotes its message (it is meant for a missing key); Ember's is a
        # sentence, printed as is.
        return Error.__str__(self)


for _cls in (Error, ValueError, ZeroDivisionError, TypeError, IndexError, NotImplementedError, OutOfMemoryError,
             DeviceError, IoError, FileNotFoundError, PluginError, InternalError, DistributedError,
             KeyError):
    _cls.__module__ = "ember"  # tracebacks say ember.ValueError
del _cls
LinAlgError.__module__ = "ember.linalg"  # raised as ember.linalg.LinAlgError, as in torch
