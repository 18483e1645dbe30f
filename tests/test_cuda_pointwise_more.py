"""CUDA kernels of issue 12's rows against the CPU backend, in the style of test_cuda_elementwise.py
(whose samples, layouts and checks it reuses): every new unary and binary elementwise row in every
dtype its rule accepts, over contiguous, transposed, sliced, misaligned, broadcast, 0-dim, empty
and CPU-scalar operands, plus the scans (cumprod, logcumsumexp, cummax/cummin) of
cuda_scan_more.cu. Arithmetic and sign tests must agree bit for bit; libm functions within the
per-dtype tolerance, since CUDA's libm is not glibc's. Runs under `make test-emu`; skips without a
GPU (AMPC_TEST_CUDA_AS_CPU=1 dry-runs it on the CPU)."""
import zlib

import numpy as np
import pytest

import ampc
from test_cuda_elementwise import DTYPES, binary_layouts, check, on, sample, unary_layouts

UNARY = {  # name: (function, exact for floating dtypes)
    "acos": (ampc.acos, False), "asin": (ampc.asin, False), "atan": (ampc.atan, False), "cosh": (ampc.cosh, False),
    "sinh": (ampc.sinh, False), "tan": (ampc.tan, False), "acosh": (ampc.acosh, False),
    "asinh": (ampc.asinh, False), "atanh": (ampc.atanh, False), "log1p": (ampc.log1p, False),
    "expm1": (ampc.expm1, False), "exp2": (ampc.exp2, False), "log2": (ampc.log2, False),
    "log10": (ampc.log10, False), "erfc": (ampc.erfc, False), "erfinv": (ampc.erfinv, False),
    "lgamma": (ampc.lgamma, False), "digamma": (ampc.digamma, False),
    "polygamma1": (lambda x: ampc.polygamma(1, x), False), "polygamma3": (lambda x: ampc.polygamma(3, x), False),
    "sinc": (ampc.sinc, False), "logit": (ampc.logit, False), "logit_eps": (lambda x: ampc.logit(x, 0.25), False),
    "trunc": (ampc.trunc, True), "frac": (ampc.frac, True), "sgn": (ampc.sgn, True),
    "deg2rad": (ampc.deg2rad, True), "rad2deg": (ampc.rad2deg, True), "signbit": (ampc.signbit, True),
    "isneginf": (ampc.isneginf, True), "isposinf": (ampc.isposinf, True), "isreal": (ampc.isreal, True),
}
BINARY = {  # name: (function, exact for floating dtypes, integer divisor)
    "copysign": (ampc.copysign, True, False), "fmod": (ampc.fmod, True, True), "hypot": (ampc.hypot, False, False),
    "heaviside": (ampc.heaviside, True, False), "nextafter": (ampc.nextafter, True, False),
    "logaddexp": (ampc.logaddexp, False, False), "logaddexp2": (ampc.logaddexp2, False, False),
    "xlogy": (ampc.xlogy, False, False), "gcd": (ampc.gcd, True, False), "lcm": (ampc.lcm, True, False),
    "fmax": (ampc.fmax, True, False), "fmin": (ampc.fmin, True, False),
    "bitwise_left_shift": (ampc.bitwise_left_shift, True, False),
    "bitwise_right_shift": (ampc.bitwise_right_shift, True, False), "logical_xor": (ampc.logical_xor, True, False),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_more(cuda, name, dtype):
    fn, exact = UNARY[name]
    for layout, x_cpu, x_dev in unary_layouts(dtype, cuda, seed=zlib.crc32(name.encode()) % 1000):
        check(fn, (x_cpu,), (x_dev,), exact, f"{name} {dtype} {layout}")


def test_unary_more_every_half_value(cuda):
    arr = np.arange(65536, dtype=np.uint16).view(np.float16)
    x_cpu, x_dev = on("cpu", arr), on(cuda, arr)
    for name in ("trunc", "frac", "sgn", "signbit", "deg2rad", "isneginf", "erfinv", "digamma", "expm1"):
        fn, exact = UNARY[name]
        check(fn, (x_cpu,), (x_dev,), exact, f"{name} every float16")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_more(cuda, name, dtype):
    fn, exact, divisor = BINARY[name]
    for layout, cpu_args, dev_args in binary_layouts(dtype, cuda, zlib.crc32(name.encode()) % 1000, divisor):
        check(fn, cpu_args, dev_args, exact, f"{name} {dtype} {layout}")


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
def test_fmod_by_zero_raises_on_the_device(cuda, dtype):
    arr = sample(dtype, (5,), 3)
    a, b = on(cuda, arr), on(cuda, np.zeros_like(arr))
    with pytest.raises(RuntimeError):
        ampc.fmod(a, b).cpu()


def test_gradients_on_the_device(cuda):
    rng = np.random.default_rng(1)
    x = rng.uniform(0.2, 0.8, (7, 9)).astype(np.float32)
    y = rng.uniform(0.2, 0.8, (7, 9)).astype(np.float32)
    for fn in (ampc.erfinv, ampc.digamma, ampc.atanh, ampc.logit, ampc.sinc):
        grads = []
        for dev in ("cpu", cuda):
            p = on(dev, x).requires_grad_()
            fn(p).sum().backward()
            grads.append(p.grad.cpu().numpy())
        np.testing.assert_allclose(grads[1], grads[0], rtol=1e-5, atol=1e-6)
    for fn in (ampc.hypot, ampc.logaddexp, ampc.xlogy, ampc.fmax, ampc.copysign):
        grads = []
        for dev in ("cpu", cuda):
            p, q = on(dev, x).requires_grad_(), on(dev, y).requires_grad_()
            fn(p, q).sum().backward()
            grads.append((p.grad.cpu().numpy(), q.grad.cpu().numpy()))
        np.testing.assert_allclose(grads[1][0], grads[0][0], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(grads[1][1], grads[0][1], rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------- scans

SCAN_DTYPES = ["float32", "float16", "bfloat16", "float64", "int64", "int32", "uint8", "bool"]


@pytest.mark.parametrize("dtype", SCAN_DTYPES)
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_scans(cuda, dtype, dim):
    arr = sample(dtype, (4, 37, 6), 21)
    if dtype not in ("bool", "uint8"):
        arr = arr.copy()
        arr.reshape(-1)[50:60] = 0  # zeros for cumprod
    for layout, a, b in (("contiguous", on("cpu", arr), on(cuda, arr)),
                         ("transposed", on("cpu", arr.transpose(2, 1, 0).copy()).permute(2, 1, 0),
                          on(cuda, arr.transpose(2, 1, 0).copy()).permute(2, 1, 0))):
        what = f"{dtype} dim {dim} {layout}"
        check(lambda t: ampc.cumprod(t, dim), (a,), (b,), dtype != "float32", "cumprod " + what)
        check(lambda t: ampc.logcumsumexp(t, dim), (a,), (b,), False, "logcumsumexp " + what)
        for name in ("cummax", "cummin"):
            check(lambda t: getattr(ampc, name)(t, dim).values, (a,), (b,), True, name + " values " + what)
            check(lambda t: getattr(ampc, name)(t, dim).indices, (a,), (b,), True, name + " indices " + what)


def test_scan_long_rows_and_gradients(cuda):
    rng = np.random.default_rng(2)
    x = rng.uniform(0.9, 1.1, (3, 5000)).astype(np.float32)
    check(lambda t: ampc.cumprod(t, 1), (on("cpu", x),), (on(cuda, x),), False, "cumprod long rows")
    check(lambda t: ampc.cummax(t, 1).indices, (on("cpu", x),), (on(cuda, x),), True, "cummax long rows")
    z = rng.uniform(-2, 2, (6, 8)).astype(np.float32)
    z[1, 3] = z[4, 0] = 0
    for fn in (lambda t: ampc.cumprod(t, 1), lambda t: ampc.logcumsumexp(t, 0), lambda t: ampc.cummin(t, 1).values):
        grads = []
        for dev in ("cpu", cuda):
            p = on(dev, z).requires_grad_()
            fn(p).sum().backward()
            grads.append(p.grad.cpu().numpy())
        np.testing.assert_allclose(grads[1], grads[0], rtol=1e-5, atol=1e-6)
