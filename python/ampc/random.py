"""ampc.random: seeding, generator state and ampc.Generator (torch.random / torch.Generator).

ampc's generators are Philox4x32-10 streams (csrc/core/philox.h): a state is just (seed, offset),
one per device, and a Generator object is such a pair of its own. Passing generator=g to a random
function draws from g's stream and advances g, leaving the device's default generator untouched.
get_rng_state() returns the state as a uint8 tensor of 16 bytes (seed then offset,
little-endian), the layout of torch's CUDA generator state.
"""
import os
import struct

from . import _C

_DEFAULT_SEED = 67280421310721  # torch's default, also ampc's start-up seed
_U64 = (1 << 64) - 1


def _check_seed(seed):
    seed = int(seed)
    if not -(1 << 63) <= seed <= _U64:
        raise ValueError("Overflow when unpacking long long")
    return seed & _U64  # negative seeds wrap, as in torch


def _state_tensor(seed, offset):
    raw = struct.pack("<QQ", _check_seed(seed), int(offset) & _U64)
    return _C.tensor(list(raw), dtype=_C.uint8)


def _state_pair(state):
    if not isinstance(state, _C.Tensor) or state.dtype != _C.uint8 or state.numel() != 16:
        raise RuntimeError("expected a uint8 tensor of 16 bytes (seed, offset) as returned by get_state()")
    return struct.unpack("<QQ", bytes(state.cpu().tolist()))


class Generator:
    """A Philox stream of its own: Generator(device="cpu").manual_seed(s)."""

    _is_default = False

    def __init__(self, device="cpu"):
        self.device = _C.device(device)
        self._seed = _DEFAULT_SEED
        self._offset = 0

    def manual_seed(self, seed):
        self._seed = _check_seed(seed)
        self._offset = 0
        return self

    def seed(self):
        s = int.from_bytes(os.urandom(8), "little") >> 1
        self.manual_seed(s)
        return s

    def initial_seed(self):
        return self._seed

    def get_state(self):
        return _state_tensor(self._seed, self._offset)

    def set_state(self, new_state):
        self._seed, self._offset = _state_pair(new_state)
        return self

    def __repr__(self):
        return f"<ampc.Generator device={self.device} seed={self._seed} offset={self._offset}>"


class _DefaultGenerator(Generator):
    """The device's own generator (ampc.default_generator for the CPU): a view of the core's state,
    so passing it as generator= is the same as passing nothing."""

    _is_default = True

    def __init__(self, device="cpu"):
        self.device = _C.device(device)

    def _pair(self):
        return _state_pair(_C.get_rng_state(device=self.device))

    @property
    def _seed(self):
        return self._pair()[0]

    @property
    def _offset(self):
        return self._pair()[1]

    def manual_seed(self, seed):
        _C.set_rng_state(_state_tensor(seed, 0), device=self.device)
        return self

    def get_state(self):
        return _C.get_rng_state(device=self.device)

    def set_state(self, new_state):
        _state_pair(new_state)
        _C.set_rng_state(new_state, device=self.device)
        return self


default_generator = _DefaultGenerator("cpu")


def manual_seed(seed):
    """Seeds the generators of every device; returns the CPU's default generator (like torch)."""
    _C.manual_seed(_check_seed(seed))
    return default_generator


def seed():
    """Seeds every device with a non-deterministic seed and returns it."""
    return _C.seed()


def initial_seed():
    return _C.initial_seed()


def get_rng_state():
    return _C.get_rng_state()


def set_rng_state(new_state):
    _state_pair(new_state)
    _C.set_rng_state(new_state)
