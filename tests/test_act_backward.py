"""The activations' fused backward kernels (issue 14): gelu (erf and tanh), silu, sigmoid, tanh,
softplus and relu each backpropagate in ONE kernel (counted), fp16/bf16 gradients within 2 ulps
of the float64 truth (math in fp32, rounded once), values and double-backward gradients equal to
torch's, and the backward rows' own grad_fn names."""
import ml_dtypes
import numpy as np
import pytest
import torch

import ampc

ACTS = {
    "gelu": (lambda M, x: M.nn.functional.gelu(x), "gelu_backward"),
    "gelu_tanh": (lambda M, x: M.nn.functional.gelu(x, approximate="tanh"), "gelu_backward"),
    "silu": (lambda M, x: M.nn.functional.silu(x), "silu_backward"),
    "sigmoid": (lambda M, x: M.sigmoid(x), "sigmoid_backward"),
    "tanh": (lambda M, x: M.tanh(x), "tanh_backward"),
    "softplus": (lambda M, x: M.nn.functional.softplus(x, beta=1.5, threshold=4.0), "softplus_backward"),
    "relu": (lambda M, x: M.relu(x), "threshold_backward"),
}

# the truth of d act / dx in float64 NumPy, from the formulas' definitions (not ampc's code)
_SQRT2 = np.sqrt(2.0)


def _erfc(x):
    from math import erfc
    return np.vectorize(erfc)(x)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _truth(name, x):
    # Phi(x) = erfc(-x/sqrt2)/2 and 1 +- tanh(u) = 2 sigmoid(+-2u): even float64 loses every digit of
    # (1 + erf) / 2 and 1 + tanh in the negative tail, where the truth is tiny but well defined
    if name == "gelu":
        return 0.5 * _erfc(-x / _SQRT2) + x * np.exp(-x * x / 2) / np.sqrt(2 * np.pi)
    if name == "gelu_tanh":
        b, k = np.sqrt(2 / np.pi), 0.044715
        u = b * (x + k * x ** 3)
        one_plus_t, one_minus_t = 2 * _sigmoid(2 * u), 2 * _sigmoid(-2 * u)
        return 0.5 * one_plus_t + 0.5 * x * one_plus_t * one_minus_t * b * (1 + 3 * k * x * x)
    if name == "silu":
        s = _sigmoid(x)
        return s * (1 + x * (1 - s))
    if name == "softplus":
        return np.where(1.5 * x > 4.0, 1.0, _sigmoid(1.5 * x))
    if name == "relu":
        return (x > 0).astype(np.float64)
    raise KeyError(name)


FORMATS = {"float16": (np.float16, 10, -14), "bfloat16": (ml_dtypes.bfloat16, 7, -126)}


def _ulps(got, truth, fmt):
    """|got - truth| in units of the format's spacing at |truth| (subnormal spacing near 0)."""
    _, mant, emin = FORMATS[fmt]
    mag = np.abs(truth)
    e = np.where(mag > 0, np.floor(np.log2(np.where(mag > 0, mag, 1.0))), emin)
    spacing = np.exp2(np.maximum(e, emin) - mant)
    return np.abs(got - truth) / spacing


def _inputs(rng, n=4000):
    """Normal values, values near zero (down to 1e-4) and large ones: where the old composed rule lost most."""
    x = np.concatenate([rng.standard_normal(n) * 3, rng.uniform(-1e-2, 1e-2, n // 4), rng.uniform(-1e-4, 1e-4, n // 8),
                        rng.uniform(-12, 12, n // 4)])
    return x, rng.uniform(-1, 1, x.size)


@pytest.mark.parametrize("fmt", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", list(ACTS))
def test_low_precision_grads_within_two_ulps_of_the_truth(name, fmt, device):
    np_t = FORMATS[fmt][0]
    x, g = _inputs(np.random.default_rng(14))
    x16, g16 = x.astype(np_t).astype(np.float64), g.astype(np_t).astype(np.float64)
    dt = getattr(ampc, fmt)
    xa = ampc.tensor(x16, dtype=dt, device=device).requires_grad_()
    fn = ACTS[name][0]
    y = fn(ampc, xa)
    (gx,) = ampc.autograd.grad(y, xa, ampc.tensor(g16, dtype=dt, device=device))
    got = gx.cpu().double().numpy()
    if name in ("sigmoid", "tanh"):  # their backward reads the saved output y, rounded to the format
        yv = y.detach().cpu().double().numpy()
        truth = g16 * (yv * (1 - yv) if name == "sigmoid" else 1 - yv * yv)
    else:
        truth = g16 * _truth(name, x16)
    err = _ulps(got, truth, fmt)
    assert err.max() <= 2.0, f"{name} {fmt}: max {err.max():.2f} ulps at x={x16[np.argmax(err)]!r}"


@pytest.mark.parametrize("name", list(ACTS))
def test_one_kernel_per_backward(name):
    fn, row = ACTS[name]
    for dt in (ampc.float32, ampc.float16, ampc.bfloat16):
        x = ampc.randn(64, dtype=dt).requires_grad_()
        y = fn(ampc, x)
        g = ampc.ones_like(y)
        before = ampc._C._dispatch_counts()
        ampc.autograd.grad(y, x, g)
        after = ampc._C._dispatch_counts()
        ran = {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}
        assert ran == {("cpu", row): 1}, ran


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
@pytest.mark.parametrize("name", list(ACTS))
def test_grads_and_double_backward_match_torch(name, dtype):
    fn = ACTS[name][0]
    x = np.random.default_rng(3).standard_normal(50) * 3
    res = []
    for M in (ampc, torch):
        t = M.tensor(x, dtype=getattr(M, dtype)).requires_grad_()
        (g,) = M.autograd.grad(fn(M, t).sum(), t, create_graph=True)
        (gg,) = M.autograd.grad((g * g).sum(), t, allow_unused=True)
        res.append((g.detach().double().numpy(), None if gg is None else gg.double().numpy(), str(g.dtype)[-7:]))
    tol = {"float64": 1e-12, "float32": 1e-5, "float16": 2e-3, "bfloat16": 1.6e-2}[dtype]
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=tol, atol=tol)
    assert res[0][2] == res[1][2]
    if name == "relu":  # piecewise linear: torch returns zeros for the second derivative as ampc
        np.testing.assert_array_equal(res[0][1], res[1][1])
    else:
        scale = np.abs(res[1][1]).max()
        np.testing.assert_allclose(res[0][1], res[1][1], rtol=10 * tol, atol=10 * tol * scale)


def test_double_backward_nodes_have_torchs_names():
    x = ampc.randn(5, dtype=ampc.float64).requires_grad_()
    for name, want in [("gelu", "GeluBackwardBackward0"), ("gelu_tanh", "GeluBackwardBackward0"),
                       ("sigmoid", "SigmoidBackwardBackward0"), ("tanh", "TanhBackwardBackward0"),
                       ("softplus", "SoftplusBackwardBackward0"), ("relu", "ThresholdBackwardBackward0")]:
        (g,) = ampc.autograd.grad(ACTS[name][0](ampc, x).sum(), x, create_graph=True)
        assert g.grad_fn.name() == want


def test_gradgradcheck_in_float64():
    for name, (fn, _) in ACTS.items():
        if name == "relu":
            continue
        x = ampc.tensor(np.random.default_rng(5).uniform(-3, 3, 6), dtype=ampc.float64).requires_grad_()
        assert ampc.testing.gradgradcheck(lambda t: fn(ampc, t), (x,)), name
