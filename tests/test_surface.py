"""tests/test_surface.py: the composed torch surface (python/ampc/_functions.py, _composed.py,
_runtime.py, accelerator.py, onnx.py, csrc/python/py_surface.c) against torch.

Values, result dtypes and gradients through check_op (random inputs, 0-size, non-contiguous
views made inside the case), then errors, the settings and the modules.
"""
import math
import warnings

import numpy as np
import pytest

import ampc
from helpers import check_op, host

torch = pytest.importorskip("torch")


def nc(x):
    """A non-contiguous view with x's values: the transpose of a contiguous transpose copy."""
    return x.transpose(0, -1).contiguous().transpose(0, -1) if x.dim() >= 2 else x


# (id, fn(M, *tensors), shapes, dtype)
CASES = [
    # top-level forms of Tensor methods, with torch's keyword names
    ("reshape", lambda M, x: M.reshape(x, (4, 3)), [(3, 4)]),
    ("reshape_kw", lambda M, x: M.reshape(input=x, shape=(-1,)), [(3, 4)]),
    ("permute", lambda M, x: M.permute(nc(x), dims=(2, 0, 1)), [(2, 3, 4)]),
    ("transpose", lambda M, x: M.transpose(x, 0, 1), [(3, 4)]),
    ("swapaxes", lambda M, x: M.swapaxes(x, axis0=0, axis1=2), [(2, 3, 4)]),
    ("swapdims", lambda M, x: M.swapdims(x, 1, 0), [(3, 4)]),
    ("squeeze", lambda M, x: M.squeeze(x, 1), [(3, 1, 4)]),
    ("unsqueeze", lambda M, x: M.unsqueeze(x, dim=-1), [(3, 4)]),
    ("narrow", lambda M, x: M.narrow(x, 1, 1, 2), [(3, 4)]),
    ("t", lambda M, x: M.t(x), [(3, 4)]),
    ("clone", lambda M, x: M.clone(nc(x)), [(3, 4)]),
    ("flatten", lambda M, x: M.flatten(nc(x), start_dim=1), [(2, 3, 4)]),
    ("detach", lambda M, x: M.detach(x) * 1, [(3,)]),
    ("fill", lambda M, x: M.fill(x, 2.5), [(3, 2)]),
    # composed methods and their functions
    ("movedim", lambda M, x: M.movedim(x, (0, 1), (2, 0)), [(2, 3, 4)]),
    ("moveaxis", lambda M, x: x.moveaxis(-1, 0), [(2, 3, 4)]),
    ("select", lambda M, x: M.select(nc(x), 1, -2), [(3, 4)]),
    ("unflatten", lambda M, x: M.unflatten(x, 1, (2, -1)), [(3, 4)]),
    ("ravel", lambda M, x: M.ravel(nc(x)), [(3, 4)]),
    ("adjoint", lambda M, x: M.adjoint(x), [(2, 3, 4)]),
    ("mH", lambda M, x: x.mH * 1, [(2, 3, 4)]),
    ("H", lambda M, x: x.H * 1, [(3, 4)]),
    ("broadcast_to", lambda M, x: M.broadcast_to(x, (2, 3, 4)), [(3, 1)]),
    ("tensor_split_int", lambda M, x: M.tensor_split(x, 3, dim=1), [(2, 7)]),
    ("tensor_split_idx", lambda M, x: M.tensor_split(x, [1, 5, 9]), [(7, 2)]),
    ("tensor_split_neg", lambda M, x: x.tensor_split([-2]), [(5,)]),
    ("hsplit", lambda M, x: M.hsplit(x, 2), [(3, 4)]),
    ("hsplit_1d", lambda M, x: M.hsplit(x, [1, 3]), [(5,)]),
    ("vsplit", lambda M, x: M.vsplit(x, [1]), [(3, 4)]),
    ("dsplit", lambda M, x: M.dsplit(x, 2), [(2, 3, 4)]),
    ("split_with_sizes", lambda M, x: M.split_with_sizes(x, [1, 3], dim=1), [(2, 4)]),
    ("softmax", lambda M, x: M.softmax(x, 1), [(3, 4)]),
    ("softmax_method_dtype", lambda M, x: x.softmax(-1, dtype=M.float64), [(3, 4)]),
    ("log_softmax", lambda M, x: M.log_softmax(nc(x), dim=0), [(3, 4)]),
    ("sum_to_size", lambda M, x: x.sum_to_size(3, 1), [(2, 3, 4)]),
    ("sum_to_size_tuple", lambda M, x: x.sum_to_size((1, 4)), [(3, 4)]),
    ("positive", lambda M, x: x.positive(), [(3,)]),
    ("conj", lambda M, x: M.conj(x) * 1, [(3,)]),
    ("resolve_neg", lambda M, x: M.resolve_neg(x) * 1, [(3,)]),
    # broadcasting and stacking
    ("broadcast_tensors", lambda M, x, y: M.broadcast_tensors(x, y), [(3, 1), (4,)]),
    ("atleast_1d", lambda M, x: M.atleast_1d(x), [()]),
    ("atleast_2d", lambda M, x, y: M.atleast_2d(x, y), [(3,), ()]),
    ("atleast_3d", lambda M, x, y: M.atleast_3d([x, y]), [(3,), (2, 3)]),
    ("hstack", lambda M, x, y: M.hstack((x, nc(y))), [(3, 2), (3, 4)]),
    ("hstack_1d", lambda M, x, y: M.hstack([x, y]), [(3,), (2,)]),
    ("vstack", lambda M, x, y: M.vstack([x, y]), [(3,), (2, 3)]),
    ("row_stack", lambda M, x, y: M.row_stack([x, y]), [(3,), (3,)]),
    ("dstack", lambda M, x, y: M.dstack([x, y]), [(3,), (1, 3)]),
    ("column_stack", lambda M, x, y: M.column_stack([x, y]), [(3,), (3, 2)]),
    ("meshgrid_ij", lambda M, x, y: M.meshgrid(x, y, indexing="ij"), [(3,), (4,)]),
    ("meshgrid_xy", lambda M, x, y, z: M.meshgrid([x, y, z], indexing="xy"), [(2,), (3,), (4,)]),
    ("cartesian_prod", lambda M, x, y: M.cartesian_prod(x, y), [(3,), (2,)]),
    ("combinations", lambda M, x: M.combinations(x), [(4,)]),
    ("combinations_r3_repl", lambda M, x: M.combinations(x, r=3, with_replacement=True), [(3,)]),
    # products
    ("outer", lambda M, x, y: M.outer(x, y), [(3,), (4,)]),
    ("ger", lambda M, x, y: x.ger(y), [(3,), (2,)]),
    ("inner", lambda M, x, y: M.inner(x, y), [(2, 3), (4, 3)]),
    ("inner_0d", lambda M, x, y: M.inner(x, y), [(), (2, 3)]),
    ("vdot", lambda M, x, y: M.vdot(x, y), [(5,), (5,)]),
    ("kron", lambda M, x, y: M.kron(x, y), [(2, 3), (3, 2)]),
    ("kron_ndim", lambda M, x, y: M.kron(x, y), [(2,), (2, 3, 2)]),
    ("tensordot_int", lambda M, x, y: M.tensordot(x, y, dims=2), [(2, 3, 4), (3, 4, 5)]),
    ("tensordot_lists", lambda M, x, y: M.tensordot(x, nc(y), dims=([0, 2], [2, 1])), [(2, 3, 4), (5, 4, 2)]),
    ("tensordot_0", lambda M, x, y: M.tensordot(x, y, dims=0), [(2,), (3,)]),
    ("addr", lambda M, a, x, y: M.addr(a, x, y, beta=0.5, alpha=2), [(3, 4), (3,), (4,)]),
    ("addmv", lambda M, a, m, v: M.addmv(a, m, v, alpha=-1), [(3,), (3, 4), (4,)]),
    ("addmv_method", lambda M, a, m, v: a.addmv(nc(m), v, beta=2), [(3,), (3, 4), (4,)]),
    ("addbmm", lambda M, a, b1, b2: M.addbmm(a, b1, b2, beta=0.5), [(3, 5), (2, 3, 4), (2, 4, 5)]),
    ("chain_matmul", lambda M, a, b, c: M.chain_matmul(a, b, c), [(2, 3), (3, 4), (4, 2)]),
    ("matrix_power_3", lambda M, x: M.matrix_power(x, 3), [(2, 3, 3)]),
    ("matrix_power_0", lambda M, x: M.matrix_power(x, 0), [(3, 3)]),
    ("matrix_power_1", lambda M, x: x.matrix_power(1), [(3, 3)]),
    ("trace", lambda M, x: M.trace(nc(x)), [(3, 4)]),
    ("trace_wide", lambda M, x: x.trace(), [(4, 2)]),
    ("cross", lambda M, x, y: M.cross(x, y, dim=1), [(4, 3), (4, 3)]),
    ("cross_bcast", lambda M, x, y: M.cross(x, y, dim=-1), [(2, 1, 3), (1, 4, 3)]),
    ("block_diag", lambda M, x, y, z: M.block_diag(x, y, z), [(2, 3), (), (4,)]),
    # distances and statistics
    ("dist", lambda M, x, y: M.dist(x, y), [(3, 4), (4,)]),
    ("dist_p1", lambda M, x, y: M.dist(x, y, p=1), [(3, 4), (3, 4)]),
    ("cdist", lambda M, x, y: M.cdist(x, y), [(3, 2), (4, 2)]),
    ("cdist_mm", lambda M, x, y: M.cdist(x, y, compute_mode="use_mm_for_euclid_dist"), [(2, 5, 3), (6, 3)]),
    ("cdist_big", lambda M, x, y: M.cdist(x, y), [(30, 3), (4, 3)]),
    ("cdist_p1", lambda M, x, y: M.cdist(x, y, p=1.0), [(3, 2), (4, 2)]),
    ("cdist_inf", lambda M, x, y: M.cdist(x, y, p=math.inf), [(3, 2), (4, 2)]),
    ("pdist", lambda M, x: M.pdist(x), [(5, 3)]),
    ("pdist_p3", lambda M, x: M.pdist(x, p=3), [(4, 2)]),
    ("cov", lambda M, x: M.cov(x), [(3, 6)]),
    ("cov_1d", lambda M, x: M.cov(x, correction=0), [(6,)]),
    ("corrcoef", lambda M, x: M.corrcoef(x), [(3, 6)]),
    # zero-size inputs
    ("outer_0", lambda M, x, y: M.outer(x, y), [(0,), (3,)]),
    ("kron_0", lambda M, x, y: M.kron(x, y), [(0, 2), (2, 2)]),
    ("hstack_0", lambda M, x, y: M.hstack([x, y]), [(2, 0), (2, 3)]),
    ("tensor_split_0", lambda M, x: M.tensor_split(x, 3), [(0, 2)]),
    ("movedim_0", lambda M, x: M.movedim(x, 0, 1), [(0, 3)]),
    ("tensordot_0size", lambda M, x, y: M.tensordot(x, y, dims=1), [(2, 0), (0, 3)]),
    ("cdist_0", lambda M, x, y: M.cdist(x, y), [(0, 2), (3, 2)]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(case):
    name, fn, shapes = case
    check_op(fn, shapes)


@pytest.mark.parametrize("dtype", ["float64", "float16", "bfloat16"])
@pytest.mark.parametrize("name", ["outer", "kron", "tensordot_lists", "addmv", "cross", "softmax", "movedim",
                                  "hstack"])
def test_matches_torch_dtypes(name, dtype):
    _, fn, shapes = next(c for c in CASES if c[0] == name)
    check_op(fn, shapes, dtype=dtype, grad=dtype == "float64")


@pytest.mark.parametrize("name", ["outer", "kron", "tensordot_int", "inner", "trace", "cross", "block_diag",
                                  "hstack", "cartesian_prod", "combinations", "addr_int"])
def test_matches_torch_int64(name):
    cases = CASES + [("addr_int", lambda M, a, x, y: M.addr(a, x, y, beta=2, alpha=3), [(3, 4), (3,), (4,)])]
    _, fn, shapes = next(c for c in cases if c[0] == name)
    check_op(fn, shapes, dtype="int64", low=-5, high=5)


def test_kron_non_contiguous():
    """torch.kron itself fails on this transposed-copy view (a view() inside), so ampc's is checked
    against ampc on the contiguous values."""
    x, y = ampc.randn(2, 3), ampc.randn(3, 2)
    assert host(ampc.kron(x, nc(y))).tolist() == host(ampc.kron(x, y.contiguous())).tolist()


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_vander(dtype):
    """Values against torch.vander; gradients against torch's pow (torch.vander's own backward fails
    with an in-place error in torch 2.13)."""
    grad = dtype != "int64"
    check_op(lambda M, x: M.vander(x, 4), [(3,)], dtype=dtype, grad=False, low=-3, high=3)
    check_op(lambda M, x: M.vander(x, increasing=True), [(4,)], dtype=dtype, grad=False, low=-3, high=3)
    check_op(lambda M, x: M.vander(x, 4), [(3,)], dtype=dtype, grad=grad, low=-3, high=3,
             ref=lambda M, x: M.pow(x.unsqueeze(1), M.arange(3, -1, -1)))
    assert ampc.vander(ampc.ones(0)).shape == (0, 0)


def test_allclose_isclose_equal():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 5)).astype(np.float32)
    b = a + rng.standard_normal((4, 5)).astype(np.float32) * 1e-6
    a[0, 0], b[0, 0] = np.nan, np.nan
    a[1, 1], b[1, 1] = np.inf, np.inf
    a[2, 2], b[2, 2] = -np.inf, np.inf
    for kw in ({}, {"equal_nan": True}, {"rtol": 0, "atol": 0}, {"rtol": 1e-3, "atol": 1e-2}):
        got = ampc.isclose(ampc.tensor(a), ampc.tensor(b), **kw)
        want = torch.isclose(torch.tensor(a), torch.tensor(b), **kw)
        assert got.dtype == ampc.bool and host(got).tolist() == want.numpy().astype(float).tolist(), kw
        assert ampc.allclose(ampc.tensor(a), ampc.tensor(b), **kw) == torch.allclose(torch.tensor(a), torch.tensor(b), **kw)
    ia, ib = np.array([1, 2, 3]), np.array([1, 2, 4])
    assert host(ampc.isclose(ampc.tensor(ia), ampc.tensor(ib), atol=1)).tolist() == [1, 1, 1]
    assert ampc.allclose(ampc.ones(3), ampc.ones(3)) is True
    assert ampc.equal(ampc.tensor(ia), ampc.tensor(ia)) is True
    assert ampc.equal(ampc.tensor(ia), ampc.tensor(ib)) is False
    assert ampc.equal(ampc.ones(2, 3), ampc.ones(3, 2)) is False
    assert ampc.ones(3).allclose(ampc.ones(3)) and ampc.ones(3).equal(ampc.ones(3))
    with pytest.raises(RuntimeError, match="Float did not match Double"):
        ampc.isclose(ampc.ones(2), ampc.ones(2, dtype=ampc.float64))


