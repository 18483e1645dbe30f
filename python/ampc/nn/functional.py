"""ampc.nn.functional: torch.nn.functional's signatures over ampc's C core (core/nn_ops.h).

Thin by design: argument normalization (int-or-tuple sizes, padding="same", reduction strings,
PyTorch's legacy size_average/reduce) happens here; shapes, dtypes, kernels and gradients are the
C core's. Activations are the elementwise ops of ampc itself.
"""
import math
import sys
import warnings

from .. import _C

__all__ = [
    "linear", "conv1d", "conv2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "batch_norm", "layer_norm",
    "group_norm", "embedding", "dropout", "relu", "gelu", "silu", "sigmoid", "tanh", "softmax", "log_softmax",
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "scaled_dot_product_attention", "pad",
]

_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _ampc():
    return sys.modules["ampc"]


def _ntuple(x, n, name):
    if isinstance(x, (list, tuple)):
        if len(x) == 1:
            return tuple(int(x[0]) for _ in range(n))
        if len(x) != n:
            raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} values to match the "
                               f"convolution dimensions, but got {name}={list(x)}")
        return tuple(int(v) for v in x)
    return (int(x),) * n


def _reduction(reduction, size_average=None, reduce=None):
    """PyTorch's _Reduction.legacy_get_string, then the string to the core's enum."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "none" if not reduce else ("mean" if size_average else "sum")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return _REDUCTIONS[reduction]


# ---------------------------------------------------------------- linear and convolution

def linear(input, weight, bias=None):
    return _C._nn_linear(input, weight, bias)


def _conv_geometry(weight, stride, padding, dilation, n):
    """(stride, dilation, low pads, high pads) of an n-d convolution, padding='same'/'valid' resolved
    as torch's (an odd total pad puts the extra element at the end)."""
    stride = _ntuple(stride, n, "stride")
    dilation = _ntuple(dilation, n, "dilation")
    kernel = tuple(weight.shape[2:]) if weight.dim() == n + 2 else (1,) * n
    if isinstance(padding, str):
        if padding == "valid":
            lo = hi = (0,) * n
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            total = [d * (k - 1) for d, k in zip(dilation, kernel)]
            lo = tuple(t // 2 for t in total)
            hi = tuple(t - t // 2 for t in total)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        lo = hi = _ntuple(padding, n, "padding")
    return stride, dilation, lo, hi


def _conv(input, weight, bias, stride, padding, dilation, groups, n):
    stride, dilation, lo, hi = _conv_geometry(weight, stride, padding, dilation, n)
    if n == 1:  # the core takes (h, w); a 1-d convolution lives in w
        stride, lo, hi, dilation = (1,) + stride, (0,) + lo, (0,) + hi, (1,) + dilation
    return _C._nn_convolution(input, weight, bias, stride, lo, hi, dilation, int(groups))


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2)


# ---------------------------------------------------------------- pooling

def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    kernel = _ntuple(kernel_size, 2, "kernel_size")
    stride = kernel if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) else \
        _ntuple(stride, 2, "stride")
    if stride[0] == 0 or stride[1] == 0:
        raise RuntimeError("stride should not be zero")
    return _C._nn_max_pool2d(input, kernel, stride, _ntuple(padding, 2, "padding"), _ntuple(dilation, 2, "dilation"),
                             bool(ceil_mode), bool(return_indices))


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    kernel = _ntuple(kernel_size, 2, "kernel_size")
    stride = kernel if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) else \
        _ntuple(stride, 2, "stride")
    if stride[0] == 0 or stride[1] == 0:
        raise RuntimeError("stride should not be zero")
    if divisor_override is not None and int(divisor_override) == 0:
        raise RuntimeError("divisor must be not zero")
    return _C._nn_avg_pool2d(input, kernel, stride, _ntuple(padding, 2, "padding"), bool(ceil_mode),
                             bool(count_include_pad), int(divisor_override or 0))


def adaptive_avg_pool2d(input, output_size):
    if isinstance(output_size, (list, tuple)):
        size = tuple(-1 if s is None else int(s) for s in output_size)
        if len(size) == 1:
            size = size * 2
    else:
        size = (int(output_size),) * 2
    return _C._nn_adaptive_avg_pool2d(input, size)


# ---------------------------------------------------------------- normalization

def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    if training and input.dim() >= 2 and math.prod(input.shape) // input.shape[1] == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {list(input.shape)}")
    return _C._nn_batch_norm(input, running_mean, running_var, weight, bias, bool(training),
                             0.0 if momentum is None else float(momentum), float(eps))


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return _C._nn_layer_norm(input, tuple(int(s) for s in normalized_shape), weight, bias, float(eps))


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    return _C._nn_group_norm(input, int(num_groups), weight, bias, float(eps))


