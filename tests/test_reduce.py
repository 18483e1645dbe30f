"""Reductions (sum, mean, prod, amax/amin, max/min, argmax/argmin, var/std, norm, logsumexp,
any/all) and cumsum against float64 NumPy and against torch (the test oracle): dims as ints,
tuples, None and (), negative dims, keepdim, non-contiguous inputs, 0-dim and zero-size inputs,
every dtype that applies, NaN, ties, the threaded paths, and PyTorch's error messages."""
import math

import numpy as np
import pytest
import torch

import ampc
from helpers import host_exact

RNG_SEED = 1234

FLOAT_DTYPES = ["float32", "float64", "float16", "bfloat16"]
INT_DTYPES = ["int64", "int32", "uint8", "bool"]
# relative tolerance of a result rounded once to each dtype (a little over half an ulp)
ROUND_RTOL = {"float32": 2e-7, "float64": 1e-14, "float16": 1e-3, "bfloat16": 8e-3}


def rng():
    return np.random.default_rng(RNG_SEED)


def sample_in_layout(shape, dtype="float32", layout="contiguous", low=-2.0, high=2.0, seed=0):
    """An ampc tensor of `shape` in `layout` and the float64 NumPy array of its exact values."""
    g = np.random.default_rng(RNG_SEED + seed)
    if layout == "transposed":  # storage in reversed dim order, viewed back: strides run backwards
        base_shape = tuple(reversed(shape))
    elif layout == "sliced":  # every dim taken with step 2 from a larger buffer
        base_shape = tuple(2 * s + 1 for s in shape)
    else:
        base_shape = tuple(shape)
    if dtype == "bool":
        base = g.random(base_shape) < 0.5
    elif dtype in ("int64", "int32", "uint8"):
        lo, hi = (0, 200) if dtype == "uint8" else (-50, 50)
        base = g.integers(lo, hi, size=base_shape).astype(dtype)
    else:
        base = g.uniform(low, high, size=base_shape).astype(np.float32)
    t = ampc.from_numpy(np.ascontiguousarray(base))
    if dtype in ("float16", "bfloat16", "float64"):
        t = t.to(getattr(ampc, dtype))
    if layout == "transposed":
        t = t.permute(*reversed(range(len(shape))))
    elif layout == "sliced":
        t = t[tuple(slice(1, None, 2) for _ in shape)]
    assert tuple(t.shape) == tuple(shape)
    if layout != "contiguous" and t.numel() > 1:
        assert not t.is_contiguous()
    return t, host_exact(t)


def to_torch(t):
    return torch.from_numpy(host_exact(t)).to(getattr(torch, str(t.dtype).split(".")[-1]))


def np_axis(dim, ndim):
    if dim is None or dim == () or dim == []:
        return None
    return dim if isinstance(dim, int) else tuple(dim)


def check_close(got, ref, dtype, scale=None):
    """got (ampc tensor) against a float64 reference, allowing one rounding to `dtype` (and a
    cancellation allowance relative to `scale`, the size of the summands)."""
    got_v = host_exact(got)
    ref = np.asarray(ref, dtype=np.float64)
    assert got_v.shape == ref.shape, (got_v.shape, ref.shape)
    rtol = ROUND_RTOL[dtype]
    atol = 0.0 if scale is None else rtol * scale
    np.testing.assert_allclose(got_v, ref, rtol=rtol, atol=atol + 1e-300, equal_nan=True)


DIMS_3D = [None, 0, 1, -1, (0, 2), (2, 0), (-1, 1), (0, 1, 2), ()]


# ------------------------------------------------------------------ sum, mean, prod, amax, amin


@pytest.mark.parametrize("dim", DIMS_3D)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_sum_mean_amax_amin_dims(dim, keepdim, layout):
    t, x = sample_in_layout((3, 4, 5), "float32", layout)
    axis = np_axis(dim, 3)
    kwargs = {} if dim is None else {"dim": dim}
    scale = np.sum(np.abs(x))
    check_close(t.sum(keepdim=keepdim, **kwargs), np.sum(x, axis=axis, keepdims=keepdim), "float32", scale)
    check_close(t.mean(keepdim=keepdim, **kwargs), np.mean(x, axis=axis, keepdims=keepdim), "float32", scale)
    amax_dim = {} if dim is None else {"dim": dim}
    check_close(t.amax(keepdim=keepdim, **amax_dim), np.max(x, axis=axis, keepdims=keepdim), "float32")
    check_close(ampc.amin(t, keepdim=keepdim, **amax_dim), np.min(x, axis=axis, keepdims=keepdim), "float32")


