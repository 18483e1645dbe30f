"""Creation functions (tensor, as_tensor, empty/zeros/ones/full and _like, arange, linspace, eye)
and the dtype queries (default dtype, result_type, promote_types, can_cast), against PyTorch
and NumPy."""
import itertools

import ml_dtypes
import numpy as np
import pytest
import torch

import ampc

RNG = np.random.default_rng(1)

PAIRS = [
    (ampc.float32, torch.float32), (ampc.float16, torch.float16), (ampc.bfloat16, torch.bfloat16),
    (ampc.float64, torch.float64), (ampc.int64, torch.int64), (ampc.int32, torch.int32),
    (ampc.uint8, torch.uint8), (ampc.bool, torch.bool),
]
A2T = {a: t for a, t in PAIRS}
T2A = {t: a for a, t in PAIRS}


def values(t):
    """Values of an ampc or torch tensor as float64 NumPy (bf16 widened)."""
    if isinstance(t, torch.Tensor):
        return t.double().numpy() if t.dtype != torch.bool else t.numpy()
    return t.double().numpy() if t.dtype is not ampc.bool else t.numpy()


def same(a, t):
    assert a.dtype is T2A[t.dtype], (a.dtype, t.dtype)
    assert tuple(a.shape) == tuple(t.shape)
    np.testing.assert_array_equal(values(a), values(t))


# ---------------------------------------------------------------- tensor(data)

DATA = [
    [1, 2, 3], [1.0, 2, 3], [True, False], [True, 2], [[1, 2], [3, 4]], 3.5, 7, True, -0.0, [], [[]],
    [[], []], ((1, 2), (3, 4)), [np.float64(1), 2], [np.float32(1.5), 2.0], [np.int32(1), np.int32(2)],
    [np.bool_(True)], np.float16(2.5), np.int64(9), [np.array([1, 2]), np.array([3, 4])],
    [[1.5, 2.5], (3, 4)], [2**40, -3], [[[1], [2]], [[3], [4]]],
]


@pytest.mark.parametrize("data", DATA, ids=[repr(d)[:40] for d in DATA])
@pytest.mark.filterwarnings("ignore:Creating a tensor from a list of numpy")
def test_tensor_infers_like_torch(data):
    same(ampc.tensor(data), torch.tensor(data))


@pytest.mark.parametrize("adt,tdt", PAIRS, ids=[str(p[0]) for p in PAIRS])
def test_tensor_with_dtype(adt, tdt):
    for data in ([1.75, -2.5, 3.0], [[0, 1], [2, 3]], [True, False, True], 4.5):
        if tdt == torch.uint8 and data == [1.75, -2.5, 3.0]:
            data = [1.75, 2.5, 3.0]  # negative floats to uint8 are undefined in C
        same(ampc.tensor(data, dtype=adt), torch.tensor(data, dtype=tdt))


def test_tensor_from_numpy_arrays_copies():
    for np_dtype in (np.float32, np.float16, np.float64, np.int64, np.int32, np.uint8, np.bool_):
        a = (RNG.standard_normal((3, 4)) * 10).astype(np_dtype)
        t = ampc.tensor(a)
        same(t, torch.tensor(a))
        assert not np.shares_memory(t.numpy(), a)
    a = RNG.standard_normal((4, 6))
    same(ampc.tensor(a[::2, ::-1]), torch.tensor(a[::2, ::-1].copy()))  # negative strides are copied
    same(ampc.tensor(a.T, dtype=ampc.float16), torch.tensor(a.T, dtype=torch.float16))
    same(ampc.tensor(a.astype(">f8")), torch.tensor(a))  # byte-swapped input
    # int16 data converts when a dtype says how
    same(ampc.tensor(np.arange(5, dtype=np.int16), dtype=ampc.int64), torch.arange(5))
    b = ampc.tensor(a.astype(ml_dtypes.bfloat16))
    assert b.dtype is ampc.bfloat16
    np.testing.assert_array_equal(b.float().numpy(), a.astype(ml_dtypes.bfloat16).astype(np.float32))


