"""Data-parallel training across processes (torch.nn.parallel).

``DistributedDataParallel(module)`` is Ember's C++ module (``ember._C.distributed``): it
starts every replica from rank 0's parameters and buffers and, after each backward, leaves the
average of all ranks' gradients in every parameter's ``.grad``, all-reducing buckets of
gradients while backward still runs. Any ``ember.nn.Module`` can be wrapped, a Python subclass
included; ``ddp.module`` is the wrapped object and ``with ddp.no_sync():`` accumulates gradients
locally. Initialize a process group first (``ember.distributed.init_process_group``).
"""

from ember._C.distributed import DistributedDataParallel  # noqa: F401

__all__ = ["DistributedDataParallel"]
