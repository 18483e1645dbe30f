"""The CUDA softmax family against the CPU backend: softmax and log_softmax over every dim (sizes
on both sides of the warp and block paths, up to the GPT vocabulary), with -inf entries and
all--inf rows, fp16/bf16 inputs with fp32 outputs (dtype=) and the pairs that take the run-time
dtype path; their backward; scaled_dot_product_attention (the attention softmax: scale, bool and
float masks with broadcast strides, is_causal, fully masked rows); cross_entropy (class and
probability targets, weight, ignore_index, label_smoothing, every reduction, (N, C) and
(N, C, d1, d2)) and nll_loss, forward and backward; the deferred IndexError of an out-of-range
class target.

Every op runs on the same fresh random inputs on the CPU and on `cuda` (tests/conftest.py). The
CPU computes in double and rounds once; the GPU computes in fp32 (double for fp64), so results
agree within the output dtype's rounding: one ulp of fp16/bf16 outputs, ~1e-6 relative for fp32.
"""
import math

import numpy as np
import pytest

import ampc
import ampc.nn.functional as F
from helpers import check_close, deferred_index_error, host, tensor

# relative tolerance of a result stored in this dtype (two ulps of fp16/bf16: the GPU's fp32
# result may round the other way than the CPU's double one)
TOL = {ampc.float32: 2e-5, ampc.float16: 2e-3, ampc.bfloat16: 1.6e-2, ampc.float64: 1e-11}
SIZES = [1, 31, 32, 33, 1000, 4097, 50257]


def rng(seed):
    return np.random.default_rng(seed)


def pair(a, dtype, cuda, requires_grad=False):
    """The same values as a CPU tensor and a `cuda` tensor (leaves, optionally requiring grad)."""
    c = tensor(a, dtype)
    d = c.to(cuda)
    if requires_grad:
        c.requires_grad_(True)
        d.requires_grad_(True)
    return c, d


def shape_for(dim, size):
    """A tensor shape whose dim `dim` (0, 1 or -1) has `size` elements, others small."""
    return {0: (size, 5), 1: (2, size, 3), -1: (4, size)}[dim]


# ---------------------------------------------------------------- softmax, log_softmax

@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtypes", [(ampc.float32, None), (ampc.float16, None), (ampc.bfloat16, None),
                                    (ampc.float16, ampc.float32)], ids=["f32", "f16", "bf16", "f16-to-f32"])
def test_softmax_log_softmax(cuda, size, dim, dtypes):
    in_dt, out_dt = dtypes
    shape = shape_for(dim, size)
    r = rng(size * 7 + dim)
    x = r.standard_normal(shape) * 3
    g = r.standard_normal(shape)
    out_tol = TOL[out_dt or in_dt]
    for fn in (F.softmax, F.log_softmax):
        xc, xd = pair(x, in_dt, cuda, requires_grad=True)
        yc, yd = fn(xc, dim, dtype=out_dt), fn(xd, dim, dtype=out_dt)
        check_close(yd, yc, out_tol, floor=1e-3)
        gdt = out_dt or in_dt
        yc.backward(tensor(g, gdt))
        yd.backward(tensor(g, gdt).to(cuda))
        check_close(xd.grad, xc.grad, TOL[in_dt] * 2)


@pytest.mark.parametrize("size", [1, 33, 1000, 4097])
@pytest.mark.parametrize("dim", [0, -1])
@pytest.mark.parametrize("dtype", [ampc.float32, ampc.float16, ampc.bfloat16, ampc.float64])
def test_softmax_inf_rows(cuda, size, dim, dtype):
    """-inf entries, an all--inf row (NaN, as the CPU and PyTorch), a +inf entry (NaN row)."""
    shape = shape_for(dim, size)
    x = rng(size).standard_normal(shape) * 2
    lead = np.moveaxis(x, dim, -1)  # a view: rows along the softmax dim
    lead[0, :] = -np.inf  # a row with nothing to attend to
    lead[1, ::3] = -np.inf
    lead[-1, -1] = np.inf
    for fn in (F.softmax, F.log_softmax):
        xc, xd = pair(x, dtype, cuda)
        check_close(fn(xd, dim), fn(xc, dim), TOL[dtype], floor=1e-3)


