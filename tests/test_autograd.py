"""Autograd (issue 3): every foundation op's gradient against float64 central differences
(ampc.testing.gradcheck), second order (gradgradcheck), the engine's semantics (accumulation,
retain_graph, hooks, retain_grad, autograd.grad, custom Functions, grad modes), PyTorch's errors
for misuse, memory (a 10,000-op chain, live tensors back to baseline) and a small MLP against
torch."""
import gc
import threading

import numpy as np
import pytest
import torch

import ampc
import ampc.nn.functional as AF
from ampc.testing import GradcheckError, gradcheck, gradgradcheck
from helpers import ExpOut

RNG = np.random.default_rng(1234)


def T(shape_or_array, requires_grad=True, low=None, high=None, dtype=ampc.float64):
    """A float64 leaf from random values (or from an array)."""
    if isinstance(shape_or_array, tuple):
        a = RNG.uniform(low, high, shape_or_array) if low is not None else RNG.standard_normal(shape_or_array)
    else:
        a = np.asarray(shape_or_array, dtype=np.float64)
    return ampc.tensor(a, dtype=dtype, requires_grad=requires_grad)


def noncontig(shape, low=None, high=None):
    """A non-contiguous float64 leaf of `shape`: the transpose of a contiguous tensor."""
    t = T(tuple(reversed(shape)), requires_grad=False, low=low, high=high)
    x = t.permute(*reversed(range(len(shape)))).detach()
    assert not x.is_contiguous()
    return x.requires_grad_()


def strided(shape):
    """A leaf that is every other element of a bigger tensor (a sliced view with step)."""
    big = T((shape[0] * 2,) + tuple(shape[1:]), requires_grad=False)
    return big[::2].detach().requires_grad_()


# ---------------------------------------------------------------- elementwise

UNARY = {
    "neg": (lambda x: -x, None),
    "abs": (lambda x: x.abs(), "away0"),
    "exp": (lambda x: x.exp(), None),
    "log": (lambda x: x.log(), "pos"),
    "sqrt": (lambda x: x.sqrt(), "pos"),
    "rsqrt": (lambda x: x.rsqrt(), "pos"),
    "reciprocal": (lambda x: x.reciprocal(), "away0"),
    "sigmoid": (lambda x: x.sigmoid(), None),
    "tanh": (lambda x: x.tanh(), None),
    "relu": (lambda x: x.relu(), "away0"),
    "gelu": (lambda x: ampc.gelu(x), None),
    "gelu_tanh": (lambda x: AF.gelu(x, approximate="tanh"), None),
    "silu": (lambda x: ampc.silu(x), None),
    "softplus": (lambda x: ampc.softplus(x), None),
    "softplus_beta": (lambda x: ampc.softplus(x, beta=2.0, threshold=1.0), "away_thr"),
    "sin": (lambda x: x.sin(), None),
    "cos": (lambda x: x.cos(), None),
    "erf": (lambda x: x.erf(), None),
    "clamp": (lambda x: x.clamp(-0.5, 0.7), "away_clamp"),
    "clamp_min": (lambda x: x.clamp(min=0.1), "away_clamp"),
    "square": (lambda x: x * x, None),
    "pow_scalar": (lambda x: x ** 2.5, "pos"),
    "scalar_pow": (lambda x: 2.0 ** x, None),
    "rsub": (lambda x: 2.0 - x, None),
    "rdiv": (lambda x: 1.5 / x, "away0"),
}


def _times_two(name, backward):
    """An autograd.Function `name` whose forward is a * 2 and whose backward is `backward(ctx, g)`:
    the tests plant wrong backwards in it (wrong count, wrong value, raising)."""
    return type(name, (ampc.autograd.Function,), {"forward": staticmethod(lambda ctx, a: a * 2),
                                                   "backward": staticmethod(backward)})


