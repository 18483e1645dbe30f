"""CyclicLR, CosineAnnealingWarmRestarts and SWALR against torch.optim.lr_scheduler (the oracle),
step by step and exactly: every mode of CyclicLR (triangular, triangular2, exp_range, a custom
scale_fn) with momentum / beta1 cycling, warm restarts with T_mult, step(epoch) with fractional
epochs, SequentialLR / ChainedScheduler around them, and state_dict round trips."""
import warnings

import pytest
import torch

import ampc
from ampc.optim import lr_scheduler as als
from test_lr_scheduler import run, two_group_optimizer


class _Halving:
    """A callable object scale_fn (its __dict__ is what state_dict saves)."""

    def __init__(self):
        self.base = 0.5

    def __call__(self, x):
        return self.base ** x


SCHEDULERS = {
    "CyclicLR": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4),
    "CyclicLR-triangular2": lambda m, o: m.CyclicLR(o, base_lr=[0.01, 0.02], max_lr=[0.1, 0.3], step_size_up=3,
                                                    step_size_down=5, mode="triangular2"),
    "CyclicLR-exp_range": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.2, step_size_up=2, mode="exp_range",
                                                  gamma=0.9, base_momentum=0.7, max_momentum=0.95),
    "CyclicLR-scale_fn": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.2, step_size_up=3,
                                                 scale_fn=lambda x: 1 / (1 + x), scale_mode="iterations"),
    "CyclicLR-no-momentum": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.2, step_size_up=3,
                                                    cycle_momentum=False),
    "CosineAnnealingWarmRestarts": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=5),
    "CosineAnnealingWarmRestarts-mult": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2,
                                                                                   eta_min=0.001),
    "SequentialLR-warm": lambda m, o: m.SequentialLR(o, [m.LinearLR(o, start_factor=0.2, total_iters=4),
                                                         m.CosineAnnealingWarmRestarts(o, T_0=6)], milestones=[4]),
    "ChainedScheduler-cyclic": lambda m, o: m.ChainedScheduler([m.CyclicLR(o, base_lr=0.01, max_lr=0.1,
                                                                           step_size_up=3),
                                                                m.ExponentialLR(o, gamma=0.97)]),
}


@pytest.mark.parametrize("opt_steps", [True, False], ids=["with-opt-steps", "lr-only"])
@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_lr_sequence_equals_torch(name, opt_steps):
    t = run("torch", SCHEDULERS[name], 30, opt_steps, track=("lr", "momentum"))
    a = run("ampc", SCHEDULERS[name], 30, opt_steps, track=("lr", "momentum"))
    assert a == t


@pytest.mark.parametrize("opt_name", ["SGD", "Adam", "NAdam", "RAdam", "Adamax"])
def test_cyclic_lr_cycles_beta1(opt_name):
    build = SCHEDULERS["CyclicLR-exp_range"]
    key = "momentum" if opt_name == "SGD" else "betas"
    assert run("ampc", build, 20, opt_name=opt_name, track=("lr", key)) == \
        run("torch", build, 20, opt_name=opt_name, track=("lr", key))


def test_cyclic_lr_refuses_optimizer_without_momentum():
    opt, _ = two_group_optimizer("ampc", "Adagrad")
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        als.CyclicLR(opt, 0.01, 0.1)
    als.CyclicLR(opt, 0.01, 0.1, cycle_momentum=False)
    with pytest.raises(ValueError, match="mode is invalid and scale_fn is None"):
        als.CyclicLR(opt, 0.01, 0.1, mode="bad", cycle_momentum=False)


def test_warm_restarts_step_with_epochs_equals_torch():
    epochs = [0, 0.5, 1.25, 2, 3.75, 4, 9, 10.5, 21, 22.2, 45, 3]
    seqs = []
    for lib, mod, in (("torch", torch.optim.lr_scheduler), ("ampc", als)):
        opt, _ = two_group_optimizer(lib)
        s = mod.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2, eta_min=0.01)
        seq = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for e in epochs:
                s.step(e)
                seq.append((s.get_last_lr(), s.T_cur, s.T_i, s.last_epoch))
        seqs.append(seq)
        with pytest.raises(ValueError, match="Expected non-negative epoch, but got -1"):
            s.step(-1)
    assert seqs[0] == seqs[1]


@pytest.mark.parametrize("name", ["CyclicLR", "CyclicLR-exp_range", "CosineAnnealingWarmRestarts-mult"])
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
            assert asd[k] == tsd[k], k
        opt_b, _ = two_group_optimizer("ampc")
        sb = build(als, opt_b)
        sb.load_state_dict(sa.state_dict())
        opt_b.load_state_dict(opt_a.state_dict())
        for _ in range(10):
            sa.step()
            sb.step()
            assert sa.get_last_lr() == sb.get_last_lr()


def test_cyclic_lr_saves_callable_object_scale_fn():
    opt, _ = two_group_optimizer("ampc")
    fn = _Halving()
    s = als.CyclicLR(opt, 0.01, 0.1, scale_fn=fn)
    sd = s.state_dict()
    assert sd["_scale_fn_custom"] == {"base": 0.5} and "_scale_fn_ref" not in sd
    fn.base = 0.1
    s.load_state_dict(sd)
    assert fn.base == 0.5


def test_errors_match_torch():
    for lib, mod in (("torch", torch.optim.lr_scheduler), ("ampc", als)):
        opt, _ = two_group_optimizer(lib)
        for kw, msg in (({"T_0": 0}, "Expected positive integer T_0, but got 0"),
                        ({"T_0": 2, "T_mult": 0}, "Expected integer T_mult >= 1, but got 0"),
                        ({"T_0": 2, "eta_min": "x"}, "Expected float or int eta_min")):
            with pytest.raises(ValueError, match=msg):
                mod.CosineAnnealingWarmRestarts(opt, **kw)


def test_every_torch_scheduler_is_here():
    names = [n for n in torch.optim.lr_scheduler.__all__]
    missing = [n for n in names if not hasattr(als, n)]
    assert missing == []
    assert ampc.optim.lr_scheduler.LRScheduler is als.LRScheduler
