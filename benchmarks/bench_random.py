"""Random-number benchmark: ampc's CPU generator (torch's mt19937 stream, drawn serially as torch
draws it) beside torch's own, for rand / randn / randint / multinomial / bernoulli_ / dropout.
Both produce the same numbers, so this compares the cost of the same work. Prints ms per call and
the ratio ampc / torch (below 1: ampc faster). Run: python benchmarks/bench_random.py"""
from common import machine_line, print_table, time_per_call, try_import_torch

import ampc


def main():
    torch = try_import_torch()
    print(machine_line())
    cases = [
        ("rand(1e6)", lambda M: M.rand(1_000_000)),
        ("rand(1e6, float64)", lambda M: M.rand(1_000_000, dtype=M.float64)),
        ("randn(1e6)", lambda M: M.randn(1_000_000)),
        ("randn(1e6, float64)", lambda M: M.randn(1_000_000, dtype=M.float64)),
        ("randn(1e6, bfloat16)", lambda M: M.randn(1_000_000, dtype=M.bfloat16)),
        ("randint(0, 1000, 1e6)", lambda M: M.randint(0, 1000, (1_000_000,))),
        ("randperm(1e5)", lambda M: M.randperm(100_000)),
        ("bernoulli_(0.3) 1e6", lambda M: M.empty(1_000_000).bernoulli_(0.3)),
        ("dropout(1e6, 0.1)", lambda M: M.nn.functional.dropout(M.ones(1_000_000), 0.1)),
        ("multinomial(100x1000, 10)", lambda M: M.multinomial(M.ones(100, 1000), 10)),
        ("multinomial(100x1000, 1000, repl)", lambda M: M.multinomial(M.ones(100, 1000), 1000, True)),
        ("exponential_ 1e6", lambda M: M.empty(1_000_000).exponential_()),
    ]
    rows = []
    for name, fn in cases:
        a = time_per_call(lambda: fn(ampc)) * 1e3
        t = time_per_call(lambda: fn(torch)) * 1e3 if torch else float("nan")
        rows.append((name, f"{a:.3f}", f"{t:.3f}", f"{a / t:.2f}" if torch else "-"))
    print_table("CPU random numbers (ms per call)", ("case", "ampc", "torch", "ratio"), rows)


if __name__ == "__main__":
    main()
