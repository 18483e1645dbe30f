"""The CUDA random kernels against the CPU backend: the same seed gives the same tensors on both
devices (uniform, random_, randint, bernoulli, randperm, dropout masks bit for bit; normal samples
within an ulp of double, philox.h), for every dtype, strided outputs and large tensors; arange;
dropout and its backward (masked_scale); and the statistics of draws made on the GPU.

Each case seeds the generators (ampc.manual_seed seeds every device with offset 0), draws on the
CPU, seeds again and draws on `cuda` (tests/conftest.py).
"""
import numpy as np
import pytest

import ampc
import ampc.nn.functional as F
from helpers import FLOATS, host, seeded_on_cpu_and_cuda

ALL = FLOATS + [ampc.int64, ampc.int32, ampc.uint8, ampc.bool]


def check_identical(make, cuda, seed=5):
    c, g = seeded_on_cpu_and_cuda(make, cuda, seed)
    np.testing.assert_array_equal(host(g), host(c))
    return g


# ---------------------------------------------------------------- the same stream on both devices

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [1, 3, 4, 5, 1001, 4099])
def test_uniform_identical(cuda, dtype, n):
    check_identical(lambda dev: ampc.rand(n, dtype=dtype, device=dev), cuda)
    check_identical(lambda dev: ampc.empty(n, dtype=dtype, device=dev).uniform_(-3, 5), cuda)


@pytest.mark.parametrize("dtype", ALL)
def test_random_identical(cuda, dtype):
    check_identical(lambda dev: ampc.empty(999, dtype=dtype, device=dev).random_(), cuda)
    check_identical(lambda dev: ampc.empty(37, 3, dtype=dtype, device=dev).random_(0, 2), cuda)
    if dtype in (ampc.int64, ampc.float64):  # a range beyond 32 bits: two words per element
        check_identical(lambda dev: ampc.empty(1001, dtype=dtype, device=dev).random_(-2**40, 2**40), cuda)
    if dtype == ampc.int64:
        check_identical(lambda dev: ampc.empty(1001, dtype=dtype, device=dev).random_(-2**63, None), cuda)


def test_randint_identical(cuda):
    check_identical(lambda dev: ampc.randint(-5, 2**40, (3001,), device=dev), cuda)
    check_identical(lambda dev: ampc.randint(0, 7, (50, 40), dtype=ampc.int32, device=dev), cuda)
    check_identical(lambda dev: ampc.randint(3, (17,), dtype=ampc.uint8, device=dev), cuda)


@pytest.mark.parametrize("dtype", ALL)
def test_bernoulli_identical(cuda, dtype):
    check_identical(lambda dev: ampc.empty(4001, dtype=dtype, device=dev).bernoulli_(0.3), cuda)
    p = ampc.tensor(np.random.default_rng(0).random((33, 7)))
    check_identical(lambda dev: ampc.empty(33, 7, dtype=dtype, device=dev).bernoulli_(p.to(dev)), cuda)
    if dtype.is_floating_point:
        check_identical(lambda dev: ampc.bernoulli(p.to(dtype).to(dev)), cuda)


@pytest.mark.parametrize("n", [0, 1, 2, 1000, 70001])
def test_randperm_identical(cuda, n):
    check_identical(lambda dev: ampc.randperm(n, device=dev), cuda)
    if n <= 1000:
        check_identical(lambda dev: ampc.randperm(n, dtype=ampc.int32, device=dev), cuda)


@pytest.mark.parametrize("dtype", FLOATS)
def test_normal_matches(cuda, dtype):
    """Box-Muller in double: within an ulp of double before the rounding to the dtype."""
    tol = 1e-13 if dtype == ampc.float64 else 1e-6
    for n in (1, 2, 3, 4, 5, 10001):
        c, g = seeded_on_cpu_and_cuda(lambda dev: ampc.randn(n, dtype=dtype, device=dev), cuda)
        if dtype in (ampc.float32, ampc.float64):
            np.testing.assert_allclose(host(g), host(c), rtol=tol, atol=tol)
        else:  # fp16/bf16: the same float rounded once, so equal except at a rare rounding tie
            assert np.mean(host(g) != host(c)) < 1e-3
    c, g = seeded_on_cpu_and_cuda(lambda dev: ampc.empty(999, dtype=dtype, device=dev).normal_(2.0, 0.5), cuda)
    np.testing.assert_allclose(host(g), host(c), rtol=1e-2 if dtype == ampc.bfloat16 else 1e-3 if
                               dtype == ampc.float16 else tol, atol=1e-5)


