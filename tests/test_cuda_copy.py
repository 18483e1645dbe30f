"""CUDA COPY and FILL (cuda_copy.cu) against the CPU backend, bit for bit: casts between every
dtype pair (fp16/bf16 rounding, overflow to inf, subnormals, NaN payloads, float -> integer at and
beyond the integer's range), copies on the device between non-contiguous, broadcast, misaligned,
0-dim and empty tensors, host <-> device transfers with strided and broadcast sources and strided
destinations (the elements between them must stay untouched), and fills of every dtype with
values that need converting.

Each case builds the same tensors on the CPU and on the device from one NumPy array and compares
the device result, copied back, with the CPU backend's result. Without a GPU the cases skip;
AMPC_TEST_CUDA_AS_CPU=1 runs the "cuda" side on the CPU (a dry run of the test logic)."""
import ml_dtypes
import numpy as np
import pytest

import ampc
from helpers import bits, numpy_copy, on

DTYPES = ["float32", "float16", "bfloat16", "float64", "int64", "int32", "uint8", "bool"]
FLOATS = ["float32", "float16", "bfloat16", "float64"]
NP = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float64": np.float64,
      "int64": np.int64, "int32": np.int32, "uint8": np.uint8, "bool": np.bool_}
SHAPE = (37, 29)


def dt(name):
    return getattr(ampc, name)


def assert_identical(got, expect, what, nan_bits=True):
    """Same dtype, shape and bits (with nan_bits=False, NaNs need only be in the same places)."""
    assert got.dtype == expect.dtype, f"{what}: dtype {got.dtype} != {expect.dtype}"
    assert tuple(got.shape) == tuple(expect.shape), f"{what}: shape {tuple(got.shape)} != {tuple(expect.shape)}"
    g, e = bits(numpy_copy(got)), bits(numpy_copy(expect))
    if not nan_bits and got.dtype in (ampc.float32, ampc.float16, ampc.bfloat16, ampc.float64):
        gnan = np.isnan(np.atleast_1d(numpy_copy(got)).astype(np.float64))
        enan = np.isnan(np.atleast_1d(numpy_copy(expect)).astype(np.float64))
        np.testing.assert_array_equal(gnan, enan, err_msg=f"{what}: NaN positions")
        g, e = g[~enan], e[~enan]
    bad = np.flatnonzero(g != e)
    assert bad.size == 0, (f"{what}: {bad.size} of {g.size} elements differ; first at {bad[0]}: "
                           f"got bits {int(g[bad[0]]):#x}, expected {int(e[bad[0]]):#x}")


def pattern(bits_list, np_dtype):
    return np.array(bits_list, dtype={4: np.uint32, 8: np.uint64}[np.dtype(np_dtype).itemsize]).view(np_dtype)


# ---------------------------------------------------------------------------- cast sources

F32_NANS = pattern([0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FA00000, 0xFF812345, 0x7FFFFFFF, 0x7FC01000], np.float32)
F64_NANS = pattern([0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001, 0x7FF4000000000000,
                    0xFFF8000000000123, 0x7FFFFFFFFFFFFFFF, 0x7FF8002000000000], np.float64)
# in range for every integer type (no undefined float -> integer conversions)
IN_RANGE = [0.0, -0.0, 0.4, -0.6, 1.0, -1.0, 3.7, -3.7, 127.5, 128.0, 255.0, 254.9, 65504.0, 65519.99, 65520.0,
            -65520.0, 1.0 + 2 ** -11, 1.0 + 3 * 2 ** -11, 1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, 6.1035156e-05,
            6.0975552e-05, 5.9604645e-08, 2.9802322e-08, 2.9802326e-08, 1e-45, 1e-39, 16777217.0, 2147483520.0,
            -2147483648.0]
# beyond an integer type's range: C leaves the conversion undefined; the GPU copies x86's answer
OUT_OF_RANGE = [2.0 ** 31, -2.0 ** 31 - 256, 2.0 ** 40, -2.0 ** 62, 2.0 ** 63, -2.0 ** 63, 1e19, -1e19, 3.4e38,
                -3.4e38, np.inf, -np.inf]