@pytest.mark.parametrize("dim", [None, 0, 1, -1, (0, 2)])
@pytest.mark.parametrize("layout", ["contiguous", "sliced"])
def test_prod(dim, layout):
    t, x = sample_in_layout((3, 4, 5), "float64", layout, low=0.5, high=1.5)
    axis = np_axis(dim, 3)
    got = t.prod() if dim is None else t.prod(dim)
    check_close(got, np.prod(x, axis=axis), "float64")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("dim", [None, 1, (0, 2)])
def test_float_dtypes_round_once(dtype, dim):
    """Low-precision inputs accumulate in double and round once: the result is float64 NumPy's,
    rounded to the dtype, and within one rounding of torch's."""
    t, x = sample_in_layout((6, 70, 9), dtype)
    axis = np_axis(dim, 3)
    kw = {} if dim is None else {"dim": dim}
    tt = to_torch(t)
    for name, ref in [("sum", np.sum(x, axis=axis)), ("mean", np.mean(x, axis=axis)),
                      ("amax", np.max(x, axis=axis))]:
        got = getattr(t, name)(**kw)
        assert got.dtype == t.dtype
        check_close(got, ref, dtype, scale=np.max(np.abs(x)))
        want = getattr(tt, name)(**kw).double().numpy()  # torch accumulates fp32 in fp32
        np.testing.assert_allclose(host_exact(got), want, rtol=2 * ROUND_RTOL[dtype],
                                   atol=ROUND_RTOL[dtype] * math.sqrt(x.size) * np.max(np.abs(x)))


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_integer_and_bool_inputs(dtype):
    t, x = sample_in_layout((4, 7), dtype, "transposed")
    s = t.sum()
    assert s.dtype == ampc.int64 and s.item() == int(np.sum(x.astype(np.int64)))
    s1 = t.sum(0)
    assert s1.dtype == ampc.int64
    np.testing.assert_array_equal(s1.numpy(), np.sum(x.astype(np.int64), axis=0))
    p = t.prod(1)
    assert p.dtype == ampc.int64
    np.testing.assert_array_equal(p.numpy(), np.prod(x.astype(np.int64), axis=1))
    mx = t.amax(1)
    assert mx.dtype == t.dtype
    np.testing.assert_array_equal(host_exact(mx), np.max(x, axis=1))
    np.testing.assert_array_equal(host_exact(t.amin(0)), np.min(x, axis=0))
    assert t.cumsum(0).dtype == ampc.int64
    np.testing.assert_array_equal(t.cumsum(0).numpy(), np.cumsum(x.astype(np.int64), axis=0))


def test_integer_sums_wrap_and_are_exact():
    big = np.array([2**62, 2**62, 2**62, -5], dtype=np.int64)
    t = ampc.from_numpy(big)
    assert t.sum().item() == int(torch.from_numpy(big).sum())  # wraps around like torch
    odd = np.array([2**53 + 1, 1], dtype=np.int64)
    assert ampc.from_numpy(odd).sum().item() == 2**53 + 2  # no detour through double


def test_sum_dtype_argument():
    t, x = sample_in_layout((5, 6), "float32")
    s64 = t.sum(1, dtype=ampc.float64)
    assert s64.dtype == ampc.float64
    np.testing.assert_allclose(s64.numpy(), np.sum(x, axis=1), rtol=1e-14)
    i = ampc.tensor([1, 2, 3], dtype=ampc.int32)
    assert i.sum(dtype=ampc.float16).dtype == ampc.float16
    assert i.sum(dtype=ampc.float16).item() == 6.0
    assert ampc.tensor([1.5, 2.7]).sum(dtype=ampc.int32).item() == int(torch.tensor([1.5, 2.7]).sum(dtype=torch.int32))
    m = ampc.mean(i, dtype=ampc.float64)
    assert m.dtype == ampc.float64 and m.item() == 2.0
    assert ampc.tensor([1, 0], dtype=ampc.int64).sum(dtype=ampc.bool).item() is True
    h = t.half().sum(dtype=ampc.float32)  # widened in the kernel, no rounding of a cast
    np.testing.assert_allclose(h.item(), np.sum(host_exact(t.half())), rtol=2e-7)
    assert t.prod(dtype=ampc.float64).dtype == ampc.float64


