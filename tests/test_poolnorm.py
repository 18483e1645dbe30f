"""Issue 13's pooling and normalisation part against torch: the 1-d/3-d and adaptive pools, lp_pool,
max_unpool, rms_norm, instance_norm, local_response_norm (values, indices, gradients, dtypes),
non-contiguous and 0-size inputs, NaN windows, PyTorch's error messages, the top-level aliases,
and SyncBatchNorm.convert_sync_batchnorm."""
import numpy as np
import pytest
import torch

import ampc

AF, TF = ampc.nn.functional, torch.nn.functional


def _pair(shape, seed=0, dtype="float32", grad=True, low=-2.0, high=2.0, noncontig=False):
    x = np.random.default_rng(seed).uniform(low, high, size=shape)
    if noncontig:  # a transposed view of the same values
        base = np.ascontiguousarray(np.swapaxes(x, -1, -2))
        a = ampc.tensor(base).to(getattr(ampc, dtype)).transpose(-1, -2)
        t = torch.tensor(base).to(getattr(torch, dtype)).transpose(-1, -2)
        assert not a.is_contiguous()
    else:
        a, t = ampc.tensor(x).to(getattr(ampc, dtype)), torch.tensor(x).to(getattr(torch, dtype))
    if grad:
        a, t = a.detach().requires_grad_(), t.detach().requires_grad_()
    return a, t


def _close(a, t, dtype="float32", what=""):
    tol = {"float32": 1e-5, "float64": 1e-12, "float16": 2e-3, "bfloat16": 1.6e-2}[dtype]
    assert str(a.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], what
    assert tuple(a.shape) == tuple(t.shape), what
    av = a.detach().to(ampc.float64).numpy() if a.is_floating_point() else a.numpy()
    tv = t.detach().to(torch.float64).numpy() if t.is_floating_point() else t.numpy()
    np.testing.assert_allclose(av, tv, rtol=tol, atol=tol, err_msg=what, equal_nan=True)


def _check(fn, shape, dtype="float32", noncontig=False, **kw):
    a, t = _pair(shape, dtype=dtype, noncontig=noncontig, **kw)
    ya, yt = fn(AF, a), fn(TF, t)
    outs = list(zip(ya, yt)) if isinstance(yt, tuple) else [(ya, yt)]
    for i, (p, q) in enumerate(outs):
        _close(p, q, dtype, f"output {i}")
    y0a, y0t = outs[0]
    if y0t.numel() and y0t.requires_grad:
        g = np.random.default_rng(1).uniform(-1, 1, size=tuple(y0t.shape))
        y0a.backward(ampc.tensor(g).to(y0a.dtype))
        y0t.backward(torch.tensor(g).to(y0t.dtype))
        _close(a.grad, t.grad, dtype, "grad")
    return ya, yt


POOLS = {
    "max1d": (lambda F, x: F.max_pool1d(x, 3, 2, 1, 2, True, True), (2, 3, 11)),
    "max3d": (lambda F, x: F.max_pool3d(x, (2, 3, 2), (1, 2, 2), (1, 1, 0), (2, 1, 1), True, True), (2, 3, 5, 7, 6)),
    "max3d-unbatched": (lambda F, x: F.max_pool3d(x, 2, return_indices=True), (3, 4, 6, 5)),
    "max3d-overlap": (lambda F, x: F.max_pool3d(x, 3, 1, 1), (1, 2, 4, 5, 6)),
    "avg1d": (lambda F, x: F.avg_pool1d(x, 3, 2, 1, True, False), (2, 3, 10)),
    "avg3d": (lambda F, x: F.avg_pool3d(x, 3, 2, 1, True, True), (2, 2, 5, 6, 7)),
    "avg3d-nopad-count": (lambda F, x: F.avg_pool3d(x, (2, 3, 3), 2, (1, 1, 0), True, False), (2, 2, 5, 6, 7)),
    "avg3d-divisor": (lambda F, x: F.avg_pool3d(x, 2, 1, 1, divisor_override=3), (2, 4, 4, 4)),
    "aavg1d": (lambda F, x: F.adaptive_avg_pool1d(x, 4), (2, 3, 11)),
    "aavg3d": (lambda F, x: F.adaptive_avg_pool3d(x, (3, None, 4)), (2, 3, 5, 6, 7)),
    "aavg3d-up": (lambda F, x: F.adaptive_avg_pool3d(x, (4, 5, 6)), (1, 2, 3, 2, 4)),
    "amax1d": (lambda F, x: F.adaptive_max_pool1d(x, 4, True), (2, 3, 11)),
    "amax2d": (lambda F, x: F.adaptive_max_pool2d(x, (3, None), True), (2, 3, 7, 5)),
    "amax2d-unbatched-up": (lambda F, x: F.adaptive_max_pool2d(x, (9, 7), True), (3, 4, 5)),
    "amax3d": (lambda F, x: F.adaptive_max_pool3d(x, (2, 3, 4), True), (2, 2, 5, 7, 9)),
    "lp1d": (lambda F, x: F.lp_pool1d(x, 2, 3, 2), (2, 3, 9)),
    "lp2d": (lambda F, x: F.lp_pool2d(x, 4, (2, 3), 1, True), (2, 3, 6, 7)),
    "lp3d": (lambda F, x: F.lp_pool3d(x, 2, 2), (1, 2, 4, 4, 4)),
}


