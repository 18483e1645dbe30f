"""ampc.Tensor itself: properties, views against NumPy, conversions, Python protocols, repr
against PyTorch's, pickling and the object/reference-count discipline of the binding."""
import copy
import gc
import operator
import pickle
import sys
import weakref

import ml_dtypes
import numpy as np
import pytest
import torch

import ampc
from helpers import DTYPES, random_array

RNG = np.random.default_rng(0)


def rand(shape, np_dtype=np.float32):
    return random_array(RNG, shape, np_dtype, int_high=100, scale=3)


def to_torch(a):
    if a.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(a.astype(np.float32)).bfloat16()
    return torch.from_numpy(a.copy())


# ---------------------------------------------------------------- properties


@pytest.mark.parametrize("adt,ndt,tdt", DTYPES)
def test_properties_every_dtype(adt, ndt, tdt):
    a = rand((2, 3, 4), ndt)
    t = ampc.tensor(a)
    assert t.dtype is adt
    assert t.shape == (2, 3, 4) and isinstance(t.shape, ampc.Size) and isinstance(t.shape, tuple)
    assert t.size() == (2, 3, 4) and t.size(1) == 3 and t.size(-1) == 4
    assert t.dim() == t.ndim == 3 and t.numel() == 24 and len(t) == 2
    assert t.element_size() == np.dtype(ndt).itemsize == adt.itemsize
    assert t.stride() == (12, 4, 1) and t.stride(0) == 12 and t.storage_offset() == 0
    assert t.is_contiguous() and not t.is_cuda and t.device == ampc.device("cpu")
    assert t.is_floating_point() == adt.is_floating_point == tdt.is_floating_point
    assert t.data_ptr() == t.numpy().ctypes.data
    assert t.get_device() == -1
    np.testing.assert_array_equal(t.numpy(), a)


def test_dtype_objects():
    assert ampc.float is ampc.float32 and ampc.half is ampc.float16 and ampc.double is ampc.float64
    assert ampc.long is ampc.int64 and ampc.int is ampc.int32
    assert repr(ampc.bfloat16) == "ampc.bfloat16" and str(ampc.uint8) == "ampc.uint8"
    assert ampc.float16.is_floating_point and not ampc.int32.is_floating_point
    assert ampc.int32.is_signed and not ampc.uint8.is_signed and not ampc.bool.is_signed
    assert pickle.loads(pickle.dumps(ampc.bfloat16)) is ampc.bfloat16
    assert isinstance(ampc.float32, ampc.dtype)


def test_device_objects():
    d = ampc.device("cuda:1")
    assert d.type == "cuda" and d.index == 1 and str(d) == "cuda:1"
    assert repr(d) == "device(type='cuda', index=1)"
    assert repr(ampc.device("cpu")) == "device(type='cpu')" and ampc.device("cpu").index is None
    assert ampc.device("cuda").index is None and str(ampc.device("cuda")) == "cuda"
    assert ampc.device("cuda", 0) == ampc.device("cuda:0") != ampc.device("cuda:1")
    assert ampc.device(2) == ampc.device("cuda:2")
    assert hash(ampc.device("cuda:0")) == hash(ampc.device("cuda", 0))
    assert pickle.loads(pickle.dumps(d)) == d
    assert ampc.device(d) is d


def test_size_type():
    s = ampc.zeros(2, 3, 4).shape
    assert repr(s) == "ampc.Size([2, 3, 4])" and s == (2, 3, 4) and s.numel() == 24
    assert isinstance(s[1:], ampc.Size) and s[1:] == (3, 4) and s[0] == 2
    assert repr(ampc.tensor(1.0).shape) == "ampc.Size([])"


# ---------------------------------------------------------------- views against NumPy


def _inputs():
    """A contiguous, a transposed and a step-sliced (non-contiguous) version of one array."""
    base = rand((4, 6, 5))
    yield "contiguous", ampc.tensor(base), base
    t = ampc.tensor(base).permute(2, 0, 1)
    yield "permuted", t, base.transpose(2, 0, 1)
    strided = base[:, ::2, :]
    yield "sliced", ampc.from_numpy(strided), strided


