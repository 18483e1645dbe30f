"""The CUDA side of the shape and index ops of issue 12 against the CPU backend: the tril/triu
kernel (every dtype, batched, non-contiguous, in place), the scatter form without accumulate
(scatter, index_copy, index_fill), and the ops composed of COPY and the index kernels over
computed strides (flip's negative strides, roll, repeat, the diagonal writers, masked_select,
masked_scatter, take, put), with their gradients; an out-of-range index raises at the next
synchronisation. Inputs are small; moves are exact, so results are compared bit for bit."""
import numpy as np
import pytest

import ampc
from helpers import deferred_index_error, host_exact

DTYPES = [ampc.float32, ampc.float16, ampc.bfloat16, ampc.float64, ampc.int64, ampc.int32, ampc.uint8, ampc.bool]


def sample(shape, dtype, seed=0):
    r = np.random.default_rng(seed)
    a = r.random(shape) < 0.5 if dtype == ampc.bool else r.integers(-50, 50, shape) if dtype != ampc.uint8 \
        else r.integers(0, 255, shape)
    return ampc.tensor(np.asarray(a)).to(dtype)


def same(got, want, what=""):
    assert got.dtype == want.dtype and tuple(got.shape) == tuple(want.shape), what
    np.testing.assert_array_equal(host_exact(got), host_exact(want), err_msg=what)


def idx(v, dev="cpu"):
    return ampc.tensor(v).to(dev)


@pytest.mark.parametrize("dtype", DTYPES)
def test_shape_tril_triu(cuda, dtype):
    x = sample((2, 5, 7), dtype)
    g = x.to(cuda)
    for k in (-6, -1, 0, 2, 9):
        same(g.tril(k), x.tril(k), f"tril {k}")
        same(g.triu(k), x.triu(k), f"triu {k}")
        same(g.transpose(1, 2).triu(k), x.transpose(1, 2).triu(k), f"triu of a transpose {k}")
    y = g.clone()
    y.tril_(1)
    same(y, x.tril(1), "tril_")
    same(ampc.zeros(0, 3, device=cuda).tril(), ampc.zeros(0, 3).tril())


@pytest.mark.parametrize("dtype", DTYPES)
def test_shape_moves_over_computed_strides(cuda, dtype):
    x = sample((3, 4, 5), dtype)
    g = x.to(cuda)
    cases = [lambda t: t.flip(0, 2), lambda t: t[:, ::2].flip(-1), lambda t: t.roll((1, -2), (0, 2)),
             lambda t: t.roll(7), lambda t: ampc.rot90(t, 1, (1, 2)), lambda t: t.repeat(2, 1, 1, 2),
             lambda t: t.repeat_interleave(2, dim=1), lambda t: t.diagonal(1, 1, 2).contiguous(),
             lambda t: t.unfold(2, 2, 2).contiguous(), lambda t: ampc.diag_embed(t[0]),
             lambda t: t.masked_select(t[0] == t[0, 0]), lambda t: t.take(idx([0, 59, -1, 7], t.device))]
    for i, f in enumerate(cases):
        same(f(g), f(x), f"case {i}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_shape_scatter_form_without_accumulate(cuda, dtype):
    x, s = sample((3, 4), dtype), sample((3, 2), dtype, seed=1)
    i2 = [[0, 2], [1, 3], [3, 0]]
    cases = [lambda t, s, d: t.scatter(1, idx(i2, d), s), lambda t, s, d: t.scatter(0, idx([[2, 0, 1, 0]], d), 1),
             lambda t, s, d: t.index_copy(1, idx([3, 0], d), s), lambda t, s, d: t.index_fill(1, idx([-1, 1], d), 0),
             lambda t, s, d: t.t().index_fill(0, idx([2], d), 1),
             lambda t, s, d: t.masked_scatter(idx([True, False, True, True], d), s.repeat(2, 1)),
             lambda t, s, d: t.put(idx([1, 7, -1], d), s.reshape(-1)[:3]),
             lambda t, s, d: ampc.diagonal_scatter(t, s[:, 0].clone()),
             lambda t, s, d: ampc.slice_scatter(t, s, 1, 1, 4, 2)]
    for i, f in enumerate(cases):
        same(f(x.to(cuda), s.to(cuda), cuda), f(x, s, "cpu"), f"case {i}")


def test_shape_gradients(cuda):
    r = np.random.default_rng(3)
    a = r.standard_normal((3, 4)).astype(np.float32)
    w = r.standard_normal((3, 4)).astype(np.float32)
    fns = [lambda t: t.tril(1), lambda t: t.flip(1), lambda t: t.roll(1, 0),
           lambda t: t.repeat(1, 2)[:, :4], lambda t: t.index_fill(1, idx([2], t.device), 0.0),
           lambda t: t.scatter(1, idx([[0], [1], [2]], t.device), 1.0)]
    for i, f in enumerate(fns):
        grads = []
        for dev in ("cpu", cuda):
            t = ampc.tensor(a).to(dev).requires_grad_()
            (f(t) * ampc.tensor(w).to(dev)).sum().backward()
            grads.append(t.grad.cpu().numpy())
        np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6, err_msg=f"case {i}")


def test_shape_out_of_range_index_raises_at_sync(cuda):
    x = sample((3, 4), ampc.float32).to(cuda)
    deferred_index_error(lambda: x.scatter(1, idx([[4]], cuda), 1.0), RuntimeError)
    deferred_index_error(lambda: x.index_copy(0, idx([3], cuda), ampc.ones(1, 4, device=cuda)))
    deferred_index_error(lambda: x.index_fill(1, idx([-5], cuda), 1.0))
    same(x.tril().cpu(), x.cpu().tril())  # usable afterwards


def small(shape, dtype, seed=0):
    r = np.random.default_rng(seed)
    a = r.random(shape) < 0.5 if dtype == ampc.bool else r.integers(0 if dtype == ampc.uint8 else -3, 4, shape)
    return ampc.tensor(np.asarray(a)).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_shape_scatter_reduce(cuda, dtype, reduce):
    """the reduce combines run as compare-and-swap atomics on the GPU (1-, 2-, 4- and 8-byte
    items); small integer values make every order of combination exact, so bits agree"""
    if dtype == ampc.bool and reduce == "mean":
        return  # refused on every device (test_shape_ops)
    x, s = small((3, 6), dtype), small((3, 5), dtype, seed=1)
    i = [[0, 0, 5, 1, 0], [2, 2, 2, 2, 2], [1, 3, 3, 1, 4]]
    for incl in (True, False):
        same(x.to(cuda).scatter_reduce(1, idx(i, cuda), s.to(cuda), reduce, include_self=incl),
             x.scatter_reduce(1, idx(i), s, reduce, include_self=incl), f"scatter_reduce {reduce} {incl}")
        if reduce != "sum" and not (dtype == ampc.bool and not incl):
            same(x.to(cuda).index_reduce(1, idx([0, 2, 0, 5, 2], cuda), s.to(cuda), reduce, include_self=incl),
                 x.index_reduce(1, idx([0, 2, 0, 5, 2]), s, reduce, include_self=incl), f"index_reduce {reduce} {incl}")
