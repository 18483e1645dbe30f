"""Issue 13, family act: the activations and the dropout family against torch (the oracle).

Values and gradients (first and second order) over every floating dtype, edge values (0, the
branch points, +-inf, NaN), non-contiguous and 0-size inputs; in-place forms; torch's errors; the
random draws of rrelu and the dropout family under the same seed; autocast's policy."""
import warnings

import numpy as np
import pytest
import torch

import ampc

DTYPES = ["float32", "float64", "float16", "bfloat16"]
TOL = {"float32": (1e-5, 1e-6), "float64": (1e-12, 1e-12), "float16": (2e-3, 1e-4), "bfloat16": (1.6e-2, 1e-3)}

# name -> (kwargs, input range, has a second derivative in torch)
POINTWISE = {
    "elu": (dict(alpha=0.7), 3, True),
    "selu": ({}, 3, True),
    "celu": (dict(alpha=1.3), 3, True),
    "leaky_relu": (dict(negative_slope=0.2), 2, True),
    "hardswish": ({}, 5, True),
    "hardsigmoid": ({}, 5, False),
    "logsigmoid": ({}, 30, True),
    "mish": ({}, 6, True),
    "softshrink": (dict(lambd=0.4), 2, True),
    "hardshrink": (dict(lambd=0.4), 2, True),
    "relu6": ({}, 8, True),
    "tanhshrink": ({}, 3, True),
    "softsign": ({}, 3, True),
    "hardtanh": (dict(min_val=-0.5, max_val=0.7), 2, True),
    "threshold": (dict(threshold=0.1, value=-2.0), 2, True),
    "softplus": (dict(beta=2.0, threshold=3.0), 4, True),
}
EDGES = [0.0, -0.0, 3.0, -3.0, 0.4, -0.4, 6.0, 0.7, -0.5, 0.1]


def _pair(values, dtype, grad=True):
    t = torch.tensor(values, dtype=torch.float64).to(getattr(torch, dtype))
    a = ampc.tensor(np.asarray(values, dtype=np.float64)).to(getattr(ampc, dtype))
    if grad:
        t.requires_grad_()
        a.requires_grad_()
    return a, t


def _np(t):
    if isinstance(t, torch.Tensor):
        return t.detach().double().numpy()
    return t.detach().double().numpy()


