"""nn.functional's pooling and normalisation functions beyond the 2-d core ones (issue 13).

3-d pools, adaptive max pools and rms_norm are C kernels (core/nn_poolnorm.c, one kernel schema for
every spatial rank); the 1-d pools are the 2-d ones over (N, C, 1, L), as PyTorch computes them
(so their grad_fn is SqueezeBackward1, as in torch). lp_pool, max_unpool, instance_norm and
local_response_norm compose other ops exactly as torch.nn.functional / ATen compose them.
"""
import math
import numbers

from .. import _C
from . import functional as _F

__all__ = [
    "max_pool1d", "max_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
    "avg_pool1d", "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool3d",
    "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices",
    "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_unpool1d", "max_unpool2d", "max_unpool3d",
    "instance_norm", "rms_norm", "local_response_norm",
]

_WORDS = {1: "one", 2: "two", 3: "three"}


def _sizes(x, n, op, what, allow_empty=False):
    """int or sequence of 1 or n ints -> n-tuple, with ATen's messages (op: 'max_pool3d')."""
    if x is None or (allow_empty and isinstance(x, (list, tuple)) and len(x) == 0):
        return None
    if isinstance(x, (list, tuple)):
        if len(x) == 1:
            return (int(x[0]),) * n
        if len(x) != n:
            if what == "stride":
                raise RuntimeError(f"{op}: stride must either be omitted, a single int, or a tuple of {_WORDS[n]} ints")
            if what == "dilation":
                raise RuntimeError(f"{op}: dilation must be either a single int, or a tuple of {_WORDS[n]} ints")
            must = "must be a single int" if op.startswith("avg") else "must either be a single int"
            raise RuntimeError(f"{op}: {what} {must}, or a tuple of {_WORDS[n]} ints")
        return tuple(int(v) for v in x)
    return (int(x),) * n


def _stride(stride, kernel, n, op):
    s = _sizes(stride, n, op, "stride", allow_empty=True)
    if s is None:
        return kernel
    if any(v == 0 for v in s):
        raise RuntimeError("stride should not be zero")
    return s


def _one(x, op, what):
    """The 1-d pools' int-or-1-sequence argument."""
    if isinstance(x, (list, tuple)):
        if len(x) != 1:
            raise RuntimeError(f"{op}() {what} must be an int, list of ints or tuple of ints of size 1 but got size "
                               f"{len(x)}")
        return int(x[0])
    return int(x)


def _check_1d_rank(input, op):
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor for argument #1 "
                           f"'self' (while checking arguments for {op})")


# ---------------------------------------------------------------- max pooling

def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    k = _one(kernel_size, "max_pool1d", "kernel_size")
    s = k if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) else \
        _one(stride, "max_pool1d", "stride")
    p, d = _one(padding, "max_pool1d", "padding"), _one(dilation, "max_pool1d", "dilation")
    if input.dim() not in (2, 3) or input.shape[-2] == 0 or input.shape[-1] == 0:
        raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for "
                           f"input, but got:{list(input.shape)}")
    for name, v, low in (("kernel_size", k, 1), ("stride", s, 1), ("dilation", d, 1)):
        if v < low:
            raise RuntimeError(f"max_pool1d() {name} must be greater than zero, but got {v}")
    if p < 0:
        raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {p}")
    if p > k // 2:
        raise RuntimeError(f"max_pool1d() padding should be at most half of kernel size, but got padding={p} and "
                           f"kernel_size={k}")
    y, ind = _C._nn_max_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, p), (1, d), bool(ceil_mode), True)
    return y.squeeze(-2), ind.squeeze(-2)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    out = max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return out if return_indices else out[0]


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return _F.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    k = _sizes(kernel_size, 3, "max_pool3d", "kernel_size")
    return _C._nn_max_pool3d(input, k, _stride(stride, k, 3, "max_pool3d"), _sizes(padding, 3, "max_pool3d", "padding"),
                             _sizes(dilation, 3, "max_pool3d", "dilation"), bool(ceil_mode), True)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    k = _sizes(kernel_size, 3, "max_pool3d", "kernel_size")
    return _C._nn_max_pool3d(input, k, _stride(stride, k, 3, "max_pool3d"), _sizes(padding, 3, "max_pool3d", "padding"),
                             _sizes(dilation, 3, "max_pool3d", "dilation"), bool(ceil_mode), bool(return_indices))


# ---------------------------------------------------------------- average pooling

