"""torch.nn.functional's activations and dropout family (issue 13, family act), with torch's signatures.

The pointwise activations are rows of core/ops.def (elu, celu, leaky_relu, hardswish, hardsigmoid,
log_sigmoid, mish, softshrink, hardshrink, prelu; formulas in core/elementwise_math_act.h): one
kernel per call on every backend and dtype, fused backward rows, torch's dtype errors. They are
reached through `_C._act(row, input, p0, p1, inplace)`. Where torch itself composes in Python
(softsign, tanhshrink, softmin, relu6, the dropout masks), so does this file, with torch's
arithmetic, so the draws of `manual_seed` give torch's masks and slopes.
"""
import math
import warnings

import numpy as np

from .. import _C
from . import functional as _F

__all__ = [
    "threshold", "hardtanh", "softplus", "elu", "elu_", "selu", "selu_", "celu", "celu_", "leaky_relu", "leaky_relu_",
    "hardswish", "hardsigmoid", "logsigmoid", "mish", "relu6", "softshrink", "hardshrink", "tanhshrink",
    "softsign", "glu", "prelu", "rrelu", "rrelu_", "softmin",
    "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
]

# torch's SELU constants (Klambauer et al. 2017), as aten's selu passes them to elu
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def threshold(input, threshold, value, inplace=False):
    return _C.threshold(input, threshold, value, inplace=inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):  # inplace positional too, as torch
    return _C.hardtanh(input, min_val, max_val, inplace=inplace)


def softplus(input, beta=1.0, threshold=20.0):
    return _C.softplus(input, beta, threshold)


def elu(input, alpha=1.0, inplace=False):
    return _C._act("elu", input, alpha, 1.0, bool(inplace))


def elu_(input, alpha=1.0):
    return _C._act("elu", input, alpha, 1.0, True)


def selu(input, inplace=False):
    return _C._act("elu", input, _SELU_ALPHA, _SELU_SCALE, bool(inplace))


def selu_(input):
    return _C._act("elu", input, _SELU_ALPHA, _SELU_SCALE, True)


def celu(input, alpha=1.0, inplace=False):
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _C._act("celu", input, alpha, 1.0 / float(alpha), bool(inplace))


def celu_(input, alpha=1.0):
    return celu(input, alpha, True)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _C._act("leaky_relu", input, negative_slope, None, bool(inplace))


def leaky_relu_(input, negative_slope=0.01):
    return _C._act("leaky_relu", input, negative_slope, None, True)


def hardswish(input, inplace=False):
    return _C._act("hardswish", input, None, None, bool(inplace))


def hardsigmoid(input, inplace=False):
    return _C._act("hardsigmoid", input, None, None, bool(inplace))


def mish(input, inplace=False):
    return _C._act("mish", input, None, None, bool(inplace))


def logsigmoid(input):
    return _C._act("log_sigmoid", input, None, None, False)


def relu6(input, inplace=False):
    return _C.hardtanh(input, 0.0, 6.0, inplace=inplace)  # torch's relu6 is hardtanh(0, 6)


_FLOAT_MAX = {"float32": ("Float", 3.4028234663852886e38), "float64": ("Double", 1.7976931348623157e308),
              "float16": ("Half", 65504.0), "bfloat16": ("BFloat16", 3.3895313892515355e38)}


def _dtype_name(t):
    return str(t.dtype).rsplit(".", 1)[-1]


def _in_dtype(value, dtype_name):
    """value rounded to a 16-bit float type (torch's shrink kernels compare with lambd as scalar_t)."""
    if dtype_name == "float16":
        return float(np.float16(value))
    if dtype_name == "bfloat16":  # round to nearest even on the float32 bits
        bits = int(np.array(value, dtype=np.float32).view(np.uint32))
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        return float(np.array(bits, dtype=np.uint32).view(np.float32))
    return value


def softshrink(input, lambd=0.5):
    limit = _FLOAT_MAX.get(_dtype_name(input))
    if limit is not None and not 0 <= lambd <= limit[1]:  # integer inputs fail on their dtype first, as torch
        raise RuntimeError(f"lambda must be in range [0, {limit[1]:g}] for input dtype {limit[0]}, but found "
                           f"{lambd:g}")
    return _C._act("softshrink", input, _in_dtype(lambd, _dtype_name(input)), None, False)


def hardshrink(input, lambd=0.5):
    return _C._act("hardshrink", input, _in_dtype(lambd, _dtype_name(input)), None, False)


def tanhshrink(input):
    return input - input.tanh()


def softsign(input):
    return input / (input.abs() + 1)