def test_broadcast_shapes_and_errors():
    assert ampc.broadcast_shapes((2, 1), (3,), 1) == torch.broadcast_shapes((2, 1), (3,), 1)
    assert isinstance(ampc.broadcast_shapes((2,)), ampc.Size)
    assert ampc.broadcast_shapes() == torch.broadcast_shapes()
    with pytest.raises(RuntimeError, match="Shape mismatch"):
        ampc.broadcast_shapes((2,), (3,))


@pytest.mark.parametrize("call", [
    lambda M: M.reshape([1, 2], (2,)),
    lambda M: M.movedim(M.ones(2, 3), (0, 1), 0),
    lambda M: M.movedim(M.ones(2, 3), (0, 0), (0, 1)),
    lambda M: M.movedim(M.ones(2, 3), 2, 0),
    lambda M: M.select(M.ones(2, 3), 1, 3),
    lambda M: M.select(M.ones(()), 0, 0),
    lambda M: M.unflatten(M.ones(2, 6), 1, (4, -1)),
    lambda M: M.unflatten(M.ones(2, 6), 1, (5, 2)),
    lambda M: M.adjoint(M.ones(3)),
    lambda M: M.tensor_split(M.ones(()), 2),
    lambda M: M.tensor_split(M.ones(3), 0),
    lambda M: M.hsplit(M.ones(3, 5), 2),
    lambda M: M.vsplit(M.ones(3), 1),
    lambda M: M.dsplit(M.ones(3, 4), 2),
    lambda M: M.split_with_sizes(M.ones(4), [1, 2]),
    lambda M: M.is_nonzero(M.ones(2)),
    lambda M: M.is_nonzero(M.ones(0)),
    lambda M: M.ones(2, 3).sum_to_size(4, 3),
    lambda M: M.outer(M.ones(2, 2), M.ones(2)),
    lambda M: M.inner(M.ones(2, 3), M.ones(2, 4)),
    lambda M: M.tensordot(M.ones(2, 3), M.ones(4, 3), dims=([1], [0])),
    lambda M: M.matrix_power(M.ones(2, 3), 2),
    lambda M: M.trace(M.ones(3)),
    lambda M: M.cross(M.ones(4, 3), M.ones(4, 3), dim=0),
    lambda M: M.cdist(M.ones(3, 2), M.ones(4, 3)),
    lambda M: M.cdist(M.ones(3), M.ones(4, 3)),
    lambda M: M.pdist(M.ones(3)),
    lambda M: M.block_diag(M.ones(2, 2, 2)),
    lambda M: M.vander(M.ones(2, 2)),
    lambda M: M.cov(M.ones(2, 2, 2)),
    lambda M: M.combinations(M.ones(2, 2)),
    lambda M: M.meshgrid(M.ones(2), M.ones(3), indexing="ji"),
    lambda M: M.meshgrid(M.ones(2, 2), indexing="ij"),
    lambda M: M.hann_window(-1),
    lambda M: M.hann_window(3, dtype=M.int64),
    lambda M: M.ones(3).type("torch.Nope"),
    lambda M: M.addmv(M.ones(3), M.ones(3, 4), M.ones(5)),
    lambda M: M.cdist(M.ones(3, 2, dtype=M.float16), M.ones(4, 2, dtype=M.float16)),
    lambda M: M.cross(M.ones(2, 1, 3), M.ones(4, 3), dim=-1),
], ids=lambda f: f.__code__.co_firstlineno)
def test_errors_match_torch(call):
    with pytest.raises(Exception) as want:
        call(torch)
    with pytest.raises(Exception) as got:
        call(ampc)
    # torch raises IndexError for out-of-range dims and ValueError for bad type strings, ...
    assert isinstance(got.value, type(want.value)) or type(want.value).__name__ in {
        t.__name__ for t in type(got.value).__mro__}, (got.value, want.value)


