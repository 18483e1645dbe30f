"""ampc's CPU random numbers equal torch's bit for bit (torch, installed as the test oracle, is
run side by side): after manual_seed(s), every generator torch's CPUGeneratorImpl drives -- rand,
randn, randint, randperm, uniform_/normal_/random_/bernoulli_, the sampling ops, dropout masks and
nn.init -- gives the same values, for many seeds and sizes (1..10^6), every floating dtype,
strided outputs, Generator objects and after a get/set_rng_state round trip."""
import numpy as np
import pytest
import torch

import ampc
import ampc.nn.functional as AF
import torch.nn.functional as TF

SEEDS = (0, 1, 7, 123456789, 2**40 + 3, 2**64 - 1)
SIZES = (1, 2, 15, 16, 17, 100, 1000, 10**6)
FLOATS = ("float32", "float64", "float16", "bfloat16")


def bits(t):
    """A tensor of either library as raw bytes (NaN-safe, -0.0 distinct from 0.0); 16-bit floats
    through float32, which holds them exactly."""
    t = t.detach()
    if str(t.dtype).split(".")[-1] in ("float16", "bfloat16"):
        t = t.float()
    return t.contiguous().numpy().copy().view(np.uint8)


def same(make, seed):
    """make(lib) under manual_seed(seed) in both libraries: the same bits, shape and dtype."""
    torch.manual_seed(seed)
    want = make(torch)
    ampc.manual_seed(seed)
    got = make(ampc)
    assert tuple(got.shape) == tuple(want.shape)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_array_equal(bits(got), bits(want))


def dt(lib, name):
    return getattr(lib, name)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", SIZES)
def test_rand_randn(n, dtype):
    for seed in SEEDS[:3] if n == 10**6 else SEEDS:
        same(lambda T: T.rand(n, dtype=dt(T, dtype)), seed)
        same(lambda T: T.randn(n, dtype=dt(T, dtype)), seed)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", SIZES)
def test_uniform_normal_with_parameters(n, dtype):
    for seed in SEEDS[:2] if n == 10**6 else SEEDS[:4]:
        same(lambda T: T.empty(n, dtype=dt(T, dtype)).uniform_(-0.37, 0.71), seed)
        same(lambda T: T.empty(n, dtype=dt(T, dtype)).normal_(0.3, 2.5), seed)


def test_normal_sample_cache_carries_across_calls():
    """The scalar path keeps the Box-Muller sine for the next call, as torch's generator does."""
    for seed in SEEDS:
        same(lambda T: T.cat([T.randn(3), T.randn(5, dtype=T.float64), T.randn(1), T.randn(40), T.randn(7)]
                             ).float(), seed)


@pytest.mark.parametrize("make", [
    lambda T: T.empty(9, 7).t().normal_(),
    lambda T: T.empty(4, 3, 5).permute(2, 0, 1).uniform_(-1, 2),
    lambda T: T.empty(20, 6)[:, ::2].normal_(1.0, 0.5),
    lambda T: T.empty(20, 6)[::3, 1:].random_(0, 1000),
    lambda T: T.empty(6, 40, dtype=T.float64).t().bernoulli_(0.25),
    lambda T: T.empty(5, 7).t().bernoulli_(T.rand(7, 5)),
    lambda T: T.empty(3, 7, 5).permute(1, 2, 0).bernoulli_(T.rand(1, 5, 3, dtype=T.float64)),
], ids=["transposed", "permuted", "sliced", "sliced-random", "transposed-bernoulli", "transposed-bernoulli-p",
        "permuted-bernoulli-p"])
def test_strided_outputs(make):
    for seed in SEEDS[:3]:
        same(make, seed)


@pytest.mark.parametrize("n", SIZES)
def test_randint_ranges(n):
    seeds = SEEDS[:2] if n == 10**6 else SEEDS[:4]
    for seed in seeds:
        same(lambda T: T.randint(-5, 17, (n,)), seed)                      # 32-bit range path
        same(lambda T: T.randint(0, 2**40, (n,)), seed)                    # 64-bit range path
        same(lambda T: T.randint(-2**62, 2**62, (n,)), seed)
        same(lambda T: T.randint(3, 1000, (n,), dtype=T.int32), seed)
        same(lambda T: T.randint(0, 256, (n,), dtype=T.uint8), seed)
        same(lambda T: T.randint(-100, 100, (n,), dtype=T.float32), seed)


