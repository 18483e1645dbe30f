"""ampc.save / ampc.load in torch 2.x's checkpoint format (torch.serialization).

ampc.save writes the zip archive torch.save writes (_save.py: data.pkl + one raw record per
storage), so torch.load reads ampc's checkpoints; ampc.load reads torch's (_load.py), and the
files of ampc's first JSON-based format (_legacy.py). Views saved together keep sharing one
storage; every dtype, 0-size and non-contiguous tensor round-trips bit for bit.

Loading is weights-only by default, as in torch >= 2.6: the unpickler resolves only tensors,
storages, dtypes, Size, device, containers, primitives and what add_safe_globals/safe_globals
allowed; anything else raises "Weights only load failed ... Unsupported global: GLOBAL x" and
runs nothing. weights_only=False is the explicit opt-in for whole modules and arbitrary
objects, and runs whatever code the file names, as pickle does. Format: docs/checkpoint-format.md.
"""
import os
import pickle

from ._legacy import MAGIC as _LEGACY_MAGIC
from ._legacy import load_legacy as _load_legacy
from ._load import load_zip as _load_zip
from ._safe import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals
from ._save import DEFAULT_PROTOCOL
from ._save import write as _write

_ZIP_MAGIC = b"PK\x03\x04"


def save(obj, f, pickle_module=None, pickle_protocol=DEFAULT_PROTOCOL, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Saves `obj` (any picklable object; tensors by storage) to a path or a writable binary file,
    in torch's zip format. A path is written through a temporary file and renamed, so an
    interrupted save never leaves a half-written checkpoint behind."""
    if pickle_module is not None and pickle_module is not pickle:
        raise ValueError("ampc.save: only the standard pickle module is supported (pickle_module=pickle)")
    if not _use_new_zipfile_serialization:
        raise ValueError("ampc.save: torch's legacy (pre-1.6, non-zip) format is not supported; "
                         "use _use_new_zipfile_serialization=True")
    if isinstance(f, (str, bytes, os.PathLike)):
        path = os.fspath(f)
        tmp = f"{path}.tmp{os.getpid()}" if isinstance(path, str) else path + b".tmp"
        try:
            with open(tmp, "wb") as out:
                _write(out, obj, pickle_protocol)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
        return
    if not hasattr(f, "write"):
        raise TypeError(f"ampc.save: expected a path or a writable binary file, got {type(f).__name__}")
    _write(f, obj, pickle_protocol)


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """Loads a checkpoint written by ampc.save or torch.save, from a path or a readable binary file.

    map_location as in torch: None (each storage back where it was saved), a device or string
    ("cpu", "cuda:0"), a dict {saved location: new location}, or fn(storage, location) returning
    the storage to use (ampc passes the storage as a 1-D tensor; None: default placement).
    weights_only (default True; False when a pickle_module is given, as in torch) restricts what
    the file may refer to (see the module docstring). mmap is accepted; data is read into memory."""
    if weights_only is None:
        weights_only = pickle_module is None
    elif weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    if pickle_module is not None and pickle_module is not pickle:
        raise ValueError("ampc.load: only the standard pickle module is supported (pickle_module=pickle)")
    if weights_only and pickle_load_args:
        raise RuntimeError(f"ampc.load: pickle arguments {sorted(pickle_load_args)} need weights_only=False")
    if isinstance(f, (str, bytes, os.PathLike)):
        with open(f, "rb") as fh:
            return _load_file(fh, map_location, weights_only, pickle_load_args)
    if not hasattr(f, "read"):
        raise TypeError(f"ampc.load: expected a path or a readable binary file, got {type(f).__name__}")
    return _load_file(f, map_location, weights_only, pickle_load_args)


def _load_file(fh, map_location, weights_only, pickle_load_args):
    start = fh.tell() if fh.seekable() else None
    head = fh.read(8)
    if not isinstance(head, bytes):
        raise TypeError("ampc.load: the file must be opened in binary mode")
    if head[:4] == _ZIP_MAGIC and start is not None:
        fh.seek(start)
        return _load_zip(fh, map_location, weights_only, pickle_load_args)
    rest = head + fh.read()
    if head[:4] == _ZIP_MAGIC:
        import io

        return _load_zip(io.BytesIO(rest), map_location, weights_only, pickle_load_args)
    if head == _LEGACY_MAGIC or (len(head) < 8 and _LEGACY_MAGIC.startswith(head) and head):
        return _load_legacy(rest, map_location)
    if head[:1] == b"\x80" or (head[:1] in (b"(", b"c", b"]", b"}") and rest[-1:] == b"."):
        raise RuntimeError("ampc.load: the file is a bare pickle stream, not a checkpoint: torch's legacy "
                           "(pre-1.6) format is not supported (nothing was unpickled)")
    raise RuntimeError(f"ampc.load: not a checkpoint (the file starts with {head!r}; torch.save and ampc.save "
                       "write a zip archive)")


def get_unsafe_globals_in_checkpoint(f):
    """The globals a checkpoint's data.pkl names that weights-only loading would refuse (torch's
    helper for deciding what to add_safe_globals); reads the pickle's opcodes, runs nothing."""
    import pickletools
    import zipfile

    from ._load import _allowed, _canonical

    with zipfile.ZipFile(f) as zf:
        pkl = next(n for n in zf.namelist() if n.endswith("data.pkl") and n.count("/") == 1)
        ops = list(pickletools.genops(zf.read(pkl)))
    found, strings = set(), []
    for op, arg, _ in ops:
        if op.name == "GLOBAL":
            found.add(".".join(_canonical(*arg.split(" ", 1))))
        elif op.name == "STACK_GLOBAL" and len(strings) >= 2:
            found.add(".".join(_canonical(strings[-2], strings[-1])))
        if isinstance(arg, str):
            strings.append(arg)
    user = set(_safe_user())
    return sorted(g for g in found if g not in _allowed() and g not in user)


def _safe_user():
    from ._safe import user_allowed

    return user_allowed()


__all__ = ["save", "load", "add_safe_globals", "safe_globals", "get_safe_globals", "clear_safe_globals",
           "get_unsafe_globals_in_checkpoint", "DEFAULT_PROTOCOL"]
