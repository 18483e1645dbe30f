"""ampc.optim against torch.optim (the oracle): every optimizer and option over several steps on the
same params and grads, param groups, state_dict layout and round trips, the device-side skip on
found_inf and unscale by grad_scale, fp32 master weights for fp16/bf16 params, and the GradScaler
driving an ampc optimizer without a single host read."""
import copy
import os
import tempfile
import warnings

import numpy as np
import pytest
import torch

import ampc
import ampc.optim as aoptim
from ampc.amp import GradScaler
from helpers import assert_allclose

SHAPES = [(5, 3), (7,), (2, 3, 4), ()]

CASES = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.3, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.05, "momentum": 0.8, "nesterov": True, "weight_decay": 0.1, "maximize": True}),
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.01, "betas": (0.8, 0.99), "eps": 1e-6, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.01, "amsgrad": True, "maximize": True}),
    ("AdamW", {"lr": 0.01}),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.3, "amsgrad": True}),
    ("Adadelta", {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.8, "weight_decay": 0.1, "maximize": True}),
    ("RMSprop", {"lr": 0.01}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.9, "centered": True, "weight_decay": 0.1}),
    ("RMSprop", {"lr": 0.01, "alpha": 0.9, "centered": True, "maximize": True}),
    ("Adagrad", {"lr": 0.1}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.05, "weight_decay": 0.1, "initial_accumulator_value": 0.2,
                 "maximize": True}),
]
IDS = [f"{name}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'defaults'}" for name, kw in CASES]


def _np(t):
    return t.detach().numpy()


def make_pair(rng, dtype=np.float32, shapes=SHAPES):
    init = [rng.standard_normal(s).astype(dtype) for s in shapes]
    tp = [torch.tensor(x, requires_grad=True) for x in init]
    ap = [ampc.tensor(x).requires_grad_() for x in init]
    return tp, ap


def set_grads(rng, tp, ap, scale=1.0):
    for t, a in zip(tp, ap):
        g = rng.standard_normal(t.shape).astype(_np(t).dtype)
        t.grad = torch.tensor(g)
        a.grad = ampc.tensor(g * np.asarray(scale, dtype=g.dtype))


def assert_same_state(aopt, topt, aparams, tparams, rtol=1e-6, atol=1e-6):
    for a, t in zip(aparams, tparams):
        assert_allclose(a, t, rtol=rtol, atol=atol)
        ts, as_ = topt.state.get(t, {}), aopt.state_dict()["state"]
        idx = next(i for i, p in enumerate(aparams) if p is a)
        exported = as_.get(idx, {})
        assert set(exported) == set(ts), (exported.keys(), ts.keys())
        for key, tv in ts.items():
            av = exported[key]
            if key == "step":
                assert float(av) == float(tv)
            else:
                assert_allclose(av, tv, rtol=rtol, atol=atol)


def two_groups(params, kw):
    """Two param groups, the second with half the lr."""
    lr = kw.get("lr", 1.0)
    return [{"params": params[:2]}, {"params": params[2:], "lr": lr * 0.5}]


def two_group_optimizers(rng, name, kw):
    """The same parameters (make_pair) under optimizer `name` in torch and in ampc, two groups each:
    (torch params, ampc params, torch optimizer, ampc optimizer)."""
    tp, ap = make_pair(rng)
    return tp, ap, getattr(torch.optim, name)(two_groups(tp, kw), **kw), getattr(aoptim, name)(two_groups(ap, kw), **kw)


# ---------------------------------------------------------------------------------------------- parity
@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_matches_torch_over_steps_with_param_groups(name, kw):
    rng = np.random.default_rng(1)
    tp, ap, topt, aopt = two_group_optimizers(rng, name, kw)
    for _ in range(6):
        set_grads(rng, tp, ap)
        topt.step()
        aopt.step()
    assert_same_state(aopt, topt, ap, tp)


