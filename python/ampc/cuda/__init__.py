"""ampc.cuda: torch.cuda's device queries, memory statistics, streams and events, and seeding.

Everything works on a machine without a GPU or a CUDA build: is_available() is False,
device_count() 0, the memory statistics are 0 (as torch reports before CUDA is initialised), and
the calls that need a device (current_device, set_device, get_device_name, synchronize,
mem_get_info, Stream, Event, current_stream, default_stream) raise a RuntimeError that says why.
The work is done by ampc._C (csrc/python/py_cuda.c); memory.py and streams.py hold the Python
side of the allocator statistics and of streams and events.
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
    """Waits for all work on the GPU, then raises an error a kernel reported since the last check
    (an index out of range: IndexError naming the op)."""
    _C._cuda_synchronize(_index(device))


class device:
    """`with ampc.cuda.device(i):` makes GPU i current for the block (None: no change)."""

    def __init__(self, device):
        self.idx = None if device is None else _index(device)
        self._saved = []

    def __enter__(self):
        if self.idx is not None:
            self._saved.append(current_device())
            set_device(self.idx)

    def __exit__(self, *exc):
        if self.idx is not None:
            set_device(self._saved.pop())


from .memory import (empty_cache, host_empty_cache, host_memory_stats, max_memory_allocated,  # noqa: E402,F401
                     max_memory_cached, max_memory_reserved, mem_get_info, memory_allocated, memory_cached,
                     memory_reserved, memory_stats, reset_max_memory_allocated, reset_max_memory_cached,
                     reset_peak_memory_stats)
from .streams import (Event, Stream, StreamContext, current_stream, default_stream, set_stream,  # noqa: E402,F401
                      stream)


# ---- random numbers: one Philox generator per GPU (csrc/core/random.c) ----

def _state_of(seed):
    from ..random import _check_seed
    return _C._rng_state_tensor(_C._rng_state_for_seed(_C.device("cuda"), _check_seed(seed)))


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
