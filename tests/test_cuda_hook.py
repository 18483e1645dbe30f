"""The CUDA hook: ampc.cuda on machines without a GPU (every test here runs on those), and, where a
GPU exists, round trips of every dtype through the device, fills against the CPU backend and
the reproducibility of the Philox kernels. Memory statistics of the CPU allocator are checked here too."""
import gc

import numpy as np
import pytest

import ampc
import ampc.cuda
import ampc.random
from helpers import host

ALL_DTYPES = [ampc.float32, ampc.float16, ampc.bfloat16, ampc.float64, ampc.int64, ampc.int32, ampc.uint8,
              ampc.bool]
needs_gpu = pytest.mark.skipif(not ampc.cuda.is_available(), reason="needs a GPU")
needs_no_gpu = pytest.mark.skipif(ampc.cuda.is_available(), reason="checks the behaviour without a GPU")


def sample(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == ampc.bool:
        return ampc.tensor(rng.random(shape) < 0.5)
    if dtype in (ampc.uint8,):
        return ampc.tensor(rng.integers(0, 256, shape).astype(np.uint8))
    if dtype in (ampc.int32, ampc.int64):
        return ampc.tensor(rng.integers(-1000, 1000, shape), dtype=dtype)
    return ampc.tensor(rng.standard_normal(shape), dtype=dtype)


# ---------------------------------------------------------------- without a GPU

def test_queries_never_fail():
    assert isinstance(ampc.cuda.is_available(), bool)
    assert ampc.cuda.device_count() >= 0
    assert ampc.cuda.is_available() == (ampc.cuda.device_count() > 0)
    assert ampc.cuda.is_initialized() == ampc.cuda.is_available()
    ampc.cuda.init()
    for f in (ampc.cuda.memory_allocated, ampc.cuda.max_memory_allocated, ampc.cuda.memory_reserved,
              ampc.cuda.max_memory_reserved):
        assert isinstance(f(), int) and f() >= 0
    assert set(ampc.cuda.memory_stats()) >= {"allocated_bytes.all.current", "allocated_bytes.all.peak"}
    ampc.cuda.reset_peak_memory_stats()
    ampc.cuda.reset_max_memory_allocated()
    ampc.cuda.empty_cache()
    ampc.cuda.manual_seed(1)
    ampc.cuda.manual_seed_all(1)
    assert issubclass(ampc.cuda.OutOfMemoryError, RuntimeError)
    assert ampc.cuda.OutOfMemoryError is ampc.OutOfMemoryError


@needs_no_gpu
def test_without_gpu():
    assert ampc.cuda.is_available() is False and ampc.cuda.device_count() == 0
    assert ampc.cuda.memory_allocated() == 0 and ampc.cuda.max_memory_reserved("cuda:0") == 0
    for call in (ampc.cuda.current_device, ampc.cuda.get_device_name, ampc.cuda.synchronize,
                 lambda: ampc.cuda.set_device(0), lambda: ampc.cuda.get_device_name("cuda:0")):
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            call()
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        ampc.zeros(2).cuda()
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        ampc.zeros(2, device="cuda")
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        ampc.rand(2, device="cuda:0")
    with pytest.raises(ValueError, match="Expected a cuda device"):
        ampc.cuda.memory_allocated("cpu")


def test_cpu_memory_stats():
    gc.collect()
    ampc._C._cpu_reset_peak()
    before = ampc._C._cpu_memory_stats()
    assert set(before) >= {"allocated", "peak", "num_allocs", "peak_allocated", "reserved"}
    t = ampc.empty(1 << 20)  # 4 MiB
    during = ampc._C._cpu_memory_stats()
    assert during["allocated"] - before["allocated"] >= 4 << 20
    assert during["peak"] >= during["allocated"] and during["num_allocs"] > before["num_allocs"]
    del t
    gc.collect()
    after = ampc._C._cpu_memory_stats()
    assert after["allocated"] <= during["allocated"] - (4 << 20)
    assert after["peak"] >= during["allocated"]  # the peak remembers
    ampc._C._cpu_reset_peak()
    assert ampc._C._cpu_memory_stats()["peak"] == ampc._C._cpu_memory_stats()["allocated"]


# ---------------------------------------------------------------- with a GPU

@needs_gpu
def test_device_queries():
    assert isinstance(ampc.cuda.get_device_name(), str) and ampc.cuda.get_device_name(0)
    assert ampc.cuda.current_device() == 0
    ampc.cuda.set_device(0)
    ampc.cuda.synchronize()
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        ampc.cuda.set_device(ampc.cuda.device_count())


@needs_gpu
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_round_trip_every_dtype(dtype):
    x = sample(dtype, (37, 53))
    d = x.cuda()
    assert d.is_cuda and d.dtype == dtype and d.shape == (37, 53)
    np.testing.assert_array_equal(host(d.cpu()), host(x))
    # non-contiguous both ways: a transposed source, a strided destination
    np.testing.assert_array_equal(host(x.t().cuda()), host(x).T)
    np.testing.assert_array_equal(host(d.t().cpu()), host(x).T)
    np.testing.assert_array_equal(host(d[:, ::3].cpu()), host(x)[:, ::3])
    dst = ampc.zeros(37, 53, dtype=dtype, device="cuda")
    dst[:, ::2] = x[:, ::2]
    want = np.zeros((37, 53))
    want[:, ::2] = host(x)[:, ::2]
    np.testing.assert_array_equal(host(dst), want)
    # device to device, with and without a cast
    np.testing.assert_array_equal(host(d.clone()), host(x))
    np.testing.assert_array_equal(host(d.to(ampc.float64)), host(x.to(ampc.float64)))
    np.testing.assert_array_equal(host(x.to("cuda", ampc.float32).cpu()), host(x.float()))


@needs_gpu
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_fill_every_dtype(dtype):
    value = True if dtype == ampc.bool else 3 if not dtype.is_floating_point else 2.5
    t = ampc.full((1000, 3), value, dtype=dtype, device="cuda")
    np.testing.assert_array_equal(host(t), np.full((1000, 3), float(value)))
    z = ampc.zeros(17, dtype=dtype, device="cuda")
    np.testing.assert_array_equal(host(z), 0)
    base = ampc.zeros(10, 10, dtype=dtype, device="cuda")
    base[:, 1::3].fill_(value)
    want = np.zeros((10, 10))
    want[:, 1::3] = float(value)
    np.testing.assert_array_equal(host(base), want)
    assert ampc.empty(0, dtype=dtype, device="cuda").cpu().shape == (0,)


@needs_gpu
def test_random_reproducible_on_gpu():
    """The GPU's Philox stream (ampc's own; the CPU draws torch's mt19937 stream): the same seed
    gives bit-identical draws on the device, and drawing there leaves the CPU generator alone."""
    for make in (lambda: ampc.rand(1001, 7, device="cuda"),
                 lambda: ampc.rand(999, dtype=ampc.float16, device="cuda"),
                 lambda: ampc.randn(10001, dtype=ampc.float64, device="cuda"),
                 lambda: ampc.randint(-5, 2**40, (3001,), device="cuda"),
                 lambda: ampc.empty(50, 40, device="cuda").t().random_(0, 7),
                 lambda: ampc.empty(4001, device="cuda").bernoulli_(0.3),
                 lambda: ampc.randperm(1000, device="cuda"),
                 lambda: ampc.multinomial(ampc.ones(3, 9, device="cuda"), 4)):
        ampc.manual_seed(5)
        cpu_state = ampc.random.get_rng_state().numpy().tobytes()
        a = host(make())
        assert ampc.random.get_rng_state().numpy().tobytes() == cpu_state
        ampc.manual_seed(5)
        np.testing.assert_array_equal(host(make()), a)


@needs_gpu
def test_device_memory_stats_and_oom():
    ampc.cuda.synchronize()
    gc.collect()
    base = ampc.cuda.memory_allocated()
    t = ampc.empty(1 << 20, device="cuda")
    assert ampc.cuda.memory_allocated() - base >= 4 << 20
    assert ampc.cuda.max_memory_allocated() >= ampc.cuda.memory_allocated()
    del t
    gc.collect()
    assert ampc.cuda.memory_allocated() == base
    ampc.cuda.reset_peak_memory_stats()
    assert ampc.cuda.max_memory_allocated() == base
    with pytest.raises((ampc.cuda.OutOfMemoryError, MemoryError), match="CUDA out of memory"):
        ampc.empty(1 << 45, dtype=ampc.uint8, device="cuda")  # 32 TiB
    assert ampc.cuda.memory_allocated() == base
