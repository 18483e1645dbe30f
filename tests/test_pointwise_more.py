"""Issue 12's pointwise ops (ops.def's "issue 12" blocks, elementwise_math_more.h, special_math.h,
py_elementwise_more.c) against torch: values and result dtypes over float32/64, fp16, bf16 and the
integer dtypes torch takes, edge values (inf, NaN, +-0, domain edges, subnormals), broadcasting,
non-contiguous and 0-size inputs, gradients (torch, and float64 finite differences through
ampc.testing.gradcheck), in-place and out= forms, aliases, and torch's errors.

fp16/bf16 results are compared exactly (0 tolerance): ampc computes in float and rounds once, as
torch's CPU kernels do, and rounds after every step where torch's kernel runs on the 16-bit type
(logit, xlogy). Float32/float64 get torch's own libm-level tolerance (1e-6 / 1e-13 relative)
because torch's CPU kernels use SLEEF vector math where ampc calls libm."""
import math

import numpy as np
import pytest
import torch

import ampc
from ampc.testing import gradcheck
from helpers import check_op

FLOATS = ["float32", "float64", "float16", "bfloat16"]
# name: (low, high) of the random inputs (inside the domain, away from poles)
UNARY = {
    "acos": (-0.95, 0.95), "asin": (-0.95, 0.95), "atan": (-3, 3), "cosh": (-3, 3), "sinh": (-3, 3),
    "tan": (-1.3, 1.3), "acosh": (1.05, 4), "asinh": (-3, 3), "atanh": (-0.95, 0.95), "log1p": (-0.9, 3),
    "expm1": (-3, 3), "exp2": (-3, 3), "log2": (0.1, 4), "log10": (0.1, 4), "erfc": (-3, 3),
    "erfinv": (-0.95, 0.95), "lgamma": (0.1, 5), "digamma": (0.1, 5), "sinc": (-3, 3), "trunc": (-3, 3),
    "frac": (-3, 3), "sgn": (-3, 3), "deg2rad": (-300, 300), "rad2deg": (-3, 3),
}
ALIASES = {"arccos": "acos", "arcsin": "asin", "arctan": "atan", "arccosh": "acosh", "arcsinh": "asinh",
           "arctanh": "atanh", "fix": "trunc"}
PREDICATES = ["signbit", "isneginf", "isposinf", "isreal"]
# differentiable binary ops: name -> (low, high) of both inputs
BINARY = {"copysign": (-3, 3), "fmod": (-3, 3), "hypot": (-3, 3), "logaddexp": (-3, 3), "logaddexp2": (-3, 3),
          "xlogy": (0.1, 3), "fmax": (-3, 3), "fmin": (-3, 3)}
EDGES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 1e-30, -1e-30, 1e30, -1e30,
                  100.0, -100.0, 0.9999, 1.0001, 3.0, -3.0, 1e-45, 5e-39], dtype=np.float32)
TOL = {"float32": (1e-6, 1e-7), "float64": (1e-13, 1e-15), "float16": (0, 0), "bfloat16": (0, 0)}


def to(a, lib, dtype):
    return (ampc if lib is ampc else torch).tensor(a).to(getattr(lib, dtype))


def same(got, want, rtol=0.0, atol=0.0, what=""):
    """Values (NaN positions equal, signs of zeros equal where exact) and dtypes."""
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], (what, got.dtype, want.dtype)
    assert tuple(got.shape) == tuple(want.shape), (what, got.shape, want.shape)
    g = got.detach().double().numpy() if got.dtype.is_floating_point else got.numpy()
    w = want.detach().double().numpy() if want.dtype.is_floating_point else want.numpy()
    if not got.dtype.is_floating_point:
        np.testing.assert_array_equal(g, w, err_msg=what)
        return
    np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)
    if rtol == 0 and atol == 0:
        np.testing.assert_array_equal(np.signbit(g[w == 0]), np.signbit(w[w == 0]), err_msg=what + " (signed zeros)")


