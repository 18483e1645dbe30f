"""CUDA elementwise kernels (cuda_elementwise.cu) against the CPU backend: every unary, binary,
comparison and where op of ops.def in every dtype the CPU kernel takes, over contiguous,
transposed, sliced, misaligned, broadcast, expanded, 0-dim, empty and large (>= 2^20) inputs,
scalar operands on either side, in-place and out= forms, gradients, and the deferred integer
division-by-zero error.

Arithmetic ops (+ - * /, floor/trunc division, remainder, min/max, sqrt, rounding, comparisons,
everything on integers) must agree with the CPU bit for bit (NaNs: same positions); transcendental
ones (exp, log, tanh, erf, pow, atan2, ...) within a tolerance per dtype, since CUDA's libm is not
glibc's. Each case builds the same inputs on both devices from one NumPy array.

Without a GPU the cases skip; AMPC_TEST_CUDA_AS_CPU=1 runs the "cuda" side on the CPU (a dry run
of the test logic)."""
import math
import operator
import zlib

import ml_dtypes
import numpy as np
import pytest

import ampc
from helpers import bits, numpy_copy, on

DTYPES = ["float32", "float16", "bfloat16", "float64", "int64", "int32", "uint8", "bool"]
FLOATS = ["float32", "float16", "bfloat16", "float64"]
NP = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float64": np.float64,
      "int64": np.int64, "int32": np.int32, "uint8": np.uint8, "bool": np.bool_}
# (rtol, atol) for the transcendental ops
TOL = {"float32": (1e-5, 1e-6), "float16": (1e-3, 1e-3), "bfloat16": (1e-2, 1e-2), "float64": (1e-12, 1e-14)}
SHAPE = (37, 29)  # 1073 elements: not a multiple of any block or pack size


# ---------------------------------------------------------------------------- inputs and checks

def sample(dtype, shape, seed, specials=True):
    """Random values of `dtype`; the first elements are special values (NaN, +-inf, +-0, the
    integer extremes) when there is room."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if dtype == "bool":
        flat = rng.random(n) > 0.5
    elif dtype == "uint8":
        flat = rng.integers(0, 256, n).astype(np.uint8)
        if specials and n >= 4:
            flat[:4] = [0, 1, 255, 128]
    elif dtype in ("int64", "int32"):
        info = np.iinfo(NP[dtype])
        flat = rng.integers(-12, 13, n).astype(NP[dtype])
        if specials and n >= 6:
            flat[:6] = [info.min, info.max, 0, -1, 1, info.min + 1]
    else:
        flat = rng.uniform(-4, 4, n)
        if specials and n >= 10:
            flat[:10] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -2.5, 1e-3, 250.0, -7.0]
        flat = flat.astype(NP[dtype])
    return flat.reshape(shape)


def nonzero(arr):
    """arr with zeros replaced by 3 (integer divisors)."""
    return np.where(arr == 0, np.asarray(3, arr.dtype), arr)


def assert_match(got, expect, exact, what):
    """got (any device) equals expect (CPU): dtype, shape, and values exactly (exact) or within
    the dtype's tolerance; NaNs in the same places."""
    assert got.dtype == expect.dtype, f"{what}: dtype {got.dtype} != {expect.dtype}"
    assert tuple(got.shape) == tuple(expect.shape), f"{what}: shape {tuple(got.shape)} != {tuple(expect.shape)}"
    g, e = numpy_copy(got), numpy_copy(expect)
    if g.dtype.kind in "biu":
        np.testing.assert_array_equal(g, e, err_msg=what)
        return
    gf, ef = np.atleast_1d(g.astype(np.float64)), np.atleast_1d(e.astype(np.float64))
    nan = np.isnan(ef)
    np.testing.assert_array_equal(np.isnan(gf), nan, err_msg=f"{what}: NaN positions")
    if exact:
        bad = np.flatnonzero(bits(g)[~nan] != bits(e)[~nan])
        assert bad.size == 0, f"{what}: {bad.size} elements differ, first: got {gf[~nan][bad[0]]!r} expected {ef[~nan][bad[0]]!r}"
    else:
        rtol, atol = TOL[str(expect.dtype).replace("ampc.", "")]
        np.testing.assert_allclose(gf[~nan], ef[~nan], rtol=rtol, atol=atol, err_msg=what)