def test_module_functions_and_input_keyword():
    t, x = sample_in_layout((3, 4))
    np.testing.assert_allclose(ampc.sum(t, 1).numpy(), np.sum(x, 1), rtol=1e-6)
    np.testing.assert_allclose(ampc.sum(input=t, dim=0).numpy(), np.sum(x, 0), rtol=1e-6)
    np.testing.assert_allclose(ampc.mean(t, (0, 1), True).numpy(), np.mean(x, (0, 1), keepdims=True), rtol=1e-6)
    assert ampc.sum(t, dim=[0, 1]).shape == ()
    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        ampc.sum()


# ------------------------------------------------------------------ max/min with indices, argmax


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8"])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_max_min_dim_and_arg(dtype, dim, layout):
    t, x = sample_in_layout((7, 9), dtype, layout)
    for fn, npv, npi in [("max", np.max, np.argmax), ("min", np.min, np.argmin)]:
        r = getattr(t, fn)(dim)
        assert r.values.dtype == t.dtype and r.indices.dtype == ampc.int64
        np.testing.assert_array_equal(host_exact(r.values), npv(x, axis=dim))
        np.testing.assert_array_equal(r.indices.numpy(), npi(x, axis=dim))
        v, i = getattr(ampc, fn)(t, dim, keepdim=True)
        assert tuple(v.shape) == tuple(npv(x, axis=dim, keepdims=True).shape)
        np.testing.assert_array_equal(i.numpy(), np.expand_dims(npi(x, axis=dim), dim))
        np.testing.assert_array_equal(getattr(t, "arg" + fn)(dim).numpy(), npi(x, axis=dim))
        assert getattr(t, "arg" + fn)().item() == npi(x)  # flat index over the logical order
        assert host_exact(getattr(t, fn)()) == npv(x)


def test_ties_pick_first_occurrence():
    x = np.array([[3, 1, 3, 0, 3], [2, 2, 2, 2, 2], [0, 5, 1, 5, 5]], dtype=np.int64)
    t = ampc.from_numpy(x)
    np.testing.assert_array_equal(t.max(1).indices.numpy(), [0, 0, 1])
    np.testing.assert_array_equal(t.min(1).indices.numpy(), [3, 0, 0])
    np.testing.assert_array_equal(t.argmax(0).numpy(), np.argmax(x, 0))
    assert t.argmax().item() == np.argmax(x)
    f = ampc.from_numpy(x.astype(np.float32).T.copy()).t()  # ties through a transposed view
    np.testing.assert_array_equal(f.argmin(1).numpy(), np.argmin(x, 1))


def test_nan_propagates_like_torch():
    x = np.array([[1.0, np.nan, 3.0, np.nan], [4.0, 2.0, -1.0, 0.5], [-np.inf, -np.inf, np.nan, 9.0]],
                 dtype=np.float32)
    t, tt = ampc.from_numpy(x), torch.from_numpy(x)
    for fn in ["amax", "amin", "sum", "mean", "prod", "logsumexp"]:
        np.testing.assert_array_equal(getattr(t, fn)(1).numpy(), getattr(tt, fn)(1).numpy())
    for fn in ["max", "min"]:
        r, rt = getattr(t, fn)(1), getattr(tt, fn)(1)
        np.testing.assert_array_equal(r.values.numpy(), rt.values.numpy())
        np.testing.assert_array_equal(r.indices.numpy(), rt.indices.numpy())
        assert math.isnan(getattr(t, fn)().item())
    np.testing.assert_array_equal(t.argmax(1).numpy(), tt.argmax(1).numpy())
    np.testing.assert_array_equal(t.argmin(0).numpy(), tt.argmin(0).numpy())
    assert t.argmax().item() == tt.argmax().item() == 1
    assert math.isnan(t.norm(float("inf")).item()) and math.isnan(t.norm(float("-inf")).item())