# ---------------------------------------------------------------------------- unary

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_values_and_grads(name, dtype):
    low, high = UNARY[name]
    r, a = TOL[dtype]
    # fp16/bf16 gradients are products of rounded fp16/bf16 terms on both sides: a few ulps apart
    gr = {"float16": 4e-3, "bfloat16": 3e-2}.get(dtype)
    # (sgn: torch's gradient is a ZeroTensor, which numpy refuses; its zeros are checked below)
    check_op(lambda M, x: getattr(M, name)(x), [(4, 5)], dtype=dtype, low=low, high=high,
             rtol=gr if gr else r, atol=gr if gr else a, grad=name != "sgn")
    if name == "sgn":
        p = to(np.array([1.5, -2.0]), ampc, dtype).requires_grad_()
        p.sgn().sum().backward()
        assert p.grad.tolist() == [0.0, 0.0]
    # values alone, exactly for fp16/bf16
    x = np.random.default_rng(1).uniform(low, high, 257).astype(np.float32)
    same(getattr(ampc, name)(to(x, ampc, dtype)), getattr(torch, name)(to(x, torch, dtype)), r, a, name)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(UNARY) + PREDICATES)
def test_unary_edge_values(name, dtype):
    r, a = TOL[dtype]
    if name in ("lgamma", "digamma") and dtype in ("float32", "float64"):
        r = 1e-5  # glibc's lgamma/log near the poles and huge arguments differ from SLEEF by a few ulps
    edges = EDGES
    if name == "signbit" and dtype == "bfloat16":
        edges = edges[~np.isnan(edges)]  # torch's float -> bf16 cast makes every NaN negative; ampc keeps the sign
    got, want = getattr(ampc, name)(to(edges, ampc, dtype)), getattr(torch, name)(to(edges, torch, dtype))
    same(got, want, r, a, name)


@pytest.mark.parametrize("name", ["digamma", "lgamma", "erfinv", "sinc", "trunc", "frac", "signbit", "expm1",
                                  "log1p", "atanh", "acosh", "tan"])
def test_unary_every_half_value(name):
    """Every finite fp16 value (and the bf16 values of a wide grid) against torch, bit for bit."""
    bits = np.arange(0, 1 << 16, dtype=np.uint16)
    h = bits.view(np.float16)
    h = h[np.isfinite(h)]
    # lgamma: torch's fp16 kernel is not lgammaf rounded once for 3 of the 63488 values (by 2 ulps)
    r = 1e-3 if name == "lgamma" else 0
    same(getattr(ampc, name)(ampc.tensor(h)), getattr(torch, name)(torch.tensor(h)), r, 0, what=name + " fp16")
    grid = np.linspace(-40, 40, 4001, dtype=np.float32)
    same(getattr(ampc, name)(ampc.tensor(grid).bfloat16()), getattr(torch, name)(torch.tensor(grid).bfloat16()),
         what=name + " bf16")


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_finite_differences(name):
    low, high = UNARY[name]
    if name in ("trunc", "sgn"):
        return  # piecewise constant: zero gradient, checked against torch above
    x = ampc.tensor(np.random.default_rng(3).uniform(low, high, (3, 4)), dtype=ampc.float64).requires_grad_()
    if name == "frac":
        x = ampc.tensor(np.random.default_rng(3).uniform(0.1, 0.9, (3, 4)) + np.arange(12).reshape(3, 4) - 6,
                        dtype=ampc.float64).requires_grad_()
    assert gradcheck(getattr(ampc, name), (x,))


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_integer_inputs(name):
    i = np.array([[1, 2, 0], [3, 1, 2]], dtype=np.int64)
    for dt in ("int64", "int32", "uint8", "bool"):
        a = i.astype(bool) if dt == "bool" else i
        try:
            want = getattr(torch, name)(to(a, torch, dt))
        except Exception as e:
            with pytest.raises(type(e), match=str(e).split("\n")[0][:40].replace("(", r"\(").replace(")", r"\)")):
                getattr(ampc, name)(to(a, ampc, dt))
            continue
        same(getattr(ampc, name)(to(a, ampc, dt)), want, 1e-6, 1e-7, "%s(%s)" % (name, dt))


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_inplace_out_layouts(name):
    low, high = UNARY[name]
    rng = np.random.default_rng(5)
    x = rng.uniform(low, high, (4, 6)).astype(np.float32)
    a, t = ampc.tensor(x), torch.tensor(x)
    # in place on a transposed view, out= into a given tensor, 0-size and 0-dim inputs
    av, tv = a.clone().t(), t.clone().t()
    getattr(av, name + "_")()
    getattr(tv, name + "_")()
    same(av, tv, 1e-6, 1e-7, name + "_")
    ao, to_ = ampc.empty(4, 6), torch.empty(4, 6)
    assert getattr(ampc, name)(a, out=ao) is ao
    getattr(torch, name)(t, out=to_)
    same(ao, to_, 1e-6, 1e-7, name + " out=")
    same(getattr(a[:, ::2], name)(), getattr(t[:, ::2], name)(), 1e-6, 1e-7, name + " strided")
    same(getattr(ampc, name)(ampc.empty(0, 3)), getattr(torch, name)(torch.empty(0, 3)), what=name + " empty")
    same(getattr(ampc, name)(a[1, 2]), getattr(torch, name)(t[1, 2]), 1e-6, 1e-7, name + " 0-dim")


