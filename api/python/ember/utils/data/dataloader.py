"""DataLoader (torch.utils.data.dataloader): batches of a dataset, one epoch per iteration, made
ahead by worker processes (or, asked for, threads).

``num_workers > 0`` starts that many worker processes, as PyTorch's DataLoader does, through a
multiprocessing context (the platform's default start method unless ``multiprocessing_context``
names one); their batches come back through shared memory (Note [Tensors between processes] in
ember/multiprocessing/reductions.py) and are delivered in the order of ``num_workers=0`` (Note
[Worker processes]). ``worker_mode="thread"`` makes the batches on threads of this process
instead: Ember's ops and C++ datasets release the GIL, so threads overlap too, nothing is pickled,
and a dataset that cannot be pickled (under "spawn") still works; the batches are the same, in
the same order (Note [Ordered prefetching] in api/data/dataloader.cpp, which the map-style
threads follow).
"""

import atexit
import collections.abc
import itertools
import multiprocessing
import os
import pickle
import queue
import random
import signal
import sys
import threading
import time
import traceback
import warnings
import weakref
from multiprocessing import connection as _connection
from multiprocessing.context import BaseContext
from typing import Any, Callable, Dict, Generic, Iterable, List, Optional, Set, Tuple, TypeVar

from ember import _C
from ember._C import Generator, Tensor
from ember._C import data as _native
from ember.multiprocessing.reductions import recv_with_fds, send_with_fds
from ember.utils.data._collate import default_collate, default_convert
from ember.utils.data.dataset import Dataset, IterableDataset, _getitems, _native_batch
from ember.utils.data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

T_co = TypeVar("T_co", covariant=True)

__all__ = ["DataLoader", "WorkerInfo", "get_worker_info", "default_collate", "default_convert"]


class WorkerInfo:
    """What a worker knows about itself: ``id``, ``num_workers``, ``seed`` (the loader's base
    seed plus id) and ``dataset``. A worker process has its own copy of the dataset, and Ember's,
    Python's and (if imported) NumPy's default generators seeded from ``seed``; worker threads
    share the dataset object and the generators, so a thread wanting its own random stream makes
    an ember.Generator from ``seed``."""

    def __init__(self, id: int, num_workers: int, seed: int, dataset: Any) -> None:
        self.id = id
        self.num_workers = num_workers
        self.seed = seed
        self.dataset = dataset

    def __repr__(self) -> str:
        return f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed})"


_worker = threading.local()  # .info: the WorkerInfo of a worker thread
_process_worker_info: Optional[WorkerInfo] = None  # set in a worker process


def get_worker_info() -> Optional[WorkerInfo]:
    """The WorkerInfo of the calling DataLoader worker (process or thread); None outside
    workers."""
    info = getattr(_worker, "info", None)
    return info if info is not None else _process_worker_info


