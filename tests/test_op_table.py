"""The op table's tripwires (csrc/core/ops.def): every row has its kernels on every backend, a
gradient decision that the engine honours, an autocast decision, and a case here that runs it.

A row that lacks one fails a test named for what is missing, with the op in the message:
- test_every_row_has_a_case: add a case to CASES below (a public call that runs the row's kernel);
- test_every_row_has_its_kernels: register the kernel in csrc/cpu or csrc/cuda (or mark the row
  NONE in ops.def if it is composed of other ops);
- test_cases_run_every_kernel: the case must reach the row's kernel (internal kernels through the
  public op that uses them, backward kernels with backward=True);
- test_gradient_rows_record_their_node: a GRAD("Node") row's case must produce that grad_fn;
- test_elementwise_rows_run_in_every_dtype: an elementwise row's DTYPES (the loops both backends
  generate) must hold every dtype its dtype rule accepts.
Values are checked against torch (the oracle) where it is importable.
"""
import numpy as np
import pytest

import ampc

try:
    import torch
except ImportError:  # the tripwires do not need the oracle
    torch = None

TABLE = {row["name"]: row for row in ampc._C._op_table()}
CUDA_BUILD = any(row["cuda_kernel"] for row in TABLE.values())


def arr(shape=(3, 4), low=-2.0, high=2.0, seed=0):
    return np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)


# The dtype of the cases' T() tensors while test_elementwise_rows_run_in_every_dtype runs (else float32).
_case_dtype = [None]


def T(M, dev, shape=(3, 4), low=-2.0, high=2.0, seed=0, grad=False, dtype=None):
    t = M.tensor(arr(shape, low, high, seed), device=dev)
    dtype = _case_dtype[0] if dtype is None else dtype
    if dtype is not None:
        t = t.to(dtype=dtype)
    return t.requires_grad_() if grad and t.dtype.is_floating_point else t


def I(M, dev, values):
    return M.tensor(values, device=dev)


def F(M):
    return M.nn.functional


def first_grad(M, fn, x, *args):
    """d fn(x).sum() / dx with create_graph: the output of fn's fused backward op, itself differentiable."""
    (g,) = M.autograd.grad(fn(x, *args).sum(), x, create_graph=True)
    return g


def opt_step(M, dev, name, **kw):
    p = M.nn.Parameter(T(M, dev, grad=False))
    p.grad = T(M, dev, seed=1)
    opt = getattr(M.optim, name)([p], lr=0.1, **kw)
    opt.step()
    return p.detach()


