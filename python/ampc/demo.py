"""python -m ampc.demo: Fashion-MNIST trained in FP32 and in AMP from the same seed, side by side.

Answers the question every AMP user has, on real data: how much faster and smaller is mixed
precision here, and did it cost accuracy? Runs on CUDA when a GPU is present, else on the CPU
(where fp16/bf16 are real storage formats, so the loss scaler's skips and backoffs are real too).

Outputs (in --out): report.md (table, settings, hardware), metrics.csv (per-step loss, scale,
step time of both modes) and curves.png (loss curves and scale history; needs matplotlib)."""
import argparse
import csv
import math
import os
import platform
import sys
import time

import numpy as np

import ampc as torch
import ampc.nn as nn
import ampc.nn.functional as F
import ampc.optim as optim
from ampc.amp import GradScaler, autocast
from ampc.datasets.fashion_mnist import DatasetMissingError, FashionMNIST
from ampc.monitor import memory_stats


# ---------------------------------------------------------------------------------------- models
def build_model(name):
    from ampc import models

    if name == "cnn":
        return models.SmallCNN(in_channels=1, num_classes=10)
    if name == "mlp":
        return models.MLP(28 * 28, [256, 256], 10)
    if name == "resnet18":
        return models.resnet18(num_classes=10, in_channels=1, small_input=True)
    raise ValueError(name)


# ---------------------------------------------------------------------------------------- progress
class Progress:
    """tqdm when installed, else a plain line every few percent."""

    def __init__(self, total, desc, quiet=False):
        self.total, self.desc, self.quiet, self.n, self.bar = total, desc, quiet, 0, None
        self.t0 = time.perf_counter()
        self.last_print = -1
        if not quiet:
            try:
                from tqdm.auto import tqdm  # a widget in Jupyter, text in a terminal

                self.bar = tqdm(total=total, desc=desc, unit="img", leave=True, dynamic_ncols=True)
            except ImportError:
                self.bar = None

    def update(self, n, **postfix):
        self.n += n
        if self.quiet:
            return
        if self.bar is not None:
            self.bar.update(n)
            self.bar.set_postfix(postfix, refresh=False)
            return
        pct = int(100 * self.n / self.total)
        if pct // 10 != self.last_print // 10 or self.n == self.total:
            self.last_print = pct
            rate = self.n / max(time.perf_counter() - self.t0, 1e-9)
            extra = " ".join(f"{k}={v}" for k, v in postfix.items())
            print(f"  {self.desc}: {pct:3d}% {self.n}/{self.total} {rate:.0f} img/s {extra}", flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.close()


# ---------------------------------------------------------------------------------------- training
def batches(n, batch_size, rng):
    order = rng.permutation(n)
    for i in range(0, n - batch_size + 1, batch_size):  # drop_last: equal-size steps in both modes
        yield order[i:i + batch_size]


def evaluate(model, data, targets, batch_size, use_amp, amp_dtype, device_type):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(targets), batch_size):
            x, y = data[i:i + batch_size], targets[i:i + batch_size]
            with autocast(device_type, dtype=amp_dtype, enabled=use_amp):
                logits = model(x)
            correct += int((logits.argmax(dim=1) == y).sum().item())
    model.train()
    return correct / len(targets)


