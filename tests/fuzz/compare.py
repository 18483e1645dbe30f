"""Running one case on one library, and comparing ampc's outcome with torch's.

An outcome is either the exception raised (its type name and message) or the results: every
tensor the call returned (dtype name, shape, values as float64 or exact NumPy arrays) and the
gradients of the leaves. `compare` returns the differences as (kind, detail) pairs; an empty list
is a pass. Values agree within a tolerance of a few units in the last place of the result's dtype;
where they do not, the case is rerun on torch with its floating inputs kept in float64 and ampc
passes if it matches that (rounded to the result's dtype) as well as torch is expected to.
"""
import math
import re

import ml_dtypes
import numpy as np

from cases import BACKWARD, source

# relative tolerance by result dtype: ~2 units in the last place (fp32 allows for summation order)
RTOL = {"float64": 1e-9, "float32": 2e-5, "float16": 2e-3, "bfloat16": 1.6e-2}
# below the smallest normal number precision is absolute: a few units of the smallest subnormal
ATOL = {"float64": 1e-320, "float32": 1e-44, "float16": 2.0 ** -23, "bfloat16": 1e-44}
ROUND = {"float64": np.float64, "float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}


def _backward(M, out):
    first = out[0] if isinstance(out, (tuple, list)) and out else out
    if isinstance(first, M.Tensor) and first.dtype.is_floating_point and first.requires_grad:
        exec(BACKWARD, {"M": M, "out": first})



def _flatten(out):
    if isinstance(out, (tuple, list)):
        return [y for x in out for y in _flatten(x)]
    return [out]


def _record(M, value):
    """(dtype name, shape, values) of a result; a non-tensor result is kept as its repr."""
    if not isinstance(value, M.Tensor):
        return ("py", (), repr(value))
    t = value.detach()
    if getattr(t, "_is_zerotensor", lambda: False)():  # torch's sgn backward: a ZeroTensor numpy refuses
        t = M.zeros(t.shape, dtype=t.dtype)
    name = str(t.dtype).split(".")[-1]
    if t.dtype.is_floating_point:
        arr = t.double().numpy()
    else:
        arr = t.numpy()
    return (name, tuple(t.shape), np.array(arr, copy=True))


def run(M, case, float64=False):
    """The case's outcome on library M: ("error", type, message) or ("ok", results, grads, requires_grad)."""
    code = source(case)
    if float64:  # the tie-break: floating inputs stay float64, the call is unchanged
        setup, call = code.split("\nout = ", 1) if "\nout = " in code else ("", code)
        setup = re.sub(r"\.to\(M\.(float16|bfloat16|float32)\)", "", setup)
        code = setup + "\nout = " + call
    env = {"M": M, "F": M.nn.functional, "inf": math.inf, "nan": math.nan, "backward": lambda o: _backward(M, o)}
    try:
        exec(code, env)
    except Exception as e:  # the outcome we compare, whatever it is
        return ("error", type(e).__name__, str(e).split("\n")[0][:200])
    out = env["out"]
    results = [_record(M, v) for v in _flatten(out)]
    grads = [_record(M, env[g].grad) if env[g].grad is not None else None for g in case.grads]
    requires_grad = [bool(getattr(v, "requires_grad", False)) for v in _flatten(out)]
    return ("ok", results, grads, requires_grad)


def _agree(got, want, dtype, floor=0.0):
    """Elementwise: equal, both NaN, or finite and |got - want| <= rtol * (|want| + mean |want| + floor)."""
    with np.errstate(invalid="ignore", over="ignore"):
        fin = np.isfinite(want)
        scale = np.abs(want) + (np.mean(np.abs(want[fin])) if fin.any() else 0.0) + floor
        near = np.isfinite(got) & fin & (np.abs(got - want) <= RTOL[dtype] * scale + ATOL[dtype])
        return (got == want) | (np.isnan(got) & np.isnan(want)) | near


def _close(got, want, dtype, floor=0.0):
    """(all elements agree, why not): exact for integers and booleans, within RTOL for floats."""
    if got.shape != want.shape:
        return False, "shape"
    if dtype not in RTOL:
        return bool(np.array_equal(got, want)), "exact"
    bad = ~_agree(got, want, dtype, floor)
    if not bad.any():
        return True, ""
    g, w = got[bad], want[bad]
    if np.isnan(g).any() or np.isnan(w).any():
        return False, "nan"
    if np.isinf(g).any() or np.isinf(w).any():
        return False, "inf"
    return False, "value (max rel err %.3g)" % float(np.max(np.abs(g - w) / (np.abs(w) + np.mean(np.abs(want)))))


def _round(values, dtype):
    if dtype not in ROUND:
        return values
    with np.errstate(over="ignore", invalid="ignore"):
        return values.astype(ROUND[dtype]).astype(np.float64)


def compare(got, want, ref64=None, cancelling=False):
    """(kind, detail) for each way ampc's outcome `got` differs from torch's `want`. ref64: a
    callable giving torch's float64 outcome, asked only when values differ. cancelling: the op's
    exact gradients are sums that cancel (softmax, the norms: each row's Jacobian sums to 0), so
    where one is 0 both libraries hold rounding noise of the size of the largest gradient."""
    if got[0] == "error" or want[0] == "error":
        if got[0] == want[0]:
            return [] if got[1] == want[1] else [("error_type", "ampc %s, torch %s" % (got[1], want[1]))]
        if got[0] == "error":
            return [("error_only_ampc", "%s: %s" % (got[1], got[2]))]
        return [("error_only_torch", "%s: %s" % (want[1], want[2]))]
    ref64 = _once(ref64)
    _, results, grads, req = got
    _, wresults, wgrads, wreq = want
    if len(results) != len(wresults):
        return [("result_count", "%d vs %d" % (len(results), len(wresults)))]
    diffs = []
    for i, ((dt, shape, v), (wdt, wshape, wv)) in enumerate(zip(results, wresults)):
        if dt != wdt:
            diffs.append(("dtype", "result %d: ampc %s, torch %s" % (i, dt, wdt)))
        elif shape != wshape:
            diffs.append(("shape", "result %d: ampc %s, torch %s" % (i, list(shape), list(wshape))))
        elif dt == "py":
            if v != wv:
                diffs.append(("value", "result %d: ampc %s, torch %s" % (i, v, wv)))
        else:
            ok, why = _close(v, wv, dt)
            if not ok and not _tie_break(v, wv, dt, ref64, "results", i):
                diffs.append(("value", "result %d (%s): %s" % (i, dt, why)))
    if req != wreq:
        diffs.append(("requires_grad", "ampc %s, torch %s" % (req, wreq)))
    # a gradient is only as precise as the least precise result it flows back through
    low = [dt for dt, _, _ in results if dt in RTOL]
    floor = max([_max_finite(w[2]) for w in wgrads if w is not None and w[0] in RTOL] + [1.0]) if cancelling else 0.0
    for i, (g, wg) in enumerate(zip(grads, wgrads)):
        if (g is None) != (wg is None):
            diffs.append(("grad_missing", "input %d: ampc %s, torch %s" % (i, g is not None, wg is not None)))
        elif g is not None:
            if g[0] != wg[0] or g[1] != wg[1]:
                diffs.append(("grad_dtype", "input %d: ampc %s%s, torch %s%s" % (i, g[0], list(g[1]), wg[0], list(wg[1]))))
                continue
            tol_dtype = max([g[0]] + low, key=RTOL.get)
            ok, why = _close(g[2], wg[2], tol_dtype, floor)
            if not ok and not _tie_break(g[2], wg[2], g[0], ref64, "grads", i, tol_dtype, floor):
                diffs.append(("grad", "input %d (%s): %s" % (i, g[0], why)))
    return diffs


def _max_finite(a):
    fin = a[np.isfinite(a)]
    return float(np.max(np.abs(fin))) if fin.size else 0.0


def _once(fn):
    """fn, called at most once (the float64 rerun serves every result and gradient of a case)."""
    if fn is None:
        return None
    memo = []
    return lambda: memo[0] if memo else memo.append(fn()) or memo[0]


def _tie_break(values, torch_values, dtype, ref64, what, i, tol_dtype=None, floor=0.0):
    """ampc's values are right where torch's float64 outcome (rounded to `dtype`) says so: each
    element agrees with torch's, or with the float64 one, or is about as close to it as torch's."""
    if ref64 is None or dtype not in ROUND or dtype == "float64":
        return False
    ref = ref64()
    if ref[0] != "ok":
        return False
    recs = ref[1] if what == "results" else ref[2]
    if i >= len(recs) or recs[i] is None or recs[i][1] != values.shape:
        return False
    r = _round(recs[i][2], dtype)
    tol_dtype = tol_dtype or dtype
    with np.errstate(invalid="ignore"):
        # within twice torch's own error: either library may round one step the other does not
        torch_err = np.nan_to_num(np.abs(torch_values - r), nan=np.inf)
        closer = np.isfinite(values) & np.isfinite(r) & (np.abs(values - r) <= 2 * torch_err)
    return bool(np.all(_agree(values, torch_values, tol_dtype, floor) | _agree(values, r, tol_dtype, floor) | closer))
