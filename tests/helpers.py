"""The one home of the helpers the test files share (tinygrad's helper_test_op, ggml's
test-backend-ops: one helper, every op, every backend).

  dtype tables      DTYPES, NP_OF, FLOATS
  making tensors    random_array, tensor, make, on, dev_copy, from_torch, copy_torch_weights
  reading tensors   host (float64 copy), host_exact (ints and bools kept exact), numpy_copy, bits
  comparing         check_close, close, close_max_scaled, assert_allclose
  errors            raises_each (a table of calls and the exceptions they raise)
  mixed precision   assert_step_and_update_make_no_host_reads
  CPU against CUDA  run_on_cpu_and_cuda + check_runs, seeded_on_cpu_and_cuda, deferred_index_error
  ampc against torch  check_op (one call: forward values, dtypes and gradients), ampc_and_torch
  custom Functions  ExpOut (saves its own output)

A test file imports what it uses (`from helpers import check_op, host`); a helper needed by two
files moves here instead of being copied. torch is the oracle but optional: without it check_op
compares against ampc itself in float64 on the CPU and uses ampc.testing.gradcheck."""
from collections import OrderedDict

import ml_dtypes
import numpy as np

import ampc

try:
    import torch
except ImportError:  # check_op falls back to ampc in float64; the torch-comparing files need torch anyway
    torch = None

# ---------------------------------------------------------------- dtype tables

_DTYPE_NAMES = ["float32", "float16", "bfloat16", "float64", "int64", "int32", "uint8", "bool"]
_NP_OF_NAME = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float64": np.float64,
               "int64": np.int64, "int32": np.int32, "uint8": np.uint8, "bool": np.bool_}

# (ampc dtype, NumPy dtype, torch dtype): every dtype ampc stores
DTYPES = [(getattr(ampc, n), _NP_OF_NAME[n], getattr(torch, n) if torch is not None else None) for n in _DTYPE_NAMES]

# the NumPy twin of each floating ampc dtype
NP_OF = {ampc.float32: np.float32, ampc.float16: np.float16, ampc.bfloat16: ml_dtypes.bfloat16,
         ampc.float64: np.float64}

# the floating dtypes, in the order the CUDA comparison files parametrise them
FLOATS = [ampc.float32, ampc.float16, ampc.bfloat16, ampc.float64]

# ---------------------------------------------------------------- making tensors


def random_array(rng, shape, np_dtype, int_high, scale):
    """Random values of np_dtype: booleans, integers in [0, int_high), or normals times scale."""
    np_dtype = np.dtype(np_dtype)
    if np_dtype == np.bool_:
        return rng.random(shape) > 0.5
    if np_dtype.kind in "iu":
        return rng.integers(0, int_high, size=shape).astype(np_dtype)
    return (rng.standard_normal(shape) * scale).astype(np_dtype)


def tensor(a, dtype):
    """CPU tensor of the values of NumPy array a in dtype."""
    return ampc.tensor(np.asarray(a, dtype=np.float64).astype(NP_OF[dtype]), dtype=dtype)


def make(x, dtype, device, requires_grad=False):
    """A leaf on `device` holding the NumPy values x rounded to dtype (the same values on both
    devices). A copy: never shares memory with x, so in-place updates of one run (running stats)
    cannot leak into the other."""
    t = ampc.from_numpy(np.array(x, dtype=np.float64)).to(dtype).to(device)
    return t.requires_grad_(requires_grad) if requires_grad else t


def dev_copy(t, device):
    """An independent copy of t on `device` (in the CPU dry run `.to("cpu")` would alias t, and
    the in-place ops under test would then run twice on one tensor)."""
    return t.to(device) if device != "cpu" else t.clone()


def on(dev, arr):
    """A tensor of arr's values on dev, in fresh memory (never a view of arr or of another test
    tensor, also when dev is the CPU)."""
    return ampc.from_numpy(np.array(arr, copy=True, order="C")).to(dev)


def from_torch(t, dtype=None):
    """The ampc CPU tensor of a torch tensor's values (through NumPy; dtype optional)."""
    return ampc.tensor(t.detach().numpy(), dtype=dtype)


