"""The CUDA elementwise losses against the CPU backend: mse_loss, l1_loss, smooth_l1_loss (beta,
beta 0), binary_cross_entropy (weight, the log clamp at -100) and binary_cross_entropy_with_logits
(weight, pos_weight), each reduction, forward and backward (input and target); fp32/fp16/bf16/
fp64 and mixed dtypes (the run-time dtype path), broadcast targets, empty and 0-dim inputs, one
size >= 2^20 (the two-stage deterministic sum), and BCE's deferred error for an input outside
[0, 1].

Every op runs on the same fresh random inputs on the CPU and on `cuda` (tests/conftest.py). The
CPU computes in double; the GPU in fp32 (double for fp64 and mixed dtypes), rounding once."""
import math

import numpy as np
import pytest

import ampc
import ampc.nn.functional as F
from helpers import check_close, tensor

TOL = {ampc.float32: 2e-5, ampc.float16: 2e-3, ampc.bfloat16: 1.6e-2, ampc.float64: 1e-11}
LOSSES = ["mse_loss", "l1_loss", "smooth_l1_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits"]
REDUCTIONS = ["mean", "sum", "none"]


def rng(seed):
    return np.random.default_rng(seed)


def operands(name, shape, seed, t_shape=None, edges=False):
    """Input, target, weight and pos_weight arrays for a loss (BCE input inside (0, 1); with edges,
    some at 0 and 1 exactly, where the logs clamp at -100 and the grads' denominator at 1e-12)."""
    r = rng(seed)
    t_shape = t_shape or shape
    if name == "binary_cross_entropy":
        x = r.random(shape) * 0.98 + 0.01
        if edges:
            x.flat[::17] = 0.0
            x.flat[5::23] = 1.0
        t = r.random(t_shape)
    elif name == "binary_cross_entropy_with_logits":
        x, t = r.standard_normal(shape) * 4, r.random(t_shape)
        x.flat[::31] *= 20  # large |x|: the stable form
    else:
        x, t = r.standard_normal(shape), r.standard_normal(t_shape)
    return x, t, r.random(shape) + 0.5, r.random(shape[-1:]) * 3


def run_loss(cuda, name, x, t, dtypes, reduction, w=None, pw=None, beta=None, grad_target=True):
    """The loss and its grads (input, and target when floating) on both devices, compared."""
    x_dt, t_dt, w_dt = dtypes
    xc, tc = tensor(x, x_dt).requires_grad_(True), tensor(t, t_dt).requires_grad_(grad_target)
    xd, td = tensor(x, x_dt).to(cuda).requires_grad_(True), tensor(t, t_dt).to(cuda).requires_grad_(grad_target)
    kc, kd = dict(reduction=reduction), dict(reduction=reduction)
    if w is not None:
        kc["weight"] = tensor(w, w_dt)
        kd["weight"] = kc["weight"].to(cuda)
    if pw is not None:
        kc["pos_weight"] = tensor(pw, w_dt)
        kd["pos_weight"] = kc["pos_weight"].to(cuda)
    if beta is not None:
        kc["beta"] = kd["beta"] = beta
    lc, ld = getattr(F, name)(xc, tc, **kc), getattr(F, name)(xd, td, **kd)
    tol = max(TOL[x_dt], TOL[t_dt], TOL[w_dt]) * 2
    check_close(ld, lc, tol)
    g = rng(7).standard_normal(tuple(lc.shape))
    lc.backward(tensor(g, lc.dtype))
    ld.backward(tensor(g, lc.dtype).to(cuda))
    check_close(xd.grad, xc.grad, tol)
    if grad_target:
        check_close(td.grad, tc.grad, tol)


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", [ampc.float32, ampc.float16, ampc.bfloat16, ampc.float64])
@pytest.mark.parametrize("shape", [(5,), (33, 7), (3, 257, 5)])
def test_losses(cuda, name, reduction, dtype, shape):
    x, t, w, pw = operands(name, shape, sum(shape))
    dts = (dtype, dtype, dtype)
    run_loss(cuda, name, x, t, dts, reduction)
    if name == "smooth_l1_loss":
        run_loss(cuda, name, x, t, dts, reduction, beta=0.3)
        run_loss(cuda, name, x, t, dts, reduction, beta=0.0)
    if name.startswith("binary"):
        run_loss(cuda, name, x, t, dts, reduction, w=w)
    if name.endswith("logits"):
        run_loss(cuda, name, x, t, dts, reduction, pw=pw)
        run_loss(cuda, name, x, t, dts, reduction, w=w, pw=pw)