# name -> (fn(M, dev) -> output tensor(s), run backward on the first output)
CASES = {
    "neg": (lambda M, d: M.neg(T(M, d, grad=True)), True),
    "abs": (lambda M, d: M.abs(T(M, d, grad=True)), True),
    "exp": (lambda M, d: M.exp(T(M, d, grad=True)), True),
    "log": (lambda M, d: M.log(T(M, d, low=0.5, grad=True)), True),
    "sqrt": (lambda M, d: M.sqrt(T(M, d, low=0.5, grad=True)), True),
    "rsqrt": (lambda M, d: M.rsqrt(T(M, d, low=0.5, grad=True)), True),
    "reciprocal": (lambda M, d: M.reciprocal(T(M, d, low=0.5, grad=True)), True),
    "sigmoid": (lambda M, d: M.sigmoid(T(M, d, grad=True)), True),
    "tanh": (lambda M, d: M.tanh(T(M, d, grad=True)), True),
    "relu": (lambda M, d: M.relu(T(M, d, grad=True)), True),
    "gelu": (lambda M, d: F(M).gelu(T(M, d, grad=True), approximate="tanh"), True),
    "silu": (lambda M, d: F(M).silu(T(M, d, grad=True)), True),
    "softplus": (lambda M, d: F(M).softplus(T(M, d, grad=True), beta=2.0, threshold=3.0), True),
    "sin": (lambda M, d: M.sin(T(M, d, grad=True)), True),
    "cos": (lambda M, d: M.cos(T(M, d, grad=True)), True),
    "erf": (lambda M, d: M.erf(T(M, d, grad=True)), True),
    "sign": (lambda M, d: M.sign(T(M, d, grad=True)), True),
    "floor": (lambda M, d: M.floor(T(M, d, grad=True)), True),
    "ceil": (lambda M, d: M.ceil(T(M, d, grad=True)), True),
    "round": (lambda M, d: M.round(T(M, d, grad=True)), True),
    "logical_not": (lambda M, d: M.logical_not(T(M, d)), False),
    "isfinite": (lambda M, d: M.isfinite(T(M, d)), False),
    "isnan": (lambda M, d: M.isnan(T(M, d)), False),
    "isinf": (lambda M, d: M.isinf(T(M, d)), False),
    "hardtanh": (lambda M, d: F(M).hardtanh(T(M, d, grad=True), -0.5, 1.0), True),
    "hardtanh_backward": (lambda M, d: first_grad(M, F(M).hardtanh, T(M, d, grad=True), -0.5, 1.0), True),
    "clamp": (lambda M, d: M.clamp(T(M, d, grad=True), -0.5, 0.5), True),
    "add": (lambda M, d: M.add(T(M, d, grad=True), T(M, d, seed=1)), True),
    "sub": (lambda M, d: M.sub(T(M, d, grad=True), T(M, d, seed=1)), True),
    "mul": (lambda M, d: M.mul(T(M, d, grad=True), T(M, d, seed=1)), True),
    "div": (lambda M, d: M.div(T(M, d, grad=True), T(M, d, low=0.5, seed=1)), True),
    "remainder": (lambda M, d: M.remainder(T(M, d, grad=True), T(M, d, low=0.5, seed=1)), True),
    "pow": (lambda M, d: M.pow(T(M, d, low=0.5, grad=True), T(M, d, seed=1)), True),
    "maximum": (lambda M, d: M.maximum(T(M, d, grad=True), T(M, d, seed=1)), True),
    "minimum": (lambda M, d: M.minimum(T(M, d, grad=True), T(M, d, seed=1)), True),
    "atan2": (lambda M, d: M.atan2(T(M, d, grad=True), T(M, d, seed=1)), True),
    "logical_and": (lambda M, d: M.logical_and(T(M, d), T(M, d, seed=1)), False),
    "logical_or": (lambda M, d: M.logical_or(T(M, d), T(M, d, seed=1)), False),
    "bitwise_and": (lambda M, d: M.bitwise_and(I(M, d, [1, 6, 7]), I(M, d, [3, 3, 2])), False),
    "bitwise_or": (lambda M, d: M.bitwise_or(I(M, d, [1, 6, 7]), I(M, d, [3, 3, 2])), False),
    "bitwise_xor": (lambda M, d: M.bitwise_xor(I(M, d, [1, 6, 7]), I(M, d, [3, 3, 2])), False),
    "eq": (lambda M, d: M.eq(T(M, d).round(), T(M, d, seed=1).round()), False),
    "ne": (lambda M, d: M.ne(T(M, d).round(), T(M, d, seed=1).round()), False),
    "lt": (lambda M, d: M.lt(T(M, d), T(M, d, seed=1)), False),
    "le": (lambda M, d: M.le(T(M, d), T(M, d, seed=1)), False),
    "gt": (lambda M, d: M.gt(T(M, d), T(M, d, seed=1)), False),
    "ge": (lambda M, d: M.ge(T(M, d), T(M, d, seed=1)), False),
    # issue 12: pointwise math
    "acos": (lambda M, d: M.acos(T(M, d, low=-0.9, high=0.9, grad=True)), True),
    "asin": (lambda M, d: M.asin(T(M, d, low=-0.9, high=0.9, grad=True)), True),
    "atan": (lambda M, d: M.atan(T(M, d, grad=True)), True),
    "cosh": (lambda M, d: M.cosh(T(M, d, grad=True)), True),
    "sinh": (lambda M, d: M.sinh(T(M, d, grad=True)), True),
    "tan": (lambda M, d: M.tan(T(M, d, low=-1.2, high=1.2, grad=True)), True),
    "acosh": (lambda M, d: M.acosh(T(M, d, low=1.1, high=3.0, grad=True)), True),
    "asinh": (lambda M, d: M.asinh(T(M, d, grad=True)), True),
    "atanh": (lambda M, d: M.atanh(T(M, d, low=-0.9, high=0.9, grad=True)), True),
    "log1p": (lambda M, d: M.log1p(T(M, d, low=-0.5, grad=True)), True),
    "expm1": (lambda M, d: M.expm1(T(M, d, grad=True)), True),
    "exp2": (lambda M, d: M.exp2(T(M, d, grad=True)), True),
    "log2": (lambda M, d: M.log2(T(M, d, low=0.5, grad=True)), True),
    "log10": (lambda M, d: M.log10(T(M, d, low=0.5, grad=True)), True),
    "erfc": (lambda M, d: M.erfc(T(M, d, grad=True)), True),
    "erfinv": (lambda M, d: M.erfinv(T(M, d, low=-0.9, high=0.9, grad=True)), True),
    "lgamma": (lambda M, d: M.lgamma(T(M, d, low=0.5, high=4.0, grad=True)), True),
    "digamma": (lambda M, d: M.digamma(T(M, d, low=0.5, high=4.0, grad=True)), True),
    "polygamma": (lambda M, d: M.polygamma(2, T(M, d, low=0.5, high=4.0, grad=True)), True),
    "sinc": (lambda M, d: M.sinc(T(M, d, grad=True)), True),
    "logit": (lambda M, d: M.logit(T(M, d, low=0.05, high=0.95, grad=True), eps=0.1), True),
    "trunc": (lambda M, d: M.trunc(T(M, d, grad=True)), True),
    "frac": (lambda M, d: M.frac(T(M, d, grad=True)), True),
    "sgn": (lambda M, d: M.sgn(T(M, d, grad=True)), True),
    "deg2rad": (lambda M, d: M.deg2rad(T(M, d, grad=True)), True),
    "rad2deg": (lambda M, d: M.rad2deg(T(M, d, grad=True)), True),
    "signbit": (lambda M, d: M.signbit(T(M, d)), False),
    "isneginf": (lambda M, d: M.isneginf(T(M, d) / 0), False),
    "isposinf": (lambda M, d: M.isposinf(T(M, d) / 0), False),
    "isreal": (lambda M, d: M.isreal(T(M, d)), False),
    "threshold": (lambda M, d: F(M).threshold(T(M, d, grad=True), 0.25, -1.0), True),
    "threshold_backward": (lambda M, d: first_grad(M, F(M).threshold, T(M, d, grad=True), 0.25, -1.0), True),
    # ---- issue 14: the activations' fused backward rows (reached as the first grad, then differentiated)
    "gelu_backward": (lambda M, d: first_grad(M, F(M).gelu, T(M, d, grad=True)), True),
    "silu_backward": (lambda M, d: first_grad(M, F(M).silu, T(M, d, grad=True)), True),
    "sigmoid_backward": (lambda M, d: first_grad(M, M.sigmoid, T(M, d, grad=True)), True),
    "tanh_backward": (lambda M, d: first_grad(M, M.tanh, T(M, d, grad=True)), True),
    "softplus_backward": (lambda M, d: first_grad(M, F(M).softplus, T(M, d, grad=True), 1.5, 1.0), True),
    # ---- issue 13, act: torch.nn's pointwise activations and their fused backward rows
    "elu": (lambda M, d: F(M).elu(T(M, d, grad=True), 0.7), True),
    "celu": (lambda M, d: F(M).celu(T(M, d, grad=True), 1.5), True),
    "leaky_relu": (lambda M, d: F(M).leaky_relu(T(M, d, grad=True), 0.2), True),
    "hardswish": (lambda M, d: F(M).hardswish(T(M, d, grad=True, low=-4.0, high=4.0)), True),
    "hardsigmoid": (lambda M, d: F(M).hardsigmoid(T(M, d, grad=True, low=-4.0, high=4.0)), True),
    "log_sigmoid": (lambda M, d: F(M).logsigmoid(T(M, d, grad=True)), True),
    "mish": (lambda M, d: F(M).mish(T(M, d, grad=True)), True),
    "softshrink": (lambda M, d: F(M).softshrink(T(M, d, grad=True), 0.6), True),
    "hardshrink": (lambda M, d: F(M).hardshrink(T(M, d, grad=True), 0.6), True),
    "prelu": (lambda M, d: F(M).prelu(T(M, d, grad=True), T(M, d, shape=(4,), seed=1, grad=True)), True),
    "elu_backward": (lambda M, d: first_grad(M, F(M).selu, T(M, d, grad=True)), True),
    "celu_backward": (lambda M, d: first_grad(M, F(M).celu, T(M, d, grad=True), 0.8), True),
    "leaky_relu_backward": (lambda M, d: first_grad(M, F(M).leaky_relu, T(M, d, grad=True), 0.3), True),
    "hardswish_backward": (lambda M, d: first_grad(M, F(M).hardswish, T(M, d, grad=True, low=-4.0, high=4.0)), True),
    "hardsigmoid_backward": (lambda M, d: first_grad(M, F(M).hardsigmoid, T(M, d, grad=True, low=-4.0, high=4.0)),
                             True),
    "log_sigmoid_backward": (lambda M, d: first_grad(M, F(M).logsigmoid, T(M, d, grad=True)), True),
    "mish_backward": (lambda M, d: first_grad(M, F(M).mish, T(M, d, grad=True)), True),
    "softshrink_backward": (lambda M, d: first_grad(M, F(M).softshrink, T(M, d, grad=True), 0.6), True),
    "hardshrink_backward": (lambda M, d: first_grad(M, F(M).hardshrink, T(M, d, grad=True), 0.6), True),
    "copysign": (lambda M, d: M.copysign(T(M, d, grad=True), T(M, d, seed=1)), True),
    "fmod": (lambda M, d: M.fmod(T(M, d, grad=True), T(M, d, low=0.5, seed=1)), True),
    "hypot": (lambda M, d: M.hypot(T(M, d, grad=True), T(M, d, seed=1)), True),
    "heaviside": (lambda M, d: M.heaviside(T(M, d).round(), T(M, d, seed=1)), False),
    "nextafter": (lambda M, d: M.nextafter(T(M, d), T(M, d, seed=1)), False),
    "logaddexp": (lambda M, d: M.logaddexp(T(M, d, grad=True), T(M, d, seed=1)), True),
    "logaddexp2": (lambda M, d: M.logaddexp2(T(M, d, grad=True), T(M, d, seed=1)), True),
    "xlogy": (lambda M, d: M.xlogy(T(M, d, grad=True), T(M, d, low=0.5, seed=1)), True),
    "gcd": (lambda M, d: M.gcd(I(M, d, [12, -18, 0, 7]), I(M, d, [8, 12, 5, 0])), False),
    "lcm": (lambda M, d: M.lcm(I(M, d, [12, -18, 0, 7]), I(M, d, [8, 12, 5, 0])), False),
    "fmax": (lambda M, d: M.fmax(T(M, d, grad=True), T(M, d, seed=1)), True),
    "fmin": (lambda M, d: M.fmin(T(M, d, grad=True), T(M, d, seed=1)), True),
    "bitwise_left_shift": (lambda M, d: M.bitwise_left_shift(I(M, d, [1, -6, 7]), I(M, d, [3, 1, 70])), False),
    "bitwise_right_shift": (lambda M, d: M.bitwise_right_shift(I(M, d, [100, -6, 7]), I(M, d, [3, 1, 70])), False),
    "logical_xor": (lambda M, d: M.logical_xor(T(M, d) > 0, T(M, d, seed=1)), False),
    "where": (lambda M, d: M.where(T(M, d) > 0, T(M, d, seed=1, grad=True), T(M, d, seed=2)), True),
    "copy_": (lambda M, d: M.zeros(3, 4, device=d).copy_(T(M, d, grad=True)), True),
    "fill_": (lambda M, d: (T(M, d, grad=True) * 1).fill_(2.0), True),
    "sum": (lambda M, d: T(M, d, grad=True).sum(1), True),
    "mean": (lambda M, d: T(M, d, grad=True).mean(1), True),
    "prod": (lambda M, d: T(M, d, grad=True).prod(1), True),
    "amax": (lambda M, d: M.amax(T(M, d, grad=True), 1), True),
    "amin": (lambda M, d: M.amin(T(M, d, grad=True), 1), True),
    "max": (lambda M, d: T(M, d, grad=True).max(1)[0], True),
    "min": (lambda M, d: T(M, d, grad=True).min(1)[0], True),
    "argmax": (lambda M, d: T(M, d).argmax(1), False),
    "argmin": (lambda M, d: T(M, d).argmin(1), False),
    "var": (lambda M, d: T(M, d, grad=True).var(1), True),
    "std": (lambda M, d: T(M, d, grad=True).std(1), True),
    "norm": (lambda M, d: T(M, d, grad=True).norm(dim=1), True),
    "logsumexp": (lambda M, d: T(M, d, grad=True).logsumexp(1), True),
    "any": (lambda M, d: (T(M, d) > 1).any(1), False),
    "all": (lambda M, d: (T(M, d) > -1).all(1), False),
    "cumsum": (lambda M, d: T(M, d, grad=True).cumsum(1), True),
    # ---- sorting and selection (issue 12)
    "sort": (lambda M, d: T(M, d, grad=True).sort(1, descending=True), True),
    "topk": (lambda M, d: T(M, d, grad=True).topk(2, 1), True),
    "kthvalue": (lambda M, d: T(M, d, grad=True).kthvalue(2, 1), True),
    "median": (lambda M, d: T(M, d, grad=True).median(1), True),
    "nanmedian": (lambda M, d: T(M, d, grad=True).nanmedian(1), True),
    "mode": (lambda M, d: T(M, d, grad=True).round().mode(1), True),
    "quantile": (lambda M, d: M.quantile(T(M, d, grad=True), M.tensor([0.25, 0.5], device=d), dim=1), True),
    "searchsorted": (lambda M, d: M.searchsorted(T(M, d).sort(1)[0], T(M, d, seed=1)), False),
    "isin": (lambda M, d: M.isin(T(M, d).round(), T(M, d, (5,), seed=1).round()), False),
    "unique_consecutive": (lambda M, d: M.unique(T(M, d).round(), return_counts=True), False),
    "histc": (lambda M, d: M.histc(T(M, d), bins=5, min=-2, max=2), False),
    "bincount": (lambda M, d: M.bincount(I(M, d, [0, 3, 3, 1]), minlength=6), False),
    # issue 12: scans
    "cumprod": (lambda M, d: T(M, d, grad=True).cumprod(1), True),
    "logcumsumexp": (lambda M, d: M.logcumsumexp(T(M, d, grad=True), 1), True),
    "cummax": (lambda M, d: M.cummax(T(M, d, grad=True), 1).values, True),
    "cummin": (lambda M, d: T(M, d, grad=True).cummin(0).values, True),
    "gemm": (lambda M, d: M.mm(T(M, d, grad=True), T(M, d, (4, 2), seed=1)), True),
    "mm": (lambda M, d: M.mm(T(M, d, grad=True), T(M, d, (4, 2), seed=1)), True),
    "mv": (lambda M, d: M.mv(T(M, d, grad=True), T(M, d, (4,), seed=1)), True),
    "bmm": (lambda M, d: M.bmm(T(M, d, (2, 3, 4), grad=True), T(M, d, (2, 4, 2), seed=1)), True),
    "dot": (lambda M, d: M.dot(T(M, d, (4,), grad=True), T(M, d, (4,), seed=1)), True),
    "matmul": (lambda M, d: M.matmul(T(M, d, grad=True), T(M, d, (4, 2), seed=1)), True),
    "addmm": (lambda M, d: M.addmm(T(M, d, (3, 2), seed=2), T(M, d, grad=True), T(M, d, (4, 2), seed=1)), True),
    "baddbmm": (lambda M, d: M.baddbmm(T(M, d, (2, 3, 2), seed=2), T(M, d, (2, 3, 4), grad=True),
                                       T(M, d, (2, 4, 2), seed=1)), True),
    "einsum": (lambda M, d: M.einsum("bij,bjk->bik", T(M, d, (2, 3, 4), grad=True), T(M, d, (2, 4, 2), seed=1)), True),
    "linear": (lambda M, d: F(M).linear(T(M, d, grad=True), T(M, d, (2, 4), seed=1), T(M, d, (2,), seed=2)), True),
    "index_select": (lambda M, d: T(M, d, grad=True).index_select(1, I(M, d, [0, 2])), True),
    "gather": (lambda M, d: T(M, d, grad=True).gather(1, I(M, d, [[0], [1], [3]])), True),
    "scatter_add": (lambda M, d: M.zeros(3, 4, device=d).scatter_add(1, I(M, d, [[0], [1], [3]]),
                                                                        T(M, d, (3, 1), grad=True)), True),
    "index_add": (lambda M, d: M.zeros(3, 4, device=d).index_add(1, I(M, d, [0, 2]), T(M, d, (3, 2), grad=True)), True),
    "index_put": (lambda M, d: M.zeros(3, 4, device=d).index_put((I(M, d, [0, 2]),), T(M, d, (2, 4), grad=True)), True),
    "masked_fill": (lambda M, d: T(M, d, grad=True).masked_fill(T(M, d, seed=1) > 0, 0.0), True),
    "nonzero": (lambda M, d: (T(M, d) > 0).nonzero(), False),
    "cat": (lambda M, d: M.cat([T(M, d, grad=True), T(M, d, seed=1)], 0), True),
    "stack": (lambda M, d: M.stack([T(M, d, grad=True), T(M, d, seed=1)], 0), True),
    "index": (lambda M, d: T(M, d, grad=True)[I(M, d, [0, 2]), I(M, d, [1, 3])], True),
    # ---- shape and index ops (issue 12)
    "tril": (lambda M, d: T(M, d, grad=True).tril(1), True),
    "triu": (lambda M, d: M.triu(T(M, d, grad=True), -1), True),
    "scatter": (lambda M, d: T(M, d, grad=True).scatter(1, I(M, d, [[0, 2], [1, 3], [3, 0]]), T(M, d, (3, 2), seed=1)),
                True),
    "index_copy": (lambda M, d: T(M, d, grad=True).index_copy(1, I(M, d, [2, 0]), T(M, d, (3, 2), seed=1)), True),
    "index_fill": (lambda M, d: T(M, d, grad=True).index_fill(1, I(M, d, [2, 0]), 1.5), True),
    "flip": (lambda M, d: T(M, d, grad=True).flip(0, 1), True),
    "roll": (lambda M, d: T(M, d, grad=True).roll((1, -1), (0, 1)), True),
    "rot90": (lambda M, d: M.rot90(T(M, d, grad=True), 1, (0, 1)), True),
    "repeat": (lambda M, d: T(M, d, grad=True).repeat(2, 1, 2), True),
    "tile": (lambda M, d: M.tile(T(M, d, grad=True), (2,)), True),
    "repeat_interleave": (lambda M, d: T(M, d, grad=True).repeat_interleave(I(M, d, [1, 0, 2]), dim=0), True),
    "diagonal": (lambda M, d: T(M, d, grad=True).diagonal(1), True),
    "unfold": (lambda M, d: T(M, d, grad=True).unfold(1, 2, 1), True),
    "as_strided": (lambda M, d: T(M, d, grad=True).as_strided((2, 3), (1, 2), 1), True),
    "diag": (lambda M, d: M.diag(T(M, d, (4,), grad=True), 1), True),
    "diag_embed": (lambda M, d: M.diag_embed(T(M, d, (2, 3), grad=True)), True),
    "diagflat": (lambda M, d: M.diagflat(T(M, d, (2, 2), grad=True), -1), True),
    "diagonal_scatter": (lambda M, d: M.diagonal_scatter(T(M, d, grad=True), T(M, d, (3,), seed=1)), True),
    "select_scatter": (lambda M, d: M.select_scatter(T(M, d, grad=True), T(M, d, (4,), seed=1), 0, 1), True),
    "slice_scatter": (lambda M, d: M.slice_scatter(T(M, d, grad=True), T(M, d, (3, 2), seed=1), 1, 0, 4, 2), True),
    "fill_diagonal_": (lambda M, d: (T(M, d, grad=True) * 1).fill_diagonal_(2.0), True),
    "tril_indices": (lambda M, d: M.tril_indices(3, 4, 1, device=d), False),
    "triu_indices": (lambda M, d: M.triu_indices(3, 4, -1, device=d), False),
    "masked_select": (lambda M, d: T(M, d, grad=True).masked_select(T(M, d, seed=1) > 0), True),
    "masked_scatter": (lambda M, d: T(M, d, grad=True).masked_scatter(T(M, d, seed=1) > 0, T(M, d, seed=2)), True),
    "take": (lambda M, d: M.take(T(M, d, grad=True), I(M, d, [[0, 5], [11, -1]])), True),
    "take_along_dim": (lambda M, d: M.take_along_dim(T(M, d, grad=True), I(M, d, [[0], [2], [1]]), 1), True),
    "scatter_reduce": (lambda M, d: T(M, d, grad=True).scatter_reduce(1, I(M, d, [[0, 0], [1, 3], [3, 3]]),
                                                                  T(M, d, (3, 2), seed=1), "amax"), True),
    "index_reduce": (lambda M, d: T(M, d, grad=True).index_reduce(1, I(M, d, [3, 0, 3]), T(M, d, (3, 3), seed=1), "prod",
                                                                include_self=False), True),
    "put": (lambda M, d: T(M, d, grad=True).put(I(M, d, [1, 5, 1]), T(M, d, (3,), seed=1), accumulate=True), True),
    "uniform_": (lambda M, d: M.empty(3, 4, device=d).uniform_(-1, 1).abs() <= 1, False),
    "normal_": (lambda M, d: M.empty(3, 4, device=d).normal_().isfinite(), False),
    "random_": (lambda M, d: M.randint(0, 5, (3, 4), device=d) < 5, False),
    "bernoulli_": (lambda M, d: M.empty(3, 4, device=d).bernoulli_(0.5) <= 1, False),
    "arange": (lambda M, d: M.arange(5, device=d), False),
    # issue 12: sampling (predicates, so the values compare with torch's whatever the stream)
    "exponential_": (lambda M, d: M.empty(3, 4, device=d).exponential_(2.0) >= 0, False),
    "geometric_": (lambda M, d: M.empty(3, 4, device=d).geometric_(0.3) >= 1, False),
    "log_normal_": (lambda M, d: M.empty(3, 4, device=d).log_normal_(0.0, 0.5) > 0, False),
    "cauchy_": (lambda M, d: M.empty(3, 4, device=d).cauchy_(1.0, 2.0).isfinite(), False),
    "multinomial": (lambda M, d: M.multinomial(T(M, d, low=0.1, high=1.0), 2) < 4, False),
    "poisson": (lambda M, d: M.poisson(T(M, d, low=0.5, high=5.0)) >= 0, False),
    "binomial": (lambda M, d: M.binomial(M.full((3, 4), 5.0, device=d), T(M, d, low=0.1, high=0.9)) <= 5, False),
    "_amp_foreach_non_finite_check_and_unscale_": (lambda M, d: _scaler_round_trip(M, d), False),
    "_amp_update_scale_": (lambda M, d: _scaler_round_trip(M, d), False),
    "conv1d": (lambda M, d: F(M).conv1d(T(M, d, (2, 3, 8), grad=True), T(M, d, (4, 3, 3), seed=1)), True),
    "conv2d": (lambda M, d: F(M).conv2d(T(M, d, (2, 3, 6, 6), grad=True), T(M, d, (4, 3, 3, 3), seed=1)), True),
    "im2col": (lambda M, d: F(M).conv2d(T(M, d, (2, 3, 6, 6), grad=True), T(M, d, (4, 3, 3, 3), seed=1)), True),
    "col2im": (lambda M, d: F(M).conv2d(T(M, d, (2, 3, 6, 6), grad=True), T(M, d, (4, 3, 3, 3), seed=1)), True),
    "max_pool2d": (lambda M, d: F(M).max_pool2d(T(M, d, (2, 3, 6, 6), grad=True), 2), True),
    "max_pool2d_backward": (lambda M, d: F(M).max_pool2d(T(M, d, (2, 3, 6, 6), grad=True), 2), True),
    "avg_pool2d": (lambda M, d: F(M).avg_pool2d(T(M, d, (2, 3, 6, 6), grad=True), 2), True),
    "avg_pool2d_backward": (lambda M, d: F(M).avg_pool2d(T(M, d, (2, 3, 6, 6), grad=True), 2), True),
    "adaptive_avg_pool2d": (lambda M, d: F(M).adaptive_avg_pool2d(T(M, d, (2, 3, 6, 6), grad=True), 2), True),
    "adaptive_avg_pool2d_backward": (lambda M, d: F(M).adaptive_avg_pool2d(T(M, d, (2, 3, 6, 6), grad=True), 2), True),
    "batch_norm_stats": (lambda M, d: _batch_norm(M, d), True),
    "batch_norm_apply": (lambda M, d: _batch_norm(M, d), True),
    "batch_norm_backward": (lambda M, d: _batch_norm(M, d), True),
    "layer_norm": (lambda M, d: F(M).layer_norm(T(M, d, grad=True), (4,)), True),
    "layer_norm_backward": (lambda M, d: F(M).layer_norm(T(M, d, grad=True), (4,)), True),
    "group_norm": (lambda M, d: F(M).group_norm(T(M, d, (2, 4, 5), grad=True), 2), True),
    "group_norm_backward": (lambda M, d: F(M).group_norm(T(M, d, (2, 4, 5), grad=True), 2), True),
    # issue 13, poolnorm
    "max_pool3d": (lambda M, d: F(M).max_pool3d(T(M, d, (2, 2, 4, 4, 4), grad=True), 2, 1, 1), True),
    "max_pool3d_backward": (lambda M, d: F(M).max_pool3d(T(M, d, (2, 2, 4, 4, 4), grad=True), 2, 1, 1), True),
    "avg_pool3d": (lambda M, d: F(M).avg_pool3d(T(M, d, (2, 2, 4, 4, 4), grad=True), 3, 2, 1), True),
    "avg_pool3d_backward": (lambda M, d: F(M).avg_pool3d(T(M, d, (2, 2, 4, 4, 4), grad=True), 3, 2, 1), True),
    "adaptive_avg_pool3d": (lambda M, d: F(M).adaptive_avg_pool3d(T(M, d, (2, 2, 5, 4, 3), grad=True), 2), True),
    "adaptive_avg_pool3d_backward": (
        lambda M, d: F(M).adaptive_avg_pool3d(T(M, d, (2, 2, 5, 4, 3), grad=True), 2), True),
    "adaptive_max_pool2d": (lambda M, d: F(M).adaptive_max_pool2d(T(M, d, (2, 3, 7, 5), grad=True), 3), True),
    "adaptive_max_pool2d_backward": (
        lambda M, d: F(M).adaptive_max_pool2d(T(M, d, (2, 3, 7, 5), grad=True), 3), True),
    "adaptive_max_pool3d": (lambda M, d: F(M).adaptive_max_pool3d(T(M, d, (2, 2, 5, 4, 3), grad=True), 2), True),
    "adaptive_max_pool3d_backward": (
        lambda M, d: F(M).adaptive_max_pool3d(T(M, d, (2, 2, 5, 4, 3), grad=True), 2), True),
    "fractional_max_pool2d": (lambda M, d: _fractional(M, d, 2), True),
    "fractional_max_pool2d_backward": (lambda M, d: _fractional(M, d, 2), True),
    "fractional_max_pool3d": (lambda M, d: _fractional(M, d, 3), True),
    "fractional_max_pool3d_backward": (lambda M, d: _fractional(M, d, 3), True),
    "rms_norm": (lambda M, d: F(M).rms_norm(T(M, d, grad=True), (4,), T(M, d, (4,), seed=1, grad=True)), True),
    "rms_norm_backward": (
        lambda M, d: F(M).rms_norm(T(M, d, grad=True), (4,), T(M, d, (4,), seed=1, grad=True)), True),
    "embedding": (lambda M, d: F(M).embedding(I(M, d, [0, 2, 1]), T(M, d, grad=True)), True),
    "embedding_backward": (lambda M, d: F(M).embedding(I(M, d, [0, 2, 1]), T(M, d, grad=True)), True),
    "dropout": (lambda M, d: F(M).dropout(T(M, d, grad=True), 0.5), True),
    "masked_scale": (lambda M, d: F(M).dropout(T(M, d, grad=True), 0.5), True),
    "softmax": (lambda M, d: F(M).softmax(T(M, d, grad=True), 1), True),
    "log_softmax": (lambda M, d: F(M).log_softmax(T(M, d, grad=True), 1), True),
    "softmax_backward": (lambda M, d: F(M).softmax(T(M, d, grad=True), 1), True),
    "log_softmax_backward": (lambda M, d: F(M).log_softmax(T(M, d, grad=True), 1), True),
    "scaled_dot_product_attention": (lambda M, d: _sdpa(M, d), True),
    "_scaled_dot_product_flash_attention": (lambda M, d: _sdpa(M, d), True),
    "_scaled_dot_product_flash_attention_backward": (lambda M, d: _sdpa(M, d), True),
    "cross_entropy": (lambda M, d: F(M).cross_entropy(T(M, d, grad=True), I(M, d, [0, 3, 1])), True),
    "cross_entropy_backward": (lambda M, d: F(M).cross_entropy(T(M, d, grad=True), I(M, d, [0, 3, 1])), True),
    "nll_loss": (lambda M, d: F(M).nll_loss(T(M, d, grad=True), I(M, d, [0, 3, 1])), True),
    "nll_loss_backward": (lambda M, d: F(M).nll_loss(T(M, d, grad=True), I(M, d, [0, 3, 1])), True),
    "mse_loss": (lambda M, d: F(M).mse_loss(T(M, d, grad=True), T(M, d, seed=1)), True),
    "l1_loss": (lambda M, d: F(M).l1_loss(T(M, d, grad=True), T(M, d, seed=1)), True),
    "smooth_l1_loss": (lambda M, d: F(M).smooth_l1_loss(T(M, d, grad=True), T(M, d, seed=1)), True),
    "binary_cross_entropy": (lambda M, d: F(M).binary_cross_entropy(T(M, d, low=0.1, high=0.9, grad=True),
                                                                    T(M, d, low=0, high=1, seed=1)), True),
    "binary_cross_entropy_with_logits": (
        lambda M, d: F(M).binary_cross_entropy_with_logits(T(M, d, grad=True), T(M, d, low=0, high=1, seed=1)), True),
    "mse_loss_backward": (lambda M, d: F(M).mse_loss(T(M, d, grad=True), T(M, d, seed=1)), True),
    "l1_loss_backward": (lambda M, d: F(M).l1_loss(T(M, d, grad=True), T(M, d, seed=1)), True),
    "smooth_l1_loss_backward": (lambda M, d: F(M).smooth_l1_loss(T(M, d, grad=True), T(M, d, seed=1)), True),
    "binary_cross_entropy_backward": (
        lambda M, d: F(M).binary_cross_entropy(T(M, d, low=0.1, high=0.9, grad=True), T(M, d, low=0, high=1, seed=1)),
        True),
    "binary_cross_entropy_with_logits_backward": (
        lambda M, d: F(M).binary_cross_entropy_with_logits(T(M, d, grad=True), T(M, d, low=0, high=1, seed=1)), True),
    "ctc_loss": (lambda M, d: F(M).ctc_loss(T(M, d, (5, 2, 4), grad=True).log_softmax(2), I(M, d, [[1, 2], [3, 3]]),
                                            [5, 4], [2, 2], reduction="none"), True),
    "ctc_loss_backward": (lambda M, d: F(M).ctc_loss(T(M, d, (5, 2, 4), grad=True).log_softmax(2),
                                                     I(M, d, [[1, 2], [3, 3]]), [5, 4], [2, 2]), True),
    "pdist": (lambda M, d: F(M).pdist(T(M, d, (4, 3), grad=True)), True),
    "_pdist_backward": (lambda M, d: F(M).pdist(T(M, d, (4, 3), grad=True), 3), True),
    "_multi_tensor_norm": (lambda M, d: _clip(M, d), False),
    "_multi_tensor_scale_": (lambda M, d: _clip(M, d), False),
    "_fused_sgd_": (lambda M, d: opt_step(M, d, "SGD", momentum=0.9), False),
    "_fused_adam_": (lambda M, d: opt_step(M, d, "Adam"), False),
    "_fused_adadelta_": (lambda M, d: opt_step(M, d, "Adadelta"), False),
    "_fused_rmsprop_": (lambda M, d: opt_step(M, d, "RMSprop"), False),
    "_fused_adagrad_": (lambda M, d: opt_step(M, d, "Adagrad"), False),
    "_thnn_fused_lstm_cell": (lambda M, d: _lstm_cell(M, d), True),  # issue 13: rnn
    "_thnn_fused_lstm_cell_backward_impl": (lambda M, d: _lstm_cell(M, d), True),  # issue 13: rnn
    "_thnn_fused_gru_cell": (lambda M, d: _gru_cell(M, d), True),  # issue 13: rnn
    "_thnn_fused_gru_cell_backward": (lambda M, d: _gru_cell(M, d), True),  # issue 13: rnn
    # issue 13, conv: padding
    "constant_pad_nd": (lambda M, d: F(M).pad(T(M, d, (2, 3, 4), grad=True), (1, 2, -1, 1), value=0.5), True),
    "reflection_pad": (lambda M, d: F(M).pad(T(M, d, (2, 3, 4, 5), grad=True), (1, 2, 3, 1), mode="reflect"), True),
    "replication_pad": (lambda M, d: F(M).pad(T(M, d, (2, 3, 4, 5), grad=True), (1, 2, 3, 1), mode="replicate"),
                        True),
    "circular_pad": (lambda M, d: F(M).pad(T(M, d, (2, 3, 4, 5), grad=True), (1, 2, 3, 1), mode="circular"), True),
    "pad_backward": (lambda M, d: F(M).pad(T(M, d, (2, 3, 4, 5), grad=True), (1, 2, 3, 1), mode="reflect"), True),
    "_fused_nadam_": (lambda M, d: opt_step(M, d, "NAdam", weight_decay=0.1), False),
    "_fused_radam_": (lambda M, d: opt_step(M, d, "RAdam", weight_decay=0.1), False),
    "_fused_adamax_": (lambda M, d: opt_step(M, d, "Adamax"), False),
    "_fused_asgd_": (lambda M, d: opt_step(M, d, "ASGD", t0=0), False),
    "_fused_rprop_": (lambda M, d: opt_step(M, d, "Rprop"), False),
    # issue 13, conv: 3-d and transposed convolutions
    "conv3d": (lambda M, d: F(M).conv3d(T(M, d, (2, 3, 4, 5, 4), grad=True), T(M, d, (4, 3, 2, 3, 2), seed=1)), True),
    "conv_transpose1d": (lambda M, d: F(M).conv_transpose1d(T(M, d, (2, 3, 5), grad=True), T(M, d, (3, 4, 3), seed=1),
                                                           stride=2), True),
    "conv_transpose2d": (lambda M, d: F(M).conv_transpose2d(T(M, d, (2, 3, 4, 5), grad=True),
                                                           T(M, d, (3, 4, 3, 3), seed=1), stride=2, padding=1), True),
    "conv_transpose3d": (lambda M, d: F(M).conv_transpose3d(T(M, d, (2, 3, 2, 3, 2), grad=True),
                                                           T(M, d, (3, 2, 2, 2, 2), seed=1), stride=2), True),
    "vol2col": (lambda M, d: F(M).conv3d(T(M, d, (2, 3, 4, 5, 4), grad=True), T(M, d, (4, 3, 2, 3, 2), seed=1)), True),
    "col2vol": (lambda M, d: F(M).conv3d(T(M, d, (2, 3, 4, 5, 4), grad=True), T(M, d, (4, 3, 2, 3, 2), seed=1)), True),
    # issue 13, conv: interpolate
    "upsample_nearest": (lambda M, d: F(M).interpolate(T(M, d, (2, 3, 4, 5), grad=True), scale_factor=2), True),
    "upsample_linear": (lambda M, d: F(M).interpolate(T(M, d, (2, 3, 4, 5), grad=True), size=(7, 3), mode="bilinear"),
                        True),
    "upsample_bicubic": (lambda M, d: F(M).interpolate(T(M, d, (2, 3, 4, 5), grad=True), scale_factor=1.5,
                                                       mode="bicubic", align_corners=True), True),
    "upsample_area": (lambda M, d: F(M).interpolate(T(M, d, (2, 3, 6, 5), grad=True), size=(3, 2), mode="area"), True),
    "resample_backward": (lambda M, d: F(M).interpolate(T(M, d, (2, 3, 4, 5), grad=True), size=(7, 3),
                                                        mode="bilinear"), True),
}