def cast_source(dtype, seed=0, with_out_of_range=False):
    """Values of `dtype` that exercise every rounding decision of the casts from it."""
    rng = np.random.default_rng(seed)
    extra = OUT_OF_RANGE if with_out_of_range else []
    if dtype == "float32":
        random_bits = rng.integers(0, 2 ** 32, 1 << 14, dtype=np.uint64).astype(np.uint32).view(np.float32)
        if not with_out_of_range:  # random patterns include huge values and NaNs
            random_bits = random_bits[np.abs(random_bits) < 2.0 ** 31]
        dense = rng.uniform(-70000, 70000, 4096).astype(np.float32)
        small = rng.uniform(-1e-4, 1e-4, 4096).astype(np.float32)
        return np.concatenate([np.array(IN_RANGE + extra, np.float32), random_bits, dense, small])
    if dtype == "float64":
        mant = rng.uniform(1, 2, 1 << 13) * rng.choice([-1, 1], 1 << 13)
        spread = mant * 2.0 ** rng.integers(-150, 31, 1 << 13)  # fp32/fp16 range, subnormals included
        ties = (np.arange(1, 2049) + 0.5).astype(np.float64) * 2.0 ** -11  # fp16/bf16 ties after rounding to f32
        vals = IN_RANGE + [2.0 ** 53 + 1, 1e-320, 1e300 if with_out_of_range else 1e30] + extra
        return np.concatenate([np.array(vals, np.float64), spread, ties, rng.uniform(-300, 300, 4096)])
    if dtype in ("float16", "bfloat16"):
        every = np.arange(65536, dtype=np.uint16).view(NP[dtype])
        if not with_out_of_range:  # bf16 reaches 3.4e38: keep to values every integer type holds
            with np.errstate(invalid="ignore"):
                every = every[np.abs(every.astype(np.float32)) < 2.0 ** 31]
        return every
    if dtype == "int64":
        info = np.iinfo(np.int64)
        vals = [0, 1, -1, 255, 256, -129, 2 ** 24 + 1, 2 ** 31, -2 ** 31 - 1, 2 ** 53 + 1, info.max, info.min, 65504, 65520]
        return np.concatenate([np.array(vals, np.int64), rng.integers(info.min, info.max, 4096, dtype=np.int64),
                               rng.integers(-70000, 70000, 4096)])
    if dtype == "int32":
        info = np.iinfo(np.int32)
        vals = [0, 1, -1, 255, 256, -129, 2 ** 24 + 1, info.max, info.min, 65504, 65520]
        return np.concatenate([np.array(vals, np.int32), rng.integers(info.min, info.max, 4096, dtype=np.int32)])
    if dtype == "uint8":
        return np.arange(256, dtype=np.uint8)
    return np.array([True, False, True, True, False])


def nan_values(dtype):
    return {"float32": F32_NANS, "float64": F64_NANS,
            "float16": np.array([0x7E00, 0xFE00, 0x7C01, 0x7D55, 0x7FFF], np.uint16).view(np.float16),
            "bfloat16": np.array([0x7FC0, 0xFFC0, 0x7F81, 0x7FAA, 0x7FFF], np.uint16).view(ml_dtypes.bfloat16)}[dtype]


@pytest.mark.parametrize("src", DTYPES)
@pytest.mark.parametrize("dst", DTYPES)
def test_cast_every_pair(cuda, src, dst):
    """The device cast of every value a cast from `src` can meet, contiguous and strided."""
    arr = cast_source(src)
    expect = on("cpu", arr).to(dt(dst))
    assert_identical(on(cuda, arr).to(dt(dst)), expect, f"{src} -> {dst}", nan_bits=False)
    # strided and misaligned sources and destinations (the general kernel)
    wide = np.repeat(arr, 2)
    assert_identical(on(cuda, wide)[::2].to(dt(dst)), expect, f"{src}[::2] -> {dst}", nan_bits=False)
    out = ampc.zeros(arr.size + 1, dtype=dt(dst), device=cuda)[1:]
    out.copy_(on(cuda, arr))
    assert_identical(out, expect, f"{src} -> misaligned {dst}", nan_bits=False)


@pytest.mark.parametrize("src", FLOATS)
@pytest.mark.parametrize("dst", DTYPES)
def test_cast_nan_payloads(cuda, src, dst):
    """NaNs keep their sign and payload bits as on the CPU (quietened through float <-> double)."""
    arr = nan_values(src)
    assert_identical(on(cuda, arr).to(dt(dst)), on("cpu", arr).to(dt(dst)), f"NaN {src} -> {dst}")


