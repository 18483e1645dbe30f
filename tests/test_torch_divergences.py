"""Regression tests for the divergences from torch that differential fuzzing found (issue 19):
each case runs the same code with `M = ampc` and `M = torch` and compares what comes out."""
import math
import warnings

import numpy as np
import pytest

import ampc
from helpers import host

torch = pytest.importorskip("torch")


def on_both(fn):
    """fn(M) for M = ampc, then torch: a pair of results, each a NumPy float64 array (or a list of them)."""
    def run(M):
        out = fn(M)
        return [host(t) for t in out] if isinstance(out, (tuple, list)) else host(out)
    return run(ampc), run(torch)


def assert_same(fn, rtol=0, atol=0):
    got, want = on_both(fn)
    got, want = (got, want) if isinstance(got, list) else ([got], [want])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


# ---------------------------------------------------------------- gradients


@pytest.mark.parametrize("rows", [[[1.0, 1.0, 1.0]], [[1.0, 2.0, 3.0], [4.0, 4.0, 4.0]]])
@pytest.mark.parametrize("keepdim", [False, True])
def test_std_backward_is_zero_on_a_constant_slice(rows, keepdim):
    """torch: the grad is 0 where the std is 0 (a 0/0 otherwise, and under AMP every step skips)."""
    def fn(M):
        x = M.tensor(rows, dtype=M.float64, requires_grad=True)
        M.std(x, dim=1, keepdim=keepdim).sum().backward()
        return x.grad
    assert_same(fn, rtol=1e-12)


def test_std_backward_of_a_whole_constant_tensor():
    def fn(M):
        x = M.full((2, 3), 5.0, requires_grad=True)
        x.std().backward()
        return x.grad
    assert_same(fn)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_gelu_backward_in_low_precision_stays_finite(approximate, dtype):
    """The backward runs in fp32 as torch's opmath: a^2 no longer overflows fp16 from |a| ~ 256."""
    values = [100.0, 300.0, -300.0, 1000.0, -1000.0, 0.5, -2.0, 0.0, 6e4]

    def fn(M):
        x = M.tensor(values, dtype=getattr(M, dtype), requires_grad=True)
        M.nn.functional.gelu(x, approximate=approximate).sum().backward()
        assert x.grad.dtype == getattr(M, dtype)
        return x.grad
    got, want = on_both(fn)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-3)


def test_gelu_tanh_double_backward_still_flows():
    def fn(M):
        x = M.tensor([0.3, -1.2, 2.0], dtype=M.float64, requires_grad=True)
        (g,) = M.autograd.grad(M.nn.functional.gelu(x, approximate="tanh").sum(), x, create_graph=True)
        g.sum().backward()
        return [g, x.grad]
    assert_same(fn, rtol=1e-12)


# ---------------------------------------------------------------- attention


@pytest.mark.parametrize("value", [32.0, -40.0])
def test_sdpa_fp16_scores_do_not_overflow_before_the_scale(value):
    """|q.k| = 65536 > fp16's max, while the scaled scores (8192) are fine: torch gives no NaN."""
    def fn(M):
        q = M.full((1, 1, 4, 64), value, dtype=M.float16)
        v = M.arange(4 * 64, dtype=M.float32).reshape(1, 1, 4, 64).to(M.float16) / 256
        return M.nn.functional.scaled_dot_product_attention(q, q, v)
    got, want = on_both(fn)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)


def test_sdpa_fp16_large_scores_backward():
    def fn(M):
        q = M.full((1, 2, 3, 64), 24.0, dtype=M.float16, requires_grad=True)
        k = M.full((1, 2, 3, 64), 24.0, dtype=M.float16, requires_grad=True)
        v = M.ones(1, 2, 3, 64, dtype=M.float16, requires_grad=True)
        M.nn.functional.scaled_dot_product_attention(q, k, v).sum().backward()
        return [q.grad, k.grad, v.grad]
    got, want = on_both(fn)
    # every grad finite; q's and k's are 0 in exact arithmetic (equal keys: uniform probabilities)
    # and here only fp16 rounding of P against scores of ~8192 (ulp 8), so v's is the one compared
    assert all(np.isfinite(g).all() for g in got)
    np.testing.assert_allclose(got[2], want[2], rtol=1e-3, atol=1e-3)


# ---------------------------------------------------------------- autocast and GradScaler


