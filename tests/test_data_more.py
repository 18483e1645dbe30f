"""ampc.utils.data beyond test_data.py, against torch.utils.data (the oracle) where torch's result
is deterministic: DataLoader(num_workers > 0) with real worker processes (batches and order as
torch's, worker_init_fn and get_worker_info in the workers, seeds, persistent workers over epochs,
prefetch_factor, IterableDataset sharded by worker, errors raised from a worker, timeout),
ChainDataset, StackDataset, random_split, WeightedRandomSampler, DistributedSampler, and
default_collate / default_convert on nested structures."""
import collections
import os
import time

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import ampc
from ampc.utils import data as aud


def _tensor_ds(n=23):
    x = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
    y = np.arange(n, dtype=np.int64)
    return aud.TensorDataset(ampc.tensor(x), ampc.tensor(y)), tud.TensorDataset(torch.tensor(x), torch.tensor(y))


class Squares(aud.Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        info = aud.get_worker_info()
        return {"x": ampc.tensor([float(i * i)]), "worker": -1 if info is None else info.id, "pid": os.getpid()}


class Stream(aud.IterableDataset):
    """Shards itself by worker, as torch's documentation shows."""

    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = aud.get_worker_info()
        if info is None:
            lo, hi = self.start, self.end
        else:
            per = -(-(self.end - self.start) // info.num_workers)
            lo = self.start + info.id * per
            hi = min(lo + per, self.end)
        return iter(range(lo, hi))

    def __len__(self):
        return self.end - self.start


class TorchStream(tud.IterableDataset):
    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        info = tud.get_worker_info()
        per = -(-(self.end - self.start) // info.num_workers)
        lo = self.start + info.id * per
        return iter(range(lo, min(lo + per, self.end)))


def _lists(batches):
    return [[t.tolist() for t in b] for b in batches]


@pytest.mark.parametrize("num_workers,batch_size,drop_last", [(1, 4, False), (2, 5, True), (3, 1, False)])
def test_workers_give_torchs_batches_in_order(num_workers, batch_size, drop_last):
    ads, tds = _tensor_ds()
    a = aud.DataLoader(ads, batch_size=batch_size, num_workers=num_workers, drop_last=drop_last)
    t = tud.DataLoader(tds, batch_size=batch_size, num_workers=num_workers, drop_last=drop_last)
    assert _lists(a) == _lists(t)
    assert len(a) == len(t)


def test_workers_are_processes_with_worker_info_and_init_fn():
    seen = []
    loader = aud.DataLoader(Squares(12), batch_size=3, num_workers=3, worker_init_fn=seen.append)
    batches = list(loader)
    assert [b["x"].view(-1).tolist() for b in batches] == [[float(i * i) for i in range(j, j + 3)]
                                                          for j in range(0, 12, 3)]
    # task i goes to worker i % 3 (torch's round-robin); each ran in its own process
    assert [b["worker"].tolist() for b in batches] == [[0] * 3, [1] * 3, [2] * 3, [0] * 3]
    pids = {int(b["pid"][0]) for b in batches}
    assert len(pids) == 3 and os.getpid() not in pids
    assert seen == []  # worker_init_fn ran in the workers, not here
    assert aud.get_worker_info() is None


def _init_check(worker_id):
    info = aud.get_worker_info()
    assert info.id == worker_id and info.num_workers == 2 and info.seed == info.seed
    with pytest.raises(RuntimeError, match="Cannot assign attributes"):
        info.id = 5


class SeedReport(aud.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = aud.get_worker_info()
        return ampc.tensor([info.seed, ampc.initial_seed()])


def test_worker_seeds_follow_the_generator():
    g = ampc.Generator().manual_seed(7)
    first = [b.tolist() for b in aud.DataLoader(SeedReport(), batch_size=1, num_workers=2, generator=g,
                                                worker_init_fn=_init_check)]
    g = ampc.Generator().manual_seed(7)
    again = [b.tolist() for b in aud.DataLoader(SeedReport(), batch_size=1, num_workers=2, generator=g)]
    assert first == again
    seeds = [row[0][0] for row in first]
    assert seeds[1] == seeds[0] + 1 and seeds[2] == seeds[0]  # base_seed + worker id
    assert all(row[0][0] == row[0][1] for row in first)  # ampc's generator seeded with it


def test_persistent_workers_survive_epochs_and_restart_streams():
    loader = aud.DataLoader(Squares(8), batch_size=2, num_workers=2, persistent_workers=True, prefetch_factor=3)
    e1 = [b["pid"].tolist() for b in loader]
    it1 = loader._iterator
    e2 = [b["pid"].tolist() for b in loader]
    assert e1 == e2 and loader._iterator is it1
    # break an epoch early: the next one still starts from the beginning
    for i, b in enumerate(loader):
        if i == 1:
            break
    assert [b["x"].view(-1).tolist() for b in loader][0] == [0.0, 1.0]
    stream = aud.DataLoader(Stream(0, 10), batch_size=3, num_workers=2, persistent_workers=True)
    assert _lists(stream) == _lists(stream)
    loader._iterator._shutdown_workers()
    stream._iterator._shutdown_workers()


@pytest.mark.parametrize("batch_size,drop_last", [(3, False), (3, True), (None, False)])
def test_iterable_dataset_sharded_by_worker_matches_torch(batch_size, drop_last):
    a = aud.DataLoader(Stream(0, 17), batch_size=batch_size, num_workers=3, drop_last=drop_last)
    t = tud.DataLoader(TorchStream(0, 17), batch_size=batch_size, num_workers=3, drop_last=drop_last)
    plain = [b if isinstance(b, int) else b.tolist() for b in a]
    assert plain == [b if isinstance(b, int) else b.tolist() for b in t]
    assert batch_size is not None or all(isinstance(b, int) for b in plain)


class Boom(aud.Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == 4:
            raise KeyError("no sample 4")
        return i


def test_worker_exception_is_raised_in_main_with_its_traceback():
    loader = aud.DataLoader(Boom(), batch_size=2, num_workers=2)
    it = iter(loader)
    assert next(it).tolist() == [0, 1]
    assert next(it).tolist() == [2, 3]
    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process 0"):
        next(it)


class Slow(aud.Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        time.sleep(3)
        return i


def test_timeout():
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.5 seconds"):
        list(aud.DataLoader(Slow(), num_workers=1, timeout=0.5))


def test_spawn_context_and_worker_argument_checks():
    ads, tds = _tensor_ds(6)
    a = aud.DataLoader(ads, batch_size=4, num_workers=1, multiprocessing_context="spawn")
    assert _lists(a) == _lists(tud.DataLoader(tds, batch_size=4))
    with pytest.raises(ValueError, match="multiprocessing_context can only be used with multi-process loading"):
        aud.DataLoader(ads, multiprocessing_context="fork")
    with pytest.raises(ValueError, match="persistent_workers option needs num_workers > 0"):
        aud.DataLoader(ads, persistent_workers=True)
    assert aud.DataLoader(ads, num_workers=2).prefetch_factor == 2


# ---------------------------------------------------------------------------------------------- datasets
class Count(aud.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


def test_chain_dataset_and_iterable_add():
    chain = aud.ChainDataset([Count(2), Count(3)])
    assert list(chain) == [0, 1, 0, 1, 2] and len(chain) == 5
    assert list(Count(1) + Count(2)) == [0, 0, 1]
    assert isinstance(Count(1) + Count(2), aud.ChainDataset)
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        list(aud.ChainDataset([[1, 2]]))


def test_stack_dataset_tuple_and_dict_like_torch():
    ads, tds = _tensor_ds(5)
    a = aud.StackDataset(ads, list(range(5)))
    t = tud.StackDataset(tds, list(range(5)))
    assert len(a) == len(t) == 5
    assert [[x.tolist() for x in a[3][0]], a[3][1]] == [[x.tolist() for x in t[3][0]], t[3][1]]
    ad = aud.StackDataset(img=ads, idx=list(range(5)))
    td = tud.StackDataset(img=tds, idx=list(range(5)))
    assert ad.__getitems__([1, 4])[1]["idx"] == td.__getitems__([1, 4])[1]["idx"] == 4
    batch = next(iter(aud.DataLoader(ad, batch_size=2)))
    assert batch["idx"].tolist() == [0, 1] and batch["img"][1].tolist() == [0, 1]
    for args, kwargs, msg in (((ads, list(range(4))), {}, "Size mismatch between datasets"),
                              ((), {}, "At least one dataset should be passed"),
                              ((ads,), {"b": ads}, "Supported either")):
        with pytest.raises(ValueError, match=msg):
            aud.StackDataset(*args, **kwargs)
        with pytest.raises(ValueError, match=msg):
            tud.StackDataset(*[tds if x is ads else x for x in args], **{k: tds for k in kwargs})


def test_random_split_fractions_generator_and_errors():
    g1, g2 = ampc.Generator().manual_seed(3), ampc.Generator().manual_seed(3)
    s1 = aud.random_split(range(10), [0.5, 0.3, 0.2], generator=g1)
    s2 = aud.random_split(range(10), [0.5, 0.3, 0.2], generator=g2)
    assert [len(s) for s in s1] == [5, 3, 2] and [list(s) for s in s1] == [list(s) for s in s2]
    assert sorted(sum((list(s) for s in s1), [])) == list(range(10))
    assert [len(s) for s in aud.random_split(range(7), [0.5, 0.5])] == [len(s) for s in
                                                                      tud.random_split(range(7), [0.5, 0.5])]
    with pytest.raises(ValueError, match="Sum of input lengths does not equal the length of the input dataset"):
        aud.random_split(range(4), [1, 2])


# ---------------------------------------------------------------------------------------------- samplers
def test_weighted_random_sampler():
    w = [0.0, 1.0, 0.0, 3.0]
    g = ampc.Generator().manual_seed(0)
    s = aud.WeightedRandomSampler(w, 400, generator=g)
    draws = list(s)
    assert len(s) == 400 and set(draws) <= {1, 3}
    counts = collections.Counter(draws)
    assert 200 < counts[3] < 380
    nr = list(aud.WeightedRandomSampler([1.0, 1.0, 1.0, 1.0], 4, replacement=False))
    assert sorted(nr) == [0, 1, 2, 3]
    for kw, msg in (({"weights": w, "num_samples": 0}, "num_samples should be a positive integer value"),
                    ({"weights": w, "num_samples": True}, "num_samples should be a positive integer value"),
                    ({"weights": w, "num_samples": 2, "replacement": 1}, "replacement should be a boolean value"),
                    ({"weights": [[1.0]], "num_samples": 2}, r"weights should be a 1d sequence but given weights "
                                                             r"have shape \(1, 1\)")):
        with pytest.raises(ValueError, match=msg):
            aud.WeightedRandomSampler(**kw)
        with pytest.raises(ValueError, match=msg):
            tud.WeightedRandomSampler(**kw)


@pytest.mark.parametrize("n,replicas,drop_last", [(10, 3, False), (10, 3, True), (2, 4, False), (12, 4, True)])
def test_distributed_sampler_matches_torch(n, replicas, drop_last):
    for shuffle in (False, True):
        for epoch in (0, 3):
            ours, theirs = [], []
            for rank in range(replicas):
                a = aud.DistributedSampler(range(n), replicas, rank, shuffle=shuffle, seed=5, drop_last=drop_last)
                t = tud.DistributedSampler(range(n), replicas, rank, shuffle=shuffle, seed=5, drop_last=drop_last)
                a.set_epoch(epoch)
                t.set_epoch(epoch)
                assert len(a) == len(t)
                ours.append(list(a))
                theirs.append(list(t))
            assert ours == theirs
    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval \[0, 2\]"):
        aud.DistributedSampler(range(4), 3, 3)


def test_batch_sampler_and_subset_random_sampler_match_torch():
    assert list(aud.BatchSampler(aud.SequentialSampler(range(7)), 3, False)) == \
        list(tud.BatchSampler(tud.SequentialSampler(range(7)), 3, False))
    assert len(aud.BatchSampler(range(7), 3, True)) == len(tud.BatchSampler(range(7), 3, True)) == 2
    s = list(aud.SubsetRandomSampler([5, 7, 9]))
    assert sorted(s) == [5, 7, 9]


# ---------------------------------------------------------------------------------------------- collate
Point = collections.namedtuple("Point", "x y")


def _to_list(x):
    if isinstance(x, (torch.Tensor, ampc.Tensor)):
        return ("T", str(x.dtype).split(".")[-1], x.tolist())
    if isinstance(x, dict):
        return {k: _to_list(v) for k, v in x.items()}
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return (type(x).__name__,) + tuple(_to_list(v) for v in x)
    if isinstance(x, (list, tuple)):
        return [type(x).__name__] + [_to_list(v) for v in x]
    return x


def test_default_collate_nested_matches_torch():
    def sample(lib, i):
        arr = np.full((2,), i, dtype=np.float32)
        return {"a": lib.tensor([i, i + 1]), "np": arr, "n": i, "f": i / 2, "s": f"s{i}",
                "pt": Point(lib.tensor(float(i)), [i, (i, i)]), "np_scalar": np.int32(i)}

    a = aud.default_collate([sample(ampc, i) for i in range(3)])
    t = tud.default_collate([sample(torch, i) for i in range(3)])
    assert _to_list(a) == _to_list(t)


def test_default_convert_nested_matches_torch():
    d = {"a": np.arange(3), "b": [np.ones(2, dtype=np.float32), (np.zeros(1),)], "c": Point(np.int64(2), "z"),
         "s": np.array(["x"])}
    a, t = aud.default_convert(d), tud.default_convert(d)
    assert _to_list({k: v for k, v in a.items() if k != "s"}) == _to_list({k: v for k, v in t.items() if k != "s"})
    assert isinstance(a["s"], np.ndarray)