@pytest.mark.parametrize("alias,name", sorted(ALIASES.items()))
def test_aliases(alias, name):
    low, high = UNARY[name]
    x = ampc.tensor(np.linspace(low, high, 9, dtype=np.float32))
    np.testing.assert_array_equal(getattr(ampc, alias)(x).numpy(), getattr(ampc, name)(x).numpy())
    np.testing.assert_array_equal(getattr(x, alias)().numpy(), getattr(ampc, name)(x).numpy())
    y = x.clone()
    getattr(y, alias + "_")()
    np.testing.assert_array_equal(y.numpy(), getattr(ampc, name)(x).numpy())


def test_inplace_float_result_into_integer_raises():
    for lib in (ampc, torch):
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
            lib.tensor([1, 2]).deg2rad_()
    with pytest.raises(NotImplementedError, match='"frac_cpu" not implemented for \'Long\''):
        ampc.tensor([1, 2]).frac()
    with pytest.raises(NotImplementedError, match='"trunc_vml_cpu" not implemented for \'Bool\''):
        ampc.trunc(ampc.tensor([True]))


def test_inplace_grad_of_inverse_hyperbolics_is_refused_as_in_torch():
    for name in ("acosh", "asinh", "atanh"):
        for lib in (ampc, torch):
            x = lib.tensor([1.5, 2.0], requires_grad=True) if name == "acosh" else lib.tensor([0.5, 0.25],
                                                                                               requires_grad=True)
            y = getattr(x.clone(), name + "_")()
            assert type(y.grad_fn).__name__ == name.capitalize() + "Backward1"
            with pytest.raises(NotImplementedError, match="inplace version of %s" % name):
                y.sum().backward()


# ---------------------------------------------------------------------------- parameterised unary

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [0, 1, 2, 3, 5])
def test_polygamma(n, dtype):
    r, a = TOL[dtype]
    if n >= 2 and dtype in ("float16", "bfloat16"):
        r = a = 1e-2  # torch evaluates zeta in the 16-bit type step by step, ampc in float
    elif n >= 1:
        r, a = max(r, 1e-5), max(a, 1e-6)  # zeta's pow against SLEEF's
    gr = {"float16": 2e-2, "bfloat16": 5e-2}.get(dtype)
    check_op(lambda M, x: M.polygamma(n, x), [(3, 4)], dtype=dtype, low=0.2, high=4.0, rtol=gr or r, atol=gr or a)
    same(ampc.polygamma(n, to(EDGES, ampc, dtype)), torch.polygamma(n, to(EDGES, torch, dtype)), max(r, 1e-5), a,
         "polygamma %d edges" % n)
    x = ampc.tensor([0.5, 1.5])
    same(x.polygamma(n), torch.tensor([0.5, 1.5]).polygamma(n), 1e-6, 1e-7)
    y = x.clone()
    assert y.polygamma_(n) is y
    same(y, torch.tensor([0.5, 1.5]).polygamma(n), 1e-6, 1e-7)


