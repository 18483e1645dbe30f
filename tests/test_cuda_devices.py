"""Device handling of the Python layer around the kernels: what breaks a training script on CUDA
even when every kernel is right. Every tensor the library makes next to a user's tensors (optimizer
state, GradScaler state, norms, loaded checkpoints, gradcheck's probes) must land on that user's
device; Module.to() must move parameters, grads and buffers together and keep their identity (as
torch does, so an optimizer built before .to() still works); and the per-step path (autocast
forward, scaled backward, unscale, clipping, optimizer step, scale update, scheduler) must read
nothing back from the device.

Tests take the `device` fixture: they run on the CPU everywhere and on "cuda" when a GPU is
present (AMPC_TEST_CUDA_AS_CPU=1 runs the "cuda" case on the CPU, a dry run of the test code).
Device assertions compare with the device of the tensors the test made (a tensor made with
device="cuda" reports "cuda:0"), never with the literal string. The last test is a static check
that needs no device at all: library code may not create a tensor without device= except where a
host tensor is what torch returns too."""
import ast
import math
import pathlib

import numpy as np
import pytest

import ampc
import ampc.nn as nn
import ampc.nn.functional as F
import ampc.testing
from ampc import _C
from ampc.amp import GradScaler
from ampc.monitor import AMPMonitor
from ampc.utils.data import DataLoader, Subset, TensorDataset
from helpers import host


def device_type(device):
    return ampc.device(device).type


def mlp(device, dtype=None, seed=0):
    """A small MLP built on the CPU from one seed, then moved (the same weights on every device)."""
    ampc.manual_seed(seed)
    model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 5))
    return model.to(device) if dtype is None else model.to(device, dtype)


def batch(device, n=8, seed=1):
    rng = np.random.default_rng(seed)
    x = ampc.tensor(rng.standard_normal((n, 12)).astype(np.float32)).to(device)
    y = ampc.tensor(rng.integers(0, 5, n)).to(device)
    return x, y


def backward(model, device, dtype=None):
    x, y = batch(device)
    if dtype is not None:
        x = x.to(dtype)
    F.cross_entropy(model(x).float(), y).backward()


def assert_on(t, ref, what=""):
    assert t.device == ref.device, f"{what} is on {t.device}, expected {ref.device}"


# ---------------------------------------------------------------- optimizers

OPTIMIZERS = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
    ("Adam", {"lr": 1e-2, "amsgrad": True}),
    ("AdamW", {"lr": 1e-2}),
    ("Adagrad", {"lr": 1e-2, "initial_accumulator_value": 0.1}),
    ("Adadelta", {"lr": 1.0}),
    ("RMSprop", {"lr": 1e-2, "momentum": 0.9, "centered": True}),
]
OPT_IDS = [f"{n}-{'-'.join(k for k in kw if k != 'lr') or 'plain'}" for n, kw in OPTIMIZERS]


def make_optimizer(name, kw, params, master=False):
    return getattr(ampc.optim, name)(params, master_weights=master, **kw)


@pytest.mark.parametrize("master", [False, True], ids=["fp32", "fp16-master"])
@pytest.mark.parametrize("name,kw", OPTIMIZERS, ids=OPT_IDS)
def test_optimizer_state_lands_on_the_param_device(device, name, kw, master):
    dtype = ampc.float16 if master else None
    model = mlp(device, dtype)
    opt = make_optimizer(name, kw, model.parameters(), master)
    for _ in range(2):
        opt.zero_grad()
        backward(model, device, dtype)
        opt.step()
    params = list(model.parameters())
    for p in params:
        state = opt.state[p]
        if name != "SGD" or kw.get("momentum"):
            assert state, f"{name} kept no state"
        for key, value in state.items():
            if isinstance(value, ampc.Tensor):
                assert_on(value, p, f"state[{key!r}]")
        if master:
            assert state["master_param"].dtype == ampc.float32
    for index, exported in opt.state_dict()["state"].items():
        for key, value in exported.items():
            if isinstance(value, ampc.Tensor):
                assert_on(value, params[index], f"state_dict state[{index}][{key!r}]")


