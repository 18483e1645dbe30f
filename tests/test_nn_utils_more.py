"""nn.utils (weight_norm / spectral_norm in both forms, parametrize, fusion, functional_call,
skip_init, clipping, vector conversion) and nn.init, side by side with torch: the same state_dict
keys (a torch state_dict loads), forward values and gradients, errors; nn.init bit-exact under
the same seed."""
import warnings
from collections import OrderedDict

import numpy as np
import pytest
import torch

import ampc
import ampc.nn as nn
from ampc.nn.utils import parametrizations as AP
from ampc.nn.utils.stateless import functional_call

LIBS = [torch, ampc]


def both(fn):
    out = []
    for M in LIBS:
        M.manual_seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            out.append(fn(M))
    return out


def _np(x):
    return x.detach().double().numpy() if isinstance(x, torch.Tensor) else x.detach().double().numpy()


def close(a, b, rtol=1e-5, atol=1e-6, what=""):
    np.testing.assert_allclose(_np(a), _np(b), rtol=rtol, atol=atol, err_msg=what)


def load_torch_state(am, tm):
    am.load_state_dict({k: ampc.from_numpy(v.detach().numpy().copy()) for k, v in tm.state_dict().items()})


def _err(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e).replace("torch.", "").replace("ampc.", "")
    return None


def same_error(fn):
    t, a = both(lambda M: _err(lambda: fn(M)))
    assert t is not None, "torch raised nothing"
    assert t == a, f"torch: {t}\nampc:  {a}"


def check_parity(build, x_shape, train=True, steps=2):
    """Same keys, torch's state loaded, then `steps` forward/backward rounds: outputs, grads of
    every parameter and the buffers (power-iteration vectors) agree."""
    tm, am = both(build)
    assert list(am.state_dict()) == list(tm.state_dict())
    load_torch_state(am, tm)
    tm.train(train)
    am.train(train)
    x = np.random.default_rng(0).standard_normal(x_shape).astype(np.float32)
    for _ in range(steps):
        for p in list(tm.parameters()) + list(am.parameters()):
            p.grad = None
        ty = tm(torch.from_numpy(x))
        ay = am(ampc.from_numpy(x))
        close(ay, ty, what="output")
        ty.pow(2).sum().backward()
        ay.pow(2).sum().backward()
        for (n, ap), tp in zip(am.named_parameters(), tm.parameters()):
            close(ap.grad, tp.grad, rtol=1e-4, atol=1e-5, what=n)
        for (n, ab), tb in zip(am.named_buffers(), tm.buffers()):
            close(ab, tb, rtol=1e-4, atol=1e-6, what=n)
    return tm, am


# ---------------------------------------------------------------- weight norm

@pytest.mark.parametrize("dim", [0, 1, None, -1])
def test_weight_norm_hook_form(dim):
    tm, am = check_parity(lambda M: M.nn.utils.weight_norm(M.nn.Conv2d(2, 3, 3), dim=dim), (2, 2, 5, 5))
    t, a = both(lambda M: list(M.nn.utils.remove_weight_norm(M.nn.utils.weight_norm(M.nn.Linear(3, 2))).state_dict()))
    assert t == a == ["bias", "weight"]
    removed_t = torch.nn.utils.remove_weight_norm(tm)
    removed_a = nn.utils.remove_weight_norm(am)
    close(removed_a.weight, removed_t.weight)
    same_error(lambda M: M.nn.utils.weight_norm(M.nn.utils.weight_norm(M.nn.Linear(2, 2))))
    same_error(lambda M: M.nn.utils.remove_weight_norm(M.nn.Linear(2, 2)))


def test_weight_norm_hook_form_warns_as_torch():
    with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
        nn.utils.weight_norm(nn.Linear(2, 2))


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_parametrization(dim):
    tm, am = check_parity(lambda M: M.nn.utils.parametrizations.weight_norm(M.nn.Linear(4, 3), dim=dim), (5, 4))
    assert type(am).__name__ == "ParametrizedLinear"
    # the old form's checkpoint (weight_g / weight_v) loads into the parametrization
    old = torch.nn.utils.weight_norm(torch.nn.Linear(4, 3), dim=dim)
    fresh = AP.weight_norm(nn.Linear(4, 3), dim=dim)
    load_torch_state(fresh, old)
    x = torch.randn(2, 4)
    close(fresh(ampc.from_numpy(x.numpy())), old(x))


# ---------------------------------------------------------------- spectral norm

