"""The CUDA GEMM (cuda/cuda_gemm.cu, cuda/cuda_blaslt.cu) against the CPU backend and float64
NumPy: every dtype; mm, bmm, matmul with broadcast batches, addmm / baddbmm with a bias row (the
cuBLASLt bias epilogue), a full C and other C layouts, beta 0 / 0.5; transposed, sliced,
stepped and broadcast operands; k = 0; GEMV shapes; odd and large sizes; the TF32 and
reduced-precision switches of ampc.backends; nn.Linear, conv2d, attention and einsum forward
and backward; autocast. On a real GPU the tests also read ampc._C._cuda_gemm_stats to check the
path each call took (the bias epilogue, the algorithm cache, no fall back to ampc's own kernel
for floating types).

Runs on the GPU when one is present (the `cuda` fixture); AMPC_TEST_CUDA_AS_CPU=1 runs the same
code on the CPU, a dry run of the test logic."""
import contextlib

import ml_dtypes
import numpy as np
import pytest

import ampc
import ampc.backends
import ampc.nn as nn
import ampc.nn.functional as F
from helpers import host_exact

NP_DTYPE = {ampc.float32: np.float32, ampc.float64: np.float64, ampc.float16: np.float16,
            ampc.bfloat16: ml_dtypes.bfloat16, ampc.int64: np.int64, ampc.int32: np.int32,
            ampc.uint8: np.uint8}
FLOATS = [ampc.float32, ampc.float64, ampc.float16, ampc.bfloat16]
INTS = [ampc.int64, ampc.int32, ampc.uint8]
HALVES = [ampc.float16, ampc.bfloat16]
# One rounding of the result, and the accumulation error per term (fp32, or fp64 for float64).
OUT_EPS = {ampc.float32: 2.0 ** -24, ampc.float64: 2.0 ** -53, ampc.float16: 2.0 ** -11, ampc.bfloat16: 2.0 ** -8}
ACC_EPS = {ampc.float32: 2.0 ** -23, ampc.float64: 2.0 ** -52, ampc.float16: 2.0 ** -23, ampc.bfloat16: 2.0 ** -23}


# ------------------------------------------------------------------ helpers

def rand(rng, shape, dtype, low=None):
    """A CPU ampc tensor of random values of `dtype` and the float64 (int64) array of its values.
    low given: uniform in [low, low + 1) (well-conditioned, no cancellation)."""
    if dtype in INTS:
        lo, hi = (0, 16) if dtype == ampc.uint8 else (-50, 50)
        x = rng.integers(lo, hi, size=shape).astype(NP_DTYPE[dtype])
        return ampc.from_numpy(x.copy()), x.astype(np.int64)
    x = rng.random(shape) + low if low is not None else rng.standard_normal(shape)
    x = x.astype(NP_DTYPE[dtype])
    return ampc.from_numpy(x.copy()), x.astype(np.float64)


def check(got, want, mag, k, dtype, reduced=True):
    """got (a tensor) equals want (the exact float64 result) within the rounding of the result
    plus fp32 (fp64) accumulation over k terms, measured against mag = |A| @ |B| (+ |beta C|).
    fp16/bf16 GEMMs may also round split-K partial sums to the output type (PyTorch's default
    allow_*_reduced_precision_reduction): one more rounding of the magnitude."""
    assert got.dtype == dtype
    g = host_exact(got)
    want = np.asarray(want, dtype=np.float64)
    assert g.shape == want.shape, (g.shape, want.shape)
    if dtype in INTS:
        np.testing.assert_array_equal(g, want)
        return
    mag = np.asarray(mag, dtype=np.float64)
    tol = ACC_EPS[dtype] * (k + 4) * mag + 2 * OUT_EPS[dtype] * np.abs(want) + 1e-300
    if dtype in HALVES and reduced:
        tol = tol + 4 * OUT_EPS[dtype] * mag
    bad = np.abs(g - want) > tol
    assert not bad.any(), f"{bad.sum()} of {bad.size} wrong, worst excess {np.max(np.abs(g - want) - tol)}"


def on_gpu(dev):
    return dev == "cuda"


