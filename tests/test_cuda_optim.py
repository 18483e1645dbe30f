"""The fused optimizer kernels on CUDA (csrc/cuda/cuda_optim.cu) against the CPU fused kernels:
every optimizer with each option combination over several steps, on the same params, grads and
state; fp32, fp64, fp16/bf16 params with and without fp32 master weights; the device-side skip
on found_inf (params, grads, state and step counters untouched, later steps as if the skipped one
never happened); grad_scale (grads divided and written back, bit-exact); lists long enough to
cross the kernels' launch boundaries (~470 parameters per launch) and one tensor of 2^20+7
elements; and the optimizer classes sending CUDA params to these kernels.

Both devices run the same formulas (core/optim_math.h); the GPU may fuse a multiply and an add
into one FMA, so values agree to a few ulps of the compute type (fp32 for fp32/fp16/bf16 params),
which a rounding to fp16/bf16 can turn into one ulp of the storage type. Step counters and
unscaled grads are compared exactly.

Runs on the GPU when one is present (`cuda` fixture); AMPC_TEST_CUDA_AS_CPU=1 runs the "cuda"
side on the CPU, a dry run of the test code."""
import itertools

import numpy as np
import pytest

import ampc
from ampc import _C
from helpers import dev_copy, host

SHAPES = [(5, 3), (7,), (2, 3, 4), (), (0,), (1001,), (33, 65)]

# (positional state lists in the binding's order, whether the op takes step counters)
OPS = {
    "sgd": (_C._fused_sgd_, ["momentum_buffers"]),
    "adam": (_C._fused_adam_, ["exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs"]),
    "adadelta": (_C._fused_adadelta_, ["square_avgs", "acc_deltas"]),
    "rmsprop": (_C._fused_rmsprop_, ["square_avgs", "momentum_buffers", "grad_avgs"]),
    "adagrad": (_C._fused_adagrad_, ["sums"]),
}


def used_states(op, kw):
    """Which of the op's state lists these options use (the others are passed as None)."""
    if op == "sgd":
        return {"momentum_buffers": kw.get("momentum", 0.0) != 0.0}
    if op == "adam":
        return {"exp_avgs": True, "exp_avg_sqs": True, "max_exp_avg_sqs": kw.get("amsgrad", False)}
    if op == "rmsprop":
        return {"square_avgs": True, "momentum_buffers": kw.get("momentum", 0.0) > 0.0,
                "grad_avgs": kw.get("centered", False)}
    return {name: True for name in OPS[op][1]}


def uses_steps(op, kw):
    return op != "sgd" or kw.get("momentum", 0.0) != 0.0


def _cases():
    cases = []
    for kw in ({"lr": 0.1}, {"lr": 0.1, "weight_decay": 0.01, "maximize": True}, {"lr": 0.1, "momentum": 0.9},
               {"lr": 0.05, "momentum": 0.9, "dampening": 0.3, "weight_decay": 0.01},
               {"lr": 0.05, "momentum": 0.8, "nesterov": True, "weight_decay": 0.1, "maximize": True},
               {"lr": 0.05, "momentum": 0.8, "nesterov": True}):
        cases.append(("sgd", kw))
    for ams, dec, wd, mx in itertools.product([False, True], repeat=4):
        cases.append(("adam", {"lr": 0.01, "beta1": 0.8, "beta2": 0.99, "eps": 1e-6, "amsgrad": ams,
                               "decoupled_weight_decay": dec, "weight_decay": 0.1 if wd else 0.0, "maximize": mx}))
    for wd, mx in itertools.product([False, True], repeat=2):
        cases.append(("adadelta", {"lr": 0.5, "rho": 0.8, "weight_decay": 0.1 if wd else 0.0, "maximize": mx}))
    for mom, cen, wd in itertools.product([False, True], repeat=3):
        cases.append(("rmsprop", {"lr": 0.01, "alpha": 0.9, "momentum": 0.9 if mom else 0.0, "centered": cen,
                                  "weight_decay": 0.1 if wd else 0.0}))
    cases.append(("rmsprop", {"lr": 0.01, "momentum": 0.5, "centered": True, "maximize": True}))
    for dec, wd, mx in itertools.product([False, True], repeat=3):
        cases.append(("adagrad", {"lr": 0.1, "lr_decay": 0.05 if dec else 0.0, "weight_decay": 0.1 if wd else 0.0,
                                  "maximize": mx}))
    return cases


