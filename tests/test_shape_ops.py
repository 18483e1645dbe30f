"""The shape and index ops of issue 12 against torch: tril/triu, flip/fliplr/flipud, roll, rot90,
repeat, tile, repeat_interleave, the diagonal views and their writers, unfold, as_strided,
scatter, index_copy/index_fill, masked_select/masked_scatter, take/take_along_dim, put,
tril_indices/triu_indices.

Each op runs through check_op (values, result dtypes, gradients against torch) in every dtype
torch takes for it, on contiguous, non-contiguous (transposed, strided) and 0-size inputs, with
negative dims; the views are checked to share memory and the version counter; errors are
checked for torch's exception type and message; gradients also by finite differences
(ampc.testing.gradcheck, float64)."""
import numpy as np
import pytest
import torch

import ampc
import ampc.testing
from helpers import check_op, host_exact, raises_each

ALL = ["float32", "float16", "bfloat16", "float64", "int64", "int32", "uint8", "bool"]
FLOAT = ["float32", "float16", "bfloat16", "float64"]


def I(M, values):
    return M.tensor(values)


def nc(x):
    """a non-contiguous view of x with the same shape: the transpose of a transposed copy"""
    return x.transpose(-1, -2).contiguous().transpose(-1, -2) if x.dim() >= 2 else x[::1]


# ---------------------------------------------------------------- values, dtypes, gradients

@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("case", [
    lambda M, x: x.tril(),
    lambda M, x: M.tril(x, 2),
    lambda M, x: x.triu(-1),
    lambda M, x: M.triu(x.transpose(-1, -2), 1),
    lambda M, x: x.flip(0, -1),
    lambda M, x: M.flip(x[:, ::2], (1,)),
    lambda M, x: M.fliplr(x),
    lambda M, x: M.flipud(x),
    lambda M, x: x.roll(2),
    lambda M, x: M.roll(x, (1, -3), (-1, 0)),
    lambda M, x: M.roll(x.transpose(1, 2), 7, 2),
    lambda M, x: M.rot90(x),
    lambda M, x: M.rot90(x, -1, (2, 0)),
    lambda M, x: M.rot90(x, 2, (1, 2)),
    lambda M, x: x.repeat(2, 1, 1),
    lambda M, x: x.repeat(1, 2, 3, 1),
    lambda M, x: x.transpose(0, 2).repeat(1, 2, 1),
    lambda M, x: x.tile((2,)),
    lambda M, x: M.tile(x, (2, 1, 1, 2)),
    lambda M, x: x.repeat_interleave(2),
    lambda M, x: x.repeat_interleave(I(M, [1, 0, 3]), dim=-2),
    lambda M, x: M.repeat_interleave(x, 3, dim=0, output_size=6),
    lambda M, x: x.diagonal(),
    lambda M, x: x.diagonal(-1, 2, 1),
    lambda M, x: M.diagonal(x, 5, 0, 2),
    lambda M, x: x.unfold(2, 2, 1),
    lambda M, x: x.unfold(-2, 2, 2),
    lambda M, x: x.unfold(0, 1, 3),
    lambda M, x: M.diag_embed(x, 1),
    lambda M, x: M.diag_embed(x, -1, 0, 2),
    lambda M, x: M.diagflat(x[0], 1),
    lambda M, x: M.diag(x[0, 0]),
    lambda M, x: M.diag(x[0], -1),
    lambda M, x: x.masked_select(I(M, [True, False, True, True])),
    lambda M, x: M.take(x, I(M, [[0, 23], [-1, 5]])),
    lambda M, x: M.take_along_dim(x, I(M, [[[0], [2], [1]]]), 2),
    lambda M, x: M.take_along_dim(x, I(M, [0, 7, 23])),
], ids=lambda f: None)
def test_rearrangements_match_torch(case, dtype):
    check_op(case, [(2, 3, 4)], dtype=dtype, grad=dtype in FLOAT)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("case", [
    lambda M, x, s: x.scatter(1, I(M, [[0, 2], [1, 3], [3, 0]]), s),
    lambda M, x, s: x.scatter(-1, I(M, [[0], [1]]), s[:2, :1]),
    lambda M, x, s: x.index_copy(1, I(M, [3, 0]), s),
    lambda M, x, s: x.t().index_copy(0, I(M, [3, 0]), s.t()),
    lambda M, x, s: x.masked_scatter(I(M, [[True], [False], [True]]), s.repeat(2, 2)),
    lambda M, x, s: x.put(I(M, [1, 7, -1]), s.reshape(-1)[:3], accumulate=False),
    lambda M, x, s: M.diagonal_scatter(x, s[:, 0].clone()),
    lambda M, x, s: M.diagonal_scatter(x, s[:2, 0].clone(), 2),
    lambda M, x, s: M.select_scatter(x, s[:, 1].clone(), 1, -2),
    lambda M, x, s: M.slice_scatter(x, s, 1, 1, 4, 2),
    lambda M, x, s: M.slice_scatter(x[:, :3], s.t()[:1], 0, -1),
], ids=lambda f: None)
def test_writers_match_torch(case, dtype):
    check_op(case, [(3, 4), (3, 2)], dtype=dtype, grad=dtype in FLOAT)