def domain(kind, shape, contiguous=True):
    lows = {"pos": (0.3, 2.0)}
    make = (lambda s, lo=None, hi=None: T(s, low=lo, high=hi)) if contiguous else noncontig
    if kind == "pos":
        return make(shape, 0.3, 2.0)
    x = make(shape) if contiguous else noncontig(shape)
    if kind in ("away0", "away_clamp", "away_thr"):
        a = x.detach().numpy()
        bad = {"away0": [0.0], "away_clamp": [-0.5, 0.7, 0.1], "away_thr": [0.5]}[kind]
        for b in bad:  # keep finite differences away from kinks
            a[np.abs(a - b) < 0.05] += 0.2
    return x


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_gradcheck(name):
    fn, kind = UNARY[name]
    assert gradcheck(fn, (domain(kind, (3, 4)),))
    assert gradcheck(fn, (domain(kind, (2, 3), contiguous=False),))


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "sigmoid", "tanh", "relu", "gelu", "gelu_tanh", "silu",
                                  "softplus", "square", "pow_scalar", "rdiv", "sin", "erf"])
def test_unary_gradgradcheck(name):
    fn, kind = UNARY[name]
    assert gradgradcheck(fn, (domain(kind, (2, 3)),))


BINARY = {
    "add": lambda a, b: a + b,
    "add_alpha": lambda a, b: ampc.add(a, b, alpha=-0.5),
    "sub": lambda a, b: a - b,
    "sub_alpha": lambda a, b: ampc.sub(a, b, alpha=2.0),
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "pow": lambda a, b: a.abs() ** b,
    "maximum": lambda a, b: ampc.maximum(a, b),
    "minimum": lambda a, b: ampc.minimum(a, b),
    "atan2": lambda a, b: ampc.atan2(a, b),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 1, 4), (2, 4)), ((4,), (2, 3, 1)), ((), (2, 3))])
def test_binary_gradcheck_broadcast(name, shapes):
    a, b = T(shapes[0]), T(shapes[1])
    if name in ("div", "pow"):
        b = T(shapes[1], low=0.5, high=1.5)
    assert gradcheck(BINARY[name], (a, b))


@pytest.mark.parametrize("name", ["add", "mul", "div", "sub_alpha", "pow"])
def test_binary_noncontiguous_and_gradgrad(name):
    a, b = noncontig((3, 2), 0.5, 1.5), strided((3, 2))
    if name in ("div", "pow"):
        b = noncontig((3, 2), 0.5, 1.5)
    assert gradcheck(BINARY[name], (a, b))
    assert gradgradcheck(BINARY[name], (T((2, 3), low=0.5, high=1.5), T((2, 3), low=0.5, high=1.5)))


def test_where_and_masked_fill():
    a, b = T((3, 4)), T((4,))
    cond = ampc.tensor(RNG.standard_normal((3, 4)) > 0)
    assert gradcheck(lambda a, b: ampc.where(cond, a, b), (a, b))
    assert gradcheck(lambda a: a.masked_fill(cond, 2.0), (a,))
    assert gradgradcheck(lambda a, b: ampc.where(cond, a * a, b), (a, b))


def test_cast_grad_comes_back_in_input_dtype():
    x = T((3,))
    y = x.float()
    assert y.grad_fn.name() == "ToCopyBackward0"
    (y * 2).sum().backward()
    assert x.grad.dtype == ampc.float64
    np.testing.assert_allclose(x.grad.numpy(), 2.0)
    h = ampc.ones(3, dtype=ampc.float32, requires_grad=True)
    (h.half() * 3).sum().backward()
    assert h.grad.dtype == ampc.float32
    np.testing.assert_allclose(h.grad.numpy(), 3.0)


# ---------------------------------------------------------------- reductions

