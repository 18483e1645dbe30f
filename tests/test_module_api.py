"""nn.Module's API and the containers against torch's: hooks (forward, full backward, global,
registration, state_dict), state_dict/load_state_dict rules and error texts, traversal, the
submodule accessors, ParameterList/ParameterDict/Sequential/ModuleList/ModuleDict operations,
nn.parallel. Each check runs the same code on both libraries (`M` is torch or ampc) and compares
what comes out."""
import warnings
from collections import OrderedDict

import numpy as np
import pytest
import torch

import ampc
import ampc.nn as nn
import ampc.nn.modules.module as amod

LIBS = [torch, ampc]


def both(fn):
    """fn(M) for torch and ampc, with the same seed."""
    out = []
    for M in LIBS:
        M.manual_seed(0)
        out.append(fn(M))
    return out


def _np(x):
    if x is None:
        return None
    return x.detach().numpy() if isinstance(x, torch.Tensor) else x.detach().numpy()


def _close(a, b, **kw):
    np.testing.assert_allclose(_np(a), _np(b), rtol=kw.get("rtol", 1e-5), atol=kw.get("atol", 1e-6))


def _err(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e).replace("torch.", "").replace("ampc.", "")
    return None


def same_error(fn):
    t, a = both(lambda M: _err(lambda: fn(M)))
    assert t is not None, "torch raised nothing"
    assert t == a, f"torch: {t}\nampc:  {a}"


# ---------------------------------------------------------------- forward hooks

def test_forward_hooks_order_kwargs_prepend_always_call():
    def run(M):
        log = []
        m = M.nn.Linear(3, 2)
        m.register_forward_pre_hook(lambda mod, args: log.append("pre1"))
        m.register_forward_pre_hook(lambda mod, args: log.append("pre0"), prepend=True)
        m.register_forward_pre_hook(lambda mod, args, kwargs: (log.append(sorted(kwargs)), None)[1],
                                    with_kwargs=True)
        h = m.register_forward_hook(lambda mod, args, out: out * 2)
        m.register_forward_hook(lambda mod, args, kwargs, out: log.append(("kw", len(args))), with_kwargs=True)
        m.register_forward_hook(lambda mod, args, out: log.append("first"), prepend=True)
        y = m(M.ones(1, 3))
        h.remove()
        y2 = m(M.ones(1, 3))
        return log, (y / y2).tolist()

    t, a = both(run)
    assert t == a


def test_forward_pre_hook_replaces_args_and_kwargs():
    def run(M):
        m = M.nn.Linear(2, 2, bias=False)
        with M.no_grad():
            m.weight.copy_(M.eye(2))
        m.register_forward_pre_hook(lambda mod, args: args[0] + 1)
        a = m(M.zeros(1, 2)).tolist()
        bad = M.nn.Identity()
        bad.register_forward_pre_hook(lambda mod, args, kwargs: 5, with_kwargs=True)
        return a, _err(lambda: bad(M.zeros(1)))

    t, a = both(run)
    assert t[0] == a[0]
    assert t[1][1].startswith("forward pre-hook must return None or a tuple of (new_args, new_kwargs)")
    assert a[1][1].startswith("forward pre-hook must return None or a tuple of (new_args, new_kwargs)")


def test_always_call_hook_runs_when_forward_raises():
    def run(M):
        log = []

        class Boom(M.nn.Module):
            def forward(self, x):
                raise ValueError("boom")

        m = Boom()
        m.register_forward_hook(lambda mod, args, out: log.append(("always", out)), always_call=True)
        m.register_forward_hook(lambda mod, args, out: log.append("never"))
        with pytest.raises(ValueError, match="boom"):
            m(M.zeros(1))
        return log

    t, a = both(run)
    assert t == a == [("always", None)]


# ---------------------------------------------------------------- backward hooks

