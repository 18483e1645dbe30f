"""Whole training steps on CUDA against the CPU backend: the same models from the same initial
weights and data, stepped on both devices, must agree (losses, gradients, updated weights)
within the tolerance of the arithmetic (fp32: reordered sums; AMP: fp16 GEMMs on both sides,
accumulated in fp32). Covers what the per-op files cannot: the autograd engine, optimizers,
autocast and GradScaler driving CUDA kernels together, and state moved with .to("cuda").

Runs on the GPU when one is present (the `cuda` fixture); AMPC_TEST_CUDA_AS_CPU=1 runs it here
on the CPU twice, a dry run of the test code."""
import math

import numpy as np
import pytest

import ampc
import ampc.nn as nn
import ampc.nn.functional as F
from ampc.models import GPT, MLP, GPTConfig, SmallCNN, resnet18
from helpers import host


def clone_to(model_fn, device):
    """The same initial weights on `device`: built on the CPU from one seed, then moved."""
    ampc.manual_seed(1234)
    return model_fn().to(device)


MODELS = {
    "mlp": (lambda: MLP(64, [128, 128], 10), lambda dev: (ampc.randn(32, 64).to(dev),
                                                     ampc.randint(0, 10, (32,)).to(dev))),
    "cnn": (lambda: SmallCNN(channels=(8, 16)), lambda dev: (ampc.randn(8, 1, 28, 28).to(dev),
                                                             ampc.randint(0, 10, (8,)).to(dev))),
    "gpt": (lambda: GPT(GPTConfig(vocab_size=96, block_size=32, n_layer=2, n_head=4, n_embd=64)),
            lambda dev: (ampc.randint(0, 96, (4, 32)).to(dev), ampc.randint(0, 96, (4 * 32,)).to(dev))),
    # batch 4 at 64x64: layer4's BatchNorm sees 16 values per channel (at 2 values it amplifies
    # rounding differences ~100x and the comparison measures conditioning, not the kernels)
    "resnet18": (lambda: resnet18(num_classes=10), lambda dev: (ampc.randn(4, 3, 64, 64).to(dev),
                                                                ampc.randint(0, 10, (4,)).to(dev))),
}


def loss_of(name, model, x, y):
    out = model(x)
    if name == "gpt":
        out = out[0] if isinstance(out, tuple) else out
        out = out.flatten(0, 1)
    return F.cross_entropy(out.float(), y)


def run_steps(name, device, steps, amp, opt_name):
    build, data = MODELS[name]
    model = clone_to(build, device)
    ampc.manual_seed(99)
    x, y = data(device)
    if opt_name == "sgd":
        opt = ampc.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    else:
        opt = ampc.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = ampc.amp.GradScaler(device, enabled=amp, init_scale=2.0 ** 12)
    losses, grads = [], None
    for step in range(steps):
        opt.zero_grad(set_to_none=True)
        with ampc.autocast(device, dtype=ampc.float16, enabled=amp):
            loss = loss_of(name, model, x, y)
        scaler.scale(loss).backward()
        if step == 0:
            # the first step's grads come from identical weights on both devices: they measure the
            # kernels. Later steps start from weights that already differ by rounding, and these
            # small batches are memorised within a few steps (grads -> 0), so their relative
            # differences measure conditioning instead.
            grads = {k: host(p.grad) for k, p in model.named_parameters() if p.grad is not None}
        scaler.step(opt)
        scaler.update()
        losses.append(float(loss.item()))
    weights = {k: host(v) for k, v in model.state_dict().items() if v.dtype.is_floating_point}
    return losses, grads, weights, (scaler.get_scale() if amp else None)


