"""Indexing and joining: t[key], t[key] = v, index_select, gather, scatter_add, index_add,
index_put_, masked_fill, nonzero, cat, stack, split, chunk, unbind.

Every indexing expression is checked against NumPy on random data, for every dtype, on a
contiguous tensor and on two non-contiguous views with the same values; the ops are checked
against NumPy and against torch (a test oracle only); every error is checked with its message.
"""
import numpy as np
import pytest
import torch

import ampc

RNG = np.random.default_rng(1234)
SHAPE = (4, 5, 6)

DTYPES = [ampc.float32, ampc.float16, ampc.bfloat16, ampc.float64, ampc.int64, ampc.int32, ampc.uint8, ampc.bool]
TORCH_DTYPE = {
    ampc.float32: torch.float32, ampc.float16: torch.float16, ampc.bfloat16: torch.bfloat16,
    ampc.float64: torch.float64, ampc.int64: torch.int64, ampc.int32: torch.int32, ampc.uint8: torch.uint8,
    ampc.bool: torch.bool,
}


def values(shape, dtype):
    """Random values exactly representable in `dtype`, as a NumPy array of a matching kind."""
    if dtype == ampc.bool:
        return RNG.random(shape) < 0.5
    if dtype == ampc.uint8:
        return RNG.integers(0, 256, shape).astype(np.uint8)
    if dtype in (ampc.int64, ampc.int32):
        return RNG.integers(-1000, 1000, shape).astype(np.int64 if dtype == ampc.int64 else np.int32)
    return RNG.integers(-200, 200, shape).astype(np.float64) / 4  # exact in fp16/bf16 too


def as_np(t):
    """A tensor's values as NumPy (fp16/bf16 through float32, which holds them exactly)."""
    if t.dtype in (ampc.float16, ampc.bfloat16):
        return t.float().numpy()
    return t.numpy()


def check_equal(t, ref):
    got = as_np(t)
    assert tuple(t.shape) == ref.shape, (tuple(t.shape), ref.shape)
    np.testing.assert_array_equal(got, np.asarray(ref).astype(got.dtype))


def layouts(arr, dtype):
    """(name, tensor) with the values of `arr`: contiguous, permuted, and sliced with a step."""
    yield "contiguous", ampc.tensor(arr, dtype=dtype)
    nd = arr.ndim
    perm = tuple(reversed(range(nd)))
    permuted = ampc.tensor(np.ascontiguousarray(arr.transpose(perm)), dtype=dtype).permute(*perm)
    assert not permuted.is_contiguous() or arr.size <= 1
    yield "permuted", permuted
    big = np.zeros(arr.shape[:-1] + (arr.shape[-1] * 2,), dtype=arr.dtype)
    big[..., ::2] = arr
    yield "stepped", ampc.tensor(big, dtype=dtype)[..., ::2]


def to_tensor_key(key):
    """The same key with every array/list replaced by an ampc tensor."""
    def conv(k):
        if isinstance(k, (list, np.ndarray)):
            a = np.asarray(k)
            if a.dtype.kind == "f":  # []: an empty int64 index
                a = a.astype(np.int64)
            return ampc.from_numpy(np.ascontiguousarray(a))
        return k
    return tuple(conv(k) for k in key) if isinstance(key, tuple) else conv(key)


MASK0 = np.array([True, False, True, True])
MASK01 = RNG.random((4, 5)) < 0.5
MASK12 = RNG.random((5, 6)) < 0.5
MASK_ALL = RNG.random(SHAPE) < 0.3

# Every form of key, with NumPy's meaning (ints before index arrays separated by a slice are
# tested apart: there PyTorch and NumPy differ).
BASIC_KEYS = [
    0, -1, 3, (1, 2), (-4, -5, -6), (3, 4, 5),
    slice(None), slice(1, 3), slice(None, None, 2), slice(-3, None), slice(10, 20), slice(3, 1), slice(-100, 100, 3),
    (slice(1, None, 2), 3), (slice(None), slice(None), slice(1, 5, 3)), (2, slice(None, None, 4), -1),
    Ellipsis, (Ellipsis, 1), (1, Ellipsis), (1, Ellipsis, 2), (Ellipsis, slice(None, 2)),
    None, (None, 1, None), (Ellipsis, None), (slice(None), None, 2), (None, Ellipsis, None), (0, 0, 0, None),
    True, False, (True, 1), (Ellipsis, False), (1, True, slice(2, 4)),
    (),
]
ADVANCED_KEYS = [
    [0, 2], [3, 0, 3], [[0, 1], [2, 3]], [-1, -4], [],
    ([0, 2], [1, 4]), (slice(None), [0, -1]), ([0, 1], slice(None), [2, 3]), ([[0], [1]], [[1, 2]]),
    (slice(None), [[0], [1]], [2, 3]), (Ellipsis, [1, 2]), (None, [1, 2]), ([1, 2], None, [1, 2]),
    ([1, 2], slice(1, 4), None), (slice(None, None, 2), [4, 0], slice(1, None)), ([0, 1], [1, 2], [2, 3]),
    (1, [0, 3], [2, 5]), ([3], 2, [1]),
    np.array([3, 1]), np.array([[2]]), (np.array(2), [1, 0]), (slice(None), np.int64(2), np.array([0, 5])),
    MASK0, MASK01, (slice(None), MASK12), MASK_ALL, (MASK0, slice(1, 3)), (Ellipsis, MASK12),
    (MASK0, [0, 1, 2]), (MASK01, [5]), np.zeros(4, dtype=bool), (None, MASK01, None), [True, False, False, True],
]
ALL_KEYS = BASIC_KEYS + ADVANCED_KEYS