def _backward_hooks_run(M, input_grad=True):
    log = []
    m = M.nn.Linear(3, 2)
    x = M.randn(4, 3, requires_grad=input_grad)
    m.register_full_backward_pre_hook(lambda mod, go: log.append(("pre", [g.tolist() for g in go])))
    m.register_full_backward_pre_hook(lambda mod, go: (go[0] * 3,))
    m.register_full_backward_hook(lambda mod, gi, go: log.append(
        ("full", [None if g is None else g.tolist() for g in gi], [g.tolist() for g in go])))
    if input_grad:
        m.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 0.5,))
    m(x).sum().backward()
    return log, (x.grad.tolist() if input_grad else None), m.weight.grad.tolist()


@pytest.mark.parametrize("input_grad", [True, False])
def test_full_backward_hooks_match_torch(input_grad):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t, a = both(lambda M: _backward_hooks_run(M, input_grad))
    assert [e[0] for e in t[0]] == [e[0] for e in a[0]]  # which hooks ran, in order
    for te, ae in zip(t[0], a[0]):
        for tv, av in zip(te[1:], ae[1:]):  # grad_input / grad_output, entry by entry (None where torch has None)
            assert [x is None for x in tv] == [x is None for x in av]
            for x, y in zip(tv, av):
                if x is not None:
                    np.testing.assert_allclose(y, x, rtol=1e-5)
    if input_grad:
        np.testing.assert_allclose(a[1], t[1], rtol=1e-5)
    np.testing.assert_allclose(a[2], t[2], rtol=1e-5)


def test_full_backward_hook_errors_and_non_full_mix():
    same_error(lambda M: (lambda m: (m.register_full_backward_hook(lambda *a: None),
                                     m.register_backward_hook(lambda *a: None)))(M.nn.Linear(2, 2)))
    same_error(lambda M: (lambda m: (m.register_backward_hook(lambda *a: None),
                                     m.register_full_backward_hook(lambda *a: None)))(M.nn.Linear(2, 2)))

    def bad_count(M):
        m = M.nn.Linear(2, 2)
        m.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
        m(M.randn(1, 2, requires_grad=True)).sum().backward()
    same_error(bad_count)


def test_global_module_hooks():
    def run(M):
        mm = M.nn.modules.module
        log = []
        h1 = mm.register_module_forward_pre_hook(lambda mod, args: log.append(("gpre", type(mod).__name__)))
        h2 = mm.register_module_forward_hook(lambda mod, args, out: log.append(("gfwd", type(mod).__name__)))
        h3 = mm.register_module_full_backward_hook(lambda mod, gi, go: log.append(("gbwd", type(mod).__name__)))
        h4 = mm.register_module_full_backward_pre_hook(lambda mod, go: log.append(("gbpre", type(mod).__name__)))
        try:
            net = M.nn.Sequential(M.nn.Linear(2, 2), M.nn.ReLU())
            net[0].register_forward_pre_hook(lambda mod, args: log.append(("own", "Linear")))
            net(M.randn(3, 2, requires_grad=True)).sum().backward()
        finally:
            for h in (h1, h2, h3, h4):
                h.remove()
        net(M.randn(3, 2))
        return log

    t, a = both(run)
    assert t == a


def test_registration_hooks():
    def run(M):
        mm = M.nn.modules.module
        log = []
        hs = [mm.register_module_parameter_registration_hook(lambda m, n, p: log.append(("param", n))),
              mm.register_module_buffer_registration_hook(lambda m, n, b: log.append(("buffer", n))),
              mm.register_module_module_registration_hook(lambda m, n, s: log.append(("module", n)))]
        try:
            m = M.nn.Module()
            m.lin = M.nn.Linear(1, 1)
            m.register_buffer("b", M.zeros(1))
            m.p = M.nn.Parameter(M.zeros(1))
            m.add_module("act", M.nn.ReLU())
        finally:
            for h in hs:
                h.remove()
        return log

    t, a = both(run)
    assert t == a


# ---------------------------------------------------------------- state dict

