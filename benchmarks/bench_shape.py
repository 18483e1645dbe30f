"""Shape and index ops (issue 12), ampc beside PyTorch on the CPU in one process.

Usage: python benchmarks/bench_shape.py [--quick]
Cases: tril and triu (their own kernel: a memcpy + memset per row), scatter_add (the scatter
form), repeat (one COPY of an expanded view), flip (one COPY over negative strides), roll (two
slice copies), on float32 tensors of a training script's sizes. Aim: no case slower than 1.5x
PyTorch (ratio <= 1.5). Both libraries use the same number of threads."""
import os
import sys

import numpy as np

from common import machine_line, print_table, time_per_call, try_import_torch

import ampc


def cases(lib, rng):
    x = lib.tensor(rng.standard_normal((1024, 1024)).astype(np.float32))
    b = lib.tensor(rng.standard_normal((32, 128, 128)).astype(np.float32))
    v = lib.tensor(rng.standard_normal((256, 512)).astype(np.float32))
    idx = lib.tensor(rng.integers(0, 256, (4096, 512)))
    src = lib.tensor(rng.standard_normal((4096, 512)).astype(np.float32))
    small = lib.tensor(rng.standard_normal((64, 256)).astype(np.float32))
    return [
        ("tril (1024, 1024)", lambda: x.tril()),
        ("triu (32, 128, 128), k=1", lambda: b.triu(1)),
        ("tril of a transpose (1024, 1024)", lambda: x.t().tril()),
        ("scatter_add dim 0, index (4096, 512) into (256, 512)", lambda: v.scatter_add(0, idx, src)),
        ("repeat (64, 256) x (4, 2)", lambda: small.repeat(4, 2)),
        ("repeat (1024, 1024) x (1, 2)", lambda: x.repeat(1, 2)),
        ("flip dim 0 (1024, 1024)", lambda: x.flip(0)),
        ("flip dim 1 (1024, 1024)", lambda: x.flip(1)),
        ("roll (3, -5) dims (0, 1) (1024, 1024)", lambda: x.roll((3, -5), (0, 1))),
    ]


def main(quick=False):
    torch = try_import_torch()
    threads = int(os.environ.get("OMP_NUM_THREADS", os.cpu_count() or 1))
    if torch is not None:
        torch.set_num_threads(threads)
    min_time, repeat = (0.05, 3) if quick else (0.3, 5)
    ours = cases(ampc, np.random.default_rng(0))
    theirs = cases(torch, np.random.default_rng(0)) if torch is not None else [None] * len(ours)
    rows = []
    for (name, fa), peer in zip(ours, theirs):
        t_a = time_per_call(fa, min_time=min_time, repeat=repeat)
        row = [name, f"{t_a * 1e6:.0f}"]
        if peer is not None:
            t_t = time_per_call(peer[1], min_time=min_time, repeat=repeat)
            row += [f"{t_t * 1e6:.0f}", f"{t_a / t_t:.2f}"]
        rows.append(row)
    header = ["op (float32)", "ampc us", "torch us", "ampc/torch"] if torch else ["op (float32)", "ampc us"]
    print(machine_line(), f"threads={threads}")
    print_table("Shape and index ops (lower is better; aim: ratio <= 1.5)", header, rows)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
