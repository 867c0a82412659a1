"""Tensors between processes through shared memory (torch.multiprocessing.reductions):
Tensor.share_memory_ and is_shared, and the reduction multiprocessing's pickler uses for tensors.
"""

import array
import itertools
import os
import socket
import struct
import tempfile
import threading
from multiprocessing import context, reduction, util
from typing import List, Sequence, Tuple

from ember import _C
from ember._C import Parameter, Tensor
from ember._C.nn import Module
from ember.autograd.grad_mode import no_grad

__all__ = ["init_reductions", "rebuild_tensor", "recv_with_fds", "reduce_tensor", "send_with_fds"]

# Note [Tensors between processes]
# A CPU tensor pickled by multiprocessing (its queues and pipes, a spawned Process's arguments, a
# DataLoader worker's batches) travels as a file descriptor of shared memory and its layout,
# never as its bytes:
# - A tensor in memory that share_memory_() made (or a receiver of such a tensor) is sent as the
#   fd of that segment, the byte offset of its first element, its sizes and strides: the receiver
#   maps the same memory, so each process sees the others' writes (Hogwild).
# - Any other tensor is copied once into a new segment made for the message; only the receiver
#   maps it, and it closes the fd at once, so the batches a DataLoader delivers hold no file
#   descriptors (a process may open about a thousand). Such a tensor is_shared(); sent on, it is
#   copied again.
# The receiver maps the segment and wraps it without a copy (Note [Tensors over shared memory] in
# api/python/src/interop.cpp); the mapping lives as long as any tensor over it. Segments are
# memfds, anonymous files the kernel frees with their last fd or mapping: nothing is named in
# /dev/shm, so no process, even one killed, leaves a segment behind. How the fd travels:
# - send_with_fds/recv_with_fds (the DataLoader's workers, over a socket Connection): beside the
#   message, as SCM_RIGHTS; the kernel holds them in flight, so the sender may exit (or be
#   killed) before the message is read, and a message never read frees them with the socket.
# - Any other channel: multiprocessing's DupFd. A spawned child inherits it (a duplicate, open
#   as long as the child's Process object); any other receiver
#   fetches it from the sender's resource sharer while unpickling, so the sender must still be
#   alive then (as with PyTorch's "file_descriptor" strategy).
# Tensors off the CPU are pickled as copies (Tensor.__reduce_ex__); a non-leaf that requires
# grad is refused, as PyTorch does, since its history cannot cross.
# share_memory_() rebinds the tensor it is called on to the shared copy (Tensor.data); other
# views of its old memory keep that memory.


def _anonymous_fd() -> int:
    if hasattr(os, "memfd_create"):
        return os.memfd_create("ember-tensor", os.MFD_CLOEXEC)
    fd, path = tempfile.mkstemp(prefix="ember-tensor-")
    os.unlink(path)
    return fd


def _contiguous_strides(sizes: Sequence[int]) -> Tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(sizes):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _shared_copy(t: Tensor, keep_fd: bool) -> Tuple[Tensor, int]:
    """A contiguous copy of `t` in a new segment, and the segment's fd (owned by the copy's
    mapping if `keep_fd`, else the caller's to close)."""
    size = max(t.numel() * t.element_size(), 1)
    fd = _anonymous_fd()
    try:
        os.ftruncate(fd, size)
        sizes = tuple(t.shape)
        copy = _C._map_shared(fd, size, keep_fd, t.dtype, sizes, _contiguous_strides(sizes), 0)
    except BaseException:
        os.close(fd)
        raise
    try:
        with no_grad():
            copy.copy_(t.detach())
    except BaseException:
        if not keep_fd:
            os.close(fd)
        raise
    return copy, fd


def _is_shared(self: Tensor) -> bool:
    """True if the tensor's memory is shared between processes (share_memory_, or received
    through ember.multiprocessing)."""
    return _C._shared_segment(self) is not None


def _share_memory_(self: Tensor) -> Tensor:
    """Moves the tensor's data into shared memory (a no-op if it is there, or off the CPU), so
    that processes it is sent to see the same memory; returns self."""
    if self.device.type != "cpu":
        return self
    seg = _C._shared_segment(self)
    if seg is not None and seg[2] >= 0:
        return self
    copy, _ = _shared_copy(self, keep_fd=True)
    self.data = copy
    return self


class _PassedFd:
    """An fd that travels beside its message (send_with_fds), by its position there."""

    def __init__(self, index: int) -> None:
        self.index = index

    def detach(self) -> int:
        """Takes the fd out of the message being unpickled (recv_with_fds)."""
        fds = _passing.received
        fd, fds[self.index] = fds[self.index], -1
        if fd < 0:
            raise RuntimeError("[multiprocessing] a passed file descriptor was taken twice")
        return fd


_passing = threading.local()  # .sent: fds collected while pickling; .received: while unpickling