def _pin(batch):
    """`batch` with every tensor in pinned host memory."""
    if isinstance(batch, Tensor):
        return batch.pin_memory()
    if isinstance(batch, collections.abc.Mapping):
        pinned = {k: _pin(v) for k, v in batch.items()}
        try:
            return type(batch)(pinned)  # type: ignore[call-arg]
        except TypeError:
            return pinned
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(_pin(v) for v in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(_pin(v) for v in batch)
    return batch


class DataLoader(Generic[T_co]):
    """Iterates a dataset in batches: ``for x, y in DataLoader(dataset, batch_size=64,
    shuffle=True)``. As torch.utils.data.DataLoader:

    - ``num_workers > 0`` starts that many worker processes per epoch (once, with
      ``persistent_workers``) from ``multiprocessing_context`` (None: multiprocessing's default
      start method; "fork", "spawn", "forkserver" or a context object); they make up to
      ``num_workers * prefetch_factor`` batches ahead of the consumer and send them through shared
      memory. The batches and their order are those of ``num_workers=0``; an IterableDataset is
      iterated by every worker, which shards it through ``get_worker_info()``. An exception raised
      while making a batch is raised by the iterator at that batch, as the same type with the
      worker's traceback in its message; a worker that dies raises RuntimeError ("DataLoader
      worker (pid N) exited unexpectedly"); dropping the iterator (``break``), like interpreter
      exit, stops the workers, waiting a bounded time for them before terminating them;
      ``timeout`` (seconds) bounds the wait for one batch (RuntimeError). Under "spawn" and
      "forkserver" the dataset, ``collate_fn`` and ``worker_init_fn`` are pickled to the workers.
    - ``worker_mode="thread"`` (Ember's) makes the batches on that many threads of this process
      instead, for datasets that cannot be pickled or that work in C++ without the GIL: the same
      batches in the same order; an exception is raised at its batch as the same object.
      Dropping the iterator waits a bounded time for the threads to finish the batch in hand; a
      thread stuck in the dataset after a timeout is not waited for.
    - Ember's C++ datasets (TensorDataset, ember.datasets.MNIST and FashionMNIST, and Subsets of
      them) make each batch in one call without the GIL when ``collate_fn`` is the default;
      otherwise a dataset's ``__getitems__`` is called once per batch if it has one, else
      ``__getitem__`` once per sample.
    - ``worker_init_fn(worker_id)`` runs in each worker before its first batch (once per worker
      with ``persistent_workers``); ``get_worker_info()`` answers inside workers.
    - ``pin_memory`` delivers batches in pinned memory where a backend offers it (a warning and
      ordinary memory otherwise).
    - Shuffling draws from `generator`, or the default generator, so ember.manual_seed makes the
      epochs reproducible.
    """

    dataset: Dataset[T_co]
    batch_size: Optional[int]
    num_workers: int
    drop_last: bool
    timeout: float
    sampler: Any
    batch_sampler: Any
    prefetch_factor: Optional[int]

    def __init__(self, dataset: Dataset[T_co], batch_size: Optional[int] = 1,
                 shuffle: Optional[bool] = None, sampler: Optional[Iterable] = None,
                 batch_sampler: Optional[Iterable[List]] = None, num_workers: int = 0,
                 collate_fn: Optional[Callable[[Any], Any]] = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Optional[Callable[[int], None]] = None, *,
                 generator: Optional[Generator] = None, prefetch_factor: Optional[int] = None,
                 persistent_workers: bool = False, multiprocessing_context: Any = None,
                 worker_mode: str = "process") -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                             "make batches on the consuming thread")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified with worker threads: "
                             "let num_workers > 0, or set prefetch_factor to None")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and prefetch_factor <= 0:
            raise ValueError(f"prefetch_factor should be a positive integer, got {prefetch_factor}")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if worker_mode not in ("process", "thread"):
            raise ValueError(f"worker_mode should be 'process' or 'thread', got {worker_mode!r}")
        if multiprocessing_context is not None:
            if num_workers == 0 or worker_mode == "thread":
                raise ValueError("multiprocessing_context can only be used with multi-process "
                                 f"loading (num_workers > 0 and worker_mode='process'), but got "
                                 f"num_workers={num_workers}, worker_mode={worker_mode!r}")
            if isinstance(multiprocessing_context, str):
                methods = multiprocessing.get_all_start_methods()
                if multiprocessing_context not in methods:
                    raise ValueError("multiprocessing_context option should specify a valid start "
                                     f"method in {methods!r}, but got "
                                     f"multiprocessing_context={multiprocessing_context!r}")
                multiprocessing_context = multiprocessing.get_context(multiprocessing_context)
            elif not isinstance(multiprocessing_context, BaseContext):
                raise TypeError("multiprocessing_context option should be a valid context object "
                                "or a string specifying the start method, but got "
                                f"multiprocessing_context={multiprocessing_context!r}")

        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            for name, value in (("shuffle", shuffle), ("sampler", sampler),
                                ("batch_sampler", batch_sampler)):
                if value not in (None, False):
                    raise ValueError(f"DataLoader with IterableDataset: expected unspecified {name} "
                                     f"option, but got {name}={value}")
        else:
            shuffle = bool(shuffle)
            if shuffle and sampler is not None:
                raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if not self._iterable:
            if sampler is None:
                sized: Any = dataset
                sampler = RandomSampler(sized, generator=generator) if shuffle else \
                    SequentialSampler(sized)
            if batch_size is not None and batch_sampler is None:
                batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.collate_fn = collate_fn if collate_fn is not None else (
            default_collate if self._auto_collation else default_convert)
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.generator = generator
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        self.multiprocessing_context = multiprocessing_context
        self.worker_mode = worker_mode
        self._workers_initialized: Set[int] = set()
        self._iterator: Optional[_ProcessIter] = None  # the persistent workers' iterator

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None or (self._iterable and self.batch_size is not None)

    def __len__(self) -> int:
        if self._iterable:
            n = len(self.dataset)  # type: ignore[arg-type]
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        return len(self.sampler)

    def __iter__(self) -> "_LoaderIter":
        if self.num_workers == 0:
            return _LoaderIter(self)
        if self.worker_mode == "thread":
            return _IterableWorkers(self) if self._iterable else _MapWorkers(self)
        if not self.persistent_workers:
            return _ProcessIter(self)
        if self._iterator is None or self._iterator._shut:
            self._iterator = _ProcessIter(self)
        else:
            self._iterator._reset(first=False)
        return self._iterator

    # What one worker (or the consumer, with no workers) runs to make a batch.

    def _map_fetcher(self) -> Callable[[Any], Any]:
        """Makes the batch of one task of the batch sampler (or sample of the sampler)."""
        fetch = _map_fetch(self.dataset, self.collate_fn, self._auto_collation)
        return (lambda task: _pin(fetch(task))) if self._pin() else fetch

    def _iterable_fetcher(self) -> Callable[[Any], Any]:
        """Makes the next batch from an iterator over the dataset; StopIteration at its end."""
        fetch = _iterable_fetch(self.collate_fn, self.batch_size, self.drop_last)
        return (lambda it: _pin(fetch(it))) if self._pin() else fetch

    def _pin(self, stacklevel: int = 5) -> bool:
        """Whether to pin batches: pin_memory, where a backend offers pinned memory (else a
        warning, attributed to the loop that iterates the loader)."""
        if not self.pin_memory:
            return False
        if _native._pin_memory_available():
            return True
        warnings.warn("DataLoader: pin_memory=True but no loaded backend with a device offers "
                      "pinned memory (no GPU?): batches stay in ordinary memory",
                      stacklevel=stacklevel)
        return False

    def _base_seed(self) -> int:
        return int(_C.randint(0, 2**62, (), generator=self.generator).item())

    def _context(self) -> BaseContext:
        ctx = self.multiprocessing_context
        return ctx if ctx is not None else multiprocessing.get_context()

    def _init_worker(self, worker_id: int, seed: int) -> None:
        """Runs in worker thread `worker_id` before its first batch."""
        _worker.info = WorkerInfo(worker_id, self.num_workers, seed + worker_id, self.dataset)
        if self.worker_init_fn is not None:
            if self.persistent_workers:
                if worker_id in self._workers_initialized:
                    return
                self._workers_initialized.add(worker_id)
            self.worker_init_fn(worker_id)


