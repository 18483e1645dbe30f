"""ampc.optim.lr_scheduler against torch.optim.lr_scheduler (the oracle): every scheduler's lr
sequence over many steps must be equal to PyTorch's to the last bit, with and without optimizer
steps in between, chained on one optimizer, through step(epoch) closed forms, SequentialLR and
ChainedScheduler, ReduceLROnPlateau on a metric sequence, OneCycleLR's momentum/beta cycling, and
state_dict round trips."""
import warnings

import numpy as np
import pytest
import torch

import ampc
import ampc.optim as aoptim
from ampc.optim import lr_scheduler as als

LRS = (0.1, 0.05)


def two_group_optimizer(lib, opt_name="SGD", **opt_kw):
    """An optimizer over two param groups (lr 0.1 and 0.05) of library `lib`."""
    if lib == "torch":
        ps = [torch.zeros(3, requires_grad=True), torch.zeros(2, requires_grad=True)]
        opt_cls = getattr(torch.optim, opt_name)
    else:
        ps = [ampc.zeros(3).requires_grad_(), ampc.zeros(2).requires_grad_()]
        opt_cls = getattr(aoptim, opt_name)
    groups = [{"params": [ps[0]], "lr": LRS[0]}, {"params": [ps[1]], "lr": LRS[1]}]
    kw = {"momentum": 0.9} if opt_name == "SGD" else {}
    kw.update(opt_kw)
    opt = opt_cls(groups, **kw)
    return opt, ps


def sched_mod(lib):
    return torch.optim.lr_scheduler if lib == "torch" else als


def run(lib, build, steps, opt_steps=True, opt_name="SGD", track=("lr",), metrics=None):
    opt, ps = two_group_optimizer(lib, opt_name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sched = build(sched_mod(lib), opt)
        seq = [list(sched.get_last_lr()) if hasattr(sched, "get_last_lr") else None]
        for i in range(steps):
            if opt_steps:
                for p in ps:
                    p.grad = (torch.ones if lib == "torch" else ampc.ones)(p.shape)
                opt.step()
            if metrics is not None:
                sched.step(metrics[i])
            else:
                sched.step()
            seq.append([sched.get_last_lr()] + [[g[k] for g in opt.param_groups] for k in track])
    return seq


SCHEDULERS = {
    "LambdaLR": lambda m, o: m.LambdaLR(o, lr_lambda=lambda e: 0.95 ** e),
    "LambdaLR-list": lambda m, o: m.LambdaLR(o, lr_lambda=[lambda e: 1 / (e + 1), lambda e: min(1.0, (e + 1) / 5)]),
    "MultiplicativeLR": lambda m, o: m.MultiplicativeLR(o, lr_lambda=lambda e: 0.9),
    "StepLR": lambda m, o: m.StepLR(o, step_size=3, gamma=0.5),
    "MultiStepLR": lambda m, o: m.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3),
    "ConstantLR": lambda m, o: m.ConstantLR(o, factor=0.5, total_iters=4),
    "LinearLR": lambda m, o: m.LinearLR(o, start_factor=0.25, end_factor=0.9, total_iters=6),
    "ExponentialLR": lambda m, o: m.ExponentialLR(o, gamma=0.9),
    "PolynomialLR": lambda m, o: m.PolynomialLR(o, total_iters=8, power=2.0),
    "CosineAnnealingLR": lambda m, o: m.CosineAnnealingLR(o, T_max=7, eta_min=0.001),
    "OneCycleLR": lambda m, o: m.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=40),
    "OneCycleLR-3phase-linear": lambda m, o: m.OneCycleLR(o, max_lr=0.8, epochs=4, steps_per_epoch=10,
                                                          three_phase=True, anneal_strategy="linear", pct_start=0.25),
    "SequentialLR": lambda m, o: m.SequentialLR(o, [m.LinearLR(o, start_factor=0.1, total_iters=5),
                                                    m.ExponentialLR(o, gamma=0.9)], milestones=[5]),
    "SequentialLR-3": lambda m, o: m.SequentialLR(o, [m.ConstantLR(o, factor=0.5, total_iters=3),
                                                      m.CosineAnnealingLR(o, T_max=10),
                                                      m.StepLR(o, step_size=2)], milestones=[4, 15]),
    "ChainedScheduler": lambda m, o: m.ChainedScheduler([m.ExponentialLR(o, gamma=0.95),
                                                         m.StepLR(o, step_size=4, gamma=0.5)]),
}