@pytest.mark.parametrize("make", [
    lambda T: T.empty(333, dtype=T.int64).random_(),
    lambda T: T.empty(333, dtype=T.int64).random_(-2**63, None),          # the full 64-bit range
    lambda T: T.empty(333, dtype=T.int32).random_(),
    lambda T: T.empty(333, dtype=T.uint8).random_(),
    lambda T: T.empty(333, dtype=T.bool).random_(),
    lambda T: T.empty(333).random_(),
    lambda T: T.empty(333, dtype=T.float64).random_(),
    lambda T: T.empty(333, dtype=T.float16).random_(),
    lambda T: T.empty(333, dtype=T.bfloat16).random_(),
    lambda T: T.empty(333).random_(10),
    lambda T: T.empty(333, dtype=T.float64).random_(5, 2**40),
    lambda T: T.randint_like(T.zeros(50, 3), 3, 10),
])
def test_random_overloads(make):
    for seed in SEEDS:
        same(make, seed)


@pytest.mark.parametrize("n", (1, 2, 15, 16, 17, 100, 1000, 100000))
def test_randperm(n):
    for seed in SEEDS[:4]:
        same(lambda T: T.randperm(n), seed)
    same(lambda T: T.randperm(n, dtype=T.float64), 5)
    if n <= 2049:
        same(lambda T: T.randperm(n, dtype=T.float16), 6)


# bernoulli_(float p) is torch's mt19937 loop on Intel CPUs as well: the MKL (MCG31) branch of
# torch's DistributionKernels.cpp is built only under FBCODE_CAFFE2, so CI on Intel tests the same path.
@pytest.mark.parametrize("n", SIZES)
def test_bernoulli(n):
    for seed in SEEDS[:2] if n == 10**6 else SEEDS[:4]:
        same(lambda T: T.empty(n).bernoulli_(0.3), seed)
        same(lambda T: T.empty(n, dtype=T.int64).bernoulli_(0.7), seed)
        same(lambda T: T.bernoulli(T.rand(n)), seed)                          # float p: float draws
        same(lambda T: T.bernoulli(T.rand(n, dtype=T.float64)), seed)         # double p: double draws
        same(lambda T: T.empty(n, dtype=T.float16).bernoulli_(T.rand(n, dtype=T.float16)), seed)


def test_bernoulli_broadcast_p():
    for seed in SEEDS[:3]:
        same(lambda T: T.empty(50, 4).bernoulli_(T.rand(4)), seed)
        same(lambda T: T.empty(50, 4, dtype=T.bool).bernoulli_(T.rand(50, 1, dtype=T.float64)), seed)


@pytest.mark.parametrize("n", (1, 15, 16, 17, 1000))
def test_normal_tensor_forms(n):
    for seed in SEEDS[:3]:
        same(lambda T: T.normal(T.rand(n), T.rand(n) + 0.5), seed)
        same(lambda T: T.normal(T.rand(n), 2.0), seed)
        same(lambda T: T.normal(1.5, T.rand(n, dtype=T.float64)), seed)
        same(lambda T: T.normal(1.5, 3.0, (n,)), seed)
        same(lambda T: T.normal(T.rand(3, 1), T.rand(n) + 0.1), seed)


@pytest.mark.parametrize("dtype", ("float32", "float64", "float16", "bfloat16"))
@pytest.mark.parametrize("n", (1, 16, 17, 1000, 10**5))
def test_dropout_masks(n, dtype):
    for seed in SEEDS[:3]:
        same(lambda T: T.nn.functional.dropout(T.arange(n, dtype=T.float64).sub(n / 2).mul(0.01).to(dt(T, dtype)), 0.3), seed)
        same(lambda T: T.nn.Dropout(0.5).train()(T.ones(n, 3, dtype=dt(T, dtype))), seed)


