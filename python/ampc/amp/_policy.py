"""autocast policies for functions composed in Python (issue 14).

An op of the C op table gets its policy from the table (csrc/core/autocast.c, autocast_cpu.c). A
function that ampc composes in Python of other ops (addbmm, kl_div, ...) but that torch lists by
name gets the same treatment here, as torch's autocast wrapper does: the tensor arguments are cast
by the policy of the device type the region is on, then the function runs with autocast off, so
its inner ops are not cast again. The policies are torch's (tests/autocast_lists_torch.py holds the
lists; tests/test_autocast_lists.py checks these functions' result dtypes against torch's)."""
import functools

from .. import _C

__all__ = ["autocast_policy"]

def _eligible(t, device_type):
    return isinstance(t, _C.Tensor) and t.device.type == device_type and t.dtype in (
        _C.float16, _C.bfloat16, _C.float32)


def _region(args):
    for a in args:
        if isinstance(a, _C.Tensor) and _C.is_autocast_enabled(a.device.type):
            return a.device.type
    return None


def _target(policy, device_type, tensors):
    lp = _C.get_autocast_dtype(device_type)
    if policy == "fp32":
        return _C.float32
    if policy == "lower_precision_fp":
        return lp
    to = lp  # promote: torch's prioritize, in argument order
    for t in tensors:
        if not _eligible(t, device_type) or t.dtype == to:
            continue
        if to == _C.float32 or t.dtype == _C.float32:
            to = _C.float32
        else:
            raise RuntimeError("Unexpected floating ScalarType in at::autocast::prioritize")
    return to


def _cast(x, to, device_type):
    if _eligible(x, device_type):
        return x if x.dtype == to else x.to(to)
    if isinstance(x, (list, tuple)) and any(_eligible(v, device_type) for v in x):
        return type(x)(_cast(v, to, device_type) for v in x)
    return x


def autocast_policy(cuda=None, cpu=None):
    """Decorator: run fn under torch's policy for it, `cuda` on CUDA regions and `cpu` on CPU ones
    ("lower_precision_fp", "fp32", "promote" or None)."""
    policies = {"cuda": cuda, "cpu": cpu}

    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            tensors = [v for a in list(args) + list(kwargs.values())
                       for v in (a if isinstance(a, (list, tuple)) else (a,))]
            device_type = _region(tensors)
            policy = policies.get(device_type)
            if policy is None:
                return fn(*args, **kwargs)
            to = _target(policy, device_type, tensors)
            args = tuple(_cast(a, to, device_type) for a in args)
            kwargs = {k: v if k == "out" else _cast(v, to, device_type) for k, v in kwargs.items()}
            from .autocast_mode import autocast
            with autocast(device_type, enabled=False):
                return fn(*args, **kwargs)
        return wrapper
    return deco
