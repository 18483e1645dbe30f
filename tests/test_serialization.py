"""ampc.save / ampc.load: round trips of every dtype and nested structure, placement
(map_location), resuming training bit-identically, and refusal of truncated, corrupted and
pickle files (docs/checkpoint-format.md)."""
import collections
import io
import json
import os
import pickle
import struct
import zlib

import numpy as np
import pytest

import ampc
import ampc.nn as nn
import ampc.optim as optim
from ampc.models import MLP
from ampc.serialization import MAGIC

rng = np.random.default_rng(0)
DTYPES = [ampc.float32, ampc.float16, ampc.bfloat16, ampc.float64, ampc.int64, ampc.int32, ampc.uint8, ampc.bool]


def _random(shape, dtype):
    x = ampc.from_numpy(np.asarray(rng.standard_normal(shape) * 100, dtype=np.float32))
    if dtype == ampc.bool:
        return x > 0
    if dtype == ampc.uint8:
        return x.abs().to(ampc.uint8)
    return x.to(dtype)


def _roundtrip(obj, **load_kwargs):
    buf = io.BytesIO()
    ampc.save(obj, buf)
    buf.seek(0)
    return ampc.load(buf, **load_kwargs)


def _same(a, b):
    assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape) and str(a.device) == str(b.device)
    np.testing.assert_array_equal(a.cpu().float().numpy() if a.dtype == ampc.bfloat16 else a.cpu().numpy(),
                                  b.cpu().float().numpy() if b.dtype == ampc.bfloat16 else b.cpu().numpy())


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(), (0,), (5,), (3, 4), (2, 0, 3), (2, 3, 4, 5)])
def test_every_dtype_and_shape_round_trips_bit_exactly(dtype, shape):
    t = _random(shape, dtype)
    back = _roundtrip(t)
    _same(t, back)
    if dtype in (ampc.float16, ampc.bfloat16, ampc.float32):
        # bit patterns, not just values: compare the raw bytes
        assert t.numpy().tobytes() == back.numpy().tobytes()


def test_non_contiguous_and_special_values():
    base = _random((4, 6), ampc.float32)
    t = base.t()[::2]
    _same(t.contiguous(), _roundtrip(t))
    special = ampc.tensor([float("inf"), float("-inf"), float("nan"), -0.0, 1e-40])
    for dt in (ampc.float32, ampc.float16, ampc.bfloat16, ampc.float64):
        back = _roundtrip(special.to(dt))
        assert back.to(dt).numpy().tobytes() == special.to(dt).numpy().tobytes()


def test_nested_structures_keep_types_and_keys():
    w = _random((3,), ampc.float32)
    obj = {
        "list": [1, 2.5, True, None, "text", b"\x00\xff", (1, (2, 3)), [], {}],
        "od": collections.OrderedDict([("b", 1), ("a", w)]),
        0: {"int key": -(2 ** 70), 1.5: "float key", (1, 2): "tuple key", None: "none key"},
        "floats": [float("inf"), float("-inf"), float("nan"), -0.0, 1e300],
        "meta": [ampc.float16, ampc.device("cpu"), np.int64(7), np.float32(0.5)],
        "shared": [w, w],
    }
    back = _roundtrip(obj)
    assert list(back) == ["list", "od", 0, "floats", "meta", "shared"]
    assert back["list"][:6] == [1, 2.5, True, None, "text", b"\x00\xff"]
    assert back["list"][6] == (1, (2, 3)) and isinstance(back["list"][6], tuple)
    assert type(back["list"][1]) is float and type(back["list"][2]) is bool
    assert isinstance(back["od"], collections.OrderedDict) and list(back["od"]) == ["b", "a"]
    assert back[0] == {"int key": -(2 ** 70), 1.5: "float key", (1, 2): "tuple key", None: "none key"}
    f = back["floats"]
    assert f[0] == float("inf") and f[1] == float("-inf") and f[2] != f[2] and str(f[3]) == "-0.0"
    assert back["meta"] == [ampc.float16, ampc.device("cpu"), 7, 0.5]
    assert back["shared"][0] is back["shared"][1]  # one tensor object saved twice stays one


def test_parameters_and_requires_grad_survive():
    p = nn.Parameter(_random((2, 2), ampc.float32))
    r = _random((2,), ampc.float32).requires_grad_(True)
    back = _roundtrip({"p": p, "r": r, "plain": _random((2,), ampc.float32)})
    assert isinstance(back["p"], nn.Parameter) and back["p"].requires_grad
    assert back["r"].requires_grad and not isinstance(back["r"], nn.Parameter)
    assert not back["plain"].requires_grad