def test_out_arguments():
    x, y = ampc.arange(3.0), ampc.arange(2.0)
    out = ampc.empty(3, 2)
    assert ampc.outer(x, y, out=out) is out
    assert host(out).tolist() == torch.outer(torch.arange(3.0), torch.arange(2.0)).tolist()
    out = ampc.empty(2, 5)
    ampc.hstack([ampc.ones(2, 2), ampc.zeros(2, 3)], out=out)
    assert host(out).tolist() == [[1, 1, 0, 0, 0]] * 2
    with pytest.raises(RuntimeError, match="doesn't match"):
        ampc.kron(ampc.ones(2), ampc.ones(2), out=ampc.empty(3))
    with pytest.raises(RuntimeError, match="automatic differentiation"):
        ampc.outer(ampc.ones(2, requires_grad=True), ampc.ones(2), out=ampc.empty(2, 2))
    with pytest.raises(RuntimeError, match="can't be cast"):
        ampc.outer(ampc.ones(2), ampc.ones(2), out=ampc.empty(2, 2, dtype=ampc.int64))


def test_inplace_methods():
    rng = np.random.default_rng(1)
    a, m, v = (rng.standard_normal(s).astype(np.float32) for s in ((3,), (3, 4), (4,)))
    got = ampc.tensor(a)
    want = torch.tensor(a)
    assert got.addmv_(ampc.tensor(m), ampc.tensor(v), beta=2) is got
    want.addmv_(torch.tensor(m), torch.tensor(v), beta=2)
    assert np.allclose(host(got), want.numpy(), atol=1e-5)
    t = ampc.zeros(3, 4)
    t.addr_(ampc.ones(3), ampc.arange(4.0))
    assert host(t).tolist() == torch.zeros(3, 4).addr_(torch.ones(3), torch.arange(4.0)).tolist()