@pytest.mark.parametrize("key", ALL_KEYS, ids=[repr(k)[:40] for k in ALL_KEYS])
def test_getitem_matches_numpy(key):
    for dtype in DTYPES:
        arr = values(SHAPE, dtype)
        ref = arr[key]
        for name, t in layouts(arr, dtype):
            r = t[key]
            assert r.dtype == dtype
            check_equal(r, ref)
            r2 = t[to_tensor_key(key)]  # the same key with ampc index tensors
            check_equal(r2, ref)


@pytest.mark.parametrize("key", BASIC_KEYS, ids=[repr(k)[:40] for k in BASIC_KEYS])
def test_basic_indexing_returns_views(key):
    arr = values(SHAPE, ampc.float32)
    for name, t in layouts(arr, ampc.float32):
        r = t[key]
        if r.numel() == 0:
            continue
        r.fill_(99.0)  # writes through the view
        ref = arr.copy()
        ref[key] = 99.0
        check_equal(t, ref)


def test_advanced_indexing_copies():
    arr = values(SHAPE, ampc.float32)
    t = ampc.tensor(arr)
    r = t[[0, 1]]
    r.fill_(5.0)
    check_equal(t, arr)
    r = t[ampc.from_numpy(MASK01)]
    r.fill_(5.0)
    check_equal(t, arr)


def test_int_before_separated_index_follows_torch():
    """t[0, :, [1, 2]]: PyTorch applies the int first (a view), NumPy counts it as an index array."""
    arr = values(SHAPE, ampc.float32)
    t, tt = ampc.tensor(arr), torch.from_numpy(arr)
    for key in [(0, slice(None), [1, 2]), (1, slice(2, 4), [[0], [5]]), ([1, 2], slice(None), 0)]:
        check_equal(t[key], tt[key].numpy())
    assert tuple(t[0, :, [1, 2]].shape) == (5, 2)


def test_index_tensor_kinds():
    arr = values(SHAPE, ampc.float32)
    t = ampc.tensor(arr)
    idx = np.array([3, 0, 2])
    for dt in (np.int64, np.int32, np.int16, np.uint8):  # NumPy integer arrays index
        check_equal(t[idx.astype(dt)], arr[idx])
    check_equal(t[ampc.tensor([3, 0, 2], dtype=ampc.int32)], arr[idx])
    # an ampc uint8 tensor is a mask (PyTorch's legacy byte masks)
    check_equal(t[ampc.tensor([1, 0, 1, 1], dtype=ampc.uint8)], arr[MASK0])
    # 0-dim tensors: an integer indexes like an int (a view), a bool adds a dim
    r = t.clone()[ampc.tensor(2)]
    check_equal(r, arr[2])
    u = t.clone()
    u[ampc.tensor(2)].fill_(0.0)  # a view
    assert as_np(u)[2].sum() == 0
    check_equal(t[ampc.tensor(True)], arr[None])
    check_equal(t[ampc.tensor(False)], arr[None][:0])
    check_equal(t[np.int64(1), np.int32(2)], arr[1, 2])


def test_zero_size_indexing():
    t = ampc.zeros(0, 3)
    assert tuple(t[:, [1, 2]].shape) == (0, 2)
    assert tuple(t[[]].shape) == (0, 3)
    assert tuple(t[:, ampc.tensor([True, False, True])].shape) == (0, 2)
    e = ampc.zeros(3, 0)
    assert tuple(e[[0, 2]].shape) == (2, 0)
    # like PyTorch: the result has no elements, so no index is read or checked
    assert tuple(e[ampc.tensor([5, 7])].shape) == (2, 0)
    x = ampc.tensor(3.5)
    check_equal(x[...], np.array(3.5, dtype=np.float32))
    check_equal(x[None], np.array([3.5], dtype=np.float32))
    check_equal(x[True], np.array([3.5], dtype=np.float32))


def test_large_gather_path():
    arr = RNG.standard_normal((300, 400)).astype(np.float32)
    t = ampc.tensor(arr)
    rows = RNG.integers(-300, 300, 500)
    cols = RNG.integers(0, 400, (500, 1))
    check_equal(t[rows], arr[rows])
    check_equal(t[rows, cols], arr[rows, cols])
    mask = arr > 0
    check_equal(t[ampc.from_numpy(mask)], arr[mask])


# ---------------------------------------------------------------- setitem

@pytest.mark.parametrize("key", ALL_KEYS, ids=[repr(k)[:40] for k in ALL_KEYS])
def test_setitem_matches_numpy(key):
    for dtype in (ampc.float32, ampc.bfloat16, ampc.int32, ampc.bool):
        arr = values(SHAPE, dtype)
        shape = arr[key].shape
        src = values(shape, dtype)
        num = True if dtype == ampc.bool else 3
        # the destination in every layout: writes go through non-contiguous views too
        for (name, t1), (_, t2) in zip(layouts(arr, dtype), layouts(arr, dtype)):
            t1[key] = num  # a Python number
            ref = arr.copy()
            ref[key] = num
            check_equal(t1, ref)
            t2[to_tensor_key(key)] = ampc.tensor(src, dtype=dtype)  # a tensor of the result's shape
            ref = arr.copy()
            ref[key] = src
            check_equal(t2, ref)
        # a broadcast tensor of another dtype, with a leading 1 (dropped, as PyTorch does)
        if len(shape) >= 1 and dtype != ampc.bool:
            row = values((1,) + shape[-1:], ampc.float64)
            t3 = ampc.tensor(arr, dtype=dtype)
            t3[key] = ampc.tensor(row)
            ref = arr.copy()
            ref[key] = row.reshape(shape[-1:]).astype(ref.dtype)
            check_equal(t3, ref)