def test_autocast_takes_a_device_string_with_an_index():
    for M in (ampc, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ac = M.autocast("cpu:0")
        with ac:
            assert M.is_autocast_enabled("cpu")
        assert not M.is_autocast_enabled("cpu")


def test_autocast_exit_twice_is_harmless():
    for M in (ampc, torch):
        ac = M.autocast("cpu")
        with ac:
            pass
        ac.__exit__(None, None, None)
        assert not M.is_autocast_enabled("cpu")


def test_grad_scaler_growth_interval_zero_never_grows():
    def fn(M):
        w = M.ones(2, requires_grad=True)
        opt = M.optim.SGD([w], lr=0.1)
        scaler = M.amp.GradScaler("cpu", init_scale=8.0, growth_interval=0)
        scales = []
        for _ in range(3):
            opt.zero_grad()
            scaler.scale((w * 2).sum()).backward()
            scaler.step(opt)
            scaler.update()
            scales.append(scaler.get_scale())
        return M.tensor(scales)
    assert_same(fn)


@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_maximum_minimum_pass_the_grad_through_nan(op):
    """torch: where either operand is NaN (no comparison holds) both inputs get the whole grad."""
    def fn(M):
        a = M.tensor([float("nan"), 1.0, 2.0, 3.0, float("nan")], requires_grad=True)
        b = M.tensor([0.0, float("nan"), 2.0, 1.0, float("nan")], requires_grad=True)
        getattr(M, op)(a, b).sum().backward()
        return [a.grad, b.grad]
    assert_same(fn)


def test_pow_exponent_grad_takes_the_log_in_the_promoted_dtype():
    def fn(M):
        a = M.tensor([1.3, 2.7, 0.0, 5.0], dtype=M.bfloat16, requires_grad=True)
        e = M.tensor([2.2, 0.7, 1.5, -0.5], requires_grad=True)
        (a ** e).sum().backward()
        return [a.grad, e.grad]
    assert_same(fn, rtol=1e-6)


@pytest.mark.parametrize("mode", ["floor", "trunc"])
@pytest.mark.parametrize("scalar", [False, True])
def test_div_with_rounding_mode_keeps_a_zero_gradient_graph(mode, scalar):
    for M in (ampc, torch):
        x = M.tensor([1.5, -2.5, 3.0], requires_grad=True)
        y = 2.0 if scalar else M.tensor([2.0, 2.0, 0.5], requires_grad=True)
        r = M.div(x, y, rounding_mode=mode)
        assert r.requires_grad
        assert type(r.grad_fn).__name__ == "DivBackward2"
        r.sum().backward()
        assert host(x.grad).tolist() == [0.0, 0.0, 0.0]
        if not scalar:
            assert host(y.grad).tolist() == [0.0, 0.0, 0.0]


def test_div_with_rounding_mode_in_place_keeps_the_graph():
    for M in (ampc, torch):
        x = M.tensor([1.5, -2.5, 3.0], requires_grad=True)
        h = x * 1
        h.div_(2.0, rounding_mode="floor")
        assert h.requires_grad
        (h + x).sum().backward()
        assert host(x.grad).tolist() == [1.0, 1.0, 1.0]


# ---------------------------------------------------------------- fill values


OVERFLOWS = [("uint8", 300), ("uint8", -256), ("uint8", 255.5), ("uint8", -0.5), ("uint8", float("nan")),
             ("uint8", float("inf")), ("int32", 2 ** 31), ("int32", -2 ** 31 - 1), ("int32", float("nan")),
             ("int64", 1e19), ("int64", float("-inf")), ("float32", 1e39), ("float32", -1e39),
             ("float16", 1e6), ("float16", 65519), ("float16", -65505.0), ("float16", 70000), ("bfloat16", 3.4e38)]
FITS = [("uint8", -255), ("uint8", -1), ("uint8", 255), ("uint8", 254.9), ("int32", 2 ** 31 - 1), ("int64", 2 ** 63 - 1),
        ("float32", float("inf")), ("float32", float("nan")), ("float32", 3.4e38), ("float16", 65504),
        ("float16", float("-inf")), ("bfloat16", 3.38e38), ("float64", 1e308), ("bool", 2), ("bool", 0.5)]


@pytest.mark.parametrize("dtype,value", OVERFLOWS)
def test_fill_of_a_value_the_dtype_cannot_hold_raises_as_torch(dtype, value):
    for M in (ampc, torch):
        with pytest.raises(RuntimeError, match="value cannot be converted to type .* without overflow"):
            M.zeros(2, dtype=getattr(M, dtype)).fill_(value)
        with pytest.raises(RuntimeError, match="without overflow"):
            M.full((2,), value, dtype=getattr(M, dtype))
        with pytest.raises(RuntimeError, match="without overflow"):
            M.zeros(2, dtype=getattr(M, dtype)).masked_fill(M.tensor([True, False]), value)


@pytest.mark.parametrize("dtype,value", FITS)
def test_fill_of_a_value_the_dtype_holds_or_rounds(dtype, value):
    def fn(M):
        return M.zeros(2, dtype=getattr(M, dtype)).fill_(value)
    got, want = on_both(fn)
    np.testing.assert_array_equal(got, want)


def test_fill_overflow_names_the_cpp_type_as_torch():
    for dtype, name in [("uint8", "uint8_t"), ("int32", "int"), ("int64", "int64_t"), ("float32", "float")]:
        value = 1e39 if dtype == "float32" else float("nan")
        with pytest.raises(RuntimeError) as got:
            ampc.zeros(1, dtype=getattr(ampc, dtype)).fill_(value)
        with pytest.raises(RuntimeError) as want:
            torch.zeros(1, dtype=getattr(torch, dtype)).fill_(value)
        assert str(got.value) == str(want.value) == f"value cannot be converted to type {name} without overflow"


# ---------------------------------------------------------------- indexing


@pytest.mark.parametrize("key", [([1], True), (True, [1]), ([0, 2], True, slice(None)), (True, slice(None), [1, 3]),
                                 (slice(None), True, [1, 2]), ([[0], [2]], True, [1, 3]), (True,), (False,),
                                 (None, True, 0), ([1], None, True)])
def test_a_python_bool_among_index_tensors_indexes_as_torch(key):
    def fn(M):
        x = M.arange(12, dtype=M.float32).reshape(3, 4)
        return x[key]
    got, want = on_both(fn)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_a_false_beside_an_index_tensor_cannot_broadcast():
    for M in (ampc, torch):
        with pytest.raises(IndexError, match="shape mismatch"):
            M.zeros(3, 4)[[0, 1], False]


def test_setitem_with_a_bool_among_index_tensors():
    def fn(M):
        x = M.zeros(3, 4)
        x[[1], True] = M.tensor([1.0, 2.0, 3.0, 4.0])
        return x
    assert_same(fn)


def test_copy_into_an_expanded_view_is_refused_as_torch():
    for M in (ampc, torch):
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            M.zeros(1).expand(3).copy_(M.arange(3.0))
        x = M.zeros(1).expand(3)
        x.fill_(2.0)  # a fill writes one value: allowed
        x[0] = 1.0
        assert host(x).tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("norm", ["layer_norm", "group_norm", "batch_norm"])
def test_norms_of_a_slice_holding_inf_are_nan_as_torch(norm):
    def fn(M):
        x = M.arange(16, dtype=M.float32).reshape(2, 4, 2)
        x[0, 1, 0] = float("inf")
        F = M.nn.functional
        if norm == "layer_norm":
            return F.layer_norm(x, (4, 2))
        if norm == "group_norm":
            return F.group_norm(x, 2)
        return F.batch_norm(x, None, None, training=True)
    got, want = on_both(fn)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[~np.isnan(want)], want[~np.isnan(want)], rtol=1e-5, atol=1e-5)


