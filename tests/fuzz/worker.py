"""A fuzz worker: a child process that runs cases on ampc and on torch and reports each verdict.

It reads batches from stdin, one "SEED START STOP" line each, and writes one JSON line per case
to its result channel (the stdout it was started with; anything the libraries print goes to
stderr instead, so it cannot garble a result), then {"done": true} after each batch. The parent
(pool.py) restarts it when it dies or hangs; the case it was running is then the crash.
"""
import json
import os
import sys
import time
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")


def main():
    results = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # C-level and Python prints from the libraries go to stderr
    sys.stdout = sys.stderr
    warnings.filterwarnings("ignore")

    import ampc
    import torch

    from cases import make_case
    from compare import compare, run
    from known import classify
    from ops import CANCELLING

    torch.set_num_threads(1)
    ops = os.environ.get("FUZZ_OPS", "").split(",") if os.environ.get("FUZZ_OPS") else None
    # the pool's own test (test_fuzz.py) makes chosen cases crash or hang: "crash:2,hang:3"
    selftest = dict(x.split(":")[::-1] for x in os.environ.get("FUZZ_SELFTEST", "").split(",") if x)
    results.write(json.dumps({"ready": True}) + "\n")
    results.flush()
    for line in sys.stdin:
        seed, start, stop = map(int, line.split())
        for index in range(start, stop):
            try:
                case = make_case(seed, index, ops)
            except Exception as e:  # a bug of the fuzzer's own: reported like a failure, never skipped
                results.write(json.dumps({"seed": seed, "index": index, "op": "?", "status": "fail",
                                          "diffs": [["fuzzer_error", repr(e)]], "known": None}) + "\n")
                results.flush()
                continue
            if selftest.get(str(index)) == "crash":
                os.abort()
            if selftest.get(str(index)) == "hang":
                time.sleep(3600)
            got = run(ampc, case)
            diffs = compare(got, run(torch, case), lambda: run(torch, case, float64=True),
                            cancelling=case.op in CANCELLING)
            known = classify(case, diffs, got) if diffs else None
            status = "pass" if not diffs else ("known" if known else "fail")
            results.write(json.dumps({"seed": seed, "index": index, "op": case.op, "status": status,
                                      "diffs": diffs, "known": known}) + "\n")
            results.flush()
        results.write(json.dumps({"done": True}) + "\n")
        results.flush()


if __name__ == "__main__":
    main()
