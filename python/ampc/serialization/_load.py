"""ampc.load's reader of torch's zip checkpoints (what torch.save and ampc.save write).

data.pkl is unpickled by one of two unpicklers:
- weights-only (the default, as in torch >= 2.6): find_class answers only the allowlist of
  _names.allowed_globals (tensor rebuild functions, storages, dtypes, Size, device, OrderedDict,
  a few builtins) and the user's safe globals (_safe.py); any other global raises torch's
  "Weights only load failed ... Unsupported global" error before anything is called. Every
  REDUCE/NEWOBJ of the C unpickler only reaches callables that find_class returned, and those
  are fresh wrappers (_fresh), so a forged BUILD cannot patch ampc's own functions or classes.
- full (weights_only=False, an explicit opt-in: it runs whatever code the file names): torch
  names map to ampc's objects, torch.X modules to ampc.X, everything else imports as pickle does.
Storages come through persistent_load: read once per key from data/<key>, checked against the
numel the pickle claims, placed by map_location; tensors are views of them (shared storage kept).
"""
import _compat_pickle
import functools
import importlib
import pickle
import sys
import zipfile

import numpy as np

from .. import _C
from . import _safe
from ._names import LoadedStorage, StorageType, allowed_globals, ampc_dtype, numpy_dtype, torch_to_ampc_name

_ALLOWED = None
_IMMUTABLE_TYPE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE: C types whose attributes cannot be set


def _allowed():
    global _ALLOWED
    if _ALLOWED is None:
        _ALLOWED = allowed_globals()
    return _ALLOWED


def _fresh(obj):
    """What find_class hands a weights-only unpickler for an allowlisted object: Python functions
    and classes wrapped in a new functools.partial, storage types copied, so a forged BUILD
    (setattr with a slot state) lands on a throwaway object, never on ampc's own globals; C types
    and builtins refuse attribute writes themselves."""
    if isinstance(obj, StorageType):
        return StorageType(obj.name)
    if isinstance(obj, type):
        return obj if obj.__flags__ & _IMMUTABLE_TYPE else functools.partial(obj)
    if getattr(obj, "__code__", None) is not None:  # a Python function
        return functools.partial(obj)
    return obj


class WeightsOnlyRefusal(pickle.UnpicklingError):
    pass


def weights_only_message(detail):
    return ("Weights only load failed. This file can still be loaded, to do so you have two options, do those "
            "steps only if you trust the source of the checkpoint.\n"
            "\t(1) Re-running `ampc.load` with `weights_only` set to `False` will likely succeed, but it can "
            "result in arbitrary code execution. Do it only if you got the file from a trusted source.\n"
            "\t(2) Alternatively, to load with `weights_only=True` please check the recommended steps in the "
            "following error message.\n"
            f"\tWeightsUnpickler error: {detail}")


