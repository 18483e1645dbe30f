"""ampc.load still reads ampc's first checkpoint format (AMPCCKPT + JSON header + raw bytes,
docs/checkpoint-format.md "Version 1"): valid files load, and forged, truncated and corrupted
ones raise ValueError naming what is wrong."""
import io
import json
import struct
import zlib

import numpy as np
import pytest

import ampc
import ampc.nn as nn
from ampc.serialization._legacy import MAGIC



def _load_bytes(data):
    return ampc.load(io.BytesIO(data))


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


def test_legacy_file_loads_with_its_tensors():
    raw = np.arange(4, dtype=np.float32).tobytes()
    entry = {"dtype": "float32", "shape": [2, 2], "offset": 0, "nbytes": 16, "crc32": zlib.crc32(raw),
             "device": "cpu", "requires_grad": False, "parameter": True}
    back = _load_bytes(_forge({"root": {"$dict": [["w", {"$tensor": 0}], ["n", 3]]}, "tensors": [entry],
                               "data_bytes": 16}, raw))
    assert back["n"] == 3 and isinstance(back["w"], nn.Parameter) and back["w"].tolist() == [[0, 1], [2, 3]]
    with pytest.raises(ValueError, match="truncated"):
        _load_bytes(_forge({"root": {"$tensor": 0}, "tensors": [entry], "data_bytes": 16}, raw)[:-3])
    bad = bytearray(_forge({"root": {"$tensor": 0}, "tensors": [entry], "data_bytes": 16}, raw))
    bad[-2] ^= 1
    with pytest.raises(ValueError, match=r"checksum mismatch in tensor #0 \(obj\)"):
        _load_bytes(bytes(bad))
    with pytest.raises(ValueError, match="truncated"):
        _load_bytes(MAGIC[:5])