def _map_fetch(dataset: Any, collate: Callable, auto_collation: bool) -> Callable[[Any], Any]:
    """Makes the batch of one task of the batch sampler (or sample of the sampler): in one native
    call for Ember's C++ datasets with the default collate_fn, else through __getitems__ or
    __getitem__."""
    if not auto_collation:
        return lambda index: collate(dataset[index])
    native = _native_batch(dataset) if collate is default_collate else None
    getitems = _getitems(dataset)
    if native is not None:
        return native
    if getitems is not None:
        return lambda indices: collate(getitems(indices))
    return lambda indices: collate([dataset[i] for i in indices])


def _iterable_fetch(collate: Callable, size: Optional[int], drop_last: bool) -> Callable[[Any], Any]:
    """Makes the next batch from an iterator over the dataset; StopIteration at its end."""

    def fetch(it):
        if size is None:
            return collate(next(it))
        items = list(itertools.islice(it, size))
        if not items or (drop_last and len(items) < size):
            raise StopIteration
        return collate(items)

    return fetch


class _LoaderIter:
    """One epoch of a DataLoader without workers: batches made on the consuming thread."""

    def __init__(self, loader: DataLoader) -> None:
        self._loader = loader
        loader._base_seed()  # as PyTorch does: advances the generator as an epoch with workers
        if loader._iterable:
            self._source = iter(loader.dataset)
            self._fetch = loader._iterable_fetcher()
        else:
            self._source = iter(loader.batch_sampler if loader._auto_collation else loader.sampler)
            self._fetch = loader._map_fetcher()

    def __iter__(self) -> "_LoaderIter":
        return self

    def __len__(self) -> int:
        return len(self._loader)

    def __next__(self) -> Any:
        if self._loader._iterable:
            return self._fetch(self._source)
        return self._fetch(next(self._source))


class _Shared:
    """What worker threads and the consumer share; workers never refer to the iterator, so
    dropping the iterator (``break``) runs its __del__, which stops them."""

    def __init__(self, num_workers: int) -> None:
        self.cond = threading.Condition()
        self.stop = False
        self.fatal: Optional[BaseException] = None  # a worker_init_fn failed
        self.started = threading.Barrier(num_workers)


def _note(e: BaseException, where: str) -> BaseException:
    if hasattr(e, "add_note"):
        e.add_note(f"(raised in {where})")
    return e


