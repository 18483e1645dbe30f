"""Per-call overhead of small ops and float32 GEMM throughput, ampc beside NumPy and PyTorch.

Usage: python benchmarks/bench_ops.py [--quick]
Aims (issue 2): small-op overhead at most half of PyTorch's; float32 GEMM within 10% of NumPy."""
import sys

import numpy as np

from common import machine_line, print_table, square_operands, time_per_call, try_import_torch

import ampc


def small_ops():
    torch = try_import_torch()
    a_np = np.random.default_rng(0).standard_normal(4).astype(np.float32)
    b_np = np.random.default_rng(1).standard_normal(4).astype(np.float32)
    a, b = ampc.from_numpy(a_np.copy()), ampc.from_numpy(b_np.copy())
    cases = [("add", lambda: a + b, lambda: a_np + b_np), ("mul", lambda: a * b, lambda: a_np * b_np),
             ("sum", lambda: a.sum(), lambda: a_np.sum()), ("add scalar", lambda: a + 1.5, lambda: a_np + 1.5)]
    if torch is not None:
        ta, tb = torch.from_numpy(a_np.copy()), torch.from_numpy(b_np.copy())
        torch_fns = {"add": lambda: ta + tb, "mul": lambda: ta * tb, "sum": lambda: ta.sum(),
                     "add scalar": lambda: ta + 1.5}
    rows = []
    for name, fa, fn in cases:
        t_ampc = time_per_call(fa) * 1e9
        t_np = time_per_call(fn) * 1e9
        row = [name, f"{t_ampc:.0f}", f"{t_np:.0f}"]
        if torch is not None:
            t_torch = time_per_call(torch_fns[name]) * 1e9
            row += [f"{t_torch:.0f}", f"{t_ampc / t_torch:.2f}"]
        rows.append(row)
    header = ["op (4 elements)", "ampc ns", "numpy ns"] + (["torch ns", "ampc/torch"] if torch else [])
    print_table("Per-call overhead of small ops (lower is better; aim: ampc/torch <= 0.5)", header, rows)


def gemm(sizes):
    torch = try_import_torch()
    rows = []
    for n in sizes:
        x, y, ax, ay = square_operands(n)
        flops = 2.0 * n ** 3
        g_ampc = flops / time_per_call(lambda: ampc.mm(ax, ay), min_time=0.3, repeat=3) / 1e9
        g_np = flops / time_per_call(lambda: x @ y, min_time=0.3, repeat=3) / 1e9
        row = [n, f"{g_ampc:.1f}", f"{g_np:.1f}", f"{g_ampc / g_np:.2f}"]
        if torch is not None:
            tx, ty = torch.from_numpy(x), torch.from_numpy(y)
            g_t = flops / time_per_call(lambda: torch.mm(tx, ty), min_time=0.3, repeat=3) / 1e9
            row += [f"{g_t:.1f}", f"{g_ampc / g_t:.2f}"]
        rows.append(row)
    header = ["n", "ampc GFLOP/s", "numpy GFLOP/s", "ampc/numpy"] + (["torch GFLOP/s", "ampc/torch"] if torch else [])
    print_table("float32 square GEMM (higher is better; aim: ampc/numpy >= 0.9)", header, rows)


if __name__ == "__main__":
    print(machine_line())
    small_ops()
    gemm([256, 512] if "--quick" in sys.argv else [256, 512, 1024, 2048])
