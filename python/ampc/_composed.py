"""ampc._composed: torch's functions that are compositions of ops ampc has.

Stacking and broadcasting helpers (hstack, meshgrid, broadcast_tensors, ...), products and
distances (outer, kron, tensordot, cdist, ...), comparisons (isclose, allclose, equal), statistics
(cov, corrcoef) and the window and logspace factories. Each is a few calls of kernel-backed ops
(matmul, mul, cat, narrow, expand, vector_norm, ...), so autograd, dtypes and devices follow from
those ops; the loops stay in C. Signatures, defaults and out= are torch's; an out= tensor must
have the result's shape (ampc does not resize outputs) and receives the result by copy_.
"""
import builtins
import math
import warnings

from . import _C
from ._C import Tensor
from ._functions import _check_tensor, _dtype_stem, _wrap_dim
from .amp._policy import autocast_policy  # noqa: E402  (torch's autocast lists name these)

# ---------------------------------------------------------------- helpers


def _into(out, result, fname):
    if out is None:
        return result
    _check_tensor(fname, out, "out")
    if tuple(out.shape) != tuple(result.shape):
        raise RuntimeError(f"{fname}(): output with shape {list(out.shape)} doesn't match the result shape "
                           f"{list(result.shape)}")
    if _C.is_grad_enabled() and (result.requires_grad or out.requires_grad):
        raise RuntimeError(f"{fname}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    if not _C.can_cast(result.dtype, out.dtype):
        raise RuntimeError(f"result type {_dt(result.dtype)} can't be cast to the desired output type {_dt(out.dtype)}")
    out.copy_(result)
    return out


def _dt(dtype):
    return _dtype_stem(dtype)


def _tensors(fname, tensors):
    if isinstance(tensors, Tensor):
        raise TypeError(f"{fname}(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor")
    tensors = list(tensors)
    for i, t in enumerate(tensors):
        _check_tensor(fname, t, f"tensors[{i}]")
    return tensors


def _unpack(tensors):
    return list(tensors[0]) if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else list(tensors)


def _factory_dtype(dtype):
    return _C.get_default_dtype() if dtype is None else dtype


# ---------------------------------------------------------------- broadcasting and stacking


def broadcast_shapes(*shapes):
    ndim = 0
    norm = []
    for s in shapes:
        s = (s,) if isinstance(s, int) else tuple(s)
        for d in s:
            if not isinstance(d, int) and not hasattr(d, "__index__"):
                raise RuntimeError(f"broadcast_shapes: Input shapes should be of type ints, a tuple of ints, or a "
                                   f"list of ints, got {shapes}")
            if d < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {d}: {list(s)}")
        norm.append(s)
        ndim = builtins.max(ndim, len(s))
    result = [1] * ndim
    for s in norm:
        for i, d in enumerate(s, ndim - len(s)):
            if d == 1 or d == result[i]:
                continue
            if result[i] != 1:
                raise RuntimeError("Shape mismatch: objects cannot be broadcast to a single shape")
            result[i] = d
    return _C.Size(result)


def broadcast_tensors(*tensors):
    tensors = _tensors("broadcast_tensors", _unpack(tensors))
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(t.expand(shape) for t in tensors)


def _atleast(fname, tensors, nd):
    single = len(tensors) == 1 and isinstance(tensors[0], Tensor)
    ts = _tensors(fname, _unpack(tensors))
    out = []
    for t in ts:
        if t.dim() >= nd:
            out.append(t)
        elif nd == 1 or t.dim() == 0:
            out.append(t.reshape((1,) * nd))
        elif nd == 2:
            out.append(t.unsqueeze(0))
        else:  # 3-D from 1-D (1, n, 1) or 2-D (m, n, 1), as numpy
            out.append(t.unsqueeze(0).unsqueeze(-1) if t.dim() == 1 else t.unsqueeze(-1))
    return out[0] if single else tuple(out)


def atleast_1d(*tensors):
    return _atleast("atleast_1d", tensors, 1)


def atleast_2d(*tensors):
    return _atleast("atleast_2d", tensors, 2)


def atleast_3d(*tensors):
    return _atleast("atleast_3d", tensors, 3)


def _nonempty(fname, tensors):
    if not tensors:
        raise RuntimeError(f"{fname} expects a non-empty TensorList")
    return tensors


def hstack(tensors, *, out=None):
    ts = _nonempty("hstack", [atleast_1d(t) for t in _tensors("hstack", tensors)])
    return _into(out, _C.cat(ts, 0 if ts[0].dim() == 1 else 1), "hstack")


def vstack(tensors, *, out=None):
    ts = _nonempty("vstack", [atleast_2d(t) for t in _tensors("vstack", tensors)])
    return _into(out, _C.cat(ts, 0), "vstack")


row_stack = vstack


def dstack(tensors, *, out=None):
    ts = _nonempty("dstack", [atleast_3d(t) for t in _tensors("dstack", tensors)])
    return _into(out, _C.cat(ts, 2), "dstack")


def column_stack(tensors, *, out=None):
    ts = _nonempty("column_stack", _tensors("column_stack", tensors))
    ts = [t.reshape(t.numel(), 1) if t.dim() <= 1 else t for t in ts]
    return _into(out, _C.cat(ts, 1), "column_stack")


def meshgrid(*tensors, indexing=None):
    ts = _tensors("meshgrid", _unpack(tensors))
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
                      UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    if not ts:
        return ()
    for t in ts:
        if t.dim() > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t.dim()}D")
        if t.dtype != ts[0].dtype or t.device != ts[0].device:
            raise RuntimeError("torch.meshgrid: Expected all tensors in the list to have the same dtype and device")
    flat = [t.reshape(-1) for t in ts]
    swap = indexing == "xy" and len(flat) >= 2  # torch: swap the first two inputs, grid "ij", swap back
    if swap:
        flat[0], flat[1] = flat[1], flat[0]
    shape = [t.numel() for t in flat]
    grids = []
    for i, t in enumerate(flat):
        view = [1] * len(flat)
        view[i] = shape[i]
        grids.append(t.view(view).expand(shape))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def cartesian_prod(*tensors):
    ts = _tensors("cartesian_prod", tensors)
    for t in ts:
        if t.dim() != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(ts) == 1:
        return ts[0]
    return _C.stack([g.reshape(-1) for g in meshgrid(*ts, indexing="ij")], 1)