def _lstm_cell(M, d):  # issue 13: rnn
    return M._C._thnn_fused_lstm_cell(T(M, d, (3, 8), grad=True), T(M, d, (3, 8), seed=1), T(M, d, (3, 2), seed=2),
                                   T(M, d, (8,), seed=3), T(M, d, (8,), seed=4))


def _gru_cell(M, d):  # issue 13: rnn
    return M._C._thnn_fused_gru_cell(T(M, d, (3, 6), grad=True), T(M, d, (3, 6), seed=1), T(M, d, (3, 2), seed=2),
                                  T(M, d, (6,), seed=3), T(M, d, (6,), seed=4))


def _scaler_round_trip(M, d):
    p = M.nn.Parameter(T(M, d))
    opt = M.optim.SGD([p], lr=0.1)
    scaler = M.amp.GradScaler(d, init_scale=4.0)
    scaler.scale((p * p).sum()).backward()
    scaler.step(opt)
    scaler.update()
    return p.detach()


def _fractional(M, d, n):  # issue 13, poolnorm: samples given, so both libraries pick the same windows
    x = T(M, d, (2, 3) + (7,) * n, grad=True)
    return getattr(F(M), f"fractional_max_pool{n}d")(x, 2, 4, _random_samples=T(M, d, (2, 3, n), low=0, high=1))


