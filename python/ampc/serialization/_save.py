"""ampc.save's writer: torch 2.x's zip checkpoint, record for record.

    archive/data.pkl                 the object, pickled (protocol 2); each storage a persistent id
                                     ('storage', torch.<X>Storage, key, location, numel)
    archive/.format_version          "1"
    archive/.storage_alignment       "64"
    archive/byteorder                "little"
    archive/data/<key>               each storage's raw bytes, once, 64-byte aligned in the file
    archive/version                  "3"
    archive/.data/serialization_id   an id of this save

Tensors pickle as torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad,
OrderedDict()), Parameters as torch._utils._rebuild_parameter(...), dtypes as torch.<name>, Size
and device as torch.Size/torch.device: the names torch reads, so torch.load takes ampc's files.
The pickler is Python's pure-Python one, whose dispatch table can write those torch GLOBALs for
ampc's objects (the C pickler looks every global up and would find ampc's names).
"""
import collections
import os
import pickle
import struct
import sys
import zipfile

from .. import _C
from ._names import STORAGE_NAMES, TorchGlobal, dtype_name

ALIGN = 64
DEFAULT_PROTOCOL = 2


class _StorageRef:
    """Stands for one storage in the pickle; persistent_id turns it into torch's tuple."""

    __slots__ = ("key", "storage_name", "location", "numel")

    def __init__(self, key, storage_name, location, numel):
        self.key, self.storage_name, self.location, self.numel = key, storage_name, location, numel


class _Pickler(pickle._Pickler):
    dispatch = pickle._Pickler.dispatch.copy()

    def __init__(self, file, protocol):
        super().__init__(file, protocol)
        self.storages = {}  # storage key -> (_StorageRef, a tensor viewing the storage, kept alive)
        self.locations = {}  # one str object per location, so the pickle memoizes it as torch's does

    def _save_torch_global(self, obj):
        self.write(pickle.GLOBAL + obj.module.encode("utf-8") + b"\n" + obj.name.encode("utf-8") + b"\n")
        self.memoize(obj)

    def _save_dtype(self, obj):
        self.save(TorchGlobal("torch", dtype_name(obj)))

    dispatch[TorchGlobal] = _save_torch_global
    dispatch[_C.dtype] = _save_dtype

    def persistent_id(self, obj):
        if type(obj) is _StorageRef:
            return ("storage", TorchGlobal("torch", obj.storage_name), obj.key, obj.location, obj.numel)
        return None

    def _storage(self, t):
        key = _C._storage_key(t)
        if key not in self.storages:
            name = dtype_name(t.dtype)
            if name not in STORAGE_NAMES:
                raise TypeError(f"ampc.save: tensors of dtype {t.dtype} cannot be saved in torch's format")
            numel = _C._storage_nbytes(t) // t.element_size()
            location = self.locations.setdefault(str(t.device), str(t.device))
            ref = _StorageRef(str(len(self.storages)), STORAGE_NAMES[name], location, numel)
            self.storages[key] = (ref, t)
        return self.storages[key][0]

    def reducer_override(self, obj):
        if isinstance(obj, _C.Tensor):
            from ..nn.parameter import Parameter

            if isinstance(obj, Parameter):
                return (TorchGlobal("torch._utils", "_rebuild_parameter"),
                        (obj.detach(), obj.requires_grad, collections.OrderedDict()))
            return (TorchGlobal("torch._utils", "_rebuild_tensor_v2"),
                    (self._storage(obj), obj.storage_offset(), tuple(obj.shape), tuple(obj.stride()),
                     obj.requires_grad, collections.OrderedDict()))
        t = type(obj)
        if t is _C.Size:
            return (TorchGlobal("torch", "Size"), (tuple(obj),))
        if t is _C.device:
            return (TorchGlobal("torch", "device"), (str(obj),))
        return NotImplemented


def _aligned_info(zf, name, size):
    """A stored ZipInfo whose data starts on a multiple of ALIGN in the file (torch aligns
    storages this way so they can be mapped), padded with an extra field as torch does."""
    info = zipfile.ZipInfo(name)
    info.compress_type = zipfile.ZIP_STORED
    info.file_size = size
    start = zf.fp.tell() + 30 + len(name.encode("utf-8"))
    pad = -start % ALIGN
    if pad and pad < 4:
        pad += ALIGN
    if pad:
        info.extra = struct.pack("<HH", 0x4246, pad - 4) + b"Z" * (pad - 4)  # "FB": torch's padding id
    return info


def _write_record(zf, name, data):
    with zf.open(_aligned_info(zf, name, len(data)), "w") as w:
        w.write(data)


def _storage_bytes(t):
    whole = _C._storage_tensor(t).detach()
    if str(whole.device) != "cpu":
        whole = whole.cpu()
    arr = whole.numpy()
    if sys.byteorder == "big":
        arr = arr.byteswap()
    return arr.reshape(-1).view("uint8").data


def write(f, obj, protocol=DEFAULT_PROTOCOL, archive="archive"):
    import io

    pkl = io.BytesIO()
    pickler = _Pickler(pkl, protocol)
    pickler.dump(obj)
    with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        _write_record(zf, f"{archive}/data.pkl", pkl.getvalue())
        _write_record(zf, f"{archive}/.format_version", b"1")
        _write_record(zf, f"{archive}/.storage_alignment", str(ALIGN).encode())
        _write_record(zf, f"{archive}/byteorder", b"little")
        for ref, t in pickler.storages.values():
            _write_record(zf, f"{archive}/data/{ref.key}", _storage_bytes(t))
        _write_record(zf, f"{archive}/version", b"3\n")
        _write_record(zf, f"{archive}/.data/serialization_id",
                      str(int.from_bytes(os.urandom(16), "little")).zfill(40).encode())