def train_mode(mode, args, train, test, device):
    use_amp = mode != "fp32"
    amp_dtype = getattr(torch, args.amp_dtype)
    device_type = device.split(":")[0]
    torch.manual_seed(args.seed)
    model = build_model(args.model).to(device)
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, nesterov=True, weight_decay=5e-4)
    steps_per_epoch = len(train.targets) // args.batch_size
    # One-cycle schedule: warm-up, then annealing to ~0, so the final weights (and the accuracy the
    # table compares) do not depend on where a noisy high-lr walk happened to stop.
    scheduler = optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, total_steps=steps_per_epoch * args.epochs)
    # bf16 has fp32's exponent range: no loss scaling needed (nanoGPT PR #87), so no scaler there.
    scaler = GradScaler(device_type, init_scale=2.0 ** 16, enabled=use_amp and amp_dtype == torch.float16)
    _reset_peak(device)
    rng = np.random.default_rng(args.seed)  # same batches in both modes
    rows, epoch_times = [], []
    n = len(train.targets)
    step = 0
    for epoch in range(args.epochs):
        bar = Progress((n // args.batch_size) * args.batch_size, f"{mode} epoch {epoch + 1}/{args.epochs}",
                       quiet=args.quiet)
        _sync(device)
        t_epoch = time.perf_counter()
        for idx in batches(n, args.batch_size, rng):
            t0 = time.perf_counter()
            index = torch.from_numpy(idx).to(device)
            x, y = train.data[index], train.targets[index]
            optimizer.zero_grad(set_to_none=True)
            with autocast(device_type, dtype=amp_dtype, enabled=use_amp):
                loss = F.cross_entropy(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            scheduler.step()
            loss_value = loss.item()  # one read per step, for the curve
            dt = time.perf_counter() - t0
            step += 1
            scale = scaler._scale.item() if scaler.is_enabled() else 1.0
            rows.append((mode, epoch, step, loss_value, scale, dt))
            bar.update(len(idx), loss=f"{loss_value:.3f}", scale=f"{scale:g}")
        _sync(device)
        epoch_times.append(time.perf_counter() - t_epoch)
        bar.close()
    accuracy = evaluate(model, test.data, test.targets, 1000, use_amp, amp_dtype, device_type)
    _, peak = memory_stats(device)
    stats = scaler.stats() if scaler.is_enabled() else None
    if not math.isfinite(rows[-1][3]):
        print(f"warning: {mode} ended with a non-finite loss", file=sys.stderr)
    return {"mode": mode, "epoch_seconds": float(np.mean(epoch_times)), "peak_bytes": peak, "accuracy": accuracy,
            "stats": stats, "rows": rows, "final_loss": rows[-1][3]}


def _reset_peak(device):
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    else:
        torch._C._cpu_reset_peak()


def _sync(device):
    if device.startswith("cuda"):
        torch.cuda.synchronize()


# ---------------------------------------------------------------------------------------- report
def hardware(device):
    if device.startswith("cuda"):
        return f"{torch.cuda.get_device_name(0)} (CUDA)"
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{cpu}, {os.cpu_count()} CPUs (no GPU)"


def table(results, amp_label):
    base = results[0]
    lines = ["| mode | s/epoch | speedup | peak memory | memory saved | test accuracy | skipped steps | final scale |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in results:
        label = "FP32" if r["mode"] == "fp32" else amp_label
        speedup = base["epoch_seconds"] / r["epoch_seconds"]
        saved = 1 - r["peak_bytes"] / base["peak_bytes"] if base["peak_bytes"] else 0.0
        st = r["stats"]
        skipped = str(st["skipped_steps"]) if st else "-"
        scale = f"{st['scale']:g}" if st else "-"
        lines.append(f"| {label} | {r['epoch_seconds']:.1f} | {speedup:.2f}x | {r['peak_bytes'] / 2 ** 20:.1f} MiB | "
                     f"{100 * saved:.0f}% | {r['accuracy']:.4f} | {skipped} | {scale} |")
    return "\n".join(lines)


def write_outputs(out, results, args, device, text_table):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "metrics.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["mode", "epoch", "step", "loss", "scale", "step_seconds"])
        for r in results:
            w.writerows(r["rows"])
    settings = (f"model={args.model} epochs={args.epochs} batch_size={args.batch_size} lr={args.lr} "
                f"amp_dtype={args.amp_dtype} limit={args.limit} seed={args.seed} device={device}")
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("# ampc demo: Fashion-MNIST, FP32 vs AMP\n\n")
        f.write(f"- hardware: {hardware(device)}\n- settings: {settings}\n- ampc {torch.__version__}, "
                f"Python {platform.python_version()}\n\n{text_table}\n\n")
        f.write("Peak memory is ampc's allocator peak (device memory on CUDA, tensor memory on the CPU).\n")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: curves.png not written (pip install matplotlib)")
        return
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for r in results:
        steps = [row[2] for row in r["rows"]]
        losses = [row[3] for row in r["rows"]]
        k = max(1, len(losses) // 100)
        smooth = np.convolve(losses, np.ones(k) / k, mode="valid")
        ax1.plot(steps[k - 1:], smooth, label=r["mode"])
    ax1.set_xlabel("step")
    ax1.set_ylabel("training loss")
    ax1.set_yscale("log")
    ax1.legend()
    ax1.set_title("loss")
    amp = results[-1]
    ax2.plot([row[2] for row in amp["rows"]], [row[4] for row in amp["rows"]])
    ax2.set_yscale("log", base=2)
    ax2.set_xlabel("step")
    ax2.set_ylabel("loss scale")
    ax2.set_title("GradScaler scale (AMP)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "curves.png"), dpi=100)
    plt.close(fig)


# ---------------------------------------------------------------------------------------- main
def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m ampc.demo", description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=["cnn", "mlp", "resnet18"], default="cnn")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--lr", type=float, default=0.1, help="peak learning rate of the one-cycle schedule")
    p.add_argument("--device", default="auto", help="auto (cuda when available), cpu, cuda, cuda:N")
    p.add_argument("--amp-dtype", choices=["float16", "bfloat16"], default="float16")
    p.add_argument("--limit", type=int, default=None, help="train on the first N samples")
    p.add_argument("--out", default="demo-out")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", default=None, help="directory with the Fashion-MNIST IDX files")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    args = p.parse_args(argv)
    if args.epochs < 1:
        p.error("--epochs must be at least 1")
    if args.batch_size < 1:
        p.error("--batch-size must be at least 1")
    if args.limit is not None and args.limit < args.batch_size:
        p.error(f"--limit must be at least --batch-size ({args.batch_size})")
    if args.lr <= 0:
        p.error("--lr must be positive")
    return args


def main(argv=None):
    args = parse_args(argv)
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        print("ampc.demo: --device cuda asked for, but no GPU is available (ampc.cuda.is_available() is False)",
              file=sys.stderr)
        return 2
    if device not in ("cpu", "cuda") and not device.startswith("cuda:"):
        print(f"ampc.demo: unknown --device {device!r} (use auto, cpu, cuda or cuda:N)", file=sys.stderr)
        return 2
    try:
        train = FashionMNIST(args.data, train=True, limit=args.limit, device=device)
        test = FashionMNIST(args.data, train=False, device=device)
    except (DatasetMissingError, ValueError) as e:
        print(f"ampc.demo: {e}", file=sys.stderr)
        return 2
    amp_label = f"AMP ({args.amp_dtype})"
    print(f"Fashion-MNIST: {len(train.targets)} train / {len(test.targets)} test images, model {args.model}, "
          f"device {device} ({hardware(device)})")
    results = [train_mode(mode, args, train, test, device) for mode in ("fp32", "amp")]
    text = table(results, amp_label)
    print()
    print(text)
    write_outputs(args.out, results, args, device, text)
    print(f"\nwrote {os.path.join(args.out, 'report.md')}, metrics.csv, curves.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
