"""Grad modes as context managers and decorators: no_grad, enable_grad, set_grad_enabled,
inference_mode (torch.autograd.grad_mode)."""

import functools
import inspect
import sys

from ember._C import autograd as _native


class _DecoratorContextManager:
    """A context manager that also decorates functions (and generator functions)."""

    def __call__(self, fn):
        if inspect.isgeneratorfunction(fn):

            @functools.wraps(fn)
            def generator(*args, **kwargs):
                gen = fn(*args, **kwargs)
                try:
                    with self.clone():
                        response = gen.send(None)
                    while True:
                        try:
                            request = yield response
                        except GeneratorExit:
                            with self.clone():
                                gen.close()
                            raise
                        except BaseException:
                            with self.clone():
                                response = gen.throw(*sys.exc_info())
                        else:
                            with self.clone():
                                response = gen.send(request)
                except StopIteration as stop:
                    return stop.value

            return generator

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)

        return wrapper

    def clone(self):
        """A fresh manager with the same settings (each use needs its own saved state)."""
        return self.__class__()


class no_grad(_DecoratorContextManager):
    """Disables gradient recording in its scope, on this thread (torch.no_grad)."""

    def __enter__(self):
        self._prev = _native.is_grad_enabled()
        _native.set_grad_enabled(False)
        return self

    def __exit__(self, *exc):
        _native.set_grad_enabled(self._prev)
        return False


class enable_grad(_DecoratorContextManager):
    """Enables gradient recording in its scope, on this thread (torch.enable_grad)."""

    def __enter__(self):
        self._prev = _native.is_grad_enabled()
        _native.set_grad_enabled(True)
        return self

    def __exit__(self, *exc):
        _native.set_grad_enabled(self._prev)
        return False


class set_grad_enabled(_DecoratorContextManager):
    """Sets gradient recording on or off: at once when called, and back when its scope ends if
    used as a context manager (torch.set_grad_enabled)."""

    def __init__(self, mode: bool):
        self._prev = _native.is_grad_enabled()
        self.mode = bool(mode)
        _native.set_grad_enabled(self.mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _native.set_grad_enabled(self._prev)
        return False

    def clone(self):
        return self.__class__(self.mode)


class inference_mode(_DecoratorContextManager):
    """No recording and no version tracking for tensors made inside, on this thread
    (torch.inference_mode); inference_mode(False) does nothing."""

    def __init__(self, mode: bool = True):
        self.mode = mode

    def __enter__(self):
        self._scope = _native._InferenceScope() if self.mode else None
        if self._scope is not None:
            self._scope.enter()
        return self

    def __exit__(self, *exc):
        if self._scope is not None:
            self._scope.exit()
        return False

    def clone(self):
        return self.__class__(self.mode)


def is_grad_enabled() -> bool:
    """True if ops record autograd history on this thread."""
    return _native.is_grad_enabled()


def is_inference_mode_enabled() -> bool:
    """True inside an inference_mode scope on this thread."""
    return _native.is_inference_mode()


class detect_anomaly(_DecoratorContextManager):
    """Anomaly detection in its scope: a NaN or Inf from backward names the forward op."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan

    def __enter__(self):
        self._prev = _native.is_anomaly_enabled()
        _native.set_anomaly_enabled(self.check_nan)
        return self

    def __exit__(self, *exc):
        _native.set_anomaly_enabled(self._prev)
        return False

    def clone(self):
        return self.__class__(self.check_nan)


def set_detect_anomaly(mode: bool) -> None:
    """Turns anomaly detection on or off for the whole process."""
    _native.set_anomaly_enabled(mode)
