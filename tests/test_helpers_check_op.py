"""check_op (tests/helpers.py), the one-call op checker: it passes on correct ops and catches a
wrong value, a wrong result dtype and a wrong gradient (each planted through a deliberately
wrong `ref`), in every floating dtype, and still works without torch (ampc float64 + gradcheck)."""
import numpy as np
import pytest

import helpers
from helpers import check_op

FLOATS = ["float32", "float16", "bfloat16", "float64"]


def _wrong_grad_exp(M, x):
    """exp(x) in value, but the gradient flowing back is 2 * exp(x)."""
    y = M.exp(x)
    return y + (y - y.detach())


CORRECT = [
    ("add", lambda M, x, y: x + y, [(3, 4), (3, 4)]),
    ("mul broadcast", lambda M, x, y: x * y, [(2, 3, 4), (4,)]),
    ("exp", lambda M, x: M.exp(x), [(5, 6)]),
    ("tanh", lambda M, x: M.tanh(x), [(5, 6)]),
    ("sum dim", lambda M, x: x.sum(dim=1), [(3, 7)]),
    ("mean all", lambda M, x: x.mean(), [(4, 5)]),
    ("max dim (values, indices)", lambda M, x: x.max(dim=1), [(3, 5)]),
    ("matmul", lambda M, x, y: M.matmul(x, y), [(3, 4), (4, 5)]),
    ("softmax", lambda M, x: M.nn.functional.softmax(x, dim=-1), [(3, 8)]),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("what,fn,shapes", CORRECT, ids=[c[0] for c in CORRECT])
def test_passes_on_correct_ops(what, fn, shapes, dtype):
    out = check_op(fn, shapes, dtype=dtype)
    assert out is not None


def test_returns_the_ampc_outputs():
    import ampc
    out = check_op(lambda M, x: x * 2, [(2, 3)])
    assert isinstance(out, ampc.Tensor) and tuple(out.shape) == (2, 3)
    vals, idx = check_op(lambda M, x: x.max(dim=0), [(4, 3)])
    assert idx.dtype == ampc.int64


def test_integer_and_given_inputs():
    check_op(lambda M, x, y: x * y + x, [(3, 4), (3, 4)], dtype="int64", low=-5, high=5)
    x = np.random.default_rng(1).standard_normal((3, 4))
    idx = np.array([[0], [3], [1]])
    check_op(lambda M, x, i: M.gather(x, 1, i), inputs=[x, idx])
    check_op(lambda M, x, dim: x.sum(dim=dim), inputs=[x, 0])
    check_op(lambda M, x, dim=0: x.cumsum(dim=dim), [(3, 4)], kwargs={"dim": 1})


@pytest.mark.parametrize("dtype", FLOATS)
def test_catches_a_wrong_value(dtype):
    with pytest.raises(AssertionError, match="result 0"):
        check_op(lambda M, x: M.exp(x), [(3, 4)], dtype=dtype, ref=lambda M, x: M.exp(x) * 1.05)


def test_catches_a_small_wrong_value_at_fp32_but_not_at_bf16():
    wrong = lambda M, x: x * (1 + 1e-4)  # noqa: E731
    with pytest.raises(AssertionError, match="out of rtol"):
        check_op(lambda M, x: x, [(8, 8)], low=1.0, high=2.0, ref=wrong)
    check_op(lambda M, x: x, [(8, 8)], dtype="bfloat16", low=1.0, high=2.0, ref=wrong, grad=False)


def test_catches_a_wrong_integer_result():
    with pytest.raises(AssertionError, match="exact"):
        check_op(lambda M, x: x.argmax(dim=1), [(4, 6)], ref=lambda M, x: x.argmin(dim=1))


def test_catches_a_wrong_dtype():
    with pytest.raises(AssertionError, match="dtype"):
        check_op(lambda M, x: x * 2, [(3, 4)], ref=lambda M, x: (x * 2).double())
    with pytest.raises(AssertionError, match="dtype"):
        check_op(lambda M, x: x * 2, [(3, 4)], dtype="float16", grad=False, ref=lambda M, x: (x * 2).float())


def test_catches_a_wrong_number_of_results():
    with pytest.raises(AssertionError, match="results"):
        check_op(lambda M, x: x.max(dim=1), [(3, 4)], ref=lambda M, x: x.amax(dim=1))


@pytest.mark.parametrize("dtype", FLOATS)
def test_catches_a_wrong_gradient(dtype):
    with pytest.raises(AssertionError, match="grad of input 0"):
        check_op(lambda M, x: M.exp(x), [(3, 4)], dtype=dtype, ref=_wrong_grad_exp)
    check_op(lambda M, x: M.exp(x), [(3, 4)], dtype=dtype, ref=_wrong_grad_exp, grad=False)


def test_catches_a_wrong_gradient_of_the_second_input():
    with pytest.raises(AssertionError, match="grad of input 1"):
        check_op(lambda M, x, y: M.matmul(x, y), [(3, 4), (4, 2)],
                 ref=lambda M, x, y: M.matmul(x, y.detach()) + M.matmul(x.detach(), 3 * y) - M.matmul(x,
                                              3 * y).detach())


def test_tolerances_can_be_widened():
    wrong = lambda M, x: M.exp(x) * 1.01  # noqa: E731
    with pytest.raises(AssertionError):
        check_op(lambda M, x: M.exp(x), [(3, 4)], ref=wrong, grad=False)
    check_op(lambda M, x: M.exp(x), [(3, 4)], ref=wrong, grad=False, rtol=0.02, atol=0.0)


def test_seeded_inputs_are_reproducible_and_in_range():
    a = check_op(lambda M, x: x + 0, [(50,)], seed=3, low=0.5, high=0.75, grad=False).numpy()
    b = check_op(lambda M, x: x + 0, [(50,)], seed=3, low=0.5, high=0.75, grad=False).numpy()
    c = check_op(lambda M, x: x + 0, [(50,)], seed=4, low=0.5, high=0.75, grad=False).numpy()
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert a.min() >= 0.5 and a.max() <= 0.75


def test_one_of_shapes_and_inputs():
    with pytest.raises(ValueError):
        check_op(lambda M, x: x, [(2,)], inputs=[np.ones(2)])
    with pytest.raises(ValueError):
        check_op(lambda M, x: x)


def test_without_torch_compares_with_ampc_float64_and_gradcheck(monkeypatch):
    monkeypatch.setattr(helpers, "torch", None)
    check_op(lambda M, x, y: M.matmul(x, y).tanh(), [(3, 4), (4, 2)])
    check_op(lambda M, x: M.nn.functional.softmax(x, dim=-1), [(3, 5)], dtype="float16")
    with pytest.raises(AssertionError, match="float64"):
        check_op(lambda M, x: M.exp(x), [(3, 4)], ref=lambda M, x: M.exp(x) * 1.05)
    from ampc.testing import GradcheckError
    with pytest.raises(GradcheckError):
        check_op(lambda M, x: M.exp(x), [(3, 4)], dtype="float64", ref=_wrong_grad_exp)