def test_tensor_from_tensors():
    src = ampc.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    t = ampc.tensor(src)
    assert not t.requires_grad and t.tolist() == src.tolist() and t.data_ptr() != src.data_ptr()
    assert ampc.tensor(src.t(), dtype=ampc.int64).tolist() == [[1, 3], [2, 4]]
    same(ampc.tensor([ampc.tensor(1.5), ampc.tensor(2)]), torch.tensor([torch.tensor(1.5), torch.tensor(2)]))
    assert ampc.tensor([ampc.tensor(1, dtype=ampc.int32)] * 2).dtype is ampc.int32
    assert ampc.tensor(3.0, requires_grad=True).requires_grad


def test_as_tensor_shares_when_possible():
    a = RNG.standard_normal(5).astype(np.float32)
    t = ampc.as_tensor(a)
    assert np.shares_memory(t.numpy(), a)
    assert not np.shares_memory(ampc.as_tensor(a, dtype=ampc.float64).numpy(), a)
    x = ampc.zeros(3)
    assert ampc.as_tensor(x) is x and ampc.as_tensor(x, dtype=ampc.float32) is x
    assert ampc.as_tensor(x, dtype=ampc.int32).dtype is ampc.int32
    same(ampc.as_tensor([1, 2.5]), torch.as_tensor([1, 2.5]))


# ---------------------------------------------------------------- sized factories


@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
def test_sized_factories_shapes_and_dtypes(name):
    fa, ft = getattr(ampc, name), getattr(torch, name)
    for args in [(2, 3), ((2, 3),), ([2, 3],), ((),), (0,), (4, 0, 2), (ampc.Size([3, 1]),)]:
        a, t = fa(*args), ft(*args)
        assert a.shape == tuple(t.shape) and a.dtype is ampc.float32 and a.is_contiguous()
        if name != "empty":
            same(a, t)
    assert fa(size=(2, 2)).shape == (2, 2)
    for adt, tdt in PAIRS:
        a = fa(2, 3, dtype=adt, device="cpu")
        assert a.dtype is adt and a.device == ampc.device("cpu")
        if name != "empty":
            same(a, ft(2, 3, dtype=tdt))
    assert fa(3, requires_grad=True).requires_grad
    assert fa(3, device=ampc.device("cpu")).device.type == "cpu"


def test_full():
    same(ampc.full((2, 3), 7), torch.full((2, 3), 7))
    same(ampc.full((2,), True), torch.full((2,), True))
    same(ampc.full((2, 2), 1.5), torch.full((2, 2), 1.5))
    same(ampc.full([3], -2, dtype=ampc.float16), torch.full([3], -2, dtype=torch.float16))
    same(ampc.full((2,), 3.9, dtype=ampc.int32), torch.full((2,), 3.9, dtype=torch.int32))
    same(ampc.full((), 4.0), torch.full((), 4.0))
    same(ampc.full((2,), np.float32(0.25)), torch.full((2,), 0.25))
    same(ampc.full((2,), ampc.tensor(5)), torch.full((2,), torch.tensor(5)).long())
    same(ampc.full(size=(1, 2), fill_value=3), torch.full(size=(1, 2), fill_value=3))


def test_like_factories():
    base = ampc.tensor(RNG.standard_normal((3, 4)), dtype=ampc.float16).t()  # non-contiguous
    for name in ("zeros_like", "ones_like", "empty_like"):
        r = getattr(ampc, name)(base)
        assert r.shape == (4, 3) and r.dtype is ampc.float16 and r.is_contiguous()
        assert getattr(ampc, name)(base, dtype=ampc.int32).dtype is ampc.int32
        assert getattr(ampc, name)(base, dtype=ampc.float32, requires_grad=True).requires_grad
    assert ampc.zeros_like(base).tolist() == [[0.0] * 3] * 4
    assert ampc.ones_like(base, dtype=ampc.bool).tolist() == [[True] * 3] * 4
    f = ampc.full_like(base, 2.5)
    assert f.dtype is ampc.float16 and f.tolist() == [[2.5] * 3] * 4
    assert ampc.full_like(ampc.zeros(2, dtype=ampc.int64), 3.7).tolist() == [3, 3]
    assert ampc.full_like(base, fill_value=1, dtype=ampc.float64).dtype is ampc.float64


