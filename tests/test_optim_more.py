"""NAdam, RAdam, Adamax, ASGD, Rprop and LBFGS against torch.optim (the oracle), step by step: every
option over several steps with two param groups, float64, state_dict layout and a torch state_dict
loaded into ampc (and back), the GradScaler's device-side skip (found_inf) and unscale
(grad_scale), and swa_utils (AveragedModel SWA / EMA, SWALR, update_bn)."""
import copy

import numpy as np
import pytest
import torch

import ampc
import ampc.optim as aoptim
from helpers import assert_allclose
from test_optim import SHAPES, assert_same_state, make_pair, set_grads, two_groups

CASES = [
    ("NAdam", {}),
    ("NAdam", {"lr": 0.01, "betas": (0.8, 0.99), "weight_decay": 0.1, "momentum_decay": 0.01}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}),
    ("RAdam", {}),
    ("RAdam", {"lr": 0.01, "betas": (0.8, 0.9), "weight_decay": 0.1}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}),
    ("Adamax", {}),
    ("Adamax", {"lr": 0.01, "betas": (0.8, 0.99), "eps": 1e-6, "weight_decay": 0.1, "maximize": True}),
    ("ASGD", {}),
    ("ASGD", {"lr": 0.05, "lambd": 0.01, "alpha": 0.5, "t0": 2, "weight_decay": 0.1}),
    ("ASGD", {"lr": 0.05, "t0": 0, "maximize": True}),
    ("Rprop", {}),
    ("Rprop", {"lr": 0.05, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.2), "maximize": True}),
]
IDS = [f"{name}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'defaults'}" for name, kw in CASES]


def optimizers(rng, name, kw, dtype=np.float32, groups=True):
    tp, ap = make_pair(rng, dtype)
    tparams, aparams = (two_groups(tp, kw), two_groups(ap, kw)) if groups else (tp, ap)
    return tp, ap, getattr(torch.optim, name)(tparams, **kw), getattr(aoptim, name)(aparams, **kw)


