"""ampc.nn.functional against float64 NumPy references written here and against
torch.nn.functional (the oracle), forward and backward: convolution grids (stride, padding,
dilation, groups), pooling, batch/layer/group norm, embedding, dropout (Philox stream, manual_seed),
softmax, cross_entropy/nll_loss (weights, ignore_index, label smoothing, probability targets),
the elementwise losses, attention and linear; central-difference gradient checks in float64;
fp16/bf16 inputs; non-contiguous and zero-size inputs; PyTorch's error messages."""
import math
import warnings

import ml_dtypes
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ampc
import ampc.nn.functional as F
from helpers import close_max_scaled, host

NP = {ampc.float32: np.float32, ampc.float64: np.float64, ampc.float16: np.float16, ampc.bfloat16: ml_dtypes.bfloat16}
TORCH = {ampc.float32: torch.float32, ampc.float64: torch.float64, ampc.float16: torch.float16,
         ampc.bfloat16: torch.bfloat16}
# tolerance of a result computed from inputs of this dtype, relative to the result's magnitude
TOL = {ampc.float64: 1e-10, ampc.float32: 2e-5, ampc.float16: 4e-3, ampc.bfloat16: 3e-2}


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def A(x, dtype=None, requires_grad=False):
    """ampc tensor of the NumPy array x (cast to dtype first, so A and T hold equal values)."""
    x = np.asarray(x)
    if dtype is not None:
        x = x.astype(NP[dtype])
    t = ampc.from_numpy(np.array(x, order="C")) if x.dtype != ml_dtypes.bfloat16 else \
        ampc.tensor(x.astype(np.float32)).to(ampc.bfloat16)
    if requires_grad:
        t.requires_grad_(True)
    return t


def T(x, dtype=None, requires_grad=False):
    x = np.asarray(x)
    if dtype is not None:
        t = torch.tensor(x.astype(NP[dtype]).astype(np.float64)).to(TORCH[dtype])
    else:
        t = torch.tensor(x)
    return t.requires_grad_(requires_grad)


def check_against_torch(fa, ft, arrays, grad=(), dtype=ampc.float64, tol=None, rng=None, extra_a=None, extra_t=None):
    """Runs fa on ampc tensors and ft on torch tensors of the same values; compares the outputs
    and, for the argument positions in `grad`, the gradients of sum(out * g) for a random g."""
    tol = tol or TOL[dtype]
    xa = [A(x, dtype, i in grad) for i, x in enumerate(arrays)]
    xt = [T(x, dtype, i in grad) for i, x in enumerate(arrays)]
    ya = fa(*xa, **(extra_a or {}))
    yt = ft(*xt, **(extra_t or {}))
    close_max_scaled(ya, yt.double() if dtype == ampc.float64 else yt.float(), tol)
    if grad:
        g = (rng or np.random.default_rng(0)).standard_normal(tuple(yt.shape))
        ya.backward(A(g, ya.dtype if ya.dtype in NP else None))
        yt.backward(T(g).to(yt.dtype))
        for i in grad:
            close_max_scaled(xa[i].grad, xt[i].grad.double(), tol)
    return ya, yt


def numeric_grad_check(f, arrays, grad, eps=1e-6, tol=1e-6, seed=0):
    """Central differences in float64 of sum(f(*xs) * g) against autograd (ampc.testing's role)."""
    g_rng = np.random.default_rng(seed)
    xs = [A(x, ampc.float64, i in grad) for i, x in enumerate(arrays)]
    y = f(*xs)
    g = g_rng.standard_normal(tuple(y.shape))
    y.backward(A(g))
    for i in grad:
        base = np.array(arrays[i], dtype=np.float64)
        num = np.zeros_like(base)
        for idx in np.ndindex(base.shape):
            vals = []
            for d in (eps, -eps):
                p = base.copy()
                p[idx] += d
                args = [A(p) if j == i else A(arrays[j], ampc.float64) for j in range(len(arrays))]
                vals.append(float(np.sum(host(f(*args)) * g)))
            num[idx] = (vals[0] - vals[1]) / (2 * eps)
        close_max_scaled(xs[i].grad, num, tol)


# ---------------------------------------------------------------- NumPy references

def np_conv2d(x, w, b, stride, pad, dil, groups):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    oh = (h + 2 * pad[0] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * pad[1] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, g * cg:(g + 1) * cg, i * dil[0]:i * dil[0] + stride[0] * (oh - 1) + 1:stride[0],
                           j * dil[1]:j * dil[1] + stride[1] * (ow - 1) + 1:stride[1]]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, w[g * og:(g + 1) * og, :, i, j])
    return out + (0 if b is None else b[None, :, None, None])


def np_softmax(x, dim):
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


def np_log_softmax(x, dim):
    m = x.max(axis=dim, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=dim, keepdims=True))


def np_cross_entropy(x, t, w=None, ignore=-100, ls=0.0, reduction="mean"):
    """x (N, C, *), t class indices (N, *)."""
    c = x.shape[1]
    lp = np_log_softmax(x, 1)
    w = np.ones(c) if w is None else w
    valid = t != ignore
    tc = np.where(valid, t, 0)
    picked = np.take_along_axis(lp, tc[:, None], 1)[:, 0]
    wt = w[tc] * valid
    nll = -picked * wt
    smooth = -(lp * w.reshape((1, c) + (1,) * (x.ndim - 2))).sum(1) * valid
    loss = (1 - ls) * nll + ls / c * smooth
    if reduction == "none":
        return loss
    return loss.sum() / (wt.sum() if reduction == "mean" else 1.0)


# ---------------------------------------------------------------- convolution

