"""CUDA against the CPU backend for the kernels of csrc/cuda/cuda_nn_poolnorm.cu: the pool3d rows
(max_pool3d, avg_pool3d, adaptive_avg_pool3d, adaptive_max_pool2d/3d, forward and backward, with
the 1-d pools and max_unpool over them) and rms_norm forward and backward (typed and mixed
dtypes, rows longer than a block, more rows than a grad-weight chunk). Each case runs the same
random inputs on both devices and compares results, gradients and argmax indices (bit-equal).

Runs only with a GPU or the emulator (fixture `cuda`); AMPC_TEST_CUDA_AS_CPU=1 runs the "cuda"
side on the CPU to prove the test logic."""
import numpy as np
import pytest

import ampc
import ampc.nn.functional as F
from helpers import FLOATS, check_runs, run_on_cpu_and_cuda

# sums run in fp32 on the GPU and in double on the CPU
TOL = {ampc.float64: 1e-9, ampc.float32: 2e-5, ampc.float16: 2e-3, ampc.bfloat16: 1.6e-2}


@pytest.fixture
def rng():
    return np.random.default_rng(20261202)


POOLS = [
    ("max3d", (2, 3, 5, 7, 6), lambda x: F.max_pool3d(x, (2, 3, 2), (1, 2, 2), (1, 1, 0), (2, 1, 1), True, True)),
    ("max3d-overlap", (1, 2, 4, 5, 6), lambda x: F.max_pool3d(x, 3, 1, 1, return_indices=True)),
    ("max3d-unbatched", (3, 4, 6, 5), lambda x: F.max_pool3d(x, 2, return_indices=True)),
    ("avg3d", (2, 2, 5, 6, 7), lambda x: F.avg_pool3d(x, 3, 2, 1, True, True)),
    ("avg3d-nopad", (2, 2, 5, 6, 7), lambda x: F.avg_pool3d(x, (2, 3, 3), 2, (1, 1, 0), True, False)),
    ("avg3d-divisor", (2, 4, 4, 4), lambda x: F.avg_pool3d(x, 2, 1, 1, divisor_override=3)),
    ("aavg3d", (2, 3, 5, 6, 7), lambda x: F.adaptive_avg_pool3d(x, (3, None, 4))),
    ("aavg3d-up", (1, 2, 3, 2, 4), lambda x: F.adaptive_avg_pool3d(x, (4, 5, 6))),
    ("amax2d", (2, 3, 7, 5), lambda x: F.adaptive_max_pool2d(x, (3, None), True)),
    ("amax2d-up", (3, 4, 5), lambda x: F.adaptive_max_pool2d(x, (9, 7), True)),
    ("amax3d", (2, 2, 5, 7, 9), lambda x: F.adaptive_max_pool3d(x, (2, 3, 4), True)),
    ("amax1d", (2, 3, 11), lambda x: F.adaptive_max_pool1d(x, 4, True)),
    ("max1d", (2, 3, 11), lambda x: F.max_pool1d(x, 3, 2, 1, 2, True, True)),
]


@pytest.mark.parametrize("name,shape,fn", POOLS, ids=[p[0] for p in POOLS])
@pytest.mark.parametrize("dtype", FLOATS)
def test_pools(cuda, rng, name, shape, fn, dtype):
    x = rng.standard_normal(shape)
    runs = run_on_cpu_and_cuda(fn, [x], dtype, cuda, grad=(0,), rng=rng)
    # max: values and indices bit-equal; avg: one rounding of sums in another order
    exact = (0, 1) if name.startswith(("max", "amax")) else ()
    check_runs(runs, TOL[dtype], name, exact_outputs=exact)