@pytest.mark.parametrize("name,kw", OPTIMIZERS, ids=OPT_IDS)
def test_optimizer_checkpoint_loaded_on_the_cpu_moves_to_the_params(device, name, kw, tmp_path):
    model = mlp(device)
    opt = make_optimizer(name, kw, model.parameters())
    backward(model, device)
    opt.step()
    path = tmp_path / "opt.ampc"
    ampc.save({"model": model.state_dict(), "opt": opt.state_dict()}, str(path))
    ckpt = ampc.load(str(path), map_location="cpu")
    for exported in ckpt["opt"]["state"].values():
        for value in exported.values():
            if isinstance(value, ampc.Tensor):
                assert value.device.type == "cpu"

    fresh = mlp(device, seed=7)
    fresh.load_state_dict(ckpt["model"])
    fresh_opt = make_optimizer(name, kw, fresh.parameters())
    fresh_opt.load_state_dict(ckpt["opt"])
    for p in fresh.parameters():
        for key, value in fresh_opt.state[p].items():
            if isinstance(value, ampc.Tensor):
                assert_on(value, p, f"loaded state[{key!r}]")
    # one more step on each side: the loaded optimizer continues exactly where the saved one was
    for m, o in ((model, opt), (fresh, fresh_opt)):
        o.zero_grad()
        backward(m, device)
        o.step()
    for a, b in zip(model.parameters(), fresh.parameters()):
        np.testing.assert_allclose(host(b), host(a), rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------- Module.to

def test_module_to_keeps_parameter_and_grad_identity(device):
    """torch swaps new values in through .data for parameters and their grads: an optimizer built
    before .to() keeps working, and grads move with their parameters."""
    ampc.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 5))
    criterion = nn.CrossEntropyLoss(weight=ampc.rand(5) + 0.5)
    opt = ampc.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    backward(model, "cpu")  # grads on the CPU, then the move
    params = list(model.parameters())
    grads = [p.grad for p in params]
    model.to(device)
    criterion.to(device)
    target = ampc.empty(0, device=device)
    assert [id(p) for p in model.parameters()] == [id(p) for p in params]
    for p, g in zip(params, grads):
        assert p.device == target.device and p.grad is g and g.device == target.device
    bn = model[1]
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        assert_on(getattr(bn, name), target, name)
    assert bn.num_batches_tracked.dtype == ampc.int64
    assert_on(criterion.weight, target, "CrossEntropyLoss.weight")

    x, y = batch(device)
    opt.zero_grad()
    criterion(model(x), y).backward()
    opt.step()  # the optimizer built on the CPU parameters steps them on the device
    for p in params:
        assert_on(opt.state[p]["momentum_buffer"], p, "momentum_buffer")

    grads = [p.grad for p in params]
    model.double()  # dtype moves keep identity too; integer buffers stay integers
    assert all(p.dtype == ampc.float64 and p.grad is g and g.dtype == ampc.float64 for p, g in zip(params, grads))
    assert bn.num_batches_tracked.dtype == ampc.int64 and bn.running_mean.dtype == ampc.float64


def test_module_to_keeps_tied_weights_tied(device):
    from ampc.models import GPT, GPTConfig

    model = GPT(GPTConfig(vocab_size=32, block_size=8, n_layer=1, n_head=2, n_embd=16)).to(device)
    assert model.lm_head.weight is model.transformer.wte.weight
    idx = ampc.randint(0, 32, (2, 8)).to(device)
    logits, loss = model(idx, idx)
    assert_on(logits, idx, "logits")
    loss.backward()
    assert_on(model.lm_head.weight.grad, idx, "tied weight's grad")


# ---------------------------------------------------------------- GradScaler and the AMP step

def test_grad_scaler_state_follows_the_grads(device):
    model = mlp(device)
    ref = next(model.parameters())
    opt = ampc.optim.Adam(model.parameters(), lr=1e-3)
    scaler = GradScaler(device_type(device), init_scale=2.0 ** 10, growth_interval=1)
    x, y = batch(device)
    loss = F.cross_entropy(model(x), y)
    scaled = scaler.scale(loss)
    assert_on(scaled, ref, "scaled loss")
    for name in ("_scale", "_growth_tracker", "_stats", "_history"):
        assert_on(getattr(scaler, name), ref, f"scaler.{name}")
    scaled.backward()
    scaler.unscale_(opt)
    per_device = scaler._found_inf_per_device(opt)
    assert list(per_device) == [ref.device]
    assert_on(per_device[ref.device], ref, "found_inf")
    _, found_inf = scaler.step(opt, return_found_inf=True)
    assert_on(found_inf, ref, "combined found_inf")
    scaler.update()
    for name in ("_scale", "_growth_tracker", "_stats", "_history"):
        assert_on(getattr(scaler, name), ref, f"scaler.{name} after update")
    assert scaler.get_scale() == 2.0 ** 11  # a finite step grew the scale