def _start_worker(state: _Shared, worker_id: int, loader: DataLoader, seed: int) -> bool:
    """Sets up a worker thread; False if any worker's worker_init_fn failed (recorded in
    state.fatal). Workers start on batches only once all are set up, so such a failure is
    raised by the first next(), whatever the timing."""
    try:
        loader._init_worker(worker_id, seed)
    except BaseException as e:  # noqa: B036 (delivered to the consumer)
        with state.cond:
            if state.fatal is None:
                state.fatal = _note(e, f"worker_init_fn of DataLoader worker {worker_id}")
            state.cond.notify_all()
    state.started.wait()
    return state.fatal is None


# Note [Worker threads at exit]
# Workers are daemon threads, so a loader never keeps the interpreter alive, but a daemon thread
# still running when the interpreter finalizes is stopped wherever it next takes the GIL: inside
# an op that released it (a C++ frame), or joined by an iterator's __del__ run during
# finalization, which waits forever for a thread that can no longer end. An iterator alive at
# exit (a global, or one held by the traceback of an exception that ended the script) aborted or
# hung in about half the runs. So every live threaded iterator is in `_live` (with the worker
# processes of the others: Note [Worker processes]), and an atexit handler (which runs before
# finalization, after the non-daemon threads were joined) stops them all and gives their workers
# up to _SHUTDOWN_WAIT seconds in total to finish the batch in hand, as PyTorch's shutdown waits
# up to its status interval for worker processes. Shutdown never
# waits longer than that for a worker: one stuck in a dataset (what a timeout reports) is left to
# end by itself, a daemon that exits once its batch is done; after a timeout nothing waits at all.
# During finalization, or on a worker thread (the collector), shutdown only signals.
_SHUTDOWN_WAIT = 5.0
_live: "weakref.WeakSet[Any]" = weakref.WeakSet()  # _ThreadedIter and _ProcessIter
_exiting = False


def _shutdown_at_exit() -> None:
    global _exiting
    _exiting = True
    deadline = time.monotonic() + _SHUTDOWN_WAIT
    for it in list(_live):
        it._shutdown(deadline)


atexit.register(_shutdown_at_exit)


class _ThreadedIter(_LoaderIter):
    """Worker threads, the wait for a batch with the loader's timeout, and shutdown (Note [Worker
    threads at exit])."""

    def __init__(self, loader: DataLoader, state: _Shared, work: Callable) -> None:
        self._loader = loader
        self._state = state
        self._timeout = loader.timeout if loader.timeout > 0 else None
        self._timed_out = False
        seed = loader._base_seed()
        self._threads = [threading.Thread(target=work, args=(state, w, loader, seed), daemon=True,
                                          name=f"ember-DataLoader-worker-{w}")
                         for w in range(loader.num_workers)]
        _live.add(self)
        for t in self._threads:
            t.start()

    def _wait(self, ready: Callable[[], bool]) -> None:
        """Waits (holding the condition) until `ready()`; raises a worker_init_fn's error or,
        past the timeout, RuntimeError."""
        s = self._state
        if not s.cond.wait_for(lambda: s.fatal is not None or ready(), timeout=self._timeout):
            self._timed_out = True
            raise RuntimeError(f"DataLoader timed out after {self._loader.timeout} seconds")
        if s.fatal is not None:
            raise s.fatal

    def _shutdown(self, deadline: Optional[float] = None) -> None:
        """Stops the workers and waits for them until `deadline` (time.monotonic(); by default
        _SHUTDOWN_WAIT from now), not at all after a timeout, during finalization or on a worker
        thread (by the collector)."""
        s = self._state
        with s.cond:
            s.stop = True
            s.cond.notify_all()
        threads, self._threads = self._threads, []
        _live.discard(self)
        if (self._timed_out or _exiting and deadline is None or sys.is_finalizing()
                or threading.current_thread() in threads):
            return
        if deadline is None:
            deadline = time.monotonic() + _SHUTDOWN_WAIT
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))

    def __del__(self) -> None:
        if getattr(self, "_threads", None):
            self._shutdown()


class _MapState(_Shared):
    """Note [Ordered prefetching]: workers claim task numbers in order, within `capacity` of the
    consumer's position; results wait in `ready` by number."""

    def __init__(self, tasks, fetch, num_workers: int, capacity: int) -> None:
        super().__init__(num_workers)
        self.tasks = tasks
        self.fetch = fetch
        self.capacity = capacity
        self.next_claim = 0
        self.position = 0
        self.end: Optional[int] = None  # the number of batches, once the tasks ran out
        self.ready: Dict[int, Tuple[bool, Any]] = {}