CONV_GRID = [
    # (N, C, H, W), (O, kh, kw), stride, padding, dilation, groups
    ((2, 3, 7, 6), (4, 3, 3), (1, 1), (0, 0), (1, 1), 1),
    ((2, 3, 7, 6), (4, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ((1, 4, 9, 8), (6, 3, 2), (2, 3), (1, 0), (1, 1), 2),
    ((2, 4, 9, 9), (4, 3, 3), (1, 2), (2, 1), (2, 1), 4),
    ((3, 6, 5, 5), (6, 1, 1), (1, 1), (0, 0), (1, 1), 3),
    ((2, 2, 6, 6), (3, 1, 1), (2, 2), (1, 0), (1, 1), 1),
    ((1, 2, 4, 4), (2, 4, 4), (1, 1), (0, 0), (1, 1), 1),
    ((2, 6, 8, 7), (4, 2, 3), (3, 2), (1, 1), (2, 3), 2),
]


@pytest.mark.parametrize("xs,ws,stride,padding,dilation,groups", CONV_GRID)
def test_conv2d_grid_numpy_torch_and_grads(rng, xs, ws, stride, padding, dilation, groups):
    x = rng.standard_normal(xs)
    w = rng.standard_normal((ws[0], xs[1] // groups, ws[1], ws[2]))
    b = rng.standard_normal(ws[0])
    kw = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    got = F.conv2d(A(x), A(w), A(b), **kw)
    close_max_scaled(got, np_conv2d(x, w, b, stride, padding, dilation, groups))
    check_against_torch(lambda x, w, b: F.conv2d(x, w, b, **kw), lambda x, w, b: TF.conv2d(x, w, b, **kw), [x, w, b],
                        grad=(0, 1, 2), rng=rng)
    check_against_torch(lambda x, w: F.conv2d(x, w, **kw), lambda x, w: TF.conv2d(x, w, **kw), [x, w], grad=(0, 1),
                        rng=rng)


@pytest.mark.parametrize("dtype", [ampc.float32, ampc.float16, ampc.bfloat16])
def test_conv2d_dtypes(rng, dtype):
    x, w, b = rng.standard_normal((2, 4, 8, 8)), rng.standard_normal((6, 2, 3, 3)), rng.standard_normal(6)
    kw = dict(stride=2, padding=1, groups=2)
    y = F.conv2d(A(x, dtype), A(w, dtype), A(b, dtype), **kw)
    assert y.dtype == dtype
    xr, wr, br = (np.asarray(v).astype(NP[dtype]).astype(np.float64) for v in (x, w, b))
    close_max_scaled(y, np_conv2d(xr, wr, br, (2, 2), (1, 1), (1, 1), 2), TOL[dtype])
    check_against_torch(lambda x, w, b: F.conv2d(x, w, b, **kw), lambda x, w, b: TF.conv2d(x, w, b, **kw), [x, w, b],
                        grad=(0, 1, 2), dtype=dtype, tol=TOL[dtype] * 2, rng=rng)


def test_conv2d_noncontiguous_inputs(rng):
    x = rng.standard_normal((2, 5, 3, 9))  # used transposed to (2, 3, 5, 9), and sliced with a step
    w = rng.standard_normal((3, 4, 2, 3))
    xa, xt = A(x).transpose(1, 2), T(x).transpose(1, 2)
    wa, wt = A(w).transpose(0, 1), T(w).transpose(0, 1)  # (4, 3, 2, 3)
    assert not xa.is_contiguous() and not wa.is_contiguous()
    close_max_scaled(F.conv2d(xa, wa, padding=1), TF.conv2d(xt, wt, padding=1))
    close_max_scaled(F.conv2d(xa[:, :, ::2], wa[::2]), TF.conv2d(xt[:, :, ::2], wt[::2]))


def test_conv2d_unbatched_and_conv1d(rng):
    x, w, b = rng.standard_normal((3, 7, 6)), rng.standard_normal((4, 3, 2, 2)), rng.standard_normal(4)
    check_against_torch(lambda x, w, b: F.conv2d(x, w, b, padding=1), lambda x, w, b: TF.conv2d(x, w, b, padding=1),
                        [x, w, b], grad=(0, 1, 2), rng=rng)
    x1, w1 = rng.standard_normal((2, 4, 11)), rng.standard_normal((6, 2, 3))
    for kw in [dict(), dict(stride=2, padding=2, dilation=2, groups=2), dict(padding="same", groups=2),
               dict(padding="valid", groups=2)]:
        if "groups" not in kw:
            kw["groups"] = 2
        check_against_torch(lambda x, w: F.conv1d(x, w, **kw), lambda x, w: TF.conv1d(x, w, **kw), [x1, w1],
                            grad=(0, 1), rng=rng)
    check_against_torch(lambda x, w: F.conv1d(x, w, groups=2), lambda x, w: TF.conv1d(x, w, groups=2), [x1[0], w1],
                        grad=(0, 1))


@pytest.mark.parametrize("k,dil", [(3, 1), (4, 1), (2, 3), (5, 2)])
def test_conv2d_padding_same(rng, k, dil):
    x, w = rng.standard_normal((1, 2, 9, 8)), rng.standard_normal((3, 2, k, k - 1))
    kw = dict(padding="same", dilation=dil)
    ya, _ = check_against_torch(lambda x, w: F.conv2d(x, w, **kw), lambda x, w: TF.conv2d(x, w, **kw), [x, w],
                                grad=(0, 1), rng=rng)
    assert tuple(ya.shape) == (1, 3, 9, 8)


def test_conv2d_zero_batch_and_grads_flow(rng):
    w = A(rng.standard_normal((4, 3, 3, 3)), ampc.float32, requires_grad=True)
    y = F.conv2d(ampc.zeros(0, 3, 8, 8), w, padding=1)
    assert tuple(y.shape) == (0, 4, 8, 8)
    y.sum().backward()
    assert tuple(w.grad.shape) == (4, 3, 3, 3) and np.all(host(w.grad) == 0)
    assert y.grad_fn is not None and "Convolution" in type(y.grad_fn).__name__ + str(y.grad_fn)


def test_conv_errors():
    x, w = ampc.zeros(2, 4, 8, 8), ampc.zeros(8, 3, 3, 3)
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d, but got "
                                           r"input of size: \[2, 3\]"):
        F.conv2d(ampc.zeros(2, 3), w)
    with pytest.raises(RuntimeError,
                       match=r"Given groups=1, weight of size \[8, 3, 3, 3\], expected input\[2, 4, 8, 8\] "
                                           r"to have 3 channels, but got 4 channels instead"):
        F.conv2d(x, w)
    with pytest.raises(RuntimeError, match=r"Given groups=3, expected weight to be divisible by 3 at dimension 0"):
        F.conv2d(x, ampc.zeros(8, 2, 3, 3), groups=3)
    with pytest.raises(RuntimeError, match=r"Kernel size can't be greater than actual input size"):
        F.conv2d(ampc.zeros(1, 3, 2, 2), w)
    with pytest.raises(RuntimeError, match=r"expected bias to be 1-dimensional with 8 elements"):
        F.conv2d(ampc.zeros(1, 3, 5, 5), w, ampc.zeros(7))
    with pytest.raises(RuntimeError, match="non-positive stride is not supported"):
        F.conv2d(ampc.zeros(1, 3, 5, 5), w, stride=0)
    with pytest.raises(RuntimeError, match="negative padding is not supported"):
        F.conv2d(ampc.zeros(1, 3, 5, 5), w, padding=-1)
    with pytest.raises(RuntimeError, match="non-positive dilation is not supported"):
        F.conv2d(ampc.zeros(1, 3, 5, 5), w, dilation=0)
    with pytest.raises(RuntimeError, match=r"Input type \(torch.FloatTensor\) and weight type \(torch.DoubleTensor\) "
                                           r"should be the same"):
        F.conv2d(ampc.zeros(1, 3, 5, 5), w.double())
    with pytest.raises(RuntimeError, match="padding='same' is not supported for strided convolutions"):
        F.conv2d(ampc.zeros(1, 3, 5, 5), w, stride=2, padding="same")
    with pytest.raises(RuntimeError, match="Invalid padding string: 'foo'"):
        F.conv2d(ampc.zeros(1, 3, 5, 5), w, padding="foo")
    with pytest.raises(RuntimeError, match=r"Expected 2D \(unbatched\) or 3D \(batched\) input to conv1d"):
        F.conv1d(x, ampc.zeros(8, 4, 3))


# ---------------------------------------------------------------- pooling

def np_max_pool(x, k, s, p, d, ceil):
    n, c, h, w = x.shape

    def out_size(i, k, s, p, d):
        o = (i + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
        return o - 1 if ceil and (o - 1) * s >= i + p else o

    oh, ow = out_size(h, k[0], s[0], p[0], d[0]), out_size(w, k[1], s[1], p[1], d[1])
    out = np.full((n, c, oh, ow), -np.inf)
    for i in range(oh):
        for j in range(ow):
            for a in range(k[0]):
                for b in range(k[1]):
                    y, z = i * s[0] - p[0] + a * d[0], j * s[1] - p[1] + b * d[1]
                    if 0 <= y < h and 0 <= z < w:
                        out[:, :, i, j] = np.maximum(out[:, :, i, j], x[:, :, y, z])
    return out


POOL_GRID = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1), dilation=(2, 1)),
    dict(kernel_size=(3, 2), stride=2, ceil_mode=True),
]


@pytest.mark.parametrize("kw", POOL_GRID)
def test_max_pool2d(rng, kw):
    x = rng.standard_normal((2, 3, 9, 8))
    k = kw["kernel_size"] if isinstance(kw["kernel_size"], tuple) else (kw["kernel_size"],) * 2
    s = kw.get("stride", k)
    s = s if isinstance(s, tuple) else (s, s)
    p = kw.get("padding", 0)
    p = p if isinstance(p, tuple) else (p, p)
    d = kw.get("dilation", 1)
    d = d if isinstance(d, tuple) else (d, d)
    close_max_scaled(F.max_pool2d(A(x), **kw), np_max_pool(x, k, s, p, d, kw.get("ceil_mode", False)))
    check_against_torch(lambda x: F.max_pool2d(x, **kw), lambda x: TF.max_pool2d(x, **kw), [x], grad=(0,), rng=rng)
    ya, ia = F.max_pool2d(A(x), return_indices=True, **kw)
    yt, it = TF.max_pool2d(T(x), return_indices=True, **kw)
    assert ia.dtype == ampc.int64 and np.array_equal(ia.numpy(), it.numpy())
    check_against_torch(lambda x: F.max_pool2d(x, **kw), lambda x: TF.max_pool2d(x, **kw), [x[0]],
                        grad=(0,))  # unbatched


@pytest.mark.parametrize("dtype", [ampc.float32, ampc.float16, ampc.bfloat16])
def test_max_pool2d_dtypes_nan_and_noncontiguous(rng, dtype):
    x = rng.standard_normal((2, 2, 6, 6))
    x[0, 0, 1, 1] = np.nan
    check_against_torch(lambda x: F.max_pool2d(x, 2), lambda x: TF.max_pool2d(x, 2), [x], dtype=dtype, grad=(0,), tol=0)
    xa, xt = A(x).transpose(2, 3)[:, :, ::2], T(x).transpose(2, 3)[:, :, ::2]
    close_max_scaled(F.max_pool2d(xa, 2, 1), TF.max_pool2d(xt, 2, 1), 0)


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
                                dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
                                dict(kernel_size=(2, 3), stride=(2, 1), padding=(1, 1), count_include_pad=False),
                                dict(kernel_size=2, divisor_override=3)])