def test_views_share_memory():
    x = ampc.zeros(3, 4)
    ampc.select(x, 1, 2).fill_(1)
    x.movedim(0, 1)[3].fill_(2)
    ampc.unflatten(x, 1, (2, 2))[0, 0].fill_(3)
    want = torch.zeros(3, 4)
    torch.select(want, 1, 2).fill_(1)
    want.movedim(0, 1)[3].fill_(2)
    torch.unflatten(want, 1, (2, 2))[0, 0].fill_(3)
    assert host(x).tolist() == want.tolist()
    parts = ampc.tensor_split(x, 2, dim=1)
    assert parts[0].data_ptr() == x.data_ptr()


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
                                  "kaiser_window"])
@pytest.mark.parametrize("n", [0, 1, 2, 7, 16])
@pytest.mark.parametrize("periodic", [True, False])
def test_windows(name, n, periodic):
    for dtype in ("float32", "float64"):
        got = getattr(ampc, name)(n, periodic, dtype=getattr(ampc, dtype))
        want = getattr(torch, name)(n, periodic, dtype=getattr(torch, dtype))
        assert str(got.dtype).split(".")[1] == dtype and tuple(got.shape) == tuple(want.shape)
        assert np.allclose(host(got), want.numpy(), rtol=1e-6, atol=1e-6), (name, n, periodic, dtype)
    got = ampc.hamming_window(9, False, 0.5, 0.4)
    assert np.allclose(host(got), torch.hamming_window(9, False, 0.5, 0.4).numpy(), atol=1e-6)
    got = ampc.kaiser_window(10, True, 30.0)
    assert np.allclose(host(got), torch.kaiser_window(10, True, 30.0).numpy(), rtol=1e-5, atol=1e-7)


