"""CUDA against the CPU backend for the kernels of csrc/cuda/cuda_nn_conv_pool.cu: IM2COL and
COL2IM (through conv2d / conv1d forward and backward), max / avg / adaptive-avg pooling forward
and backward. Each case runs the same fresh random inputs on both devices and compares the
results, the gradients and (max pooling) the argmax indices.

Runs only with a GPU (fixture `cuda`); AMPC_TEST_CUDA_AS_CPU=1 runs the "cuda" side on the CPU
to prove the test logic."""
import ml_dtypes
import numpy as np
import pytest

import ampc
import ampc.nn.functional as F
from helpers import FLOATS, check_runs, close, make, run_on_cpu_and_cuda

NP = {ampc.float32: np.float32, ampc.float64: np.float64, ampc.float16: np.float16, ampc.bfloat16: ml_dtypes.bfloat16}
# elementwise tolerance relative to |want| + mean |want| (sums run in fp32 on the GPU, double on the CPU)
TOL = {ampc.float64: 1e-9, ampc.float32: 2e-5, ampc.float16: 2e-3, ampc.bfloat16: 1.6e-2}
# convolutions also go through the GEMM: other summation orders, and TF32 for fp32 where allowed
# (backends.cudnn.allow_tf32 defaults to True, as in PyTorch); an im2col/col2im bug is O(1)
CONV_TOL = {ampc.float64: 1e-9, ampc.float32: 5e-3, ampc.float16: 4e-3, ampc.bfloat16: 3e-2}


@pytest.fixture
def rng():
    return np.random.default_rng(20240611)


# ---------------------------------------------------------------- convolution (IM2COL, COL2IM)

CONV_GRID = [
    # x shape, weight shape, stride, padding, dilation, groups
    ((2, 3, 9, 8), (4, 3, 3, 3), 1, 1, 1, 1),           # the common 3x3, pad 1
    ((2, 3, 9, 8), (4, 3, 1, 1), 1, 0, 1, 1),           # 1x1: the input is its own column matrix
    ((2, 3, 9, 8), (4, 3, 1, 1), 2, 0, 1, 1),           # 1x1 strided: goes through im2col
    ((2, 4, 11, 10), (6, 2, 3, 2), (2, 1), (1, 0), 1, 2),  # groups, non-square
    ((1, 2, 12, 13), (3, 2, 3, 3), 1, 2, 2, 1),         # dilation
    ((3, 4, 7, 7), (4, 1, 3, 3), 2, 1, 1, 4),           # depthwise, strided
    ((2, 2, 5, 6), (3, 2, 5, 4), (1, 3), (2, 1), (1, 2), 1),
    ((1, 1, 1, 1), (2, 1, 1, 1), 1, 0, 1, 1),
]


@pytest.mark.parametrize("xs,ws,stride,padding,dilation,groups", CONV_GRID)
@pytest.mark.parametrize("dtype", FLOATS)
def test_conv2d_forward_backward(cuda, rng, xs, ws, stride, padding, dilation, groups, dtype):
    x, w, b = rng.standard_normal(xs), rng.standard_normal(ws) * 0.3, rng.standard_normal(ws[0])
    runs = run_on_cpu_and_cuda(lambda x, w, b: F.conv2d(x, w, b, stride, padding, dilation, groups), [x, w, b], dtype,
                               cuda, grad=(0, 1, 2), rng=rng)
    check_runs(runs, CONV_TOL[dtype], "conv2d")


@pytest.mark.parametrize("k,dil", [(2, 1), (4, 1), (3, 2), (2, 3)])
def test_conv2d_padding_same_asymmetric(cuda, rng, k, dil):
    # an even effective kernel pads one more at the bottom/right: top/left padding + output size
    x, w = rng.standard_normal((2, 3, 8, 9)), rng.standard_normal((2, 3, k, k))
    runs = run_on_cpu_and_cuda(lambda x, w: F.conv2d(x, w, padding="same", dilation=dil), [x, w], ampc.float32, cuda,
                               grad=(0, 1))
    check_runs(runs, CONV_TOL[ampc.float32], "conv2d same")


