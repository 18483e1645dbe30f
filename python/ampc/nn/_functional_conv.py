"""torch.nn.functional's convolution family beyond conv1d/conv2d (issue 13): pad in every mode,
conv3d, conv_transpose1d/2d/3d.

Argument normalization only; the kernels, shapes and gradients are the C core's
(core/nn_conv_more.h)."""
from .. import _C
from .functional import _ntuple

__all__ = ["pad", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]

_PAD_MODES = {"constant": 0, "reflect": 1, "replicate": 2, "circular": 3}


def pad(input, pad, mode="constant", value=None):
    """torch.nn.functional.pad: pad[2i], pad[2i+1] pad dim -1-i before and after (negative crops).
    constant pads any number of dims with `value`; reflect, replicate and circular the last 1-3
    dims of a batched or unbatched input."""
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if mode != "constant" and value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument.')
    pads = tuple(int(p) for p in pad)
    return _C._nn_pad(input, pads, _PAD_MODES[mode], 0.0 if value is None else float(value))


# ---------------------------------------------------------------- convolution of 1-3 dims

def _neutral3(v, n, fill):
    """An n-tuple of (h, w)-style spatial values as the core's (d, h, w) triple."""
    return (fill,) * (3 - n) + tuple(v)


def _conv_nd(input, weight, bias, stride, padding, dilation, groups, n):
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
    return _C._nn_convolution_nd(input, weight, bias, _neutral3(stride, n, 1), _neutral3(lo, n, 0),
                                 _neutral3(hi, n, 0), _neutral3(dilation, n, 1), (0, 0, 0), int(groups), False, n)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv_nd(input, weight, bias, stride, padding, dilation, groups, 3)


def _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, n):
    if isinstance(padding, str):
        raise RuntimeError(f"conv_transpose{n}d: padding must be an int or a tuple of ints, got {padding!r}")
    stride, padding = _ntuple(stride, n, "stride"), _ntuple(padding, n, "padding")
    output_padding, dilation = _ntuple(output_padding, n, "output_padding"), _ntuple(dilation, n, "dilation")
    return _C._nn_convolution_nd(input, weight, bias, _neutral3(stride, n, 1), _neutral3(padding, n, 0),
                                 _neutral3(padding, n, 0), _neutral3(dilation, n, 1), _neutral3(output_padding, n, 0),
                                 int(groups), True, n)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 1)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 2)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 3)
