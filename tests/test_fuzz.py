"""The differential fuzzer against torch (tests/fuzz, `make fuzz` for long runs) on a fixed budget.

test_fuzz_fixed_seeds runs CASES cases over SEEDS in worker processes and fails with one line
and one reproducer per failure class: a crash, a hang, an error on one side only, a different
exception type, result dtype, shape, value or gradient. Differences already explained are in
tests/fuzz/known.py; a fix that lands makes its entry unnecessary, and the entry is then deleted.
"""
import os
import sys

import pytest

import ampc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fuzz"))

from cases import make_case, reproducer, source  # noqa: E402
from cli import batches  # noqa: E402
from known import KNOWN  # noqa: E402
from ops import NOT_FUZZED, OPS, ROWS  # noqa: E402
from pool import run_cases  # noqa: E402
from report import describe, failures  # noqa: E402

SEEDS = [1, 2, 3, 4, 5, 6, 7, 8]
CASES = 16000  # about two minutes on two cores


@pytest.fixture(scope="module")
def torch_oracle():
    return pytest.importorskip("torch")


def test_fuzz_fixed_seeds(torch_oracle):
    records = run_cases(batches(SEEDS, CASES), workers=2)
    assert [(r["seed"], r["index"]) for r in records] == [(s, i) for s in SEEDS for i in range(CASES // len(SEEDS))]
    fails = failures(records)
    assert not fails, "%d fuzz failure classes (rerun one: python tests/fuzz/cli.py --show SEED:INDEX):\n\n%s" % (
        len(fails), "\n\n".join(describe(cls, recs) for cls, recs in sorted(fails.items(), key=lambda kv: -len(kv[1]))))


def test_every_op_table_row_is_fuzzed():
    table = {row["name"] for row in ampc._C._op_table()}
    reached = {row for rows in ROWS.values() for row in rows}
    assert not table - reached - set(NOT_FUZZED), "op-table rows no generator in tests/fuzz/ops.py reaches (add one, " \
        "or list the row in NOT_FUZZED with its reason): %s" % sorted(table - reached - set(NOT_FUZZED))
    assert not (reached | set(NOT_FUZZED)) - table, "tests/fuzz/ops.py names rows the op table does not have: %s" % (
        sorted((reached | set(NOT_FUZZED)) - table))


def test_cases_are_reproducible_from_seed_and_index():
    assert source(make_case(3, 77)) == source(make_case(3, 77))
    assert len({source(make_case(3, i)) for i in range(50)}) == 50
    assert {make_case(1, i).op for i in range(3000)} == set(OPS)


def test_reproducer_runs_on_its_own(capsys):
    for i in range(40):
        case = make_case(1, i)
        try:
            exec(reproducer(case), {})
        except Exception:  # a case may raise (on both libraries); the program itself must be valid Python
            pass
    compile(reproducer(make_case(1, 0)), "<reproducer>", "exec")


def test_known_divergences_have_unique_ids():
    ids = [k[0] for k in KNOWN]
    assert len(ids) == len(set(ids))


def test_pool_survives_crashes_and_hangs(torch_oracle, monkeypatch):
    monkeypatch.setenv("FUZZ_SELFTEST", "crash:2,hang:4")
    records = run_cases([(1, 0, 6)], workers=1, timeout=5)
    assert [r["index"] for r in records] == list(range(6))
    assert records[2]["status"] == "crash" and "exit status" in records[2]["diffs"][0][1]
    assert records[4]["status"] == "hang"
    assert all(r["status"] not in ("crash", "hang") for i, r in enumerate(records) if i not in (2, 4))