@pytest.mark.parametrize("in_dt,out_dt", [(ampc.float32, ampc.float16), (ampc.float32, ampc.float64),
                                          (ampc.bfloat16, ampc.float16), (ampc.float64, ampc.float32)])
@pytest.mark.parametrize("size", [7, 100, 3000])
def test_softmax_mixed_dtypes(cuda, in_dt, out_dt, size):
    """Output dtypes without a compiled path (the run-time dtype kernels), with backward."""
    x, g = rng(size).standard_normal((6, size)) * 2, rng(size + 1).standard_normal((6, size))
    for fn in (F.softmax, F.log_softmax):
        for dim in (1, 0):
            xc, xd = pair(x, in_dt, cuda, requires_grad=True)
            yc, yd = fn(xc, dim, dtype=out_dt), fn(xd, dim, dtype=out_dt)
            check_close(yd, yc, TOL[out_dt], floor=1e-3)
            yc.backward(tensor(g, out_dt))
            yd.backward(tensor(g, out_dt).to(cuda))
            check_close(xd.grad, xc.grad, max(TOL[in_dt], TOL[out_dt]) * 2)


@pytest.mark.parametrize("dtype", [ampc.float32, ampc.float16, ampc.float64])
def test_softmax_layouts_and_edges(cuda, dtype):
    x = rng(1).standard_normal((7, 9, 5))
    xc, xd = pair(x, dtype, cuda)
    for perm in [(2, 0, 1), (1, 2, 0)]:  # non-contiguous inputs
        for dim in (0, 1, 2):
            check_close(F.softmax(xd.permute(*perm), dim), F.softmax(xc.permute(*perm), dim), TOL[dtype], 1e-3)
            check_close(F.log_softmax(xd.permute(*perm), dim), F.log_softmax(xc.permute(*perm), dim), TOL[dtype],
                        1e-3)
    e = tensor(np.zeros((0, 5)), dtype)
    assert tuple(F.softmax(e.to(cuda), 1).shape) == (0, 5)
    assert tuple(F.log_softmax(e.to(cuda), 0).shape) == (0, 5)
    s = tensor(np.array(1.5), dtype)  # 0-dim
    check_close(F.softmax(s.to(cuda), 0), F.softmax(s, 0), TOL[dtype])
    check_close(F.log_softmax(s.to(cuda), -1), F.log_softmax(s, -1), TOL[dtype])


@pytest.mark.parametrize("shape,dim", [((256, 4097), 1), ((2048, 512), -1), ((4, 262144), 1), ((1024, 1024), 0)])
def test_softmax_large(cuda, shape, dim):
    """>= 2^20 elements: the block path, the warp path with many rows, a long row, a column dim."""
    x, g = rng(3).standard_normal(shape) * 4, rng(4).standard_normal(shape)
    for dtype in (ampc.float16, ampc.float32):
        for fn in (F.softmax, F.log_softmax):
            xc, xd = pair(x, dtype, cuda, requires_grad=True)
            yc, yd = fn(xc, dim), fn(xd, dim)
            check_close(yd, yc, TOL[dtype], floor=1e-3)
            yc.backward(tensor(g, dtype))
            yd.backward(tensor(g, dtype).to(cuda))
            check_close(xd.grad, xc.grad, TOL[dtype] * 2)