def glu(input, dim=-1):
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = dim + input.dim() if dim < 0 else dim
    if not 0 <= d < input.dim():
        raise IndexError(f"Dimension out of range (expected to be in range of [{-input.dim()}, {input.dim() - 1}], "
                         f"but got {dim})")
    n = input.shape[d]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {n}")
    a, b = input.narrow(d, 0, n // 2), input.narrow(d, n // 2, n // 2)
    return a * b.sigmoid()


def prelu(input, weight):
    if weight.dim() > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.dim()}")
    n = weight.numel()
    if n != 1:
        if input.dim() == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = input.shape[1] if input.dim() >= 2 else 1
        if channels != n:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{n} and channel size = {channels}.")
        if input.dim() >= 2:  # (C,) along dim 1
            weight = weight.reshape((1, n) + (1,) * (input.dim() - 2))
    elif weight.dim() == 1:
        weight = weight.reshape(())
    return _C._prelu(input, weight)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Training: each non-positive element gets its own slope r = u (upper - lower) + lower, u a 53-bit
    uniform from the generator in element order and the bounds in the input's opmath type, as torch's
    CPU kernel (rrelu_with_noise); the product is taken in opmath (float for bfloat16). Evaluation:
    leaky_relu with the mean slope."""
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    import ampc
    name = _dtype_name(input)
    if name == "float16" and input.device.type == "cpu":
        raise NotImplementedError("\"rrelu_with_noise_out_cpu\" not implemented for 'Half'")
    if name in ("float32", "bfloat16", "float16"):
        lower, upper = float(np.float32(lower)), float(np.float32(upper))
    opmath = ampc.float64 if name == "float64" else ampc.float32
    with ampc.no_grad():
        negative = input <= 0
        noise = ampc.ones(tuple(input.shape), dtype=opmath, device=input.device)
        count = int(negative.sum())
        if count:
            u = ampc.empty((count,), dtype=ampc.float64, device=input.device).uniform_(0.0, 1.0)
            noise[negative] = u.mul_(upper - lower).add_(lower).to(opmath)  # two roundings, no fma: torch's
    if noise.dtype == input.dtype:
        return input.mul_(noise) if inplace else input * noise
    out = (input.to(opmath) * noise).to(input.dtype)
    return input.copy_(out) if inplace else out


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, True)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _F._softmax_dim(input.dim())
    return _F.softmax(-input, dim, dtype=dtype)


# ---------------------------------------------------------------- the dropout family
# torch's _dropout_impl (aten/src/ATen/native/Dropout.cpp): a noise tensor in the input's dtype
# (one value per element, or per (sample, channel) for feature dropout) drawn by bernoulli_(1 - p),
# then scaled; the input multiplied by it (in place for the `_` forms).

def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _dropout_impl(input, p, train, inplace, feature, alpha):
    if p == 0 or not train or input.numel() == 0:
        return input
    import ampc
    if p == 1:
        zero = ampc.zeros((), dtype=input.dtype, device=input.device)
        return input.mul_(zero) if inplace else input * zero
    if feature:
        if input.dim() < 2:
            raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
        shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    else:
        shape = tuple(input.shape)
    noise = ampc.empty(shape, dtype=input.dtype, device=input.device)
    noise.bernoulli_(1 - p)
    if alpha:
        a_coef = 1.7580993408473766  # torch's alpha: -SELU_ALPHA * SELU_SCALE
        a = 1.0 / math.sqrt((a_coef * a_coef * p + 1) * (1 - p))
        b = noise.add(-1).mul_(a_coef * a).add_(a_coef * a * p)
        noise.mul_(a)
        out = input.mul_(noise) if inplace else input * noise
        return out.add_(b)
    noise.div_(1 - p)
    return input.mul_(noise) if inplace else input * noise


def _unbatched_feature_dropout(input, p, training, inplace, is_batched):
    """torch's unsqueeze(0) / squeeze(0) around an unbatched input; in place through the view, which
    writes the input's memory, so the input itself is the result (torch: unsqueeze_, squeeze_)."""
    if is_batched:
        return _dropout_impl(input, p, training, inplace, True, False)
    result = _dropout_impl(input.unsqueeze(0), p, training, inplace, True, False)
    return input if inplace else result.squeeze(0)


def dropout(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    if inplace:
        return _dropout_impl(input, p, training, True, False, False)
    return _C._nn_dropout(input, float(p), bool(training))


def dropout1d(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    inp_dim = input.dim()
    if inp_dim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {inp_dim}D input. "
            "Note that dropout1d exists to provide channel-wise dropout on inputs with 1 "
            "spatial dimension, a channel dimension, and an optional batch dimension "
            "(i.e. 2D or 3D inputs).")
    return _unbatched_feature_dropout(input, p, training, inplace, inp_dim == 3)


def dropout2d(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    inp_dim = input.dim()
    if inp_dim not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {inp_dim}-D input to dropout2d, which is deprecated "
            "and will result in an error in a future release. To retain the behavior "
            "and silence this warning, please use dropout instead. Note that dropout2d "
            "exists to provide channel-wise dropout on inputs with 2 spatial dimensions, "
            "a channel dimension, and an optional batch dimension (i.e. 3D or 4D inputs).", stacklevel=2)
    if inp_dim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise "
            "1D dropout behavior is desired - input is interpreted as shape (N, C, L), where C "
            "is the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.", stacklevel=2)
    return _dropout_impl(input, p, training, inplace, True, False)


