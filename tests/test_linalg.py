"""Matrix ops (mm, bmm, matmul and @, addmm, baddbmm, dot, mv, einsum) against float64 NumPy and
against PyTorch's CPU results, on every CPU GEMM backend this build has (CBLAS, ampc's blocked
fallback, the AMX bf16 kernel): all floating dtypes and integers, transposed / sliced /
broadcast operands, 1-D operands, zero sizes, autocast, and PyTorch's error messages."""
import re

import ml_dtypes
import numpy as np
import pytest
import torch

import ampc
import ampc.amp

NP_DTYPE = {ampc.float32: np.float32, ampc.float64: np.float64, ampc.float16: np.float16,
            ampc.bfloat16: ml_dtypes.bfloat16, ampc.int64: np.int64, ampc.int32: np.int32}
TORCH_DTYPE = {ampc.float32: torch.float32, ampc.float64: torch.float64, ampc.float16: torch.float16,
               ampc.bfloat16: torch.bfloat16, ampc.int64: torch.int64, ampc.int32: torch.int32}
FLOATS = [ampc.float32, ampc.float64, ampc.float16, ampc.bfloat16]
HALVES = [ampc.float16, ampc.bfloat16]
# The relative size of one rounding of the result, and of the fp32 (fp64) accumulation per term.
OUT_EPS = {ampc.float32: 0.0, ampc.float64: 0.0, ampc.float16: 2.0 ** -10, ampc.bfloat16: 2.0 ** -7}
ACC_EPS = {ampc.float32: 1e-6, ampc.float64: 1e-15, ampc.float16: 1e-6, ampc.bfloat16: 1e-6}

_features = ampc._C._gemm_features()
BACKENDS = ["auto", "fallback"] + (["blas"] if _features["blas"] else [])


@pytest.fixture(params=BACKENDS)
def backend(request):
    previous = ampc._C._gemm_backend(request.param)
    yield request.param
    ampc._C._gemm_backend(previous)


def rand(rng, shape, dtype=ampc.float32):
    """An ampc tensor of random values and the float64 NumPy array of exactly its values."""
    if dtype in (ampc.int64, ampc.int32):
        x = rng.integers(-50, 50, size=shape).astype(NP_DTYPE[dtype])
        return ampc.from_numpy(x.copy()), x.astype(np.int64)
    x = rng.standard_normal(shape).astype(NP_DTYPE[dtype])
    return ampc.from_numpy(x.copy()), x.astype(np.float64)


def as_np(t):
    if t.dtype in HALVES:
        t = t.float()
    return t.numpy().astype(np.float64) if t.dtype != ampc.int64 and t.dtype != ampc.int32 else t.numpy()


def round_to(x, dtype):
    return np.asarray(x).astype(NP_DTYPE[dtype]).astype(np.float64)


def check(got, want, mag, k, dtype):
    """got (ampc) == want (float64 exact product sum) within one rounding of the result plus the
    fp32/fp64 accumulation error, measured against mag = |A| @ |B| (+ |beta * C|)."""
    assert got.dtype == dtype
    g = as_np(got)
    assert g.shape == np.shape(want)
    want_r = round_to(want, dtype)
    tol = ACC_EPS[dtype] * (k + 4) * np.asarray(mag) + OUT_EPS[dtype] * np.abs(want_r) + 1e-30
    bad = np.abs(g - want_r) > tol
    assert not bad.any(), f"{bad.sum()} of {bad.size} wrong, worst {np.max(np.abs(g - want_r) - tol)}"


def check_torch(got, torch_result, dtype):
    """Same values as PyTorch's CPU op, within one rounding of the result's dtype."""
    t = torch_result.float().numpy().astype(np.float64) if dtype in HALVES else torch_result.numpy().astype(np.float64)
    g = as_np(got)
    assert g.shape == t.shape
    rel = {ampc.float32: 1e-4, ampc.float64: 1e-10, ampc.float16: 2.0 ** -9, ampc.bfloat16: 2.0 ** -6}[dtype]
    np.testing.assert_allclose(g, t, rtol=rel, atol=rel)


def torch_of(x64, dtype):
    return torch.from_numpy(x64.astype(NP_DTYPE[dtype]).astype(np.float32)).to(TORCH_DTYPE[dtype]) \
        if dtype in HALVES else torch.from_numpy(x64.astype(NP_DTYPE[dtype]))