def test_grad_scaler_fp16_master_weights_path(device):
    model = mlp(device, ampc.float16)
    ref = next(model.parameters())
    opt = ampc.optim.Adam(model.parameters(), lr=1e-3, master_weights=True)
    scaler = GradScaler(device_type(device), init_scale=2.0 ** 8)
    x, y = batch(device)
    scaler.scale(F.cross_entropy(model(x.half()).float(), y)).backward()
    _, found_inf = scaler.step(opt, return_found_inf=True)
    assert_on(found_inf, ref, "found_inf")
    scaler.update()
    for p in model.parameters():
        master = opt.state[p]["master_param"]
        assert_on(master, p, "master_param")
        np.testing.assert_allclose(host(p), host(master.half()))  # the param is the rounded master


def test_amp_training_step_reads_nothing_back(device):
    """A whole AMP step as a torch script writes it: autocast forward, scaled backward, unscale_
    for clipping, clip_grad_norm_, step, update, scheduler, zero_grad. torch reads nothing back
    in any of these; neither may ampc."""
    model = mlp(device)
    opt = ampc.optim.AdamW(model.parameters(), lr=1e-3)
    sched = ampc.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, total_steps=20)
    scaler = GradScaler(device_type(device), init_scale=2.0 ** 10)
    x, y = batch(device)
    norms = []
    for step in range(4):
        before = _C._host_read_count()
        with ampc.autocast(device_type(device), dtype=ampc.float16):
            loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        norms.append(nn.utils.clip_grad_norm_(model.parameters(), 1.0))
        scaler.step(opt)
        scaler.update()
        sched.step()
        opt.zero_grad(set_to_none=True)
        assert _C._host_read_count() == before, f"step {step} read the device"
    ref = next(model.parameters())
    for norm in norms:
        assert_on(norm, ref, "total norm")
        assert math.isfinite(norm.item())


# ---------------------------------------------------------------- clipping

@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
def test_clip_grad_norm_stays_on_the_params_device(device, norm_type):
    model = mlp(device)
    backward(model, device)
    params = list(model.parameters())
    want = np.linalg.norm(np.concatenate([host(p.grad).ravel() for p in params]), ord=norm_type)
    before = _C._host_read_count()
    total = nn.utils.clip_grad_norm_(params, max_norm=want / 4, norm_type=norm_type)
    assert _C._host_read_count() == before
    assert_on(total, params[0], "clip_grad_norm_'s result")
    assert total.dtype == ampc.float32 and total.dim() == 0
    np.testing.assert_allclose(total.item(), want, rtol=1e-5)
    clipped = np.concatenate([host(p.grad).ravel() for p in params])
    np.testing.assert_allclose(np.linalg.norm(clipped, ord=norm_type), want / 4, rtol=1e-4)
    assert_on(nn.utils.get_total_norm([p.grad for p in params]), params[0], "get_total_norm's result")


def test_parameters_to_vector_and_back_on_device(device):
    model = mlp(device)
    params = list(model.parameters())
    vec = nn.utils.parameters_to_vector(params)
    assert_on(vec, params[0], "vector")
    nn.utils.vector_to_parameters(vec * 2, params)
    for p in params:
        assert_on(p, vec, "parameter")
    np.testing.assert_allclose(host(nn.utils.parameters_to_vector(params)), host(vec) * 2)


# ---------------------------------------------------------------- schedulers

def _lrs(device, sched_fn, steps=6):
    model = mlp(device)
    opt = ampc.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sched = sched_fn(opt)
    lrs = []
    for _ in range(steps):
        opt.zero_grad()
        backward(model, device)
        opt.step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    return lrs, model