@pytest.mark.parametrize("pad", [(1, 0, 2, 0), (0, 2, 1, 3), (3, 1, 0, 0)])
def test_conv2d_explicit_asymmetric_pad(cuda, rng, pad):
    x, w = rng.standard_normal((2, 2, 6, 7)), rng.standard_normal((3, 2, 3, 3))
    runs = run_on_cpu_and_cuda(lambda x, w: F.conv2d(F.pad(x, pad), w, stride=2), [x, w], ampc.float32, cuda,
                               grad=(0, 1))
    check_runs(runs, CONV_TOL[ampc.float32], "conv2d F.pad")


@pytest.mark.parametrize("dtype", [ampc.float32, ampc.float16])
def test_conv1d(cuda, rng, dtype):
    x, w, b = rng.standard_normal((3, 4, 20)), rng.standard_normal((6, 2, 3)), rng.standard_normal(6)
    runs = run_on_cpu_and_cuda(lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=2, dilation=2, groups=2), [x, w, b],
                               dtype, cuda, grad=(0, 1, 2))
    check_runs(runs, CONV_TOL[dtype], "conv1d")


def test_conv2d_noncontiguous_unbatched_and_empty(cuda, rng):
    x, w = rng.standard_normal((2, 3, 8, 6)), rng.standard_normal((4, 3, 3, 3))
    runs = run_on_cpu_and_cuda(lambda x, w: F.conv2d(x.transpose(2, 3), w, padding=1), [x, w], ampc.float32, cuda,
                               grad=(0, 1))
    check_runs(runs, CONV_TOL[ampc.float32], "conv2d transposed input")
    runs = run_on_cpu_and_cuda(lambda x, w: F.conv2d(x, w, stride=2), [x[0], w], ampc.float32, cuda, grad=(0, 1))
    check_runs(runs, CONV_TOL[ampc.float32], "conv2d unbatched")
    runs = run_on_cpu_and_cuda(lambda x, w: F.conv2d(x, w, padding=1), [np.zeros((0, 3, 5, 5)), w], ampc.float32, cuda,
                               grad=(0, 1))
    (oc, gc), (og, gg) = runs
    assert tuple(og[0].shape) == (0, 4, 5, 5)
    close(gg[1], gc[1], 0, "conv2d empty batch weight grad")


def test_conv2d_large(cuda, rng):
    # column matrices of several MiB (the frontend's chunking) and > 2^20 outputs
    x, w, b = rng.standard_normal((8, 16, 64, 64)), rng.standard_normal((32, 16, 3, 3)) * 0.1, rng.standard_normal(32)
    runs = run_on_cpu_and_cuda(lambda x, w, b: F.conv2d(x, w, b, padding=1), [x, w, b], ampc.float16, cuda,
                               grad=(0, 1, 2))
    check_runs(runs, CONV_TOL[ampc.float16], "conv2d large")


def test_conv2d_module_to_cuda(cuda, rng):
    ampc.manual_seed(0)
    conv = ampc.nn.Conv2d(3, 8, 3, stride=2, padding=1)
    x = rng.standard_normal((4, 3, 17, 15))
    yc = conv(make(x, ampc.float32, "cpu"))
    conv_g = conv.to(cuda)
    yg = conv_g(make(x, ampc.float32, cuda))
    close(yg, yc, CONV_TOL[ampc.float32], "Conv2d module")


# ---------------------------------------------------------------- max pooling

POOL_GRID = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=1),                          # overlapping windows: several grads per input
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1), dilation=(2, 1)),
    dict(kernel_size=(3, 2), stride=2, ceil_mode=True),
    dict(kernel_size=3, stride=2, dilation=2, padding=1, ceil_mode=True),
    dict(kernel_size=4, stride=3, padding=2, ceil_mode=True),
]