@contextlib.contextmanager
def gemm_paths(dev):
    """Yields a dict filled, on exit, with the change of ampc._C._cuda_gemm_stats() over the
    block (all zero when the "cuda" device is the CPU of a dry run)."""
    before = ampc._C._cuda_gemm_stats()
    delta = {}
    yield delta
    after = ampc._C._cuda_gemm_stats()
    delta.update({key: after[key] - before[key] for key in after})
    if on_gpu(dev):
        assert delta["calls"] > 0


def no_fallback(delta, dev):
    """Floating GEMMs ran on cuBLASLt, never on ampc's own tiled kernel."""
    if on_gpu(dev):
        assert delta["generic_kernel"] == 0, delta


# ------------------------------------------------------------------ mm over dtypes, odd sizes

@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=str)
@pytest.mark.parametrize("n,k,m", [(17, 33, 65), (1, 33, 65), (17, 33, 1), (1, 7, 1), (64, 64, 64), (5, 300, 3)])
def test_mm_every_dtype(cuda, dtype, n, k, m):
    rng = np.random.default_rng(n * 1000 + k * 10 + m)
    a, a64 = rand(rng, (n, k), dtype)
    b, b64 = rand(rng, (k, m), dtype)
    with gemm_paths(cuda) as d:
        got = ampc.mm(a.to(cuda), b.to(cuda))
    assert got.device.type == ("cuda" if on_gpu(cuda) else "cpu")
    if dtype in INTS:
        want = host_exact(ampc.mm(a, b))  # wraps like the CPU (uint8 modulo 256)
        np.testing.assert_array_equal(host_exact(got), want)
        if on_gpu(cuda):
            assert d["generic_kernel"] == 1
    else:
        check(got, a64 @ b64, np.abs(a64) @ np.abs(b64), k, dtype)
        no_fallback(d, cuda)


@pytest.mark.parametrize("dtype", [ampc.int64, ampc.int32, ampc.uint8], ids=str)
def test_integer_gemm_wraps_like_cpu(cuda, dtype):
    rng = np.random.default_rng(3)
    hi = {ampc.int64: 2 ** 62, ampc.int32: 2 ** 30, ampc.uint8: 255}[dtype]
    x = rng.integers(0, hi, size=(9, 13), dtype=np.int64).astype(NP_DTYPE[dtype])
    y = rng.integers(0, hi, size=(13, 5), dtype=np.int64).astype(NP_DTYPE[dtype])
    c = rng.integers(0, hi, size=(5,), dtype=np.int64).astype(NP_DTYPE[dtype])
    a, b, cc = ampc.from_numpy(x), ampc.from_numpy(y), ampc.from_numpy(c)
    for beta, alpha in [(1, 1), (2, -3), (0.5, 1.5), (0, 2)]:
        want = ampc.addmm(cc, a, b, beta=beta, alpha=alpha)
        got = ampc.addmm(cc.to(cuda), a.to(cuda), b.to(cuda), beta=beta, alpha=alpha)
        np.testing.assert_array_equal(host_exact(got), host_exact(want))


def test_bool_not_implemented(cuda):
    t = ampc.ones(2, 2, dtype=ampc.bool).to(cuda)
    with pytest.raises(NotImplementedError, match="not implemented for 'bool'"):
        ampc.mm(t, t)


# ------------------------------------------------------------------ layouts

def layouts(rng, dtype, rows, cols, dev):
    """(name, tensor on dev, float64 values) of a rows x cols operand in several layouts. The
    views are taken on `dev` (moving a view copies it into a contiguous tensor)."""
    c, c64 = rand(rng, (rows, cols), dtype)
    base, base64 = rand(rng, (rows + 3, cols * 2 + 5), dtype)
    t, t64 = rand(rng, (cols, rows), dtype)
    step, step64 = rand(rng, (rows * 2, cols * 3), dtype)
    row, row64 = rand(rng, (1, cols), dtype)
    return [
        ("contiguous", c.to(dev), c64),
        ("transposed", t.to(dev).t(), t64.T),                              # unit row stride
        # row stride > cols, at an odd offset
        ("sliced", base.to(dev)[2:2 + rows, 3:3 + cols], base64[2:2 + rows, 3:3 + cols]),
        ("stepped", step.to(dev)[::2, ::3], step64[::2, ::3]),             # no unit stride: packed
        # row stride 0: packed
        ("broadcast_rows", row.to(dev).expand(rows, cols), np.broadcast_to(row64, (rows, cols))),
    ]