def test_avg_pool2d(rng, kw):
    x = rng.standard_normal((2, 3, 7, 8))
    check_against_torch(lambda x: F.avg_pool2d(x, **kw), lambda x: TF.avg_pool2d(x, **kw), [x], grad=(0,), rng=rng)
    check_against_torch(lambda x: F.avg_pool2d(x, **kw), lambda x: TF.avg_pool2d(x, **kw), [x], grad=(0,),
                        dtype=ampc.float16, rng=rng)
    if kw == dict(kernel_size=2):  # plain 2x2 average, from NumPy
        close_max_scaled(F.avg_pool2d(A(x), 2), x[:, :, :6].reshape(2, 3, 3, 2, 4, 2).mean(axis=(3, 5)))


@pytest.mark.parametrize("size", [(3, 4), 1, (None, 2), (7, 5), (5, None)])
def test_adaptive_avg_pool2d(rng, size):
    x = rng.standard_normal((2, 3, 7, 8))
    check_against_torch(lambda x: F.adaptive_avg_pool2d(x, size), lambda x: TF.adaptive_avg_pool2d(x, size), [x],
                        grad=(0,), rng=rng)
    if size == 1:
        close_max_scaled(F.adaptive_avg_pool2d(A(x), 1), x.mean(axis=(2, 3), keepdims=True))
    check_against_torch(lambda x: F.adaptive_avg_pool2d(x, size), lambda x: TF.adaptive_avg_pool2d(x, size), [x[1]],
                        grad=(0,))


def test_pool_errors():
    x = ampc.zeros(2, 3, 5, 5)
    with pytest.raises(RuntimeError, match=r"pad should be at most half of effective kernel size, but got pad=2, "
                                           r"kernel_size=3 and dilation=1"):
        F.max_pool2d(x, 3, padding=2)
    with pytest.raises(RuntimeError, match=r"Given input size: \(3x2x2\). Calculated output size: \(3x0x0\). Output "
                                           r"size is too small"):
        F.avg_pool2d(ampc.zeros(3, 2, 2), 3)
    with pytest.raises(RuntimeError, match="non-empty 3D or 4D"):
        F.max_pool2d(ampc.zeros(2, 3), 2)
    with pytest.raises(RuntimeError, match="divisor must be not zero"):
        F.avg_pool2d(x, 2, divisor_override=0)
    with pytest.raises(RuntimeError, match=r"adaptive_avg_pool2d\(\): Expected 3D or 4D tensor, but got \[2, 3\]"):
        F.adaptive_avg_pool2d(ampc.zeros(2, 3), 2)
    with pytest.raises(RuntimeError, match="dilation should be greater than zero"):
        F.max_pool2d(x, 2, dilation=0)
    assert tuple(F.max_pool2d(ampc.zeros(0, 3, 4, 4), 2).shape) == (0, 3, 2, 2)