@pytest.mark.parametrize("sched_fn", [
    lambda o: ampc.optim.lr_scheduler.OneCycleLR(o, max_lr=0.05, total_steps=10),
    lambda o: ampc.optim.lr_scheduler.StepLR(o, step_size=2, gamma=0.5),
    lambda o: ampc.optim.lr_scheduler.CosineAnnealingLR(o, T_max=4),
    lambda o: ampc.optim.lr_scheduler.LambdaLR(o, lambda e: 1.0 / (e + 1)),
], ids=["onecycle", "step", "cosine", "lambda"])
def test_schedulers_drive_device_params_as_cpu_ones(device, sched_fn):
    lrs_dev, model = _lrs(device, sched_fn)
    lrs_cpu, ref = _lrs("cpu", sched_fn)
    assert lrs_dev == lrs_cpu and all(isinstance(lr, float) for lr in lrs_dev)
    for a, b in zip(model.parameters(), ref.parameters()):
        np.testing.assert_allclose(host(a), host(b), rtol=1e-3, atol=1e-4)


def test_reduce_lr_on_plateau_takes_a_device_metric(device):
    model = mlp(device)
    opt = ampc.optim.SGD(model.parameters(), lr=0.1)
    sched = ampc.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, factor=0.5)
    metric = ampc.ones((), device=device)
    for _ in range(3):
        sched.step(metric)  # a device tensor: one read, as torch's float(metrics)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.025)


# ---------------------------------------------------------------- checkpoints

def _saved(device, tmp_path):
    model = mlp(device)
    path = tmp_path / "model.ampc"
    ampc.save({"sd": model.state_dict(), "param": model[0].weight}, str(path))
    return model, path


@pytest.mark.parametrize("kind", ["none", "cpu", "device-object", "target", "dict", "callable", "callable-none"])
def test_load_map_location(device, tmp_path, kind):
    model, path = _saved(device, tmp_path)
    ref = next(model.parameters())
    saved_at = str(ref.device)
    cpu = ampc.empty(0)
    map_location, expect = {
        "none": (None, ref),
        "cpu": ("cpu", cpu),
        "device-object": (ampc.device("cpu"), cpu),
        "target": (device, ref),
        "dict": ({saved_at: "cpu"}, cpu),
        "callable": (lambda t, loc: t, cpu),  # torch's fn(storage, location): the CPU copy kept
        "callable-none": (lambda t, loc: None, ref),  # None: default placement
    }[kind]
    back = ampc.load(str(path), map_location=map_location)
    for key, value in back["sd"].items():
        assert_on(value, expect, key)
        np.testing.assert_array_equal(host(value), host(model.state_dict()[key]))
    assert isinstance(back["param"], nn.Parameter) and back["param"].requires_grad
    assert_on(back["param"], expect, "Parameter")
    fresh = mlp(device, seed=3)
    fresh.load_state_dict(back["sd"])  # copies across devices into the model's own tensors
    for p in fresh.parameters():
        assert_on(p, ref, "loaded parameter")


# ---------------------------------------------------------------- gradcheck

def test_gradcheck_on_device(device):
    rng = np.random.default_rng(0)
    x = ampc.tensor(rng.standard_normal((3, 4)), dtype=ampc.float64).to(device).t().requires_grad_()  # strided
    w = ampc.tensor(rng.standard_normal((3, 2)), dtype=ampc.float64).to(device).requires_grad_()

    def fn(a, b):
        return (a @ b).sin()

    assert ampc.testing.gradcheck(fn, (x, w))
    assert ampc.testing.gradgradcheck(fn, (x, w))
    assert x.grad is None and x.is_contiguous() is False  # probing left the inputs as they were


def test_gradcheck_device_probe_path_on_the_cpu(monkeypatch):
    """The element access gradcheck uses for non-CPU tensors (no NumPy view), run on the CPU."""
    monkeypatch.setattr(ampc.testing, "_HostElements", ampc.testing._DeviceElements)
    rng = np.random.default_rng(1)
    x = ampc.tensor(rng.standard_normal((4, 3)), dtype=ampc.float64).t().requires_grad_()
    s = ampc.tensor(0.7, dtype=ampc.float64, requires_grad=True)  # 0-dim: the () index
    before = host(x)
    assert ampc.testing.gradcheck(lambda a, b: (a * b).exp().sum(dim=1), (x, s))
    np.testing.assert_array_equal(host(x), before)
    with pytest.raises(ampc.testing.GradcheckError):
        ampc.testing.gradcheck(lambda a, b: a.detach() * 2 + b * 0, (x, s))


