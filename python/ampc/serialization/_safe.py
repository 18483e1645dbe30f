"""torch.serialization's user allowlist for weights-only loading: add_safe_globals, safe_globals
(a context manager), get_safe_globals, clear_safe_globals.

An entry is a class or function (allowed under its own `module.qualname`) or a (object, "name")
pair (allowed under that name, for objects whose pickled name differs from where they live).
"""
import threading

_lock = threading.Lock()
_user_globals = []  # the entries, in the order they were added (torch keeps a set)


def _check(entries, who):
    if not isinstance(entries, (list, tuple, set)):
        raise TypeError(f"{who}: expected a list of classes/functions or (object, name) pairs, "
                        f"got {type(entries).__name__}")
    for e in entries:
        if isinstance(e, tuple):
            if len(e) != 2 or not isinstance(e[1], str):
                raise ValueError(f"{who}: a tuple entry must be (object, 'module.name'), got {e!r}")
        elif not hasattr(e, "__qualname__") or not hasattr(e, "__module__"):
            raise TypeError(f"{who}: {e!r} has no __module__/__qualname__; pass it as (object, 'module.name')")
    return list(entries)


def add_safe_globals(safe_globals):
    """Marks classes/functions as safe for ampc.load(weights_only=True)."""
    entries = _check(safe_globals, "add_safe_globals")
    with _lock:
        for e in entries:
            if e not in _user_globals:
                _user_globals.append(e)


def get_safe_globals():
    """The user-added entries."""
    with _lock:
        return list(_user_globals)


def clear_safe_globals():
    with _lock:
        _user_globals.clear()


class safe_globals:
    """with ampc.serialization.safe_globals([MyClass]): ampc.load(...) -- allowed inside only."""

    def __init__(self, safe_globals):
        self.entries = _check(safe_globals, "safe_globals")
        self.saved = None

    def __enter__(self):
        self.saved = get_safe_globals()
        add_safe_globals(self.entries)

    def __exit__(self, *exc):
        with _lock:
            _user_globals[:] = self.saved
        return False


def user_allowed():
    """'module.qualname' -> object for every user entry."""
    out = {}
    for e in get_safe_globals():
        if isinstance(e, tuple):
            out[e[1]] = e[0]
        else:
            out[f"{e.__module__}.{e.__qualname__}"] = e
    return out