def test_all_minus_inf_rows_have_index_zero():
    x = np.full((2, 3), -np.inf, dtype=np.float32)
    t = ampc.from_numpy(x)
    np.testing.assert_array_equal(t.argmax(1).numpy(), [0, 0])
    np.testing.assert_array_equal(t.max(0).indices.numpy(), [0, 0, 0])
    np.testing.assert_array_equal(t.logsumexp(1).numpy(), [-np.inf, -np.inf])


def test_max_with_other_is_elementwise():
    a, x = sample_in_layout((3, 4), seed=1)
    b, y = sample_in_layout((3, 4), seed=2)
    np.testing.assert_array_equal(ampc.max(a, b).numpy(), np.maximum(x, y))
    np.testing.assert_array_equal(a.min(b).numpy(), np.minimum(x, y))


def test_return_types_are_named_tuples():
    t, _ = sample_in_layout((2, 3))
    r = t.max(dim=1)
    values_, indices = r
    assert values_ is r.values or np.array_equal(values_.numpy(), r.values.numpy())
    assert indices.dtype == ampc.int64 and r[1].shape == (2,)
    assert "values=" in repr(r) and "indices=" in repr(r)
    assert type(r).__name__ == "max" and type(t.min(0)).__name__ == "min"


def test_argmax_keepdim_without_dim():
    t, x = sample_in_layout((2, 3, 4))
    r = t.argmax(keepdim=True)
    assert tuple(r.shape) == (1, 1, 1) and r.item() == np.argmax(x)
    assert tuple(torch.from_numpy(x).argmax(keepdim=True).shape) == (1, 1, 1)


# ------------------------------------------------------------------ var, std


@pytest.mark.parametrize("dim", [None, 0, 1, -1, (0, 2)])
@pytest.mark.parametrize("correction", [0, 1, 2, 0.5])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_var_std(dim, correction, layout):
    t, x = sample_in_layout((5, 6, 7), "float64", layout)
    axis = np_axis(dim, 3)
    kw = {} if dim is None else {"dim": dim}
    n = x.size if axis is None else np.prod([x.shape[a] for a in np.atleast_1d(axis)])
    ref_var = np.sum((x - np.mean(x, axis=axis, keepdims=True)) ** 2, axis=axis) / (n - correction)
    check_close(t.var(correction=correction, **kw), ref_var, "float64")
    check_close(ampc.std(t, correction=correction, **kw), np.sqrt(ref_var), "float64")