def _batch_norm(M, d):
    x = T(M, d, (4, 3, 5), grad=True)
    return F(M).batch_norm(x, M.zeros(3, device=d), M.ones(3, device=d), training=True)


def _sdpa(M, d):
    q = T(M, d, (1, 2, 4, 8), grad=True)
    return F(M).scaled_dot_product_attention(q, T(M, d, (1, 2, 4, 8), seed=1), T(M, d, (1, 2, 4, 8), seed=2),
                                             is_causal=True)


def _clip(M, d):
    p = M.nn.Parameter(T(M, d))
    p.grad = T(M, d, seed=1) * 10
    return M.nn.utils.clip_grad_norm_([p], 1.0)


def devices():
    yield "cpu"
    if ampc.cuda.is_available():
        yield "cuda"


def case_of(name):
    assert name in CASES, "ops.def row %s has no case in tests/test_op_table.py CASES" % name
    return CASES[name]


def run_case(name, dev):
    fn, backward = case_of(name)
    out = fn(ampc, dev)
    first = out[0] if isinstance(out, (tuple, list)) else out
    if backward:
        first.float().sum().backward()
    return first


def test_every_row_has_a_case():
    missing = sorted(set(TABLE) - set(CASES))
    extra = sorted(set(CASES) - set(TABLE))
    assert not missing, "ops.def rows without a case in tests/test_op_table.py CASES: %s" % missing
    assert not extra, "CASES entries naming no ops.def row: %s" % extra


