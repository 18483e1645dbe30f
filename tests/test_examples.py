"""The article's training loops in examples/ run on the CPU at tiny sizes and train: the loss goes
down, and the AMP run (CPU autocast, bfloat16) ends within mixed-precision tolerance of the FP32
run from the same seed."""
import os
import subprocess
import sys

import numpy as np
import pytest

import ampc

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "examples")
sys.path.insert(0, EXAMPLES)

import amp_monitor  # noqa: E402
import amp_trainer  # noqa: E402
import basic_loop  # noqa: E402
import fp32_region  # noqa: E402
import loss_scaling  # noqa: E402
import quick_experiment  # noqa: E402
import resnet50_train_epoch  # noqa: E402
import transformer_clip  # noqa: E402
import warmup_lambdalr  # noqa: E402

CPU = ["--device", "cpu", "--quiet"]
TINY = CPU + ["--image-size", "14", "--cnn-channels", "8,16"]  # Fashion-MNIST pooled to 14x14, a narrow SmallCNN


def _falls(losses, frac=0.9):
    """The mean of the last third of the losses is below `frac` x the mean of the first third."""
    k = max(1, len(losses) // 3)
    return np.mean(losses[-k:]) < frac * np.mean(losses[:k])


def _close(a, b, rel=0.15, abs_=0.05):
    return abs(a - b) <= abs_ + rel * max(abs(a), abs(b))


def test_basic_loop_fp32_and_amp():
    r = basic_loop.main(TINY + ["--epochs", "3", "--limit", "256", "--batch-size", "32"])
    for mode in ("fp32", "amp"):
        assert _falls(r[mode]["losses"]), mode
    assert _close(r["fp32"]["final_loss"], r["amp"]["final_loss"]), (r["fp32"]["final_loss"], r["amp"]["final_loss"])


def test_resnet_train_epoch_times_and_trains():
    # one batch of 8 seen 3 times: the loss of a ResNet-18 must fall on it (ResNets are slow on a CPU)
    r = resnet50_train_epoch.main(TINY + ["--arch", "resnet18", "--epochs", "3", "--limit", "8", "--batch-size", "8",
                                          "--lr", "0.02"])
    for mode in ("fp32", "amp"):
        assert all(s > 0 for s in r[mode]["seconds"])
        assert r[mode]["losses"][-1] < 0.8 * r[mode]["losses"][0], (mode, r[mode]["losses"])
    # Same weights and batch: the first forward passes agree closely (bf16 vs fp32 arithmetic).
    # Three steps of a ResNet on 8 samples then diverge with the BLAS's rounding (OpenBLAS or
    # not), so the final losses only need to be of one size.
    assert _close(r["fp32"]["losses"][0], r["amp"]["losses"][0], rel=0.1, abs_=0.05)
    assert _close(r["fp32"]["losses"][-1], r["amp"]["losses"][-1], rel=0.6, abs_=0.1)


def test_resnet50_runs_one_step():
    r = resnet50_train_epoch.main(TINY + ["--epochs", "1", "--limit", "2", "--batch-size", "2", "--image-size", "7",
                                          "--modes", "amp"])
    assert list(r) == ["amp"] and np.isfinite(r["amp"]["losses"][0])


def test_transformer_unscale_and_clip():
    r = transformer_clip.main(CPU + ["--epochs", "3", "--limit", "128", "--batch-size", "16", "--n-embd", "32",
                                     "--n-layer", "1", "--block-size", "8", "--vocab", "16"])
    for mode in ("fp32", "amp"):
        assert _falls(r[mode]["losses"], 0.8), mode
        assert all(np.isfinite(r[mode]["grad_norms"]))
    # clip_grad_norm_ saw unscaled gradients: the norms of both runs are alike, not 2**16 apart
    assert np.median(r["amp"]["grad_norms"]) < 10 * np.median(r["fp32"]["grad_norms"])
    assert _close(r["fp32"]["losses"][-1], r["amp"]["losses"][-1], rel=0.25, abs_=0.1)


def test_fp32_region_runs_in_fp32_inside_autocast():
    r = fp32_region.main(TINY + ["--epochs", "3", "--limit", "256", "--batch-size", "32"])
    assert r["amp"]["output_dtype"] == ampc.bfloat16 and r["fp32"]["output_dtype"] == ampc.float32
    assert r["amp"]["custom_dtype"] == ampc.float32
    for mode in ("fp32", "amp"):
        assert _falls(r[mode]["losses"]), mode


def test_warmup_lambdalr_schedule():
    r = warmup_lambdalr.main(TINY + ["--epochs", "6", "--limit", "256", "--batch-size", "32"])
    want = [0.0015 * min(1.0, e / 5) for e in range(6)]
    for mode in ("fp32", "amp"):
        np.testing.assert_allclose(r[mode]["lrs"], want, rtol=1e-12)
        assert _falls(r[mode]["losses"]), mode
    assert _close(r["fp32"]["final_loss"], r["amp"]["final_loss"])


def test_amp_monitor_logs_every_50_batches():
    r = amp_monitor.main(TINY + ["--epochs", "1", "--limit", "816", "--batch-size", "8"])  # 102 batches
    logged = [s for s in r["lines"] if s.startswith("Epoch 0, Batch")]
    assert [s.split(":")[0] for s in logged] == ["Epoch 0, Batch 0", "Epoch 0, Batch 50", "Epoch 0, Batch 100"]
    assert r["summary"]["steps_timed"] == 101 and r["summary"]["skipped_steps"] == 0
    assert _falls(r["amp"]["losses"])


@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_amp_trainer_factory(model):
    args = TINY + ["--model", model, "--epochs", "3", "--limit", "256", "--batch-size", "32"]
    fp32 = amp_trainer.main(args)["fp32"]
    amp = amp_trainer.main(args + ["--amp"])["amp"]
    assert _falls(fp32["losses"]) and _falls(amp["losses"])
    assert _close(fp32["final_loss"], amp["final_loss"])


def test_quick_experiment_over_architectures():
    table = quick_experiment.main(TINY + ["--epochs", "2", "--limit", "128", "--batch-size", "32",
                                          "--models", "linear,mlp,cnn"])
    assert set(table) == {"linear", "mlp", "cnn"}
    for name, row in table.items():
        assert row["loss_after"] < row["loss_before"], name


def test_example_runs_as_a_script():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(EXAMPLES, "..", "python"),
                                                       os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, os.path.join(EXAMPLES, "amp_trainer.py"), "--amp", "--model", "mlp",
                          "--epochs", "1", "--limit", "64", "--device", "cpu", "--image-size", "14"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "✓ AMP enabled" in out.stdout


def test_loss_scaling_reproduces_the_paper():
    """examples/loss_scaling.py: without loss scaling, fp16 activation gradients flush to zero and
    the model does not learn; GradScaler recovers FP32's accuracy within 0.5 points; bf16 needs
    no scaler (Micikevicius et al. 2018; Kalamkar et al. 2019)."""
    r = loss_scaling.run_all(steps=60)
    fp32, noscale, scaled, bf16 = (r[name] for name, _, _ in loss_scaling.MODES)
    assert fp32["accuracy"] > 0.4  # it learns: 10 classes, chance is 0.1
    assert noscale["accuracy"] < fp32["accuracy"] - 0.2
    assert abs(scaled["accuracy"] - fp32["accuracy"]) <= 0.005
    assert abs(bf16["accuracy"] - fp32["accuracy"]) <= 0.02
    # the cause, measured: the lower layers' activation gradients are all zero without scaling
    assert noscale["zero_grad_share"]["0"] == 1.0 and noscale["zero_grad_share"]["2"] == 1.0
    assert max(scaled["zero_grad_share"].values()) < 0.01 and max(bf16["zero_grad_share"].values()) == 0.0
    assert fp32["scale"] is None and scaled["scale"] > 1 and scaled["skipped"] == 0
    md = loss_scaling.table(r)
    assert "| fp16 + GradScaler |" in md and "zero grads, layer 0" in md