def test_logspace():
    for args, kw in (((0, 2, 5), {}), ((-1, 1, 4), {"base": 2.0}), ((1, 3, 1), {}), ((0, 1, 0), {}),
                     ((0, 2, 3), {"dtype": "float64"})):
        kw_a = {k: getattr(ampc, v) if k == "dtype" else v for k, v in kw.items()}
        kw_t = {k: getattr(torch, v) if k == "dtype" else v for k, v in kw.items()}
        got, want = ampc.logspace(*args, **kw_a), torch.logspace(*args, **kw_t)
        assert str(got.dtype)[5:] == str(want.dtype)[6:]
        assert np.allclose(host(got), want.numpy(), rtol=1e-6)


def test_constants():
    for name in ("pi", "e", "inf", "newaxis"):
        assert getattr(ampc, name) == getattr(torch, name)
    assert math.isnan(ampc.nan)
    assert ampc.ones(3)[ampc.newaxis].shape == (1, 3)


def test_type_and_predicates():
    x = ampc.ones(2, 3)
    assert x.type() == torch.ones(2, 3).type() == "torch.FloatTensor"
    for dt, name in ((ampc.float64, "torch.DoubleTensor"), (ampc.int64, "torch.LongTensor"),
                     (ampc.bfloat16, "torch.BFloat16Tensor"), (ampc.bool, "torch.BoolTensor"),
                     (ampc.uint8, "torch.ByteTensor"), (ampc.float16, "torch.HalfTensor")):
        assert x.to(dt).type() == name
        assert x.type(name).dtype == dt and x.type(dt).dtype == dt
    assert x.type(ampc.float32) is x
    assert ampc.typename(x) == "torch.FloatTensor" == torch.typename(torch.ones(1))
    assert ampc.typename(1) == torch.typename(1) == "int"
    assert ampc.typename(ampc.nn.Linear(1, 1)) == "ampc.nn.modules.linear.Linear" and ampc.typename(len) == "len"
    for p in ("is_sparse", "is_sparse_csr", "is_quantized", "is_meta", "is_mkldnn", "is_mps", "is_xpu",
              "is_nested", "is_vulkan", "is_xla", "is_ipu", "is_maia", "is_mtia"):
        assert getattr(x, p) is False and getattr(torch.ones(1), p) is False, p
    assert not x.is_conj() and not x.is_neg() and not ampc.is_conj(x) and not ampc.is_complex(x)
    assert ampc.is_signed(x) and not ampc.is_signed(x.to(ampc.uint8))
    assert ampc.is_nonzero(ampc.tensor([2])) and not ampc.is_nonzero(ampc.tensor(0.0))
    assert ampc.is_same_size(x, ampc.zeros(2, 3)) and not x.is_same_size(ampc.zeros(3, 2))
    assert x.real is x
    with pytest.raises(RuntimeError, match="non-complex"):
        x.imag
    assert x.const_data_ptr() == x.data_ptr()