@pytest.mark.parametrize("dim", [None, 0, 1, -1, (0, 2)])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("op", ["sum", "mean", "prod", "amax", "amin", "var", "std", "norm", "logsumexp"])
def test_reductions_each_dim(op, dim, keepdim):
    x = T((2, 3, 2), low=0.5, high=1.5) if op == "prod" else T((2, 3, 2))
    if op in ("amax", "amin"):
        x = T(np.arange(12.0).reshape(2, 3, 2) * 0.37 % 1.7)  # distinct values: no ties
    kw = {} if dim is None else {"dim": dim}
    if op == "prod" and isinstance(dim, tuple):
        kw = {"dim": dim[1]}  # prod takes a single dim, as torch.prod
    if op == "logsumexp" and dim is None:
        kw = {"dim": (0, 1, 2)}
    fn = {
        "sum": lambda t: t.sum(**kw, keepdim=keepdim) if kw else t.sum(),
        "mean": lambda t: t.mean(**kw, keepdim=keepdim) if kw else t.mean(),
        "prod": lambda t: t.prod(**kw, keepdim=keepdim) if kw else t.prod(),
        "amax": lambda t: t.amax(**kw, keepdim=keepdim) if kw else t.amax(),
        "amin": lambda t: t.amin(**kw, keepdim=keepdim) if kw else t.amin(),
        "var": lambda t: t.var(**kw, keepdim=keepdim) if kw else t.var(),
        "std": lambda t: t.std(**kw, keepdim=keepdim) if kw else t.std(),
        "norm": lambda t: t.norm(**kw, keepdim=keepdim) if kw else t.norm(),
        "logsumexp": lambda t: t.logsumexp(**kw, keepdim=keepdim),
    }[op]
    assert gradcheck(fn, (x,))


def test_reductions_noncontiguous_and_options():
    x = noncontig((3, 4))
    assert gradcheck(lambda t: t.sum(0), (x,))
    assert gradcheck(lambda t: t.mean(1, keepdim=True), (x,))
    assert gradcheck(lambda t: t.var(0, correction=0), (x,))
    assert gradcheck(lambda t: t.norm(p=3, dim=1), (x,))
    assert gradcheck(lambda t: t.norm(p=1), (x,))
    assert gradcheck(lambda t: t.norm(p=float("inf")), (T(np.arange(1.0, 7.0).reshape(2, 3)),))
    assert gradcheck(lambda t: t.sum(dtype=ampc.float32).double(), (x,), eps=1e-3, atol=1e-3)  # float32 inside


def test_prod_with_zeros():
    for vals in ([1.5, 0.0, 2.0, 3.0], [0.0, 2.0, 0.0, 3.0], [1.5, 2.0, 3.0, 0.5]):
        x = T(np.array(vals))
        x.prod().backward()
        xt = torch.tensor(vals, dtype=torch.float64, requires_grad=True)
        xt.prod().backward()
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_max_min_dim(op, dim):
    x = T(np.array([[0.3, 1.7, -0.2], [2.5, -1.1, 0.9]]))
    assert gradcheck(lambda t: getattr(t, op)(dim)[0], (x,))
    assert gradcheck(lambda t: getattr(t, op)(dim, keepdim=True).values, (x,))
    assert gradcheck(lambda t: getattr(t, op)(), (x,))


def test_amax_ties_share_gradient_like_torch():
    x = T(np.array([1.0, 3.0, 3.0, 2.0]))
    x.amax().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0, 0.5, 0.5, 0])


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumsum(dim):
    assert gradcheck(lambda t: t.cumsum(dim), (T((3, 4)),))
    assert gradcheck(lambda t: t.cumsum(dim), (noncontig((3, 4)),))


@pytest.mark.parametrize("op", ["sum", "mean"])
def test_reduction_gradgrad(op):
    assert gradgradcheck(lambda t: (getattr(t, op)(0) ** 2).sum(), (T((3, 2)),))
    assert gradgradcheck(lambda t: getattr(t, op)(), (T((3, 2)),))


# ---------------------------------------------------------------- matrix ops

def test_mm_bmm_addmm_baddbmm():
    assert gradcheck(lambda a, b: a.mm(b), (T((3, 4)), T((4, 2))))
    assert gradcheck(lambda a, b: a.mm(b), (noncontig((3, 4)), noncontig((4, 2))))
    assert gradcheck(lambda a, b: ampc.bmm(a, b), (T((2, 3, 4)), T((2, 4, 2))))
    assert gradcheck(lambda c, a, b: ampc.addmm(c, a, b, beta=0.5, alpha=2.0), (T((2,)), T((3, 4)), T((4, 2))))
    assert gradcheck(lambda c, a, b: ampc.baddbmm(c, a, b, beta=-1.0, alpha=0.5),
                     (T((3, 2)), T((2, 3, 4)), T((2, 4, 2))))


@pytest.mark.parametrize("sa,sb", [((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 2)), ((3, 4), (4, 2)),
                                   ((2, 3, 4), (4, 2)), ((2, 3, 4), (4,)), ((4,), (2, 4, 3)),
                                   ((2, 1, 3, 4), (2, 4, 2)), ((3, 4), (2, 4, 2))])