@pytest.mark.parametrize("dtype", [ampc.float32, ampc.float16, ampc.bfloat16, ampc.float64])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_bce_clamps(cuda, dtype, reduction):
    """Inputs of exactly 0 and 1: log clamped at -100, the grad's denominator at 1e-12 (grads of
    1e12: inf in fp16)."""
    x, t, w, _ = operands("binary_cross_entropy", (4, 40), 6, edges=True)
    run_loss(cuda, "binary_cross_entropy", x, t, (dtype,) * 3, reduction, w=w)


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("dtypes", [(ampc.float16, ampc.float32, ampc.float32), (ampc.float32, ampc.bfloat16,
                                                                                ampc.float16),
                                    (ampc.float32, ampc.float32, ampc.float64)], ids=["f16-f32", "f32-bf16", "w-f64"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_losses_mixed_dtypes(cuda, name, dtypes, reduction):
    """Operands of different dtypes, each read and written in its own (the run-time dtype path)."""
    x, t, w, pw = operands(name, (6, 11), 3)
    w_arg = w if name.startswith("binary") else None
    pw_arg = pw if name.endswith("logits") else None
    run_loss(cuda, name, x, t, dtypes, reduction, w=w_arg, pw=pw_arg)


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "smooth_l1_loss"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_losses_broadcast_target(cuda, name, reduction):
    x, t, _, _ = operands(name, (4, 6), 4, t_shape=(6,))
    run_loss(cuda, name, x, t, (ampc.float32,) * 3, reduction)


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("dtype", [ampc.float32, ampc.bfloat16])
def test_losses_large(cuda, name, dtype):
    """2^20 + 3 elements: many stage-1 blocks in the reduction; mean and sum."""
    n = (1 << 20) + 3
    x, t, w, pw = operands(name, (n,), 9)
    for reduction in ("mean", "sum"):
        run_loss(cuda, name, x, t, (dtype,) * 3, reduction, w=w if name.startswith("binary") else None)


@pytest.mark.parametrize("name", LOSSES)
def test_losses_empty_and_0dim(cuda, name):
    e = ampc.zeros(0).to(cuda)
    assert math.isnan(getattr(F, name)(e, e).item())  # mean of nothing: 0 / 0
    assert getattr(F, name)(e, e, reduction="sum").item() == 0
    assert tuple(getattr(F, name)(e, e, reduction="none").shape) == (0,)
    x, t, _, _ = operands(name, (1,), 2)
    for reduction in REDUCTIONS:
        run_loss(cuda, name, x.reshape(()), t.reshape(()), (ampc.float32,) * 3, reduction)


def test_mse_integer_target(cuda):
    """A non-floating target (allowed for mse/l1/smooth_l1) is read in its own dtype."""
    x = rng(1).standard_normal((5, 4))
    ti = ampc.tensor(rng(2).integers(-3, 4, (5, 4)))
    for name in ("mse_loss", "l1_loss", "smooth_l1_loss"):
        for reduction in REDUCTIONS:
            xc = tensor(x, ampc.float32).requires_grad_(True)
            xd = tensor(x, ampc.float32).to(cuda).requires_grad_(True)
            lc, ld = getattr(F, name)(xc, ti, reduction=reduction), getattr(F, name)(xd, ti.to(cuda),
                             reduction=reduction)
            check_close(ld, lc, 2e-5)
            g = tensor(rng(3).standard_normal(tuple(lc.shape)), ampc.float32)
            lc.backward(g)
            ld.backward(g.to(cuda))
            check_close(xd.grad, xc.grad, 2e-5)


def test_bce_input_out_of_range(cuda):
    """BCE of an input outside [0, 1]: RuntimeError, on the GPU at the next synchronisation."""
    for bad in (1.5, -0.1, float("nan")):
        x = ampc.tensor([0.5, bad, 0.2]).to(cuda)
        t = ampc.tensor([1.0, 0.0, 1.0]).to(cuda)
        with pytest.raises(RuntimeError):
            F.binary_cross_entropy(x, t).cpu()
    ok = ampc.tensor([0.5, 0.25]).to(cuda)
    check_close(F.binary_cross_entropy(ok, ok), F.binary_cross_entropy(ok.cpu(), ok.cpu()), 1e-6)
