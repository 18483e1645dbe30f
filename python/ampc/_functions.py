"""ampc._functions: torch's Tensor-level surface that needs no kernel of its own.

Two jobs, both table-driven so that a name is one line:
- the top-level functions torch has for Tensor methods (`torch.reshape(x, shape)`,
  `torch.transpose(x, 0, 1)`, ...): `_ALIASES` maps each to the method, which is the one
  implementation (C for most), with torch's keyword names for the function form;
- the methods and properties ampc's C tables lack and that compose from ops ampc has
  (movedim, select, unflatten, tensor_split, type, the is_* predicates, ...): defined here and
  put on ampc.Tensor by `_C._install_tensor_methods`, which keeps any name the C tables define, so
  a kernel-backed method added later takes over without an edit here.

Views stay views (select, movedim, unflatten, tensor_split are narrow/permute/view), so autograd
and in-place semantics are those of the ops they are made of.
"""
import builtins

from . import _C
from ._C import Tensor

# ---------------------------------------------------------------- argument helpers


def _check_tensor(fname, obj, arg="input", pos=1):
    if not isinstance(obj, Tensor):
        raise TypeError(f"{fname}(): argument '{arg}' (position {pos}) must be Tensor, not {type(obj).__name__}")


def _wrap_dim(dim, ndim, fname=None):
    """torch's dim normalisation: a 0-dim tensor accepts dims -1 and 0."""
    n = builtins.max(ndim, 1)
    if not isinstance(dim, int) or isinstance(dim, builtins.bool):
        if isinstance(dim, Tensor) or hasattr(dim, "__index__"):
            dim = dim.__index__()
        else:
            raise TypeError(f"{fname or 'dim'}(): argument 'dim' must be int, not {type(dim).__name__}")
    if dim < -n or dim >= n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim


def _dims(value):
    return list(value) if isinstance(value, (list, tuple)) else [value]


# ---------------------------------------------------------------- composed methods


def movedim(self, source, destination):
    if isinstance(source, int) != isinstance(destination, int):
        raise TypeError(f"movedim() received an invalid combination of arguments: source and destination must be "
                        f"both ints or both sequences of ints, got {type(source).__name__} and "
                        f"{type(destination).__name__}")
    src, dst = _dims(source), _dims(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) should contain the "
                           f"same number of dims as destination ({dst} dims)")
    n = self.dim()
    src = [_wrap_dim(d, n) for d in src]
    dst = [_wrap_dim(d, n) for d in dst]
    if len(set(src)) != len(src):
        raise RuntimeError(f"movedim: repeated dim in `source` ({_dims(source)})")
    if len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({_dims(destination)})")
    if n == 0:
        return self.view(())
    order = [-1] * n
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(n) if d not in src)
    order = [o if o >= 0 else next(rest) for o in order]
    return self.permute(order)


def select(self, dim, index):
    if self.dim() == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    dim = _wrap_dim(dim, self.dim())
    size = self.shape[dim]
    index = index.__index__()
    if index < -size or index >= size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(self.shape)} "
                         f"at dimension {dim}")
    return self.narrow(dim, index % size if size else index, 1).squeeze(dim)


def unflatten(self, dim, sizes):
    dim = _wrap_dim(dim, self.dim())
    sizes = list(sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    if sizes.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in sizes:
        known *= s if s != -1 else 1
    size = self.shape[dim]
    if -1 in sizes:
        if known == 0 or size % known:
            raise RuntimeError(f"unflatten: Provided sizes {sizes} don't multiply up to the size of dim {dim} "
                               f"({size}) in the input tensor")
        sizes[sizes.index(-1)] = size // known
    elif known != size:
        raise RuntimeError(f"unflatten: Provided sizes {sizes} don't multiply up to the size of dim {dim} "
                           f"({size}) in the input tensor")
    shape = list(self.shape)
    return self.view(shape[:dim] + sizes + shape[dim + 1:])


def ravel(self):
    return self.reshape(-1)


def adjoint(self):
    if self.dim() < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of matrices. "
                           f"Got {self.dim()}-D tensor.")
    return self.transpose(-2, -1)


