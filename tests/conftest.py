"""Shared fixtures: the devices every device-parametrised test runs on.

`device` runs a test once per device: "cpu" always, "cuda" when ampc has a GPU (otherwise that
case is skipped, the only reason a test may skip). `cuda` is the GPU alone, for tests that
compare the two backends.

AMPC_TEST_CUDA_AS_CPU=1 runs the "cuda" cases on the CPU instead of skipping them. It proves the
test code itself (shapes, tolerances, reference comparisons) on a machine without a GPU; it is a
dry run of the test logic, not of the CUDA kernels.
"""
import os

import pytest

import ampc

CUDA_AS_CPU = os.environ.get("AMPC_TEST_CUDA_AS_CPU") == "1"


def cuda_device_or_skip():
    if ampc.cuda.is_available():
        return "cuda"
    if CUDA_AS_CPU:
        return "cpu"
    pytest.skip("needs a GPU (ampc.cuda.is_available() is False)")


@pytest.fixture(params=["cpu", "cuda"])
def device(request):
    """Each device in turn: the test body creates its tensors on `device`."""
    return "cpu" if request.param == "cpu" else cuda_device_or_skip()


@pytest.fixture
def cuda():
    """The GPU, for tests that compare CUDA results with the CPU backend."""
    return cuda_device_or_skip()