# ---------------------------------------------------------------- normalization

@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("shape", [(4, 3), (4, 3, 5), (3, 3, 4, 5)])
def test_batch_norm(rng, training, shape):
    x, w, b = rng.standard_normal(shape), rng.standard_normal(3), rng.standard_normal(3)
    rm, rv = rng.standard_normal(3), rng.random(3) + 0.5
    rma, rva, rmt, rvt = A(rm), A(rv), T(rm), T(rv)
    check_against_torch(lambda x, w, b: F.batch_norm(x, rma, rva, w, b, training=training, momentum=0.3, eps=1e-3),
                        lambda x, w, b: TF.batch_norm(x, rmt, rvt, w, b, training=training, momentum=0.3, eps=1e-3),
                        [x, w, b], grad=(0, 1, 2), rng=rng)
    close_max_scaled(rma, rmt)
    close_max_scaled(rva, rvt)
    if training:  # NumPy: batch statistics, PyTorch's unbiased running_var
        axes = tuple(i for i in range(len(shape)) if i != 1)
        n = x.size / 3
        close_max_scaled(rma, (1 - 0.3) * rm + 0.3 * x.mean(axis=axes))
        close_max_scaled(rva, (1 - 0.3) * rv + 0.3 * x.var(axis=axes) * n / (n - 1))
        xm = x.mean(axis=axes, keepdims=True)
        want = (x - xm) / np.sqrt(x.var(axis=axes, keepdims=True) + 1e-5)
        close_max_scaled(F.batch_norm(A(x), None, None, training=True), want)


def test_batch_norm_mixed_precision_and_no_affine(rng):
    x = rng.standard_normal((8, 4, 3, 3))
    for dtype in (ampc.float16, ampc.bfloat16):
        rma, rmt = ampc.zeros(4), torch.zeros(4)
        rva, rvt = ampc.ones(4), torch.ones(4)
        xa, xt = A(x, dtype, True), T(x, dtype, True)
        wa, wt = ampc.ones(4, requires_grad=True), torch.ones(4, requires_grad=True)
        ya = F.batch_norm(xa, rma, rva, wa, None, training=True)
        yt = TF.batch_norm(xt, rmt, rvt, wt, None, training=True)
        assert ya.dtype == dtype and rma.dtype == ampc.float32
        close_max_scaled(ya, yt.float(), TOL[dtype])
        close_max_scaled(rva, rvt, 1e-5)
        g = np.random.default_rng(5).standard_normal(x.shape)
        ya.backward(A(g, dtype))
        yt.backward(T(g, dtype))
        assert xa.grad.dtype == dtype and wa.grad.dtype == ampc.float32
        close_max_scaled(xa.grad, xt.grad.float(), TOL[dtype] * 4)
        close_max_scaled(wa.grad, wt.grad, TOL[dtype] * 4)
    check_against_torch(lambda x: F.batch_norm(x, None, None, training=True),
                        lambda x: TF.batch_norm(x, None, None, training=True), [x], grad=(0,), rng=rng)


def test_batch_norm_errors():
    with pytest.raises(ValueError, match=r"Expected more than 1 value per channel when training, got input size "
                                         r"\[1, 3\]"):
        F.batch_norm(ampc.zeros(1, 3), ampc.zeros(3), ampc.ones(3), training=True)
    with pytest.raises(RuntimeError, match="running_mean should contain 3 elements not 4"):
        F.batch_norm(ampc.zeros(2, 3, 4), ampc.zeros(4), ampc.ones(3), training=True)
    with pytest.raises(RuntimeError, match="running_mean must be defined in evaluation mode"):
        F.batch_norm(ampc.zeros(2, 3, 4), None, None, training=False)
    with pytest.raises(RuntimeError, match="weight should contain 3 elements not 4"):
        F.batch_norm(ampc.zeros(2, 3, 4), ampc.zeros(3), ampc.ones(3), ampc.ones(4))


@pytest.mark.parametrize("shape,norm", [((3, 4, 6), (6,)), ((3, 4, 6), (4, 6)), ((5, 7), (7,)), ((2, 3, 1), (1,))])
def test_layer_norm(rng, shape, norm):
    x, w, b = rng.standard_normal(shape), rng.standard_normal(norm), rng.standard_normal(norm)
    check_against_torch(lambda x, w, b: F.layer_norm(x, norm, w, b, eps=1e-4), lambda x, w,
                        b: TF.layer_norm(x, norm, w, b, eps=1e-4), [x, w, b], grad=(0, 1, 2), rng=rng)
    check_against_torch(lambda x: F.layer_norm(x, norm), lambda x: TF.layer_norm(x, norm), [x], grad=(0,), rng=rng)
    axes = tuple(range(len(shape) - len(norm), len(shape)))
    xm = x.mean(axis=axes, keepdims=True)
    close_max_scaled(F.layer_norm(A(x), norm, A(w), A(b)),
                     (x - xm) / np.sqrt(x.var(axis=axes, keepdims=True) + 1e-5) * w + b)


@pytest.mark.parametrize("dtype", [ampc.float32, ampc.float16, ampc.bfloat16])
def test_layer_norm_low_precision(rng, dtype):
    x = rng.standard_normal((4, 64)) * 3 + 100  # a large mean: fp32 stats from the fp16 values
    w, b = rng.standard_normal(64), rng.standard_normal(64)
    ya = F.layer_norm(A(x, dtype), (64,), A(w, dtype), A(b, dtype))
    assert ya.dtype == dtype
    xr = np.asarray(x).astype(NP[dtype]).astype(np.float64)
    wr, br = (np.asarray(v).astype(NP[dtype]).astype(np.float64) for v in (w, b))
    want = (xr - xr.mean(1, keepdims=True)) / np.sqrt(xr.var(1, keepdims=True) + 1e-5) * wr + br
    close_max_scaled(ya, want, TOL[dtype])
    check_against_torch(lambda x, w: F.layer_norm(x, (64,), w), lambda x, w: TF.layer_norm(x, (64,), w), [x, w],
                        grad=(0, 1), dtype=dtype, tol=TOL[dtype] * 4, rng=rng)


@pytest.mark.parametrize("shape,groups", [((3, 6, 5), 3), ((2, 4, 3, 3), 2), ((2, 4), 4), ((2, 6, 2, 2), 1)])
def test_group_norm(rng, shape, groups):
    x, w, b = rng.standard_normal(shape), rng.standard_normal(shape[1]), rng.standard_normal(shape[1])
    check_against_torch(lambda x, w, b: F.group_norm(x, groups, w, b), lambda x, w, b: TF.group_norm(x, groups, w, b),
                        [x, w, b], grad=(0, 1, 2), rng=rng)
    check_against_torch(lambda x: F.group_norm(x, groups), lambda x: TF.group_norm(x, groups), [x], grad=(0,),
                        dtype=ampc.float32)