def test_matmul_shapes(sa, sb):
    assert gradcheck(lambda a, b: a @ b, (T(sa), T(sb)))


def test_matmul_gradgrad():
    assert gradgradcheck(lambda a, b: a @ b, (T((3, 4)), T((4, 2))))
    assert gradgradcheck(lambda a, b: (a @ b).sum(), (T((2, 3, 4)), T((4, 2))))
    assert gradgradcheck(lambda a, b: a.mm(b).tanh(), (T((2, 3)), T((3, 2))))


# ---------------------------------------------------------------- indexing and joining

def test_index_select_gather_scatter():
    idx = ampc.tensor([2, 0, 2])
    assert gradcheck(lambda t: t.index_select(0, idx), (T((3, 4)),))
    assert gradcheck(lambda t: t.index_select(1, idx), (noncontig((2, 3)),))
    g = ampc.tensor([[0, 1, 1], [2, 0, 0]])
    assert gradcheck(lambda t: t.gather(1, g), (T((2, 3)),))
    assert gradcheck(lambda a, s: a.scatter_add(1, g, s), (T((2, 3)), T((2, 3))))
    assert gradcheck(lambda a, s: a.index_add(0, idx, s, alpha=2.0), (T((3, 4)), T((3, 4))))
    assert gradgradcheck(lambda t: t.gather(1, g) ** 2, (T((2, 3)),))


def test_advanced_indexing_and_setitem():
    idx = ampc.tensor([1, 0, 1])
    mask = ampc.tensor(RNG.standard_normal((3, 4)) > 0)
    assert gradcheck(lambda t: t[idx], (T((3, 4)),))
    assert gradcheck(lambda t: t[:, idx], (T((3, 4)),))
    assert gradcheck(lambda t: t[mask], (T((3, 4)),))
    assert gradcheck(lambda t: t[idx, ampc.tensor([0, 3, 2])], (T((3, 4)),))

    def put(a, v):
        c = a * 1.0
        c[ampc.tensor([2, 0])] = v  # distinct rows: with repeats the last write wins arbitrarily
        return c

    assert gradcheck(put, (T((3, 4)), T((4,))))

    def put_slice(a, v):
        c = a.clone()
        c[1:, ::2] = v
        return c * c

    assert gradcheck(put_slice, (T((3, 4)), T((2, 2))))


def test_cat_stack_split_chunk_unbind():
    a, b, c = T((2, 3)), T((1, 3)), noncontig((4, 3))
    assert gradcheck(lambda a, b, c: ampc.cat([a, b, c]), (a, b, c))
    assert gradcheck(lambda a, c: ampc.cat([a.t(), c.t()], dim=1), (a, c))
    assert gradcheck(lambda a, b: ampc.stack([a, b * 2], dim=1), (a, T((2, 3))))
    assert gradcheck(lambda c: c.split(3)[1] * 2, (c,))
    assert gradcheck(lambda c: tuple(p * (i + 1) for i, p in enumerate(c.chunk(2, dim=0))), (c,))
    assert gradcheck(lambda c: c.unbind(1)[2], (c,))
    many = [T((1, 2)) for _ in range(12)]  # more inputs than a node's inline capacity
    assert gradcheck(lambda *ts: ampc.cat(ts), tuple(many))


# ---------------------------------------------------------------- views

