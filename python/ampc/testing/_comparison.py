"""ampc.testing.assert_close: torch.testing.assert_close's rules and messages over ampc tensors.

A torch test suite that compares results with `torch.testing.assert_close` runs on ampc by
imports, so the semantics follow torch's exactly:
  - inputs are matched into pairs: nested sequences (not str) by position, mappings by key, then
    each leaf by the first kind that accepts it: None, bool (and numpy.bool_), Python / NumPy
    numbers, tensor-likes (ampc tensors, or two directly related objects ampc.as_tensor reads, such
    as two NumPy arrays);
  - tensors must agree in shape, then (unless disabled) device, dtype and stride; with a check off,
    they are moved to the CPU / promoted to a common dtype before the values are compared;
  - values are close where |actual - expected| <= atol + rtol * |expected| (ampc.isclose), with
    the default (rtol, atol) of the looser dtype of the two (the table below); integers and bools
    compare for equality; NaN equals NaN only with equal_nan;
  - the first failing pair raises, with torch's message: mismatch count and share, greatest
    absolute and relative difference among the mismatches and their index, the allowed tolerance,
    and "The failure occurred for item [...]" for nested inputs. `msg` replaces the message (a
    callable receives it).
The value math (isclose, the differences, the argmax) runs as ampc ops on the tensors' device;
only the few numbers of the message come back to the host.
"""
import cmath
import collections.abc
import contextlib

import numpy as np

__all__ = ["assert_close", "default_tolerances"]


def _ampc():
    import ampc
    return ampc


def _precisions():
    """{dtype: (rtol, atol)}: torch's table (test_torch.py's logged tolerances, pytorch#32538)."""
    a = _ampc()
    return {a.float16: (0.001, 1e-5), a.bfloat16: (0.016, 1e-5), a.float32: (1.3e-6, 1e-5),
            a.float64: (1e-7, 1e-7)}


class _Failure(Exception):
    """A comparison failure: the exception type to raise, its message and the path of the item."""

    def __init__(self, type, msg, id=()):
        super().__init__(msg)
        self.type, self.msg, self.id = type, msg, id

    def to_error(self, msg=None):
        if not isinstance(msg, str):
            text = self.msg
            if self.id:
                text += f"\n\nThe failure occurred for item {''.join(str([item]) for item in self.id)}"
            msg = msg(text) if callable(msg) else text
        return self.type(msg)


class _Unsupported(Exception):
    """This pair kind does not handle the inputs: try the next."""


def default_tolerances(*inputs):
    """(rtol, atol): the loosest defaults of the inputs' dtypes (tensors or dtypes); 0 for the
    integer and bool dtypes."""
    a = _ampc()
    table = _precisions()
    dtypes = []
    for x in inputs:
        if isinstance(x, a.Tensor):
            dtypes.append(x.dtype)
        elif isinstance(x, a.dtype):
            dtypes.append(x)
        else:
            raise TypeError(f"Expected a ampc.Tensor or a ampc.dtype, but got {type(x)} instead.")
    rtols, atols = zip(*[table.get(d, (0.0, 0.0)) for d in dtypes])
    return max(rtols), max(atols)


def _tolerances(*dtypes, rtol, atol, id=()):
    if (rtol is None) ^ (atol is None):
        raise _Failure(ValueError, "Both 'rtol' and 'atol' must be either specified or omitted, "
                                   f"but got no {'rtol' if rtol is None else 'atol'}.", id)
    if rtol is not None:
        return rtol, atol
    return default_tolerances(*dtypes)


def _diff_line(kind, diff, idx, tol, equality):
    line = f"{kind.title()} difference: {diff}" if idx is None else f"Greatest {kind} difference: {diff} at index {idx}"
    return line + ("" if equality else f" (up to {tol} allowed)") + "\n"


def _mismatch_msg(identifier, extra, abs_diff, abs_idx, atol, rel_diff, rel_idx, rtol):
    equality = rtol == 0 and atol == 0
    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += f"{extra.strip()}\n"
    msg += _diff_line("absolute", abs_diff, abs_idx, atol, equality)
    msg += _diff_line("relative", rel_diff, rel_idx, rtol, equality)
    return msg.strip()