def combinations(input, r=2, with_replacement=False):
    _check_tensor("combinations", input)
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return _C.empty(0, dtype=input.dtype, device=input.device)
    n = input.shape[0]
    idx = _C.arange(n, device=input.device)
    grids = meshgrid(*([idx] * r), indexing="ij")
    mask = _C.ones(grids[0].shape, dtype=_C.bool, device=input.device)
    for a, b in zip(grids[:-1], grids[1:]):
        mask = mask & (a <= b if with_replacement else a < b)
    cols = [input.index_select(0, g[mask]) for g in grids]
    return _C.stack(cols, 1)


def unravel_index(indices, shape):
    """Flat indices into coordinates of `shape` (floor division and remainder, as torch: no bounds
    check, negative indices count from the end)."""
    _check_tensor("unravel_index", indices, "indices")
    if indices.is_floating_point() or indices.dtype == _C.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {str(indices.dtype).replace('ampc', 'torch')}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    for s in shape:
        if s < 0:
            raise ValueError("'shape' cannot have negative values, but got " + str(shape))
    idx = indices.to(_C.int64)
    coords = []
    for s in reversed(shape):
        coords.append(_C.remainder(idx, s) if s else idx * 0)
        idx = _C.floor_divide(idx, s) if s else idx
    return tuple(reversed(coords))