def test_var_unbiased_forms_and_keepdim():
    t, x = sample_in_layout((4, 5))
    np.testing.assert_allclose(t.var().item(), np.var(x, ddof=1), rtol=1e-6)
    np.testing.assert_allclose(t.var(False).item(), np.var(x), rtol=1e-6)
    np.testing.assert_allclose(t.var(unbiased=False).item(), np.var(x), rtol=1e-6)
    np.testing.assert_allclose(t.std(1, True, True).numpy(), np.std(x, axis=1, ddof=1, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(t.std(0, unbiased=False).numpy(), np.std(x, axis=0), rtol=1e-6)
    with pytest.raises(TypeError, match="unbiased"):
        t.var(0, unbiased=True, correction=1)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_var_low_precision_and_large_mean(dtype):
    g = rng()
    x = (g.standard_normal((64, 300)) + (1e3 if dtype in ("float16", "bfloat16") else 1e6)).astype(np.float32)
    t = ampc.from_numpy(x).to(getattr(ampc, dtype))
    xv = host_exact(t)
    for dim in (0, 1):  # across rows (Welford) and along rows (two passes)
        got = t.var(dim)
        ref = np.var(xv, axis=dim, ddof=1)
        check_close(got, ref, dtype)
        # torch's float64 Welford loses ~1e-10 to the 1e6 offset; ours is shifted and exact
        np.testing.assert_allclose(host_exact(got), to_torch(t).var(dim).double().numpy(),
                                   rtol=max(2 * ROUND_RTOL[dtype], 1e-9))


def test_var_degenerate_like_torch():
    one = ampc.tensor([1.5])
    assert math.isnan(one.var().item())
    assert math.isinf(ampc.tensor([1.0, 2.0]).var(correction=2).item())
    assert math.isnan(ampc.tensor(3.0).std().item())
    assert math.isnan(ampc.empty(0).var().item())


# ------------------------------------------------------------------ norm


@pytest.mark.parametrize("p", [2, 1, 3, 0.5, 0, float("inf"), float("-inf"), -1, "fro"])
@pytest.mark.parametrize("dim", [None, 0, (0, 1), -1])
def test_norm_orders(p, dim):
    t, x = sample_in_layout((4, 5, 3), "float64", "sliced")
    x[0, 0, 0] = 0.0
    t[0, 0, 0] = 0.0
    axis = np_axis(dim, 3)
    pp = 2 if p == "fro" else p
    a = np.abs(x)
    if pp == float("inf"):
        ref = np.max(a, axis=axis)
    elif pp == float("-inf"):
        ref = np.min(a, axis=axis)
    elif pp == 0:
        ref = np.sum(a != 0, axis=axis).astype(np.float64)
    else:
        with np.errstate(divide="ignore"):
            ref = np.sum(a**pp, axis=axis) ** (1.0 / pp)
    kw = {} if dim is None else {"dim": dim}
    check_close(t.norm(p, **kw), ref, "float64")
    want = torch.norm(to_torch(t), p=p, **kw).numpy()
    np.testing.assert_allclose(host_exact(t.norm(p, **kw)), want, rtol=1e-12)
    if p != "fro":
        check_close(ampc.vector_norm(t, p, **kw), ref, "float64")


def test_norm_defaults_dtype_and_keepdim():
    t, x = sample_in_layout((3, 4), "float16")
    n = t.norm()
    assert n.dtype == ampc.float16
    check_close(n, np.sqrt(np.sum(host_exact(t) ** 2)), "float16")
    n64 = t.norm(dtype=ampc.float64)
    assert n64.dtype == ampc.float64
    np.testing.assert_allclose(n64.item(), np.sqrt(np.sum(host_exact(t) ** 2)), rtol=1e-14)
    k = ampc.vector_norm(t, 1, dim=1, keepdim=True)
    assert tuple(k.shape) == (3, 1)
    assert ampc.empty(0).norm().item() == 0.0 and ampc.empty(0, 2).norm(0, dim=0).shape == (2,)


# ------------------------------------------------------------------ logsumexp


@pytest.mark.parametrize("dim", [0, 1, -1, (0, 1), (2, 0)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_logsumexp(dim, dtype):
    t, x = sample_in_layout((6, 7, 8), dtype, "transposed", low=-30, high=30)
    axis = np_axis(dim, 3)
    m = np.max(x, axis=axis, keepdims=True)
    ref = np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(x - m), axis=axis))
    got = t.logsumexp(dim)
    check_close(got, ref, dtype)
    np.testing.assert_allclose(host_exact(got), torch.logsumexp(to_torch(t), dim).double().numpy(),
                               rtol=2 * ROUND_RTOL[dtype])


def test_logsumexp_stable_and_special_values():
    x = np.array([[1000.0, 1000.0], [-1000.0, -1000.0], [np.inf, 1.0], [-np.inf, 0.0]], dtype=np.float32)
    got = ampc.logsumexp(ampc.from_numpy(x), 1, keepdim=True)
    np.testing.assert_allclose(got.numpy(), torch.logsumexp(torch.from_numpy(x), 1, keepdim=True).numpy(), rtol=1e-6)
    ints = ampc.tensor([1, 2, 3])
    r = ints.logsumexp(0)
    assert r.dtype == ampc.float32
    np.testing.assert_allclose(r.item(), np.log(np.sum(np.exp([1.0, 2.0, 3.0]))), rtol=1e-6)
    assert ampc.empty(0, 3).logsumexp(0).numpy().tolist() == [-np.inf] * 3


# ------------------------------------------------------------------ any, all


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "float32", "float16"])
@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1)])
def test_any_all(dtype, dim):
    g = rng()
    x = (g.random((5, 40)) < 0.05).astype(np.float32)  # mostly zeros: both answers occur
    x[1, :] = 1
    t = ampc.from_numpy(x).to(getattr(ampc, dtype))
    axis = np_axis(dim, 2)
    kw = {} if dim is None else {"dim": dim}
    out_dtype = ampc.uint8 if dtype == "uint8" else ampc.bool
    a, b = t.any(**kw), ampc.all(t, **kw)
    assert a.dtype == out_dtype and b.dtype == out_dtype
    np.testing.assert_array_equal(a.numpy().astype(bool), np.any(x != 0, axis=axis))
    np.testing.assert_array_equal(b.numpy().astype(bool), np.all(x != 0, axis=axis))
    nan = ampc.tensor([0.0, float("nan")])
    assert nan.any().item() is True and nan.all().item() is False