def dropout3d(input, p=0.5, training=True, inplace=False):
    _check_p(p)
    inp_dim = input.dim()
    if inp_dim not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {inp_dim}-D input to dropout3d, which is deprecated "
            "and will result in an error in a future release. To retain the behavior "
            "and silence this warning, please use dropout instead. Note that dropout3d "
            "exists to provide channel-wise dropout on inputs with 3 spatial dimensions, "
            "a channel dimension, and an optional batch dimension (i.e. 4D or 5D inputs).", stacklevel=2)
    return _unbatched_feature_dropout(input, p, training, inplace, inp_dim == 5)


def _feature_dropout(input, p, train, inplace):
    """torch.feature_dropout(input, p, train): dropout2d's draw without its dimension checks."""
    _check_p(p)
    return _dropout_impl(input, p, train, inplace, True, False)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    _check_p(p)
    return _dropout_impl(input, p, training, inplace, False, True)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    _check_p(p)
    return _dropout_impl(input, p, training, inplace, True, True)


# ---------------------------------------------------------------- distances, normalisation, lookups
# torch's compositions (aten/src/ATen/native/Distance.cpp, Embedding.cpp, EmbeddingBag.cpp,
# functional.py), each a handful of C kernels: no loop over elements here.

__all__ += ["normalize", "one_hot", "cosine_similarity", "pairwise_distance", "bilinear", "embedding",
            "embedding_bag"]


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    if out is None:
        return input / denom
    return out.copy_(input / denom)