VIEWS = {
    "view": lambda t: t.view(6, 2),
    "reshape_copy": lambda t: t.transpose(0, 2).reshape(12),
    "permute": lambda t: t.permute(2, 0, 1),
    "transpose": lambda t: t.transpose(0, 2),
    "t": lambda t: t[0].t(),
    "expand": lambda t: t[:, :1].expand(2, 4, 2),
    "squeeze": lambda t: t[:, :1].squeeze(1),
    "unsqueeze": lambda t: t.unsqueeze(1),
    "slice_step": lambda t: t[1:, ::2],
    "select": lambda t: t[1],
    "narrow": lambda t: t.narrow(1, 1, 2),
    "flatten": lambda t: t.flatten(),
    "contiguous": lambda t: t.transpose(0, 1).contiguous(),
    "clone": lambda t: t.clone(),
    "view_as": lambda t: t.view_as(t),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_views(name):
    assert gradcheck(lambda t: VIEWS[name](t) * 2.0, (T((2, 3, 2)),))


def test_view_gradgrad_and_detach():
    assert gradgradcheck(lambda t: (t.t() @ t).sum(), (T((3, 2)),))
    x = T((3,))
    d = x.detach()
    assert not d.requires_grad and d.grad_fn is None and d.is_leaf
    y = (x * 2).detach_()
    assert not y.requires_grad and y.is_leaf


# ---------------------------------------------------------------- engine semantics

def test_grad_fn_names_and_graph():
    x = T((2, 3))
    y = (x * 2 + 1).sum()
    assert type(y.grad_fn).__name__ == "SumBackward0" and y.grad_fn.name() == "SumBackward0"
    assert repr(y.grad_fn).startswith("<SumBackward0 object at 0x")
    assert y.grad_fn is y.grad_fn
    (add_fn, _), = y.grad_fn.next_functions
    assert add_fn.name() == "AddBackward1"
    (mul_fn, _), (none, _) = add_fn.next_functions
    assert mul_fn.name() == "MulBackward0" and none is None
    acc = mul_fn.next_functions[0][0]
    assert type(acc).__name__ == "AccumulateGrad" and acc.variable is x
    assert x.is_leaf and not y.is_leaf and y.requires_grad
    assert ampc.addmm(T((2,)), T((3, 4)), T((4, 2))).grad_fn.name() == "AddmmBackward0"
    assert "grad_fn=<SumBackward0>" in repr(y)


def test_accumulates_across_backward_calls():
    x = T((3,))
    w = T((3,))
    for _ in range(2):
        (x * w).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * w.detach().numpy())
    g = x.grad
    (x * w).sum().backward()
    assert x.grad is g  # accumulated in place
    x.grad = None
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3.0)


def test_first_grad_does_not_alias_user_tensor():
    x = ampc.ones(3, requires_grad=True)
    g = ampc.full((3,), 2.0)
    x.backward(g)
    g.add_(100)
    np.testing.assert_allclose(x.grad.numpy(), 2.0)


def test_grad_dtype_follows_parameter():
    w = ampc.ones(4, dtype=ampc.float16, requires_grad=True)
    (w.float() * 3).sum().backward()
    assert w.grad.dtype == ampc.float16
    b = ampc.ones(2, dtype=ampc.bfloat16, requires_grad=True)
    (b * b).sum().backward()
    assert b.grad.dtype == ampc.bfloat16
    np.testing.assert_allclose(b.grad.float().numpy(), 2.0)


def test_retain_graph_and_second_backward_error():
    x = T((3,))
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()
    z = (x + 1).sum()  # no saved tensors: backward twice is fine, as in PyTorch
    z.backward()
    z.backward()


def test_misuse_errors():
    x = T((3,))
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"):
        ampc.ones(2).sum().backward()
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        ampc.tensor([1, 2]).requires_grad_()
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        ampc.tensor([1, 2]).requires_grad = True
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        x.add_(1)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x[0].mul_(2)
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * 2).backward(ampc.ones(2, dtype=ampc.float64))
    y = x * 2
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
        y.requires_grad = False
    with pytest.warns(UserWarning, match="is not a leaf Tensor is being accessed"):
        assert y.grad is None
    with ampc.no_grad():
        x.add_(1)  # allowed without grad mode


def test_inplace_modification_of_saved_tensor():
    x = T((3,))
    e = x.exp()
    z = (e * 2).sum()
    e.add_(1)
    with pytest.raises(RuntimeError, match="one of the variables needed for gradient computation has been modified by "
                                           "an inplace operation"):
        z.backward()
    a = ampc.ones(3, dtype=ampc.float64)
    b = x * a
    a.mul_(2)
    with pytest.raises(RuntimeError, match=r"\[ampc.DoubleTensor \[3\]\] is at version"):
        b.sum().backward()