@pytest.mark.parametrize("dtype", ALL)
def test_value_writers_match_torch(dtype):
    check_op(lambda M, x: x.scatter(0, I(M, [[2, 0, 1, 0]]), 1), [(3, 4)], dtype=dtype, grad=dtype in FLOAT)
    check_op(lambda M, x: x.index_fill(1, I(M, [-1, 1]), 0), [(3, 4)], dtype=dtype, grad=dtype in FLOAT)
    check_op(lambda M, x: x.index_fill(0, I(M, [2]), M.tensor(1)), [(3, 4)], dtype=dtype, grad=dtype in FLOAT)


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_scatter_reduce_add_and_put_accumulate(dtype):
    check_op(lambda M, x, s: x.scatter(1, I(M, [[0, 0], [1, 3], [3, 3]]), s, reduce="add"), [(3, 4), (3, 2)],
             dtype=dtype, grad=False)
    if dtype != "bool":
        check_op(lambda M, x, s: x.put(I(M, [1, 1, 11]), s[0, :3] if s.dim() else s, accumulate=True),
                 [(3, 4), (3, 3)], dtype=dtype, grad=dtype in FLOAT)


def test_as_strided_matches_torch():
    check_op(lambda M, x: x.as_strided((3, 3), (1, 3)), [(3, 4)])
    check_op(lambda M, x: x.as_strided((2, 2, 2), (4, 1, 1), 2), [(3, 4)])   # overlapping windows
    check_op(lambda M, x: M.as_strided(x, (0, 3), (1, 1)), [(3, 4)])


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (2, 0, 4)])
def test_zero_size(shape):
    for case in [lambda M, x: x.tril(), lambda M, x: x.triu(1), lambda M, x: x.flip(-1), lambda M, x: x.roll(1, 0),
                 lambda M, x: x.repeat(2, 1, 3) if x.dim() == 3 else x.repeat(2, 3),
                 lambda M, x: x.diagonal(), lambda M, x: x.repeat_interleave(2, dim=-1),
                 lambda M, x: M.rot90(x), lambda M, x: x.take(I(M, [], ).long())]:
        check_op(case, [shape])


def test_in_place_forms_match_torch():
    def inplace(M, x, s):
        y = x * 1
        y.tril_(1)
        y.triu_(-1)
        y.scatter_(0, I(M, [[1, 0, 2, 1]]), s[:1])
        y.index_copy_(1, I(M, [2]), s[:, :1])
        y.index_fill_(0, I(M, [0]), -2.0)
        y.masked_scatter_(I(M, [True, False, True, False]), s)
        y.put_(I(M, [3, 4]), s[0, :2])
        y.fill_diagonal_(9.0)
        return y
    check_op(inplace, [(3, 4), (3, 4)])


@pytest.mark.parametrize("shape,wrap", [((5, 3), True), ((5, 3), False), ((3, 5), True), ((3, 3, 3), False),
                                        ((7, 2), True)])
def test_fill_diagonal(shape, wrap):
    a, t = ampc.zeros(*shape), torch.zeros(*shape)
    a.fill_diagonal_(3, wrap=wrap)
    t.fill_diagonal_(3, wrap=wrap)
    np.testing.assert_array_equal(a.numpy(), t.numpy())


@pytest.mark.parametrize("args", [(4, 3), (4, 3, 1), (3, 5, -2), (0, 3), (3, 3, 10), (5, 4, -10)])
def test_tril_triu_indices(args):
    for name in ("tril_indices", "triu_indices"):
        got, want = getattr(ampc, name)(*args), getattr(torch, name)(*args)
        assert got.dtype == ampc.int64
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert ampc.tril_indices(3, 3, dtype=ampc.int32).dtype == ampc.int32


def test_repeat_interleave_one_argument():
    for reps in ([1, 0, 3], [], [2]):
        np.testing.assert_array_equal(ampc.repeat_interleave(ampc.tensor(reps, dtype=ampc.int64)).numpy(),
                                      torch.repeat_interleave(torch.tensor(reps, dtype=torch.int64)).numpy())