def one_hot(tensor, num_classes=-1):
    import ampc
    if tensor.dtype != ampc.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if tensor.numel() == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(tensor.max()) + 1
    elif num_classes < -1:
        raise RuntimeError("num_classes should be positive")
    if tensor.numel() > 0:
        if int(tensor.min()) < 0:
            raise RuntimeError("Class values must be non-negative.")
        if int(tensor.max()) >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    out = ampc.zeros(tuple(tensor.shape) + (int(num_classes),), dtype=ampc.int64, device=tensor.device)
    if tensor.numel() > 0:
        out.scatter_(-1, tensor.unsqueeze(-1), 1)
    return out


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1/|x1| * x2/|x2|) along dim, each norm clamped to eps, as torch's cosine_similarity."""
    import ampc
    common = ampc.result_type(x1, x2)
    if not common.is_floating_point:
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is {_torch_name(common)}")
    x1, x2 = x1.to(common), x2.to(common)
    shape = ampc.broadcast_shapes(x1.shape, x2.shape)
    x1, x2 = x1.expand(shape), x2.expand(shape)
    n1 = x1.norm(2, dim, keepdim=True).clamp_min(eps)
    n2 = x2.norm(2, dim, keepdim=True).clamp_min(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def _torch_name(dtype):
    names = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
             "int32": "Int", "uint8": "Byte", "bool": "Bool"}
    return names.get(str(dtype).rsplit(".", 1)[-1], str(dtype))


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The p-norm of x1 - x2 + eps over the last dim (torch's pairwise_distance)."""
    output_dim = max(x1.dim(), x2.dim())
    return (x1 - x2 + eps).norm(p, output_dim - 1, keepdim=keepdim)


def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = sum_ij x1[..., i] W[o, i, j] x2[..., j] + b[o]: one GEMM for x1 W, then the j sum."""
    if input1.dim() != input2.dim():
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.dim()} and {input2.dim()}")
    for i in range(input1.dim() - 1):
        if input1.shape[i] != input2.shape[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match: got {input1.shape[i]} and "
                               f"{input2.shape[i]}")
    if input1.shape[-1] != weight.shape[1]:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got {input1.shape[-1]} but "
                           f"expected {weight.shape[1]}")
    if input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got {input2.shape[-1]} but "
                           f"expected {weight.shape[2]}")
    if bias is not None and bias.shape[0] != weight.shape[0]:
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got {bias.shape[0]} but expected "
                           f"{weight.shape[0]}")
    out_f, in1, in2 = weight.shape
    lead = tuple(input1.shape[:-1])
    x1 = input1.reshape(-1, in1)                                  # (N, in1)
    w = weight.permute(1, 0, 2).reshape(in1, out_f * in2)         # (in1, out * in2)
    t = (x1 @ w).reshape(-1, out_f, in2)                          # (N, out, in2)
    y = (t * input2.reshape(-1, 1, in2)).sum(-1)                  # (N, out)
    if bias is not None:
        y = y + bias
    return y.reshape(lead + (out_f,))


def _embedding_renorm_(weight, input, max_norm, norm_type):
    """torch's embedding_renorm_ (no grad): each row the input names, once, scaled to max_norm when
    its norm exceeds it (scale max_norm / (norm + 1e-7))."""
    import ampc
    with ampc.no_grad():
        idx = ampc.unique(input.reshape(-1))
        if idx.numel() == 0:
            return
        rows = weight.index_select(0, idx)
        norms = rows.norm(norm_type, 1, keepdim=True)
        scale = ampc.where(norms > max_norm, max_norm / (norms + 1e-7), ampc.ones_like(norms))
        weight[idx] = rows * scale


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    if sparse:
        raise NotImplementedError("ampc: embedding(sparse=True): ampc has no sparse gradient layout; "
                                  "sparse=False gives the same values with a dense gradient")
    if padding_idx is not None:
        padding_idx = int(padding_idx)
        if padding_idx > 0:
            if padding_idx >= weight.shape[0]:
                raise AssertionError("Padding_idx must be within num_embeddings")
        elif padding_idx < 0:
            if padding_idx < -weight.shape[0]:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = weight.shape[0] + padding_idx
    if max_norm is not None:
        input = input.contiguous()
        _embedding_renorm_(weight, input, max_norm, norm_type)
    return _C._nn_embedding(weight, input, padding_idx, bool(scale_grad_by_freq))


_BAG_MODES = ("sum", "mean", "max")


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sums, means or maxima of bags of embedding rows (torch's embedding_bag): the rows are one
    embedding gather, the bags one index_add (sum, mean) or scatter_reduce (max) over the entries'
    bag numbers (a searchsorted of the offsets). Padding entries take no part, an empty bag is 0."""
    import ampc
    if weight.dtype == ampc.int64 and input.is_floating_point():
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage `embedding_bag(weight, "
                      "input, ...)` is deprecated, and should now be `embedding_bag(input, weight, ...)`.",
                      stacklevel=2)
        weight, input = input, weight
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, "
                         f"then it must have the same shape as the input ({input.shape})")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        offsets = ampc.arange(0, input.numel(), input.shape[1], dtype=input.dtype, device=input.device)
        include_last_offset = False
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if mode not in _BAG_MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  "GitHub.")
    if sparse:
        raise NotImplementedError("ampc: embedding_bag(sparse=True): ampc has no sparse gradient layout")
    if padding_idx is not None:
        padding_idx = int(padding_idx)
        if not -weight.shape[0] <= padding_idx < weight.shape[0]:
            raise AssertionError("padding_idx must be within the number of embeddings")
        padding_idx %= weight.shape[0]
    offsets = offsets.to(device=input.device, dtype=ampc.int64)
    n, dim = input.numel(), weight.shape[1]
    bags = offsets.numel() - 1 if include_last_offset else offsets.numel()
    if offsets.numel() > 0:
        if int(offsets[0]) != 0:
            raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                               f"position 0. However, got {int(offsets[0])}")
        if int(offsets[-1]) > n:
            raise RuntimeError(f"offsets[-1] can not be greater than input's length {n}, but got {int(offsets[-1])}")
    out_shape = (max(bags, 0), dim)
    if n == 0 or bags <= 0:
        return ampc.zeros(out_shape, dtype=weight.dtype, device=weight.device) + weight.sum() * 0
    input = input.reshape(-1).to(ampc.int64)
    position = ampc.arange(n, device=input.device)
    with ampc.no_grad():
        starts = offsets[:bags]
        bag = ampc.searchsorted(starts.contiguous(), position, right=True) - 1   # (n,) the entry's bag
        keep = position < int(offsets[-1]) if include_last_offset else ampc.ones_like(position, dtype=ampc.bool)
        if padding_idx is not None:
            keep = keep & (input != padding_idx)
        kept = keep.nonzero().reshape(-1)
        bag_kept = bag[kept]
    rows = embedding(input[kept], weight, None, None, 2.0, scale_grad_by_freq)    # (k, D)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.reshape(-1)[kept].unsqueeze(1)
    zeros = ampc.zeros(out_shape, dtype=rows.dtype, device=weight.device)
    if mode == "max":
        index = bag_kept.unsqueeze(1).expand(bag_kept.numel(), dim)
        out = zeros.scatter_reduce(0, index, rows, "amax", include_self=False)
        return out
    out = zeros.index_add(0, bag_kept, rows)
    if mode == "mean":
        counts = ampc.zeros((bags,), dtype=rows.dtype, device=weight.device).index_add(
            0, bag_kept, ampc.ones((bag_kept.numel(),), dtype=rows.dtype, device=weight.device))
        out = out / counts.clamp_min(1).unsqueeze(1)
    return out