def test_inplace_ops_record_history():
    x = T((3,))
    y = x * 1.0
    y.mul_(x)
    y.add_(2.0)
    y.exp_()
    y.backward(ampc.ones(3, dtype=ampc.float64))
    xv = x.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(xv * xv + 2) * 2 * xv)
    z = T((4,))
    buf = ampc.zeros(4, dtype=ampc.float64)
    buf[1:3] = z[:2] * 3
    buf.sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), [3, 3, 0, 0])
    acc = ampc.zeros(3, dtype=ampc.float64)  # does not require grad until an in-place op records
    acc.add_(x, alpha=2.0)
    acc.mul_(x)
    assert acc.requires_grad and acc.grad_fn.name() == "MulBackward0"
    x.grad = None
    acc.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 4 * x.detach().numpy())


def test_hooks_and_retain_grad():
    x = T((3,))
    h = x * 2
    h.retain_grad()
    assert h.retains_grad and not x.retains_grad
    seen = []
    handle = h.register_hook(lambda g: seen.append(g.clone()) or g * 10)
    xh = x.register_hook(lambda g: g + 1)
    (h * h).sum().backward()
    hv = h.detach().numpy()
    np.testing.assert_allclose(seen[0].numpy(), 2 * hv)
    np.testing.assert_allclose(h.grad.numpy(), 20 * hv)  # retained after the hook
    np.testing.assert_allclose(x.grad.numpy(), 2 * 20 * hv + 1)
    handle.remove()
    xh.remove()
    x.grad = None
    (x * 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2.0)
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        ampc.ones(2).register_hook(lambda g: g)
    with pytest.raises(RuntimeError, match="hook"):
        y = T((2,))
        y.register_hook(lambda g: ampc.ones(3, dtype=ampc.float64))
        (y * 1).sum().backward()


def test_hook_exception_propagates():
    x = T((2,))

    def bad(g):
        raise ValueError("from the hook")

    x.register_hook(bad)
    with pytest.raises(ValueError, match="from the hook"):
        (x * 2).sum().backward()


def test_grad_setter_checks():
    x = T((3,))
    x.grad = ampc.ones(3, dtype=ampc.float64)
    with pytest.raises(RuntimeError, match="attempting to assign a gradient of size"):
        x.grad = ampc.ones(2, dtype=ampc.float64)
    with pytest.raises(RuntimeError, match="attempting to assign a gradient with dtype"):
        x.grad = ampc.ones(3, dtype=ampc.float32)
    with pytest.raises(TypeError, match="assigned grad expected to be a Tensor or None"):
        x.grad = 3
    del x.grad
    assert x.grad is None


def test_autograd_grad():
    x, w = T((3,)), T((3,))
    y = (x * w).sum()
    gx, gw = ampc.autograd.grad(y, [x, w], retain_graph=True)
    np.testing.assert_allclose(gx.numpy(), w.detach().numpy())
    assert x.grad is None and w.grad is None
    (gx2,) = ampc.autograd.grad([y], x, grad_outputs=ampc.tensor(2.0, dtype=ampc.float64), retain_graph=True)
    np.testing.assert_allclose(gx2.numpy(), 2 * w.detach().numpy())
    other = T((2,))
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        ampc.autograd.grad(y, [x, other], retain_graph=True)
    gx, go = ampc.autograd.grad(y, [x, other], allow_unused=True, retain_graph=True)
    assert go is None
    _, gz = ampc.autograd.grad(y, [x, other], materialize_grads=True, retain_graph=True)
    np.testing.assert_allclose(gz.numpy(), 0.0)
    with pytest.raises(RuntimeError, match="One of the differentiated Tensors does not require grad"):
        ampc.autograd.grad(y, [ampc.ones(3)])
    # grads w.r.t. a non-leaf, and backward(inputs=...)
    h = x * 3
    out = (h * h * w).sum()
    (gh,) = ampc.autograd.grad(out, h, retain_graph=True)
    np.testing.assert_allclose(gh.numpy(), 2 * h.detach().numpy() * w.detach().numpy())
    out.backward(inputs=[w], retain_graph=True)
    assert w.grad is not None and x.grad is None
    ampc.autograd.backward([out], inputs=[x])
    np.testing.assert_allclose(x.grad.numpy(), 18 * x.detach().numpy() * w.detach().numpy())