def test_setitem_repeated_indices_last_wins():
    t = ampc.zeros(5)
    t[[1, 1, 3]] = ampc.tensor([1.0, 2.0, 3.0])
    check_equal(t, np.array([0, 2, 0, 3, 0], np.float32))


def test_setitem_overlapping_views():
    arr = values((10,), ampc.float32)
    t = ampc.tensor(arr)
    t[1:] = t[:-1]
    ref = arr.copy()
    ref[1:] = arr[:-1].copy()
    check_equal(t, ref)
    t = ampc.tensor(arr)
    t[[0, 1, 2]] = t[1:4]
    ref = arr.copy()
    ref[[0, 1, 2]] = arr[1:4].copy()
    check_equal(t, ref)


def test_setitem_mask_and_int_tensor_self_index():
    arr = RNG.integers(0, 6, 6)
    t = ampc.tensor(arr)
    t[t] = 100  # the index is read before the write
    ref = arr.copy()
    ref[arr] = 100
    check_equal(t, ref)
    x = ampc.tensor(values((3, 4), ampc.float32))
    ref = as_np(x).copy()
    m = ref > 0
    x[ampc.from_numpy(m)] = 0.0
    ref[m] = 0
    check_equal(x, ref)


# ---------------------------------------------------------------- the ops, against torch

def tt(t):
    return torch.from_numpy(as_np(t).copy()).to(TORCH_DTYPE[t.dtype])


def check_torch(t, ref, tol=0.0):
    assert tuple(t.shape) == tuple(ref.shape)
    assert TORCH_DTYPE[t.dtype] == ref.dtype
    got = as_np(t).astype(np.float64)
    exp = ref.double().numpy() if ref.dtype != torch.bool else ref.numpy().astype(np.float64)
    np.testing.assert_allclose(got, exp, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_index_select(dtype):
    for name, t in layouts(values((6, 7), dtype), dtype):
        for dim in (0, 1, -1):
            n = t.shape[dim]
            for idx_dtype in (ampc.int64, ampc.int32):
                idx = ampc.tensor(RNG.integers(0, n, 9), dtype=idx_dtype)
                check_torch(t.index_select(dim, idx), tt(t).index_select(dim, tt(idx)))
                check_torch(ampc.index_select(t, dim, idx), tt(t).index_select(dim, tt(idx)))
        check_torch(t.index_select(0, ampc.tensor(2)), tt(t).index_select(0, torch.tensor(2)))
        check_torch(t.index_select(1, ampc.tensor([], dtype=ampc.int64)), tt(t).index_select(1, torch.tensor([], dtype=torch.long)))
    s = ampc.tensor(3.0)
    check_torch(s.index_select(0, ampc.tensor([0])), torch.tensor(3.0).index_select(0, torch.tensor([0])))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_gather(dtype):
    for name, t in layouts(values((5, 6, 7), dtype), dtype):
        for dim in range(3):
            shape = [3, 4, 5]
            shape[dim] = 8
            idx = ampc.tensor(RNG.integers(0, t.shape[dim], shape))
            check_torch(t.gather(dim, idx), tt(t).gather(dim, tt(idx)))
            check_torch(ampc.gather(t, dim, idx), tt(t).gather(dim, tt(idx)))
        idx = ampc.tensor(RNG.integers(0, 5, (4, 1, 7))).expand(4, 6, 7)  # a broadcast (stride 0) index
        check_torch(t.gather(0, idx), tt(t).gather(0, tt(idx)))
    check_torch(ampc.tensor(2.0).gather(0, ampc.tensor([0, 0])), torch.tensor(2.0).gather(0, torch.tensor([0, 0])))
    assert tuple(ampc.zeros(3, 4).gather(0, ampc.zeros(0, 9, dtype=ampc.int64)).shape) == (0, 9)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_scatter_add(dtype):
    base = values((5, 6), dtype)
    src = values((4, 6), dtype)
    idx = ampc.tensor(RNG.integers(0, 5, (3, 6)))  # repeated indices accumulate
    for name, t in layouts(base, dtype):
        s = ampc.tensor(src, dtype=dtype)
        tol = 1e-2 if dtype in (ampc.float16, ampc.bfloat16) else 0
        check_torch(t.scatter_add(0, idx, s), tt(t).scatter_add(0, tt(idx), tt(s)), tol)
        check_torch(ampc.scatter_add(t, 0, idx, s), tt(t).scatter_add(0, tt(idx), tt(s)), tol)
        ref = tt(t).scatter_add_(0, tt(idx), tt(s))
        assert t.scatter_add_(0, idx, s) is t
        check_torch(t, ref, tol)


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != ampc.bool], ids=str)
def test_index_add(dtype):
    base = values((5, 6), dtype)
    for name, t in layouts(base, dtype):
        for dim in (0, 1):
            n = 7
            shape = [5, 6]
            shape[dim] = n
            src = ampc.tensor(values(tuple(shape), dtype), dtype=dtype)
            idx = ampc.tensor(RNG.integers(0, t.shape[dim], n))
            alpha = 2 if dtype in (ampc.int64, ampc.int32, ampc.uint8) else 1.5
            # fp16/bf16 round after every add, in an order torch does not promise: compare with
            # float64 within a few units in the last place of the largest sums
            tol = {ampc.float16: 0.1, ampc.bfloat16: 1.0}.get(dtype, 0)
            ref = tt(t).index_add(dim, tt(idx), tt(src), alpha=alpha)
            if tol:
                ref = tt(t).double().index_add(dim, tt(idx), tt(src).double(), alpha=alpha)
                ref = ref.to(TORCH_DTYPE[dtype])
            check_torch(t.index_add(dim, idx, src, alpha=alpha), ref, tol)
            check_torch(ampc.index_add(t, dim, idx, src, alpha=alpha), ref, tol)
            u = t.clone()
            assert u.index_add_(dim, idx, src, alpha=alpha) is u
            check_torch(u, ref, tol)