# ------------------------------------------------------------------ mm in every layout and dtype

SIZES = [(1, 1, 1), (7, 5, 3), (13, 33, 65), (64, 40, 257), (2, 3, 1)]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("n,m,k", SIZES)
def test_mm_layouts(backend, dtype, n, m, k):
    rng = np.random.default_rng(n * 1000 + m * 10 + k)
    a, a64 = rand(rng, (n, k), dtype)
    b, b64 = rand(rng, (k, m), dtype)
    at, at64 = rand(rng, (k, n), dtype)   # a transposed operand: strides (1, n)
    bt, bt64 = rand(rng, (m, k), dtype)
    big, big64 = rand(rng, (2 * n, 2 * k + 1), dtype)  # every other row and column
    for x, x64 in ((a, a64), (at.t(), at64.T), (big[::2, 1::2], big64[::2, 1::2])):
        for y, y64 in ((b, b64), (bt.t(), bt64.T)):
            check(ampc.mm(x, y), x64 @ y64, np.abs(x64) @ np.abs(y64), k, dtype)
    check_torch(ampc.mm(a, bt.t()), torch.mm(torch_of(a64, dtype), torch_of(bt64, dtype).t()), dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_mm_large_blocks(backend, dtype):
    # several k blocks, tile edges, OpenMP row blocks; against torch too
    rng = np.random.default_rng(7)
    a, a64 = rand(rng, (150, 300), dtype)
    b, b64 = rand(rng, (300, 270), dtype)
    c = ampc.mm(a, b)
    check(c, a64 @ b64, np.abs(a64) @ np.abs(b64), 300, dtype)
    check_torch(c, torch.mm(torch_of(a64, dtype), torch_of(b64, dtype)), dtype)


def test_half_accumulates_in_fp32_and_rounds_once():
    # 1 + u/2 + u/2 (u: the dtype's ulp at 1): accumulating in the dtype loses both halves (ties
    # to even); fp32 accumulation keeps them and rounds 1 + u once, exactly
    for dtype, u in ((ampc.bfloat16, 2.0 ** -7), (ampc.float16, 2.0 ** -10)):
        a = ampc.tensor([[1.0, u / 2, u / 2]]).to(dtype)
        b = ampc.ones(3, 1).to(dtype)
        for name in BACKENDS:
            prev = ampc._C._gemm_backend(name)
            assert ampc.mm(a, b).float().item() == 1.0 + u
            ampc._C._gemm_backend(prev)


# ------------------------------------------------------------------ matmul: NumPy's rules

MATMUL_SHAPES = [
    ((5,), (5,)), ((4, 5), (5,)), ((5,), (5, 3)), ((4, 5), (5, 3)),
    ((2, 4, 5), (5,)), ((5,), (2, 5, 3)), ((2, 4, 5), (5, 3)), ((4, 5), (2, 5, 3)),
    ((2, 1, 4, 5), (3, 5, 6)), ((1, 4, 5), (2, 5, 3)), ((2, 3, 4, 5), (2, 3, 5, 6)), ((3, 1, 2, 4, 5), (1, 2, 5, 1)),
]


@pytest.mark.parametrize("dtype", [ampc.float32, ampc.bfloat16], ids=str)
@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul_broadcast(backend, dtype, sa, sb):
    rng = np.random.default_rng(len(sa) * 10 + len(sb))
    a, a64 = rand(rng, sa, dtype)
    b, b64 = rand(rng, sb, dtype)
    want = np.matmul(a64, b64)
    got = ampc.matmul(a, b)
    assert tuple(got.shape) == want.shape == tuple(torch.matmul(torch_of(a64, dtype), torch_of(b64, dtype)).shape)
    check(got, want, np.matmul(np.abs(a64), np.abs(b64)), sa[-1], dtype)
    check(a.matmul(b), want, np.matmul(np.abs(a64), np.abs(b64)), sa[-1], dtype)
    check_torch(got, torch.matmul(torch_of(a64, dtype), torch_of(b64, dtype)), dtype)


def test_matmul_noncontiguous_batches():
    rng = np.random.default_rng(3)
    x, x64 = rand(rng, (3, 6, 4), ampc.float64)   # used as (3, 4, 6): cannot be folded into rows
    v, v64 = rand(rng, (6,), ampc.float64)
    w, w64 = rand(rng, (6, 2), ampc.float64)
    xt, xt64 = x.transpose(1, 2), x64.transpose(0, 2, 1)
    check(ampc.matmul(xt, v), xt64 @ v64, np.abs(xt64) @ np.abs(v64), 6, ampc.float64)
    check(ampc.matmul(xt, w), xt64 @ w64, np.abs(xt64) @ np.abs(w64), 6, ampc.float64)
    e = x[:, ::2]  # (3, 3, 4) with a row step
    check(ampc.matmul(e, x[0].t()), x64[:, ::2] @ x64[0].T, np.abs(x64[:, ::2]) @ np.abs(x64[0].T), 4, ampc.float64)
    ex = ampc.from_numpy(x64[0].copy()).expand(5, 6, 4)  # a batch broadcast with stride 0
    check(ampc.bmm(ex, ampc.from_numpy(x64[1].T.copy()).expand(5, 4, 6)),
          np.broadcast_to(x64[0] @ x64[1].T, (5, 6, 6)), np.broadcast_to(np.abs(x64[0]) @ np.abs(x64[1].T), (5, 6, 6)),
          4, ampc.float64)


def test_matmul_operator():
    rng = np.random.default_rng(4)
    a, a64 = rand(rng, (3, 4))
    b, b64 = rand(rng, (4, 2))
    check(a @ b, a64 @ b64, np.abs(a64) @ np.abs(b64), 4, ampc.float32)
    c = a.clone()
    c @= b  # no in-place matmul in PyTorch either: rebinds to a new tensor
    check(c, a64 @ b64, np.abs(a64) @ np.abs(b64), 4, ampc.float32)
    with pytest.raises(TypeError):
        a @ "x"


def test_results_are_fresh_tensors():
    a = ampc.ones(2, 3, 4)
    c = ampc.matmul(a, ampc.ones(4))  # folded into one mv, then reshaped
    assert tuple(c.shape) == (2, 3) and c.is_contiguous()
    assert ampc.dot(ampc.ones(3), ampc.ones(3)).dim() == 0


# ------------------------------------------------------------------ bmm, addmm, baddbmm, dot, mv

@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_bmm(backend, dtype):
    rng = np.random.default_rng(5)
    a, a64 = rand(rng, (4, 9, 14), dtype)
    b, b64 = rand(rng, (4, 6, 14), dtype)
    bt, bt64 = b.transpose(1, 2), b64.transpose(0, 2, 1)
    for got in (ampc.bmm(a, bt), a.bmm(bt)):
        check(got, a64 @ bt64, np.abs(a64) @ np.abs(bt64), 14, dtype)
    check_torch(ampc.bmm(a, bt), torch.bmm(torch_of(a64, dtype), torch_of(bt64, dtype)), dtype)


ADDMM_BIAS = [(6,), (5, 6), (1, 6), (5, 1), ()]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("bias_shape", ADDMM_BIAS)
def test_addmm(backend, dtype, bias_shape):
    rng = np.random.default_rng(len(bias_shape))
    c, c64 = rand(rng, bias_shape, dtype)
    a, a64 = rand(rng, (5, 7), dtype)
    b, b64 = rand(rng, (6, 7), dtype)
    bt, bt64 = b.t(), b64.T
    for beta, alpha in ((1, 1), (0.5, -2.0), (0, 3)):
        want = beta * np.broadcast_to(c64, (5, 6)) + alpha * (a64 @ bt64)
        mag = abs(beta) * np.abs(np.broadcast_to(c64, (5, 6))) + abs(alpha) * (np.abs(a64) @ np.abs(bt64))
        check(ampc.addmm(c, a, bt, beta=beta, alpha=alpha), want, mag, 7, dtype)
        check(c.addmm(a, bt, beta=beta, alpha=alpha), want, mag, 7, dtype)
        check_torch(ampc.addmm(c, a, bt, beta=beta, alpha=alpha),
                    torch.addmm(torch_of(c64, dtype), torch_of(a64, dtype), torch_of(bt64, dtype), beta=beta, alpha=alpha),
                    dtype)


def test_addmm_beta_zero_ignores_nan(backend):
    nan = ampc.full((3,), float("nan"))
    a, b = ampc.ones(2, 4), ampc.ones(4, 3)
    np.testing.assert_array_equal(ampc.addmm(nan, a, b, beta=0).numpy(), np.full((2, 3), 4.0))
    assert np.isnan(ampc.addmm(nan, a, b, beta=1).numpy()).all()


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_baddbmm(backend, dtype):
    rng = np.random.default_rng(8)
    c, c64 = rand(rng, (9, 6), dtype)  # broadcast over the batch
    a, a64 = rand(rng, (3, 9, 5), dtype)
    b, b64 = rand(rng, (3, 5, 6), dtype)
    want = 0.25 * c64 + 1.5 * (a64 @ b64)
    mag = 0.25 * np.abs(np.broadcast_to(c64, want.shape)) + 1.5 * (np.abs(a64) @ np.abs(b64))
    check(ampc.baddbmm(c, a, b, beta=0.25, alpha=1.5), want, mag, 5, dtype)
    check(c.expand(3, 9, 6).baddbmm(a, b, beta=0.25, alpha=1.5), want, mag, 5, dtype)
    check_torch(ampc.baddbmm(c, a, b, beta=0.25, alpha=1.5),
                torch.baddbmm(torch_of(c64, dtype), torch_of(a64, dtype), torch_of(b64, dtype), beta=0.25, alpha=1.5),
                dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_dot_and_mv(dtype):
    rng = np.random.default_rng(9)
    v, v64 = rand(rng, (40,), dtype)
    w, w64 = rand(rng, (80,), dtype)
    m, m64 = rand(rng, (40, 7), dtype)
    ws = w[::2]  # stride 2
    check(ampc.dot(v, ws), v64 @ w64[::2], np.abs(v64) @ np.abs(w64[::2]), 40, dtype)
    check(v.dot(ws), v64 @ w64[::2], np.abs(v64) @ np.abs(w64[::2]), 40, dtype)
    check(ampc.mv(m.t(), v), m64.T @ v64, np.abs(m64.T) @ np.abs(v64), 40, dtype)
    check(m.t().mv(v), m64.T @ v64, np.abs(m64.T) @ np.abs(v64), 40, dtype)
    check_torch(ampc.mv(m.t(), v), torch.mv(torch_of(m64, dtype).t(), torch_of(v64, dtype)), dtype)


# ------------------------------------------------------------------ integers

@pytest.mark.parametrize("dtype", [ampc.int64, ampc.int32], ids=str)
def test_integer_matmul(backend, dtype):
    rng = np.random.default_rng(10)
    a, a64 = rand(rng, (2, 6, 9), dtype)
    b, b64 = rand(rng, (9, 4), dtype)
    got = ampc.matmul(a, b)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got.numpy(), a64 @ b64)
    c, c64 = rand(rng, (4,), dtype)
    got = ampc.addmm(c, a[0], b, beta=2, alpha=-3)
    np.testing.assert_array_equal(got.numpy(), 2 * c64 + -3 * (a64[0] @ b64))
    # PyTorch truncates float beta / alpha for integer tensors
    np.testing.assert_array_equal(ampc.addmm(c, a[0], b, beta=0.5, alpha=1.5).numpy(), a64[0] @ b64)
    # wraps like PyTorch
    big = ampc.full((1, 2), 2 ** 16, dtype=ampc.int32)
    assert ampc.mm(big, big.t()).item() == torch.mm(torch.full((1, 2), 2 ** 16, dtype=torch.int32),
                                                     torch.full((2, 1), 2 ** 16, dtype=torch.int32)).item()


def test_bool_matmul_not_implemented():
    t = ampc.ones(2, 2, dtype=ampc.bool)
    with pytest.raises(NotImplementedError, match="not implemented for 'bool'"):
        ampc.mm(t, t)


# ------------------------------------------------------------------ zero sizes

@pytest.mark.parametrize("dtype", FLOATS + [ampc.int64], ids=str)
def test_zero_sizes(backend, dtype):
    a, b = ampc.ones(3, 0, dtype=dtype), ampc.ones(0, 4, dtype=dtype)
    np.testing.assert_array_equal(as_np(ampc.mm(a, b)), np.zeros((3, 4)))
    c = ampc.full((4,), 3, dtype=dtype)
    np.testing.assert_array_equal(as_np(ampc.addmm(c, a, b, beta=2)), np.full((3, 4), 6))
    assert tuple(ampc.mm(ampc.ones(0, 5, dtype=dtype), ampc.ones(5, 2, dtype=dtype)).shape) == (0, 2)
    assert tuple(ampc.bmm(ampc.ones(0, 2, 3, dtype=dtype), ampc.ones(0, 3, 2, dtype=dtype)).shape) == (0, 2, 2)
    assert tuple(ampc.matmul(ampc.ones(2, 0, 3, dtype=dtype), ampc.ones(3, dtype=dtype)).shape) == (2, 0)
    assert as_np(ampc.dot(ampc.ones(0, dtype=dtype), ampc.ones(0, dtype=dtype))) == 0


# ------------------------------------------------------------------ einsum

EINSUM_CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ij,kj->ik", [(3, 4), (5, 4)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 5, 4), (2, 3, 6, 4)]),
    ("bhqk,bhkd->bhqd", [(2, 3, 5, 6), (2, 3, 6, 4)]),
    ("i,i->", [(7,), (7,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij,ij->i", [(3, 4), (3, 4)]),
    ("ij,j->i", [(3, 4), (4,)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("ij->", [(3, 4)]),
    ("ij->ji", [(3, 4)]),
    ("ijk->kj", [(2, 3, 4)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
    ("...ij,...jk", [(2, 1, 3, 4), (3, 4, 2)]),
    ("bi,bj->b", [(3, 4), (3, 5)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("Ab,bC->AC", [(2, 3), (3, 4)]),
    ("i j , j k -> i k", [(3, 4), (4, 5)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM_CASES)
def test_einsum(eq, shapes):
    rng = np.random.default_rng(len(eq))
    ops = [rand(rng, s, ampc.float64) for s in shapes]
    got = ampc.einsum(eq, *[t for t, _ in ops])
    want = np.einsum(eq.replace(" ", ""), *[x for _, x in ops])
    assert got.dtype == ampc.float64 and tuple(got.shape) == want.shape
    np.testing.assert_allclose(as_np(got), want, rtol=1e-12, atol=1e-12)
    got_list = ampc.einsum(eq, [t for t, _ in ops])
    np.testing.assert_allclose(as_np(got_list), want, rtol=1e-12, atol=1e-12)
    torch_got = torch.einsum(eq, *[torch.from_numpy(x) for _, x in ops])
    np.testing.assert_allclose(as_np(got), torch_got.numpy(), rtol=1e-12, atol=1e-12)


def test_einsum_half_and_broadcast():
    rng = np.random.default_rng(11)
    q, q64 = rand(rng, (2, 4, 8), ampc.bfloat16)
    k, k64 = rand(rng, (1, 5, 8), ampc.bfloat16)  # size-1 batch broadcasts
    got = ampc.einsum("bqd,bkd->bqk", q, k)
    want = np.einsum("bqd,bkd->bqk", q64, np.broadcast_to(k64, (2, 5, 8)))
    mag = np.einsum("bqd,bkd->bqk", np.abs(q64), np.abs(np.broadcast_to(k64, (2, 5, 8))))
    check(got, want, mag, 8, ampc.bfloat16)
    # a diagonal or a transpose is a view of the input, as in PyTorch
    x = ampc.ones(3, 3)
    assert ampc.einsum("ii->i", x).data_ptr() == x.data_ptr()
    assert ampc.einsum("ij->ji", x).data_ptr() == x.data_ptr()


EINSUM_ERRORS = [
    ("ij,jk->ik", [(2, 3), (4, 5)], "subscript j has size 4 for operand 1 which does not broadcast with previously seen size 3"),
    ("ij,jk->ik", [(2, 3)], "fewer operands were provided than specified in the equation"),
    ("ij->ik", [(2, 3), (3, 3)], "more operands were provided than specified in the equation"),
    ("ij,jk->iz", [(2, 3), (3, 5)], "output subscript z does not appear in the equation for any input operand"),
    ("ijk,jk->ik", [(2, 3), (3, 5)], "the number of subscripts in the equation (3) does not match the number of "
                                     "dimensions (2) for operand 0 and no ellipsis was given"),
    ("ii->i", [(2, 3)], "subscript i is repeated for operand 0 but the sizes don't match, 3 != 2"),
    ("i,j->ii", [(2,), (3,)], "output subscript i appears more than once in the output"),
    ("i1->i", [(2, 3)], "invalid subscript given at index 1"),
    ("i..j->i", [(2, 3)], "found '.' for operand 0 that is not part of any ellipsis"),
]


@pytest.mark.parametrize("eq,shapes,msg", EINSUM_ERRORS)
def test_einsum_errors(eq, shapes, msg):
    ops = [ampc.ones(*s) for s in shapes]
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        ampc.einsum(eq, *ops)


def test_einsum_dtype_mismatch():
    with pytest.raises(RuntimeError, match="same dtype"):
        ampc.einsum("ij,jk->ik", ampc.ones(2, 3), ampc.ones(3, 2).half())


# ------------------------------------------------------------------ autocast

def test_autocast_runs_matrix_ops_in_lower_precision():
    a, b = ampc.ones(4, 3), ampc.ones(3, 2)
    with ampc.amp.autocast("cpu"):
        assert ampc.mm(a, b).dtype == ampc.bfloat16
        assert ampc.matmul(a, b).dtype == ampc.bfloat16
        assert ampc.addmm(ampc.ones(2), a, b).dtype == ampc.bfloat16
        assert ampc.bmm(a.unsqueeze(0), b.unsqueeze(0)).dtype == ampc.bfloat16
        assert ampc.einsum("ij,jk->ik", a, b).dtype == ampc.bfloat16
        assert ampc.mm(a.double(), b.double()).dtype == ampc.float64
    assert ampc.mm(a, b).dtype == ampc.float32


# ------------------------------------------------------------------ errors (PyTorch's messages)

def E(msg):
    return re.escape(msg)


ERRORS = [
    (lambda: ampc.mm(ampc.ones(2, 3), ampc.ones(4, 5)), E("mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)")),
    (lambda: ampc.mm(ampc.ones(2, 3), ampc.ones(3, 5).half()),
     E("expected m1 and m2 to have the same dtype, but got: float32 != float16")),
    (lambda: ampc.mm(ampc.ones(3), ampc.ones(3, 2)), E("self must be a matrix")),
    (lambda: ampc.mm(ampc.ones(2, 3), ampc.ones(3)), E("mat2 must be a matrix")),
    (lambda: ampc.bmm(ampc.ones(2, 3, 4), ampc.ones(3, 4, 5)),
     E("Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [3, 4].")),
    (lambda: ampc.bmm(ampc.ones(3, 4), ampc.ones(2, 4, 5)), E("batch1 must be a 3D tensor")),
    (lambda: ampc.matmul(ampc.tensor(3.0), ampc.ones(3)),
     E("both arguments to matmul need to be at least 1D, but they are 0D and 1D")),
    (lambda: ampc.matmul(ampc.ones(3), ampc.ones(4)),
     E("inconsistent tensor size, expected tensor [3] and src [4] to have the same number of elements, "
       "but got 3 and 4 elements respectively")),
    (lambda: ampc.matmul(ampc.ones(3), ampc.ones(4, 5)), E("mat1 and mat2 shapes cannot be multiplied (1x3 and 4x5)")),
    (lambda: ampc.matmul(ampc.ones(5, 3), ampc.ones(4)), E("size mismatch, got input (5), mat (5x3), vec (4)")),
    (lambda: ampc.matmul(ampc.ones(2, 5, 3), ampc.ones(4, 5)),
     E("mat1 and mat2 shapes cannot be multiplied (10x3 and 4x5)")),
    (lambda: ampc.matmul(ampc.ones(2, 5, 3), ampc.ones(2, 4, 5)),
     E("Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 4].")),
    (lambda: ampc.matmul(ampc.ones(2, 5, 3), ampc.ones(3, 3, 5)),
     E("The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0")),
    (lambda: ampc.matmul(ampc.ones(2, 5, 3), ampc.ones(4)), E("size mismatch, got input (10), mat (10x3), vec (4)")),
    (lambda: ampc.matmul(ampc.ones(3), ampc.ones(2, 4, 5)),
     E("Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 4].")),
    (lambda: ampc.addmm(ampc.ones(3), ampc.ones(2, 3), ampc.ones(3, 5)),
     E("The expanded size of the tensor (5) must match the existing size (3) at non-singleton dimension 1.  "
       "Target sizes: [2, 5].  Tensor sizes: [3]")),
    (lambda: ampc.addmm(ampc.ones(5).half(), ampc.ones(2, 3), ampc.ones(3, 5)),
     E("self and mat2 must have the same dtype, but got float16 and float32")),
    (lambda: ampc.addmm(ampc.ones(5), ampc.ones(3), ampc.ones(4, 5)), E("mat1 must be a matrix, got 1-D tensor")),
    (lambda: ampc.baddbmm(ampc.ones(4, 3, 5), ampc.ones(2, 3, 4), ampc.ones(2, 4, 5)),
     E("The expanded size of the tensor (2) must match the existing size (4) at non-singleton dimension 0")),
    (lambda: ampc.baddbmm(ampc.ones(2, 3, 5).half(), ampc.ones(2, 3, 4), ampc.ones(2, 4, 5)),
     E("Input dtypes must be the same, got: input float16, batch1: float32, batch2: float32")),
    (lambda: ampc.dot(ampc.ones(3, 1), ampc.ones(3)), E("1D tensors expected, but got 2D and 1D tensors")),
    (lambda: ampc.dot(ampc.ones(3), ampc.ones(3).half()),
     E("expected both vectors to have same dtype, but found float32 and float16")),
    (lambda: ampc.mv(ampc.ones(3, 4), ampc.ones(3)), E("size mismatch, got input (3), mat (3x4), vec (3)")),
    (lambda: ampc.mv(ampc.ones(3), ampc.ones(3)), E("vector + matrix @ vector expected, got 1, 1, 1")),
]


@pytest.mark.parametrize("fn,msg", ERRORS)
def test_errors(fn, msg):
    with pytest.raises(RuntimeError, match=msg):
        fn()


def test_argument_errors():
    with pytest.raises(TypeError, match="must be Tensor"):
        ampc.mm(ampc.ones(2, 2), [[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(TypeError):
        ampc.addmm(ampc.ones(2), ampc.ones(2, 2), ampc.ones(2, 2), 1, 1)  # beta, alpha are keyword-only
    with pytest.raises(TypeError, match="beta"):
        ampc.addmm(ampc.ones(2), ampc.ones(2, 2), ampc.ones(2, 2), beta="x")
    with pytest.raises(TypeError, match="equation"):
        ampc.einsum(ampc.ones(2))
    with pytest.raises(RuntimeError, match="unknown backend 'mkl'"):
        ampc._C._gemm_backend("mkl")


# ------------------------------------------------------------------ autograd (rules in derivatives_linalg.c)

GRAD_CASES = [
    ("mm", [(4, 5), (5, 3)], lambda m, xs: m.mm(*xs)),
    ("bmm", [(2, 4, 5), (2, 5, 3)], lambda m, xs: m.bmm(*xs)),
    ("matmul_bcast", [(2, 1, 4, 5), (3, 5, 2)], lambda m, xs: m.matmul(*xs)),
    ("matmul_fold", [(2, 4, 5), (5, 3)], lambda m, xs: m.matmul(*xs)),
    ("matmul_1d_left", [(5,), (2, 5, 3)], lambda m, xs: m.matmul(*xs)),
    ("matmul_1d_right", [(2, 4, 5), (5,)], lambda m, xs: m.matmul(*xs)),
    ("dot", [(5,), (5,)], lambda m, xs: m.dot(*xs)),
    ("mv", [(4, 5), (5,)], lambda m, xs: m.mv(*xs)),
    ("addmm", [(3,), (4, 5), (5, 3)], lambda m, xs: m.addmm(*xs, beta=0.5, alpha=2.0)),
    ("baddbmm", [(4, 3), (2, 4, 5), (2, 5, 3)], lambda m, xs: m.baddbmm(*xs, beta=-1.0, alpha=0.25)),
]


@pytest.mark.parametrize("name,shapes,op", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradients_match_torch(name, shapes, op):
    rng = np.random.default_rng(len(name))
    xs = [rng.standard_normal(s) for s in shapes]
    ours = [ampc.from_numpy(x.copy()).requires_grad_(True) for x in xs]
    theirs = [torch.from_numpy(x.copy()).requires_grad_(True) for x in xs]
    out, ref = op(ampc, ours), op(torch, theirs)
    assert tuple(out.shape) == tuple(ref.shape)
    g = rng.standard_normal(tuple(ref.shape))
    out.backward(ampc.from_numpy(g.copy()))
    ref.backward(torch.from_numpy(g))
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_grad_fn_names():
    a, b = ampc.ones(2, 3).requires_grad_(True), ampc.ones(3, 2).requires_grad_(True)
    assert type(ampc.mm(a, b).grad_fn).__name__ == "MmBackward0"
    assert type(ampc.addmm(ampc.ones(2), a, b).grad_fn).__name__ == "AddmmBackward0"
    assert ampc.mm(a.detach(), b.detach()).grad_fn is None