def _H(self):
    if self.dim() not in (0, 2):
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.dim()}-D tensor.")
    return self.t() if self.dim() == 2 else self


def _mH(self):
    if self.dim() < 2:
        raise RuntimeError(f"tensor.mH is only supported on matrices or batches of matrices. Got {self.dim()}-D tensor.")
    return self.transpose(-2, -1)


def broadcast_to(self, size):
    return self.expand(tuple(size))


def tensor_split(self, indices_or_sections, dim=0):
    if self.dim() == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    dim = _wrap_dim(dim, self.dim())
    size = self.shape[dim]
    ios = indices_or_sections
    if isinstance(ios, Tensor):
        if ios.dtype != _C.int64:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to have dtype of long, but got "
                               f"{str(ios.dtype).replace('ampc.', 'torch.')}")
        if ios.dim() > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                               f"one-dimensional tensor, but got a tensor with {ios.dim()} dims")
        ios = ios.item() if ios.dim() == 0 else ios.tolist()
    if isinstance(ios, (list, tuple)):
        bounds = [0] + [builtins.min(builtins.max(i + size if i < 0 else i, 0), size) for i in ios] + [size]
    else:
        sections = ios.__index__()
        if sections <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
        q, r = divmod(size, sections)
        bounds = [0]
        for k in range(sections):
            bounds.append(bounds[-1] + q + (1 if k < r else 0))
    return tuple(self.narrow(dim, a, builtins.max(b - a, 0)) for a, b in zip(bounds[:-1], bounds[1:]))


def _xsplit(name, self, ios, dim, min_dims):
    if self.dim() < min_dims:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dims} dimension, but got a tensor "
                           f"with {self.dim()} dimensions!")
    if not isinstance(ios, (list, tuple)):
        sections = ios.__index__()
        if sections == 0 or self.shape[dim] % sections:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the size of the "
                               f"dimension {self.shape[dim]} is not divisible by the split_size {sections}!")
    return tensor_split(self, ios, dim)


def hsplit(self, indices_or_sections):
    return _xsplit("hsplit", self, indices_or_sections, 1 if self.dim() >= 2 else 0, 1)


def vsplit(self, indices_or_sections):
    return _xsplit("vsplit", self, indices_or_sections, 0, 2)


def dsplit(self, indices_or_sections):
    return _xsplit("dsplit", self, indices_or_sections, 2, 3)


def split_with_sizes(self, split_sizes, dim=0):
    dim = _wrap_dim(dim, self.dim())
    sizes = list(split_sizes)
    if builtins.sum(sizes) != self.shape[dim] or builtins.any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {self.shape[dim]} (input "
                           f"tensor's size at dimension {dim}), but got split_sizes={sizes}")
    out, start = [], 0
    for s in sizes:
        out.append(self.narrow(dim, start, s))
        start += s
    return tuple(out)


def softmax(self, dim, dtype=None):
    return _C._nn_softmax(self, _wrap_dim(dim, self.dim()), dtype)


def log_softmax(self, dim, dtype=None):
    return _C._nn_log_softmax(self, _wrap_dim(dim, self.dim()), dtype)


def is_nonzero(self):
    n = self.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return builtins.bool(self.item())


def is_same_size(self, other):
    _check_tensor("is_same_size", other, "other", 2)
    return self.shape == other.shape


def sum_to_size(self, *size):
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        size = tuple(size[0])
    shape = tuple(self.shape)
    lead = len(shape) - len(size)
    ok = lead >= 0 and builtins.all(s in (t, 1) for s, t in zip(size, shape[lead:]))
    if not ok:
        raise RuntimeError(f"size {list(size)} is not expandable to size {list(shape)}")
    dims = list(range(lead)) + [lead + i for i, s in enumerate(size) if s == 1 and shape[lead + i] != 1]
    out = self.sum(dims, keepdim=True) if dims else self
    return out.view(size) if lead else out


def dim_order(self, *, ambiguity_check=False):
    """The dims from outermost to innermost in memory (by stride, larger first; ties keep order)."""
    if ambiguity_check:
        raise NotImplementedError("dim_order(ambiguity_check=True) is not supported by ampc")
    strides = self.stride()
    return tuple(sorted(range(self.dim()), key=lambda d: -strides[d]))