# ---------------------------------------------------------------- comparisons


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    _check_tensor("isclose", input)
    _check_tensor("isclose", other, "other", 2)
    if input.dtype != other.dtype:
        raise RuntimeError(f"{_dt(input.dtype)} did not match {_dt(other.dtype)}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    close = input == other
    if equal_nan and input.is_floating_point():
        close = close | (_C.isnan(input) & _C.isnan(other))
    if rtol == 0 and atol == 0:
        return close
    a, b = input, other
    if not a.is_floating_point():
        a, b = a.to(_C.get_default_dtype()), b.to(_C.get_default_dtype())
    diff = (a - b).abs()
    tol = atol + rtol * b.abs()
    return close | (_C.isfinite(diff) & (diff <= tol))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return builtins.bool(isclose(input, other, rtol, atol, equal_nan).all())


def equal(input, other):
    _check_tensor("equal", input)
    _check_tensor("equal", other, "other", 2)
    if input.device != other.device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                           f"{other.device} and {input.device}!")
    if tuple(input.shape) != tuple(other.shape):
        return False
    return builtins.bool((input == other).all())


# ---------------------------------------------------------------- products


def outer(input, vec2, *, out=None):
    _check_tensor("outer", input)
    _check_tensor("outer", vec2, "vec2", 2)
    for name, t in (("self", input), ("vec2", vec2)):
        if t.dim() != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t.dim()}-D")
    return _into(out, input.unsqueeze(1) * vec2, "outer")


def ger(input, vec2, *, out=None):
    return outer(input, vec2, out=out)


@autocast_policy(cuda='promote')
def tensordot(a, b, dims=2, out=None):
    _check_tensor("tensordot", a, "a")
    _check_tensor("tensordot", b, "b", 2)
    if isinstance(dims, Tensor):
        dims = dims.item() if dims.dim() == 0 else dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > builtins.min(a.dim(), b.dim()):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        da, db = list(range(a.dim() - dims, a.dim())), list(range(dims))
    else:
        if len(dims) != 2:
            raise RuntimeError("tensordot expects dims to be a pair of lists of dims")
        da, db = ([d] if isinstance(d, int) else list(d) for d in dims)
    if len(da) != len(db):
        raise RuntimeError(f"both dimension lists should have same length, but got {len(da)} and {len(db)}")
    da = [_wrap_dim(d, a.dim()) for d in da]
    db = [_wrap_dim(d, b.dim()) for d in db]
    for x, y in zip(da, db):
        if a.shape[x] != b.shape[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[x]} in dim {x} "
                               f"and second has size {b.shape[y]} in dim {y}")
    keep_a = [d for d in range(a.dim()) if d not in da]
    keep_b = [d for d in range(b.dim()) if d not in db]
    k = math.prod(a.shape[d] for d in da)
    ma = a.permute(keep_a + da).reshape(math.prod(a.shape[d] for d in keep_a), k)
    mb = b.permute(db + keep_b).reshape(k, math.prod(b.shape[d] for d in keep_b))
    result = _C.mm(ma, mb).reshape([a.shape[d] for d in keep_a] + [b.shape[d] for d in keep_b])
    return _into(out, result, "tensordot")


def inner(input, other, *, out=None):
    _check_tensor("inner", input)
    _check_tensor("inner", other, "other", 2)
    if input.dim() == 0 or other.dim() == 0:
        return _into(out, input * other, "inner")
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    return _into(out, tensordot(input, other, ([-1], [-1])), "inner")


@autocast_policy(cuda='promote')
def vdot(input, other, *, out=None):
    _check_tensor("vdot", input)
    _check_tensor("vdot", other, "other", 2)
    return _into(out, _C.dot(input, other), "vdot")


def kron(input, other, *, out=None):
    _check_tensor("kron", input)
    _check_tensor("kron", other, "other", 2)
    nd = builtins.max(input.dim(), other.dim())
    a = input.reshape((1,) * (nd - input.dim()) + tuple(input.shape))
    b = other.reshape((1,) * (nd - other.dim()) + tuple(other.shape))
    # a[i0, 1, i1, 1, ...] * b[1, j0, 1, j1, ...] -> (i0*j0, i1*j1, ...)
    ia = [s for d in a.shape for s in (d, 1)]
    ib = [s for d in b.shape for s in (1, d)]
    result = (a.reshape(ia) * b.reshape(ib)).reshape([x * y for x, y in zip(a.shape, b.shape)])
    return _into(out, result, "kron")


