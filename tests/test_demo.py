"""The main job end to end at tiny settings: both modes train, the table prints, the three files
are written; bad flags and missing data give one clear line, not a traceback."""
import csv
import gzip
import importlib.util
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

from ampc import demo

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_idx(path, array):
    """An IDX file (gzipped) as Fashion-MNIST ships them: magic, big-endian dims, raw bytes."""
    header = struct.pack(">HBB", 0, 0x08, array.ndim) + struct.pack(">" + "I" * array.ndim, *array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """A small Fashion-MNIST-shaped data set made here (class-dependent blobs, so it is
    learnable), read through the real IDX loader; the demo tests need no installed data."""
    root = tmp_path_factory.mktemp("fashion")
    rng = np.random.default_rng(0)
    for split, n in (("train", 1024), ("t10k", 256)):
        labels = rng.integers(0, 10, n)
        images = rng.integers(0, 60, (n, 28, 28))
        for c in range(10):
            images[labels == c, 2 * c:2 * c + 8, 4:24] += 150
        write_idx(root / f"{split}-images-idx3-ubyte.gz", images)
        write_idx(root / f"{split}-labels-idx1-ubyte.gz", labels)
    return str(root)


def run_demo(args):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    return subprocess.run([sys.executable, "-m", "ampc.demo", *args], capture_output=True, text=True, env=env,
                          timeout=300)


def test_demo_tiny_end_to_end(tmp_path, data_dir):
    out = tmp_path / "out"
    r = run_demo(["--limit", "512", "--epochs", "1", "--batch-size", "64", "--model", "mlp", "--quiet",
                  "--out", str(out), "--data", data_dir])
    assert r.returncode == 0, r.stderr
    assert "| FP32 |" in r.stdout and "| AMP (float16) |" in r.stdout
    report = (out / "report.md").read_text()
    assert "hardware:" in report and "| mode | s/epoch | speedup |" in report
    with open(out / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    assert {row["mode"] for row in rows} == {"fp32", "amp"}
    assert len(rows) == 2 * (512 // 64)
    assert all(float(row["loss"]) > 0 for row in rows)
    if importlib.util.find_spec("matplotlib") is not None:  # a demo extra: `make demo` installs it
        assert (out / "curves.png").stat().st_size > 1000
    else:
        assert "matplotlib is not installed" in r.stdout and not (out / "curves.png").exists()


def test_demo_same_initial_weights_and_batches(data_dir):
    # The first recorded losses of both modes come from the same weights and the same batch:
    # they may differ only by mixed-precision rounding.
    args = demo.parse_args(["--limit", "256", "--epochs", "1", "--batch-size", "64", "--model", "mlp", "--quiet"])
    train = demo.FashionMNIST(data_dir, train=True, limit=256)
    test = demo.FashionMNIST(data_dir, train=False, limit=None)
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
def test_demo_bad_input_is_one_clear_line(args, message, data_dir):
    r = run_demo(["--quiet", "--limit", "256", "--epochs", "1", "--data", data_dir] + args)  # the case's flags come last and win
    assert r.returncode == 2
    assert message in r.stderr
    assert "Traceback" not in r.stderr


def test_truncated_data_file_is_reported(tmp_path, data_dir):
    import shutil

    for name in os.listdir(data_dir):
        shutil.copy(os.path.join(data_dir, name), tmp_path / name)
    raw = gzip.open(tmp_path / "train-images-idx3-ubyte.gz").read()
    with gzip.open(tmp_path / "train-images-idx3-ubyte.gz", "wb") as f:
        f.write(raw[:-100])
    r = run_demo(["--quiet", "--data", str(tmp_path)])
    assert r.returncode == 2 and "truncated or corrupted" in r.stderr and "Traceback" not in r.stderr