def positive(self):
    return _C.positive(self)


def conj(self):
    return self  # real dtypes: the conjugate is the tensor itself (torch returns a view; this is the same memory)


def real(self):
    return self


def imag(self):
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


def fill(input, value):
    """torch.fill: a new tensor like input, every element value (differentiable in input: zero grad)."""
    return input.clone().fill_(value)


# ---------------------------------------------------------------- type() and new()

# (dtype name in ampc, torch's legacy type name stem)
_TYPE_NAMES = [("float32", "Float"), ("float64", "Double"), ("float16", "Half"), ("bfloat16", "BFloat16"),
               ("uint8", "Byte"), ("int32", "Int"), ("int64", "Long"), ("bool", "Bool")]


def _dtype_stem(dtype):
    """torch's short dtype name in messages: Float, Double, Half, Long, ..."""
    return builtins.dict((getattr(_C, d), s) for d, s in _TYPE_NAMES)[dtype]


def _type_string(t):
    stem = builtins.dict((getattr(_C, d), s) for d, s in _TYPE_NAMES)[t.dtype]
    return f"torch.cuda.{stem}Tensor" if t.is_cuda else f"torch.{stem}Tensor"


def _parse_type_string(name):
    for prefix, device in (("torch.cuda.", "cuda"), ("ampc.cuda.", "cuda"), ("torch.", "cpu"), ("ampc.", "cpu")):
        if name.startswith(prefix):
            stem = name[len(prefix):]
            for d, s in _TYPE_NAMES:
                if stem == s + "Tensor":
                    return getattr(_C, d), device
    raise ValueError(f"invalid type: '{name}'")


