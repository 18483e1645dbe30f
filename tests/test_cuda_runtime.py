"""The CUDA runtime: the caching allocator (statistics, reuse, empty_cache, out of memory),
streams and events, pinned memory and non_blocking copies, and the deferred device error word.

Three kinds of tests:
- without a GPU (every machine): the API exists and raises a clear RuntimeError;
- `cuda` fixture (a GPU, or the CPU under AMPC_TEST_CUDA_AS_CPU=1): data round trips and the
  deferred index error, whose results do not depend on the device;
- `gpu` fixture (a real GPU only; skipped in the dry run): allocator statistics, streams,
  events and pinned memory, which only exist on a GPU.
"""
import gc

import numpy as np
import pytest

import ampc
import ampc.cuda
from ampc.utils.data import DataLoader, TensorDataset

MiB = 1 << 20
needs_no_gpu = pytest.mark.skipif(ampc.cuda.is_available(), reason="checks the behaviour without a GPU")


@pytest.fixture
def gpu(cuda):
    if cuda == "cpu":
        pytest.skip("needs a real GPU (allocator statistics, streams, events, pinned memory)")
    ampc.cuda.synchronize()
    gc.collect()
    return cuda


def pinned(t):
    """t in pinned memory where a GPU exists (the dry run has none: t itself)."""
    return t.pin_memory() if ampc.cuda.is_available() else t


# ---------------------------------------------------------------- every machine

def test_api_exists():
    for name in ("memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
                 "reset_peak_memory_stats", "reset_max_memory_allocated", "empty_cache", "memory_stats",
                 "mem_get_info", "synchronize", "Stream", "Event", "stream", "current_stream", "default_stream",
                 "set_stream", "OutOfMemoryError", "host_memory_stats"):
        assert hasattr(ampc.cuda, name), name
    assert issubclass(ampc.cuda.OutOfMemoryError, RuntimeError)
    stats = ampc.cuda.memory_stats()
    assert {"allocated_bytes.all.current", "allocated_bytes.all.peak", "reserved_bytes.all.current",
            "reserved_bytes.all.peak", "num_alloc_retries", "num_ooms"} <= set(stats)
    assert all(isinstance(v, int) and v >= 0 for v in stats.values())
    assert list(stats) == sorted(stats)


def test_non_blocking_arguments_parse():
    x = ampc.arange(6.0).reshape(2, 3)
    for y in (x.to("cpu", non_blocking=True), x.to(ampc.float64, True), x.to(ampc.float64, True, True),
              x.to(device="cpu", dtype=ampc.float64, non_blocking=True, copy=True)):
        np.testing.assert_array_equal(y.numpy(), x.numpy())
    assert x.to("cpu", non_blocking=True) is x
    z = ampc.zeros(2, 3)
    assert z.copy_(x, non_blocking=True) is z
    np.testing.assert_array_equal(z.numpy(), x.numpy())
    assert x.is_pinned() is False and x.is_pinned("cuda") is False


@needs_no_gpu
def test_without_gpu_raises_clearly():
    for call in (ampc.cuda.Stream, lambda: ampc.cuda.Stream(priority=-1), ampc.cuda.Event,
                 lambda: ampc.cuda.Event(enable_timing=True), ampc.cuda.current_stream, ampc.cuda.default_stream,
                 ampc.cuda.mem_get_info, ampc.cuda.synchronize, lambda: ampc.zeros(3).pin_memory(),
                 lambda: ampc.cuda.Stream.priority_range()):
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            call()
    with ampc.cuda.stream(None):  # no stream: nothing to switch
        pass
    ampc.cuda.empty_cache()
    ampc.cuda.host_empty_cache()
    ampc.cuda.reset_peak_memory_stats()
    assert set(ampc.cuda.memory_stats().values()) == {0}
    assert set(ampc.cuda.host_memory_stats().values()) == {0}
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        ampc.zeros(2).cuda(non_blocking=True)