def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    _check_1d_rank(input, "avg_pool1d")
    k = _one(kernel_size, "avg_pool1d", "kernel_size")
    s = k if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) else \
        _one(stride, "avg_pool1d", "stride")
    if s == 0:
        raise RuntimeError("stride should not be zero")
    y = _F.avg_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, _one(padding, "avg_pool1d", "padding")), ceil_mode,
                      count_include_pad)
    return y.squeeze(-2)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    k = _sizes(kernel_size, 3, "avg_pool3d", "kernel_size")
    if divisor_override is not None and int(divisor_override) == 0:
        raise RuntimeError("divisor must be not zero")
    return _C._nn_avg_pool3d(input, k, _stride(stride, k, 3, "avg_pool3d"), _sizes(padding, 3, "avg_pool3d", "padding"),
                             bool(ceil_mode), bool(count_include_pad), int(divisor_override or 0))


# ---------------------------------------------------------------- adaptive pooling

def _out_size(output_size, n, op):
    """int or n-sequence with None for 'keep' -> n ints (-1 keeps)."""
    if isinstance(output_size, (list, tuple)):
        if len(output_size) != n:
            if op == "adaptive_max_pool3d":
                raise RuntimeError(f"{op}(): internal error: output_size.size() must be {n}")
            raise RuntimeError(f"{op}: output_size must be {n}")
        return tuple(-1 if v is None else int(v) for v in output_size)
    return (int(output_size),) * n


def _out_size_1d(output_size, op):
    if isinstance(output_size, (list, tuple)):
        if len(output_size) != 1:
            raise RuntimeError(f"{op}() argument 'output_size' should contain one int (got {len(output_size)})")
        output_size = output_size[0]
    return int(output_size)


def adaptive_avg_pool1d(input, output_size):
    _check_1d_rank(input, "adaptive_avg_pool1d")
    o = _out_size_1d(output_size, "adaptive_avg_pool1d")
    return _F.adaptive_avg_pool2d(input.unsqueeze(-2), (1, o)).squeeze(-2)


def adaptive_avg_pool3d(input, output_size):
    return _C._nn_adaptive_avg_pool3d(input, _out_size(output_size, 3, "adaptive_avg_pool3d"))


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    _check_1d_rank(input, "adaptive_max_pool1d")
    o = _out_size_1d(output_size, "adaptive_max_pool1d")
    y, ind = _C._nn_adaptive_max_pool(input.unsqueeze(-2), (1, o), True)
    return y.squeeze(-2), ind.squeeze(-2)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    return _C._nn_adaptive_max_pool(input, _out_size(output_size, 2, "adaptive_max_pool2d"), True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    return _C._nn_adaptive_max_pool(input, _out_size(output_size, 3, "adaptive_max_pool3d"), True)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    out = adaptive_max_pool1d_with_indices(input, output_size)
    return out if return_indices else out[0]


def adaptive_max_pool2d(input, output_size, return_indices=False):
    return _C._nn_adaptive_max_pool(input, _out_size(output_size, 2, "adaptive_max_pool2d"), bool(return_indices))


def adaptive_max_pool3d(input, output_size, return_indices=False):
    return _C._nn_adaptive_max_pool(input, _out_size(output_size, 3, "adaptive_max_pool3d"), bool(return_indices))


# ---------------------------------------------------------------- power-average pooling (torch's composition)

def _lp_finish(out, norm_type, window):
    M = _F._ampc()
    return (M.sign(out) * _F.relu(M.abs(out))).mul(window).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    out = avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, _one(kernel_size, "avg_pool1d", "kernel_size"))


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    kh, kw = _F._ntuple(kernel_size, 2, "kernel_size")
    out = _F.avg_pool2d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, kw * kh)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    kd, kh, kw = _sizes(kernel_size, 3, "avg_pool3d", "kernel_size")
    out = avg_pool3d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, kd * kh * kw)


# ---------------------------------------------------------------- max unpooling