def test_pools_nan_and_empty(cuda, rng):
    x = rng.standard_normal((1, 2, 4, 4, 4))
    x[0, 0, 1, 1, 1] = np.nan
    x[0, 1, 3, 2, 0] = -np.inf
    for fn in (lambda x: F.max_pool3d(x, 2, return_indices=True), lambda x: F.adaptive_max_pool3d(x, 3, True)):
        # values and indices bit-equal; grads are sums (fp32 atomics on the GPU) where windows overlap
        check_runs(run_on_cpu_and_cuda(fn, [x], ampc.float32, cuda, grad=(0,)), TOL[ampc.float32], "nan",
                   exact_outputs=(0, 1))
    for fn in (lambda x: F.max_pool3d(x, 2), lambda x: F.avg_pool3d(x, 2), lambda x: F.adaptive_avg_pool3d(x, 2)):
        y = fn(ampc.zeros(0, 2, 4, 4, 4, device=cuda))
        assert tuple(y.shape) == (0, 2, 2, 2, 2)


def test_max_unpool(cuda, rng):
    def fn(x):
        y, i = F.max_pool3d(x, 2, return_indices=True)
        return F.max_unpool3d(y, i, 2, output_size=x.shape[-3:])
    runs = run_on_cpu_and_cuda(fn, [rng.standard_normal((1, 2, 5, 4, 6))], ampc.float32, cuda, grad=(0,))
    check_runs(runs, 0, "max_unpool3d", exact_outputs=(0,))


RMS = [(3, 8), (70, 5), (2, 600), (130, 257)]  # rows above a 64-row chunk, a row above a block


@pytest.mark.parametrize("m,d", RMS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_rms_norm(cuda, rng, m, d, dtype):
    x, w = rng.standard_normal((m, d)), rng.standard_normal(d)
    runs = run_on_cpu_and_cuda(lambda x, w: F.rms_norm(x, (d,), w), [x, w], dtype, cuda, grad=(0, 1), rng=rng)
    # grad weight: a column sum over m rows in fp32 (m * eps relative)
    check_runs(runs, TOL[dtype], "rms_norm", gtol=TOL[dtype] * (1 if dtype != ampc.float32 else 10))


def test_rms_norm_mixed_dtypes_no_weight_and_empty(cuda, rng):
    x, w = rng.standard_normal((6, 4, 9)), rng.standard_normal((4, 9))
    runs = run_on_cpu_and_cuda(lambda x, w: F.rms_norm(x, (4, 9), w, 1e-3), [x, w], [ampc.float16, ampc.float32],
                               cuda, grad=(0, 1), rng=rng)
    check_runs(runs, TOL[ampc.float16], "rms_norm fp16 x fp32 w")
    runs = run_on_cpu_and_cuda(lambda x: F.rms_norm(x, (9,)), [x], ampc.bfloat16, cuda, grad=(0,), rng=rng)
    check_runs(runs, TOL[ampc.bfloat16], "rms_norm no weight")
    runs = run_on_cpu_and_cuda(lambda x, w: F.rms_norm(x, (9,), w), [np.zeros((0, 9)), w[0]], ampc.float32, cuda,
                               grad=(0, 1), rng=rng)
    check_runs(runs, 0, "rms_norm empty")


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n,shape,k,o", [(2, (2, 3, 9, 11), (2, 3), (4, 5)), (2, (3, 10, 7), 3, 5),
                                         (3, (2, 2, 7, 8, 9), (2, 3, 2), (3, 4, 5))])
def test_fractional_max_pool(cuda, rng, dtype, n, shape, k, o):
    nb = 1 if len(shape) == n + 1 else shape[0]
    smp = rng.uniform(0, 1, size=(nb, shape[-n - 1], n))
    fn = lambda x, s: getattr(F, f"fractional_max_pool{n}d")(x, k, o, return_indices=True, _random_samples=s)
    runs = run_on_cpu_and_cuda(fn, [rng.standard_normal(shape), smp], dtype, cuda, grad=(0,), rng=rng)
    check_runs(runs, TOL[dtype], "fractional_max_pool", exact_outputs=(0, 1))