def _gradient_penalty_losses(lib, tensor, steps=60, lr=0.1):
    """WGAN-GP style: loss + (|d out/d x| - 1)^2, which needs backward through a backward."""
    rng = np.random.default_rng(0)
    X = tensor(rng.standard_normal((16, 3)).astype(np.float32))
    Y = tensor(rng.standard_normal((16, 1)).astype(np.float32))
    W1 = tensor((rng.standard_normal((3, 8)) * 0.5).astype(np.float32)).requires_grad_()
    W2 = tensor((rng.standard_normal((8, 1)) * 0.5).astype(np.float32)).requires_grad_()
    losses = []
    for _ in range(steps):
        xi = X.detach().requires_grad_()
        out = (xi @ W1).tanh() @ W2
        (gx,) = lib.autograd.grad(out.sum(), xi, create_graph=True)
        penalty = ((gx * gx).sum(1).sqrt() - 1.0) ** 2
        loss = ((out - Y) ** 2).mean() + 0.5 * penalty.mean()
        losses.append(loss.item())
        W1.grad = W2.grad = None
        loss.backward()
        with lib.no_grad():
            W1 -= lr * W1.grad
            W2 -= lr * W2.grad
    return np.array(losses)


def test_create_graph_gradient_penalty_trains():
    ours = _gradient_penalty_losses(ampc, ampc.tensor)
    theirs = _gradient_penalty_losses(torch, torch.tensor)
    assert ours[-1] < 0.7 * ours[0]
    np.testing.assert_allclose(ours, theirs, rtol=1e-4)


def test_double_backward_matches_torch():
    xv = RNG.standard_normal(5)
    x = ampc.tensor(xv, requires_grad=True)
    y = (x.sigmoid() * x.exp() + x ** 3).sum()
    (g,) = ampc.autograd.grad(y, x, create_graph=True)
    g.sum().backward()
    xt = torch.tensor(xv, requires_grad=True)
    yt = (xt.sigmoid() * xt.exp() + xt ** 3).sum()
    (gt,) = torch.autograd.grad(yt, xt, create_graph=True)
    gt.sum().backward()
    np.testing.assert_allclose(g.detach().numpy(), gt.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12)


# ---------------------------------------------------------------- grad modes

def test_grad_modes():
    x = T((2,))
    with ampc.no_grad():
        assert not ampc.is_grad_enabled()
        assert not (x * 2).requires_grad
        with ampc.enable_grad():
            assert (x * 2).requires_grad
    assert (x * 2).requires_grad
    with ampc.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    ampc.set_grad_enabled(False)
    assert not ampc.is_grad_enabled()
    ampc.set_grad_enabled(True)
    with ampc.inference_mode():
        assert ampc.is_inference_mode_enabled() and not ampc.is_grad_enabled()
        assert not (x * 2).requires_grad
        with ampc.inference_mode(False):
            assert ampc.is_grad_enabled()
    assert ampc.is_grad_enabled() and not ampc.is_inference_mode_enabled()

    @ampc.no_grad()
    def f(t):
        return t * 2

    @ampc.inference_mode
    def g(t):
        return t * 2

    assert not f(x).requires_grad and not g(x).requires_grad and ampc.is_grad_enabled()
    assert ampc.autograd.no_grad is ampc.no_grad


def test_grad_mode_is_thread_local():
    seen = []
    with ampc.no_grad():
        t = threading.Thread(target=lambda: seen.append(ampc.is_grad_enabled()))
        t.start()
        t.join()
    assert seen == [True]


# ---------------------------------------------------------------- custom Function

