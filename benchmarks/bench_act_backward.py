"""Activation backward on the CPU, ampc beside PyTorch in one process (issue 14): the time of one
backward (autograd.grad of the activation's output) for gelu (erf, tanh), silu, sigmoid, tanh,
softplus and relu in float32 and bfloat16, and the kernels ampc launched for it (counted by the
dispatcher: the aim is 1, one fused kernel, as torch's *_backward ops).

Usage: python benchmarks/bench_act_backward.py [--quick]"""
import sys

import numpy as np

from common import machine_line, print_table, time_per_call, try_import_torch

import ampc

ACTS = [
    ("gelu", lambda M, x: M.nn.functional.gelu(x)),
    ("gelu tanh", lambda M, x: M.nn.functional.gelu(x, approximate="tanh")),
    ("silu", lambda M, x: M.nn.functional.silu(x)),
    ("sigmoid", lambda M, x: M.sigmoid(x)),
    ("tanh", lambda M, x: M.tanh(x)),
    ("softplus", lambda M, x: M.nn.functional.softplus(x)),
    ("relu", lambda M, x: M.relu(x)),
]


def launches(fn, x, g):
    """Kernels the dispatcher ran for one backward."""
    y = fn(ampc, x)
    before = ampc._C._dispatch_counts()
    ampc.autograd.grad(y, x, g)
    after = ampc._C._dispatch_counts()
    return sum(after[k] - before.get(k, 0) for k in after)


def main():
    quick = "--quick" in sys.argv
    torch = try_import_torch()
    n = 1 << (18 if quick else 22)
    data = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    rows = []
    for dtype in ("float32", "bfloat16"):
        for name, fn in ACTS:
            x = ampc.from_numpy(data).to(getattr(ampc, dtype)).requires_grad_()
            g = ampc.ones_like(x)
            y = fn(ampc, x)
            t_ampc = time_per_call(lambda: ampc.autograd.grad(y, x, g, retain_graph=True),
                                   min_time=0.05 if quick else 0.3, repeat=3) * 1e3
            row = [f"{name} {dtype} ({n:,})", str(launches(fn, x, g)), f"{t_ampc:.3f}"]
            if torch is not None:
                xt = torch.from_numpy(data).to(getattr(torch, dtype)).requires_grad_()
                gt = torch.ones_like(xt)
                yt = fn(torch, xt)
                t_torch = time_per_call(lambda: torch.autograd.grad(yt, xt, gt, retain_graph=True),
                                        min_time=0.05 if quick else 0.3, repeat=3) * 1e3
                row += [f"{t_torch:.3f}", f"{t_ampc / t_torch:.2f}"]
            rows.append(row)
    header = ["backward", "ampc kernels", "ampc ms", "torch ms", "ampc/torch"][:len(rows[0])]
    print(machine_line())
    print_table("Activation backward on the CPU (one fused kernel each; lower time is better)", header, rows)


if __name__ == "__main__":
    main()