def test_polygamma_errors_and_grad():
    for lib in (ampc, torch):
        with pytest.raises(RuntimeError, match="polygamma\\(n, x\\) does not support negative n"):
            lib.polygamma(-1, lib.tensor([1.0]))
    x = ampc.tensor([0.7, 1.9, 3.3], dtype=ampc.float64).requires_grad_()
    assert gradcheck(lambda t: ampc.polygamma(2, t), (x,))
    assert type(ampc.polygamma(2, x).grad_fn).__name__ == "PolygammaBackward0"


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("eps", [None, 0.0, 1e-3, 0.25])
def test_logit(eps, dtype):
    gr = {"float16": 4e-3, "bfloat16": 3e-2}.get(dtype)
    r, a = TOL[dtype]
    check_op(lambda M, x: M.logit(x, eps), [(4, 5)], dtype=dtype, low=0.01, high=0.99, rtol=gr or r, atol=gr or a)
    e = np.array([0.0, -0.0, 1.0, 0.5, 1e-4, 0.9999, -0.5, 1.5, np.nan, np.inf], dtype=np.float32)
    same(ampc.logit(to(e, ampc, dtype), eps=eps), torch.logit(to(e, torch, dtype), eps=eps), r, a, "logit edges")
    # backward at the edges: inf at 0 and 1, NaN (eps None) or 0 outside
    # (16 elements: torch's vectorized kernel, whose -0.0 gives -inf; see tests/fuzz/known.py)
    e16 = np.concatenate([e, np.full(6, 0.3, np.float32)])
    ea, et = to(e16, ampc, "float64").requires_grad_(), to(e16, torch, "float64").requires_grad_()
    ampc.logit(ea, eps).sum().backward()
    torch.logit(et, eps).sum().backward()
    same(ea.grad, et.grad, 1e-13, 0, "logit grad edges")
    x = ampc.tensor([0.2, 0.7])
    y = x.clone()
    assert y.logit_(eps) is y and ampc.logit_(x.clone(), eps=eps) is not None
    same(y, torch.tensor([0.2, 0.7]).logit(eps), 1e-6)
    out = ampc.empty(2)
    assert ampc.logit(x, eps, out=out) is out


def test_logit_finite_differences():
    x = ampc.tensor([0.1, 0.35, 0.8], dtype=ampc.float64).requires_grad_()
    assert gradcheck(lambda t: ampc.logit(t, eps=0.05), (x,))
    assert gradcheck(ampc.logit, (x,))


# ---------------------------------------------------------------------------- binary

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_values_and_grads(name, dtype):
    low, high = BINARY[name]
    r, a = TOL[dtype]
    gr = {"float16": 4e-3, "bfloat16": 3e-2}.get(dtype)
    check_op(lambda M, x, y: getattr(M, name)(x, y), [(3, 1, 4), (5, 1)], dtype=dtype, low=low, high=high,
             rtol=gr or r, atol=gr or a)
    rng = np.random.default_rng(2)
    x, y = rng.uniform(low, high, (2, 300)).astype(np.float32)
    same(getattr(ampc, name)(to(x, ampc, dtype), to(y, ampc, dtype)),
         getattr(torch, name)(to(x, torch, dtype), to(y, torch, dtype)), r, a, name)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(BINARY) + ["heaviside", "nextafter"])
def test_binary_edge_values(name, dtype):
    r, a = TOL[dtype]
    x = np.repeat(EDGES, len(EDGES))
    y = np.tile(EDGES, len(EDGES))
    if dtype == "bfloat16" and name == "copysign":
        y = np.where(np.isnan(y), 1.0, y).astype(np.float32)  # torch's bf16 cast makes every NaN negative
    if name == "fmod":  # torch's vectorized fmod is NaN where a / b overflows (tests/fuzz/known.py)
        with np.errstate(all="ignore"):
            y = np.where((np.abs(y) < 1e-37) | (np.abs(x / y) > 1e37), 1.0, y).astype(np.float32)
    if name == "logaddexp2" and dtype in ("float16", "bfloat16"):
        a = 1e-7  # log2(2^a + 2^a) - a: torch's SLEEF log1p(1) is 1 ulp below libm's, a 1e-8 residue in bf16
    same(getattr(ampc, name)(to(x, ampc, dtype), to(y, ampc, dtype)),
         getattr(torch, name)(to(x, torch, dtype), to(y, torch, dtype)), r, a, name)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_finite_differences(name):
    low, high = BINARY[name]
    rng = np.random.default_rng(4)
    x = ampc.tensor(rng.uniform(low, high, (3, 4)), dtype=ampc.float64).requires_grad_()
    y = ampc.tensor(rng.uniform(low, high, (3, 4)), dtype=ampc.float64).requires_grad_()
    if name == "fmod":  # away from the jumps of trunc(x / y)
        y = ampc.tensor(rng.uniform(2.5, 3.0, (3, 4)), dtype=ampc.float64).requires_grad_()
        x = ampc.tensor(rng.uniform(0.2, 2.3, (3, 4)), dtype=ampc.float64).requires_grad_()
    assert gradcheck(getattr(ampc, name), (x, y))


