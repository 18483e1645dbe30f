"""Random numbers: reproducibility, statistics, layouts, dtypes, generators and errors.

ampc's CPU generator is torch's (mt19937), and tests/test_random_torch_exact.py compares its values
with torch's bit for bit. Here the distributions are also checked against their exact CDFs, with
bounds a correct generator fails with probability well below 1e-6 at these fixed seeds.
"""
import math
import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import ampc
import ampc.random
from helpers import host

NP_OF = {ampc.float32: np.float32, ampc.float16: np.float16, ampc.bfloat16: ml_dtypes.bfloat16,
         ampc.float64: np.float64, ampc.int64: np.int64, ampc.int32: np.int32, ampc.uint8: np.uint8,
         ampc.bool: np.bool_}
N = 1 << 20


def ks_uniform(x, lo, hi):
    u = np.sort((x - lo) / (hi - lo))
    n = len(u)
    return max(np.max(np.arange(1, n + 1) / n - u), np.max(u - np.arange(n) / n))


def cdf_distance_normal(x, mean, std):
    """Largest |ECDF - Phi| over a grid of 61 points in [-3, 3] sigma."""
    z = np.sort((x - mean) / std)
    grid = np.linspace(-3, 3, 61)
    ecdf = np.searchsorted(z, grid, side="right") / len(z)
    phi = np.array([0.5 * (1 + math.erf(g / math.sqrt(2))) for g in grid])
    return np.max(np.abs(ecdf - phi))


# ---------------------------------------------------------------- seeds and reproducibility

def run_python(code, **env):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, **env}).stdout.split()


def test_default_seed_is_fixed_and_thread_count_does_not_matter():
    code = ("import ampc, hashlib; print(ampc.initial_seed()); "
            "print(hashlib.sha1(ampc.randn(300000).numpy().tobytes()).hexdigest())")
    one = run_python(code, OMP_NUM_THREADS="1")
    two = run_python(code, OMP_NUM_THREADS="2")
    assert one[0] == "67280421310721"
    assert one == two


@pytest.mark.parametrize("make", [
    lambda: ampc.rand(1001),
    lambda: ampc.randn(33, 17, dtype=ampc.float64),
    lambda: ampc.randint(-5, 5, (999,)),
    lambda: ampc.randperm(500),
    lambda: ampc.bernoulli(ampc.full((300,), 0.4)),
    lambda: ampc.normal(ampc.zeros(40), ampc.ones(40)),
    lambda: ampc.empty(77, dtype=ampc.float16).uniform_(-2, 2),
])
def test_manual_seed_reproduces_bit_for_bit(make):
    ampc.manual_seed(1234)
    a1, a2 = make().numpy(), make().numpy()
    ampc.manual_seed(1234)
    b1, b2 = make().numpy(), make().numpy()
    np.testing.assert_array_equal(a1, b1)
    np.testing.assert_array_equal(a2, b2)
    assert not np.array_equal(a1, a2)  # the stream moves on
    ampc.manual_seed(1235)
    assert not np.array_equal(a1, make().numpy())


def test_seed_initial_seed_and_state():
    s = ampc.seed()
    assert ampc.initial_seed() == s and 0 <= s < 2**63
    assert ampc.seed() != s
    ampc.manual_seed(-1)
    assert ampc.initial_seed() == 2**64 - 1
    with pytest.raises(ValueError, match="Overflow"):
        ampc.manual_seed(2**64)
    ampc.manual_seed(7)
    state = ampc.random.get_rng_state()
    assert state.dtype == ampc.uint8 and state.shape == (2526,)  # ampc's layout of torch's mt19937 state
    a = ampc.randn(100).numpy()
    ampc.random.set_rng_state(state)
    np.testing.assert_array_equal(a, ampc.randn(100).numpy())
    with pytest.raises(RuntimeError, match="2526 bytes"):
        ampc.random.set_rng_state(ampc.zeros(3, dtype=ampc.uint8))
    with pytest.raises(RuntimeError, match="not a CPU generator state"):
        ampc.random.set_rng_state(ampc.zeros(2526, dtype=ampc.uint8))
    assert ampc.random.manual_seed(9) is ampc.random.default_generator


