"""The scaler's and the list ops' CUDA kernels (csrc/cuda/cuda_amp.cu) against the CPU backend:
unscale + inf/NaN check (bit-exact: one multiply by one float), the scale update and its
telemetry over long sequences (exact), the multi-tensor norm for every p and the multi-tensor
scale, clip_grad_norm_, and whole GradScaler training loops on CUDA against the same loop on the
CPU (same skipped steps, same scales), with no host read in step() + update().

Lists are long enough (2000+ tensors, ~100 MB) to cross the kernels' launch boundaries (one launch
serves ~1600 tensors). Runs on the GPU when one is present (`cuda` fixture);
AMPC_TEST_CUDA_AS_CPU=1 runs the "cuda" side on the CPU, a dry run of the test code."""
import math

import numpy as np
import pytest

import ampc
from ampc import _C
from ampc.amp import GradScaler
from helpers import assert_step_and_update_make_no_host_reads, dev_copy, host

FLOAT_DTYPES = ["float32", "float16", "bfloat16"]
SIZES = [0, 1, 1000, (1 << 20) + 7]


def dt(name):
    return getattr(ampc, name)


def same_values(a, b):
    """Bit-exact equality, except that NaN payloads may differ between devices."""
    x, y = host(a), host(b)
    assert x.shape == y.shape
    assert np.array_equal(np.isnan(x), np.isnan(y))
    ok = ~np.isnan(x)
    assert np.array_equal(x[ok], y[ok])
    # signs of zeros and infinities are part of "the same value"
    assert np.array_equal(np.signbit(x[ok]), np.signbit(y[ok]))


def rounded_randn(rng, shape, dtype, scale=1.0):
    """A float32 array rounded to `dtype` (so CPU and GPU start from the same stored values) and
    the ampc CPU tensor holding it."""
    x = (rng.standard_normal(shape) * scale).astype(np.float32)
    t = ampc.tensor(x).to(dt(dtype))
    return t


def pair(t, cuda):
    """Independent copies of t on the CPU and on `cuda`."""
    return t.clone(), dev_copy(t, cuda)


def scalar(value, device, dtype=ampc.float32):
    return ampc.full((), value, dtype=dtype, device=device)


# ---------------------------------------------------------------------------------- unscale + check

@pytest.mark.parametrize("dtype", FLOAT_DTYPES + ["float64"])
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("inv", [1.0 / 65536.0, 1.0 / 3000.0, 1.0])
def test_unscale_matches_cpu_bit_exact(cuda, dtype, size, inv):
    rng = np.random.default_rng(size + 1)
    g_cpu, g_gpu = pair(rounded_randn(rng, (size,), dtype, scale=1000.0), cuda)
    out = []
    for g, dev in ((g_cpu, "cpu"), (g_gpu, cuda)):
        found = scalar(0.0, dev)
        _C._amp_foreach_non_finite_check_and_unscale_([g], found, scalar(inv, dev))
        out.append(found)
    same_values(g_cpu, g_gpu)
    assert out[0].item() == out[1].item() == 0.0


def _long_list(rng, n, dtypes, max_size=5000, big_every=0):
    """n tensors of random sizes (some empty, some 0-dim) cycling through dtypes."""
    ts = []
    for i in range(n):
        r = rng.integers(0, 10)
        shape = () if r == 0 else (0,) if r == 1 else (int(rng.integers(1, max_size)),)
        if big_every and i % big_every == big_every - 1:
            shape = (int(rng.integers(40000, 70000)),)  # several chunks each
        ts.append(rounded_randn(rng, shape, dtypes[i % len(dtypes)], scale=100.0))
    return ts


@pytest.mark.parametrize("dtypes", [["float32"], ["float16"], ["bfloat16"], FLOAT_DTYPES + ["float64"]])
def test_unscale_long_list_crosses_launches(cuda, dtypes):
    rng = np.random.default_rng(3)
    ts = _long_list(rng, 2500, dtypes, big_every=50)
    cpu = [t.clone() for t in ts]
    gpu = [dev_copy(t, cuda) for t in ts]
    for lst, dev in ((cpu, "cpu"), (gpu, cuda)):
        found = scalar(0.0, dev)
        _C._amp_foreach_non_finite_check_and_unscale_(lst, found, scalar(1.0 / 1536.0, dev))
        assert found.item() == 0.0
    for a, b in zip(cpu, gpu):
        same_values(a, b)


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan])
@pytest.mark.parametrize("where", ["first", "middle", "last", "big-last-element"])
def test_unscale_finds_a_single_non_finite_value_anywhere(cuda, bad, where):
    rng = np.random.default_rng(4)
    ts = _long_list(rng, 2000, FLOAT_DTYPES, big_every=100)
    nonempty = [i for i, t in enumerate(ts) if t.numel() > 0]
    if where == "big-last-element":
        i = max(nonempty, key=lambda k: ts[k].numel())
        k = ts[i].numel() - 1
    else:
        i = {"first": nonempty[0], "middle": nonempty[len(nonempty) // 2], "last": nonempty[-1]}[where]
        k = int(rng.integers(0, ts[i].numel()))
    ts[i].view(-1)[k] = bad
    cpu = [t.clone() for t in ts]
    gpu = [dev_copy(t, cuda) for t in ts]
    for lst, dev in ((cpu, "cpu"), (gpu, cuda)):
        found = scalar(0.0, dev)
        _C._amp_foreach_non_finite_check_and_unscale_(lst, found, scalar(0.125, dev))
        assert found.item() == 1.0, (dev, where)
    for a, b in zip(cpu, gpu):
        same_values(a, b)


def test_unscale_keeps_a_set_found_inf_and_handles_strided_grads(cuda):
    rng = np.random.default_rng(5)
    base = rounded_randn(rng, (64, 48), "float32", scale=10.0)
    views = {
        "transposed": lambda t: t.t(),           # dense, permuted: the flat fast path
        "sliced": lambda t: t[:, 3:20],          # not dense: the strided path
        "strided-rows": lambda t: t[::2],
    }
    for name, view in views.items():
        for dtype in FLOAT_DTYPES:
            b_cpu, b_gpu = pair(base.to(dt(dtype)), cuda)
            g_cpu, g_gpu = view(b_cpu), view(b_gpu)
            for g, dev in ((g_cpu, "cpu"), (g_gpu, cuda)):
                found = scalar(1.0, dev)  # already set by an earlier group: never cleared
                _C._amp_foreach_non_finite_check_and_unscale_([g], found, scalar(1.0 / 3.0, dev))
                assert found.item() == 1.0
            same_values(b_cpu, b_gpu)  # the whole base: bytes outside the view untouched
            same_values(g_cpu, g_gpu)


# ---------------------------------------------------------------------------------- scale update

def _update_sequence(device, found_seq, init_scale, kw):
    scale = scalar(init_scale, device)
    tracker = ampc.zeros((), dtype=ampc.int32, device=device)
    stats = ampc.zeros(4, dtype=ampc.int64, device=device)
    history = ampc.zeros(7, dtype=ampc.float32, device=device)
    trace = []
    for f in found_seq:
        _C._amp_update_scale_(scale, tracker, scalar(f, device), kw["growth"], kw["backoff"], kw["interval"],
                              kw["min"], kw["max"], stats=stats, history=history)
        trace.append((scale.item(), tracker.item()))
    return trace, stats.tolist(), history.tolist()


@pytest.mark.parametrize("kw,init", [
    ({"growth": 2.0, "backoff": 0.5, "interval": 3, "min": 0.0, "max": math.inf}, 2.0 ** 16),
    ({"growth": 2.0, "backoff": 0.5, "interval": 1, "min": 0.0, "max": math.inf}, 2.0 ** 125),  # grows to the fp32 top
    ({"growth": 3.0, "backoff": 0.25, "interval": 2, "min": 1.0, "max": 4096.0}, 100.0),        # both bounds hit
    ({"growth": 1.5, "backoff": 0.3, "interval": 4, "min": 0.0, "max": math.inf}, 1e-38),      # towards subnormals
])
def test_update_scale_sequences_match_cpu(cuda, kw, init):
    rng = np.random.default_rng(6)
    found_seq = []
    for _ in range(60):  # runs of clean steps and of overflows, NaN-free found_inf values 0/1/2
        found_seq += [0.0] * int(rng.integers(0, 6)) + [float(rng.integers(1, 3))] * int(rng.integers(0, 3))
    cpu = _update_sequence("cpu", found_seq, init, kw)
    gpu = _update_sequence(cuda, found_seq, init, kw)
    assert cpu == gpu


# ---------------------------------------------------------------------------------- grad norm

NORM_PS = [2.0, 1.0, math.inf, -math.inf, 0.0, 3.5, 0.5, -2.0]


def _norm_both(cuda, ts, p):
    a = _C._multi_tensor_norm(ts, p)
    b = _C._multi_tensor_norm([t.to(cuda) for t in ts], p)
    assert b.device.type == ("cuda" if cuda != "cpu" else "cpu")
    assert a.dtype == b.dtype and a.shape == b.shape == ()
    return a.item(), b.item(), a.dtype


def _close_norm(a, b, dtype):
    if math.isnan(a) or math.isinf(a):
        assert (math.isnan(a) and math.isnan(b)) or a == b
        return
    rtol = 1e-12 if dtype == ampc.float64 else 2e-7  # double sums in another order, one rounding
    assert b == pytest.approx(a, rel=rtol, abs=1e-300)


@pytest.mark.parametrize("p", NORM_PS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES + ["float64"])
@pytest.mark.parametrize("size", [1, 1000, (1 << 20) + 7])
def test_norm_single_tensor(cuda, p, dtype, size):
    rng = np.random.default_rng(size)
    t = rounded_randn(rng, (size,), dtype, scale=3.0)
    a, b, odt = _norm_both(cuda, [t], p)
    _close_norm(a, b, odt)


@pytest.mark.parametrize("p", NORM_PS)
@pytest.mark.parametrize("with_f64", [False, True])
def test_norm_long_mixed_list(cuda, p, with_f64):
    rng = np.random.default_rng(7)
    dtypes = FLOAT_DTYPES + (["float64"] if with_f64 else [])
    ts = _long_list(rng, 2200, dtypes, big_every=200)
    a, b, odt = _norm_both(cuda, ts, p)
    assert odt == (ampc.float64 if with_f64 else ampc.float32)
    _close_norm(a, b, odt)


def test_norm_edge_cases(cuda):
    rng = np.random.default_rng(8)
    empty = [ampc.zeros(0), ampc.zeros((3, 0))]
    for p in NORM_PS:
        a, b, odt = _norm_both(cuda, empty, p)
        assert a == b == 0.0
    zero_dim = [ampc.tensor(np.float32(-3.0)), ampc.tensor(np.float32(4.0))]
    for p in NORM_PS:
        a, b, odt = _norm_both(cuda, zero_dim, p)
        _close_norm(a, b, odt)
    # fp16 values whose norm overflows fp16 (and whose squares overflow fp32 partial sums in fp16)
    big = ampc.full((70000,), 60000.0, dtype=ampc.float16)
    a, b, odt = _norm_both(cuda, [big], 2.0)
    assert math.isfinite(b)
    _close_norm(a, b, odt)
    # inf and NaN
    for bad in (math.inf, math.nan):
        ts = [rounded_randn(rng, (5000,), "float32") for _ in range(3)]
        ts[1][4321] = bad
        for p in NORM_PS:
            a, b, odt = _norm_both(cuda, ts, p)
            _close_norm(a, b, odt)
    # strided input (the frontend makes it contiguous first)
    m = rounded_randn(rng, (300, 200), "float32")
    a, b, odt = _norm_both(cuda, [m.t(), m[:, 5:50]], 2.0)
    _close_norm(a, b, odt)


# ---------------------------------------------------------------------------------- multi-tensor scale

@pytest.mark.parametrize("scale_dtype", ["float32", "float64", "float16"])
def test_scale_matches_cpu_bit_exact(cuda, scale_dtype):
    rng = np.random.default_rng(9)
    ts = _long_list(rng, 2000, FLOAT_DTYPES + ["float64"], big_every=100)
    cpu = [t.clone() for t in ts]
    gpu = [dev_copy(t, cuda) for t in ts]
    base_cpu, base_gpu = pair(rounded_randn(rng, (80, 60), "float32"), cuda)       # scaled through a transposed view
    sliced_cpu, sliced_gpu = pair(rounded_randn(rng, (50, 40), "bfloat16"), cuda)  # through a strided slice
    cpu += [base_cpu.t(), sliced_cpu[::3, 2:30]]
    gpu += [base_gpu.t(), sliced_gpu[::3, 2:30]]
    value = 0.7310585786300049
    _C._multi_tensor_scale_(cpu, scalar(value, "cpu", dt(scale_dtype)))
    _C._multi_tensor_scale_(gpu, scalar(value, cuda, dt(scale_dtype)))
    for a, b in zip(cpu, gpu):
        same_values(a, b)
    same_values(base_cpu, base_gpu)
    same_values(sliced_cpu, sliced_gpu)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
def test_clip_grad_norm_on_cuda_matches_cpu(cuda, norm_type):
    shapes = [(64, 32), (32,), (10, 64), (10,), (3, 3, 5, 5)]
    results = []
    for dev in ("cpu", cuda):
        params = []
        for k, s in enumerate(shapes):
            r = np.random.default_rng(100 + k)
            p = ampc.tensor(r.standard_normal(s).astype(np.float32)).to(dev).requires_grad_()
            p.grad = ampc.tensor((r.standard_normal(s) * 5).astype(np.float32)).to(dev)
            params.append(p)
        total = ampc.nn.utils.clip_grad_norm_(params, max_norm=1.0, norm_type=norm_type)
        results.append((total.item(), [host(p.grad) for p in params]))
    (ta, ga), (tb, gb) = results
    assert tb == pytest.approx(ta, rel=1e-6)
    for x, y in zip(ga, gb):
        np.testing.assert_allclose(y, x, rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------------------------- GradScaler loops

def _mlp(device, half=False):
    """The same initial weights on every device: built on the CPU from one seed, then moved."""
    ampc.manual_seed(0)
    model = ampc.nn.Sequential(ampc.nn.Linear(32, 64), ampc.nn.ReLU(), ampc.nn.Linear(64, 16))
    model = model.to(device)
    return model.half() if half else model


def _scaler_loop(device, opt_name, steps, inject, master_fp16=False):
    """A GradScaler training loop; `inject` holds the steps whose grads get an inf. Returns the
    scale after every step, the telemetry, and the final parameters."""
    model = _mlp(device, half=master_fp16)
    kw = {"lr": 0.01}
    if master_fp16:
        kw["master_weights"] = True
    if opt_name == "SGD":
        kw["momentum"] = 0.9
    opt = getattr(ampc.optim, opt_name)(model.parameters(), **kw)
    # a modest scale: no natural fp16 overflow, so only the injected infs skip (on both devices)
    scaler = GradScaler(device, init_scale=2.0 ** 8, growth_interval=2)
    rng = np.random.default_rng(11)
    scales = []
    for i in range(steps):
        x = ampc.tensor(rng.standard_normal((8, 32)).astype(np.float32)).to(device)
        y = ampc.tensor(rng.standard_normal((8, 16)).astype(np.float32)).to(device)
        if master_fp16:
            x = x.half()
        opt.zero_grad()
        with ampc.autocast(device, dtype=ampc.float16, enabled=not master_fp16):
            loss = ampc.nn.functional.mse_loss(model(x).float(), y)
        scaler.scale(loss).backward()
        if i in inject:
            with ampc.no_grad():
                list(model.parameters())[i % 4].grad.view(-1)[0] = math.inf
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
    return scales, scaler.stats(), [host(p) for p in model.parameters()]


@pytest.mark.parametrize("opt_name", ["SGD", "Adam", "AdamW"])
@pytest.mark.parametrize("master_fp16", [False, True])
def test_grad_scaler_loop_on_cuda_matches_cpu(cuda, opt_name, master_fp16):
    inject = {0, 3, 4, 9}
    s_cpu, st_cpu, p_cpu = _scaler_loop("cpu", opt_name, 12, inject, master_fp16)
    s_gpu, st_gpu, p_gpu = _scaler_loop(cuda, opt_name, 12, inject, master_fp16)
    assert s_gpu == s_cpu  # the same skipped steps, the same scales
    assert st_gpu == st_cpu
    assert st_gpu["skipped_steps"] == len(inject)
    for a, b in zip(p_cpu, p_gpu):
        np.testing.assert_allclose(b, a, rtol=2e-2, atol=2e-3)  # fp16 GEMMs on both sides


@pytest.mark.parametrize("opt_name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta"])
@pytest.mark.parametrize("separate_unscale", [False, True])
def test_step_and_update_make_no_host_reads(device, opt_name, separate_unscale):
    model = _mlp(device)
    kw = {"lr": 0.01}
    if opt_name == "SGD":
        kw["momentum"] = 0.9
    opt = getattr(ampc.optim, opt_name)(model.parameters(), **kw)
    scaler = GradScaler(device, init_scale=2.0 ** 16, growth_interval=2)
    rng = np.random.default_rng(12)
    for i in range(4):
        x = ampc.tensor(rng.standard_normal((8, 32)).astype(np.float32)).to(device)
        opt.zero_grad()
        with ampc.autocast(device, dtype=ampc.float16):
            out = model(x).float()
            loss = (out * out).mean()
        scaler.scale(loss).backward()
        if i == 2:
            with ampc.no_grad():
                list(model.parameters())[2].grad.fill_(math.inf)
        assert_step_and_update_make_no_host_reads(scaler, opt, separate_unscale)
    assert scaler.get_scale() == 2.0 ** 16 * 2 * 0.5  # growth after steps 0-1, backoff at 2


def test_grad_scaler_defaults_to_cuda(cuda):
    if not ampc.cuda.is_available():
        pytest.skip("the default device is cuda; this dry run has none")
    scaler = GradScaler()
    assert scaler.is_enabled()
    out = scaler.scale(ampc.ones((), device="cuda"))
    assert out.device.type == "cuda" and out.item() == 2.0 ** 16
