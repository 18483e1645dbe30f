"""Issue 13's convolution family against torch on the CPU beyond the parity harness
(tests/nn_parity/cases_conv.py): F.pad in every mode over random shapes and pads, integer dtypes,
0-size and non-contiguous inputs, the error messages, double backward of constant padding."""
import numpy as np
import pytest
import torch

import ampc
import ampc.nn.functional as F


def pair(shape, seed=0, dtype="float32", grad=True):
    a = np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float64)
    t = torch.tensor(a, dtype=getattr(torch, dtype))
    m = ampc.tensor(a).to(getattr(ampc, dtype))
    if grad:
        t.requires_grad_(), m.requires_grad_()
    return t, m


def close(m, t, atol=1e-6, rtol=1e-6):
    np.testing.assert_allclose(m.detach().double().numpy(), t.detach().double().numpy(), atol=atol, rtol=rtol)


# ---------------------------------------------------------------- pad

MODES = ["constant", "reflect", "replicate", "circular"]


def random_pad_case(rng, mode):
    k = int(rng.integers(1, 4))
    batched = bool(rng.integers(0, 2))
    shape = tuple(int(v) for v in rng.integers(1, 6, k + 1 + batched))
    pads = []
    for i in range(k):
        n = shape[-1 - i]
        if mode == "reflect":
            lo, hi = (int(v) for v in rng.integers(-(n // 2), n, 2))
        elif mode == "circular":
            lo, hi = (int(v) for v in rng.integers(-(n // 2), n + 1, 2))
        else:
            lo, hi = (int(v) for v in rng.integers(-(n // 2), 6, 2))
        if n + lo + hi < 1:
            lo, hi = max(lo, 0), max(hi, 0)
        if mode == "circular":  # wrap only around what a negative pad keeps (else torch's copies overlap)
            kept = n + min(lo, 0) + min(hi, 0)
            lo, hi = min(lo, kept), min(hi, kept)
        pads += [lo, hi]
    return shape, tuple(pads)


@pytest.mark.parametrize("mode", MODES)
def test_pad_random_against_torch(mode):
    rng = np.random.default_rng(MODES.index(mode))
    for i in range(25):
        shape, pads = random_pad_case(rng, mode)
        t, m = pair(shape, seed=i)
        want, got = torch.nn.functional.pad(t, pads, mode=mode), F.pad(m, pads, mode=mode)
        assert tuple(got.shape) == tuple(want.shape), (shape, pads)
        close(got, want)
        g = np.random.default_rng(i + 1).uniform(-1, 1, tuple(want.shape))
        want.backward(torch.tensor(g))
        got.backward(ampc.tensor(g))
        close(m.grad, t.grad, atol=1e-5, rtol=1e-5)  # torch sums in fp32, ampc in double


@pytest.mark.parametrize("mode", MODES)
def test_pad_non_contiguous_and_dtypes(mode):
    t, m = pair((3, 4, 6), grad=False)
    tt, mt = t.transpose(1, 2), m.transpose(1, 2)
    assert not mt.is_contiguous()
    close(F.pad(mt, (2, 1), mode=mode), torch.nn.functional.pad(tt, (2, 1), mode=mode))
    ti = torch.arange(24).view(2, 3, 4)
    mi = ampc.arange(24).view(2, 3, 4)
    want = torch.nn.functional.pad(ti, (1, 2, 2, 0), mode=mode) if mode != "constant" else \
        torch.nn.functional.pad(ti, (1, 2, 2, 0), value=7)
    got = F.pad(mi, (1, 2, 2, 0), mode=mode) if mode != "constant" else F.pad(mi, (1, 2, 2, 0), value=7)
    assert got.dtype == ampc.int64
    assert got.tolist() == want.tolist()
    for dt in ("float16", "bfloat16"):
        t, m = pair((2, 3, 5), dtype=dt)
        want, got = torch.nn.functional.pad(t, (2, 3), mode=mode), F.pad(m, (2, 3), mode=mode)
        assert str(got.dtype) == str(want.dtype).replace("torch", "ampc")
        close(got, want, atol=0)
        want.sum().backward()
        got.sum().backward()
        assert m.grad.dtype == m.dtype
        close(m.grad, t.grad, atol=1e-2, rtol=1e-2)


def test_pad_constant_values_and_bool():
    b = ampc.tensor([[True, False]])
    assert F.pad(b, (1, 1), value=1).tolist() == [[True, True, False, True]]
    ti = torch.arange(6).view(1, 2, 3)
    assert F.pad(ampc.arange(6).view(1, 2, 3), (1, 1), value=2.5).tolist() == \
        torch.nn.functional.pad(ti, (1, 1), value=2.5).tolist()


def test_pad_zero_size():
    t, m = pair((0, 3, 4))
    for mode in ("reflect", "replicate", "constant"):
        got = F.pad(m, (1, 2), mode=mode)
        assert tuple(got.shape) == (0, 3, 7)
        got.sum().backward()
        assert tuple(m.grad.shape) == (0, 3, 4)
    t, m = pair((2, 3, 4))
    got = F.pad(m, (-4, 0))
    assert tuple(got.shape) == (2, 3, 0)
    got.sum().backward()
    assert float(m.grad.abs().sum()) == 0.0
    assert tuple(F.pad(ampc.zeros(2, 0, 3), (1, 1, 2, 0)).shape) == (2, 2, 5)


ERRORS = [
    ((2, 3, 4), (1, 4), "reflect"), ((2, 3, 4, 4), (1, 1, 4, 1), "reflect"),
    ((2, 3, 4, 4, 4), (1, 1, 1, 1, 4, 1), "reflect"), ((2, 3, 4), (-3, -2), "reflect"),
    ((2, 3, 4), (-3, -2), "replicate"), ((2, 3, 4), (-3, -2), "circular"), ((2, 3, 4), (0, 5), "circular"),
    ((3,), (1, 1), "replicate"), ((2, 3, 4), (1, 1), "bogus"), ((2, 3, 0), (1, 1), "reflect"),
    ((2, 0, 4), (1, 1), "replicate"), ((2, 3, 4), (1,), "constant"), ((2, 3), (1, 1, 1, 1, 1, 1), "constant"),
    ((2, 3, 4), (-3, -2), "constant"),
]


@pytest.mark.parametrize("shape,pads,mode", ERRORS)
def test_pad_errors_match_torch(shape, pads, mode):
    with pytest.raises(Exception) as want:
        torch.nn.functional.pad(torch.zeros(shape), pads, mode=mode)
    with pytest.raises(Exception) as got:
        F.pad(ampc.zeros(shape), pads, mode=mode)
    assert type(got.value).__name__ == type(want.value).__name__
    if mode != "constant" or len(pads) % 2:  # torch's constant crop error comes from its narrow()
        assert str(got.value) == str(want.value)


def test_pad_value_with_other_modes_and_names():
    with pytest.raises(RuntimeError, match="doesn't take in value"):
        F.pad(ampc.zeros(1, 2, 3), (1, 1), mode="reflect", value=1.0)
    x = ampc.zeros(1, 2, 3, requires_grad=True)
    assert F.pad(x, (1, 1), mode="reflect").grad_fn.name() == "ReflectionPad1DBackward0"
    assert F.pad(x, (1, 1, 1, 1), mode="replicate").grad_fn.name() == "ReplicationPad2DBackward0"
    assert F.pad(x, (1, 1)).grad_fn.name() == "ConstantPadNdBackward0"


def test_pad_constant_double_backward():
    t, m = pair((2, 3), dtype="float64")
    for lib, x in ((torch, t), (ampc, m)):
        y = lib.nn.functional.pad(x, (1, 2, -1, 1), value=3.0)
        (g,) = lib.autograd.grad((y * y).sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad((g * g).sum(), x)
        x.gg = gg
    close(m.gg, t.gg)


def test_pad_modules_repr_and_checks():
    assert repr(ampc.nn.ReflectionPad2d(2)) == repr(torch.nn.ReflectionPad2d(2))
    assert repr(ampc.nn.ConstantPad3d((1, 2, 3, 4, 5, 6), 1.5)) == repr(torch.nn.ConstantPad3d((1, 2, 3, 4, 5, 6), 1.5))
    assert repr(ampc.nn.ZeroPad1d(3)) == repr(torch.nn.ZeroPad1d(3))
    with pytest.raises(ValueError, match=r"expected 3D or 4D input \(got 2D input\)"):
        ampc.nn.CircularPad2d(1)(ampc.zeros(2, 3))


# ---------------------------------------------------------------- conv3d, transposed convolutions

def _conv_pair(lib, kind, x, w, b, kw):
    fn = getattr(lib.nn.functional, kind)
    return fn(x, w, b, **kw)


CONV_GRID = [
    # function, x shape, weight shape, kwargs
    ("conv3d", (2, 4, 5, 6, 5), (6, 2, 3, 2, 3), dict(stride=(2, 1, 2), padding=(1, 0, 2), dilation=(1, 2, 1), groups=2)),
    ("conv3d", (1, 3, 3, 4, 5), (2, 3, 1, 1, 1), dict()),
    ("conv3d", (3, 2, 4, 4), (2, 3, 2, 2, 2), dict(padding="same")),
    ("conv_transpose1d", (2, 4, 6), (4, 3, 3), dict(stride=3, padding=1, output_padding=2, dilation=1)),
    ("conv_transpose1d", (2, 6, 5), (6, 2, 2), dict(groups=3, dilation=2)),
    ("conv_transpose2d", (2, 4, 3, 5), (4, 2, 3, 2), dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2),
                                                          groups=2, dilation=(2, 1))),
    ("conv_transpose2d", (3, 4, 4), (3, 2, 3, 3), dict(stride=2)),
    ("conv_transpose3d", (1, 2, 3, 2, 3), (2, 4, 2, 3, 2), dict(stride=2, padding=(0, 1, 1), output_padding=(1, 0, 1))),
]


@pytest.mark.parametrize("kind,xs,ws,kw", CONV_GRID)
def test_conv_grid_against_torch(kind, xs, ws, kw):
    out_ch = ws[0] if kind == "conv3d" else ws[1] * kw.get("groups", 1)
    (tx, mx), (tw, mw), (tb, mb) = pair(xs, 1), pair(ws, 2), pair((out_ch,), 3)
    want, got = _conv_pair(torch, kind, tx, tw, tb, kw), _conv_pair(ampc, kind, mx, mw, mb, kw)
    assert tuple(got.shape) == tuple(want.shape)
    close(got, want, atol=1e-5, rtol=1e-4)
    g = np.random.default_rng(4).uniform(-1, 1, tuple(want.shape)).astype(np.float32)
    want.backward(torch.tensor(g))
    got.backward(ampc.tensor(g))
    for m, t in ((mx, tx), (mw, tw), (mb, tb)):
        close(m.grad, t.grad, atol=1e-4, rtol=1e-4)
    assert got.grad_fn.name() == "ConvolutionBackward0"


def test_conv_non_contiguous_and_zero_batch():
    (tx, mx), (tw, mw) = pair((2, 5, 4, 3, 3), 1), pair((3, 2, 2, 2, 2), 2)
    txp, mxp = tx.transpose(1, 4), mx.transpose(1, 4)  # (2, 3, 4, 3, 5) -> channels 3
    close(F.conv_transpose3d(mxp, mw, stride=2), torch.nn.functional.conv_transpose3d(txp, tw, stride=2), atol=1e-5)
    x0 = ampc.zeros(0, 3, 4, 4, 4, requires_grad=True)
    w = ampc.randn(2, 3, 2, 2, 2, requires_grad=True)
    y = F.conv3d(x0, w)
    assert tuple(y.shape) == (0, 2, 3, 3, 3)
    y.sum().backward()
    assert float(w.grad.abs().sum()) == 0.0 and tuple(x0.grad.shape) == (0, 3, 4, 4, 4)
    yt = F.conv_transpose2d(ampc.zeros(0, 3, 2, 2), ampc.randn(3, 4, 3, 3), stride=2)
    assert tuple(yt.shape) == (0, 4, 5, 5)


def test_conv_transpose_output_size_and_errors():
    torch.manual_seed(0)
    ampc.manual_seed(0)
    tm, mm = torch.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1), ampc.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1)
    mm.load_state_dict({k: ampc.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    (tx, mx) = pair((1, 3, 4, 4), 5)
    for size in ([8, 8], (1, 2, 7, 8), [7, 7]):
        close(mm(mx, output_size=size), tm(tx, output_size=size), atol=1e-5)
    with pytest.raises(ValueError) as got:
        mm(mx, output_size=[9, 9])
    with pytest.raises(ValueError) as want:
        tm(tx, output_size=[9, 9])
    assert str(got.value) == str(want.value).replace("torch.Size", "ampc.Size") or "valid sizes range" in str(got.value)
    with pytest.raises(RuntimeError, match="output padding must be smaller than either stride or dilation"):
        F.conv_transpose2d(ampc.zeros(1, 3, 4, 4), ampc.zeros(3, 2, 3, 3), output_padding=1)
    with pytest.raises(RuntimeError, match="expected input\\[1, 4, 4, 4\\] to have 3 channels, but got 4 channels"):
        F.conv_transpose2d(ampc.zeros(1, 4, 4, 4), ampc.zeros(3, 2, 3, 3))
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input size"):
        F.conv3d(ampc.zeros(1, 1, 2, 2, 2), ampc.zeros(1, 1, 3, 1, 1))
    assert repr(ampc.nn.ConvTranspose3d(2, 4, 3, stride=2, output_padding=1, groups=2, bias=False)) == \
        repr(torch.nn.ConvTranspose3d(2, 4, 3, stride=2, output_padding=1, groups=2, bias=False))


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_conv_padding_modes_match_torch(mode):
    torch.manual_seed(1)
    ampc.manual_seed(1)
    for dims in (1, 2, 3):
        cls = ("Conv1d", "Conv2d", "Conv3d")[dims - 1]
        tm = getattr(torch.nn, cls)(2, 3, 3, padding=2, padding_mode=mode)
        mm = getattr(ampc.nn, cls)(2, 3, 3, padding=2, padding_mode=mode)
        mm.load_state_dict({k: ampc.tensor(v.numpy()) for k, v in tm.state_dict().items()})
        tx, mx = pair((2, 2) + (5,) * dims, dims)
        close(mm(mx), tm(tx), atol=1e-5)
        assert repr(mm) == repr(tm)


def test_conv_autocast_lower_precision():
    (_, mx), (_, mw) = pair((1, 2, 3, 3, 3), 1), pair((2, 2, 2, 2, 2), 2)
    with ampc.autocast("cpu", dtype=ampc.bfloat16):
        assert F.conv3d(mx, mw).dtype == ampc.bfloat16
        assert F.conv_transpose3d(mx, mw).dtype == ampc.bfloat16


# ---------------------------------------------------------------- fold / unfold, shuffles

FOLD_ERRORS = [
    lambda lib: lib.nn.functional.unfold(lib.zeros(2, 3, 4, 5, 6), 2),
    lambda lib: lib.nn.functional.unfold(lib.zeros(2, 3, 4, 5), 5),
    lambda lib: lib.nn.functional.fold(lib.zeros(1, 12, 8), (4, 5), (2, 3)),
    lambda lib: lib.nn.functional.fold(lib.zeros(1, 13, 9), (4, 5), (2, 3)),
    lambda lib: lib.nn.functional.fold(lib.zeros(1, 2, 12, 9), (4, 5), (2, 3)),
    lambda lib: lib.nn.functional.pixel_shuffle(lib.zeros(2, 3), 2),
    lambda lib: lib.nn.functional.pixel_shuffle(lib.zeros(2, 3, 4, 4), 2),
    lambda lib: lib.nn.functional.pixel_unshuffle(lib.zeros(2, 4, 3, 4), 2),
    lambda lib: lib.nn.functional.channel_shuffle(lib.zeros(2, 3, 4), 2),
]


@pytest.mark.parametrize("k", range(len(FOLD_ERRORS)))
def test_fold_shuffle_errors_match_torch(k):
    with pytest.raises(Exception) as want:
        FOLD_ERRORS[k](torch)
    with pytest.raises(Exception) as got:
        FOLD_ERRORS[k](ampc)
    assert type(got.value).__name__ == type(want.value).__name__
    assert str(got.value) == str(want.value)


def test_unfold_fold_grads_and_double_backward():
    t, m = pair((2, 3, 5, 4), dtype="float64")
    for lib, x in ((torch, t), (ampc, m)):
        cols = lib.nn.functional.unfold(x, (2, 3), padding=(1, 0), stride=(1, 2))
        y = lib.nn.functional.fold(cols * cols, (5, 4), (2, 3), padding=(1, 0), stride=(1, 2))
        (g,) = lib.autograd.grad((y * y).sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        x.res = (cols.grad_fn.name(), y.grad_fn.name(), y, g, gg)
    assert m.res[:2] == t.res[:2] == ("Im2ColBackward0", "Col2ImBackward0")
    for a, b in zip(m.res[2:], t.res[2:]):
        close(a, b, atol=1e-10)


# ---------------------------------------------------------------- interpolate

INTERP_MODES = [("nearest", None), ("nearest-exact", None), ("linear", False), ("linear", True), ("bicubic", False),
                ("bicubic", True), ("area", None), ("bilinear-aa", False), ("bicubic-aa", True)]


@pytest.mark.parametrize("mode,align", INTERP_MODES)
def test_interpolate_random_against_torch(mode, align):
    rng = np.random.default_rng(INTERP_MODES.index((mode, align)))
    for i in range(12):
        aa = mode.endswith("-aa")
        dims = 2 if mode.startswith("bi") else int(rng.integers(1, 4))
        shape = (int(rng.integers(1, 3)), int(rng.integers(1, 4))) + tuple(int(v) for v in rng.integers(1, 7, dims))
        name = mode.replace("-aa", "") if mode != "linear" else ("linear", "bilinear", "trilinear")[dims - 1]
        kw = dict(mode=name, antialias=True) if aa else dict(mode=name)
        if align is not None:
            kw["align_corners"] = align
        if i % 2 and mode != "area":
            kw["scale_factor"] = tuple(float(v) for v in rng.choice([0.5, 0.7, 1.0, 1.3, 2.0, 2.5, 3.0], dims))
            if aa and any(int(shape[2 + j] * kw["scale_factor"][j]) < 2 for j in range(dims)):
                kw["scale_factor"] = (2.0,) * dims
            if mode in ("nearest", "linear") and i % 4 == 1:
                kw["recompute_scale_factor"] = True
        else:
            # antialias: torch's CPU kernel returns a constant column for an output width of 1 (a torch bug:
            # arange(6).view(1, 1, 3, 2) to (4, 1) gives 0.5 everywhere), so sizes start at 2 there
            kw["size"] = tuple(int(v) for v in rng.integers(2 if aa else 1, 9, dims))
        t, m = pair(shape, seed=i, dtype="float64")
        try:
            want = torch.nn.functional.interpolate(t, **kw)
        except RuntimeError:  # an output size of 0 from a scale factor: both refuse
            with pytest.raises(RuntimeError):
                F.interpolate(m, **kw)
            continue
        got = F.interpolate(m, **kw)
        assert tuple(got.shape) == tuple(want.shape), (shape, kw)
        close(got, want, atol=1e-10, rtol=1e-10)
        g = np.random.default_rng(i + 100).uniform(-1, 1, tuple(want.shape))
        want.backward(torch.tensor(g))
        got.backward(ampc.tensor(g))
        close(m.grad, t.grad, atol=1e-10, rtol=1e-10)


INTERP_ERRORS = [
    dict(size=(2, 3), scale_factor=2), dict(), dict(size=(2, 3, 4)), dict(scale_factor=(2, 3, 4)),
    dict(size=2, mode="linear"), dict(size=2, mode="trilinear"), dict(size=2, mode="nearest", align_corners=True),
    dict(size=2, mode="bogus"), dict(size=(2, 3), recompute_scale_factor=True),
    dict(size=2, mode="bilinear", antialias=True, align_corners=None) if False else dict(size=(2, 3), mode="nearest",
                                                                                         antialias=True),
]


@pytest.mark.parametrize("k", range(len(INTERP_ERRORS)))
def test_interpolate_errors_match_torch(k):
    with pytest.raises(Exception) as want:
        torch.nn.functional.interpolate(torch.zeros(1, 2, 3, 4), **INTERP_ERRORS[k])
    with pytest.raises(Exception) as got:
        F.interpolate(ampc.zeros(1, 2, 3, 4), **INTERP_ERRORS[k])
    assert type(got.value).__name__ == type(want.value).__name__
    assert str(got.value) == str(want.value)


def test_interpolate_dtypes_names_and_modules():
    for dt in ("float16", "bfloat16"):
        t, m = pair((1, 2, 3, 4), dtype=dt)
        want = torch.nn.functional.interpolate(t, scale_factor=2, mode="bilinear")
        got = F.interpolate(m, scale_factor=2, mode="bilinear")
        assert got.dtype == m.dtype
        close(got, want, atol=1e-2, rtol=1e-2)
    x = ampc.zeros(1, 2, 3, 4, requires_grad=True)
    assert F.interpolate(x, scale_factor=2).grad_fn.name() == "UpsampleNearest2DBackward0"
    assert F.interpolate(x, scale_factor=2, mode="bicubic").grad_fn.name() == "UpsampleBicubic2DBackward0"
    for mk in (lambda M: M.nn.Upsample(scale_factor=2, mode="bilinear"), lambda M: M.nn.Upsample(size=(3, 4)),
               lambda M: M.nn.UpsamplingBilinear2d(scale_factor=2)):
        assert repr(mk(ampc)) == repr(mk(torch))