@pytest.mark.parametrize("train", [True, False])
def test_spectral_norm_hook_form(train):
    tm, am = check_parity(lambda M: M.nn.utils.spectral_norm(M.nn.Linear(5, 4), n_power_iterations=2), (3, 5),
                          train=train)
    assert list(am.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    meta_t, meta_a = tm.state_dict()._metadata[""], am.state_dict()._metadata[""]
    assert meta_t["spectral_norm"] == meta_a["spectral_norm"]
    torch.nn.utils.remove_spectral_norm(tm)
    nn.utils.remove_spectral_norm(am)
    assert list(am.state_dict()) == list(tm.state_dict())
    close(am.weight, tm.weight, rtol=1e-4)
    same_error(lambda M: M.nn.utils.remove_spectral_norm(M.nn.Linear(2, 2)))
    same_error(lambda M: M.nn.utils.spectral_norm(M.nn.Linear(2, 2), n_power_iterations=0))


def test_spectral_norm_initial_vectors_match_torch():
    t, a = both(lambda M: M.nn.utils.spectral_norm(M.nn.Conv2d(3, 4, 2)))
    close(a.weight_u, t.weight_u, rtol=1e-6)
    close(a.weight_v, t.weight_v, rtol=1e-6)


@pytest.mark.parametrize("train", [True, False])
def test_spectral_norm_parametrization(train):
    tm, am = check_parity(lambda M: M.nn.utils.parametrizations.spectral_norm(M.nn.Conv2d(2, 3, 3)), (2, 2, 5, 5),
                          train=train)
    assert "parametrizations.weight.0._u" in am.state_dict()
    # 1-D weights are normalised, not divided by a singular value
    t, a = both(lambda M: M.nn.utils.parametrizations.spectral_norm(M.nn.BatchNorm1d(4)).weight)
    close(a, t)
    same_error(lambda M: M.nn.utils.parametrizations.spectral_norm(M.nn.Linear(2, 2), dim=3))
    same_error(lambda M: M.nn.utils.parametrizations.spectral_norm(M.nn.Linear(2, 2), name="nope"))


# ---------------------------------------------------------------- parametrize

def _symmetric(M):
    class Symmetric(M.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)

        def right_inverse(self, A):
            return A.triu()
    return Symmetric()


def _scale(M, k):
    class Scale(M.nn.Module):
        def forward(self, X):
            return X * k

        def right_inverse(self, A):
            return A / k
    return Scale()


def test_register_parametrization_chain_assign_and_remove():
    def run(M):
        P = M.nn.utils.parametrize
        m = M.nn.Linear(3, 3)
        P.register_parametrization(m, "weight", _symmetric(M))
        P.register_parametrization(m, "weight", _scale(M, 2.0))
        out = {"name": type(m).__name__, "keys": list(m.state_dict()), "is": P.is_parametrized(m),
               "is_w": P.is_parametrized(m, "weight"), "is_b": P.is_parametrized(m, "bias"),
               "before": P.type_before_parametrizations(m).__name__,
               "sym": bool((m.weight == m.weight.T).all()), "params": [n for n, _ in m.named_parameters()]}
        m.weight = M.eye(3) * 4  # stored through right_inverse (scale, then triu)
        out["assigned"] = m.weight.tolist()
        out["original"] = m.parametrizations.weight.original.tolist()
        y = m(M.ones(1, 3))
        y.sum().backward()
        out["grad"] = m.parametrizations.weight.original.grad.tolist()
        with P.cached():
            out["cached_same"] = m.weight is m.weight
        out["uncached_same"] = m.weight is m.weight
        P.remove_parametrizations(m, "weight")
        out["after"] = (type(m).__name__, list(m.state_dict()), m.weight.tolist(), type(m.weight).__name__)
        return out

    t, a = both(run)
    assert t == a


def test_parametrization_errors():
    class Bad:
        pass

    def shape_change(M):
        class Grow(M.nn.Module):
            def forward(self, X):
                return M.cat([X, X])
        M.nn.utils.parametrize.register_parametrization(M.nn.Linear(2, 2), "weight", Grow())
    same_error(shape_change)
    same_error(lambda M: M.nn.utils.parametrize.register_parametrization(M.nn.Linear(2, 2), "nope", _symmetric(M)))
    same_error(lambda M: M.nn.utils.parametrize.remove_parametrizations(M.nn.Linear(2, 2), "weight"))

    def no_inverse(M):
        class NoInv(M.nn.Module):
            def forward(self, X):
                return X * 2
        m = M.nn.Linear(2, 2)
        M.nn.utils.parametrize.register_parametrization(m, "weight", NoInv())
        m.weight = M.zeros(2, 2)
    same_error(no_inverse)

    def leave_unparametrized(M):
        m = M.nn.utils.parametrizations.weight_norm(M.nn.Linear(2, 2))
        M.nn.utils.parametrize.remove_parametrizations(m, "weight", leave_parametrized=False)
    same_error(leave_unparametrized)


def test_remove_parametrizations_leave_original():
    def run(M):
        m = M.nn.Linear(2, 2)
        w0 = m.weight.detach().clone()
        M.nn.utils.parametrize.register_parametrization(m, "weight", _scale(M, 3.0))
        M.nn.utils.parametrize.remove_parametrizations(m, "weight", leave_parametrized=False)
        return (m.weight / w0).tolist(), type(m).__name__

    t, a = both(run)
    assert t == a


def test_parametrized_module_trains_like_torchs():
    check_parity(lambda M: M.nn.utils.parametrize.register_parametrization(M.nn.Linear(3, 3), "weight",
                                                                           _symmetric(M)), (4, 3))


# ---------------------------------------------------------------- fusion

def test_fuse_conv_bn_and_linear_bn_eval():
    def run(M):
        conv, bn = M.nn.Conv2d(2, 3, 3, bias=False), M.nn.BatchNorm2d(3)
        with M.no_grad():
            bn.running_mean.uniform_(-1, 1)
            bn.running_var.uniform_(0.5, 2)
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-1, 1)
        conv.eval()
        bn.eval()
        fused = M.nn.utils.fuse_conv_bn_eval(conv, bn)
        x = M.randn(2, 2, 6, 6)
        lin, bn1 = M.nn.Linear(4, 3), M.nn.BatchNorm1d(3)
        with M.no_grad():
            bn1.running_mean.uniform_(-1, 1)
            bn1.running_var.uniform_(0.5, 2)
        lin.eval()
        bn1.eval()
        fl = M.nn.utils.fuse_linear_bn_eval(lin, bn1)
        z = M.randn(5, 4)
        return fused(x), bn(conv(x)), fused.weight, fused.bias, fl(z), bn1(lin(z)), type(fused.bias).__name__

    t, a = both(run)
    close(a[0], a[1], rtol=1e-4, atol=1e-5)  # the fused layer computes what the pair did
    close(a[4], a[5], rtol=1e-4, atol=1e-5)
    for i in (0, 2, 3, 4):
        close(a[i], t[i], rtol=1e-4, atol=1e-5)
    assert a[6] == t[6] == "Parameter"
    same_error(lambda M: M.nn.utils.fuse_conv_bn_eval(M.nn.Conv2d(1, 1, 1), M.nn.BatchNorm2d(1)))
    same_error(lambda M: M.nn.utils.fuse_linear_bn_eval(M.nn.Linear(2, 3).eval(), M.nn.BatchNorm1d(2).eval()))


