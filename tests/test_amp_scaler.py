"""GradScaler and its C ops: PyTorch's grad-scaling tests that need no nn/optim (pytorch-amp.md §4),
plus ampc's telemetry and bounds. Runs on CPU always (fp16 is a real storage format there)."""
import math
import pickle

import numpy as np
import pytest

import ampc
from ampc import _C
from ampc.amp import GradScaler, OptState


class PlainSGD:
    """A minimal foreign optimizer (no _step_supports_amp_scaling): p -= lr * grad."""

    def __init__(self, params, lr=1.0):
        self.param_groups = [{"params": list(params), "lr": lr}]
        self.steps = 0

    def step(self):
        self.steps += 1
        with ampc.no_grad():  # as torch.optim: updating a leaf that requires grad needs no_grad
            for p in self.param_groups[0]["params"]:
                p.sub_(p.grad * self.param_groups[0]["lr"])
        return "stepped"


def leaf(values, dtype=ampc.float32):
    t = ampc.tensor(values, dtype=dtype)
    t.requires_grad_(True)
    return t


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("bad", [None, math.inf, math.nan])
def test_unscale_op(layout, bad):
    # test_grad_scaling_unscale: inv_scale 0.25 on grads of 4.0
    inv_scale = ampc.full((), 0.25, dtype=ampc.float32)
    found_inf = ampc.full((), 0.0, dtype=ampc.float32)
    base = ampc.full((20, 20), 4.0, dtype=ampc.float32)
    grad = {"contiguous": base, "transposed": base.t(), "sliced": base[:, :5]}[layout]
    if bad is not None:
        grad[2, 2] = bad
    _C._amp_foreach_non_finite_check_and_unscale_([grad], found_inf, inv_scale)
    if bad is None:
        assert found_inf.item() == 0.0
        np.testing.assert_allclose(grad.numpy(), np.ones(grad.shape), rtol=1e-5, atol=1e-7)
    else:
        assert found_inf.item() == 1.0


@pytest.mark.parametrize("dtype", [ampc.float32, ampc.float16, ampc.bfloat16])
def test_unscale_op_mixed_list(dtype):
    inv_scale = ampc.full((), 0.25, dtype=ampc.float32)
    found_inf = ampc.full((), 0.0, dtype=ampc.float32)
    grads = [ampc.full((7,), 4.0, dtype=dtype), ampc.full((3, 3), 4.0, dtype=ampc.float32)]
    _C._amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale)
    assert found_inf.item() == 0.0
    for g in grads:
        assert g.float().numpy().tolist() == np.ones(g.shape).tolist()


def test_unscale_op_errors():
    found_inf = ampc.full((), 0.0)
    with pytest.raises(TypeError, match="only floating grads"):
        _C._amp_foreach_non_finite_check_and_unscale_([ampc.zeros(3, dtype=ampc.int64)], found_inf, ampc.full((), 1.0))
    with pytest.raises(TypeError, match="found_inf must be a float32"):
        _C._amp_foreach_non_finite_check_and_unscale_([ampc.zeros(3)], ampc.zeros((), dtype=ampc.float64),
                                                      ampc.full((), 1.0))


def test_update_scale_op():
    # test_grad_scaling_update_scale: 4 -> 4 -> 8 -> 2
    growth, backoff, interval = 2.0, 0.25, 2
    scale = ampc.full((), 4.0, dtype=ampc.float32)
    tracker = ampc.full((), 0, dtype=ampc.int32)
    found_inf = ampc.full((), 0.0, dtype=ampc.float32)
    _C._amp_update_scale_(scale, tracker, found_inf, growth, backoff, interval)
    assert tracker.item() == 1 and scale.item() == 4.0
    _C._amp_update_scale_(scale, tracker, found_inf, growth, backoff, interval)
    assert tracker.item() == 0 and scale.item() == 8.0
    found_inf.fill_(1.0)
    _C._amp_update_scale_(scale, tracker, found_inf, growth, backoff, interval)
    assert tracker.item() == 0 and scale.item() == 2.0


