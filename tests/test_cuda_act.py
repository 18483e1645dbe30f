"""Issue 13, family act on the CUDA device (a GPU or the emulator): the activation rows' CUDA loops and
fused backward rows against the CPU backend on the same inputs, in every floating dtype; the random
family (rrelu, the dropout masks: ampc's own device stream) by the properties torch's define; the
compositions (embedding_bag, distances) against the CPU."""
import numpy as np
import pytest

import ampc

F = ampc.nn.functional
DTYPES = ["float32", "float64", "float16", "bfloat16"]
ROWS = [("elu", dict(alpha=0.7)), ("selu", {}), ("celu", dict(alpha=1.3)), ("leaky_relu", dict(negative_slope=0.2)),
        ("hardswish", {}), ("hardsigmoid", {}), ("logsigmoid", {}), ("mish", {}), ("softshrink", dict(lambd=0.4)),
        ("hardshrink", dict(lambd=0.4))]


def _host(t):
    return t.detach().cpu().double().numpy()


def _same(a, b, dtype, what):
    tol = {"float32": 1e-5, "float64": 1e-12, "float16": 1e-3, "bfloat16": 8e-3}[dtype]
    np.testing.assert_allclose(_host(a), _host(b), rtol=tol, atol=tol, equal_nan=True, err_msg=what)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,kw", ROWS)
def test_rows_match_the_cpu(name, kw, dtype, cuda):
    v = np.random.default_rng(0).uniform(-5, 5, (6, 7)).tolist() + [[0.0, 3.0, -3.0, 0.4, -0.4, float("nan"), 1e4]]
    x = ampc.tensor(v, dtype=ampc.float64).to(getattr(ampc, dtype))
    xc, xg = x.clone().requires_grad_(), x.to(cuda).requires_grad_()
    yc, yg = getattr(F, name)(xc, **kw), getattr(F, name)(xg, **kw)
    assert yg.device.type == ampc.device(cuda).type and yg.dtype == yc.dtype
    _same(yg, yc, dtype, name)
    up = ampc.tensor(np.random.default_rng(1).uniform(-1, 1, (7, 7))).to(getattr(ampc, dtype))
    yc.backward(up)
    yg.backward(up.to(cuda))
    _same(xg.grad, xc.grad, dtype, name + " grad")


@pytest.mark.parametrize("name,kw", [r for r in ROWS if r[0] not in ("hardsigmoid",)])
def test_double_backward_matches_the_cpu(name, kw, cuda):
    v = np.random.default_rng(2).uniform(-4, 4, (5, 6))
    res = []
    for dev in ("cpu", cuda):
        x = ampc.tensor(v, device=dev, requires_grad=True)
        (g,) = ampc.autograd.grad(getattr(F, name)(x, **kw).sum(), x, create_graph=True)
        (gg,) = ampc.autograd.grad((g * g).sum(), x)
        res.append((g, gg))
    _same(res[1][0], res[0][0], "float64", name + " grad")
    _same(res[1][1], res[0][1], "float64", name + " second grad")


def test_prelu_and_inplace_on_cuda(cuda):
    v = np.random.default_rng(3).uniform(-1, 1, (2, 3, 4))
    out = []
    for dev in ("cpu", cuda):
        x = ampc.tensor(v, device=dev, requires_grad=True)
        w = ampc.tensor([0.1, 0.2, 0.3], device=dev, dtype=ampc.float64, requires_grad=True)
        y = F.prelu(x, w)
        (y * y).sum().backward()
        z = F.elu(ampc.tensor(v, device=dev), inplace=True)
        out.append((y, x.grad, w.grad, z))
    for a, b in zip(out[1], out[0]):
        _same(a, b, "float64", "prelu / in-place elu")
    with ampc.autocast(ampc.device(cuda).type, dtype=ampc.float16):
        assert F.prelu(ampc.ones(2, 3, device=cuda), ampc.ones(3, device=cuda)).dtype == ampc.float16


def test_random_family_properties_on_cuda(cuda):
    ampc.manual_seed(0)
    x = ampc.ones(8, 16, 5, 5, device=cuda)
    y = F.dropout2d(x, 0.5, True)
    per_channel = y.reshape(8, 16, 25)
    assert bool(((per_channel == 0).all(-1) | (per_channel == 2).all(-1)).all())  # whole channels, 1/(1-p)
    kept = float((per_channel[..., 0] != 0).float().mean())
    assert 0.3 < kept < 0.7
    a = F.alpha_dropout(ampc.zeros(4000, device=cuda), 0.2, True)
    assert abs(float(a.mean())) < 0.1 and abs(float(a.std()) - 1.0) > 0.0  # SELU's fixed point keeps the mean
    assert len(set(np.round(_host(a), 5).tolist())) == 2
    r = F.rrelu(-ampc.ones(1000, device=cuda), 0.1, 0.3, training=True)
    assert float(r.min()) >= -0.3 and float(r.max()) <= -0.1 and float(r.std()) > 0.01
    assert F.rrelu(ampc.ones(5, device=cuda), training=True).tolist() == [1.0] * 5


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_and_distances_on_cuda(mode, cuda):
    rng = np.random.default_rng(4)
    wv, idx, offs = rng.uniform(-1, 1, (9, 4)), rng.integers(0, 9, 11).tolist(), [0, 3, 3, 8]
    res = []
    for dev in ("cpu", cuda):
        w = ampc.tensor(wv, device=dev, requires_grad=True)
        y = F.embedding_bag(ampc.tensor(idx, device=dev), w, ampc.tensor(offs, device=dev), mode=mode, padding_idx=2)
        y.sum().backward()
        a, b = ampc.tensor(wv[:3], device=dev), ampc.tensor(wv[3:6], device=dev)
        res.append((y, w.grad, F.cosine_similarity(a, b), F.pairwise_distance(a, b), F.normalize(a),
                    F.one_hot(ampc.tensor(idx, device=dev), 9)))
    for a, b in zip(res[1], res[0]):
        _same(a, b, "float64", f"embedding_bag {mode} / distances")
