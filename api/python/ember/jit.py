"""The parts of torch.jit that eager programs use: the annotations TorchScript reads and eager
PyTorch ignores (`@torch.jit.ignore`, `@torch.jit.unused`, `@torch.jit.export`, `Final`) and the
questions model code asks to choose an eager path (`is_scripting()`, `is_tracing()`).

Note [Ember runs TorchScript's annotations eagerly]
Model files (timm's, Hugging Face's) decorate helpers with `@torch.jit.ignore` and branch on
`torch.jit.is_scripting()`; in eager PyTorch the decorators return the function unchanged and
the questions answer False. Ember never compiles Python source, so it gives the same answers.
`script` and `trace` compile a program into TorchScript, which Ember has no form of: they raise
a clear error instead of returning the module unchanged and letting a later `.save()` or a
TorchScript-only method fail far from the cause.
"""

from typing import Any, Callable, Final  # noqa: F401  (Final: torch.jit.Final)

__all__ = ["Final", "export", "ignore", "is_scripting", "is_tracing", "script", "trace", "unused"]


def _passthrough(fn: Any = None, **_options: Any) -> Any:
    # Usable bare (`@ignore`) and called (`@ignore(drop=True)`), as torch.jit's decorators are.
    if fn is None:
        return lambda f: f
    return fn


def ignore(fn: Any = None, **options: Any) -> Any:
    """Marks a function TorchScript leaves to Python; eagerly, the function itself."""
    return _passthrough(fn, **options)


def unused(fn: Any = None, **options: Any) -> Any:
    """Marks a function TorchScript replaces by a raise; eagerly, the function itself."""
    return _passthrough(fn, **options)


def export(fn: Callable) -> Callable:
    """Marks a method TorchScript compiles as an entry point; eagerly, the method itself."""
    return fn


def is_scripting() -> bool:
    """False: Ember runs Python eagerly, never as TorchScript."""
    return False


def is_tracing() -> bool:
    """False: Ember runs Python eagerly, never under the TorchScript tracer."""
    return False


def _no_torchscript(name: str) -> RuntimeError:
    return RuntimeError(
        f"[jit.{name}] TorchScript is not part of Ember: the module runs eagerly as it is "
        f"(call it without jit.{name}), and ember.save / the safetensors format carry its weights")


def script(obj: Any, *args: Any, **kwargs: Any) -> Any:
    """TorchScript compilation: not part of Ember (raises, see Note above)."""
    raise _no_torchscript("script")


def trace(func: Any, *args: Any, **kwargs: Any) -> Any:
    """TorchScript tracing: not part of Ember (raises, see Note above)."""
    raise _no_torchscript("trace")