def test_new():
    x = ampc.ones(2, dtype=ampc.float64)
    tx = torch.ones(2, dtype=torch.float64)
    for args in ((), (2, 3), ([1, 2, 3],), (ampc.Size([4]),)):
        targs = tuple(torch.Size(a) if isinstance(a, ampc.Size) else a for a in args)
        got, want = x.new(*args), tx.new(*targs)
        assert tuple(got.shape) == tuple(want.shape) and got.dtype == ampc.float64
    assert host(x.new([1, 2, 3])).tolist() == [1, 2, 3]


def test_factories():
    t = ampc.scalar_tensor(3)
    assert t.dim() == 0 and t.dtype == ampc.float32 and t.item() == 3
    assert ampc.scalar_tensor(2, dtype=ampc.int64).dtype == ampc.int64
    for size, stride in (((2, 3), (3, 1)), ((2, 3), (1, 2)), ((2, 3, 4), (1, 8, 2)), ((0, 3), (3, 1)),
                         ((2, 1, 3), (3, 3, 1))):
        e = ampc.empty_strided(size, stride)
        assert tuple(e.shape) == size and tuple(e.stride()) == tuple(torch.empty_strided(size, stride).stride())
    a = np.arange(6, dtype=np.float32)
    t = ampc.asarray(a)
    a[0] = 7
    assert t[0].item() == 7  # shares memory, as torch.asarray
    assert ampc.asarray(a, copy=True).data_ptr() != a.__array_interface__["data"][0]
    x = ampc.ones(3)
    assert ampc.asarray(x) is x and ampc.asarray(x, copy=True).data_ptr() != x.data_ptr()
    assert ampc.asarray([1, 2]).dtype == ampc.int64 and ampc.asarray([1.5], dtype=ampc.float64).dtype == ampc.float64
    assert ampc.asarray(x, requires_grad=True).requires_grad
    buf = bytearray(np.arange(4, dtype=np.int32).tobytes())
    f = ampc.frombuffer(buf, dtype=ampc.int32, offset=4, count=2)
    assert host(f).tolist() == torch.frombuffer(bytearray(buf), dtype=torch.int32, offset=4, count=2).tolist()
    f[0] = 9
    assert np.frombuffer(buf, dtype=np.int32)[1] == 9
    with pytest.raises(ValueError):
        ampc.frombuffer(bytearray(6), dtype=ampc.int32)


def test_default_device():
    assert ampc.get_default_device() == ampc.device("cpu")
    ampc.set_default_device("cpu")
    try:
        assert ampc.get_default_device() == ampc.device("cpu")
        assert ampc.zeros(2).device.type == "cpu"
    finally:
        ampc.set_default_device(None)
    if not ampc.cuda.is_available():
        ampc.set_default_device("cuda")
        try:
            assert ampc.get_default_device().type == "cuda"
            for make in (lambda: ampc.zeros(2), lambda: ampc.ones(2), lambda: ampc.empty(2), lambda: ampc.arange(3),
                         lambda: ampc.randn(2), lambda: ampc.rand(2), lambda: ampc.tensor([1.0]),
                         lambda: ampc.full((2,), 1.0), lambda: ampc.linspace(0, 1, 3), lambda: ampc.eye(2),
                         lambda: ampc.randint(0, 3, (2,)), lambda: ampc.randperm(3)):
                with pytest.raises(RuntimeError, match="CUDA"):  # the factories honour the default device
                    make()
            cpu = ampc.zeros(2, device="cpu")  # an explicit device and *_like stay where they are told
            assert ampc.zeros_like(cpu).device.type == "cpu" and cpu.new_zeros(2).device.type == "cpu"
        finally:
            ampc.set_default_device(None)
    assert ampc.zeros(2).device.type == "cpu"