# ---------------------------------------------------------------- functional_call, skip_init

def test_functional_call_routes_grads_to_the_given_tensors():
    m = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    w = ampc.randn(2, 3, requires_grad=True)
    x = ampc.randn(4, 3)
    own = m[0].weight.detach().clone()
    y = functional_call(m, {"0.weight": w}, (x,))
    y.sum().backward()
    assert w.grad is not None and m[0].weight.grad is None
    assert bool((m[0].weight == own).all())  # restored after the call
    ref = ampc.nn.functional.linear(x, w.detach(), m[0].bias)
    m2 = nn.Linear(3, 2)
    y2 = functional_call(m2, ({"weight": w.detach()}, {"bias": m[0].bias.detach()}), x)
    close(y2, ref)
    with pytest.raises(RuntimeError, match="Missing key"):
        functional_call(m2, {"weight": w}, x, strict=True)
    with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
        functional_call(m2, ({"weight": w}, {"weight": w}), x)
    assert ampc.func.functional_call is functional_call


def test_stack_module_state_matches_torch():
    t, a = both(lambda M: M.func.stack_module_state([M.nn.BatchNorm1d(3), M.nn.BatchNorm1d(3)]))
    for ad, td in zip(a, t):
        assert list(ad) == list(td)
        for k in td:
            close(ad[k], td[k])
            assert ad[k].requires_grad == td[k].requires_grad and ad[k].is_leaf
    same_error(lambda M: M.func.stack_module_state([]))
    same_error(lambda M: M.func.stack_module_state([M.nn.Linear(1, 1), M.nn.Linear(1, 1).eval()]))


