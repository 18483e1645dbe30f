"""The CUDA random kernels (Philox, csrc/core/philox.h): ampc's own device stream, which matches
neither torch's CUDA numbers nor ampc's CPU numbers (the CPU generator is torch's mt19937). So the
device is checked on its own terms: a seed reproduces every tensor bit for bit; values depend on
the row-major index only (strided and contiguous outputs agree, whatever the launch shape); the
dropout mask is bernoulli_(1 - p) from the same state; and the draws have the right distributions
(moments, chi-square over bins, Kolmogorov-Smirnov against the exact CDF) at fixed seeds, with
bounds a correct generator fails with probability far below 1e-6. arange is compared with the CPU.
"""
import math

import numpy as np
import pytest

import ampc
import ampc.nn.functional as F
from helpers import FLOATS, host

ALL = FLOATS + [ampc.int64, ampc.int32, ampc.uint8, ampc.bool]


def seeded_twice(make, seed=5):
    ampc.manual_seed(seed)
    a = host(make())
    ampc.manual_seed(seed)
    b = host(make())
    np.testing.assert_array_equal(a, b)
    return a


def ks(x, cdf):
    x = np.sort(np.asarray(x, dtype=np.float64))
    n = len(x)
    f = cdf(x)
    return max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))


def chi2_ok(counts, probs):
    """Pearson's statistic below its mean + 8 standard deviations (df = bins - 1)."""
    n = counts.sum()
    exp = n * np.asarray(probs)
    keep = exp > 0
    stat = (((counts - exp) ** 2)[keep] / exp[keep]).sum()
    df = keep.sum() - 1
    return stat <= df + 8 * math.sqrt(2 * df), (stat, df)


# ---------------------------------------------------------------- reproducibility and layouts

@pytest.mark.parametrize("dtype", ALL)
def test_seed_reproduces(cuda, dtype):
    seeded_twice(lambda: ampc.empty(999, dtype=dtype, device=cuda).random_())
    seeded_twice(lambda: ampc.empty(4001, dtype=dtype, device=cuda).bernoulli_(0.3))
    if dtype.is_floating_point:
        for n in (1, 3, 4, 5, 1001, 4099):
            seeded_twice(lambda: ampc.rand(n, dtype=dtype, device=cuda))
            seeded_twice(lambda: ampc.randn(n, dtype=dtype, device=cuda))
        seeded_twice(lambda: ampc.empty(333, dtype=dtype, device=cuda).exponential_(2.0))
        seeded_twice(lambda: ampc.empty(333, dtype=dtype, device=cuda).log_normal_(0.5, 0.3))
    a = seeded_twice(lambda: ampc.cat([ampc.rand(5, device=cuda), ampc.rand(1000, device=cuda)]))
    assert not np.array_equal(a[:5], a[5:10])  # the stream moves on


def test_randint_and_randperm(cuda):
    r = seeded_twice(lambda: ampc.randint(-5, 2**40, (3001,), device=cuda))
    assert r.min() >= -5 and r.max() < 2**40 and r.max() > 2**39
    for n in (0, 1, 2, 1000, 70001):
        p = seeded_twice(lambda: ampc.randperm(n, device=cuda))
        np.testing.assert_array_equal(np.sort(p), np.arange(n))
    full = host(ampc.empty(100000, dtype=ampc.int64, device=cuda).random_(-2**63, None))
    assert full.min() < -2**62 and full.max() > 2**62


@pytest.mark.parametrize("dtype", [ampc.float32, ampc.float16, ampc.int64, ampc.bool])
def test_strided_outputs(cuda, dtype):
    """The values depend on the row-major index only: a transposed or stepped view gets the
    same numbers as a contiguous tensor; the elements between stay put."""
    fills = [lambda t: t.random_(0, 2 if dtype == ampc.bool else 100), lambda t: t.bernoulli_(0.5)]
    if dtype.is_floating_point:
        fills += [lambda t: t.uniform_(), lambda t: t.normal_(), lambda t: t.exponential_(),
                  lambda t: t.cauchy_()]
    for fill in fills:
        ampc.manual_seed(5)
        g = fill(ampc.zeros(8, 6, dtype=dtype, device=cuda).t())
        ampc.manual_seed(5)
        ref = fill(ampc.empty(6, 8, dtype=dtype, device=cuda))
        np.testing.assert_array_equal(host(g), host(ref))
        base = ampc.full((5, 9), 1 if dtype == ampc.bool else 7, dtype=dtype, device=cuda)
        ampc.manual_seed(6)
        fill(base[:, ::2])
        ampc.manual_seed(6)
        ref = fill(ampc.empty(5, 5, dtype=dtype, device=cuda))
        np.testing.assert_array_equal(host(base)[:, ::2], host(ref))
        assert np.all(host(base)[:, 1::2] == (1 if dtype == ampc.bool else 7))


