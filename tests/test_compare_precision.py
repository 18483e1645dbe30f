"""ampc.testing.compare_precision / assert_precision (issue 18): an AMP run against its FP32
reference. The FP32 side must be the true FP32 run of the model (checked against running the model
itself), deviations must be real (non-zero, inside the dtype-derived tolerances) for a sound model,
and an overflowing model must fail, naming the layer."""
import math

import numpy as np
import pytest

import ampc
from ampc import nn
from ampc.models import SmallCNN
from ampc.testing import PrecisionReport, assert_precision, compare_precision


def cnn_and_data():
    ampc.manual_seed(0)
    m = SmallCNN(channels=(8, 16))
    x = ampc.randn(8, 1, 28, 28)
    y = ampc.randint(0, 10, (8,))
    return m, x, (lambda out: nn.functional.cross_entropy(out.float(), y))


@pytest.mark.parametrize("dtype", [ampc.float16, ampc.bfloat16])
def test_demo_cnn_passes_with_real_deviations(dtype):
    m, x, loss = cnn_and_data()
    before = [p.detach().clone() for p in m.parameters()]
    r = compare_precision(m, x, dtype=dtype, steps=2, loss_fn=loss)
    assert isinstance(r, PrecisionReport) and r.passed, r.to_markdown()
    eps = {ampc.float16: 2.0 ** -10, ampc.bfloat16: 2.0 ** -7}[dtype]
    acts = [d for d in r.layers if d.kind == "activation"]
    grads = [d for d in r.layers if d.kind == "grad"]
    assert {d.name for d in acts} >= {"features.0", "features.4", "classifier"}
    assert len(grads) == len(acts)
    # the AMP copy really ran in the low-precision dtype and really differs, by about eps
    name = str(dtype).split(".")[-1]
    assert all(d.dtype == name for d in acts if d.name.startswith("features.0"))
    worst = r.worst("activation").rel_error
    assert eps / 20 < worst < 4 * eps * math.sqrt(len(acts)), worst
    assert all(s["rel_diff"] > 0 for s in r.steps)
    assert [s["skipped"] for s in r.steps] == [False, False]
    assert len(r.params) == len(list(m.parameters())) and all(p["drift"] > 0 for p in r.params)
    # the model given is not modified
    for p, b in zip(m.parameters(), before):
        assert bool(ampc.equal(p.detach(), b))
    md = r.to_markdown()
    assert "passed" in md and "| features.0 | activation |" in md


def test_fp32_side_is_the_models_own_fp32_run():
    m, x, loss = cnn_and_data()
    m.eval()  # no batch-stat update, so the model's own forward is repeatable
    r = compare_precision(m, x, dtype=ampc.bfloat16, steps=1, loss_fn=loss)
    assert r.steps[0]["loss_fp32"] == pytest.approx(float(loss(m(x))), rel=1e-6)


def test_same_rng_each_side_dropout_masks_match():
    ampc.manual_seed(1)
    m = nn.Sequential(nn.Linear(32, 64), nn.Dropout(0.5), nn.Linear(64, 8))
    r = compare_precision(m, ampc.randn(16, 32), dtype=ampc.bfloat16, steps=3)
    assert r.passed, r.to_markdown()
    # with different masks the dropout layer's output would differ by O(1), not O(eps)
    drop = [d for d in r.layers if d.name == "1" and d.kind == "activation"]
    assert len(drop) == 3 and max(d.rel_error for d in drop) < 0.05


def overflowing():
    ampc.manual_seed(0)
    m = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 16), nn.Linear(16, 4))
    with ampc.no_grad():
        m[2].weight.mul_(2.0e5)
    return m, ampc.randn(4, 8) * 10


def test_overflowing_model_fails_and_names_the_layer():
    m, x = overflowing()
    r = compare_precision(m, x, dtype=ampc.float16, steps=2, loss_fn=lambda out: out.float().mean())
    assert not r.passed
    bad = [d for d in r.layers if d.kind == "activation" and d.overflow]
    assert bad and bad[0].name == "2"
    assert not any(d.overflow for d in r.layers if d.kind == "activation" and d.name in ("0", "1"))
    assert any("activation of '2'" in f and "overflowed" in f for f in r.failures())
    with pytest.raises(AssertionError, match=r"activation of '2' \(float16\): \d+ values overflowed"):
        assert_precision(r)
    # bfloat16 has float32's range: the same model passes there
    rb = compare_precision(m, x, dtype=ampc.bfloat16, steps=2, loss_fn=lambda out: out.float().mean())
    assert not any(d.overflow for d in rb.layers)


def test_inputs_per_step_and_errors():
    ampc.manual_seed(2)
    m = nn.Sequential(nn.Linear(4, 4), nn.GELU(), nn.Linear(4, 2))
    xs = [ampc.randn(3, 4) for _ in range(3)]
    r = assert_precision(m, xs, dtype=ampc.bfloat16, steps=3)
    assert [s["step"] for s in r.steps] == [0, 1, 2]
    losses = [s["loss_fp32"] for s in r.steps]
    assert len(set(losses)) == 3  # a different batch each step
    r2 = compare_precision(m, lambda i: xs[i], dtype=ampc.bfloat16, steps=3)
    assert [s["loss_fp32"] for s in r2.steps] == losses
    with pytest.raises(ValueError, match="float16 or bfloat16"):
        compare_precision(m, xs[0], dtype=ampc.float64)
    with pytest.raises(ValueError, match="steps"):
        compare_precision(m, xs[0], steps=0)


def test_tolerance_scales_the_bounds():
    m, x, loss = cnn_and_data()
    r = compare_precision(m, x, dtype=ampc.bfloat16, steps=1, loss_fn=loss, tolerance=1e-4)
    assert not r.passed  # bounds 10^4 times tighter than eps allows cannot hold
    assert any("rel error" in f for f in r.failures())
    np.testing.assert_allclose([d.tol for d in r.layers if d.kind == "grad"][0],
                               16 * 2.0 ** -7 * 1e-4 * math.sqrt(len([d for d in r.layers if d.kind == "grad"])))