def copy_torch_weights(am, tm):
    """The torch model's state loaded into the ampc one (every key, so also a load_state_dict test)."""
    result = am.load_state_dict(OrderedDict((k, from_torch(v)) for k, v in tm.state_dict().items()))
    assert result.missing_keys == [] and result.unexpected_keys == []


# ---------------------------------------------------------------- reading tensors


def host(t):
    """float64 NumPy copy of an ampc tensor on any device (fp16/bf16 widen exactly) or of a torch
    tensor."""
    if torch is not None and isinstance(t, torch.Tensor):
        return t.detach().cpu().double().numpy()
    t = t.detach().cpu()
    if t.dtype in (ampc.float16, ampc.bfloat16):
        t = t.float()
    return np.array(t.numpy(), dtype=np.float64)


def host_exact(t):
    """NumPy copy of a tensor on any device that keeps every value exact: bool stays bool, the
    integer dtypes become int64 (no rounding above 2**53), the floats float64."""
    t = t.detach().cpu()
    if t.dtype == ampc.bool:
        return t.numpy().copy()
    if t.dtype in (ampc.int64, ampc.int32, ampc.uint8):
        return t.numpy().astype(np.int64)
    return t.double().numpy().copy()


def numpy_copy(t):
    """NumPy copy of a tensor on any device, in the tensor's own dtype (bits intact)."""
    return np.array(t.cpu().numpy(), copy=True)


