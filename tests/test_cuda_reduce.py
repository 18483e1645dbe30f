"""The CUDA reductions (cuda_reduce.cu) and cumsum (cuda_scan.cu) against the CPU backend: the same
inputs on both devices, results compared within the accumulation difference (the CPU sums floats
in double, the GPU fp32/fp16/bf16 in fp32), exactly for integers, bools, indices and extremes.

Covers every REDUCE op and dtype, each mapping of the kernels (rows: the reduced dims innermost;
columns: a kept dim innermost; one thread per output for short reductions; the reduced range split
across blocks when outputs are few, merged by a second kernel), full, first, middle, last and
non-adjacent dims, keepdim, transposed and sliced inputs, sizes around the warp and block sizes and
beyond 2^20, NaN/inf propagation and the index that wins, ties, exact int64 sums, empty and 0-dim
inputs, the dtype= widening paths, and gradients through the reductions on both devices.

Runs where a GPU exists (fixture `cuda`); AMPC_TEST_CUDA_AS_CPU=1 runs the "cuda" side on the CPU,
a dry run of the test code."""
import math

import numpy as np
import pytest

import ampc
from helpers import FLOATS, host_exact

SEED = 4321
INTS = [ampc.int64, ampc.int32, ampc.uint8, ampc.bool]
# (rtol, atol per unit of `scale`): fp32 results differ by the GPU's fp32 accumulation (the CPU
# sums in double); fp16/bf16 results may round to neighbouring values (an ulp apart).
TOL = {ampc.float32: (2e-5, 4e-6), ampc.float64: (1e-12, 1e-13), ampc.float16: (2e-3, 4e-6),
       ampc.bfloat16: (1.6e-2, 4e-6)}


# ------------------------------------------------------------------ helpers


def sample(shape, dtype, seed=0, low=-2.0, high=2.0):
    """NumPy values of `shape` exactly representable in `dtype`, and the CPU tensor holding them."""
    g = np.random.default_rng(SEED + seed)
    if dtype == ampc.bool:
        x = g.random(shape) < 0.5
        return ampc.from_numpy(x), x
    if dtype in (ampc.int64, ampc.int32, ampc.uint8):
        lo, hi = (0, 200) if dtype == ampc.uint8 else (-50, 50)
        x = g.integers(lo, hi, size=shape)
        return ampc.from_numpy(x).to(dtype), x
    t = ampc.from_numpy(g.uniform(low, high, size=shape).astype(np.float32)).to(dtype)
    return t, host_exact(t)


def layout(t, kind):
    """A view of `t`'s values in the given layout: the same logical tensor, other strides. Built on
    the tensor's own device, so the CUDA side is really non-contiguous."""
    if kind == "contiguous":
        return t
    if kind == "transposed":  # stored in reversed dim order, viewed back
        perm = tuple(reversed(range(t.ndim)))
        return t.permute(*perm).contiguous().permute(*perm)
    if kind == "sliced":  # every other element of a buffer twice as large in each dim
        big = ampc.zeros(*[2 * s for s in t.shape], dtype=t.dtype, device=t.device)
        view = big[tuple(slice(1, None, 2) for _ in t.shape)]
        view.copy_(t)
        return view
    raise ValueError(kind)


def pair(t_cpu, dev, kind="contiguous"):
    """The CPU tensor and its copy on `dev`, both in layout `kind`."""
    a, b = layout(t_cpu, kind), layout(t_cpu.to(dev), kind)
    if kind != "contiguous" and t_cpu.numel() > 1:
        assert not a.is_contiguous() and not b.is_contiguous()
    return a, b


def assert_same(got, want, scale=0.0, rtol=None, what=""):
    """got (from the GPU) against want (from the CPU): dtype, shape, values."""
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    assert tuple(got.shape) == tuple(want.shape), (what, tuple(got.shape), tuple(want.shape))
    g, w = host_exact(got), host_exact(want)
    if want.dtype in TOL:
        rt, at = TOL[want.dtype]
        np.testing.assert_allclose(g, w, rtol=rt if rtol is None else rtol, atol=at * scale + 1e-300, equal_nan=True,
                                   err_msg=what)
    else:
        np.testing.assert_array_equal(g, w, err_msg=what)


def kw(dim):
    return {} if dim is None else {"dim": dim}