CASES = _cases()
IDS = [f"{op}-" + "-".join(f"{k}={v}" for k, v in kw.items() if k != "lr") for op, kw in CASES]
# a smaller set (every op, the options that change which buffers exist) for the slower dtype sweeps
SUBSET = [c for c in CASES if c[0] in ("sgd", "adadelta", "adagrad") or
          (c[0] == "adam" and not c[1]["maximize"] and c[1].get("weight_decay", 0) > 0) or
          (c[0] == "rmsprop" and c[1].get("weight_decay", 0) > 0)]
SUBSET_IDS = [IDS[CASES.index(c)] for c in SUBSET]

# (param dtype, master weights) -> (rtol, atol) for params, masters and states
DTYPES = {
    ("float32", False): (1e-5, 1e-6),
    ("float64", False): (1e-12, 1e-14),
    ("float16", False): (5e-3, 2e-3),
    ("bfloat16", False): (3e-2, 2e-2),
    ("float16", True): (1e-5, 1e-6),
    ("bfloat16", True): (1e-5, 1e-6),
}
LOW_ROUNDING = {"float16": (1e-3, 1e-3), "bfloat16": (8e-3, 8e-3)}  # a rounded master: one storage ulp


def dt(name):
    return getattr(ampc, name)


class Side:
    """One device's copy of everything a fused call takes."""

    def __init__(self, device, op, kw, init, dtype, master):
        self.device = device
        low = dtype in ("float16", "bfloat16")
        state_dtype = ampc.float32 if master else dt(dtype)
        self.params = [dev_copy(ampc.tensor(x).to(dt(dtype)), device) for x in init]
        assert not master or low
        self.masters = [p.to(ampc.float32).clone() for p in self.params] if master else None
        self.grads = [ampc.zeros(x.shape, dtype=dt(dtype), device=device) for x in init]
        fill = 0.2 if op == "adagrad" else 0.0  # initial_accumulator_value
        self.states = {name: ([ampc.full(x.shape, fill, dtype=state_dtype, device=device) for x in init] if used
                              else None)
                       for name, used in used_states(op, kw).items()}
        self.steps = ([ampc.zeros((), dtype=ampc.float32, device=device) for _ in init] if uses_steps(op, kw)
                      else None)

    def set_grads(self, grads):
        for g, x in zip(self.grads, grads):
            g.copy_(dev_copy(ampc.tensor(x).to(g.dtype), self.device))

    def call(self, op, kw, grad_scale=None, found_inf=None):
        fn, names = OPS[op]
        extra = {}
        if grad_scale is not None:
            extra["grad_scale"] = ampc.full((), grad_scale, dtype=ampc.float32, device=self.device)
        if found_inf is not None:
            extra["found_inf"] = ampc.full((), found_inf, dtype=ampc.float32, device=self.device)
        fn(self.params, self.grads, *[self.states[n] for n in names], self.steps, masters=self.masters, **kw,
           **extra)

    def snapshot(self):
        out = {"params": [host(p) for p in self.params], "grads": [host(g) for g in self.grads]}
        if self.masters is not None:
            out["masters"] = [host(m) for m in self.masters]
        for name, lst in self.states.items():
            if lst is not None:
                out[name] = [host(s) for s in lst]
        if self.steps is not None:
            out["steps"] = [float(s.item()) for s in self.steps]
        return out


def assert_sides_match(cpu, gpu, dtype, master, exact_grads=True):
    a, b = cpu.snapshot(), gpu.snapshot()
    assert a.keys() == b.keys()
    rtol, atol = DTYPES[(dtype, master)]
    for key in a:
        for i, (x, y) in enumerate(zip(a[key], b[key])):
            if key == "steps":
                assert x == y, (key, i)
            elif key == "grads" and exact_grads:
                np.testing.assert_array_equal(y, x, err_msg=f"{key} {i}")
            elif key == "params" and master:
                r, t = LOW_ROUNDING[dtype]
                np.testing.assert_allclose(y, x, rtol=r, atol=t, err_msg=f"{key} {i}")
            else:
                np.testing.assert_allclose(y, x, rtol=rtol, atol=atol, err_msg=f"{key} {i}")
    if master:  # the parameter is the rounded master, on each device
        for p, m in zip(gpu.params, gpu.masters):
            np.testing.assert_array_equal(host(p), host(m.to(p.dtype)))


