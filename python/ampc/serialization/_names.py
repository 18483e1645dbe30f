"""The torch names a checkpoint's pickle refers to, and ampc's objects behind them.

torch's data.pkl names its globals torch._utils._rebuild_tensor_v2, torch.FloatStorage,
torch.float16, torch.Size, ... . ampc writes exactly those names (so torch loads ampc's files),
and when loading maps each to the ampc function or object that does the same (so ampc loads
torch's). The rebuild functions follow torch._utils: a tensor is (storage, storage_offset, size,
stride) over a storage loaded once per key, so views saved together share memory again.
"""
import collections
import functools
import pickle

import numpy as np

from .. import _C

# ampc dtype name -> torch's legacy storage class name in the persistent id
STORAGE_NAMES = {
    "float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
    "bfloat16": "BFloat16Storage", "int64": "LongStorage", "int32": "IntStorage", "int16": "ShortStorage",
    "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage",
    "complex64": "ComplexFloatStorage", "complex128": "ComplexDoubleStorage",
}
_STORAGE_DTYPES = {v: k for k, v in STORAGE_NAMES.items()}


def dtype_name(dtype):
    return str(dtype).rsplit(".", 1)[-1]


def ampc_dtype(name, what):
    dt = getattr(_C, name, None)
    if not isinstance(dt, _C.dtype):
        raise RuntimeError(f"ampc.load: the checkpoint holds {what} of dtype torch.{name}, which ampc does not "
                           "support")
    return dt


def numpy_dtype(name):
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name if name != "bool" else np.bool_).newbyteorder("<")


class TorchGlobal:
    """A global in torch's namespace, written into the pickle as GLOBAL `module name` (ampc's own
    object behind it would be pickled under an ampc name torch cannot import)."""

    __slots__ = ("module", "name")
    _cache = {}

    def __new__(cls, module, name):
        key = (module, name)
        if key not in cls._cache:
            obj = super().__new__(cls)
            obj.module, obj.name = module, name
            cls._cache[key] = obj
        return cls._cache[key]

    def __repr__(self):
        return f"{self.module}.{self.name}"

    def __call__(self, *args):  # pickle insists a reduce function is callable; this one is only a name
        raise TypeError(f"{self!r} is a name written into a checkpoint, not a function")


class StorageType:
    """What a checkpoint's storage class (torch.FloatStorage, ...) loads as: it only names a dtype."""

    def __init__(self, name):
        self.name = name
        self.dtype_name = _STORAGE_DTYPES[name]

    def __repr__(self):
        return f"StorageType(torch.{self.name})"


class LoadedStorage:
    """A storage read from a checkpoint: a 1-D tensor over all its elements, placed where
    map_location says; tensors are rebuilt as views of it."""

    __slots__ = ("tensor",)

    def __init__(self, tensor):
        self.tensor = tensor


# ---------------------------------------------------------------- rebuild functions (torch._utils)


def _rebuild_tensor(storage, storage_offset, size, stride):
    if not isinstance(storage, LoadedStorage):
        raise pickle.UnpicklingError(f"_rebuild_tensor: expected a storage, got {type(storage).__name__}")
    return _C._tensor_over(storage.tensor, int(storage_offset), tuple(size), tuple(stride))


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None,
                       metadata=None):
    t = _rebuild_tensor(storage, storage_offset, size, stride)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_parameter(data, requires_grad, backward_hooks):
    from ..nn.parameter import Parameter

    if not isinstance(data, _C.Tensor):
        raise pickle.UnpicklingError(f"_rebuild_parameter: expected a tensor, got {type(data).__name__}")
    return Parameter(data, bool(requires_grad))


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    p = _rebuild_parameter(data, requires_grad, backward_hooks)
    if isinstance(state, dict):
        for k, v in state.items():
            setattr(p, str(k), v)
    return p


def _unwrap(obj):
    """The object behind the bare functools.partial a weights-only load wraps globals in."""
    if isinstance(obj, functools.partial) and not obj.args and not obj.keywords:
        return obj.func
    return obj


def _rebuild_from_type_v2(func, new_type, args, state):
    """torch._tensor._rebuild_from_type_v2: a Tensor (subclass) with Python attributes."""
    from ..nn.parameter import Parameter

    func, new_type = _unwrap(func), _unwrap(new_type)
    if func not in (_rebuild_tensor_v2, _rebuild_parameter, _rebuild_parameter_with_state, _rebuild_tensor):
        raise pickle.UnpicklingError(f"_rebuild_from_type_v2: unexpected rebuild function {func!r}")
    t = func(*args)
    if new_type is Parameter and not isinstance(t, Parameter):
        t = Parameter(t, t.requires_grad)
    elif new_type not in (_C.Tensor, Parameter):
        raise pickle.UnpicklingError(f"_rebuild_from_type_v2: unsupported tensor type {new_type!r}")
    if isinstance(state, dict):
        for k, v in state.items():
            setattr(t, str(k), v)
    return t


def _device(*args):
    if len(args) == 2:
        return _C.device(f"{args[0]}:{args[1]}")
    return _C.device(*args)


def _size(dims=()):
    return _C.Size(tuple(int(d) for d in dims))


def allowed_globals():
    """Full torch/stdlib name -> ampc object: what a weights-only load may refer to."""
    import _codecs

    from ..nn.parameter import Parameter

    rc = {
        "collections.OrderedDict": collections.OrderedDict,
        "collections.Counter": collections.Counter,
        "torch._utils._rebuild_tensor": _rebuild_tensor,
        "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
        "torch._utils._rebuild_parameter": _rebuild_parameter,
        "torch._utils._rebuild_parameter_with_state": _rebuild_parameter_with_state,
        "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
        "torch.nn.parameter.Parameter": Parameter,
        "torch.Tensor": _C.Tensor,
        "torch.Size": _size,
        "torch.device": _device,
        "_codecs.encode": _codecs.encode,  # bytes, in protocol 2
        "builtins.bytearray": bytearray,
        "builtins.set": set,
        "builtins.complex": complex,
    }
    for name in STORAGE_NAMES.values():
        rc[f"torch.{name}"] = StorageType(name)
    for name in dir(_C):
        if isinstance(getattr(_C, name), _C.dtype):
            rc[f"torch.{name}"] = getattr(_C, name)
    return rc


def torch_to_ampc_name(module):
    """torch.nn.modules.linear -> ampc.nn.modules.linear (what a whole torch module maps to)."""
    return "ampc" + module[len("torch"):] if module == "torch" or module.startswith("torch.") else None
