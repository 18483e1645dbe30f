"""ampc.cuda memory: torch.cuda.memory's statistics and cache control for ampc's caching allocator
(csrc/core/caching_allocator.c, csrc/cuda/cuda_allocator.c).

Sizes are bytes. "Allocated" counts the blocks tensors hold (request sizes rounded up to 512
bytes, as PyTorch counts them); "reserved" counts the segments the allocator holds from the
driver: the allocated blocks plus its cache. Without a GPU every statistic is 0, as torch reports
before CUDA is initialised; empty_cache() and reset_peak_memory_stats() do nothing.
"""
from .. import _C


def _index(device):
    from . import _index as index
    return index(device)


def _stats(device):
    return _C._cuda_memory_stats(_index(device))


def memory_allocated(device=None):
    """Bytes held by tensors (and kernels' scratch buffers) on the device."""
    return _stats(device)["allocated"]


def max_memory_allocated(device=None):
    """Peak of memory_allocated() since start-up or the last reset_peak_memory_stats()."""
    return _stats(device)["peak_allocated"]


def memory_reserved(device=None):
    """Bytes the allocator holds from the driver (tensors plus its cache)."""
    return _stats(device)["reserved"]


def max_memory_reserved(device=None):
    return _stats(device)["peak_reserved"]


def memory_cached(device=None):
    """Deprecated torch name of memory_reserved()."""
    return memory_reserved(device)


def max_memory_cached(device=None):
    """Deprecated torch name of max_memory_reserved()."""
    return max_memory_reserved(device)


def reset_peak_memory_stats(device=None):
    """Sets the peaks (allocated and reserved) to the current values."""
    _C._cuda_reset_peak(_index(device))


def reset_max_memory_allocated(device=None):
    reset_peak_memory_stats(device)


def reset_max_memory_cached(device=None):
    reset_peak_memory_stats(device)


def empty_cache():
    """Returns the cached segments that hold no tensor to the driver, on every GPU (memory_reserved()
    drops; memory_allocated() does not change). Waits for the device first."""
    _C._cuda_empty_cache()


def _torch_keys(s):
    return {
        "active.all.current": s["active_blocks"],
        "active_bytes.all.current": s["allocated"],
        "active_bytes.all.peak": s["peak_allocated"],
        "allocated_bytes.all.current": s["allocated"],
        "allocated_bytes.all.peak": s["peak_allocated"],
        "allocation.all.allocated": s["num_allocs"],
        "allocation.all.current": s["active_blocks"],
        "allocation.all.freed": s["num_frees"],
        "num_alloc_retries": s["num_alloc_retries"],
        "num_device_alloc": s["num_device_allocs"],
        "num_device_free": s["num_device_frees"],
        "num_ooms": s["num_ooms"],
        "reserved_bytes.all.current": s["reserved"],
        "reserved_bytes.all.peak": s["peak_reserved"],
        "segment.all.allocated": s["num_device_allocs"],
        "segment.all.current": s["segments"],
        "segment.all.freed": s["num_device_frees"],
    }


def memory_stats(device=None):
    """torch.cuda.memory_stats()'s keys that ampc's allocator keeps (sorted, as torch's): bytes
    allocated/reserved/active (current, peak), block and segment counts, num_alloc_retries (driver
    allocations retried after emptying the cache) and num_ooms (requests that failed)."""
    return _torch_keys(_stats(device))


def mem_get_info(device=None):
    """(free, total) bytes of device memory as the driver reports them (cudaMemGetInfo)."""
    return _C._cuda_mem_get_info(_index(device))


def host_memory_stats():
    """The pinned host memory cache (Tensor.pin_memory()): the same keys as memory_stats()."""
    return _torch_keys(_C._cuda_host_memory_stats())


def host_empty_cache():
    """Returns the cached pinned host blocks that hold no tensor (and no pending copy)."""
    _C._cuda_host_empty_cache()
