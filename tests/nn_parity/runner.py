"""The nn parity runner: one Case (spec.py) checked against torch on one device in one dtype.

What `run(case, dtype, device)` checks, in order (torch always on the CPU, in the same dtype):
  1. build    torch.manual_seed(0) / ampc.manual_seed(0), then case.build(M) in each library; for a
              module: the same class kind, repr equal (case.repr), parameters and buffers equal bit
              for bit (case.init: ampc's CPU generator is torch's mt19937, so the same init calls
              draw the same numbers), the same state_dict keys.
  2. load     torch's state_dict into the ampc module with strict=True (torch's values from now on),
              both moved to the dtype (ampc also to the device) and put in train/eval mode.
  3. forward  the same drawn inputs; every output leaf (nested tuples, lists, namedtuples such as
              PackedSequence) compared: type, dtype, shape, values within the dtype's tolerance.
  4. backward one seeded upstream gradient per floating output; the gradients of every input drawn
              with grad=True and of every parameter (by name) compared.
  5. back     the ampc module's state_dict loaded into a fresh torch module with strict=True gives
              torch back the same values (the round trip the issue asks for).
"""
import zlib
from collections import OrderedDict

import numpy as np
import torch

import ampc
from helpers import host_exact

from nn_parity.spec import Bool, Const, I, Sub, X

# (rtol, atol relative to the largest magnitude of the reference) by dtype
TOL = {"float64": (1e-9, 1e-10), "float32": (2e-4, 2e-5), "float16": (1e-2, 5e-3), "bfloat16": (4e-2, 2e-2)}


def _np(spec, rng):
    if isinstance(spec, X):
        return rng.uniform(spec.low, spec.high, size=spec.shape)
    if isinstance(spec, I):
        return rng.integers(spec.low, spec.high, size=spec.shape).astype(np.int64)
    if isinstance(spec, Bool):
        return rng.random(spec.shape) < spec.p
    if isinstance(spec, Sub):
        return _np(spec.spec, rng)
    if isinstance(spec, Const):
        return spec.value
    raise TypeError(f"nn parity: unknown input spec {spec!r}")


def _pair(spec, a, dtype, device):
    """(ampc value, torch value, ampc grad leaf or None, torch grad leaf or None) of drawn value a."""
    if isinstance(spec, Const):
        return a, a, None, None
    if isinstance(spec, Sub):
        am, tm, ag, tg = _pair(spec.spec, a, dtype, device)
        return spec.make(ampc, am), spec.make(torch, tm), ag, tg
    if isinstance(spec, X):
        t = torch.from_numpy(np.asarray(a, np.float64)).to(getattr(torch, dtype))
        am = ampc.from_numpy(np.asarray(a, np.float64)).to(getattr(ampc, dtype)).to(device)
        if spec.grad:
            t.requires_grad_(True)
            am.requires_grad_(True)
            return am, t, am, t
        return am, t, None, None
    t = torch.from_numpy(np.asarray(a))
    return ampc.from_numpy(np.asarray(a)).to(device), t, None, None


def _leaves(out, path="out"):
    """(path, leaf) pairs of a nested output; tensors and plain values."""
    if isinstance(out, (torch.Tensor, ampc.Tensor)) or out is None or isinstance(out, (int, float, bool, str)):
        return [(path, out)]
    if isinstance(out, dict):
        return [p for k in out for p in _leaves(out[k], f"{path}[{k!r}]")]
    if isinstance(out, (tuple, list)):
        return [p for i, v in enumerate(out) for p in _leaves(v, f"{path}[{i}]")]
    raise TypeError(f"nn parity: cannot compare an output of type {type(out).__name__} at {path}")


def _dtype_name(dt):
    return str(dt).rsplit(".", 1)[-1]


def compare(got, want, dtype, what, rtol=None, atol=None):
    """An ampc tensor (any device) against a torch CPU tensor: dtype, shape, then values (floats
    within tolerance scaled by the reference's largest magnitude, everything else exact)."""
    if want is None or not isinstance(want, torch.Tensor):
        assert not isinstance(got, ampc.Tensor) and got == want, f"{what}: {got!r} != {want!r}"
        return
    assert isinstance(got, ampc.Tensor), f"{what}: got {type(got).__name__}, want a tensor"
    assert _dtype_name(got.dtype) == _dtype_name(want.dtype), f"{what}: dtype {got.dtype} != {want.dtype}"
    assert tuple(got.shape) == tuple(want.shape), f"{what}: shape {tuple(got.shape)} != {tuple(want.shape)}"
    g = host_exact(got)
    w = want.detach().double().numpy() if want.is_floating_point() else want.detach().numpy()
    if not want.is_floating_point():
        assert np.array_equal(g, w), f"{what}: {int((g != w).sum())} of {g.size} values differ (exact)"
        return
    d_rtol, d_atol = TOL[_dtype_name(want.dtype)]
    rtol = d_rtol if rtol is None else rtol
    atol = d_atol if atol is None else atol
    assert np.array_equal(np.isnan(g), np.isnan(w)), f"{what}: NaN positions differ"
    fin = np.isfinite(w)
    assert np.array_equal(g[~fin & ~np.isnan(w)], w[~fin & ~np.isnan(w)]), f"{what}: infinities differ"
    if not fin.any():
        return
    scale = float(np.max(np.abs(w[fin])))
    excess = np.abs(g[fin] - w[fin]) - (rtol * np.abs(w[fin]) + atol * max(scale, 1e-30))
    if (excess > 0).any():
        i = int(np.argmax(excess))
        raise AssertionError(f"{what}: {int((excess > 0).sum())} of {w.size} values out of rtol={rtol:g} "
                             f"atol={atol:g} (x {scale:.3g}); worst got {g[fin][i]!r} want {w[fin][i]!r}")