def n_reduced(shape, dim):
    if not shape:
        return 1
    if dim is None:
        return int(np.prod(shape)) if shape else 1
    dims = (dim,) if isinstance(dim, int) else dim
    return int(np.prod([shape[d] for d in dims])) if dims else int(np.prod(shape))


# Each op: (t, dim, keepdim) -> list of result tensors. `dim` None reduces everything; ops that
# take one dim only are given int or None.
def _single(f):
    return lambda t, d, k: f(t, d, k) if d is None or isinstance(d, int) else None


OPS = {
    "sum": lambda t, d, k: [t.sum(keepdim=k, **kw(d))],
    "mean": lambda t, d, k: [t.mean(keepdim=k, **kw(d))],
    "prod": lambda t, d, k: [t.prod(keepdim=k, **kw(d))],
    "amax": lambda t, d, k: [t.amax(keepdim=k, **kw(d))],
    "amin": lambda t, d, k: [ampc.amin(t, keepdim=k, **kw(d))],
    "max_dim": _single(lambda t, d, k: [t.max()] if d is None else list(t.max(d, keepdim=k))),
    "min_dim": _single(lambda t, d, k: [t.min()] if d is None else list(t.min(d, keepdim=k))),
    "argmax": _single(lambda t, d, k: [t.argmax(keepdim=k, **kw(d))]),
    "argmin": _single(lambda t, d, k: [t.argmin(keepdim=k, **kw(d))]),
    "var": lambda t, d, k: [t.var(keepdim=k, **kw(d))],
    "std": lambda t, d, k: [ampc.std(t, correction=0, keepdim=k, **kw(d))],
    "norm0": lambda t, d, k: [ampc.vector_norm(t, 0, keepdim=k, **kw(d))],
    "norm1": lambda t, d, k: [ampc.vector_norm(t, 1, keepdim=k, **kw(d))],
    "norm2": lambda t, d, k: [ampc.vector_norm(t, 2, keepdim=k, **kw(d))],
    "norm3": lambda t, d, k: [ampc.vector_norm(t, 3, keepdim=k, **kw(d))],
    "norm_inf": lambda t, d, k: [ampc.vector_norm(t, float("inf"), keepdim=k, **kw(d))],
    "norm_-inf": lambda t, d, k: [ampc.vector_norm(t, float("-inf"), keepdim=k, **kw(d))],
    "logsumexp": lambda t, d, k: [ampc.logsumexp(t, tuple(range(t.ndim)) if d is None else d, keepdim=k)],
    "any": lambda t, d, k: [t.any(keepdim=k, **kw(d))],
    "all": lambda t, d, k: [ampc.all(t, keepdim=k, **kw(d))],
}
FLOAT_OPS = list(OPS)
INT_OPS = ["sum", "prod", "amax", "amin", "max_dim", "min_dim", "argmax", "argmin", "any", "all"]
BOOL_OPS = ["sum", "prod", "amax", "amin", "max_dim", "min_dim", "any", "all"]  # argmax refuses bool


def scale_of(name, x, dim):
    """The size of the summands behind one output (for the fp32 accumulation allowance)."""
    n = n_reduced(x.shape, dim)
    finite = np.abs(x[np.isfinite(x)]) if x.dtype != np.bool_ else np.abs(x.astype(np.int64))
    m = float(np.max(finite)) if finite.size else 0.0
    if name in ("mean",):
        return m
    if name == "prod":  # relative only (the rtol grows with the number of factors)
        return 0.0
    if name == "logsumexp":
        return m + math.log(max(n, 1)) + 1
    if name in ("var", "std"):
        return 4 * m * m
    if name == "norm3":
        return m ** 3 * n
    return m * max(n, 1)


def check_op(name, a, b, dim, keepdim, x):
    """Runs op `name` on the CPU tensor a and the GPU tensor b and compares every result."""
    want = OPS[name](a, dim, keepdim)
    if want is None:
        return
    got = OPS[name](b, dim, keepdim)
    # prod multiplies up to ~1000 fp32 factors: its rounding grows with their number
    rtol = 2e-7 * max(n_reduced(x.shape, dim), 50) if name == "prod" and a.dtype == ampc.float32 else None
    for g, w in zip(got, want):
        assert g.device.type == b.device.type
        assert_same(g, w, scale=scale_of(name, x, dim), rtol=rtol,
                    what=f"{name} dim={dim} keepdim={keepdim} {a.dtype} {tuple(a.shape)}")