def test_every_row_has_its_kernels():
    for name, row in TABLE.items():
        if not row["kernels_required"]:
            assert not row["cpu_kernel"] and not row["cuda_kernel"], (
                "%s: marked NONE (composed) in ops.def but a backend registers a kernel for it" % name)
            continue
        assert row["cpu_kernel"], "%s: no CPU kernel registered (csrc/cpu)" % name
        if CUDA_BUILD:
            assert row["cuda_kernel"], "%s: no CUDA kernel registered (csrc/cuda)" % name


def test_every_row_has_its_decisions():
    for name, row in TABLE.items():
        assert row["autocast"] in ("none", "lower_precision_fp", "fp32", "fp32_set_opt_dtype", "promote", "banned")
        assert row["grad"] in ("rule", "none", "internal", "composed"), name
        assert (row["grad"] == "rule") == (row["grad_node"] is not None), name


@pytest.mark.parametrize("dev", list(devices()))
def test_cases_run_every_kernel(dev):
    before = ampc._C._dispatch_counts()
    for name in TABLE:
        if TABLE[name]["kernels_required"]:
            key = (dev, name)
            start = ampc._C._dispatch_counts().get(key, 0)
            try:
                run_case(name, dev)
            except Exception as e:  # name the row whose case broke (a removed gradient, ...)
                raise AssertionError("the case of %s in tests/test_op_table.py failed on %s: %s: %s"
                                     % (name, dev, type(e).__name__, e)) from e
            assert ampc._C._dispatch_counts().get(key, 0) > start, (
                "the case of %s in tests/test_op_table.py never ran its %s kernel" % (name, dev))
    assert ampc._C._dispatch_counts() != before