# ---------------------------------------------------------------- embedding and dropout

def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    if max_norm is not None:
        raise NotImplementedError("ampc: embedding(max_norm=...) is not supported")
    if sparse:
        raise NotImplementedError("ampc: sparse gradients are not supported")
    if padding_idx is not None:
        padding_idx = int(padding_idx)
        if not -weight.shape[0] <= padding_idx < weight.shape[0]:
            raise AssertionError("Padding_idx must be within num_embeddings")
    return _C._nn_embedding(weight, input, padding_idx, bool(scale_grad_by_freq))


def dropout(input, p=0.5, training=True, inplace=False):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    return _C._nn_dropout(input, float(p), bool(training))


# ---------------------------------------------------------------- activations (elementwise ops)

def relu(input, inplace=False):
    return _ampc().relu_(input) if inplace else _ampc().relu(input)


def gelu(input, approximate="none"):
    return _ampc().gelu(input, approximate=approximate)


def sigmoid(input):
    return _ampc().sigmoid(input)


def tanh(input):
    return _ampc().tanh(input)


def _softmax_dim(ndim):
    warnings.warn("Implicit dimension choice for softmax has been deprecated. Change the call to include dim=X as an "
                  "argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim(input.dim())
    return _C._nn_softmax(input, int(dim), dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim(input.dim())
    return _C._nn_log_softmax(input, int(dim), dtype)


# ---------------------------------------------------------------- losses

def _check_batch_size(input, target):
    """PyTorch raises this one as ValueError (the core's check raises RuntimeError)."""
    if input.dim() >= 2 and target.dim() >= 1 and not target.is_floating_point() and \
            target.shape[0] != input.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0]}).")


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    _check_batch_size(input, target)
    return _C._nn_cross_entropy(input, target, weight, _reduction(reduction, size_average, reduce),
                                int(ignore_index), float(label_smoothing))


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    _check_batch_size(input, target)
    return _C._nn_nll_loss(input, target, weight, _reduction(reduction, size_average, reduce), int(ignore_index))


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    if weight is not None:  # torch composes the weighted form (mean: over the weights' sum)
        from ._functional_loss import _weighted_pointwise
        return _weighted_pointwise("mse", input, target, weight, size_average, reduce, reduction)
    return _C._nn_pointwise_loss("mse_loss", input, target, None, None, _reduction(reduction, size_average, reduce), 0.0)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    if weight is not None:
        from ._functional_loss import _weighted_pointwise
        return _weighted_pointwise("l1", input, target, weight, size_average, reduce, reduction)
    return _C._nn_pointwise_loss("l1_loss", input, target, None, None, _reduction(reduction, size_average, reduce), 0.0)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    return _C._nn_pointwise_loss("smooth_l1_loss", input, target, None, None,
                                 _reduction(reduction, size_average, reduce), float(beta))


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({list(target.shape)}) that is different to the input size "
                         f"({list(input.shape)}) is deprecated. Please ensure they have the same size.")
    return _C._nn_pointwise_loss("binary_cross_entropy", input, target, weight, None,
                                 _reduction(reduction, size_average, reduce), 0.0)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({list(target.shape)}) must be the same as input size ({list(input.shape)})")
    return _C._nn_pointwise_loss("binary_cross_entropy_with_logits", input, target, weight, pos_weight,
                                 _reduction(reduction, size_average, reduce), 0.0)


# ---------------------------------------------------------------- attention

def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    return _C._nn_scaled_dot_product_attention(query, key, value, attn_mask, float(dropout_p), bool(is_causal),
                                               None if scale is None else float(scale), bool(enable_gqa))


# pad: python/ampc/nn/_functional_conv.py (every mode, C kernels)


# ---------------------------------------------------------------- multi-head attention
# (added for nn.MultiheadAttention; PyTorch's signature and mask conventions)

__all__ += ["multi_head_attention_forward"]


