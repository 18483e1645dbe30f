"""Activation checkpointing: peak memory and time of one AMP training step of a transformer
encoder stack, without checkpointing and with torch.utils.checkpoint on every layer (reentrant
and non-reentrant), and that all three give the same gradients.

Peak memory is the allocator's statistic of the device the model runs on (the CPU's caching
allocator counters, ampc._C._cpu_memory_stats; on a GPU ampc.cuda.max_memory_allocated), reset
after the model and input are built: "peak" counts everything held (parameters, grads, the GPU's
cuBLASLt workspace), "step" only what the step adds above what was allocated when it began
(activations, gradients, scratch), which is what checkpointing changes.

    PYTHONPATH=python python benchmarks/bench_checkpoint.py [--device cuda] [--layers 8] [--seq 256]
"""
import argparse
import time

import ampc
import ampc.nn as nn
from ampc.utils.checkpoint import checkpoint


class Stack(nn.Module):
    def __init__(self, layers, d, heads, ckpt):
        super().__init__()
        self.layers = nn.ModuleList(nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.1, batch_first=True)
                                    for _ in range(layers))
        self.ckpt = ckpt

    def forward(self, x):
        for layer in self.layers:
            x = layer(x) if self.ckpt is None else checkpoint(layer, x, use_reentrant=self.ckpt)
        return x


def _peak(device):
    if device == "cuda":
        return ampc.cuda.max_memory_allocated()
    return ampc._C._cpu_memory_stats()["peak_allocated"]


def _reset(device):
    if device == "cuda":
        ampc.cuda.synchronize()
        ampc.cuda.reset_peak_memory_stats()
    else:
        ampc._C._cpu_reset_peak()


def _allocated(device):
    if device == "cuda":
        return ampc.cuda.memory_allocated()
    return ampc._C._cpu_memory_stats()["allocated"]


def step(model, x, device, dtype):
    _reset(device)
    start = _allocated(device)
    t0 = time.perf_counter()
    ampc.manual_seed(1)
    with ampc.autocast(device, dtype=dtype):
        y = model(x)
        loss = y.float().pow(2).mean()
    loss.backward()
    if device == "cuda":
        ampc.cuda.synchronize()
    return time.perf_counter() - t0, _peak(device), _peak(device) - start, [p.grad.clone() for p in model.parameters()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--batch", type=int, default=8)
    a = ap.parse_args()
    dtype = ampc.bfloat16 if a.device == "cpu" else ampc.float16
    ampc.manual_seed(0)
    model = Stack(a.layers, a.d, 4, None).to(a.device)
    # requires grad: the reentrant variant needs an input that does (as in torch)
    x = ampc.randn(a.batch, a.seq, a.d, device=a.device).requires_grad_()
    rows = []
    ref = None
    for name, mode in (("none", None), ("reentrant", True), ("non-reentrant", False)):
        model.ckpt = mode
        model.zero_grad()
        step(model, x, a.device, dtype)  # warm the allocator's cache
        model.zero_grad()
        t, peak, added, grads = step(model, x, a.device, dtype)
        if ref is None:
            ref = grads
        same = all(bool((g == r).all()) for g, r in zip(grads, ref))
        rows.append((name, t, peak, added, same))
    base_t, base_added = rows[0][1], rows[0][3]
    print(f"AMP ({dtype}) transformer stack: {a.layers} layers, d={a.d}, seq={a.seq}, batch={a.batch}, "
          f"device={a.device}")
    print(f"{'checkpoint':<14} {'step s':>8} {'peak MiB':>9} {'step MiB':>9} {'step ratio':>10} {'time ratio':>10} "
          "same grads")
    for name, t, peak, added, same in rows:
        print(f"{name:<14} {t:8.3f} {peak / 2**20:9.1f} {added / 2**20:9.1f} {added / base_added:10.2f} "
              f"{t / base_t:10.2f} {same}")


if __name__ == "__main__":
    main()
