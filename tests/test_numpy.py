"""NumPy and DLPack exchange: from_numpy / numpy() / __array__ for every dtype (bf16 through
ml_dtypes), memory sharing in both directions, strided and odd-strided arrays, lifetimes, and
DLPack round trips with NumPy and PyTorch."""
import gc
import sys

import ml_dtypes
import numpy as np
import pytest
import torch

import ampc
from helpers import DTYPES, random_array

RNG = np.random.default_rng(2)

IDS = [str(d[0]) for d in DTYPES]


def rand(shape, np_dtype):
    return random_array(RNG, shape, np_dtype, int_high=120, scale=4)


def one_value(np_dtype):
    return np.array(True if np.dtype(np_dtype) == np.bool_ else 7).astype(np_dtype)


@pytest.mark.parametrize("adt,ndt,tdt", DTYPES, ids=IDS)
def test_from_numpy_shares_memory_every_dtype(adt, ndt, tdt):
    a = rand((3, 4), ndt)
    t = ampc.from_numpy(a)
    assert t.dtype is adt and t.shape == (3, 4) and t.stride() == (4, 1)
    assert t.data_ptr() == a.ctypes.data
    np.testing.assert_array_equal(t.numpy(), a)
    a[1, 2] = one_value(ndt)  # numpy writes are seen by the tensor
    assert t.numpy()[1, 2] == a[1, 2]
    t.zero_()  # tensor writes are seen by the array
    assert not a.astype(np.float32).any()


@pytest.mark.parametrize("adt,ndt,tdt", DTYPES, ids=IDS)
def test_numpy_shares_memory_every_dtype(adt, ndt, tdt):
    t = ampc.tensor(rand((2, 5), ndt))
    n = t.numpy()
    assert n.dtype == np.dtype(ndt) and n.shape == (2, 5) and n.ctypes.data == t.data_ptr()
    n[0, 0] = one_value(ndt)
    assert t.numpy()[0, 0] == n[0, 0]
    # non-contiguous tensors become strided arrays over the same memory
    v = t.t()
    nv = v.numpy()
    assert nv.strides == (n.itemsize, 5 * n.itemsize) and np.shares_memory(nv, n)
    np.testing.assert_array_equal(nv, n.T)


@pytest.mark.parametrize("adt,ndt,tdt", DTYPES, ids=IDS)
def test_array_protocol(adt, ndt, tdt):
    a = rand((4, 3), ndt)
    t = ampc.tensor(a)
    np.testing.assert_array_equal(np.asarray(t), a)
    assert np.asarray(t).dtype == np.dtype(ndt)
    f = np.asarray(t, dtype=np.float64)
    assert f.dtype == np.float64
    np.testing.assert_array_equal(f, a.astype(np.float64))
    np.testing.assert_array_equal(np.array(t.t()), a.T)
    assert not np.shares_memory(np.array(t, copy=True), t.numpy())


def test_round_trip_keeps_owner_alive():
    a = np.arange(6, dtype=np.float32)
    ref = sys.getrefcount(a)
    t = ampc.from_numpy(a)
    assert sys.getrefcount(a) == ref + 1
    del a
    gc.collect()
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]  # the storage holds the array
    n = ampc.arange(5.0).numpy()  # the array holds the tensor
    gc.collect()
    assert n.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    b = np.ones(3)
    r = sys.getrefcount(b)
    x = ampc.from_numpy(b)
    del x
    gc.collect()
    assert sys.getrefcount(b) == r


def test_from_numpy_strided_and_special_arrays():
    base = rand((6, 8), np.float32)
    for view in (base[::2], base[:, 1::3], base.T, base[2:4, 3:7], base[:, :1], base[None, ::3, ::-1][:, :, ::-1]):
        t = ampc.from_numpy(view)
        assert t.shape == view.shape and t.data_ptr() == view.ctypes.data
        np.testing.assert_array_equal(t.numpy(), view)
        np.testing.assert_array_equal(t.contiguous().numpy(), view)
    z = ampc.from_numpy(np.zeros((0, 3), np.int64))
    assert z.shape == (0, 3) and z.dtype is ampc.int64
    s = ampc.from_numpy(np.array(2.5))
    assert s.shape == () and s.item() == 2.5
    b = ampc.from_numpy(np.broadcast_to(np.arange(3.0), (4, 3)))  # zero strides
    assert b.stride() == (0, 1) and b.tolist() == [[0.0, 1.0, 2.0]] * 4
    ro = np.arange(4.0)
    ro.flags.writeable = False
    assert ampc.from_numpy(ro).tolist() == [0.0, 1.0, 2.0, 3.0]


