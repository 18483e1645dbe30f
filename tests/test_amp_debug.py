"""ampc.amp.debug: the per-op census of values under autocast and the first op where a non-finite
value appeared (issue 18). Counts are checked against NumPy on tensors of known content; the
first-overflow search against a model built to overflow at a known layer."""
import warnings

import numpy as np
import pytest

import ampc
from ampc import nn


def overflowing_mlp(layer_scale=3000.0):
    """Linear(8,16) -> ReLU -> Linear(16,16) -> Linear(16,4); module '2' is scaled so its fp16
    output exceeds 65504 for inputs of size ~100, while modules '0' and '1' stay in range."""
    ampc.manual_seed(0)
    m = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.Linear(16, 4))
    with ampc.no_grad():
        m[2].weight.mul_(layer_scale)
    return m


def test_census_counts_match_numpy():
    vals = np.array([0.0, -0.0, 1e-6, -3e-7, 6.2e-5, 1.0, -2.5, np.inf, -np.inf, np.nan, 65504.0], np.float32)
    x = ampc.tensor(vals).to(ampc.float16)
    with ampc.amp.debug() as d:
        y = x.clone()
    (rec,) = [r for r in d.records if r.outputs]
    (o,) = rec.outputs
    h = vals.astype(np.float16)
    finite = h[np.isfinite(h)]
    assert (o.dtype, o.numel, o.n_nan, o.n_inf) == ("float16", 11, 1, 2)
    assert o.n_zero == int((finite == 0).sum()) == 2
    assert o.n_subnormal == int(((finite != 0) & (np.abs(finite) < 2.0 ** -14)).sum()) == 2
    assert o.max_abs == 65504.0
    assert rec.phase == "forward" and rec.node is None and rec.device == "cpu"
    assert y.dtype == ampc.float16


def test_bf16_subnormal_threshold_is_float32s():
    x = ampc.tensor([1e-39, 1e-30, 0.0]).to(ampc.bfloat16)  # 1e-39 is subnormal in bf16 and fp32
    with ampc.amp.debug() as d:
        x.clone()
    o = d.records[-1].outputs[0]
    assert (o.n_subnormal, o.n_zero) == (1, 1)


def test_names_the_first_overflowing_layer():
    m = overflowing_mlp()
    x = ampc.randn(4, 8) * 100
    with ampc.amp.debug(m) as d:
        with ampc.autocast("cpu", dtype=ampc.float16):
            y = m(x)
        y.float().sum().backward()
    first = d.first_nonfinite
    assert first is not None
    assert (first.module, first.phase, first.dtype) == ("2", "forward", "float16")
    assert "float16" in first.input_dtypes
    assert first.autocast is True
    assert "module '2'" in first.where()
    # everything before it was finite, and the layers before ran in fp16 too
    before = d.records[:first.index]
    assert before and all(r.nonfinite == 0 for r in before)
    assert any(r.module == "0" and r.dtype == "float16" for r in before)
    # the backward ran inside the session and its records name their nodes
    back = [r for r in d.records if r.phase == "backward"]
    assert back and all(r.node for r in back)
    table = d.to_markdown()
    assert "First non-finite value: " in table and "| gemm | forward | float16 |" in table


def test_bf16_does_not_overflow_where_fp16_does():
    m = overflowing_mlp()
    x = ampc.randn(4, 8) * 100
    with ampc.amp.debug(m) as d:
        with ampc.autocast("cpu", dtype=ampc.bfloat16):
            m(x).float().sum().backward()
    assert d.first_nonfinite is None
    assert max(r.max_abs for r in d.records) > 65504  # the values fp16 could not hold


def test_on_nonfinite_raise_and_warn():
    m = overflowing_mlp()
    x = ampc.randn(4, 8) * 100
    with pytest.raises(FloatingPointError, match=r"gemm in forward of module '2'"):
        with ampc.amp.debug(m, on_nonfinite="raise"):
            with ampc.autocast("cpu", dtype=ampc.float16):
                m(x)
    with pytest.warns(RuntimeWarning, match="first non-finite value"):
        with ampc.amp.debug(m, on_nonfinite="warn"):
            with ampc.autocast("cpu", dtype=ampc.float16):
                m(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with ampc.amp.debug(m, on_nonfinite="warn"):
            m(x)  # fp32: no overflow, no warning
    with pytest.raises(ValueError, match="on_nonfinite"):
        ampc.amp.debug(on_nonfinite="loud")


def test_off_outside_the_block_and_no_nesting():
    x = ampc.ones(3)
    with ampc.amp.debug() as d:
        with pytest.raises(RuntimeError, match="already active"):
            with ampc.amp.debug():
                pass
        x + 1
    n = len(d.records)
    assert n >= 1
    x * 2
    assert len(d.records) == n
    m = overflowing_mlp()
    with ampc.amp.debug(m):
        pass
    assert all(not mod._forward_pre_hooks for mod in m.modules())  # hooks removed


def test_an_error_inside_the_block_is_not_replaced():
    with pytest.raises(ZeroDivisionError):
        with ampc.amp.debug(on_nonfinite="raise"):
            ampc.tensor([1.0]) / ampc.tensor([0.0])  # inf, but the block's own error wins
            1 / 0


def test_records_backward_of_a_custom_loss_with_node_names():
    x = ampc.tensor([1.0, 2.0], requires_grad=True)
    with ampc.amp.debug() as d:
        (x.exp() * x).sum().backward()
    nodes = {r.node for r in d.records if r.phase == "backward"}
    assert "MulBackward0" in nodes and "ExpBackward0" in nodes
    np.testing.assert_allclose(x.grad.numpy(), (np.exp([1.0, 2.0]) * (1 + np.array([1.0, 2.0]))), rtol=1e-6)