def _map_work(state: _MapState, worker_id: int, loader: DataLoader, seed: int) -> None:
    if not _start_worker(state, worker_id, loader, seed):
        return
    while True:
        with state.cond:
            state.cond.wait_for(lambda: state.stop or state.end is not None
                                or state.next_claim < state.position + state.capacity)
            if state.stop or state.end is not None:
                return
            b = state.next_claim
            try:
                task = next(state.tasks)
            except StopIteration:
                state.end = b
                state.cond.notify_all()
                return
            except BaseException as e:  # noqa: B036 (the sampler failed: delivered at batch b)
                state.ready[b] = (False, _note(e, "the DataLoader's sampler"))
                state.end = b + 1
                state.cond.notify_all()
                return
            state.next_claim += 1
        try:
            result = (True, state.fetch(task))
        except BaseException as e:  # noqa: B036 (delivered to the consumer at batch b)
            result = (False, _note(e, f"DataLoader worker {worker_id}, batch {b}"))
        with state.cond:
            state.ready[b] = result
            state.cond.notify_all()


class _MapWorkers(_ThreadedIter):
    """One epoch of a map-style dataset made by worker threads."""

    _state: _MapState

    def __init__(self, loader: DataLoader) -> None:
        assert loader.prefetch_factor is not None
        tasks = iter(loader.batch_sampler if loader._auto_collation else loader.sampler)
        state = _MapState(tasks, loader._map_fetcher(), loader.num_workers,
                          loader.num_workers * loader.prefetch_factor)
        super().__init__(loader, state, _map_work)

    def __next__(self) -> Any:
        s = self._state
        with s.cond:
            b = s.position
            self._wait(lambda: b in s.ready or (s.end is not None and b >= s.end))
            result = s.ready.pop(b, None)
            if result is not None:
                s.position += 1
                s.cond.notify_all()
        if result is None:
            self._shutdown()
            raise StopIteration
        ok, value = result
        del result
        if not ok:
            try:
                raise value
            finally:
                del value  # no cycle through this frame: the iterator stays collectable
        return value


class _IterableState(_Shared):
    """Each worker iterates its own iter(dataset) into its own queue of at most `capacity`
    batches; the consumer takes them round-robin, as PyTorch's workers are asked."""

    _END = object()

    def __init__(self, dataset, fetch, num_workers: int, capacity: int) -> None:
        super().__init__(num_workers)
        self.dataset = dataset
        self.fetch = fetch
        self.capacity = capacity
        self.queues: List[List[Any]] = [[] for _ in range(num_workers)]


def _iterable_work(state: _IterableState, worker_id: int, loader: DataLoader, seed: int) -> None:
    queue = state.queues[worker_id]
    if not _start_worker(state, worker_id, loader, seed):
        return
    try:
        it = iter(state.dataset)
    except BaseException as e:  # noqa: B036
        it, first_error = None, e
    n = 0
    item: Any
    while True:
        with state.cond:
            state.cond.wait_for(lambda: state.stop or len(queue) < state.capacity)
            if state.stop:
                return
        if it is None:
            item, done = (False, _note(first_error, f"DataLoader worker {worker_id}")), True
        else:
            try:
                item, done = (True, state.fetch(it)), False
            except StopIteration:
                item, done = _IterableState._END, True
            except BaseException as e:  # noqa: B036 (delivered in the worker's turn)
                item, done = (False, _note(e, f"DataLoader worker {worker_id}, batch {n}")), False
        with state.cond:
            queue.append(item)
            if done and item is not _IterableState._END:
                queue.append(_IterableState._END)
            state.cond.notify_all()
        if done:
            return
        n += 1


class _IterableWorkers(_ThreadedIter):
    """One pass over an IterableDataset by worker threads."""

    _state: _IterableState

    def __init__(self, loader: DataLoader) -> None:
        assert loader.prefetch_factor is not None
        state = _IterableState(loader.dataset, loader._iterable_fetcher(), loader.num_workers,
                               loader.prefetch_factor)
        self._active = list(range(loader.num_workers))
        self._turn = 0
        super().__init__(loader, state, _iterable_work)

    def __next__(self) -> Any:
        s = self._state
        while self._active:
            with s.cond:
                queue = s.queues[self._active[self._turn]]
                self._wait(lambda: bool(queue))
                item = queue.pop(0)
                s.cond.notify_all()
            if item is _IterableState._END:
                del self._active[self._turn]
                if self._active:
                    self._turn %= len(self._active)
                continue
            self._turn = (self._turn + 1) % len(self._active)
            ok, value = item
            del item
            if not ok:
                try:
                    raise value
                finally:
                    del value  # no cycle through this frame: the iterator stays collectable
            return value
        self._shutdown()
        raise StopIteration


