"""Sorting and selection on the CPU, ampc beside PyTorch in one process: sort, argsort, topk
(incl. GPT sampling's k=50 over a 50257 vocabulary), kthvalue, median, unique and searchsorted.

Usage: python benchmarks/bench_sort.py [--quick]
Aim (issue 12): no case slower than 1.5x torch (ampc/torch <= 1.5). Both use the same threads."""
import sys

import numpy as np

from common import machine_line, print_table, time_per_call, try_import_torch

import ampc


def cases(quick):
    rng = np.random.default_rng(0)
    big = rng.standard_normal(100_000 if quick else 1_000_000).astype(np.float32)
    square = rng.standard_normal((256, 256) if quick else (1024, 1024)).astype(np.float32)
    logits = rng.standard_normal((64, 50257)).astype(np.float32)
    ints = rng.integers(0, 1000, big.shape[0]).astype(np.int64)
    seq = np.sort(rng.standard_normal(4096).astype(np.float32))
    n1 = f"({big.shape[0]},)"
    return [
        (f"sort {n1} f32", big, lambda M, x: M.sort(x)),
        (f"sort {square.shape} f32 dim=-1", square, lambda M, x: M.sort(x, -1)),
        (f"sort {square.shape} f32 dim=0", square, lambda M, x: M.sort(x, 0)),
        (f"sort {n1} i64", ints, lambda M, x: M.sort(x)),
        (f"argsort {n1} f32 stable", big, lambda M, x: M.argsort(x, stable=True)),
        (f"argsort {square.shape} f32", square, lambda M, x: M.argsort(x)),
        ("topk (64, 50257) k=50", logits, lambda M, x: M.topk(x, 50)),
        (f"topk {n1} k=10", big, lambda M, x: M.topk(x, 10)),
        (f"kthvalue {square.shape} k=100", square, lambda M, x: M.kthvalue(x, 100)),
        (f"median {square.shape} dim=1", square, lambda M, x: M.median(x, 1)),
        (f"unique {n1} i64", ints, lambda M, x: M.unique(x)),
        (f"unique {n1} i64 inverse+counts", ints, lambda M, x: M.unique(x, return_inverse=True, return_counts=True)),
        (f"searchsorted 4096 <- {n1}", big, lambda M, x: M.searchsorted(M.tensor(seq) if M is ampc else M.from_numpy(seq), x)),
    ]


def main():
    quick = "--quick" in sys.argv
    torch = try_import_torch()
    rows = []
    for name, data, fn in cases(quick):
        a = ampc.from_numpy(data.copy())
        t_ampc = time_per_call(lambda: fn(ampc, a), min_time=0.3 if not quick else 0.05, repeat=3) * 1e3
        row = [name, f"{t_ampc:.3f}"]
        if torch is not None:
            t = torch.from_numpy(data.copy())
            t_torch = time_per_call(lambda: fn(torch, t), min_time=0.3 if not quick else 0.05, repeat=3) * 1e3
            row += [f"{t_torch:.3f}", f"{t_ampc / t_torch:.2f}"]
        rows.append(row)
    header = ["case", "ampc ms", "torch ms", "ampc/torch"] if torch is not None else ["case", "ampc ms"]
    print(machine_line())
    if torch is not None:
        print(f"threads: torch {torch.get_num_threads()}")
    print_table("Sorting and selection on the CPU (lower is better; aim: ampc/torch <= 1.5)", header, rows)


if __name__ == "__main__":
    main()
