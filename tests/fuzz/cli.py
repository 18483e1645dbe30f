"""The fuzzer's command line (`make fuzz N=100000 SEEDS=1,2,3`).

  python tests/fuzz/cli.py --n 20000 --seeds 1,2,3,4   N cases split over the seeds, counts printed
  python tests/fuzz/cli.py --show 3:1234               one case: its reproducer and both outcomes
  --ops gather,cat                                      only these ops (names as in the counts)
Exit status 1 when a case fails (a known divergence is not a failure).
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cases import make_case, reproducer  # noqa: E402
from pool import run_cases  # noqa: E402
from report import failures, summary  # noqa: E402


def batches(seeds, n, size=50):
    """n cases spread evenly over the seeds, in batches of `size` indices."""
    per_seed = -(-n // len(seeds))
    return [(s, i, min(i + size, per_seed)) for s in seeds for i in range(0, per_seed, size)]


def show(spec, ops):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    import ampc
    import torch

    from compare import compare, run
    from known import classify
    from ops import CANCELLING
    seed, index = map(int, spec.split(":"))
    case = make_case(seed, index, ops)
    print(reproducer(case))
    got, want = run(ampc, case), run(torch, case)
    diffs = compare(got, want, lambda: run(torch, case, float64=True), cancelling=case.op in CANCELLING)
    ref = run(torch, case, float64=True)
    print("\ndiffs:", diffs, "\nknown:", classify(case, diffs, got) if diffs else None)
    if got[0] != "ok" or want[0] != "ok":
        print("ampc: ", got[:3], "\ntorch:", want[:3])
        return
    for what, k in (("result", 1), ("grad", 2)):
        for i, (g, w) in enumerate(zip(got[k], want[k])):
            if g is None or w is None or g[1] != w[1] or g[0] == "py":
                print("%s %d: ampc %s, torch %s" % (what, i, g and g[:2], w and w[:2]))
                continue
            bad = np.argwhere(~((g[2] == w[2]) | (np.isnan(g[2]) & np.isnan(w[2]))))[:6]
            for at in bad:
                at = tuple(at)
                r = ref[k][i][2][at] if ref[0] == "ok" and ref[k][i] is not None and ref[k][i][1] == g[1] else "-"
                print("%s %d %s at %s: ampc %r torch %r float64 %r" % (what, i, g[0], list(at), g[2][at], w[2][at], r))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=10000)
    p.add_argument("--seeds", default="1,2,3,4,5,6,7,8,9,10")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--timeout", type=float, default=30.0, help="seconds one case may take before it is a hang")
    p.add_argument("--ops", default="")
    p.add_argument("--show", help="SEED:INDEX")
    p.add_argument("--brief", action="store_true", help="failure classes without reproducers")
    a = p.parse_args(argv)
    ops = a.ops.split(",") if a.ops else None
    if a.show:
        return show(a.show, ops)
    seeds = [int(s) for s in a.seeds.split(",")]
    t0 = time.time()
    records = run_cases(batches(seeds, a.n), workers=a.workers, timeout=a.timeout, ops=ops)
    print(summary(records, ops, reproducers=not a.brief))
    print("\n%d cases over seeds %s in %.0f s" % (len(records), a.seeds, time.time() - t0))
    return 1 if failures(records) else 0


if __name__ == "__main__":
    sys.exit(main())