class ScaledSquare(ampc.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        ctx.seen_needs = ctx.needs_input_grad
        return x * x * scale

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2 * x * ctx.scale, None


class AddOneInplace(ampc.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.add_(1)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g


class SortLike(ampc.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        idx = ampc.tensor([1, 0, 2])
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(idx)
        return x.index_select(0, idx), idx

    @staticmethod
    def backward(ctx, g, g_idx):
        (idx,) = ctx.saved_tensors
        assert g_idx is None or float(g_idx.abs().sum()) == 0
        return ampc.zeros_like(g).index_add(0, idx, g)


def test_custom_function():
    x = T((3,))
    y = ScaledSquare.apply(x, 3.0)
    assert type(y.grad_fn).__name__ == "ScaledSquareBackward"
    assert y.grad_fn.needs_input_grad == (True, False)
    assert gradcheck(lambda t: ScaledSquare.apply(t, 3.0), (x,))
    assert gradcheck(ExpOut.apply, (T((2, 2)),))
    assert gradgradcheck(ExpOut.apply, (T((2, 2)),))
    c = ampc.ones(3, dtype=ampc.float64)
    assert ScaledSquare.apply(c, 2.0).grad_fn is None
    with ampc.no_grad():
        assert not ScaledSquare.apply(x, 2.0).requires_grad
    v, idx = SortLike.apply(x)
    assert v.requires_grad and not idx.requires_grad
    assert gradcheck(lambda t: SortLike.apply(t)[0], (x,))


def test_custom_function_mark_dirty_and_errors():
    x = T((3,))
    h = x * 2
    out = AddOneInplace.apply(h)
    assert out is h and h.grad_fn.name() == "AddOneInplaceBackward"
    (out * out).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * 2 * (2 * x.detach().numpy() + 1))
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad has been used in an in-place"):
        AddOneInplace.apply(T((2,)))

    WrongCount = _times_two("WrongCount", lambda ctx, g: (g, g))

    with pytest.raises(RuntimeError, match="returned an incorrect number of gradients"):
        WrongCount.apply(x).sum().backward()

    class Raises(WrongCount):
        @staticmethod
        def backward(ctx, g):
            raise KeyError("inside backward")

    with pytest.raises(KeyError, match="inside backward"):
        Raises.apply(x).sum().backward()


def test_custom_function_materialize_grads():
    class TwoOut(ampc.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            assert g2 is None
            return g1 * 2

    x = T((2,))
    a, b = TwoOut.apply(x)
    a.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2.0)


# ---------------------------------------------------------------- memory and depth

def test_deep_chain_and_memory_returns_to_baseline():
    gc.collect()
    live0, nodes0 = ampc._C._live_tensors(), ampc._C._live_nodes()
    x = ampc.tensor([1.0], requires_grad=True)
    h = x
    for _ in range(10000):
        h = h * 1.0001 - 0.0001 * h
    h.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0], rtol=1e-9)
    del h
    gc.collect()
    assert ampc._C._live_nodes() == nodes0
    del x
    gc.collect()
    assert ampc._C._live_tensors() == live0


def test_graph_freed_after_backward_mlp_step():
    gc.collect()
    w = ampc.randn(8, 8, requires_grad=True)
    live0 = ampc._C._live_tensors()
    for _ in range(3):
        loss = ((ampc.randn(4, 8) @ w).relu() ** 2).mean()
        loss.backward()
        del loss
        gc.collect()
    assert ampc._C._live_tensors() == live0 + 1  # w.grad


# ---------------------------------------------------------------- against torch

def test_mlp_grads_match_torch():
    rng = np.random.default_rng(7)
    xv, yv = rng.standard_normal((8, 5)), rng.standard_normal((8, 3))
    params = [rng.standard_normal((5, 16)) * 0.3, rng.standard_normal(16) * 0.1,
              rng.standard_normal((16, 3)) * 0.3, rng.standard_normal(3) * 0.1]

    def run(lib, tensor):
        p = [tensor(v) for v in params]
        for t in p:
            t.requires_grad_()
        x, y = tensor(xv), tensor(yv)
        h = (x @ p[0] + p[1]).relu()
        h = lib.nn.functional.gelu(h) * h.sigmoid()
        out = h @ p[2] + p[3]
        loss = ((out - y) ** 2).mean() + out.logsumexp(1).mean() * 0.1
        loss.backward()
        return loss.item(), [t.grad.detach().numpy() for t in p]

    la, ga = run(ampc, lambda v: ampc.tensor(v, dtype=ampc.float32))
    lt, gt = run(torch, lambda v: torch.tensor(v, dtype=torch.float32))
    assert abs(la - lt) < 1e-5
    for a, b in zip(ga, gt):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_gradcheck_catches_wrong_gradients():
    Wrong = _times_two("Wrong", lambda ctx, g: g * 3)

    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradcheck(Wrong.apply, (T((3,)),))
    assert gradcheck(Wrong.apply, (T((3,)),), raise_exception=False) is False
