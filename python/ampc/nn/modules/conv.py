"""Conv1d and Conv2d: weights (out_channels, in_channels / groups, *kernel_size) with PyTorch's
initialisation (kaiming_uniform_(a=sqrt(5)), bias uniform in +-1/sqrt(fan_in))."""
import math

from .. import functional as F
from .. import init
from .linear import _make_weight_and_bias
from .module import Module

__all__ = ["Conv1d", "Conv2d"]


class _ConvNd(Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
                 output_padding, groups, bias, padding_mode, device=None, dtype=None):
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid_padding_strings = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid_padding_strings:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {valid_padding_strings}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        valid_padding_modes = {"zeros", "reflect", "replicate", "circular"}
        if padding_mode not in valid_padding_modes:
            raise ValueError(f"padding_mode must be one of {valid_padding_modes}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        # F.pad's order (last dim first, before/after) of the padding, for padding_mode != "zeros"
        if isinstance(self.padding, str):
            self._reversed_padding_repeated_twice = [0, 0] * len(kernel_size)
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(len(kernel_size) - 1, -1, -1)):
                    total_padding = d * (k - 1)
                    left_pad = total_padding // 2
                    self._reversed_padding_repeated_twice[2 * i] = left_pad
                    self._reversed_padding_repeated_twice[2 * i + 1] = total_padding - left_pad
        else:
            self._reversed_padding_repeated_twice = tuple(x for x in reversed(self.padding) for _ in range(2))
        shape = (in_channels, out_channels // groups) if transposed else (out_channels, in_channels // groups)
        _make_weight_and_bias(self, shape + tuple(kernel_size), bias, out_channels, device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        # kaiming_uniform_ with a=sqrt(5) is uniform in +-1/sqrt(fan_in), PyTorch's long-standing default
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)


def _spatial_args(n, kernel_size, stride, padding, dilation):
    """kernel_size, stride, padding and dilation as n-tuples (a padding string stays as it is)."""
    return (F._ntuple(kernel_size, n, "kernel_size"), F._ntuple(stride, n, "stride"),
            padding if isinstance(padding, str) else F._ntuple(padding, n, "padding"),
            F._ntuple(dilation, n, "dilation"))


class Conv1d(_ConvNd):
    """Input (N, C_in, L) or (C_in, L)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, *_spatial_args(1, kernel_size, stride, padding, dilation), False,
                         (0,), groups, bias, padding_mode, device, dtype)

    def _conv_forward(self, input, weight, bias):
        if self.padding_mode != "zeros":
            return F.conv1d(F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode), weight, bias,
                            self.stride, (0,), self.dilation, self.groups)
        return F.conv1d(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv2d(_ConvNd):
    """Input (N, C_in, H, W) or (C_in, H, W)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, *_spatial_args(2, kernel_size, stride, padding, dilation), False,
                         (0, 0), groups, bias, padding_mode, device, dtype)

    def _conv_forward(self, input, weight, bias):
        if self.padding_mode != "zeros":
            return F.conv2d(F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode), weight, bias,
                            self.stride, (0, 0), self.dilation, self.groups)
        return F.conv2d(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


# ---------------------------------------------------------------- issue 13, conv: 3-d and transposed

__all__ += ["Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]


class Conv3d(_ConvNd):
    """Input (N, C_in, D, H, W) or (C_in, D, H, W)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, *_spatial_args(3, kernel_size, stride, padding, dilation), False,
                         (0, 0, 0), groups, bias, padding_mode, device, dtype)

    def _conv_forward(self, input, weight, bias):
        if self.padding_mode != "zeros":
            return F.conv3d(F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode), weight, bias,
                            self.stride, (0, 0, 0), self.dilation, self.groups)
        return F.conv3d(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class _ConvTransposeNd(_ConvNd):
    _dims = 0

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed, output_padding,
                 groups, bias, padding_mode, device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {self.__class__.__name__}')
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
                         output_padding, groups, bias, padding_mode, device, dtype)

    def _output_padding(self, input, output_size, stride, padding, kernel_size, num_spatial_dims, dilation=None):
        """torch's: output_padding, or the one that gives the requested output_size."""
        if output_size is None:
            return list(self.output_padding)
        has_batch_dim = input.dim() == num_spatial_dims + 2
        num_non_spatial_dims = 2 if has_batch_dim else 1
        output_size = list(output_size)
        if len(output_size) == num_non_spatial_dims + num_spatial_dims:
            output_size = output_size[num_non_spatial_dims:]
        if len(output_size) != num_spatial_dims:
            raise ValueError(
                f"ConvTranspose{num_spatial_dims}D: for {input.dim()}D input, output_size must have {num_spatial_dims} "
                f"or {num_non_spatial_dims + num_spatial_dims} elements (got {len(output_size)})")
        min_sizes, max_sizes = [], []
        for d in range(num_spatial_dims):
            dim_size = ((input.size(d + num_non_spatial_dims) - 1) * stride[d] - 2 * padding[d]
                        + (dilation[d] if dilation is not None else 1) * (kernel_size[d] - 1) + 1)
            min_sizes.append(dim_size)
            max_sizes.append(min_sizes[d] + stride[d] - 1)
        for i in range(len(output_size)):
            if output_size[i] < min_sizes[i] or output_size[i] > max_sizes[i]:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range "
                                 f"from {min_sizes} to {max_sizes} (for an input of {input.size()[2:]})")
        return [output_size[d] - min_sizes[d] for d in range(num_spatial_dims)]

    def forward(self, input, output_size=None):
        n = self._dims
        if self.padding_mode != "zeros":
            raise ValueError(f"Only `zeros` padding mode is supported for ConvTranspose{n}d")
        output_padding = self._output_padding(input, output_size, self.stride, self.padding, self.kernel_size, n,
                                              self.dilation)
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[n - 1]
        return fn(input, self.weight, self.bias, self.stride, self.padding, output_padding, self.groups,
                  self.dilation)


def _transpose_args(n, kernel_size, stride, padding, output_padding, dilation):
    return (F._ntuple(kernel_size, n, "kernel_size"), F._ntuple(stride, n, "stride"),
            F._ntuple(padding, n, "padding"), F._ntuple(dilation, n, "dilation"), True,
            F._ntuple(output_padding, n, "output_padding"))


class ConvTranspose1d(_ConvTransposeNd):
    """Input (N, C_in, L) or (C_in, L); weight (C_in, C_out / groups, k)."""
    _dims = 1

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels,
                         *_transpose_args(1, kernel_size, stride, padding, output_padding, dilation), groups, bias,
                         padding_mode, device, dtype)


class ConvTranspose2d(_ConvTransposeNd):
    """Input (N, C_in, H, W) or (C_in, H, W); weight (C_in, C_out / groups, kh, kw)."""
    _dims = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels,
                         *_transpose_args(2, kernel_size, stride, padding, output_padding, dilation), groups, bias,
                         padding_mode, device, dtype)


class ConvTranspose3d(_ConvTransposeNd):
    """Input (N, C_in, D, H, W) or (C_in, D, H, W); weight (C_in, C_out / groups, kd, kh, kw)."""
    _dims = 3

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels,
                         *_transpose_args(3, kernel_size, stride, padding, output_padding, dilation), groups, bias,
                         padding_mode, device, dtype)
