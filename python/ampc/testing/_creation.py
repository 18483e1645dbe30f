"""ampc.testing.make_tensor: torch.testing.make_tensor's random test tensors.

Values are uniform in [low, high) from ampc's generator (torch's mt19937 on the CPU, so under the
same seed the CPU draws are torch's), with torch's default ranges by dtype kind, its clamping of
low/high to the dtype's finite range and its errors; `noncontiguous` doubles the last dimension
and takes every other element starting at 1 (catching both stride and offset bugs), and
`exclude_zero` replaces zeros by 1 (integers, bools) or the dtype's smallest normal number.
"""
import functools
import math
import warnings

__all__ = ["make_tensor"]


def _ampc():
    import ampc
    return ampc


def _bounds(low, high, dtype, lowest, highest, default_low, default_high, integral, floating):
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and floating:
        warnings.warn("Passing `low==high` to `ampc.testing.make_tensor` for floating types is deprecated "
                      "(as in torch since 2.1). Use `ampc.full(...)` instead.", FutureWarning, stacklevel=4)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), but {dtype} only "
                         f"supports [{lowest}, {highest})")
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    if integral:  # ceil both: no value below low, and randint's high is exclusive
        return math.ceil(low), math.ceil(high)
    return low, high


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False, noncontiguous=False,
                exclude_zero=False, memory_format=None):
    """A tensor of `shape` (ints or one sequence), `dtype` and `device`, uniform in [low, high)."""
    a = _ampc()
    if len(shape) == 1 and isinstance(shape[0], (list, tuple, a.Size)):
        shape = shape[0]
    shape = tuple(int(s) for s in shape)
    if noncontiguous and memory_format is not None:
        raise ValueError("The parameters `noncontiguous` and `memory_format` are mutually exclusive, but got "
                         f"noncontiguous={noncontiguous} and memory_format={memory_format}")
    floating = dtype.is_floating_point
    if requires_grad and not floating:
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral dtypes, but got dtype={dtype}")
    noncontiguous = noncontiguous and functools.reduce(lambda x, y: x * y, shape, 1) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])
    if dtype == a.bool:
        lo, hi = _bounds(low, high, dtype, 0, 2, 0, 2, True, False)
        result = a.randint(lo, hi, shape, device=device, dtype=dtype)
    elif not floating:
        info = a.iinfo(dtype)
        # randint cannot draw int64's maximum (its bounds are int64 too): the exclusive top stays max
        top = info.max + (1 if dtype != a.int64 else 0)
        lo, hi = _bounds(low, high, dtype, info.min, top, -9, 10, True, False)
        result = a.randint(lo, hi, shape, device=device, dtype=dtype)
    else:
        info = a.finfo(dtype)
        lo, hi = _bounds(low, high, dtype, info.min, info.max, -9, 9, False, True)
        result = a.empty(shape, device=device, dtype=dtype)
        if hi - lo >= info.max:  # uniform_ needs high - low representable: draw half the range, double it
            result.uniform_(lo / 2, hi / 2).mul_(2)
        else:
            result.uniform_(lo, hi)
    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result.masked_fill_(result == 0, 1 if not floating else a.finfo(dtype).tiny)
    if floating:
        result.requires_grad_(requires_grad)
    return result
