"""GEMM throughput (GFLOP/s) of ampc beside NumPy and PyTorch (CPU), per dtype.

Usage: python benchmarks/bench_gemm.py [--quick] [--sizes 256,512,...]
  float32: ampc (CBLAS, and ampc's blocked fallback) vs np.matmul vs torch.mm; aim: within 10%
           of NumPy (ampc/numpy >= 0.90).
  bf16 / fp16: ampc's paths (bf16: the AMX tile kernel where CPU and OS offer it; both: widen
           to fp32 + sgemm, round once) vs torch.mm in the same dtype.
Square matrices, contiguous operands; each contender timed in turn, best of 3 interleaved rounds."""
import argparse
import time

import numpy as np

from common import machine_line, print_table, square_operands, time_per_call, try_import_torch

import ampc


def race(fns, n, rounds=3):
    """Best GFLOP/s of each fn() over `rounds` interleaved rounds: on a shared machine every
    contender sees the same load, and the best round is the least disturbed one. A short pause
    before each timing lets the previous library's worker threads stop spinning."""
    best = {name: 0.0 for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            time.sleep(0.05)
            best[name] = max(best[name], 2.0 * n ** 3 / time_per_call(fn, min_time=0.15, repeat=2) / 1e9)
    return best


def with_backend(name, fn):
    """fn() run under ampc's CPU GEMM backend `name` ("auto", "blas", "fallback")."""
    def run():
        previous = ampc._C._gemm_backend(name)
        try:
            return fn()
        finally:
            ampc._C._gemm_backend(previous)
    return run


def float32_table(sizes, torch):
    features = ampc._C._gemm_features()
    rows = []
    for n in sizes:
        x, y, ax, ay = square_operands(n)
        fns = {"ampc": lambda: ampc.mm(ax, ay), "fallback": with_backend("fallback", lambda: ampc.mm(ax, ay)),
               "numpy": lambda: np.matmul(x, y)}
        if torch is not None:
            tx, ty = torch.from_numpy(x), torch.from_numpy(y)
            fns["torch"] = lambda: torch.mm(tx, ty)
        g = race(fns, n)
        row = [n, f"{g['ampc']:.1f}", f"{g['fallback']:.1f}", f"{g['numpy']:.1f}", f"{g['ampc'] / g['numpy']:.2f}"]
        if torch is not None:
            row += [f"{g['torch']:.1f}", f"{g['ampc'] / g['torch']:.2f}"]
        rows.append(row)
    header = ["n", "ampc" + (" (cblas)" if features["blas"] else ""), "ampc fallback", "numpy", "ampc/numpy"]
    header += ["torch", "ampc/torch"] if torch is not None else []
    print_table("float32 GEMM, GFLOP/s (n x n @ n x n; aim: ampc/numpy >= 0.90)", header, rows)


def half_table(sizes, torch):
    features = ampc._C._gemm_features()
    rows = []
    for n in sizes:
        rng = np.random.default_rng(n)
        x = ampc.from_numpy(rng.standard_normal((n, n)).astype(np.float32))
        y = ampc.from_numpy(rng.standard_normal((n, n)).astype(np.float32))
        for dtype, name in ((ampc.bfloat16, "bfloat16"), (ampc.float16, "float16")):
            ax, ay = x.to(dtype), y.to(dtype)
            # "convert": widen to fp32 + sgemm + round once (what "auto" does for fp16, and for bf16 without AMX)
            fns = {"ampc": lambda: ampc.mm(ax, ay),
                   "convert": with_backend("blas" if features["blas"] else "fallback", lambda: ampc.mm(ax, ay))}
            if torch is not None:
                tdt = torch.bfloat16 if dtype == ampc.bfloat16 else torch.float16
                tx, ty = torch.from_numpy(x.numpy()).to(tdt), torch.from_numpy(y.numpy()).to(tdt)
                fns["torch"] = lambda: torch.mm(tx, ty)
            g = race(fns, n)
            row = [n, name, f"{g['ampc']:.1f}", f"{g['convert']:.1f}"]
            if torch is not None:
                row += [f"{g['torch']:.1f}", f"{g['ampc'] / g['torch']:.2f}"]
            rows.append(row)
    kernel = "AMX kernel" if features["amx"] else "no AMX here: widen + sgemm"
    header = ["n", "dtype", "ampc", "ampc convert+sgemm"] + (["torch", "ampc/torch"] if torch is not None else [])
    print_table(f"fp16 / bf16 GEMM, GFLOP/s (fp32 accumulation; bf16 'ampc' = {kernel})", header, rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="sizes 256 and 512 only")
    parser.add_argument("--sizes", default=None, help="comma-separated square sizes")
    args = parser.parse_args()
    sizes = [256, 512] if args.quick else [256, 512, 1024, 2048]
    if args.sizes:
        sizes = [int(s) for s in args.sizes.split(",")]
    torch = try_import_torch()
    print(machine_line())
    threads = f"torch threads {torch.get_num_threads()}" if torch is not None else "torch not installed"
    print(f"ampc GEMM backend: {ampc._C._gemm_backend()}, features {ampc._C._gemm_features()}; {threads}")
    float32_table(sizes, torch)
    half_table(sizes, torch)


if __name__ == "__main__":
    main()
