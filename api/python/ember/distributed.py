"""Process groups and collectives across processes (torch.distributed).

Start one process per rank (``ember run``, torchrun, or your own launcher setting MASTER_ADDR,
MASTER_PORT, RANK and WORLD_SIZE), then::

    import ember.distributed as dist
    dist.init_process_group("gloo")
    dist.all_reduce(t, op=dist.ReduceOp.SUM)

Every call that waits for other processes releases the GIL; a peer that died or did not answer
within the group's timeout raises ``ember.DistributedError`` (a RuntimeError) naming it, and the
group is unusable afterwards (destroy it and initialize a new one). A process has one group, the
default one: ``group=`` takes None or that group. The bytes move through a communication backend
plugin: ``gloo`` (CPU tensors), ``nccl`` (CUDA tensors), ``mpi`` (under mpirun). See
ARCHITECTURE.md, "Distributed".
"""

from ember._C import distributed as _native
from ember._C.distributed import (  # noqa: F401
    ProcessGroup,
    ReduceOp,
    Work,
    all_gather,
    all_gather_into_tensor,
    all_reduce,
    all_to_all,
    all_to_all_single,
    available_backends,
    barrier,
    broadcast,
    destroy_process_group,
    get_backend,
    get_rank,
    get_world_size,
    init_process_group,
    irecv,
    is_backend_available,
    is_initialized,
    isend,
    recv,
    reduce_scatter,
    reduce_scatter_tensor,
    send,
)


class Backend:
    """The names of the communication backends, as init_process_group takes them."""

    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"


class _GroupNames(type):
    @property
    def WORLD(cls):  # noqa: N802 (PyTorch's name)
        """The default group while one is initialized, else None."""
        return _native.default_group() if _native.is_initialized() else None


class group(metaclass=_GroupNames):  # noqa: N801 (PyTorch's name)
    """torch.distributed.group: ``group.WORLD`` is the default process group (or None)."""


def is_available() -> bool:
    """True if a communication backend plugin is loaded (gloo, nccl or mpi)."""
    return bool(available_backends())


def is_gloo_available() -> bool:
    """True if the gloo backend is loaded and usable."""
    return is_backend_available(Backend.GLOO)


def is_nccl_available() -> bool:
    """True if the nccl backend is loaded and usable (it needs a GPU)."""
    return is_backend_available(Backend.NCCL)


def is_mpi_available() -> bool:
    """True if the mpi backend is loaded and usable (the process runs under mpirun or srun)."""
    return is_backend_available(Backend.MPI)


__all__ = [name for name in dir() if not name.startswith("_")]
