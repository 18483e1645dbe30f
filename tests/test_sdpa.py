"""F.scaled_dot_product_attention (the fused kernels SDPA_FLASH / SDPA_FLASH_BACKWARD): values and
gradients against torch (the oracle) and a float64 NumPy reference, masks (bool and float,
broadcast), is_causal with L != S, GQA, scale, dropout reproducibility, fp16/bf16, 0-size and
non-contiguous inputs, on every device."""
import numpy as np
import pytest

import ampc

torch = pytest.importorskip("torch")
F = ampc.nn.functional
TF = torch.nn.functional

TOL = {"float32": 2e-5, "float64": 1e-12, "float16": 4e-3, "bfloat16": 3e-2}


def rnd(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def ref_numpy(q, k, v, mask=None, causal=False, scale=None, gqa=False):
    """float64 attention with the (L, S) matrix, as the definition reads."""
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    if gqa:
        g = q.shape[-3] // k.shape[-3]
        k, v = np.repeat(k, g, axis=-3), np.repeat(v, g, axis=-3)
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    mx = s.max(-1, keepdims=True)
    p = np.exp(s - np.where(np.isfinite(mx), mx, 0))
    den = p.sum(-1, keepdims=True)
    return (p / np.where(den == 0, 1, den)) @ v


def run_both(device, shapes, dtype="float32", mask=None, causal=False, scale=None, gqa=False, seed=0):
    """(ampc out, grads), (torch out, grads), inputs (float32 numpy)."""
    xs = [rnd(s, seed + i) for i, s in enumerate(shapes)]
    res = []
    for M, dev in ((ampc, device), (torch, "cpu")):
        ts = [M.tensor(x, device=dev).to(getattr(M, dtype)).requires_grad_() for x in xs]
        m = None if mask is None else M.tensor(mask, device=dev)
        if m is not None and m.dtype != M.bool:
            m = m.to(getattr(M, dtype))
        out = M.nn.functional.scaled_dot_product_attention(*ts, attn_mask=m, is_causal=causal, scale=scale,
                                                           enable_gqa=gqa)
        go = M.tensor(rnd(tuple(out.shape), 99), device=dev).to(out.dtype)
        out.backward(go)
        res.append([out.detach().cpu().double().numpy()] +
                   [t.grad.cpu().double().numpy() for t in ts])
    return res[0], res[1], xs


def close(a, t, dtype):
    tol = TOL[dtype]
    for x, y in zip(a, t):
        assert x.shape == y.shape
        np.testing.assert_allclose(x, y, rtol=tol, atol=tol)


CASES = [
    ((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 4)),          # small, Ev != E
    ((1, 2, 130, 16), (1, 2, 300, 16), (1, 2, 300, 16)),  # several query and key tiles, ragged
    ((5, 8), (7, 8), (7, 8)),                             # unbatched
    ((2, 3, 5, 8), (3, 7, 8), (1, 7, 4)),                 # broadcast batch dims
    ((2, 2, 2, 9, 8), (2, 2, 2, 11, 8), (2, 2, 2, 11, 8)),  # two leading batch dims
]


@pytest.mark.parametrize("shapes", CASES)
@pytest.mark.parametrize("causal", [False, True])
def test_values_and_grads_vs_torch(device, shapes, causal):
    a, t, xs = run_both(device, shapes, causal=causal)
    close(a, t, "float32")
    np.testing.assert_allclose(a[0], ref_numpy(*xs, causal=causal), rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("lq,s", [(70, 200), (200, 70), (64, 64), (1, 129)])
def test_causal_l_differs_from_s(device, lq, s):
    a, t, xs = run_both(device, [(1, 2, lq, 8), (1, 2, s, 8), (1, 2, s, 8)], causal=True)
    close(a, t, "float32")


def test_float64_against_numpy(device):
    shapes = [(2, 2, 70, 8), (2, 2, 150, 8), (2, 2, 150, 5)]
    a, t, xs = run_both(device, shapes, dtype="float64", causal=True)
    np.testing.assert_allclose(a[0], ref_numpy(*xs, causal=True), rtol=1e-12, atol=1e-12)
    close(a, t, "float64")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_low_precision(device, dtype):
    a, t, xs = run_both(device, [(2, 3, 65, 8), (2, 3, 130, 8), (2, 3, 130, 4)], dtype=dtype, causal=True)
    close(a, t, dtype)


def test_fp16_large_scores_do_not_overflow(device):
    # |q.k| = 65536 > fp16's max before the scale (issue 19): torch gives finite values
    q = ampc.full((1, 1, 4, 64), 32.0, dtype=ampc.float16, device=device)
    out = F.scaled_dot_product_attention(q, q, ampc.ones(1, 1, 4, 64, dtype=ampc.float16, device=device))
    assert not out.isnan().any().item()
    np.testing.assert_array_equal(out.cpu().float().numpy(), np.ones((1, 1, 4, 64), np.float32))


@pytest.mark.parametrize("mask_shape", [(130, 300), (1, 300), (2, 1, 130, 300), (2, 4, 130, 300)])
@pytest.mark.parametrize("kind", ["bool", "float"])
def test_masks_broadcast(device, mask_shape, kind):
    rng = np.random.default_rng(5)
    mask = rng.random(mask_shape) > 0.3 if kind == "bool" else rng.standard_normal(mask_shape).astype(np.float32)
    shapes = [(2, 4, 130, 16), (2, 4, 300, 16), (2, 4, 300, 16)]
    a, t, xs = run_both(device, shapes, mask=mask)
    close(a, t, "float32")
    np.testing.assert_allclose(a[0], ref_numpy(*xs, mask=mask), rtol=2e-5, atol=2e-5)


def test_fully_masked_rows_give_zeros(device):
    mask = np.ones((3, 5), bool)
    mask[1] = False
    a, t, xs = run_both(device, [(1, 2, 3, 8), (1, 2, 5, 8), (1, 2, 5, 4)], mask=mask)
    close(a, t, "float32")
    assert (a[0][:, :, 1] == 0).all() and (a[1][:, :, 1] == 0).all()
    fmask = np.where(mask, 0.0, -np.inf).astype(np.float32)
    a, t, xs = run_both(device, [(1, 2, 3, 8), (1, 2, 5, 8), (1, 2, 5, 4)], mask=fmask)
    close(a, t, "float32")


def test_nan_scores(device):
    q = ampc.ones(1, 1, 2, 4, device=device)
    k = ampc.tensor(np.array([[[[1, 1, 1, 1], [float("nan"), 0, 0, 0]]]], np.float32), device=device)
    out = F.scaled_dot_product_attention(q, k, ampc.ones(1, 1, 2, 4, device=device))
    assert out.isnan().all().item()  # some scores NaN: NaN, as torch
    # every score of a row NaN: an empty row (0), as torch's CPU flash kernel gives for 4-d inputs
    qn = ampc.tensor(np.array([[[[float("nan")]]]], np.float32), device=device)
    kn = ampc.ones(1, 1, 3, 1, device=device)
    tq = torch.tensor([[[[float("nan")]]]])
    expect = TF.scaled_dot_product_attention(tq, torch.ones(1, 1, 3, 1), torch.ones(1, 1, 3, 1)).numpy()
    np.testing.assert_array_equal(F.scaled_dot_product_attention(qn, kn, kn).cpu().numpy(), expect)


@pytest.mark.parametrize("hq,hk", [(4, 2), (6, 1), (3, 3)])
def test_gqa(device, hq, hk):
    shapes = [(2, hq, 70, 16), (2, hk, 150, 16), (2, hk, 150, 8)]
    a, t, xs = run_both(device, shapes, gqa=True, causal=True)
    close(a, t, "float32")
    np.testing.assert_allclose(a[0], ref_numpy(*xs, causal=True, gqa=True), rtol=2e-5, atol=2e-5)


def test_gqa_errors():
    q, k = ampc.randn(1, 4, 3, 8), ampc.randn(1, 3, 3, 8)
    with pytest.raises(RuntimeError, match="must divide"):
        F.scaled_dot_product_attention(q, k, k, enable_gqa=True)
    with pytest.raises(RuntimeError):
        F.scaled_dot_product_attention(q, ampc.randn(1, 2, 3, 8), ampc.randn(1, 2, 3, 8))


def test_scale(device):
    a, t, xs = run_both(device, [(1, 2, 9, 8), (1, 2, 20, 8), (1, 2, 20, 8)], scale=0.05)
    close(a, t, "float32")
    np.testing.assert_allclose(a[0], ref_numpy(*xs, scale=0.05), rtol=2e-5, atol=2e-5)


def test_non_contiguous_inputs(device):
    x = [rnd((2, 9, 3, 8), i) for i in range(3)]
    outs = []
    for M, dev in ((ampc, device), (torch, "cpu")):
        q, k, v = (M.tensor(a, device=dev).requires_grad_() for a in x)
        o = M.nn.functional.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)[..., ::2])
        o.sum().backward()
        outs.append([o.detach().cpu().numpy()] + [t.grad.cpu().numpy() for t in (q, k, v)])
    close(*outs, "float32")