def test_state_dict_hooks():
    def run(M):
        log = []
        m = M.nn.Linear(2, 2)
        m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: log.append(("pre", prefix)))
        m.register_state_dict_post_hook(lambda mod, sd, prefix, meta: (sd.pop(prefix + "bias"), None)[1])
        keys = list(m.state_dict())
        m._register_state_dict_hook(lambda mod, sd, prefix, meta: OrderedDict(x=1))
        replaced = dict(m.state_dict())
        m2 = M.nn.Linear(2, 2)
        m2.register_state_dict_post_hook(lambda mod, sd, prefix, meta: sd)
        err = _err(lambda: m2.state_dict())
        m3 = M.nn.Linear(2, 2)
        m3.register_load_state_dict_pre_hook(
            lambda mod, sd, prefix, meta, strict, missing, unexpected, errors: log.append(("lpre", sorted(sd))))
        m3._register_load_state_dict_pre_hook(
            lambda sd, prefix, meta, strict, missing, unexpected, errors: log.append(("lpre-nomod", prefix)))
        m3.register_load_state_dict_post_hook(lambda mod, inc: inc.unexpected_keys.clear())
        res = m3.load_state_dict({"weight": M.zeros(2, 2), "bias": M.zeros(2), "extra": M.zeros(1)})
        return log, keys, replaced, err, (list(res.missing_keys), list(res.unexpected_keys))

    t, a = both(run)
    assert t[0] == a[0] and t[1] == a[1] and t[2] == a[2] and t[4] == a[4]
    assert t[3][0] == a[3][0] and "state_dict post-hook must return None" in a[3][1]


def test_non_persistent_buffers_and_load_state_dict_errors():
    def build(M):
        m = M.nn.Sequential(M.nn.Linear(3, 2), M.nn.BatchNorm1d(2))
        m.register_buffer("tmp", M.zeros(3), persistent=False)
        m.register_buffer("keep", M.ones(1))
        return m

    t, a = both(lambda M: list(build(M).state_dict()))
    assert t == a and "tmp" not in a and "keep" in a
    same_error(lambda M: build(M).load_state_dict({"0.weight": M.zeros(2, 3), "bogus": M.zeros(1)}))
    same_error(lambda M: build(M).load_state_dict(
        {k: (M.zeros(5) if k == "0.bias" else v) for k, v in build(M).state_dict().items()}))
    same_error(lambda M: build(M).load_state_dict([1, 2]))
    t, a = both(lambda M: build(M).load_state_dict({"0.weight": M.zeros(2, 3), "bogus": M.zeros(1)}, strict=False))
    assert (t.missing_keys, t.unexpected_keys) == (a.missing_keys, a.unexpected_keys)
    assert repr(a).startswith("_IncompatibleKeys(missing_keys=[")


def test_load_state_dict_assign():
    def run(M):
        m = M.nn.Linear(2, 3)
        w = M.nn.Parameter(M.full((3, 2), 2.0))
        m.load_state_dict({"weight": w, "bias": M.zeros(3)}, assign=True)
        return m.weight is w, type(m.bias).__name__, m.bias.requires_grad, m.weight.sum().item()

    t, a = both(run)
    assert t == a == (True, "Parameter", True, 12.0)


def test_state_dict_round_trip_with_torch_keys_and_prefix():
    t, a = both(lambda M: M.nn.Sequential(M.nn.Conv2d(1, 2, 3), M.nn.BatchNorm2d(2)))
    sd = {k: ampc.from_numpy(v.numpy().copy()) for k, v in t.state_dict().items()}
    assert str(a.load_state_dict(sd)) == "<All keys matched successfully>"
    assert list(a.state_dict(prefix="net.")) == list(t.state_dict(prefix="net."))
    assert list(a.state_dict(keep_vars=True)["0.weight"].shape) == [2, 1, 3, 3]
    assert a.state_dict(keep_vars=True)["0.weight"] is a[0].weight


# ---------------------------------------------------------------- traversal and accessors

def test_named_modules_memo_prefix_remove_duplicate():
    def run(M):
        shared = M.nn.Linear(2, 2)
        m = M.nn.Sequential(shared, M.nn.ReLU(), shared)
        return ([n for n, _ in m.named_modules()], [n for n, _ in m.named_modules(remove_duplicate=False)],
                [n for n, _ in m.named_modules(prefix="net")], [n for n, _ in m.named_parameters()],
                [n for n, _ in m.named_parameters(remove_duplicate=False)], len(list(m.modules())),
                [n for n, _ in m.named_children()], [n for n, _ in m.named_modules(memo={shared})])

    t, a = both(run)
    assert t == a


