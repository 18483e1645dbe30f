"""GradScaler's one pass: unscale + inf/NaN check of a list of gradients, ampc beside PyTorch.

Times ampc._C._amp_foreach_non_finite_check_and_unscale_ and torch's op of the same name over 1,
100 and 1,000 gradient tensors holding `--total` elements in all (the issue's figure is 100M;
the default here is 20M so a 2-core machine finishes in seconds: pass --total 100000000 on a
bigger one), and reports the ratio and the bandwidth against the machine's copy bandwidth
(a NumPy copy of the same bytes: the pass reads and writes every byte once, as a copy does).

Usage: python benchmarks/bench_scaler.py [--total N] [--dtype float32|float16|both]"""
import argparse

import numpy as np

from common import machine_line, print_table, time_per_call, try_import_torch

import ampc
from ampc import _C

# Just above 1: the grads are multiplied on every timed call (no inv_scale == 1 shortcut taken by
# PyTorch's kernel) yet stay normal numbers however many calls run (no denormal slowdown).
INV_SCALE = float(np.nextafter(np.float32(1), np.float32(2)))


def split_sizes(total, n):
    base = total // n
    return [base + (1 if i < total - base * n else 0) for i in range(n)]


def copy_seconds(nbytes):
    src = np.ones(nbytes // 4, dtype=np.float32)
    dst = np.empty_like(src)
    return time_per_call(lambda: np.copyto(dst, src), min_time=0.3)


def bench(total, dtype_name, torch):
    np_dtype = np.float32 if dtype_name == "float32" else np.float16
    itemsize = np.dtype(np_dtype).itemsize
    moved = 2 * total * itemsize  # each element read and written once
    t_copy = copy_seconds(total * itemsize)
    copy_gbs = moved / t_copy / 1e9
    rows = []
    for n in (1, 100, 1000):
        rng = np.random.default_rng(n)
        arrays = [rng.standard_normal(s).astype(np_dtype) for s in split_sizes(total, n)]
        grads = [ampc.from_numpy(a.copy()) for a in arrays]
        found_inf = ampc.zeros((), dtype=ampc.float32)
        inv_scale = ampc.full((), INV_SCALE, dtype=ampc.float32)
        t_ampc = time_per_call(lambda: _C._amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale),
                               min_time=0.3)
        assert found_inf.item() == 0.0
        row = [n, f"{t_ampc * 1e3:.2f}", f"{moved / t_ampc / 1e9:.1f}", f"{moved / t_ampc / 1e9 / copy_gbs:.0%}"]
        if torch is not None:
            tgrads = [torch.from_numpy(a.copy()) for a in arrays]
            tfound = torch.zeros((), dtype=torch.float32)
            tinv = torch.full((), INV_SCALE, dtype=torch.float32)
            t_torch = time_per_call(lambda: torch._amp_foreach_non_finite_check_and_unscale_(tgrads, tfound, tinv),
                                    min_time=0.3)
            row += [f"{t_torch * 1e3:.2f}", f"{moved / t_torch / 1e9:.1f}", f"{t_torch / t_ampc:.2f}x"]
        rows.append(row)
    header = ["tensors", "ampc ms", "ampc GB/s", "of copy"]
    if torch is not None:
        header += ["torch ms", "torch GB/s", "ampc speedup"]
    print_table(f"unscale + inf/NaN check, {total / 1e6:.0f}M {dtype_name} elements in all "
                f"(copy of the same bytes: {t_copy * 1e3:.2f} ms, {copy_gbs:.1f} GB/s read+write)", header, rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total", type=int, default=20_000_000)
    parser.add_argument("--dtype", choices=["float32", "float16", "both"], default="both")
    args = parser.parse_args()
    torch = try_import_torch()
    print(machine_line())
    for dt in (["float32", "float16"] if args.dtype == "both" else [args.dtype]):
        bench(args.total, dt, torch)


if __name__ == "__main__":
    main()