# ------------------------------------------------------------------------------------------------
# Worker processes

# Note [Worker processes]
# As PyTorch's DataLoader: each worker process reads tasks (batch number, indices) from its own
# queue and answers on its own socket Connection, the batch's tensors in shared memory with their
# fds beside the message (send_with_fds: Note [Tensors between processes]). The consumer keeps at
# most num_workers * prefetch_factor tasks out, given round-robin to the workers still active,
# and delivers the answers by batch number, so the batches and their order are those of
# num_workers=0 for a map-style dataset. Each worker of an IterableDataset iterates its own
# iter(dataset); its task's answer is its next batch, or _IterationEnd, after which it is given
# no tasks (PyTorch's order: one batch from each active worker in turn). An exception is sent as
# its type and traceback text and raised again by the consumer at its batch. The consumer waits
# on the Connections and on the workers' sentinels together: a worker that dies (killed, or
# os._exit in the dataset) is seen at once, and raises RuntimeError naming its pid and how it
# ended, never a hang; `timeout` bounds each wait. Shutdown (the epoch's end, the iterator
# dropped, a worker's death, interpreter exit: Note [Worker threads at exit], whose registry and
# bound it shares) puts None on every queue and closes the Connections (a worker whose next
# send fails exits), joins the workers for up to _SHUTDOWN_WAIT (not at all after a timeout or
# during finalization), then terminates, and if need be kills, those still alive (one stuck in
# the dataset, or blocked sending to a socket a sibling forked later still holds open): no
# process outlives its iterator, and since segments are memfds, no memory does either. An
# idle worker also exits when its parent is gone. Workers run Ember's ops on one thread and
# ignore SIGINT (the consumer gets ^C and shuts them down), as PyTorch's do.
_STATUS_INTERVAL = 1.0  # how often an idle worker checks that its parent is alive


class _IterationEnd:
    """A worker's answer once its iterator over an IterableDataset is exhausted."""

    def __init__(self, worker_id: int) -> None:
        self.worker_id = worker_id


class _ResumeIteration:
    """Tells a persistent worker that a new epoch starts (answered with itself)."""


class _KeyErrorMessage(str):
    """A KeyError's message printed as is (KeyError quotes its argument)."""

    def __repr__(self) -> str:
        return self


class _ExceptionWrapper:
    """An exception raised in a worker process: its type and traceback text."""

    def __init__(self, exc: BaseException, where: str) -> None:
        exc_type = type(exc)
        try:
            pickle.dumps(exc_type)
        except Exception:  # a class the consumer cannot load (defined in a function)
            exc_type = RuntimeError
        self.exc_type = exc_type
        self.where = where
        self.text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))

    def reraise(self) -> None:
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.text}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        try:
            exception = self.exc_type(msg)
        except Exception:  # a type whose constructor wants other arguments
            raise RuntimeError(msg) from None
        try:
            raise exception
        finally:
            del exception  # no cycle through this frame: the iterator stays collectable


class _WorkerSpec:
    """What a worker process needs to make batches; pickled to it under spawn and forkserver."""

    def __init__(self, loader: DataLoader) -> None:
        self.dataset = loader.dataset
        self.iterable = loader._iterable
        self.auto_collation = loader._auto_collation
        self.collate_fn = loader.collate_fn
        self.batch_size = loader.batch_size
        self.drop_last = loader.drop_last
        self.worker_init_fn = loader.worker_init_fn
        self.num_workers = loader.num_workers

    def fetcher(self) -> Callable[[Any], Any]:
        """Makes the batch of a task (map-style), or the next batch of a new iterator."""
        if not self.iterable:
            return _map_fetch(self.dataset, self.collate_fn, self.auto_collation)
        fetch = _iterable_fetch(self.collate_fn, self.batch_size, self.drop_last)
        it = iter(self.dataset)
        return lambda _: fetch(it)


def _seed_worker(seed: int) -> None:
    _C.manual_seed(seed)
    random.seed(seed)
    np = sys.modules.get("numpy")
    if np is not None:
        np.random.seed(seed % 2**32)


