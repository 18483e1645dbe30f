"""The nn parity harness: every torch.nn module and nn.functional function ampc has, checked against
torch (spec.py: the Case vocabulary; runner.py: the checks; cases_*.py: the cases, one file per family)."""
import glob
import importlib
import os


def all_cases():
    """Every Case of every cases_*.py, in file order; ids must be unique."""
    cases = []
    for path in sorted(glob.glob(os.path.join(os.path.dirname(__file__), "cases_*.py"))):
        mod = importlib.import_module("nn_parity." + os.path.basename(path)[:-3])
        cases.extend(mod.CASES)
    ids = [c.id for c in cases]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    assert not dup, f"nn parity: duplicate case ids {dup}"
    return cases
