"""ampc._nn_toplevel: the nn ops torch also has at its top level, with ATen's argument orders.

torch.conv2d and torch.max_pool2d take nn.functional's arguments, but several of these top-level
names are ATen's signatures, which differ from nn.functional's (torch.embedding(weight, indices),
torch.dropout(input, p, train), torch.batch_norm(input, weight, bias, running_mean, running_var,
...), reduction as an int for binary_cross_entropy_with_logits). Each maps onto the one
nn.functional implementation; the cudnn flags are accepted and ignored (ampc picks its kernels).
"""
from .nn import functional as F

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return F.conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return F.conv2d(input, weight, bias, stride, padding, dilation, groups)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool2d(input, kernel_size, stride if stride not in ((), []) else None, padding, dilation, ceil_mode)


def dropout(input, p, train):
    return F.dropout(input, p, train)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    return F.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return F.embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=1):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"binary_cross_entropy_with_logits: reduction must be 0 (none), 1 (mean) or 2 (sum), "
                         f"got {reduction}")
    return F.binary_cross_entropy_with_logits(input, target, weight, reduction=_REDUCTIONS[reduction],
                                              pos_weight=pos_weight)


FUNCTIONS = {name: fn for name, fn in globals().items() if callable(fn) and not name.startswith("_")
             and getattr(fn, "__module__", None) == __name__}