def test_submodule_accessors():
    def build(M):
        m = M.nn.Sequential(OrderedDict(enc=M.nn.Sequential(M.nn.Linear(2, 2), M.nn.BatchNorm1d(2))))
        return m

    t, a = both(lambda M: (build(M).get_submodule("enc.0").__class__.__name__,
                           list(build(M).get_parameter("enc.0.bias").shape),
                           list(build(M).get_buffer("enc.1.running_mean").shape)))
    assert t == a
    same_error(lambda M: build(M).get_submodule("enc.5"))
    same_error(lambda M: build(M).get_submodule("enc.0.weight"))
    same_error(lambda M: build(M).get_parameter("enc.1.running_mean"))
    same_error(lambda M: build(M).get_buffer("enc.0.weight"))
    same_error(lambda M: build(M).get_parameter("enc.0.nothing"))

    def set_it(M):
        m = build(M)
        m.set_submodule("enc.0", M.nn.Linear(2, 4))
        m.set_submodule("enc.new", M.nn.ReLU())
        return [n for n, _ in m.named_modules()], list(m.enc[0].weight.shape)
    t, a = both(set_it)
    assert t == a
    same_error(lambda M: build(M).set_submodule("", M.nn.ReLU()))
    same_error(lambda M: build(M).set_submodule("enc.0", 3))
    same_error(lambda M: build(M).set_submodule("enc.zz", M.nn.ReLU(), strict=True))
    same_error(lambda M: build(M).set_submodule("enc.0.weight", M.nn.ReLU()))


def test_apply_zero_grad_requires_grad_dir_extra_repr_share_memory():
    def run(M):
        m = M.nn.Sequential(M.nn.Linear(2, 2), M.nn.Linear(2, 1))
        seen = []
        m.apply(lambda mod: seen.append(type(mod).__name__))
        m(M.ones(1, 2)).sum().backward()
        m.zero_grad(set_to_none=False)
        zeros = [p.grad.abs().sum().item() for p in m.parameters()]
        m.zero_grad()
        nones = [p.grad is None for p in m.parameters()]
        m.requires_grad_(False)
        rg = [p.requires_grad for p in m.parameters()]
        d = dir(m[0])
        m.share_memory()
        return seen, zeros, nones, rg, ("weight" in d, "0" in dir(m), "forward" in d), m[0].extra_repr()

    t, a = both(run)
    assert t == a


def test_apply_to_moves_params_keeping_identity():
    m = nn.Linear(3, 2)
    w = m.weight
    m.to(ampc.float64)
    assert m.weight is w and m.weight.dtype == ampc.float64
    m.to(device="cpu", dtype=ampc.float32, non_blocking=True)
    assert m.weight.dtype == ampc.float32
    m.double()._apply(lambda t: t.float())
    assert m.bias.dtype == ampc.float32
    with pytest.raises(TypeError, match="only accepts floating point"):
        m.to(ampc.int64)


# ---------------------------------------------------------------- containers

def test_sequential_operations():
    def run(M):
        a, b, c = M.nn.Linear(1, 1), M.nn.ReLU(), M.nn.Tanh()
        s = M.nn.Sequential(a, b)
        out = {}
        out["add"] = [type(x).__name__ for x in s + M.nn.Sequential(c)]
        out["mul"] = list((s * 2)._modules)
        out["rmul"] = len(2 * s)
        s2 = M.nn.Sequential(a, b)
        s2 *= 3
        out["imul"] = list(s2._modules)
        s2 += M.nn.Sequential(c)
        out["iadd"] = len(s2)
        out["pop"] = type(s2.pop(0)).__name__
        out["after_pop"] = list(s2._modules)
        del s2[1:3]
        out["del"] = list(s2._modules)
        s2.insert(-1, M.nn.Sigmoid())
        out["insert"] = [type(x).__name__ for x in s2]
        s2[0] = M.nn.GELU()
        out["set"] = type(s2[0]).__name__
        out["slice_type"] = type(s2[1:]).__name__
        out["dir"] = any(k.isdigit() for k in dir(s2))
        out["errors"] = [_err(lambda: s + [c]), _err(lambda: s * 0), _err(lambda: s * 1.5), _err(lambda: s[10]),
                         _err(lambda: s.insert(9, c)), _err(lambda: s.insert(0, 3))]
        return out

    t, a = both(run)
    assert t == a