@pytest.mark.parametrize("dtype", FLOATS + [ampc.int32], ids=str)
def test_operand_layouts(cuda, dtype):
    rng = np.random.default_rng(11)
    n, k, m = 13, 21, 10
    for name_a, a, a64 in layouts(rng, dtype, n, k, cuda):
        for name_b, b, b64 in layouts(rng, dtype, k, m, cuda):
            with gemm_paths(cuda) as d:
                got = ampc.mm(a, b)
            try:
                check(got, a64 @ b64, np.abs(a64) @ np.abs(b64), k, dtype)
            except AssertionError as e:
                raise AssertionError(f"A {name_a}, B {name_b}: {e}") from None
            if dtype in FLOATS:
                no_fallback(d, cuda)
                if on_gpu(cuda):
                    # operands without a unit stride are packed; more packs than that mean cuBLASLt had
                    # no algorithm for an operand's alignment (correct, but worth a look)
                    packs = (name_a in ("stepped", "broadcast_rows")) + (name_b in ("stepped", "broadcast_rows"))
                    assert d["packed"] >= packs, (name_a, name_b, d)
                    if name_a != "sliced" and name_b != "sliced":
                        assert d["packed"] == packs, (name_a, name_b, d)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_bmm_and_broadcast_batches(cuda, dtype):
    rng = np.random.default_rng(12)
    a, a64 = rand(rng, (4, 9, 11), dtype)
    b, b64 = rand(rng, (4, 11, 6), dtype)
    ref = lambda x, y: (x @ y, np.abs(x) @ np.abs(y))  # noqa: E731
    check(ampc.bmm(a.to(cuda), b.to(cuda)), *ref(a64, b64), 11, dtype)
    # transposed matrices inside a batch
    at, at64 = rand(rng, (4, 11, 9), dtype)
    check(ampc.bmm(at.to(cuda).transpose(1, 2), b.to(cuda)), *ref(at64.transpose(0, 2, 1), b64), 11, dtype)
    # a batch-broadcast operand: batch stride 0, one strided-batched call
    one, one64 = rand(rng, (1, 9, 11), dtype)
    with gemm_paths(cuda) as d:
        got = ampc.bmm(one.to(cuda).expand(4, 9, 11), b.to(cuda))
    check(got, *ref(np.broadcast_to(one64, (4, 9, 11)), b64), 11, dtype)
    no_fallback(d, cuda)
    if on_gpu(cuda):
        assert d["packed"] == 0 and d["cublaslt_calls"] == 1
    # matmul broadcasting two batch dims: (2, 1, 5, 7) @ (3, 7, 4) -> (2, 3, 5, 4)
    x, x64 = rand(rng, (2, 1, 5, 7), dtype)
    y, y64 = rand(rng, (3, 7, 4), dtype)
    with gemm_paths(cuda) as d:
        got = ampc.matmul(x.to(cuda), y.to(cuda))
    assert tuple(got.shape) == (2, 3, 5, 4)
    check(got, *ref(x64, y64), 7, dtype)
    no_fallback(d, cuda)
    # batched @ matrix (folded into one mm), matrix @ batched, vector cases
    check(ampc.matmul(x.to(cuda), y[0].to(cuda)), *ref(x64, y64[0]), 7, dtype)
    check(ampc.matmul(y.to(cuda)[0].t(), x.to(cuda).transpose(-1, -2)),
          *ref(y64[0].T, x64.transpose(0, 1, 3, 2)), 7, dtype)
    v, v64 = rand(rng, (7,), dtype)
    check(ampc.matmul(x.to(cuda), v.to(cuda)), *ref(x64, v64), 7, dtype)
    check(ampc.matmul(v.to(cuda), y.to(cuda)), *ref(v64, y64), 7, dtype)
    # a batch that is not contiguous in the output's order: (3, 2, 5, 7) permuted from (2, 3, ...)
    p, p64 = rand(rng, (3, 2, 5, 7), dtype)
    check(ampc.matmul(p.to(cuda).transpose(0, 1), y.to(cuda)), *ref(p64.transpose(1, 0, 2, 3), y64), 7, dtype)