# ------------------------------------------------------------------ ops x dims x layouts


DIMS_3D = [None, 0, 1, 2, -1, (0, 2), (2, 0, 1), ()]


@pytest.mark.parametrize("layout_kind", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("dim", DIMS_3D)
@pytest.mark.parametrize("keepdim", [False, True])
def test_every_op_dims_layouts(cuda, layout_kind, dim, keepdim):
    t, _ = sample((6, 33, 5), ampc.float32, low=0.6, high=1.4)  # positive: prod stays in range
    t[1, 2, 3] = 0.0  # the norm-0 count and all() see a zero
    a, b = pair(t, cuda, layout_kind)
    x = host_exact(a)
    for name in FLOAT_OPS:
        check_op(name, a, b, dim, keepdim, x)


@pytest.mark.parametrize("dims", [(0, 2), (1, 3), (0, 1, 3), (3, 0)])
@pytest.mark.parametrize("layout_kind", ["contiguous", "transposed"])
def test_non_adjacent_dims_4d(cuda, dims, layout_kind):
    t, _ = sample((3, 4, 5, 6), ampc.float32, seed=1)
    a, b = pair(t, cuda, layout_kind)
    x = host_exact(a)
    for name in ["sum", "mean", "amax", "var", "norm2", "logsumexp", "any"]:
        for keepdim in (False, True):
            check_op(name, a, b, dims, keepdim, x)


@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=str)
@pytest.mark.parametrize("dim", [None, 0, 1, -1, (0, 2)])
def test_every_dtype(cuda, dtype, dim):
    t, _ = sample((5, 37, 9), dtype, seed=2, low=0.8, high=1.25)
    for kind in ("contiguous", "transposed"):
        a, b = pair(t, cuda, kind)
        x = host_exact(a)
        names = FLOAT_OPS if dtype in FLOATS else INT_OPS if dtype != ampc.bool else BOOL_OPS
        for name in names:
            check_op(name, a, b, dim, False, x)


# ------------------------------------------------------------------ sizes: every kernel mapping


SIZES = [1, 2, 15, 16, 17, 31, 32, 33, 1023, 1025, 2**20 + 3]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("pattern", ["full", "last", "first", "middle"])
def test_sizes(cuda, n, pattern):
    """full: x (n,) to a scalar (rows, split across blocks when large); last: (3, n) over dim 1
    (rows); first: (n, 3) over dim 0 (columns, split when tall); middle: (2, n, 3) over dim 1."""
    shape, dim = {"full": ((n,), None), "last": ((3, n), 1), "first": ((n, 3), 0),
                  "middle": ((2, n, 3), 1)}[pattern]
    big = n > 2**16
    names = ["sum", "mean", "amax", "argmax", "max_dim", "var", "norm2", "logsumexp", "all"] if big else FLOAT_OPS
    t, _ = sample(shape, ampc.float32, seed=3, low=0.9, high=1.1)
    a, b = pair(t, cuda)
    x = host_exact(a)
    for name in names:
        check_op(name, a, b, dim, False, x)
    for dt in (ampc.float16, ampc.bfloat16, ampc.int32):  # the 16- and 4-byte vector loads
        a16, b16 = a.to(dt), b.to(dt)
        x16 = host_exact(a16)
        for name in (["sum", "mean", "amax", "argmin"] if dt != ampc.int32 else ["sum", "amax", "argmin"]):
            check_op(name, a16, b16, dim, False, x16)
    if dim is not None:
        assert_same(b.cumsum(dim), a.cumsum(dim), scale=2.2 * n_reduced(shape, dim), what="cumsum")


def test_rows_misaligned_starts(cuda):
    """Rows whose starts are not 16-byte aligned (an odd row length, a view at an odd offset):
    the vector loads first reach alignment element by element."""
    for dt in (ampc.float32, ampc.float16, ampc.float64, ampc.uint8):
        t, _ = sample((7, 1001), dt, seed=4)
        a, b = t[:, 3:], t.to(cuda)[:, 3:]
        x = host_exact(a)
        for name in (["sum", "amax", "argmax", "any"] if dt != ampc.uint8 else ["sum", "amax", "argmax", "all"]):
            check_op(name, a, b, 1, False, x)
        a1, b1 = t.flatten()[5:], t.to(cuda).flatten()[5:]
        check_op("sum", a1, b1, None, False, host_exact(a1))