@needs_no_gpu
def test_dataloader_pin_memory_without_gpu_is_a_no_op():
    ds = TensorDataset(ampc.arange(10.0), ampc.arange(10))
    batches = list(DataLoader(ds, batch_size=4, pin_memory=True))
    assert [b[1].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert not any(t.is_pinned() for b in batches for t in b)


def test_dataloader_pin_memory_helper_keeps_structure():
    from ampc.utils.data.dataloader import pin_memory
    batch = {"x": [ampc.zeros(2), (ampc.ones(1), "s")], "n": 3}
    out = pin_memory(batch) if ampc.cuda.is_available() else batch
    assert set(out) == {"x", "n"} and out["n"] == 3 and out["x"][1][1] == "s"


# ---------------------------------------------------------------- GPU or dry run: data

@pytest.mark.parametrize("dtype", [ampc.float32, ampc.float16, ampc.bfloat16, ampc.int64, ampc.uint8])
def test_non_blocking_round_trip(cuda, dtype):
    rng = np.random.default_rng(0)
    data = rng.standard_normal((257, 129)) * 50 if dtype.is_floating_point else rng.integers(0, 200, (257, 129))
    x = ampc.tensor(data, dtype=dtype)
    p = pinned(x)
    d = p.to(cuda, non_blocking=True)
    e = p.cuda(non_blocking=True) if cuda == "cuda" else p.clone()
    back = pinned(ampc.empty_like(x))
    back.copy_(d * 1, non_blocking=True)  # device to pinned host, asynchronous on a GPU
    if cuda == "cuda":
        ampc.cuda.current_stream().synchronize()
    np.testing.assert_array_equal(back.float().numpy(), x.float().numpy())
    np.testing.assert_array_equal(e.cpu().float().numpy(), x.float().numpy())
    # pageable sources are copied synchronously: changing the source right after is safe
    src = x.clone()
    d2 = src.to(cuda, non_blocking=True, copy=True)
    src.fill_(0)
    np.testing.assert_array_equal(d2.cpu().float().numpy(), x.float().numpy())


def test_pinned_block_not_reused_before_its_copy(cuda):
    n = 1 << 22  # 16 MiB of float32
    x = ampc.arange(n, dtype=ampc.float32)
    outs = []
    for k in range(4):
        p = pinned(x + k)
        outs.append(p.to(cuda, non_blocking=True))
        del p  # freed while the copy may still run; the next pin_memory must not get its block early
    for k, d in enumerate(outs):
        np.testing.assert_array_equal(d[::4096].cpu().numpy(), (x + k)[::4096].numpy())


def test_deferred_index_error(cuda):
    x = ampc.arange(10.0, device=cuda)
    bad = ampc.tensor([1, 2, 10], device=cuda)
    with pytest.raises(IndexError, match="out of range|out of bounds"):
        y = x.index_select(0, bad)
        y.cpu()  # on a GPU the kernel's report surfaces here
    # the error was consumed: the device keeps working and later reads are clean
    good = ampc.tensor([0, 9], device=cuda)
    assert x.index_select(0, good).cpu().tolist() == [0.0, 9.0]
    if cuda == "cuda":
        ampc.cuda.synchronize()
    with pytest.raises(IndexError, match="out of range|out of bounds"):
        x.gather(0, ampc.tensor([3, -11, 4], device=cuda))
        if cuda == "cuda":
            ampc.cuda.synchronize()  # synchronize() reports it too
    assert x.sum().item() == 45.0


# ---------------------------------------------------------------- a real GPU: allocator

def test_allocation_statistics(gpu):
    base = ampc.cuda.memory_allocated()
    s0 = ampc.cuda.memory_stats()
    t = ampc.empty(1000, dtype=ampc.uint8, device="cuda")  # rounds up to 1024 bytes (512-byte blocks)
    assert ampc.cuda.memory_allocated() - base == 1024
    u = ampc.empty(3 * MiB, dtype=ampc.uint8, device="cuda")  # large pool
    # a cached block with at most 1 MiB to spare is taken whole (not worth splitting)
    assert 3 * MiB <= ampc.cuda.memory_allocated() - base - 1024 <= 4 * MiB
    assert ampc.cuda.max_memory_allocated() >= ampc.cuda.memory_allocated()
    assert ampc.cuda.memory_reserved() >= ampc.cuda.memory_allocated()
    s1 = ampc.cuda.memory_stats()
    assert s1["allocation.all.allocated"] - s0["allocation.all.allocated"] == 2
    assert s1["allocation.all.current"] - s0["allocation.all.current"] == 2
    assert s1["allocated_bytes.all.peak"] >= s1["allocated_bytes.all.current"]
    reserved = ampc.cuda.memory_reserved()
    del t, u
    gc.collect()
    assert ampc.cuda.memory_allocated() == base
    assert ampc.cuda.memory_reserved() == reserved  # kept in the cache
    assert ampc.cuda.max_memory_allocated() >= base + 1024 + 3 * MiB
    ampc.cuda.reset_peak_memory_stats()
    assert ampc.cuda.max_memory_allocated() == base
    assert ampc.cuda.max_memory_reserved() == ampc.cuda.memory_reserved()
    ampc.cuda.reset_max_memory_allocated()


def test_cached_blocks_are_reused(gpu):
    a = ampc.empty(5 * MiB, dtype=ampc.uint8, device="cuda")
    ptr = a.data_ptr()
    del a
    gc.collect()
    before = ampc.cuda.memory_stats()["num_device_alloc"]
    b = ampc.empty(5 * MiB, dtype=ampc.uint8, device="cuda")
    assert b.data_ptr() == ptr  # best fit: the block just freed
    assert ampc.cuda.memory_stats()["num_device_alloc"] == before  # no cudaMalloc
    c = ampc.empty(100, device="cuda")
    assert c.data_ptr() % 512 == 0


def test_empty_cache_lowers_reserved(gpu):
    ampc.cuda.empty_cache()  # no cached whole segment left: t gets a segment of its own
    t = ampc.empty(64 * MiB, dtype=ampc.uint8, device="cuda")
    held = ampc.cuda.memory_reserved()
    del t
    gc.collect()
    assert ampc.cuda.memory_reserved() == held
    ampc.cuda.empty_cache()
    assert ampc.cuda.memory_reserved() <= held - 64 * MiB
    assert ampc.cuda.memory_reserved() >= ampc.cuda.memory_allocated()
    free, total = ampc.cuda.mem_get_info()
    assert 0 < free <= total


def test_out_of_memory_raises_and_recovers(gpu):
    base = ampc.cuda.memory_allocated()
    ooms = ampc.cuda.memory_stats()["num_ooms"]
    with pytest.raises(ampc.cuda.OutOfMemoryError) as info:
        ampc.empty(1 << 45, dtype=ampc.uint8, device="cuda")  # 32 TiB
    msg = str(info.value)
    assert "CUDA out of memory. Tried to allocate 32768.00 GiB" in msg
    assert "GPU 0 has a total capacity of" in msg and "is free" in msg and "allocated by ampc" in msg
    assert isinstance(info.value, RuntimeError)
    assert ampc.cuda.memory_stats()["num_ooms"] == ooms + 1
    assert ampc.cuda.memory_allocated() == base
    # the process keeps working
    x = ampc.ones(1000, device="cuda")
    assert (x * 2).sum().item() == 2000.0


def test_out_of_memory_retry_frees_the_cache(gpu):
    """A request that fits only once the cache is given back succeeds after one retry."""
    ampc.cuda.empty_cache()
    free, _ = ampc.cuda.mem_get_info()
    small = (int(free * 0.55) // (2 * MiB)) * 2 * MiB
    large = (int(free * 0.70) // (2 * MiB)) * 2 * MiB
    a = ampc.empty(small, dtype=ampc.uint8, device="cuda")
    del a
    gc.collect()  # cached: the driver now has only ~45% free, the cached block is too small
    retries = ampc.cuda.memory_stats()["num_alloc_retries"]
    b = ampc.empty(large, dtype=ampc.uint8, device="cuda")
    assert ampc.cuda.memory_stats()["num_alloc_retries"] == retries + 1
    assert ampc.cuda.memory_reserved() >= large
    del b
    gc.collect()
    ampc.cuda.empty_cache()


# ---------------------------------------------------------------- a real GPU: streams and events

def test_streams(gpu):
    default = ampc.cuda.current_stream()
    assert default == ampc.cuda.default_stream() and default.cuda_stream == 0
    least, greatest = ampc.cuda.Stream.priority_range()
    assert greatest <= least
    s = ampc.cuda.Stream()
    hi = ampc.cuda.Stream(priority=-100)  # clamped to the highest priority
    assert hi.priority == greatest and s.priority == 0
    assert s != default and s.device == ampc.device("cuda:0") and "cuda_stream=" in repr(s)
    with ampc.cuda.stream(s):
        assert ampc.cuda.current_stream() == s
        x = ampc.full((1024, 1024), 2.0, device="cuda")
        y = (x @ x).sum()
    assert ampc.cuda.current_stream() == default
    s.synchronize()
    assert s.query()
    assert y.item() == 2.0 * 2.0 * 1024 * 1024 * 1024
    with s:  # a stream is its own context too
        assert ampc.cuda.current_stream() == s
    assert ampc.cuda.current_stream() == default
    with ampc.cuda.stream(None):
        assert ampc.cuda.current_stream() == default


def test_stream_ordering_between_streams(gpu):
    """A consumer stream that waits for the producer sees its results."""
    producer, consumer = ampc.cuda.Stream(), ampc.cuda.Stream()
    with ampc.cuda.stream(producer):
        a = ampc.full((2048, 2048), 1.0, device="cuda")
        for _ in range(8):
            a = a @ a / 2048.0  # stays 1.0, takes a while
    consumer.wait_stream(producer)
    with ampc.cuda.stream(consumer):
        total = a.sum()
    consumer.synchronize()
    producer.synchronize()  # `a` was allocated on producer: keep it alive until both are done
    assert total.item() == 2048.0 * 2048.0


def test_events(gpu):
    start, end = ampc.cuda.Event(enable_timing=True), ampc.cuda.Event(enable_timing=True)
    assert start.query() and repr(start) == "<ampc.cuda.Event uninitialized>"
    start.record()
    x = ampc.randn(2048, 2048, device="cuda")
    for _ in range(5):
        x = x @ x
        x = x / x.abs().max()
    end.record()
    end.synchronize()
    assert end.query() and start.cuda_event != 0
    ms = start.elapsed_time(end)
    assert isinstance(ms, float) and ms > 0
    plain = ampc.cuda.Event()
    plain.record()
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        plain.elapsed_time(end)
    with pytest.raises(RuntimeError, match="must be recorded"):
        start.elapsed_time(ampc.cuda.Event(enable_timing=True))
    # wait: work on a stream after the event
    s = ampc.cuda.Stream()
    e = ampc.cuda.current_stream().record_event()
    s.wait_event(e)
    e.wait(s)
    blocking = ampc.cuda.Event(blocking=True)
    blocking.record(s)
    blocking.synchronize()
    assert blocking.query()


def test_synchronize_devices(gpu):
    ampc.cuda.synchronize()
    ampc.cuda.synchronize(0)
    ampc.cuda.synchronize("cuda:0")
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        ampc.cuda.synchronize(ampc.cuda.device_count())


# ---------------------------------------------------------------- a real GPU: pinned memory

def test_pin_memory(gpu):
    x = ampc.randn(1000, 10)
    assert not x.is_pinned()
    p = x.pin_memory()
    assert p.is_pinned() and p.device.type == "cpu" and p.is_contiguous()
    np.testing.assert_array_equal(p.numpy(), x.numpy())
    assert p.pin_memory() is p
    assert (p + 1).is_pinned() is False  # CPU kernels make ordinary tensors
    np.testing.assert_array_equal((p * 2).numpy(), x.numpy() * 2)  # CPU kernels read pinned memory
    t = x.t().pin_memory()  # non-contiguous source: a contiguous pinned copy
    assert t.is_pinned() and t.is_contiguous()
    np.testing.assert_array_equal(t.numpy(), x.numpy().T)
    assert ampc.cuda.host_memory_stats()["allocated_bytes.all.current"] >= 2 * 1000 * 10 * 4
    with pytest.raises(RuntimeError, match="only dense CPU tensors can be pinned"):
        x.cuda().pin_memory()
    g = x.clone().requires_grad_()
    pg = g.pin_memory()
    pg.sum().backward()
    np.testing.assert_array_equal(g.grad.numpy(), np.ones((1000, 10), np.float32))
    del p, t, pg
    gc.collect()
    ampc.cuda.host_empty_cache()


def test_dataloader_pin_memory(gpu):
    ds = TensorDataset(ampc.arange(20.0).reshape(10, 2), ampc.arange(10))
    for shuffle in (False, True):
        batches = list(DataLoader(ds, batch_size=4, shuffle=shuffle, pin_memory=True))
        assert all(t.is_pinned() for b in batches for t in b)
        assert sorted(v for b in batches for v in b[1].tolist()) == list(range(10))
        x, y = batches[0]
        xd, yd = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        np.testing.assert_array_equal(xd.cpu().numpy(), x.numpy())
        np.testing.assert_array_equal(yd.cpu().numpy(), y.numpy())