# ---------------------------------------------------------------- monitor, data, random

def test_amp_monitor_reports_the_scalers_device(device, monkeypatch):
    import ampc.monitor as monitor_module

    asked = []
    real = monitor_module.memory_stats
    monkeypatch.setattr(monitor_module, "memory_stats", lambda dev="cpu": asked.append(dev) or real(dev))
    model = mlp(device)
    scaler = GradScaler(device_type(device), init_scale=4.0)
    lines = []
    monitor = AMPMonitor(scaler, every=1, printer=lines.append)  # no device: follows the scaler
    x, y = batch(device)
    scaler.scale(F.cross_entropy(model(x), y)).backward()
    info = monitor.step(0, 0)
    assert asked == [str(next(model.parameters()).device)] and info["scale"] == 4.0 and lines
    AMPMonitor(None).snapshot()  # no scaler: the CPU's statistics
    assert asked[-1] == "cpu"


@pytest.mark.parametrize("subset", [False, True])
def test_dataloader_over_device_tensors(device, subset):
    x, y = batch(device, n=20)
    ds = TensorDataset(x, y)
    if subset:
        ds = Subset(ds, list(range(3, 17)))
    loader = DataLoader(ds, batch_size=4, shuffle=True, generator=ampc.Generator().manual_seed(0))
    seen = []
    for bx, by in loader:
        assert_on(bx, x, "batch x")
        assert_on(by, y, "batch y")
        seen += host(by).tolist()
    assert len(seen) == len(ds)


def test_pinned_batches_move_to_the_device(device):
    x, y = batch("cpu", n=12)
    loader = DataLoader(TensorDataset(x, y), batch_size=6, pin_memory=True)
    for i, (bx, by) in enumerate(loader):
        moved = bx.to(device, non_blocking=True)
        assert moved.device == ampc.empty(0, device=device).device
        np.testing.assert_array_equal(host(moved), host(x[6 * i:6 * i + 6]))


def test_random_state_is_per_device(device):
    ampc.manual_seed(5)
    ref = ampc.empty(0, device=device)
    cpu_state = _C.get_rng_state(device="cpu").tolist()
    dev_state = _C.get_rng_state(device=str(ref.device)).tolist()
    a = F.dropout(ampc.ones(64, device=device), 0.5)
    assert _C.get_rng_state(device=str(ref.device)).tolist() != dev_state  # the device's stream advanced
    if ref.device.type != "cpu":
        assert _C.get_rng_state(device="cpu").tolist() == cpu_state  # and only the device's
    ampc.manual_seed(5)
    b = F.dropout(ampc.ones(64, device=device), 0.5)
    np.testing.assert_array_equal(host(a), host(b))
    assert_on(a, ref, "dropout output")


# ---------------------------------------------------------------- static check (no device)

FACTORIES = {"tensor", "zeros", "ones", "full", "empty", "arange", "linspace", "eye", "rand", "randn", "randint",
             "randperm", "normal", "as_tensor", "from_numpy", "scalar_tensor", "empty_strided", "bernoulli"}

