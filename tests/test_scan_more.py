"""Issue 12's scans (core/reduce_scan.c, cpu/cpu_scan_more.c, derivatives_scan.c) against torch:
cumprod (zeros and their gradients), logcumsumexp (infinities, NaN), cummax/cummin (values and
indices: ties and NaN take the latest index) over every dim and dtype, 0-dim, 0-size and
non-contiguous inputs, dtype=, in-place cumprod_, gradients (torch, and float64 finite
differences through ampc.testing.gradcheck, double backward included) and torch's errors.
fp16/bf16 results are compared exactly: both accumulate in double and round each prefix once."""
import numpy as np
import pytest
import torch

import ampc
from ampc.testing import gradcheck, gradgradcheck

FLOATS = ["float32", "float64", "float16", "bfloat16"]
INTS = ["int64", "int32", "uint8", "bool"]
TOL = {"float32": 1e-6, "float64": 1e-13, "float16": 0, "bfloat16": 0}


def sample(seed=0, shape=(3, 5, 4)):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, shape).astype(np.float32)
    if len(shape) != 3:
        return x
    x[0, 2, 1] = 0  # one zero in a line
    x[1, 1, :] = 0  # zeros across a slice
    x[1, 3, 0] = 0  # a second zero in a line
    x[2, 1, 3] = x[2, 0, 3]  # a tie
    return x


def lib_tensor(lib, a, dtype):
    return lib.tensor(a).to(getattr(lib, dtype))


def assert_same(got, want, rtol=0.0, what=""):
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], (what, got.dtype, want.dtype)
    g, w = got.detach(), want.detach()
    if g.dtype.is_floating_point:
        np.testing.assert_allclose(g.double().numpy(), w.double().numpy(), rtol=rtol, atol=0, equal_nan=True,
                                   err_msg=what)
    else:
        np.testing.assert_array_equal(g.numpy(), w.numpy(), err_msg=what)


@pytest.mark.parametrize("dtype", FLOATS + INTS)
@pytest.mark.parametrize("name", ["cumprod", "logcumsumexp", "cummax", "cummin"])
def test_values_every_dim(name, dtype):
    x = sample()
    if dtype in INTS:
        x = np.round(x * 2)
    specials = x.copy()
    if dtype in FLOATS:
        specials[2, 3, 2] = np.nan
        specials[0, 0, 0] = np.inf
        specials[0, 1, 0] = -np.inf
    for arr in (x, specials):
        a, t = lib_tensor(ampc, arr, dtype), lib_tensor(torch, arr, dtype)
        for d in (0, 1, 2, -1, -3):
            if name == "logcumsumexp" and dtype in INTS:
                with pytest.raises(NotImplementedError, match="logcumsumexp_out_cpu"):
                    ampc.logcumsumexp(a, d)
                continue
            got, want = getattr(ampc, name)(a, d), getattr(torch, name)(t, d)
            if name in ("cummax", "cummin"):
                assert_same(got.values, want.values, 0, "%s values %s dim %d" % (name, dtype, d))
                assert_same(got.indices, want.indices, 0, "%s indices %s dim %d" % (name, dtype, d))
                assert got[0] is got.values or np.array_equal(got[0].numpy(), got.values.numpy())
            else:
                assert_same(got, want, TOL.get(dtype, 0), "%s %s dim %d" % (name, dtype, d))


