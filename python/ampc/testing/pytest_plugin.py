"""ampc's pytest plugin (the `pytest11` entry point `ampc`; or `-p ampc.testing.pytest_plugin`).

Fixtures for suites that test mixed precision against FP32:
- `device`: "cpu", and "cuda" when ampc.cuda.is_available() (tests parametrised over both);
- `amp_dtype`: ampc.float16 and ampc.bfloat16 (tests parametrised over both);
- `ampc_seed`: seeds ampc's generator (and NumPy's and Python's) with 0, or with the value of
  `--ampc-seed`, and returns the seed;
- `amp_reference`: golden files. `amp_reference.check(name, value, dtype=...)` compares `value`
  (a tensor, or anything ampc.tensor accepts) with the FP32 reference stored under
  `<rootdir>/<ampc_reference_dir>/<test module>/<test name>/<name>.npy`, with `dtype`'s
  assert_close rtol (the precision the value was computed in; default: its own dtype) and an atol
  of that rtol times the largest |reference| value (an element near zero carries the rounding
  of terms of the size of the largest). The first run stores the reference (or every run with `--ampc-update-references`):
  run it once in FP32 to record, then check the AMP run against it. References are float64
  `.npy` files (no pickle), so they diff and load anywhere.
"""
import os
import random
import re

import numpy as np
import pytest

import ampc

_REF_DIR_DEFAULT = "tests/amp_references"


def pytest_addoption(parser):
    group = parser.getgroup("ampc")
    group.addoption("--ampc-update-references", action="store_true", default=False,
                    help="ampc: (re)write the golden FP32 references of the amp_reference fixture")
    group.addoption("--ampc-seed", type=int, default=0, help="ampc: the seed of the ampc_seed fixture (default 0)")
    parser.addini("ampc_reference_dir", "ampc: where amp_reference stores its files, relative to rootdir",
                  default=_REF_DIR_DEFAULT)


def _devices():
    return ["cpu"] + (["cuda"] if ampc.cuda.is_available() else [])


@pytest.fixture(params=_devices())
def device(request):
    """Each device ampc can run on here: "cpu", and "cuda" with a GPU."""
    return request.param


@pytest.fixture(params=[ampc.float16, ampc.bfloat16], ids=["float16", "bfloat16"])
def amp_dtype(request):
    """Each autocast dtype: ampc.float16, ampc.bfloat16."""
    return request.param


@pytest.fixture
def ampc_seed(request):
    """Seeds ampc, NumPy's global generator and Python's random module; returns the seed."""
    seed = request.config.getoption("--ampc-seed")
    ampc.manual_seed(seed)
    np.random.seed(seed)
    random.seed(seed)
    return seed


class AmpReference:
    """The amp_reference fixture's object: check(name, value, dtype=None, rtol=None, atol=None)."""

    def __init__(self, directory, update):
        self.directory, self.update = directory, update
        self.written = []

    def path(self, name):
        if not re.fullmatch(r"[A-Za-z0-9_.\-]+", name) or name.startswith("."):
            raise ValueError(f"amp_reference: a reference name is letters, digits, '_', '-', '.': got {name!r}")
        return os.path.join(self.directory, name + ".npy")

    def check(self, name, value, *, dtype=None, rtol=None, atol=None):
        """Compares value with reference `name` (storing it first when there is none, or with
        --ampc-update-references). Returns True when it compared, False when it stored."""
        t = value if isinstance(value, ampc.Tensor) else ampc.tensor(value)
        arr = np.asarray(t.detach().cpu().double().numpy())
        path = self.path(name)
        if self.update or not os.path.exists(path):
            os.makedirs(self.directory, exist_ok=True)
            np.save(path, arr, allow_pickle=False)
            self.written.append(path)
            return False
        ref = np.load(path, allow_pickle=False)
        if ref.shape != arr.shape:
            raise AssertionError(f"amp_reference {name!r}: shape {arr.shape} differs from the reference's {ref.shape} "
                                 f"({path})")
        dtype = dtype or t.dtype
        d_rtol, d_atol = ampc.testing.default_tolerances(dtype)
        rtol = d_rtol if rtol is None else rtol
        if atol is None:  # a result near zero carries the rounding of its terms, which are of the size of the largest
            atol = max(d_atol, d_rtol * float(np.abs(ref).max(initial=0.0)))
        ampc.testing.assert_close(ampc.tensor(arr), ampc.tensor(ref), rtol=rtol, atol=atol,
                                  msg=lambda m: f"amp_reference {name!r} ({path}), tolerances of {dtype}:\n{m}")
        return True


def _test_dir(request):
    module = os.path.splitext(os.path.basename(str(request.node.fspath)))[0]
    test = re.sub(r"[^A-Za-z0-9_.\-]", "_", request.node.name)
    root = str(request.config.rootpath)
    return os.path.join(root, request.config.getini("ampc_reference_dir"), module, test)


@pytest.fixture
def amp_reference(request):
    """Golden FP32 references for this test (see the module docstring)."""
    return AmpReference(_test_dir(request), request.config.getoption("--ampc-update-references"))
