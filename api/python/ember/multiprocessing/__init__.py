"""ember.multiprocessing (torch.multiprocessing): Python's multiprocessing, with Ember's CPU
tensors sent between processes through shared memory instead of pickled copies of their data.

Everything of ``multiprocessing`` is here under the same names (``Process``, ``Queue``,
``get_context``, ...). Importing Ember registers the tensor reductions with multiprocessing's
pickler, so a tensor put on any of its queues or pipes, or passed to a spawned ``Process``,
arrives as a tensor over the same shared memory (Note [Tensors between processes] in
``reductions.py``). ``Tensor.share_memory_()`` moves a tensor there in place
(``Module.share_memory()`` every parameter and buffer of a model) and ``Tensor.is_shared()``
tells; writes to a tensor shared that way are seen by every process that received it (Hogwild
training). The one sharing strategy is PyTorch's default on Linux, "file_descriptor".
"""

import multiprocessing
from multiprocessing import *  # noqa: F401,F403

from ember.multiprocessing.reductions import init_reductions

__all__ = ["get_all_sharing_strategies", "get_sharing_strategy", "set_sharing_strategy"]
__all__ += multiprocessing.__all__  # type: ignore[attr-defined]

_STRATEGIES = frozenset({"file_descriptor"})


def get_all_sharing_strategies() -> set:
    """The sharing strategies Ember offers: {"file_descriptor"}."""
    return set(_STRATEGIES)


def get_sharing_strategy() -> str:
    """How tensors are shared between processes: "file_descriptor" (memfd-backed memory)."""
    return "file_descriptor"


def set_sharing_strategy(new_strategy: str) -> None:
    """Sets the sharing strategy; only "file_descriptor" exists in Ember."""
    if new_strategy not in _STRATEGIES:
        raise ValueError(f"[multiprocessing] unknown sharing strategy '{new_strategy}': Ember "
                         f"shares tensors through file descriptors only ('file_descriptor')")


init_reductions()