def _torch_of(t):
    """The torch CPU tensor of an ampc tensor's values (bf16 through float32, exact)."""
    a = host_exact(t)
    return torch.from_numpy(np.ascontiguousarray(a)).to(getattr(torch, _dtype_name(t.dtype)))


def _build(case):
    torch.manual_seed(0)
    tobj = case.build(torch)
    ampc.manual_seed(0)
    aobj = case.build(ampc)
    return aobj, tobj


def _check_module_build(case, am, tm):
    assert isinstance(am, ampc.nn.Module), f"{case.id}: ampc built {type(am).__name__}, torch a module"
    assert type(am).__name__ == type(tm).__name__, (type(am).__name__, type(tm).__name__)
    if case.repr:
        assert repr(am) == repr(tm), f"{case.id}: repr differs\nampc:  {am!r}\ntorch: {tm!r}"
    a_sd, t_sd = am.state_dict(), tm.state_dict()
    assert list(a_sd.keys()) == list(t_sd.keys()), f"{case.id}: state_dict keys {list(a_sd)} != {list(t_sd)}"
    if case.init:
        for k, tv in t_sd.items():
            av = a_sd[k]
            assert _dtype_name(av.dtype) == _dtype_name(tv.dtype), f"{case.id}: {k} dtype {av.dtype} != {tv.dtype}"
            assert tuple(av.shape) == tuple(tv.shape), f"{case.id}: {k} shape"
            ok = np.array_equal(host_exact(av), tv.detach().double().numpy() if tv.is_floating_point()
                                else tv.detach().numpy())
            assert ok, f"{case.id}: initial {k} differs from torch's under the same seed"


def _load_torch_state(am, tm):
    sd = OrderedDict((k, ampc.from_numpy(v.detach().numpy().copy()) if v.dtype != torch.bfloat16 else
                      ampc.from_numpy(v.detach().float().numpy()).to(ampc.bfloat16)) for k, v in tm.state_dict().items())
    am.load_state_dict(sd, strict=True)


def run(case, dtype, device):
    rng = np.random.default_rng(zlib.crc32(case.id.encode()))
    drawn = [_np(s, rng) for s in case.inputs]
    am, tm = _build(case)
    is_module = isinstance(tm, torch.nn.Module)
    if is_module:
        _check_module_build(case, am, tm)
        _load_torch_state(am, tm)
        tm.to(getattr(torch, dtype))
        am.to(device=device, dtype=getattr(ampc, dtype))
        tm.train(case.train)
        am.train(case.train)
    pairs = [_pair(s, a, dtype, device) for s, a in zip(case.inputs, drawn)]
    a_in, t_in = [p[0] for p in pairs], [p[1] for p in pairs]
    call = case.call or (lambda f, *xs, **kw: f(*xs, **kw))
    t_out = call(tm, *t_in, **case.kwargs)
    a_out = call(am, *a_in, **case.kwargs)
    t_leaves, a_leaves = _leaves(t_out), _leaves(a_out)
    assert [p for p, _ in a_leaves] == [p for p, _ in t_leaves], f"{case.id}: output structure differs"
    for (path, a), (_, t) in zip(a_leaves, t_leaves):
        compare(a, t, dtype, f"{case.id} {dtype} {device} {path}", case.rtol, case.atol)
    if not case.grad:
        return
    diff = [(a, t) for (_, a), (_, t) in zip(a_leaves, t_leaves)
            if isinstance(t, torch.Tensor) and t.requires_grad and t.is_floating_point()]
    assert diff, f"{case.id}: grad=True but no output requires grad"
    g_rng = np.random.default_rng(1)
    ups = [g_rng.uniform(-1, 1, size=tuple(t.shape)) for _, t in diff]
    torch.autograd.backward([t for _, t in diff], [torch.from_numpy(u).to(t.dtype) for u, (_, t) in zip(ups, diff)])
    ampc.autograd.backward([a for a, _ in diff],
                           [ampc.from_numpy(u).to(a.dtype).to(device) for u, (a, _) in zip(ups, diff)])
    for i, p in enumerate(pairs):
        if p[3] is not None:
            assert (p[2].grad is None) == (p[3].grad is None), f"{case.id}: input {i} grad presence"
            if p[3].grad is not None:
                compare(p[2].grad, p[3].grad, dtype, f"{case.id} {dtype} {device} grad of input {i}",
                        case.rtol, case.atol)
    if is_module:
        t_params = dict(tm.named_parameters())
        a_params = dict(am.named_parameters())
        assert list(a_params) == list(t_params), f"{case.id}: parameter names {list(a_params)} != {list(t_params)}"
        for name, tp in t_params.items():
            ap = a_params[name]
            assert (ap.grad is None) == (tp.grad is None), f"{case.id}: grad presence of {name}"
            if tp.grad is not None:
                compare(ap.grad, tp.grad, dtype, f"{case.id} {dtype} {device} grad of {name}", case.rtol, case.atol)
        _check_round_trip(case, am)


def _check_round_trip(case, am):
    """ampc's state_dict into a fresh torch module (strict) holds the same values."""
    torch.manual_seed(1)
    fresh = case.build(torch)
    a_sd = am.state_dict()
    sd = OrderedDict((k, _torch_of(v)) for k, v in a_sd.items())
    fresh.to(next(iter(sd.values())).dtype if sd and next(iter(sd.values())).is_floating_point() else torch.float32)
    fresh.load_state_dict(sd, strict=True)
    for k, v in fresh.state_dict().items():
        assert np.array_equal(v.detach().double().numpy() if v.is_floating_point() else v.numpy(),
                              host_exact(a_sd[k])), f"{case.id}: round trip of {k}"
