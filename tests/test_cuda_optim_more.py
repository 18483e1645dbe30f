"""The fused NAdam, RAdam, Adamax, ASGD and Rprop kernels on CUDA (csrc/cuda/cuda_optim.cu) against
the CPU ones, through the optimizer classes: every option over several steps on the same params
and grads; fp32, fp64, fp16 params; the per-parameter scalar states (NAdam's mu_product, ASGD's eta
and mu), which the CUDA side advances in the step-counter launch, compared exactly with the CPU's;
the device-side skip on found_inf and the unscale by grad_scale; and a list of 600 parameters,
which crosses the launch boundaries of both the update and the counter kernels.

Runs on the GPU when one is present (`cuda` fixture; the CUDA emulator counts), like
tests/test_cuda_optim.py."""
import numpy as np
import pytest

import ampc
import ampc.optim as aoptim
from helpers import dev_copy, host

SHAPES = [(5, 3), (7,), (2, 3, 4), (), (0,), (1001,), (33, 65)]

CASES = [
    ("NAdam", {"lr": 0.01}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "momentum_decay": 0.01, "maximize": True}),
    ("NAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("RAdam", {"lr": 0.01}),
    ("RAdam", {"lr": 0.01, "betas": (0.8, 0.9), "weight_decay": 0.1, "maximize": True}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("Adamax", {"lr": 0.01}),
    ("Adamax", {"lr": 0.01, "weight_decay": 0.1, "maximize": True}),
    ("ASGD", {"lr": 0.05, "t0": 2}),
    ("ASGD", {"lr": 0.05, "lambd": 0.01, "alpha": 0.5, "weight_decay": 0.1, "maximize": True}),
    ("Rprop", {"lr": 0.05}),
    ("Rprop", {"lr": 0.05, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.2), "maximize": True}),
]
IDS = [f"{n}-" + "-".join(f"{k}={v}" for k, v in kw.items()) for n, kw in CASES]
TOL = {"float32": (1e-5, 1e-6), "float64": (1e-12, 1e-14), "float16": (5e-3, 2e-3)}


def make(device, name, kw, init, dtype):
    params = [dev_copy(ampc.tensor(x).to(getattr(ampc, dtype)), device).requires_grad_() for x in init]
    return params, getattr(aoptim, name)(params, **kw)


def compare(cpu_params, cpu_opt, gpu_params, gpu_opt, dtype):
    rtol, atol = TOL[dtype]
    for a, b in zip(cpu_params, gpu_params):
        np.testing.assert_allclose(host(b.detach()), host(a.detach()), rtol=rtol, atol=atol)
    sa, sb = cpu_opt.state_dict()["state"], gpu_opt.state_dict()["state"]
    assert sa.keys() == sb.keys()
    for k in sa:
        assert list(sa[k]) == list(sb[k])
        for key, v in sa[k].items():
            if v.dim() == 0:  # step counters and the scalar states: the same float32 on both devices
                assert float(host(sb[k][key])) == float(host(v)), key
            else:
                np.testing.assert_allclose(host(sb[k][key]), host(v), rtol=rtol, atol=atol, err_msg=key)


def run(cuda, name, kw, dtype, shapes=SHAPES, steps=4, seed=0):
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    cp, co = make("cpu", name, kw, init, dtype)
    gp, go = make(cuda, name, kw, init, dtype)
    for _ in range(steps):
        for a, b, s in zip(cp, gp, shapes):
            g = rng.standard_normal(s).astype(np.float32)
            a.grad = ampc.tensor(g).to(a.dtype)
            b.grad = dev_copy(ampc.tensor(g).to(b.dtype), cuda)
        co.step()
        go.step()
        compare(cp, co, gp, go, dtype)
    return cp, co, gp, go


@pytest.mark.parametrize("name,kw", CASES, ids=IDS)
def test_fp32_matches_cpu(cuda, name, kw):
    run(cuda, name, kw, "float32", steps=8)


@pytest.mark.parametrize("dtype", ["float64", "float16"])
@pytest.mark.parametrize("name,kw", CASES[::2], ids=IDS[::2])
def test_other_dtypes_match_cpu(cuda, name, kw, dtype):
    run(cuda, name, kw, dtype)


@pytest.mark.parametrize("name,kw", CASES[::3], ids=IDS[::3])
def test_found_inf_skips_and_grad_scale_unscales_on_the_device(cuda, name, kw):
    cp, co, gp, go = run(cuda, name, kw, "float32", steps=2)
    before = [host(p.detach()) for p in gp]
    state_before = {k: {kk: host(v) for kk, v in s.items()} for k, s in go.state_dict()["state"].items()}
    for o, dev in ((co, "cpu"), (go, cuda)):
        o.found_inf = ampc.ones((), device=dev)
    rng = np.random.default_rng(5)
    grads = [rng.standard_normal(p.shape).astype(np.float32) for p in cp]
    for a, b, g in zip(cp, gp, grads):
        a.grad, b.grad = ampc.tensor(g), dev_copy(ampc.tensor(g), cuda)
    co.step()
    go.step()
    for b, p in zip(before, gp):
        np.testing.assert_array_equal(host(p.detach()), b)
    for k, s in go.state_dict()["state"].items():
        for key, v in s.items():
            np.testing.assert_array_equal(host(v), state_before[k][key], err_msg=key)
    for o, dev in ((co, "cpu"), (go, cuda)):
        o.found_inf = ampc.zeros((), device=dev)
        o.grad_scale = ampc.full((), 8.0, device=dev)
    for a, b, g in zip(cp, gp, grads):
        a.grad, b.grad = ampc.tensor(g * 8), dev_copy(ampc.tensor(g * 8), cuda)
    co.step()
    go.step()
    for a, b in zip(cp, gp):
        np.testing.assert_array_equal(host(b.grad), host(a.grad))  # unscaled in place, bit-exact
    compare(cp, co, gp, go, "float32")


@pytest.mark.parametrize("name", ["NAdam", "ASGD", "RAdam"])
def test_long_lists_cross_launch_boundaries(cuda, name):
    run(cuda, name, {"lr": 0.01}, "float32", shapes=[(3,)] * 600 + [(2049,)], steps=3)
