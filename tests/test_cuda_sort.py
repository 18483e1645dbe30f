"""The CUDA sorting and selection kernels (cuda_sort.cu) against the CPU backend (cpu_sort.c,
cpu_sort_search.c): the same inputs on both devices, results equal exactly (every sort is stable
and every selection a stable sort's answer on both, so ties, NaN and -0.0 give the same indices).

Covers sort (32- and 64-bit keys: one segmented radix sort, or two for 64-bit keys), topk, kthvalue,
median, nanmedian, mode, searchsorted (with sorter, out_int32), isin, unique (inverse, counts),
histc and bincount, in every dtype each takes, on strided and 0-size inputs, and gradients. Sizes
stay small: the emulator runs every CUDA thread on the CPU.

Runs where a GPU exists (fixture `cuda`); AMPC_TEST_CUDA_AS_CPU=1 runs the "cuda" side on the CPU."""
import numpy as np
import pytest

import ampc

DTYPES = [ampc.float32, ampc.float64, ampc.float16, ampc.bfloat16, ampc.int64, ampc.int32, ampc.uint8, ampc.bool]


def ties(shape, dtype, seed=0, special=True):
    """A CPU tensor of values from a small set (many ties), NaN/inf/-0.0 for floats."""
    rng = np.random.default_rng(seed)
    if dtype == ampc.bool:
        return ampc.tensor(rng.integers(0, 2, shape).astype(bool))
    if not dtype.is_floating_point:
        lo = 0 if dtype == ampc.uint8 else -4
        return ampc.tensor(rng.integers(lo, 5, shape)).to(dtype)
    pool = [-2.5, -1.0, -0.0, 0.0, 0.5, 1.0, 3.0] + ([float("nan"), float("inf"), -float("inf")] if special else [])
    return ampc.tensor(rng.choice(pool, shape)).to(dtype)


def same(c, g):
    """c (CPU) and g (the other device) hold the same values, dtypes and shapes (NaN == NaN)."""
    g = g.cpu()
    assert c.dtype == g.dtype and tuple(c.shape) == tuple(g.shape)
    cn = c.float().numpy() if c.dtype.is_floating_point else c.numpy()
    gn = g.float().numpy() if g.dtype.is_floating_point else g.numpy()
    np.testing.assert_array_equal(cn, gn)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sort_matches_cpu(cuda, dtype):
    x = ties((5, 37), dtype, seed=1)
    xc = x.to(cuda)
    for dim in (1, 0, -1):
        for desc in (False, True):
            c, g = x.sort(dim=dim, descending=desc), xc.sort(dim=dim, descending=desc)
            same(c.values, g.values)
            same(c.indices, g.indices)
    # strided: a transposed view sorted along its non-unit-stride dim
    same(x.t().sort(dim=1).indices, xc.t().sort(dim=1).indices)
    same(x[:, ::3].sort().values, xc[:, ::3].sort().values)


def test_sort_one_long_row_and_empty(cuda):
    for dtype in (ampc.float32, ampc.int64):
        x = ties((3000,), dtype, seed=2)
        same(x.sort().indices, x.to(cuda).sort().indices)
    z = ampc.zeros(0, 4)
    same(z.sort(0).values, z.to(cuda).sort(0).values)
    s = ampc.tensor(2.5)
    same(s.sort().indices, s.to(cuda).sort().indices)


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != ampc.bool])
def test_selections_match_cpu(cuda, dtype):
    x = ties((6, 21), dtype, seed=3)
    xc = x.to(cuda)
    for k, largest in [(1, True), (5, False), (21, True), (0, True)]:
        c, g = x.topk(k, largest=largest), xc.topk(k, largest=largest)
        same(c.values, g.values)
        same(x.gather(1, c.indices), xc.gather(1, g.indices).cpu())
    for k in (1, 7, 21):
        c, g = x.kthvalue(k, 1, keepdim=True), xc.kthvalue(k, 1, keepdim=True)
        same(c.values, g.values)
        same(c.indices, g.indices)
    for fn in ("median", "nanmedian"):
        c, g = getattr(x, fn)(0), getattr(xc, fn)(0)
        same(c.values, g.values)
        same(c.indices, g.indices)
        same(getattr(x, fn)(), getattr(xc, fn)())
    c, g = x.mode(1), xc.mode(1)
    same(c.values, g.values)
    same(c.indices, g.indices)