def test_out_arguments():
    x = ampc.tensor(np.arange(12.0, dtype=np.float32).reshape(3, 4))
    out = ampc.empty(3, 4)
    assert ampc.tril(x, out=out) is out
    np.testing.assert_array_equal(out.numpy(), np.tril(x.numpy()))
    out = ampc.empty(2)
    ampc.take(x, ampc.tensor([0, 5]), out=out)
    np.testing.assert_array_equal(out.numpy(), [0.0, 5.0])
    out = ampc.empty(3)
    ampc.diag(x, out=out)
    np.testing.assert_array_equal(out.numpy(), [0.0, 5.0, 10.0])


# ---------------------------------------------------------------- views are views

def test_views_share_storage_and_version():
    x = ampc.zeros(3, 4)
    for v in (x.diagonal(), x.unfold(1, 2, 1), x.as_strided((2, 2), (4, 1), 1)):
        before = x._version
        v.add_(1)
        assert x._version > before
    assert x.numpy()[0, 0] == 1 + 1  # diagonal + the first window of unfold (as_strided starts at 1)
    y = ampc.zeros(2, 3)
    y.as_strided_((3, 2), (1, 3))
    assert tuple(y.shape) == (3, 2) and y.stride() == (1, 3)


def test_flip_roll_repeat_copy():
    x = ampc.arange(6.0).reshape(2, 3)
    for r in (x.flip(0), x.roll(1), x.repeat(1, 1), x.tile((1,)), ampc.rot90(x, 0)):
        r.add_(100)
    np.testing.assert_array_equal(x.numpy(), np.arange(6.0).reshape(2, 3))


def test_grad_through_in_place_on_diagonal_view():
    for M in (ampc, torch):
        w = M.ones(3, 3, requires_grad=True)
        y = w * 2
        y.diagonal().mul_(M.tensor([1.0, 2.0, 3.0]))
        y.sum().backward()
        if M is ampc:
            got = w.grad.numpy()
        else:
            want = w.grad.numpy()
    np.testing.assert_allclose(got, want)


# ---------------------------------------------------------------- finite differences

@pytest.mark.parametrize("fn", [
    lambda x: x.tril(-1), lambda x: x.flip(1), lambda x: x.roll((1, 2), (0, 1)), lambda x: x.repeat(2, 1, 2),
    lambda x: x.diagonal(1, 0, 1), lambda x: x.unfold(1, 3, 1), lambda x: x.as_strided((2, 3), (1, 1), 2),
    lambda x: ampc.diag_embed(x), lambda x: x.scatter(1, ampc.tensor([[0, 0], [1, 2], [3, 1]]), 0.5),
    lambda x: x.index_fill(1, ampc.tensor([1]), 2.0), lambda x: ampc.rot90(x, 3),
    lambda x: x.masked_select(x > 0),
], ids=lambda f: None)
def test_gradcheck(fn):
    x = ampc.tensor(np.random.default_rng(1).standard_normal((3, 4)), dtype=ampc.float64, requires_grad=True)
    assert ampc.testing.gradcheck(fn, (x,))


def test_second_order():
    for fn in (lambda x: (x.tril() ** 2).sum(), lambda x: (x.flip(0) ** 2).sum(), lambda x: (x.roll(1) ** 2).sum(),
               lambda x: (x.repeat(2, 1) ** 2).sum(), lambda x: (x.unfold(1, 2, 1) ** 2).sum()):
        grads = []
        for M in (ampc, torch):
            x = M.tensor(np.arange(12.0).reshape(3, 4) / 7, requires_grad=True)
            (g,) = M.autograd.grad(fn(x), x, create_graph=True)
            (gg,) = M.autograd.grad((g * g).sum(), x)
            grads.append(gg.detach().numpy())
        np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)


# ---------------------------------------------------------------- errors