def test_generator_objects():
    g1 = ampc.random.Generator().manual_seed(42)
    g2 = ampc.random.Generator("cpu").manual_seed(42)
    ampc.manual_seed(1)
    before = ampc.random.get_rng_state().numpy()
    a = ampc.rand(50, generator=g1).numpy()
    assert np.array_equal(ampc.random.get_rng_state().numpy(), before)  # default untouched
    np.testing.assert_array_equal(a, ampc.rand(50, generator=g2).numpy())
    assert not np.array_equal(a, ampc.rand(50, generator=g1).numpy())  # g1 advanced
    ampc.manual_seed(42)
    np.testing.assert_array_equal(a, ampc.rand(50).numpy())  # same stream as the default seeded alike
    state = g1.get_state()
    x = ampc.empty(10).normal_(generator=g1).numpy()
    g1.set_state(state)
    np.testing.assert_array_equal(x, ampc.randn(10, generator=g1).numpy())
    assert g1.initial_seed() == 42
    p = ampc.randperm(20, generator=ampc.random.Generator().manual_seed(3)).numpy()
    np.testing.assert_array_equal(p, ampc.randperm(20, generator=ampc.random.Generator().manual_seed(3)).numpy())
    with pytest.raises(TypeError, match="generator"):
        ampc.rand(3, generator=5)
    with pytest.raises(RuntimeError, match="device type for generator"):
        ampc.rand(3, generator=ampc.random.Generator("cuda"))


# ---------------------------------------------------------------- distributions

@pytest.mark.parametrize("dtype", [ampc.float32, ampc.float64])
def test_uniform_statistics(dtype):
    ampc.manual_seed(11)
    x = host(ampc.empty(N, dtype=dtype).uniform_(-2.0, 3.0))
    assert x.min() >= -2.0 and x.max() < 3.0
    assert abs(x.mean() - 0.5) < 0.01 and abs(x.var() - 25 / 12) < 0.02
    assert ks_uniform(x, -2.0, 3.0) < 0.0025  # KS 1% point: 0.00163


@pytest.mark.parametrize("dtype", [ampc.float32, ampc.float64])
def test_normal_statistics(dtype):
    ampc.manual_seed(12)
    x = host(ampc.empty(N, dtype=dtype).normal_(1.5, 2.0))
    assert abs(x.mean() - 1.5) < 0.012 and abs(x.std() - 2.0) < 0.01
    assert cdf_distance_normal(x, 1.5, 2.0) < 0.0025
    # The pairs of Box-Muller are independent: neighbours are uncorrelated.
    assert abs(np.corrcoef(x[0::2], x[1::2])[0, 1]) < 0.006


def test_rand_and_randn_defaults():
    ampc.manual_seed(13)
    x = ampc.rand(1000, 1000)
    assert x.dtype == ampc.float32 and x.shape == (1000, 1000)
    v = host(x)
    assert 0 <= v.min() and v.max() < 1 and ks_uniform(v.ravel(), 0, 1) < 0.0025
    z = host(ampc.randn(N))
    assert cdf_distance_normal(z, 0, 1) < 0.0025
    assert ampc.rand(3, requires_grad=True).requires_grad
    assert ampc.rand(()).shape == () and ampc.rand(3, 0).shape == (3, 0) and ampc.randn(0).shape == (0,)
    assert ampc.rand((2, 3)).shape == (2, 3) and ampc.rand(size=(4,)).shape == (4,)


@pytest.mark.parametrize("dtype", [ampc.float16, ampc.bfloat16])
def test_half_outputs_are_the_float32_stream_rounded_once(dtype):
    ampc.manual_seed(14)
    f = ampc.rand(50000).numpy()
    ampc.manual_seed(14)
    h = ampc.rand(50000, dtype=dtype)
    assert h.dtype == dtype
    want = f.astype(NP_OF[dtype])
    want[want.astype(np.float32) == 1.0] = 0  # [0, 1): a value rounded up to 1 becomes 0, as torch
    np.testing.assert_array_equal(h.float().numpy(), want.astype(np.float32))
    assert host(h).max() < 1.0
    ampc.manual_seed(15)
    z = host(ampc.randn(200000, dtype=dtype))
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1) < 0.01


