"""torch's legacy tensor types: ampc.FloatTensor, LongTensor, ..., and ampc.cuda.FloatTensor, ...

Old scripts and AMP tests still use them three ways, all kept:
  - constructors: FloatTensor() (empty), FloatTensor(2, 3) (uninitialised, that size),
    FloatTensor([1, 2]) (the data in that dtype), FloatTensor(t) (an alias of t when it already
    has that type; torch refuses other types);
  - type checks: isinstance(t, ampc.FloatTensor) is True for a float32 CPU tensor, as in torch
    (the class's metaclass compares dtype and device);
  - conversions: t.type(ampc.cuda.HalfTensor), t.type() == "torch.FloatTensor".
"""
from . import _C
from ._functions import _TYPE_NAMES


class _LegacyTensorType(type):
    """The metaclass: the type's dtype and device decide isinstance, and calling it builds a tensor."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, _C.Tensor) and obj.dtype == cls.dtype and obj.device.type == cls._device

    def __call__(cls, *args, device=None):
        device = cls._device if device is None else device
        if not args:
            return _C.empty(0, dtype=cls.dtype, device=device)
        if len(args) == 1 and isinstance(args[0], _C.Tensor):
            if not isinstance(args[0], cls):
                raise TypeError(f"expected {cls._name} (got {args[0].type()})")
            return args[0].view_as(args[0])
        if len(args) == 1 and not isinstance(args[0], int):
            data = args[0]
            if isinstance(data, _C.Size):
                return _C.empty(tuple(data), dtype=cls.dtype, device=device)
            return _C.tensor(data, dtype=cls.dtype, device=device)
        return _C.empty(tuple(int(a) for a in args), dtype=cls.dtype, device=device)

    def __repr__(cls):
        return f"<class '{cls._name}'>"


def _make(stem, dtype_name, device):
    name = f"{stem}Tensor"
    full = f"torch.cuda.{name}" if device == "cuda" else f"torch.{name}"
    return _LegacyTensorType(name, (), {"dtype": getattr(_C, dtype_name), "is_cuda": device == "cuda",
                                        "_device": device, "_name": full,
                                        "__doc__": f"{full}: the legacy type of {dtype_name} tensors on {device}"})


CPU_TYPES = {f"{stem}Tensor": _make(stem, d, "cpu") for d, stem in _TYPE_NAMES}
CUDA_TYPES = {f"{stem}Tensor": _make(stem, d, "cuda") for d, stem in _TYPE_NAMES}


def type_name(t):
    """The 'torch.FloatTensor'-style name of a legacy type class, or None for anything else."""
    return t._name if isinstance(t, _LegacyTensorType) else None