@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_matches_torch_step_by_step(name, kw):
    rng = np.random.default_rng(11)
    tp, ap, topt, aopt = optimizers(rng, name, kw)
    for _ in range(8):
        set_grads(rng, tp, ap)
        topt.step()
        aopt.step()
        assert_same_state(aopt, topt, ap, tp, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("name,kw", CASES[1::2], ids=IDS[1::2])
def test_float64_matches_torch(name, kw):
    rng = np.random.default_rng(12)
    tp, ap, topt, aopt = optimizers(rng, name, kw, np.float64, groups=False)
    for _ in range(5):
        set_grads(rng, tp, ap)
        topt.step()
        aopt.step()
    assert_same_state(aopt, topt, ap, tp, rtol=1e-12, atol=1e-12)


def test_radam_rectified_phase_matches_torch():
    """rho_t > 5 only from step 6 with beta2 = 0.999: run past it."""
    rng = np.random.default_rng(13)
    tp, ap, topt, aopt = optimizers(rng, "RAdam", {"lr": 0.01}, groups=False)
    for _ in range(12):
        set_grads(rng, tp, ap)
        topt.step()
        aopt.step()
    assert_same_state(aopt, topt, ap, tp, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_state_dict_layout_and_torch_round_trip(name, kw):
    rng = np.random.default_rng(14)
    tp, ap, topt, aopt = optimizers(rng, name, kw)
    for _ in range(2):
        set_grads(rng, tp, ap)
        topt.step()
        aopt.step()
    tsd, asd = topt.state_dict(), aopt.state_dict()
    assert sorted(tsd["state"]) == sorted(asd["state"])
    for k in tsd["state"]:
        assert list(tsd["state"][k]) == list(asd["state"][k])
        for key, tv in tsd["state"][k].items():
            av = asd["state"][k][key]
            assert tuple(av.shape) == tuple(tv.shape), key
            if tv.dim() == 0:
                assert av.dtype == ampc.float32
    for tg, ag in zip(tsd["param_groups"], asd["param_groups"]):
        assert set(ag) == set(tg)
        for key in tg:
            assert ag[key] == tg[key], key

    # torch's state dict into a fresh ampc optimizer: both continue identically
    _, ap2 = make_pair(np.random.default_rng(0))
    for a2, t in zip(ap2, tp):
        a2.data.copy_(ampc.tensor(t.detach().numpy()))
    aopt2 = getattr(aoptim, name)(two_groups(ap2, kw), **kw)
    tsd_np = {"state": {k: {kk: ampc.tensor(v.numpy()) for kk, v in s.items()} for k, s in tsd["state"].items()},
              "param_groups": copy.deepcopy(tsd["param_groups"])}
    aopt2.load_state_dict(tsd_np)
    # and ampc's state dict back into torch
    topt2 = getattr(torch.optim, name)(two_groups([t.detach().clone().requires_grad_() for t in tp], kw), **kw)
    topt2.load_state_dict({"state": {k: {kk: torch.tensor(v.numpy()) for kk, v in s.items()}
                                     for k, s in asd["state"].items()},
                           "param_groups": copy.deepcopy(asd["param_groups"])})
    tp2 = [p for g in topt2.param_groups for p in g["params"]]
    for _ in range(3):
        g = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
        for t, a2, t2, x in zip(tp, ap2, tp2, g):
            t.grad, a2.grad, t2.grad = torch.tensor(x), ampc.tensor(x), torch.tensor(x)
        topt.step()
        aopt2.step()
        topt2.step()
    assert_same_state(aopt2, topt, ap2, tp, rtol=2e-6, atol=2e-6)
    for t, t2 in zip(tp, tp2):
        assert_allclose(t2, t, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("name,kw", CASES[::3], ids=IDS[::3])
def test_found_inf_skips_and_grad_scale_unscales(name, kw):
    rng = np.random.default_rng(15)
    tp, ap, topt, aopt = optimizers(rng, name, kw, groups=False)
    set_grads(rng, tp, ap)
    topt.step()
    aopt.step()
    before = [p.detach().clone() for p in ap]
    state_before = copy.deepcopy(aopt.state_dict()["state"])
    set_grads(rng, tp, ap)
    aopt.found_inf = ampc.ones(())
    aopt.step()  # skipped on the device: nothing moves, counters included
    for b, p in zip(before, ap):
        assert ampc.equal(b, p.detach())
    after = aopt.state_dict()["state"]
    for k, s in state_before.items():
        for key, v in s.items():
            assert ampc.equal(v, after[k][key]), key
    # a scaled grad with grad_scale: the same step as torch's with the plain grad
    aopt.found_inf = ampc.zeros(())
    aopt.grad_scale = ampc.full((), 4.0)
    for a in ap:
        a.grad = a.grad * 4.0
    topt.step()
    aopt.step()
    del aopt.found_inf, aopt.grad_scale
    assert_same_state(aopt, topt, ap, tp, rtol=2e-6, atol=2e-6)


def test_gradscaler_drives_new_optimizers():
    for name in ("NAdam", "RAdam", "Adamax", "ASGD", "Rprop"):
        p = ampc.nn.Parameter(ampc.ones(4))
        opt = getattr(aoptim, name)([p], lr=0.1)
        scaler = ampc.amp.GradScaler("cpu", init_scale=8.0)
        loss = (p * p).sum()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        tq = torch.nn.Parameter(torch.ones(4))
        topt = getattr(torch.optim, name)([tq], lr=0.1)
        (tq * tq).sum().backward()
        topt.step()
        assert_allclose(p, tq, rtol=1e-6, atol=1e-6)


def test_low_precision_params_close_to_torch():
    rng = np.random.default_rng(16)
    for name, kw in CASES[::2]:
        init = [rng.standard_normal(s).astype(np.float32) for s in SHAPES[:2]]
        tp = [torch.tensor(x, dtype=torch.bfloat16, requires_grad=True) for x in init]
        ap = [ampc.tensor(x).to(ampc.bfloat16).requires_grad_() for x in init]
        topt, aopt = getattr(torch.optim, name)(tp, **kw), getattr(aoptim, name)(ap, **kw)
        for _ in range(3):
            for t, a in zip(tp, ap):
                g = rng.standard_normal(t.shape).astype(np.float32)
                t.grad, a.grad = torch.tensor(g, dtype=torch.bfloat16), ampc.tensor(g).to(ampc.bfloat16)
            topt.step()
            aopt.step()
        for t, a in zip(tp, ap):
            assert a.dtype == ampc.bfloat16
            np.testing.assert_allclose(a.detach().float().numpy(), t.detach().float().numpy(), rtol=2e-2, atol=2e-2)


def test_argument_checks_match_torch():
    p = [ampc.nn.Parameter(ampc.ones(2))]
    tp = [torch.nn.Parameter(torch.ones(2))]
    bad = [("NAdam", {"momentum_decay": -1}), ("NAdam", {"betas": (1.0, 0.9)}), ("RAdam", {"eps": -1}),
           ("Adamax", {"lr": -1}), ("ASGD", {"weight_decay": -1}), ("Rprop", {"etas": (1.1, 1.2)})]
    for name, kw in bad:
        with pytest.raises(ValueError) as te:
            getattr(torch.optim, name)(tp, **kw)
        with pytest.raises(ValueError) as ae:
            getattr(aoptim, name)(p, **kw)
        assert str(ae.value) == str(te.value)


def test_zero_size_and_strided_params():
    rng = np.random.default_rng(17)
    base = rng.standard_normal((4, 6)).astype(np.float32)
    tw, aw = torch.tensor(base).t().detach().requires_grad_(), ampc.tensor(base).t().detach().requires_grad_()
    te, ae = torch.zeros(0, 3, requires_grad=True), ampc.zeros(0, 3).requires_grad_()
    for name, kw in CASES[::3]:
        tw2, aw2 = tw.detach().clone().requires_grad_(), aw.detach().clone().t().t()
        aw2 = ampc.tensor(base).t().detach().requires_grad_()
        topt, aopt = getattr(torch.optim, name)([tw2, te], **kw), getattr(aoptim, name)([aw2, ae], **kw)
        for _ in range(3):
            g = rng.standard_normal((6, 4)).astype(np.float32)
            tw2.grad, aw2.grad = torch.tensor(g), ampc.tensor(g)
            te.grad, ae.grad = torch.zeros(0, 3), ampc.zeros(0, 3)
            topt.step()
            aopt.step()
        assert_allclose(aw2, tw2, rtol=2e-6, atol=2e-6)
        assert not aw2.is_contiguous()


# ---------------------------------------------------------------------------------------------- LBFGS
_A = np.random.default_rng(19).standard_normal((6, 6))
_A = _A @ _A.T + 0.5 * np.eye(6)
_B = np.random.default_rng(20).standard_normal(6)


def _quadratic(M, x):
    """0.5 x'Ax - b'x + 0.1 sum(x^4): smooth, well-conditioned, not a pure quadratic (the line
    search has work to do)."""
    a, b = M.tensor(_A), M.tensor(_B)
    return 0.5 * (x * (a @ x)).sum() - (b * x).sum() + 0.1 * (x ** 4).sum()


def _rosenbrock(M, x):
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2


def _closure(M, f, x, opt):
    def closure():
        opt.zero_grad()
        loss = f(M, x)
        loss.backward()
        return loss
    return closure


@pytest.mark.parametrize("kw", [{}, {"line_search_fn": "strong_wolfe"}, {"history_size": 3, "max_iter": 7, "lr": 0.5},
                                {"line_search_fn": "strong_wolfe", "history_size": 2, "max_eval": 9}])
def test_lbfgs_matches_torch(kw):
    x0 = np.linspace(-1.0, 1.5, 6)
    tx = torch.tensor(x0, requires_grad=True)
    ax = ampc.tensor(x0).requires_grad_()
    topt, aopt = torch.optim.LBFGS([tx], **kw), aoptim.LBFGS([ax], **kw)
    for _ in range(3):
        tl = topt.step(_closure(torch, _quadratic, tx, topt))
        al = aopt.step(_closure(ampc, _quadratic, ax, aopt))
        assert abs(float(tl.detach()) - float(al.detach())) <= 1e-9 * max(1.0, abs(float(tl.detach())))
        assert_allclose(ax, tx, rtol=1e-7, atol=1e-9)
    ts, as_ = topt.state_dict()["state"][0], aopt.state_dict()["state"][0]
    assert set(ts) == set(as_) and ts["func_evals"] == as_["func_evals"] and ts["n_iter"] == as_["n_iter"]


@pytest.mark.parametrize("kw", [{}, {"line_search_fn": "strong_wolfe"}])
def test_lbfgs_minimises_rosenbrock_like_torch(kw):
    tx = torch.tensor([-1.5, 2.0], dtype=torch.float64, requires_grad=True)
    ax = ampc.tensor([-1.5, 2.0], dtype=ampc.float64).requires_grad_()
    topt, aopt = torch.optim.LBFGS([tx], **kw), aoptim.LBFGS([ax], **kw)
    for _ in range(8):
        topt.step(_closure(torch, _rosenbrock, tx, topt))
        aopt.step(_closure(ampc, _rosenbrock, ax, aopt))
    # ill-conditioned: last-bit differences of the dot products grow, but both reach the minimum
    assert_allclose(ax, tx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ax.detach().numpy(), [1.0, 1.0], atol=1e-3)


def test_lbfgs_refuses_groups():
    a, b = ampc.nn.Parameter(ampc.ones(1)), ampc.nn.Parameter(ampc.ones(1))
    with pytest.raises(ValueError, match="per-parameter options"):
        aoptim.LBFGS([{"params": [a]}, {"params": [b]}])


# ---------------------------------------------------------------------------------------------- swa_utils
def _models():
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))
    am = ampc.nn.Sequential(ampc.nn.Linear(3, 4), ampc.nn.BatchNorm1d(4), ampc.nn.Linear(4, 2))
    am.load_state_dict({k: ampc.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    return tm, am


@pytest.mark.parametrize("mode", ["swa", "ema", "ema_buffers", "avg_fn"])
def test_averaged_model_matches_torch(mode):
    from torch.optim import swa_utils as tsu
    from ampc.optim import swa_utils as asu

    tm, am = _models()
    kw = {"swa": ({}, {}), "ema": ({"multi_avg_fn": tsu.get_ema_multi_avg_fn(0.9)},
                                   {"multi_avg_fn": asu.get_ema_multi_avg_fn(0.9)}),
          "ema_buffers": ({"multi_avg_fn": tsu.get_ema_multi_avg_fn(0.8), "use_buffers": True},
                          {"multi_avg_fn": asu.get_ema_multi_avg_fn(0.8), "use_buffers": True}),
          "avg_fn": ({"avg_fn": tsu.get_ema_avg_fn(0.7)}, {"avg_fn": asu.get_ema_avg_fn(0.7)})}[mode]
    tavg, aavg = tsu.AveragedModel(tm, **kw[0]), asu.AveragedModel(am, **kw[1])
    rng = np.random.default_rng(18)
    for _ in range(4):
        x = rng.standard_normal((5, 3)).astype(np.float32)
        tm(torch.tensor(x)).sum().backward()
        am(ampc.tensor(x)).sum().backward()
        with torch.no_grad():
            for p in tm.parameters():
                p -= 0.1 * p.grad
        with ampc.no_grad():
            for p in am.parameters():
                p -= 0.1 * p.grad
        tavg.update_parameters(tm)
        aavg.update_parameters(am)
    tsd, asd = tavg.state_dict(), aavg.state_dict()
    assert list(tsd) == list(asd)
    for k in tsd:
        np.testing.assert_allclose(asd[k].numpy(), tsd[k].numpy(), rtol=1e-5, atol=1e-6, err_msg=k)


def test_update_bn_and_swalr_match_torch():
    from torch.optim import swa_utils as tsu
    from ampc.optim import swa_utils as asu

    tm, am = _models()
    xs = [np.random.default_rng(i).standard_normal((6, 3)).astype(np.float32) for i in range(3)]
    tsu.update_bn([torch.tensor(x) for x in xs], tm)
    asu.update_bn([(ampc.tensor(x), 0) for x in xs], am)
    for k, v in tm.state_dict().items():
        np.testing.assert_allclose(am.state_dict()[k].numpy(), v.numpy(), rtol=1e-5, atol=1e-6, err_msg=k)
    for strategy, epochs in (("cos", 3), ("linear", 4), ("cos", 0)):
        topt = torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=0.5)
        aopt = aoptim.SGD([ampc.nn.Parameter(ampc.ones(1))], lr=0.5)
        ts = tsu.SWALR(topt, swa_lr=0.05, anneal_epochs=epochs, anneal_strategy=strategy)
        as_ = asu.SWALR(aopt, swa_lr=0.05, anneal_epochs=epochs, anneal_strategy=strategy)
        for _ in range(6):
            topt.step()
            aopt.step()
            ts.step()
            as_.step()
            assert as_.get_last_lr() == ts.get_last_lr()
        assert set(as_.state_dict()) == set(ts.state_dict())


# ---------------------------------------------------------------------------------------------- Adafactor, Muon
@pytest.mark.parametrize("kw", [{}, {"lr": 0.05, "beta2_decay": -0.5, "eps": (1e-6, 1e-2), "d": 2.0,
                                     "weight_decay": 0.1, "maximize": True}])
def test_adafactor_matches_torch(kw):
    rng = np.random.default_rng(21)
    shapes = [(5, 3), (7,), (2, 3, 4), ()]
    tp, ap = make_pair(rng, shapes=shapes)
    topt, aopt = torch.optim.Adafactor(tp, **kw), aoptim.Adafactor(ap, **kw)
    for _ in range(5):
        set_grads(rng, tp, ap)
        topt.step()
        aopt.step()
    for a, t in zip(ap, tp):
        assert_allclose(a, t, rtol=1e-5, atol=1e-6)
    ts, as_ = topt.state_dict(), aopt.state_dict()
    for k in ts["state"]:
        assert list(ts["state"][k]) == list(as_["state"][k])
        for key, v in ts["state"][k].items():
            assert_allclose(as_["state"][k][key], v, rtol=1e-5, atol=1e-6)
    assert set(ts["param_groups"][0]) == set(as_["param_groups"][0])


@pytest.mark.parametrize("kw", [{}, {"lr": 0.02, "nesterov": False, "adjust_lr_fn": "match_rms_adamw",
                                     "weight_decay": 0.0, "ns_steps": 3}])
def test_muon_matches_torch(kw):
    rng = np.random.default_rng(22)
    shapes = [(6, 4), (3, 8)]
    tp, ap = make_pair(rng, shapes=shapes)
    topt, aopt = torch.optim.Muon(tp, **kw), aoptim.Muon(ap, **kw)
    for _ in range(3):
        set_grads(rng, tp, ap)
        topt.step()
        aopt.step()
    for a, t in zip(ap, tp):
        # the Newton-Schulz iteration runs in bfloat16: matmul accumulation order shows at bf16 ulps
        assert_allclose(a, t, rtol=2e-2, atol=2e-3)
    with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
        aoptim.Muon([ampc.nn.Parameter(ampc.ones(3))])


def test_swap_in_optimizer_params_and_state_matches_torch():
    rng = np.random.default_rng(23)
    out = []
    for M, O in ((torch, torch.optim), (ampc, aoptim)):
        w = M.nn.Parameter(M.tensor(np.ones((2, 3), dtype=np.float32)))
        opt = O.SGD([w], lr=0.1, momentum=0.9)
        w.grad = M.ones(2, 3)
        opt.step()
        sd = opt.state_dict()
        other = M.nn.Parameter(M.tensor(np.full((2, 3), 5.0, dtype=np.float32)))
        other.grad = M.ones(2, 3)
        swap_state = {"state": {0: {"momentum_buffer": M.full((2, 3), 2.0)}},
                      "param_groups": [dict(sd["param_groups"][0], lr=1.0)]}
        with O.swap_in_optimizer_params_and_state(opt, {"w": other}, swap_state):
            assert opt.param_groups[0]["lr"] == 1.0
            opt.step()
        assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[0]["params"][0] is w
        out.append((w.detach().numpy().tolist(), other.detach().numpy().tolist(),
                    swap_state["state"][0]["momentum_buffer"].numpy().tolist()))
    assert out[0] == out[1]