def test_update_scale_matches_torch_over_a_run():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    overflow = rng.random(300) < 0.1
    scale, tracker = ampc.full((), 2.0 ** 16), ampc.full((), 0, dtype=ampc.int32)
    tscale, ttracker = torch.full((), 2.0 ** 16), torch.full((), 0, dtype=torch.int32)
    for o in overflow:
        f = ampc.full((), float(o))
        _C._amp_update_scale_(scale, tracker, f, 2.0, 0.5, 7)
        torch._amp_update_scale_(tscale, ttracker, torch.full((), float(o)), 2.0, 0.5, 7)
        assert scale.item() == tscale.item() and tracker.item() == ttracker.item()


def test_scale_nested_and_lazy_device():
    # test_grad_scaling_scale
    scaler = GradScaler("cpu", init_scale=2.0)
    t0, t1 = ampc.full((1,), 4.0), ampc.full((1,), 4.0)
    outputs = (t1.clone(), (t0.clone(), t1.clone()), [t0.clone(), (t1.clone(), t0.clone())])
    outputs = scaler.scale(outputs)
    assert isinstance(outputs, tuple) and isinstance(outputs[2], list)
    flat = [outputs[0], outputs[1][0], outputs[1][1], outputs[2][0], outputs[2][1][0], outputs[2][1][1]]
    assert all(o.item() == 8.0 for o in flat)
    assert scaler._scale.device == t1.device
    with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable of Tensors"):
        scaler.scale([1.0])


def test_scale_fp16_loss_gives_fp32():
    scaler = GradScaler("cpu")
    loss = ampc.full((), 3.0, dtype=ampc.float16)
    assert scaler.scale(loss).dtype == ampc.float32


def test_state_dict_round_trip():
    # test_grad_scaling_state_dict
    for lazy_init_scale in (True, False):
        s0 = GradScaler("cpu", init_scale=3.0, growth_factor=4.0, backoff_factor=0.5, growth_interval=2)
        s1 = GradScaler("cpu", init_scale=6.0, growth_factor=7.0, backoff_factor=0.8, growth_interval=1)
        s1._init_growth_tracker = 7
        if lazy_init_scale:
            s1.scale(ampc.full((1,), 4.0))
            assert s1._scale.dtype == ampc.float32
        s1.load_state_dict(s0.state_dict())
        assert s1.get_scale() == 3.0
        assert s1.get_growth_factor() == 4.0
        assert s1.get_backoff_factor() == 0.5
        assert s1.get_growth_interval() == 2
        assert s1._init_growth_tracker == 0
    assert set(s0.state_dict()) == {"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"}
    with pytest.raises(RuntimeError, match="The source state dict is empty"):
        GradScaler("cpu").load_state_dict({})


def run_loop(scaler, inject_at=None, iters=4, unscale_first=False):
    w = leaf([1.0, 2.0, 3.0])
    opt = PlainSGD([w], lr=0.1)
    for i in range(iters):
        loss = (w * w).sum()
        scaler.scale(loss).backward()
        if i == inject_at:
            w.grad[1] = math.inf
        if unscale_first:
            scaler.unscale_(opt)
        scaler.step(opt)
        scaler.update()
        w.grad = None
    return w, opt


def test_skip_and_backoff_without_gpu():
    scaler = GradScaler("cpu", init_scale=128.0, growth_factor=2.0, growth_interval=1)
    w, opt = run_loop(scaler, inject_at=2)
    assert opt.steps == 3  # one skipped
    assert scaler.get_scale() == 128.0 * 2 ** 3 * 0.5 ** 1
    control = np.array([1.0, 2.0, 3.0])
    for _ in range(3):
        control = control - 0.1 * 2 * control
    np.testing.assert_allclose(w.detach().numpy(), control, rtol=1e-6)
    st = scaler.stats()
    assert st["steps"] == 4 and st["skipped_steps"] == 1 and st["last_skipped_step"] == 3
    assert st["overflow_streak"] == 0
    assert st["scale_history"] == [256.0, 512.0, 256.0, 512.0]