ELEMENTWISE_ROWS = sorted(n for n, r in TABLE.items() if r["schema"] == "elementwise")


@pytest.mark.parametrize("dev", list(devices()))
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64", "int64", "int32", "uint8", "bool"])
def test_elementwise_rows_run_in_every_dtype(dev, dtype):
    """Both backends' loops of an elementwise row are generated from its DTYPES column in ops.def: a
    dtype the row's dtype rule accepts but DTYPES lacks fails here, naming the row. Every row's case
    runs in every floating dtype; an integer or bool dtype may be refused by the row's dtype rule (as
    torch refuses it) or need no kernel (floor of an int64), but never meet a missing loop."""
    floating = dtype in ("float16", "bfloat16", "float64")
    failures = []
    _case_dtype[0] = getattr(ampc, dtype)
    try:
        for name in ELEMENTWISE_ROWS:
            if name not in CASES:
                continue  # test_every_row_has_a_case names it
            fn, backward = CASES[name]
            start = ampc._C._dispatch_counts().get((dev, name), 0)
            try:
                out = fn(ampc, dev)
                first = out[0] if isinstance(out, (tuple, list)) else out
                if backward and first.requires_grad:
                    first.float().sum().backward()
                if dev != "cpu":  # a kernel's deferred error (an integer division by 0) belongs to this case
                    ampc.cuda.synchronize()
            except Exception as e:
                if floating or "backend has no" in str(e):
                    failures.append("%s: %s: %s" % (name, type(e).__name__, e))
                continue
            if floating and ampc._C._dispatch_counts().get((dev, name), 0) == start:
                failures.append("%s: its case never ran its %s kernel" % (name, dev))
    finally:
        _case_dtype[0] = None
    assert not failures, ("cases of tests/test_op_table.py that fail on %s in %s (does the row's DTYPES column in "
                          "ops.def hold %s?):\n  %s" % (dev, dtype, dtype, "\n  ".join(failures)))


