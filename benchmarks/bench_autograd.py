"""Autograd overhead and a training step, ampc beside PyTorch (CPU) in one process.

Usage: python benchmarks/bench_autograd.py [--quick]
Cases (issue 3):
  - MLP step 784-256-256-10 (matmul + bias add + relu, loss = mean of squares), forward and
    backward, batch 64 and 512. Aim: no slower than PyTorch on the same CPU (ratio <= 1).
  - a chain of 100 elementwise ops on tiny tensors (8 elements), forward and backward: the cost
    of recording and running the graph. Aim: at most half of PyTorch's time (ratio <= 0.5).
Both libraries use the same number of threads (torch.get_num_threads() is set to the
OMP_NUM_THREADS ampc's kernels use, default all cores)."""
import os
import sys

import numpy as np

from common import machine_line, print_table, time_per_call, try_import_torch

import ampc


def mlp_case(lib, tensor, batch, rng):
    sizes = [784, 256, 256, 10]
    params = []
    for i in range(3):
        w = tensor(rng.standard_normal((sizes[i], sizes[i + 1])).astype(np.float32) * 0.05)
        b = tensor(np.zeros(sizes[i + 1], dtype=np.float32))
        params += [w.requires_grad_(), b.requires_grad_()]
    x = tensor(rng.standard_normal((batch, 784)).astype(np.float32))

    def step():
        h = x
        for i in range(3):
            h = h @ params[2 * i] + params[2 * i + 1]
            if i < 2:
                h = h.relu()
        loss = (h * h).mean()
        for p in params:
            p.grad = None
        loss.backward()

    return step


def chain_case(lib, tensor, rng):
    x = tensor(rng.standard_normal(8).astype(np.float32)).requires_grad_()
    w = tensor(rng.standard_normal(8).astype(np.float32))

    def step():
        h = x
        for i in range(25):  # 4 ops per round: 100 recorded ops
            h = h * w
            h = h + 0.5
            h = h.tanh()
            h = h - w
        x.grad = None
        h.sum().backward()

    return step


def main(quick=False):
    torch = try_import_torch()
    threads = int(os.environ.get("OMP_NUM_THREADS", os.cpu_count() or 1))
    if torch is not None:
        torch.set_num_threads(threads)
    min_time = 0.1 if quick else 0.5
    rows = []
    cases = [(f"MLP 784-256-256-10, batch {b}", lambda lib, ten, rng, b=b: mlp_case(lib, ten, b, rng))
             for b in (64, 512)]
    cases.append(("100-op elementwise chain, 8 elements", lambda lib, ten, rng: chain_case(lib, ten, rng)))
    for name, make in cases:
        fa = make(ampc, ampc.tensor, np.random.default_rng(0))
        t_a = time_per_call(fa, min_time=min_time, repeat=3 if quick else 5)
        row = [name, f"{t_a * 1e6:.0f}"]
        if torch is not None:
            ft = make(torch, torch.tensor, np.random.default_rng(0))
            t_t = time_per_call(ft, min_time=min_time, repeat=3 if quick else 5)
            row += [f"{t_t * 1e6:.0f}", f"{t_a / t_t:.2f}"]
        rows.append(row)
    header = ["forward + backward", "ampc us", "torch us", "ampc/torch"] if torch else ["forward + backward", "ampc us"]
    print(machine_line(), f"threads={threads}")
    print_table("Autograd step time (lower is better; aims: MLP ratio <= 1, chain ratio <= 0.5)", header, rows)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