def check(fn, cpu_args, dev_args, exact, what):
    """fn on the CPU inputs and on the device inputs: the same error class, or matching results
    (the device result must live on the device)."""
    try:
        expect = fn(*cpu_args)
    except Exception as e:  # noqa: BLE001 - the device must raise the same class
        with pytest.raises(type(e)):
            got = fn(*dev_args)
            numpy_copy(got)  # a deferred device error surfaces at the copy
        return None
    got = fn(*dev_args)
    # the result lives where the op ran: on the first input that is not a CPU scalar
    devices = [a.device for a in dev_args if isinstance(a, ampc.Tensor) and not (a.ndim == 0 and a.device.type == "cpu")]
    if devices:
        assert got.device == devices[0], f"{what}: result on {got.device}, inputs on {devices[0]}"
    assert_match(got, expect, exact, what)
    return got


# ---------------------------------------------------------------------------- unary ops

UNARY = {  # name: (function, exact for floating dtypes)
    "neg": (operator.neg, True), "abs": (ampc.abs, True), "exp": (ampc.exp, False), "log": (ampc.log, False),
    "sqrt": (ampc.sqrt, True), "rsqrt": (ampc.rsqrt, True), "reciprocal": (ampc.reciprocal, True),
    "sigmoid": (ampc.sigmoid, False), "tanh": (ampc.tanh, False), "relu": (ampc.relu, True),
    "gelu": (ampc.gelu, False), "gelu_tanh": (lambda x: ampc.gelu(x, approximate="tanh"), False),
    "silu": (ampc.silu, False), "softplus": (ampc.softplus, False),
    "softplus_beta": (lambda x: ampc.softplus(x, 2.0, 3.0), False),
    "sin": (ampc.sin, False), "cos": (ampc.cos, False), "erf": (ampc.erf, False), "sign": (ampc.sign, True),
    "floor": (ampc.floor, True), "ceil": (ampc.ceil, True), "round": (ampc.round, True),
    "round_decimals": (lambda x: ampc.round(x, decimals=2), True),
    "round_neg_decimals": (lambda x: ampc.round(x, decimals=-1), True),
    "logical_not": (ampc.logical_not, True), "isfinite": (ampc.isfinite, True), "isnan": (ampc.isnan, True),
    "isinf": (ampc.isinf, True), "clamp": (lambda x: ampc.clamp(x, -1.5, 2), True),
    "clamp_int_bounds": (lambda x: ampc.clamp(x, -3, 7), True), "clamp_min": (lambda x: ampc.clamp(x, min=0.25), True),
    "clamp_max": (lambda x: ampc.clamp(x, max=1), True), "square": (lambda x: x ** 2, True),
    "cube": (lambda x: x ** 3, True), "inv_square": (lambda x: x ** -2, True), "pow_half": (lambda x: x ** 0.5, True),
    "pow_neg_half": (lambda x: x ** -0.5, True), "pow_neg_one": (lambda x: x ** -1, True),
    "pow_2_5": (lambda x: x ** 2.5, False), "pow_5": (lambda x: x ** 5, False),
    "pow_0dim_exponent": (lambda x: x ** ampc.tensor(3), False),
}