def test_bias_gradient_shape(cuda):
    """x.sum(0) of a tall (N, D) matrix, as in a linear layer's bias gradient: columns, the
    reduced range split across blocks and merged."""
    for dt in (ampc.float16, ampc.float32, ampc.bfloat16):
        t, _ = sample((16384, 1024), dt, seed=5)
        a, b = pair(t, cuda)
        x = host_exact(a)
        for name in ["sum", "mean", "amax", "argmax"]:
            check_op(name, a, b, 0, False, x)
        assert_same(b.sum(0, dtype=ampc.float32), a.sum(0, dtype=ampc.float32), scale=2 * 16384, what="sum f32")
    t, _ = sample((16384, 64), ampc.float32, seed=6)
    a, b = pair(t, cuda)
    check_op("var", a, b, 0, False, host_exact(a))


def test_large_full_reductions(cuda):
    t, _ = sample((3, 1 << 20), ampc.float32, seed=7, low=-1.0, high=3.0)
    a, b = pair(t, cuda)
    x = host_exact(a)
    for name in ["sum", "mean", "amax", "amin", "argmax", "argmin", "var", "std", "norm1", "norm2", "logsumexp"]:
        check_op(name, a, b, None, False, x)
    # sliced: no vector loads, the general offsets
    a, b = pair(sample((1500, 1400), ampc.float32, seed=8)[0], cuda, "sliced")
    x = host_exact(a)
    for name in ["sum", "argmax", "var"]:
        check_op(name, a, b, None, False, x)
        check_op(name, a, b, 0, False, x)
        check_op(name, a, b, 1, False, x)


def test_expanded_input(cuda):
    t, _ = sample((700,), ampc.float32, seed=9)
    a, b = t.expand(500, 700), t.to(cuda).expand(500, 700)
    x = host_exact(a)
    for dim in (0, 1, None):
        for name in ["sum", "amax", "argmax", "var"]:
            check_op(name, a, b, dim, False, x)


# ------------------------------------------------------------------ NaN, inf, ties


def test_nan_and_inf_propagation(cuda):
    x = np.array([[1.0, np.nan, 3.0, np.nan], [4.0, 2.0, -1.0, 0.5], [-np.inf, -np.inf, np.nan, 9.0],
                  [np.inf, 1.0, np.inf, -np.inf], [-np.inf, -np.inf, -np.inf, -np.inf]], dtype=np.float32)
    for dt in (ampc.float32, ampc.float16, ampc.bfloat16, ampc.float64):
        t = ampc.from_numpy(x).to(dt)
        for kind in ("contiguous", "transposed"):
            a, b = pair(t, cuda, kind)
            for dim in (None, 0, 1):
                for name in FLOAT_OPS:
                    check_op(name, a, b, dim, False, host_exact(a))