def _scalar_msg(actual, expected, rtol, atol):
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg("Scalars", f"Expected {expected} but got {actual}.", abs_diff, None, atol, rel_diff, None,
                         rtol)


def _unravel(flat, shape):
    idx = []
    for size in reversed(shape):
        flat, mod = divmod(flat, size)
        idx.append(mod)
    return tuple(reversed(idx))


def _tensor_msg(actual, expected, matches, rtol, atol):
    a = _ampc()
    n = matches.numel()
    bad = n - int(matches.sum().item())
    extra = f"Mismatched elements: {bad} / {n} ({bad / n:.1%})"
    act, exp, ok = actual.flatten(), expected.flatten(), matches.flatten()
    if not act.dtype.is_floating_point:
        act, exp = act.to(a.int64), exp.to(a.int64)
    abs_diff = (act - exp).abs()
    abs_diff = a.where(ok, a.zeros((), dtype=abs_diff.dtype, device=abs_diff.device), abs_diff)
    max_abs, abs_at = a.max(abs_diff, 0)
    rel_diff = abs_diff / exp.abs()
    rel_diff = a.where(ok, a.zeros((), dtype=rel_diff.dtype, device=rel_diff.device), rel_diff)
    max_rel, rel_at = a.max(rel_diff, 0)
    shape = tuple(matches.shape)
    return _mismatch_msg("Tensor-likes", extra, max_abs.item(), _unravel(int(abs_at.item()), shape), atol,
                         max_rel.item(), _unravel(int(rel_at.item()), shape), rtol)


# ---------------------------------------------------------------- the pair kinds


class _Pair:
    def __init__(self, actual, expected, id):
        self.actual, self.expected, self.id = actual, expected, id

    def fail(self, msg, type=AssertionError):
        raise _Failure(type, msg, self.id)


class _NonePair(_Pair):
    def __init__(self, actual, expected, id, **_):
        if not (actual is None or expected is None):
            raise _Unsupported
        super().__init__(actual, expected, id)

    def compare(self):
        if not (self.actual is None and self.expected is None):
            self.fail(f"None mismatch: {self.actual} is not {self.expected}")


class _BoolPair(_Pair):
    def __init__(self, actual, expected, id, **_):
        if not all(isinstance(x, (bool, np.bool_)) for x in (actual, expected)):
            raise _Unsupported
        super().__init__(bool(actual), bool(expected), id)

    def compare(self):
        if self.actual is not self.expected:
            self.fail(f"Booleans mismatch: {self.actual} is not {self.expected}")


class _NumberPair(_Pair):
    _TYPES = (int, float, complex)

    def __init__(self, actual, expected, id, rtol=None, atol=None, equal_nan=False, check_dtype=False, **_):
        if not all(isinstance(x, self._TYPES + (np.number,)) and not isinstance(x, bool) for x in (actual, expected)):
            raise _Unsupported
        actual, expected = (x.item() if isinstance(x, np.number) else x for x in (actual, expected))
        super().__init__(actual, expected, id)
        a = _ampc()
        as_dtype = {int: a.int64, float: a.float64, complex: a.float64}
        self.rtol, self.atol = _tolerances(*(as_dtype[type(x)] for x in (actual, expected)), rtol=rtol, atol=atol,
                                           id=id)
        self.equal_nan, self.check_dtype = equal_nan, check_dtype

    def compare(self):
        if self.check_dtype and type(self.actual) is not type(self.expected):
            self.fail(f"The (d)types do not match: {type(self.actual)} != {type(self.expected)}.")
        if self.actual == self.expected:
            return
        if self.equal_nan and cmath.isnan(self.actual) and cmath.isnan(self.expected):
            return
        diff = abs(self.actual - self.expected)
        if cmath.isfinite(diff) and diff <= self.atol + self.rtol * abs(self.expected):
            return
        self.fail(_scalar_msg(self.actual, self.expected, self.rtol, self.atol))


