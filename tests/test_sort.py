"""Sorting and selection against torch (the oracle): sort, argsort, msort, topk, kthvalue, median,
nanmedian, mode, quantile, nanquantile, unique, unique_consecutive, searchsorted, bucketize, histc,
bincount, isin. Random inputs with many ties, NaN/inf/-0.0, every dtype torch takes, negative dims,
0-dim, 0-size and non-contiguous inputs, gradients, errors (type and message)."""
import numpy as np
import pytest

import ampc

torch = pytest.importorskip("torch")

FLOATS = ["float32", "float64", "float16", "bfloat16"]
INTS = ["int64", "int32", "uint8"]
ALL = FLOATS + INTS + ["bool"]


def pair(data, dtype, grad=False):
    """The same values as an ampc and a torch tensor."""
    t = torch.tensor(data).to(getattr(torch, dtype))
    a = ampc.tensor(t.float().numpy() if t.dtype in (torch.bfloat16, torch.float16) else t.numpy()).to(
        getattr(ampc, dtype))
    if grad:
        t.requires_grad_()
        a.requires_grad_()
    return a, t


def ties(shape, dtype, seed=0, special=True):
    """Values from a small set (many ties), with NaN, +-inf and -0.0 for floats."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype in INTS:
        lo = 0 if dtype == "uint8" else -4
        return rng.integers(lo, 5, shape).astype(np.int64)
    pool = [-2.5, -1.0, -0.0, 0.0, 0.5, 1.0, 3.0]
    if special:
        pool += [float("nan"), float("inf"), -float("inf")]
    return rng.choice(pool, shape)


def same(a, t, exact=True):
    an = a.detach().float().numpy() if a.dtype.is_floating_point else a.detach().numpy()
    tn = t.detach().float().numpy() if t.dtype.is_floating_point else t.detach().numpy()
    assert a.dtype.__repr__().split(".")[-1] == str(t.dtype).split(".")[-1], (a.dtype, t.dtype)
    assert tuple(a.shape) == tuple(t.shape), (a.shape, t.shape)
    if exact:
        np.testing.assert_array_equal(an, tn)
    else:
        np.testing.assert_allclose(an, tn, rtol=1e-5, atol=1e-6, equal_nan=True)


# ------------------------------------------------------------------ sort, argsort, msort


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("dim", [-1, 0, 1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_stable_matches_torch(dtype, dim, descending):
    a, t = pair(ties((7, 33), dtype), dtype)
    got = ampc.sort(a, dim=dim, descending=descending, stable=True)
    want = torch.sort(t, dim=dim, descending=descending, stable=True)
    same(got.values, want.values)
    same(got.indices, want.indices)
    v, i = got  # unpacks like torch's
    same(i, want[1])
    same(a.argsort(dim=dim, descending=descending, stable=True), t.argsort(dim=dim, descending=descending, stable=True))


@pytest.mark.parametrize("n", [1, 5, 40, 300, 5000])
def test_sort_long_rows_and_fp16_nan_order(n):
    for dtype in ["float32", "float16", "float64", "int64"]:
        a, t = pair(ties((3, n), dtype, seed=n), dtype)
        for desc in (False, True):
            got, want = a.sort(descending=desc, stable=True), t.sort(descending=desc, stable=True)
            same(got.values, want.values)
            same(got.indices, want.indices)


def test_sort_noncontiguous_0dim_0size_msort():
    a, t = pair(ties((6, 5, 4), "float32"), "float32")
    for perm in [(2, 0, 1), (1, 2, 0)]:
        ap, tp = a.permute(*perm)[::2], t.permute(*perm)[::2]
        for dim in range(3):
            same(ap.sort(dim=dim, stable=True).indices, tp.sort(dim=dim, stable=True).indices)
    same(ampc.msort(a[:, 1]), torch.msort(t[:, 1]))
    s0, t0 = pair(3.5, "float32")
    same(s0.sort().values, t0.sort().values)
    same(s0.sort(0).indices, t0.sort(0).indices)
    z, tz = pair(np.zeros((0, 3)), "float32")
    same(z.sort(0).values, tz.sort(0).values)
    same(z.sort(1).indices, tz.sort(1).indices)


def test_sort_out_and_errors():
    a, t = pair(ties((4, 5), "float32"), "float32")
    vo, io = ampc.empty(4, 5), ampc.empty(4, 5, dtype=ampc.int64)
    r = ampc.sort(a, dim=1, stable=True, out=(vo, io))
    assert r.values is vo and r.indices is io
    same(io, torch.sort(t, dim=1, stable=True).indices)
    with pytest.raises(IndexError):
        a.sort(2)
    with pytest.raises(IndexError):
        torch.sort(t, 2)


# ------------------------------------------------------------------ topk, kthvalue


@pytest.mark.parametrize("dtype", FLOATS + INTS)
@pytest.mark.parametrize("largest", [True, False])
def test_topk_values_match_torch(dtype, largest):
    for shape, k, dim in [((5, 40), 3, -1), ((5, 40), 40, 1), ((30, 6), 4, 0), ((2, 3000), 17, 1), ((3, 9), 0, 1)]:
        a, t = pair(ties(shape, dtype, seed=k), dtype)
        got = a.topk(k, dim, largest=largest)
        want = t.topk(k, dim, largest=largest)
        same(got.values, want.values)
        # ties may pick other indices than torch: they must point at the same values
        same(a.gather(dim, got.indices), want.values)
        unsorted = a.topk(k, dim, largest=largest, sorted=False)
        same(unsorted.values.sort(dim).values, want.values.sort(dim).values)


def test_topk_gpt_sampling_shape_and_errors():
    a, t = pair(np.random.default_rng(0).standard_normal((4, 50257)).astype(np.float32), "float32")
    same(a.topk(50).values, t.topk(50).values)
    same(a.topk(50).indices, t.topk(50).indices)  # no ties in random normals
    for k in (-1, 50258):
        with pytest.raises(RuntimeError, match="selected index k out of range"):
            a.topk(k)
    with pytest.raises(RuntimeError, match="topk does not support bool"):
        ampc.topk(ampc.tensor([True, False]), 1)


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_kthvalue_matches_torch(dtype):
    a, t = pair(ties((6, 15), dtype, seed=3), dtype)
    for k in (1, 4, 15):
        for keepdim in (False, True):
            got, want = a.kthvalue(k, 1, keepdim), t.kthvalue(k, 1, keepdim)
            same(got.values, want.values)
            same(a.gather(1, got.indices if keepdim else got.indices.unsqueeze(1)).squeeze(1) if not keepdim
                 else a.gather(1, got.indices), want.values)
    got, want = a.kthvalue(2, 0), t.kthvalue(2, 0)
    same(got.values, want.values)


def test_kthvalue_errors_match_torch():
    for call in [lambda M: M.kthvalue(M.zeros(3), 4), lambda M: M.kthvalue(M.zeros(3), 0),
                 lambda M: M.kthvalue(M.zeros(0), 1), lambda M: M.kthvalue(M.tensor([True]), 1),
                 lambda M: M.median(M.zeros(0, 3), 0), lambda M: M.mode(M.zeros(0)),
                 lambda M: M.median(M.tensor([True]))]:
        with pytest.raises(Exception) as want:
            call(torch)
        with pytest.raises(Exception) as got:
            call(ampc)
        assert type(got.value) is type(want.value)
        assert str(got.value) == str(want.value)


# ------------------------------------------------------------------ median, nanmedian, mode


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_median_nanmedian_match_torch(dtype):
    for shape in [(5, 8), (5, 7), (1, 1), (9, 3)]:
        a, t = pair(ties(shape, dtype, seed=shape[1]), dtype)
        for fn in ("median", "nanmedian"):
            same(getattr(a, fn)(), getattr(t, fn)())
            for dim in (0, 1, -1):
                got, want = getattr(a, fn)(dim), getattr(t, fn)(dim, keepdim=False)
                same(got.values, want.values)
                if dtype in FLOATS:  # NaN rows: index of the first NaN, as torch
                    nan_rows = np.isnan(want.values.float().numpy())
                    if fn == "median":
                        np.testing.assert_array_equal(got.indices.numpy()[nan_rows], want.indices.numpy()[nan_rows])
                same(a.gather(dim, got.indices.unsqueeze(dim)).squeeze(dim), want.values)


def test_median_nan_and_empty():
    a, t = pair([3.0, float("nan"), 1.0, float("nan"), 2.0], "float32")
    same(a.median(0).indices, t.median(0).indices)
    same(a.nanmedian(0).values, t.nanmedian(0).values)
    a, t = pair([float("nan")] * 3, "float32")
    same(a.nanmedian(0).indices, t.nanmedian(0).indices)
    a, t = pair(np.zeros(0), "float32")
    same(a.median(), t.median())


@pytest.mark.parametrize("dtype", ALL)
def test_mode_matches_torch(dtype):
    a, t = pair(ties((6, 25), dtype, seed=9, special=False), dtype)
    for dim, keepdim in [(1, False), (0, True), (-1, True)]:
        got, want = a.mode(dim, keepdim), t.mode(dim, keepdim)
        same(got.values, want.values)
        # torch's index among the mode's occurrences is its sort's (unstable) choice; ampc gives the last
        idx = got.indices if keepdim else got.indices.unsqueeze(dim)
        same(a.gather(dim, idx), want.values if keepdim else want.values.unsqueeze(dim))
    a, t = pair([2, 1, 2, 1, 3], dtype if dtype != "bool" else "int64")
    same(a.mode().indices, t.mode().indices)


# ------------------------------------------------------------------ gradients


def _grad_pair(fn, data, **kw):
    a, t = pair(data, "float64", grad=True)
    ga = fn(ampc, a)
    gt = fn(torch, t)
    ga = ga[0] if isinstance(ga, tuple) else ga
    gt = gt[0] if isinstance(gt, tuple) else gt
    w = np.random.default_rng(1).standard_normal(tuple(gt.shape))
    (ga * ampc.tensor(w)).sum().backward()
    (gt * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)
    return ga


@pytest.mark.parametrize("case", [
    lambda M, x: M.sort(x, dim=1, descending=True, stable=True),
    lambda M, x: M.topk(x, 3, 0),
    lambda M, x: M.kthvalue(x, 2, 1, keepdim=True),
    lambda M, x: M.median(x, 1),
    lambda M, x: M.nanmedian(x, 0),
    lambda M, x: M.median(x),
    lambda M, x: M.quantile(x, M.tensor([0.1, 0.5, 0.9], dtype=M.float64), dim=1),
    lambda M, x: M.quantile(x, 0.3, interpolation="midpoint"),
    lambda M, x: M.msort(x),
])
def test_gradients_match_torch(case):
    data = np.random.default_rng(0).permutation(20).reshape(4, 5).astype(np.float64)
    _grad_pair(case, data)


def test_median_all_grad_shares_ties_and_mode_grad():
    _grad_pair(lambda M, x: M.median(x), [1.0, 2.0, 2.0, 3.0, 2.0])
    _grad_pair(lambda M, x: M.nanmedian(x), [1.0, float("nan"), 2.0])
    _grad_pair(lambda M, x: M.median(x), [1.0, float("nan"), 2.0])
    _grad_pair(lambda M, x: M.mode(x, 0), [[1.0, 2.0], [1.0, 3.0], [2.0, 3.0]])
    a = ampc.tensor([3.0, 1.0], requires_grad=True)
    assert a.sort().values.grad_fn.name() == "SortBackward0"
    assert a.sort().indices.grad_fn is None and not a.sort().indices.requires_grad
    assert a.median().grad_fn.name() == "MedianBackward0"


# ------------------------------------------------------------------ quantile


@pytest.mark.parametrize("interp", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("nan", [False, True])
def test_quantile_matches_torch(interp, nan):
    data = np.random.default_rng(2).standard_normal((4, 6, 5))
    if nan:
        data[1, 2, 3] = data[3, :, 0] = data[:, 1, 1] = np.nan
    a, t = pair(data, "float32")
    qs = [0.0, 0.25, 0.5, 0.7, 1.0]
    qa, qt = ampc.tensor(qs), torch.tensor(qs)
    for fn in ("quantile", "nanquantile"):
        for dim, keepdim in [(None, False), (None, True), (1, False), (-1, True), (0, False)]:
            same(getattr(ampc, fn)(a, qa, dim, keepdim, interpolation=interp),
                 getattr(torch, fn)(t, qt, dim, keepdim, interpolation=interp), exact=False)
            same(getattr(a, fn)(0.4, dim, keepdim, interpolation=interp),
                 getattr(t, fn)(0.4, dim, keepdim, interpolation=interp), exact=False)


def test_quantile_errors_match_torch():
    for call in [lambda M: M.quantile(M.zeros(3), 1.5), lambda M: M.quantile(M.zeros(3), M.tensor([0.5, 2.0])),
                 lambda M: M.quantile(M.zeros(3), 0.5, interpolation="foo"), lambda M: M.quantile(M.zeros(0), 0.5),
                 lambda M: M.quantile(M.zeros(3, dtype=M.float16), 0.5),
                 lambda M: M.quantile(M.zeros(3), M.tensor([[0.5]])),
                 lambda M: M.quantile(M.zeros(3), M.tensor([0.5], dtype=M.float64))]:
        with pytest.raises(Exception) as want:
            call(torch)
        with pytest.raises(Exception) as got:
            call(ampc)
        assert type(got.value) is type(want.value)
        assert str(got.value) == str(want.value)


# ------------------------------------------------------------------ unique


@pytest.mark.parametrize("dtype", ALL)
def test_unique_matches_torch(dtype):
    a, t = pair(ties((5, 7), dtype, seed=4), dtype)
    for inv in (False, True):
        for cnt in (False, True):
            got = ampc.unique(a, return_inverse=inv, return_counts=cnt)
            want = torch.unique(t, return_inverse=inv, return_counts=cnt)
            got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
            assert len(got) == len(want)
            for k, (g, w) in enumerate(zip(got, want)):
                if inv and k == 1:  # each NaN is its own value: which NaN is whose is the sort's choice
                    same(got[0][g], want[0][w], exact=False)
                else:
                    same(g, w)
            got = ampc.unique_consecutive(a, return_inverse=inv, return_counts=cnt)
            want = torch.unique_consecutive(t, return_inverse=inv, return_counts=cnt)
            got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
            for g, w in zip(got, want):
                same(g, w)
    same(a.unique(), t.unique())
    z, tz = pair(np.zeros((0, 2)), dtype)
    for g, w in zip(ampc.unique(z, return_inverse=True, return_counts=True),
                    torch.unique(tz, return_inverse=True, return_counts=True)):
        same(g, w)


# ------------------------------------------------------------------ searchsorted, bucketize, isin


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_searchsorted_matches_torch(dtype):
    s, ts = pair(np.sort(ties((3, 12), dtype, seed=5, special=False), axis=1), dtype)
    v, tv = pair(ties((3, 7), dtype, seed=6), dtype)
    for right in (False, True):
        same(ampc.searchsorted(s, v, right=right), torch.searchsorted(ts, tv, right=right))
        same(ampc.searchsorted(s[0], v, right=right, out_int32=True),
             torch.searchsorted(ts[0], tv, right=right, out_int32=True))
        same(ampc.searchsorted(s[1], v[0, 2].item(), right=right), torch.searchsorted(ts[1], tv[0, 2].item(), right=right))
        same(ampc.bucketize(v, s[2], right=right), torch.bucketize(tv, ts[2], right=right))
    same(ampc.searchsorted(s, v, side="right"), torch.searchsorted(ts, tv, side="right"))
    # sorter: an unsorted sequence with its argsort
    u, tu = pair(ties((3, 12), dtype, seed=7, special=False), dtype)
    order_a, order_t = u.argsort(stable=True), tu.argsort(stable=True)
    same(ampc.searchsorted(u, v, sorter=order_a), torch.searchsorted(tu, tv, sorter=order_t))
    # non-contiguous values and sequence
    same(ampc.searchsorted(s.t().contiguous().t(), v.t().t()), torch.searchsorted(ts, tv))


def test_searchsorted_nan_and_errors():
    s, ts = pair([1.0, 2.0, float("nan")], "float32")
    v, tv = pair([float("nan"), 2.0, 0.0], "float32")
    for right in (False, True):
        same(ampc.searchsorted(s, v, right=right), torch.searchsorted(ts, tv, right=right))
    for call in [lambda M: M.searchsorted(M.zeros(2, 3), M.zeros(3, 3)), lambda M: M.searchsorted(M.zeros(2, 3), 1.0),
                 lambda M: M.searchsorted(M.tensor(1.0), M.tensor([2.0])),
                 lambda M: M.searchsorted(M.tensor([1.0, 2.0, 3.0]), M.tensor([2.0]), sorter=M.tensor([0, 1, 5])),
                 lambda M: M.bucketize(M.tensor([1.0]), M.zeros(2, 2)),
                 lambda M: M.searchsorted(M.tensor([1.0, 2.0]), M.tensor([1.0]), side="left", right=True)]:
        with pytest.raises(Exception) as want:
            call(torch)
        with pytest.raises(Exception) as got:
            call(ampc)
        assert type(got.value) is type(want.value)
        assert str(got.value) == str(want.value)


@pytest.mark.parametrize("dtype", ALL)
def test_isin_matches_torch(dtype):
    e, te = pair(ties((4, 6), dtype, seed=8), dtype)
    x, tx = pair(ties((5,), dtype, seed=9), dtype)
    if dtype == "bool":
        with pytest.raises(RuntimeError, match="Unsupported input type encountered for isin\\(\\): Bool"):
            torch.isin(te, tx)
        with pytest.raises(RuntimeError, match="Unsupported input type encountered for isin\\(\\): Bool"):
            ampc.isin(e, x)
        return
    for invert in (False, True):
        same(ampc.isin(e, x, invert=invert), torch.isin(te, tx, invert=invert))
        same(ampc.isin(e[:, ::2], x, invert=invert), torch.isin(te[:, ::2], tx, invert=invert))
    same(ampc.isin(e, 1), torch.isin(te, 1))
    same(ampc.isin(ampc.tensor([1, 2]), ampc.tensor([1.0, 3.0])), torch.isin(torch.tensor([1, 2]), torch.tensor([1.0, 3.0])))
    same(ampc.isin(e, x[:0]), torch.isin(te, tx[:0]))


# ------------------------------------------------------------------ histc, bincount


@pytest.mark.parametrize("dtype", FLOATS)
def test_histc_matches_torch(dtype):
    data = np.concatenate([np.random.default_rng(3).uniform(-3, 3, 500), [-2.0, 2.0, 0.0, 1.0, np.nan, np.inf]])
    a, t = pair(data, dtype)
    for bins, lo, hi in [(10, -2, 2), (7, -1, 3), (1, -5, 5), (33, -2.5, 2.5), (64, -3, 3)]:
        same(a.histc(bins, lo, hi), t.histc(bins, lo, hi))
    f, tf = pair(np.random.default_rng(4).uniform(-3, 3, 300), dtype)
    same(ampc.histc(f), torch.histc(tf))
    c, tc = pair([2.0, 2.0], dtype)
    same(c.histc(4), tc.histc(4))
    for call in [lambda M: M.histc(M.tensor([1, 2])), lambda M: M.histc(M.tensor([1.0, 2.0]), bins=0),
                 lambda M: M.histc(M.tensor([1.0, 2.0]), min=3, max=1)]:
        with pytest.raises(Exception) as want:
            call(torch)
        with pytest.raises(Exception) as got:
            call(ampc)
        assert type(got.value) is type(want.value)
        assert str(got.value) == str(want.value)


@pytest.mark.parametrize("dtype", INTS)
def test_bincount_matches_torch(dtype):
    a, t = pair(np.random.default_rng(5).integers(0, 9, 200), dtype)
    same(a.bincount(), t.bincount())
    same(a.bincount(minlength=20), t.bincount(minlength=20))
    for wdt in ("float32", "float64", "float16", "int64"):
        w, tw = pair(np.random.default_rng(6).uniform(0, 2, 200).round(2), wdt)
        same(a.bincount(w), t.bincount(tw), exact=False)
    e, te = pair(np.zeros(0), dtype)
    same(e.bincount(), te.bincount())
    same(e.bincount(minlength=3), te.bincount(minlength=3))
    for call in [lambda M: M.bincount(M.tensor([-1])), lambda M: M.bincount(M.tensor([1.0])),
                 lambda M: M.bincount(M.tensor([[1]])), lambda M: M.bincount(M.tensor([True])),
                 lambda M: M.bincount(M.tensor([1, 2]), M.tensor([1.0])),
                 lambda M: M.bincount(M.tensor([1]), minlength=-1)]:
        with pytest.raises(Exception) as want:
            call(torch)
        with pytest.raises(Exception) as got:
            call(ampc)
        assert type(got.value) is type(want.value)
        assert str(got.value) == str(want.value)


@pytest.mark.parametrize("dtype", ["float32", "int64", "uint8", "bool", "float16"])
def test_unique_dim_matches_torch(dtype):
    a, t = pair(ties((6, 3, 4), dtype, seed=11, special=False), dtype)
    a, t = a[:, :2, :2], t[:, :2, :2]  # few distinct slices, non-contiguous
    for dim in (0, 1, -1):
        for fn in ("unique", "unique_consecutive"):
            got = getattr(ampc, fn)(a, return_inverse=True, return_counts=True, dim=dim)
            want = getattr(torch, fn)(t, return_inverse=True, return_counts=True, dim=dim)
            for g, w in zip(got, want):
                same(g, w)
        same(ampc.unique(a, dim=dim), torch.unique(t, dim=dim))
    rep, trep = pair([[1, 2], [1, 2], [0, 3], [1, 2]], dtype if dtype != "bool" else "int64")
    for g, w in zip(ampc.unique(rep, dim=0, return_inverse=True), torch.unique(trep, dim=0, return_inverse=True)):
        same(g, w)
    for call in [lambda M: M.unique(M.tensor(1.0), dim=0), lambda M: M.unique(M.zeros(3, 0), dim=0)]:
        with pytest.raises(Exception) as want:
            call(torch)
        with pytest.raises(Exception) as got:
            call(ampc)
        assert type(got.value) is type(want.value)
        assert str(got.value) == str(want.value)
    z, tz = pair(np.zeros((0, 3)), dtype)
    for g, w in zip(ampc.unique(z, dim=0, return_counts=True), torch.unique(tz, dim=0, return_counts=True)):
        same(g, w)