def _process_worker(spec: _WorkerSpec, tasks: Any, conn: Any, worker_id: int, seed: int) -> None:
    """The loop of worker process `worker_id` (Note [Worker processes])."""
    global _process_worker_info
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = os.getppid()
    _C.set_num_threads(1)
    _seed_worker(seed + worker_id)
    _process_worker_info = WorkerInfo(worker_id, spec.num_workers, seed + worker_id, spec.dataset)
    where = f"in DataLoader worker process {worker_id}"
    failed: Optional[_ExceptionWrapper] = None  # worker_init_fn or iter(dataset) raised
    fetch: Optional[Callable[[Any], Any]] = None
    try:
        if spec.worker_init_fn is not None:
            spec.worker_init_fn(worker_id)
        fetch = spec.fetcher()
    except Exception as e:
        failed = _ExceptionWrapper(e, where)
    ended = False
    while True:
        try:
            r = tasks.get(timeout=_STATUS_INTERVAL)
        except queue.Empty:
            if os.getppid() != parent:
                return
            continue
        if r is None:
            return
        if isinstance(r, _ResumeIteration):
            ended = False
            if failed is None:
                try:
                    fetch = spec.fetcher()
                except Exception as e:
                    failed = _ExceptionWrapper(e, where)
            answer: Any = (r, None)
        elif ended:
            continue  # sent before the consumer knew this worker's iterator had ended
        else:
            idx, task = r
            if failed is not None:
                data: Any = failed
            else:
                try:
                    data = fetch(task)  # type: ignore[misc]
                except StopIteration as e:
                    data = _IterationEnd(worker_id) if spec.iterable else _ExceptionWrapper(e, where)
                    ended = spec.iterable
                except Exception as e:
                    data = _ExceptionWrapper(e, where)
            answer = (idx, data)
            del data
        try:
            send_with_fds(conn, answer)
        except (OSError, EOFError):
            return  # the consumer closed its end: shutdown
        except Exception as e:  # the batch cannot be pickled
            send_with_fds(conn, (answer[0], _ExceptionWrapper(e, where)))
        del answer


class _Workers:
    """An iterator's worker processes, their task queues and Connections; stopped by the
    iterator's finalizer, which holds this (never the iterator), so that none of it is part of
    a garbage cycle through the iterator whose objects Python may finalize first."""

    def __init__(self) -> None:
        self.owner = os.getpid()
        self.processes: List[Any] = []
        self.tasks: List[Any] = []
        self.conns: List[Any] = []  # None once closed
        self.timed_out = False  # shutdown does not wait for a worker after a timeout
        self.shut = False

    def _shutdown(self, deadline: Optional[float] = None) -> None:
        """Stops the workers (Note [Worker processes]); waits for them until `deadline`
        (time.monotonic(); by default _SHUTDOWN_WAIT from now), then terminates them."""
        if self.shut:
            return
        self.shut = True
        _live.discard(self)
        if os.getpid() != self.owner:  # a copy in a forked child
            return
        for q in self.tasks:
            try:
                q.put(None)
            except Exception:  # noqa: S110 (a closed queue: the worker is told by its socket)
                pass
        for c in self.conns:
            if c is not None:
                c.close()
        self.conns = [None] * len(self.conns)
        started = [p for p in self.processes if p.pid is not None]
        wait = not (self.timed_out or sys.is_finalizing() or (_exiting and deadline is None))
        if deadline is None:
            deadline = time.monotonic() + _SHUTDOWN_WAIT
        for p in started:
            if wait:
                p.join(max(0.0, deadline - time.monotonic()))
        for p in started:
            if p.is_alive():
                p.terminate()
        for p in started:
            p.join(1.0)
            if p.is_alive():
                p.kill()
                p.join()
        for q in self.tasks:
            q.close()