def bits(a):
    """The bit patterns of a NumPy array (at least 1-D) as unsigned integers of its width."""
    a = np.atleast_1d(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


# ---------------------------------------------------------------- comparing


def check_close(got, want, tol, floor=0.1):
    """got (any device) matches the CPU result want: equal dtypes, shapes, NaN and inf positions,
    and |got - want| <= tol * (|want| + floor * max|want|) elsewhere (the floor covers
    cancellation in gradients and the ulps of tiny values)."""
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert tuple(got.shape) == tuple(want.shape), (tuple(got.shape), tuple(want.shape))
    g, w = host(got), host(want)
    assert np.array_equal(np.isnan(g), np.isnan(w)), "NaN positions differ"
    inf = np.isinf(w)
    assert np.array_equal(g[inf], w[inf]) and not np.isinf(g[~inf]).any(), "infinities differ"
    fin = np.isfinite(w)
    if not fin.any():
        return
    scale = np.max(np.abs(w[fin]))
    err = np.abs(g[fin] - w[fin]) - tol * (np.abs(w[fin]) + floor * scale)
    assert err.max() <= 0, f"max excess error {err.max():.3g} (scale {scale:.3g})"


def close(got, want, tol, what=""):
    """Elementwise |got - want| <= tol * (|want| + mean |want|), equal non-finite values; tol 0:
    bit-equal (NaN equal to NaN). got and want: tensors on any device."""
    got, want = host(got), host(want)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    if tol == 0:
        assert np.array_equal(got, want, equal_nan=True), what
        return
    finite = np.isfinite(want)
    scale = np.abs(want[finite]).mean() if finite.any() else 0.0
    err = np.abs(got - want)
    ok = np.where(finite, err <= tol * (np.abs(want) + scale), (got == want) | (np.isnan(got) & np.isnan(want)))
    if not ok.all():
        i = np.unravel_index(np.argmin(ok), ok.shape)
        raise AssertionError(f"{what}: {int((~ok).sum())} of {ok.size} differ; at {i} got {got[i]!r} want {want[i]!r}")


def close_max_scaled(got, want, tol=1e-10):
    """got == want within tol relative to 1 + want's largest finite magnitude; NaN and +-inf must
    match. got: an ampc or torch tensor; want: a tensor or anything NumPy reads."""
    g = host(got)
    is_tensor = isinstance(want, ampc.Tensor) or (torch is not None and isinstance(want, torch.Tensor))
    w = host(want) if is_tensor else np.asarray(want, dtype=np.float64)
    assert g.shape == w.shape, (g.shape, w.shape)
    assert np.array_equal(np.isnan(g), np.isnan(w)), "NaN positions differ"
    fin = np.isfinite(w)
    assert np.array_equal(g[~fin & ~np.isnan(w)], w[~fin & ~np.isnan(w)]), "infinities differ"
    if not fin.any():
        return
    scale = 1.0 + np.max(np.abs(w[fin]))
    err = np.max(np.abs(g[fin] - w[fin]))
    assert err <= tol * scale, f"max error {err:.3g} (scale {scale:.3g})"


def _native(t):
    """NumPy array of an ampc or torch CPU tensor in its own dtype (fp16/bf16 through float32)."""
    t = t.detach()
    if isinstance(t, ampc.Tensor) and t.dtype in (ampc.float16, ampc.bfloat16):
        t = t.float()
    if torch is not None and isinstance(t, torch.Tensor) and t.dtype in (torch.float16, torch.bfloat16):
        t = t.float()
    return t.numpy()


def assert_allclose(got, want, rtol, atol, what=""):
    """NumPy's rule |got - want| <= atol + rtol * |want| between two CPU tensors (ampc or torch,
    either side), compared in their own dtypes; shapes must match. None on both sides (grads
    cleared with set_to_none) passes; None on one side fails."""
    if got is None or want is None:
        assert got is None and want is None, (what, got is None, want is None)
        return
    g, w = _native(got), _native(want)
    assert g.shape == w.shape, (what, g.shape, w.shape)
    np.testing.assert_allclose(g, w, atol=atol, rtol=rtol, err_msg=what)


# ---------------------------------------------------------------- errors


def raises_each(*cases):
    """Each case, one line of a table, is (exception type, regex its message must match or None,
    a function of no arguments that must raise it); a failing case is named in the report."""
    import inspect

    import pytest

    for exc, match, call in cases:
        try:
            with pytest.raises(exc, match=match):
                call()
        except BaseException as e:
            try:
                where = inspect.getsource(call).strip()
            except (OSError, TypeError):
                where = repr(call)
            e.add_note(f"raises_each case: {exc.__name__}, {match!r}: {where}")
            raise


# ---------------------------------------------------------------- mixed precision


def assert_step_and_update_make_no_host_reads(scaler, optimizer, separate_unscale):
    """scaler.step + scaler.update (after an explicit unscale_ when asked) read nothing back from
    the device: the found-inf flag stays on the device, as in PyTorch's sync-free scaler."""
    before = ampc._C._host_read_count()
    if separate_unscale:
        scaler.unscale_(optimizer)
    scaler.step(optimizer)
    scaler.update()
    assert ampc._C._host_read_count() == before, "step + update read the device"


# ---------------------------------------------------------------- the CPU backend against CUDA


def run_on_cpu_and_cuda(fn, arrays, dtypes, cuda, grad=(), rng=None):
    """fn on CPU and on `cuda` leaves made from the same NumPy arrays (dtypes: one per array, or one
    dtype for all; None arrays stay None), then backward of one random upstream gradient (drawn
    from rng, default seed 7) into outputs[0]. Returns [(outputs, grads) on cpu, (outputs, grads)
    on cuda], grads for the argument positions in `grad`."""
    rng = rng or np.random.default_rng(7)
    if not isinstance(dtypes, (list, tuple)):
        dtypes = [dtypes] * len(arrays)
    runs, upstream = [], None
    for dev in ("cpu", cuda):
        ins = [None if a is None else make(a, dt, dev, i in grad) for i, (a, dt) in enumerate(zip(arrays, dtypes))]
        out = fn(*ins)
        outs = out if isinstance(out, tuple) else (out,)
        if grad:
            if upstream is None:
                upstream = rng.standard_normal(tuple(outs[0].shape))
            outs[0].backward(make(upstream, outs[0].dtype, dev))
        runs.append((outs, [ins[i].grad if ins[i] is not None else None for i in grad]))
    return runs


def check_runs(runs, tol, what, gtol=None, exact_outputs=()):
    """The cuda run of run_on_cpu_and_cuda matches the cpu run: equal dtypes, outputs within tol
    (bit-equal for the output positions in exact_outputs), gradients within gtol (default tol),
    by `close`."""
    gtol = tol if gtol is None else gtol
    (oc, gc), (og, gg) = runs
    for k, (a, b) in enumerate(zip(og, oc)):
        assert a.dtype == b.dtype, (what, k, a.dtype, b.dtype)
        close(a, b, 0 if k in exact_outputs else tol, f"{what} output {k}")
    for k, (a, b) in enumerate(zip(gg, gc)):
        assert (a is None) == (b is None), (what, k)
        if a is not None:
            assert a.dtype == b.dtype, (what, k, a.dtype, b.dtype)
            close(a, b, gtol, f"{what} grad {k}")


def deferred_index_error(run, error=IndexError):
    """run() on a GPU fails at the next synchronising call (.cpu()); on the CPU at once. `error`:
    IndexError for advanced indexing, index_select and embedding, RuntimeError for gather,
    scatter_add and index_add (core/index_bounds.h)."""
    import pytest

    with pytest.raises(error):
        out = run()
        if out is not None:
            out.cpu()


def seeded_on_cpu_and_cuda(make_on, cuda, seed=5):
    """make_on(device) after the same ampc.manual_seed on the CPU and on the GPU: (cpu result,
    gpu result), checked to agree in dtype and shape."""
    ampc.manual_seed(seed)
    c = make_on("cpu")
    ampc.manual_seed(seed)
    g = make_on(cuda)
    assert g.dtype == c.dtype and tuple(g.shape) == tuple(c.shape)
    return c, g


# ---------------------------------------------------------------- ampc against torch


def ampc_and_torch(build):
    """build(nn) for nn in (ampc.nn, torch.nn): the same model written once for both libraries."""
    import ampc.nn
    return build(ampc.nn), build(torch.nn)


class ExpOut(ampc.autograd.Function):
    """exp as a custom Function that saves its own output (autograd and leak tests)."""

    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)  # an output saved
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