def test_norm_errors():
    with pytest.raises(RuntimeError,
                       match=r"Given normalized_shape=\[3\], expected input with shape \[\*, 3\], but got "
                                           r"input of size\[2, 3, 4\]"):
        F.layer_norm(ampc.zeros(2, 3, 4), (3,))
    with pytest.raises(RuntimeError, match=r"Expected weight to be of same shape as normalized_shape, but got weight "
                                           r"of shape \[3\] and normalized_shape = \[4\]"):
        F.layer_norm(ampc.zeros(2, 3, 4), (4,), weight=ampc.ones(3))
    with pytest.raises(RuntimeError, match=r"Expected number of channels in input to be divisible by num_groups, but "
                                           r"got input of shape \[2, 6, 4\] and num_groups=4"):
        F.group_norm(ampc.zeros(2, 6, 4), 4)
    with pytest.raises(RuntimeError, match="Expected at least 2 dimensions for input tensor but received 1"):
        F.group_norm(ampc.zeros(6), 3)


# ---------------------------------------------------------------- embedding and dropout

@pytest.mark.parametrize("kw", [dict(), dict(padding_idx=2), dict(padding_idx=-1, scale_grad_by_freq=True)])
def test_embedding(rng, kw):
    w = rng.standard_normal((10, 4))
    idx = rng.integers(0, 10, (3, 5))
    idx[0, :3] = [2, 9, 2]
    wa, wt = A(w, requires_grad=True), T(w, requires_grad=True)
    ya, yt = F.embedding(A(idx), wa, **kw), TF.embedding(T(idx), wt, **kw)
    close_max_scaled(ya, yt)
    close_max_scaled(ya, w[idx])
    g = rng.standard_normal(tuple(yt.shape))
    ya.backward(A(g))
    yt.backward(T(g))
    close_max_scaled(wa.grad, wt.grad)
    if "padding_idx" in kw:
        assert np.all(host(wa.grad)[kw["padding_idx"]] == 0)
    close_max_scaled(F.embedding(A(idx.astype(np.int32)), A(w, ampc.float16)), w.astype(np.float16)[idx], 0)


def test_embedding_errors():
    w = ampc.zeros(10, 4)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(ampc.tensor([1, 10]), w)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(ampc.tensor([-1]), w)
    with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices' to have one of the following "
                                           "scalar types: Long, Int"):
        F.embedding(ampc.tensor([1.0]), w)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        F.embedding(ampc.tensor([1]), w, padding_idx=10)


def test_dropout_philox_stream_and_reproducibility():
    x = ampc.ones(10_000, requires_grad=True)
    ampc.manual_seed(7)
    y = F.dropout(x, 0.3)
    ampc.manual_seed(7)
    y2 = F.dropout(x, 0.3)
    assert np.array_equal(host(y), host(y2))
    ampc.manual_seed(7)  # element i keeps iff Philox uniform i < 1 - p: the bernoulli_(1 - p) stream
    keep = ampc.empty(10_000).bernoulli_(0.7)
    assert np.array_equal(host(y) != 0, host(keep) != 0)
    vals = host(y)
    assert np.allclose(vals[vals != 0], 1 / 0.7)
    assert abs((vals != 0).mean() - 0.7) < 0.02
    y.sum().backward()
    assert np.array_equal(host(x.grad), vals)  # grad = mask / (1 - p)
    z = F.dropout(x, 0.3)  # the generator moved on
    assert not np.array_equal(host(z), vals)


def test_dropout_modes_and_dtypes():
    x = ampc.ones(64, 32)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    assert np.all(host(F.dropout(x, 1.0)) == 0)
    for dtype in (ampc.float16, ampc.bfloat16, ampc.float64):
        y = F.dropout(x.to(dtype), 0.5)
        assert y.dtype == dtype and set(np.unique(host(y))) <= {0.0, 2.0}
    xt = ampc.ones(6, 8).t()  # non-contiguous input
    assert tuple(F.dropout(xt, 0.5).shape) == (8, 6)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        F.dropout(x, 1.5)


# ---------------------------------------------------------------- softmax

@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_softmax_log_softmax(rng, dim):
    x = rng.standard_normal((3, 4, 5)) * 3
    close_max_scaled(F.softmax(A(x), dim), np_softmax(x, dim))
    close_max_scaled(F.log_softmax(A(x), dim), np_log_softmax(x, dim))
    check_against_torch(lambda x: F.softmax(x, dim), lambda x: TF.softmax(x, dim), [x], grad=(0,), rng=rng)
    check_against_torch(lambda x: F.log_softmax(x, dim), lambda x: TF.log_softmax(x, dim), [x], grad=(0,), rng=rng)


def test_softmax_dtype_argument_and_edge_cases(rng):
    x = rng.standard_normal((4, 7)) * 4
    for dtype in (ampc.float16, ampc.bfloat16):
        xa = A(x, dtype, True)
        y = F.log_softmax(xa, 1, dtype=ampc.float32)  # fp32 math on the low-precision values
        assert y.dtype == ampc.float32
        xr = np.asarray(x).astype(NP[dtype]).astype(np.float64)
        close_max_scaled(y, np_log_softmax(xr, 1), 1e-6)
        y.sum().backward()
        assert xa.grad.dtype == dtype  # backward runs back into the input's dtype
        y16 = F.softmax(xa, 1)
        assert y16.dtype == dtype
        close_max_scaled(y16, np_softmax(xr, 1), TOL[dtype])
    close_max_scaled(F.softmax(ampc.tensor(2.0), 0), np.array(1.0))
    close_max_scaled(F.log_softmax(ampc.tensor([[float("-inf"), 0.0]]), 1), np.array([[-np.inf, 0.0]]))
    assert tuple(F.softmax(ampc.zeros(0, 3), 1).shape) == (0, 3)
    xt = A(x).t()
    close_max_scaled(F.softmax(xt, 0), np_softmax(x.T, 0))
    with pytest.raises(NotImplementedError, match="not implemented for"):
        F.softmax(ampc.tensor([1, 2]), 0)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-1, 0\], but got 1\)"):
        F.softmax(ampc.tensor(2.0), 1)


# ---------------------------------------------------------------- cross entropy and nll

CE_CASES = [dict(), dict(weight=True), dict(label_smoothing=0.2), dict(weight=True, label_smoothing=0.3,
                                                                         reduction="sum"),
            dict(reduction="none", weight=True, label_smoothing=0.1), dict(ignore_index=3, reduction="mean")]