@pytest.mark.parametrize("opt_steps", [True, False], ids=["with-opt-steps", "lr-only"])
@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_lr_sequence_equals_torch(name, opt_steps):
    steps = 40 if name.startswith("OneCycle") else 35
    t = run("torch", SCHEDULERS[name], steps, opt_steps)
    a = run("ampc", SCHEDULERS[name], steps, opt_steps)
    assert a == t  # exact: same formulas, same floating-point order


@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
def test_one_cycle_cycles_momentum_and_betas(opt_name):
    build = SCHEDULERS["OneCycleLR"]
    key = "momentum" if opt_name == "SGD" else "betas"
    t = run("torch", build, 40, opt_name=opt_name, track=("lr", key))
    a = run("ampc", build, 40, opt_name=opt_name, track=("lr", key))
    assert a == t
    with pytest.raises(ValueError, match="Tried to step 41 times. The specified number of total steps is 40"):
        run("ampc", build, 41, opt_name=opt_name)


def test_two_schedulers_on_one_optimizer_compose():
    def build(m, o):
        s1 = m.ExponentialLR(o, gamma=0.9)
        s2 = m.MultiStepLR(o, milestones=[3, 6], gamma=0.1)

        class Both:
            def step(self):
                s1.step()
                s2.step()

            def get_last_lr(self):
                return s2.get_last_lr()
        return Both()

    assert run("ampc", build, 12) == run("torch", build, 12)


def test_cosine_annealing_interleaved_with_manual_lr_changes():
    """The chained form follows changes made to group["lr"] between steps, like PyTorch's."""
    seqs = {}
    for lib in ("torch", "ampc"):
        opt, _ = two_group_optimizer(lib)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sched = sched_mod(lib).CosineAnnealingLR(opt, T_max=5)
            out = []
            for i in range(12):
                if i == 4:
                    opt.param_groups[0]["lr"] = 0.3
                sched.step()
                out.append(sched.get_last_lr())
        seqs[lib] = out
    assert seqs["ampc"] == seqs["torch"]


@pytest.mark.parametrize("name", ["StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LinearLR",
                                  "ConstantLR", "PolynomialLR", "LambdaLR"])
def test_step_with_epoch_uses_the_closed_form(name):
    epochs = [3, 7, 2, 10, 10, 0, 5]
    seqs = {}
    for lib in ("torch", "ampc"):
        opt, _ = two_group_optimizer(lib)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sched = SCHEDULERS[name](sched_mod(lib), opt)
            out = []
            for e in epochs:
                sched.step(e)
                out.append(sched.get_last_lr())
        seqs[lib] = out
    assert seqs["ampc"] == seqs["torch"]
    opt, _ = two_group_optimizer("ampc")
    sched = als.StepLR(opt, step_size=2)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Detected call of `lr_scheduler.step")
        with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)` was not necessary"):
            sched.step(4)


PLATEAU = [
    {},
    {"mode": "max", "factor": 0.5, "patience": 1, "threshold_mode": "abs", "threshold": 0.05},
    {"patience": 2, "cooldown": 2, "min_lr": [0.02, 0.001], "factor": 0.3},
    {"patience": 0, "min_lr": 0.04, "eps": 1e-3},
]


@pytest.mark.parametrize("kw", PLATEAU, ids=[str(k) for k in PLATEAU])
def test_reduce_lr_on_plateau_equals_torch(kw):
    rng = np.random.default_rng(0)
    metrics = list(np.round(rng.uniform(0.5, 1.5, 40), 3)) + [1.0] * 15
    build = lambda m, o: m.ReduceLROnPlateau(o, **kw)  # noqa: E731
    t = run("torch", build, len(metrics), metrics=metrics)
    a = run("ampc", build, len(metrics), metrics=metrics)
    assert a == t
    opt, _ = two_group_optimizer("ampc")
    s = als.ReduceLROnPlateau(opt, **kw)
    s.step(ampc.tensor(1.0))  # a tensor metric is read with float()
    assert s.best == 1.0


