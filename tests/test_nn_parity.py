"""Every nn module and functional function against torch on the CPU (tests/nn_parity: values, dtypes,
gradients, state_dict both ways, repr, initialisation under the same seed), and the tripwire that
keeps the harness complete: each torch.nn class and nn.functional function ampc has is a case."""
import inspect

import pytest
import torch

import ampc
from nn_parity import all_cases
from nn_parity.runner import run

CASES = all_cases()

# names ampc has that are checked elsewhere, with where and why
NOT_IN_HARNESS = {
    "nn.Module": "the base class: tests/test_nn_modules.py (registration, traversal, state_dict, hooks)",
    "nn.functional.multi_head_attention_forward": "the body of nn.MultiheadAttention, reached by its cases",
}


def _params():
    for c in CASES:
        for dt in c.dtypes:
            yield pytest.param(c, dt, id=f"{c.id}-{dt}")


@pytest.mark.parametrize("case,dtype", list(_params()))
def test_parity_cpu(case, dtype):
    run(case, dtype, "cpu")


def _ampc_nn_names():
    """"nn.X" for every torch.nn Module subclass ampc.nn has, "nn.functional.f" for every torch
    nn.functional function ampc's has."""
    names = []
    for n in dir(torch.nn):
        obj = getattr(torch.nn, n)
        if inspect.isclass(obj) and issubclass(obj, torch.nn.Module) and hasattr(ampc.nn, n):
            names.append("nn." + n)
    for n in dir(torch.nn.functional):
        if n.startswith("_") or not callable(getattr(torch.nn.functional, n)) or inspect.isclass(
                getattr(torch.nn.functional, n)):
            continue
        if hasattr(ampc.nn.functional, n):
            names.append("nn.functional." + n)
    return names


def test_every_nn_name_ampc_has_is_in_the_harness():
    covered = {c.name for c in CASES}
    missing = [n for n in _ampc_nn_names() if n not in covered and n not in NOT_IN_HARNESS]
    assert not missing, f"add a Case (tests/nn_parity/cases_*.py) for: {missing}"


def test_the_harness_catches_a_wrong_module():
    """The runner fails when ampc's result differs from torch's (a harness that cannot fail proves nothing)."""
    from nn_parity.spec import Case, X
    wrong = Case("nn.ReLU", lambda M: M.nn.ReLU() if M is torch else M.nn.Tanh(), [X((3, 4))], id="wrong")
    with pytest.raises(AssertionError):
        run(wrong, "float32", "cpu")
    wrong_init = Case("nn.Linear", lambda M: M.nn.Linear(3, 2) if M is torch else
                      (ampc.manual_seed(7), M.nn.Linear(3, 2))[1], [X((2, 3))], id="wrong-init")
    with pytest.raises(AssertionError, match="initial"):
        run(wrong_init, "float32", "cpu")