@pytest.mark.parametrize("shape", [(6, 5), (3, 5, 4, 2), (5,)])
@pytest.mark.parametrize("kw", CE_CASES)
def test_cross_entropy_class_targets(rng, shape, kw):
    c = shape[1] if len(shape) > 1 else shape[0]
    x = rng.standard_normal(shape) * 2
    t = rng.integers(0, c, (shape[0],) + shape[2:] if len(shape) > 1 else ())
    if t.ndim:
        t.flat[0] = kw.get("ignore_index", -100)
    w = rng.random(c) + 0.5
    ka, kt = dict(kw), dict(kw)
    if kw.get("weight"):
        ka["weight"], kt["weight"] = A(w), T(w)
    check_against_torch(lambda x: F.cross_entropy(x, A(t), **ka), lambda x: TF.cross_entropy(x, T(t), **kt), [x],
                        grad=(0,), rng=rng)
    if len(shape) > 1:
        ref = np_cross_entropy(x, t, w if kw.get("weight") else None, kw.get("ignore_index", -100),
                               kw.get("label_smoothing", 0.0), kw.get("reduction", "mean"))
        close_max_scaled(F.cross_entropy(A(x), A(t), **ka), ref)


@pytest.mark.parametrize("kw", [dict(), dict(weight=True, label_smoothing=0.2), dict(reduction="none"),
                                dict(reduction="sum", label_smoothing=0.5)])
def test_cross_entropy_probability_targets(rng, kw):
    x, p = rng.standard_normal((4, 6, 3)), rng.random((4, 6, 3))
    p /= p.sum(1, keepdims=True)
    w = rng.random(6) + 0.5
    ka, kt = dict(kw), dict(kw)
    if kw.get("weight"):
        ka["weight"], kt["weight"] = A(w), T(w)
    check_against_torch(lambda x, p: F.cross_entropy(x, p, **ka), lambda x, p: TF.cross_entropy(x, p, **kt), [x, p],
                        grad=(0, 1), rng=rng)


@pytest.mark.parametrize("dtype", [ampc.float32, ampc.float16, ampc.bfloat16])
def test_cross_entropy_low_precision(rng, dtype):
    x, t = rng.standard_normal((16, 10)) * 3, rng.integers(0, 10, 16)
    check_against_torch(lambda x: F.cross_entropy(x, A(t), label_smoothing=0.1),
                        lambda x: TF.cross_entropy(x, T(t), label_smoothing=0.1), [x], grad=(0,), dtype=dtype, rng=rng)


def test_cross_entropy_edge_cases_and_errors(rng):
    x = ampc.zeros(3, 5)
    assert math.isnan(F.cross_entropy(x, ampc.tensor([-100, -100, -100])).item())  # all ignored: 0/0 as PyTorch
    assert math.isnan(F.cross_entropy(ampc.zeros(0, 5), ampc.zeros(0, dtype=ampc.int64)).item())
    assert F.cross_entropy(ampc.zeros(0, 5), ampc.zeros(0, dtype=ampc.int64), reduction="sum").item() == 0
    with pytest.raises(IndexError, match="Target 10 is out of bounds."):
        F.cross_entropy(x, ampc.tensor([1, 2, 10]))
    with pytest.raises(IndexError, match="Target -5 is out of bounds."):
        F.cross_entropy(x, ampc.tensor([1, 2, -5]))
    with pytest.raises(ValueError, match=r"Expected input batch_size \(3\) to match target batch_size \(2\)."):
        F.cross_entropy(x, ampc.tensor([1, 2]))
    with pytest.raises(RuntimeError, match=r"weight tensor should be defined either for all 5 classes or no classes "
                                           r"but got weight tensor of shape: \[4\]"):
        F.cross_entropy(x, ampc.tensor([1, 2, 3]), weight=ampc.ones(4))
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0. Got: 1.5"):
        F.cross_entropy(x, ampc.tensor([1, 2, 3]), label_smoothing=1.5)
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got Float"):
        F.cross_entropy(x, ampc.tensor([1.0, 2.0, 3.0]))
    with pytest.raises(RuntimeError, match=r"Expected target size \[2, 3\], got \[2, 4\]"):
        F.cross_entropy(ampc.zeros(2, 5, 3), ampc.zeros(2, 4, dtype=ampc.int64))
    with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
        F.cross_entropy(x, ampc.tensor([1, 2, 3]), reduction="foo")
    with pytest.raises(RuntimeError, match="ignore_index is not supported for floating point target"):
        F.cross_entropy(x, ampc.zeros(3, 5), ignore_index=1)


@pytest.mark.parametrize("kw", [dict(), dict(weight=True), dict(reduction="none"), dict(reduction="sum", weight=True),
                                dict(ignore_index=1)])
def test_nll_loss(rng, kw):
    lp = np_log_softmax(rng.standard_normal((6, 4, 3)), 1)
    t = rng.integers(0, 4, (6, 3))
    w = rng.random(4) + 0.5
    ka, kt = dict(kw), dict(kw)
    if kw.get("weight"):
        ka["weight"], kt["weight"] = A(w), T(w)
    check_against_torch(lambda x: F.nll_loss(x, A(t), **ka), lambda x: TF.nll_loss(x, T(t), **kt), [lp], grad=(0,),
                        rng=rng)
    with pytest.raises(IndexError, match="Target 4 is out of bounds."):
        F.nll_loss(A(lp[:, :, 0]), ampc.tensor([0, 1, 2, 3, 4, 0]))


# ---------------------------------------------------------------- elementwise losses

LOSSES = ["mse_loss", "l1_loss", "smooth_l1_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits"]


