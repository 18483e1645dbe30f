"""Helpers shared by the tests/test_cuda_*.py files that compare a CUDA result with the CPU
backend's: building the same values on both devices, and comparing within a dtype tolerance."""
import ml_dtypes
import numpy as np

import ampc

NP_OF = {ampc.float32: np.float32, ampc.float16: np.float16, ampc.bfloat16: ml_dtypes.bfloat16,
         ampc.float64: np.float64}


def tensor(a, dtype):
    """CPU tensor of the values of NumPy array a in dtype."""
    return ampc.tensor(np.asarray(a, dtype=np.float64).astype(NP_OF[dtype]), dtype=dtype)


def make(x, dtype, device, requires_grad=False):
    """A leaf on `device` holding the NumPy values x rounded to dtype (the same values on both
    devices). A copy: never shares memory with x, so in-place updates of one run (running stats)
    cannot leak into the other."""
    t = ampc.from_numpy(np.array(x, dtype=np.float64)).to(dtype).to(device)
    return t.requires_grad_(requires_grad) if requires_grad else t


def host(t):
    """float64 NumPy copy of a tensor on any device."""
    t = t.detach().cpu()
    if t.dtype in (ampc.float16, ampc.bfloat16):
        t = t.float()
    return np.array(t.numpy(), dtype=np.float64)


def check_close(got, want, tol, floor=0.1):
    """got (any device) matches the CPU result want: equal NaN and inf positions, and
    |got - want| <= tol * (|want| + floor * max|want|) elsewhere (the floor covers cancellation
    in gradients and the ulps of tiny values)."""
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert tuple(got.shape) == tuple(want.shape), (tuple(got.shape), tuple(want.shape))
    g, w = host(got), host(want)
    assert np.array_equal(np.isnan(g), np.isnan(w)), "NaN positions differ"
    inf = np.isinf(w)
    assert np.array_equal(g[inf], w[inf]) and not np.isinf(g[~inf]).any(), "infinities differ"
    fin = np.isfinite(w)
    if not fin.any():
        return
    scale = np.max(np.abs(w[fin]))
    err = np.abs(g[fin] - w[fin]) - tol * (np.abs(w[fin]) + floor * scale)
    assert err.max() <= 0, f"max excess error {err.max():.3g} (scale {scale:.3g})"


def close(got, want, tol, what=""):
    """Elementwise |got - want| <= tol * (|want| + mean |want|), equal non-finite values; tol 0:
    bit-equal (NaN equal to NaN)."""
    got, want = host(got), host(want)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    if tol == 0:
        assert np.array_equal(got, want, equal_nan=True), what
        return
    finite = np.isfinite(want)
    scale = np.abs(want[finite]).mean() if finite.any() else 0.0
    err = np.abs(got - want)
    ok = np.where(finite, err <= tol * (np.abs(want) + scale), (got == want) | (np.isnan(got) & np.isnan(want)))
    if not ok.all():
        i = np.unravel_index(np.argmin(ok), ok.shape)
        raise AssertionError(f"{what}: {int((~ok).sum())} of {ok.size} differ; at {i} got {got[i]!r} want {want[i]!r}")
