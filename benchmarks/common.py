"""Shared helpers of the benchmarks: timing loops and the optional peers (NumPy, PyTorch).

Benchmarks measure; they never assert. Each prints a table with ampc beside its peers and the
ratio, so a regression or a win is visible at a glance."""
import os
import platform
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))


def try_import_torch():
    try:
        import torch  # noqa: F401  (benchmark peer only)

        return torch
    except ImportError:
        return None


def square_operands(n):
    """Two seeded (n, n) float32 matrices as NumPy arrays and as ampc tensors sharing their memory:
    (x, y, ampc x, ampc y), the same operands for every GEMM benchmark of size n."""
    import numpy as np

    import ampc

    rng = np.random.default_rng(n)
    x = rng.standard_normal((n, n)).astype(np.float32)
    y = rng.standard_normal((n, n)).astype(np.float32)
    return x, y, ampc.from_numpy(x), ampc.from_numpy(y)


def time_per_call(fn, min_time=0.2, repeat=5):
    """Best-of-`repeat` seconds per call of fn(), each run looping for at least min_time."""
    fn()
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_time / 10:
            break
        n *= 4
    loops = max(1, int(n * (min_time / max(dt, 1e-9))))
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(loops):
            fn()
        best = min(best, (time.perf_counter() - t0) / loops)
    return best


def machine_line():
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} CPUs, Python {platform.python_version()}"


def print_table(title, header, rows):
    print(f"\n{title}")
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    fmt = "  ".join("{:>%d}" % w for w in widths)
    print(fmt.format(*header))
    for r in rows:
        print(fmt.format(*r))