def unary_layouts(dtype, dev, seed):
    """(name, cpu tensor, device tensor) pairs holding the same values in different layouts."""
    arr = sample(dtype, SHAPE, seed)
    yield "contiguous", on("cpu", arr), on(dev, arr)
    yield "transposed", on("cpu", arr.T).t(), on(dev, arr.T).t()
    wide = np.repeat(arr, 2, axis=1)
    yield "sliced", on("cpu", wide)[:, ::2], on(dev, wide)[:, ::2]
    flat = arr.reshape(-1)
    yield "misaligned", on("cpu", flat)[1:], on(dev, flat)[1:]  # dense but off the 16-byte grid
    yield "0-dim", on("cpu", arr[1, 2]), on(dev, arr[1, 2])
    yield "empty", on("cpu", arr[:0]), on(dev, arr[:0])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(cuda, name, dtype):
    fn, exact = UNARY[name]
    for layout, x_cpu, x_dev in unary_layouts(dtype, cuda, seed=zlib.crc32(name.encode()) % 1000):
        check(fn, (x_cpu,), (x_dev,), exact, f"{name} {dtype} {layout}")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int64", "uint8"])
def test_unary_large(cuda, dtype):
    arr = sample(dtype, ((1 << 20) + 3,), 7)
    x_cpu, x_dev = on("cpu", arr), on(cuda, arr)
    for name in ("neg", "abs", "relu", "exp", "sigmoid", "gelu", "isnan", "square", "clamp"):
        fn, exact = UNARY[name]
        check(fn, (x_cpu,), (x_dev,), exact, f"{name} {dtype} large")


def test_half_unary_every_value(cuda):
    """Every fp16 and bf16 bit pattern through the exact unary ops, and the transcendental ones."""
    for np_dtype in (np.float16, ml_dtypes.bfloat16):
        arr = np.arange(65536, dtype=np.uint16).view(np_dtype)
        x_cpu, x_dev = on("cpu", arr), on(cuda, arr)
        for name in ("neg", "abs", "relu", "floor", "ceil", "round", "sign", "sqrt", "rsqrt", "reciprocal",
                     "isfinite", "isnan", "isinf", "logical_not", "square", "exp", "log", "tanh", "sigmoid", "erf"):
            fn, exact = UNARY[name]
            check(fn, (x_cpu,), (x_dev,), exact, f"{name} every {np.dtype(np_dtype).name}")


# ---------------------------------------------------------------------------- binary ops

BINARY = {  # name: (function, exact for floating dtypes, integer divisor)
    "add": (ampc.add, True, False), "add_alpha": (lambda a, b: ampc.add(a, b, alpha=2), True, False),
    "add_alpha_fraction": (lambda a, b: ampc.add(a, b, alpha=0.3), True, False),
    "sub": (ampc.sub, True, False), "sub_alpha": (lambda a, b: ampc.sub(a, b, alpha=-3), True, False),
    "mul": (ampc.mul, True, False), "div": (ampc.div, True, True),
    "div_trunc": (lambda a, b: ampc.div(a, b, rounding_mode="trunc"), True, True),
    "div_floor": (lambda a, b: ampc.div(a, b, rounding_mode="floor"), True, True),
    "remainder": (ampc.remainder, True, True), "pow": (ampc.pow, False, False),
    "maximum": (ampc.maximum, True, False), "minimum": (ampc.minimum, True, False), "atan2": (ampc.atan2, False, False),
    "logical_and": (ampc.logical_and, True, False), "logical_or": (ampc.logical_or, True, False),
    "bitwise_and": (ampc.bitwise_and, True, False), "bitwise_or": (ampc.bitwise_or, True, False),
    "bitwise_xor": (ampc.bitwise_xor, True, False), "eq": (ampc.eq, True, False), "ne": (ampc.ne, True, False),
    "lt": (ampc.lt, True, False), "le": (ampc.le, True, False), "gt": (ampc.gt, True, False),
    "ge": (ampc.ge, True, False),
}


