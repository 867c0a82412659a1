"""DataLoader (torch.utils.data.dataloader): batches of a dataset, one epoch per iteration, made
ahead by worker threads.

Workers are threads, not processes: Ember's ops and C++ datasets release the GIL while they run,
so the threads overlap with each other and with the training step, and nothing is pickled or
copied between processes. The batches are the same, in the same order, for any num_workers
(Note [Ordered prefetching] in api/data/dataloader.cpp, which the map-style workers follow).
"""

import atexit
import collections.abc
import itertools
import sys
import threading
import time
import warnings
import weakref
from typing import Any, Callable, Dict, Generic, Iterable, List, Optional, Set, Tuple, TypeVar

from ember import _C
from ember._C import Generator, Tensor
from ember._C import data as _native
from ember.utils.data._collate import default_collate, default_convert
from ember.utils.data.dataset import Dataset, IterableDataset, _getitems, _native_batch
from ember.utils.data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

T_co = TypeVar("T_co", covariant=True)

__all__ = ["DataLoader", "WorkerInfo", "get_worker_info", "default_collate", "default_convert"]


class WorkerInfo:
    """What a worker thread knows about itself: ``id``, ``num_workers``, ``seed`` (the loader's
    base seed plus id) and ``dataset``. Threads share the dataset object and ember's generators;
    a worker wanting its own random stream makes an ember.Generator from ``seed``."""

    def __init__(self, id: int, num_workers: int, seed: int, dataset: Any) -> None:
        self.id = id
        self.num_workers = num_workers
        self.seed = seed
        self.dataset = dataset

    def __repr__(self) -> str:
        return f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed})"


_worker = threading.local()


def get_worker_info() -> Optional[WorkerInfo]:
    """The WorkerInfo of the calling DataLoader worker thread; None outside workers."""
    return getattr(_worker, "info", None)


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
    shuffle=True)``. As torch.utils.data.DataLoader, with worker threads instead of processes:

    - ``num_workers > 0`` starts that many threads per epoch, which make up to
      ``num_workers * prefetch_factor`` batches ahead of the consumer; the batches and their
      order are those of ``num_workers=0``. An exception raised while making a batch is raised by
      the iterator at that batch (the same exception object, its traceback included); dropping
      the iterator (``break``) stops the threads and waits a bounded time for them to finish the
      batch in hand, as does interpreter exit; ``timeout`` (seconds) bounds the wait for one batch
      (RuntimeError), after which a worker stuck in the dataset is not waited for.
    - Ember's C++ datasets (TensorDataset, ember.datasets.MNIST and FashionMNIST, and Subsets of
      them) make each batch in one call without the GIL when ``collate_fn`` is the default;
      otherwise a dataset's ``__getitems__`` is called once per batch if it has one, else
      ``__getitem__`` once per sample.
    - ``worker_init_fn(worker_id)`` runs in each worker thread before its first batch (once per
      worker with ``persistent_workers``); ``get_worker_info()`` answers inside workers.
    - ``pin_memory`` makes the workers' batches in pinned memory where a backend offers it (a
      warning and ordinary memory otherwise).
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
                 persistent_workers: bool = False) -> None:
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
        self._workers_initialized: Set[int] = set()

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
        return _IterableWorkers(self) if self._iterable else _MapWorkers(self)

    # What one worker (or the consumer, with no workers) runs to make a batch.

    def _map_fetcher(self) -> Callable[[Any], Any]:
        """Makes the batch of one task of the batch sampler (or sample of the sampler)."""
        dataset, collate, pin = self.dataset, self.collate_fn, self._pin()
        if not self._auto_collation:
            fetch = lambda index: collate(dataset[index])  # noqa: E731
        else:
            native = _native_batch(dataset) if collate is default_collate else None
            getitems = _getitems(dataset)
            if native is not None:
                fetch = native
            elif getitems is not None:
                fetch = lambda indices: collate(getitems(indices))  # noqa: E731
            else:
                fetch = lambda indices: collate([dataset[i] for i in indices])  # noqa: E731
        return (lambda task: _pin(fetch(task))) if pin else fetch

    def _iterable_fetcher(self) -> Callable[[Any], Any]:
        """Makes the next batch from an iterator over the dataset; StopIteration at its end."""
        collate, pin, size, drop_last = self.collate_fn, self._pin(), self.batch_size, self.drop_last

        def fetch(it):
            if size is None:
                batch = collate(next(it))
            else:
                items = list(itertools.islice(it, size))
                if not items or (drop_last and len(items) < size):
                    raise StopIteration
                batch = collate(items)
            return _pin(batch) if pin else batch

        return fetch

    def _pin(self) -> bool:
        """Whether to pin batches: pin_memory, where a backend offers pinned memory (else a
        warning, attributed to the loop that iterates the loader)."""
        if not self.pin_memory:
            return False
        if _native._pin_memory_available():
            return True
        warnings.warn("DataLoader: pin_memory=True but no loaded backend with a device offers "
                      "pinned memory (no GPU?): batches stay in ordinary memory", stacklevel=5)
        return False

    def _base_seed(self) -> int:
        return int(_C.randint(0, 2**62, (), generator=self.generator).item())

    def _init_worker(self, worker_id: int, seed: int) -> None:
        """Runs in worker thread `worker_id` before its first batch."""
        _worker.info = WorkerInfo(worker_id, self.num_workers, seed + worker_id, self.dataset)
        if self.worker_init_fn is not None:
            if self.persistent_workers:
                if worker_id in self._workers_initialized:
                    return
                self._workers_initialized.add(worker_id)
            self.worker_init_fn(worker_id)


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
# hung in about half the runs. So every live threaded iterator is in `_live`, and an atexit
# handler (which runs before finalization, after the non-daemon threads were joined) stops them
# all and gives their workers up to _SHUTDOWN_WAIT seconds in total to finish the batch in hand,
# as PyTorch's shutdown waits up to its status interval for worker processes. Shutdown never
# waits longer than that for a worker: one stuck in a dataset (what a timeout reports) is left to
# end by itself, a daemon that exits once its batch is done; after a timeout nothing waits at all.
# During finalization, or on a worker thread (the collector), shutdown only signals.
_SHUTDOWN_WAIT = 5.0
_live: "weakref.WeakSet[_ThreadedIter]" = weakref.WeakSet()
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
