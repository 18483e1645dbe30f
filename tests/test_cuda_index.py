"""The CUDA index kernels against the CPU backend: index_select, gather, scatter_add, index_add,
index_put (with and without accumulate), advanced indexing (a[idx], a[mask], a[i, j], writes),
masked_fill, nonzero, embedding forward and backward, and the deferred IndexError of an
out-of-range index on the GPU.

Every op runs on the same inputs on the CPU and on `cuda` (tests/conftest.py). Moves are exact
for every dtype. Accumulating scatters use atomics on the GPU, so the order of the additions
differs from the CPU's: the inputs are small integers, whose sums are exact in every dtype and
so equal whatever the order; one case per op uses random floats with a tolerance instead.
"""
import ml_dtypes
import numpy as np
import pytest

import ampc
import ampc.nn.functional as F
from helpers import deferred_index_error, FLOATS, host

DTYPES = [ampc.float32, ampc.float16, ampc.bfloat16, ampc.float64, ampc.int64, ampc.int32, ampc.uint8, ampc.bool]
NP_OF = {ampc.float32: np.float32, ampc.float16: np.float16, ampc.bfloat16: ml_dtypes.bfloat16,
         ampc.float64: np.float64, ampc.int64: np.int64, ampc.int32: np.int32, ampc.uint8: np.uint8,
         ampc.bool: np.bool_}
TOL = {ampc.float32: 1e-5, ampc.float16: 1e-3, ampc.bfloat16: 1e-2, ampc.float64: 1e-12}


def rng(seed=0):
    return np.random.default_rng(seed)


def sample(shape, dtype, seed=0, small=False):
    """A CPU tensor of random values: small integers (exact sums in every dtype) or normals."""
    r = rng(seed)
    if dtype == ampc.bool:
        a = r.random(shape) < 0.5
    elif dtype == ampc.uint8:
        a = r.integers(0, 4 if small else 256, shape)
    elif small or not dtype.is_floating_point:
        a = r.integers(-4, 5, shape) if small else r.integers(-1000, 1000, shape)
    else:
        a = r.standard_normal(shape)
    return ampc.tensor(np.asarray(a).astype(NP_OF[dtype]), dtype=dtype)


def index(values, dtype=ampc.int64):
    return ampc.tensor(np.asarray(values, dtype=np.int64), dtype=dtype)