def test_dropout_gradient_and_extremes():
    for lib in (torch, ampc):
        lib.manual_seed(3)
    x_t = torch.randn(500, requires_grad=True)
    x_a = ampc.tensor(x_t.detach().numpy(), requires_grad=True)
    torch.manual_seed(4)
    ampc.manual_seed(4)
    TF.dropout(x_t, 0.2).mul(torch.arange(500.0)).sum().backward()
    AF.dropout(x_a, 0.2).mul(ampc.arange(500.0)).sum().backward()
    np.testing.assert_array_equal(bits(x_a.grad), bits(x_t.grad))
    same(lambda T: T.cat([T.nn.functional.dropout(T.ones(10), 1.0), T.rand(3)]), 5)  # p = 1 draws nothing
    same(lambda T: T.cat([T.nn.functional.dropout(T.ones(10), 0.0), T.rand(3)]), 5)


@pytest.mark.parametrize("make", [
    lambda T: T.nn.Linear(20, 7).weight,
    lambda T: T.nn.Linear(20, 7).bias,
    lambda T: T.cat([p.flatten() for p in T.nn.Sequential(T.nn.Linear(784, 256), T.nn.Linear(256, 10)
                                                          ).parameters()]),
    lambda T: T.nn.Conv2d(3, 16, 3).weight,
    lambda T: T.nn.Conv2d(3, 16, 5, bias=True).bias,
    lambda T: T.nn.Embedding(1000, 64).weight,
    lambda T: T.nn.init.xavier_uniform_(T.empty(30, 50)),
    lambda T: T.nn.init.xavier_normal_(T.empty(30, 50)),
    lambda T: T.nn.init.kaiming_uniform_(T.empty(30, 50), nonlinearity="relu"),
    lambda T: T.nn.init.kaiming_normal_(T.empty(30, 50), mode="fan_out"),
    lambda T: T.nn.init.normal_(T.empty(30, 50), 0.1, 0.3),
    lambda T: T.nn.init.uniform_(T.empty(30, 50), -2, 2),
    lambda T: T.nn.init.trunc_normal_(T.empty(30, 50), std=0.02),
], ids=["linear-w", "linear-b", "mlp", "conv-w", "conv-b", "embedding", "xavier-u", "xavier-n", "kaiming-u",
        "kaiming-n", "normal", "uniform", "trunc-normal"])
def test_module_initialisation(make):
    for seed in SEEDS[:3]:
        same(lambda T: make(T).detach(), seed)


def test_generator_objects():
    for seed in SEEDS[:3]:
        g_t = torch.Generator().manual_seed(seed)
        g_a = ampc.Generator().manual_seed(seed)
        torch.manual_seed(99)
        ampc.manual_seed(99)
        for _ in range(2):  # the generators advance; the default stream is untouched
            np.testing.assert_array_equal(bits(ampc.rand(70, generator=g_a)), bits(torch.rand(70, generator=g_t)))
            np.testing.assert_array_equal(bits(ampc.randn(40, generator=g_a)), bits(torch.randn(40, generator=g_t)))
            np.testing.assert_array_equal(ampc.randperm(30, generator=g_a).numpy(),
                                          torch.randperm(30, generator=g_t).numpy())
            np.testing.assert_array_equal(ampc.randint(0, 9, (20,), generator=g_a).numpy(),
                                          torch.randint(0, 9, (20,), generator=g_t).numpy())
            np.testing.assert_array_equal(bits(ampc.empty(33).normal_(generator=g_a)),
                                          bits(torch.empty(33).normal_(generator=g_t)))
            np.testing.assert_array_equal(bits(ampc.bernoulli(ampc.full((25,), 0.5), generator=g_a)),
                                          bits(torch.bernoulli(torch.full((25,), 0.5), generator=g_t)))
        np.testing.assert_array_equal(bits(ampc.rand(5)), bits(torch.rand(5)))
        assert g_a.initial_seed() == g_t.initial_seed() == seed


