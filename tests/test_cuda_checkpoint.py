"""Activation checkpointing on the GPU (emulator or real): the rerun restores the GPU's Philox
state (get_device_states / set_device_states per device the arguments live on) and the CUDA
autocast state (fp16), so a checkpointed AMP model with dropout gets bit-identical gradients, and
the GPU allocator's peak (ampc.cuda.max_memory_allocated) is lower; nn.DataParallel on one GPU
moves the module there and runs it."""
import pytest

import ampc
import ampc.nn as nn
from ampc.utils.checkpoint import checkpoint, get_device_states, set_device_states

MODES = [True, False]


def _grads(model, x):
    return [p.grad.clone() for p in model.parameters()] + [x.grad.clone()]


@pytest.mark.parametrize("reentrant", MODES)
def test_cuda_amp_dropout_same_grads(cuda, reentrant):
    ampc.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Dropout(0.3), nn.Linear(32, 8)).to(cuda)
    x = ampc.randn(6, 16, device=cuda).requires_grad_()

    def step(ckpt):
        model.zero_grad()
        x.grad = None
        ampc.manual_seed(4)
        ampc.cuda.manual_seed(4) if cuda == "cuda" else None
        with ampc.autocast(cuda, dtype=ampc.float16 if cuda == "cuda" else ampc.bfloat16):
            y = model(x) if ckpt is None else checkpoint(model, x, use_reentrant=ckpt)
        y.float().sum().backward()
        return _grads(model, x)

    for r, g in zip(step(None), step(reentrant)):
        assert bool((r == g).all())


def test_cuda_device_states_round_trip(cuda):
    if cuda != "cuda":
        pytest.skip("device RNG states exist on the GPU only")
    x = ampc.zeros(2, device="cuda")
    ids, states = get_device_states(x, [x])
    assert ids == [0]
    a = ampc.rand(5, device="cuda")
    set_device_states(ids, states, device_type="cuda")
    b = ampc.rand(5, device="cuda")
    assert bool((a == b).all())


@pytest.mark.parametrize("reentrant", MODES)
def test_cuda_checkpoint_lowers_the_peak(cuda, reentrant):
    if cuda != "cuda":
        pytest.skip("the GPU allocator's statistics")
    ampc.manual_seed(0)
    blocks = nn.ModuleList(nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 64)) for _ in range(6))
    blocks.to("cuda")
    x = ampc.randn(256, 64, device="cuda").requires_grad_()

    def step(ckpt):
        for p in blocks.parameters():
            p.grad = None
        ampc.cuda.synchronize()
        ampc.cuda.reset_peak_memory_stats()
        # what the step adds: the allocator also holds cuBLASLt's workspace (32 MiB on sm_90),
        # allocated at the first GEMM and kept
        start = ampc.cuda.memory_allocated()
        h = x
        with ampc.autocast("cuda", dtype=ampc.float16):
            for b in blocks:
                h = b(h) if ckpt is None else checkpoint(b, h, use_reentrant=ckpt)
        h.float().pow(2).mean().backward()
        ampc.cuda.synchronize()
        return ampc.cuda.max_memory_allocated() - start, [p.grad.clone() for p in blocks.parameters()]

    step(None)
    peak_ref, ref = step(None)
    peak, got = step(reentrant)
    for r, g in zip(ref, got):
        assert bool((r == g).all())
    assert peak < 0.85 * peak_ref, (peak, peak_ref)


def test_data_parallel_on_one_gpu(cuda):
    if cuda != "cuda":
        pytest.skip("DataParallel without a GPU is covered in test_module_api.py")
    m = nn.Linear(3, 2)
    dp = nn.DataParallel(m, device_ids=[0])
    assert m.weight.device.type == "cuda" and dp.device_ids == [0]
    y = dp(ampc.randn(4, 3))  # CPU input: scattered to device_ids[0], as torch does
    assert y.device.type == "cuda"
    ref = m(ampc.randn(4, 3).cuda())
    assert ref.shape == y.shape
    with pytest.raises(RuntimeError, match=r"module must have its parameters and buffers on device"):
        dp.module.cpu()
        dp(ampc.randn(4, 3))