def test_errors_match_torch():
    x = ampc.zeros(3, 4)
    i = ampc.tensor
    raises_each(
        (RuntimeError, "tril: input tensor must have at least 2 dimensions", lambda: ampc.zeros(3).tril()),
        (RuntimeError, "dim 0 appears multiple times", lambda: x.flip(0, 0)),
        (IndexError, "Dimension out of range", lambda: x.flip(2)),
        (RuntimeError, "shifts and dimensions must align", lambda: x.roll((1, 2), (0,))),
        (RuntimeError, "expected rotation dims to be different", lambda: ampc.rot90(x, 1, (0, 0))),
        (RuntimeError, "expected total dims >= 2", lambda: ampc.rot90(ampc.zeros(3))),
        (RuntimeError, "Number of dimensions of repeat dims can not be smaller", lambda: x.repeat(2)),
        (RuntimeError, "negative dimension", lambda: x.repeat(-1, 1)),
        (RuntimeError, "repeats can not be negative", lambda: x.repeat_interleave(-1)),
        (RuntimeError, "repeats must have the same size", lambda: x.repeat_interleave(i([1, 2]), dim=0)),
        (RuntimeError, "diagonal dimensions cannot be identical", lambda: x.diagonal(0, 1, 1)),
        (RuntimeError, "maximum size for tensor at dimension 1 is 4 but size is 5", lambda: x.unfold(1, 5, 1)),
        (RuntimeError, "step is 0 but must be > 0", lambda: x.unfold(1, 2, 0)),
        (RuntimeError, "out of bounds for storage", lambda: x.as_strided((4, 4), (4, 1))),
        (RuntimeError, "Negative strides", lambda: x.as_strided((2,), (-1,), 3)),
        (RuntimeError, "diag\\(\\): Supports 1D or 2D tensors. Got 3D", lambda: ampc.diag(ampc.zeros(2, 2, 2))),
        (RuntimeError, "index 5 is out of bounds for dimension 1 with size 4",
         lambda: x.scatter(1, i([[5]]), 1.0)),
        (RuntimeError, "index -1 is out of bounds", lambda: x.scatter(1, i([[-1]]), 1.0)),
        (RuntimeError, "Expected self.dtype to be equal to src.dtype",
         lambda: x.scatter(1, i([[0]]), ampc.ones(1, 1, dtype=ampc.float64))),
        (RuntimeError, "reduce argument must be either add or multiply", lambda: x.scatter(1, i([[0]]), 1.0, reduce="x")),
        (IndexError, "index_copy_\\(\\): index 5 is out of bounds for dimension 1 with size 4|index 5 is out of bounds",
         lambda: x.index_copy(1, i([5]), ampc.ones(3, 1))),
        (IndexError, "index -1 is out of bounds", lambda: x.index_copy(1, i([-1]), ampc.ones(3, 1))),
        (RuntimeError, "index_copy_\\(\\): self and source expected to have the same dtype",
         lambda: x.index_copy(1, i([0]), ampc.ones(3, 1, dtype=ampc.float64))),
        (IndexError, "Index should have dimension 1 or 0 \\(got 2\\)", lambda: x.index_copy(1, i([[0]]), ampc.ones(3, 1))),
        (RuntimeError, "Expected a long tensor for index", lambda: x.index_copy(1, i([0.0]), ampc.ones(3, 1))),
        (IndexError, "Number of indices \\(2\\) should be equal to source.size\\(dim\\) \\(1\\)",
         lambda: x.index_copy(1, i([0, 1]), ampc.ones(3, 1))),
        (IndexError, "index 5 is out of bounds", lambda: x.index_fill(1, i([5]), 1.0)),
        (RuntimeError, "Index has to be a vector/scalar", lambda: x.index_fill(1, i([[0]]), 1.0)),
        (RuntimeError, "index_fill_ only supports a 0-dimensional value tensor",
         lambda: x.index_fill(1, i([0]), ampc.tensor([1.0, 2.0]))),
        (RuntimeError, "masked_select: expected BoolTensor for mask", lambda: x.masked_select(ampc.ones(3))),
        (RuntimeError, "masked_scatter_ only supports boolean masks", lambda: x.masked_scatter(ampc.ones(4), x)),
        (RuntimeError, "expected source to have at least", lambda: x.masked_scatter(x == 0, ampc.ones(3))),
        (IndexError, "out of bounds", lambda: x.take(i([12]))),
        (IndexError, "out of bounds", lambda: x.put_(i([12]), ampc.tensor([1.0]))),
        (RuntimeError, "Expected source and index to have the same number of elements",
         lambda: x.put_(i([1, 2]), ampc.tensor([1.0]))),
        (RuntimeError, "expected src to have a size equal to the slice of self",
         lambda: ampc.diagonal_scatter(x, ampc.ones(2))),
        (RuntimeError, "a leaf Variable that requires grad", lambda: ampc.ones(3, 3, requires_grad=True).tril_()),
        (RuntimeError, "a leaf Variable that requires grad",
         lambda: ampc.ones(3, 3, requires_grad=True).fill_diagonal_(1.0)),
    )
    assert host_exact(x).sum() == 0  # the failed writes left x untouched