@pytest.mark.parametrize("name", sorted(n for n, r in TABLE.items() if r["grad"] == "rule"))
def test_gradient_rows_record_their_node(name):
    fn, backward = case_of(name)
    assert backward, "%s is differentiable (GRAD in ops.def): its case must run backward" % name
    out = fn(ampc, "cpu")
    first = out[0] if isinstance(out, (tuple, list)) else out
    assert first.grad_fn is not None, "%s: the case's output has no grad_fn" % name
    assert type(first.grad_fn).__name__ == TABLE[name]["grad_node"] or first.grad_fn.name() == TABLE[name][
        "grad_node"], "%s: node %s, ops.def says %s" % (name, first.grad_fn.name(), TABLE[name]["grad_node"])


@pytest.mark.parametrize("name", sorted(n for n, r in TABLE.items() if r["grad"] == "composed"))
def test_composed_rows_are_differentiable(name):
    fn, backward = case_of(name)
    assert backward, "%s is differentiable (GRAD_COMPOSED in ops.def): its case must run backward" % name
    run_case(name, "cpu")


@pytest.mark.skipif(torch is None, reason="needs the torch oracle")
@pytest.mark.parametrize("name", sorted(n for n, r in TABLE.items() if not n.startswith("_") and r["grad"] != "internal"
                                        and n not in ("uniform_", "normal_", "random_", "bernoulli_", "dropout")))
def test_case_values_match_torch(name):
    fn, backward = case_of(name)
    got = fn(ampc, "cpu")
    want = fn(torch, "cpu")
    got = got[0] if isinstance(got, (tuple, list)) else got
    want = want[0] if isinstance(want, (tuple, list)) else want
    np.testing.assert_allclose(np.asarray(got.detach().cpu().float().numpy() if got.dtype.is_floating_point
                                          else got.detach().cpu().numpy(), dtype=np.float64),
                               np.asarray(want.detach().float().numpy() if want.dtype.is_floating_point
                                          else want.detach().numpy(), dtype=np.float64),
                               rtol=1e-4, atol=1e-5, err_msg=name)
