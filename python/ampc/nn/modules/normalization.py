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
