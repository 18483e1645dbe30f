"""ampc.save / ampc.load: checkpoints without pickle.

A checkpoint is one file: a fixed preamble, a JSON header that describes the saved object tree
and every tensor, then the tensors' raw little-endian bytes (format: docs/checkpoint-format.md).
Loading only parses JSON and copies bytes into new tensors, so a file can never run code, which
pickle (torch.save's format) cannot promise. Every length, offset and CRC-32 is checked, so a
truncated or corrupted file raises ValueError naming what is wrong instead of loading garbage.

Saved: None, bool, int, float (inf/nan too), str, bytes, list, tuple, dict, OrderedDict (any
savable, hashable keys: the int keys of an optimizer state_dict survive), ampc.dtype,
ampc.device and tensors of every dtype on any device (nn.Parameter stays a Parameter;
requires_grad is kept). A tensor object that appears twice is stored once and loaded as one
object. Views are saved as their own data (torch would keep the shared storage).
"""
import base64
import collections
import json
import math
import os
import struct
import sys
import zlib

import numpy as np

from . import _C

MAGIC = b"AMPCCKPT"
VERSION = 1
ALIGN = 64  # tensor data starts on 64-byte boundaries so a reader can map it for vector loads
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


def _dtype_name(dtype):
    return str(dtype).rsplit(".", 1)[-1]


def _is_parameter(t):
    from .nn.parameter import Parameter

    return isinstance(t, Parameter)


# ---------------------------------------------------------------- save


