"""Losses on the CPU, ampc beside PyTorch in one process (issue 13, losses): forward + backward of
cross_entropy on (N, C) float32 logits (the language-model / classifier case that the fast row
kernels of cpu/cpu_nn_loss_ce_rows.c serve; with label smoothing and with class weights too),
the K-dim form (the general double tiles), ctc_loss and pdist. Ratio < 1: ampc is faster.

Usage: python benchmarks/bench_loss.py [--quick]"""
import sys

import numpy as np

from common import machine_line, print_table, time_per_call, try_import_torch

import ampc


def ce_case(M, x, t, **kw):
    def run():
        xg = x.detach().requires_grad_()
        M.nn.functional.cross_entropy(xg, t, **kw).backward()
    return run


def ctc_case(M, lp, tg, il, tl):
    def run():
        x = lp.detach().requires_grad_()
        M.nn.functional.ctc_loss(x.log_softmax(2), tg, il, tl).backward()
    return run


def pdist_case(M, x):
    def run():
        xg = x.detach().requires_grad_()
        M.nn.functional.pdist(xg).sum().backward()
    return run


def main():
    quick = "--quick" in sys.argv
    torch = try_import_torch()
    rng = np.random.default_rng(0)
    n, c = (100, 2000) if quick else (700, 10000)
    logits = rng.standard_normal((n, c)).astype(np.float32)
    target = rng.integers(0, c, n)
    w = rng.uniform(0.5, 2, c).astype(np.float32)
    kd = rng.standard_normal((16, 50, 64)).astype(np.float32)
    kd_t = rng.integers(0, 50, (16, 64))
    T, B, C, S = (50, 4, 20, 10) if quick else (200, 16, 30, 40)
    lp = rng.standard_normal((T, B, C)).astype(np.float32)
    tg = rng.integers(1, C, (B, S))
    il, tl = [T] * B, [S] * B
    pd = rng.standard_normal((300 if quick else 1000, 64)).astype(np.float32)

    def cases(M):
        t = lambda a: M.from_numpy(a) if M is ampc else M.from_numpy(a)  # noqa: E731
        return [
            (f"cross_entropy ({n}, {c}) fwd+bwd", ce_case(M, t(logits), t(target))),
            (f"cross_entropy ({n}, {c}) label_smoothing=0.1", ce_case(M, t(logits), t(target), label_smoothing=0.1)),
            (f"cross_entropy ({n}, {c}) weight", ce_case(M, t(logits), t(target), weight=t(w))),
            ("cross_entropy (16, 50, 64) K-dim", ce_case(M, t(kd), t(kd_t))),
            (f"ctc_loss T={T} N={B} C={C} S={S}", ctc_case(M, t(lp), t(tg), il, tl)),
            (f"pdist ({pd.shape[0]}, 64) fwd+bwd", pdist_case(M, t(pd))),
        ]

    rows = []
    torch_cases = cases(torch) if torch is not None else None
    for k, (name, fn) in enumerate(cases(ampc)):
        t_a = time_per_call(fn, min_time=0.05 if quick else 0.5, repeat=3) * 1e3
        row = [name, f"{t_a:.2f}"]
        if torch_cases:
            t_t = time_per_call(torch_cases[k][1], min_time=0.05 if quick else 0.5, repeat=3) * 1e3
            row += [f"{t_t:.2f}", f"{t_a / t_t:.2f}"]
        rows.append(row)
    header = ["loss", "ampc ms", "torch ms", "ampc/torch"][:len(rows[0])]
    print(machine_line())
    print_table("Losses on the CPU, forward + backward (lower time is better)", header, rows)


if __name__ == "__main__":
    main()
