"""The deprecated per-device autocast state functions of torch's top level
(torch.is_autocast_cpu_enabled, set_autocast_gpu_dtype, ...): each warns with torch's
DeprecationWarning text and calls the device-type form (csrc/python/py_autocast.c)."""
import warnings

from .. import _C

__all__ = ["is_autocast_cpu_enabled", "set_autocast_cpu_enabled", "get_autocast_cpu_dtype", "set_autocast_cpu_dtype",
           "get_autocast_gpu_dtype", "set_autocast_gpu_dtype"]


def _legacy(name, old, new, call):
    """torch.<name>: warns that `old` is deprecated in favour of `new`, then runs call(*args)."""
    def fn(*args):
        warnings.warn(f"torch.{old} is deprecated. Please use torch.{new} instead.", DeprecationWarning, stacklevel=2)
        return call(*args)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Deprecated: torch.{new}."
    return fn


is_autocast_cpu_enabled = _legacy("is_autocast_cpu_enabled", "is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')",
                                  lambda: _C.is_autocast_enabled("cpu"))
set_autocast_cpu_enabled = _legacy("set_autocast_cpu_enabled", "set_autocast_cpu_enabled(enabled)",
                                   "set_autocast_enabled('cpu', enabled)", lambda on: _C.set_autocast_enabled("cpu", on))
get_autocast_cpu_dtype = _legacy("get_autocast_cpu_dtype", "get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')",
                                 lambda: _C.get_autocast_dtype("cpu"))
set_autocast_cpu_dtype = _legacy("set_autocast_cpu_dtype", "set_autocast_cpu_dtype(dtype)",
                                 "set_autocast_dtype('cpu', dtype)", lambda dt: _C.set_autocast_dtype("cpu", dt))
get_autocast_gpu_dtype = _legacy("get_autocast_gpu_dtype", "get_autocast_gpu_dtype()", "get_autocast_dtype('cuda')",
                                 lambda: _C.get_autocast_dtype("cuda"))
set_autocast_gpu_dtype = _legacy("set_autocast_gpu_dtype", "set_autocast_gpu_dtype(dtype)",
                                 "set_autocast_dtype('cuda', dtype)", lambda dt: _C.set_autocast_dtype("cuda", dt))