def test_functional_call_matches_torch():
    t, a = both(lambda M: M.nn.Linear(3, 2))
    load_torch_state(a, t)
    wn = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    xn = np.ones((2, 3), np.float32)
    ty = torch.func.functional_call(t, {"weight": torch.from_numpy(wn)}, (torch.from_numpy(xn),))
    ay = functional_call(a, {"weight": ampc.from_numpy(wn)}, (ampc.from_numpy(xn),))
    close(ay, ty)


def test_skip_init_draws_no_random_numbers():
    def run(M):
        m = M.nn.utils.skip_init(M.nn.Linear, 4, 3)
        return type(m).__name__, list(m.weight.shape), M.randn(3).tolist()

    t, a = both(run)
    assert t == a
    same_error(lambda M: M.nn.utils.skip_init(type("NoDevice", (M.nn.Module,), {}), 1))


# ---------------------------------------------------------------- clipping and vectors

@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf"), 3.0])
@pytest.mark.parametrize("foreach", [None, True, False])
def test_clip_grad_norm_matches_torch(norm_type, foreach):
    def run(M):
        ps = [M.nn.Parameter(M.randn(3, 4)), M.nn.Parameter(M.randn(5)), M.nn.Parameter(M.randn(2))]
        for p in ps[:2]:
            p.grad = M.randn(*p.shape) * 3
        total = M.nn.utils.clip_grad_norm_(ps, 1.5, norm_type=norm_type, foreach=foreach)
        return total, [p.grad for p in ps[:2]], ps[2].grad

    t, a = both(run)
    close(a[0], t[0])
    for x, y in zip(a[1], t[1]):
        close(x, y)
    assert a[2] is None and t[2] is None


def test_clip_helpers_match_torch():
    def run(M):
        ps = [M.nn.Parameter(M.randn(4)), M.nn.Parameter(M.randn(2, 2))]
        for p in ps:
            p.grad = M.randn(*p.shape) * 2
        M.nn.utils.clip_grad_value_(ps, 0.5, foreach=False)
        clipped = [p.grad.clone() for p in ps]
        norm = M.nn.utils.get_total_norm([p.grad for p in ps], 2.0)
        M.nn.utils.clip_grads_with_norm_(ps, 0.1, norm)
        vec = M.nn.utils.parameters_to_vector(ps)
        M.nn.utils.vector_to_parameters(vec * 2, ps)
        return clipped, norm, [p.grad for p in ps], vec, [p.detach().clone() for p in ps]

    t, a = both(run)
    for x, y in zip(a[0], t[0]):
        close(x, y)
    close(a[1], t[1])
    for x, y in zip(a[2], t[2]):
        close(x, y)
    close(a[3], t[3])
    for x, y in zip(a[4], t[4]):
        close(x, y)

    def nonfinite(M):
        p = M.nn.Parameter(M.ones(2))
        p.grad = M.tensor([1.0, float("inf")])
        M.nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    same_error(nonfinite)
    same_error(lambda M: M.nn.utils.vector_to_parameters([1.0], [M.nn.Parameter(M.ones(1))]))


# ---------------------------------------------------------------- nn.init

INIT_CASES = [("uniform_", (-0.5, 2.0)), ("normal_", (0.3, 2.0)), ("trunc_normal_", (0.0, 1.0, -1.0, 1.5)),
              ("xavier_uniform_", (2.0,)), ("xavier_normal_", ()), ("kaiming_uniform_", (0.1,)),
              ("kaiming_normal_", (0, "fan_out", "relu")), ("constant_", (0.7,)), ("ones_", ()), ("zeros_", ()),
              ("eye_", ()), ("sparse_", (0.5, 0.1))]


@pytest.mark.parametrize("name,args", INIT_CASES, ids=[c[0] for c in INIT_CASES])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_init_bit_exact_with_torch(name, args, dtype):
    t, a = both(lambda M: getattr(M.nn.init, name)(M.empty(6, 9, dtype=getattr(M, dtype)), *args))
    assert np.array_equal(_np(a), _np(t))


@pytest.mark.parametrize("name,args", [c for c in INIT_CASES if c[0] not in ("constant_", "ones_", "zeros_",
                                                                               "eye_")])
def test_init_with_a_generator_bit_exact(name, args):
    t = getattr(torch.nn.init, name)(torch.empty(4, 7), *args, generator=torch.Generator().manual_seed(11))
    a = getattr(ampc.nn.init, name)(ampc.empty(4, 7), *args, generator=ampc.Generator().manual_seed(11))
    assert np.array_equal(_np(a), _np(t))