def binary_layouts(dtype, dev, seed, divisor):
    """(name, cpu (a, b), device (a, b)) with the same values in different layouts."""
    a = sample(dtype, SHAPE, seed)
    b = sample(dtype, SHAPE, seed + 1)
    b.reshape(-1)[20:40] = a.reshape(-1)[20:40]  # equal pairs for the comparisons
    if divisor and dtype not in FLOATS:
        b = nonzero(b)
    both = lambda f: (f("cpu"), f(dev))  # noqa: E731
    yield "contiguous", *both(lambda d: (on(d, a), on(d, b)))
    yield "transposed", *both(lambda d: (on(d, a.T).t(), on(d, b)))
    wa, wb = np.repeat(a, 2, axis=1), np.repeat(b, 3, axis=0)
    yield "sliced", *both(lambda d: (on(d, wa)[:, 1::2], on(d, wb)[::3]))
    fa, fb = a.reshape(-1), b.reshape(-1)
    yield "misaligned", *both(lambda d: (on(d, fa)[1:], on(d, fb)[:-1]))
    yield "row", *both(lambda d: (on(d, a), on(d, b[3])))
    yield "column", *both(lambda d: (on(d, a[:, 5:6]), on(d, b)))
    yield "expanded", *both(lambda d: (on(d, a), on(d, b[:, 2:3]).expand(*SHAPE)))
    yield "0-dim device right", *both(lambda d: (on(d, a), on(d, b[4, 4])))
    yield "0-dim device left", *both(lambda d: (on(d, a[4, 4]), on(d, b)))
    yield "0-dim both", *both(lambda d: (on(d, a[5, 6]), on(d, b[6, 5])))
    # 0-dim CPU tensors pass to the kernel as scalar values (in[k] == NULL)
    yield "cpu scalar right", (on("cpu", a), on("cpu", b[4, 4])), (on(dev, a), on("cpu", b[4, 4]))
    yield "cpu scalar left", (on("cpu", a[4, 4]), on("cpu", b)), (on("cpu", a[4, 4]), on(dev, b))
    yield "empty", *both(lambda d: (on(d, a[:0]), on(d, b[:0])))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(cuda, name, dtype):
    fn, exact, divisor = BINARY[name]
    for layout, cpu_args, dev_args in binary_layouts(dtype, cuda, zlib.crc32(name.encode()) % 1000, divisor):
        check(fn, cpu_args, dev_args, exact, f"{name} {dtype} {layout}")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32"])
def test_binary_large(cuda, dtype):
    n = (1 << 20) + 5
    a, b = sample(dtype, (n,), 11), nonzero(sample(dtype, (n,), 12))
    for name in ("add", "mul", "div", "maximum", "lt", "div_floor"):
        fn, exact, _ = BINARY[name]
        check(fn, (on("cpu", a), on("cpu", b)), (on(cuda, a), on(cuda, b)), exact, f"{name} {dtype} large")
    check(operator.mul, (on("cpu", a), 3), (on(cuda, a), 3), True, f"scalar mul {dtype} large")


PY_SCALAR_OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
                 operator.pow, operator.lt, operator.le, operator.eq, operator.ne, operator.gt, operator.ge,
                 operator.and_, operator.or_, operator.xor]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scalar", [True, 3, -2, 0.1, 2.5, -1.75, 1e-3])
def test_python_scalars_either_side(cuda, dtype, scalar):
    """x OP s and s OP x with Python numbers: promotion as on the CPU, the scalar read by value."""
    arr = sample(dtype, SHAPE, 3)
    if dtype not in FLOATS:
        arr = nonzero(arr)
    x_cpu, x_dev = on("cpu", arr), on(cuda, arr)
    for op in PY_SCALAR_OPS:
        exact = op is not operator.pow
        check(lambda x: op(x, scalar), (x_cpu,), (x_dev,), exact, f"x {op.__name__} {scalar!r} ({dtype})")
        if op in (operator.floordiv, operator.mod, operator.truediv, operator.pow) and dtype not in FLOATS:
            continue  # s // x with integer x may divide by zero; pow of ints may be negative
        check(lambda x: op(scalar, x), (x_cpu,), (x_dev,), exact, f"{scalar!r} {op.__name__} x ({dtype})")