def test_unsupported_objects_raise_with_their_path():
    with pytest.raises(TypeError, match=r"cannot save an object of type object at obj\['a'\]\[1\]"):
        ampc.save({"a": [1, object()]}, io.BytesIO())
    with pytest.raises(TypeError, match="set"):
        ampc.save({1, 2}, io.BytesIO())


def test_paths_and_atomic_write(tmp_path):
    path = tmp_path / "ckpt.ampc"
    ampc.save({"x": ampc.arange(4)}, path)
    assert ampc.load(str(path))["x"].tolist() == [0, 1, 2, 3]
    with pytest.raises(TypeError):
        ampc.save({"bad": object()}, path)  # failed save leaves the old file intact, no temp behind
    assert ampc.load(path)["x"].tolist() == [0, 1, 2, 3]
    assert os.listdir(tmp_path) == ["ckpt.ampc"]
    with open(path, "rb") as f:
        assert f.read(8) == MAGIC


def test_map_location_forms():
    obj = {"a": _random((3,), ampc.float32)}
    assert str(_roundtrip(obj, map_location="cpu")["a"].device) == "cpu"
    assert str(_roundtrip(obj, map_location=ampc.device("cpu"))["a"].device) == "cpu"
    assert str(_roundtrip(obj, map_location={"cuda:0": "cpu"})["a"].device) == "cpu"
    seen = []
    back = _roundtrip(obj, map_location=lambda t, loc: seen.append(loc) or t * 2)
    assert seen == ["cpu"]
    np.testing.assert_array_equal(back["a"].numpy(), obj["a"].numpy() * 2)
    if not ampc.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA device but ampc.cuda.is_available"):
            _roundtrip(obj, map_location="cuda")


def _saved_bytes(obj):
    buf = io.BytesIO()
    ampc.save(obj, buf)
    return buf.getvalue()


def _load_bytes(data):
    return ampc.load(io.BytesIO(data))