def test_threads_and_determinism():
    n = ampc.get_num_threads()
    try:
        ampc.set_num_threads(1)
        assert ampc.get_num_threads() == 1
        x = ampc.randn(1 << 17)
        assert abs(x.sum().item() - float(host(x).sum())) < 1e-2
    finally:
        ampc.set_num_threads(n)
    assert ampc.get_num_threads() == n
    with pytest.raises(RuntimeError):
        ampc.set_num_threads(0)
    ampc.set_num_interop_threads(2)
    assert ampc.get_num_interop_threads() == 2
    try:
        assert not ampc.are_deterministic_algorithms_enabled() and ampc.get_deterministic_debug_mode() == 0
        ampc.use_deterministic_algorithms(True, warn_only=True)
        assert ampc.are_deterministic_algorithms_enabled() and ampc.is_deterministic_algorithms_warn_only_enabled()
        assert ampc.get_deterministic_debug_mode() == 1
        ampc.set_deterministic_debug_mode("error")
        assert ampc.get_deterministic_debug_mode() == 2 and not ampc.is_deterministic_algorithms_warn_only_enabled()
        with pytest.raises(RuntimeError):
            ampc.set_deterministic_debug_mode("loud")
        with pytest.raises(TypeError):
            ampc.use_deterministic_algorithms(1)
    finally:
        ampc.use_deterministic_algorithms(False)


def test_compile_is_eager():
    model = ampc.nn.Linear(2, 2)
    assert ampc.compile(model) is model
    assert ampc.compile(model, mode="max-autotune", fullgraph=True, dynamic=False, backend="inductor") is model

    @ampc.compile
    def f(x):
        return x * 2

    @ampc.compile(mode="reduce-overhead")
    def g(x):
        return x + 1

    assert f(ampc.ones(1)).item() == 2 and g(ampc.ones(1)).item() == 2
    assert "eager" in ampc.compile.__doc__
    with pytest.raises(RuntimeError):
        ampc.compile(model, mode="default", options={})


def test_accelerator_and_onnx():
    acc = ampc.accelerator
    assert acc.is_available() == ampc.cuda.is_available()
    assert acc.device_count() == ampc.cuda.device_count()
    if acc.is_available():
        assert acc.current_accelerator() == ampc.device("cuda")
        assert acc.current_device_index() == ampc.cuda.current_device()
        acc.synchronize()
    else:
        assert acc.current_accelerator() is None
        with pytest.raises(RuntimeError, match="no accelerator"):
            acc.synchronize()
    # the PyTorch examples' device selection
    dev = acc.current_accelerator().type if acc.is_available() else "cpu"
    assert ampc.zeros(1, device=dev).device.type == dev
    assert ampc.onnx.is_in_onnx_export() is False
    with pytest.raises(NotImplementedError, match="eagerly"):
        ampc.onnx.export(ampc.nn.Linear(1, 1), (ampc.ones(1, 1),), "m.onnx")


def test_meshgrid_warns_without_indexing():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ampc.meshgrid(ampc.ones(2), ampc.ones(3))
    assert any("indexing" in str(x.message) for x in w)


def test_c_methods_take_precedence():
    """_install_tensor_methods keeps a name the C tables define (here: reshape)."""
    before = ampc.Tensor.reshape
    added = ampc._C._install_tensor_methods({"reshape": lambda self, *a: None})
    assert "reshape" not in added and ampc.Tensor.reshape is before


def test_finfo_iinfo():
    for d in ("float16", "bfloat16", "float32", "float64"):
        a, t = ampc.finfo(getattr(ampc, d)), torch.finfo(getattr(torch, d))
        for k in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
            assert getattr(a, k) == getattr(t, k), (d, k)
        assert repr(a) == repr(t)
    for d in ("uint8", "int32", "int64"):
        a, t = ampc.iinfo(getattr(ampc, d)), torch.iinfo(getattr(torch, d))
        assert (a.bits, a.min, a.max, a.dtype) == (t.bits, t.min, t.max, t.dtype)
    assert ampc.finfo().dtype == "float32"
    with pytest.raises(TypeError):
        ampc.finfo(ampc.int32)
    with pytest.raises(TypeError):
        ampc.iinfo(ampc.float32)