class _ProcessIter(_LoaderIter):
    """One epoch (or, with persistent_workers, every epoch) of worker processes (Note [Worker
    processes])."""

    def __init__(self, loader: DataLoader) -> None:
        assert loader.prefetch_factor is not None
        self._loader = loader
        self._failure: Optional[str] = None
        self._pin = loader._pin(stacklevel=4)
        seed = loader._base_seed()
        ctx = loader._context()
        spec = _WorkerSpec(loader)
        procs = self._procs = _Workers()
        self._stop = weakref.finalize(self, procs._shutdown)
        self._stop.atexit = False  # _shutdown_at_exit stops them, within one bound for all
        _live.add(procs)
        self._workers, self._tasks = procs.processes, procs.tasks
        try:
            for w in range(loader.num_workers):
                tasks = ctx.Queue()
                tasks.cancel_join_thread()
                ours, theirs = ctx.Pipe(duplex=True)
                p = ctx.Process(target=_process_worker, args=(spec, tasks, theirs, w, seed),
                                name=f"ember-DataLoader-worker-{w}", daemon=True)
                procs.processes.append(p)
                procs.tasks.append(tasks)
                procs.conns.append(ours)
                try:
                    p.start()
                finally:
                    theirs.close()
        except BaseException as e:
            self._shutdown()
            if isinstance(e, (pickle.PicklingError, AttributeError, TypeError)) and \
                    hasattr(e, "add_note"):
                e.add_note("(DataLoader: under the 'spawn' and 'forkserver' start methods the "
                           "dataset, collate_fn and worker_init_fn are pickled to the worker "
                           "processes; define them at module level, or pass "
                           "multiprocessing_context='fork' or worker_mode='thread')")
            raise
        self._reset(first=True)

    def _reset(self, first: bool) -> None:
        """Starts an epoch: the sampler's tasks, up to the prefetch window, to the workers."""
        loader = self._loader
        n = loader.num_workers
        self._tasks_of: Any = itertools.repeat(None) if loader._iterable else \
            iter(loader.batch_sampler if loader._auto_collation else loader.sampler)
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info: Dict[int, List[Any]] = {}  # batch number -> [worker] or [worker, answer]
        self._active = [True] * n
        self._cycle = itertools.cycle(range(n))
        if not first:
            for q in self._tasks:
                q.put(_ResumeIteration())
            waiting = n
            while waiting:  # the previous epoch's answers, if it was left early, come first
                idx, _ = self._get()
                if isinstance(idx, _ResumeIteration):
                    waiting -= 1
        for _ in range(loader.num_workers * loader.prefetch_factor):  # type: ignore[operator]
            self._put_task()

    def _put_task(self) -> None:
        try:
            task = next(self._tasks_of)
        except StopIteration:
            return
        for _ in range(len(self._workers)):
            w = next(self._cycle)
            if self._active[w]:
                break
        else:
            return
        self._tasks[w].put((self._send_idx, task))
        self._task_info[self._send_idx] = [w]
        self._send_idx += 1

    def __next__(self) -> Any:
        if self._failure is not None:
            raise RuntimeError(self._failure)
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None and (len(info) == 2 or self._active[info[0]]):
                    break
                self._task_info.pop(self._rcvd_idx, None)  # an ended worker's task
                self._rcvd_idx += 1
            else:
                if not self._loader.persistent_workers:
                    self._shutdown()
                raise StopIteration
            info = self._task_info[self._rcvd_idx]
            if len(info) == 2:
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
                return self._deliver(info[1])
            idx, data = self._get()
            if isinstance(data, _IterationEnd):
                self._active[data.worker_id] = False
                self._put_task()
                continue
            if isinstance(idx, _ResumeIteration) or idx not in self._task_info:
                continue
            if idx != self._rcvd_idx:
                self._task_info[idx].append(data)
                continue
            del self._task_info[idx]
            self._rcvd_idx += 1
            return self._deliver(data)

    def _deliver(self, data: Any) -> Any:
        self._put_task()
        if isinstance(data, _ExceptionWrapper):
            data.reraise()
        return _pin(data) if self._pin else data

    def _get(self) -> Tuple[Any, Any]:
        """The next answer of any worker; RuntimeError past the timeout or if a worker died."""
        timeout = self._loader.timeout
        deadline = time.monotonic() + timeout if timeout > 0 else None
        while True:
            watched = [c for c in self._procs.conns if c is not None]
            watched += [p.sentinel for w, p in enumerate(self._workers) if self._active[w]]
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready = _connection.wait(watched, remaining)
            if not ready:
                self._procs.timed_out = True
                raise RuntimeError(f"DataLoader timed out after {timeout} seconds")
            for w, c in enumerate(self._procs.conns):
                if c is None or c not in ready:
                    continue
                try:
                    return recv_with_fds(c)
                except (EOFError, OSError) as e:  # the worker is gone, maybe mid-message
                    c.close()
                    self._procs.conns[w] = None
                    if self._active[w]:
                        self._fail(w, e)
            for w, p in enumerate(self._workers):
                conn = self._procs.conns[w]
                if self._active[w] and p.sentinel in ready and not (
                        conn is not None and conn.poll()):
                    self._fail(w, None)

    def _fail(self, w: int, cause: Optional[BaseException]) -> None:
        p = self._workers[w]
        p.join(1.0)
        code = p.exitcode
        if code is None:
            how = "its connection closed"
        elif code < 0:
            try:
                how = f"killed by signal {-code}: {signal.Signals(-code).name}"
            except ValueError:
                how = f"killed by signal {-code}"
        else:
            how = f"exit code {code}"
        self._failure = f"DataLoader worker (pid {p.pid}) exited unexpectedly ({how})"
        self._shutdown()
        raise RuntimeError(self._failure) from cause

    @property
    def _shut(self) -> bool:
        return self._procs.shut

    def _shutdown(self) -> None:
        """Stops the workers now (Note [Worker processes])."""
        self._stop()
