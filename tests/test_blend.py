"""lerp, addcmul, addcdiv (python/ampc/_blend.py) against torch: values, result dtypes, gradients,
in-place and out= forms, errors. fp32 allows 2 ulps: torch's CPU kernels fuse the multiply-add
(one rounding fewer than ampc's composed ops); fp64 and the 16-bit types (widened to fp32, rounded
once, as torch) are compared with float tolerance of one 16-bit ulp at most."""
import numpy as np
import pytest

import ampc

torch = pytest.importorskip("torch")

CASES = [
    ("lerp scalar low", lambda M, a, b, c: M.lerp(a, b, 0.3)),
    ("lerp scalar high", lambda M, a, b, c: M.lerp(a, b, 0.8)),
    ("lerp tensor weight", lambda M, a, b, c: a.lerp(b, M.full_like(a, 0.7))),
    ("lerp broadcast", lambda M, a, b, c: M.lerp(a, b[:1], 0.25)),
    ("addcmul", lambda M, a, b, c: M.addcmul(a, b, c, value=0.5)),
    ("addcdiv", lambda M, a, b, c: a.addcdiv(b, c, value=-2)),
    ("addcmul_", lambda M, a, b, c: a.clone().addcmul_(b, c)),
    ("addcdiv_", lambda M, a, b, c: a.clone().addcdiv_(b, c, value=3)),
    ("lerp_", lambda M, a, b, c: a.clone().lerp_(b, 0.6)),
]
RTOL = {"float32": 3e-7, "float64": 1e-15, "float16": 1e-3, "bfloat16": 8e-3}


def run(M, dt, fn, noncontig):
    rng = np.random.default_rng(1)
    x, y, z = rng.standard_normal((3, 4)), rng.standard_normal((3, 4)), rng.standard_normal((4,)) + 3
    ts = [M.tensor(v).to(getattr(M, dt)) for v in (x, y, z)]
    if noncontig:
        ts[0] = M.tensor(np.ascontiguousarray(x.T)).to(getattr(M, dt)).t()
    ts = [t.detach().requires_grad_() for t in ts]
    out = fn(M, *ts)
    out.float().sum().backward()
    grads = [None if t.grad is None else t.grad.float().numpy() for t in ts]
    return out.detach().float().numpy(), str(out.dtype).split(".")[-1], grads


@pytest.mark.parametrize("noncontig", [False, True])
@pytest.mark.parametrize("dt", list(RTOL))
@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(name, fn, dt, noncontig):
    ours, ours_dt, ours_g = run(ampc, dt, fn, noncontig)
    ref, ref_dt, ref_g = run(torch, dt, fn, noncontig)
    assert ours_dt == ref_dt
    np.testing.assert_allclose(ours, ref, rtol=RTOL[dt], atol=RTOL[dt])
    for g, rg in zip(ours_g, ref_g):
        assert (g is None) == (rg is None)
        if g is not None:
            np.testing.assert_allclose(g, rg, rtol=RTOL[dt], atol=RTOL[dt])


def test_lerp_endpoints_are_exact():
    a, b = ampc.tensor([1.5, -2.0, 1e30]), ampc.tensor([0.1, 7.0, -3e30])
    assert ampc.lerp(a, b, 1.0).tolist() == b.tolist()
    assert ampc.lerp(a, b, 0.0).tolist() == a.tolist()


def test_out_and_errors_as_torch():
    a, b, c = ampc.ones(2, 3), ampc.full((2, 3), 2.0), ampc.full((3,), 4.0)
    out = ampc.empty(2, 3)
    assert ampc.addcmul(a, b, c, value=2, out=out) is out and out.tolist() == [[17.0] * 3] * 2
    for M in (ampc, torch):
        with pytest.raises(RuntimeError, match="expected dtype"):
            M.lerp(M.ones(2), M.ones(2, dtype=M.float64), 0.5)
        with pytest.raises(RuntimeError, match="Integer division with addcdiv is no longer supported"):
            M.addcdiv(M.ones(2), M.ones(2, dtype=M.int64), M.ones(2, dtype=M.int64))
        with pytest.raises(TypeError):
            M.addcmul(M.ones(2), [1.0, 2.0], M.ones(2))