def _type(self, dtype=None, non_blocking=False, **kwargs):
    """Tensor.type(): the legacy type string ('torch.FloatTensor', 'torch.cuda.HalfTensor'), as torch
    spells it so that scripts comparing it keep working; Tensor.type(dtype or such a string): the
    tensor in that type (itself when it already is)."""
    if "async" in kwargs:
        non_blocking = kwargs.pop("async")
    if kwargs:
        raise TypeError(f"type() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if dtype is None:
        return _type_string(self)
    from ._legacy_types import type_name  # here: _legacy_types imports this module
    if type_name(dtype) is not None:  # ampc.FloatTensor & co.
        dtype = type_name(dtype)
    if isinstance(dtype, str):
        dt, device = _parse_type_string(dtype)
        if (device == "cuda") != builtins.bool(self.is_cuda):
            return self.to(device=device if device == "cpu" else "cuda", dtype=dt, non_blocking=non_blocking)
        return self.to(dtype=dt, non_blocking=non_blocking)
    if not isinstance(dtype, _C.dtype):
        raise TypeError(f"type(): argument 'dtype' must be torch.dtype or str, not {type(dtype).__name__}")
    return self.to(dtype=dtype, non_blocking=non_blocking)


def new(self, *args, device=None):
    """The legacy constructor: x.new() (empty), x.new(2, 3) (uninitialised, that size),
    x.new([1, 2]) or x.new(tensor) (a copy of the data), all in x's dtype and device."""
    device = self.device if device is None else device
    if not args:
        return _C.empty(0, dtype=self.dtype, device=device)
    if len(args) == 1 and not isinstance(args[0], int):
        data = args[0]
        if isinstance(data, _C.Size):
            return _C.empty(tuple(data), dtype=self.dtype, device=device)
        return _C.tensor(data, dtype=self.dtype, device=device)
    return _C.empty(args, dtype=self.dtype, device=device)


# ---------------------------------------------------------------- the tables

def _false_property(name):
    return property(lambda self: False, doc=f"Tensor.{name}: False (ampc tensors are dense, on the CPU or CUDA)")


_FALSE_PROPERTIES = ["is_sparse", "is_sparse_csr", "is_quantized", "is_meta", "is_mkldnn", "is_mps", "is_xpu",
                     "is_nested", "is_vulkan", "is_xla", "is_ipu", "is_maia", "is_mtia"]

TENSOR_METHODS = {
    "movedim": movedim, "moveaxis": movedim, "select": select, "unflatten": unflatten, "ravel": ravel,
    "adjoint": adjoint, "broadcast_to": broadcast_to, "tensor_split": tensor_split, "hsplit": hsplit,
    "vsplit": vsplit, "dsplit": dsplit, "split_with_sizes": split_with_sizes, "softmax": softmax,
    "log_softmax": log_softmax, "is_nonzero": is_nonzero, "is_same_size": is_same_size,
    "sum_to_size": sum_to_size, "dim_order": dim_order, "positive": positive, "type": _type, "new": new,
    "conj": conj, "conj_physical": conj, "resolve_conj": conj, "resolve_neg": conj,
    "is_conj": lambda self: False, "is_neg": lambda self: False,
    "const_data_ptr": lambda self: self.data_ptr(),
    "H": property(_H), "mH": property(_mH), "real": property(real), "imag": property(imag),
    **{name: _false_property(name) for name in _FALSE_PROPERTIES},
}

# torch function name: (method, {torch keyword: method positional index or keyword}).
# Every other argument passes through unchanged (the methods take torch's names).
_ALIASES = {
    "clone": ("clone", {}), "detach": ("detach", {}), "detach_": ("detach_", {}), "fill_": ("fill_", {"value": 0}),
    "flatten": ("flatten", {}), "get_device": ("get_device", {}), "index_put_": ("index_put_", {}),
    "is_complex": ("is_complex", {}), "is_signed": ("is_signed", {}), "narrow": ("narrow", {}),
    "permute": ("permute", {"dims": 0}), "reshape": ("reshape", {"shape": 0}), "round_": ("round_", {}),
    "squeeze": ("squeeze", {}), "swapaxes": ("swapaxes", {"axis0": "dim0", "axis1": "dim1"}),
    "swapdims": ("swapdims", {}), "t": ("t", {}), "transpose": ("transpose", {}), "unsqueeze": ("unsqueeze", {}),
    "zero_": ("zero_", {}), "movedim": ("movedim", {}), "moveaxis": ("moveaxis", {}), "select": ("select", {}),
    "unflatten": ("unflatten", {}), "ravel": ("ravel", {}), "adjoint": ("adjoint", {}),
    "broadcast_to": ("broadcast_to", {}), "tensor_split": ("tensor_split", {}), "hsplit": ("hsplit", {}),
    "vsplit": ("vsplit", {}), "dsplit": ("dsplit", {}), "split_with_sizes": ("split_with_sizes", {}),
    "softmax": ("softmax", {}), "log_softmax": ("log_softmax", {}), "is_nonzero": ("is_nonzero", {}),
    "is_same_size": ("is_same_size", {}), "is_conj": ("is_conj", {}), "is_neg": ("is_neg", {}),
    "conj": ("conj", {}), "conj_physical": ("conj_physical", {}), "resolve_conj": ("resolve_conj", {}),
    "resolve_neg": ("resolve_neg", {}), "real": ("real", {}), "imag": ("imag", {}),
}


def _make_alias(fname, method, renames):
    attr_is_property = isinstance(TENSOR_METHODS.get(method), property)

    def fn(*args, **kwargs):
        if not args and "input" in kwargs:
            args = (kwargs.pop("input"),)
        if not args:
            raise TypeError(f"{fname}() missing required argument 'input' (pos 1)")
        _check_tensor(fname, args[0])
        rest = list(args[1:])
        for key, target in renames.items():
            if key in kwargs:
                value = kwargs.pop(key)
                if isinstance(target, int):
                    rest.insert(target, value)
                else:
                    kwargs[target] = value
        attr = getattr(args[0], method)
        return attr if attr_is_property else attr(*rest, **kwargs)

    fn.__name__ = fn.__qualname__ = fname
    fn.__doc__ = f"{fname}(input, ...): torch.{fname}, the same as Tensor.{method}."
    return fn


def install():
    """Adds TENSOR_METHODS to ampc.Tensor and returns the top-level functions to export."""
    _C._install_tensor_methods(TENSOR_METHODS)
    functions = {name: _make_alias(name, method, renames) for name, (method, renames) in _ALIASES.items()}
    functions["fill"] = fill
    return functions