@pytest.mark.parametrize("kw", POOL_GRID)
@pytest.mark.parametrize("dtype", FLOATS)
def test_max_pool2d(cuda, rng, kw, dtype):
    x = rng.standard_normal((2, 3, 9, 10))
    x[0, 1, :3, :3] = 0.5  # ties: the first maximum in scan order wins
    runs = run_on_cpu_and_cuda(lambda x: F.max_pool2d(x, return_indices=True, **kw), [x], dtype, cuda, grad=(0,),
                               rng=rng)
    check_runs(runs, TOL[dtype], "max_pool2d", exact_outputs=(0, 1))
    assert runs[1][0][1].dtype == ampc.int64


@pytest.mark.parametrize("dtype", [ampc.float32, ampc.float16, ampc.bfloat16])
def test_max_pool2d_nan_inf(cuda, rng, dtype):
    x = rng.standard_normal((2, 2, 6, 6))
    x[0, 0, 1, 1] = np.nan
    x[0, 0, 0, 0] = np.nan  # two NaNs in one window: the last one wins (PyTorch)
    x[1, 1, :2, :2] = -np.inf  # a window of -inf
    x[1, 0, 2, 3] = np.inf
    runs = run_on_cpu_and_cuda(lambda x: F.max_pool2d(x, 2, return_indices=True), [x], dtype, cuda, grad=(0,))
    check_runs(runs, TOL[dtype], "max_pool2d nan", exact_outputs=(0, 1))
    runs = run_on_cpu_and_cuda(lambda x: F.max_pool2d(x, 3, 1, 1, return_indices=True), [x], dtype, cuda, grad=(0,))
    check_runs(runs, TOL[dtype], "max_pool2d nan overlapping", exact_outputs=(0, 1))


def test_max_pool2d_noncontiguous_unbatched_empty(cuda, rng):
    x = rng.standard_normal((2, 3, 8, 7))
    runs = run_on_cpu_and_cuda(lambda x: F.max_pool2d(x.transpose(2, 3)[:, :, ::2], 2, 1, return_indices=True), [x],
                               ampc.float32, cuda, grad=(0,))
    check_runs(runs, TOL[ampc.float32], "max_pool2d strided", exact_outputs=(0, 1))
    runs = run_on_cpu_and_cuda(lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True), [x[0]], ampc.float32, cuda,
                               grad=(0,))
    check_runs(runs, TOL[ampc.float32], "max_pool2d unbatched", exact_outputs=(0, 1))
    runs = run_on_cpu_and_cuda(lambda x: F.max_pool2d(x, 2), [np.zeros((0, 3, 4, 4))], ampc.float32, cuda, grad=(0,))
    assert tuple(runs[1][0][0].shape) == (0, 3, 2, 2) and tuple(runs[1][1][0].shape) == (0, 3, 4, 4)


@pytest.mark.parametrize("dtype", [ampc.float32, ampc.float16])
def test_max_pool2d_large(cuda, rng, dtype):
    x = rng.standard_normal((4, 16, 130, 129))  # > 2^20 inputs, odd sizes (ceil mode windows hang over)
    runs = run_on_cpu_and_cuda(lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True), [x], dtype,
                               cuda, grad=(0,))
    check_runs(runs, TOL[dtype], "max_pool2d large", exact_outputs=(0, 1))


# ---------------------------------------------------------------- average pooling

AVG_GRID = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=1, padding=1),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=(2, 3), stride=(2, 1), padding=(1, 1), count_include_pad=False),
    dict(kernel_size=2, divisor_override=3),
    dict(kernel_size=(3, 2), stride=(1, 3), padding=(1, 1), ceil_mode=True, divisor_override=5),
]


