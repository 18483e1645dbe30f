"""Optimizer step time: ampc's fused Adam (one C call per device and dtype) beside PyTorch's Adam with
foreach=True and with fused=True, over 1, 100 and 1000 parameter tensors of ~10M elements in total.
Also SGD with momentum and AdamW, and the GradScaler-driven step (grad_scale + found_inf on the device).

Usage: python benchmarks/bench_optim.py [--quick]
Prints milliseconds per step and the ratio ampc/torch (lower is better)."""
import sys

import numpy as np

from common import machine_line, print_table, time_per_call, try_import_torch

import ampc
import ampc.optim as aoptim


def make_params(n_tensors, total, seed=0):
    rng = np.random.default_rng(seed)
    size = total // n_tensors
    return ([rng.standard_normal(size).astype(np.float32) for _ in range(n_tensors)],
            [rng.standard_normal(size).astype(np.float32) * 1e-2 for _ in range(n_tensors)])


def ampc_step(name, values, grads, **kw):
    params = [ampc.from_numpy(v.copy()).requires_grad_() for v in values]
    for p, g in zip(params, grads):
        p.grad = ampc.from_numpy(g.copy())
    opt = getattr(aoptim, name)(params, **kw)
    return opt.step


def ampc_scaled_step(name, values, grads, **kw):
    """The step GradScaler.step makes: found_inf read on the device (grad_scale None: the scaler has
    unscaled the grads already)."""
    params = [ampc.from_numpy(v.copy()).requires_grad_() for v in values]
    for p, g in zip(params, grads):
        p.grad = ampc.from_numpy(g.copy())
    opt = getattr(aoptim, name)(params, **kw)
    opt.found_inf = ampc.zeros((), dtype=ampc.float32)
    opt.grad_scale = None
    return opt.step


def torch_step(torch, name, values, grads, **kw):
    params = [torch.from_numpy(v.copy()).requires_grad_() for v in values]
    for p, g in zip(params, grads):
        p.grad = torch.from_numpy(g.copy())
    opt = getattr(torch.optim, name)(params, **kw)
    return opt.step


def torch_has_cpu_fused(torch, name):
    try:
        p = torch.zeros(4, requires_grad=True)
        p.grad = torch.zeros(4)
        getattr(torch.optim, name)([p], fused=True).step()
        return True
    except (RuntimeError, TypeError):
        return False


def main(quick=False):
    torch = try_import_torch()
    total = 2_000_000 if quick else 10_000_000
    counts = [1, 100] if quick else [1, 100, 1000]
    min_time = 0.1 if quick else 0.3
    print(machine_line())
    cases = [("Adam", {"lr": 1e-3}), ("AdamW", {"lr": 1e-3}), ("SGD", {"lr": 1e-2, "momentum": 0.9})]
    for name, kw in cases:
        fused = torch is not None and torch_has_cpu_fused(torch, name)
        rows = []
        for n in counts:
            values, grads = make_params(n, total)
            t_ampc = time_per_call(ampc_step(name, values, grads, **kw), min_time=min_time, repeat=3) * 1e3
            t_scaled = time_per_call(ampc_scaled_step(name, values, grads, **kw), min_time=min_time, repeat=3) * 1e3
            row = [n, f"{total // n}", f"{t_ampc:.2f}", f"{t_scaled:.2f}"]
            if torch is not None:
                t_fe = time_per_call(torch_step(torch, name, values, grads, foreach=True, **kw), min_time=min_time,
                                     repeat=3) * 1e3
                row += [f"{t_fe:.2f}", f"{t_ampc / t_fe:.2f}"]
                if fused:
                    t_fu = time_per_call(torch_step(torch, name, values, grads, fused=True, **kw),
                                         min_time=min_time, repeat=3) * 1e3
                    row += [f"{t_fu:.2f}", f"{t_ampc / t_fu:.2f}"]
            rows.append(row)
        header = ["tensors", "elems each", "ampc ms", "ampc+amp ms"]
        if torch is not None:
            header += ["torch foreach ms", "ampc/foreach"]
            if fused:
                header += ["torch fused ms", "ampc/fused"]
        print_table(f"{name} step over {total / 1e6:.0f}M float32 elements (lower is better)", header, rows)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
