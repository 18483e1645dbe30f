"""Random input tensors for the fuzzer, as Python source.

A drawn tensor is two or three lines of code that build it on either library (`M` is `ampc` or
`torch`): a leaf from literal float64 values that are already exact in the target dtype (so the
float64 -> dtype conversion is exact on both sides and cannot itself diverge), then an optional
view that gives it a layout (permuted, sliced, expanded, offset). The same text runs in the
worker and is printed as the reproducer, so what fails is what is shown.
"""
import math

import ml_dtypes
import numpy as np

FLOATS = ("float32", "float64", "float16", "bfloat16")
INTS = ("int64", "int32", "uint8")
ALL = FLOATS + INTS + ("bool",)

_ROUND = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
_TINY = {"float32": 1.1754943508222875e-38, "float64": 2.2250738585072014e-308, "float16": 6.103515625e-05,
         "bfloat16": 1.1754943508222875e-38}
_SUBNORMAL = {"float32": 1e-40, "float64": 5e-324, "float16": 2.0 ** -24 * 3, "bfloat16": 1e-40}
# values that stress fp16 (its max is 65504; 65520 rounds to inf there) and the extremes of each dtype
_SPECIAL = (math.inf, -math.inf, math.nan, 0.0, -0.0, 65504.0, -65504.0, 60000.0, 65520.0, 1e30, 0.5, -1.0)


def literal(v):
    """Python source for one value (inf and nan come from `math`)."""
    if isinstance(v, (bool, np.bool_)):
        return repr(bool(v))
    if isinstance(v, (int, np.integer)):
        return repr(int(v))
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return repr(v)


def draw_shape(rng, ndim=None, max_dim=4, allow_zero=True):
    """A small shape; 0-d when ndim is 0, and now and then a 0-size dimension."""
    if ndim is None:
        ndim = int(rng.choice([0, 1, 1, 2, 2, 2, 3, 3, 4]))
    return tuple(0 if allow_zero and rng.random() < 0.06 else int(rng.integers(1, max_dim + 1)) for _ in range(ndim))


def broadcast_partner(rng, shape):
    """A shape that broadcasts with `shape`: dimensions dropped from the front or set to 1."""
    cut = int(rng.integers(0, len(shape) + 1)) if rng.random() < 0.4 else 0
    out = [1 if rng.random() < 0.3 else s for s in shape[cut:]]
    if rng.random() < 0.05 and out:  # a mismatch: both libraries must refuse it
        out[-1] = out[-1] + 1
    return tuple(out)


def is_subnormal(v, dtype):
    return v != 0 and math.isfinite(v) and abs(v) < _TINY[dtype]


def draw_values(rng, n, dtype, special=True, low=None, high=None):
    """n float64 values exact in `dtype`: normals times a random scale with a few specials mixed in,
    or integers/booleans in the dtype's range (low/high narrow them)."""
    if dtype == "bool":
        return list(rng.random(n) < 0.5)
    if dtype in INTS:
        lo = 0 if dtype == "uint8" else -6
        lo, hi = (lo if low is None else low), (8 if high is None else high)
        return [int(v) for v in rng.integers(lo, hi, size=n)]
    if low is not None:
        vals = rng.uniform(low, high, size=n)
    else:
        vals = rng.standard_normal(n) * float(rng.choice([1.0, 1.0, 0.01, 10.0, 1000.0]))
    if special and n and rng.random() < 0.35:
        for i in rng.choice(n, size=int(rng.integers(1, min(n, 3) + 1)), replace=False):
            vals[i] = _SUBNORMAL[dtype] if rng.random() < 0.15 else rng.choice(_SPECIAL)
    with np.errstate(over="ignore"):
        exact = np.asarray(vals, dtype=np.float64).astype(_ROUND[dtype]).astype(np.float64)
    return [float(v) for v in exact]


def ctor(values, base_shape, dtype):
    """Source of an expression building a contiguous tensor of `values` (row-major) and `dtype`."""
    body = "[%s]" % ", ".join(literal(v) for v in values)
    if dtype == "bool":
        src = "M.tensor(%s, dtype=M.bool)" % body
    elif dtype in INTS:
        src = "M.tensor(%s, dtype=M.int64)" % body
    else:
        src = "M.tensor(%s, dtype=M.float64)" % body
    src += ".reshape(%s)" % ", ".join(str(s) for s in base_shape) if base_shape else ".reshape(())"
    if dtype not in ("float64", "int64", "bool"):
        src += ".to(M.%s)" % dtype
    return src