def np_loss(name, x, t, w=None, pw=None, beta=1.0):
    d = x - t
    if name == "mse_loss":
        return d * d
    if name == "l1_loss":
        return np.abs(d)
    if name == "smooth_l1_loss":
        return np.where(np.abs(d) < beta, 0.5 * d * d / beta, np.abs(d) - 0.5 * beta)
    if name == "binary_cross_entropy":
        return -(w if w is not None else 1) * (t * np.log(x) + (1 - t) * np.log(1 - x))
    lw = 1 if pw is None else (pw - 1) * t + 1
    return ((1 - t) * x + lw * np.log1p(np.exp(-x))) * (w if w is not None else 1)


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_elementwise_losses(rng, name, reduction):
    x, t = rng.random((4, 5)) * 0.9 + 0.05, rng.random((4, 5))
    w, pw = rng.random(5), rng.random(5) * 2
    ka, kt, kn = dict(reduction=reduction), dict(reduction=reduction), {}
    if name.startswith("binary"):
        ka["weight"], kt["weight"], kn["w"] = A(w), T(w), w
    if name.endswith("logits"):
        ka["pos_weight"], kt["pos_weight"], kn["pw"] = A(pw), T(pw), pw
    if name == "smooth_l1_loss":
        ka["beta"] = kt["beta"] = kn["beta"] = 0.3
    ref = np_loss(name, x, t, **kn)
    ref = ref if reduction == "none" else (ref.mean() if reduction == "mean" else ref.sum())
    close_max_scaled(getattr(F, name)(A(x), A(t), **ka), np.asarray(ref))
    check_against_torch(lambda x, t: getattr(F, name)(x, t, **ka), lambda x, t: getattr(TF, name)(x, t, **kt), [x, t],
                        grad=(0, 1), rng=rng)
    check_against_torch(lambda x, t: getattr(F, name)(x, t, reduction=reduction), lambda x,
                        t: getattr(TF, name)(x, t, reduction=reduction), [x, t], grad=(0,), dtype=ampc.float32, rng=rng)


def test_losses_broadcast_beta_zero_and_errors(rng):
    x, t = rng.standard_normal((3, 4)), rng.standard_normal(4)
    with warnings.catch_warnings():  # PyTorch warns about the broadcast target; ampc follows it silently
        warnings.simplefilter("ignore")
        check_against_torch(lambda x, t: F.mse_loss(x, t), lambda x, t: TF.mse_loss(x, t), [x, t], grad=(0, 1), rng=rng)
        check_against_torch(lambda x, t: F.l1_loss(x, t, reduction="none"), lambda x,
                            t: TF.l1_loss(x, t, reduction="none"), [x, t], grad=(0, 1), rng=rng)
    check_against_torch(lambda x, t: F.smooth_l1_loss(x, t, beta=0.0), lambda x, t: TF.smooth_l1_loss(x, t, beta=0.0),
                        [x, x[::-1].copy()], grad=(0, 1), rng=rng)
    assert math.isnan(F.mse_loss(ampc.zeros(0), ampc.zeros(0)).item())
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(ampc.tensor([1.5]), ampc.tensor([1.0]))
    with pytest.raises(ValueError, match=r"Target size \(\[3\]\) must be the same as input size \(\[3, 1\]\)"):
        F.binary_cross_entropy_with_logits(ampc.zeros(3, 1), ampc.zeros(3))
    with pytest.raises(ValueError, match="that is different to the input size"):
        F.binary_cross_entropy(ampc.zeros(3, 1), ampc.zeros(3))
    with pytest.raises(ValueError, match="bad is not a valid value for reduction"):
        F.mse_loss(ampc.zeros(3), ampc.zeros(3), reduction="bad")
    assert F.mse_loss(ampc.ones(3), ampc.zeros(3), size_average=False).item() == 3.0  # legacy arguments


# ---------------------------------------------------------------- attention and linear

def np_sdpa(q, k, v, mask=None, causal=False, scale=None):
    s = q @ np.swapaxes(k, -1, -2) * (scale if scale is not None else 1 / math.sqrt(q.shape[-1]))
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    return np_softmax(s, -1) @ v


@pytest.mark.parametrize("kind", ["plain", "causal", "bool", "float", "broadcast_batch"])
def test_scaled_dot_product_attention(rng, kind):
    q, k, v = rng.standard_normal((2, 3, 4, 8)), rng.standard_normal((2, 3, 6, 8)), rng.standard_normal((2, 3, 6, 5))
    kw, mask = {}, None
    if kind == "causal":
        kw["is_causal"] = True
    if kind == "bool":
        mask = rng.random((4, 6)) > 0.3
    if kind == "float":
        mask, kw["scale"] = rng.standard_normal((3, 1, 6)), 0.7
    if kind == "broadcast_batch":
        k, v = k[:, :1], v[:1]
    ka, kt = dict(kw), dict(kw)
    if mask is not None:
        ka["attn_mask"], kt["attn_mask"] = A(mask), T(mask)
    check_against_torch(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **ka), lambda q, k,
                        v: TF.scaled_dot_product_attention(q, k, v, **kt), [q, k, v], grad=(0, 1, 2), rng=rng)
    close_max_scaled(F.scaled_dot_product_attention(A(q), A(k), A(v), **ka),
                     np_sdpa(q, k, v, mask, kw.get("is_causal", False), kw.get("scale")))


def test_sdpa_dtypes_dropout_and_errors(rng):
    q, k, v = rng.standard_normal((2, 5, 8)), rng.standard_normal((2, 7, 8)), rng.standard_normal((2, 7, 4))
    for dtype in (ampc.float32, ampc.float16, ampc.bfloat16):
        check_against_torch(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), lambda q, k,
                            v: TF.scaled_dot_product_attention(q, k, v, is_causal=True), [q, k, v], dtype=dtype,
                            grad=(0, 1, 2), tol=TOL[dtype] * 3, rng=rng)
    qa, ka, va = A(q, requires_grad=True), A(k), A(v)
    ampc.manual_seed(3)
    y1 = F.scaled_dot_product_attention(qa, ka, va, dropout_p=0.5)
    ampc.manual_seed(3)
    y2 = F.scaled_dot_product_attention(qa, ka, va, dropout_p=0.5)
    assert np.array_equal(host(y1), host(y2))
    assert not np.allclose(host(y1), np_sdpa(q, k, v))
    y1.sum().backward()
    assert qa.grad is not None and np.all(np.isfinite(host(qa.grad)))
    mask = np.zeros((5, 7), bool)  # a fully masked row attends to nothing: zeros, as PyTorch
    mask[1:] = True
    close_max_scaled(F.scaled_dot_product_attention(A(q), ka, va, attn_mask=A(mask)),
                     TF.scaled_dot_product_attention(T(q), T(k), T(v), attn_mask=T(mask)))
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when is_causal=True"):
        F.scaled_dot_product_attention(ka, ka, va, attn_mask=A(mask), is_causal=True)


@pytest.mark.parametrize("xs", [(5,), (3, 5), (2, 3, 5)])
def test_linear(rng, xs):
    x, w, b = rng.standard_normal(xs), rng.standard_normal((4, 5)), rng.standard_normal(4)
    close_max_scaled(F.linear(A(x), A(w), A(b)), x @ w.T + b)
    check_against_torch(F.linear, TF.linear, [x, w, b], grad=(0, 1, 2), rng=rng)
    check_against_torch(F.linear, TF.linear, [x, w], grad=(0, 1), rng=rng)
    check_against_torch(F.linear, TF.linear, [x, w, b], grad=(0, 1, 2), dtype=ampc.bfloat16, rng=rng)
    name = str(F.linear(A(x, requires_grad=True), A(w), A(b)).grad_fn).split()[0]  # PyTorch's node names
    assert name == str(TF.linear(T(x, requires_grad=True), T(w), T(b)).grad_fn).split()[0]
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied"):
        F.linear(A(x), A(w.T))
    with pytest.raises(RuntimeError, match="mat1 and mat2 must have the same dtype"):
        F.linear(A(x), A(w, ampc.float32))