def test_like_variants():
    src = ampc.zeros(3, 4, dtype=ampc.float16)
    r = ampc.rand_like(src)
    assert r.shape == (3, 4) and r.dtype == ampc.float16
    assert ampc.randn_like(src, dtype=ampc.float64).dtype == ampc.float64
    i = ampc.randint_like(src, 10)
    assert i.dtype == ampc.float16 and host(i).max() < 10 and np.all(host(i) == np.floor(host(i)))
    j = ampc.randint_like(ampc.zeros(1000, dtype=ampc.int32), -4, 4)
    assert j.dtype == ampc.int32 and set(host(j).astype(int)) == set(range(-4, 4))
    assert ampc.randint_like(src, low=5, high=6).float().numpy().min() == 5


# ---------------------------------------------------------------- layouts

def test_strided_outputs_get_torchs_element_order():
    """torch's serial kernels walk a TensorIterator: a permuted tensor in memory order, a sliced
    one in its (outer to inner) order; the values equal torch's."""
    import torch
    for serial, fill in ((True, lambda t: t.uniform_()), (False, lambda t: t.normal_()),
                         (True, lambda t: t.random_(0, 100)), (True, lambda t: t.bernoulli_(0.5))):
        for T in (ampc, torch):
            T.manual_seed(21)
        view = fill(ampc.zeros(8, 6).t())  # (6, 8), not contiguous: memory order
        tview = fill(torch.zeros(8, 6).t())
        np.testing.assert_array_equal(view.numpy(), tview.numpy())
        if serial:  # normal_ of 16+ contiguous elements takes torch's blocked path instead
            ampc.manual_seed(21)
            ref = fill(ampc.empty(8, 6)).t()
            np.testing.assert_array_equal(view.numpy(), ref.numpy())
    base = ampc.full((5, 9), -7.0)
    step = base[:, ::2]  # (5, 5) with an inner stride of 2
    ampc.manual_seed(22)
    step.normal_()
    torch.manual_seed(22)
    np.testing.assert_array_equal(step.numpy(), torch.full((5, 9), -7.0)[:, ::2].normal_().numpy())
    np.testing.assert_array_equal(base.numpy()[:, 1::2], -7.0)  # the elements between are untouched


# ---------------------------------------------------------------- integers

def test_randint_bounds_and_coverage():
    ampc.manual_seed(31)
    x = ampc.randint(-3, 7, (100000,))
    assert x.dtype == ampc.int64
    v = x.numpy()
    assert v.min() == -3 and v.max() == 6
    counts = np.bincount(v + 3, minlength=10)
    assert np.all(np.abs(counts - 10000) < 600)  # 6 sigma
    assert ampc.randint(5, (4, 5)).shape == (4, 5) and ampc.randint(5, (7,)).numpy().max() < 5
    assert ampc.randint(low=2, high=4, size=(50,)).numpy().min() == 2
    assert ampc.randint(10, size=(3,), dtype=ampc.float32).dtype == ampc.float32
    wide = ampc.randint(-2**40, 2**40, (100000,)).numpy()  # a range beyond 32 bits
    assert wide.min() >= -2**40 and wide.max() < 2**40 and abs(np.mean(np.abs(wide) > 2**39) - 0.5) < 0.01
    full = ampc.empty(100000, dtype=ampc.int64).random_(-2**63, None)  # every int64
    assert abs(np.mean(full.numpy() < 0) - 0.5) < 0.01


@pytest.mark.parametrize("dtype,high", [(ampc.uint8, 255), (ampc.int32, 2**31 - 1), (ampc.int64, 2**63 - 1),
                                        (ampc.bool, 1), (ampc.float16, 2**11), (ampc.float32, 2**24),
                                        (ampc.bfloat16, 2**8), (ampc.float64, 2**53)])
def test_random_default_ranges(dtype, high):
    ampc.manual_seed(32)
    v = host(ampc.empty(20000, dtype=dtype).random_())
    assert v.min() >= 0 and v.max() <= high and np.all(v == np.floor(v))
    if high <= 256:
        assert v.max() >= high - 2  # the top of the range is reached
    else:
        assert v.max() > high / 2


