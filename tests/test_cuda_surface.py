"""tests/test_cuda_surface.py: the composed surface on the CUDA backend, against the CPU backend.

resize_ grows CUDA storage through the device allocator and copy; the default device reaches the
CUDA factories; the composed functions run the same ops on both backends; torch.accelerator
reports the GPU.
"""
import numpy as np

import ampc
from helpers import host


def test_resize_on_cuda(cuda):
    x = ampc.arange(6.0, device=cuda)
    v = x[1:3]
    x.resize_(3, 4)
    assert x.device.type == ampc.device(cuda).type and tuple(x.shape) == (3, 4)
    assert host(x.reshape(-1)[:6]).tolist() == [0, 1, 2, 3, 4, 5]
    x[0, 1] = 9
    assert host(v).tolist() == [9, 2]
    x.resize_as_(ampc.zeros(2, device=cuda))
    assert tuple(x.shape) == (2,) and host(x).tolist() == [0, 9]


def test_default_device_cuda(cuda):
    ampc.set_default_device(cuda)
    try:
        for t in (ampc.zeros(2), ampc.ones(2), ampc.arange(3), ampc.randn(2), ampc.tensor([1.0]), ampc.eye(2),
                  ampc.linspace(0, 1, 3), ampc.full((2,), 3.0), ampc.randint(0, 3, (2,)), ampc.hann_window(4)):
            assert t.device.type == ampc.device(cuda).type
    finally:
        ampc.set_default_device(None)
    assert ampc.zeros(1).device.type == "cpu"


def test_composed_ops_match_cpu(cuda):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 3)).astype(np.float32), rng.standard_normal((4, 3)).astype(np.float32)
    calls = [
        lambda M, x, y: M.cdist(x, y), lambda M, x, y: M.kron(x, y), lambda M, x, y: M.tensordot(x, y, ([1], [1])),
        lambda M, x, y: M.cross(x[:4], y, dim=1), lambda M, x, y: M.outer(x[:, 0], y[:, 0]),
        lambda M, x, y: M.hstack([x, x]), lambda M, x, y: M.cov(x), lambda M, x, y: x.movedim(0, 1),
        lambda M, x, y: M.pdist(x), lambda M, x, y: M.block_diag(x, y),
    ]
    for f in calls:
        want = host(f(ampc, ampc.tensor(a), ampc.tensor(b)))
        got = host(f(ampc, ampc.tensor(a, device=cuda), ampc.tensor(b, device=cuda)))
        assert np.allclose(got, want, rtol=1e-5, atol=1e-5)


def test_accelerator_reports_cuda(cuda):
    if not ampc.cuda.is_available():  # AMPC_TEST_CUDA_AS_CPU: the "cuda" cases run on the CPU
        assert ampc.accelerator.current_accelerator() is None
        return
    assert ampc.accelerator.current_accelerator() == ampc.device("cuda")
    assert ampc.accelerator.current_device_index() == ampc.cuda.current_device()
    ampc.accelerator.synchronize()
