"""Data-parallel training across processes (torch.nn.parallel).

``DistributedDataParallel(module)`` is Ember's C++ module (``ember._C.distributed``): it
starts every replica from rank 0's parameters and buffers and, after each backward, leaves the
average of all ranks' gradients in every parameter's ``.grad``, all-reducing buckets of
gradients while backward still runs. Any ``ember.nn.Module`` can be wrapped, a Python subclass
included; ``ddp.module`` is the wrapped object and ``with ddp.no_sync():`` accumulates gradients
locally. Initialize a process group first (``ember.distributed.init_process_group``).
"""

from typing import Any, Optional, Sequence

from ember._C.distributed import DistributedDataParallel  # noqa: F401
from ember._C.nn import Module

__all__ = ["DataParallel", "DistributedDataParallel"]


class DataParallel(Module):
    """torch.nn.DataParallel's interface: the wrapped module as ``.module`` (so the state dict's
    keys start with ``module.``), called with the inputs moved to ``device_ids[0]``. Ember runs it
    on that one device: PyTorch's replication over several GPUs in one process is not done (use
    DistributedDataParallel), and asking for more than one device is an error rather than a
    silent difference. With no accelerator, as in PyTorch, the module is called as it is."""

    def __init__(self, module: Module, device_ids: Optional[Sequence[Any]] = None,
                 output_device: Any = None, dim: int = 0) -> None:
        super().__init__()
        import ember
        self.module = module
        self.dim = dim
        if not ember.cuda.is_available():
            self.device_ids: list = []
            self.output_device = None
            self.src_device_obj = None
            return
        if device_ids is None:
            device_ids = list(range(ember.cuda.device_count()))[:1]
        self.device_ids = [ember.device(d if not isinstance(d, int) else f"cuda:{d}")
                           for d in device_ids]
        if len(self.device_ids) > 1:
            raise ember.NotImplementedError(
                f"[nn.DataParallel] runs a module on one device: got device_ids "
                f"{list(device_ids)} (use DistributedDataParallel, one process per device)")
        self.output_device = self.device_ids[0] if output_device is None else output_device
        self.src_device_obj = self.device_ids[0]

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        import ember
        device = self.src_device_obj

        def move(x: Any) -> Any:
            if isinstance(x, ember.Tensor):
                return x.to(device)
            if isinstance(x, (list, tuple)):
                return type(x)(move(v) for v in x)
            if isinstance(x, dict):
                return {k: move(v) for k, v in x.items()}
            return x

        return self.module(*move(inputs), **move(kwargs))
