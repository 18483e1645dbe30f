"""ampc._factories: torch's composed factories: logspace and the window functions (hann, hamming,
blackman, bartlett, kaiser), computed in float64 from arange/linspace and rounded once to the
requested dtype, as torch computes them."""
import builtins
import math

from . import _C
from ._composed import _factory_dtype, _into



def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    dtype = _factory_dtype(dtype)
    exps = _C.linspace(float(start), float(end), steps, dtype=_C.float64, device=device)
    result = _C.pow(float(base), exps).to(dtype)
    result.requires_grad_(requires_grad)
    return _into(out, result, "logspace")


def _window(fname, window_length, periodic, dtype, device, requires_grad, formula):
    dtype = _factory_dtype(dtype)
    if not dtype.is_floating_point:
        raise RuntimeError(f"{fname} expects floating point dtypes, got: {dtype}")
    if window_length < 0:
        raise RuntimeError(f"{fname} requires non-negative window_length, got window_length={window_length}")
    if window_length == 0:
        w = _C.empty(0, dtype=dtype, device=device)
    elif window_length == 1:
        w = _C.ones(1, dtype=dtype, device=device)
    else:
        n = window_length + 1 if periodic else window_length
        k = _C.arange(n, dtype=_C.float64, device=device)
        w = formula(k, n)
        if periodic:
            w = w[:-1]
        w = w.to(dtype)
    w.requires_grad_(requires_grad)
    return w


def _cosine_sum(*coefs):
    def formula(k, n):
        w = None
        for i, a in enumerate(coefs):
            term = a if i == 0 else _C.cos(k * (2 * math.pi * i / (n - 1))) * (a * (-1) ** i)
            w = term if w is None else w + term
        return w
    return formula


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False,
                pin_memory=False):
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad, _cosine_sum(0.5, 0.5))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad, _cosine_sum(alpha, beta))


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False,
                    pin_memory=False):
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine_sum(0.42, 0.5, 0.08))


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False,
                    pin_memory=False):
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   lambda k, n: 1 - (k * (2.0 / (n - 1)) - 1).abs())


def _i0(x):
    """The modified Bessel function I0 by its power series, on a float64 tensor (terms fall below
    1e-17 of the sum; kaiser's argument is at most beta)."""
    q = (x * x) / 4
    term = _C.ones_like(x)
    total = term
    for k in range(1, 500):
        term = term * q / (k * k)
        total = total + term
        if builtins.bool((term <= total * 1e-17).all()):
            break
    return total


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  requires_grad=False, pin_memory=False):
    def formula(k, n):
        r = k * (2.0 / (n - 1)) - 1
        return _i0(beta * _C.clamp_min(1 - r * r, 0).sqrt()) / _i0(_C.full((1,), float(beta), dtype=_C.float64,
                                                                           device=k.device))
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad, formula)


FUNCTIONS = {name: obj for name, obj in globals().items()
             if callable(obj) and not name.startswith("_") and getattr(obj, "__module__", None) == __name__}