def test_random_overloads():
    ampc.manual_seed(33)
    t = ampc.empty(5000, dtype=ampc.int64)
    assert t.random_(10) is t and t.numpy().min() == 0 and t.numpy().max() == 9  # random_(to)
    t.random_(3, 6)
    assert set(t.numpy().tolist()) == {3, 4, 5}
    t.random_(2**62, None)  # random_(from, None): up to the dtype's max
    assert t.numpy().min() >= 2**62
    t.random_(**{"from": -4})
    assert t.numpy().min() >= -4 and t.numpy().max() > 2**60
    u = ampc.empty(3000, dtype=ampc.uint8).random_(0, 256)
    assert u.numpy().max() == 255


# ---------------------------------------------------------------- randperm, bernoulli, normal

@pytest.mark.parametrize("n", [0, 1, 2, 3, 1000, 65537])
def test_randperm_is_a_permutation(n):
    ampc.manual_seed(41)
    p = ampc.randperm(n)
    assert p.dtype == ampc.int64 and p.shape == (n,)
    np.testing.assert_array_equal(np.sort(p.numpy()), np.arange(n))
    if n >= 1000:
        assert np.mean(p.numpy() == np.arange(n)) < 0.01


def test_randperm_dtypes_and_uniformity():
    ampc.manual_seed(42)
    q = ampc.randperm(2049, dtype=ampc.float16)
    np.testing.assert_array_equal(np.sort(host(q)), np.arange(2049))
    assert ampc.randperm(256, dtype=ampc.uint8).dtype == ampc.uint8
    # each of the 6 orders of 3 elements is equally likely
    seen = {}
    for _ in range(3000):
        key = tuple(ampc.randperm(3).numpy().tolist())
        seen[key] = seen.get(key, 0) + 1
    assert len(seen) == 6 and all(abs(c - 500) < 130 for c in seen.values())


def test_bernoulli_forms():
    ampc.manual_seed(51)
    t = ampc.empty(200000)
    assert t.bernoulli_(0.3) is t
    v = t.numpy()
    assert set(np.unique(v).tolist()) <= {0.0, 1.0} and abs(v.mean() - 0.3) < 0.005
    assert t.bernoulli_(0.0).numpy().max() == 0 and t.bernoulli_(1.0).numpy().min() == 1
    probs = ampc.tensor([[0.1, 0.9]] * 5000)
    d = ampc.bernoulli(probs)
    assert d.dtype == ampc.float32 and d.shape == (5000, 2)
    m = d.numpy().mean(axis=0)
    assert abs(m[0] - 0.1) < 0.02 and abs(m[1] - 0.9) < 0.02
    assert abs(probs.bernoulli().numpy().mean() - 0.5) < 0.02
    assert abs(ampc.bernoulli(probs, 0.25).numpy().mean() - 0.25) < 0.02
    b = ampc.empty(10000, 2, dtype=ampc.bool).bernoulli_(ampc.tensor([0.0, 1.0]))
    assert not b.numpy()[:, 0].any() and b.numpy()[:, 1].all()
    h = ampc.empty(1000, dtype=ampc.float16).bernoulli_(0.5)
    assert set(np.unique(host(h)).tolist()) == {0.0, 1.0}


def test_normal_forms():
    ampc.manual_seed(61)
    x = ampc.normal(2.0, 3.0, (200000,))
    assert x.dtype == ampc.float32 and abs(host(x).mean() - 2) < 0.03 and abs(host(x).std() - 3) < 0.03
    assert ampc.normal(0.0, 1.0, size=(3, 4), dtype=ampc.float64).dtype == ampc.float64
    mean = ampc.tensor([[-10.0], [10.0]])
    y = ampc.normal(mean, ampc.full((50000,), 0.5))  # broadcast to (2, 50000)
    assert y.shape == (2, 50000)
    v = y.numpy()
    assert abs(v[0].mean() + 10) < 0.02 and abs(v[1].mean() - 10) < 0.02 and abs(v[0].std() - 0.5) < 0.01
    assert ampc.normal(mean, 2.0).shape == (2, 1)
    z = ampc.normal(1.0, ampc.full((40000,), 2.0, dtype=ampc.float16))
    assert z.dtype == ampc.float16 and abs(host(z).mean() - 1) < 0.05
    assert ampc.normal(ampc.zeros(3)).shape == (3,)