def test_binary_grad_edge_rules():
    """xlogy's 0 * log(b <= 0), copysign's 0 at a == 0, fmax/fmin's NaN routing, hypot at 0: as torch."""
    cases = {
        "xlogy": ([0.0, 0.0, 2.0, 0.0], [3.0, -1.0, 3.0, 0.0]),
        "copysign": ([0.0, -0.0, 2.0, -3.0], [1.0, -1.0, -1.0, 2.0]),
        "fmax": ([np.nan, 1.0, 2.0, 2.0], [1.0, np.nan, 2.0, 3.0]),
        "fmin": ([np.nan, 1.0, 2.0, 2.0], [1.0, np.nan, 2.0, 3.0]),
        "logaddexp": ([-np.inf, 1.0, 5.0, 0.0], [1.0, -np.inf, 5.0, 30.0]),
        "fmod": ([5.0, -5.0, 1.0, 0.0], [3.0, 3.0, -0.5, 2.0]),
    }
    for name, (x, y) in cases.items():
        got = []
        for lib in (ampc, torch):
            a = lib.tensor(x, dtype=lib.float64, requires_grad=True)
            b = lib.tensor(y, dtype=lib.float64, requires_grad=True)
            getattr(lib, name)(a, b).sum().backward()
            got.append((a.grad, b.grad))
        same(got[0][0], got[1][0], 1e-13, 0, name + " grad a")
        same(got[0][1], got[1][1], 1e-13, 0, name + " grad b")


def test_binary_scalars_inplace_out_and_grad_fn_names():
    x = np.array([[1.5, -2.0, 0.0], [3.0, -0.5, 7.0]], dtype=np.float32)
    a, t = ampc.tensor(x), torch.tensor(x)
    for name, other in [("copysign", -1.0), ("fmod", 2), ("fmod", 1.5), ("xlogy", 2.0)]:
        same(getattr(ampc, name)(a, other), getattr(torch, name)(t, other), 1e-6, 0, name)
        y, u = a.clone(), t.clone()
        getattr(y, name + "_")(other)
        getattr(u, name + "_")(other)
        same(y, u, 1e-6, 0, name + "_")
    same(ampc.xlogy(2.0, a.abs()), torch.xlogy(2.0, t.abs()), 1e-6, 0, "xlogy(number, tensor)")
    for name in ("hypot", "heaviside", "nextafter", "logaddexp", "gcd", "fmax"):
        with pytest.raises(TypeError):
            getattr(ampc, name)(a, 2.0)
    out = ampc.empty(2, 3)
    assert ampc.hypot(a, a, out=out) is out
    same(out, torch.hypot(t, t), 1e-6)
    names = {}
    for lib in (ampc, torch):
        p = lib.tensor(x, requires_grad=True)
        names[lib] = [type(getattr(lib, n)(p, p).grad_fn).__name__ for n in sorted(BINARY)] + \
                     [type(lib.fmod(p, 2.0).grad_fn).__name__]
    assert names[ampc] == names[torch]
    for lib in (ampc, torch):  # no in-place forms in torch either
        assert not hasattr(lib.Tensor, "fmax_") and not hasattr(lib.Tensor, "logaddexp_")


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
def test_integer_binary_ops(dtype):
    rng = np.random.default_rng(7)
    lo = 0 if dtype == "uint8" else -40
    x, y = rng.integers(lo, 40, (2, 200))
    s = rng.integers(-4 if dtype != "uint8" else 0, 70, 200)
    x[:3] = [0, 0, 17]
    y[:3] = [0, 5, 0]
    ext = np.iinfo(getattr(np, dtype))
    x[3:5], y[3:5] = [ext.min, ext.max], [ext.min, -1 if dtype != "uint8" else ext.max]
    for name, other in [("gcd", y), ("lcm", y), ("fmax", y), ("fmin", y), ("heaviside", y), ("logical_xor", y),
                        ("bitwise_left_shift", s), ("bitwise_right_shift", s), ("fmod", np.where(y == 0, 3, y)),
                        ("copysign", y)]:
        got = getattr(ampc, name)(to(x, ampc, dtype), to(other, ampc, dtype))
        want = getattr(torch, name)(to(x, torch, dtype), to(other, torch, dtype))
        same(got, want, 1e-6, 0, "%s %s" % (name, dtype))
    a, t = to(x, ampc, dtype), to(x, torch, dtype)
    same(a << 3, t << 3, what="<<")
    same(a >> 2, t >> 2, what=">>")
    same(2 << to(s % 8, ampc, dtype), 2 << to(s % 8, torch, dtype), what="number << tensor")
    b, u = a.clone(), t.clone()
    b <<= 1
    u <<= 1
    same(b, u, what="<<=")
    for lib in (ampc, torch):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            lib.fmod(to(x, lib, dtype), to(np.zeros_like(x), lib, dtype))