class _TensorPair(_Pair):
    def __init__(self, actual, expected, id, allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False, **_):
        related = isinstance(actual, type(expected)) or isinstance(expected, type(actual))
        if not related or (not allow_subclasses and type(actual) is not type(expected)):
            raise _Unsupported
        actual, expected = self._to_tensor(actual), self._to_tensor(expected)
        super().__init__(actual, expected, id)
        self.rtol, self.atol = _tolerances(actual, expected, rtol=rtol, atol=atol, id=id)
        self.equal_nan, self.check_device, self.check_dtype = equal_nan, check_device, check_dtype
        self.check_stride = check_stride

    @staticmethod
    def _to_tensor(x):
        a = _ampc()
        if isinstance(x, a.Tensor):
            return x
        try:
            return a.as_tensor(x)
        except Exception:
            raise _Unsupported from None

    def _attribute(self, name, got, want):
        if got != want:
            self.fail(f"The values for attribute '{name}' do not match: {got} != {want}.")

    def compare(self):
        a = _ampc()
        act, exp = self.actual, self.expected
        self._attribute("shape", act.shape, exp.shape)
        if self.check_stride:
            self._attribute("stride()", act.stride(), exp.stride())
        if self.check_device:
            self._attribute("device", act.device, exp.device)
        if self.check_dtype:
            self._attribute("dtype", act.dtype, exp.dtype)
        act, exp = act.detach(), exp.detach()
        if act.device != exp.device:
            act, exp = act.cpu(), exp.cpu()
        if act.dtype != exp.dtype:
            common = a.promote_types(act.dtype, exp.dtype)
            act, exp = act.to(common), exp.to(common)
        rtol, atol = self.rtol, self.atol
        matches = a.isclose(act, exp, rtol=rtol, atol=atol, equal_nan=self.equal_nan)
        if bool(matches.all().item()):
            return
        if act.dim() == 0:
            self.fail(_scalar_msg(act.item(), exp.item(), rtol, atol))
        self.fail(_tensor_msg(act, exp, matches, rtol, atol))


_PAIRS = (_NonePair, _BoolPair, _NumberPair, _TensorPair)


def _pairs(actual, expected, id, options):
    seq = collections.abc.Sequence
    if isinstance(actual, seq) and not isinstance(actual, str) and isinstance(expected, seq) and \
            not isinstance(expected, str):
        if len(actual) != len(expected):
            raise _Failure(AssertionError, f"The length of the sequences mismatch: {len(actual)} != {len(expected)}",
                           id)
        return [p for i in range(len(actual)) for p in _pairs(actual[i], expected[i], (*id, i), options)]
    if isinstance(actual, collections.abc.Mapping) and isinstance(expected, collections.abc.Mapping):
        a_keys, e_keys = set(actual.keys()), set(expected.keys())
        if a_keys != e_keys:
            raise _Failure(AssertionError, "The keys of the mappings do not match:\n"
                                           f"Missing keys in the actual mapping: {sorted(e_keys - a_keys)}\n"
                                           f"Additional keys in the actual mapping: {sorted(a_keys - e_keys)}", id)
        keys = a_keys
        with contextlib.suppress(Exception):  # sorted when the keys sort, so the first failure is deterministic
            keys = sorted(keys)
        return [p for k in keys for p in _pairs(actual[k], expected[k], (*id, k), options)]
    for kind in _PAIRS:
        try:
            return [kind(actual, expected, id, **options)]
        except _Unsupported:
            continue
    raise _Failure(TypeError, f"No comparison pair was able to handle inputs of type {type(actual)} and "
                              f"{type(expected)}.", id)


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False, check_device=True,
                 check_dtype=True, check_layout=True, check_stride=False, msg=None):
    """Asserts that actual and expected are close (torch.testing.assert_close's rules; see the module
    docstring). Raises AssertionError on a mismatch, TypeError for inputs no pair kind handles,
    ValueError for only one of rtol / atol given."""
    __tracebackhide__ = True
    options = dict(allow_subclasses=allow_subclasses, rtol=rtol, atol=atol, equal_nan=equal_nan,
                   check_device=check_device, check_dtype=check_dtype, check_layout=check_layout,
                   check_stride=check_stride)
    try:
        pairs = _pairs(actual, expected, (), options)
    except _Failure as failure:
        raise failure.to_error() from None
    for pair in pairs:
        try:
            pair.compare()
        except _Failure as failure:
            raise failure.to_error(msg) from None