def test_state_roundtrip():
    torch.manual_seed(5)
    ampc.manual_seed(5)
    torch.randn(3), ampc.randn(3)  # leaves a cached normal sample in the state
    s_t, s_a = torch.get_rng_state(), ampc.get_rng_state()
    assert s_a.dtype == ampc.uint8 and s_a.dim() == 1
    a1, t1 = ampc.randn(9), torch.randn(9)
    np.testing.assert_array_equal(bits(a1), bits(t1))
    torch.set_rng_state(s_t)
    ampc.set_rng_state(s_a)
    np.testing.assert_array_equal(bits(ampc.randn(9)), bits(a1))
    np.testing.assert_array_equal(bits(torch.randn(9)), bits(t1))
    g = ampc.Generator().manual_seed(11)
    st = g.get_state()
    x = ampc.rand(8, generator=g)
    g.set_state(st)
    np.testing.assert_array_equal(bits(ampc.rand(8, generator=g)), bits(x))
    assert ampc.random.default_generator.get_state().numpy().tobytes() == ampc.get_rng_state().numpy().tobytes()
    with ampc.random.fork_rng():
        ampc.rand(100)
    torch.set_rng_state(s_t)
    ampc.set_rng_state(s_a)
    np.testing.assert_array_equal(bits(ampc.randn(9)), bits(torch.randn(9)))


def test_initial_seed_and_default_generator():
    ampc.manual_seed(2**64 - 1)
    torch.manual_seed(2**64 - 1)
    assert ampc.initial_seed() == torch.initial_seed()
    ampc.random.default_generator.manual_seed(17)
    torch.default_generator.manual_seed(17)
    np.testing.assert_array_equal(bits(ampc.rand(10)), bits(torch.rand(10)))
    np.testing.assert_array_equal(bits(ampc.rand(10, generator=ampc.random.default_generator)),
                                  bits(torch.rand(10, generator=torch.default_generator)))


# ---------------------------------------------------------------- the sampling ops

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", (1, 2, 15, 16, 17, 1000, 10**5))
def test_exponential_geometric_log_normal_cauchy(n, dtype):
    for seed in SEEDS[:3]:
        same(lambda T: T.empty(n, dtype=dt(T, dtype)).exponential_(2.5), seed)
        same(lambda T: T.empty(n, dtype=dt(T, dtype)).exponential_(), seed)
        same(lambda T: T.empty(n, dtype=dt(T, dtype)).geometric_(0.3), seed)
        same(lambda T: T.empty(n, dtype=dt(T, dtype)).log_normal_(0.5, 0.7), seed)
        same(lambda T: T.empty(n, dtype=dt(T, dtype)).log_normal_(), seed)
        same(lambda T: T.empty(n, dtype=dt(T, dtype)).cauchy_(0.5, 2.0), seed)


def test_geometric_integer_outputs_and_strides():
    for seed in SEEDS[:3]:
        same(lambda T: T.empty(500, dtype=T.int64).geometric_(0.2), seed)
        same(lambda T: T.empty(500, dtype=T.int32).geometric_(0.6), seed)
        same(lambda T: T.empty(30, 9).t().exponential_(), seed)


@pytest.mark.parametrize("dtype", ("float32", "float64", "float16", "bfloat16"))
@pytest.mark.parametrize("k", (1, 2, 15, 17, 1000))
def test_multinomial(k, dtype):
    for seed in SEEDS[:3]:
        same(lambda T: T.multinomial(T.rand(k, dtype=dt(T, dtype)) + 0.01, 1), seed)
        same(lambda T: T.multinomial(T.rand(4, k, dtype=dt(T, dtype)), 50, replacement=True), seed)
        same(lambda T: T.multinomial(T.rand(k, dtype=dt(T, dtype)), 1, replacement=True), seed)
        if dtype in ("float32", "float64"):
            # several samples without replacement are torch's topk of the keys: 16-bit keys tie
            # often, and torch's topk orders ties by its std::nth_element, which ampc does not copy
            same(lambda T: T.multinomial(T.rand(3, k, dtype=dt(T, dtype)) + 0.01, min(k, 5)), seed)
            same(lambda T: T.rand(2, k, dtype=dt(T, dtype)).multinomial(min(k, 3)), seed)


