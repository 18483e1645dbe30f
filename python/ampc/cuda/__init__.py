"""ampc.cuda: torch.cuda's device queries, memory statistics and seeding.

Everything works on a machine without a GPU or a CUDA build: is_available() is False,
device_count() 0, the memory statistics are 0 (as torch reports before CUDA is initialised), and
the calls that need a device (current_device, set_device, get_device_name, synchronize) raise a
RuntimeError that says why. The work is done by ampc._C (csrc/python/py_cuda.c).
"""
from .. import _C

OutOfMemoryError = _C.OutOfMemoryError


def is_available():
    """True when ampc was built with CUDA and the driver reports at least one GPU."""
    return _C._cuda_is_available()


def device_count():
    return _C._cuda_device_count()


def is_initialized():
    return _C._cuda_is_available()


def init():
    """CUDA is initialised when ampc is imported; kept for torch compatibility."""


def _index(device, optional=True):
    """A device index from None (the current device), an int, "cuda", "cuda:N" or ampc.device."""
    if device is None:
        return _C._cuda_current_device() if is_available() else 0
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    dev = _C.device(device)
    if dev.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {dev}")
    if dev.index is None:
        return _C._cuda_current_device() if is_available() else 0
    return dev.index


def current_device():
    return _C._cuda_current_device()


def set_device(device):
    _C._cuda_set_device(_index(device))


def get_device_name(device=None):
    return _C._cuda_get_device_name(_index(device))


def synchronize(device=None):
    _C._cuda_synchronize(_index(device))


def empty_cache():
    _C._cuda_empty_cache()


# ---- memory statistics (bytes) ----

def _stats(device):
    return _C._cuda_memory_stats(_index(device))


def memory_allocated(device=None):
    """Bytes held by tensors on the device."""
    return _stats(device)["allocated"]


def max_memory_allocated(device=None):
    return _stats(device)["peak_allocated"]


def memory_reserved(device=None):
    """Bytes the allocator holds from the driver (tensors plus its cache)."""
    return _stats(device)["reserved"]


def max_memory_reserved(device=None):
    return _stats(device)["peak_reserved"]


def memory_stats(device=None):
    """torch.cuda.memory_stats' main keys."""
    s = _stats(device)
    return {
        "allocated_bytes.all.current": s["allocated"],
        "allocated_bytes.all.peak": s["peak_allocated"],
        "reserved_bytes.all.current": s["reserved"],
        "reserved_bytes.all.peak": s["peak_reserved"],
        "allocation.all.allocated": s["num_allocs"],
        "num_alloc_retries": 0,
        "num_ooms": 0,
    }


def reset_peak_memory_stats(device=None):
    _C._cuda_reset_peak(_index(device))


def reset_max_memory_allocated(device=None):
    reset_peak_memory_stats(device)


def reset_max_memory_cached(device=None):
    reset_peak_memory_stats(device)


# ---- random numbers: one Philox generator per GPU (csrc/core/random.c) ----

def _state_of(seed):
    from ..random import _state_tensor
    return _state_tensor(seed, 0)


def manual_seed(seed):
    """Seeds the current GPU's generator; does nothing without a GPU (like torch)."""
    if is_available():
        _C.set_rng_state(_state_of(int(seed)), device=f"cuda:{current_device()}")


def manual_seed_all(seed):
    for i in range(device_count()):
        _C.set_rng_state(_state_of(int(seed)), device=f"cuda:{i}")


def seed():
    import os
    manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)


def seed_all():
    import os
    manual_seed_all(int.from_bytes(os.urandom(8), "little") >> 1)


def initial_seed():
    state = get_rng_state()
    return int.from_bytes(bytes(state.tolist()[:8]), "little")


def get_rng_state(device="cuda"):
    """The generator state of a GPU: a uint8 tensor of 16 bytes (seed, offset), as torch's."""
    return _C.get_rng_state(device=f"cuda:{_index(device)}")


def set_rng_state(new_state, device="cuda"):
    _C.set_rng_state(new_state, device=f"cuda:{_index(device)}")


def get_rng_state_all():
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states):
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


from . import amp  # noqa: E402,F401  (ampc.cuda.amp, the legacy autocast/GradScaler names)