def _unpool_output_size(input, kernel, stride, padding, output_size, n):
    default = [(input.shape[input.dim() - n + d] - 1) * stride[d] + kernel[d] - 2 * padding[d] for d in range(n)]
    if output_size is None:
        return default
    output_size = list(output_size)
    if len(output_size) == n + 2 or (len(output_size) == n + 1 and input.dim() == n + 1):
        output_size = output_size[-n:]
    if len(output_size) != n:
        raise ValueError(f"output_size should be a sequence containing {n} or {n + 2} elements, but it has a length "
                         f"of '{len(output_size)}'")
    for d in range(n):
        lo = default[d] - stride[d]
        hi = default[d] + stride[d]
        if not lo < output_size[d] < hi:
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between {lo} and {hi})')
    return [int(v) for v in output_size]


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, n):
    name = f"max_unpool{n}d"
    kernel = _sizes(kernel_size, n, name, "kernel_size")
    stride = kernel if stride is None else _sizes(stride, n, name, "stride")
    padding = _sizes(padding, n, name, "padding")
    out = _unpool_output_size(input, kernel, stride, padding, output_size, n)
    if indices.dtype != _F._ampc().int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: {indices.dtype}")
    if input.dim() not in (n + 1, n + 2):
        raise RuntimeError(f"Input to {name} should be a {n + 1}d or {n + 2}d Tensor, but got a tensor with "
                           f"{input.dim()} dimensions.")
    if tuple(input.shape) != tuple(indices.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: {list(indices.shape)}")
    lead = tuple(input.shape[:input.dim() - n])
    volume = math.prod(out)
    flat_x = input.reshape(*lead, -1)
    flat_i = indices.reshape(*lead, -1)
    if flat_i.numel() > 0:
        lo, hi = int(flat_i.min()), int(flat_i.max())
        if lo < 0 or hi >= volume:
            bad = lo if lo < 0 else hi
            raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                               f"{'x'.join(str(v) for v in out)})")
    y = _F._ampc().zeros(*lead, volume, dtype=input.dtype, device=input.device)
    # the plane scatter torch's max_unpool kernels do (a later duplicate index overwrites)
    y = y.scatter(flat_i.dim() - 1, flat_i, flat_x)
    return y.reshape(*lead, *out)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3)


# ---------------------------------------------------------------- normalisation

def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """ATen's instance_norm: batch_norm over (1, N * C, *) with the per-channel tensors repeated N
    times; the running stats are then the mean over N of the updated copies."""
    M = _F._ampc()
    if use_input_stats:
        size = input.shape
        if math.prod(size[2:]) == 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input size {size}")
    b, c = input.shape[0], input.shape[1]

    def rep(t):
        return None if t is None else t.repeat(b)

    rm, rv = rep(running_mean), rep(running_var)
    x = input.contiguous().view(1, b * c, *input.shape[2:])
    out = _F.batch_norm(x, rm, rv, rep(weight), rep(bias), use_input_stats, momentum, eps)
    with M.no_grad():
        if running_mean is not None:
            running_mean.copy_(rm.view(b, c).mean(0))
        if running_var is not None:
            running_var.copy_(rv.view(b, c).mean(0))
    return out.view(input.shape)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    if isinstance(normalized_shape, numbers.Integral):
        normalized_shape = (normalized_shape,)
    return _C._nn_rms_norm(input, tuple(int(s) for s in normalized_shape), weight, None if eps is None else float(eps))


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """torch.nn.functional.local_response_norm's composition: the mean of squares over a window of
    `size` channels (zero-padded), then input / (k + alpha * mean) ** beta."""
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    div = input.mul(input)
    if dim == 3:
        div = div.unsqueeze(1)
        div = _F.pad(div, (0, 0, size // 2, (size - 1) // 2))
        div = _F.avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = input.shape
        div = div.view(sizes[0], 1, sizes[1], sizes[2], -1)
        div = _F.pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1)
        div = div.view(sizes)
    div = div.mul(alpha).add(k).pow(beta)
    return input / div


# ---------------------------------------------------------------- fractional max pooling

__all__ += ["fractional_max_pool2d", "fractional_max_pool3d", "fractional_max_pool2d_with_indices",
            "fractional_max_pool3d_with_indices"]


def _fractional(input, kernel_size, output_size, output_ratio, return_indices, _random_samples, n):
    name = f"fractional_max_pool{n}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    kernel = _sizes(kernel_size, n, name, "kernel_size")
    if output_size is None:
        if n == 2 and isinstance(output_ratio, (list, tuple)) and len(output_ratio) > 2:
            raise ValueError(f"{name} requires output_ratio to either be a single Int or tuple of Ints.")
        ratio = tuple(output_ratio) if isinstance(output_ratio, (list, tuple)) else (output_ratio,) * n
        if len(ratio) == 1:
            ratio = ratio * n
        output_size = [int(input.shape[input.dim() - n + d] * ratio[d]) for d in range(n)]
    output_size = _sizes(output_size, n, name, "output_size")
    if _random_samples is None:
        n_batch = 1 if input.dim() == n + 1 else input.shape[0]
        _random_samples = _F._ampc().rand(n_batch, input.shape[input.dim() - n - 1], n, dtype=input.dtype,
                                          device=input.device)
    return _C._nn_fractional_max_pool(input, kernel, output_size, _random_samples, bool(return_indices))


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                                       _random_samples=None):
    return _fractional(input, kernel_size, output_size, output_ratio, True, _random_samples, 2)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    return _fractional(input, kernel_size, output_size, output_ratio, return_indices, _random_samples, 2)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                                       _random_samples=None):
    return _fractional(input, kernel_size, output_size, output_ratio, True, _random_samples, 3)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    return _fractional(input, kernel_size, output_size, output_ratio, return_indices, _random_samples, 3)
