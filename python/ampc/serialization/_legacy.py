"""Reader of ampc's first checkpoint format (AMPCCKPT + JSON header + raw bytes), which ampc.save
wrote before it wrote torch's zip format; kept so those files still load (the format is in
docs/checkpoint-format.md, "Version 1"). Loading parses JSON and copies bytes, never code; every
length, offset and CRC-32 is checked, so a truncated or corrupted file raises ValueError naming
what is wrong.
"""
import base64
import collections
import json
import math
import struct
import sys
import zlib

import numpy as np

from .. import _C
from ._load import placement_target

MAGIC = b"AMPCCKPT"
VERSION = 1
ALIGN = 64  # tensor data started on 64-byte boundaries
_PREAMBLE = struct.Struct("<8sIIQ")  # magic, version, header CRC-32, header length

# dtype name -> (numpy dtype string, item size); bfloat16's numpy dtype comes from ml_dtypes.
_DTYPES = {
    "float32": ("<f4", 4), "float16": ("<f2", 2), "bfloat16": (None, 2), "float64": ("<f8", 8),
    "int64": ("<i8", 8), "int32": ("<i4", 4), "uint8": ("|u1", 1), "bool": ("|b1", 1),
}


def _np_dtype(name):
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(_DTYPES[name][0])


# ---------------------------------------------------------------- load


def _corrupt(what):
    return ValueError(f"ampc.load: {what}")


def _check_magic(data):
    head = bytes(data[:8])
    if len(data) < _PREAMBLE.size:
        raise _corrupt(f"file is truncated: {len(data)} bytes, shorter than the {_PREAMBLE.size}-byte preamble")
    if head != MAGIC:
        raise _corrupt(f"not an ampc checkpoint (magic {head!r}, expected {MAGIC!r})")


def _parse_header(data):
    _check_magic(data)
    magic, version, header_crc, header_len = _PREAMBLE.unpack_from(data, 0)
    if version != VERSION:
        raise _corrupt(f"checkpoint format version {version} is not supported (this ampc reads version {VERSION})")
    end = _PREAMBLE.size + header_len
    if end > len(data):
        raise _corrupt(f"file is truncated: the header needs {end} bytes, the file has {len(data)}")
    raw = bytes(data[_PREAMBLE.size:end])
    if zlib.crc32(raw) != header_crc:
        raise _corrupt("header checksum mismatch: the file is corrupted")
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise _corrupt(f"header is not valid JSON ({type(e).__name__}): the file is corrupted") from None
    if not isinstance(header, dict) or not {"root", "tensors", "data_bytes"} <= header.keys():
        raise _corrupt("header lacks root/tensors/data_bytes: the file is corrupted")
    if not isinstance(header["tensors"], list) or not isinstance(header["data_bytes"], int) or header["data_bytes"] < 0:
        raise _corrupt("header's tensors/data_bytes are malformed: the file is corrupted")
    data_start = -(-end // ALIGN) * ALIGN
    need = data_start + int(header["data_bytes"])
    if len(data) < need:
        raise _corrupt(f"file is truncated: {len(data)} bytes, the header describes {need}")
    return header, data_start


class _Reader:
    def __init__(self, data, header, data_start, map_location):
        self.data = data
        self.entries = header["tensors"]
        self.data_start = data_start
        self.data_bytes = int(header["data_bytes"])
        self.map_location = map_location
        self.loaded = {}

    def tensor(self, index, path):
        if not isinstance(index, int) or not 0 <= index < len(self.entries):
            raise _corrupt(f"{path} refers to tensor #{index}, which the header does not describe")
        if index in self.loaded:
            return self.loaded[index]
        e = self.entries[index]
        try:
            name, shape, offset, nbytes = e["dtype"], [int(s) for s in e["shape"]], int(e["offset"]), int(e["nbytes"])
        except (KeyError, TypeError, ValueError):
            raise _corrupt(f"tensor #{index} ({path}) has a malformed description") from None
        if name not in _DTYPES:
            raise _corrupt(f"tensor #{index} ({path}) has unknown dtype {name!r}")
        count = math.prod(shape)  # Python ints: a forged huge shape cannot wrap around
        if any(s < 0 for s in shape) or count * _DTYPES[name][1] != nbytes:
            raise _corrupt(f"tensor #{index} ({path}): shape {shape} of {name} does not match its {nbytes} bytes")
        if offset < 0 or offset + nbytes > self.data_bytes:
            raise _corrupt(f"tensor #{index} ({path}) lies outside the data section")
        start = self.data_start + offset
        raw = self.data[start:start + nbytes]
        if zlib.crc32(raw) != e.get("crc32"):
            raise _corrupt(f"checksum mismatch in tensor #{index} ({path}): the file is corrupted")
        arr = np.frombuffer(raw, dtype=_np_dtype(name), count=count).reshape(shape).copy()
        if sys.byteorder == "big":
            arr = arr.byteswap()
        if name == "bool":  # a forged byte other than 0/1 would be a bool that is neither; torch reads it as True
            arr = np.asarray(arr.view(np.uint8) != 0)
        t = self._place(_C.from_numpy(arr), str(e.get("device", "cpu")))
        if e.get("parameter"):
            from ..nn.parameter import Parameter

            t = Parameter(t, requires_grad=bool(e.get("requires_grad")))
        elif e.get("requires_grad"):
            t.requires_grad_(True)
        self.loaded[index] = t
        return t

    def _place(self, t, location):
        ml = self.map_location
        if callable(ml) and not isinstance(ml, (str, _C.device, dict)):
            moved = ml(t, location)
            if moved is not None:
                return moved
            ml = None
        target = placement_target(location, ml)
        return t if target == "cpu" else t.to(target)

    def node(self, n, path):
        if n is None or isinstance(n, (bool, int, float, str)):
            return n
        if isinstance(n, list):
            return [self.node(v, f"{path}[{i}]") for i, v in enumerate(n)]
        if not isinstance(n, dict) or len(n) != 1:
            raise _corrupt(f"unexpected node at {path}: the file is corrupted")
        (tag, v), = n.items()
        if tag == "$tensor":
            return self.tensor(v, path)
        if tag in ("$dict", "$odict"):
            out = collections.OrderedDict() if tag == "$odict" else {}
            for pair in v:
                if not isinstance(pair, list) or len(pair) != 2:
                    raise _corrupt(f"malformed dict entry at {path}: the file is corrupted")
                key = self.node(pair[0], f"{path} key")
                try:
                    out[key] = self.node(pair[1], f"{path}[{key!r}]")
                except TypeError:
                    raise _corrupt(f"unhashable key at {path}: the file is corrupted") from None
            return out
        if tag == "$tuple":
            return tuple(self.node(x, f"{path}[{i}]") for i, x in enumerate(v))
        if tag == "$float" and v in ("inf", "-inf", "nan"):
            return float(v)
        if tag == "$bytes":
            return base64.b64decode(v)
        if tag == "$dtype" and v in _DTYPES:
            return getattr(_C, v)
        if tag == "$device":
            return _C.device(v)
        raise _corrupt(f"unknown node tag {tag!r} at {path}: the file is corrupted or from a newer ampc")


def load_legacy(data, map_location):
    """The object a version-1 checkpoint holds; `data` is the whole file's bytes."""
    data = memoryview(data)
    header, data_start = _parse_header(data)
    reader = _Reader(data, header, data_start, map_location)
    try:
        return reader.node(header["root"], "obj")
    except RecursionError:
        raise _corrupt("the object tree nests too deeply") from None