def test_modulelist_moduledict_operations():
    def run(M):
        out = {}
        ml = M.nn.ModuleList([M.nn.ReLU(), M.nn.Tanh()])
        ml.insert(1, M.nn.Sigmoid())
        ml.append(M.nn.GELU()).extend([M.nn.SiLU()])
        ml += [M.nn.Identity()]
        out["ml"] = [type(x).__name__ for x in ml]
        out["pop"] = type(ml.pop(-1)).__name__
        del ml[::2]
        out["ml_del"] = list(ml._modules)
        out["ml_repr"] = repr(M.nn.ModuleList([M.nn.ReLU(), M.nn.ReLU(), M.nn.Tanh()]))
        out["ml_err"] = [_err(lambda: ml[7]), _err(lambda: ml.extend(3))]
        md = M.nn.ModuleDict({"b": M.nn.ReLU(), "a": M.nn.Tanh()})
        md.update([("c", M.nn.GELU())])
        md["d"] = M.nn.SiLU()
        out["md"] = list(md.keys())
        out["md_pop"] = type(md.pop("b")).__name__
        out["md_contains"] = ("a" in md, "b" in md, len(md))
        out["md_items"] = [(k, type(v).__name__) for k, v in md.items()]
        out["md_err"] = [_err(lambda: md.update(3)), _err(lambda: md.update([("x",)])), _err(lambda: md.update([1]))]
        md.clear()
        out["md_clear"] = len(md)
        return out

    t, a = both(run)
    assert t == a


def test_parameterlist_parameterdict_operations():
    def run(M):
        out = {}
        pl = M.nn.ParameterList([M.zeros(2), M.nn.Parameter(M.ones(3))])
        pl.append(M.zeros(1, 2))
        pl.extend([M.ones(4)])
        pl.append("not a tensor")
        out["types"] = [type(p).__name__ for p in pl]
        out["names"] = [n for n, _ in M.nn.Module.named_parameters(pl)]
        out["len"] = len(pl)
        out["slice"] = [list(p.shape) for p in pl[1:4:2]]
        pl[0] = M.full((2,), 5.0)
        out["set"] = (type(pl[0]).__name__, pl[0].tolist())
        out["neg"] = list(pl[-2].shape)
        out["err"] = [_err(lambda: pl[9]), _err(lambda: pl.extend(M.zeros(2))), _err(lambda: pl(1))]
        out["repr_lines"] = len(repr(pl).splitlines())
        pd = M.nn.ParameterDict({"b": M.zeros(2), "a": M.nn.Parameter(M.ones(1))})
        out["pd_keys"] = list(pd.keys())  # a plain dict is sorted, as in torch
        pd2 = M.nn.ParameterDict(OrderedDict([("z", M.zeros(1)), ("y", M.zeros(1))]))
        out["pd2_keys"] = list(pd2)
        pd["c"] = M.ones(3)
        out["pd_types"] = [type(v).__name__ for v in pd.values()]
        out["pd_sd"] = list(pd.state_dict())
        out["setdefault"] = list(pd.setdefault("e", M.zeros(2)).shape)
        out["get"] = (pd.get("nope", 7), list(pd.get("a").shape))
        out["pop"] = list(pd.pop("b").shape)
        out["popitem"] = pd.popitem()[0]
        out["or"] = list((pd | pd2).keys())
        pd |= pd2
        out["ior"] = list(pd)
        out["fromkeys"] = list(pd.fromkeys(["p", "q"], M.zeros(1)).keys())
        out["contains"] = ("a" in pd, "b" in pd)
        out["reversed"] = list(reversed(pd))
        out["copy"] = list(pd.copy())
        out["pd_err"] = [_err(lambda: pd[1]), _err(lambda: pd.update(3)), _err(lambda: pd.update([("x",)])),
                         _err(lambda: pd(1))]
        pd.clear()
        out["clear"] = len(pd)
        return out

    t, a = both(run)
    assert t == a