def test_normal_tensor_forms(cuda):
    mean = ampc.tensor([[-10.0], [10.0]])
    std = ampc.full((3000,), 0.5)
    c, g = seeded_on_cpu_and_cuda(lambda dev: ampc.normal(mean.to(dev), std.to(dev)), cuda)
    np.testing.assert_allclose(host(g), host(c), rtol=1e-6, atol=1e-6)
    c, g = seeded_on_cpu_and_cuda(lambda dev: ampc.normal(mean.double().to(dev), 2.0), cuda)
    np.testing.assert_allclose(host(g), host(c), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("dtype", [ampc.float32, ampc.float16, ampc.int64, ampc.bool])
def test_strided_outputs(cuda, dtype):
    """The values depend on the row-major index only: a transposed or stepped view gets the
    same numbers as a contiguous tensor, on both devices; the elements between stay put."""
    fills = [lambda t: t.random_(0, 2 if dtype == ampc.bool else 100), lambda t: t.bernoulli_(0.5)]
    if dtype.is_floating_point:
        fills += [lambda t: t.uniform_(), lambda t: t.normal_()]
    for fill in fills:
        def transposed(dev):
            base = ampc.zeros(8, 6, dtype=dtype, device=dev)
            return fill(base.t())
        c, g = seeded_on_cpu_and_cuda(transposed, cuda)
        np.testing.assert_allclose(host(g), host(c), rtol=1e-6, atol=1e-6)
        ampc.manual_seed(5)
        ref = fill(ampc.empty(6, 8, dtype=dtype, device=cuda))
        np.testing.assert_array_equal(host(g), host(ref))

        def stepped(dev):
            base = ampc.full((5, 9), 1 if dtype == ampc.bool else 7, dtype=dtype, device=dev)
            fill(base[:, ::2])
            return base
        c, g = seeded_on_cpu_and_cuda(stepped, cuda)
        np.testing.assert_allclose(host(g), host(c), rtol=1e-6, atol=1e-6)
        assert np.all(host(g)[:, 1::2] == (1 if dtype == ampc.bool else 7))


def test_large_tensors(cuda):
    """2^22 + 3 elements: many grid-stride rounds and a partial last block."""
    n = (1 << 22) + 3
    check_identical(lambda dev: ampc.rand(n, device=dev), cuda)
    check_identical(lambda dev: ampc.rand(n, dtype=ampc.bfloat16, device=dev), cuda)
    check_identical(lambda dev: ampc.empty(n, dtype=ampc.uint8, device=dev).random_(), cuda)
    check_identical(lambda dev: ampc.empty(n, device=dev).bernoulli_(0.7), cuda)
    c, g = seeded_on_cpu_and_cuda(lambda dev: ampc.randn(n, device=dev), cuda)
    np.testing.assert_allclose(host(g), host(c), rtol=1e-6, atol=1e-6)


def test_consecutive_draws_advance_alike(cuda):
    def draws(dev):
        a = ampc.rand(5, device=dev)
        b = ampc.randn(7, dtype=ampc.float64, device=dev)
        c = ampc.randint(0, 10, (3,), device=dev)
        d = ampc.rand(1000, device=dev)
        return ampc.cat([a.double(), b, c.double(), d.double()])
    c, g = seeded_on_cpu_and_cuda(draws, cuda)
    np.testing.assert_allclose(host(g), host(c), rtol=1e-13, atol=1e-13)


# ---------------------------------------------------------------- arange

@pytest.mark.parametrize("dtype", ALL)
def test_arange(cuda, dtype):
    if dtype == ampc.bool:
        return
    for args in [(0, 100, 3), (5, -7, -1), (0, 1000)]:
        if dtype == ampc.uint8 and args[1] < 0:
            continue
        c = ampc.arange(*args, dtype=dtype)
        g = ampc.arange(*args, dtype=dtype, device=cuda)
        np.testing.assert_array_equal(host(g), host(c))
    if dtype.is_floating_point:
        c = ampc.arange(-1.5, 2.25, 0.1, dtype=dtype)
        g = ampc.arange(-1.5, 2.25, 0.1, dtype=dtype, device=cuda)
        np.testing.assert_array_equal(host(g), host(c))


# ---------------------------------------------------------------- dropout

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("p", [0.1, 0.5, 0.9, 1.0])
def test_dropout_identical(cuda, dtype, p):
    """Same seed, same mask (the BERNOULLI transform on the same words), y = x / (1 - p)."""
    x = ampc.tensor(np.random.default_rng(1).standard_normal((33, 129)), dtype=dtype)
    c, g = seeded_on_cpu_and_cuda(lambda dev: F.dropout(x.to(dev), p, training=True), cuda)
    np.testing.assert_array_equal(host(g), host(c))
    ones = ampc.ones(4099, dtype=dtype)
    c, g = seeded_on_cpu_and_cuda(lambda dev: F.dropout(ones.to(dev), p, training=True), cuda)
    mask = host(g) != 0
    np.testing.assert_array_equal(mask, host(c) != 0)
    if p < 1:  # every kept element is 1 / (1 - p) rounded once to the dtype
        kept = np.unique(host(g)[mask])
        assert kept.size == 1 and abs(kept[0] * (1 - p) - 1) < 1e-2
    # the mask equals bernoulli_(1 - p) from the same generator state (ops.def)
    ampc.manual_seed(5)
    b = ampc.empty(4099, device=cuda).bernoulli_(1 - p)
    np.testing.assert_array_equal(mask, host(b) != 0)


def test_dropout_layouts_and_sizes(cuda):
    x = ampc.tensor(np.random.default_rng(2).standard_normal((40, 30)), dtype=ampc.float16)
    for make in (lambda dev: F.dropout(x.to(dev).t(), 0.3, training=True),  # non-contiguous input
                 lambda dev: F.dropout(x.to(dev)[1:, 3:], 0.3, training=True),
                 lambda dev: F.dropout(ampc.arange(4103.0, device=dev)[1:], 0.3, training=True),  # unaligned start
                 lambda dev: F.dropout(ampc.ones(1, 3, device=dev), 0.5, training=True),
                 lambda dev: F.dropout(ampc.ones(0, 3, device=dev), 0.5, training=True),
                 lambda dev: F.dropout(ampc.ones((1 << 20) + 5, dtype=ampc.bfloat16, device=dev), 0.2, training=True)):
        check_identical(make, cuda)


@pytest.mark.parametrize("dtype", FLOATS)
def test_dropout_backward(cuda, dtype):
    """Backward is masked_scale: g * mask / (1 - p), the same bits on both devices."""
    x = ampc.tensor(np.random.default_rng(3).standard_normal((17, 65)), dtype=dtype)
    gy = ampc.tensor(np.random.default_rng(4).standard_normal((17, 65)), dtype=dtype)
    grads = []
    for dev in ("cpu", cuda):
        ampc.manual_seed(8)
        xd = x.to(dev).detach().requires_grad_()
        y = F.dropout(xd, 0.25, training=True)
        y.backward(gy.to(dev))
        grads.append(xd.grad)
    np.testing.assert_array_equal(host(grads[1]), host(grads[0]))


# ---------------------------------------------------------------- statistics on the GPU

def test_statistics_on_gpu(cuda):
    ampc.manual_seed(123)
    n = 1 << 22
    u = host(ampc.rand(n, device=cuda))
    assert u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 1e-3 and abs(u.std() - np.sqrt(1 / 12)) < 1e-3
    z = host(ampc.randn(n, device=cuda))
    assert abs(z.mean()) < 3e-3 and abs(z.std() - 1) < 3e-3
    z16 = host(ampc.randn(n, dtype=ampc.float16, device=cuda))
    assert abs(z16.mean()) < 3e-3 and abs(z16.std() - 1) < 3e-3
    b = host(ampc.empty(n, device=cuda).bernoulli_(0.25))
    assert abs(b.mean() - 0.25) < 2e-3
    r = host(ampc.randint(0, 10, (n,), device=cuda)).astype(int)
    counts = np.bincount(r, minlength=10)
    assert r.min() == 0 and r.max() == 9 and np.all(np.abs(counts - n / 10) < 6 * np.sqrt(n * 0.09))
    ampc.manual_seed(123)
    again = host(ampc.rand(n, device=cuda))
    np.testing.assert_array_equal(again, u)  # reproducible on the device