def test_zero_size(device):
    for shapes in [((1, 2, 0, 8), (1, 2, 5, 8), (1, 2, 5, 4)), ((1, 2, 3, 8), (1, 2, 0, 8), (1, 2, 0, 4)),
                   ((0, 2, 3, 8), (0, 2, 5, 8), (0, 2, 5, 4))]:
        a, t, xs = run_both(device, shapes)
        close(a, t, "float32")


def test_dropout_reproducible_and_consistent(device):
    q, k, v = (ampc.tensor(rnd((2, 2, 70, 16), i), device=device).requires_grad_() for i in range(3))

    def step(seed):
        ampc.manual_seed(seed)
        for t in (q, k, v):
            t.grad = None
        o = F.scaled_dot_product_attention(q, k, v, dropout_p=0.3)
        o.sum().backward()
        return [o.detach().cpu().numpy()] + [t.grad.cpu().numpy() for t in (q, k, v)]

    a, b, c = step(3), step(3), step(4)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a[0], c[0])
    # the backward uses the forward's mask: the gradient of value equals P'^T 1, whose column sums
    # over keys equal the output's sum when V is the identity map -> check through the definition
    out = a[0]
    assert np.isfinite(out).all()
    # with p = 0.3 the mean output stays close to the undropped one
    ref = F.scaled_dot_product_attention(q, k, v).detach().cpu().numpy()
    assert abs(out.mean() - ref.mean()) < 0.1