NN_TOPLEVEL = [
    ("conv2d", lambda M, x, w, b: M.conv2d(x, w, b, 1, 1), [(2, 3, 5, 5), (4, 3, 3, 3), (4,)]),
    ("conv1d", lambda M, x, w: M.conv1d(x, w, stride=2), [(2, 3, 7), (4, 3, 3)]),
    ("max_pool2d", lambda M, x: M.max_pool2d(x, 2), [(2, 3, 4, 4)]),
    ("layer_norm", lambda M, x, w, b: M.layer_norm(x, (4,), w, b, 1e-5, True), [(3, 4), (4,), (4,)]),
    ("group_norm", lambda M, x: M.group_norm(x, 2), [(2, 4, 3)]),
    ("batch_norm", lambda M, x, w, b: M.batch_norm(x, w, b, None, None, True, 0.1, 1e-5, True),
     [(4, 3), (3,), (3,)]),
    ("dropout_eval", lambda M, x: M.dropout(x, 0.5, False), [(3, 4)]),
    ("embedding", lambda M, w: M.embedding(w, M.tensor([[0, 2], [1, 1]])), [(3, 4)]),
    ("bce_logits", lambda M, x, y: M.binary_cross_entropy_with_logits(x, y.sigmoid(), None, None, 2),
     [(3, 4), (3, 4)]),
]


@pytest.mark.parametrize("case", NN_TOPLEVEL, ids=[c[0] for c in NN_TOPLEVEL])
def test_nn_toplevel_matches_torch(case):
    check_op(case[1], case[2])


def test_resize():
    for M in (ampc, torch):
        x = M.arange(6.0)
        v = x[1:3]
        assert x.resize_(2, 4) is x and tuple(x.shape) == (2, 4) and tuple(x.stride()) == (4, 1)
        assert x.reshape(-1)[:6].tolist() == [0, 1, 2, 3, 4, 5]  # old values kept as the prefix
        x[0, 1] = 9
        assert v.tolist() == [9, 2]  # views of the storage see the grown memory
        y = M.ones(5)
        assert y.resize_(2).tolist() == [1, 1] and y.resize_((3,)).shape == (3,)
        assert y.resize_as_(M.zeros(1, 2)).shape == (1, 2)
        assert M.ones(4)[2:].resize_(0).shape == (0,)
        with pytest.raises(RuntimeError, match="require grad"):
            M.ones(2, requires_grad=True).resize_(3)
        with pytest.raises(RuntimeError):  # torch: "numel: integer multiplication overflow"
            M.ones(2).resize_(-1)
        with pytest.raises(RuntimeError, match="not resizable"):
            M.from_numpy(np.ones(2, dtype=np.float32)).resize_(10)
    offset = ampc.arange(8.0)[3:]
    offset.resize_(7)
    assert offset.shape == (7,) and offset[:5].tolist() == [3, 4, 5, 6, 7]


def test_unravel_index_empty_permuted_dim_order():
    for idx, shape in (([4, 1, 7, -1, 9], (3, 3)), (5, (2, 3)), ([0, 23], (2, 3, 4)), ([], (2,))):
        got = ampc.unravel_index(ampc.tensor(idx, dtype=ampc.int64), shape)
        want = torch.unravel_index(torch.tensor(idx, dtype=torch.int64), shape)
        assert [host(g).tolist() for g in got] == [w.tolist() for w in want]
    with pytest.raises(TypeError):
        ampc.unravel_index(ampc.tensor([1.0]), (3, 3))
    for size, order in (((2, 3, 4), (0, 2, 1)), ((2, 3, 4), (2, 1, 0)), ((0, 3), (1, 0))):
        e = ampc.empty_permuted(size, order)
        assert tuple(e.shape) == size and tuple(e.stride()) == torch.empty_permuted(size, order).stride()
    for perm in ((0, 1, 2), (2, 0, 1), (1, 2, 0)):
        assert ampc.ones(2, 3, 4).permute(perm).dim_order() == torch.ones(2, 3, 4).permute(perm).dim_order()


def test_inplace_gemm_methods():
    rng = np.random.default_rng(2)
    c, a, b = (rng.standard_normal(s).astype(np.float32) for s in ((2, 3), (2, 4), (4, 3)))
    got, want = ampc.tensor(c), torch.tensor(c)
    assert got.addmm_(ampc.tensor(a), ampc.tensor(b), beta=0.5, alpha=2) is got
    want.addmm_(torch.tensor(a), torch.tensor(b), beta=0.5, alpha=2)
    assert np.allclose(host(got), want.numpy(), atol=1e-5)
    c3, a3, b3 = (rng.standard_normal(s).astype(np.float32) for s in ((2, 2, 3), (2, 2, 4), (2, 4, 3)))
    got, want = ampc.tensor(c3), torch.tensor(c3)
    got.baddbmm_(ampc.tensor(a3), ampc.tensor(b3))
    want.baddbmm_(torch.tensor(a3), torch.tensor(b3))
    assert np.allclose(host(got), want.numpy(), atol=1e-5)