def test_fp16_overflow_on_cpu_skips_a_step():
    # fp16 on the CPU overflows where fp16 would: 70000 does not fit, the grad becomes inf.
    scaler = GradScaler("cpu", init_scale=2.0 ** 16)
    w = leaf([1.0, 2.0])
    opt = PlainSGD([w])
    loss = (w.half() * 2.0).sum()
    scaler.scale(loss).backward()
    retval, found_inf = scaler.step(opt, return_found_inf=True)
    assert retval is None and found_inf and opt.steps == 0
    scaler.update()
    assert scaler.get_scale() == 2.0 ** 15


def test_state_machine_errors():
    scaler = GradScaler("cpu")
    w = leaf([1.0])
    opt = PlainSGD([w])
    with pytest.raises(AssertionError, match="Attempted unscale_ but _scale is None"):
        scaler.unscale_(opt)
    scaler.scale((w * 2).sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called on this optimizer"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) is being called after step\\(\\)"):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called since the last update\\(\\)"):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        scaler.update()
        scaler.step(opt, closure=lambda: 0)


def test_refuses_fp16_grads():
    scaler = GradScaler("cpu")
    w = leaf([1.0, 2.0], dtype=ampc.float16)
    opt = PlainSGD([w])
    scaler.scale((w * 2).sum()).backward()
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
        scaler.unscale_(opt)


def test_bf16_grads_unscale():
    scaler = GradScaler("cpu", init_scale=4.0)
    w = leaf([1.0, 2.0], dtype=ampc.bfloat16)
    opt = PlainSGD([w])
    scaler.scale((w * 2).sum()).backward()
    scaler.unscale_(opt)
    assert w.grad.float().tolist() == [2.0, 2.0]


def test_will_not_overflow():
    scaler = GradScaler("cpu", growth_interval=1, growth_factor=2 ** 4, init_scale=1e38)
    run_loop(scaler, iters=1)
    assert math.isfinite(scaler.get_scale())


def test_min_scale_bound():
    scaler = GradScaler("cpu", init_scale=4.0, min_scale=2.0)
    for _ in range(3):
        run_loop(scaler, inject_at=0, iters=1)
    assert scaler.get_scale() == 2.0


def test_pickle_rules():
    scaler = GradScaler("cpu", init_scale=8.0)
    run_loop(scaler, iters=2)
    clone = pickle.loads(pickle.dumps(scaler))
    assert clone.get_scale() == scaler.get_scale() and clone._scale is None
    w = leaf([1.0])
    scaler.scale((w * 1).sum()).backward()
    scaler.unscale_(PlainSGD([w]))
    with pytest.raises(AssertionError, match="may only be pickled at the beginning of an iteration"):
        pickle.dumps(scaler)


def test_disabled_is_pass_through():
    scaler = GradScaler("cpu", enabled=False)
    t = ampc.ones(2)
    assert scaler.scale(t) is t
    w = leaf([1.0])
    opt = PlainSGD([w])
    (w * 2).sum().backward()
    assert scaler.step(opt) == "stepped"
    scaler.unscale_(opt)
    scaler.update()
    assert scaler.get_scale() == 1.0 and scaler.state_dict() == {}
    with pytest.raises(AttributeError):
        scaler.get_growth_factor()


def test_cuda_scaler_default_device():
    if ampc.cuda.is_available():
        assert GradScaler().is_enabled()
    else:
        with pytest.warns(UserWarning, match="CUDA is not available.  Disabling."):
            scaler = GradScaler()
        assert not scaler.is_enabled()


