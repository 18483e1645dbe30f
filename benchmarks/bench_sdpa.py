"""F.scaled_dot_product_attention on the CPU: ampc's fused (flash) kernel beside torch's, in one process.

Times forward and forward+backward at T = 4096 (B=1, H=8, D=64, fp32 by default) and prints the
ratios. Peak extra memory is measured in child processes (one per variant) as the growth of the
peak RSS over the inputs (the kernels' workspaces are malloc'd, so an allocator counter would miss
them): ampc fused, torch, and the materialised reference softmax(q k^T * scale) v that forms the
(B, H, T, T) matrix.

    python benchmarks/bench_sdpa.py [--t 4096] [--heads 8] [--dim 64] [--causal]
"""
import argparse
import json
import os
import resource
import subprocess
import sys

from common import machine_line, print_table, time_per_call, try_import_torch


def inputs(M, b, h, t, d, grad):
    import numpy as np
    rng = np.random.default_rng(0)
    # float32 draws: no float64 temporaries raise the peak RSS before the measurement starts
    return [M.tensor(rng.standard_normal((b, h, t, d), dtype=np.float32)).requires_grad_(grad) for _ in range(3)]


def peak_extra_mb(variant, b, h, t, d, causal):
    """Runs one forward+backward of `variant` in this process; the peak RSS growth in MiB."""
    M = try_import_torch() if variant == "torch" else __import__("ampc")
    q, k, v = inputs(M, b, h, t, d, True)
    go = M.ones(b, h, t, d)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if variant == "reference":
        s = (q @ k.transpose(-2, -1)) * (d ** -0.5)
        if causal:
            s = s.masked_fill(M.ones(t, t, dtype=M.bool).triu(1), float("-inf"))
        out = M.softmax(s, -1) @ v
    else:
        out = M.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    out.backward(go)
    return (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--t", type=int, default=4096)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--memory-child", default=None)
    args = ap.parse_args()
    b, h, t, d = args.batch, args.heads, args.t, args.dim
    if args.memory_child:
        print(json.dumps(peak_extra_mb(args.memory_child, b, h, t, d, args.causal)))
        return

    import ampc
    torch = try_import_torch()
    print(machine_line())
    print(f"scaled_dot_product_attention B={b} H={h} T={t} D={d} fp32 causal={args.causal}, "
          f"threads: ampc {ampc.get_num_threads() if hasattr(ampc, 'get_num_threads') else '?'}"
          + (f", torch {torch.get_num_threads()}" if torch else ""))
    rows = []
    peers = [("ampc", ampc)] + ([("torch", torch)] if torch else [])
    times = {}
    for name, M in peers:
        q, k, v = inputs(M, b, h, t, d, False)
        F = M.nn.functional
        times[(name, "fwd")] = time_per_call(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=args.causal),
                                             min_time=0.5, repeat=3)
        qg, kg, vg = inputs(M, b, h, t, d, True)
        go = M.ones(b, h, t, d)

        def fwd_bwd():
            for x in (qg, kg, vg):
                x.grad = None
            F.scaled_dot_product_attention(qg, kg, vg, is_causal=args.causal).backward(go)
        times[(name, "fwd+bwd")] = time_per_call(fwd_bwd, min_time=0.5, repeat=3)
    for phase in ("fwd", "fwd+bwd"):
        a = times[("ampc", phase)]
        tt = times.get(("torch", phase))
        rows.append([phase, "%.1f ms" % (a * 1e3), "%.1f ms" % (tt * 1e3) if tt else "-",
                     "%.2fx" % (a / tt) if tt else "-"])
    print_table("time per call (ampc / torch: below 1 is faster)", ["phase", "ampc", "torch", "ratio"], rows)

    here = os.path.abspath(__file__)
    mem = {}
    for variant in ["ampc", "reference"] + (["torch"] if torch else []):
        cmd = [sys.executable, here, "--memory-child", variant, "--t", str(t), "--batch", str(b), "--heads", str(h),
               "--dim", str(d)] + (["--causal"] if args.causal else [])
        mem[variant] = json.loads(subprocess.check_output(cmd).decode().strip().splitlines()[-1])
    ref = mem["reference"]
    print_table("peak extra memory, forward + backward (RSS growth over the inputs)",
                ["variant", "MiB", "vs materialised"],
                [[k, "%.0f" % v, "%.3fx" % (v / ref if ref else float("nan"))] for k, v in mem.items()])
    print(f"(the (B, H, T, T) fp32 score matrix alone is {b * h * t * t * 4 / 2**20:.0f} MiB)")


if __name__ == "__main__":
    main()