def test_dirac_and_orthogonal():
    t, a = both(lambda M: M.nn.init.dirac_(M.empty(4, 2, 3, 3), 2))
    assert np.array_equal(_np(a), _np(t))
    for shape in [(5, 3), (3, 5), (4, 2, 3), (0, 3)]:
        t, a = both(lambda M: M.nn.init.orthogonal_(M.empty(*shape), 1.5))
        close(a, t, rtol=1e-5, atol=1e-6)  # the QR is LAPACK's: equal to rounding
        if a.numel():
            q = _np(a).reshape(shape[0], -1) / 1.5
            small = min(q.shape)
            gram = q @ q.T if q.shape[0] == small else q.T @ q
            np.testing.assert_allclose(gram, np.eye(small), atol=1e-5)  # orthonormal rows or columns
    same_error(lambda M: M.nn.init.orthogonal_(M.empty(3)))
    same_error(lambda M: M.nn.init.sparse_(M.empty(3, 2, 2), 0.5))


def test_deprecated_init_aliases_warn():
    for name in ["uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal", "kaiming_uniform",
                 "kaiming_normal", "orthogonal", "sparse"]:
        assert getattr(ampc.nn.init, name).__name__ == name
    with pytest.warns(FutureWarning, match=r"`nn.init.eye` is now deprecated in favor of `nn.init.eye_`"):
        ampc.nn.init.eye(ampc.empty(2, 2))
    assert set(torch.nn.init.__all__) == set(ampc.nn.init.__all__)


def test_init_namespace_and_utils_namespace_complete():
    import ampc.nn.utils as U
    for name in torch.nn.utils.__all__ if hasattr(torch.nn.utils, "__all__") else []:
        if name in ("convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"):
            continue  # memory formats: ampc tensors are strided (tools/api_not_planned.txt)
        if name in ("rnn",):
            continue
        assert hasattr(U, name), name
    assert OrderedDict  # (the module's import, used by the cases above)


# ---------------------------------------------------------------- orthogonal

@pytest.mark.parametrize("shape,orth_map", [((4, 4), None), ((5, 3), None), ((3, 5), None), ((4, 4), "householder"),
                                            ((5, 3), "matrix_exp"), ((6, 6), "matrix_exp")])
def test_orthogonal_parametrization_matches_torch(shape, orth_map):
    torch.manual_seed(0)
    tm = torch.nn.utils.parametrizations.orthogonal(torch.nn.Linear(shape[1], shape[0]), orthogonal_map=orth_map)
    ampc.manual_seed(0)
    am = AP.orthogonal(nn.Linear(shape[1], shape[0]), orthogonal_map=orth_map)
    assert list(am.state_dict()) == list(tm.state_dict())
    w = _np(am.weight)  # a fresh one is (semi-)orthogonal
    small = min(shape)
    np.testing.assert_allclose(w @ w.T if shape[0] == small else w.T @ w, np.eye(small), atol=1e-5)
    with torch.no_grad():
        tm.parametrizations.weight.original.add_(0.3 * torch.randn(*shape))  # away from the identity
    load_torch_state(am, tm)
    x = np.random.default_rng(0).standard_normal((3, shape[1])).astype(np.float32)
    ty, ay = tm(torch.from_numpy(x)), am(ampc.from_numpy(x))
    close(ay, ty, rtol=1e-5, atol=1e-6)
    ty.pow(2).sum().backward()
    ay.pow(2).sum().backward()
    close(am.parametrizations.weight.original.grad, tm.parametrizations.weight.original.grad, rtol=1e-4, atol=1e-5)


def test_orthogonal_assignment_and_errors():
    m = AP.orthogonal(nn.Linear(4, 4))
    q = ampc.from_numpy(np.linalg.qr(np.random.default_rng(2).standard_normal((4, 4)))[0].astype(np.float32))
    m.weight = q  # an orthogonal matrix is stored as the new base
    close(m.weight, q, atol=1e-6)
    m.weight = q * 2  # not orthogonal: replaced by its QR's Q, as torch
    w = _np(m.weight)
    np.testing.assert_allclose(w.T @ w, np.eye(4), atol=1e-5)
    same_error(lambda M: M.nn.utils.parametrizations.orthogonal(M.nn.BatchNorm1d(3)))
    same_error(lambda M: M.nn.utils.parametrizations.orthogonal(M.nn.Linear(2, 2), orthogonal_map="qr"))
    same_error(lambda M: M.nn.utils.parametrizations.orthogonal(M.nn.Linear(2, 2), use_trivialization=False,
                                                                orthogonal_map="matrix_exp").__setattr__(
        "weight", M.eye(2)))
    with pytest.raises(NotImplementedError, match="linalg.solve"):
        AP.orthogonal(nn.Linear(3, 3), orthogonal_map="cayley")