def test_layouts_dtype_and_inplace():
    x = sample(1, (4, 6))
    a, t = ampc.tensor(x), torch.tensor(x)
    assert_same(a.t().cumprod(0), t.t().cumprod(0), 1e-6, "transposed")
    assert_same(a[:, ::2].cummax(1).values, t[:, ::2].cummax(1).values, 0, "strided")
    assert_same(ampc.cumprod(a, 1, dtype=ampc.float64), torch.cumprod(t, 1, dtype=torch.float64), 1e-13, "dtype=")
    assert_same(ampc.cumprod(ampc.tensor([1, 2, 3]), 0, dtype=ampc.float32),
                torch.cumprod(torch.tensor([1, 2, 3]), 0, dtype=torch.float32))
    for name in ("cumprod", "logcumsumexp", "cummax", "cummin"):
        e, te = ampc.empty(0, 3), torch.empty(0, 3)
        r, tr = getattr(ampc, name)(e, 1), getattr(torch, name)(te, 1)
        r, tr = (r[0], tr[0]) if name.startswith("cumm") else (r, tr)
        assert tuple(r.shape) == (0, 3) and tuple(tr.shape) == (0, 3)
        s, ts = getattr(ampc, name)(ampc.tensor(2.5), 0), getattr(torch, name)(torch.tensor(2.5), 0)
        if name.startswith("cumm"):
            assert s.values.item() == ts.values.item() and s.indices.item() == ts.indices.item() == 0
        else:
            assert abs(s.item() - ts.item()) < 1e-6
    y = a.clone()
    assert y.cumprod_(1) is y
    assert_same(y, t.cumprod(1), 1e-6, "cumprod_")
    for lib in (ampc, torch):
        with pytest.raises(IndexError):
            lib.cumprod(lib.tensor(x), 2)
        with pytest.raises(IndexError):
            lib.cummax(lib.tensor(x), -3)


@pytest.mark.parametrize("name", ["cumprod", "logcumsumexp", "cummax", "cummin"])
def test_gradients_match_torch(name):
    for seed in range(3):
        x = sample(seed).astype(np.float64)
        w = np.cos(np.arange(x.size)).reshape(x.shape)
        for d in (0, 1, 2):
            grads = []
            for lib in (ampc, torch):
                p = lib.tensor(x, requires_grad=True)
                y = getattr(lib, name)(p, d)
                y = y[0] if name.startswith("cumm") else y
                (y * lib.tensor(w)).sum().backward()
                grads.append((p.grad, type(y.grad_fn).__name__))
            assert grads[0][1] == grads[1][1]
            assert_same(grads[0][0], grads[1][0], 1e-10, "%s grad dim %d" % (name, d))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_low_precision_gradients(dtype):
    x = sample(4)
    for name in ("cumprod", "logcumsumexp", "cummax"):
        grads = []
        for lib in (ampc, torch):
            p = lib_tensor(lib, x, dtype).requires_grad_()
            y = getattr(lib, name)(p, 1)
            (y[0] if name == "cummax" else y).sum().backward()
            grads.append(p.grad.double().numpy())
        tol = {"float32": 1e-5, "float16": 1e-2, "bfloat16": 5e-2}[dtype]
        np.testing.assert_allclose(grads[0], grads[1], rtol=tol, atol=tol, err_msg=name + " " + dtype)


def test_finite_differences_and_second_order():
    rng = np.random.default_rng(5)
    x = ampc.tensor(rng.uniform(0.5, 1.5, (3, 4)), dtype=ampc.float64).requires_grad_()
    z = ampc.tensor([[0.7, 0.0, 1.3, 0.4], [1.1, 0.9, 0.0, 0.0]], dtype=ampc.float64).requires_grad_()
    for d in (0, 1):
        assert gradcheck(lambda t: ampc.cumprod(t, d), (x,))
        assert gradcheck(lambda t: ampc.cumprod(t, 1), (z,))  # one zero, and two in a row
        assert gradcheck(lambda t: ampc.logcumsumexp(t, d), (x,))
        assert gradcheck(lambda t: ampc.cummax(t, d).values, (x,))
        assert gradcheck(lambda t: ampc.cummin(t, d).values, (x,))
    assert gradgradcheck(lambda t: ampc.cumprod(t, 1), (x,))
    assert gradgradcheck(lambda t: ampc.logcumsumexp(t, 1), (x,))


