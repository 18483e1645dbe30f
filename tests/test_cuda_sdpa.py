"""The fused CUDA attention kernels (cuda_nn_attn.cu) against the CPU backend's
(cpu_nn_attn.c): forward and all three gradients, over tiles of both sides (ragged ends), is_causal
with L != S, GQA, bool and float masks with broadcast strides, fp16/bf16/fp64, 0-size; dropout
is reproducible per seed and its backward uses the forward's mask (the CUDA stream of Philox
words is the device's, so CUDA and CPU dropout masks differ, as torch's do)."""
import numpy as np
import pytest

import ampc
import ampc.nn.functional as F

TOL = {ampc.float32: 2e-5, ampc.float64: 1e-11, ampc.float16: 4e-3, ampc.bfloat16: 3e-2}


def run(dev, arrays, dtype, mask=None, **kw):
    ts = [ampc.tensor(a).to(dtype).to(dev).requires_grad_() for a in arrays]
    m = None if mask is None else ampc.tensor(mask).to(dev)
    if m is not None and m.dtype != ampc.bool:
        m = m.to(dtype)
    out = F.scaled_dot_product_attention(*ts, attn_mask=m, **kw)
    g = ampc.tensor(np.random.default_rng(9).standard_normal(tuple(out.shape)).astype(np.float32)).to(dtype).to(dev)
    out.backward(g)
    return [out.detach().cpu().double().numpy()] + [t.grad.cpu().double().numpy() for t in ts]


def compare(cuda, shapes, dtype=ampc.float32, mask=None, **kw):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    for a, b in zip(run("cpu", arrays, dtype, mask, **kw), run(cuda, arrays, dtype, mask, **kw)):
        np.testing.assert_allclose(b, a, rtol=TOL[dtype], atol=TOL[dtype])


@pytest.mark.parametrize("lq,s", [(5, 7), (70, 150), (150, 70), (1, 33)])
@pytest.mark.parametrize("causal", [False, True])
def test_against_cpu(cuda, lq, s, causal):
    compare(cuda, [(2, 2, lq, 16), (2, 2, s, 16), (2, 2, s, 8)], is_causal=causal)


@pytest.mark.parametrize("dtype", [ampc.float16, ampc.bfloat16, ampc.float64])
def test_dtypes(cuda, dtype):
    compare(cuda, [(1, 2, 40, 8), (1, 2, 50, 8), (1, 2, 50, 8)], dtype=dtype, is_causal=True)


def test_gqa_and_scale(cuda):
    compare(cuda, [(2, 6, 20, 8), (2, 2, 30, 8), (2, 2, 30, 8)], enable_gqa=True, scale=0.3)


@pytest.mark.parametrize("kind", ["bool", "float"])
def test_masks(cuda, kind):
    rng = np.random.default_rng(3)
    mask = rng.random((2, 1, 20, 30)) > 0.3 if kind == "bool" else rng.standard_normal((20, 30)).astype(np.float32)
    if kind == "bool":
        mask[0, 0, 4] = False  # a fully masked row: zeros
    compare(cuda, [(2, 3, 20, 8), (2, 3, 30, 8), (2, 3, 30, 8)], mask=mask)


def test_zero_size(cuda):
    for shapes in [((1, 2, 0, 8), (1, 2, 5, 8), (1, 2, 5, 4)), ((1, 2, 3, 8), (1, 2, 0, 8), (1, 2, 0, 4))]:
        compare(cuda, shapes)


def test_fp16_large_scores(cuda):
    q = ampc.full((1, 1, 4, 64), 32.0, dtype=ampc.float16, device=cuda)
    out = F.scaled_dot_product_attention(q, q, ampc.ones(1, 1, 4, 64, dtype=ampc.float16, device=cuda))
    assert not out.isnan().any().item()


def test_dropout_reproducible_and_self_consistent(cuda):
    rng = np.random.default_rng(1)
    q, k = (ampc.tensor(rng.standard_normal((1, 1, 20, 8)).astype(np.float32)).to(cuda) for _ in range(2))
    v = ampc.tensor(rng.standard_normal((1, 1, 20, 4)).astype(np.float32)).to(cuda).requires_grad_()
    g = rng.standard_normal((1, 1, 20, 4)).astype(np.float32)
    ampc.manual_seed(5)
    o = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    (o * ampc.tensor(g).to(cuda)).sum().backward()
    ampc.manual_seed(5)
    pd = F.scaled_dot_product_attention(q, k, ampc.eye(20).reshape(1, 1, 20, 20).to(cuda), dropout_p=0.5).cpu().numpy()
    np.testing.assert_allclose(v.grad.cpu().numpy(), np.swapaxes(pd, -1, -2) @ g, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(o.detach().cpu().numpy(), pd @ v.detach().cpu().numpy(), rtol=1e-5, atol=1e-5)
