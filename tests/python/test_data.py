"""ember.utils.data and ember.datasets: datasets, samplers, default_collate and the DataLoader with
and without workers (worker processes, and worker threads: worker_mode="thread"), against NumPy,
closed forms and (where installed) PyTorch. What only worker processes do (shared memory, dead
workers, start methods) is in test_data_workers.py."""

import collections
import gzip
import os
import pickle
import threading
import time

import numpy as np
import pytest

import ember
import ember.datasets
import ember.utils.data.dataloader as dataloader_module
from ember.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    DistributedSampler,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    default_collate,
    get_worker_info,
    random_split,
)


class Squares(Dataset):
    """Sample i is (i, i * i) as Python ints; records the threads that fetched."""

    def __init__(self, n, fail_at=None, delay=0.0):
        self.n, self.fail_at, self.delay = n, fail_at, delay
        self.threads = set()
        self.worker_ids = set()

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        self.threads.add(threading.get_ident())
        info = get_worker_info()
        if info is not None:
            self.worker_ids.add(info.id)
        if self.delay:
            time.sleep(self.delay)
        if i == self.fail_at:
            raise Boom(f"sample {i}")
        return i, i * i


class Boom(Exception):
    """The exception a test dataset raises."""


def flat_indices(loader):
    return [i for batch in loader for i in batch[0].tolist()]


def batches_as_numpy(loader):
    return [[f.numpy() for f in batch] for batch in loader]