# ---------------------------------------------------------------- errors

def test_errors():
    with pytest.raises(RuntimeError, match=r"random_ expects 'from' to be less than 'to', but got from=5 >= to=5"):
        ampc.empty(3).random_(5, 5)
    with pytest.raises(RuntimeError, match=r"from=5 >= to=5"):
        ampc.randint(5, 5, (3,))
    with pytest.raises(RuntimeError, match=r"from=0 >= to=-5"):
        ampc.randint(-5, (3,))
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        ampc.empty(3).normal_(0, -1)
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0"):
        ampc.normal(0.0, -1.0, (3,))
    with pytest.raises(RuntimeError, match="normal expects all elements of std >= 0.0"):
        ampc.normal(ampc.zeros(3), ampc.full((3,), -1.0))
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        ampc.empty(3, dtype=ampc.int64).uniform_()
    with pytest.raises(NotImplementedError, match="not implemented for 'Int'"):
        ampc.randn(3, dtype=ampc.int32)
    with pytest.raises(RuntimeError, match=r"uniform_ expects to return a \[from, to\) range, but found from=2 > to=1"):
        ampc.empty(3).uniform_(2, 1)
    with pytest.raises(RuntimeError, match="to is out of bounds for c10::Half"):
        ampc.empty(2, dtype=ampc.float16).uniform_(0, 70000)
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds for unsigned char"):
        ampc.empty(3, dtype=ampc.uint8).random_(0, 300)
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds for bool"):
        ampc.randint(3, (2,), dtype=ampc.bool)
    with pytest.raises(RuntimeError, match=r"bernoulli_ expects p to be in \[0, 1\], but got p=1.5"):
        ampc.empty(3).bernoulli_(1.5)
    with pytest.raises(RuntimeError, match="p_in >= 0 && p_in <= 1"):
        ampc.bernoulli(ampc.tensor([0.5, 2.0]))
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        ampc.bernoulli(ampc.tensor([1, 0]))
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        ampc.randperm(-1)
    with pytest.raises(RuntimeError, match="n cannot be greater than 2049 for Half type."):
        ampc.randperm(3000, dtype=ampc.float16)
    with pytest.raises(NotImplementedError, match="'Bool'"):
        ampc.randperm(3, dtype=ampc.bool)
    with pytest.raises(RuntimeError, match="negative dimension -3"):
        ampc.rand(2, -3)
    with pytest.raises(TypeError, match="tuple of ints"):
        ampc.rand(2, 3.0)
    with pytest.raises(TypeError, match="tuple of ints"):
        ampc.randint(0, 5, "ab")
    with pytest.raises(TypeError, match="missing"):
        ampc.rand()
    with pytest.raises(TypeError, match="'high'"):
        ampc.randint(size=(3,))
    with pytest.raises(TypeError, match="invalid combination"):
        ampc.normal(0.0, 1.0)
    with pytest.raises(TypeError, match="unexpected keyword"):
        ampc.rand(3, foo=1)
    with pytest.raises(RuntimeError, match="Only Tensors of floating point"):
        ampc.randint(3, (2,), requires_grad=True)


def test_zero_size_requests_draw_nothing():
    ampc.manual_seed(71)
    before = ampc.random.get_rng_state().numpy()
    ampc.rand(0)
    ampc.empty(4, 0).normal_()
    ampc.randint(3, (0,))
    np.testing.assert_array_equal(before, ampc.random.get_rng_state().numpy())


def test_in_place_fill_of_a_leaf_that_requires_grad():
    w = ampc.rand(3, requires_grad=True)
    for fill in (w.uniform_, w.normal_, w.bernoulli_, lambda: w.random_(0, 5)):
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
            fill()
    d = ampc.rand(3, requires_grad=True).detach()
    assert d.uniform_(2, 3).numpy().min() >= 2