@pytest.mark.parametrize("name,kw", CASES[1::3], ids=IDS[1::3])
def test_float64_params_match_torch(name, kw):
    rng = np.random.default_rng(2)
    tp, ap = make_pair(rng, np.float64)
    topt = getattr(torch.optim, name)(tp, **kw)
    aopt = getattr(aoptim, name)(ap, **kw)
    for _ in range(4):
        set_grads(rng, tp, ap)
        topt.step()
        aopt.step()
    assert_same_state(aopt, topt, ap, tp, rtol=1e-12, atol=1e-12)
    assert ap[0].dtype == ampc.float64


def test_params_without_grad_and_strided_params():
    rng = np.random.default_rng(3)
    base_t = torch.tensor(rng.standard_normal((4, 6)).astype(np.float32))
    tw = base_t.t().detach().requires_grad_()          # (6, 4), not contiguous
    aw = ampc.tensor(base_t.numpy()).t().detach().requires_grad_()
    assert not aw.is_contiguous()
    tb, ab = torch.zeros(3, requires_grad=True), ampc.zeros(3).requires_grad_()
    topt, aopt = torch.optim.Adam([tw, tb], lr=0.1), aoptim.Adam([aw, ab], lr=0.1)
    for _ in range(3):
        g = rng.standard_normal((6, 4)).astype(np.float32)
        tw.grad, aw.grad = torch.tensor(g), ampc.tensor(g)
        topt.step()
        aopt.step()
    assert_allclose(aw, tw, rtol=1e-6, atol=1e-6)
    assert not aw.is_contiguous()
    assert ab.tolist() == [0.0, 0.0, 0.0] and len(aopt.state_dict()["state"]) == 1 == len(topt.state_dict()["state"])


def test_closure_and_hooks():
    p = ampc.ones(3).requires_grad_()
    opt = aoptim.SGD([p], lr=0.5)
    calls = []
    h1 = opt.register_step_pre_hook(lambda o, a, k: calls.append("pre"))
    opt.register_step_post_hook(lambda o, a, k: calls.append("post"))

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert float(loss) == 3.0 and p.tolist() == [0.0, 0.0, 0.0]
    assert calls == ["pre", "post"]
    h1.remove()
    opt.step(closure)
    assert calls == ["pre", "post", "post"]


def test_zero_grad():
    p = ampc.ones(2).requires_grad_()
    opt = aoptim.Adam([p])
    p.grad = ampc.ones(2)
    g = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is g and p.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None


# ---------------------------------------------------------------------------------------------- state dict
@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_state_dict_layout_is_torchs(name, kw):
    rng = np.random.default_rng(4)
    tp, ap, topt, aopt = two_group_optimizers(rng, name, kw)
    set_grads(rng, tp, ap)
    topt.step()
    aopt.step()
    tsd, asd = topt.state_dict(), aopt.state_dict()
    assert sorted(tsd["state"]) == sorted(asd["state"])
    for k in tsd["state"]:
        assert list(tsd["state"][k]) == list(asd["state"][k])
        step = asd["state"][k].get("step")
        if step is not None:
            assert isinstance(step, ampc.Tensor) and step.dtype == ampc.float32 and step.dim() == 0
    for tg, ag in zip(tsd["param_groups"], asd["param_groups"]):
        assert set(ag) - set(tg) == {"master_weights"} and set(tg) <= set(ag)
        assert ag["params"] == tg["params"]
        for key in tg:
            if key not in ("params", "foreach", "fused", "differentiable", "capturable"):
                assert ag[key] == tg[key], key


@pytest.mark.parametrize("name,kw", CASES[1::2], ids=IDS[1::2])
def test_state_dict_round_trip_resumes_bit_identically(name, kw):
    rng = np.random.default_rng(5)
    _, ap = make_pair(rng)
    opt = getattr(aoptim, name)(two_groups(ap, kw), **kw)
    grads = [[rng.standard_normal(s).astype(np.float32) for s in SHAPES] for _ in range(6)]

    def step(o, params, gs):
        for p, g in zip(params, gs):
            p.grad = ampc.tensor(g)
        o.step()

    for gs in grads[:3]:
        step(opt, ap, gs)
    saved_params = [p.detach().clone().requires_grad_() for p in ap]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "opt.pt")
        ampc.save(opt.state_dict(), path)
        loaded = ampc.load(path)
    opt2 = getattr(aoptim, name)(two_groups(saved_params, kw), **kw)
    opt2.load_state_dict(loaded)
    for gs in grads[3:]:
        step(opt, ap, gs)
        step(opt2, saved_params, gs)
    for a, b in zip(ap, saved_params):
        assert np.array_equal(_np(a), _np(b))
    assert opt.state_dict()["param_groups"] == opt2.state_dict()["param_groups"]


