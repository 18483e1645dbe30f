"""ampc._runtime: torch's top-level settings, constants and small factories that are plain Python.

- constants (pi, e, inf, nan, newaxis);
- the determinism flags (use_deterministic_algorithms and its queries, the debug mode);
- compile: ampc runs eagerly, so it returns what it is given, as torch.compile(backend="eager");
- typename, scalar_tensor, empty_strided, asarray, frombuffer.
The default device and the thread counts are in the binding (csrc/python/py_surface.c), where the
factories and the OpenMP runtime read them.
"""
import builtins
import functools
import math

from . import _C
from ._C import Tensor

pi = math.pi
e = math.e
inf = math.inf
nan = math.nan
newaxis = None

# ---------------------------------------------------------------- determinism

# ampc's CPU kernels are deterministic (fixed reduction orders, Philox random streams indexed by
# element); the flags are kept for scripts and for kernels that may need to honour them.
_deterministic = {"enabled": False, "warn_only": False}


def use_deterministic_algorithms(mode, *, warn_only=False):
    if not isinstance(mode, builtins.bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' must be bool, not {type(mode).__name__}")
    if not isinstance(warn_only, builtins.bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'warn_only' must be bool, not "
                        f"{type(warn_only).__name__}")
    _deterministic["enabled"] = mode
    _deterministic["warn_only"] = warn_only


def are_deterministic_algorithms_enabled():
    return _deterministic["enabled"]


def is_deterministic_algorithms_warn_only_enabled():
    return _deterministic["warn_only"]


def set_deterministic_debug_mode(debug_mode):
    modes = {"default": 0, "warn": 1, "error": 2}
    if isinstance(debug_mode, str):
        if debug_mode not in modes:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                               f"{debug_mode}")
        debug_mode = modes[debug_mode]
    elif not isinstance(debug_mode, int) or isinstance(debug_mode, builtins.bool):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode == 0:
        use_deterministic_algorithms(False)
    elif debug_mode == 1:
        use_deterministic_algorithms(True, warn_only=True)
    elif debug_mode == 2:
        use_deterministic_algorithms(True)
    else:
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")


def get_deterministic_debug_mode():
    if not _deterministic["enabled"]:
        return 0
    return 1 if _deterministic["warn_only"] else 2


# ---------------------------------------------------------------- compile

def compile(model=None, *, fullgraph=False, dynamic=None, backend=None, mode=None, options=None, name=None,
            disable=False, recompile_limit=None, isolate_recompiles=False, shapes_spec=None):
    """torch.compile for ampc: ampc runs eagerly (every op is a C kernel call), so this returns
    `model` unchanged, as torch.compile(model, backend="eager") behaves. torch's keyword arguments
    are accepted and ignored. Usable as `compile(f)`, `@compile` and `@compile(mode=...)`."""
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if model is None:
        return functools.partial(compile, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                 options=options, name=name, disable=disable, recompile_limit=recompile_limit,
                                 isolate_recompiles=isolate_recompiles, shapes_spec=shapes_spec)
    if not callable(model):
        raise RuntimeError(f"compile(): expected a callable (a module or a function), got {type(model).__name__}")
    return model


# ---------------------------------------------------------------- small factories and queries