# ------------------------------------------------------------------ cumsum


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32"])
def test_cumsum(dim, layout, dtype):
    t, x = sample_in_layout((4, 5, 6), dtype, layout)
    got = t.cumsum(dim)
    assert got.dtype == (ampc.int64 if dtype == "int32" else t.dtype)
    if dtype == "int32":
        np.testing.assert_array_equal(got.numpy(), np.cumsum(x, axis=dim))
    else:
        check_close(got, np.cumsum(x, axis=dim), dtype, scale=np.max(np.abs(x)) * x.shape[dim])
        np.testing.assert_allclose(host_exact(got), torch.cumsum(to_torch(t), dim).double().numpy(),
                                   rtol=2 * ROUND_RTOL[dtype], atol=1e-2 if dtype == "float16" else 1e-5)


def test_cumsum_dtype_and_shapes():
    t = ampc.tensor([True, True, False, True])
    c = t.cumsum(0)
    assert c.dtype == ampc.int64 and c.tolist() == [1, 2, 2, 3]
    f = ampc.cumsum(ampc.tensor([1, 2, 3]), 0, dtype=ampc.float32)
    assert f.dtype == ampc.float32 and f.tolist() == [1.0, 3.0, 6.0]
    assert ampc.tensor(2.5).cumsum(0).item() == 2.5 and ampc.tensor(2.5).cumsum(-1).shape == ()
    assert ampc.empty(0, 3).cumsum(1).shape == (0, 3)


# ------------------------------------------------------------------ 0-dim and zero-size


def test_zero_dim_inputs():
    s = ampc.tensor(3.5)
    for fn in ["sum", "mean", "prod", "amax", "amin"]:
        assert getattr(s, fn)().item() == 3.5 and getattr(s, fn)(0).shape == ()
    assert s.sum(-1, keepdim=True).shape == ()
    v, i = s.max(0)
    assert v.item() == 3.5 and i.item() == 0
    assert s.argmax().item() == 0 and s.argmin(0).item() == 0
    assert s.norm().item() == 3.5 and s.logsumexp(0).item() == 3.5
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-1, 0\], but got 1\)"):
        s.sum(1)


def test_zero_size_inputs():
    e = ampc.empty(0, 3)
    assert e.sum().item() == 0 and e.prod().item() == 1
    assert e.sum(0).tolist() == [0.0, 0.0, 0.0] and e.prod(0).tolist() == [1.0, 1.0, 1.0]
    assert e.sum(1).shape == (0,) and e.sum(1, keepdim=True).shape == (0, 1)
    assert math.isnan(e.mean().item()) and all(math.isnan(v) for v in e.mean(0).tolist())
    assert e.amax(1).shape == (0,) and e.argmax(1).shape == (0,)
    assert e.max(1).values.shape == (0,)
    assert e.any().item() is False and e.all().item() is True
    assert ampc.empty(0, dtype=ampc.int32).sum().dtype == ampc.int64


# ------------------------------------------------------------------ large inputs: threaded paths


def test_large_full_sum_matches_float64():
    g = rng()
    x = g.standard_normal(1_000_003).astype(np.float32) + 0.5
    t = ampc.from_numpy(x)
    ref = np.sum(x.astype(np.float64))
    got = t.sum().item()
    assert abs(got - ref) <= abs(ref) * 6e-8  # the float64 sum, rounded once to float32
    assert t.sum(dtype=ampc.float64).item() == pytest.approx(ref, rel=1e-13)
    assert t.mean().item() == pytest.approx(ref / x.size, rel=1e-7)
    assert t.amax().item() == x.max() and t.argmin().item() == np.argmin(x)


@pytest.mark.parametrize("shape,dim", [((20000, 37), 0), ((37, 20000), 1), ((3, 30000, 7), 1),
                                       ((40001, 3), 0), ((300, 400), (0, 1)), ((5, 70000), 0)])