@pytest.mark.parametrize("dtype", [ampc.float32, ampc.float64, ampc.float16, ampc.int64, ampc.int32, ampc.uint8])
def test_searchsorted_isin_match_cpu(cuda, dtype):
    s = ties((3, 12), dtype, seed=4, special=False).sort(dim=1).values
    v = ties((3, 9), dtype, seed=5)
    for right in (False, True):
        same(ampc.searchsorted(s, v, right=right), ampc.searchsorted(s.to(cuda), v.to(cuda), right=right))
        same(ampc.searchsorted(s[0], v, out_int32=True), ampc.searchsorted(s[0].to(cuda), v.to(cuda), out_int32=True))
        same(ampc.bucketize(v, s[1], right=right), ampc.bucketize(v.to(cuda), s[1].to(cuda), right=right))
    u = ties((3, 12), dtype, seed=6, special=False)
    order = u.argsort()
    same(ampc.searchsorted(u, v, sorter=order), ampc.searchsorted(u.to(cuda), v.to(cuda), sorter=order.to(cuda)))
    t = ties((7,), dtype, seed=7)
    for invert in (False, True):
        same(ampc.isin(v, t, invert=invert), ampc.isin(v.to(cuda), t.to(cuda), invert=invert))


@pytest.mark.parametrize("dtype", DTYPES)
def test_unique_matches_cpu(cuda, dtype):
    x = ties((4, 9), dtype, seed=8)
    for consecutive in (False, True):
        fn = ampc.unique_consecutive if consecutive else ampc.unique
        c = fn(x, return_inverse=True, return_counts=True)
        g = fn(x.to(cuda), return_inverse=True, return_counts=True)
        for a, b in zip(c, g):
            same(a, b)
    same(ampc.unique(x[:0]), ampc.unique(x[:0].to(cuda)))


@pytest.mark.parametrize("dtype", [ampc.float32, ampc.float64, ampc.float16, ampc.bfloat16])
def test_histc_matches_cpu(cuda, dtype):
    x = ampc.tensor(np.concatenate([np.random.default_rng(9).uniform(-3, 3, 300), [-2.0, 2.0, np.nan]])).to(dtype)
    for bins, lo, hi in [(10, -2, 2), (7, -1, 3), (1, -5, 5)]:
        same(x.histc(bins, lo, hi), x.to(cuda).histc(bins, lo, hi))


def test_bincount_matches_cpu(cuda):
    x = ampc.tensor(np.random.default_rng(10).integers(0, 9, 200))
    same(x.bincount(minlength=12), x.to(cuda).bincount(minlength=12))
    w = ampc.tensor(np.random.default_rng(11).integers(0, 4, 200).astype(np.float64) / 4)  # sums exact in any order
    for wd in (ampc.float32, ampc.float64):
        same(x.bincount(w.to(wd)), x.to(cuda).bincount(w.to(wd).to(cuda)))


def test_gradients_match_cpu(cuda):
    base = ampc.tensor(np.random.default_rng(12).permutation(24).reshape(4, 6).astype(np.float32))
    for fn in [lambda t: t.sort(dim=1, descending=True).values, lambda t: t.topk(2, 0).values,
               lambda t: t.kthvalue(3, 1).values, lambda t: t.median(), lambda t: t.mode(0).values,
               lambda t: ampc.quantile(t, 0.3, dim=1)]:
        grads = []
        for dev in ("cpu", cuda):
            t = base.to(dev).detach().requires_grad_()
            fn(t).sum().backward()
            grads.append(t.grad.cpu())
        same(grads[0], grads[1])
