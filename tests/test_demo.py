"""The main job end to end at tiny settings: both modes train, the table prints, the three files
are written; bad flags and missing data give one clear line, not a traceback."""
import csv
import os
import subprocess
import sys

import pytest

from ampc import demo

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_demo(args):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    return subprocess.run([sys.executable, "-m", "ampc.demo", *args], capture_output=True, text=True, env=env,
                          timeout=300)


def test_demo_tiny_end_to_end(tmp_path):
    out = tmp_path / "out"
    r = run_demo(["--limit", "512", "--epochs", "1", "--batch-size", "64", "--model", "mlp", "--quiet",
                  "--out", str(out)])
    assert r.returncode == 0, r.stderr
    assert "| FP32 |" in r.stdout and "| AMP (float16) |" in r.stdout
    report = (out / "report.md").read_text()
    assert "hardware:" in report and "| mode | s/epoch | speedup |" in report
    with open(out / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    assert {row["mode"] for row in rows} == {"fp32", "amp"}
    assert len(rows) == 2 * (512 // 64)
    assert all(float(row["loss"]) > 0 for row in rows)
    assert (out / "curves.png").stat().st_size > 1000  # matplotlib is a demo extra installed by make demo


def test_demo_same_initial_weights_and_batches():
    # The first recorded losses of both modes come from the same weights and the same batch:
    # they may differ only by mixed-precision rounding.
    args = demo.parse_args(["--limit", "256", "--epochs", "1", "--batch-size", "64", "--model", "mlp", "--quiet"])
    train = demo.FashionMNIST(None, train=True, limit=256)
    test = demo.FashionMNIST(None, train=False, limit=None)
    a = demo.train_mode("fp32", args, train, test, "cpu")
    b = demo.train_mode("amp", args, train, test, "cpu")
    assert abs(a["rows"][0][3] - b["rows"][0][3]) < 2e-2 * abs(a["rows"][0][3])


@pytest.mark.parametrize("args, message", [
    (["--epochs", "0"], "--epochs must be at least 1"),
    (["--model", "vgg"], "invalid choice: 'vgg'"),
    (["--limit", "10"], "--limit must be at least --batch-size"),
    (["--device", "tpu"], "unknown --device 'tpu'"),
    (["--data", "/nonexistent"], "not found under /nonexistent"),
])
def test_demo_bad_input_is_one_clear_line(args, message):
    r = run_demo(["--quiet", "--limit", "256", "--epochs", "1"] + args)  # the case's flags come last and win
    assert r.returncode == 2
    assert message in r.stderr
    assert "Traceback" not in r.stderr