def _canonical_mask(mask, mask_name, target_type):
    """A bool mask (True = masked out, PyTorch's MultiheadAttention convention) becomes an additive
    float mask of target_type (-inf where True); a float mask is returned as it is."""
    if mask is None:
        return None
    ampc = _ampc()
    if mask.dtype == ampc.bool:
        return ampc.zeros(mask.shape, dtype=target_type, device=mask.device).masked_fill(mask, float("-inf"))
    if not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    return mask


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """query (L, N, E), key/value (S, N, E) (or unbatched (L, E)) -> (output (L, N, E), weights
    (N, L, S) averaged over heads, or (N, H, L, S), or None when need_weights is False)."""
    ampc = _ampc()
    is_batched = query.dim() == 3
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if key.shape[:2] != value.shape[:2]:
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")

    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # scaled_dot_product_attention applies the causal mask itself
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", query.dtype)
        if key_padding_mask is not None:
            is_causal = False

    # input projections; self-attention (query is key is value) runs as one GEMM
    if not use_separate_proj_weight:
        if query is key and key is value:
            q, k, v = linear(query, in_proj_weight, in_proj_bias).chunk(3, -1)
        else:
            w_q, w_k, w_v = in_proj_weight.chunk(3)
            b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
            q, k, v = linear(query, w_q, b_q), linear(key, w_k, b_k), linear(value, w_v, b_v)
    else:
        b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
        q, k, v = linear(query, q_proj_weight, b_q), linear(key, k_proj_weight, b_k), linear(value, v_proj_weight, b_v)

    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, key.shape[0]):
                raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(attn_mask.shape)}, but should be "
                                   f"{(tgt_len, key.shape[0])}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, key.shape[0]):
                raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(attn_mask.shape)}, but should be "
                                   f"{(bsz * num_heads, tgt_len, key.shape[0])}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")

    if bias_k is not None and bias_v is not None:
        k = ampc.cat([k, bias_k.expand(1, bsz, embed_dim)])
        v = ampc.cat([v, bias_v.expand(1, bsz, embed_dim)])
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))

    # (L, N, E) -> (N * H, L, head_dim)
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = static_k if static_k is not None else k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    v = static_v if static_v is not None else v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    if add_zero_attn:
        zeros = ampc.zeros((bsz * num_heads, 1, head_dim), dtype=k.dtype, device=k.device)
        k = ampc.cat([k, zeros], 1)
        v = ampc.cat([v, zeros], 1)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    src_len = k.shape[1]

    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but got "
                                 f"{key_padding_mask.shape}")
        key_padding_mask = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(bsz, num_heads, 1, src_len) \
            .reshape(bsz * num_heads, 1, src_len)
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask
    if not training:
        dropout_p = 0.0

    if need_weights:
        q_scaled = q * math.sqrt(1.0 / float(head_dim))
        if attn_mask is not None:
            weights = ampc.baddbmm(attn_mask, q_scaled, k.transpose(-2, -1))
        else:
            weights = ampc.bmm(q_scaled, k.transpose(-2, -1))
        weights = softmax(weights, dim=-1)
        if dropout_p > 0.0:
            weights = dropout(weights, p=dropout_p)
        out = ampc.bmm(weights, v).transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
        weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if not is_batched:
            out, weights = out.squeeze(1), weights.squeeze(0)
        return out, weights

    if attn_mask is not None:
        attn_mask = attn_mask.unsqueeze(0) if attn_mask.shape[0] == 1 else \
            attn_mask.reshape(bsz, num_heads, -1, src_len)
    q = q.reshape(bsz, num_heads, tgt_len, head_dim)
    k = k.reshape(bsz, num_heads, src_len, head_dim)
    v = v.reshape(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
    if not is_batched:
        out = out.squeeze(1)
    return out, None


# The elementwise functions of the op table (core/ops.def rows bound BIND_FUNCTION or
# BIND_PARAMS2: silu, softplus, hardtanh, ...) are ampc._C's, with torch's signatures
# (input, params..., inplace=False) and an in-place twin `name_`.
_OP_TABLE_FUNCTIONS = tuple(sorted(n for n in (row["name"] for row in _C._op_table())
                                   if hasattr(_C, n) and hasattr(_C, n + "_") and not hasattr(_C.Tensor, n)))
globals().update({n: getattr(_C, n) for n in _OP_TABLE_FUNCTIONS})
globals().update({n + "_": getattr(_C, n + "_") for n in _OP_TABLE_FUNCTIONS})
__all__ += list(_OP_TABLE_FUNCTIONS)


# The functional families added since (python/ampc/nn/_functional_<family>.py, each with its own
# __all__), one line per family in this tuple so that parallel additions merge without conflict. A
# family module may import from this one: every name above is defined by the time it loads.
def _add_families(*names):
    import importlib
    for name in names:
        mod = importlib.import_module("ampc.nn." + name)
        globals().update({n: getattr(mod, n) for n in mod.__all__})
        __all__.extend(n for n in mod.__all__ if n not in __all__)


_add_families(
    "_functional_conv",
    "_functional_poolnorm",
    "_functional_loss",
    "_functional_act",
    "_functional_misc",
)