def test_index_add_bool_and_int_wraparound():
    t = ampc.tensor([True, False, False])
    r = t.index_add(0, ampc.tensor([1, 1]), ampc.tensor([True, True]))
    check_torch(r, torch.tensor([True, False, False]).index_add(0, torch.tensor([1, 1]), torch.tensor([True, True])))
    u = ampc.tensor([250, 3], dtype=ampc.uint8).index_add(0, ampc.tensor([0]), ampc.tensor([10], dtype=ampc.uint8))
    check_equal(u, np.array([4, 3], np.uint8))
    big = ampc.tensor([2**63 - 1]).index_add(0, ampc.tensor([0]), ampc.tensor([1]))
    assert big.item() == -(2**63)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_index_put(dtype):
    base = values((5, 6), dtype)
    for name, t in layouts(base, dtype):
        i0 = ampc.tensor(RNG.integers(0, 5, 8))
        i1 = ampc.tensor(RNG.integers(-6, 6, 8))
        v = ampc.tensor(values((8,), dtype), dtype=dtype)
        tol = 2e-2 if dtype in (ampc.float16, ampc.bfloat16) else 0
        for acc in (False, True):
            if not acc:  # unique positions, so the result does not depend on the write order
                flat = RNG.permutation(30)[:8]
                i0, i1 = ampc.tensor(flat // 6), ampc.tensor(flat % 6)
            ref = tt(t).index_put((tt(i0), tt(i1)), tt(v), accumulate=acc)
            u = t.clone()
            assert u.index_put_((i0, i1), v, accumulate=acc) is u
            check_torch(u, ref, tol)
            check_torch(t.index_put((i0, i1), v, acc), ref, tol)
            check_torch(ampc.index_put(t, (i0, i1), v, accumulate=acc), ref, tol)
        u = t.clone()
        v1 = values((1,), dtype)
        u.index_put_((None, ampc.tensor([0, 2])), ampc.tensor(v1, dtype=dtype))  # None: a full slice
        ref = as_np(t).copy()
        ref[:, [0, 2]] = v1
        check_equal(u, ref)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_masked_fill(dtype):
    base = values((4, 5), dtype)
    for name, t in layouts(base, dtype):
        for mshape in ((4, 5), (5,), (4, 1), (1, 1), ()):
            mask = ampc.tensor(RNG.random(mshape) < 0.5)
            for value in (7, True, 2.5, ampc.tensor(3.0)):
                tv = torch.tensor(3.0) if isinstance(value, ampc.Tensor) else value
                ref = tt(t).masked_fill(tt(mask), tv)
                check_torch(t.masked_fill(mask, value), ref)
                check_torch(ampc.masked_fill(t, mask, value), ref)
                u = t.clone()
                assert u.masked_fill_(mask, value) is u
                check_torch(u, ref)
    # out-of-place broadcasts self to the mask's shape
    r = ampc.zeros(4).masked_fill(ampc.ones(3, 4, dtype=ampc.bool), 1)
    check_equal(r, np.ones((3, 4), np.float32))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_nonzero(dtype):
    arr = values((4, 5, 3), dtype)
    if dtype != ampc.bool:
        arr[RNG.random(arr.shape) < 0.5] = 0
    for name, t in layouts(arr, dtype):
        check_equal(t.nonzero(), np.argwhere(arr))
        check_equal(ampc.nonzero(t), np.argwhere(arr))
        for got, exp in zip(t.nonzero(as_tuple=True), np.nonzero(arr)):
            check_equal(got, exp)
    f = ampc.tensor([0.0, -0.0, float("nan"), 1.0])
    check_equal(f.nonzero(), np.array([[2], [3]]))
    assert tuple(ampc.tensor(2.0).nonzero().shape) == (1, 0)
    assert tuple(ampc.tensor(0.0).nonzero().shape) == (0, 0)
    check_equal(ampc.tensor(2.0).nonzero(as_tuple=True)[0], np.array([0]))
    assert tuple(ampc.zeros(0, 3).nonzero().shape) == (0, 2)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_cat_and_stack(dtype):
    a, b = values((2, 3), dtype), values((2, 5), dtype)
    for (_, ta), (_, tb) in zip(layouts(a, dtype), layouts(b, dtype)):
        check_equal(ampc.cat([ta, tb], 1), np.concatenate([a, b], 1))
        check_equal(ampc.cat((ta, tb), dim=-1), np.concatenate([a, b], 1))
        check_equal(ampc.concat([ta, ta], 0), np.concatenate([a, a], 0))
        check_equal(ampc.concatenate([ta, ta, ta], axis=0), np.concatenate([a, a, a], 0))
        for dim in (0, 1, 2, -1):
            check_equal(ampc.stack([ta, ta, ta], dim), np.stack([a, a, a], dim))
    check_equal(ampc.cat([ampc.tensor(a, dtype=dtype)]), a)


def test_cat_promotion_and_legacy_empty():
    tensors = [ampc.ones(2, 2, dtype=d) for d in DTYPES]
    ts = [torch.ones(2, 2, dtype=TORCH_DTYPE[d]) for d in DTYPES]
    for i in range(len(DTYPES)):
        for j in range(len(DTYPES)):
            r = ampc.cat([tensors[i], tensors[j]], 0)
            assert TORCH_DTYPE[r.dtype] == torch.cat([ts[i], ts[j]]).dtype
            r = ampc.stack([tensors[i], tensors[j]])
            assert TORCH_DTYPE[r.dtype] == torch.stack([ts[i], ts[j]]).dtype
    x = ampc.tensor(values((3, 4), ampc.float32))
    empty64 = ampc.zeros(0, dtype=ampc.float64)
    r = ampc.cat([empty64, x, empty64], 1)  # skipped in the shape checks, kept in the promotion
    assert r.dtype == ampc.float64
    check_equal(r, as_np(x))
    assert tuple(ampc.cat([ampc.zeros(0), ampc.zeros(0)]).shape) == (0,)
    check_equal(ampc.cat([ampc.zeros(0, 4), x]), as_np(x))
    check_equal(ampc.stack([ampc.zeros(0), ampc.zeros(0)], 1), np.zeros((0, 2)))
    check_equal(ampc.stack([ampc.tensor(1.0), ampc.tensor(2.0)]), np.array([1.0, 2.0]))


def test_split_chunk_unbind():
    arr = values((7, 6), ampc.float32)
    for name, t in layouts(arr, ampc.float32):
        ref = torch.from_numpy(arr)
        for args in [(2,), (3, 1), (7,), (10,), ([1, 6],), ([2, 2, 3], 0), ([0, 6], 1), ((3, 3), -1)]:
            parts, exp = t.split(*args), ref.split(*args)
            assert isinstance(parts, tuple) and len(parts) == len(exp)
            for p, e in zip(parts, exp):
                check_equal(p, e.numpy())
            parts = ampc.split(t, *args)
            assert len(parts) == len(exp)
        for chunks in (1, 2, 3, 4, 5, 6, 7, 8):
            for dim in (0, 1):
                parts, exp = t.chunk(chunks, dim), ref.chunk(chunks, dim)
                assert len(parts) == len(exp)
                for p, e in zip(parts, exp):
                    check_equal(p, e.numpy())
        for dim in (0, 1, -1):
            parts = t.unbind(dim)
            assert len(parts) == t.shape[dim]
            for p, e in zip(parts, ref.unbind(dim)):
                check_equal(p, e.numpy())
        # pieces are views
        t.split(3)[1].fill_(0.0)
        assert as_np(t)[3:6].sum() == 0
    assert len(ampc.zeros(0).chunk(3)) == 3
    assert len(ampc.zeros(0).split(0)) == 1
    assert len(ampc.unbind(ampc.zeros(2, 0), 1)) == 0
    assert len(ampc.chunk(ampc.zeros(5), 4)) == 3


def test_len():
    assert len(ampc.zeros(3, 4)) == 3
    assert len(ampc.zeros(0)) == 0
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(ampc.tensor(1.0))


# ---------------------------------------------------------------- errors

X = ampc.tensor(np.arange(12.0, dtype=np.float32).reshape(3, 4))
L = ampc.tensor
B = ampc.bool

ERRORS = [
    (lambda: X[5], IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda: X[-4], IndexError, "index -4 is out of bounds for dimension 0 with size 3"),
    (lambda: X[0, 5], IndexError, "index 5 is out of bounds for dimension 1 with size 4"),
    (lambda: X[:, 5], IndexError, "index 5 is out of bounds for dimension 1 with size 4"),
    (lambda: X[None, 5], IndexError, "index 5 is out of bounds for dimension 1 with size 3"),
    (lambda: X[::-1], ValueError, "step must be greater than zero"),
    (lambda: X[:, ::-2], ValueError, "step must be greater than zero"),
    (lambda: X[0, 0, 0], IndexError, "too many indices for tensor of dimension 2"),
    (lambda: X[..., ...], IndexError, "an index can only have a single ellipsis"),
    (lambda: X[1.5], IndexError, "only integers, slices"),
    (lambda: X["a"], IndexError, "only integers, slices"),
    (lambda: X[[1.0]], IndexError, "tensors used as indices must be long, int, byte or bool tensors"),
    (lambda: X[L([1.0])], IndexError, "tensors used as indices must be long, int, byte or bool tensors"),
    (lambda: X[np.array([0.5])], IndexError, "tensors used as indices must be long, int, byte or bool tensors"),
    (lambda: X[L([5])], IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda: X[:, L([-5])], IndexError, "index -5 is out of bounds for dimension 1 with size 4"),
    (lambda: X[[0, 3]], IndexError, "index 3 is out of bounds for dimension 0 with size 3"),
    (lambda: X[L([True, False, True, True])], IndexError,
     r"The shape of the mask \[4\] at index 0 does not match the shape of the indexed tensor \[3, 4\] at index 0"),
    (lambda: X[:, L([True, False, True])], IndexError,
     r"The shape of the mask \[3\] at index 0 does not match the shape of the indexed tensor \[3, 4\] at index 1"),
    (lambda: X[L([0, 1]), L([0, 1, 2])], IndexError,
     r"shape mismatch: indexing tensors could not be broadcast together with shapes \[2\], \[3\]"),
    (lambda: ampc.tensor(1.0)[0], IndexError, "invalid index of a 0-dim tensor"),
    # index_select, gather, scatter_add and index_add raise RuntimeError for a bad index, and take
    # no negative index (torch); advanced indexing raises IndexError and counts from the end
    # (index_select raises IndexError, as torch's row selection path does)
    (lambda: X.index_select(0, L([5])), IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda: X.index_select(0, L([-1])), IndexError, "index -1 is out of bounds for dimension 0 with size 3"),
    (lambda: X.index_select(1, L([-1])), IndexError, "index -1 is out of bounds for dimension 1 with size 4"),
    (lambda: X.index_select(0, L([[1]])), IndexError, "Index is supposed to be a vector"),
    (lambda: X.index_select(0, L([1.0])), RuntimeError, "Expected dtype int32 or int64 for index"),
    (lambda: X.index_select(2, L([0])), IndexError, r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"),
    (lambda: ampc.tensor(1.0).index_select(0, L([0, 0])), RuntimeError, "Index to scalar can have only 1 value"),
    (lambda: X.gather(0, L([[5]])), RuntimeError, "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda: X.gather(1, L([[-5]])), RuntimeError, "index -5 is out of bounds for dimension 1 with size 4"),
    (lambda: X.gather(1, L([[-1]])), RuntimeError, "index -1 is out of bounds for dimension 1 with size 4"),
    (lambda: X.gather(0, L([5])), RuntimeError, "Index tensor must have the same number of dimensions as input tensor"),
    (lambda: X.gather(0, L([[1.0]])), RuntimeError, "Expected dtype int32/int64 for index"),
    (lambda: X.gather(0, ampc.zeros(2, 5, dtype=ampc.int64)), RuntimeError,
     r"Size does not match at dimension 1 expected index \[2, 5\] to be no larger than self \[3, 4\] apart from dimension 0"),
    (lambda: X.scatter_add(0, ampc.zeros(2, 5, dtype=ampc.int64), ampc.ones(2, 5)), RuntimeError,
     r"Expected index \[2, 5\] to be no larger than self \[3, 4\] apart from dimension 0 and to be no larger size than src \[2, 5\]"),
    (lambda: X.scatter_add(0, ampc.zeros(2, 3, dtype=ampc.int64), ampc.ones(2, 2)), RuntimeError,
     "to be no larger size than src"),
    (lambda: X.scatter_add(0, ampc.zeros(2, 3, dtype=ampc.int64), ampc.ones(2, 3, dtype=ampc.float64)), RuntimeError,
     "Expected self.dtype to be equal to src.dtype"),
    (lambda: X.scatter_add(0, ampc.full((2, 3), 7), ampc.ones(2, 3)), RuntimeError,
     "index 7 is out of bounds for dimension 0 with size 3"),
    (lambda: X.scatter_add(0, ampc.full((2, 3), -1), ampc.ones(2, 3)), RuntimeError,
     "index -1 is out of bounds for dimension 0 with size 3"),
    (lambda: X.scatter_add(0, ampc.full((2,), 1), ampc.ones(2, 3)), RuntimeError,
     "Index tensor must have the same number of dimensions as self tensor"),
    (lambda: X.index_add(0, L([5]), ampc.ones(1, 4)), RuntimeError, "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda: X.index_add(0, L([-1]), ampc.ones(1, 4)), RuntimeError, "index -1 is out of bounds for dimension 0 with size 3"),
    (lambda: X.index_add(0, L([1]), ampc.ones(1, 4, dtype=ampc.float64)), RuntimeError,
     r"self \(Float\) and source \(Double\) must have the same scalar type"),
    (lambda: X.index_add(0, L([1]), ampc.ones(2, 4)), RuntimeError,
     r"Number of indices \(1\) should be equal to source.size\(dim\): \(2\), for dim: 0"),
    (lambda: X.index_add(0, L([1]), ampc.ones(1, 5)), RuntimeError,
     r"source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = \[3, 4\] source.shape = \[1, 5\]"),
    (lambda: X.index_add(0, L([1.0]), ampc.ones(1, 4)), RuntimeError, "Expected dtype int32/int64 for index but got: Float"),
    (lambda: X.index_add(0, L([[1]]), ampc.ones(1, 4)), IndexError,
     r"Index is supposed to be a vector, but got dim: 2 with type: Long and size: \[1, 1\]"),
    (lambda: X.masked_fill(L([1.0, 0, 0, 0]), 1), RuntimeError,
     "masked_fill_ only supports boolean masks, but got mask with dtype float"),
    (lambda: X.masked_fill(L([1, 0, 0, 0], dtype=ampc.uint8), 1), RuntimeError, "but got mask with dtype unsigned char"),
    (lambda: X.masked_fill(L([1, 0, 0, 0]), 1), RuntimeError, "but got mask with dtype long int"),
    (lambda: X.masked_fill(L([True, False, True]), 1), RuntimeError,
     r"The size of tensor a \(4\) must match the size of tensor b \(3\)"),
    (lambda: ampc.zeros(4).masked_fill_(ampc.ones(3, 4, dtype=B), 1), RuntimeError,
     r"output with shape \[4\] doesn't match the broadcast shape \[3, 4\]"),
    (lambda: X.masked_fill(ampc.ones(4, dtype=B), L([1.0, 2.0])), RuntimeError,
     r"only supports a 0-dimensional value tensor, but got tensor with 1 dimension\(s\)"),
    (lambda: ampc.cat([X, ampc.zeros(2, 3)], 1), RuntimeError,
     "Sizes of tensors must match except in dimension 1. Expected size 3 but got size 2 for tensor number 1 in the list."),
    (lambda: ampc.cat([X, ampc.zeros(2, 3)], 0), RuntimeError,
     "Sizes of tensors must match except in dimension 0. Expected size 4 but got size 3 for tensor number 1 in the list."),
    (lambda: ampc.cat([X, ampc.zeros(2, 4, 5)], 0), RuntimeError, "Tensors must have same number of dimensions: got 2 and 3"),
    (lambda: ampc.cat([ampc.zeros(0), X], 5), IndexError, r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 5\)"),
    (lambda: ampc.cat([X, ampc.tensor(1.0)], 0), RuntimeError, r"zero-dimensional tensor \(at position 1\) cannot be concatenated"),
    (lambda: ampc.cat([], 0), ValueError, "expected a non-empty list of Tensors"),
    (lambda: ampc.cat([X, 1]), TypeError, "expected Tensor as element 1 in argument 0, but got int"),
    (lambda: ampc.cat(X), TypeError, "must be tuple of Tensors"),
    (lambda: ampc.stack([X, ampc.zeros(3, 5)]), RuntimeError,
     r"stack expects each tensor to be equal size, but got \[3, 4\] at entry 0 and \[3, 5\] at entry 1"),
    (lambda: ampc.stack([]), RuntimeError, "stack expects a non-empty TensorList"),
    (lambda: ampc.stack([X, X], 3), IndexError, r"Dimension out of range \(expected to be in range of \[-3, 2\], but got 3\)"),
    (lambda: X.split(-1), RuntimeError, "split expects split_size be non-negative, but got split_size=-1"),
    (lambda: X.split(0), RuntimeError, "split_size can only be 0 if dimension size is 0, but got dimension size of 3"),
    (lambda: X.split([1, 1]), RuntimeError,
     r"split_with_sizes expects split_sizes to sum exactly to 3 \(input tensor's size at dimension 0\), but got split_sizes=\[1, 1\]"),
    (lambda: X.split([-1, 4]), RuntimeError,
     r"split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=\[-1, 4\]"),
    (lambda: X.chunk(0), RuntimeError, "chunk expects `chunks` to be greater than 0, got: 0"),
    (lambda: ampc.tensor(1.0).chunk(1), RuntimeError, "chunk expects at least a 1-dimensional tensor"),
    (lambda: ampc.tensor(1.0).split(1), RuntimeError, "split expects at least a 1-dimensional tensor"),
    (lambda: ampc.tensor(1.0).unbind(), IndexError, "Dimension specified as 0 but tensor has no dimensions"),
    (lambda: X.unbind(2), IndexError, "Dimension out of range"),
    (lambda: X.clone().index_put_((L([1]),), L([1.0], dtype=ampc.float64)), RuntimeError,
     "Index put requires the source and destination dtypes match, got Float for the destination and Double for the source."),
    (lambda: X.clone().index_put_((L([1]),), ampc.ones(2)), RuntimeError,
     r"shape mismatch: value tensor of shape \[2\] cannot be broadcast to indexing result of shape \[1, 4\]"),
    (lambda: X.clone().index_put_((L([7]),), ampc.ones(1)), IndexError, "index 7 is out of bounds for dimension 0 with size 3"),
    (lambda: X.clone().index_put_((L([1]), L([1]), L([1])), ampc.ones(1)), IndexError,
     "too many indices for tensor of dimension 2"),
    (lambda: X.index_put_(L([1]), ampc.ones(1)), TypeError, "must be tuple of Tensors"),
    (lambda: X.index_select("a", L([0])), TypeError, "argument 'dim' must be int"),
    (lambda: ampc.index_select([1], 0, L([0])), TypeError, "argument 'input' must be Tensor"),
    (lambda: ampc.zeros(*([2] * 8))[[0], [0], [0], [0], [0], [0]], NotImplementedError, "at most 5 index tensors"),
]


@pytest.mark.parametrize("fn,exc,match", ERRORS, ids=[m[:50] for _, _, m in ERRORS])
def test_errors(fn, exc, match):
    with pytest.raises(exc, match=match):
        fn()


def _set(t, key, value):
    t[key] = value


SET_ERRORS = [
    (lambda: _set(X.clone(), 0, [1.0, 2.0, 3.0, 4.0]), TypeError, "can't assign a list"),
    (lambda: _set(X.clone(), 0, np.ones(4)), TypeError, "can't assign a numpy.ndarray"),
    (lambda: _set(X.clone(), 0, ampc.ones(2, 1, 4)), RuntimeError, "cannot be broadcast"),
    (lambda: _set(X.clone(), [0, 1], ampc.ones(3, 4)), RuntimeError,
     r"shape mismatch: value tensor of shape \[3, 4\] cannot be broadcast to indexing result of shape \[2, 4\]"),
    (lambda: _set(X.clone(), [0, 5], 1.0), IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda: _set(X.clone(), (slice(None), 9), 1.0), IndexError, "index 9 is out of bounds for dimension 1 with size 4"),
    (lambda: _set(X.clone(), slice(None, None, -1), 1.0), ValueError, "step must be greater than zero"),
]


@pytest.mark.parametrize("fn,exc,match", SET_ERRORS, ids=[m[:50] for _, _, m in SET_ERRORS])
def test_setitem_errors(fn, exc, match):
    with pytest.raises(exc, match=match):
        fn()


def test_failed_writes_leave_tensor_unchanged():
    t = X.clone()
    with pytest.raises(IndexError):
        t[[0, 1, 3]] = ampc.tensor([7.0, 8.0, 9.0])[:, None]
    with pytest.raises(IndexError):
        t.index_put_((L([0, 9]),), ampc.tensor(1.0), accumulate=True)
    with pytest.raises(RuntimeError):
        t.scatter_add_(1, L([[0, 4]]), ampc.ones(1, 2))
    with pytest.raises(RuntimeError):
        t.index_add_(1, L([0, -1]), ampc.ones(3, 2))
    check_equal(t, as_np(X))
    with pytest.raises(TypeError, match="does not support item deletion"):
        del t[0]


# ---------------------------------------------------------------- gradients, against torch

GRAD_CASES = {
    "index": lambda L, x: [x[L.tensor([2, 0, 2])], x[L.tensor([[1], [0]]), L.tensor([3, 3, 0])]],
    "mask": lambda L, x: [x[L.tensor(np.arange(12).reshape(3, 4) % 3 == 0)]],
    "index_select": lambda L, x: [x.index_select(1, L.tensor([3, 3, 1]))],
    "gather": lambda L, x: [x.gather(0, L.tensor([[2, 0, 0, 1], [2, 2, 1, 0]]))],
    "scatter_add": lambda L, x: [L.zeros(3, 4).scatter_add(0, L.tensor([[2, 0, 0, 1], [1, 1, 1, 1], [0, 2, 0, 2]]), x)],
    "index_add": lambda L, x: [L.zeros(2, 4).index_add(0, L.tensor([1, 1, 0]), x, alpha=3.0)],
    "index_put": lambda L, x: [L.zeros(3, 4).index_put((L.tensor([0, 2]),), x.index_select(0, L.tensor([1])), True),
                               x.index_put((L.tensor([1, 1]), L.tensor([0, 3])), L.zeros(2), accumulate=False)],
    "masked_fill": lambda L, x: [x.masked_fill(L.tensor([True, False, False, True]), 0.5)],
    "cat": lambda L, x: [L.cat([x, x.index_select(0, L.tensor([1])), L.zeros(0)], 0)],
    "stack": lambda L, x: [L.stack([x, x], 2)],
    "split": lambda L, x: list(x.split([1, 3], 1)),
    "chunk": lambda L, x: [x.chunk(2, 0)[1]],
    "unbind": lambda L, x: list(x.unbind(0))[::2],
}


@pytest.mark.parametrize("case", list(GRAD_CASES))
def test_gradients_match_torch(case):
    arr = values((3, 4), ampc.float32).astype(np.float32)
    grads = []
    for lib in (ampc, torch):
        x = lib.tensor(arr, requires_grad=True)
        outs = GRAD_CASES[case](lib, x)
        for i, o in enumerate(outs):
            g = np.arange(np.prod(tuple(o.shape)), dtype=np.float32).reshape(tuple(o.shape)) + i
            o.backward(lib.tensor(g))
        grads.append(np.array(x.grad.tolist(), dtype=np.float32))
    np.testing.assert_array_equal(grads[0], grads[1])


RANGE_KEYS = [
    range(3), range(0), range(3, 0, -1), range(1, 4, 2), range(-2, 2),
    (range(4), [0, 2, 1, 4]), (slice(None), range(1, 5)), (range(2), range(2), range(3, 5)),
    (Ellipsis, range(2)), (None, range(2), 1),
]


@pytest.mark.parametrize("key", RANGE_KEYS, ids=repr)
@pytest.mark.parametrize("dtype", [ampc.float32, ampc.bfloat16, ampc.int64, ampc.bool], ids=str)
def test_range_index_matches_torch(key, dtype):
    """A Python range indexes like the list of its ints (x[range(n), y] = v in training loops)."""
    a = values(SHAPE, dtype)
    ours, ref = ampc.from_numpy(a).to(dtype), torch.from_numpy(a).to(TORCH_DTYPE[dtype])
    check_torch(ours[key], ref[key])
    v = ampc.ones(1, dtype=dtype)
    ours[key] = v
    ref[key] = torch.ones(1, dtype=TORCH_DTYPE[dtype])
    check_torch(ours, ref)


def test_range_index_errors_match_torch():
    x = ampc.zeros(3, 4)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        x[range(6)]
    y = ampc.zeros(4, 3)
    labels = ampc.tensor([0, 2, 1, 1])
    y[range(4), labels] = 1.0  # the one-hot idiom
    assert y.sum(1).tolist() == [1.0] * 4 and y[range(4), labels].tolist() == [1.0] * 4