def run_case(cuda, op, kw, dtype, master, shapes, steps=4, grad_scale=None, seed=0):
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    cpu = Side("cpu", op, kw, init, dtype, master)
    gpu = Side(cuda, op, kw, init, dtype, master)
    for _ in range(steps):
        grads = [(rng.standard_normal(s) * (grad_scale or 1.0)).astype(np.float32) for s in shapes]
        cpu.set_grads(grads)
        gpu.set_grads(grads)
        cpu.call(op, kw, grad_scale=grad_scale, found_inf=0.0)
        gpu.call(op, kw, grad_scale=grad_scale, found_inf=0.0)
        assert_sides_match(cpu, gpu, dtype, master)
    return cpu, gpu


# ---------------------------------------------------------------------------------- every option

@pytest.mark.parametrize("op,kw", CASES, ids=IDS)
def test_fp32_matches_cpu(cuda, op, kw):
    run_case(cuda, op, kw, "float32", False, SHAPES)


@pytest.mark.parametrize("op,kw", CASES, ids=IDS)
def test_fp16_master_weights_match_cpu(cuda, op, kw):
    run_case(cuda, op, kw, "float16", True, SHAPES)


@pytest.mark.parametrize("dtype,master", [("float64", False), ("float16", False), ("bfloat16", False),
                                          ("bfloat16", True)])
@pytest.mark.parametrize("op,kw", SUBSET, ids=SUBSET_IDS)
def test_other_dtypes_match_cpu(cuda, op, kw, dtype, master):
    run_case(cuda, op, kw, dtype, master, SHAPES)


# ---------------------------------------------------------------------------------- grad_scale

@pytest.mark.parametrize("dtype,master", [("float32", False), ("float16", True), ("bfloat16", False),
                                          ("float64", False)])
@pytest.mark.parametrize("scale", [1024.0, 3.0])
@pytest.mark.parametrize("op,kw", SUBSET[::3], ids=SUBSET_IDS[::3])
def test_grad_scale_divides_and_writes_back(cuda, op, kw, dtype, master, scale):
    # grads are compared bit for bit after every step (run_case): one IEEE division on both devices
    run_case(cuda, op, kw, dtype, master, SHAPES, grad_scale=scale)


# ---------------------------------------------------------------------------------- found_inf

@pytest.mark.parametrize("dtype,master", [("float32", False), ("float16", True), ("float16", False)])
@pytest.mark.parametrize("op,kw", SUBSET, ids=SUBSET_IDS)
def test_found_inf_skips_everything(cuda, op, kw, dtype, master):
    rng = np.random.default_rng(1)
    init = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    cpu = Side("cpu", op, kw, init, dtype, master)
    gpu = Side(cuda, op, kw, init, dtype, master)
    for skip in (True, False, False, True, True, False):
        grads = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
        if skip:
            grads = [np.full(s, np.nan, dtype=np.float32) for s in SHAPES]
        for side in (cpu, gpu):
            side.set_grads(grads)
        before = gpu.snapshot()
        for side in (cpu, gpu):
            side.call(op, kw, grad_scale=2.0, found_inf=1.0 if skip else 0.0)
        if skip:  # nothing moved on the GPU: params, grads (not even unscaled), masters, state, steps
            after = gpu.snapshot()
            for key in before:
                for x, y in zip(before[key], after[key]):
                    assert np.array_equal(np.asarray(x), np.asarray(y), equal_nan=True), key
        assert_sides_match(cpu, gpu, dtype, master)


# ---------------------------------------------------------------------------------- sizes

@pytest.mark.parametrize("dtype,master", [("float32", False), ("float16", True)])
@pytest.mark.parametrize("op,kw", [("adam", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.1,
                                             "decoupled_weight_decay": True}),
                                   ("sgd", {"lr": 0.1, "momentum": 0.9, "nesterov": True})], ids=["adamw", "sgd"])