def test_diagnose_names_bad_params():
    scaler = GradScaler("cpu")
    a, b = leaf([1.0, 2.0]), leaf([3.0])
    opt = PlainSGD([a, b])
    opt.param_names = {id(a): "layer.weight", id(b): "layer.bias"}
    scaler.scale((a * 2).sum() + (b * 3).sum()).backward()
    a.grad[0] = math.nan
    scaler.step(opt)
    assert scaler.diagnose(opt) == [("layer.weight", 1)]


@pytest.mark.parametrize("np_dtype,dtype", [(np.float32, ampc.float32), (np.float16, ampc.float16)])
@pytest.mark.parametrize("n", [1, 7, 8, 1000, 70_001])
@pytest.mark.parametrize("inv", [0.25, 1.0, 3.0517578125e-05, 1.0 / 3.0])
def test_unscale_values_match_numpy(np_dtype, dtype, n, inv):
    # the vectorized paths (F16C for fp16, tails included) round exactly as fp32 math + one RNE
    # rounding, subnormal results included
    rng = np.random.default_rng(n)
    a = (rng.standard_normal(n) * rng.choice([1e-3, 1.0, 1e3], size=n)).astype(np_dtype)
    g = ampc.from_numpy(a.copy())
    found_inf = ampc.zeros((), dtype=ampc.float32)
    inv_t = ampc.full((), inv, dtype=ampc.float32)
    _C._amp_foreach_non_finite_check_and_unscale_([g], found_inf, inv_t)
    expected = (a.astype(np.float32) * np.float32(inv)).astype(np_dtype)
    np.testing.assert_array_equal(g.numpy().view(np.uint16 if np_dtype == np.float16 else np.uint32),
                                  expected.view(np.uint16 if np_dtype == np.float16 else np.uint32))
    assert found_inf.item() == 0.0
    a[n // 2] = np.inf if n % 2 else np.nan
    g = ampc.from_numpy(a.copy())
    _C._amp_foreach_non_finite_check_and_unscale_([g], found_inf, inv_t)
    assert found_inf.item() == 1.0


def test_grad_scaler_pass_itself():
    # test_grad_scaler_pass_itself: an AMP-aware optimizer whose step takes `grad_scaler` gets the
    # scaler (and a FutureWarning); one without it sees found_inf (and grad_scale) as attributes
    class PassItself:
        _step_supports_amp_scaling = True

        def __init__(self, params):
            self.param_groups = [{"params": list(params)}]

        def step(self, closure=None, grad_scaler=None):
            self.got = grad_scaler
            self.attrs = (hasattr(self, "grad_scale"), hasattr(self, "found_inf"))

    class Attributes(PassItself):
        def step(self, closure=None):
            self.seen = (getattr(self, "grad_scale", "missing"), getattr(self, "found_inf", None))

    w = leaf([1.0, 2.0])
    scaler = GradScaler("cpu", init_scale=4.0)
    opt = PassItself([w])
    (scaler.scale(w.sum())).backward()
    with pytest.warns(FutureWarning, match="GradScaler is going to stop passing itself"):
        scaler.step(opt)
    assert opt.got is scaler and opt.attrs == (False, False)

    w.grad = None
    scaler = GradScaler("cpu", init_scale=4.0)
    opt = Attributes([w])
    (scaler.scale(w.sum())).backward()
    scaler.step(opt)
    grad_scale, found_inf = opt.seen
    # torch's contract: the optimizer gets the scale to divide by and the grads stay scaled
    # (tests/test_amp_optimizer_protocol.py compares the whole protocol with torch)
    assert isinstance(grad_scale, ampc.Tensor) and grad_scale.item() == 4.0
    assert isinstance(found_inf, ampc.Tensor) and found_inf.item() == 0.0
    assert not hasattr(opt, "grad_scale") and not hasattr(opt, "found_inf")
    np.testing.assert_array_equal(w.grad.numpy(), [4.0, 4.0])