def _canonical(module, name):
    """Python 2 names that protocol-2 pickles use (__builtin__.set) -> Python 3's, as torch does."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


def _display(full):
    return full[len("builtins."):] if full.startswith("builtins.") else full


class _Placer:
    """map_location applied to each storage, as torch does: None (where it was saved), a device
    or string, a dict {saved location: new location}, or fn(storage, location) -> storage (None:
    the default placement). ampc's storage here is a 1-D tensor over the storage's elements."""

    def __init__(self, map_location):
        self.map_location = map_location

    def __call__(self, storage, location):
        ml = self.map_location
        if callable(ml) and not isinstance(ml, (str, _C.device, dict)):
            moved = ml(storage, location)
            if moved is not None:
                if not isinstance(moved, _C.Tensor):
                    raise TypeError(f"ampc.load: map_location returned {type(moved).__name__}, expected the "
                                    "storage (a tensor) it was given, or one moved with .to()/.cuda()/.cpu()")
                return moved
            ml = None
        target = placement_target(location, ml)
        return storage if target == "cpu" else storage.to(target)


def placement_target(location, map_location):
    """The device string a saved `location` goes to under a non-callable map_location (None, a
    device or string, or a dict {saved: new}); refuses CUDA when it is not available, as torch.
    Shared by both checkpoint formats."""
    if isinstance(map_location, dict):
        map_location = map_location.get(location, location)
    target = location if map_location is None else str(map_location)
    if target.startswith("cuda"):
        from .. import cuda

        if not cuda.is_available():
            raise RuntimeError("Attempting to deserialize object on a CUDA device but ampc.cuda.is_available() "
                               "is False. If you are running on a CPU-only machine, please use ampc.load with "
                               "map_location=ampc.device('cpu') to map your storages to the CPU.")
    return target


class _Archive:
    def __init__(self, zf, map_location):
        self.zf = zf
        names = zf.namelist()
        pkl = [n for n in names if n.endswith("data.pkl") and n.count("/") == 1]
        if not pkl:
            raise RuntimeError("ampc.load: the zip archive has no <archive>/data.pkl record: not a torch/ampc "
                               "checkpoint")
        self.prefix = pkl[0][:-len("data.pkl")]
        self.names = set(names)
        order = self.prefix + "byteorder"
        self.byteorder = zf.read(order).decode("ascii", "replace").strip() if order in self.names else "little"
        if self.byteorder not in ("little", "big"):
            raise RuntimeError(f"ampc.load: unknown byteorder {self.byteorder!r} in the checkpoint")
        version = self.prefix + "version"
        if version in self.names:
            v = zf.read(version).decode("ascii", "replace").strip()
            if not v.isdigit() or int(v) > 3:
                raise RuntimeError(f"ampc.load: checkpoint format version {v!r} is newer than this reader (<= 3)")
        self.place = _Placer(map_location)
        self.storages = {}

    def storage(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"unsupported persistent id {pid!r:.200}")
        _, stype, key, location, numel = pid
        if not isinstance(stype, StorageType) or not isinstance(key, str) or not isinstance(location, str) \
                or not isinstance(numel, int) or isinstance(numel, bool) or numel < 0:
            raise pickle.UnpicklingError(f"malformed storage persistent id {pid!r:.200}")
        if key in self.storages:
            return self.storages[key]
        dt = ampc_dtype(stype.dtype_name, "a storage")
        npdt = numpy_dtype(stype.dtype_name)
        record = f"{self.prefix}data/{key}"
        if record not in self.names:
            raise RuntimeError(f"ampc.load: the checkpoint lacks the record {record} of storage {key!r}")
        info = self.zf.getinfo(record)
        if info.file_size != numel * npdt.itemsize:
            raise RuntimeError(f"ampc.load: storage {key!r} has {info.file_size} bytes, but the pickle says "
                               f"{numel} elements of {stype.dtype_name} ({numel * npdt.itemsize} bytes): "
                               "the checkpoint is corrupted")
        arr = np.empty(numel, dtype=npdt)
        with self.zf.open(info) as r:
            buf, got = memoryview(arr.view(np.uint8)), 0
            while got < info.file_size:
                n = r.readinto(buf[got:])
                if not n:
                    raise RuntimeError(f"ampc.load: storage {key!r} is truncated")
                got += n
        if (self.byteorder == "big") != (sys.byteorder == "big"):
            arr = arr.byteswap()
        if stype.dtype_name == "bool":  # a byte other than 0/1 would be a bool that is neither
            arr = arr.view(np.uint8) != 0
        base = _C.from_numpy(arr)
        if base.dtype != dt:
            base = base.to(dt)
        self.storages[key] = LoadedStorage(self.place(base, location))
        return self.storages[key]


class _WeightsOnlyUnpickler(pickle.Unpickler):
    def __init__(self, file, archive):
        super().__init__(file)
        self.archive = archive
        self.user = _safe.user_allowed()

    def persistent_load(self, pid):
        return self.archive.storage(pid)

    def find_class(self, module, name):
        module, name = _canonical(module, name)
        full = f"{module}.{name}"
        if full in _allowed():
            return _fresh(_allowed()[full])
        if full in self.user:
            return self.user[full]
        shown = _display(full)
        raise WeightsOnlyRefusal(
            f"Unsupported global: GLOBAL {shown} was not an allowed global by default. Please use "
            f"`ampc.serialization.add_safe_globals([{shown}])` or the `ampc.serialization.safe_globals([{shown}])` "
            "context manager to allowlist this global if you trust this class/function.")


class _FullUnpickler(pickle.Unpickler):
    def __init__(self, file, archive, **kwargs):
        super().__init__(file, **kwargs)
        self.archive = archive

    def persistent_load(self, pid):
        return self.archive.storage(pid)

    def find_class(self, module, name):
        module, name = _canonical(module, name)
        full = f"{module}.{name}"
        if full in _allowed():
            return _allowed()[full]
        ampc_module = torch_to_ampc_name(module)
        if ampc_module is not None:
            try:
                obj = importlib.import_module(ampc_module)
                for part in name.split("."):
                    obj = getattr(obj, part)
                return obj
            except (ImportError, AttributeError):
                raise pickle.UnpicklingError(f"ampc.load: the checkpoint refers to {full}, which ampc does not "
                                             f"have ({ampc_module}.{name} does not exist)") from None
        return super().find_class(module, name)


def load_zip(f, map_location, weights_only, pickle_load_args):
    try:
        zf = zipfile.ZipFile(f)
    except zipfile.BadZipFile as e:
        raise RuntimeError(f"ampc.load: failed reading zip archive: {e} (the file is truncated or corrupted)") \
            from None
    with zf:
        archive = _Archive(zf, map_location)
        try:
            with zf.open(archive.prefix + "data.pkl") as pkl:
                if weights_only:
                    try:
                        return _WeightsOnlyUnpickler(pkl, archive).load()
                    except WeightsOnlyRefusal as e:
                        raise pickle.UnpicklingError(weights_only_message(e)) from None
                    except (pickle.UnpicklingError, EOFError) as e:
                        raise pickle.UnpicklingError(weights_only_message(f"{type(e).__name__}: {e}")) from None
                return _FullUnpickler(pkl, archive, **pickle_load_args).load()
        except zipfile.BadZipFile as e:
            raise RuntimeError(f"ampc.load: failed reading zip archive: {e} (the file is corrupted)") from None