def typename(obj):
    """The legacy type name: 'torch.FloatTensor' for a tensor (Tensor.type()), 'module.Class' otherwise."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or type(obj).__qualname__
    if module in ("", "builtins") and not hasattr(obj, "__qualname__"):
        module = type(obj).__module__
        qualname = type(obj).__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def scalar_tensor(s, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    if isinstance(s, Tensor):
        raise TypeError(f"scalar_tensor(): argument 's' (position 1) must be Number, not Tensor")
    return _C.full((), s, dtype=_C.get_default_dtype() if dtype is None else dtype, device=device,
                   requires_grad=requires_grad)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """An uninitialised tensor with the given strides. Dense strides (a permutation of a contiguous
    layout, the common case: what empty_like and layer code ask for) are an empty tensor in the
    permuted order, permuted back; others need as_strided over a large enough storage."""
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape")
    for d in size:
        if d < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {d}: {list(size)}")
    kw = dict(dtype=dtype, device=device)
    order = sorted(range(len(size)), key=lambda d: (-stride[d], -size[d]))
    expect, dense = 1, True
    for d in reversed(order):
        if size[d] != 1 and stride[d] != expect:
            dense = False
        expect *= size[d]
    if dense:
        base = _C.empty([size[d] for d in order], **kw)
        inverse = [order.index(d) for d in range(len(size))]
        t = base.permute(inverse)
    elif hasattr(Tensor, "as_strided"):
        extent = 1 + builtins.sum((s - 1) * st for s, st in zip(size, stride)) if all(size) else 0
        t = _C.empty(extent, **kw).as_strided(size, stride)
    else:
        raise NotImplementedError(f"empty_strided: strides {list(stride)} for size {list(size)} overlap or leave "
                                  "gaps, which needs as_strided")
    return t.requires_grad_(requires_grad) if requires_grad else t


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad=False,
                   pin_memory=False):
    """An uninitialised tensor whose dims lie in memory in the order physical_layout (outermost
    first): empty in that order, permuted back to the logical order."""
    size, order = tuple(size), list(physical_layout)
    if sorted(order) != list(range(len(size))):
        raise RuntimeError(f"empty_permuted: physical_layout {order} is not a permutation of the {len(size)} dims")
    base = _C.empty([size[d] for d in order], dtype=dtype, device=device)
    t = base.permute([order.index(d) for d in range(len(size))])
    return t.requires_grad_(True) if requires_grad else t


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """torch.asarray: shares memory with a tensor or a NumPy array when dtype and device allow it
    (copy=None), always copies with copy=True, and refuses a needed copy with copy=False."""
    if isinstance(obj, Tensor):
        t = obj.to(device=device or obj.device, dtype=dtype or obj.dtype)
        shares = t is obj or t.data_ptr() == obj.data_ptr()
        if copy is False and not shares:
            raise ValueError("asarray(): can't satisfy copy=False: a copy is needed to change dtype or device")
        if copy and shares:
            t = obj.clone() if not obj.requires_grad else obj.detach().clone()
    else:
        if copy:
            t = _C.tensor(obj, dtype=dtype, device=device)
        else:
            t = _C.as_tensor(obj, dtype=dtype, device=device)
            if copy is False and type(obj).__module__ == "numpy" and t.data_ptr() != obj.__array_interface__["data"][0]:
                raise ValueError("asarray(): can't satisfy copy=False: a copy is needed to change dtype or device")
    if requires_grad:
        t = t.detach() if t is obj else t
        t.requires_grad_(True)
    return t


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D CPU tensor over the memory of a Python buffer (shared, as torch: writes go through)."""
    import numpy as np

    names = {_C.float32: "float32", _C.float64: "float64", _C.float16: "float16", _C.uint8: "uint8",
             _C.int32: "int32", _C.int64: "int64", _C.bool: "bool"}
    if dtype not in names:
        raise TypeError(f"frombuffer(): dtype {dtype} has no NumPy buffer type in ampc")
    itemsize = np.dtype(names[dtype]).itemsize
    nbytes = memoryview(buffer).nbytes
    if offset < 0 or offset > nbytes:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length "
                         f"({nbytes} bytes) minus 1")
    if count == 0 or (count < 0 and nbytes - offset < itemsize):
        raise ValueError(f"both buffer length ({nbytes}) and count ({count}) must not be 0")
    if count < 0 and (nbytes - offset) % itemsize:
        raise ValueError(f"buffer length ({nbytes - offset} bytes) after offset ({offset} bytes) must be a multiple "
                         f"of element size ({itemsize})")
    if count > 0 and offset + count * itemsize > nbytes:
        raise ValueError(f"requested buffer length ({count} * {itemsize} bytes) after offset ({offset} bytes) must "
                         f"not be greater than actual buffer length ({nbytes} bytes)")
    arr = np.frombuffer(buffer, dtype=names[dtype], count=count, offset=offset)
    t = _C.from_numpy(arr)
    return t.requires_grad_(True) if requires_grad else t


# ---------------------------------------------------------------- finfo / iinfo

# (mantissa bits, exponent bits) of ampc's floating dtypes; the limits follow from the format.
_FLOAT_FORMATS = {"float16": (10, 5), "bfloat16": (7, 8), "float32": (23, 8), "float64": (52, 11)}
_INT_RANGES = {"uint8": (8, 0, 255), "int32": (32, -2**31, 2**31 - 1), "int64": (64, -2**63, 2**63 - 1)}


def _dtype_name(dtype, fname):
    if dtype is None:
        dtype = _C.get_default_dtype()
    if not isinstance(dtype, _C.dtype):
        raise TypeError(f"{fname}(): argument 'type' must be torch.dtype, not {type(dtype).__name__}")
    return str(dtype).split(".")[-1]


class finfo:
    """torch.finfo: the numeric limits of a floating dtype (the default dtype when none is given)."""

    def __init__(self, type=None):
        name = _dtype_name(type, "finfo")
        if name not in _FLOAT_FORMATS:
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo to handle "
                            "'torch.finfo'")
        m, e = _FLOAT_FORMATS[name]
        bias = 2 ** (e - 1) - 1
        self.bits = 1 + m + e
        self.eps = 2.0 ** -m
        self.max = (2.0 - 2.0 ** -m) * 2.0 ** bias
        self.min = -self.max
        self.tiny = self.smallest_normal = 2.0 ** (1 - bias)
        self.resolution = 10.0 ** -math.floor(m * math.log10(2))
        self.dtype = name

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """torch.iinfo: the range of an integer dtype."""

    def __init__(self, type):
        name = _dtype_name(type, "iinfo")
        if name not in _INT_RANGES:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle 'torch.iinfo'")
        self.bits, self.min, self.max = _INT_RANGES[name]
        self.dtype = name

    def __repr__(self):
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"


has_openmp = True  # ampc's CPU kernels are always built with OpenMP (setup.py: -fopenmp)


def init_num_threads():
    """torch.init_num_threads: ampc's OpenMP runtime is ready when ampc is imported; nothing to do."""