# default (rtol, atol) of check_op by dtype: about ten ulps of fp32/fp64, one or two of fp16/bf16
CHECK_OP_TOL = {"float64": (1e-10, 1e-10), "float32": (1e-5, 1e-5), "float16": (1e-3, 1e-3),
                "bfloat16": (1e-2, 1e-2)}
_FLOAT_NAMES = ("float64", "float32", "float16", "bfloat16")


def _dtype_name(dt):
    return str(dt).rsplit(".", 1)[-1]


def _as_list(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _random_values(rng, shape, dtype, low, high):
    """float64 NumPy values for a `dtype` input: uniform in [low, high] (integers in [low, high]
    for the integer dtypes, fair coins for bool)."""
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype in _FLOAT_NAMES:
        return rng.uniform(low, high, size=shape)
    return rng.integers(int(np.floor(low)), int(np.floor(high)) + 1, size=shape).astype(np.int64)


def _ampc_input(a, dtype, device, requires_grad):
    """The ampc tensor of NumPy values a rounded to `dtype` once (torch then gets those exact values)."""
    a = np.asarray(a)
    base = ampc.from_numpy(np.array(a, dtype=np.bool_ if a.dtype == np.bool_ else
                                    (np.int64 if a.dtype.kind in "iu" else np.float64)))
    t = base.to(getattr(ampc, dtype)).to(device)
    return t.requires_grad_(True) if requires_grad else t


def _torch_input(t, requires_grad):
    """The torch CPU tensor holding exactly the values of ampc tensor t, in t's dtype."""
    name = _dtype_name(t.dtype)
    x = torch.from_numpy(host_exact(t))
    x = x.to(getattr(torch, name))
    return x.requires_grad_(True) if requires_grad else x


def _tolerance(dtype, result_dtype, rtol, atol):
    """(rtol, atol) for a result of result_dtype computed from `dtype` inputs: the defaults of the
    less precise of the two floating dtypes, 0 (exact) for integer and bool results; the caller's
    rtol / atol override them."""
    if result_dtype not in CHECK_OP_TOL:
        d_rtol, d_atol = 0.0, 0.0
    else:
        d_rtol, d_atol = max(CHECK_OP_TOL[n] for n in (dtype, result_dtype) if n in CHECK_OP_TOL)
    return (d_rtol if rtol is None else rtol), (d_atol if atol is None else atol)


def _compare(got, want, rtol, atol, what):
    """got (an ampc tensor on any device) against want (a float64 / exact NumPy array): equal
    shape, equal NaN positions and infinities, |got - want| <= atol + rtol * |want| elsewhere."""
    g = host_exact(got)
    w = np.asarray(want)
    assert g.shape == w.shape, f"{what}: shape {g.shape} != {w.shape}"
    if g.dtype == np.bool_ or w.dtype == np.bool_ or (rtol == 0 and atol == 0):
        if not np.array_equal(g, w, equal_nan=g.dtype.kind == "f" and w.dtype.kind == "f"):
            bad = np.argwhere(g != w)
            i = tuple(bad[0]) if len(bad) else ()
            raise AssertionError(f"{what}: {len(bad)} of {g.size} values differ (exact); at {i} got "
                                 f"{g[i]!r} want {w[i]!r}")
        return
    g, w = g.astype(np.float64), w.astype(np.float64)
    assert np.array_equal(np.isnan(g), np.isnan(w)), f"{what}: NaN positions differ"
    inf = np.isinf(w)
    assert np.array_equal(g[inf], w[inf]) and not np.isinf(g[~inf]).any(), f"{what}: infinities differ"
    fin = np.isfinite(w)
    excess = np.where(fin, np.abs(g - w) - (atol + rtol * np.abs(w)), 0.0)
    if (excess > 0).any():
        i = np.unravel_index(np.argmax(excess), excess.shape)
        raise AssertionError(f"{what}: {int((excess > 0).sum())} of {g.size} values out of rtol={rtol:g} "
                             f"atol={atol:g}; worst at {i}: got {g[i]!r} want {w[i]!r}")


def _fn_name(fn):
    return getattr(fn, "__name__", repr(fn))


def check_op(fn, shapes=None, *, inputs=None, dtype="float32", device="cpu", grad=True,
             low=-2.0, high=2.0, rtol=None, atol=None, seed=0, ref=None, kwargs=None):
    """Runs fn(M, *tensors, **kwargs) with M = ampc and with M = torch (or `ref(M, ...)` on the torch
    side when given), on random inputs of `shapes` (numpy, seeded, uniform in [low, high]) or on the given
    numpy `inputs`, in `dtype` ("float32", "float16", "bfloat16", "float64", "int64", ...) and on `device`
    ("cpu"/"cuda" for ampc; torch always on cpu). Compares values and result dtypes (dtype-aware default
    tolerances: fp64 1e-10, fp32 1e-5, fp16 1e-3/bf16 1e-2 relative + matching atol), and, when grad is
    True and the inputs are floating, runs backward with a seeded random output gradient and compares the
    input gradients the same way. Outputs may be a tensor or a tuple/list of tensors. Returns the ampc
    outputs. When torch is not importable, falls back to comparing against ampc in float64 on the CPU plus
    ampc.testing.gradcheck for the gradients.

    Details: inputs rounded to `dtype` once in ampc, torch gets those exact values. Given `inputs`
    of integer or bool kind keep their own dtype when `dtype` is floating (indices, masks); other
    given arrays are cast to `dtype`; entries that are not arrays (None, Python numbers) are passed
    to fn unchanged. Integer and bool results must match exactly. Only floating inputs get
    gradients; results that do not require grad are not backpropagated."""
    if (shapes is None) == (inputs is None):
        raise ValueError("check_op: give exactly one of shapes and inputs")
    kwargs = kwargs or {}
    rng = np.random.default_rng(seed)
    name = _fn_name(ref or fn)
    floating = dtype in _FLOAT_NAMES

    arrays, dtypes = [], []  # None dtype: passed through unchanged
    if shapes is not None:
        for s in shapes:
            arrays.append(_random_values(rng, tuple(s), dtype, low, high))
            dtypes.append(dtype)
    else:
        for a in inputs:
            if not isinstance(a, (np.ndarray, np.generic)):
                arrays.append(a)
                dtypes.append(None)
                continue
            a = np.asarray(a)
            keep = floating and (a.dtype == np.bool_ or a.dtype.kind in "iu")
            arrays.append(a)
            dtypes.append(("bool" if a.dtype == np.bool_ else "int64" if a.dtype == np.int64 else
                           str(a.dtype)) if keep else dtype)
    wants_grad = [grad and d in _FLOAT_NAMES for d in dtypes]

    ta = [a if d is None else _ampc_input(a, d, device, g) for a, d, g in zip(arrays, dtypes, wants_grad)]
    out_a = fn(ampc, *ta, **kwargs)
    outs_a = _as_list(out_a)

    # the seeded upstream gradient of every floating result, as float64 values rounded to its dtype
    grad_rng = np.random.default_rng([seed, 1])
    upstream = [_ampc_input(grad_rng.standard_normal(tuple(o.shape)), _dtype_name(o.dtype), o.device, False)
                if o.requires_grad else None for o in outs_a]

    if torch is None:
        return _check_op_without_torch(fn, ref, ta, dtypes, wants_grad, out_a, upstream, dtype, rtol, atol, kwargs,
                                       name)

    tt = [a if d is None else _torch_input(t, g) for a, t, d, g in zip(arrays, ta, dtypes, wants_grad)]
    outs_t = _as_list((ref or fn)(torch, *tt, **kwargs))
    assert len(outs_a) == len(outs_t), f"{name}: {len(outs_a)} results, torch gives {len(outs_t)}"
    for k, (a, t) in enumerate(zip(outs_a, outs_t)):
        what = f"{name} [{dtype}, {device}] result {k}"
        assert _dtype_name(a.dtype) == _dtype_name(t.dtype), f"{what}: dtype {a.dtype}, torch gives {t.dtype}"
        r, at = _tolerance(dtype, _dtype_name(a.dtype), rtol, atol)
        _compare(a, t.detach().numpy() if t.dtype == torch.bool or not t.dtype.is_floating_point else
                 t.detach().double().numpy(), r, at, what)

    pairs = [(a, t, u) for a, t, u in zip(outs_a, outs_t, upstream) if u is not None]
    if not any(wants_grad) or not pairs:
        return out_a
    ampc.autograd.backward([a for a, _, _ in pairs], [u for _, _, u in pairs])
    torch.autograd.backward([t for _, t, _ in pairs], [_torch_input(u.cpu(), False) for _, _, u in pairs])
    for i, (a, t, g) in enumerate(zip(ta, tt, wants_grad)):
        if not g:
            continue
        what = f"{name} [{dtype}, {device}] grad of input {i}"
        assert (a.grad is None) == (t.grad is None), f"{what}: ampc grad {a.grad is None and 'None'}, " \
                                                     f"torch grad {t.grad is None and 'None'}"
        if a.grad is None:
            continue
        assert _dtype_name(a.grad.dtype) == _dtype_name(t.grad.dtype), \
            f"{what}: dtype {a.grad.dtype}, torch gives {t.grad.dtype}"
        r, at = _tolerance(dtype, _dtype_name(a.grad.dtype), rtol, atol)
        _compare(a.grad, t.grad.double().numpy(), r, at, what)
    return out_a


def _check_op_without_torch(fn, ref, ta, dtypes, wants_grad, out_a, upstream, dtype, rtol, atol, kwargs, name):
    """check_op's oracle when torch is missing: the same fn (or ref) in ampc, float64, on the CPU,
    for the values, and ampc.testing.gradcheck of fn in float64 for the gradients."""
    from ampc.testing import gradcheck

    def wide(t, d, g):
        if d is None:
            return t
        x = t.detach().cpu()
        x = x.double() if d in _FLOAT_NAMES else x.clone()
        return x.requires_grad_(True) if g else x

    outs_a = _as_list(out_a)
    t64 = [wide(t, d, g) for t, d, g in zip(ta, dtypes, wants_grad)]
    outs_w = _as_list((ref or fn)(ampc, *t64, **kwargs))
    assert len(outs_a) == len(outs_w), f"{name}: {len(outs_a)} results, the float64 run gives {len(outs_w)}"
    for k, (a, w) in enumerate(zip(outs_a, outs_w)):
        r, at = _tolerance(dtype, _dtype_name(a.dtype), rtol, atol)
        _compare(a, host_exact(w), r, at, f"{name} [{dtype}] result {k} against ampc float64")
    if any(wants_grad) and any(u is not None for u in upstream):
        gradcheck(lambda *xs: (ref or fn)(ampc, *xs, **kwargs), tuple(t64))
    return out_a
