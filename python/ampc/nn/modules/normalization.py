"""LayerNorm and GroupNorm (weight 1, bias 0 at init, as in PyTorch)."""
import numbers

from .. import functional as F
from .. import init
from .linear import _make_weight_and_bias
from .module import Module

__all__ = ["LayerNorm", "GroupNorm"]


# LayerNorm, GroupNorm and BatchNorm (batchnorm.py) make their affine parameters the same way:
# weight and bias of `shape` (bias optional), or both registered as None without affine; at
# reset, weight 1 and bias 0.
def _make_affine_params(module, affine, bias, shape, device, dtype):
    if affine:
        _make_weight_and_bias(module, shape, bias, shape, device, dtype)
    else:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)


def _reset_affine_params(module, affine):
    if affine:
        init.ones_(module.weight)
        if module.bias is not None:
            init.zeros_(module.bias)


class LayerNorm(Module):
    """Normalizes over the last len(normalized_shape) dims."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _make_affine_params(self, elementwise_affine, bias, self.normalized_shape, device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        _reset_affine_params(self, self.elementwise_affine)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return "{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}, bias={use_bias}".format(
            **self.__dict__, use_bias=self.bias is not None)


class GroupNorm(Module):
    """Normalizes each of num_groups channel groups of (N, C, *)."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _make_affine_params(self, affine, bias, num_channels, device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        _reset_affine_params(self, self.affine)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return "{num_groups}, {num_channels}, eps={eps}, affine={affine}, bias={use_bias}".format(
            **self.__dict__, use_bias=self.bias is not None)


# ---------------------------------------------------------------- issue 13: RMSNorm, LocalResponseNorm

__all__ += ["RMSNorm", "LocalResponseNorm"]


class RMSNorm(Module):
    """x / sqrt(mean(x^2 over normalized_shape) + eps) * weight, one fused kernel each way; eps None
    is the machine epsilon of the computation dtype (torch's rule)."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            from ..parameter import Parameter
            from ... import _C
            self.weight = Parameter(_C.empty(self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return "{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}".format(**self.__dict__)


class LocalResponseNorm(Module):
    """Normalises over a window of `size` neighbouring channels (F.local_response_norm)."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return "{size}, alpha={alpha}, beta={beta}, k={k}".format(**self.__dict__)


# ---------------------------------------------------------------- issue 13: CrossMapLRN2d (torch's legacy
# cross-channel LRN, with its own forward window and its own backward formula, which is not the exact
# gradient of that forward; both are reproduced, over whole (N, H, W) slices per channel offset)

__all__ += ["CrossMapLRN2d"]


def _channel_cumsum(t, lead, trail):
    """cumsum over dim 1 of t zero-padded with `lead` channels before, `trail` after, and one
    more zero in front, so window sums are differences of two index_selects."""
    from .. import functional as Fn
    return Fn.pad(t, (0, 0, 0, 0, lead + 1, trail)).cumsum(1)


class _CrossMapLRN2dFunction:
    @staticmethod
    def make():
        from ...autograd import Function

        class CrossMapLRN2d(Function):  # its nodes: CrossMapLRN2dBackward, as in torch
            @staticmethod
            def forward(ctx, input, size, alpha, beta, k):
                import ampc
                if input.dim() != 4:
                    raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
                c = input.shape[1]
                pre_pad = int((size - 1) / 2 + 1)
                sq = input * input
                s = _channel_cumsum(sq, 0, 0)  # s[j] = sum of sq[0 .. j - 1]
                ch = ampc.arange(c, device=input.device)
                # torch's running window: sq[0 .. min(c + pre_pad - 1, C - 1)], less sq[1 .. c - pre_pad]
                upper = s.index_select(1, (ch + pre_pad).clamp(max=c))
                low_end = (ch - pre_pad + 1).clamp(min=1)
                lower = s.index_select(1, low_end) - s.narrow(1, 1, 1)
                scale = (upper - lower).mul(alpha / size).add(k)
                output = scale.pow(-beta) * input
                ctx.size, ctx.alpha, ctx.beta = size, alpha, beta
                ctx.save_for_backward(input, output, scale)
                return output

            @staticmethod
            def backward(ctx, grad_output):
                import ampc
                input, output, scale = ctx.saved_tensors
                size, c = ctx.size, input.shape[1]
                inverse_pre_pad = int(size - (size - 1) / 2)
                ratio = grad_output * output / scale
                # accum[c] = sum of ratio[c - inverse_pre_pad .. c + size - 1 - inverse_pre_pad] (clipped)
                q = _channel_cumsum(ratio, inverse_pre_pad, size - 1 - inverse_pre_pad)
                ch = ampc.arange(c, device=input.device)
                accum = q.index_select(1, ch + size) - q.index_select(1, ch)
                grad = scale.pow(-ctx.beta) * grad_output - (2 * ctx.alpha * ctx.beta / size) * input * accum
                return grad, None, None, None, None

        return CrossMapLRN2d


_cross_map_lrn2d = None


class CrossMapLRN2d(Module):
    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        global _cross_map_lrn2d
        if _cross_map_lrn2d is None:
            _cross_map_lrn2d = _CrossMapLRN2dFunction.make()
        return _cross_map_lrn2d.apply(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return "{size}, alpha={alpha}, beta={beta}, k={k}".format(**self.__dict__)