def assert_same_batches(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert len(x) == len(y)
        for u, v in zip(x, y):
            assert u.dtype == v.dtype and u.shape == v.shape
            np.testing.assert_array_equal(u, v)


@pytest.fixture(params=["process", "thread"])
def mode(request):
    """Each worker_mode of the DataLoader."""
    return request.param


# ------------------------------------------------------------------------------------------------
# Epochs, shuffling, batches


@pytest.mark.parametrize("num_workers", [0, 3])
@pytest.mark.parametrize("shuffle", [False, True])
def test_every_sample_is_visited_once_per_epoch(num_workers, shuffle, mode):
    loader = DataLoader(Squares(103), batch_size=10, shuffle=shuffle, num_workers=num_workers,
                        worker_mode=mode)
    assert len(loader) == 11
    for _ in range(2):
        batches = list(loader)
        assert [len(b[0]) for b in batches] == [10] * 10 + [3]
        seen = [i for b in batches for i in b[0].tolist()]
        assert sorted(seen) == list(range(103))
        assert (seen == list(range(103))) == (not shuffle)
        for b in batches:
            np.testing.assert_array_equal(b[1].numpy(), b[0].numpy() ** 2)


def test_shuffle_is_reproducible_and_differs_across_epochs():
    def two_epochs(**kw):
        loader = DataLoader(Squares(50), batch_size=7, shuffle=True, **kw)
        return flat_indices(loader), flat_indices(loader)

    ember.manual_seed(5)
    first = two_epochs()
    ember.manual_seed(5)
    assert two_epochs() == first
    assert first[0] != first[1]
    ember.manual_seed(6)
    assert two_epochs() != first
    # With a generator, the order follows it alone.
    a = two_epochs(generator=ember.Generator().manual_seed(3))
    ember.manual_seed(123)
    assert two_epochs(generator=ember.Generator().manual_seed(3)) == a
    assert a[0] != a[1]


@pytest.mark.parametrize("num_workers", [0, 2])
def test_drop_last(num_workers, mode):
    loader = DataLoader(Squares(103), batch_size=10, drop_last=True, num_workers=num_workers,
                        worker_mode=mode)
    assert len(loader) == 10
    batches = list(loader)
    assert [len(b[0]) for b in batches] == [10] * 10
    assert flat_indices(loader) == list(range(100))


def test_tensor_dataset_batches_have_the_rows_of_the_sampled_indices(rng):
    x = rng.standard_normal((37, 3, 4)).astype(np.float32)
    y = rng.integers(0, 10, 37)
    ds = TensorDataset(ember.tensor(x), ember.tensor(y))
    assert len(ds) == 37 and isinstance(ds, Dataset)
    sample = ds[5]
    assert isinstance(sample, tuple) and len(sample) == 2
    np.testing.assert_array_equal(sample[0].numpy(), x[5])
    np.testing.assert_array_equal(ds[-1][0].numpy(), x[-1])
    np.testing.assert_array_equal(ds[2:4][1].numpy(), y[2:4])
    with pytest.raises(IndexError):
        ds[37]
    order = list(RandomSampler(ds, generator=ember.Generator().manual_seed(1)))
    loader = DataLoader(ds, batch_size=8, sampler=order)
    for b, (bx, by) in enumerate(loader):
        idx = order[8 * b:8 * b + 8]
        assert tuple(bx.shape) == (len(idx), 3, 4) and tuple(by.shape) == (len(idx),)
        assert bx.dtype == ember.float32 and by.dtype == ember.int64
        np.testing.assert_array_equal(bx.numpy(), x[idx])
        np.testing.assert_array_equal(by.numpy(), y[idx])
    with pytest.raises(ValueError):
        TensorDataset(ember.zeros(3), ember.zeros(4))


def test_batch_size_none_passes_samples_through_default_convert():
    class Arrays(Dataset):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return {"x": np.full(2, i, dtype=np.int32), "name": f"s{i}"}

    out = list(DataLoader(Arrays(), batch_size=None))
    assert len(out) == 3
    assert isinstance(out[2]["x"], ember.Tensor) and out[2]["x"].dtype == ember.int32
    assert out[2]["x"].tolist() == [2, 2] and out[2]["name"] == "s2"


# ------------------------------------------------------------------------------------------------
# default_collate


Point = collections.namedtuple("Point", ["x", "y"])


def test_default_collate_nested_structures():
    batch = [
        {"img": np.full((2, 2), i, dtype=np.float32), "label": i, "score": 0.5 * i, "flag": i == 1,
         "name": f"n{i}", "pt": Point(ember.tensor([i, -i]), float(i)), "pair": (i, [i, 2 * i])}
        for i in range(3)
    ]
    out = default_collate(batch)
    assert isinstance(out, dict) and set(out) == set(batch[0])
    assert out["img"].dtype == ember.float32 and tuple(out["img"].shape) == (3, 2, 2)
    np.testing.assert_array_equal(out["img"].numpy(), np.stack([b["img"] for b in batch]))
    assert out["label"].dtype == ember.int64 and out["label"].tolist() == [0, 1, 2]
    assert out["score"].dtype == ember.float64 and out["score"].tolist() == [0.0, 0.5, 1.0]
    assert out["flag"].dtype == ember.bool and out["flag"].tolist() == [False, True, False]
    assert out["name"] == ["n0", "n1", "n2"]
    assert isinstance(out["pt"], Point)
    assert out["pt"].x.tolist() == [[0, 0], [1, -1], [2, -2]]
    assert out["pt"].y.tolist() == [0.0, 1.0, 2.0]
    # A tuple collates to a list of its collated fields; a list keeps its type.
    assert isinstance(out["pair"], list) and out["pair"][0].tolist() == [0, 1, 2]
    assert isinstance(out["pair"][1], list)
    assert [t.tolist() for t in out["pair"][1]] == [[0, 1, 2], [0, 2, 4]]
    scalars = default_collate([np.float32(1.5), np.float32(2.5)])
    assert scalars.dtype == ember.float32 and scalars.tolist() == [1.5, 2.5]


def test_default_collate_errors():
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate"):
        default_collate([object(), object()])
    with pytest.raises(ValueError):
        default_collate([ember.zeros(2), ember.zeros(3)])


def test_default_collate_matches_pytorch(torch):
    batch = [{"a": np.arange(3, dtype=np.float32) * i, "b": (i, 2.5 * i), "c": [True, "s"]}
             for i in range(4)]
    ours, theirs = default_collate(batch), torch.utils.data.default_collate(batch)
    np.testing.assert_array_equal(ours["a"].numpy(), theirs["a"].numpy())
    for o, t in zip(ours["b"], theirs["b"]):
        assert str(o.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_array_equal(o.numpy(), t.numpy())
    assert ours["c"][0].tolist() == theirs["c"][0].tolist() and ours["c"][1] == theirs["c"][1]


# ------------------------------------------------------------------------------------------------
# Worker threads


def make_tensor_dataset(n=90):
    x = np.arange(n * 6, dtype=np.float32).reshape(n, 2, 3)
    return TensorDataset(ember.tensor(x), ember.tensor(np.arange(n) % 7))


@pytest.mark.parametrize("kind", ["python", "native", "native_custom_collate"])
@pytest.mark.parametrize("num_workers,prefetch", [(1, 1), (2, 2), (4, 3)])
def test_workers_make_the_batches_of_the_single_threaded_loader_in_order(kind, num_workers,
                                                                          prefetch, mode):
    if kind == "python":
        ds, kw = Squares(97), {}
    elif kind == "native":
        ds, kw = make_tensor_dataset(), {}
    else:  # through __getitems__ and a collate_fn
        ds, kw = make_tensor_dataset(), {"collate_fn": lambda b: default_collate(b)}
    ember.manual_seed(11)
    expected = [batches_as_numpy(DataLoader(ds, batch_size=9, shuffle=True, **kw))
                for _ in range(2)]
    ember.manual_seed(11)
    loader = DataLoader(ds, batch_size=9, shuffle=True, num_workers=num_workers,
                        prefetch_factor=prefetch, worker_mode=mode, **kw)
    for epoch in range(2):
        assert_same_batches(batches_as_numpy(loader), expected[epoch])


def test_native_datasets_make_a_batch_in_one_call():
    calls = []

    class Spy(TensorDataset):
        def get_batch(self, indices):
            calls.append(list(indices))
            return super().get_batch(indices)

    ds = Spy(ember.arange(50.0), ember.arange(50))
    for num_workers in (0, 2):
        calls.clear()
        loader = DataLoader(ds, batch_size=8, shuffle=True, num_workers=num_workers,
                            worker_mode="thread")  # the calls are counted in this process
        batches = list(loader)
        assert len(calls) == len(loader) == len(batches) == 7
        assert sorted(i for c in calls for i in c) == list(range(50))
        for c, (x, y) in zip(calls, batches):
            assert y.tolist() == c and x.tolist() == [float(i) for i in c]
    # A Subset of a native dataset goes through the same path.
    calls.clear()
    part = Subset(ds, list(range(10, 30)))
    out = list(DataLoader(part, batch_size=6))
    assert calls == [list(range(10, 16)), list(range(16, 22)), list(range(22, 28)), [28, 29]]
    assert out[-1][1].tolist() == [28, 29]


class Tagged(TensorDataset):
    """A TensorDataset subclass with an attribute of its own."""


def test_tensor_datasets_pickle_with_their_class_and_attributes():
    ds = Tagged(ember.arange(6.0), ember.arange(6) * 2)
    ds.tag = "mine"
    back = pickle.loads(pickle.dumps(ds))
    assert type(back) is Tagged and back.tag == "mine" and len(back) == 6
    assert [t.tolist() for t in back[4]] == [4.0, 8]
    x, y = next(iter(DataLoader(back, batch_size=6)))  # still made in one native call
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0] and y.tolist() == [0, 2, 4, 6, 8, 10]


def test_a_subclass_overriding_getitem_is_fetched_through_it():
    class Shifted(TensorDataset):
        def __getitem__(self, i):
            x, y = super().__getitem__(i)
            return x + 100.0, y

    ds = Shifted(ember.arange(12.0), ember.arange(12))
    for kw in ({}, {"collate_fn": lambda b: default_collate(b)}, {"num_workers": 2}):
        for source in (ds, Subset(ds, list(range(12)))):
            x, y = next(iter(DataLoader(source, batch_size=5, **kw)))
            assert x.tolist() == [100.0, 101.0, 102.0, 103.0, 104.0] and y.tolist() == [0, 1, 2, 3, 4]


def test_a_python_dataset_is_fetched_by_the_worker_threads():
    ds = Squares(64)
    loader = DataLoader(ds, batch_size=4, num_workers=3, worker_mode="thread")
    assert flat_indices(loader) == list(range(64))
    assert threading.get_ident() not in ds.threads
    assert 1 <= len(ds.threads) <= 3
    assert ds.worker_ids <= {0, 1, 2} and ds.worker_ids
    assert get_worker_info() is None


@pytest.mark.parametrize("num_workers", [0, 2, 4])
def test_an_exception_in_a_worker_is_raised_at_its_batch(num_workers, mode):
    loader = DataLoader(Squares(60, fail_at=37), batch_size=10, num_workers=num_workers,
                        worker_mode=mode)
    it = iter(loader)
    for b in range(3):
        assert next(it)[0].tolist() == list(range(10 * b, 10 * b + 10))
    with pytest.raises(Boom, match="sample 37"):
        next(it)
    # The loader goes on after the failed batch, as PyTorch's does.
    assert next(it)[0].tolist() == list(range(40, 50))
    assert next(it)[0].tolist() == list(range(50, 60))
    with pytest.raises(StopIteration):
        next(it)


def test_an_early_break_leaves_no_thread_behind():
    before = threading.active_count()
    loader = DataLoader(Squares(1000, delay=0.001), batch_size=5, num_workers=4,
                        worker_mode="thread")
    for i, _ in enumerate(loader):
        if i == 3:
            assert threading.active_count() == before + 4
            break
    assert threading.active_count() == before
    it = iter(loader)
    next(it)
    del it
    assert threading.active_count() == before
    # A failed batch raised mid-epoch, then abandoned.
    with pytest.raises(Boom):
        for _ in DataLoader(Squares(100, fail_at=12), batch_size=5, num_workers=2,
                            worker_mode="thread"):
            pass
    assert threading.active_count() == before
    assert not [t for t in threading.enumerate() if t.name.startswith("ember-DataLoader")]


def test_a_slow_batch_times_out():
    loader = DataLoader(Squares(2, delay=0.6), batch_size=1, num_workers=1, timeout=0.1)
    it = iter(loader)
    t0 = time.perf_counter()
    with pytest.raises(RuntimeError, match="timed out after 0.1 seconds"):
        next(it)
    assert time.perf_counter() - t0 < 0.5
    del it  # does not wait for the worker: it ends once its batch is made


def test_a_timeout_leaves_the_stuck_worker_behind():
    # As PyTorch: the wait for a batch is bounded by the timeout, and dropping the iterator
    # afterwards (leaving the except block) does not wait for the worker stuck in the dataset.
    release = threading.Event()

    class Stuck(Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, i):
            if i == 0:
                release.wait(60)
            return i

    def first_batch():
        try:
            next(iter(DataLoader(Stuck(), batch_size=1, num_workers=2, timeout=0.2,
                                 worker_mode="thread")))
        except RuntimeError as e:
            return str(e)
        return None

    try:
        t0 = time.monotonic()
        assert first_batch() == "DataLoader timed out after 0.2 seconds"
        assert time.monotonic() - t0 < 3.0
    finally:
        release.set()
    deadline = time.monotonic() + 10
    while [t for t in threading.enumerate() if t.name.startswith("ember-DataLoader")]:
        assert time.monotonic() < deadline, "the released worker did not end"
        time.sleep(0.01)


def test_dropping_an_iterator_waits_a_bounded_time_for_a_slow_worker(monkeypatch):
    # A worker in a batch that takes long is waited for up to the shutdown's bound, then left to
    # end by itself, as PyTorch's shutdown waits for its worker processes a bounded time.
    monkeypatch.setattr(dataloader_module, "_SHUTDOWN_WAIT", 0.3)
    release = threading.Event()

    class Slow(Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, i):
            if i == 1:
                release.wait(60)
            return i

    it = iter(DataLoader(Slow(), batch_size=1, num_workers=2, worker_mode="thread"))
    try:
        assert next(it).tolist() == [0]
        t0 = time.monotonic()
        del it
        assert 0.2 < time.monotonic() - t0 < 3.0
    finally:
        release.set()


def test_worker_init_fn_runs_in_each_worker_and_its_errors_surface():
    seen = []

    def init(worker_id):
        seen.append((worker_id, threading.get_ident(), get_worker_info().num_workers))

    loader = DataLoader(Squares(40), batch_size=4, num_workers=3, worker_init_fn=init,
                        worker_mode="thread")
    list(loader)
    assert sorted(w for w, _, _ in seen) == [0, 1, 2]
    assert {n for _, _, n in seen} == {3}
    assert threading.get_ident() not in {t for _, t, _ in seen}
    list(loader)
    assert len(seen) == 6  # once per worker per epoch
    seen.clear()
    loader = DataLoader(Squares(40), batch_size=4, num_workers=3, worker_init_fn=init,
                        persistent_workers=True, worker_mode="thread")
    list(loader)
    list(loader)
    assert sorted(w for w, _, _ in seen) == [0, 1, 2]  # once per worker

    def bad_init(worker_id):
        if worker_id == 1:
            raise Boom("init")

    with pytest.raises(Boom, match="init"):
        next(iter(DataLoader(Squares(40), batch_size=4, num_workers=2, worker_init_fn=bad_init,
                             worker_mode="thread")))


def test_pin_memory():
    loader = DataLoader(make_tensor_dataset(), batch_size=16, pin_memory=True, num_workers=1)
    if ember._C.data._pin_memory_available():
        assert all(t.is_pinned() for b in loader for t in b)
    else:
        with pytest.warns(UserWarning, match="pin_memory"):
            batches = list(DataLoader(make_tensor_dataset(), batch_size=16, pin_memory=True))
        assert_same_batches([[t.numpy() for t in b] for b in batches],
                            batches_as_numpy(DataLoader(make_tensor_dataset(), batch_size=16)))


def test_invalid_options_are_refused():
    ds = Squares(10)
    with pytest.raises(ValueError, match="mutually exclusive with shuffle"):
        DataLoader(ds, shuffle=True, sampler=SequentialSampler(ds))
    with pytest.raises(ValueError, match="batch_sampler"):
        DataLoader(ds, batch_size=4, batch_sampler=BatchSampler(SequentialSampler(ds), 2, False))
    with pytest.raises(ValueError, match="prefetch_factor"):
        DataLoader(ds, prefetch_factor=2)
    with pytest.raises(ValueError, match="persistent_workers"):
        DataLoader(ds, persistent_workers=True)
    with pytest.raises(ValueError, match="num_workers"):
        DataLoader(ds, num_workers=-1)
    with pytest.raises(ValueError, match="drop_last"):
        DataLoader(ds, batch_size=None, drop_last=True)
    with pytest.raises(ValueError, match="shuffle"):
        DataLoader(Stream(5), shuffle=True)


def test_a_batch_sampler_chooses_the_batches(mode):
    ds = Squares(10)
    loader = DataLoader(ds, batch_sampler=[[3, 1], [9], [0, 2, 4]], num_workers=2,
                        worker_mode=mode)
    assert [b[0].tolist() for b in loader] == [[3, 1], [9], [0, 2, 4]]
    assert len(loader) == 3


# ------------------------------------------------------------------------------------------------
# Iterable datasets


class Stream(IterableDataset):
    """0..n-1, split between workers by get_worker_info() if `shard`."""

    def __init__(self, n, shard=False):
        self.n, self.shard = n, shard

    def __len__(self):
        return self.n

    def __iter__(self):
        info = get_worker_info()
        if self.shard and info is not None:
            return iter(range(info.id, self.n, info.num_workers))
        return iter(range(self.n))


def test_an_iterable_dataset_is_batched_in_its_order():
    loader = DataLoader(Stream(10), batch_size=4)
    assert [b.tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert len(loader) == 3
    loader = DataLoader(Stream(10), batch_size=4, drop_last=True)
    assert [b.tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7]] and len(loader) == 2
    assert [b.tolist() for b in DataLoader(Stream(10) + Stream(2), batch_size=5)] == [
        [0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [0, 1]]


def test_iterable_workers_take_turns_as_pytorchs_do(mode):
    # Worker w yields w, w+3, w+6, ...; batches of 2; the consumer takes one batch from each
    # worker in turn, skipping those that finished.
    shards = [list(range(w, 20, 3)) for w in range(3)]
    per_worker = [[s[i:i + 2] for i in range(0, len(s), 2)] for s in shards]
    expected = []
    for r in range(max(len(p) for p in per_worker)):
        expected += [p[r] for p in per_worker if r < len(p)]
    loader = DataLoader(Stream(20, shard=True), batch_size=2, num_workers=3, worker_mode=mode)
    assert [b.tolist() for b in loader] == expected
    # Without sharding every worker yields everything (PyTorch's behaviour too).
    everything = [i for b in DataLoader(Stream(6), batch_size=3, num_workers=2, worker_mode=mode)
                  for i in b.tolist()]
    assert sorted(everything) == sorted(list(range(6)) * 2)


# ------------------------------------------------------------------------------------------------
# Datasets and samplers


def test_concat_and_subset():
    a, b = Squares(3), Squares(4)
    cat = a + b
    assert isinstance(cat, ConcatDataset) and len(cat) == 7
    assert [cat[i][0] for i in range(7)] == [0, 1, 2, 0, 1, 2, 3]
    assert cat[-1] == (3, 9)
    with pytest.raises(IndexError):
        cat[7]
    sub = Subset(cat, [6, 0, 4])
    assert len(sub) == 3 and [sub[i][0] for i in range(3)] == [3, 0, 1]
    assert sub.__getitems__([2, 0]) == [(1, 1), (3, 9)]


@pytest.mark.parametrize("lengths,sizes", [([30, 50, 21], [30, 50, 21]), ([0.3, 0.7], [31, 70]),
                                           ([0.25, 0.25, 0.5], [26, 25, 50])])
def test_random_split_sizes_and_disjointness(lengths, sizes):
    parts = random_split(range(101), lengths, generator=ember.Generator().manual_seed(4))
    assert [len(p) for p in parts] == sizes
    items = [p[i] for p in parts for i in range(len(p))]
    assert sorted(items) == list(range(101))
    again = random_split(range(101), lengths, generator=ember.Generator().manual_seed(4))
    assert [list(p.indices) for p in again] == [list(p.indices) for p in parts]
    assert [list(p.indices) for p in parts] != [sorted(p.indices) for p in parts]


def test_random_split_refuses_wrong_lengths():
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(range(10), [3, 4])
    with pytest.raises(ValueError, match="between 0 and 1"):
        random_split(range(10), [1.5, -0.5])


def test_random_split_sizes_match_pytorch(torch):
    for n, fractions in [(101, [0.3, 0.7]), (10, [0.33, 0.33, 0.34]), (7, [0.5, 0.5])]:
        ours = [len(p) for p in random_split(range(n), fractions)]
        theirs = [len(p) for p in torch.utils.data.random_split(range(n), fractions)]
        assert ours == theirs


@pytest.mark.parametrize("n,replicas", [(10, 3), (12, 3), (5, 4), (7, 1)])
@pytest.mark.parametrize("shuffle", [False, True])
def test_distributed_sampler_partitions_the_epoch(n, replicas, shuffle):
    ds = range(n)
    shares = [list(DistributedSampler(ds, num_replicas=replicas, rank=r, shuffle=shuffle, seed=3))
              for r in range(replicas)]
    per_rank = -(-n // replicas)
    assert [len(s) for s in shares] == [per_rank] * replicas
    assert len(DistributedSampler(ds, num_replicas=replicas, rank=0)) == per_rank
    everything = [i for s in shares for i in s]
    assert set(everything) == set(range(n))
    # The padding repeats the epoch's first indices: interleaving the shares gives the epoch's
    # order followed by its own beginning.
    order = [shares[k % replicas][k // replicas] for k in range(per_rank * replicas)]
    assert sorted(order[:n]) == list(range(n))
    assert order[n:] == order[:per_rank * replicas - n]
    if not shuffle:
        assert order[:n] == list(range(n))
    dropped = [list(DistributedSampler(ds, num_replicas=replicas, rank=r, shuffle=shuffle, seed=3,
                                       drop_last=True)) for r in range(replicas)]
    assert [len(s) for s in dropped] == [n // replicas] * replicas
    flat = [i for s in dropped for i in s]
    assert len(set(flat)) == len(flat)


def test_distributed_sampler_epochs_and_seeds():
    def share(rank=0, epoch=None, seed=0):
        s = DistributedSampler(range(40), num_replicas=2, rank=rank, seed=seed)
        if epoch is not None:
            s.set_epoch(epoch)
        return list(s)

    assert share() == share(epoch=0)
    assert share(epoch=1) != share(epoch=0)
    assert share(epoch=1) == share(epoch=1)
    assert share(seed=1) != share()
    assert set(share(rank=0, epoch=5)).isdisjoint(share(rank=1, epoch=5))
    with pytest.raises(ValueError):
        DistributedSampler(range(4), num_replicas=2, rank=2)


def test_distributed_sampler_matches_pytorch_without_shuffle(torch):
    from torch.utils.data.distributed import DistributedSampler as TorchSampler

    for n, replicas, drop_last in [(10, 3, False), (10, 3, True), (5, 4, False), (9, 2, True)]:
        for r in range(replicas):
            ours = DistributedSampler(range(n), replicas, r, shuffle=False, drop_last=drop_last)
            theirs = TorchSampler(range(n), replicas, r, shuffle=False, drop_last=drop_last)
            assert list(ours) == list(theirs) and len(ours) == len(theirs)


def test_samplers():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    perm = list(RandomSampler(range(30)))
    assert sorted(perm) == list(range(30)) and perm != list(range(30))
    draws = list(RandomSampler(range(3), replacement=True, num_samples=100))
    assert len(draws) == 100 and set(draws) <= {0, 1, 2} and len(set(draws)) == 3
    long = list(RandomSampler(range(4), num_samples=10))
    assert len(long) == 10 and sorted(long[:4]) == [0, 1, 2, 3] and sorted(long[4:8]) == [0, 1, 2, 3]
    sub = list(SubsetRandomSampler([10, 20, 30, 40]))
    assert sorted(sub) == [10, 20, 30, 40]
    assert list(BatchSampler(range(7), 3, False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(range(7), 3, True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(7), 3, False)) == 3 and len(BatchSampler(range(7), 3, True)) == 2
    with pytest.raises(ValueError):
        BatchSampler(range(7), 0, False)
    with pytest.raises(ValueError):
        RandomSampler(range(3), num_samples=0)
    weighted = list(ember.utils.data.WeightedRandomSampler([0.0, 1.0, 0.0], 20))
    assert weighted == [1] * 20


# ------------------------------------------------------------------------------------------------
# Fashion-MNIST and IDX files


@pytest.fixture(scope="module")
def fashion_dir():
    try:
        return ember.datasets.find_fashion_mnist()
    except ember.IoError as e:
        pytest.skip(f"Fashion-MNIST is not installed: {e}")


def read_gz_idx(path):
    """An IDX file parsed with gzip and NumPy alone."""
    with gzip.open(path) as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * d:8 + 4 * d], "big") for d in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def idx_path(root, stem):
    for name in (stem + ".gz", stem):
        if os.path.exists(os.path.join(root, name)):
            return os.path.join(root, name)
    raise FileNotFoundError(stem)


def test_fashion_mnist_sizes_and_labels(fashion_dir):
    for train, n in ((True, 60000), (False, 10000)):
        ds = ember.datasets.FashionMNIST(train=train)
        assert len(ds) == n and isinstance(ds, Dataset)
        assert tuple(ds.images.shape) == (n, 1, 28, 28) and ds.images.dtype == ember.float32
        assert tuple(ds.labels.shape) == (n,) and ds.labels.dtype == ember.int64
        # Fashion-MNIST is balanced: 6000 (train) or 1000 (test) images of each class.
        counts = np.bincount(ds.targets.numpy(), minlength=10)
        np.testing.assert_array_equal(counts, np.full(10, n // 10))
        assert len(ds.classes) == 10
    stem = "t10k"
    labels = read_gz_idx(idx_path(fashion_dir, f"{stem}-labels-idx1-ubyte"))
    images = read_gz_idx(idx_path(fashion_dir, f"{stem}-images-idx3-ubyte"))
    np.testing.assert_array_equal(ds.labels.numpy(), labels)
    image, label = ds[123]
    assert tuple(image.shape) == (1, 28, 28) and label.item() == labels[123]
    np.testing.assert_array_equal(image.numpy()[0], images[123].astype(np.float32) / 255)
    raw = ember.datasets.read_idx(idx_path(fashion_dir, f"{stem}-labels-idx1-ubyte"))
    assert raw.dtype == ember.uint8
    np.testing.assert_array_equal(raw.numpy(), labels)


def test_fashion_mnist_pickles_as_where_its_files_are(fashion_dir):
    # How a spawned DataLoader worker gets it: read again from the same files.
    ds = ember.datasets.FashionMNIST(fashion_dir, train=False, limit=50)
    back = pickle.loads(pickle.dumps(ds))
    assert type(back) is ember.datasets.FashionMNIST and len(back) == 50 and not back.train
    np.testing.assert_array_equal(back.images.numpy(), ds.images.numpy())
    np.testing.assert_array_equal(back.labels.numpy(), ds.labels.numpy())


def test_fashion_mnist_through_a_loader_with_workers(fashion_dir):
    ds = ember.datasets.FashionMNIST(fashion_dir, train=False)
    loader = DataLoader(ds, batch_size=500, shuffle=True, num_workers=2)
    counts = np.zeros(10, dtype=np.int64)
    total = 0
    for images, labels in loader:
        assert tuple(images.shape)[1:] == (1, 28, 28) and images.dtype == ember.float32
        assert 0.0 <= images.min().item() and images.max().item() <= 1.0
        counts += np.bincount(labels.numpy(), minlength=10)
        total += len(labels)
    assert total == 10000
    np.testing.assert_array_equal(counts, np.full(10, 1000))
    train, val = random_split(ds, [0.9, 0.1])
    batch = next(iter(DataLoader(val, batch_size=len(val))))
    np.testing.assert_array_equal(batch[1].numpy(), ds.labels.numpy()[val.indices])


def test_missing_fashion_mnist_names_where_it_looked(tmp_path):
    with pytest.raises(ember.IoError, match="not found"):
        ember.datasets.FashionMNIST(tmp_path)