@pytest.mark.parametrize("kw", AVG_GRID)
@pytest.mark.parametrize("dtype", FLOATS)
def test_avg_pool2d(cuda, rng, kw, dtype):
    x = rng.standard_normal((2, 3, 7, 8))
    runs = run_on_cpu_and_cuda(lambda x: F.avg_pool2d(x, **kw), [x], dtype, cuda, grad=(0,), rng=rng)
    check_runs(runs, TOL[dtype], "avg_pool2d")


def test_avg_pool2d_unbatched_noncontiguous_large(cuda, rng):
    x = rng.standard_normal((3, 9, 9))
    runs = run_on_cpu_and_cuda(lambda x: F.avg_pool2d(x.transpose(1, 2), 3, 2, 1), [x], ampc.float32, cuda, grad=(0,))
    check_runs(runs, TOL[ampc.float32], "avg_pool2d unbatched transposed")
    x = rng.standard_normal((4, 32, 96, 97))
    runs = run_on_cpu_and_cuda(lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), [x],
                               ampc.float16, cuda, grad=(0,))
    check_runs(runs, TOL[ampc.float16], "avg_pool2d large")


@pytest.mark.parametrize("size", [(3, 4), 1, (None, 2), (7, 5), (5, None), (11, 13), (2, 1)])
@pytest.mark.parametrize("dtype", FLOATS)
def test_adaptive_avg_pool2d(cuda, rng, size, dtype):
    x = rng.standard_normal((2, 3, 7, 8))  # (11, 13): more outputs than inputs, windows overlap
    runs = run_on_cpu_and_cuda(lambda x: F.adaptive_avg_pool2d(x, size), [x], dtype, cuda, grad=(0,), rng=rng)
    check_runs(runs, TOL[dtype], "adaptive_avg_pool2d")


def test_adaptive_avg_pool2d_unbatched_large(cuda, rng):
    runs = run_on_cpu_and_cuda(lambda x: F.adaptive_avg_pool2d(x, (3, 5)), [rng.standard_normal((4, 9, 10))],
                               ampc.float32, cuda, grad=(0,))
    check_runs(runs, TOL[ampc.float32], "adaptive unbatched")
    runs = run_on_cpu_and_cuda(lambda x: F.adaptive_avg_pool2d(x, 1), [rng.standard_normal((8, 64, 45, 45))],
                               ampc.bfloat16, cuda, grad=(0,))
    check_runs(runs, TOL[ampc.bfloat16], "adaptive large global pool")


def test_pool_modules_to_cuda(cuda, rng):
    x = rng.standard_normal((2, 4, 12, 12))
    for mod in (ampc.nn.MaxPool2d(3, 2, 1), ampc.nn.AvgPool2d(2), ampc.nn.AdaptiveAvgPool2d((5, 5))):
        yc = mod(make(x, ampc.float32, "cpu"))
        yg = mod.to(cuda)(make(x, ampc.float32, cuda))
        close(yg, yc, TOL[ampc.float32], type(mod).__name__)


def test_small_cnn_training_step(cuda, rng):
    """conv -> relu -> maxpool -> conv -> avgpool -> adaptive pool -> linear: one step, all grads."""
    x, target = rng.standard_normal((4, 3, 16, 16)), rng.standard_normal((4, 5))
    grads = []
    for dev in ("cpu", cuda):
        ampc.manual_seed(3)
        net = ampc.nn.Sequential(ampc.nn.Conv2d(3, 8, 3, padding=1), ampc.nn.ReLU(), ampc.nn.MaxPool2d(2),
                                 ampc.nn.Conv2d(8, 8, 3, stride=1, padding="same"), ampc.nn.AvgPool2d(2),
                                 ampc.nn.AdaptiveAvgPool2d(2), ampc.nn.Flatten(), ampc.nn.Linear(32, 5)).to(dev)
        loss = F.mse_loss(net(make(x, ampc.float32, dev)), make(target, ampc.float32, dev))
        loss.backward()
        grads.append([loss] + [p.grad for p in net.parameters()])
    for a, b in zip(grads[1], grads[0]):
        close(a, b, CONV_TOL[ampc.float32], "cnn step")