def check_same(got, want, tol=0.0):
    """got (any device) equals the CPU result want: exactly, or within a relative tolerance."""
    assert got.dtype == want.dtype and tuple(got.shape) == tuple(want.shape)
    if tol:
        np.testing.assert_allclose(host(got), host(want), rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(host(got), host(want))


def layouts(t):
    """(name, tensor) with the values of t, fresh (safe to write): contiguous, and a transposed
    (non-contiguous) view."""
    yield "contiguous", t.clone()
    if t.dim() >= 2:
        yield "transposed", t.transpose(0, -1).contiguous().transpose(0, -1)


# ---------------------------------------------------------------- gather form

@pytest.mark.parametrize("dtype", DTYPES)
def test_index_select(cuda, dtype):
    x = sample((7, 5, 6), dtype)
    for dim, idx in [(0, [6, 0, 0, 6, 3]), (1, [4, 0, 2]), (2, [5]), (-1, [])]:
        for (name, xl), (_, xc) in zip(layouts(x), layouts(x.to(cuda))):
            for idt in (ampc.int64, ampc.int32):
                i = index(idx, idt)
                check_same(xc.index_select(dim, i.to(cuda)), xl.index_select(dim, i))
    # a 0-dim source, a strided index
    check_same(x[2, 3, 4].to(cuda).index_select(0, index([0]).to(cuda)), x[2, 3, 4].index_select(0, index([0])))
    i = index([1, 9, 2, 9, 0, 9])[::2]
    check_same(x.to(cuda).index_select(0, i.to(cuda)), x.index_select(0, i))


@pytest.mark.parametrize("dtype", DTYPES)
def test_gather(cuda, dtype):
    x = sample((6, 9), dtype)
    r = rng(1)
    for dim, idx_shape in [(0, (4, 7)), (1, (5, 11)), (-1, (6, 2))]:
        n = x.shape[dim]
        idx = index(r.integers(0, n, idx_shape))  # gather takes no negative index (torch)
        for (name, xl), (_, xc) in zip(layouts(x), layouts(x.to(cuda))):
            check_same(xc.gather(dim, idx.to(cuda)), xl.gather(dim, idx))
        t = idx.t().contiguous().t()  # a transposed index
        check_same(x.to(cuda).gather(dim, t.to(cuda)), x.gather(dim, t))


def test_gather_large(cuda):
    """2^20+ elements and a size that is not a multiple of the block."""
    x = sample((1100, 1000), ampc.float32)
    idx = index(rng(2).integers(0, 1000, (1100, 999)))
    check_same(x.to(cuda).gather(1, idx.to(cuda)), x.gather(1, idx))
    rows = index(rng(3).integers(0, 1100, 3001))
    check_same(x.to(cuda).index_select(0, rows.to(cuda)), x.index_select(0, rows))


# ---------------------------------------------------------------- scatter form

@pytest.mark.parametrize("dtype", DTYPES)
def test_scatter_add(cuda, dtype):
    r = rng(4)
    x = sample((5, 8), dtype, seed=1, small=True)
    src = sample((6, 8), dtype, seed=2, small=True)
    for dim in (0, 1):
        n = x.shape[dim]
        idx = index(r.integers(0, n, (6, 3) if dim == 0 else (5, 12)))  # many repeats
        s = src if dim == 0 else sample((5, 12), dtype, seed=3, small=True)
        for (name, xl), (_, xc) in zip(layouts(x), layouts(x.to(cuda))):
            check_same(xc.scatter_add(dim, idx.to(cuda), s.to(cuda)), xl.scatter_add(dim, idx, s))
        y, yc = x.clone(), x.clone().to(cuda)
        y.scatter_add_(dim, idx, s)
        yc.scatter_add_(dim, idx.to(cuda), s.to(cuda))
        check_same(yc, y)


@pytest.mark.parametrize("dtype", FLOATS)
def test_scatter_add_random_floats(cuda, dtype):
    """Atomic accumulation: equal to the CPU up to the order of the additions."""
    x = sample((64, 300), dtype, seed=5)
    src = sample((256, 300), dtype, seed=6)
    idx = index(rng(7).integers(0, 64, (256, 300)))  # about 4 additions per element
    got = x.to(cuda).scatter_add(0, idx.to(cuda), src.to(cuda))
    want = x.double().scatter_add(0, idx, src.double())
    np.testing.assert_allclose(host(got), host(want), rtol=TOL[dtype] * 30, atol=TOL[dtype] * 30)


@pytest.mark.parametrize("dtype", DTYPES)
def test_index_add(cuda, dtype):
    x = sample((6, 4, 5), dtype, seed=1, small=True)
    for dim, idx in [(0, [5, 0, 5, 5, 2]), (1, [3, 3, 3]), (2, [0, 4, 0, 0, 1, 2])]:
        shape = list(x.shape)
        shape[dim] = len(idx)
        src = sample(tuple(shape), dtype, seed=2, small=True)
        i = index(idx)
        alphas = [1] if dtype == ampc.bool else [1, 2, -1] if dtype != ampc.uint8 else [1, 3]
        for alpha in alphas:
            for (name, xl), (_, xc) in zip(layouts(x), layouts(x.to(cuda))):
                check_same(xc.index_add(dim, i.to(cuda), src.to(cuda), alpha=alpha),
                           xl.index_add(dim, i, src, alpha=alpha))
            y, yc = x.clone(), x.clone().to(cuda)
            y.index_add_(dim, i, src, alpha=alpha)
            yc.index_add_(dim, i.to(cuda), src.to(cuda), alpha=alpha)
            check_same(yc, y)


def test_index_add_int_wraparound(cuda):
    for dtype, big in [(ampc.int32, 2**31 - 1), (ampc.int64, 2**63 - 1), (ampc.uint8, 255)]:
        x = ampc.full((3,), big, dtype=dtype)
        src = ampc.full((4,), 1, dtype=dtype)
        i = index([0, 0, 2, 1])
        check_same(x.to(cuda).index_add(0, i.to(cuda), src.to(cuda)), x.index_add(0, i, src))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put(cuda, dtype, accumulate):
    x = sample((6, 7, 3), dtype, seed=1, small=True)
    r = rng(8)
    if accumulate:  # repeated positions sum
        i0, i1 = index(r.integers(-6, 6, 40)), index(r.integers(0, 7, 40))
    else:  # distinct positions: the winner of a repeat is unspecified on a GPU
        flat = r.choice(42, 20, replace=False)
        i0, i1 = index(flat // 7), index(flat % 7 - 7)
    v = sample((40 if accumulate else 20, 3), dtype, seed=2, small=True)
    for (name, xl), (_, xc) in zip(layouts(x), layouts(x.to(cuda))):
        y, yc = xl, xc  # in place, strided on both devices
        y.index_put_((i0, i1), v, accumulate=accumulate)
        yc.index_put_((i0.to(cuda), i1.to(cuda)), v.to(cuda), accumulate=accumulate)
        check_same(yc, y)
    # a broadcast value, and the out-of-place form
    v1 = sample((3,), dtype, seed=3, small=True)
    check_same(x.to(cuda).index_put((i0.to(cuda), i1.to(cuda)), v1.to(cuda), accumulate=accumulate),
               x.index_put((i0, i1), v1, accumulate=accumulate))


def test_index_put_accumulate_random_floats(cuda):
    x = sample((1000, 64), ampc.float32, seed=9)
    i = index(rng(10).integers(0, 1000, 20000))
    v = sample((20000, 64), ampc.float32, seed=11)
    y = x.double().index_put((i,), v.double(), accumulate=True)
    yc = x.to(cuda).index_put((i.to(cuda),), v.to(cuda), accumulate=True)
    np.testing.assert_allclose(host(yc), host(y), rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------- advanced indexing

KEYS = [
    lambda: index([3, 0, -1, 3]),
    lambda: (index([0, 2, -2]), index([1, -1, 4])),
    lambda: (slice(None), index([[0, 1], [5, -6]])),
    lambda: (index([1, 2]), slice(1, 4), index([0, 2])),  # separated: broadcast dims first
    lambda: (Ellipsis, index([2, 0])),
    lambda: ampc.tensor(np.arange(4 * 6).reshape(4, 6) % 3 == 0),  # a 2-d mask
    lambda: (slice(None), ampc.tensor(np.array([True, False, True, True, False, True]))),
    lambda: ampc.tensor(True),
    lambda: ampc.tensor(np.zeros(4, dtype=bool)),
    lambda: (index([[1], [3]]), index([0, 2, 5]), index([1])),
]


@pytest.mark.parametrize("dtype", DTYPES)
def test_getitem(cuda, dtype):
    x = sample((4, 6, 3), dtype)
    for make in KEYS:
        key = make()
        keyc = tuple(k.to(cuda) if isinstance(k, ampc.Tensor) else k for k in key) if isinstance(key, tuple) \
            else key.to(cuda)
        for (name, xl), (_, xc) in zip(layouts(x), layouts(x.to(cuda))):
            check_same(xc[keyc], xl[key])


@pytest.mark.parametrize("dtype", [ampc.float32, ampc.bfloat16, ampc.int64, ampc.uint8, ampc.bool])
def test_setitem(cuda, dtype):
    x = sample((4, 6, 3), dtype, seed=1)
    v = sample((2, 3), dtype, seed=2)
    for key in [(index([0, 3]), index([1, -1])), (index([2, 1]),)]:
        keyc = tuple(k.to(cuda) for k in key)
        val = v if len(key) == 2 else sample((2, 6, 3), dtype, seed=3)
        y, yc = x.clone(), x.clone().to(cuda)
        y[key] = val
        yc[keyc] = val.to(cuda)
        check_same(yc, y)
    mask = ampc.tensor(np.arange(24).reshape(4, 6) % 5 == 1)
    y, yc = x.clone(), x.clone().to(cuda)
    y[mask] = sample((3,), dtype, seed=4)
    yc[mask.to(cuda)] = sample((3,), dtype, seed=4).to(cuda)
    check_same(yc, y)
    y[:, index([1, 4])] = 1
    yc[:, index([1, 4]).to(cuda)] = 1
    check_same(yc, y)


def test_large_advanced_indexing(cuda):
    x = sample((2048, 700), ampc.float32, seed=5)
    rows = index(rng(12).integers(-2048, 2048, 1500))
    cols = index(rng(13).integers(0, 700, (1500, 1)))
    xc = x.to(cuda)
    check_same(xc[rows.to(cuda)], x[rows])
    check_same(xc[rows.to(cuda), cols.to(cuda)], x[rows, cols])
    mask = x > 0.5
    check_same(xc[mask.to(cuda)], x[mask])


def test_index_gradients(cuda):
    """Backward of a[idx] and index_select accumulates repeated rows (index_put accumulate)."""
    idx = index([0, 2, 2, -1, 0, 0])
    grads = []
    for dev in ("cpu", cuda):
        x = sample((5, 4), ampc.float32, seed=6).to(dev).requires_grad_()
        g = sample((6, 4), ampc.float32, seed=7, small=True).to(dev)
        (x[idx.to(dev)] * g).sum().backward()
        y = sample((5, 4), ampc.float32, seed=6).to(dev).requires_grad_()
        (y.index_select(1, index([3, 3, 0]).to(dev)) * 2).sum().backward()
        z = sample((5, 4), ampc.float32, seed=6).to(dev).requires_grad_()
        z.gather(0, index([[4, 0, 0, 1], [4, 4, 4, 4]]).to(dev)).sum().backward()
        grads.append((x.grad, y.grad, z.grad))
    for gc, gg in zip(grads[0], grads[1]):
        check_same(gg, gc)


# ---------------------------------------------------------------- masked_fill

@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_fill(cuda, dtype):
    x = sample((5, 6, 7), dtype)
    value = True if dtype == ampc.bool else 3 if not dtype.is_floating_point else -2.5
    r = rng(14)
    for mshape in [(5, 6, 7), (6, 7), (6, 1), (7,), (), (5, 1, 1)]:
        mask = ampc.tensor(np.asarray(r.random(mshape) < 0.4))
        for (name, xl), (_, xc) in zip(layouts(x), layouts(x.to(cuda))):
            check_same(xc.masked_fill(mask.to(cuda), value), xl.masked_fill(mask, value))
            y, yc = xl, xc  # in place, strided on both devices
            y.masked_fill_(mask, value)
            yc.masked_fill_(mask.to(cuda), value)
            check_same(yc, y)
    # a 0-dim value tensor on the device, a 0-dim input, an empty input
    v = ampc.tensor(value, dtype=dtype)
    m = ampc.tensor(np.arange(7) % 2 == 0)
    check_same(x.to(cuda).masked_fill(m.to(cuda), v.to(cuda)), x.masked_fill(m, v))
    s = sample((), dtype)
    check_same(s.to(cuda).masked_fill(ampc.tensor(True).to(cuda), value), s.masked_fill(ampc.tensor(True), value))
    e = ampc.zeros((0, 3), dtype=dtype)
    check_same(e.to(cuda).masked_fill(ampc.ones(3, dtype=ampc.bool).to(cuda), value),
               e.masked_fill(ampc.ones(3, dtype=ampc.bool), value))


def test_masked_fill_large(cuda):
    x = sample((1 << 20) + 37, ampc.float16, seed=3)
    mask = x > 0
    check_same(x.to(cuda).masked_fill(mask.to(cuda), float("-inf")), x.masked_fill(mask, float("-inf")))


# ---------------------------------------------------------------- nonzero

@pytest.mark.parametrize("dtype", DTYPES)
def test_nonzero(cuda, dtype):
    r = rng(15)
    for shape in [(1,), (37,), (5, 7), (3, 4, 5), (2, 3, 4, 5), (2049,), (3, 1000), (0,), (4, 0, 2)]:
        for density in (0.0, 0.3, 1.0):
            a = np.asarray(r.random(shape) < density)
            x = ampc.tensor(a).to(dtype) if dtype != ampc.bool else ampc.tensor(a)
            if dtype.is_floating_point:
                x = x * sample(shape, dtype, seed=16)  # nonzero values of any sign
            for (name, xl), (_, xc) in zip(layouts(x), layouts(x.to(cuda))):
                check_same(xc.nonzero(), xl.nonzero())
    for v in (0, 1):  # 0-dim
        s = ampc.tensor(v, dtype=dtype)
        check_same(s.to(cuda).nonzero(), s.nonzero())


def test_nonzero_values_and_views(cuda):
    x = ampc.tensor([0.0, -0.0, float("nan"), 1e-30, float("inf"), 0.0])
    check_same(x.to(cuda).nonzero(), x.nonzero())  # NaN counts, -0.0 does not
    big = ampc.tensor(rng(17).random((64, 200, 17)) < 0.01)
    check_same(big.to(cuda).permute(2, 0, 1).nonzero(), big.permute(2, 0, 1).nonzero())
    check_same(big.to(cuda)[:, ::3].nonzero(), big[:, ::3].nonzero())


def test_nonzero_large(cuda):
    """Many tiles (2^21 elements), sparse and dense."""
    for density in (0.001, 0.6):
        m = ampc.tensor(rng(18).random((1 << 11, 1 << 10)) < density)
        check_same(m.to(cuda).nonzero(), m.nonzero())


# ---------------------------------------------------------------- embedding

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("padding_idx", [None, 3, -1])
@pytest.mark.parametrize("scale_grad_by_freq", [False, True])
def test_embedding(cuda, dtype, padding_idx, scale_grad_by_freq):
    r = rng(19)
    for (v, d), idx_shape in [((10, 8), (4, 6)), ((33, 37), (50,)), ((5, 3), (2, 2, 3)), ((1000, 128), (4096,))]:
        w = sample((v, d), dtype, seed=20)
        for idt in (ampc.int64, ampc.int32):
            idx = index(r.integers(0, v, idx_shape), idt)  # repeats: 4096 draws from 1000
            g = sample(tuple(idx_shape) + (d,), dtype, seed=21)
            outs, grads = [], []
            for dev in ("cpu", cuda):
                wd = w.to(dev).detach().requires_grad_()
                y = F.embedding(idx.to(dev), wd, padding_idx=padding_idx, scale_grad_by_freq=scale_grad_by_freq)
                y.backward(g.to(dev))
                outs.append(y)
                grads.append(wd.grad)
            check_same(outs[1], outs[0])
            # the GPU sums each row in index order in double, as the CPU: the same bits
            check_same(grads[1], grads[0])


def test_embedding_unaligned_rows(cuda):
    """Rows whose bytes are not a multiple of 16 (narrower vector moves), fp16 and odd widths."""
    for dtype, d in [(ampc.float16, 3), (ampc.float16, 4), (ampc.float32, 1), (ampc.float64, 5), (ampc.bfloat16, 12)]:
        w = sample((17, d), dtype)
        idx = index(rng(22).integers(0, 17, 40))
        check_same(F.embedding(idx.to(cuda), w.to(cuda)), F.embedding(idx, w))
        wide = sample((17, d + 3), dtype, seed=1)[:, 1:d + 1]  # a non-contiguous weight
        check_same(F.embedding(idx.to(cuda), wide.to(cuda)), F.embedding(idx, wide))


# ---------------------------------------------------------------- deferred errors

def test_out_of_range_index_raises_at_next_sync(cuda):
    x = sample((5, 4), ampc.float32).to(cuda)
    bad = index([0, 5]).to(cuda)
    deferred_index_error(lambda: x.index_select(0, bad))
    deferred_index_error(lambda: x.gather(0, index([[0, 0, -6, 0]]).to(cuda)), RuntimeError)
    deferred_index_error(lambda: x.index_select(0, index([-1]).to(cuda)))  # no negative index (torch)
    deferred_index_error(lambda: x[bad])
    deferred_index_error(lambda: x[index([1]).to(cuda), index([4]).to(cuda)])

    def put():
        y = x.clone()
        y.index_put_((bad,), ampc.ones(2, 4).to(cuda), accumulate=True)
        return y
    deferred_index_error(put)
    deferred_index_error(lambda: x.scatter_add(1, index([[4, 0]]).to(cuda), ampc.ones(1, 2).to(cuda)), RuntimeError)
    deferred_index_error(lambda: x.index_add(0, bad, ampc.ones(2, 4).to(cuda)), RuntimeError)
    deferred_index_error(lambda: F.embedding(bad, x))
    # the device is usable afterwards, and the next good op is not blamed
    check_same(x.index_select(0, index([4, 0]).to(cuda)), x.cpu().index_select(0, index([4, 0])))
