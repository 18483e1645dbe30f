"""torch.nn.functional's convolution family beyond conv1d/conv2d (issue 13): pad in every mode,
conv3d, conv_transpose1d/2d/3d.

Argument normalization only; the kernels, shapes and gradients are the C core's
(core/nn_conv_more.h)."""
import math
import warnings

from .. import _C
from .functional import _conv_geometry, _ntuple

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
    stride, dilation, lo, hi = _conv_geometry(weight, stride, padding, dilation, n)
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


# ---------------------------------------------------------------- interpolate

__all__ += ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear"]

_INTERP_MODES = {"nearest": 0, "nearest-exact": 1, "linear": 2, "bilinear": 2, "trilinear": 2, "bicubic": 3,
                 "area": 4}
# the input rank each mode needs (None: 3, 4 or 5)
_INTERP_RANK = {"linear": 3, "bilinear": 4, "trilinear": 5, "bicubic": 4}


def _is_integer(x):
    return isinstance(x, int) or (hasattr(x, "__index__") and not isinstance(x, float))


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None,
                antialias=False):
    """torch.nn.functional.interpolate: PyTorch's argument rules, then one separable gather kernel per
    call (core/nn_resample.c)."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = input.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    elif size is not None:
        scale_factors = None
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got "
                    f"input with spatial dimensions of {list(input.shape[2:])} and output size of {size}. "
                    "Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                    "output size in (o1, o2, ...,oK) format.")
            if not all(_is_integer(x) for x in size):
                raise TypeError("expected size to be one of int or Tuple[int] or Tuple[int, int] or "
                                f"Tuple[int, int, int], but got size with types {[type(x) for x in size]}")
            output_size = [int(x) for x in size]
        else:
            output_size = [int(size) for _ in range(dim)]
    elif scale_factor is not None:
        output_size = None
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(
                    "Input and scale_factor must have the same number of spatial dimensions, but "
                    f"got input with spatial dimensions of {list(input.shape[2:])} and "
                    f"scale_factor of shape {scale_factor}. "
                    "Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                    "scale_factor in (s1, s2, ...,sK) format.")
            scale_factors = [float(s) for s in scale_factor]
        else:
            scale_factors = [float(scale_factor) for _ in range(dim)]
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True
    if recompute_scale_factor:
        output_size = [int(math.floor(input.size(i + 2) * scale_factors[i])) for i in range(dim)]
        scale_factors = None
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.dim() == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a 4-D "
                         "tensor as input")
    want = _INTERP_RANK.get(mode)
    if mode not in _INTERP_MODES or input.dim() not in (3, 4, 5) or (want is not None and input.dim() != want):
        if mode in _INTERP_RANK and input.dim() in (3, 4, 5) and mode != "bicubic":
            raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {want}D input")
        raise NotImplementedError(
            "Input Error: Only 3D, 4D and 5D input Tensors supported"
            f" (got {input.dim()}D) for the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area |"
            f" nearest-exact (got {mode})")
    if output_size is None:
        output_size = [int(math.floor(float(input.size(i + 2)) * scale_factors[i])) for i in range(dim)]
    scales = [0.0] * dim if scale_factors is None else scale_factors
    code = _INTERP_MODES[mode] if not antialias else {"bilinear": 5, "bicubic": 6}[mode]
    return _C._nn_interpolate(input, code, tuple(output_size), tuple(scales), bool(align_corners))


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ---------------------------------------------------------------- affine_grid

__all__ += ["affine_grid"]


def _linspace_from_neg_one(ampc, num_steps, align_corners, like):
    if num_steps <= 1:
        return ampc.zeros(1, dtype=like.dtype, device=like.device)
    r = ampc.linspace(-1, 1, num_steps, dtype=like.dtype, device=like.device)
    return r if align_corners else r * ((num_steps - 1) / num_steps)


def affine_grid(theta, size, align_corners=None):
    """torch.nn.functional.affine_grid: the base grid (x, y[, z], 1) of the output's pixel centres times
    theta^T, one batched matmul (as ATen's affine_grid_generator composes it), differentiable in theta."""
    import sys
    ampc = sys.modules["ampc"]
    if align_corners is None:
        warnings.warn("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                      "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                      "grid_sample for details.", stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = list(size)
    if len(size) == 4:
        if theta.dim() != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. "
                             f"Got {theta.shape}.")
        spatial_size = size[-2:]
    elif len(size) == 5:
        if theta.dim() != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. "
                             f"Got {theta.shape}.")
        spatial_size = size[-3:]
    else:
        raise NotImplementedError("affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    if align_corners and min(spatial_size) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                      "align_corners=True. This is not an intended use case of affine_grid. See the documentation "
                      "of affine_grid for details.", stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    n = size[0]
    # axes of the base grid: x runs along the last dim (W), then y (H), then z (D)
    axes = [_linspace_from_neg_one(ampc, s, align_corners, theta) for s in reversed(spatial_size)]
    k = len(spatial_size)
    shape = list(spatial_size)
    parts = []
    for i, ax in enumerate(axes):  # coordinate i varies along spatial dim k - 1 - i
        view = [1] * k
        view[k - 1 - i] = shape[k - 1 - i]
        parts.append(ax.reshape(view).expand(shape))
    parts.append(ampc.ones(shape, dtype=theta.dtype, device=theta.device))
    base = ampc.stack(parts, dim=-1).reshape(1, -1, k + 1)  # (1, prod(spatial), k + 1)
    grid = ampc.matmul(base, theta.transpose(1, 2))  # (N, prod(spatial), k)
    return grid.reshape([n] + shape + [k])