# Factory calls without device= that are right as they are: host tensors by design, as in torch.
HOST_BY_DESIGN = {
    "nn/utils/clip_grad.py": {"_C.tensor(0.0)"},  # no grads at all: torch returns a CPU tensor(0.0) too
    "nn/modules/batchnorm.py": {"_C.tensor(0, dtype=_C.long)"},  # copied into the buffer by load_state_dict
    "random.py": {"_C.tensor(list(raw), dtype=_C.uint8)"},  # RNG state bytes (torch: a CPU ByteTensor)
    "_runtime.py": {"_C.from_numpy(arr)"},  # frombuffer: a CPU tensor over the buffer's memory, as torch
    "serialization/_load.py": {"_C.from_numpy(arr)"},  # a storage, then placed by map_location (_Placer)
    "serialization/_legacy.py": {"_C.from_numpy(arr)"},  # then placed by map_location (_Reader._place)
    "utils/data/dataloader.py": {"_C.as_tensor(np.asarray(data))", "_C.as_tensor(np.asarray(b))",
                                 "_C.as_tensor(np.asarray(batch))", "_C.tensor(batch, dtype=_C.float64)",
                                 "_C.tensor(batch)"},  # collate builds CPU batches (then pin_memory / .to)
    "utils/data/dataset.py": {"_C.tensor([int(i) for i in mine], dtype=_C.int64)", "_C.randperm(sum(counts))",
                              "_C.randperm(sum(counts), generator=generator)"},  # host-side index maps
    "utils/data/sampler.py": {"_C.arange(start, min(n, start + _CHUNK), dtype=_C.int64)",
                              "_C.tensor(list(idx), dtype=_C.int64)",  # sampling order, moved per device
                              "_C.as_tensor(weights, dtype=_C.float64)",  # WeightedRandomSampler's weights (torch: CPU)
                              "_C.randperm(len(self.dataset), generator=g)"},  # DistributedSampler's order
    "datasets/fashion_mnist.py": {"ampc.from_numpy(np.ascontiguousarray(x))",
                                  "ampc.from_numpy(labels.astype(np.int64))"},  # then .to(device)
    "nn/utils/rnn.py": {"_C.tensor(lengths, dtype=_C.int64)", "_C.tensor(batch_sizes, dtype=_C.int64)"},  # CPU, as torch
    "demo.py": {"torch.from_numpy(idx)"},  # then .to(device)
    "nn/init.py": {"_C.tensor(a, dtype=tensor.dtype)", "_C.tensor(b, dtype=tensor.dtype)",  # host rounding of a, b
                   "_C.from_numpy(np.ascontiguousarray(q))", "_C.from_numpy(np.ascontiguousarray(r))",  # QR on the
                   "_C.randperm(rows)"},  # host, then .to(device); sparse_'s row permutation (torch: CPU too)
    "nn/utils/parametrizations.py": {"_C.from_numpy(np.ascontiguousarray(q))"},  # QR on the host, then .to(device)
    "nn/utils/rnn.py": {"_C.tensor([sum((1 for bs in batch_sizes if bs > b)) for b in range(B)], dtype=_C.int64)",
                        "_C.tensor([v.size(0) for v in sequences], dtype=_C.int64)",
                        "_C.tensor(_lengths_list(lengths), dtype=_C.int64)",
                        "_C.tensor(batch_sizes, dtype=_C.int64)", "_C.tensor(lengths, dtype=_C.int64)"},  # lengths and batch_sizes: CPU int64, as torch's
    "testing/pytest_plugin.py": {"ampc.tensor(arr)", "ampc.tensor(ref)", "ampc.tensor(value)"},  # golden files: host
    "utils/data/_worker.py": {"_C.empty((), dtype=_C.int64)"},  # the workers' base seed, drawn on the host as torch
}
# orthogonal_'s / orthogonal's QR comes from NumPy (LAPACK), then .to(device); sparse_'s row
# permutations come from the CPU generator, as torch.randperm(rows) does
HOST_BY_DESIGN["nn/init.py"] |= {"_C.from_numpy(np.ascontiguousarray(q))", "_C.from_numpy(np.ascontiguousarray(r))",
                                 "_C.randperm(rows)"}
HOST_BY_DESIGN["nn/utils/parametrizations.py"] = {"_C.from_numpy(np.ascontiguousarray(q))"}


def test_library_factories_name_their_device():
    root = pathlib.Path(ampc.__file__).parent
    found = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in FACTORIES and isinstance(node.func.value, ast.Name)
                    and node.func.value.id in ("_C", "ampc", "torch")):
                continue
            if any(k.arg in ("device", None) for k in node.keywords):  # device= or **factory kwargs
                continue
            found.setdefault(rel, set()).add(ast.unparse(node))
    unexpected = {rel: calls - HOST_BY_DESIGN.get(rel, set()) for rel, calls in found.items()}
    unexpected = {rel: sorted(calls) for rel, calls in unexpected.items() if calls}
    assert not unexpected, ("library code creates tensors on the CPU next to user tensors (add device=, or list "
                            f"them in HOST_BY_DESIGN with the reason): {unexpected}")