# ---------------------------------------------------------------- ranges


ARANGE_ARGS = [
    ((5,), {}), ((5.0,), {}), ((2, 9), {}), ((0, 10, 3), {}), ((10, 0, -3), {}), ((0, 1, 0.1), {}),
    ((-1.5, 2.5, 0.5), {}), ((1, 4, 0.5), {}), ((0,), {}), ((3, 3), {}), ((0, 5), {"dtype": "float16"}),
    ((0, 7, 2), {"dtype": "float64"}), ((0, 300, 7), {"dtype": "int32"}), ((0, 250, 25), {"dtype": "uint8"}),
    ((0, 4.5, 1.5), {"dtype": "int64"}), ((0, 5, 1.5), {"dtype": "int64"}), ((0.5, 5, 1), {"dtype": "int64"}),
    ((0, 5.5, 2), {"dtype": "int32"}), ((-0.5, 3, 1), {"dtype": "int64"}), ((0, 10, 2.5), {"dtype": "uint8"}),
    ((9, -1, -2), {"dtype": "int64"}), ((2**40, 2**40 + 5), {}), ((0, 100), {"dtype": "bfloat16"}),
    ((0.5, 20), {"dtype": "float32"}),
]


@pytest.mark.parametrize("args,kw", ARANGE_ARGS, ids=[str(a) + str(k) for a, k in ARANGE_ARGS])
def test_arange_matches_torch(args, kw):
    akw = {k: getattr(ampc, v) for k, v in kw.items()}
    tkw = {k: getattr(torch, v) for k, v in kw.items()}
    same(ampc.arange(*args, **akw), torch.arange(*args, **tkw))


def test_arange_keywords_and_tensor_bounds():
    same(ampc.arange(start=1, end=7, step=2), torch.arange(start=1, end=7, step=2))
    same(ampc.arange(1, end=4), torch.arange(1, end=4))
    same(ampc.arange(ampc.tensor(4)), torch.arange(torch.tensor(4)))
    same(ampc.arange(np.int64(3)), torch.arange(3))
    assert ampc.arange(3, requires_grad=False).dtype is ampc.int64
    assert ampc.arange(3.0, requires_grad=True).requires_grad


LINSPACE_ARGS = [(0, 1, 5), (-3, 7, 11), (2, 2, 1), (0, 1, 0), (1, -1, 4), (0, 10, 2), (-5.5, 4.25, 100)]