def test_norm_grad_of_a_subnormal_norm_stays_finite():
    # |a| / y first: g / y overflows fp32 for y ~ 1.4e-40 (the gradient was -inf)
    a = ampc.tensor([[1e-40, 0.5], [1e-40, -0.5]], requires_grad=True)
    ampc.norm(a, dim=0).sum().backward()
    g = a.grad.numpy()
    assert np.isfinite(g).all()
    np.testing.assert_allclose(g[:, 0], [2 ** -0.5, 2 ** -0.5], rtol=1e-5)


@pytest.mark.parametrize("p", [2.0, 3.0, 0.5])
def test_norm_grad_matches_torch(p):
    x = np.array([[3.0, -4.0, 0.5], [1e-3, 2.0, -1.0]])
    ours = ampc.tensor(x, requires_grad=True)
    ampc.norm(ours, p=p, dim=1).sum().backward()
    ref = torch.tensor(x, requires_grad=True)
    torch.norm(ref, p=p, dim=1).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), ref.grad.numpy(), rtol=1e-12)


def test_var_grad_of_zero_dim_without_degrees_of_freedom_is_torchs():
    # torch: 2 / 0 is inf, NaN where a == mean (so a NaN input gets inf)
    for value, want in ((float("nan"), math.inf), (2.0, None)):
        a = ampc.tensor(value, dtype=ampc.float64, requires_grad=True)
        a.var(dim=0, keepdim=True).backward()
        got = float(a.grad)
        assert (got == want) if want is not None else math.isnan(got)


def test_pow_scalar_exponent_outside_half_range_refused_as_torch():
    for dt in (ampc.float16, ampc.bfloat16):
        x = ampc.ones(3, dtype=dt)
        with pytest.raises(RuntimeError, match="without overflow"):
            x.pow(1e5 if dt == ampc.float16 else 1e39)
    assert ampc.ones(2).pow(1e39).tolist() == [1.0, 1.0]  # fp32 keeps the exponent as a double
    assert ampc.ones(2, dtype=ampc.float16).pow(ampc.tensor(1e5)).tolist() == [1.0, 1.0]  # a tensor exponent: no check
