"""Checkpoints and multiprocessing with CUDA tensors: saved with location "cuda:0", views of a
device tensor sharing one storage record, map_location to and from the device; share_memory_ a
no-op and is_shared() True on CUDA (torch's behaviour); sending a CUDA tensor to another process
raises a clear "not supported" (ampc has no CUDA IPC)."""
import io
import zipfile

import numpy as np
import pytest

import ampc
import ampc.multiprocessing as mp


def _roundtrip(obj, **kw):
    buf = io.BytesIO()
    ampc.save(obj, buf)
    return buf.getvalue(), ampc.load(io.BytesIO(buf.getvalue()), **kw)


def test_device_tensors_round_trip_with_their_location(device):
    base = ampc.arange(12, dtype=ampc.float32, device=device).reshape(3, 4)
    obj = {"base": base, "t": base.t(), "half": ampc.ones(5, dtype=ampc.bfloat16, device=device)}
    data, back = _roundtrip(obj)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        pkl = zf.read("archive/data.pkl")
        assert sorted(n for n in zf.namelist() if "/data/" in n) == ["archive/data/0", "archive/data/1"]
    location = "cuda:0" if device == "cuda" else "cpu"
    assert location.encode() in pkl
    for k, v in obj.items():
        assert str(back[k].device) == str(v.device) and tuple(back[k].stride()) == tuple(v.stride())
        np.testing.assert_array_equal(back[k].cpu().float().numpy(), v.cpu().float().numpy())
    back["base"][0, 1] = 50.0
    assert back["t"][1, 0].item() == 50.0  # one device storage for both views
    cpu = ampc.load(io.BytesIO(data), map_location="cpu")
    assert all(str(v.device) == "cpu" for v in cpu.values())
    assert cpu["t"].tolist() == base.t().cpu().tolist()
    moved = ampc.load(io.BytesIO(data), map_location=lambda storage, loc: storage.to(device))
    assert str(moved["t"].device) == str(base.device)


def test_share_memory_on_device_is_a_no_op(device):
    t = ampc.ones(3, device=device)
    assert t.share_memory_() is t
    assert t.is_shared()  # CPU: moved to shared memory; CUDA: torch calls device memory shared
    assert t.tolist() == [1.0, 1.0, 1.0]


def test_sending_a_cuda_tensor_to_another_process_is_refused(cuda):
    t = ampc.ones(3, device=cuda)
    if cuda == "cpu":  # AMPC_TEST_CUDA_AS_CPU: the CPU tensor is shared instead
        assert mp.reductions.reduce_tensor(t)[0] is mp.reductions.rebuild_tensor and t.is_shared()
        return
    with pytest.raises(RuntimeError, match="sending a cuda tensor to another process is not supported"):
        mp.reductions.reduce_tensor(t)