class _Writer:
    """Turns the object tree into JSON-able nodes and collects the tensors' bytes."""

    def __init__(self):
        self.entries = []  # header entries, in data order
        self.arrays = []  # the bytes of each entry, as a flat uint8 numpy array
        self.by_id = {}  # id(tensor) -> entry index, so a repeated tensor is stored once
        self.keep = []  # the tensors themselves, so ids stay unique while saving
        self.size = 0

    def tensor(self, t, path):
        key = id(t)
        if key in self.by_id:
            return {"$tensor": self.by_id[key]}
        name = _dtype_name(t.dtype)
        if name not in _DTYPES:
            raise TypeError(f"ampc.save: tensor at {path} has unsupported dtype {t.dtype}")
        arr = np.ascontiguousarray(t.detach().cpu().contiguous().numpy())
        if sys.byteorder == "big":
            arr = arr.byteswap()
        raw = arr.reshape(-1).view(np.uint8)
        self.size = -(-self.size // ALIGN) * ALIGN
        self.entries.append({
            "dtype": name, "shape": list(t.shape), "offset": self.size, "nbytes": int(raw.nbytes),
            "crc32": zlib.crc32(raw), "device": str(t.device), "requires_grad": bool(t.requires_grad),
            "parameter": _is_parameter(t),
        })
        self.arrays.append(raw)
        self.keep.append(t)
        self.size += raw.nbytes
        self.by_id[key] = len(self.entries) - 1
        return {"$tensor": len(self.entries) - 1}

    def node(self, obj, path):
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return int(obj)  # also numpy-free int subclasses (IntEnum) as plain ints
        if isinstance(obj, float):
            return float(obj) if obj == obj and abs(obj) != float("inf") else {"$float": repr(float(obj))}
        if isinstance(obj, _C.Tensor):
            return self.tensor(obj, path)
        if isinstance(obj, (np.integer, np.floating, np.bool_)):
            return self.node(obj.item(), path)
        if isinstance(obj, bytes):
            return {"$bytes": base64.b64encode(obj).decode("ascii")}
        if isinstance(obj, _C.dtype):
            return {"$dtype": _dtype_name(obj)}
        if isinstance(obj, _C.device):
            return {"$device": str(obj)}
        if isinstance(obj, list):
            return [self.node(v, f"{path}[{i}]") for i, v in enumerate(obj)]
        if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
            return {"$tuple": [self.node(v, f"{path}[{i}]") for i, v in enumerate(obj)]}
        if isinstance(obj, dict):
            tag = "$odict" if isinstance(obj, collections.OrderedDict) else "$dict"
            return {tag: [[self.node(k, f"{path} key {k!r}"), self.node(v, f"{path}[{k!r}]")]
                          for k, v in obj.items()]}
        raise TypeError(f"ampc.save: cannot save an object of type {type(obj).__qualname__} at {path}; "
                        "checkpoints hold None, bool, int, float, str, bytes, list, tuple, dict, "
                        "OrderedDict, ampc.dtype, ampc.device and tensors (no pickle, by design)")


def _write(f, obj):
    w = _Writer()
    root = w.node(obj, "obj")
    header = json.dumps({"root": root, "tensors": w.entries, "data_bytes": w.size},
                        separators=(",", ":"), allow_nan=False).encode("utf-8")
    f.write(_PREAMBLE.pack(MAGIC, VERSION, zlib.crc32(header), len(header)))
    f.write(header)
    head = _PREAMBLE.size + len(header)
    f.write(b"\0" * (-head % ALIGN))
    pos = 0
    for entry, raw in zip(w.entries, w.arrays):
        f.write(b"\0" * (entry["offset"] - pos))
        f.write(raw.data)
        pos = entry["offset"] + entry["nbytes"]


def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Saves `obj` to a path or a writable binary file. A path is written through a temporary
    file and renamed, so an interrupted save never leaves a half-written checkpoint behind.
    The pickle arguments are accepted for torch compatibility and ignored (no pickle is used)."""
    if isinstance(f, (str, bytes, os.PathLike)):
        path = os.fspath(f)
        tmp = f"{path}.tmp{os.getpid()}" if isinstance(path, str) else path + b".tmp"
        try:
            with open(tmp, "wb") as out:
                _write(out, obj)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
        return
    if not hasattr(f, "write"):
        raise TypeError(f"ampc.save: expected a path or a writable binary file, got {type(f).__name__}")
    _write(f, obj)


# ---------------------------------------------------------------- load


def _corrupt(what):
    return ValueError(f"ampc.load: {what}")


def _check_magic(data):
    head = bytes(data[:8])
    if len(data) < _PREAMBLE.size:
        if MAGIC.startswith(head) or head.startswith(MAGIC):
            raise _corrupt(f"file is truncated: {len(data)} bytes, shorter than the {_PREAMBLE.size}-byte preamble")
    if head[:4] == b"PK\x03\x04":
        raise _corrupt("this is a zip archive (a torch.save checkpoint?); ampc does not read pickle-based "
                       "checkpoints because unpickling can execute code. Convert it with torch: save "
                       "its tensors with safetensors or as numpy arrays, then ampc.save them")
    # protocol 2+ starts with PROTO (0x80); protocols 0/1 start with an opcode and end with STOP (".")
    if head[:1] == b"\x80" or (head[:1] in (b"(", b"c", b"]", b"}") and bytes(data[-1:]) == b"."):
        raise _corrupt("the file holds pickle data, which ampc refuses to load (unpickling can execute code)")
    if len(data) < _PREAMBLE.size or head != MAGIC:
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
            from .nn.parameter import Parameter

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
        if isinstance(ml, dict):
            ml = ml.get(location, location)
        target = location if ml is None else str(ml)
        if target.startswith("cuda"):
            from . import cuda

            if not cuda.is_available():
                raise RuntimeError("Attempting to deserialize object on a CUDA device but ampc.cuda.is_available() "
                                   "is False. If you are running on a CPU-only machine, please use ampc.load with "
                                   "map_location=ampc.device('cpu') to map your storages to the CPU.")
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


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None, **pickle_load_args):
    """Loads what ampc.save wrote, from a path or a readable binary file.

    map_location as in torch: None (each tensor back on the device it was saved from), a device
    or string ("cpu", "cuda:0"), a dict {saved location: new location}, or a callable
    fn(tensor_on_cpu, saved_location) returning the tensor to use (None: default placement).
    weights_only is accepted for torch compatibility; both values are safe, since loading never
    executes code. Raises ValueError for a truncated, corrupted or foreign file."""
    if isinstance(f, (str, bytes, os.PathLike)):
        with open(f, "rb") as fh:
            data = fh.read()
    elif hasattr(f, "read"):
        data = f.read()
        if not isinstance(data, (bytes, bytearray)):
            raise TypeError("ampc.load: the file must be opened in binary mode")
    else:
        raise TypeError(f"ampc.load: expected a path or a readable binary file, got {type(f).__name__}")
    data = memoryview(data)
    header, data_start = _parse_header(data)
    reader = _Reader(data, header, data_start, map_location)
    try:
        return reader.node(header["root"], "obj")
    except RecursionError:
        raise _corrupt("the object tree nests too deeply") from None


__all__ = ["save", "load", "MAGIC", "VERSION"]