def test_binary_dtype_errors_match_torch():
    f, i, b = np.array([1.5, -2.0]), np.array([3, 4]), np.array([True, False])
    calls = [("gcd", f, f, "float32"), ("lcm", i, i, "bool"), ("bitwise_left_shift", f, f, "float32"),
             ("bitwise_right_shift", b, b, "bool"), ("hypot", i, i, "int64"), ("logaddexp", b, b, "bool"),
             ("nextafter", i, i, "int64"), ("fmod", b, b, "bool"), ("gcd", f, f, "float16")]
    for name, x, y, dt in calls:
        with pytest.raises(NotImplementedError) as want:
            getattr(torch, name)(to(x, torch, dt), to(y, torch, dt))
        with pytest.raises(NotImplementedError) as got:
            getattr(ampc, name)(to(x, ampc, dt), to(y, ampc, dt))
        assert str(got.value) == str(want.value), (name, dt)
    for lib in (ampc, torch):
        with pytest.raises(RuntimeError, match="heaviside is not yet implemented for tensors with different dtypes"):
            lib.heaviside(lib.tensor([1, 0]), lib.tensor([1.0, 2.0]))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_nextafter_steps_in_its_own_format(dtype):
    x = np.array([0.0, -0.0, 1.0, -1.0, 65504.0, 1e-7, np.inf, np.nan, 2.0], dtype=np.float32)
    y = np.array([1.0, -1.0, 2.0, 0.0, np.inf, 0.0, 0.0, 1.0, 2.0], dtype=np.float32)
    same(ampc.nextafter(to(x, ampc, dtype), to(y, ampc, dtype)), torch.nextafter(to(x, torch, dtype), to(y, torch, dtype)))


# ---------------------------------------------------------------------------- compositions