def _beta_alpha(fname, input, product, beta, alpha):
    if not input.is_floating_point() and (isinstance(beta, float) or isinstance(alpha, float)):
        raise RuntimeError("For integral input tensors, argument beta must not be a floating point number.")
    scaled = product if alpha == 1 else product * alpha
    if beta == 0:  # torch ignores input then: nan and inf in it do not propagate
        return scaled.expand(broadcast_shapes(input.shape, scaled.shape)).contiguous()
    return (input if beta == 1 else input * beta) + scaled


@autocast_policy(cuda='lower_precision_fp')
def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    _check_tensor("addr", input)
    return _into(out, _beta_alpha("addr", input, outer(vec1, vec2), beta, alpha), "addr")


@autocast_policy(cuda='lower_precision_fp')
def addmv(input, mat, vec, *, beta=1, alpha=1, out=None):
    _check_tensor("addmv", input)
    _check_tensor("addmv", mat, "mat", 2)
    _check_tensor("addmv", vec, "vec", 3)
    return _into(out, _beta_alpha("addmv", input, _C.mv(mat, vec), beta, alpha), "addmv")


@autocast_policy(cuda='lower_precision_fp', cpu='lower_precision_fp')
def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    _check_tensor("addbmm", input)
    _check_tensor("addbmm", batch1, "batch1", 2)
    _check_tensor("addbmm", batch2, "batch2", 3)
    if batch1.dim() != 3 or batch2.dim() != 3:
        raise RuntimeError(f"batch1 must be a 3D tensor" if batch1.dim() != 3 else "batch2 must be a 3D tensor")
    return _into(out, _beta_alpha("addbmm", input, _C.bmm(batch1, batch2).sum(0), beta, alpha), "addbmm")


@autocast_policy(cuda='lower_precision_fp')
def chain_matmul(*matrices, out=None):
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch release. "
                  "Use torch.linalg.multi_dot instead", UserWarning, stacklevel=2)
    ms = _tensors("chain_matmul", matrices)
    if not ms:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for m in ms:
        if m.dim() != 2:
            raise RuntimeError(f"Tensor dimension is {m.dim()}, expected 2 instead.")
    result = ms[0].clone() if len(ms) == 1 else ms[0]
    for m in ms[1:]:
        result = _C.mm(result, m)
    return _into(out, result, "chain_matmul")


def matrix_power(input, n, *, out=None):
    _check_tensor("matrix_power", input)
    if input.dim() < 2 or input.shape[-1] != input.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are "
                           f"{input.shape[-2] if input.dim() >= 2 else 1} by {input.shape[-1] if input.dim() else 1} "
                           "matrices")
    n = n.__index__()
    if n < 0:
        raise NotImplementedError("matrix_power: a negative n needs the matrix inverse (linalg.inv), which ampc "
                                  "does not have yet")
    if n == 0:
        eye = _C.eye(input.shape[-1], dtype=input.dtype, device=input.device)
        return _into(out, eye.expand(input.shape).clone(), "matrix_power")
    result, base = None, input
    while n:  # square and multiply: log2(n) matmuls
        if n & 1:
            result = base if result is None else _C.matmul(result, base)
        n >>= 1
        if n:
            base = _C.matmul(base, base)
    return _into(out, result.clone() if result is input else result, "matrix_power")


@autocast_policy(cpu='fp32')
def trace(input):
    _check_tensor("trace", input)
    if input.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.dim()}")
    rows, cols = input.shape
    n = builtins.min(rows, cols)
    flat = input.reshape(-1)
    diag = flat[0:(n - 1) * (cols + 1) + 1:cols + 1] if n else flat[0:0]
    return diag.sum()