@pytest.mark.parametrize("src", FLOATS)
@pytest.mark.parametrize("dst", ["int64", "int32", "uint8", "bool"])
def test_cast_float_to_int_out_of_range(cuda, src, dst):
    """Float -> integer beyond the range (and inf): undefined in C; the GPU gives what the x86-64
    CPU backend gives (INT64_MIN, wrapped to the width)."""
    arr = cast_source(src, 1, with_out_of_range=True)
    assert_identical(on(cuda, arr).to(dt(dst)), on("cpu", arr).to(dt(dst)), f"{src} -> {dst} out of range",
                     nan_bits=False)


@pytest.mark.parametrize("pair", [("float32", "float16"), ("float32", "bfloat16"), ("float16", "float32"),
                                  ("bfloat16", "float32"), ("float32", "float32"), ("float64", "float32"),
                                  ("int64", "float32"), ("uint8", "float32")])
def test_cast_large_vectorised(cuda, pair):
    src, dst = pair
    n = (1 << 20) + 3
    rng = np.random.default_rng(5)
    if src in ("float16", "bfloat16"):
        arr = rng.integers(0, 65536, n, dtype=np.uint64).astype(np.uint16).view(NP[src])
    elif src == "float32":
        arr = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    elif src in ("int64", "uint8"):
        arr = rng.integers(0, 200, n).astype(NP[src])
    else:
        arr = rng.standard_normal(n).astype(NP[src]) * 1000
    expect = on("cpu", arr).to(dt(dst))
    x = on(cuda, arr)
    assert_identical(x.to(dt(dst)), expect, f"{src} -> {dst} large", nan_bits=src != "float64")
    assert_identical(x[1:].to(dt(dst)), on("cpu", arr[1:]).to(dt(dst)), f"{src} -> {dst} large misaligned",
                     nan_bits=src != "float64")


# ---------------------------------------------------------------------------- copies on the device

def device_copy_cases(a, dtype):
    """(name, fn(device) -> result tensor) for copies whose source and destination are both on the
    device given to fn (the CPU for the reference). dst_dtype None: the source's dtype."""
    flat = a.reshape(-1)

    def into(dst_shape, dst_dtype, view, src_fn):
        def run(d):
            base = ampc.zeros(*dst_shape, dtype=dst_dtype or dt(dtype), device=d)
            view(base).copy_(src_fn(d))
            return base
        return run

    f16, f32 = ampc.float16, ampc.float32
    return [
        ("transposed -> contiguous", lambda d: on(d, a.T).t().contiguous()),
        ("transposed -> fp16", lambda d: on(d, a.T).t().to(f16)),
        ("contiguous -> transposed view", into((29, 37), None, lambda b: b.t(), lambda d: on(d, a))),
        ("contiguous -> sliced view, cast", into((37, 58), f16, lambda b: b[:, 1::2], lambda d: on(d, a))),
        ("row broadcast", into(SHAPE, None, lambda b: b, lambda d: on(d, a[3]))),
        ("column broadcast, cast", into(SHAPE, f32, lambda b: b, lambda d: on(d, a[:, 4:5]))),
        ("expanded source", into(SHAPE, None, lambda b: b, lambda d: on(d, a[0]).expand(*SHAPE))),
        ("0-dim -> matrix", into(SHAPE, f16, lambda b: b, lambda d: on(d, a[2, 2]))),
        ("0-dim -> 0-dim", lambda d: on(d, a[1, 1]).to(f32)),
        ("misaligned same dtype", into((flat.size + 1,), None, lambda b: b[1:], lambda d: on(d, flat))),
        ("misaligned cast", into((flat.size + 1,), f16, lambda b: b[1:], lambda d: on(d, flat)[:])),
        ("permuted 3-d", lambda d: on(d, a.reshape(37, 29, 1)).permute(2, 1, 0).contiguous()),
        ("clone", lambda d: on(d, a).clone()),
        ("empty", lambda d: on(d, a[:0]).to(f16)),
    ]


@pytest.mark.parametrize("dtype", DTYPES)
def test_copy_on_device(cuda, dtype):
    a = cast_source(dtype)[: 37 * 29]
    if a.size < 37 * 29:
        a = np.resize(a, 37 * 29)
    a = a.reshape(SHAPE)
    for name, fn in device_copy_cases(a, dtype):
        expect = fn("cpu")
        got = fn(cuda)
        assert got.device.type == ("cuda" if cuda == "cuda" else "cpu"), name
        assert_identical(got, expect, f"{dtype} {name}", nan_bits=False)


# ---------------------------------------------------------------------------- host <-> device