@pytest.mark.parametrize("name", list(POOLS))
@pytest.mark.parametrize("noncontig", [False, True])
def test_pools_match_torch(name, noncontig):
    fn, shape = POOLS[name]
    _check(lambda F, x: fn(F, x), shape, "float64" if not name.startswith("lp") else "float32", noncontig=noncontig,
           low=0.1 if name.startswith("lp") else -2.0)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", ["max3d", "aavg3d", "amax2d", "amax3d", "max1d", "aavg1d"])
def test_pools_16bit(name, dtype):
    fn, shape = POOLS[name]
    _check(lambda F, x: fn(F, x), shape, dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_avg_pool3d_16bit(dtype):  # torch's CPU avg_pool3d has no 16-bit kernel: its fp32 result, rounded
    a, t = _pair((2, 2, 5, 6, 7), dtype=dtype)
    ya = AF.avg_pool3d(a, 3, 2, 1)
    _close(ya, TF.avg_pool3d(t.float(), 3, 2, 1).to(t.dtype), dtype)
    ya.sum().backward()
    TF.avg_pool3d(t.float(), 3, 2, 1).sum().backward()
    _close(a.grad, t.grad, dtype, "grad")


@pytest.mark.parametrize("fn", [
    lambda F, x: F.max_pool3d(x, 2), lambda F, x: F.avg_pool3d(x, 2), lambda F, x: F.adaptive_avg_pool3d(x, 2),
    lambda F, x: F.adaptive_max_pool3d(x, 2), lambda F, x: F.adaptive_max_pool2d(x.flatten(3), 3),
])
def test_empty_batch(fn):
    a, t = _pair((0, 2, 4, 4, 4))
    _close(fn(AF, a), fn(TF, t))


def test_nan_wins_the_window():
    x = np.random.default_rng(3).normal(size=(1, 2, 4, 4, 4))
    x[0, 0, 1, 1, 1] = np.nan
    x[0, 1, 3, 2, 0] = np.nan
    for name in ("max_pool3d", "adaptive_max_pool3d"):
        ya, ia = getattr(AF, name)(ampc.tensor(x), 2, return_indices=True)
        yt, it = getattr(TF, name)(torch.tensor(x), 2, return_indices=True)
        _close(ya, yt, "float64", name)
        _close(ia, it, "float64", name + " indices")


def test_max_backward_accumulates_overlapping_windows():
    # stride 1, kernel 3: one input is the max of many windows; its grad is their sum
    x = np.zeros((1, 1, 3, 3, 3))
    x[0, 0, 1, 1, 1] = 5.0
    a = ampc.tensor(x, requires_grad=True)
    AF.max_pool3d(a, 2, 1).sum().backward()
    assert a.grad.numpy()[0, 0, 1, 1, 1] == 8.0


def test_max_unpool_matches_torch():
    for n, shape in ((1, (2, 3, 9)), (2, (3, 7, 6)), (3, (1, 2, 4, 5, 4))):
        def fn(F, x, n=n):
            y, i = getattr(F, f"max_pool{n}d")(x, 2, return_indices=True)
            return getattr(F, f"max_unpool{n}d")(y, i, 2, output_size=x.shape[-n:])
        _check(fn, shape, "float64")


def test_max_unpool_rejects_bad_indices():
    y = ampc.randn(1, 1, 2, 2)
    with pytest.raises(RuntimeError, match=r"Found an invalid max index: 99 \(output volumes are of size 4x4\)"):
        AF.max_unpool2d(y, ampc.tensor([[[[0, 1], [2, 99]]]]), 2)
    with pytest.raises(RuntimeError, match="elements in indices should be type int64"):
        AF.max_unpool2d(y, ampc.zeros(1, 1, 2, 2, dtype=ampc.int32), 2)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("weight", [True, False])
def test_rms_norm(dtype, weight):
    a, t = _pair((4, 3, 8), dtype=dtype)
    wa, wt = _pair((3, 8), seed=2, dtype=dtype) if weight else (None, None)
    ya, yt = AF.rms_norm(a, (3, 8), wa, None), TF.rms_norm(t, (3, 8), wt, None)
    _close(ya, yt, dtype)
    g = np.random.default_rng(1).uniform(-1, 1, size=(4, 3, 8))
    ya.backward(ampc.tensor(g).to(ya.dtype))
    yt.backward(torch.tensor(g).to(yt.dtype))
    _close(a.grad, t.grad, dtype, "grad x")
    if weight:
        _close(wa.grad, wt.grad, dtype if dtype != "float16" else "bfloat16", "grad weight")


def test_rms_norm_mixed_dtypes_and_empty():
    # fp16 activations with an fp32 weight (what autocast leaves): output in the input's dtype
    a, t = _pair((5, 6), dtype="float16")
    wa, wt = _pair((6,), seed=3)
    _close(AF.rms_norm(a, (6,), wa, 1e-3), TF.rms_norm(t, (6,), wt, 1e-3), "float16")
    e, et = _pair((0, 6))
    wa, wt = _pair((6,), seed=3)
    ya, yt = AF.rms_norm(e, (6,), wa), TF.rms_norm(et, (6,), wt)
    _close(ya, yt)
    ya.sum().backward()
    yt.sum().backward()
    _close(wa.grad, wt.grad)


def test_rms_norm_autocast_policy():
    # fp32 on torch's CUDA list; not on its CPU list (runs as called there, as torch)
    assert ampc._C._autocast_policy_table("cuda")["rms_norm"] == "fp32"
    assert "rms_norm" not in ampc._C._autocast_policy_table("cpu")
    x, t = ampc.randn(3, 8).half(), torch.randn(3, 8).half()
    with ampc.autocast("cpu", dtype=ampc.float16), torch.autocast("cpu", dtype=torch.float16):
        assert AF.rms_norm(x, (8,)).dtype == ampc.float16 and TF.rms_norm(t, (8,)).dtype == torch.float16


def test_instance_norm_running_stats():
    a, t = _pair((3, 4, 6))
    rm_a, rv_a = ampc.zeros(4), ampc.ones(4)
    rm_t, rv_t = torch.zeros(4), torch.ones(4)
    _close(AF.instance_norm(a, rm_a, rv_a, momentum=0.3), TF.instance_norm(t, rm_t, rv_t, momentum=0.3))
    _close(rm_a, rm_t, what="running_mean")
    _close(rv_a, rv_t, what="running_var")
    m_a, m_t = ampc.nn.InstanceNorm1d(4, affine=True, track_running_stats=True), \
        torch.nn.InstanceNorm1d(4, affine=True, track_running_stats=True)
    m_a.load_state_dict({k: ampc.tensor(v.numpy()) for k, v in m_t.state_dict().items()})
    for _ in range(2):
        _close(m_a(a), m_t(t))
    _close(m_a.running_var, m_t.running_var)
    m_a.eval(), m_t.eval()
    _close(m_a(a), m_t(t))


def test_local_response_norm():
    for shape, size in (((2, 5, 7), 3), ((2, 6, 4, 3), 2), ((1, 4, 2, 3, 2), 5)):
        _check(lambda F, x: F.local_response_norm(x, size, 0.1, 0.75, 2.0), shape, "float64")
    assert AF.local_response_norm(ampc.zeros(0, 3, 4), 2).shape == (0, 3, 4)


ERRORS = [
    lambda F: F.max_pool3d(_t(F, (3, 4)), 2),
    lambda F: F.avg_pool3d(_t(F, (3, 4)), 2),
    lambda F: F.adaptive_avg_pool3d(_t(F, (3, 4)), 2),
    lambda F: F.adaptive_max_pool3d(_t(F, (3, 4)), 2),
    lambda F: F.adaptive_max_pool2d(_t(F, (3,)), 2),
    lambda F: F.max_pool3d(_t(F, (2, 3, 4, 4, 4)), 2, padding=2),
    lambda F: F.max_pool3d(_t(F, (2, 3, 4, 4, 4)), 5),
    lambda F: F.avg_pool3d(_t(F, (2, 3, 4, 4, 4)), 5),
    lambda F: F.max_pool3d(_t(F, (2, 3, 4, 4, 4)), 2, dilation=0),
    lambda F: F.max_pool3d(_t(F, (2, 3, 4, 4, 4)), 2, stride=0),
    lambda F: F.max_pool3d(_t(F, (2, 3, 4, 4, 4)), (2, 2)),
    lambda F: F.avg_pool3d(_t(F, (2, 3, 4, 4, 4)), (2, 2)),
    lambda F: F.adaptive_avg_pool3d(_t(F, (2, 3, 4, 4, 4)), (2, 2)),
    lambda F: F.adaptive_max_pool3d(_t(F, (2, 3, 4, 4, 4)), (2, 2)),
    lambda F: F.adaptive_max_pool3d(_t(F, (2, 0, 3, 3)), 2),
    lambda F: F.adaptive_avg_pool3d(_t(F, (2, 3, 0, 3, 3)), 2),
    lambda F: F.max_pool3d(_t(F, (2, 0, 4, 4, 4)), 2),
    lambda F: F.max_pool1d(_t(F, (4,)), 2),
    lambda F: F.max_pool1d(_t(F, (2, 0, 4)), 2),
    lambda F: F.max_pool1d(_t(F, (2, 3, 4)), (2, 2)),
    lambda F: F.max_pool1d(_t(F, (2, 3, 4)), 2, stride=0),
    lambda F: F.avg_pool1d(_t(F, (4,)), 2),
    lambda F: F.adaptive_avg_pool1d(_t(F, (4,)), 2),
    lambda F: F.adaptive_max_pool1d(_t(F, (2, 3, 4)), (2, 2)),
    lambda F: F.avg_pool1d(_t(F, (2, 3, 4)), 2, stride=0),
    lambda F: F.avg_pool1d(_t(F, (2, 3, 4)), 5),
    lambda F: F.rms_norm(_t(F, (2, 3)), (4,)),
    lambda F: F.rms_norm(_t(F, (2, 4)), (4,), _t(F, (3,))),
    lambda F: F.instance_norm(_t(F, (2, 3, 1))),
    lambda F: F.local_response_norm(_t(F, (2, 3)), 2),
]


def _t(F, shape):
    return (torch if F is TF else ampc).ones(*shape)


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_errors_match_torch(k):
    with pytest.raises(Exception) as want:
        ERRORS[k](TF)
    with pytest.raises(type(want.value)) as got:
        ERRORS[k](AF)
    assert str(got.value) == str(want.value).replace("torch.Size", "ampc.Size")


def test_toplevel_aliases():
    a, t = _pair((2, 3, 10), grad=False)
    for name, args in (("max_pool1d", (3, 2)), ("max_pool1d_with_indices", (2,)), ("avg_pool1d", (3,)),
                       ("adaptive_avg_pool1d", (4,)), ("adaptive_max_pool1d", (4,)), ("rms_norm", ((10,),))):
        ya, yt = getattr(ampc, name)(a, *args), getattr(torch, name)(t, *args)
        for p, q in zip(ya, yt) if isinstance(yt, tuple) else [(ya, yt)]:
            _close(p, q, what=name)
    a5, t5 = _pair((1, 2, 4, 4, 4), grad=False)
    _close(ampc.max_pool3d(a5, 2, [], 1), torch.max_pool3d(t5, 2, [], 1))
    _close(ampc.instance_norm(a, None, None, None, None, True, 0.1, 1e-5, False),
           torch.instance_norm(t, None, None, None, None, True, 0.1, 1e-5, False))


def test_convert_sync_batchnorm():
    net = ampc.nn.Sequential(ampc.nn.Conv2d(2, 3, 1), ampc.nn.BatchNorm2d(3),
                             ampc.nn.Sequential(ampc.nn.BatchNorm1d(3)))
    net[1].running_mean.fill_(0.5)
    conv = ampc.nn.SyncBatchNorm.convert_sync_batchnorm(net)
    assert type(conv[1]) is ampc.nn.SyncBatchNorm and type(conv[2][0]) is ampc.nn.SyncBatchNorm
    assert conv[1].weight is net[1].weight and conv[1].running_mean is net[1].running_mean
    assert type(conv[0]) is ampc.nn.Conv2d
    with pytest.raises(ValueError, match="expected at least 2D input"):
        ampc.nn.SyncBatchNorm(3)(ampc.ones(3))
    with pytest.raises(ValueError, match="expected 5D input"):
        ampc.nn.BatchNorm3d(3)(ampc.ones(2, 3, 4, 4))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fractional_max_pool_given_samples(dtype):
    for n, shape, k, o in ((2, (2, 3, 9, 11), (2, 3), (4, 5)), (2, (3, 10, 7), 3, 5), (2, (1, 1, 6, 6), 2, 5),
                           (3, (2, 2, 7, 8, 9), (2, 3, 2), (3, 4, 5)), (3, (2, 5, 6, 7), 2, 1)):
        nb = 1 if len(shape) == n + 1 else shape[0]
        smp = np.random.default_rng(4).uniform(0, 1, size=(nb + 1, shape[-n - 1], n))

        def fn(F, x, n=n, k=k, o=o, smp=smp):
            lib = ampc if F is AF else torch
            return getattr(F, f"fractional_max_pool{n}d")(x, k, o, return_indices=True,
                                                          _random_samples=lib.tensor(smp).to(x.dtype))
        _check(fn, shape, dtype)


def test_fractional_max_pool_draws_torchs_samples():
    # no samples given: drawn with rand from the CPU generator, which is torch's under the same seed
    x = np.random.default_rng(5).normal(size=(2, 3, 9, 9, 8)).astype(np.float32)
    torch.manual_seed(11)
    ampc.manual_seed(11)
    yt, it = torch.nn.FractionalMaxPool3d(2, output_ratio=(0.5, 0.6, 0.7), return_indices=True)(torch.tensor(x))
    ya, ia = ampc.nn.FractionalMaxPool3d(2, output_ratio=(0.5, 0.6, 0.7), return_indices=True)(ampc.tensor(x))
    _close(ya, yt)
    _close(ia, it)


FRACTIONAL_ERRORS = [
    lambda F: F.fractional_max_pool2d(_t(F, (2, 3, 8, 8)), 4, output_size=6),
    lambda F: F.fractional_max_pool3d(_t(F, (2, 1, 5, 5, 5)), 2, (2, 3, 4)),
    lambda F: F.fractional_max_pool2d(_t(F, (2, 0, 8, 8)), 2, output_size=3),
    lambda F: F.fractional_max_pool2d(_t(F, (2, 3, 8, 8)), 2, 3, _random_samples=_t(F, (2, 3, 2)).double()),
    lambda F: F.fractional_max_pool2d(_t(F, (2, 3, 8, 8)), 2, 3, _random_samples=_t(F, (1, 3, 2))),
    lambda F: F.fractional_max_pool2d(_t(F, (2, 3, 8, 8)), 2),
    lambda F: (torch if F is TF else ampc).nn.FractionalMaxPool2d(2, output_ratio=1.5),
]


@pytest.mark.parametrize("k", range(len(FRACTIONAL_ERRORS)))
def test_fractional_errors_match_torch(k):
    with pytest.raises(Exception) as want:
        FRACTIONAL_ERRORS[k](TF)
    with pytest.raises(type(want.value)) as got:
        FRACTIONAL_ERRORS[k](AF)
    assert str(got.value) == str(want.value)
