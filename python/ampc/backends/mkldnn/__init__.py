"""ampc.backends.mkldnn: torch.backends.mkldnn's switches, for scripts that read or set them.

ampc has no oneDNN: its CPU kernels are its own (csrc/cpu), dispatched by the CPU's instruction
set at import. So is_available() is False and the switches change nothing in ampc's arithmetic;
they exist so that `torch.backends.mkldnn.enabled = False`, `with torch.backends.mkldnn.flags(...)`
and `torch.backends.mkldnn.is_available()` checks run unchanged (a script that takes a oneDNN-only
path when it is available takes its portable path on ampc).
"""
from contextlib import contextmanager

VERBOSE_OFF = 0
VERBOSE_ON = 1
VERBOSE_ON_CREATION = 2

enabled = True
deterministic = False
allow_tf32 = True


def is_available():
    return False


def is_acl_available():
    return False


class verbose:
    """torch.backends.mkldnn.verbose(level): oneDNN's verbose dump; ampc has no oneDNN to dump."""

    def __init__(self, level):
        self.level = level

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def set_flags(_enabled=None, _deterministic=None, _allow_tf32=None, _fp32_precision="none"):
    """Sets the given switches; returns the previous (enabled, deterministic, allow_tf32, fp32_precision)."""
    global enabled, deterministic, allow_tf32, _precision
    orig = (enabled, deterministic, allow_tf32, _precision)
    if _enabled is not None:
        enabled = bool(_enabled)
    if _deterministic is not None:
        deterministic = bool(_deterministic)
    if _allow_tf32 is not None:
        allow_tf32 = bool(_allow_tf32)
    if _fp32_precision is not None:
        _precision = _fp32_precision
    return orig


_precision = "none"


@contextmanager
def flags(enabled=False, deterministic=False, allow_tf32=True, fp32_precision="none"):
    orig = set_flags(enabled, deterministic, allow_tf32, fp32_precision)
    try:
        yield
    finally:
        set_flags(*orig)