def test_from_numpy_errors():
    with pytest.raises(TypeError, match=r"expected np.ndarray \(got list\)"):
        ampc.from_numpy([1, 2])
    for bad in (np.int16, np.int8, np.uint16, np.complex64, np.float128 if hasattr(np, "float128") else np.uint32):
        with pytest.raises(TypeError, match="can't convert np.ndarray of type"):
            ampc.from_numpy(np.zeros(2, bad))
    with pytest.raises(TypeError, match="only supported types are"):
        ampc.from_numpy(np.array(["a"]))
    with pytest.raises(ValueError, match="At least one stride in the given numpy array is negative"):
        ampc.from_numpy(np.arange(4.0)[::-1])
    rec = np.zeros(4, dtype=[("a", np.float32), ("b", np.int8)])
    with pytest.raises((TypeError, ValueError)):
        ampc.from_numpy(rec)
    odd = np.zeros(8, np.uint8)[1:].view(np.uint8)  # fine: itemsize 1
    assert ampc.from_numpy(odd).shape == (7,)
    packed = np.zeros(5, dtype=[("a", np.float32), ("b", np.int8)])["a"]  # stride 5 for 4-byte items
    with pytest.raises(ValueError, match="strides not a multiple of the element byte size"):
        ampc.from_numpy(packed)
    with pytest.raises(ValueError, match="byte order"):
        ampc.from_numpy(np.zeros(3, ">f4"))
    with pytest.raises(ValueError, match="at most 8 dims"):
        ampc.from_numpy(np.zeros((1,) * 9))


def test_numpy_errors():
    with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad\. "
                                           r"Use tensor\.detach\(\)\.numpy\(\) instead\."):
        ampc.ones(2, requires_grad=True).numpy()
    with pytest.raises(RuntimeError, match="requires grad"):
        np.asarray(ampc.ones(2, requires_grad=True))
    g = ampc.ones(2, requires_grad=True)
    assert g.numpy(force=True).tolist() == [1.0, 1.0] and g.detach().numpy().tolist() == [1.0, 1.0]


def test_bf16_to_numpy_values():
    vals = np.array([1.0, -2.5, 3.140625, 1e-3, 65504.0, -1e20], np.float32)
    t = ampc.tensor(vals).bfloat16()
    n = t.numpy()
    assert n.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(n.astype(np.float32), vals.astype(ml_dtypes.bfloat16).astype(np.float32))
    back = ampc.from_numpy(n)
    assert back.dtype is ampc.bfloat16 and back.data_ptr() == t.data_ptr()


# ---------------------------------------------------------------- DLPack


@pytest.mark.parametrize("adt,ndt,tdt", DTYPES, ids=IDS)
def test_dlpack_with_torch(adt, ndt, tdt):
    a = rand((3, 4), np.float32 if ndt == ml_dtypes.bfloat16 else ndt)
    t = ampc.tensor(a, dtype=adt)
    for src in (t, t.t()):
        tt = torch.from_dlpack(src)
        assert tt.dtype == tdt and tuple(tt.shape) == tuple(src.shape) and tt.stride() == src.stride()
        assert tt.data_ptr() == src.data_ptr()
        np.testing.assert_array_equal(tt.double().numpy() if tdt != torch.bool else tt.numpy(),
                                      src.double().numpy() if adt is not ampc.bool else src.numpy())
    # torch -> ampc, sharing memory
    tt = torch.from_numpy(a).to(tdt).t()
    back = ampc.from_dlpack(tt)
    assert back.dtype is adt and back.shape == tuple(tt.shape) and back.stride() == tt.stride()
    assert back.data_ptr() == tt.data_ptr()
    tt.zero_()
    assert not back.double().numpy().any()


@pytest.mark.parametrize("adt,ndt,tdt", [d for d in DTYPES if d[1] != ml_dtypes.bfloat16],
                         ids=[i for i in IDS if i != "ampc.bfloat16"])
def test_dlpack_with_numpy(adt, ndt, tdt):
    a = rand((2, 3), ndt)
    t = ampc.from_dlpack(a)
    assert t.dtype is adt and t.data_ptr() == a.ctypes.data
    np.testing.assert_array_equal(t.numpy(), a)
    n = np.from_dlpack(ampc.tensor(a).t())
    np.testing.assert_array_equal(n, a.T)
    assert ampc.tensor(a).__dlpack_device__() == (1, 0)


def test_dlpack_lifetimes_and_capsules():
    t = ampc.arange(6.0)
    cap = t.__dlpack__()
    u = ampc.from_dlpack(cap)
    assert u.data_ptr() == t.data_ptr()
    with pytest.raises(ValueError, match="already consumed"):
        ampc.from_dlpack(cap)
    del t, cap
    gc.collect()
    assert u.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    unused = ampc.ones(3).__dlpack__()  # dropped unconsumed: the capsule frees its reference
    del unused
    tt = torch.arange(4.0)
    a = ampc.from_dlpack(tt)
    del tt
    gc.collect()
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0]
    x = ampc.zeros(2)
    assert ampc.from_dlpack(x) is x
    with pytest.raises(TypeError, match="expected an object with __dlpack__"):
        ampc.from_dlpack([1, 2])
    with pytest.raises(RuntimeError, match="require gradient"):
        ampc.ones(2, requires_grad=True).__dlpack__()
    with pytest.raises(TypeError, match="unsupported DLPack dtype"):
        ampc.from_dlpack(torch.zeros(2, dtype=torch.int16))