@pytest.mark.parametrize("n", [33, 1025, 2**20 + 3])
def test_first_nan_wins_across_blocks(cuda, n):
    """Two NaNs far apart: max/argmax/argmin report the first, whichever thread or block saw it."""
    x = np.random.default_rng(SEED).uniform(-1, 1, size=n).astype(np.float32)
    x[n // 3] = np.nan
    x[n - 2] = np.nan
    t = ampc.from_numpy(x)
    a, b = pair(t, cuda)
    for name in ["amax", "amin", "max_dim", "min_dim", "argmax", "argmin", "sum", "logsumexp", "norm_inf"]:
        check_op(name, a, b, None, False, x)
    assert b.argmax().item() == n // 3 and b.argmin().item() == n // 3
    col = np.stack([x, x], axis=1)  # down the columns
    a, b = pair(ampc.from_numpy(col), cuda)
    assert b.argmax(0).tolist() == [n // 3, n // 3]
    assert_same(b.max(0).indices, a.max(0).indices)


@pytest.mark.parametrize("n", [31, 1025, 2**20 + 3])
def test_ties_pick_the_first_index(cuda, n):
    g = np.random.default_rng(SEED + n)
    for dt in (ampc.int64, ampc.float32, ampc.float16, ampc.uint8):
        x = g.integers(0, 4, size=n)  # the extreme repeats many times
        t = ampc.from_numpy(x).to(dt)
        a, b = pair(t, cuda)
        for name in ["argmax", "argmin", "max_dim", "min_dim"]:
            check_op(name, a, b, None, False, x)
        assert b.argmax().item() == int(np.argmax(x)) and b.argmin().item() == int(np.argmin(x))
        m = g.integers(0, 3, size=(max(n // 64, 3), 64))
        a, b = pair(ampc.from_numpy(m).to(dt), cuda)
        for dim in (0, 1):
            np.testing.assert_array_equal(host_exact(b.argmax(dim)), np.argmax(m, axis=dim))
            np.testing.assert_array_equal(host_exact(b.min(dim).indices), np.argmin(m, axis=dim))
    allneg = ampc.full((4, 3), float("-inf"), device=cuda)
    assert allneg.argmax(1).tolist() == [0, 0, 0, 0] and allneg.max(0).indices.tolist() == [0] * 3


def test_argmax_flat_index_of_transposed(cuda):
    t, _ = sample((37, 29), ampc.float32, seed=10)
    a, b = pair(t, cuda, "transposed")
    x = host_exact(a)
    assert b.argmax().item() == a.argmax().item() == int(np.argmax(x))
    assert b.argmin(keepdim=True).shape == (1, 1)


# ------------------------------------------------------------------ integers, low precision


def test_int64_sums_exact_and_wrapping(cuda):
    g = np.random.default_rng(SEED)
    x = g.integers(2**50, 2**51, size=(3, 1025), dtype=np.int64)
    a, b = pair(ampc.from_numpy(x), cuda)
    assert host_exact(b.sum(1)).tolist() == [int(v) for v in x.sum(axis=1)]  # beyond 2^53: no detour via double
    assert b.sum().item() == int(x.sum())
    odd = ampc.from_numpy(np.array([2**53 + 1, 1], dtype=np.int64)).to(cuda)
    assert odd.sum().item() == 2**53 + 2
    big = ampc.from_numpy(np.array([2**62, 2**62, 2**62, -5], dtype=np.int64))
    assert big.to(cuda).sum().item() == big.sum().item()  # wraps like the CPU (and torch)
    assert big.to(cuda).prod().item() == big.prod().item()
    assert_same(b.cumsum(1), a.cumsum(1))
    i32 = ampc.from_numpy(g.integers(-2**31, 2**31 - 1, size=(1000,))).to(ampc.int32)
    assert i32.to(cuda).sum().item() == i32.sum().item()  # int32 input, int64 sum
    assert i32.to(cuda).sum(dtype=ampc.int32).item() == i32.sum(dtype=ampc.int32).item()  # wraps in int32


def test_half_accumulates_in_fp32(cuda):
    ones = ampc.ones(1 << 20, dtype=ampc.float16, device=cuda)
    assert ones.mean().item() == 1.0  # fp16 accumulation would stall at 2048
    assert ones.sum(dtype=ampc.float32).item() == float(1 << 20)
    assert math.isinf(ones.sum().item())  # 2^20 overflows fp16, on both devices
    assert ampc.ones(1 << 20, dtype=ampc.bfloat16, device=cuda).sum().item() == float(1 << 20)
    assert ones.view(1024, 1024).sum(0).tolist() == [1024.0] * 1024
    assert ones.view(1024, 1024).sum(1).tolist() == [1024.0] * 1024


def test_dtype_arguments(cuda):
    t, _ = sample((33, 70), ampc.float32, seed=11)
    a, b = pair(t, cuda)
    for op in ("sum", "mean", "prod"):
        assert_same(getattr(b, op)(1, dtype=ampc.float64), getattr(a, op)(1, dtype=ampc.float64),
                    scale=140, rtol=1e-10 if op != "prod" else 1e-9, what=op)  # widened: double accumulation
    h_a, h_b = a.half(), b.half()
    assert_same(h_b.sum(dtype=ampc.float32), h_a.sum(dtype=ampc.float32), scale=2 * 33 * 70)
    assert_same(h_b.sum(0, dtype=ampc.float64), h_a.sum(0, dtype=ampc.float64), scale=66, rtol=1e-10)
    assert_same(h_b.mean(dtype=ampc.float32), h_a.mean(dtype=ampc.float32), scale=2)
    assert_same(ampc.vector_norm(h_b, 2, dtype=ampc.float64), ampc.vector_norm(h_a, 2, dtype=ampc.float64), rtol=1e-10)
    assert_same(ampc.vector_norm(h_b, 3, dim=1, dtype=ampc.float32),
                ampc.vector_norm(h_a, 3, dim=1, dtype=ampc.float32))
    i = ampc.from_numpy(np.arange(-20, 50)).to(ampc.int32)
    ia, ib = pair(i, cuda)
    for dt in (ampc.float16, ampc.float32, ampc.int32, ampc.bool, ampc.uint8):
        assert_same(ib.sum(dtype=dt), ia.sum(dtype=dt), scale=2000, what=str(dt))
    assert_same(ib.mean(dtype=ampc.float64), ia.mean(dtype=ampc.float64))
    assert_same(ampc.logsumexp(ib, 0), ampc.logsumexp(ia, 0))  # integer input: float32 result
    assert_same(b.sum(1, dtype=ampc.int64), a.sum(1, dtype=ampc.int64))  # cast first, then exact
    bools = ampc.from_numpy(np.array([True, False, True] * 11))
    assert_same(bools.to(cuda).sum(), bools.sum())
    assert_same(bools.to(cuda).sum(dtype=ampc.bool), bools.sum(dtype=ampc.bool))
    u8 = ampc.from_numpy(np.array([0, 3, 0, 7], dtype=np.uint8))
    assert u8.to(cuda).any().dtype == ampc.uint8 and u8.to(cuda).all(0).item() == 0
    assert_same(u8.to(cuda).any(0), u8.any(0))


@pytest.mark.parametrize("correction", [0, 1, 2.5, 33, 34, 40])
def test_var_corrections(cuda, correction):
    t, _ = sample((5, 33), ampc.float32, seed=12)
    a, b = pair(t, cuda)
    for dim in (1, 0, None):
        assert_same(b.var(dim, correction=correction) if dim is not None else b.var(correction=correction),
                    a.var(dim, correction=correction) if dim is not None else a.var(correction=correction),
                    scale=16, what=f"var dim={dim}")
        assert_same(ampc.std(b, correction=correction, **kw(dim)), ampc.std(a, correction=correction, **kw(dim)),
                    scale=4, what=f"std dim={dim}")


def test_var_large_offset(cuda):
    x = (np.random.default_rng(SEED).standard_normal((64, 300)) + 1e4).astype(np.float32)
    for dt in (ampc.float32, ampc.float64):
        a, b = pair(ampc.from_numpy(x).to(dt), cuda)
        for dim in (0, 1, None):  # two passes: the offset does not cancel the spread away
            assert_same(b.var(**kw(dim)), a.var(**kw(dim)), rtol=5e-5 if dt == ampc.float32 else 1e-10)


@pytest.mark.parametrize("p", [0, 1, 2, 3, 0.5, -1, -0.5, float("inf"), float("-inf")])
def test_norm_orders(cuda, p):
    t, _ = sample((9, 40), ampc.float32, seed=13)
    t[0, 0] = 0.0
    for dt in (ampc.float32, ampc.float64, ampc.bfloat16):
        a, b = pair(t.to(dt), cuda)
        for dim in (None, 0, 1):
            got, want = ampc.vector_norm(b, p, **kw(dim)), ampc.vector_norm(a, p, **kw(dim))
            assert_same(got, want, rtol=5e-5 if dt == ampc.float32 else None, what=f"p={p} dim={dim}")


def test_logsumexp_special_rows(cuda):
    x = np.array([[1000.0, 1000.0, 3.0], [-1000.0, -1000.0, -999.0], [np.inf, 1.0, 2.0], [-np.inf, 0.0, 1.0],
                  [-np.inf, -np.inf, -np.inf], [np.nan, 1.0, 2.0], [np.inf, -np.inf, 0.0]], dtype=np.float32)
    for dt in (ampc.float32, ampc.float64, ampc.float16):
        a, b = pair(ampc.from_numpy(x).to(dt) if dt != ampc.float16 else ampc.from_numpy(x / 100).half(), cuda)
        for dim in (0, 1):
            assert_same(ampc.logsumexp(b, dim), ampc.logsumexp(a, dim), what=f"{dt} dim={dim}")
            assert_same(ampc.logsumexp(b, dim, keepdim=True), ampc.logsumexp(a, dim, keepdim=True))


def test_any_all_every_dtype(cuda):
    g = np.random.default_rng(SEED)
    x = (g.random((6, 300)) < 0.01).astype(np.float32)
    x[1, :] = 1
    x[2, :] = 0
    for dt in FLOATS + INTS:
        t = ampc.from_numpy(x).to(dt)
        for kind in ("contiguous", "transposed"):
            a, b = pair(t, cuda, kind)
            for dim in (None, 0, 1):
                for op in ("any", "all"):
                    assert_same(getattr(b, op)(**kw(dim)), getattr(a, op)(**kw(dim)), what=f"{op} {dt} {dim}")
    nan = ampc.tensor([0.0, float("nan")], device=cuda)
    assert nan.any().item() is True and nan.all().item() is False


# ------------------------------------------------------------------ empty and 0-dim


def test_empty_reductions(cuda):
    e = ampc.empty(0, 3, device=cuda)
    ec = ampc.empty(0, 3)
    assert e.sum().item() == 0 and e.prod().item() == 1
    assert e.sum(0).tolist() == [0.0] * 3 and e.prod(0).tolist() == [1.0] * 3
    assert e.sum(1).shape == (0,) and e.amax(1).shape == (0,) and e.argmax(1).shape == (0,)
    assert math.isnan(e.mean().item()) and all(math.isnan(v) for v in e.mean(0).tolist())
    assert all(math.isnan(v) for v in e.var(0).tolist())
    assert e.norm(dim=0).tolist() == [0.0] * 3 and e.norm(0, dim=0).tolist() == [0.0] * 3
    assert ampc.logsumexp(e, 0).tolist() == [float("-inf")] * 3
    assert e.any().item() is False and e.all().item() is True
    assert e.any(0).tolist() == [False] * 3 and e.all(0).tolist() == [True] * 3
    assert ampc.empty(0, dtype=ampc.int32, device=cuda).sum().dtype == ampc.int64
    assert_same(e.cumsum(0), ec.cumsum(0))
    for call in (lambda t: t.amax(), lambda t: t.max(0), lambda t: t.argmax(0), lambda t: t.amin(0),
                 lambda t: ampc.vector_norm(t, float("inf"))):
        with pytest.raises((RuntimeError, IndexError)):
            call(e)
        with pytest.raises((RuntimeError, IndexError)):
            call(ec)


def test_zero_dim_inputs(cuda):
    for dt in (ampc.float32, ampc.int64, ampc.float16):
        s = ampc.tensor(3.0 if dt != ampc.int64 else 3, dtype=dt)
        sc = s.to(cuda)
        for name in ["sum", "mean", "prod", "amax", "amin", "max_dim", "argmax", "var", "norm2", "logsumexp",
                     "any", "all"]:
            if dt == ampc.int64 and name in ("mean", "var", "norm2", "logsumexp"):
                continue
            for dim in (None, 0):
                check_op(name, s, sc, dim, False, host_exact(s))
        assert_same(sc.cumsum(0), s.cumsum(0))


def test_size_one_reduced_dims(cuda):
    t, _ = sample((4, 1, 5), ampc.float32, seed=14)
    a, b = pair(t, cuda)
    for name in ["sum", "amax", "argmax", "max_dim", "var", "logsumexp", "norm2"]:
        check_op(name, a, b, 1, False, host_exact(a))
        check_op(name, a, b, 1, True, host_exact(a))


# ------------------------------------------------------------------ cumsum


@pytest.mark.parametrize("dtype", [ampc.float32, ampc.float16, ampc.bfloat16, ampc.float64, ampc.int64,
                                   ampc.int32, ampc.uint8, ampc.bool], ids=str)
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_cumsum_dtypes_dims(cuda, dtype, dim):
    t, x = sample((4, 37, 6), dtype, seed=15)
    for kind in ("contiguous", "transposed", "sliced"):
        a, b = pair(t, cuda, kind)
        assert_same(b.cumsum(dim), a.cumsum(dim), scale=2.0 * 37, what=f"cumsum {kind}")


@pytest.mark.parametrize("shape,dim", [((1, 2**20 + 3), 1), ((3, 100003), 1), ((200000, 3), 0), ((5, 5000, 2), 1),
                                       ((2**20 + 3,), 0), ((64, 4097), 1), ((3, 33), 1), ((1000, 20), 1)])
def test_cumsum_long_lines(cuda, shape, dim):
    """Long rows (chunked block scans with carries), tall columns (chunked serial lines)."""
    t, _ = sample(shape, ampc.float32, seed=16, low=-1.0, high=1.0)
    a, b = pair(t, cuda)
    n = shape[dim]
    assert_same(b.cumsum(dim), a.cumsum(dim), scale=2 * math.sqrt(n) + 2, rtol=1e-5, what="float32")
    i = a.mul(100).to(ampc.int64)
    assert_same(i.to(cuda).cumsum(dim), i.cumsum(dim), what="int64")
    h = a.half()
    assert_same(h.to(cuda).cumsum(dim), h.cumsum(dim), scale=2 * math.sqrt(n) + 2, what="float16")


def test_cumsum_dtype_argument_and_exact_int64(cuda):
    x = np.full(3000, 2**50 + 1, dtype=np.int64)  # the sums pass 2^53
    a, b = pair(ampc.from_numpy(x), cuda)
    assert_same(b.cumsum(0), a.cumsum(0))
    assert b.cumsum(0)[-1].item() == 3000 * (2**50 + 1)
    bools = ampc.from_numpy(np.array([True, True, False, True] * 300))
    assert_same(bools.to(cuda).cumsum(0), bools.cumsum(0))
    i = ampc.from_numpy(np.arange(40)).to(ampc.int32)
    assert_same(ampc.cumsum(i.to(cuda), 0, dtype=ampc.float32), ampc.cumsum(i, 0, dtype=ampc.float32))
    assert_same(ampc.cumsum(i.to(cuda), 0, dtype=ampc.uint8), ampc.cumsum(i, 0, dtype=ampc.uint8))  # wraps


# ------------------------------------------------------------------ gradients


GRAD_CASES = {
    "sum": lambda x: x.sum(),
    "sum_dims": lambda x: (x.sum((0, 2), keepdim=True) * 1.5).sum(),
    "mean_dim": lambda x: x.mean(1).pow(2).sum(),
    "var_dim": lambda x: x.var(1).sum(),
    "std_all": lambda x: x.std(),
    "norm2": lambda x: x.norm(),
    "norm1_dim": lambda x: ampc.vector_norm(x, 1, dim=0).sum(),
    "norm3": lambda x: ampc.vector_norm(x, 3),
    "logsumexp": lambda x: ampc.logsumexp(x, 2).sum(),
    "amax": lambda x: x.amax((0, 1)).sum(),
    "max_dim": lambda x: x.max(1).values.sum(),
    "prod_dim": lambda x: x.prod(2).sum(),
    "cumsum": lambda x: (x.cumsum(1) * x).sum(),
}


@pytest.mark.parametrize("case", sorted(GRAD_CASES))
@pytest.mark.parametrize("dtype", [ampc.float32, ampc.float64], ids=str)
def test_gradients_on_both_devices(cuda, case, dtype):
    x = np.random.default_rng(SEED).uniform(0.5, 2.0, size=(4, 33, 5))
    a = ampc.from_numpy(x).to(dtype).requires_grad_(True)
    b = ampc.from_numpy(x).to(dtype).to(cuda).requires_grad_(True)
    ya, yb = GRAD_CASES[case](a), GRAD_CASES[case](b)
    assert yb.grad_fn is not None
    ya.backward()
    yb.backward()
    assert b.grad is not None and b.grad.device.type == b.device.type and b.grad.dtype == dtype
    assert_same(yb.detach(), ya.detach(), scale=1000)
    assert_same(b.grad, a.grad, scale=10, rtol=1e-4 if dtype == ampc.float32 else None)


def test_gradients_half_sum_mean(cuda):
    x = np.random.default_rng(SEED).uniform(-1, 1, size=(64, 257)).astype(np.float32)
    for dt in (ampc.float16, ampc.bfloat16):
        a = ampc.from_numpy(x).to(dt).requires_grad_(True)
        b = ampc.from_numpy(x).to(dt).to(cuda).requires_grad_(True)
        for f in (lambda t: t.sum(0).float().sum(), lambda t: t.mean(1).float().pow(2).sum()):
            a.grad = None
            b.grad = None
            f(a).backward()
            f(b).backward()
            assert_same(b.grad, a.grad, scale=1)