def _close(a, t, dtype, what):
    rtol, atol = TOL[dtype]
    assert str(a.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (what, a.dtype, t.dtype)
    np.testing.assert_allclose(_np(a), _np(t), rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


def _draw(n=40, scale=3.0, seed=0):
    v = np.random.default_rng(seed).uniform(-scale, scale, n).tolist()
    return v + EDGES


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(POINTWISE))
def test_pointwise_forward_backward(name, dtype):
    kw, scale, _ = POINTWISE[name]
    vals = _draw(scale=scale)
    a, t = _pair(vals, dtype)
    ya, yt = getattr(ampc.nn.functional, name)(a, **kw), getattr(torch.nn.functional, name)(t, **kw)
    _close(ya, yt, dtype, f"{name} forward")
    up = np.random.default_rng(1).uniform(-1, 1, len(vals)).tolist()
    ua, ut = _pair(up, dtype, grad=False)
    ya.backward(ua)
    yt.backward(ut)
    _close(a.grad, t.grad, dtype, f"{name} backward")


@pytest.mark.parametrize("name", sorted(POINTWISE))
def test_pointwise_special_values(name):
    kw = POINTWISE[name][0]
    vals = [float("inf"), float("-inf"), float("nan"), 0.0, -0.0, 1e-30, -1e-30, 80.0, -80.0, 1e5, -1e5]
    a, t = _pair(vals, "float32")
    ya, yt = getattr(ampc.nn.functional, name)(a, **kw), getattr(torch.nn.functional, name)(t, **kw)
    _close(ya, yt, "float32", f"{name} forward at special values")
    np.testing.assert_array_equal(np.signbit(_np(ya)), np.signbit(_np(yt)), err_msg=f"{name}: signed zeros")


@pytest.mark.parametrize("name", sorted(n for n, v in POINTWISE.items() if v[2]))
def test_pointwise_double_backward(name):
    """create_graph: the fused backward row's own gradient, against torch's."""
    kw, scale, _ = POINTWISE[name]
    vals = [v for v in _draw(30, scale, seed=3) if v not in (0.0, 3.0, -3.0, 0.4, -0.4, 6.0, 0.7, -0.5, 0.1)]
    a, t = _pair(vals, "float64")
    up = np.random.default_rng(4).uniform(-1, 1, len(vals)).tolist()
    ua, ut = _pair(up, "float64")
    (ga,) = ampc.autograd.grad(getattr(ampc.nn.functional, name)(a, **kw), a, ua, create_graph=True)
    (gt,) = torch.autograd.grad(getattr(torch.nn.functional, name)(t, **kw), t, ut, create_graph=True)
    _close(ga, gt, "float64", f"{name} grad")
    w = np.random.default_rng(5).uniform(-1, 1, len(vals)).tolist()
    wa, wt = _pair(w, "float64", grad=False)
    da = ampc.autograd.grad((ga * wa).sum(), [a, ua])
    dt = torch.autograd.grad((gt * wt).sum(), [t, ut])
    _close(da[0], dt[0], "float64", f"{name} d2/dx2")
    _close(da[1], dt[1], "float64", f"{name} d2/dgdx")


@pytest.mark.parametrize("name", ["elu", "selu", "celu", "leaky_relu", "hardswish", "hardsigmoid", "mish", "relu6",
                                  "hardtanh", "threshold"])
def test_inplace_forms(name):
    kw = dict(POINTWISE[name][0])
    vals = _draw(seed=7)
    a, t = _pair(vals, "float32", grad=False)
    ra = getattr(ampc.nn.functional, name)(a, inplace=True, **kw)
    rt = getattr(torch.nn.functional, name)(t, inplace=True, **kw)
    assert ra is a
    _close(a, t, "float32", f"{name}(inplace=True)")
    if hasattr(torch.nn.functional, name + "_") and name not in ("hardtanh", "threshold"):
        b, u = _pair(vals, "float32", grad=False)
        getattr(ampc.nn.functional, name + "_")(b, **kw)
        getattr(torch.nn.functional, name + "_")(u, **kw)
        _close(b, u, "float32", name + "_")
    # in place on a non-leaf keeps the gradient; on a leaf that requires grad it is refused, as torch
    x, xt = _pair(vals, "float64")
    ya = getattr(ampc.nn.functional, name)(x * 1.0, inplace=True, **kw)
    yt = getattr(torch.nn.functional, name)(xt * 1.0, inplace=True, **kw)
    ya.sum().backward()
    yt.sum().backward()
    # torch's in-place celu differentiates its result with input_scale 1/float(alpha) where the forward used
    # 1/alpha (CeluBackward1); ampc's in-place forms differentiate the saved input: equal to ~1e-8
    _close(x.grad, xt.grad, "float32" if name == "celu" else "float64", f"{name} in-place grad")
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        getattr(ampc.nn.functional, name)(x, inplace=True, **kw)


def test_non_contiguous_and_empty():
    base = np.random.default_rng(2).uniform(-3, 3, (5, 6))
    for name, (kw, _, _) in POINTWISE.items():
        a = ampc.tensor(base).t()[1:, ::2]
        t = torch.tensor(base).t()[1:, ::2]
        _close(getattr(ampc.nn.functional, name)(a, **kw), getattr(torch.nn.functional, name)(t, **kw), "float64",
               name + " non-contiguous")
        e = getattr(ampc.nn.functional, name)(ampc.zeros((0, 3)), **kw)
        assert tuple(e.shape) == (0, 3)


@pytest.mark.parametrize("name", ["elu", "selu", "celu", "leaky_relu", "hardswish", "hardsigmoid", "logsigmoid",
                                  "mish", "softshrink", "hardshrink", "softplus"])
def test_integer_inputs_fail_as_torch(name):
    with pytest.raises(NotImplementedError) as et:
        getattr(torch.nn.functional, name)(torch.arange(3))
    with pytest.raises(NotImplementedError) as ea:
        getattr(ampc.nn.functional, name)(ampc.arange(3))
    assert str(ea.value) == str(et.value)


def test_integer_inputs_that_torch_accepts():
    for name, kw in [("relu6", {}), ("hardtanh", dict(min_val=-1.0, max_val=2.0)),
                     ("threshold", dict(threshold=1, value=7))]:
        ya = getattr(ampc.nn.functional, name)(ampc.arange(-3, 4), **kw)
        yt = getattr(torch.nn.functional, name)(torch.arange(-3, 4), **kw)
        assert ya.tolist() == yt.tolist() and str(ya.dtype) == "ampc.int64", name


def test_argument_errors():
    F, TF = ampc.nn.functional, torch.nn.functional
    x, xt = ampc.randn(2, 3), torch.randn(2, 3)
    for args in [(x, -1.0), ]:
        with pytest.raises(RuntimeError, match=r"lambda must be in range \[0, 3.40282e\+38\] for input dtype Float, "
                                               r"but found -1"):
            F.softshrink(*args)
    with pytest.raises(RuntimeError, match="for input dtype Half"):
        F.softshrink(x.half(), -0.5)
    for fn in (F, TF):
        pass
    with pytest.raises(RuntimeError, match="Halving dimension must be even, but dimension 1 is size 3"):
        F.glu(x)
    with pytest.raises(RuntimeError, match="glu does not support scalars"):
        F.glu(ampc.tensor(1.0))
    with pytest.raises(RuntimeError, match="Found parameter numbers = 4 and channel size = 3"):
        F.prelu(x, ampc.ones(4))
    with pytest.raises(RuntimeError, match="Expected `weight` to be a scalar or 1D tensor, but got: ndim = 2"):
        F.prelu(x, ampc.ones(1, 3))
    with pytest.raises(RuntimeError, match="alpha cannot be 0 for CELU"):
        F.celu(x, 0.0)
    with pytest.raises(RuntimeError, match="Lower bound should be less than or equal to the upper bound"):
        F.rrelu(x, 0.5, 0.1, training=True)
    with pytest.raises(TypeError):
        F.softplus(x, inplace=True)  # torch's softplus has no inplace
    with pytest.raises(TypeError):
        F.threshold(x)  # threshold and value have no defaults in torch
    with pytest.raises(AssertionError, match=r"max_val \(0.5\) must be greater than min_val \(1.0\)"):
        ampc.nn.Hardtanh(1.0, 0.5)
    with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D, got 2D instead"):
        ampc.nn.Softmax2d()(x)


def test_prelu_weight_shapes_and_grads():
    rng = np.random.default_rng(9)
    for shape, wn in [((2, 3, 4, 5), 3), ((2, 3), 3), ((5,), 1), ((), 1), ((2, 4, 3), 1)]:
        xv, wv = rng.uniform(-1, 1, shape), rng.uniform(-1, 1, (wn,))
        a, t = ampc.tensor(xv, requires_grad=True), torch.tensor(xv, requires_grad=True)
        wa, wt = ampc.tensor(wv, requires_grad=True), torch.tensor(wv, requires_grad=True)
        ya, yt = ampc.nn.functional.prelu(a, wa), torch.nn.functional.prelu(t, wt)
        assert tuple(ya.shape) == tuple(yt.shape)
        _close(ya, yt, "float64", f"prelu {shape}")
        assert ya.grad_fn.name() == yt.grad_fn.name()
        (ya * ya).sum().backward()
        (yt * yt).sum().backward()
        _close(a.grad, t.grad, "float64", "prelu input grad")
        _close(wa.grad, wt.grad, "float64", "prelu weight grad")


def test_prelu_autocast_runs_in_lower_precision():
    """prelu is on torch's lower-precision autocast list (CPU and CUDA)."""
    xv = np.random.default_rng(3).uniform(-1, 1, (2, 3, 4)).astype(np.float32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        yt = torch.nn.functional.prelu(torch.tensor(xv), torch.full((3,), 0.25))
    with ampc.autocast("cpu", dtype=ampc.bfloat16):
        ya = ampc.nn.functional.prelu(ampc.tensor(xv), ampc.full((3,), 0.25))
        yb = ampc.nn.functional.elu(ampc.tensor(xv))  # AC_NONE: stays float32, as torch
    assert str(yt.dtype) == "torch.bfloat16" and str(ya.dtype) == "ampc.bfloat16"
    assert str(yb.dtype) == "ampc.float32"
    _close(ya, yt, "bfloat16", "prelu under autocast")


def test_grad_fn_names_match_torch():
    F, TF = ampc.nn.functional, torch.nn.functional
    for name, (kw, _, _) in POINTWISE.items():
        a, t = _pair([0.5, -0.5], "float32")
        assert getattr(F, name)(a, **kw).grad_fn.name() == getattr(TF, name)(t, **kw).grad_fn.name(), name


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rrelu_training_draws_torch_slopes(dtype):
    vals = _draw(60, seed=11)
    for inplace in (False, True):
        a, t = _pair(vals, dtype, grad=False)
        torch.manual_seed(5)
        ampc.manual_seed(5)
        yt = torch.nn.functional.rrelu(t, 0.1, 0.4, training=True, inplace=inplace)
        ya = ampc.nn.functional.rrelu(a, 0.1, 0.4, training=True, inplace=inplace)
        assert (ya is a) == inplace
        np.testing.assert_array_equal(_np(ya), _np(yt))
        # the next draw continues the same stream
        assert ampc.rand(3).tolist() == pytest.approx(torch.rand(3).tolist(), abs=0)
    a, t = _pair(vals, dtype)
    torch.manual_seed(6)
    ampc.manual_seed(6)
    m_t, m_a = torch.nn.RReLU(0.2, 0.5).train(), ampc.nn.RReLU(0.2, 0.5).train()
    m_a(a).sum().backward()
    m_t(t).sum().backward()
    np.testing.assert_array_equal(_np(a.grad), _np(t.grad))


def _seeded(fn_a, fn_t, seed=3):
    torch.manual_seed(seed)
    ampc.manual_seed(seed)
    return fn_a(), fn_t()


@pytest.mark.parametrize("name,shape", [("dropout1d", (3, 4, 5)), ("dropout1d", (4, 5)), ("dropout2d", (2, 3, 4, 5)),
                                        ("dropout3d", (2, 3, 2, 3, 2)), ("dropout3d", (3, 2, 3, 2)),
                                        ("alpha_dropout", (6, 7)), ("feature_alpha_dropout", (3, 4, 5)),
                                        ("dropout", (6, 7))])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_dropout_family_draws_torch_masks(name, shape, dtype):
    v = np.random.default_rng(1).uniform(-1, 1, shape)
    for inplace in (False, True):
        a, t = ampc.tensor(v).to(getattr(ampc, dtype)), torch.tensor(v).to(getattr(torch, dtype))
        ya, yt = _seeded(lambda: getattr(ampc.nn.functional, name)(a, 0.4, True, inplace),
                         lambda: getattr(torch.nn.functional, name)(t, 0.4, True, inplace))
        assert (ya is a) == inplace and tuple(ya.shape) == tuple(yt.shape)
        _close(ya, yt, dtype, f"{name} inplace={inplace}")
    a, t = ampc.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
    ya, yt = _seeded(lambda: getattr(ampc.nn.functional, name)(a, 0.3, True),
                     lambda: getattr(torch.nn.functional, name)(t, 0.3, True))
    ya.sum().backward()
    yt.sum().backward()
    _close(a.grad, t.grad, "float64", f"{name} grad")


def test_dropout_family_edges():
    F, TF = ampc.nn.functional, torch.nn.functional
    v = np.random.default_rng(1).uniform(-1, 1, (2, 3, 4))
    for name in ("dropout", "dropout1d", "alpha_dropout", "feature_alpha_dropout"):
        a, t = ampc.tensor(v), torch.tensor(v)
        for p in (0.0, 1.0):
            _close(getattr(F, name)(a, p, True), getattr(TF, name)(t, p, True), "float64", f"{name} p={p}")
        assert getattr(F, name)(a, 0.5, False) is a  # eval: the input itself, as torch
        with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
            getattr(F, name)(a, 1.5)
        assert tuple(getattr(F, name)(ampc.zeros((0, 3, 2)), 0.5, True).shape) == (0, 3, 2)
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a 4D input"):
        F.dropout1d(ampc.zeros((1, 2, 3, 4)))
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions in the input"):
        F.feature_alpha_dropout(ampc.zeros(3), 0.5, True)
    with pytest.warns(UserWarning, match="dropout2d: Received a 3D input"):
        F.dropout2d(ampc.zeros((2, 3, 4)))
    m = ampc.nn.Dropout2d(0.5, inplace=True)
    assert repr(m) == repr(torch.nn.Dropout2d(0.5, inplace=True))
    m.eval()
    x = ampc.ones(2, 3, 4, 4)
    assert m(x) is x


def test_modules_match_torch_attributes():
    for name, args in [("ELU", (0.5, True)), ("CELU", (2.0,)), ("SELU", (True,)), ("LeakyReLU", (0.3, True)),
                       ("Hardswish", (True,)), ("Hardsigmoid", (True,)), ("Mish", (True,)), ("ReLU6", (True,)),
                       ("RReLU", (0.1, 0.2, True)), ("Threshold", (0.5, 1.0, True)), ("Softshrink", (0.2,)),
                       ("Hardshrink", (0.1,)), ("GLU", (0,)), ("Softmin", (1,)), ("Softplus", (3.0, 4.0)),
                       ("Hardtanh", (-2.0, 3.0, True)), ("PReLU", (4, 0.5)), ("Dropout3d", (0.2,)),
                       ("AlphaDropout", (0.1, True)), ("FeatureAlphaDropout", (0.3,))]:
        ma, mt = getattr(ampc.nn, name)(*args), getattr(torch.nn, name)(*args)
        assert repr(ma) == repr(mt), name
        for attr in ("alpha", "inplace", "negative_slope", "lower", "upper", "threshold", "value", "lambd", "dim",
                     "beta", "min_val", "max_val", "num_parameters", "init", "p"):
            assert getattr(ma, attr, None) == getattr(mt, attr, None), (name, attr)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        m = ampc.nn.Hardtanh(min_value=-2.0, max_value=2.0)
    assert (m.min_val, m.max_val) == (-2.0, 2.0) and any(issubclass(x.category, FutureWarning) for x in w)
    assert ampc.nn.PReLU(3).weight.tolist() == [0.25] * 3


# ---------------------------------------------------------------- distances, normalisation, lookups

@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("last", [False, True])
@pytest.mark.parametrize("padding_idx", [None, 3])
def test_embedding_bag_against_torch(mode, last, padding_idx):
    rng = np.random.default_rng(4)
    wv = rng.uniform(-1, 1, (9, 4))
    idx = rng.integers(0, 9, 13).tolist()
    offs = [0, 2, 2, 7, 12] + ([13] if last else [])
    psw = rng.uniform(0.5, 2, 13).tolist() if mode == "sum" else None
    outs = []
    for M in (ampc, torch):
        w = M.tensor(wv, requires_grad=True)
        kw = dict(mode=mode, include_last_offset=last, padding_idx=padding_idx)
        if psw is not None:
            kw["per_sample_weights"] = M.tensor(psw, dtype=M.float64)
        y = M.nn.functional.embedding_bag(M.tensor(idx), w, M.tensor(offs), **kw)
        (y * M.arange(y.numel(), dtype=M.float64).reshape(y.shape).cos()).sum().backward()
        outs.append((y, w.grad))
    _close(outs[0][0], outs[1][0], "float64", f"embedding_bag {mode}")
    _close(outs[0][1], outs[1][1], "float64", f"embedding_bag {mode} weight grad")


def test_embedding_bag_2d_fp16_and_errors():
    F, TF = ampc.nn.functional, torch.nn.functional
    wv = np.random.default_rng(5).uniform(-1, 1, (6, 3))
    idx = [[0, 5, 2], [1, 1, 4]]
    ya = F.embedding_bag(ampc.tensor(idx), ampc.tensor(wv).half())
    yt = TF.embedding_bag(torch.tensor(idx), torch.tensor(wv).half())
    _close(ya, yt, "float16", "embedding_bag fp16 mean")
    w = ampc.tensor(wv)
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        F.embedding_bag(ampc.tensor([1, 2]), w)
    with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
        F.embedding_bag(ampc.tensor(idx), w, mode="min")
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for mode='sum'"):
        F.embedding_bag(ampc.tensor(idx), w, per_sample_weights=ampc.ones(2, 3))
    with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0"):
        F.embedding_bag(ampc.tensor([1, 2, 3]), w, ampc.tensor([1, 2]))
    assert tuple(F.embedding_bag(ampc.tensor([], dtype=ampc.int64), w, ampc.tensor([0, 0])).shape) == (2, 3)


def test_embedding_max_norm_renorms_in_place_as_torch():
    for norm_type in (2.0, 1.0, 3.5):
        wv = np.random.default_rng(6).uniform(-2, 2, (7, 4))
        wa, wt = ampc.tensor(wv, requires_grad=True), torch.tensor(wv, requires_grad=True)
        idx = [[1, 3, 3], [6, 0, 1]]
        ya = ampc.nn.functional.embedding(ampc.tensor(idx), wa, max_norm=1.5, norm_type=norm_type)
        yt = torch.nn.functional.embedding(torch.tensor(idx), wt, max_norm=1.5, norm_type=norm_type)
        _close(ya, yt, "float64", "embedding max_norm")
        _close(wa, wt, "float64", "the renormed weight")
        ya.sum().backward()
        yt.sum().backward()
        _close(wa.grad, wt.grad, "float64", "embedding max_norm grad")
    m = ampc.nn.Embedding.from_pretrained(ampc.tensor(wv), max_norm=1.0)
    assert repr(m) == repr(torch.nn.Embedding.from_pretrained(torch.tensor(wv), max_norm=1.0))
    assert not m.weight.requires_grad
    with pytest.raises(NotImplementedError, match="sparse"):
        ampc.nn.Embedding(3, 2, sparse=True)


def test_one_hot_normalize_distances():
    F, TF = ampc.nn.functional, torch.nn.functional
    assert F.one_hot(ampc.tensor([[2, 0], [1, 3]])).tolist() == TF.one_hot(torch.tensor([[2, 0], [1, 3]])).tolist()
    for bad, msg in [(ampc.tensor([1.0]), "only applicable to index tensor of type LongTensor"),
                     (ampc.tensor([-1]), "Class values must be non-negative"),
                     (ampc.tensor([], dtype=ampc.int64), "Can not infer total number of classes from empty tensor")]:
        with pytest.raises(RuntimeError, match=msg):
            F.one_hot(bad)
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes"):
        F.one_hot(ampc.tensor([3]), 3)
    rng = np.random.default_rng(7)
    a_v, b_v = rng.uniform(-1, 1, (3, 1, 5)), rng.uniform(-1, 1, (4, 5))
    for dtype in ("float32", "float64", "float16", "bfloat16"):
        a, t = ampc.tensor(a_v).to(getattr(ampc, dtype)), torch.tensor(a_v).to(getattr(torch, dtype))
        b, u = ampc.tensor(b_v).to(getattr(ampc, dtype)), torch.tensor(b_v).to(getattr(torch, dtype))
        _close(F.cosine_similarity(a, b, -1), TF.cosine_similarity(t, u, -1), dtype, "cosine_similarity")
        _close(F.pairwise_distance(a, b), TF.pairwise_distance(t, u), dtype, "pairwise_distance")
        _close(F.normalize(a, dim=-1), TF.normalize(t, dim=-1), dtype, "normalize")
    z = ampc.zeros(2, 3)
    _close(F.cosine_similarity(z, z), TF.cosine_similarity(torch.zeros(2, 3), torch.zeros(2, 3)), "float32",
           "cosine of zero vectors")
    out = ampc.empty(3, 1, 5, dtype=ampc.float64)
    assert F.normalize(ampc.tensor(a_v), out=out) is out
    with pytest.raises(RuntimeError, match="bilinear\\(\\): input1 size does not match weight size: got 2 but "
                                           "expected 3"):
        F.bilinear(ampc.ones(4, 2), ampc.ones(4, 3), ampc.ones(5, 3, 3))


def test_top_level_aten_names():
    v = np.random.default_rng(8).uniform(-2, 2, (2, 3, 4))
    a, t = ampc.tensor(v), torch.tensor(v)
    for name, args in [("selu", ()), ("celu", (0.5,)), ("hardshrink", (0.3,)), ("rrelu", (0.1, 0.3)),
                       ("cosine_similarity", None), ("pairwise_distance", None)]:
        if args is None:
            _close(getattr(ampc, name)(a, a * 0.5 + 1), getattr(torch, name)(t, t * 0.5 + 1), "float64", name)
        else:
            _close(getattr(ampc, name)(a, *args), getattr(torch, name)(t, *args), "float64", name)
    _close(ampc.prelu(a, ampc.full((3,), 0.2, dtype=ampc.float64)),
           torch.prelu(t, torch.full((3,), 0.2, dtype=torch.float64)), "float64", "prelu")
    for name in ("alpha_dropout", "feature_dropout", "feature_alpha_dropout"):
        ya, yt = _seeded(lambda: getattr(ampc, name)(a, 0.4, True), lambda: getattr(torch, name)(t, 0.4, True))
        _close(ya, yt, "float64", name)
        b, u = ampc.tensor(v), torch.tensor(v)
        ya, yt = _seeded(lambda: getattr(ampc, name + "_")(b, 0.4, True), lambda: getattr(torch, name + "_")(u, 0.4, True))
        assert ya is b
        _close(ya, yt, "float64", name + "_")
    w, wt = ampc.tensor(v[0]), torch.tensor(v[0])
    assert ampc.embedding_renorm_(w, ampc.tensor([0, 1]), 1.0, 2.0) is w
    torch.embedding_renorm_(wt, torch.tensor([0, 1]), 1.0, 2.0)
    _close(w, wt, "float64", "embedding_renorm_")