@pytest.mark.parametrize("dtype", FLOATS + [ampc.int64], ids=str)
def test_gemv_and_dot_shapes(cuda, dtype):
    rng = np.random.default_rng(13)
    m_, m64 = rand(rng, (40, 33), dtype)
    v, v64 = rand(rng, (33,), dtype)
    w, w64 = rand(rng, (80,), dtype)
    check(ampc.mv(m_.to(cuda), v.to(cuda)), m64 @ v64, np.abs(m64) @ np.abs(v64), 33, dtype)
    check(ampc.mv(m_.to(cuda).t(), w[:40].to(cuda)), m64.T @ w64[:40], np.abs(m64.T) @ np.abs(w64[:40]), 40, dtype)
    ws = w.to(cuda)[::2][:33]  # stride 2
    check(ampc.dot(v.to(cuda), ws), v64 @ w64[::2][:33], np.abs(v64) @ np.abs(w64[::2][:33]), 33, dtype)
    check(ampc.matmul(v.to(cuda), m_.to(cuda).t()), v64 @ m64.T, np.abs(v64) @ np.abs(m64.T), 33, dtype)


# ------------------------------------------------------------------ addmm / baddbmm: C and bias

@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_addmm_bias_epilogue(cuda, dtype):
    """nn.Linear's addmm: bias (m,) broadcast over the rows, beta 1: one cuBLASLt call with
    CUBLASLT_EPILOGUE_BIAS; the algorithm cache answers the repeat."""
    rng = np.random.default_rng(14)
    n, k, m = 37, 70, 19
    c, c64 = rand(rng, (m,), dtype)
    a, a64 = rand(rng, (n, k), dtype)
    w, w64 = rand(rng, (m, k), dtype)  # weight (out, in), used transposed as nn.Linear does
    args = (c.to(cuda), a.to(cuda), w.to(cuda).t())
    for alpha in (1.0, 0.5):
        with gemm_paths(cuda) as d:
            got = ampc.addmm(*args, alpha=alpha)
        want = c64 + alpha * (a64 @ w64.T)
        check(got, want, np.abs(c64) + abs(alpha) * (np.abs(a64) @ np.abs(w64.T)), k, dtype)
        no_fallback(d, cuda)
        if on_gpu(cuda) and dtype != ampc.float64:  # cuBLASLt may lack the epilogue for fp64
            assert d["bias_epilogue"] == 1 and d["c_copied"] == 0, d
    with gemm_paths(cuda) as d:
        again = ampc.addmm(*args, alpha=0.5)
    np.testing.assert_array_equal(host_exact(again), host_exact(got))
    if on_gpu(cuda):
        assert d["heuristic"] == 0 and d["cache_hits"] >= 1, d
    # F.linear takes the same path, also for 3-D input (folded to 2-D)
    x, x64 = rand(rng, (2, 3, k), dtype)
    with gemm_paths(cuda) as d:
        y = F.linear(x.to(cuda), w.to(cuda), c.to(cuda))
    check(y, x64 @ w64.T + c64, np.abs(x64) @ np.abs(w64.T) + np.abs(c64), k, dtype)
    if on_gpu(cuda) and dtype != ampc.float64:
        assert d["bias_epilogue"] == 1, d


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_addmm_c_input(cuda, dtype):
    rng = np.random.default_rng(15)
    n, k, m = 23, 41, 17
    a, a64 = rand(rng, (n, k), dtype)
    b, b64 = rand(rng, (k, m), dtype)
    full, full64 = rand(rng, (n, m), dtype)
    ct, ct64 = rand(rng, (m, n), dtype)
    col, col64 = rand(rng, (n, 1), dtype)
    row, row64 = rand(rng, (m,), dtype)
    cases = [("full", full.to(cuda), full64, "c_input"), ("transposed", ct.to(cuda).t(), ct64.T, "c_copied"),
             ("column", col.to(cuda), col64, "c_copied"), ("row", row.to(cuda), row64, None)]
    prod, mag = a64 @ b64, np.abs(a64) @ np.abs(b64)
    for name, c, c64, path in cases:
        for beta, alpha in [(0.5, 1.0), (1.0, 1.0), (0.0, 1.0), (2.0, -0.75)]:
            with gemm_paths(cuda) as d:
                got = ampc.addmm(c, a.to(cuda), b.to(cuda), beta=beta, alpha=alpha)
            want = beta * np.broadcast_to(c64, (n, m)) + alpha * prod
            try:
                check(got, want, abs(beta) * np.abs(np.broadcast_to(c64, (n, m))) + abs(alpha) * mag, k, dtype)
            except AssertionError as e:
                raise AssertionError(f"C {name}, beta {beta}, alpha {alpha}: {e}") from None
            no_fallback(d, cuda)
            if on_gpu(cuda) and beta == 0.5 and path:
                assert d[path] == 1, (name, d)
    # beta 0 ignores C, NaN and inf included
    nan = ampc.full((n, m), float("nan"), dtype=dtype)
    got = ampc.addmm(nan.to(cuda), a.to(cuda), b.to(cuda), beta=0)
    check(got, prod, mag, k, dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_baddbmm(cuda, dtype):
    rng = np.random.default_rng(16)
    bsz, n, k, m = 3, 9, 14, 6
    a, a64 = rand(rng, (bsz, n, k), dtype)
    b, b64 = rand(rng, (bsz, k, m), dtype)
    prod, mag = a64 @ b64, np.abs(a64) @ np.abs(b64)
    for shape in [(bsz, n, m), (m,), (bsz, 1, m), (1, n, m), (n, 1)]:
        c, c64 = rand(rng, shape, dtype)
        cb = np.broadcast_to(c64, (bsz, n, m))
        for beta, alpha in [(1.0, 1.0), (0.5, 2.0)]:
            got = ampc.baddbmm(c.to(cuda), a.to(cuda), b.to(cuda), beta=beta, alpha=alpha)
            check(got, beta * cb + alpha * prod, abs(beta) * np.abs(cb) + abs(alpha) * mag, k, dtype)


@pytest.mark.parametrize("dtype", FLOATS + [ampc.int64], ids=str)
def test_k_zero_and_empty(cuda, dtype):
    a = ampc.ones(3, 0, dtype=dtype).to(cuda)
    b = ampc.ones(0, 4, dtype=dtype).to(cuda)
    np.testing.assert_array_equal(host_exact(ampc.mm(a, b)), np.zeros((3, 4)))
    c = ampc.full((4,), 3, dtype=dtype).to(cuda)
    np.testing.assert_array_equal(host_exact(ampc.addmm(c, a, b, beta=2)), np.full((3, 4), 6))
    np.testing.assert_array_equal(host_exact(ampc.addmm(c, a, b, beta=0)), np.zeros((3, 4)))
    if dtype in FLOATS:
        np.testing.assert_array_equal(host_exact(ampc.addmm(c, a, b, beta=0.5, alpha=float("inf"))),
                                      np.full((3, 4), 1.5))
    assert tuple(ampc.mm(ampc.ones(0, 5, dtype=dtype).to(cuda), ampc.ones(5, 2, dtype=dtype).to(cuda)).shape) == (0, 2)
    assert tuple(ampc.bmm(ampc.ones(0, 2, 3, dtype=dtype).to(cuda),
                          ampc.ones(0, 3, 2, dtype=dtype).to(cuda)).shape) == (0, 2, 2)
    assert host_exact(ampc.dot(ampc.ones(0, dtype=dtype).to(cuda), ampc.ones(0, dtype=dtype).to(cuda))) == 0


# ------------------------------------------------------------------ large

def test_large_fp32_square(cuda):
    rng = np.random.default_rng(17)
    a, a64 = rand(rng, (1024, 1024), ampc.float32)
    b, b64 = rand(rng, (1024, 1024), ampc.float32)
    with gemm_paths(cuda) as d:
        got = ampc.mm(a.to(cuda), b.to(cuda))
    check(got, a64 @ b64, np.abs(a64) @ np.abs(b64), 1024, ampc.float32)
    no_fallback(d, cuda)


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_large_half(cuda, dtype):
    """4096 x 4096 x 1024 in fp16 / bf16, fp32 accumulation, against float64 (2^24 outputs)."""
    rng = np.random.default_rng(18)
    a, a64 = rand(rng, (4096, 1024), dtype)
    b, b64 = rand(rng, (1024, 4096), dtype)
    with gemm_paths(cuda) as d:
        got = ampc.mm(a.to(cuda), b.to(cuda))
    check(got, a64 @ b64, np.abs(a64) @ np.abs(b64), 1024, dtype)
    no_fallback(d, cuda)
    # the same with reduced-precision split-K reductions disallowed
    flag = f"allow_{'fp16' if dtype == ampc.float16 else 'bf16'}_reduced_precision_reduction"
    previous = getattr(ampc.backends.cuda.matmul, flag)
    setattr(ampc.backends.cuda.matmul, flag, False)
    try:
        got = ampc.mm(a[:256].to(cuda), b.to(cuda))
    finally:
        setattr(ampc.backends.cuda.matmul, flag, previous)
    check(got, a64[:256] @ b64, np.abs(a64[:256]) @ np.abs(b64), 1024, dtype, reduced=False)


# ------------------------------------------------------------------ TF32 switch

def test_tf32_switch(cuda):
    rng = np.random.default_rng(19)
    # positive entries: no cancellation, so elementwise relative error is meaningful
    a, _ = rand(rng, (512, 1024), ampc.float32, low=0.5)
    b, _ = rand(rng, (1024, 256), ampc.float32, low=0.5)
    cpu = host_exact(ampc.mm(a, b))
    matmul = ampc.backends.cuda.matmul
    assert matmul.allow_tf32 is False  # PyTorch's default
    with gemm_paths(cuda) as d:
        off = host_exact(ampc.mm(a.to(cuda), b.to(cuda)))
    err_off = np.max(np.abs(off - cpu) / np.abs(cpu))
    assert err_off <= 1e-5, err_off
    if on_gpu(cuda):
        assert d["tf32"] == 0
    matmul.allow_tf32 = True
    try:
        with gemm_paths(cuda) as d:
            on = host_exact(ampc.mm(a.to(cuda), b.to(cuda)))
    finally:
        matmul.allow_tf32 = False
    err_on = np.max(np.abs(on - cpu) / np.abs(cpu))
    assert err_on <= 2e-3, err_on  # TF32 keeps 10 mantissa bits of each input
    if on_gpu(cuda):
        assert d["tf32"] == 1
        assert err_on > 2 * err_off, (err_on, err_off)  # the flag reached cuBLASLt


def test_backends_flags_api():
    matmul = ampc.backends.cuda.matmul
    assert matmul.allow_tf32 is False
    assert matmul.allow_fp16_reduced_precision_reduction is True
    assert matmul.allow_bf16_reduced_precision_reduction is True
    assert ampc.backends.cudnn.allow_tf32 is True
    assert ampc.backends.cudnn.is_available() is False
    for name in ("allow_tf32", "allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"):
        previous = getattr(matmul, name)
        setattr(matmul, name, not previous)
        assert getattr(matmul, name) is (not previous)
        setattr(matmul, name, previous)
        assert getattr(matmul, name) is previous
    with pytest.raises(AttributeError, match="Unknown attribute"):
        matmul.allow_something = True
    with pytest.raises(AttributeError):
        matmul.nonexistent
    ampc.backends.cudnn.allow_tf32 = False
    assert ampc.backends.cudnn.allow_tf32 is False and ampc._C._get_cudnn_allow_tf32() is False
    ampc.backends.cudnn.allow_tf32 = True
    assert ampc.backends.get_float32_matmul_precision() == "highest"
    ampc.backends.set_float32_matmul_precision("high")
    try:
        assert matmul.allow_tf32 is True and ampc.backends.get_float32_matmul_precision() == "high"
    finally:
        ampc.backends.set_float32_matmul_precision("highest")
    assert matmul.allow_tf32 is False
    with pytest.raises(RuntimeError):
        ampc.backends.set_float32_matmul_precision("low")
    assert ampc.backends.cuda.is_built() in (True, False)
    assert set(ampc._C._cuda_gemm_stats()) >= {"calls", "bias_epilogue", "cache_hits", "generic_kernel"}


# ------------------------------------------------------------------ nn layers, forward + backward

def grads_on(device, build, inputs, seed):
    """Output and gradients of every input and parameter of build() on `device`, for the same
    random upstream gradient."""
    ampc.manual_seed(seed)
    module = build().to(device)
    xs = [x.detach().to(device).requires_grad_(True) for x in inputs]
    out = module(*xs)
    g = ampc.from_numpy(np.random.default_rng(seed).standard_normal(tuple(out.shape)).astype(np.float32))
    out.backward(g.to(device).to(out.dtype))
    return [out] + [x.grad for x in xs] + [p.grad for p in module.parameters()]


def compare_modules(cuda, build, inputs, rtol, atol, seed=0):
    want = grads_on("cpu", build, inputs, seed)
    with gemm_paths(cuda) as d:
        got = grads_on(cuda, build, inputs, seed)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g is not None and w is not None, i
        assert g.device.type == ("cuda" if on_gpu(cuda) else "cpu")
        np.testing.assert_allclose(host_exact(g), host_exact(w), rtol=rtol, atol=atol, err_msg=f"tensor {i}")
    no_fallback(d, cuda)


@pytest.mark.parametrize("dtype", [ampc.float32, ampc.float64], ids=str)
def test_linear_forward_backward(cuda, dtype):
    rng = np.random.default_rng(20)
    tol = 1e-4 if dtype == ampc.float32 else 1e-10
    x2 = ampc.from_numpy(rng.standard_normal((8, 33))).to(dtype)
    x3 = ampc.from_numpy(rng.standard_normal((2, 5, 33))).to(dtype)
    for x in (x2, x3):
        for bias in (True, False):
            compare_modules(cuda, lambda: nn.Linear(33, 17, bias=bias).to(dtype), [x], tol, tol)


@pytest.mark.parametrize("kwargs", [dict(), dict(stride=2, padding=1), dict(padding=2, dilation=2),
                                    dict(groups=2, padding=1), dict(kernel_size=1)],
                         ids=["plain", "stride_pad", "dilation", "groups", "pointwise"])
def test_conv2d_forward_backward(cuda, kwargs):
    """conv2d = im2col + batched cuBLASLt GEMM (no cuDNN); a column bias (C copied into D)."""
    rng = np.random.default_rng(21)
    kwargs = dict(kwargs)
    ks = kwargs.pop("kernel_size", 3)
    x = ampc.from_numpy(rng.standard_normal((3, 4, 9, 11)).astype(np.float32))
    for bias in (True, False):
        compare_modules(cuda, lambda: nn.Conv2d(4, 6, ks, bias=bias, **kwargs), [x], 1e-4, 1e-4)


def test_conv1d_forward_backward(cuda):
    rng = np.random.default_rng(22)
    x = ampc.from_numpy(rng.standard_normal((2, 3, 17)).astype(np.float32))
    compare_modules(cuda, lambda: nn.Conv1d(3, 5, 4, padding=1), [x], 1e-4, 1e-4)


def test_attention_and_einsum(cuda):
    rng = np.random.default_rng(23)
    q, k, v = (ampc.from_numpy(rng.standard_normal((2, 3, 7, 8)).astype(np.float32)) for _ in range(3))
    want = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    with gemm_paths(cuda) as d:
        got = F.scaled_dot_product_attention(q.to(cuda), k.to(cuda), v.to(cuda), is_causal=True)
    np.testing.assert_allclose(host_exact(got), host_exact(want), rtol=1e-4, atol=1e-5)
    no_fallback(d, cuda)
    for eq, shapes in [("bhqd,bhkd->bhqk", [(2, 3, 5, 4), (2, 3, 6, 4)]), ("ij,kj->ik", [(3, 4), (5, 4)]),
                       ("bij,jk->bik", [(2, 3, 4), (4, 5)]), ("i,i->", [(6,), (6,)])]:
        ops = [ampc.from_numpy(rng.standard_normal(s).astype(np.float32)) for s in shapes]
        np.testing.assert_allclose(host_exact(ampc.einsum(eq, *[o.to(cuda) for o in ops])),
                                   host_exact(ampc.einsum(eq, *ops)), rtol=1e-5, atol=1e-5)


def test_mm_backward_transposed_grads(cuda):
    """mm's backward forms dA = dC @ B^T and dB = A^T @ dC from transposed views (no copies)."""
    rng = np.random.default_rng(24)
    a64, b64, g64 = rng.standard_normal((6, 9)), rng.standard_normal((9, 4)), rng.standard_normal((6, 4))
    a = ampc.from_numpy(a64).to(cuda).requires_grad_(True)
    b = ampc.from_numpy(b64.T.copy()).to(cuda).t().detach().requires_grad_(True)  # a transposed leaf
    (a @ b).backward(ampc.from_numpy(g64).to(cuda))
    np.testing.assert_allclose(host_exact(a.grad), g64 @ b64.T, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(host_exact(b.grad), a64.T @ g64, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------ autocast

def test_autocast_gives_fp16(cuda):
    rng = np.random.default_rng(25)
    a, a64 = rand(rng, (16, 40), ampc.float32)
    b, b64 = rand(rng, (40, 24), ampc.float32)
    c, c64 = rand(rng, (24,), ampc.float32)
    w, w64 = rand(rng, (24, 40), ampc.float32)
    dev_type = "cuda" if on_gpu(cuda) else "cpu"
    with ampc.autocast(device_type=dev_type, dtype=ampc.float16):
        mm = ampc.mm(a.to(cuda), b.to(cuda))
        add = ampc.addmm(c.to(cuda), a.to(cuda), b.to(cuda))
        lin = F.linear(a.to(cuda), w.to(cuda), c.to(cuda))
        bmm = ampc.bmm(a.to(cuda).unsqueeze(0), b.to(cuda).unsqueeze(0))
    for t in (mm, add, lin, bmm):
        assert t.dtype == ampc.float16
    # the same numbers as an fp16 GEMM of the fp16-rounded inputs (fp32 accumulation)
    h = lambda x: x.astype(np.float16).astype(np.float64)  # noqa: E731
    check(mm, h(a64) @ h(b64), np.abs(h(a64)) @ np.abs(h(b64)), 40, ampc.float16)
    check(add, h(c64) + h(a64) @ h(b64), np.abs(h(c64)) + np.abs(h(a64)) @ np.abs(h(b64)), 40, ampc.float16)
    check(lin, h(a64) @ h(w64).T + h(c64), np.abs(h(a64)) @ np.abs(h(w64).T) + np.abs(h(c64)), 40, ampc.float16)
    check(bmm, (h(a64) @ h(b64))[None], (np.abs(h(a64)) @ np.abs(h(b64)))[None], 40, ampc.float16)
    # and a Linear layer trained under autocast: fp16 activations, fp32 parameter grads
    layer = nn.Linear(40, 24).to(cuda)
    with ampc.autocast(device_type=dev_type, dtype=ampc.float16):
        y = layer(a.to(cuda))
    assert y.dtype == ampc.float16
    y.float().sum().backward()
    assert layer.weight.grad.dtype == ampc.float32 and layer.bias.grad.dtype == ampc.float32


# ------------------------------------------------------------------ errors

def test_errors_match_cpu(cuda):
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"):
        ampc.mm(ampc.ones(2, 3).to(cuda), ampc.ones(4, 5).to(cuda))
    with pytest.raises(RuntimeError, match="same dtype"):
        ampc.mm(ampc.ones(2, 3).to(cuda), ampc.ones(3, 5).half().to(cuda))
    if on_gpu(cuda):
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            ampc.mm(ampc.ones(2, 3).to(cuda), ampc.ones(3, 5))


def test_workspace_release(cuda):
    """The cuBLASLt workspace (32 MiB on Hopper) is kept per stream; clearing it returns
    ampc.cuda.memory_allocated to what the tensors hold."""
    a = ampc.ones(64, 64).to(cuda)
    ampc._C._cuda_clear_cublas_workspaces()
    before = ampc.cuda.memory_allocated()
    c = ampc.mm(a, a)
    del c
    ampc._C._cuda_clear_cublas_workspaces()
    assert ampc.cuda.memory_allocated() == before
    np.testing.assert_array_equal(host_exact(ampc.mm(a, a)), np.full((64, 64), 64.0))
