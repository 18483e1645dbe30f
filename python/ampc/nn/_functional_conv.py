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


# ---------------------------------------------------------------- unfold / fold, pixel and channel shuffles

__all__ += ["unfold", "fold", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle"]


def _pair(v, name):
    return _ntuple(v, 2, name)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """(N, C, H, W) -> (N, C * kh * kw, L): the sliding blocks as columns (IM2COL)."""
    return _C._nn_unfold(input, _pair(kernel_size, "kernel_size"), _pair(dilation, "dilation"),
                         _pair(padding, "padding"), _pair(stride, "stride"))


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """(N, C * kh * kw, L) -> (N, C, H, W): columns summed back into the image (COL2IM)."""
    return _C._nn_fold(input, _pair(output_size, "output_size"), _pair(kernel_size, "kernel_size"),
                       _pair(dilation, "dilation"), _pair(padding, "padding"), _pair(stride, "stride"))


def pixel_shuffle(input, upscale_factor):
    """(*, C * r^2, H, W) -> (*, C, H * r, W * r): a view and one permuted copy, as torch's kernel."""
    r = int(upscale_factor)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *batch, c, h, w = input.shape
    if c % (r * r) != 0:
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    n = len(batch)
    x = input.reshape(*batch, c // (r * r), r, r, h, w)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*batch, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H * r, W * r) -> (*, C * r^2, H, W), the inverse of pixel_shuffle."""
    r = int(downscale_factor)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *batch, c, h, w = input.shape
    if h % r != 0:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, but "
                           f"input.size(-2)={h} is not divisible by {r}")
    if w % r != 0:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, but "
                           f"input.size(-1)={w} is not divisible by {r}")
    n = len(batch)
    x = input.reshape(*batch, c, h // r, r, w // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*batch, c * r * r, h // r, w // r)


def channel_shuffle(input, groups):
    """(N, C, *) -> channels regrouped: (N, g, C / g, *) transposed to (N, C / g, g, *)."""
    g = int(groups)
    if input.dim() <= 2:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    if g <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{g}")
    n, c, *rest = input.shape
    if c % g != 0:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {g} groups.")
    return input.reshape(n, g, c // g, *rest).transpose(1, 2).reshape(n, c, *rest)


native_channel_shuffle = channel_shuffle
