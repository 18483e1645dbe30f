"""torch.nn.functional's convolution family beyond conv1d/conv2d (issue 13): pad in every mode.

Argument normalization only; the kernels, shapes and gradients are the C core's
(core/nn_conv_more.h)."""
from .. import _C

__all__ = ["pad"]

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