def test_dropout_gradient_matches_its_own_mask(device):
    # P' is linear in V: out(V) = P' V with the same dropout mask when the RNG is reset, so
    # d(sum(out * G))/dV = P'^T G can be checked against two forward passes.
    q, k = (ampc.tensor(rnd((1, 1, 20, 8), i), device=device) for i in range(2))
    v = ampc.tensor(rnd((1, 1, 20, 4), 2), device=device).requires_grad_()
    g = rnd((1, 1, 20, 4), 7)
    ampc.manual_seed(11)
    o = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    (o * ampc.tensor(g, device=device)).sum().backward()
    eye = ampc.eye(20, device=device).reshape(1, 1, 20, 20)
    ampc.manual_seed(11)
    pd = F.scaled_dot_product_attention(q, k, eye, dropout_p=0.5).cpu().numpy()  # P' itself
    np.testing.assert_allclose(v.grad.cpu().numpy(), np.swapaxes(pd, -1, -2) @ g, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(o.detach().cpu().numpy(), pd @ v.detach().cpu().numpy(), rtol=1e-5, atol=1e-5)


def test_errors():
    q = ampc.randn(1, 1, 3, 8)
    with pytest.raises(RuntimeError, match="is_causal"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=ampc.ones(3, 3, dtype=ampc.bool), is_causal=True)
    with pytest.raises(RuntimeError, match="same dtype"):
        F.scaled_dot_product_attention(q, q.double(), q)
    with pytest.raises(RuntimeError, match="do not fit"):
        F.scaled_dot_product_attention(q, ampc.randn(1, 1, 3, 7), q)
    with pytest.raises(RuntimeError, match="dropout probability"):
        F.scaled_dot_product_attention(q, q, q, dropout_p=1.5)


def test_autocast_runs_in_lower_precision():
    q = ampc.randn(1, 2, 5, 8)
    with ampc.autocast("cpu", dtype=ampc.bfloat16):
        out = F.scaled_dot_product_attention(q, q, q)
    assert out.dtype == ampc.bfloat16
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert TF.scaled_dot_product_attention(*(torch.randn(1, 2, 5, 8),) * 3).dtype == torch.bfloat16


def test_grad_fn_and_no_leaks():
    q = ampc.randn(1, 2, 5, 8, requires_grad=True)
    out = F.scaled_dot_product_attention(q, q, q, is_causal=True)
    assert type(out.grad_fn).__name__ == "ScaledDotProductAttentionBackward0"
    before = ampc._C._live_tensors()
    for _ in range(3):
        F.scaled_dot_product_attention(q, q, q).sum().backward()
    assert ampc._C._live_tensors() <= before + 1