@autocast_policy(cuda='promote')
def cross(input, other, dim=None, *, out=None):
    _check_tensor("cross", input)
    _check_tensor("cross", other, "other", 2)
    if input.dim() != other.dim():
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    shape = broadcast_shapes(input.shape, other.shape)
    a, b = input.expand(shape), other.expand(shape)
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
                      "explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to agree "
                      "with that of linalg.cross in a future release.", UserWarning, stacklevel=2)
        dim = next((d for d, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    dim = _wrap_dim(dim, len(shape))
    if shape[dim] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[dim] if dim < input.dim() else 1} "
                           f"and {other.shape[dim] if dim < other.dim() else 1}")
    ax = [a.narrow(dim, i, 1) for i in range(3)]
    bx = [b.narrow(dim, i, 1) for i in range(3)]
    result = _C.cat([ax[1] * bx[2] - ax[2] * bx[1], ax[2] * bx[0] - ax[0] * bx[2], ax[0] * bx[1] - ax[1] * bx[0]], dim)
    return _into(out, result, "cross")


def block_diag(*tensors):
    ts = _tensors("block_diag", tensors)
    mats = []
    for i, t in enumerate(ts):
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.dim()} dimensions")
        mats.append(t.reshape(1, -1) if t.dim() == 1 else t.reshape(1, 1) if t.dim() == 0 else t)
    if not mats:
        return _C.empty(1, 0, device=None)  # torch: on the default device
    dtype = mats[0].dtype
    for m in mats[1:]:
        dtype = _C.promote_types(dtype, m.dtype)
    total = builtins.sum(m.shape[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        m = m.to(dtype)
        right = total - left - m.shape[1]
        parts = []
        if left:
            parts.append(_C.zeros(m.shape[0], left, dtype=dtype, device=m.device))
        parts.append(m)
        if right:
            parts.append(_C.zeros(m.shape[0], right, dtype=dtype, device=m.device))
        rows.append(_C.cat(parts, 1) if len(parts) > 1 else m)
        left += m.shape[1]
    return _C.cat(rows, 0)


def vander(x, N=None, increasing=False):
    _check_tensor("vander", x, "x")
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dtype = _C.promote_types(x.dtype, _C.int64)
    powers = _C.arange(n, device=x.device, dtype=dtype)
    if not increasing:
        powers = (n - 1) - powers
    return _C.pow(x.to(dtype).unsqueeze(1), powers)


from . import _blend, _factories, _stats  # noqa: E402  (after the helpers above, which they import)

FUNCTIONS = {name: obj for name, obj in globals().items()
             if callable(obj) and not name.startswith("_") and getattr(obj, "__module__", None) == __name__}
FUNCTIONS["row_stack"] = vstack
FUNCTIONS.update(_stats.FUNCTIONS)
FUNCTIONS.update(_factories.FUNCTIONS)
FUNCTIONS.update(_blend.FUNCTIONS)


# Tensor methods torch has for these functions (x.outer(y), x.addmv(m, v), x.addr_(a, b), ...).
def _inplace(fn):
    def method(self, *args, **kwargs):
        return self.copy_(fn(self, *args, **kwargs))
    method.__name__ = fn.__name__ + "_"
    return method


FUNCTIONS["addmv_"] = _inplace(addmv)

TENSOR_METHODS = {
    **{name: FUNCTIONS[name] for name in ("outer", "ger", "inner", "vdot", "kron", "addr", "addmv", "addbmm",
                                          "matrix_power", "trace", "cross", "isclose",
                                          "allclose", "equal")},
    **{name: _stats.FUNCTIONS[name] for name in ("dist", "cov", "corrcoef")},
    **_blend.FUNCTIONS, "lerp_": _inplace(_blend.lerp), "addcmul_": _inplace(_blend.addcmul),
    "addcdiv_": _inplace(_blend.addcdiv),
    "addr_": _inplace(addr), "addmm_": _inplace(_C.addmm), "baddbmm_": _inplace(_C.baddbmm), "addmv_": _inplace(addmv), "addbmm_": _inplace(addbmm),
}

