"""ampc.utils.data: datasets, samplers, default_collate and DataLoader (both the gather fast path
and the per-sample path), checked against torch.utils.data's documented behaviour."""
import collections

import numpy as np
import pytest

import ampc
from ampc.utils.data import (
    BatchSampler, ConcatDataset, DataLoader, Dataset, IterableDataset, RandomSampler, SequentialSampler,
    Subset, SubsetRandomSampler, TensorDataset, default_collate, random_split,
)

rng = np.random.default_rng(0)


def _xy(n=37):
    x = ampc.from_numpy(rng.standard_normal((n, 3, 2)).astype(np.float32))
    y = ampc.from_numpy(rng.integers(0, 10, n).astype(np.int64))
    return x, y


class ListDataset(Dataset):
    """A plain map-style dataset: forces the per-sample path."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def __getitem__(self, i):
        return self.x[i], self.y[i]

    def __len__(self):
        return self.x.shape[0]


def test_tensor_dataset_items_and_errors():
    x, y = _xy()
    ds = TensorDataset(x, y)
    assert len(ds) == 37
    a, b = ds[5]
    np.testing.assert_array_equal(a.numpy(), x.numpy()[5])
    assert b.item() == y.numpy()[5]
    with pytest.raises(ValueError, match="Size mismatch between tensors"):
        TensorDataset(x, y[:3])
    with pytest.raises(ValueError, match="at least one tensor"):
        TensorDataset()


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("batch_size", [1, 5, 37, 50])
def test_sequential_batches_fast_and_slow_agree(batch_size, drop_last):
    x, y = _xy()
    fast = list(DataLoader(TensorDataset(x, y), batch_size=batch_size, drop_last=drop_last))
    slow = list(DataLoader(ListDataset(x, y), batch_size=batch_size, drop_last=drop_last))
    n_full, rest = divmod(37, batch_size)
    expect = n_full + (0 if drop_last or rest == 0 else 1)
    assert len(fast) == len(slow) == expect == len(DataLoader(TensorDataset(x, y), batch_size=batch_size,
                                                                drop_last=drop_last))
    start = 0
    for (fx, fy), (sx, sy) in zip(fast, slow):
        assert isinstance(fx, ampc.Tensor) and fx.dtype == ampc.float32 and fy.dtype == ampc.int64
        np.testing.assert_array_equal(fx.numpy(), sx.numpy())
        np.testing.assert_array_equal(fy.numpy(), sy.numpy())
        np.testing.assert_array_equal(fx.numpy(), x.numpy()[start:start + fx.shape[0]])
        start += fx.shape[0]


def test_batches_are_lists_like_torch():
    x, y = _xy(8)
    batch = next(iter(DataLoader(TensorDataset(x, y), batch_size=4)))
    assert isinstance(batch, list) and len(batch) == 2  # torch's default_collate turns tuples into lists


def test_shuffle_is_a_permutation_reproducible_and_same_on_both_paths():
    x, y = _xy(50)
    ids = ampc.arange(50)
    def order(ds_cls, seed):
        dl = DataLoader(ds_cls(ids, y), batch_size=8, shuffle=True, generator=ampc.Generator().manual_seed(seed))
        return np.concatenate([b[0].numpy() for b in dl])
    a, b, c = order(TensorDataset, 3), order(ListDataset, 3), order(TensorDataset, 4)
    assert sorted(a.tolist()) == list(range(50))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert not np.array_equal(a, np.arange(50))


def test_shuffle_follows_global_seed():
    ids = ampc.arange(30)
    ds = TensorDataset(ids)
    ampc.manual_seed(11)
    first = np.concatenate([b[0].numpy() for b in DataLoader(ds, batch_size=7, shuffle=True)])
    second = np.concatenate([b[0].numpy() for b in DataLoader(ds, batch_size=7, shuffle=True)])
    ampc.manual_seed(11)
    again = np.concatenate([b[0].numpy() for b in DataLoader(ds, batch_size=7, shuffle=True)])
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, second)  # each epoch draws a new order


def test_generator_leaves_global_rng_untouched():
    ampc.manual_seed(5)
    expect = ampc.rand(3).numpy()
    ampc.manual_seed(5)
    list(DataLoader(TensorDataset(ampc.arange(10)), batch_size=3, shuffle=True,
                    generator=ampc.Generator().manual_seed(1)))
    np.testing.assert_array_equal(ampc.rand(3).numpy(), expect)


def test_fast_path_on_non_contiguous_and_other_dtypes():
    base = ampc.from_numpy(rng.standard_normal((6, 20)).astype(np.float32))
    xt = base.t()  # (20, 6) non-contiguous
    xh = ampc.from_numpy(rng.standard_normal((20, 2)).astype(np.float16))
    xb = ampc.from_numpy(rng.standard_normal((20,)).astype(np.float32)).bfloat16()
    mask = ampc.from_numpy(rng.integers(0, 2, 20).astype(np.bool_))
    out = list(DataLoader(TensorDataset(xt, xh, xb, mask), batch_size=6))
    got = [np.concatenate([b[i].float().numpy() if i < 3 else b[i].numpy() for b in out]) for i in range(4)]
    np.testing.assert_array_equal(got[0], base.numpy().T)
    np.testing.assert_array_equal(got[1], xh.float().numpy())
    np.testing.assert_array_equal(got[2], xb.float().numpy())
    np.testing.assert_array_equal(got[3], mask.numpy())
    assert out[0][1].dtype == ampc.float16 and out[0][2].dtype == ampc.bfloat16 and out[0][3].dtype == ampc.bool


def test_zero_size_dataset():
    ds = TensorDataset(ampc.zeros(0, 3))
    assert list(DataLoader(ds, batch_size=4)) == []
    assert len(DataLoader(ds, batch_size=4)) == 0


def test_subset_and_random_split_counts_and_fractions():
    x, y = _xy(10)
    parts = random_split(TensorDataset(x, y), [7, 3], generator=ampc.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [7, 3]
    assert sorted(parts[0].indices + parts[1].indices) == list(range(10))
    # fractions: floor, then the remainder one by one from the first split (torch's rule)
    assert [len(p) for p in random_split(range(10), [0.34, 0.33, 0.33])] == [4, 3, 3]
    again = random_split(TensorDataset(x, y), [7, 3], generator=ampc.Generator().manual_seed(0))
    assert again[0].indices == parts[0].indices
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        random_split(range(10), [5, 6])
    with pytest.raises(ValueError, match="Fraction at index 1 is not between 0 and 1"):
        random_split(range(10), [0.5, 1.5, -1.0])


def test_subset_of_tensor_dataset_uses_fast_path_and_matches():
    x, y = _xy(20)
    ds = TensorDataset(x, y)
    sub = Subset(Subset(ds, [19, 3, 4, 7, 0, -1]), [5, 1, 0, 2])  # nested, with a negative index
    assert ds._tensor_columns() is not None and sub._tensor_columns() is not None
    (bx, by), = list(DataLoader(sub, batch_size=4))
    want = [19, 3, 19, 4]
    np.testing.assert_array_equal(bx.numpy(), x.numpy()[want])
    np.testing.assert_array_equal(by.numpy(), y.numpy()[want])
    with pytest.raises(IndexError, match="out of range"):
        list(DataLoader(Subset(ds, [0, 20]), batch_size=2))


def test_default_collate_structures():
    batch = [{"a": 1.5, "b": (1, np.int32(2)), "s": "x", "t": ampc.ones(2), "n": np.ones(2)},
             {"a": 2.5, "b": (3, np.int32(4)), "s": "y", "t": ampc.zeros(2), "n": np.zeros(2)}]
    out = default_collate(batch)
    assert out["a"].dtype == ampc.float64 and out["a"].tolist() == [1.5, 2.5]
    assert isinstance(out["b"], list) and out["b"][0].tolist() == [1, 3] and out["b"][0].dtype == ampc.int64
    assert out["b"][1].dtype == ampc.int32
    assert out["s"] == ["x", "y"]
    assert out["t"].shape == (2, 2) and out["n"].dtype == ampc.float64
    Point = collections.namedtuple("Point", "x y")
    p = default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert isinstance(p, Point) and p.x.tolist() == [1, 3]
    assert default_collate([True, False]).dtype == ampc.bool
    od = default_collate([collections.OrderedDict(k=1)] * 2)
    assert isinstance(od, collections.OrderedDict)
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        default_collate([object(), object()])
    with pytest.raises(RuntimeError):
        default_collate([ampc.ones(2), ampc.ones(3)])


def test_custom_collate_and_sampler_and_batch_sampler():
    x, y = _xy(10)
    ds = TensorDataset(x, y)
    dl = DataLoader(ds, batch_size=4, collate_fn=lambda b: len(b))
    assert list(dl) == [4, 4, 2]
    dl = DataLoader(ds, batch_size=3, sampler=SequentialSampler(range(6)))
    assert [b[1].shape[0] for b in dl] == [3, 3]
    dl = DataLoader(ds, batch_sampler=[[0, 1], [9]])
    out = list(dl)
    np.testing.assert_array_equal(out[1][0].numpy(), x.numpy()[[9]])
    assert list(BatchSampler(range(7), 3, drop_last=True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(7), 3, drop_last=False)) == 3
    s = SubsetRandomSampler([2, 4, 6], generator=ampc.Generator().manual_seed(0))
    assert sorted(s) == [2, 4, 6] and len(s) == 3


def test_random_sampler_options():
    g = ampc.Generator().manual_seed(0)
    draws = list(RandomSampler(range(4), replacement=True, num_samples=20, generator=g))
    assert len(draws) == 20 and set(draws) <= {0, 1, 2, 3}
    long = list(RandomSampler(range(4), num_samples=10, generator=g))
    assert len(long) == 10 and sorted(long[:4]) == [0, 1, 2, 3] and sorted(long[4:8]) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        RandomSampler(range(4), num_samples=0)
    with pytest.raises(ValueError, match="batch_size should be a positive integer value"):
        BatchSampler(range(4), 0, False)


def test_batch_size_none_converts_single_samples():
    x, y = _xy(3)
    out = list(DataLoader(ListDataset(x, y), batch_size=None))
    assert len(out) == 3 and isinstance(out[0], list) and out[0][0].shape == (3, 2)
    out = list(DataLoader([np.arange(3)], batch_size=None))
    assert isinstance(out[0], ampc.Tensor) and out[0].tolist() == [0, 1, 2]


def test_iterable_dataset_and_concat():
    class Stream(IterableDataset):
        def __iter__(self):
            return iter(range(7))

        def __len__(self):
            return 7
    assert [b.tolist() for b in DataLoader(Stream(), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert len(DataLoader(Stream(), batch_size=3, drop_last=True)) == 2
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        DataLoader(Stream(), shuffle=True)
    cat = ConcatDataset([range(3), range(10, 12)])
    assert len(cat) == 5 and cat[3] == 10 and cat[-1] == 11


def test_argument_errors_and_accepted_options():
    ds = TensorDataset(ampc.arange(10))
    with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
        DataLoader(ds, shuffle=True, sampler=SequentialSampler(ds))
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive"):
        DataLoader(ds, batch_size=2, batch_sampler=[[0]])
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        DataLoader(ds, num_workers=-1)
    calls = []
    dl = DataLoader(ds, batch_size=4, num_workers=2, pin_memory=True, worker_init_fn=calls.append,
                    persistent_workers=True, prefetch_factor=2)
    assert [b[0].tolist() for b in dl][0] == [0, 1, 2, 3]
    assert calls == []  # worker_init_fn ran in the worker processes (tests/test_data_more.py)


def test_random_sampler_huge_num_samples_is_lazy():
    """torch draws replacement samples 32 at a time; ampc a chunk at a time: 10**10 draws must not
    allocate 80 GB up front, and the first batches come at once on both DataLoader paths."""
    import itertools
    import resource

    import ampc.utils.data.sampler as sampler_mod

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    s = RandomSampler(range(7), replacement=True, num_samples=10 ** 10, generator=ampc.Generator().manual_seed(3))
    assert len(s) == 10 ** 10
    head = list(itertools.islice(iter(s), 1000))
    assert len(head) == 1000 and set(head) <= set(range(7)) and len(set(head)) == 7
    x, y = _xy(7)
    for ds in (TensorDataset(x, y), ListDataset(x, y)):
        dl = DataLoader(ds, batch_size=4, sampler=RandomSampler(ds, replacement=True, num_samples=10 ** 10))
        assert len(dl) == 25 * 10 ** 8
        batches = list(itertools.islice(iter(dl), 3))
        assert [tuple(b[0].shape) for b in batches] == [(4, 3, 2)] * 3
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kb < 200 * 1024, grown_kb  # far below one precomputed order (80 GB)
    assert sampler_mod._CHUNK < 10 ** 6


@pytest.mark.parametrize("replacement", [True, False])
@pytest.mark.parametrize("drop_last", [True, False])
def test_chunked_order_is_the_same_on_both_paths(replacement, drop_last):
    """An epoch longer than one chunk: the gather fast path (batches straddle chunk borders) and
    the per-sample path visit the same indices for the same seed, and every index is used."""
    import ampc.utils.data.sampler as sampler_mod

    n, want = 1000, 2 * sampler_mod._CHUNK + 77
    x = ampc.arange(n, dtype=ampc.float32).reshape(n, 1)
    y = ampc.arange(n)
    orders = []
    for ds in (TensorDataset(x, y), ListDataset(x, y)):
        s = RandomSampler(ds, replacement=replacement, num_samples=want, generator=ampc.Generator().manual_seed(5))
        batches = list(DataLoader(ds, batch_size=1000, sampler=s, drop_last=drop_last))
        assert all(len(b[1]) == 1000 for b in batches[:-1])
        assert len(batches) == (want // 1000 if drop_last else -(-want // 1000))
        orders.append(ampc.cat([b[1] for b in batches]).tolist())
        assert orders[-1] == ampc.cat([b[0] for b in batches]).reshape(-1).long().tolist()
    assert orders[0] == orders[1]
    expect = list(RandomSampler(range(n), replacement=replacement, num_samples=want,
                                generator=ampc.Generator().manual_seed(5)))
    assert orders[0] == expect[:len(orders[0])]
    if not replacement:  # whole permutations first, then the head of another
        for k in range(len(orders[0]) // n):
            assert sorted(orders[0][k * n:(k + 1) * n]) == list(range(n))