def test_mixed_dtypes_and_inplace(cuda):
    """Inputs of different dtypes (cast on the device by the frontend), in-place ops on strided
    views, and out= tensors of another dtype (computed into a temporary, then copied)."""
    h, f = sample("float16", SHAPE, 21), sample("float32", SHAPE, 22)
    i = sample("int32", SHAPE, 23)
    for what, fn in [("fp16 + fp32", lambda a, b, c: a + b), ("int32 * fp16", lambda a, b, c: c * a),
                     ("fp32 > int32", lambda a, b, c: b > c), ("where fp16/int32", lambda a, b, c: ampc.where(b > 0, a, c))]:
        check(fn, (on("cpu", h), on("cpu", f), on("cpu", i)), (on(cuda, h), on(cuda, f), on(cuda, i)), True, what)

    def inplace(x, y):
        x[:, ::2].add_(y[:, ::2], alpha=2)
        x[3].mul_(0.5)
        x.t()[1:4].clamp_(-1, 1)
        x[::3] += y[::3]
        return x

    check(inplace, (on("cpu", f), on("cpu", f[::-1])), (on(cuda, f), on(cuda, f[::-1])), True, "in-place on views")

    def out_of_other_dtype(x, y):
        out = ampc.zeros(*SHAPE, dtype=ampc.float64, device=x.device)
        ampc.add(x, y, out=out)
        x += y.float()  # fp16 += fp32: computed in fp32, stored as fp16
        return out, x

    (o_cpu, x_cpu) = out_of_other_dtype(on("cpu", h), on("cpu", h))
    (o_dev, x_dev) = out_of_other_dtype(on(cuda, h), on(cuda, h))
    assert_match(o_dev, o_cpu, True, "out= float64")
    assert_match(x_dev, x_cpu, True, "fp16 += fp32")


# ---------------------------------------------------------------------------- where

@pytest.mark.parametrize("dtype", DTYPES)
def test_where(cuda, dtype):
    c = sample("bool", SHAPE, 31)
    a, b = sample(dtype, SHAPE, 32), sample(dtype, SHAPE, 33)
    s = {"bool": True, "uint8": 7, "int32": -5, "int64": 2 ** 40}.get(dtype, 0.1)
    cases = [
        ("tensors", lambda d: (on(d, c), on(d, a), on(d, b))),
        ("broadcast condition", lambda d: (on(d, c[2]), on(d, a), on(d, b))),
        ("broadcast branches", lambda d: (on(d, c), on(d, a[:, :1]), on(d, b[4]))),
        ("transposed", lambda d: (on(d, c.T).t(), on(d, a), on(d, b.T).t())),
        ("misaligned", lambda d: (on(d, c.reshape(-1))[1:], on(d, a.reshape(-1))[1:], on(d, b.reshape(-1))[:-1])),
        ("scalar x", lambda d: (on(d, c), s, on(d, b))),
        ("scalar y", lambda d: (on(d, c), on(d, a), s)),
        ("scalars", lambda d: (on(d, c), s, -1)),
        ("cpu 0-dim x", lambda d: (on(d, c), on("cpu", a[0, 0]), on(d, b))),
        ("cpu 0-dim condition", lambda d: (on("cpu", c[1, 1]), on(d, a), on(d, b))),
        ("uint8 condition", lambda d: (on(d, c.astype(np.uint8)), on(d, a), on(d, b))),
        ("0-dim", lambda d: (on(d, c[0, 0]), on(d, a[0, 0]), on(d, b[0, 0]))),
        ("empty", lambda d: (on(d, c[:0]), on(d, a[:0]), on(d, b[:0]))),
    ]
    for what, make in cases:
        check(ampc.where, make("cpu"), make(cuda), True, f"where {dtype} {what}")
    n = (1 << 20) + 1
    big = [sample("bool", (n,), 34), sample(dtype, (n,), 35), sample(dtype, (n,), 36)]
    check(ampc.where, [on("cpu", t) for t in big], [on(cuda, t) for t in big], True, f"where {dtype} large")