def test_softmax_unaligned_rows(cuda):
    """Rows starting at every 16-byte misalignment (a sliced input) keep the vector paths right."""
    x = rng(5).standard_normal((9, 2100))
    for dtype in (ampc.float16, ampc.bfloat16, ampc.float32):
        xc, xd = pair(x, dtype, cuda)
        for start in range(1, 9):
            sl_c, sl_d = xc[:, start:start + 2051], xd[:, start:start + 2051]
            check_close(F.softmax(sl_d, 1), F.softmax(sl_c, 1), TOL[dtype], 1e-3)
            sl_c, sl_d = xc[:, start:start + 600], xd[:, start:start + 600]
            check_close(F.log_softmax(sl_d, 1), F.log_softmax(sl_c, 1), TOL[dtype], 1e-3)
            # a contiguous view at an odd storage offset: input and output rows misaligned differently
            vc, vd = (t.reshape(-1)[start:start + 8 * 2051].view(8, 2051) for t in (xc, xd))
            check_close(F.softmax(vd, 1), F.softmax(vc, 1), TOL[dtype], 1e-3)
            vc, vd = (t.reshape(-1)[start:start + 8 * 2051].view(8 * 2051 // 7, 7) for t in (xc, xd))
            check_close(F.log_softmax(vd, 0), F.log_softmax(vc, 0), TOL[dtype], 1e-3)


# ---------------------------------------------------------------- attention softmax

def sdpa_pair(q, k, v, dtype, cuda, mask=None, mask_dtype=None, **kw):
    qc, qd = pair(q, dtype, cuda, True)
    kc, kd = pair(k, dtype, cuda, True)
    vc, vd = pair(v, dtype, cuda, True)
    mc = md = None
    if mask is not None:
        mc = ampc.tensor(mask) if mask.dtype == np.bool_ else tensor(mask, mask_dtype)
        md = mc.to(cuda)
    yc = F.scaled_dot_product_attention(qc, kc, vc, attn_mask=mc, **kw)
    yd = F.scaled_dot_product_attention(qd, kd, vd, attn_mask=md, **kw)
    # the GEMMs around the softmax round their fp16/bf16 results independently on each device
    check_close(yd, yc, TOL[dtype] * 4)
    g = rng(9).standard_normal(tuple(yc.shape))
    yc.backward(tensor(g, dtype))
    yd.backward(tensor(g, dtype).to(cuda))
    for a, b in ((qd, qc), (kd, kc), (vd, vc)):
        check_close(a.grad, b.grad, TOL[dtype] * 8)


@pytest.mark.parametrize("dtype", [ampc.float32, ampc.float16, ampc.bfloat16])
@pytest.mark.parametrize("L,S", [(5, 7), (33, 64), (16, 1500)])
def test_sdpa_masks(cuda, dtype, L, S):
    r = rng(L * S)
    q, k, v = r.standard_normal((2, 3, L, 8)), r.standard_normal((2, 3, S, 8)), r.standard_normal((2, 3, S, 8))
    sdpa_pair(q, k, v, dtype, cuda)
    sdpa_pair(q, k, v, dtype, cuda, is_causal=True)
    sdpa_pair(q, k, v, dtype, cuda, scale=0.3)
    bool_mask = r.random((L, S)) < 0.7  # broadcast over batch and heads (stride 0)
    bool_mask[0, :] = False  # a fully masked row: zeros, not NaN
    sdpa_pair(q, k, v, dtype, cuda, mask=bool_mask)
    head_mask = r.random((3, 1, S)) < 0.5  # broadcast over batch and queries
    sdpa_pair(q, k, v, dtype, cuda, mask=head_mask)
    float_mask = r.standard_normal((2, 1, L, S))
    float_mask[:, :, 1, ::2] = -np.inf
    sdpa_pair(q, k, v, dtype, cuda, mask=float_mask, mask_dtype=dtype)
    sdpa_pair(q, k, v, dtype, cuda, mask=float_mask, mask_dtype=ampc.float32)


def test_sdpa_fully_masked_rows_are_zero(cuda):
    q = k = v = np.ones((1, 2, 4, 3))
    mask = np.zeros((4, 4), dtype=bool)
    mask[1:, :2] = True  # row 0 sees nothing
    for dtype in (ampc.float32, ampc.float16):
        qd, kd, vd = (tensor(a, dtype).to(cuda) for a in (q, k, v))
        y = host(F.scaled_dot_product_attention(qd, kd, vd, attn_mask=ampc.tensor(mask).to(cuda)))
        assert np.all(y[:, :, 0] == 0) and np.all(np.isfinite(y))


# ---------------------------------------------------------------- cross entropy

REDUCTIONS = ["mean", "sum", "none"]


def ce_case(shape, seed, ignore=None, probs=False):
    """Logits of shape (N, C, *) and class (or probability) targets; some targets ignore_index."""
    r = rng(seed)
    c = shape[1]
    x = r.standard_normal(shape) * 3
    if probs:
        p = r.random(shape)
        return x, p / p.sum(1, keepdims=True)
    t = r.integers(0, c, (shape[0],) + tuple(shape[2:]))
    if ignore is not None:
        t.flat[::5] = ignore
    return x, t


def run_ce(cuda, x, t, dtype, kw, weight=None, probs=False, t_dtype=None):
    """cross_entropy forward and backward on both devices; compares loss and grads."""
    xc, xd = pair(x, dtype, cuda, True)
    if probs:
        tc, td = pair(t, t_dtype or dtype, cuda, True)
    else:
        tc = ampc.tensor(t.astype(np.int64))
        td = tc.to(cuda)
    if weight is not None:
        wc = tensor(weight, ampc.float32 if dtype != ampc.float64 else dtype)
        kw = dict(kw, weight=wc)
        kwd = dict(kw, weight=wc.to(cuda))
    else:
        kwd = kw
    lc, ld = F.cross_entropy(xc, tc, **kw), F.cross_entropy(xd, td, **kwd)
    check_close(ld, lc, TOL[lc.dtype] * 2)
    g = rng(11).standard_normal(tuple(lc.shape))
    lc.backward(tensor(g, lc.dtype))
    ld.backward(tensor(g, lc.dtype).to(cuda))
    check_close(xd.grad, xc.grad, TOL[dtype] * 2)
    if probs:
        check_close(td.grad, tc.grad, TOL[tc.dtype] * 2)


CE_KW = [dict(), dict(weight=True), dict(label_smoothing=0.1), dict(weight=True, label_smoothing=0.3),
         dict(ignore_index=2), dict(ignore_index=-100, weight=True)]


@pytest.mark.parametrize("shape", [(6, 5), (64, 1000), (3, 1025), (16, 50257), (3, 5, 4, 2), (2, 7, 64, 64),
                                   (5, 50257, 1, 2)])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("kw", CE_KW, ids=lambda k: "-".join(f"{a}={b}" for a, b in k.items()) or "plain")
def test_cross_entropy_class_targets(cuda, shape, reduction, kw):
    kw = dict(kw)
    use_w = kw.pop("weight", False)
    x, t = ce_case(shape, sum(shape), ignore=kw.get("ignore_index", -100))
    w = rng(1).random(shape[1]) + 0.5 if use_w else None
    run_ce(cuda, x, t, ampc.float32, dict(kw, reduction=reduction), weight=w)


@pytest.mark.parametrize("dtype", [ampc.float16, ampc.bfloat16, ampc.float64])
@pytest.mark.parametrize("shape", [(32, 10), (8, 50257), (4, 3000), (2, 6, 5, 5)])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_dtypes(cuda, dtype, shape, reduction):
    x, t = ce_case(shape, 3, ignore=-100)
    run_ce(cuda, x, t, dtype, dict(reduction=reduction, label_smoothing=0.1))
    run_ce(cuda, x, t, dtype, dict(reduction=reduction), weight=rng(2).random(shape[1]) + 0.5)


@pytest.mark.parametrize("shape", [(6, 5), (4, 2000), (3, 4, 5, 2), (2, 4, 64, 40)])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("kw", [dict(), dict(weight=True), dict(label_smoothing=0.2),
                                dict(weight=True, label_smoothing=0.5)], ids=["plain", "w", "ls", "w-ls"])
def test_cross_entropy_probability_targets(cuda, shape, reduction, kw):
    kw = dict(kw)
    use_w = kw.pop("weight", False)
    x, p = ce_case(shape, 5, probs=True)
    w = rng(1).random(shape[1]) + 0.5 if use_w else None
    run_ce(cuda, x, p, ampc.float32, dict(kw, reduction=reduction), weight=w, probs=True)


@pytest.mark.parametrize("dtype,t_dtype", [(ampc.float16, ampc.float16), (ampc.bfloat16, ampc.float32),
                                           (ampc.float64, ampc.float64)])
def test_cross_entropy_probability_targets_dtypes(cuda, dtype, t_dtype):
    x, p = ce_case((5, 300), 6, probs=True)
    run_ce(cuda, x, p, dtype, dict(label_smoothing=0.1), probs=True, t_dtype=t_dtype)


def test_cross_entropy_edges(cuda):
    x = ampc.zeros(3, 5).to(cuda)
    assert math.isnan(F.cross_entropy(x, ampc.tensor([-100, -100, -100]).to(cuda)).item())  # 0 / 0
    empty, et = ampc.zeros(0, 5).to(cuda), ampc.zeros(0, dtype=ampc.int64).to(cuda)
    assert math.isnan(F.cross_entropy(empty, et).item())
    assert F.cross_entropy(empty, et, reduction="sum").item() == 0
    assert tuple(F.cross_entropy(empty, et, reduction="none").shape) == (0,)
    # unbatched (C) input with a 0-dim target
    xc, xd = pair(rng(0).standard_normal(7), ampc.float32, cuda, True)
    lc, ld = F.cross_entropy(xc, ampc.tensor(3)), F.cross_entropy(xd, ampc.tensor(3).to(cuda))
    check_close(ld, lc, 1e-5)
    lc.backward()
    ld.backward()
    check_close(xd.grad, xc.grad, 1e-5)
    # int32 and uint8 class targets
    x, t = ce_case((6, 9), 4)
    for tdt in (ampc.int32, ampc.uint8):
        tc = ampc.tensor(t.astype(np.int64)).to(tdt)
        xc = tensor(x, ampc.float32)
        check_close(F.cross_entropy(xc.to(cuda), tc.to(cuda)), F.cross_entropy(xc, tc), 1e-5)


@pytest.mark.parametrize("bad", [5, -3, 1000])
def test_class_target_out_of_range(cuda, bad):
    x = ampc.zeros(3, 5).to(cuda)
    t = ampc.tensor([1, bad, 2]).to(cuda)
    deferred_index_error(lambda: F.cross_entropy(x, t))
    deferred_index_error(lambda: F.cross_entropy(x, t, reduction="none"))
    deferred_index_error(lambda: F.nll_loss(x, t))
    # the device is usable afterwards
    check_close(F.cross_entropy(x, ampc.tensor([1, 0, 2]).to(cuda)), F.cross_entropy(ampc.zeros(3, 5),
                                                                                   ampc.tensor([1, 0, 2])), 1e-6)


# ---------------------------------------------------------------- nll_loss

@pytest.mark.parametrize("shape", [(6, 4), (6, 4, 3), (3, 1000), (2, 5, 64, 64)])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", [ampc.float32, ampc.float16, ampc.bfloat16, ampc.float64])
@pytest.mark.parametrize("use_w", [False, True])
def test_nll_loss(cuda, shape, reduction, dtype, use_w):
    x, t = ce_case(shape, 8, ignore=1)
    lp = x - np.log(np.exp(x).sum(1, keepdims=True))
    kw = dict(reduction=reduction, ignore_index=1)
    xc, xd = pair(lp, dtype, cuda, True)
    tc = ampc.tensor(t.astype(np.int64))
    kwd = dict(kw)
    if use_w:
        wc = tensor(rng(3).random(shape[1]) + 0.5, dtype)
        kw["weight"], kwd["weight"] = wc, wc.to(cuda)
    lc, ld = F.nll_loss(xc, tc, **kw), F.nll_loss(xd, tc.to(cuda), **kwd)
    check_close(ld, lc, TOL[dtype] * 2)
    g = rng(12).standard_normal(tuple(lc.shape))
    lc.backward(tensor(g, dtype))
    ld.backward(tensor(g, dtype).to(cuda))
    check_close(xd.grad, xc.grad, TOL[dtype] * 2)