def test_load_torch_state_dict_continues_like_torch():
    rng = np.random.default_rng(6)
    tp, ap = make_pair(rng)
    topt = torch.optim.Adam(tp, lr=0.02, amsgrad=True)
    aopt = aoptim.Adam(ap, lr=0.02, amsgrad=True)
    for _ in range(2):
        set_grads(rng, tp, ap)
        topt.step()
    for a, t in zip(ap, tp):  # params as torch left them
        with torch.no_grad():
            a.detach().copy_(ampc.tensor(_np(t)))
    tsd = topt.state_dict()
    converted = {"param_groups": copy.deepcopy(tsd["param_groups"]),
                 "state": {k: {n: ampc.tensor(v.numpy()) for n, v in s.items()} for k, s in tsd["state"].items()}}
    aopt.load_state_dict(converted)
    assert aopt.state[ap[0]]["step"].dtype == ampc.float32
    for _ in range(3):
        set_grads(rng, tp, ap)
        topt.step()
        aopt.step()
    assert_same_state(aopt, topt, ap, tp)


def test_load_state_dict_errors():
    p, q = ampc.ones(2).requires_grad_(), ampc.ones(2).requires_grad_()
    opt = aoptim.SGD([p], lr=0.1)
    two = aoptim.SGD([{"params": [p]}, {"params": [q]}], lr=0.1)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        opt.load_state_dict(two.state_dict())
    bigger = aoptim.SGD([p, q], lr=0.1)
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        opt.load_state_dict(bigger.state_dict())


