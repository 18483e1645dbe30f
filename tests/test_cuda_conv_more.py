"""CUDA against the CPU backend for issue 13's convolution kernels: the pad rows (cuda_nn_pad.cu),
VOL2COL/COL2VOL (cuda_nn_vol2col.cu, through conv3d and transposed convs), fold/unfold
(IM2COL/COL2IM) and the interpolate rows (cuda_nn_resample.cu). Same fresh random inputs on both
devices; outputs and gradients compared. The nn parity cases of tests/nn_parity/cases_conv.py run
on CUDA too (tests/test_cuda_nn_parity.py).

Runs only with a GPU or the emulator (fixture `cuda`)."""
import numpy as np
import pytest

import ampc
import ampc.nn.functional as F
from helpers import FLOATS, check_runs, run_on_cpu_and_cuda

TOL = {ampc.float64: 1e-9, ampc.float32: 2e-5, ampc.float16: 2e-3, ampc.bfloat16: 1.6e-2}
CONV_TOL = {ampc.float64: 1e-9, ampc.float32: 5e-3, ampc.float16: 4e-3, ampc.bfloat16: 3e-2}


@pytest.fixture
def rng():
    return np.random.default_rng(20261202)


PADS = [
    ((2, 3, 7), (2, 3), "reflect"), ((2, 3, 5, 6), (1, 2, 3, 0), "replicate"), ((1, 2, 3, 4, 5), (1, 1, 2, 0, 2, 1),
                                                                               "circular"),
    ((2, 3, 4, 5), (2, -1, 0, 3), "constant"), ((3, 4, 5), (4, 4, 3, 3), "reflect"), ((2, 1, 3, 2, 4), (3, 2, 1, 1, 0, 2),
                                                                                    "replicate"),
]


@pytest.mark.parametrize("shape,pads,mode", PADS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_pad(cuda, rng, shape, pads, mode, dtype):
    x = rng.standard_normal(shape)
    runs = run_on_cpu_and_cuda(lambda x: F.pad(x, pads, mode=mode, value=0.5 if mode == "constant" else None), [x],
                               dtype, cuda, grad=(0,), rng=rng)
    check_runs(runs, TOL[dtype], f"pad {mode}", exact_outputs=(0,))


def test_pad_integer_dtypes(cuda):
    for dt in (ampc.int64, ampc.int32, ampc.uint8, ampc.bool):
        x = (ampc.arange(24).view(2, 3, 4) % 5).to(dt)
        for mode in ("reflect", "replicate", "circular", "constant"):
            want = F.pad(x, (2, 1, 1, 2), mode=mode)
            got = F.pad(x.to(cuda), (2, 1, 1, 2), mode=mode).cpu()
            assert got.dtype == dt and got.tolist() == want.tolist(), (dt, mode)


CONVS = [
    ("conv3d", (2, 4, 5, 6, 5), (6, 2, 3, 2, 3), dict(stride=(2, 1, 2), padding=(1, 0, 2), dilation=(1, 2, 1), groups=2)),
    ("conv3d", (1, 3, 4, 4, 4), (2, 3, 3, 3, 3), dict(padding=1)),
    ("conv_transpose1d", (2, 4, 6), (4, 3, 3), dict(stride=3, padding=1, output_padding=2)),
    ("conv_transpose2d", (2, 4, 3, 5), (4, 2, 3, 2), dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2), groups=2,
                                                          dilation=(2, 1))),
    ("conv_transpose3d", (1, 2, 3, 2, 3), (2, 4, 2, 3, 2), dict(stride=2, padding=(0, 1, 1), output_padding=(1, 0, 1))),
]


@pytest.mark.parametrize("kind,xs,ws,kw", CONVS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_conv(cuda, rng, kind, xs, ws, kw, dtype):
    out_ch = ws[0] if kind == "conv3d" else ws[1] * kw.get("groups", 1)
    x, w, b = rng.standard_normal(xs), rng.standard_normal(ws) * 0.3, rng.standard_normal(out_ch)
    fn = getattr(F, kind)
    runs = run_on_cpu_and_cuda(lambda x, w, b: fn(x, w, b, **kw), [x, w, b], dtype, cuda, grad=(0, 1, 2), rng=rng)
    check_runs(runs, CONV_TOL[dtype], kind)


@pytest.mark.parametrize("dtype", FLOATS)
def test_unfold_fold(cuda, rng, dtype):
    x = rng.standard_normal((2, 3, 6, 5))
    runs = run_on_cpu_and_cuda(lambda x: F.unfold(x, (2, 3), dilation=(2, 1), padding=1, stride=(1, 2)), [x], dtype,
                               cuda, grad=(0,), rng=rng)
    check_runs(runs, TOL[dtype], "unfold", exact_outputs=(0,))
    c = rng.standard_normal((2, 18, 18))
    runs = run_on_cpu_and_cuda(lambda c: F.fold(c, (6, 5), (2, 3), dilation=(2, 1), padding=1, stride=(1, 2)), [c],
                               dtype, cuda, grad=(0,), rng=rng)
    check_runs(runs, TOL[dtype], "fold")


INTERP = [
    ((2, 3, 5), dict(scale_factor=2.5)), ((2, 3, 4, 5), dict(size=(7, 3), mode="nearest-exact")),
    ((1, 2, 3, 4, 6), dict(scale_factor=(2, 1.5, 0.5))), ((2, 3, 4), dict(size=11, mode="linear")),
    ((2, 3, 4, 5), dict(scale_factor=1.7, mode="bilinear")), ((2, 3, 5, 4), dict(size=(3, 8), mode="bilinear",
                                                                                 align_corners=True)),
    ((1, 2, 3, 4, 5), dict(scale_factor=(1.5, 2, 0.7), mode="trilinear")),
    ((2, 3, 4, 5), dict(scale_factor=2.3, mode="bicubic")), ((2, 3, 6, 5), dict(size=(4, 2), mode="area")),
]


@pytest.mark.parametrize("shape,kw", INTERP)
@pytest.mark.parametrize("dtype", FLOATS)
def test_interpolate(cuda, rng, shape, kw, dtype):
    x = rng.standard_normal(shape)
    runs = run_on_cpu_and_cuda(lambda x: F.interpolate(x, **kw), [x], dtype, cuda, grad=(0,), rng=rng)
    check_runs(runs, TOL[dtype], f"interpolate {kw}")