def test_large_reductions_each_path(shape, dim):
    t, x = sample_in_layout(shape, "float32", seed=5)
    axis = np_axis(dim, len(shape))
    scale = np.sum(np.abs(x), axis=axis)
    check_close(t.sum(dim), np.sum(x, axis=axis), "float32", scale=np.max(scale))
    check_close(t.amax(dim), np.max(x, axis=axis), "float32")
    check_close(t.var(dim), np.var(x, axis=axis, ddof=1), "float32")
    check_close(t.norm(dim=dim), np.sqrt(np.sum(x**2, axis=axis)), "float32")
    np.testing.assert_array_equal(t.any(dim).numpy(), np.any(x != 0, axis=axis))
    if isinstance(dim, int):
        np.testing.assert_array_equal(t.max(dim).indices.numpy(), np.argmax(x, axis=dim))
        np.testing.assert_array_equal(t.argmin(dim).numpy(), np.argmin(x, axis=dim))
        check_close(t.cumsum(dim), np.cumsum(x, axis=dim), "float32", scale=np.max(scale))


@pytest.mark.parametrize("layout", ["transposed", "sliced"])
def test_large_strided_layouts(layout):
    t, x = sample_in_layout((600, 700), "float32", layout, seed=3)
    for dim in (0, 1, None):
        axis = np_axis(dim, 2)
        got = t.sum() if dim is None else t.sum(dim)
        check_close(got, np.sum(x, axis=axis), "float32", scale=np.sum(np.abs(x)))
    # one output split over threads, spans starting mid-row: the flat index must survive
    assert t.argmax().item() == np.argmax(x) and t.argmin().item() == np.argmin(x)
    check_close(t.var(), np.var(x, ddof=1), "float32")


def test_large_expanded():
    t, x = sample_in_layout((600, 700), "float32", seed=3)
    row = ampc.from_numpy(x[0].copy()).expand(500, 700)  # stride-0 dim
    check_close(row.sum(0), 500 * x[0].astype(np.float64), "float32", scale=500 * np.max(np.abs(x[0])))
    assert row.argmax(0).tolist() == [0] * 700


# ------------------------------------------------------------------ errors


def test_dim_errors():
    t, _ = sample_in_layout((2, 3))
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        t.sum((0, -2))
    with pytest.raises(RuntimeError, match="dim 1 appears multiple times in the list of dims"):
        t.amax([1, 1])
    for call in (lambda: t.sum(2), lambda: t.mean((0, 5)), lambda: t.max(-3), lambda: t.argmax(2),
                 lambda: t.var(2), lambda: t.norm(dim=3), lambda: t.logsumexp(-3), lambda: t.cumsum(2),
                 lambda: t.any(4)):
        with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\]"):
            call()
    with pytest.raises(TypeError):
        t.sum(1.5)
    with pytest.raises(TypeError, match="must be int"):
        t.argmax((0, 1))
    with pytest.raises(TypeError):
        t.logsumexp()
    with pytest.raises(TypeError):
        t.cumsum()


def test_dtype_errors():
    i = ampc.tensor([1, 2])
    with pytest.raises(RuntimeError, match=r"mean\(\): could not infer output dtype. Input dtype must be either a "
                                           r"floating point or complex dtype. Got: Long"):
        i.mean()
    with pytest.raises(RuntimeError, match="Got: Bool"):
        ampc.tensor([True]).mean()
    with pytest.raises(RuntimeError,
                       match=r"Optional dtype must be either a floating point or complex dtype. Got: Int"):
        ampc.tensor([1.0]).mean(dtype=ampc.int32)
    with pytest.raises(RuntimeError, match="std and var only support floating point and complex dtypes"):
        i.var()
    with pytest.raises(RuntimeError, match="std and var only support floating point and complex dtypes"):
        i.std(0)
    with pytest.raises(RuntimeError, match="linalg.vector_norm: Expected a floating point or complex tensor as "
                                           "input. Got Long"):
        i.norm()
    with pytest.raises(RuntimeError, match=r"argmax\(\): does not support bool input"):
        ampc.tensor([True, False]).argmax()