# ---------------------------------------------------------------------------------------------- param groups
def test_add_param_group_and_errors():
    p, q = ampc.ones(2).requires_grad_(), ampc.zeros(3).requires_grad_()
    opt = aoptim.SGD([p], lr=0.1, momentum=0.9)
    opt.add_param_group({"params": q, "lr": 0.5})
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[1]["momentum"] == 0.9
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [p]})
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors"):
        aoptim.SGD([1.0], lr=0.1)
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        aoptim.Adam([])
    with pytest.raises(TypeError, match="params argument given to the optimizer should be an iterable"):
        aoptim.Adam(p)
    with pytest.raises(TypeError, match="ordered collections"):
        aoptim.Adam([{"params": {p}}])
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        aoptim.Adam([p * 2])
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        aoptim.SGD([q], lr=-1)
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero dampening"):
        aoptim.SGD([q], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1: 1.0"):
        aoptim.Adam([q], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="Invalid rho value: 1.5"):
        aoptim.Adadelta([q], rho=1.5)
    with pytest.raises(ValueError, match="Invalid alpha value: -0.1"):
        aoptim.RMSprop([q], alpha=-0.1)
    with pytest.raises(ValueError, match="Invalid lr_decay value: -1"):
        aoptim.Adagrad([q], lr_decay=-1)
    assert "Parameter Group 1" in repr(opt) and "lr: 0.5" in repr(opt)


def test_named_params_are_kept():
    p = ampc.ones(2).requires_grad_()
    opt = aoptim.Adam([("weight", p)])
    assert opt.param_groups[0]["param_names"] == ["weight"]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["weight"]


def test_kernel_argument_errors():
    p, g = ampc.ones(4), ampc.ones(4)
    step = ampc.zeros(())
    with pytest.raises(RuntimeError, match="grad 0 has shape \\[3\\] but its parameter has shape \\[4\\]"):
        ampc._C._fused_sgd_([p], [ampc.ones(3)], None, None, lr=0.1)
    with pytest.raises(TypeError, match="grad 0 has dtype float64, expected float32"):
        ampc._C._fused_sgd_([p], [ampc.ones(4, dtype=ampc.float64)], None, None, lr=0.1)
    with pytest.raises(TypeError, match="parameters must be floating point, got int64"):
        ampc._C._fused_sgd_([ampc.ones(4, dtype=ampc.int64)], [ampc.ones(4, dtype=ampc.int64)], None, None, lr=0.1)
    with pytest.raises(RuntimeError, match="the max_exp_avg_sq buffers are missing"):
        ampc._C._fused_adam_([p], [g], [ampc.zeros(4)], [ampc.zeros(4)], None, [step], amsgrad=True)
    with pytest.raises(ValueError, match="grads has 2 tensors but there are 1 params"):
        ampc._C._fused_sgd_([p], [g, g], None, None, lr=0.1)
    with pytest.raises(TypeError, match="found_inf must be a 1-element float32 tensor"):
        ampc._C._fused_sgd_([p], [g], None, None, lr=0.1, found_inf=ampc.zeros((), dtype=ampc.float64))
    with pytest.raises(TypeError, match="master weights are for float16/bfloat16 parameters"):
        ampc._C._fused_sgd_([p], [g], None, None, lr=0.1, masters=[ampc.ones(4)])
    with pytest.raises(RuntimeError, match="more than one element of param 0 refers to a single memory location"):
        ampc._C._fused_sgd_([ampc.ones(1).expand(4)], [g], None, None, lr=0.1)
    assert p.tolist() == [1.0] * 4


# ---------------------------------------------------------------------------------------------- AMP
@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_found_inf_skips_everything_and_later_steps_continue_like_torch(name, kw):
    rng = np.random.default_rng(7)
    tp, ap = make_pair(rng)
    topt = getattr(torch.optim, name)(tp, **kw)
    aopt = getattr(aoptim, name)(ap, **kw)
    # The very first step is skipped (state must be as if it never happened), then two clean
    # steps, another skip, two more clean steps; torch simply does not step on the skips.
    for skip in (True, False, False, True, False, False):
        if skip:
            before = {k: {n: (v.clone() if isinstance(v, ampc.Tensor) else v) for n, v in s.items()}
                      for k, s in aopt.state_dict()["state"].items()}
            params_before = [_np(p).copy() for p in ap]
            for p in ap:
                p.grad = ampc.full(p.shape, float("nan"))
            aopt.found_inf = ampc.ones(())
            aopt.step()
            del aopt.found_inf
            after = aopt.state_dict()["state"]
            assert set(after) == set(before)
            for k in before:
                assert set(after[k]) == set(before[k])
                for n, v in before[k].items():
                    assert np.array_equal(_np(after[k][n]), _np(v), equal_nan=True), (k, n)
            for p, b in zip(ap, params_before):
                assert np.array_equal(_np(p), b)
            continue
        set_grads(rng, tp, ap)
        aopt.found_inf = ampc.zeros(())  # a clean step through the same device-side path
        topt.step()
        aopt.step()
        del aopt.found_inf
    assert_same_state(aopt, topt, ap, tp)


@pytest.mark.parametrize("name,kw", CASES[::2], ids=IDS[::2])
def test_grad_scale_divides_and_writes_back(name, kw):
    rng = np.random.default_rng(8)
    tp, ap = make_pair(rng)
    topt = getattr(torch.optim, name)(tp, **kw)
    aopt = getattr(aoptim, name)(ap, **kw)
    for _ in range(3):
        set_grads(rng, tp, ap, scale=1024.0)
        aopt.grad_scale = ampc.full((), 1024.0)
        topt.step()
        aopt.step()
        for a, t in zip(ap, tp):
            assert np.array_equal(_np(a.grad), _np(t.grad))  # unscaled in place (exact: a power of two)
    assert_same_state(aopt, topt, ap, tp)


@pytest.mark.parametrize("name,kw", [CASES[2], CASES[5], CASES[8], CASES[10], CASES[12], CASES[15]],
                         ids=[IDS[2], IDS[5], IDS[8], IDS[10], IDS[12], IDS[15]])
@pytest.mark.parametrize("low", ["float16", "bfloat16"])
def test_master_weights_track_an_fp32_reference(name, kw, low):
    rng = np.random.default_rng(9)
    ml_dtypes = pytest.importorskip("ml_dtypes") if low == "bfloat16" else None
    np_low = np.float16 if low == "float16" else ml_dtypes.bfloat16
    init = [rng.standard_normal(s).astype(np.float32).astype(np_low).astype(np.float32) for s in SHAPES]
    tp = [torch.tensor(x, requires_grad=True) for x in init]  # the fp32 reference
    ap = [ampc.tensor(x).to(getattr(ampc, low)).requires_grad_() for x in init]
    topt = getattr(torch.optim, name)(tp, **kw)
    aopt = getattr(aoptim, name)(ap, master_weights=True, **kw)
    for _ in range(5):
        for t, a in zip(tp, ap):
            g = rng.standard_normal(t.shape).astype(np.float32).astype(np_low).astype(np.float32)
            t.grad = torch.tensor(g)
            a.grad = ampc.tensor(g).to(getattr(ampc, low))
        topt.step()
        aopt.step()
    for t, a in zip(tp, ap):
        st = aopt.state[a]
        master = st["master_param"]
        assert master.dtype == ampc.float32 and a.dtype == getattr(ampc, low)
        assert_allclose(master, t, rtol=1e-6, atol=1e-6)
        assert np.array_equal(_np(a.float()), _np(master.to(getattr(ampc, low)).float()))
        for key, tv in topt.state[t].items():
            if key != "step":
                assert st[key].dtype == ampc.float32
                assert_allclose(st[key], tv, rtol=1e-6, atol=1e-6)
    sd = aopt.state_dict()
    assert "master_param" in sd["state"][0] and sd["param_groups"][0]["master_weights"] is True


def test_low_precision_params_without_master_weights():
    rng = np.random.default_rng(10)
    x = rng.standard_normal(64).astype(np.float32)
    ref = torch.tensor(x.astype(np.float16).astype(np.float32), requires_grad=True)
    p = ampc.tensor(x).half().requires_grad_()
    topt, aopt = torch.optim.Adam([ref], lr=0.01), aoptim.Adam([p], lr=0.01)
    for _ in range(5):
        g = rng.standard_normal(64).astype(np.float16)
        ref.grad, p.grad = torch.tensor(g.astype(np.float32)), ampc.tensor(g)
        topt.step()
        aopt.step()
    assert aopt.state[p]["exp_avg"].dtype == ampc.float16
    np.testing.assert_allclose(_np(p.float()), _np(ref), rtol=2e-3, atol=2e-3)


def _scaler_run(lib, opt_name, kw, grads_seq, init):
    """Trains with a GradScaler over given (unscaled) grads; an inf in a grad makes a skip."""
    if lib == "torch":
        params = [torch.tensor(x, requires_grad=True) for x in init]
        opt = getattr(torch.optim, opt_name)(params, **kw)
        scaler = torch.amp.GradScaler("cpu", init_scale=8.0, growth_interval=2)
        scaler.scale(torch.ones(()))
        mk = torch.tensor
    else:
        params = [ampc.tensor(x).requires_grad_() for x in init]
        opt = getattr(aoptim, opt_name)(params, **kw)
        scaler = GradScaler("cpu", init_scale=8.0, growth_interval=2)
        scaler.scale(ampc.ones(()))
        mk = ampc.tensor
    reads = []
    scales = []
    for gs in grads_seq:
        scale = scaler.get_scale()
        for p, g in zip(params, gs):
            p.grad = mk((g * scale).astype(np.float32))
        before = ampc._C._host_read_count()
        scaler.step(opt)
        scaler.update()
        reads.append(ampc._C._host_read_count() - before)
        scales.append(scaler.get_scale())
    return params, reads, scales


@pytest.mark.parametrize("name,kw", [("Adam", {"lr": 0.05}), ("SGD", {"lr": 0.1, "momentum": 0.9}),
                                     ("RMSprop", {"lr": 0.01, "centered": True})])
def test_grad_scaler_steps_without_host_reads_and_matches_torch(name, kw):
    rng = np.random.default_rng(11)
    init = [rng.standard_normal(s).astype(np.float32) for s in SHAPES[:3]]
    grads_seq = []
    for i in range(8):
        gs = [rng.standard_normal(s).astype(np.float32) for s in SHAPES[:3]]
        if i in (0, 3, 4):
            gs[i % 3].flat[0] = np.inf  # skipped steps, the first one included
        grads_seq.append(gs)
    tparams, _, tscales = _scaler_run("torch", name, kw, grads_seq, init)
    aparams, reads, ascales = _scaler_run("ampc", name, kw, grads_seq, init)
    assert reads == [0] * len(grads_seq)
    assert ascales == tscales
    for a, t in zip(aparams, tparams):
        assert_allclose(a, t, rtol=1e-6, atol=1e-6)


def test_host_read_counter_counts_item_and_tolist():
    t = ampc.ones(3)
    before = ampc._C._host_read_count()
    t.sum().item()
    t.tolist()
    assert ampc._C._host_read_count() - before == 2


def test_optimizers_declare_amp_support():
    for cls in (aoptim.SGD, aoptim.Adam, aoptim.AdamW, aoptim.Adadelta, aoptim.RMSprop, aoptim.Adagrad):
        assert cls._step_supports_amp_scaling is True
    assert not getattr(aoptim.Optimizer, "_step_supports_amp_scaling", False)


def test_adagrad_state_exists_before_the_first_step():
    p = ampc.ones(3).requires_grad_()
    opt = aoptim.Adagrad([p], initial_accumulator_value=0.5)
    tp = torch.ones(3, requires_grad=True)
    topt = torch.optim.Adagrad([tp], initial_accumulator_value=0.5)
    assert list(opt.state_dict()["state"][0]) == list(topt.state_dict()["state"][0]) == ["step", "sum"]
    assert opt.state[p]["sum"].tolist() == [0.5] * 3


def test_tensor_lr_and_pickle():
    import pickle

    p = ampc.ones(3).requires_grad_()
    opt = aoptim.SGD([p], lr=ampc.tensor(0.5))
    p.grad = ampc.ones(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step()
    assert p.tolist() == [0.5] * 3
    opt2 = pickle.loads(pickle.dumps(aoptim.Adam([ampc.ones(2).requires_grad_()], lr=0.3)))
    assert opt2.param_groups[0]["lr"] == 0.3 and opt2.defaults["lr"] == 0.3


def test_master_weights_state_dict_round_trip_and_scaler_skip():
    rng = np.random.default_rng(12)
    init = rng.standard_normal((4, 5)).astype(np.float32)
    p = ampc.tensor(init).bfloat16().requires_grad_()
    opt = aoptim.AdamW([p], lr=0.01, master_weights=True)
    scaler = GradScaler("cpu", init_scale=4.0)
    scaler.scale(ampc.ones(()))
    grads = [rng.standard_normal((4, 5)).astype(np.float32) for _ in range(6)]
    grads[1][0, 0] = np.inf
    reads = ampc._C._host_read_count()
    for g in grads[:3]:
        p.grad = ampc.tensor(g * scaler.get_scale() if np.isfinite(g).all() else g).bfloat16()
        master_before = _np(opt.state[p]["master_param"]).copy() if p in opt.state else None
        reads = ampc._C._host_read_count()
        scaler.step(opt)
        scaler.update()
        assert ampc._C._host_read_count() == reads
        if not np.isfinite(g).all():
            assert np.array_equal(_np(opt.state[p]["master_param"]), master_before)
    assert float(opt.state[p]["step"]) == 2.0
    q = p.detach().clone().requires_grad_()
    opt2 = aoptim.AdamW([q], lr=0.01, master_weights=True)
    opt2.load_state_dict(copy.deepcopy(opt.state_dict()))
    assert opt2.state[q]["master_param"].dtype == ampc.float32 and opt2.state[q]["exp_avg"].dtype == ampc.float32
    for g in grads[3:]:
        for x, o in ((p, opt), (q, opt2)):
            x.grad = ampc.tensor(g).bfloat16()
            o.step()
    assert np.array_equal(_np(p.float()), _np(q.float()))
    assert np.array_equal(_np(opt.state[p]["master_param"]), _np(opt2.state[q]["master_param"]))