def test_autocast_cumprod_policy():
    """torch's CUDA autocast list puts cumprod in fp32 through its dtype argument; its CPU list
    leaves it out, so on the CPU it runs as called (as torch)."""
    assert ampc._C._autocast_policy_table("cuda")["cumprod"] == "fp32_set_opt_dtype"
    x = ampc.tensor(sample(6)).half()
    with ampc.autocast("cpu", dtype=ampc.float16):
        y = ampc.cumprod(x, 1)
    with torch.autocast("cpu", dtype=torch.float16):
        ref = torch.cumprod(torch.from_numpy(sample(6)).half(), 1)
    assert y.dtype == ampc.float16 and ref.dtype == torch.float16
    np.testing.assert_array_equal(y.float().numpy(), ref.float().numpy())


# ---------------------------------------------------------------------------- NaN-aware reductions, nan_to_num

NAN_SAMPLE = np.array([[1.0, np.nan, -np.inf, 4.0], [np.inf, 0.0, 2.5, np.nan], [-1.5, 3.0, 0.0, 7.0]],
                      dtype=np.float32)


@pytest.mark.parametrize("dtype", FLOATS)
def test_nansum_nanmean_count_nonzero(dtype):
    a, t = lib_tensor(ampc, NAN_SAMPLE, dtype), lib_tensor(torch, NAN_SAMPLE, dtype)
    for name in ("nansum", "nanmean"):
        for kw in ({}, {"dim": 1}, {"dim": (0, 1), "keepdim": True}, {"dim": 0}, {"dim": -1, "keepdim": True}):
            assert_same(getattr(ampc, name)(a, **kw), getattr(torch, name)(t, **kw), 1e-6 if dtype != "bfloat16" else 0,
                        "%s %s %s" % (name, dtype, kw))
            assert_same(getattr(a, name)(**kw), getattr(torch, name)(t, **kw), 1e-6 if dtype != "bfloat16" else 0)
    for kw in ({}, {"dim": 1}, {"dim": (0, 1)}):
        assert_same(ampc.count_nonzero(a, **kw), torch.count_nonzero(t, **kw), what="count_nonzero")
        assert_same(a.count_nonzero(**kw), torch.count_nonzero(t, **kw))
    i = np.array([[1, 0, 3], [0, 0, 2]])
    assert_same(ampc.nansum(ampc.tensor(i), 1), torch.nansum(torch.tensor(i), 1), what="nansum int")
    assert_same(ampc.nansum(a, dtype=ampc.float64), torch.nansum(t, dtype=torch.float64), 1e-12, "dtype=")
    with pytest.raises(RuntimeError, match="nanmean"):
        ampc.nanmean(ampc.tensor(i))
    p, q = ampc.tensor(NAN_SAMPLE, dtype=ampc.float64).requires_grad_(), torch.tensor(NAN_SAMPLE, dtype=torch.float64,
                                                                                      requires_grad=True)
    ampc.nanmean(p, 1).sum().backward()
    torch.nanmean(q, 1).sum().backward()
    assert_same(p.grad, q.grad, 1e-13, "nanmean grad")


@pytest.mark.parametrize("dtype", FLOATS + ["int64", "bool"])
def test_nan_to_num(dtype):
    x = NAN_SAMPLE if dtype in FLOATS else np.array([[1, 0, 3], [2, 0, 5]])
    a, t = lib_tensor(ampc, x, dtype), lib_tensor(torch, x, dtype)
    for args in ((), (1.5,), (1.5, 10.0, -10.0)):
        assert_same(ampc.nan_to_num(a, *args), torch.nan_to_num(t, *args), what="nan_to_num %s %s" % (dtype, args))
        assert_same(a.nan_to_num(*args), t.nan_to_num(*args))
        b, u = a.clone(), t.clone()
        assert b.nan_to_num_(*args) is b
        u.nan_to_num_(*args)
        assert_same(b, u, what="nan_to_num_")
    assert_same(ampc.nan_to_num(a, posinf=1.0), torch.nan_to_num(t, posinf=1.0))
    if dtype in FLOATS:
        p, q = lib_tensor(ampc, x, dtype).requires_grad_(), lib_tensor(torch, x, dtype).requires_grad_()
        ampc.nan_to_num(p).sum().backward()
        torch.nan_to_num(q).sum().backward()
        assert_same(p.grad, q.grad, what="nan_to_num grad")