def test_empty_reduction_errors():
    with pytest.raises(RuntimeError, match=r"max\(\): Expected reduction dim to be specified for input.numel\(\) "
                                           r"== 0. Specify the reduction dim with the 'dim' argument."):
        ampc.empty(0).max()
    with pytest.raises(RuntimeError, match=r"amin\(\): Expected reduction dim to be specified"):
        ampc.empty(2, 0).amin()
    with pytest.raises(IndexError, match=r"max\(\): Expected reduction dim 0 to have non-zero size."):
        ampc.empty(0, 3).max(0)
    with pytest.raises(IndexError, match=r"amax\(\): Expected reduction dim 1 to have non-zero size."):
        ampc.empty(3, 0).amax((0, 1))
    with pytest.raises(IndexError, match=r"argmax\(\): Expected reduction dim to be specified for input.numel\(\) "
                                         r"== 0."):
        ampc.empty(0).argmax()
    with pytest.raises(IndexError, match=r"argmin\(\): Expected reduction dim 0 to have non-zero size."):
        ampc.empty(0, 2).argmin(0)
    with pytest.raises(RuntimeError, match="cannot compute the inf norm on an empty tensor"):
        ampc.vector_norm(ampc.empty(0), float("inf"))
    with pytest.raises(RuntimeError, match="cannot compute the -1 norm on the dimension 0"):
        ampc.empty(0, 2).norm(-1, dim=0)
    with pytest.raises(RuntimeError, match="not supported"):
        ampc.ones(2, 2).norm("nuc")


def test_vector_norm_dtype_rules():
    t = ampc.tensor([3.0, 4.0], dtype=ampc.float64)
    with pytest.raises(RuntimeError, match=r"the dtype of the input \(Double\) should be convertible without "
                                           r"narrowing to the specified dtype \(Float\)"):
        ampc.vector_norm(t, dtype=ampc.float32)
    with pytest.raises(RuntimeError, match="dtype should be floating point or complex, but got Long"):
        ampc.vector_norm(t, dtype=ampc.int64)
    assert ampc.vector_norm(t.float(), dtype=ampc.float64).item() == 5.0


# ------------------------------------------------------------------ autograd recording

# each case runs on ampc and on torch (`lib`) alike
GRAD_CASES = {
    "sum": lambda x, lib: x.sum(),
    "sum_dims_keepdim": lambda x, lib: x.sum((0, 2), keepdim=True).sum(),
    "sum_dtype": lambda x, lib: x.sum(dtype=lib.float64),
    "mean_dim": lambda x, lib: x.mean(1).sum(),
    "prod_dim": lambda x, lib: x.prod(2).sum(),
    "amax_dims": lambda x, lib: x.amax((0, 1)).sum(),
    "max_all": lambda x, lib: x.max(),
    "max_dim": lambda x, lib: x.max(1).values.sum(),
    "min_dim_keepdim": lambda x, lib: lib.min(x, -1, keepdim=True)[0].sum(),
    "var_dim": lambda x, lib: x.var(1).sum(),
    "std_all": lambda x, lib: x.std(),
    "norm2": lambda x, lib: x.norm(),
    "norm1_dim": lambda x, lib: x.norm(1, dim=0).sum(),
    "norm3": lambda x, lib: x.norm(3),
    "logsumexp": lambda x, lib: lib.logsumexp(x, 2).sum(),
    "cumsum": lambda x, lib: x.cumsum(1).sum(),
}


@pytest.mark.parametrize("case", sorted(GRAD_CASES))
def test_autograd_through_reductions(case):
    g = rng()
    x = g.uniform(0.5, 2.0, size=(2, 3, 4)).astype(np.float32)
    a = ampc.from_numpy(x.copy()).requires_grad_(True)
    t = torch.from_numpy(x.copy()).requires_grad_(True)
    ya, yt = GRAD_CASES[case](a, ampc), GRAD_CASES[case](t, torch)
    assert ya.grad_fn is not None
    ya.backward()
    yt.backward()
    assert a.grad.dtype == ampc.float32
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_index_and_boolean_results_have_no_grad():
    a = ampc.ones(2, 3).requires_grad_(True)
    for r in (a.argmax(), a.argmin(1), a.any(), a.all(0), a.max(1).indices):
        assert not r.requires_grad and r.grad_fn is None