@pytest.mark.parametrize("name", ["StepLR", "CosineAnnealingLR", "OneCycleLR", "SequentialLR", "ChainedScheduler",
                                  "LambdaLR", "LinearLR"])
def test_state_dict_matches_torch_and_resumes(name):
    build = SCHEDULERS[name]
    opt_t, _ = two_group_optimizer("torch")
    opt_a, _ = two_group_optimizer("ampc")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        st, sa = build(torch.optim.lr_scheduler, opt_t), build(als, opt_a)
        for _ in range(7):
            st.step()
            sa.step()
        tsd, asd = st.state_dict(), sa.state_dict()
        assert set(tsd) == set(asd)
        for k in tsd:
            if k not in ("_schedulers", "lr_lambdas"):
                assert asd[k] == tsd[k], k
        # resume: a fresh optimizer + scheduler loaded from the state dicts continues identically
        # (PyTorch's order: build the scheduler, load it, then load the optimizer, whose saved lr
        # overrides what the new scheduler's first step set)
        opt_b, _ = two_group_optimizer("ampc")
        sb = build(als, opt_b)
        sb.load_state_dict(sa.state_dict())
        opt_b.load_state_dict(opt_a.state_dict())
        for _ in range(10):
            sa.step()
            sb.step()
            assert sa.get_last_lr() == sb.get_last_lr()
            assert [g["lr"] for g in opt_a.param_groups] == [g["lr"] for g in opt_b.param_groups]


def test_reduce_lr_on_plateau_state_dict():
    opt, _ = two_group_optimizer("ampc")
    s = als.ReduceLROnPlateau(opt, mode="max", patience=1)
    for m in (1.0, 0.5, 0.4, 0.3):
        s.step(m)
    sd = s.state_dict()
    opt2, _ = two_group_optimizer("ampc")
    s2 = als.ReduceLROnPlateau(opt2)
    s2.load_state_dict(sd)
    assert s2.mode == "max" and s2.best == 1.0 and s2.num_bad_epochs == s.num_bad_epochs


def test_warns_when_scheduler_steps_before_optimizer():
    for lib in ("torch", "ampc"):
        opt, _ = two_group_optimizer(lib)
        sched = sched_mod(lib).StepLR(opt, step_size=1)
        with pytest.warns(UserWarning,
                          match="Detected call of `lr_scheduler.step\\(\\)` before `optimizer.step\\(\\)`"):
            sched.step()
    opt, ps = two_group_optimizer("ampc")
    sched = als.StepLR(opt, step_size=1)
    for p in ps:
        p.grad = ampc.ones(p.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step()
        sched.step()


def test_initial_lr_and_last_epoch_resume():
    opt, _ = two_group_optimizer("ampc")
    als.ExponentialLR(opt, gamma=0.5)
    assert [g["initial_lr"] for g in opt.param_groups] == list(LRS)
    fresh, _ = two_group_optimizer("ampc")
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified in param_groups\\[0\\]"):
        als.StepLR(fresh, step_size=2, last_epoch=3)


def test_errors():
    opt, _ = two_group_optimizer("ampc")
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        als.StepLR([], step_size=2)
    with pytest.raises(ValueError, match="Starting multiplicative factor expected to be greater than 0"):
        als.LinearLR(opt, start_factor=0)
    with pytest.raises(ValueError, match="Factor should be < 1.0."):
        als.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode avg is unknown!"):
        als.ReduceLROnPlateau(opt, mode="avg")
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        als.LambdaLR(opt, lr_lambda=[lambda e: 1.0])
    with pytest.raises(ValueError, match="number of milestones to be equal to 2"):
        als.SequentialLR(opt, [als.StepLR(opt, 2), als.StepLR(opt, 3)], milestones=[1, 2])
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        als.SequentialLR(opt, [als.StepLR(opt, 2), als.ReduceLROnPlateau(opt)], milestones=[1])
    with pytest.raises(ValueError, match="You must define either total_steps OR"):
        als.OneCycleLR(opt, max_lr=1.0)
    with pytest.raises(ValueError, match="max_lr must have the same length as optimizer.param_groups"):
        als.OneCycleLR(opt, max_lr=[1.0], total_steps=10)
    adagrad = aoptim.Adagrad([ampc.zeros(2).requires_grad_()])
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        als.OneCycleLR(adagrad, max_lr=1.0, total_steps=10)