def _fd_ref(fd: int):
    """What a reduction carries for `fd`: a slot beside the message (send_with_fds) or DupFd."""
    sent = getattr(_passing, "sent", None)
    if sent is None:
        popen = context.get_spawning_popen()
        if popen is not None:  # a spawned child's argument: passed at exec, by this number
            fd = os.dup(fd)
            util.Finalize(popen, os.close, (fd,))
        return reduction.DupFd(fd)
    sent.append(os.dup(fd))
    return _PassedFd(len(sent) - 1)


_HEADER = struct.Struct("<I")
_FDS_PER_MESSAGE = 250  # the kernel passes at most 253 fds in one message (SCM_MAX_FD)


def send_with_fds(conn, obj) -> None:
    """Sends `obj` over a socket Connection, the fds of its tensors' segments beside it as
    SCM_RIGHTS (Note [Tensors between processes]). A pickling error sends nothing."""
    fds: List[int] = []
    _passing.sent = fds
    try:
        data = reduction.ForkingPickler.dumps(obj)
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    finally:
        _passing.sent = None
    try:
        conn.send_bytes(_HEADER.pack(len(fds)) + bytes(data))
        if fds:
            with socket.socket(fileno=os.dup(conn.fileno())) as s:
                for i in range(0, len(fds), _FDS_PER_MESSAGE):
                    chunk = array.array("i", fds[i:i + _FDS_PER_MESSAGE])
                    s.sendmsg([b"F"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, chunk)])
    finally:
        for fd in fds:
            os.close(fd)


def recv_with_fds(conn):
    """Receives what send_with_fds sent over the other end of `conn`."""
    data = conn.recv_bytes()
    (count,) = _HEADER.unpack_from(data)
    fds: List[int] = []
    if count:
        with socket.socket(fileno=os.dup(conn.fileno())) as s:
            for i in range(0, count, _FDS_PER_MESSAGE):
                expected = min(count - i, _FDS_PER_MESSAGE)
                msg, ancillary, _, _ = s.recvmsg(1, socket.CMSG_SPACE(expected * 4))
                for level, kind, payload in ancillary:
                    if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                        fds.extend(array.array("i", payload[:len(payload) - len(payload) % 4]))
                if msg != b"F":
                    break
        if len(fds) != count:
            for fd in fds:
                os.close(fd)
            raise EOFError(f"[multiprocessing] a message's {count} file descriptors did not "
                           f"arrive (got {len(fds)})")
    _passing.received = fds
    try:
        return reduction.ForkingPickler.loads(memoryview(data)[_HEADER.size:])
    finally:
        _passing.received = None
        for fd in fds:
            if fd >= 0:
                os.close(fd)


def rebuild_tensor(fd_ref, size: int, offset: int, dtype, sizes: Tuple[int, ...],
                   strides: Tuple[int, ...], requires_grad: bool, parameter: bool,
                   keep_fd: bool) -> Tensor:
    """A tensor over the shared segment `fd_ref` holds (Note [Tensors between processes])."""
    fd = fd_ref.detach()
    try:
        t = _C._map_shared(fd, size, keep_fd, dtype, sizes, strides, offset)
    except BaseException:
        os.close(fd)
        raise
    if not keep_fd:
        os.close(fd)
    if parameter:
        return Parameter(t, requires_grad)
    if requires_grad:
        t.requires_grad_(True)
    return t


def reduce_tensor(t: Tensor):
    """The reduction of a tensor for multiprocessing's pickler (Note [Tensors between
    processes])."""
    if t.requires_grad and not t.is_leaf:
        raise RuntimeError(
            "[multiprocessing] refusing to send a non-leaf tensor which requires grad: autograd "
            "cannot follow a tensor across processes (to send the data only, call detach() on "
            "the tensor before putting it on the queue)")
    if t.device.type != "cpu":
        return t.__reduce_ex__(2)
    meta = (t.dtype, tuple(t.shape), tuple(t.stride()), t.requires_grad,
            isinstance(t, Parameter))
    seg = _C._shared_segment(t)
    if seg is not None and seg[2] >= 0:
        start, size, fd = seg
        return rebuild_tensor, (_fd_ref(fd), size, t.data_ptr() - start, *meta, True)
    copy, fd = _shared_copy(t, keep_fd=False)
    try:
        fd_ref = _fd_ref(fd)
    finally:
        os.close(fd)
    size = max(copy.numel() * copy.element_size(), 1)
    del copy
    sizes = tuple(t.shape)
    return rebuild_tensor, (fd_ref, size, 0, meta[0], sizes, _contiguous_strides(sizes),
                            *meta[3:], False)


def _module_share_memory(self):
    """Moves every parameter and buffer of the module tree into shared memory
    (Tensor.share_memory_), for Hogwild training; returns self."""
    for t in itertools.chain(self.parameters(), self.buffers()):
        t.share_memory_()
    return self


def init_reductions() -> None:
    """Makes multiprocessing's pickler send tensors through shared memory, and gives Tensor its
    share_memory_() and is_shared(), and Module its share_memory()."""
    for cls in (Tensor, Parameter):
        reduction.ForkingPickler.register(cls, reduce_tensor)
    Tensor.share_memory_ = _share_memory_
    Tensor.is_shared = _is_shared
    Module.share_memory = _module_share_memory
