"""ampc.random: seeding, generator state and ampc.Generator (torch.random / torch.Generator).

The CPU generator is torch's (MT19937 with its normal-sample caches, csrc/core/mt19937.h), so
manual_seed(s) followed by the same calls gives torch's CPU numbers. CUDA generators are ampc's
Philox streams (seed, offset; csrc/core/philox.h). A Generator object holds a state of its own as
bytes; passing generator=g to a random function draws from g's state and advances g, leaving
the device's default generator untouched. get_rng_state() returns a state as a uint8 tensor (the
CPU's is ampc's layout, not torch's; get_state/set_state round-trip).
"""
import contextlib
import os

from . import _C

_DEFAULT_SEED = 67280421310721  # torch's default, also ampc's start-up seed
_U64 = (1 << 64) - 1


def _check_seed(seed):
    seed = int(seed)
    if not -(1 << 63) <= seed <= _U64:
        raise ValueError("Overflow when unpacking long long")
    return seed & _U64  # negative seeds wrap, as in torch


class Generator:
    """A generator of its own: Generator(device="cpu").manual_seed(s)."""

    _is_default = False

    def __init__(self, device="cpu"):
        self.device = _C.device(device)
        self._state = _C._rng_state_for_seed(self.device, _DEFAULT_SEED)

    def manual_seed(self, seed):
        self._state = _C._rng_state_for_seed(self.device, _check_seed(seed))
        return self

    def seed(self):
        s = int.from_bytes(os.urandom(8), "little") >> 1
        self.manual_seed(s)
        return s

    def initial_seed(self):
        return _C._rng_state_seed(self._state)

    def get_state(self):
        return _C._rng_state_tensor(self._state)

    def set_state(self, new_state):
        self._state = _C._rng_state_bytes(self.device, new_state)
        return self

    def clone_state(self):
        g = Generator(self.device)
        g._state = self._state
        return g

    def __repr__(self):
        return f"<ampc.Generator device={self.device} seed={self.initial_seed()}>"


class _DefaultGenerator(Generator):
    """The device's own generator (ampc.default_generator for the CPU): a view of the core's state,
    so passing it as generator= is the same as passing nothing."""

    _is_default = True

    def __init__(self, device="cpu"):
        self.device = _C.device(device)

    @property
    def _state(self):
        return _C._rng_state_bytes(self.device, _C.get_rng_state(device=self.device))

    def manual_seed(self, seed):
        _C.set_rng_state(_C._rng_state_tensor(_C._rng_state_for_seed(self.device, _check_seed(seed))),
                         device=self.device)
        return self

    def get_state(self):
        return _C.get_rng_state(device=self.device)

    def set_state(self, new_state):
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
    _C.set_rng_state(new_state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type="cuda"):
    """Restores the CPU generator (and those of `devices`, CUDA device indices) on exit, as
    torch.random.fork_rng."""
    if not enabled:
        yield
        return
    if devices is None:
        from . import cuda
        devices = list(range(cuda.device_count()))
    devices = [_C.device(d if not isinstance(d, int) else f"cuda:{d}") for d in devices]
    cpu_state = _C.get_rng_state()
    dev_states = [(d, _C.get_rng_state(device=d)) for d in devices]
    try:
        yield
    finally:
        _C.set_rng_state(cpu_state)
        for d, st in dev_states:
            _C.set_rng_state(st, device=d)