VIEW_CASES = [
    ("view(-1)", lambda t: t.contiguous().view(-1), lambda a: a.reshape(-1)),
    ("reshape", lambda t: t.reshape(2, -1, 5), lambda a: a.reshape(2, -1, 5)),
    ("reshape tuple", lambda t: t.reshape((t.shape[0], -1)), lambda a: a.reshape(a.shape[0], -1)),
    ("flatten", lambda t: t.flatten(), lambda a: a.reshape(-1)),
    ("flatten(1)", lambda t: t.flatten(1), lambda a: a.reshape(a.shape[0], -1)),
    ("flatten(0,1)", lambda t: t.flatten(0, 1), lambda a: a.reshape(-1, a.shape[2])),
    ("permute", lambda t: t.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1)),
    ("permute list", lambda t: t.permute([1, 2, 0]), lambda a: a.transpose(1, 2, 0)),
    ("permute neg", lambda t: t.permute(-1, 0, 1), lambda a: a.transpose(2, 0, 1)),
    ("transpose", lambda t: t.transpose(0, 2), lambda a: a.swapaxes(0, 2)),
    ("transpose neg", lambda t: t.transpose(-1, -2), lambda a: a.swapaxes(-1, -2)),
    ("swapaxes", lambda t: t.swapaxes(0, 1), lambda a: a.swapaxes(0, 1)),
    ("T", lambda t: t.T, lambda a: a.transpose(2, 1, 0)),
    ("mT", lambda t: t.mT, lambda a: a.swapaxes(-1, -2)),
    ("unsqueeze(0)", lambda t: t.unsqueeze(0), lambda a: a[None]),
    ("unsqueeze(-1)", lambda t: t.unsqueeze(-1), lambda a: a[..., None]),
    ("unsqueeze(2)", lambda t: t.unsqueeze(2), lambda a: np.expand_dims(a, 2)),
    ("squeeze", lambda t: t.unsqueeze(1).squeeze(), lambda a: a),
    ("squeeze(dim)", lambda t: t.unsqueeze(1).squeeze(1), lambda a: a),
    ("squeeze(tuple)", lambda t: t.unsqueeze(0).unsqueeze(-1).squeeze((0, -1)), lambda a: a),
    ("squeeze non-1", lambda t: t.squeeze(0), lambda a: a),
    ("expand", lambda t: t.unsqueeze(0).expand(3, -1, -1, -1), lambda a: np.broadcast_to(a, (3,) + a.shape)),
    ("expand_as", lambda t: t.unsqueeze(0).expand_as(ampc.zeros(2, *t.shape)),
     lambda a: np.broadcast_to(a, (2,) + a.shape)),
    ("narrow", lambda t: t.narrow(1, 1, 2), lambda a: a[:, 1:3]),
    ("narrow neg start", lambda t: t.narrow(-1, -2, 2), lambda a: a[..., -2:]),
    ("contiguous", lambda t: t.contiguous(), lambda a: a),
    ("clone", lambda t: t.clone(), lambda a: a),
    ("detach", lambda t: t.detach(), lambda a: a),
    ("view_as", lambda t: t.contiguous().view_as(ampc.zeros(t.numel())), lambda a: a.reshape(-1)),
    ("reshape_as", lambda t: t.reshape_as(ampc.zeros(t.shape[0], t.numel() // t.shape[0])),
     lambda a: a.reshape(a.shape[0], -1)),
]


@pytest.mark.parametrize("name,fa,fn", VIEW_CASES, ids=[c[0] for c in VIEW_CASES])
def test_views_match_numpy(name, fa, fn):
    for kind, t, a in _inputs():
        r = fa(t)
        expect = fn(a)
        assert r.shape == expect.shape, (kind, name)
        np.testing.assert_array_equal(r.numpy(), expect, err_msg=f"{name} on {kind}")


def test_views_share_memory_and_strides():
    base = ampc.tensor(rand((3, 4)))
    for v in [base.view(4, 3), base.t(), base.unsqueeze(1), base.expand(2, 3, 4), base.narrow(1, 1, 2),
              base.permute(1, 0), base.flatten(), base.detach(), base.reshape(12), base.T]:
        assert np.shares_memory(v.numpy(), base.numpy())
    assert base.t().stride() == (1, 4) and not base.t().is_contiguous()
    assert base.expand(2, 3, 4).stride() == (0, 4, 1)
    assert base.narrow(1, 1, 2).storage_offset() == 1
    # reshape of a non-viewable layout copies; contiguous() of a contiguous tensor is itself
    r = base.t().reshape(12)
    assert not np.shares_memory(r.numpy(), base.numpy())
    np.testing.assert_array_equal(r.numpy(), base.numpy().T.reshape(12))
    assert base.contiguous() is base
    c = base.t().contiguous()
    assert c.is_contiguous() and c.stride() == (3, 1)
    assert not np.shares_memory(base.clone().numpy(), base.numpy())


def test_t_on_small_tensors():
    v = ampc.tensor([1.0, 2.0, 3.0])
    assert v.t().shape == (3,)
    assert ampc.tensor(2.0).t().shape == ()
    m = ampc.tensor(rand((2, 5)))
    np.testing.assert_array_equal(m.t().numpy(), m.numpy().T)


def test_view_keeps_writes_visible():
    base = ampc.zeros(2, 3)
    v = base.view(3, 2)
    v.fill_(5.0)
    assert base.tolist() == [[5.0] * 3] * 2
    base.t().zero_()
    assert v.tolist() == [[0.0, 0.0]] * 3


# ---------------------------------------------------------------- conversions


@pytest.mark.parametrize("src", DTYPES, ids=[str(d[0]) for d in DTYPES])
def test_casts_every_pair_against_torch(src):
    a = rand((3, 5), src[1])
    if src[1] == np.float32 or np.dtype(src[1]).kind == "f":
        a[0, :3] = [0.5, -2.75, 300.25]
    t = ampc.tensor(a)
    tt = to_torch(a)
    for adt, ndt, tdt in DTYPES:
        if tdt == torch.uint8 and src[2].is_floating_point:
            continue  # negative floats to uint8 are undefined behaviour in C and in PyTorch
        got = t.to(adt)
        assert got.dtype is adt
        want = tt.to(tdt)
        np.testing.assert_array_equal(got.float().numpy() if adt is ampc.bfloat16 else got.numpy(),
                                      want.float().numpy() if tdt == torch.bfloat16 else want.numpy())


def test_cast_methods():
    t = ampc.tensor([[1.5, -2.25], [3.0, 4.75]])
    assert t.float() is t
    assert t.half().dtype is ampc.float16 and t.bfloat16().dtype is ampc.bfloat16
    assert t.double().dtype is ampc.float64 and t.long().dtype is ampc.int64
    assert t.int().dtype is ampc.int32 and t.bool().dtype is ampc.bool and t.byte().dtype is ampc.uint8
    assert t.long().tolist() == [[1, -2], [3, 4]]
    assert t.type_as(ampc.zeros(1, dtype=ampc.int32)).dtype is ampc.int32
    # non-contiguous input
    np.testing.assert_array_equal(t.t().double().numpy(), t.numpy().T.astype(np.float64))


def test_to_forms():
    t = ampc.tensor([1.0, 2.0])
    assert t.to("cpu") is t and t.to(ampc.float32) is t and t.to(t) is t
    assert t.to("cpu", copy=True) is not t
    assert t.to(ampc.float16).dtype is ampc.float16
    assert t.to("cpu", ampc.float64).dtype is ampc.float64
    assert t.to(device="cpu", dtype=ampc.int64).tolist() == [1, 2]
    assert t.to(ampc.zeros(1, dtype=ampc.bool)).dtype is ampc.bool
    assert t.to(ampc.device("cpu"), non_blocking=True) is t
    assert t.to(ampc.float64, False, True) is not t
    assert t.cpu() is t
    c = t.to(copy=True)
    c.fill_(9.0)
    assert t.tolist() == [1.0, 2.0]


def test_item_and_tolist():
    assert ampc.tensor(2.5).item() == 2.5 and isinstance(ampc.tensor(2.5).item(), float)
    assert ampc.tensor([[7]]).item() == 7 and isinstance(ampc.tensor([7]).item(), int)
    assert ampc.tensor(True).item() is True
    assert ampc.tensor(1.5, dtype=ampc.float16).item() == 1.5
    assert ampc.tensor(1.5, dtype=ampc.bfloat16).item() == 1.5
    a = rand((2, 3, 4))
    t = ampc.tensor(a)
    assert t.tolist() == a.tolist()
    assert t.permute(2, 0, 1).tolist() == a.transpose(2, 0, 1).tolist()
    assert ampc.tensor(3).tolist() == 3
    assert ampc.zeros(0, 2).tolist() == []
    assert ampc.tensor([True, False]).tolist() == [True, False]
    u = ampc.tensor([0, 255], dtype=ampc.uint8)
    assert u.tolist() == [0, 255]


def test_number_protocol():
    assert float(ampc.tensor([2.5])) == 2.5 and int(ampc.tensor(3.9)) == 3
    assert bool(ampc.tensor([1])) and not bool(ampc.tensor(0.0))
    assert operator.index(ampc.tensor(4)) == 4 and [10, 11, 12][ampc.tensor(2)] == 12
    assert operator.index(ampc.tensor(True)) == 1
    assert f"{ampc.tensor(2.5):.2f}" == "2.50" and f"{ampc.tensor([1, 2])}" == "tensor([1, 2])"
    assert float(ampc.tensor(3, dtype=ampc.int32)) == 3.0


def test_iteration_and_len():
    a = rand((3, 2))
    t = ampc.tensor(a)
    rows = list(t)
    assert len(rows) == len(t) == 3
    for r, ar in zip(rows, a):
        assert isinstance(r, ampc.Tensor) and r.shape == (2,)
        np.testing.assert_array_equal(r.numpy(), ar)
    assert [x.item() for x in ampc.tensor([4, 5, 6])] == [4, 5, 6]
    assert list(ampc.zeros(0, 3)) == []
    assert [r.tolist() for r in t.t()] == a.T.tolist()


def test_hash_identity():
    a, b = ampc.zeros(2), ampc.zeros(2)
    assert hash(a) == hash(a) and hash(a) != hash(b)
    d = {a: 1, b: 2}
    assert d[a] == 1 and d[b] == 2
    assert len({a, b, a}) == 2


def test_requires_grad_flag():
    t = ampc.ones(2)
    assert not t.requires_grad
    t.requires_grad = True
    assert t.requires_grad
    assert not t.detach().requires_grad and t.detach().tolist() == [1.0, 1.0]
    for dt in (ampc.float16, ampc.bfloat16, ampc.float64):
        assert ampc.zeros(1, dtype=dt, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        ampc.zeros(2, dtype=ampc.int64).requires_grad = True
    with pytest.raises(TypeError, match="requires_grad must be a bool"):
        t.requires_grad = 1


def test_user_attributes_weakrefs_and_gc():
    t = ampc.zeros(3)
    t.tag = "x"
    assert t.tag == "x" and t.__dict__ == {"tag": "x"}
    r = weakref.ref(t)
    assert r() is t
    t.me = t  # a reference cycle through __dict__: the collector must free it
    del t
    gc.collect()
    assert r() is None


class Parameter(ampc.Tensor):
    """What ampc.nn.Parameter does: a Tensor subclass made with _make_subclass."""

    def __new__(cls, data, requires_grad=True):
        return ampc.Tensor._make_subclass(cls, data, requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()


def test_subclass_parameter():
    data = ampc.tensor([[1.0, 2.0]])
    p = Parameter(data)
    assert type(p) is Parameter and isinstance(p, ampc.Tensor) and p.requires_grad
    assert np.shares_memory(p.detach().numpy(), data.numpy())
    assert repr(p) == "Parameter containing:\ntensor([[1., 2.]], requires_grad=True)"
    assert str(p) == repr(p)
    p.name = "w"
    q = copy.deepcopy(p)
    assert type(q) is Parameter and q.requires_grad and q.name == "w" and q.tolist() == p.tolist()
    assert not np.shares_memory(q.detach().numpy(), p.detach().numpy())
    r = pickle.loads(pickle.dumps(p))
    assert type(r) is Parameter and r.requires_grad and r.tolist() == [[1.0, 2.0]] and r.name == "w"
    with pytest.raises(RuntimeError, match="floating point"):
        Parameter(ampc.tensor([1, 2]))


def test_tensor_constructor():
    assert ampc.Tensor(2, 3).shape == (2, 3) and ampc.Tensor(2, 3).dtype is ampc.float32
    assert ampc.Tensor([1, 2]).tolist() == [1.0, 2.0] and ampc.Tensor([1, 2]).dtype is ampc.float32
    assert ampc.Tensor().shape == (0,)


def test_data_property():
    p = ampc.ones(2, 2, requires_grad=True)
    d = p.data
    assert not d.requires_grad and np.shares_memory(d.numpy(), p.detach().numpy())
    p.data = ampc.zeros(3)
    assert p.shape == (3,) and p.tolist() == [0.0, 0.0, 0.0] and p.requires_grad


def test_pickle_and_deepcopy_every_dtype():
    for adt, ndt, _ in DTYPES:
        t = ampc.tensor(rand((2, 3), ndt)).t()
        u = pickle.loads(pickle.dumps(t))
        assert u.dtype is adt and u.shape == t.shape and u.tolist() == t.tolist()
        c = copy.deepcopy(t)
        assert c.dtype is adt and c.tolist() == t.tolist() and c.data_ptr() != t.data_ptr()


def test_copy_fill_zero_new():
    dst = ampc.zeros(2, 3)
    src = ampc.tensor(rand((3, 2)))
    assert dst.copy_(src.t()) is dst
    np.testing.assert_array_equal(dst.numpy(), src.numpy().T)
    dst.copy_(ampc.tensor([1, 2, 3]))  # broadcast and cast
    assert dst.tolist() == [[1.0, 2.0, 3.0]] * 2
    assert dst.fill_(ampc.tensor(4.0)) is dst and dst.tolist() == [[4.0] * 3] * 2
    assert dst.zero_() is dst and dst.tolist() == [[0.0] * 3] * 2
    h = ampc.ones(2, dtype=ampc.float16)
    assert h.new_zeros(2, 2).dtype is ampc.float16 and h.new_zeros((2, 2)).shape == (2, 2)
    assert h.new_ones(3).tolist() == [1.0] * 3 and h.new_empty(4).shape == (4,)
    assert h.new_full((2,), 7).tolist() == [7.0, 7.0] and h.new_full((2,), 7).dtype is ampc.float16
    assert h.new_tensor([1, 2]).dtype is ampc.float16
    assert h.new_zeros(2, dtype=ampc.int32).dtype is ampc.int32
    assert h.new_ones(2, requires_grad=True).requires_grad


# ---------------------------------------------------------------- repr against PyTorch


def _repr_cases():
    f = rand((3, 4))
    yield "float", f
    yield "neg int-valued float", np.array([[-1.0, 2.0], [3.0, -40.0]], np.float32)
    yield "small", np.array([1e-5, 2e-6, 3.5e-5], np.float32)
    yield "large", np.array([1e9, 2.5e10, -3.0], np.float32)
    yield "wide range", np.array([0.001, 100.0, 5000.0], np.float32)
    yield "nonfinite", np.array([np.nan, np.inf, -np.inf, 1.5, 0.0], np.float32)
    yield "only nonfinite", np.array([np.nan, np.inf], np.float32)
    yield "zeros", np.zeros((2, 2), np.float32)
    yield "int64", RNG.integers(-1000, 1000, (4, 5))
    yield "int64 big", np.array([10**12, -5, 3])
    yield "int32", RNG.integers(0, 10, (3, 3)).astype(np.int32)
    yield "uint8", RNG.integers(0, 255, (2, 6)).astype(np.uint8)
    yield "bool", RNG.random((2, 3)) > 0.5
    yield "f16", rand((3, 3), np.float16)
    yield "bf16", rand((2, 4), ml_dtypes.bfloat16)
    yield "f64", rand((2, 2), np.float64)
    yield "long row", rand(100)
    yield "summarised 1d", rand(2000)
    yield "summarised 2d", rand((50, 40))
    yield "summarised 3d", rand((12, 12, 12))
    yield "summarised int", np.arange(1500).reshape(30, 50)
    yield "0-dim float", np.array(3.25, np.float32)
    yield "0-dim int", np.array(-7)
    yield "0-dim bool", np.array(True)
    yield "0-dim f16", np.array(0.1, np.float16)
    yield "empty", np.zeros(0, np.float32)
    yield "empty 2d", np.zeros((0, 3), np.float32)
    yield "empty int 3d", np.zeros((2, 0, 4), np.int64)
    yield "empty f16", np.zeros(0, np.float16)
    yield "4d", rand((2, 2, 2, 2))


@pytest.mark.parametrize("name,a", list(_repr_cases()), ids=[c[0] for c in _repr_cases()])
def test_repr_matches_torch(name, a):
    if a.dtype == ml_dtypes.bfloat16:
        t, tt = ampc.tensor(a.astype(np.float32)).bfloat16(), torch.from_numpy(a.astype(np.float32)).bfloat16()
    else:
        t, tt = ampc.tensor(a), torch.from_numpy(a.copy())
    assert repr(t) == repr(tt).replace("torch.", "ampc.")
    assert str(t) == repr(t)


def test_repr_non_contiguous_and_flags():
    a = rand((4, 5))
    assert repr(ampc.tensor(a).t()) == repr(torch.from_numpy(a).t())
    g = ampc.tensor(a, requires_grad=True)
    assert repr(g) == repr(torch.tensor(a, requires_grad=True)).replace("torch.", "ampc.")
    h = ampc.tensor(a, dtype=ampc.float16, requires_grad=True)
    assert repr(h) == repr(torch.tensor(a, dtype=torch.float16, requires_grad=True)).replace("torch.", "ampc.")


def test_repr_default_dtype_and_printoptions():
    a = rand((2, 3)).astype(np.float64)
    try:
        ampc.set_default_dtype(ampc.float64)
        torch.set_default_dtype(torch.float64)
        assert repr(ampc.tensor(a)) == repr(torch.tensor(a)).replace("torch.", "ampc.")
        assert repr(ampc.tensor(a, dtype=ampc.float32)) == repr(torch.tensor(a, dtype=torch.float32)).replace("torch.", "ampc.")
    finally:
        ampc.set_default_dtype(ampc.float32)
        torch.set_default_dtype(torch.float32)
    try:
        ampc.set_printoptions(precision=2)
        torch.set_printoptions(precision=2)
        assert repr(ampc.tensor(a)) == repr(torch.tensor(a)).replace("torch.", "ampc.")
    finally:
        ampc.set_printoptions(profile="default")
        torch.set_printoptions(profile="default")


# ---------------------------------------------------------------- reference counts and memory


def _rss_pages():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1])


def test_no_leaks_over_many_calls():
    a = ampc.ones(4)
    arr = np.ones(4, np.float32)
    for _ in range(2000):  # warm up allocator pools and caches
        a.view(2, 2).clone()
    rss0, ref_a, ref_arr = _rss_pages(), sys.getrefcount(a), sys.getrefcount(arr)
    for i in range(100_000):
        k = i % 5
        if k == 0:
            a.view(2, 2)
        elif k == 1:
            a.clone()
        elif k == 2:
            ampc.zeros(4)
        elif k == 3:
            ampc.from_numpy(arr).t()
        else:
            a.numpy()
    gc.collect()
    assert sys.getrefcount(a) == ref_a and sys.getrefcount(arr) == ref_arr
    assert _rss_pages() - rss0 < 1024  # < 4 MiB: no per-call growth


def test_error_paths_do_not_leak():
    a = ampc.ones(2, 3)
    ref = sys.getrefcount(a)
    for _ in range(2000):
        with pytest.raises(RuntimeError):
            a.view(5)
        with pytest.raises(ValueError, match="only one element tensors"):
            ampc.tensor([a, a])
        with pytest.raises(TypeError, match="must be tuple of ints"):
            a.view("x")
        with pytest.raises(TypeError, match="must be Tensor"):
            a.copy_([1, 2])
    assert sys.getrefcount(a) == ref


def test_wrapper_identity():
    t = ampc.ones(2)
    assert t.to("cpu") is t and t.contiguous() is t
    assert t.fill_(1.0) is t