def test_multinomial_zero_probabilities_and_generator():
    p = [0.0, 0.3, 0.0, 0.7, 0.0]
    for seed in SEEDS[:3]:
        same(lambda T: T.multinomial(T.tensor(p), 2), seed)
        same(lambda T: T.multinomial(T.tensor([p] * 7), 1000, True), seed)
        same(lambda T: T.multinomial(T.tensor(p), 2, generator=T.Generator().manual_seed(seed)), 0)


@pytest.mark.parametrize("dtype", ("float32", "float64", "float16", "bfloat16"))
def test_poisson(dtype):
    for seed in SEEDS[:3]:
        same(lambda T: T.poisson(T.rand(1000, dtype=dt(T, dtype)) * 30), seed)     # both algorithms
        same(lambda T: T.poisson(T.tensor([0.0, 1e-3, 9.99, 10.0, 1e4]).to(dt(T, dtype))), seed)


@pytest.mark.parametrize("dtype", ("float32", "float64"))
def test_binomial(dtype):
    for seed in SEEDS[:3]:
        same(lambda T: T.binomial(T.full((1000,), 40.0, dtype=dt(T, dtype)), T.rand(1000, dtype=dt(T, dtype))), seed)
        same(lambda T: T.binomial(T.tensor([0.0, 5.0, 1000.0, 30.0, 7.0]).to(dt(T, dtype)),
                                  T.tensor([0.5, 1.0, 0.2, 0.95, 0.0]).to(dt(T, dtype))), seed)
        same(lambda T: T.binomial(T.full((3, 1), 100.0, dtype=dt(T, dtype)), T.rand(4, dtype=dt(T, dtype))), seed)


def _raises_like(fn):
    """fn(torch) and fn(ampc) raise the same exception type with the same message."""
    with pytest.raises(Exception) as want:
        fn(torch)
    with pytest.raises(type(want.value)) as got:
        fn(ampc)
    assert str(got.value).split("\n")[0] == str(want.value).split("\n")[0]


@pytest.mark.parametrize("fn", [
    lambda T: T.empty(3).exponential_(-1),
    lambda T: T.empty(3).exponential_(0),
    lambda T: T.empty(3, dtype=T.int64).exponential_(),
    lambda T: T.empty(3).geometric_(0),
    lambda T: T.empty(3).geometric_(1.5),
    lambda T: T.empty(3).log_normal_(1, -1),
    lambda T: T.empty(3, dtype=T.int64).log_normal_(),
    lambda T: T.empty(3).cauchy_(0, -1),
    lambda T: T.empty(3, dtype=T.int64).cauchy_(),
    lambda T: T.multinomial(T.tensor([1.0, 2.0]), 3),
    lambda T: T.multinomial(T.tensor([1.0, -2.0]), 1),
    lambda T: T.multinomial(T.tensor([1.0, -2.0]), 2, True),
    lambda T: T.multinomial(T.tensor([0.0, 0.0]), 2, True),
    lambda T: T.multinomial(T.tensor([0.0, 0.0]), 1),
    lambda T: T.multinomial(T.tensor([1.0, float("inf")]), 2, True),
    lambda T: T.multinomial(T.tensor([1.0, float("nan")]), 1),
    lambda T: T.multinomial(T.ones(2, 2, 2), 1),
    lambda T: T.multinomial(T.tensor([1, 2]), 1),
    lambda T: T.multinomial(T.tensor([1.0, 2.0]), 0),
    lambda T: T.poisson(T.tensor([-1.0])),
    lambda T: T.poisson(T.tensor([1])),
    lambda T: T.binomial(T.tensor([5]), T.tensor([0.5])),
    lambda T: T.binomial(T.tensor([5.0], dtype=T.float16), T.tensor([0.5], dtype=T.float16)),
])
def test_errors_match_torch(fn):
    _raises_like(fn)