@pytest.mark.parametrize("args", LINSPACE_ARGS, ids=[str(a) for a in LINSPACE_ARGS])
def test_linspace_matches_torch(args):
    a, t = ampc.linspace(*args), torch.linspace(*args)
    assert a.dtype is ampc.float32 and a.shape == tuple(t.shape)
    np.testing.assert_allclose(values(a), values(t), rtol=1e-6, atol=1e-6)
    if a.numel() >= 2:  # both endpoints exact
        assert a.tolist()[0] == args[0] and a.tolist()[-1] == args[1]
    # PyTorch computes fp16 linspace in fp16 arithmetic; ampc rounds the exact value once
    np.testing.assert_allclose(values(ampc.linspace(*args, dtype=ampc.float16)),
                               np.linspace(*args).astype(np.float16), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(values(ampc.linspace(*args, dtype=ampc.float16)),
                               values(torch.linspace(*args, dtype=torch.float16)), rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(values(ampc.linspace(*args, dtype=ampc.float64)),
                               np.linspace(*args), rtol=1e-12, atol=1e-12)


def test_linspace_int_dtype():
    for args in [(0, 10, 6), (0, 10, 4), (-5, 10, 4), (3, -7, 5)]:
        same(ampc.linspace(*args, dtype=ampc.int64), torch.linspace(*args, dtype=torch.int64))


@pytest.mark.parametrize("nm", [(3,), (2, 4), (4, 2), (0,), (1, 1), (5, 0)])
def test_eye(nm):
    for adt, tdt in PAIRS:
        same(ampc.eye(*nm, dtype=adt), torch.eye(*nm, dtype=tdt))
    np.testing.assert_array_equal(ampc.eye(*nm).numpy(), np.eye(*nm, dtype=np.float32))
    assert ampc.eye(*nm, requires_grad=True).requires_grad


def test_devices_argument():
    assert ampc.zeros(2, device="cpu").device == ampc.device("cpu")
    assert ampc.arange(3, device=ampc.device("cpu")).device.type == "cpu"
    try:
        t = ampc.zeros(2, device="cuda")
    except RuntimeError as e:  # a machine without a GPU or a CPU-only build
        assert "CUDA is not available" in str(e)
    else:
        assert t.device.type == "cuda" and t.cpu().tolist() == [0.0, 0.0]
        assert ampc.arange(4, device="cuda").cpu().tolist() == [0, 1, 2, 3]
        assert ampc.eye(2, device="cuda:0").cpu().tolist() == [[1.0, 0.0], [0.0, 1.0]]
        assert ampc.tensor([1.5], device="cuda").device == ampc.device("cuda:0")


# ---------------------------------------------------------------- dtype queries


def test_default_dtype():
    assert ampc.get_default_dtype() is ampc.float32
    try:
        ampc.set_default_dtype(ampc.float64)
        assert ampc.get_default_dtype() is ampc.float64
        assert ampc.tensor([1.5]).dtype is ampc.float64 and ampc.tensor([1]).dtype is ampc.int64
        assert ampc.zeros(2).dtype is ampc.float64 and ampc.arange(1.5).dtype is ampc.float64
        assert ampc.full((1,), 0.5).dtype is ampc.float64 and ampc.linspace(0, 1, 3).dtype is ampc.float64
        assert ampc.result_type(ampc.tensor([1]), 2.5) is ampc.float64
    finally:
        ampc.set_default_dtype(ampc.float32)
    assert ampc.zeros(2).dtype is ampc.float32


def test_promote_types_and_can_cast_all_pairs():
    for (a1, t1), (a2, t2) in itertools.product(PAIRS, PAIRS):
        assert ampc.promote_types(a1, a2) is T2A[torch.promote_types(t1, t2)], (a1, a2)
        assert ampc.can_cast(a1, a2) == torch.can_cast(t1, t2), (a1, a2)


def test_result_type_all_tiers():
    for (a1, t1), (a2, t2) in itertools.product(PAIRS, PAIRS):
        x, tx = ampc.zeros(2, dtype=a1), torch.zeros(2, dtype=t1)
        y0, ty0 = ampc.zeros((), dtype=a2), torch.zeros((), dtype=t2)
        assert ampc.result_type(x, ampc.zeros(3, dtype=a2)) is T2A[torch.result_type(tx, torch.zeros(3, dtype=t2))]
        assert ampc.result_type(x, y0) is T2A[torch.result_type(tx, ty0)], (a1, a2)
        for s in (2, 2.5, True):
            assert ampc.result_type(x, s) is T2A[torch.result_type(tx, s)], (a1, s)
            assert ampc.result_type(y0, s) is T2A[torch.result_type(ty0, s)], (a2, s)


def test_predicates():
    assert ampc.is_tensor(ampc.zeros(1)) and not ampc.is_tensor([1]) and not ampc.is_tensor(np.zeros(1))
    assert ampc.numel(ampc.zeros(2, 5)) == 10
    assert ampc.is_floating_point(ampc.zeros(1, dtype=ampc.bfloat16))
    assert not ampc.is_floating_point(ampc.zeros(1, dtype=ampc.uint8))
