"""Issue 13's loss kernels on CUDA against the CPU backend (and torch): ctc_loss (the alpha and
beta recursions of cuda/cuda_nn_loss_ctc.cu: padded and concatenated targets, repeats, blank
anywhere, impossible alignments and zero_infinity, empty inputs, lattices wider than one block
of threads, float32 and float64) and pdist (cuda/cuda_nn_pdist.cu: every p kind), forward and
backward; the composed losses run on the device too (their parity cases run on CUDA in
tests/test_cuda_nn_parity.py)."""
import math

import numpy as np
import pytest
import torch

import ampc

AF, TF = ampc.nn.functional, torch.nn.functional


def _close(a, b, tol):
    np.testing.assert_allclose(np.asarray(a.detach().cpu().numpy(), np.float64),
                               np.asarray(b.detach().cpu().numpy(), np.float64), rtol=tol, atol=tol)


def _ctc_inputs(seed, T, N, C, S, blank, concat, impossible=False):
    r = np.random.default_rng(seed)
    logits = r.normal(size=(T, N, C)) * 2
    il = r.integers(max(1, T // 2), T + 1, size=N)
    tl = r.integers(0, S + 1, size=N)
    if impossible:
        il[0], tl[0] = 1, S
    tg = r.choice([c for c in range(C) if c != blank], size=(N, S))
    if concat:
        tg = np.concatenate([tg[b, :tl[b]] for b in range(N)]).astype(np.int64)
    return logits, tg, il.tolist(), tl.tolist()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(30, 4, 6, 8, 0, False), (17, 3, 3, 6, 2, True), (300, 2, 5, 160, 1, False),
                                   (1, 2, 3, 1, 0, True)])
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_cuda_matches_cpu_and_torch(cuda, dtype, shape, zero_infinity):
    T, N, C, S, blank, concat = shape
    logits, tg, il, tl = _ctc_inputs(hash(shape) % 2 ** 32, T, N, C, S, blank, concat, impossible=zero_infinity)
    grads, outs = [], []
    for dev in ("cpu", cuda):
        x = ampc.tensor(logits).to(getattr(ampc, dtype)).to(dev).requires_grad_()
        out = AF.ctc_loss(x.log_softmax(2), ampc.tensor(tg).to(dev), il, tl, blank=blank, reduction="none",
                          zero_infinity=zero_infinity)
        out.sum().backward()
        outs.append(out), grads.append(x.grad)
    tol = 2e-4 if dtype == "float32" else 1e-10
    _close(outs[1], outs[0], tol)
    np.testing.assert_array_equal(np.isnan(grads[1].cpu().numpy()), np.isnan(grads[0].numpy()))
    g1, g0 = np.nan_to_num(grads[1].cpu().numpy()), np.nan_to_num(grads[0].numpy())
    np.testing.assert_allclose(g1, g0, rtol=tol, atol=tol)
    xt = torch.from_numpy(logits).to(getattr(torch, dtype)).requires_grad_()
    ref = TF.ctc_loss(xt.log_softmax(2), torch.from_numpy(tg), il, tl, blank=blank, reduction="none",
                      zero_infinity=zero_infinity)
    _close(outs[1], ref, tol)


def test_ctc_cuda_reductions_empty_inputs_and_autocast(cuda):
    logits, tg, il, tl = _ctc_inputs(5, 8, 3, 4, 3, 0, False)
    il[1], tl[1] = 0, 0  # an empty input with an empty target: loss 0
    for red in ("mean", "sum"):
        x = ampc.tensor(logits).float().to(cuda).log_softmax(2)
        a = AF.ctc_loss(x, ampc.tensor(tg).to(cuda), il, tl, reduction=red)
        b = AF.ctc_loss(x.cpu(), ampc.tensor(tg), il, tl, reduction=red)
        _close(a, b, 2e-5)
    # ctc_loss is on torch's CPU autocast list (fp32) but not its CUDA list: an fp16 CUDA input is
    # refused there as torch's CUDA kernel refuses it, and an fp32 one runs as called
    with ampc.autocast("cuda", dtype=ampc.float16):
        with pytest.raises(RuntimeError, match="not implemented for 'Half'"):
            AF.ctc_loss(ampc.tensor(logits).half().to(cuda), ampc.tensor(tg).to(cuda), il, tl, reduction="none")
        out = AF.ctc_loss(ampc.tensor(logits).float().to(cuda), ampc.tensor(tg).to(cuda), il, tl, reduction="none")
    assert out.dtype == ampc.float32 and out[1].item() == 0


@pytest.mark.parametrize("p", [0, 1, 2, 0.5, 3.5, math.inf])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_pdist_cuda_matches_cpu(cuda, p, dtype):
    r = np.random.default_rng(int(p * 10) if p != math.inf else 99)
    a = r.normal(size=(37, 9))
    a[3] = a[5]  # a zero distance: the grad's 0 / 0 case is 0
    g = r.normal(size=37 * 36 // 2)
    outs, grads = [], []
    for dev in ("cpu", cuda):
        x = ampc.tensor(a).to(getattr(ampc, dtype)).to(dev).requires_grad_()
        out = AF.pdist(x, p)
        out.backward(ampc.tensor(g).to(out.dtype).to(dev))
        outs.append(out), grads.append(x.grad)
    tol = 1e-5 if dtype == "float32" else 1e-12
    _close(outs[1], outs[0], tol)
    _close(grads[1], grads[0], tol)
    xt = torch.from_numpy(a).to(getattr(torch, dtype)).requires_grad_()
    ref = torch.pdist(xt, p)
    ref.backward(torch.from_numpy(g).to(ref.dtype))
    _close(outs[1], ref, tol)
    _close(grads[1], xt.grad, tol * 10)


def test_pdist_cuda_small_shapes(cuda):
    for shape in [(1, 3), (0, 3), (2, 0), (2, 1)]:
        a = ampc.randn(*shape)
        _close(AF.pdist(a.to(cuda)), AF.pdist(a), 1e-6)