def test_parameterlist_repr_matches_torch_but_for_the_module_name():
    t, a = both(lambda M: repr(M.nn.ParameterList([M.zeros(2, 3), M.nn.Parameter(M.ones(1)), 3])))
    assert a.replace("ampc.", "torch.") == t
    t, a = both(lambda M: repr(M.nn.ParameterDict({"w": M.zeros(2, 3), "n": "x"})))
    assert a == t


def test_parameterlist_in_a_model_trains_and_round_trips_with_torch():
    def build(M):
        class Net(M.nn.Module):
            def __init__(self):
                super().__init__()
                self.ws = M.nn.ParameterList([M.nn.Parameter(M.randn(3, 3)) for _ in range(2)])
                self.bs = M.nn.ParameterDict({"b0": M.zeros(3), "b1": M.zeros(3)})

            def forward(self, x):
                for i, w in enumerate(self.ws):
                    x = (x @ w + self.bs[f"b{i}"]).tanh()
                return x
        return Net()

    t, a = both(build)
    assert list(a.state_dict()) == list(t.state_dict())
    a.load_state_dict({k: ampc.from_numpy(v.numpy().copy()) for k, v in t.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    t(torch.from_numpy(x)).sum().backward()
    a(ampc.from_numpy(x)).sum().backward()
    for (n, ap), tp in zip(a.named_parameters(), t.parameters()):
        _close(ap.grad, tp.grad)


# ---------------------------------------------------------------- nn.parallel

def test_data_parallel_runs_the_module_and_prefixes_state_dict():
    t, a = both(lambda M: M.nn.DataParallel(M.nn.Linear(3, 2)))
    assert list(a.state_dict()) == list(t.state_dict()) == ["module.weight", "module.bias"]
    # torch here has no GPU: no device ids; ampc has one under the CUDA emulator (the module moved there)
    assert a.device_ids == ([0] if ampc.cuda.is_available() else []) and t.device_ids == []
    a.load_state_dict({k: ampc.from_numpy(v.numpy().copy()) for k, v in t.state_dict().items()})
    x = np.ones((4, 3), np.float32)
    _close(a(ampc.from_numpy(x)).cpu(), t(torch.from_numpy(x)))
    assert repr(a) == repr(t)
    _close(nn.parallel.data_parallel(a.module, ampc.from_numpy(x)).cpu(), t(torch.from_numpy(x)))


def test_scatter_gather_and_replicate_on_the_cpu():
    from ampc.nn.parallel import gather, replicate, scatter
    x = ampc.arange(12.0).reshape(6, 2)
    parts = scatter(x, ["cpu", "cpu", "cpu"])
    assert [p.shape[0] for p in parts] == [2, 2, 2]
    assert bool((gather(parts, "cpu") == x).all())
    lin = nn.Linear(2, 2)
    rep = replicate(lin, ["cpu"])[0]
    rep(x).sum().backward()  # the replica's parameters are differentiable copies of the originals
    assert lin.weight.grad is not None and rep is not lin


def test_distributed_data_parallel_names_the_missing_process_group():
    import ampc.nn.parallel as par
    assert par.DistributedDataParallel is ampc.nn.parallel.DistributedDataParallel
    with pytest.raises(ValueError, match="init_process_group"):
        par.DistributedDataParallel(nn.Linear(2, 2))  # it works with one: tests/test_distributed.py
    with pytest.raises(ValueError, match="init_process_group"):
        torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))


def test_module_namespace_has_torchs_global_hook_functions():
    for name in dir(torch.nn.modules.module):
        if name.startswith("register_module_"):
            assert callable(getattr(amod, name)), name