def _layout(rng, shape):
    """(base shape, view source suffix, layout name) giving a tensor of `shape`."""
    kind = rng.choice(["contiguous"] * 5 + ["permuted", "sliced", "expanded", "offset"])
    nd = len(shape)
    if kind == "permuted" and nd >= 2:
        perm = list(rng.permutation(nd))
        base = tuple(shape[p] for p in perm)
        inverse = [perm.index(i) for i in range(nd)]
        return base, ".permute(%s)" % ", ".join(map(str, inverse)), "permuted"
    if kind == "sliced" and nd >= 1:
        d = int(rng.integers(0, nd))
        step = int(rng.integers(2, 4))
        base = list(shape)
        base[d] = shape[d] * step
        idx = ", ".join([":"] * d + ["::%d" % step])
        return tuple(base), "[%s]" % idx, "sliced"
    if kind == "expanded" and nd >= 1 and any(s > 1 for s in shape):
        base = tuple(1 if (s > 1 and rng.random() < 0.5) else s for s in shape)
        if base != tuple(shape):
            return base, ".expand(%s)" % ", ".join(map(str, shape)), "expanded"
    if kind == "offset":
        n = int(np.prod(shape)) if shape else 1
        k = int(rng.integers(1, 4))
        return (n + k,), "[%d:].view(%s)" % (k, ", ".join(map(str, shape)) if shape else "()"), "offset"
    return tuple(shape), "", "contiguous"


class Draw:
    """Collects the inputs of one case: each `tensor()` call adds setup lines and returns the name
    the op's code uses. `grads` lists the leaves whose gradients are compared."""

    def __init__(self, rng):
        self.rng = rng
        self.lines = []
        self.grads = []
        self.flags = set()  # facts about the inputs that known divergences match on
        self._n = 0

    def name(self):
        self._n += 1
        return "abcdefghijklmnop"[self._n - 1]

    def dtype(self, choices=ALL):
        return str(self.rng.choice(list(choices)))

    def tensor(self, shape, dtype, grad=False, layout=True, special=True, values=None, low=None, high=None):
        rng = self.rng
        base, view, kind = _layout(rng, shape) if layout else (tuple(shape), "", "contiguous")
        n = int(np.prod(base)) if base else 1
        vals = values if values is not None else draw_values(rng, n, dtype, special, low, high)
        if dtype in FLOATS and any(not math.isfinite(v) for v in vals):
            self.flags.add("nonfinite")
        if dtype in FLOATS and any(is_subnormal(v, dtype) for v in vals):
            self.flags.add("subnormal")
        if dtype in FLOATS and any(abs(v) >= 60000 for v in vals if math.isfinite(v)):
            self.flags.add("huge")  # near or beyond fp16's max
        self.flags.add("dtype_" + dtype)
        name = self.name()
        grad = grad and dtype in FLOATS
        self.lines.append("%s = %s%s" % (name, ctor(vals, base, dtype), ".requires_grad_()" if grad else ""))
        if grad:
            self.grads.append(name)
        if view:
            self.flags.add(kind)
            self.lines.append("%s1 = %s%s" % (name, name, view))
            return name + "1"
        return name

    def index(self, shape, high, allow_bad=True):
        """An int64 index tensor of `shape` into a dimension of size `high`: usually valid, now and
        then negative (flag neg_index) or out of range (flag bad_index)."""
        rng = self.rng
        n = int(np.prod(shape)) if shape else 1
        vals = [int(v) for v in rng.integers(0, max(high, 1), size=n)] if high > 0 else [0] * n
        if allow_bad and n and rng.random() < 0.12:
            i = int(rng.integers(0, n))
            vals[i] = int(rng.choice([-1, -high if high else -1, high, high + 3]))
            self.flags.add("neg_index" if vals[i] < 0 else "bad_index")
        if high == 0 and n:
            self.flags.add("bad_index")
        return self.tensor(shape, "int64", layout=False, values=vals)
