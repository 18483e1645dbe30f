"""fp32 -> fp16 / bf16 rounding on the CPU, against references ampc did not write: NumPy's
astype(float16) bit for bit, and for bf16 both ml_dtypes and an exact rational nearest-even
reference. The samples are random 32-bit patterns, so they cover overflow, subnormals, NaN and inf
along with ordinary values; the edge cases are added by hand."""
from fractions import Fraction

import ml_dtypes
import numpy as np

import ampc

EDGES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 65504.0, 65519.99, 65520.0, -65520.0, 1e10, 6.1035156e-05,
                  6.0975552e-05, 5.9604645e-08, 2.9802322e-08, 2.9802326e-08, 1.0 + 2 ** -11, 1.0 + 3 * 2 ** -11,
                  3.3895314e38, 1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, 1e-45], dtype=np.float32)


def random_floats(n, seed):
    bits = np.random.default_rng(seed).integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    return np.concatenate([bits.view(np.float32), EDGES])


def test_fp32_to_fp16_bit_identical_to_numpy():
    x = random_floats(1 << 20, 0)
    # also a dense sample of the fp16 range, where rounding decisions happen
    x = np.concatenate([x, np.random.default_rng(1).uniform(-70000, 70000, 1 << 18).astype(np.float32),
                        np.random.default_rng(2).uniform(-1e-4, 1e-4, 1 << 18).astype(np.float32)])
    ours = ampc.from_numpy(x).half().numpy()
    ref = x.astype(np.float16)
    nan = np.isnan(ref)
    assert np.array_equal(np.isnan(ours), nan)
    assert np.array_equal(ours[~nan].view(np.uint16), ref[~nan].view(np.uint16))


def test_fp32_to_bf16_matches_ml_dtypes():
    x = random_floats(1 << 20, 3)
    ours = ampc.from_numpy(x).bfloat16().float().numpy()
    ref = x.astype(ml_dtypes.bfloat16).astype(np.float32)
    nan = np.isnan(ref)
    assert np.array_equal(np.isnan(ours), nan)
    assert np.array_equal(ours[~nan].view(np.uint32), ref[~nan].view(np.uint32))


def nearest_even_bf16(v):
    """Exact reference: the bf16 value nearest to v (a finite float32), ties to even mantissa."""
    if v == 0 or not np.isfinite(v):
        return np.float32(v)
    exact = Fraction(float(v))
    u = int(np.float32(v).view(np.uint32))
    lo_bits = u & 0xFFFF0000
    lo = np.uint32(lo_bits).view(np.float32)
    hi = np.uint32(lo_bits + 0x10000).view(np.float32)
    d_lo, d_hi = abs(exact - Fraction(float(lo))), abs(Fraction(float(hi)) - exact) if np.isfinite(hi) else None
    if d_hi is None:  # rounding up would overflow past the largest finite: decide by the inf rule
        return hi if (u & 0xFFFF) >= 0x8000 else lo
    if d_lo != d_hi:
        return lo if d_lo < d_hi else hi
    return lo if ((lo_bits >> 16) & 1) == 0 else hi


def test_fp32_to_bf16_exact_reference_on_ties_and_neighbours():
    rng = np.random.default_rng(4)
    base = rng.integers(0x00800000, 0x7F7F0000, 2000, dtype=np.uint64).astype(np.uint32) & 0xFFFF0000
    # exact ties, just below and just above them, with both parities of the kept bit
    bits = np.concatenate([base | 0x8000, base | 0x7FFF, base | 0x8001, (base | 0x10000) | 0x8000])
    x = np.concatenate([bits.view(np.float32), -bits.view(np.float32)])
    ours = ampc.from_numpy(x).bfloat16().float().numpy()
    ref = np.array([nearest_even_bf16(v) for v in x], dtype=np.float32)
    assert np.array_equal(ours.view(np.uint32), ref.view(np.uint32))


def test_overflow_to_inf_and_nan_kept():
    x = np.array([70000.0, -1e6, np.nan, np.inf], np.float32)
    h = ampc.from_numpy(x).half().float().numpy()
    assert h[0] == np.inf and h[1] == -np.inf and np.isnan(h[2]) and h[3] == np.inf
    b = ampc.from_numpy(np.array([3.4e38, np.nan], np.float32)).bfloat16().float().numpy()
    assert b[0] == np.inf and np.isnan(b[1])