@pytest.mark.parametrize("dtype", DTYPES)
def test_host_to_device(cuda, dtype):
    a = np.resize(cast_source(dtype), 37 * 29).reshape(SHAPE)
    c = on("cpu", a)
    other = "float32" if dtype != "float32" else "float16"
    cases = [
        ("contiguous", lambda: c.to(cuda), c),
        ("transposed source", lambda: c.t().to(cuda), c.t().contiguous()),
        ("sliced source", lambda: c[::2, 1::3].to(cuda), c[::2, 1::3].contiguous()),
        ("expanded source", lambda: c[:, :1].expand(*SHAPE).to(cuda), c[:, :1].expand(*SHAPE).contiguous()),
        ("0-dim", lambda: c[3, 3].to(cuda), c[3, 3].clone()),
        ("with a cast", lambda: c.to(device=cuda, dtype=dt(other)), c.to(dt(other))),
        ("transposed with a cast", lambda: c.t().to(device=cuda, dtype=dt(other)), c.t().to(dt(other))),
        ("empty", lambda: c[:0].to(cuda), c[:0].clone()),
    ]
    for name, run, expect in cases:
        got = run()
        assert_identical(got, expect, f"{dtype} host -> device {name}")
    # into strided device destinations: the elements in between stay as they were
    for name, view, src in [("sliced", lambda b: b[:, ::2], c), ("transposed", lambda b: b.t(), c),
                            ("broadcast source", lambda b: b[:, 1::2], c[0]), ("cast", lambda b: b[:, ::2], c.to(dt(other)))]:
        ref = ampc.full((37, 58), 7, dtype=dt(dtype)) if name != "transposed" else ampc.full((29, 37), 7, dtype=dt(dtype))
        dev = on(cuda, numpy_copy(ref))
        view(ref).copy_(src)
        view(dev).copy_(src)
        assert_identical(dev, ref, f"{dtype} host -> strided device {name}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_device_to_host(cuda, dtype):
    a = np.resize(cast_source(dtype), 37 * 29).reshape(SHAPE)
    c, g = on("cpu", a), on(cuda, a)
    other = "float32" if dtype != "float32" else "float16"
    cases = [
        ("contiguous", g.cpu(), c),
        ("transposed source", g.t().cpu(), c.t().contiguous()),
        ("sliced source", g[::2, 1::3].cpu(), c[::2, 1::3].contiguous()),
        ("expanded source", g[:, :1].expand(*SHAPE).cpu(), c[:, :1].expand(*SHAPE).contiguous()),
        ("0-dim", g[3, 3].cpu(), c[3, 3].clone()),
        ("with a cast", g.to(device="cpu", dtype=dt(other)), c.to(dt(other))),
        ("transposed with a cast", g.t().to(device="cpu", dtype=dt(other)), c.t().to(dt(other))),
        ("empty", g[:0].cpu(), c[:0].clone()),
    ]
    for name, got, expect in cases:
        assert got.device.type == "cpu"
        assert_identical(got, expect, f"{dtype} device -> host {name}")
    # into strided host destinations
    for name, view, src_dev, src_cpu in [("sliced", lambda b: b[:, ::2], g, c), ("transposed", lambda b: b.t(), g, c),
                                         ("broadcast source", lambda b: b[:, 1::2], g[0], c[0]),
                                         ("cast", lambda b: b[:, ::2], g.to(dt(other)), c.to(dt(other)))]:
        shape = (29, 37) if name == "transposed" else (37, 58)
        ref, host = ampc.full(shape, 7, dtype=dt(dtype)), ampc.full(shape, 7, dtype=dt(dtype))
        view(ref).copy_(src_cpu)
        view(host).copy_(src_dev)
        assert_identical(host, ref, f"{dtype} device -> strided host {name}")
    # element reads
    gi, ci = g[5, 6].item(), c[5, 6].item()
    assert type(gi) is type(ci) and (gi == ci or (gi != gi and ci != ci)), f"{dtype} item"
    assert_identical(on("cpu", np.array(g[2].tolist(), dtype=NP[dtype])), c[2], f"{dtype} tolist")


def test_round_trip_every_dtype_large(cuda):
    for dtype in DTYPES:
        a = np.resize(cast_source(dtype), (1 << 20) + 7)
        assert_identical(on(cuda, a).cpu(), on("cpu", a), f"{dtype} round trip")


# ---------------------------------------------------------------------------- fill

FILL_VALUES = [0, 1, -1, 3.7, -3.7, 0.5, 255, 256, -129, 2 ** 31 - 1, -2 ** 31, 2 ** 63 - 1, -2 ** 63, 2 ** 53 + 1,
               1e10, 65504.0, 65520.0, 70000.0, 1.0078125, 1e-8, 3.4e38, float("nan"), float("inf"),
               float("-inf"), True, False, -0.0]


@pytest.mark.parametrize("dtype", DTYPES)
def test_fill(cuda, dtype):
    for value in FILL_VALUES:
        what = f"fill {dtype} {value!r}"
        try:
            expect = ampc.full(SHAPE, value, dtype=dt(dtype))
        except Exception as e:  # noqa: BLE001 - the device raises the same
            with pytest.raises(type(e)):
                ampc.full(SHAPE, value, dtype=dt(dtype), device=cuda)
            continue
        assert_identical(ampc.full(SHAPE, value, dtype=dt(dtype), device=cuda), expect, what)
        # views: sliced (the rest untouched), transposed, misaligned, 0-dim, empty, large
        base = np.resize(cast_source(dtype), 37 * 58).reshape(37, 58)
        for name, view in [("sliced", lambda b: b[:, 1::2]), ("transposed", lambda b: b.t()),
                           ("misaligned", lambda b: b.reshape(-1)[3:]), ("0-dim", lambda b: b[2, 2]),
                           ("empty", lambda b: b[:0]), ("row", lambda b: b[5])]:
            ref, dev = on("cpu", base), on(cuda, base)
            view(ref).fill_(value)
            view(dev).fill_(value)
            assert_identical(dev, ref, f"{what} {name}")
    big = ampc.empty((1 << 20) + 5, dtype=dt(dtype), device=cuda)
    for value in (0, 1, -3.7, True):
        try:
            expect = ampc.full(((1 << 20) + 5,), value, dtype=dt(dtype))
        except RuntimeError:  # -3.7 does not fit uint8 (torch refuses it too): the device refuses it alike
            with pytest.raises(RuntimeError, match="without overflow"):
                big.fill_(value)
            continue
        big.fill_(value)
        assert_identical(big, expect, f"fill {dtype} {value!r} large")
    big.zero_()
    assert_identical(big, ampc.zeros((1 << 20) + 5, dtype=dt(dtype)), f"zero_ {dtype} large")


def test_fill_from_device_scalar_and_factories(cuda):
    t = ampc.empty(5, 3, device=cuda)
    t.fill_(on(cuda, np.array(2.5, np.float32)))
    assert numpy_copy(t).tolist() == [[2.5] * 3] * 5
    assert numpy_copy(ampc.ones(4, dtype=ampc.int64, device=cuda)).tolist() == [1] * 4
    assert numpy_copy(ampc.zeros(2, 2, dtype=ampc.bfloat16, device=cuda)).astype(np.float32).tolist() == [[0.0, 0.0]] * 2
    z = ampc.zeros(3, 4, device=cuda)
    z.t().zero_()
    z[1].fill_(-1)
    assert numpy_copy(z).tolist() == [[0.0] * 4, [-1.0] * 4, [0.0] * 4]


def test_non_blocking_pinned_transfers(cuda):
    """non_blocking copies from and to pinned memory (left running on the stream), with a cast and
    a strided destination on the device side; exact after a synchronisation."""
    if cuda == "cpu":
        pytest.skip("pinned memory needs a GPU")
    a = np.resize(cast_source("float32"), 37 * 29).reshape(SHAPE)
    c = on("cpu", a)
    pinned = c.pin_memory()
    assert pinned.is_pinned()
    up = pinned.to(cuda, non_blocking=True)
    up_cast = pinned.to(device=cuda, dtype=ampc.float16, non_blocking=True)
    strided = ampc.zeros(37, 58, device=cuda)
    strided[:, ::2].copy_(pinned, non_blocking=True)
    back = ampc.zeros(*SHAPE).pin_memory()
    back.copy_(up, non_blocking=True)
    ampc.cuda.synchronize()
    assert_identical(up, c, "pinned -> device")
    assert_identical(up_cast, c.to(ampc.float16), "pinned -> device fp16", nan_bits=False)
    ref = ampc.zeros(37, 58)
    ref[:, ::2].copy_(c)
    assert_identical(strided, ref, "pinned -> strided device")
    assert_identical(back, c, "device -> pinned")