def test_many_params_cross_launches(cuda, op, kw, dtype, master):
    rng = np.random.default_rng(2)
    shapes = [() if k % 97 == 0 else (0,) if k % 89 == 0 else (int(rng.integers(1, 3000)),) for k in range(1100)]
    run_case(cuda, op, kw, dtype, master, shapes, steps=3, grad_scale=512.0)


@pytest.mark.parametrize("dtype,master", [("float32", False), ("float16", True), ("bfloat16", False)])
@pytest.mark.parametrize("op,kw", [("adam", {"lr": 0.01}), ("rmsprop", {"lr": 0.01, "momentum": 0.9,
                                                                        "centered": True})], ids=["adam", "rmsprop"])
def test_large_tensor(cuda, op, kw, dtype, master):
    run_case(cuda, op, kw, dtype, master, [((1 << 20) + 7,), (3,)], steps=2)


def test_unaligned_views_take_the_scalar_path(cuda):
    # every tensor starts one element into its storage: no 16-byte vector access is possible
    rng = np.random.default_rng(3)
    values = [rng.standard_normal(1003).astype(np.float32) for _ in range(4)]
    kw = {"lr": 0.01, "amsgrad": True}
    sides = []
    for dev in ("cpu", cuda):
        params = [dev_copy(ampc.tensor(v), dev)[1:] for v in values[:2]]
        grads = [dev_copy(ampc.tensor(v), dev)[1:] for v in values[2:]]
        states = [[dev_copy(ampc.zeros(1003), dev)[1:] for _ in params] for _ in range(3)]
        steps = [ampc.zeros((), device=dev) for _ in params]
        for _ in range(3):
            _C._fused_adam_(params, grads, *states, steps, **kw)
        sides.append([host(p) for p in params] + [host(s) for lst in states for s in lst])
    for x, y in zip(*sides):
        np.testing.assert_allclose(y, x, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------- optimizer classes

CLASS_CASES = [("SGD", {"lr": 0.1, "momentum": 0.9}), ("Adam", {"lr": 0.01, "amsgrad": True}),
               ("AdamW", {"lr": 0.01, "weight_decay": 0.1}), ("Adadelta", {"lr": 0.5}),
               ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.5}), ("Adagrad", {"lr": 0.1, "lr_decay": 0.01})]


@pytest.mark.parametrize("master", [False, True])
@pytest.mark.parametrize("name,kw", CLASS_CASES, ids=[c[0] for c in CLASS_CASES])
def test_optimizer_classes_step_cuda_params(cuda, name, kw, master):
    rng = np.random.default_rng(4)
    init = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    grads_seq = [[rng.standard_normal(s).astype(np.float32) for s in SHAPES] for _ in range(4)]
    results = []
    for dev in ("cpu", cuda):
        dtype = ampc.float16 if master else ampc.float32
        params = [dev_copy(ampc.tensor(x).to(dtype), dev).requires_grad_() for x in init]
        opt = getattr(ampc.optim, name)(params, master_weights=master, **kw)
        for gs in grads_seq:
            for p, g in zip(params, gs):
                p.grad = dev_copy(ampc.tensor(g).to(dtype), dev)
            opt.step()
        for p in params:
            assert p.device.type == ("cuda" if dev != "cpu" else "cpu")
            for v in opt.state[p].values():
                if isinstance(v, ampc.Tensor):
                    assert v.device.type == p.device.type  # state and step counters live on the device
        sd = opt.state_dict()["state"]
        results.append(([host(p) for p in params],
                        {i: {k: (host(v) if isinstance(v, ampc.Tensor) else v) for k, v in s.items()}
                         for i, s in sd.items()}))
    (pa, sa), (pb, sb) = results
    for x, y in zip(pa, pb):
        np.testing.assert_allclose(y, x, rtol=2e-3 if master else 1e-5, atol=2e-3 if master else 1e-6)
    assert sa.keys() == sb.keys()
    for i in sa:
        assert sa[i].keys() == sb[i].keys()
        for k in sa[i]:
            np.testing.assert_allclose(sb[i][k], sa[i][k], rtol=1e-5, atol=1e-6, err_msg=f"{i} {k}")