# ---------------------------------------------------------------------------- gradients

GRAD_OPS = {
    "exp": lambda x, y: ampc.exp(x), "tanh": lambda x, y: ampc.tanh(x), "sigmoid": lambda x, y: ampc.sigmoid(x),
    "gelu": lambda x, y: ampc.gelu(x), "silu": lambda x, y: ampc.silu(x), "softplus": lambda x, y: ampc.softplus(x),
    "relu": lambda x, y: ampc.relu(x), "clamp": lambda x, y: ampc.clamp(x, -1, 1), "mul": lambda x, y: x * y,
    "div": lambda x, y: x / y, "pow": lambda x, y: ampc.abs(x) ** y, "atan2": lambda x, y: ampc.atan2(x, y),
    "maximum": lambda x, y: ampc.maximum(x, y), "where": lambda x, y: ampc.where(x > y, x, y),
    "sub_alpha": lambda x, y: ampc.sub(x, y, alpha=2.5),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(GRAD_OPS))
def test_gradients(cuda, name, dtype):
    a = sample(dtype, (9, 13), 41, specials=False)
    b = sample(dtype, (9, 13), 42, specials=False)
    g = sample(dtype, (9, 13), 43, specials=False)
    grads = {}
    for dev in ("cpu", cuda):
        x, y = on(dev, a), on(dev, b)
        x.requires_grad = True
        y.requires_grad = True
        GRAD_OPS[name](x, y).backward(on(dev, g))
        grads[dev] = (x.grad, y.grad)
    for k in range(2):
        cpu_grad, dev_grad = grads["cpu"][k], grads[cuda][k]
        if cpu_grad is None:
            assert dev_grad is None
            continue
        rtol, atol = (1e-5, 1e-6) if dtype == "float32" else (1e-12, 1e-13)
        np.testing.assert_allclose(numpy_copy(dev_grad), numpy_copy(cpu_grad), rtol=rtol, atol=atol, err_msg=f"{name} grad {k}")


# ---------------------------------------------------------------------------- errors

@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
def test_integer_division_by_zero_raises(cuda, dtype):
    """The CPU raises at once; the GPU writes the device's error word and raises at the next
    synchronising point (the copy to the host), as PyTorch's device-side asserts do. Afterwards
    the device is usable again."""
    a = on(cuda, np.array([5, 7, 9, 11], dtype=NP[dtype]))
    b = on(cuda, np.array([1, 0, 2, 3], dtype=NP[dtype]))
    for fn in (operator.floordiv, operator.mod, lambda x, y: ampc.div(x, y, rounding_mode="trunc")):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            r = fn(a, b)
            numpy_copy(r)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        numpy_copy(a // 0)
    # the error was reported once; the next ops and copies work
    assert numpy_copy(a // on(cuda, np.array([1, 2, 2, 3], dtype=NP[dtype]))).tolist() == [5, 3, 4, 3]


def test_float_division_by_zero_is_ieee(cuda):
    x = on(cuda, np.array([1.0, -1.0, 0.0], dtype=np.float32))
    r = numpy_copy(x // 0.0)
    assert r[0] == math.inf and r[1] == -math.inf and math.isnan(r[2])
    assert numpy_copy(x / 0).tolist()[:2] == [math.inf, -math.inf]
    assert math.isnan(numpy_copy(x % 0.0)[0])


def test_device_mismatch_raises(cuda):
    if cuda == "cpu":
        pytest.skip("needs two devices")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        on(cuda, np.ones(3)) + on("cpu", np.ones(3))