def assert_close_dicts(a, b, rtol, atol, what):
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_allclose(a[k], b[k], rtol=rtol, atol=atol, err_msg=f"{what} {k}")


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("opt_name", ["sgd", "adamw"])
def test_fp32_steps_match_cpu(cuda, name, opt_name):
    # model.train(): BatchNorm uses batch statistics on both devices; dropout is 0 in these models
    cpu = run_steps(name, "cpu", 3, False, opt_name)
    gpu = run_steps(name, cuda, 3, False, opt_name)
    np.testing.assert_allclose(gpu[0], cpu[0], rtol=1e-3, atol=1e-5)
    assert_close_dicts(gpu[1], cpu[1], rtol=1e-3, atol=1e-5, what="grad")
    # after 3 steps the weights carry the later steps' conditioning-amplified differences (see
    # run_steps), scaled by the learning rate: a wrong kernel shows up in the first step's grads.
    # Adam moves a weight by ~lr whatever its grad's size, so where a grad is rounding noise the
    # two devices can step in opposite directions: its bound is 2 * lr * steps.
    assert_close_dicts(gpu[2], cpu[2], rtol=1e-2, atol=5e-4 if opt_name == "sgd" else 2 * 1e-3 * 3, what="weight")


@pytest.mark.parametrize("name", ["mlp", "cnn", "gpt"])
def test_amp_fp16_steps_match_cpu(cuda, name):
    """fp16 autocast + GradScaler: the same skipped steps and scale on both devices, losses close."""
    cpu = run_steps(name, "cpu", 4, True, "sgd")
    gpu = run_steps(name, cuda, 4, True, "sgd")
    np.testing.assert_allclose(gpu[0], cpu[0], rtol=2e-2, atol=2e-3)
    assert gpu[3] == cpu[3]
    # fp16 rounding can flip a ReLU or max-pool choice for a few elements: weights stay close
    assert_close_dicts(gpu[2], cpu[2], rtol=3e-2, atol=1e-2, what="weight")


def test_loss_falls_on_cuda_with_amp(cuda):
    losses = run_steps("mlp", cuda, 25, True, "adamw")[0]
    assert all(math.isfinite(v) for v in losses)
    assert losses[-1] < 0.5 * losses[0]


def test_overflow_skips_the_same_step_on_both_devices(cuda):
    """A gradient forced to inf at step 2: found_inf, the skipped step and the backoff agree."""
    def run(device):
        ampc.manual_seed(5)
        lin = nn.Linear(16, 4).to(device)
        opt = ampc.optim.SGD(lin.parameters(), lr=0.1)
        scaler = ampc.amp.GradScaler(device, init_scale=2.0 ** 10, growth_interval=2)
        x = ampc.randn(8, 16).to(device)
        scales, weights = [], []
        for step in range(5):
            opt.zero_grad()
            with ampc.autocast(device, dtype=ampc.float16):
                loss = lin(x).float().pow(2).mean()
            if step == 2:
                loss = loss * float("inf")
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            scales.append(scaler.get_scale())
            weights.append(host(lin.weight))
        return scales, weights

    cs, cw = run("cpu")
    gs, gw = run(cuda)
    assert gs == cs
    np.testing.assert_array_equal(gw[2], gw[1])  # the skipped step left the weights alone
    for a, b in zip(gw, cw):
        np.testing.assert_allclose(a, b, rtol=1e-2, atol=1e-3)


def test_state_dict_round_trip_between_devices(cuda, tmp_path):
    ampc.manual_seed(0)
    model = SmallCNN(channels=(4, 8)).to(cuda)
    opt = ampc.optim.Adam(model.parameters(), lr=1e-3)
    x, y = ampc.randn(4, 1, 28, 28).to(cuda), ampc.randint(0, 10, (4,)).to(cuda)
    F.cross_entropy(model(x), y).backward()
    opt.step()
    path = tmp_path / "ckpt.ampc"
    ampc.save({"model": model.state_dict(), "opt": opt.state_dict()}, str(path))
    back = ampc.load(str(path), map_location="cpu")
    for k, v in model.state_dict().items():
        assert back["model"][k].device.type == "cpu"
        np.testing.assert_array_equal(host(back["model"][k]), host(v))
    fresh = SmallCNN(channels=(4, 8)).to(cuda)
    fresh.load_state_dict(back["model"])
    for k, v in fresh.state_dict().items():
        assert v.device.type == ampc.device(cuda).type
        np.testing.assert_array_equal(host(v), host(model.state_dict()[k]))
