"""Tensor.__repr__: PyTorch's tensor printing (torch/_tensor_str.py), reproduced on NumPy.

The output matches PyTorch's character for character, so printed tensors, doctests and logs read
the same: precision 4, scientific notation when the magnitudes span more than 1000x or leave
[1e-4, 1e8), integer-valued floats printed as ``1.``, tensors of more than ``threshold``
elements summarised with ``...``, and suffixes for device, non-default dtype and autograd.
"""
import math

import numpy as np

__all__ = ["set_printoptions", "get_printoptions", "tensor_repr"]


class _PrintOptions:
    precision = 4
    threshold = 1000
    edgeitems = 3
    linewidth = 80
    sci_mode = None


PRINT_OPTS = _PrintOptions()


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """Same options and profiles as torch.set_printoptions."""
    if profile == "default":
        PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 4, 1000, 3, 80
    elif profile == "short":
        PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 2, 1000, 2, 80
    elif profile == "full":
        PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 4, math.inf, 3, 80
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions():
    return {k: getattr(PRINT_OPTS, k) for k in ("precision", "threshold", "edgeitems", "linewidth", "sci_mode")}


class _Formatter:
    """Chooses one format (int, fixed or scientific) and one width for all printed elements."""

    def __init__(self, values, floating):
        self.floating_dtype = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.reshape(-1)
        if not floating:
            for value in flat.tolist():
                self.max_width = max(self.max_width, len(f"{value}"))
        else:
            nonzero_finite = flat[np.isfinite(flat) & (flat != 0)]
            if nonzero_finite.size > 0:
                self._fit_floats(nonzero_finite)
        if PRINT_OPTS.sci_mode is not None:
            self.sci_mode = PRINT_OPTS.sci_mode

    def _fit_floats(self, vals):
        absolute = np.abs(vals).astype(np.float64)
        vmin, vmax = float(absolute.min()), float(absolute.max())
        self.int_mode = bool(np.all(vals == np.ceil(vals)))
        p = PRINT_OPTS.precision
        values = vals.tolist()
        if self.int_mode:
            # integer-valued floats print as "1."; the "+ 1" makes room for the dot
            if vmax / vmin > 1000.0 or vmax > 1.0e8:
                self.sci_mode = True
                for v in values:
                    self.max_width = max(self.max_width, len(f"{v:.{p}e}"))
            else:
                for v in values:
                    self.max_width = max(self.max_width, len(f"{v:.0f}") + 1)
        elif vmax / vmin > 1000.0 or vmax > 1.0e8 or vmin < 1.0e-4:
            self.sci_mode = True
            for v in values:
                self.max_width = max(self.max_width, len(f"{v:.{p}e}"))
        else:
            for v in values:
                self.max_width = max(self.max_width, len(f"{v:.{p}f}"))

    def width(self):
        return self.max_width

    def format(self, value):
        p = PRINT_OPTS.precision
        if self.floating_dtype:
            if self.sci_mode:
                ret = f"{value:{self.max_width}.{p}e}"
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{value:.{p}f}"
        else:
            ret = f"{value}"
        return (self.max_width - len(ret)) * " " + ret


def _summarized(a):
    """The elements that get printed when summarising (the formatter sizes itself on these)."""
    e = PRINT_OPTS.edgeitems
    if a.ndim == 0:
        return a
    if a.ndim == 1:
        return np.concatenate((a[:e], a[-e:])) if a.shape[0] > 2 * e else a
    if not e:
        return a[(slice(0, 0),) * a.ndim]
    rows = list(a[:e]) + list(a[-e:]) if a.shape[0] > 2 * e else list(a)
    return np.stack([_summarized(x) for x in rows])


def _vector_str(a, indent, summarize, formatter):
    element_length = formatter.width() + 2
    elements_per_line = max(1, int(math.floor((PRINT_OPTS.linewidth - indent) / element_length)))
    e = PRINT_OPTS.edgeitems
    if summarize and not e:
        data = ["..."]
    elif summarize and a.shape[0] > 2 * e:
        data = [formatter.format(v) for v in a[:e].tolist()] + [" ..."] + [formatter.format(v) for v in a[-e:].tolist()]
    else:
        data = [formatter.format(v) for v in a.tolist()]
    lines = [", ".join(data[i:i + elements_per_line]) for i in range(0, len(data), elements_per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str_with_formatter(a, indent, summarize, formatter):
    dim = a.ndim
    if dim == 0:
        return formatter.format(a.item())
    if dim == 1:
        return _vector_str(a, indent, summarize, formatter)
    e = PRINT_OPTS.edgeitems
    if summarize and a.shape[0] > 2 * e:
        slices = ([_tensor_str_with_formatter(a[i], indent + 1, summarize, formatter) for i in range(e)] + ["..."] +
                  [_tensor_str_with_formatter(a[i], indent + 1, summarize, formatter)
                   for i in range(a.shape[0] - e, a.shape[0])])
    else:
        slices = [_tensor_str_with_formatter(a[i], indent + 1, summarize, formatter) for i in range(a.shape[0])]
    return "[" + ("," + "\n" * (dim - 1) + " " * (indent + 1)).join(slices) + "]"


def _host_values(t):
    """The tensor's values as a NumPy array on the host; fp16/bf16 widened to float32 as PyTorch
    does before printing."""
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    if t.dtype.is_floating_point and t.dtype.itemsize == 2:
        t = t.float()
    return t.numpy()


def _tensor_str(t, indent):
    if t.numel() == 0:
        return "[]"
    summarize = t.numel() > PRINT_OPTS.threshold
    values = _host_values(t)
    formatter = _Formatter(_summarized(values) if summarize else values, t.dtype.is_floating_point)
    return _tensor_str_with_formatter(values, indent, summarize, formatter)


def _add_suffixes(tensor_str, suffixes, indent):
    tensor_strs = [tensor_str]
    last_line_len = len(tensor_str) - tensor_str.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > PRINT_OPTS.linewidth:
            tensor_strs.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            tensor_strs.append(", " + suffix)
            last_line_len += len(suffix) + 2
    tensor_strs.append(")")
    return "".join(tensor_strs)


def _grad_fn_name(t):
    try:
        grad_fn = getattr(t, "grad_fn", None)
    except RuntimeError:
        return "Invalid"
    if grad_fn is None:
        return None
    name = getattr(grad_fn, "name", None)
    return name() if callable(name) else type(grad_fn).__name__


def tensor_repr(t):
    from . import _C

    is_plain = type(t) is _C.Tensor or type(t).__name__ == "Parameter"
    prefix = "tensor(" if is_plain else f"{type(t).__name__}("
    indent = len(prefix)
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    default = _C.get_default_dtype()
    if t.numel() == 0:
        if t.dim() != 1:
            suffixes.append("size=" + str(tuple(t.shape)))
        if t.dtype != default:
            suffixes.append("dtype=" + str(t.dtype))
        tensor_str = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append("size=" + str(tuple(t.shape)))
        if t.dtype not in (default, _C.int64, _C.bool):
            suffixes.append("dtype=" + str(t.dtype))
        tensor_str = _tensor_str(t, indent)
    grad_fn_name = _grad_fn_name(t)
    if grad_fn_name is not None:
        suffixes.append(f"grad_fn=<{grad_fn_name}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + tensor_str, suffixes, indent)