def test_truncated_files_raise_at_every_length():
    data = _saved_bytes({"w": _random((16,), ampc.float32), "b": _random((3,), ampc.int64)})
    for n in list(range(0, 40)) + [len(data) // 2, len(data) - 1]:
        with pytest.raises(ValueError, match="ampc.load: .*(truncated|not an ampc checkpoint)"):
            _load_bytes(data[:n])


def test_corruption_is_detected_everywhere():
    data = bytearray(_saved_bytes({"w": _random((16,), ampc.float32)}))
    header_len = struct.unpack_from("<Q", data, 16)[0]
    for pos, what in [(30, "header checksum"), (len(data) - 5, r"checksum mismatch in tensor #0 \(obj\['w'\]\)")]:
        bad = bytearray(data)
        bad[pos] ^= 0x10
        with pytest.raises(ValueError, match=what):
            _load_bytes(bytes(bad))
    bad = bytearray(data)
    bad[8] = 9  # version
    with pytest.raises(ValueError, match="format version 9 is not supported"):
        _load_bytes(bytes(bad))
    assert header_len > 0


def _forge(header_obj, data_bytes=b""):
    """A file with a valid preamble and CRC around an arbitrary header: what an attacker can write."""
    header = json.dumps(header_obj).encode()
    head = struct.pack("<8sIIQ", MAGIC, 1, zlib.crc32(header), len(header)) + header
    return head + b"\0" * (-len(head) % 64) + data_bytes


def test_forged_headers_are_rejected():
    with pytest.raises(ValueError, match="unknown node tag '\\$pickle'"):
        _load_bytes(_forge({"root": {"$pickle": "gASVAAAAAAAAAAB9lC4="}, "tensors": [], "data_bytes": 0}))
    with pytest.raises(ValueError, match="refers to tensor #3"):
        _load_bytes(_forge({"root": {"$tensor": 3}, "tensors": [], "data_bytes": 0}))
    entry = {"dtype": "float32", "shape": [4], "offset": 0, "nbytes": 16, "crc32": 0}
    with pytest.raises(ValueError, match="outside the data section"):
        _load_bytes(_forge({"root": {"$tensor": 0}, "tensors": [entry], "data_bytes": 8}, b"\0" * 8))
    with pytest.raises(ValueError, match="does not match its 12 bytes"):
        _load_bytes(_forge({"root": {"$tensor": 0}, "tensors": [dict(entry, nbytes=12)], "data_bytes": 16}, b"\0" * 16))
    with pytest.raises(ValueError, match="unknown dtype 'object'"):
        _load_bytes(_forge({"root": {"$tensor": 0}, "tensors": [dict(entry, dtype="object")], "data_bytes": 16}, b"\0" * 16))
    with pytest.raises(ValueError, match="lacks root"):
        _load_bytes(_forge([1, 2]))
    with pytest.raises(ValueError, match="malformed"):
        _load_bytes(_forge({"root": None, "tensors": 5, "data_bytes": 0}))
    with pytest.raises(ValueError, match="does not match its 0 bytes"):  # 2**62 * 4 elements must not wrap to 0
        _load_bytes(_forge({"root": {"$tensor": 0}, "tensors": [dict(entry, shape=[2 ** 62, 4], nbytes=0)],
                            "data_bytes": 16}, b"\0" * 16))
    deep = "[" * 100000 + "]" * 100000
    header = deep.encode()
    head = struct.pack("<8sIIQ", MAGIC, 1, zlib.crc32(header), len(header)) + header
    with pytest.raises(ValueError, match="not valid JSON|nests too deeply"):
        _load_bytes(head)


def test_forged_bool_bytes_load_as_true_or_false():
    """A bool stored as a byte other than 0/1 loads normalised: equal to True, and ~ gives False."""
    raw = bytes([0, 1, 2, 255])
    entry = {"dtype": "bool", "shape": [4], "offset": 0, "nbytes": 4, "crc32": zlib.crc32(raw)}
    t = _load_bytes(_forge({"root": {"$tensor": 0}, "tensors": [entry], "data_bytes": 4}, raw))
    assert t.tolist() == [False, True, True, True]
    assert (t == ampc.tensor([False, True, True, True])).all().item()
    assert (~t).tolist() == [True, False, False, False]
    assert t.numpy().view(np.uint8).tolist() == [0, 1, 1, 1]  # the stored bytes themselves


class _Boom:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_pickle_and_torch_files_are_refused_without_running_code():
    for proto in (0, 2, 4, 5):
        with pytest.raises(ValueError, match="holds pickle data"):
            _load_bytes(pickle.dumps(_Boom(), protocol=proto))
    with pytest.raises(ValueError, match="zip archive"):
        _load_bytes(b"PK\x03\x04" + b"\0" * 100)
    import torch  # the test oracle: a real torch.save checkpoint is refused, not unpickled

    buf = io.BytesIO()
    torch.save({"w": torch.ones(2)}, buf)
    with pytest.raises(ValueError, match="torch.save checkpoint"):
        _load_bytes(buf.getvalue())
    with pytest.raises(ValueError, match="not an ampc checkpoint"):
        _load_bytes(b"#!/bin/sh\necho hello world\n")


def _batches(n):
    g = np.random.default_rng(1)
    return [(ampc.from_numpy(g.standard_normal((8, 6)).astype(np.float32)),
             ampc.from_numpy(g.integers(0, 4, 8).astype(np.int64))) for _ in range(n)]


def _setup():
    ampc.manual_seed(0)
    model = MLP(6, [16], 4, dropout=0.1)  # dropout: the RNG state must be part of the checkpoint
    opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-3)
    sched = optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    scaler = ampc.amp.GradScaler("cpu", init_scale=2.0 ** 8, growth_interval=2)
    return model, opt, sched, scaler


def _train(parts, batches):
    model, opt, sched, scaler = parts
    crit = nn.CrossEntropyLoss()
    for x, y in batches:
        opt.zero_grad()
        with ampc.autocast("cpu", dtype=ampc.bfloat16):
            loss = crit(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        sched.step()


def test_resume_is_bit_identical(tmp_path):
    batches = _batches(8)
    straight = _setup()
    _train(straight, batches)

    first = _setup()
    _train(first, batches[:4])
    model, opt, sched, scaler = first
    ampc.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
               "scaler": scaler.state_dict(), "rng": ampc.get_rng_state(), "epoch": 4}, tmp_path / "c.ampc")

    ck = ampc.load(tmp_path / "c.ampc")
    resumed = _setup()
    resumed[0].load_state_dict(ck["model"])
    resumed[1].load_state_dict(ck["optimizer"])
    resumed[2].load_state_dict(ck["scheduler"])
    resumed[3].load_state_dict(ck["scaler"])
    ampc.set_rng_state(ck["rng"])
    assert ck["epoch"] == 4
    _train(resumed, batches[4:])

    for (name, a), (_, b) in zip(straight[0].state_dict().items(), resumed[0].state_dict().items()):
        assert a.numpy().tobytes() == b.numpy().tobytes(), name
    assert straight[3].get_scale() == resumed[3].get_scale()
    assert straight[2].get_last_lr() == resumed[2].get_last_lr()
    sa, sb = straight[1].state_dict(), resumed[1].state_dict()
    assert sa["param_groups"] == sb["param_groups"]
    for k in sa["state"]:
        for field, v in sa["state"][k].items():
            w = sb["state"][k][field]
            assert (v.numpy().tobytes() == w.numpy().tobytes()) if isinstance(v, ampc.Tensor) else v == w