# ---------------------------------------------------------------- distributions

N = 1 << 18  # the emulator runs the kernels on one CPU thread


@pytest.mark.parametrize("dtype", [ampc.float32, ampc.float64])
def test_uniform_normal_distributions(cuda, dtype):
    ampc.manual_seed(11)
    u = host(ampc.empty(N, dtype=dtype, device=cuda).uniform_(-2.0, 3.0))
    assert u.min() >= -2 and u.max() < 3 and ks(u, lambda x: (x + 2) / 5) < 0.006
    z = host(ampc.empty(N, dtype=dtype, device=cuda).normal_(1.0, 2.0))
    phi = np.vectorize(lambda x: 0.5 * (1 + math.erf((x - 1.0) / (2.0 * math.sqrt(2)))))
    assert abs(z.mean() - 1) < 0.025 and abs(z.std() - 2) < 0.02 and ks(z[:1 << 16], phi) < 0.012
    w = host(ampc.normal(ampc.full((2, N // 2), 3.0, dtype=dtype, device=cuda), 0.5))
    assert abs(w.mean() - 3) < 0.006 and abs(w.std() - 0.5) < 0.005


def test_exponential_geometric_lognormal_cauchy(cuda):
    ampc.manual_seed(12)
    e = host(ampc.empty(N, dtype=ampc.float64, device=cuda).exponential_(2.5))
    assert e.min() >= 0 and ks(e, lambda x: 1 - np.exp(-2.5 * x)) < 0.006
    g = host(ampc.empty(N, dtype=ampc.int64, device=cuda).geometric_(0.3)).astype(int)
    ks_ = np.arange(1, 30)
    ok, info = chi2_ok(np.bincount(g, minlength=31)[1:30], 0.7 ** (ks_ - 1) * 0.3)
    assert g.min() >= 1 and ok, info
    ln = host(ampc.empty(N, dtype=ampc.float64, device=cuda).log_normal_(0.5, 0.7))
    assert ln.min() > 0 and abs(np.log(ln).mean() - 0.5) < 0.008 and abs(np.log(ln).std() - 0.7) < 0.006
    c = host(ampc.empty(N, dtype=ampc.float64, device=cuda).cauchy_(1.0, 2.0))
    assert ks(c, lambda x: 0.5 + np.arctan((x - 1.0) / 2.0) / np.pi) < 0.006


def test_poisson_binomial(cuda):
    ampc.manual_seed(13)
    for lam in (0.0, 0.7, 4.0, 12.0, 250.0):
        x = host(ampc.poisson(ampc.full((1 << 16,), lam, dtype=ampc.float64, device=cuda))).astype(int)
        assert x.min() >= 0
        if lam == 0:
            assert x.max() == 0
            continue
        top = int(lam + 8 * math.sqrt(lam) + 10)
        pmf = np.array([math.exp(-lam + k * math.log(lam) - math.lgamma(k + 1)) for k in range(top)])
        ok, info = chi2_ok(np.bincount(np.minimum(x, top - 1), minlength=top)[:top], pmf / pmf.sum())
        assert ok, (lam, info)
    for n, p in ((10, 0.3), (40, 0.5), (200, 0.9), (5, 1.0), (7, 0.0)):
        x = host(ampc.binomial(ampc.full((1 << 16,), float(n), device=cuda),
                               ampc.full((1 << 16,), p, device=cuda))).astype(int)
        assert x.min() >= 0 and x.max() <= n
        pmf = np.array([math.comb(n, k) * p ** k * (1 - p) ** (n - k) for k in range(n + 1)])
        ok, info = chi2_ok(np.bincount(x, minlength=n + 1), pmf)
        assert ok, (n, p, info)


@pytest.mark.parametrize("dtype", [ampc.float32, ampc.float16, ampc.float64])
def test_multinomial(cuda, dtype):
    ampc.manual_seed(14)
    probs = ampc.tensor([[0.1, 0.0, 0.3, 0.6], [1.0, 1.0, 1.0, 1.0]], dtype=dtype, device=cuda)
    s = host(ampc.multinomial(probs, 50000, replacement=True)).astype(int)
    assert s.shape == (2, 50000)
    for row, want in ((0, [0.1, 0.0, 0.3, 0.6]), (1, [0.25] * 4)):
        ok, info = chi2_ok(np.bincount(s[row], minlength=4), want)
        assert ok, info
    assert not np.any(s[0] == 1)  # a zero-probability category never comes
    w = host(ampc.multinomial(probs.unsqueeze(0).expand(2000, 2, 4).reshape(4000, 4), 3)).astype(int)  # without replacement: distinct, never the zero
    assert w.shape == (4000, 3) and np.all(np.sort(w, axis=1)[:, 1:] != np.sort(w, axis=1)[:, :-1])
    assert not np.any(w[::2] == 1)
    first = host(ampc.multinomial(ampc.tensor([0.1, 0.2, 0.7], dtype=dtype, device=cuda).expand(60000, 3), 1))[:, 0].astype(int)
    ok, info = chi2_ok(np.bincount(first, minlength=3), [0.1, 0.2, 0.7])
    assert ok, info


def test_statistics_on_gpu(cuda):
    ampc.manual_seed(123)
    n = 1 << 22
    u = host(ampc.rand(n, device=cuda))
    assert u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 1e-3 and abs(u.std() - np.sqrt(1 / 12)) < 1e-3
    z16 = host(ampc.randn(n, dtype=ampc.float16, device=cuda))
    assert abs(z16.mean()) < 3e-3 and abs(z16.std() - 1) < 3e-3
    b = host(ampc.empty(n, device=cuda).bernoulli_(0.25))
    assert abs(b.mean() - 0.25) < 2e-3
    r = host(ampc.randint(0, 10, (n,), device=cuda)).astype(int)
    ok, info = chi2_ok(np.bincount(r, minlength=10), [0.1] * 10)
    assert r.min() == 0 and r.max() == 9 and ok, info


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
def test_dropout(cuda, dtype, p):
    """The mask is bernoulli_(1 - p) from the same generator state; kept elements are
    x / (1 - p) rounded once; backward is g * mask / (1 - p)."""
    ones = ampc.ones(4099, dtype=dtype, device=cuda)
    ampc.manual_seed(5)
    y = host(F.dropout(ones, p, training=True))
    mask = y != 0
    if p < 1:
        kept = np.unique(y[mask])
        assert kept.size == 1 and abs(kept[0] * (1 - p) - 1) < 1e-2
        assert abs(mask.mean() - (1 - p)) < 4 * math.sqrt(p * (1 - p) / 4099) + 1e-3
    ampc.manual_seed(5)
    b = ampc.empty(4099, device=cuda).bernoulli_(1 - p)
    np.testing.assert_array_equal(mask, host(b) != 0)
    x = ampc.tensor(np.random.default_rng(3).standard_normal((17, 65)), dtype=dtype, device=cuda).requires_grad_()
    gy = ampc.tensor(np.random.default_rng(4).standard_normal((17, 65)), dtype=dtype, device=cuda)
    ampc.manual_seed(8)
    out = F.dropout(x, p, training=True)
    out.backward(gy)
    keep = host(out) != 0
    want = np.where(keep, host(gy).astype(np.float64) / (1 - p) if p < 1 else 0, 0)
    np.testing.assert_allclose(host(x.grad).astype(np.float64), want, rtol=1e-2 if dtype in (ampc.float16, ampc.bfloat16)
                               else 1e-6, atol=1e-6)


def test_dropout_layouts_and_sizes(cuda):
    x = ampc.tensor(np.random.default_rng(2).standard_normal((40, 30)), dtype=ampc.float16)
    for make in (lambda: F.dropout(x.to(cuda).t(), 0.3, training=True),  # non-contiguous input
                 lambda: F.dropout(x.to(cuda)[1:, 3:], 0.3, training=True),
                 lambda: F.dropout(ampc.arange(4103.0, device=cuda)[1:], 0.3, training=True),  # unaligned start
                 lambda: F.dropout(ampc.ones(1, 3, device=cuda), 0.5, training=True),
                 lambda: F.dropout(ampc.ones(0, 3, device=cuda), 0.5, training=True),
                 lambda: F.dropout(ampc.ones((1 << 20) + 5, dtype=ampc.bfloat16, device=cuda), 0.2, training=True)):
        seeded_twice(make)