# ---------------------------------------------------------------- gradients by central differences

def test_gradcheck_central_differences(rng):
    numeric_grad_check(lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2), groups=2),
                       [rng.standard_normal((1, 2, 5, 5)), rng.standard_normal((2, 1, 2, 2)), rng.standard_normal(2)],
                       (0, 1, 2))
    numeric_grad_check(lambda x, w, b: F.layer_norm(x, (4,), w, b), [rng.standard_normal((3, 4)),
                                                                    rng.standard_normal(4), rng.standard_normal(4)],
                       (0, 1, 2))
    numeric_grad_check(lambda x, w, b: F.group_norm(x, 2, w, b), [rng.standard_normal((2, 4, 3)),
                                                                  rng.standard_normal(4), rng.standard_normal(4)],
                       (0, 1, 2))
    numeric_grad_check(lambda x: F.batch_norm(x, None, None, training=True), [rng.standard_normal((4, 2, 3))], (0,))
    numeric_grad_check(lambda x: F.cross_entropy(x, ampc.tensor([1, 0, 3]), label_smoothing=0.3,
                                                 weight=ampc.tensor([1.0, 2.0, 0.5, 1.5], dtype=ampc.float64)),
                       [rng.standard_normal((3, 4))], (0,))
    numeric_grad_check(lambda x, p: F.cross_entropy(x, p, label_smoothing=0.2), [rng.standard_normal((3, 4)),
                                                                                 rng.random((3, 4))], (0, 1))
    numeric_grad_check(lambda x: F.max_pool2d(x, 2, 1), [rng.standard_normal((1, 1, 4, 4))], (0,))
    numeric_grad_check(lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), [rng.standard_normal((1, 1, 5, 4))],
                       (0,))
    numeric_grad_check(lambda x: F.adaptive_avg_pool2d(x, (2, 3)), [rng.standard_normal((1, 1, 5, 4))], (0,))
    numeric_grad_check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                       [rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3, 2))],
                       (0, 1, 2))
    numeric_grad_check(lambda x, t: F.binary_cross_entropy_with_logits(x, t, pos_weight=A(np.array([2.0, 0.5]))),
                       [rng.standard_normal((3, 2)), rng.random((3, 2))], (0, 1))
    numeric_grad_check(lambda x, t: F.binary_cross_entropy(x, t), [rng.random((3, 2)) * 0.8 + 0.1, rng.random((3, 2))],
                       (0, 1))
    numeric_grad_check(lambda x: F.log_softmax(x, 0), [rng.standard_normal((3, 2))], (0,))


def test_pad_constant(rng):
    x = rng.standard_normal((2, 3, 4))
    check_against_torch(lambda x: F.pad(x, (1, 2)), lambda x: TF.pad(x, (1, 2)), [x])
    check_against_torch(lambda x: F.pad(x, (1, 0, -1, 2), value=3.0), lambda x: TF.pad(x, (1, 0, -1, 2), value=3.0),
                        [x])


# ---------------------------------------------------------------- autocast

def test_autocast_policies(rng):
    """Each op follows torch's CPU autocast list (backward through autocast's casts is the autograd
    engine's part: tested there; each row against torch: tests/test_autocast.py)."""
    x, w, b = A(rng.standard_normal((2, 3, 6, 6)), ampc.float32), A(rng.standard_normal((4, 3, 3, 3)), ampc.float32), \
        ampc.zeros(4)
    lin_w = A(rng.standard_normal((5, 16)), ampc.float32)
    t = ampc.tensor([1, 0])
    with ampc.autocast("cpu", dtype=ampc.bfloat16):
        y = F.conv2d(x, w, b)  # lower precision
        assert y.dtype == ampc.bfloat16
        h = F.linear(y.flatten(1)[:, :16], lin_w)
        assert h.dtype == ampc.bfloat16
        assert F.softmax(h, 1).dtype == ampc.bfloat16  # not on the CPU list (CUDA: fp32 through dtype=)
        assert F.log_softmax(h, 1, dtype=ampc.float64).dtype == ampc.float64
        assert F.layer_norm(h, (5,)).dtype == ampc.bfloat16  # CUDA list only
        assert F.group_norm(y, 2).dtype == ampc.bfloat16
        assert F.mse_loss(h, ampc.zeros(2, 5)).dtype == ampc.float32
        assert F.binary_cross_entropy(F.softmax(h, 1), ampc.zeros(2, 5)).dtype == ampc.float32  # CPU: fp32, not banned
        q = h.reshape(2, 1, 5)
        assert F.scaled_dot_product_attention(q.float(), q.float(), q.float()).dtype == ampc.bfloat16
        loss = F.cross_entropy(h, t)
        assert loss.dtype == ampc.float32


@pytest.mark.parametrize("name,kw", [("relu", {}), ("gelu", {}), ("gelu", {"approximate": "tanh"}), ("silu", {}),
                                     ("sigmoid", {}), ("tanh", {})])
def test_activation_wrappers(rng, name, kw):
    x = rng.standard_normal((3, 4))
    check_against_torch(lambda x: getattr(F, name)(x, **kw), lambda x: getattr(TF, name)(x, **kw), [x], grad=(0,),
                        rng=rng)


def test_inplace_activations():
    x = ampc.tensor([-1.0, 2.0])
    assert F.relu(x, inplace=True) is x and x.tolist() == [0.0, 2.0]


def test_nn_rules_refuse_create_graph(rng):
    """The nn ops whose rules run kernels refuse create_graph=True rather than silently dropping the
    second-order terms (linear is composed of the GEMM frontends: its second order is theirs)."""
    xc = A(rng.standard_normal((1, 1, 4, 4)), requires_grad=True)
    y = F.conv2d(xc, A(rng.standard_normal((1, 1, 3, 3)))).sum()
    with pytest.raises(NotImplementedError, match=r"ConvolutionBackward0: double backward \(create_graph=True\)"):
        ampc.autograd.grad(y, xc, create_graph=True)
    x2 = A(rng.standard_normal((2, 8)), requires_grad=True)
    y = F.cross_entropy(x2, ampc.tensor([1, 2]))
    with pytest.raises(NotImplementedError, match="CrossEntropyLossBackward0: double backward"):
        ampc.autograd.grad(y, x2, create_graph=True)