def test_rsub_float_power_ldexp_square_round_positive():
    rng = np.random.default_rng(9)
    x, y = rng.uniform(0.5, 2.0, (2, 3, 4)).astype(np.float32)
    for dtype in ("float32", "float16", "int64"):
        xa, ya = (to(np.round(v * 3), ampc, dtype) if dtype == "int64" else to(v, ampc, dtype) for v in (x, y))
        xt, yt = (to(np.round(v * 3), torch, dtype) if dtype == "int64" else to(v, torch, dtype) for v in (x, y))
        same(ampc.rsub(xa, ya), torch.rsub(xt, yt), what="rsub")
        same(ampc.rsub(xa, ya, alpha=2), torch.rsub(xt, yt, alpha=2), what="rsub alpha")
        same(ampc.rsub(xa, 3), torch.rsub(xt, 3), what="rsub number")
        same(ampc.float_power(xa, ya), torch.float_power(xt, yt), 1e-15, 0, "float_power")
        same(ampc.float_power(xa, 2.5), torch.float_power(xt, 2.5), 1e-15, 0, "float_power number")
        same(xa.float_power(ya), xt.float_power(yt), 1e-15, 0, "float_power method")
        e_a, e_t = to(np.round(y * 3), ampc, "int64"), to(np.round(y * 3), torch, "int64")
        same(ampc.ldexp(xa, e_a), torch.ldexp(xt, e_t), 1e-6, 0, "ldexp")
        sa, st = xa.clone(), xt.clone()
        ampc.square_(sa)
        torch.square_(st)
        same(sa, st, what="square_")
        sa.square_()
        st.square_()
        same(sa, st, what="Tensor.square_")
        same(xa.positive(), xt.positive(), what="positive")
    with pytest.raises(RuntimeError, match="the base given to float_power_ has dtype Float"):
        ampc.tensor([1.0]).float_power_(2)
    d = ampc.tensor([1.0, 2.0], dtype=ampc.float64)
    assert d.float_power_(2) is d and d.tolist() == [1.0, 4.0]
    r = ampc.tensor([1.234, -5.678])
    assert ampc.round_(r, decimals=1) is r
    same(r, torch.round(torch.tensor([1.234, -5.678]), decimals=1), what="round_")
    with pytest.raises(RuntimeError, match="The `\\+` operator, on a bool tensor is not supported"):
        ampc.tensor([True]).positive()
    # gradients as torch's compositions record them
    for lib in (ampc, torch):
        p = lib.tensor([0.5, 1.5], dtype=lib.float64, requires_grad=True)
        assert type(lib.float_power(p, 2.0).grad_fn).__name__ == "PowBackward0"
        assert type(lib.rsub(p, 1.0).grad_fn).__name__.startswith("RsubBackward")
    p = ampc.tensor([0.5, 1.5], dtype=ampc.float64).requires_grad_()
    assert gradcheck(lambda t: ampc.ldexp(t, ampc.tensor([2, -1])), (p,))
    assert gradcheck(lambda t: ampc.float_power(t, t), (p,))


def test_inplace_module_functions():
    for name, x, y in [("xlogy_", [1.0, 2.0], [3.0, 4.0]), ("gcd_", [12, 18], [8, 12]), ("lcm_", [4, 6], [6, 4])]:
        a, t = ampc.tensor(x), torch.tensor(x)
        assert getattr(ampc, name)(a, ampc.tensor(y)) is a
        getattr(torch, name)(t, torch.tensor(y))
        same(a, t, 1e-6, 0, name)


def test_sgn_and_sign_tests_on_integers_and_bool():
    i = np.array([-3, 0, 5], dtype=np.int64)
    for dt in ("int64", "int32", "uint8", "bool"):
        a = np.abs(i) if dt == "uint8" else i.astype(bool) if dt == "bool" else i
        for name in ("sgn", "signbit", "isneginf", "isposinf", "isreal"):
            same(getattr(ampc, name)(to(a, ampc, dt)), getattr(torch, name)(to(a, torch, dt)), what=name + " " + dt)


@pytest.mark.parametrize("dtype", FLOATS + ["int64", "int32", "uint8"])
def test_threshold(dtype):
    gr = {"float16": 4e-3, "bfloat16": 3e-2}.get(dtype)
    value = -1.5 if dtype in FLOATS else 3  # (torch refuses a value its dtype cannot hold; ampc wraps it)
    check_op(lambda M, x: M.nn.functional.threshold(x, 0.25, value), [(4, 5)], dtype=dtype, rtol=gr, atol=gr,
             low=0 if dtype == "uint8" else -2, high=4)
    x = np.array([-1.0, 0.25, 0.5, np.nan, np.inf, -0.0], dtype=np.float32)
    if dtype in FLOATS:
        same(ampc.threshold(to(x, ampc, dtype), 0.25, 9.0), torch.threshold(to(x, torch, dtype), 0.25, 9.0))
        a, t = to(x, ampc, dtype), to(x, torch, dtype)
        assert ampc.threshold_(a, 0.0, 2.0) is a
        torch.threshold_(t, 0.0, 2.0)
        same(a, t, what="threshold_")
    for lib in (ampc, torch):
        with pytest.raises(NotImplementedError, match="threshold_cpu"):
            lib.threshold(lib.tensor([True]), 0, 1)
    p = ampc.tensor([-1.0, 0.3, 0.9], dtype=ampc.float64).requires_grad_()
    assert gradcheck(lambda t: ampc.threshold(t, 0.5, 2.0), (p,))
    assert type(ampc.threshold(p, 0.5, 2.0).grad_fn).__name__ == "ThresholdBackward0"
