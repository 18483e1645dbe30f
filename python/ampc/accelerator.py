"""ampc.accelerator: torch.accelerator, the device-agnostic view of the current accelerator.

ampc's only accelerator is CUDA: current_accelerator() is device('cuda') when a GPU is there and
None otherwise, which is what the PyTorch examples' device selection reads
(`torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"`).
Every other call forwards to ampc.cuda, so on a machine without a GPU the calls that need one
raise ampc.cuda's RuntimeError saying why.
"""
from . import _C, cuda
from .cuda import (empty_cache, max_memory_allocated, max_memory_reserved, memory_allocated,  # noqa: F401
                   memory_reserved, memory_stats, reset_peak_memory_stats)


def is_available():
    return cuda.is_available()


def current_accelerator(check_available=False):
    """device('cuda') when ampc has a GPU to run on, else None (check_available is accepted: ampc
    only reports an accelerator that is available)."""
    return _C.device("cuda") if cuda.is_available() else None


def device_count():
    return cuda.device_count()


def _require(op):
    if not cuda.is_available():
        raise RuntimeError(f"accelerator.{op}(): no accelerator is available (ampc found no CUDA GPU)")


def _index(device, op):
    if device is None:
        return cuda.current_device()
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    dev = _C.device(device)
    if dev.type != "cuda":
        raise ValueError(f"accelerator.{op}(): {dev.type} doesn't match the current accelerator cuda.")
    return cuda.current_device() if dev.index is None else dev.index


def current_device_index():
    _require("current_device_index")
    return cuda.current_device()


current_device_idx = current_device_index


def set_device_index(device, /):
    _require("set_device_index")
    cuda.set_device(_index(device, "set_device_index"))


set_device_idx = set_device_index


def synchronize(device=None, /):
    _require("synchronize")
    cuda.synchronize(_index(device, "synchronize"))


def current_stream(device=None, /):
    _require("current_stream")
    return cuda.current_stream(_index(device, "current_stream"))


def set_stream(stream):
    _require("set_stream")
    cuda.set_stream(stream)


class device_index:
    """with accelerator.device_index(i): runs the block with device i current (None: no change)."""

    def __init__(self, device, /):
        self.idx = device
        self.prev = None

    def __enter__(self):
        if self.idx is not None:
            self.prev = current_device_index()
            set_device_index(self.idx)
        return self

    def __exit__(self, *exc):
        if self.prev is not None:
            set_device_index(self.prev)
        return False
