"""nn.functional's remaining small functions: relu_, conv_tbc, gumbel_softmax, and the Tensor name
torch's functional module re-exports. Composed of ops with their own kernels and gradients."""
from .. import _C

__all__ = ["Tensor", "relu_", "conv_tbc", "gumbel_softmax"]

Tensor = _C.Tensor


def relu_(input):
    """In-place relu (torch.nn.functional.relu_)."""
    return input.relu_()


def conv_tbc(input, weight, bias, pad=0):
    """1-d convolution over (time, batch, channels) input with a (kernel, in, out) weight
    (torch.conv_tbc): conv1d on the (batch, channels, time) view."""
    from . import functional as F
    if input.dim() != 3:
        raise RuntimeError(f"Input must have 3 dims: time, batch, in_channel (got {input.dim()})")
    if weight.dim() != 3:
        raise RuntimeError(f"Weight tensor must have 3 dims: kernel_width, in_channels, out_channels (got {weight.dim()})")
    if bias.dim() != 1:
        raise RuntimeError(f"Bias must be 1-D (got {bias.dim()})")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    out = F.conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1)


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """Samples from the Gumbel-softmax distribution (torch.nn.functional.gumbel_softmax): the draws
    come from the generator as torch's (exponential_), so the same seed gives the same sample;
    hard=True returns the one-hot of the argmax with the soft sample's gradient (straight-through)."""
    from . import functional as F
    gumbels = -_C.empty_like(logits).exponential_().log()
    y_soft = F.softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = _C.zeros_like(logits).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft
