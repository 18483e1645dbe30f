"""CUDA against the CPU backend for the kernels of csrc/cuda/cuda_nn_norm.cu: layer norm, group
norm and batch norm (statistics, running-stat updates, apply, backward), forward and backward, in
every floating dtype, with fp16/bf16 activations and fp32 parameters (the autocast case), through
the functional API and the modules moved with .to("cuda").

Runs only with a GPU (fixture `cuda`); AMPC_TEST_CUDA_AS_CPU=1 runs the "cuda" side on the CPU
to prove the test logic."""
import numpy as np
import pytest

import ampc
import ampc.nn.functional as F
from helpers import FLOATS, check_runs, close, make, run_on_cpu_and_cuda

# elementwise tolerance relative to |want| + mean |want|: the GPU computes in fp32, the CPU in double
TOL = {ampc.float64: 1e-9, ampc.float32: 3e-5, ampc.float16: 2e-3, ampc.bfloat16: 1.6e-2}
# gradients of norms subtract nearly equal terms: a few more roundings
GTOL = {k: 4 * v for k, v in TOL.items()}


@pytest.fixture
def rng():
    return np.random.default_rng(20240612)


# ---------------------------------------------------------------- layer norm

@pytest.mark.parametrize("d", [1, 7, 64, 768, 1000, 4096])
@pytest.mark.parametrize("m", [1, 3, 257])
@pytest.mark.parametrize("dtype", FLOATS)
def test_layer_norm(cuda, rng, m, d, dtype):
    x, w, b = rng.standard_normal((m, d)) * 2 + 0.5, rng.standard_normal(d) * 0.5 + 1, rng.standard_normal(d)
    runs = run_on_cpu_and_cuda(lambda x, w, b: F.layer_norm(x, (d,), w, b, eps=1e-5), [x, w, b], [dtype] * 3, cuda,
                               grad=(0, 1, 2), rng=rng)
    check_runs(runs, TOL[dtype], f"layer_norm ({m}, {d})", gtol=GTOL[dtype])


@pytest.mark.parametrize("affine", ["none", "weight", "bias"])
@pytest.mark.parametrize("d", [7, 768])
def test_layer_norm_partial_affine(cuda, rng, affine, d):
    x = rng.standard_normal((5, 3, d))
    w = rng.standard_normal(d) if affine == "weight" else None
    b = rng.standard_normal(d) if affine == "bias" else None
    grad = (0, 1) if w is not None else (0, 2) if b is not None else (0,)
    runs = run_on_cpu_and_cuda(lambda x, w, b: F.layer_norm(x, (d,), w, b), [x, w, b], [ampc.float32] * 3, cuda,
                               grad=grad)
    check_runs(runs, TOL[ampc.float32], f"layer_norm {affine}", gtol=GTOL[ampc.float32])


@pytest.mark.parametrize("dtype", [ampc.float16, ampc.bfloat16])
@pytest.mark.parametrize("d", [64, 1000, 4096])
def test_layer_norm_half_input_fp32_params(cuda, rng, dtype, d):
    # fp16/bf16 activations with fp32 weight and bias: each tensor read and written in its own dtype
    x, w, b = rng.standard_normal((6, d)) * 3 + 10, rng.standard_normal(d), rng.standard_normal(d)
    runs = run_on_cpu_and_cuda(lambda x, w, b: F.layer_norm(x, (d,), w, b), [x, w, b],
                               [dtype, ampc.float32, ampc.float32], cuda, grad=(0, 1, 2))
    check_runs(runs, TOL[dtype], "layer_norm mixed", gtol=GTOL[dtype])
    (_, _), (og, gg) = runs
    assert og[0].dtype == dtype and gg[0].dtype == dtype and gg[1].dtype == ampc.float32


def test_layer_norm_mixed_param_dtypes(cuda, rng):
    # weight fp32 and bias fp16 around fp16 input: the general (run-time dtype) path
    x, w, b = rng.standard_normal((4, 96)), rng.standard_normal(96), rng.standard_normal(96)
    runs = run_on_cpu_and_cuda(lambda x, w, b: F.layer_norm(x, (96,), w, b), [x, w, b],
                               [ampc.float16, ampc.float32, ampc.float16], cuda, grad=(0, 1, 2))
    check_runs(runs, TOL[ampc.float16], "layer_norm weight fp32 bias fp16", gtol=GTOL[ampc.float16])


@pytest.mark.parametrize("d", [8192, 8200, 20000])
@pytest.mark.parametrize("dtype", [ampc.float32, ampc.bfloat16])
def test_layer_norm_long_rows(cuda, rng, d, dtype):
    # 8192: the largest register path; longer rows take the general path
    x, w, b = rng.standard_normal((9, d)), rng.standard_normal(d), rng.standard_normal(d)
    runs = run_on_cpu_and_cuda(lambda x, w, b: F.layer_norm(x, (d,), w, b), [x, w, b], [dtype] * 3, cuda,
                               grad=(0, 1, 2))
    check_runs(runs, TOL[dtype], f"layer_norm d={d}", gtol=GTOL[dtype])


def test_layer_norm_strided_misaligned_and_large(cuda, rng):
    x = rng.standard_normal((6, 64, 10))
    runs = run_on_cpu_and_cuda(lambda x: F.layer_norm(x.transpose(1, 2), (64,)), [x], [ampc.float16], cuda, grad=(0,))
    check_runs(runs, TOL[ampc.float16], "layer_norm transposed", gtol=GTOL[ampc.float16])
    # a contiguous view one element into its storage: no 16-byte vectors
    flat = rng.standard_normal(4 * 768 + 1)
    runs = run_on_cpu_and_cuda(lambda f: F.layer_norm(f[1:].view(4, 768), (768,)), [flat], [ampc.float16], cuda,
                               grad=(0,))
    check_runs(runs, TOL[ampc.float16], "layer_norm misaligned", gtol=GTOL[ampc.float16])
    # normalized over two dims, > 2^20 elements, many rows (the column sums use several chunks)
    x, w = rng.standard_normal((2048, 8, 64)), rng.standard_normal((8, 64))
    runs = run_on_cpu_and_cuda(lambda x, w: F.layer_norm(x, (8, 64), w), [x, w], [ampc.bfloat16] * 2, cuda, grad=(0, 1))
    check_runs(runs, TOL[ampc.bfloat16], "layer_norm large", gtol=GTOL[ampc.bfloat16])


def test_layer_norm_empty_and_0dim_rows(cuda, rng):
    runs = run_on_cpu_and_cuda(lambda x, w, b: F.layer_norm(x, (16,), w, b),
                               [np.zeros((0, 16)), np.ones(16), np.zeros(16)], [ampc.float32] * 3, cuda, grad=(0, 1, 2))
    (oc, gc), (og, gg) = runs
    assert tuple(og[0].shape) == (0, 16)
    close(gg[1], gc[1], 0, "empty weight grad")
    runs = run_on_cpu_and_cuda(lambda x: F.layer_norm(x, (1,)), [rng.standard_normal((3, 1))], [ampc.float32], cuda,
                               grad=(0,))
    check_runs(runs, TOL[ampc.float32], "layer_norm d=1", gtol=GTOL[ampc.float32])


def test_layer_norm_autocast(cuda, rng):
    # layer_norm runs in fp32 under autocast (PyTorch's policy), whatever the input dtype
    x, w = rng.standard_normal((8, 256)), rng.standard_normal(256)
    outs = []
    for dev in ("cpu", cuda):
        xt, wt = make(x, ampc.float16, dev, True), make(w, ampc.float32, dev, True)
        with ampc.autocast(device_type="cuda" if dev != "cpu" else "cpu", dtype=ampc.float16):
            y = F.layer_norm(xt, (256,), wt)
        y.sum().backward()
        outs.append((y, xt.grad, wt.grad))
    for a, b in zip(outs[1], outs[0]):
        assert a.dtype == b.dtype
        close(a, b, GTOL[ampc.float16], "layer_norm autocast")


def test_layer_norm_module_to_cuda(cuda, rng):
    ampc.manual_seed(0)
    ln = ampc.nn.LayerNorm(384)
    with ampc.no_grad():
        ln.weight.copy_(make(rng.standard_normal(384), ampc.float32, "cpu"))
        ln.bias.copy_(make(rng.standard_normal(384), ampc.float32, "cpu"))
    x = rng.standard_normal((4, 7, 384))
    yc = ln(make(x, ampc.float32, "cpu", True))
    yc.sum().backward()
    wc, bc = ln.weight.grad.clone(), ln.bias.grad.clone()
    lng = ln.to(cuda)
    lng.zero_grad()
    yg = lng(make(x, ampc.float32, cuda, True))
    yg.sum().backward()
    close(yg, yc, TOL[ampc.float32], "LayerNorm module")
    close(lng.weight.grad, wc, GTOL[ampc.float32], "LayerNorm weight grad")
    close(lng.bias.grad, bc, GTOL[ampc.float32], "LayerNorm bias grad")


# ---------------------------------------------------------------- group norm

@pytest.mark.parametrize("shape,groups", [((3, 6, 5), 3), ((2, 4, 3, 3), 2), ((2, 4), 4), ((2, 6, 2, 2), 1),
                                          ((1, 32, 16, 16), 8), ((4, 12, 7), 12)])
@pytest.mark.parametrize("dtype", FLOATS)
def test_group_norm(cuda, rng, shape, groups, dtype):
    x, w, b = rng.standard_normal(shape) + 0.3, rng.standard_normal(shape[1]), rng.standard_normal(shape[1])
    runs = run_on_cpu_and_cuda(lambda x, w, b: F.group_norm(x, groups, w, b), [x, w, b], [dtype] * 3, cuda,
                               grad=(0, 1, 2), rng=rng)
    check_runs(runs, TOL[dtype], f"group_norm {shape} G={groups}", gtol=GTOL[dtype])


def test_group_norm_variants(cuda, rng):
    x = rng.standard_normal((3, 8, 5, 4))
    runs = run_on_cpu_and_cuda(lambda x: F.group_norm(x, 4), [x], [ampc.float32], cuda, grad=(0,))
    check_runs(runs, TOL[ampc.float32], "group_norm no affine", gtol=GTOL[ampc.float32])
    w, b = rng.standard_normal(8), rng.standard_normal(8)
    runs = run_on_cpu_and_cuda(lambda x, w, b: F.group_norm(x, 2, w, b), [x, w, b],
                               [ampc.float16, ampc.float32, ampc.float32], cuda, grad=(0, 1, 2))
    check_runs(runs, TOL[ampc.float16], "group_norm fp16 input fp32 params", gtol=GTOL[ampc.float16])
    runs = run_on_cpu_and_cuda(lambda x, w, b: F.group_norm(x.transpose(2, 3), 2, w, b), [x, w, b], [ampc.float32] * 3,
                               cuda, grad=(0, 1, 2))
    check_runs(runs, TOL[ampc.float32], "group_norm transposed", gtol=GTOL[ampc.float32])
    runs = run_on_cpu_and_cuda(lambda x, w, b: F.group_norm(x, 2, w, b), [np.zeros((0, 8, 3)), w, b],
                               [ampc.float32] * 3, cuda, grad=(0, 1, 2))
    close(runs[1][1][1], runs[0][1][1], 0, "group_norm empty batch weight grad")
    x = rng.standard_normal((2, 64, 96, 96))  # > 2^20 elements
    runs = run_on_cpu_and_cuda(lambda x: F.group_norm(x, 32), [x], [ampc.bfloat16], cuda, grad=(0,))
    check_runs(runs, TOL[ampc.bfloat16], "group_norm large", gtol=GTOL[ampc.bfloat16])


def test_group_norm_module_to_cuda(cuda, rng):
    gn = ampc.nn.GroupNorm(4, 12)
    x = rng.standard_normal((2, 12, 6, 6))
    yc = gn(make(x, ampc.float32, "cpu"))
    yg = gn.to(cuda)(make(x, ampc.float32, cuda))
    close(yg, yc, TOL[ampc.float32], "GroupNorm module")


# ---------------------------------------------------------------- batch norm

@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("shape", [(4, 3), (4, 3, 5), (3, 3, 4, 5), (16, 3, 33, 31)])
@pytest.mark.parametrize("dtype", FLOATS)
def test_batch_norm(cuda, rng, training, shape, dtype):
    c = shape[1]
    x, w, b = rng.standard_normal(shape) * 2 + 1, rng.standard_normal(c), rng.standard_normal(c)
    rm, rv = rng.standard_normal(c), rng.random(c) + 0.5
    running = {}

    def fn(x, w, b):
        dev = x.device.type
        rmt, rvt = make(rm, dtype, x.device), make(rv, dtype, x.device)
        running[dev] = (rmt, rvt)
        return F.batch_norm(x, rmt, rvt, w, b, training=training, momentum=0.3, eps=1e-3)

    runs = run_on_cpu_and_cuda(fn, [x, w, b], [dtype] * 3, cuda, grad=(0, 1, 2), rng=rng)
    check_runs(runs, TOL[dtype], f"batch_norm {shape} training={training}", gtol=GTOL[dtype])
    devs = list(running)
    for k in range(2):  # running mean and var, updated in place (unbiased variance)
        close(running[devs[-1]][k], running[devs[0]][k], TOL[dtype], f"running stat {k}")


@pytest.mark.parametrize("dtype", [ampc.float16, ampc.bfloat16])
def test_batch_norm_half_input_fp32_params_and_stats(cuda, rng, dtype):
    # what autocast produces after a conv: fp16 activations, fp32 weight, bias and running stats
    x, w, b = rng.standard_normal((8, 4, 6, 6)), rng.standard_normal(4), rng.standard_normal(4)
    running = []

    def fn(x, w, b):
        rmt, rvt = ampc.zeros(4, device=x.device), ampc.ones(4, device=x.device)
        running.append((rmt, rvt))
        return F.batch_norm(x, rmt, rvt, w, b, training=True)

    runs = run_on_cpu_and_cuda(fn, [x, w, b], [dtype, ampc.float32, ampc.float32], cuda, grad=(0, 1, 2))
    check_runs(runs, TOL[dtype], "batch_norm mixed", gtol=GTOL[dtype])
    (_, _), (og, gg) = runs
    assert og[0].dtype == dtype and gg[0].dtype == dtype and gg[1].dtype == ampc.float32
    assert running[1][0].dtype == ampc.float32
    for k in range(2):
        close(running[1][k], running[0][k], 1e-5, f"running stat {k}")


def test_batch_norm_numerics_large_mean_and_many_chunks(cuda, rng):
    # a mean far from 0 and N * L large enough for several chunks per channel
    x = rng.standard_normal((16, 4, 128, 128)) + 100.0
    running = []

    def fn(x):
        rmt, rvt = ampc.zeros(4, device=x.device), ampc.ones(4, device=x.device)
        running.append((rmt, rvt))
        return F.batch_norm(x, rmt, rvt, None, None, training=True)

    runs = run_on_cpu_and_cuda(fn, [x], [ampc.float32], cuda, grad=(0,))
    check_runs(runs, 5e-4, "batch_norm large mean", gtol=5e-3)
    for k in range(2):
        close(running[1][k], running[0][k], 1e-5, f"running stat {k}")


def test_batch_norm_no_running_stats_no_affine_and_1d(cuda, rng):
    x = rng.standard_normal((64, 10))  # BatchNorm1d on (N, C): L == 1
    runs = run_on_cpu_and_cuda(lambda x: F.batch_norm(x, None, None, training=True), [x], [ampc.float32], cuda,
                               grad=(0,))
    check_runs(runs, TOL[ampc.float32], "batch_norm (N, C)", gtol=GTOL[ampc.float32])
    x = rng.standard_normal((3, 5, 7))
    runs = run_on_cpu_and_cuda(lambda x: F.batch_norm(x.transpose(0, 2).transpose(1, 2)[:, :, ::2], None, None, training=True), [x],
                [ampc.float16], cuda, grad=(0,))
    check_runs(runs, TOL[ampc.float16], "batch_norm strided", gtol=GTOL[ampc.float16])


def test_batch_norm_eval_grads(cuda, rng):
    # eval mode: batch stats are the running ones (a variance input); grads of x, weight and bias
    x, w, b = rng.standard_normal((5, 3, 4)), rng.standard_normal(3), rng.standard_normal(3)
    rm, rv = rng.standard_normal(3), rng.random(3) + 0.5

    def fn(x, w, b):
        return F.batch_norm(x, make(rm, ampc.float32, x.device), make(rv, ampc.float32, x.device), w, b,
                            training=False)

    runs = run_on_cpu_and_cuda(fn, [x, w, b], [ampc.float16, ampc.float32, ampc.float32], cuda, grad=(0, 1, 2))
    check_runs(runs, TOL[ampc.float16], "batch_norm eval", gtol=GTOL[ampc.float16])


def test_norm_weight_grads_without_input_grad(cuda, rng):
    x, w, b = rng.standard_normal((4, 3, 5)), rng.standard_normal(3), rng.standard_normal(3)
    for fn in (lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
               lambda x, w, b: F.layer_norm(x, (5,), None, None) * w[:, None] + b[:, None],
               lambda x, w, b: F.group_norm(x, 3, w, b)):
        runs = run_on_cpu_and_cuda(fn, [x, w, b], [ampc.float32] * 3, cuda, grad=(1, 2))
        check_runs(runs, TOL[ampc.float32], "weight grads only", gtol=GTOL[ampc.float32])


@pytest.mark.parametrize("momentum", [0.1, None])
def test_batch_norm2d_module_training_steps(cuda, rng, momentum):
    # three training steps, then eval: running stats (cumulative average for momentum=None) and counts
    xs = [rng.standard_normal((4, 3, 5, 5)) * (k + 1) + k for k in range(3)]
    # a random upstream: y.pow(2).sum() would give grads that are zero in exact arithmetic (noise)
    up = rng.standard_normal((4, 3, 5, 5))
    res = []
    for dev in ("cpu", cuda):
        bn = ampc.nn.BatchNorm2d(3, momentum=momentum).to(dev)
        outs = []
        for x in xs:
            y = bn(make(x, ampc.float32, dev, True))
            (y.pow(2) * make(up, ampc.float32, dev)).sum().backward()
            outs.append(y)
        bn.eval()
        outs.append(bn(make(xs[0], ampc.float32, dev)))
        res.append((outs, bn))
    (oc, bc), (og, bg) = res
    for a, b in zip(og, oc):
        close(a, b, TOL[ampc.float32], "BatchNorm2d outputs")
    close(bg.running_mean, bc.running_mean, TOL[ampc.float32], "running_mean")
    close(bg.running_var, bc.running_var, TOL[ampc.float32], "running_var")
    assert int(bg.num_batches_tracked.cpu().item()) == 3
    close(bg.weight.grad, bc.weight.grad, GTOL[ampc.float32], "weight grad")
    close(bg.bias.grad, bc.bias.grad, GTOL[ampc.float32], "bias grad")


def test_batch_norm_autocast_after_conv(cuda, rng):
    # conv under autocast gives fp16; batch_norm keeps it fp16 with fp32 params and stats
    x = rng.standard_normal((4, 3, 10, 10))
    up = rng.standard_normal((4, 6, 8, 8))  # y.sum() would give a weight grad that is zero in exact arithmetic
    res = []
    for dev in ("cpu", cuda):
        ampc.manual_seed(1)
        conv, bn = ampc.nn.Conv2d(3, 6, 3).to(dev), ampc.nn.BatchNorm2d(6).to(dev)
        with ampc.autocast(device_type="cuda" if dev != "cpu" else "cpu", dtype=ampc.float16):
            y = bn(conv(make(x, ampc.float32, dev)))
        (y.float() * make(up, ampc.float32, dev)).sum().backward()
        res.append((y, bn.running_mean, bn.running_var, bn.weight.grad, conv.weight.grad))
    assert res[1][0].dtype == res[0][0].dtype
    for k, (a, b) in enumerate(zip(res[1], res[0])):
        close(a, b, 5e-3 if k != 4 else 2e-2, f"autocast conv+bn {k}")