def test_errors_have_torch_types():
    """the same bad calls raise the same exception type in torch (the oracle of the table above)"""
    for M in (ampc, torch):
        x = M.zeros(3, 4)
        with pytest.raises(IndexError):
            x.index_copy(1, M.tensor([5]), M.ones(3, 1))
        with pytest.raises(RuntimeError):
            x.scatter(1, M.tensor([[5]]), 1.0)
        with pytest.raises(IndexError):
            x.index_fill(1, M.tensor([5]), 1.0)


def test_gc_traverses_graphs_with_copy_slices():
    """an in-place op on a view (put_, fill_diagonal_, a diagonal's mul_) gives the base a
    CopySlices node whose ctx is a C struct: the collector must not take it for a Python object"""
    import gc
    for i in range(200):
        y = ampc.randn(3, 4, requires_grad=True).clone()
        f = y.view(-1)
        f.mul_(2)
        y.put_(ampc.tensor([1, 7]), ampc.ones(2))
        y.fill_diagonal_(1.0)
        if i % 20 == 0:
            gc.collect()
    y.sum().backward()


# ---------------------------------------------------------------- scatter_reduce / index_reduce

REDUCE_DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool"]


@pytest.mark.parametrize("dtype", REDUCE_DTYPES)
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_and_index_reduce_match_torch(dtype, reduce, include_self):
    if dtype == "bool" and reduce == "mean":  # torch refuses it; so does ampc
        for M in (ampc, torch):
            with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
                M.zeros(2, 2, dtype=M.bool).scatter_reduce(0, M.tensor([[0]]), M.ones(1, 1, dtype=M.bool), "mean")
        return
    grad = dtype in ("float32", "float64")
    check_op(lambda M, x, s: x.scatter_reduce(1, I(M, [[0, 0], [1, 3], [3, 3]]), s, reduce, include_self=include_self),
             [(3, 4), (3, 2)], dtype=dtype, grad=grad)
    check_op(lambda M, x, s: x.t().scatter_reduce(0, I(M, [[2, 0, 2]]), s.t()[:1], reduce, include_self=include_self),
             [(3, 4), (3, 2)], dtype=dtype, grad=grad)
    if reduce != "sum" and not (dtype == "bool" and not include_self):
        check_op(lambda M, x, s: x.index_reduce(1, I(M, [3, 3]), s, reduce, include_self=include_self),
                 [(3, 4), (3, 2)], dtype=dtype, grad=grad)


@pytest.mark.parametrize("reduce", ["prod", "amax", "amin", "mean"])
@pytest.mark.parametrize("include_self", [True, False])
def test_reduce_gradients_with_zeros_and_ties(reduce, include_self):
    """prod with one and with two zeros in a group, amax/amin with tied values: torch's rules"""
    x = np.array([[0.0, 2.0, 3.0, 1.0], [1.0, 0.0, 5.0, 5.0]])
    s = np.array([[0.0, 2.0, 3.0], [5.0, 0.0, 0.0]])
    index = [[0, 1, 1], [3, 1, 1]]
    check_op(lambda M, a, b: a.scatter_reduce(1, I(M, index), b, reduce, include_self=include_self),
             inputs=[x, s], dtype="float64")
    check_op(lambda M, a, b: a.index_reduce(0, I(M, [1, 1]), b[:, :2].t().contiguous().t().repeat(1, 2), reduce,
                                            include_self=include_self), inputs=[x, s], dtype="float64")


def test_reduce_in_place_and_multiply():
    def f(M, x, s):
        y, z = x * 1, x * 2
        y.scatter_reduce_(1, I(M, [[0, 0], [1, 3], [3, 3]]), s, "amax", include_self=False)
        z.index_reduce_(1, I(M, [0, 2]), s, "prod")
        return y + z
    check_op(f, [(3, 4), (3, 2)])
    check_op(lambda M, x, s: x.scatter(1, I(M, [[1, 1], [0, 2], [2, 2]]), s, reduce="multiply"), [(3, 4), (3, 2)],
             grad=False)  # torch: "derivative for aten::scatter is not implemented" with reduce=
    raises_each(
        (RuntimeError, "reduce argument must be either sum, prod, mean, amax or amin",
         lambda: ampc.zeros(2, 2).scatter_reduce(0, ampc.tensor([[0]]), ampc.ones(1, 1), "max")),
        (RuntimeError, "index_reduce\\(\\): Expected reduce to be one of prod, mean, amax or amin",
         lambda: ampc.zeros(2, 2).index_reduce(0, ampc.tensor([0]), ampc.ones(1, 2), "sum")),
        (RuntimeError, "out of bounds", lambda: ampc.zeros(2, 2).scatter_reduce(0, ampc.tensor([[2]]), ampc.ones(1, 1), "sum")),
    )
