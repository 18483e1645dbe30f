"""autocast: torch.autocast's semantics over ampc's C autocast state.

The state (enabled per device type, dtype, cache flag, nesting) is thread-local in the C core
(csrc/core/autocast.c), where every eligible op consults the policy table. This class only saves
and restores that state. Unlike PyTorch, the saved state lives on a per-instance *stack*, so
re-entering the same instance (a recursive function decorated with @autocast) is safe."""
import functools
import warnings

from .. import _C

_SUPPORTED = ("cpu", "cuda")


def _device_type_of(device):
    """'cuda' of 'cuda' or 'cuda:1' (torch accepts a device string with an index); None if unsupported."""
    kind, colon, index = device.partition(":")
    return kind if kind in _SUPPORTED and (not colon or index.isdigit()) else None


def is_autocast_available(device_type):
    """True for "cpu" and "cuda"; False for torch's other device types (ampc has no autocast
    there); RuntimeError with torch's message for a string that is no device type."""
    if isinstance(device_type, str) and _device_type_of(device_type) is not None:
        return True
    try:  # the C parser tells "a device type ampc lacks" (False) from "not a device type" (raises)
        _C.is_autocast_enabled(device_type)
    except RuntimeError as e:
        if str(e).startswith("Expected one of"):
            raise
    return False


class autocast:
    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        kind = _device_type_of(device_type)
        if kind is None:
            is_autocast_available(device_type)  # raises torch's message for a string that is no device type
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self.device = device_type
        device_type = self._kind = kind
        self.fast_dtype = _C.get_autocast_dtype(device_type) if dtype is None else dtype
        self._cache_enabled = _C.is_autocast_cache_enabled() if cache_enabled is None else bool(cache_enabled)
        self._enabled = bool(enabled)
        if device_type == "cuda" and self._enabled:
            from .. import cuda

            if not cuda.is_available():
                warnings.warn("User provided device_type of 'cuda', but CUDA is not available. Disabling")
                self._enabled = False
        if self._enabled and self.fast_dtype not in (_C.float16, _C.bfloat16):
            if device_type == "cpu":
                warnings.warn(
                    "In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                    "CPU Autocast only supports dtype of torch.bfloat16, torch.float16 currently."
                )
                self._enabled = False
            elif self.fast_dtype != _C.float32:
                raise RuntimeError(f"autocast: unsupported dtype {self.fast_dtype} for device_type 'cuda'")
        self._saved = []
        self._restored = None  # the state the last __exit__ restored

    def __enter__(self):
        self._saved.append((_C.is_autocast_cache_enabled(), _C.is_autocast_enabled(self._kind),
                            _C.get_autocast_dtype(self._kind)))
        _C.set_autocast_enabled(self._kind, self._enabled)
        _C.set_autocast_dtype(self._kind, self.fast_dtype)
        _C.autocast_increment_nesting()
        _C.set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if not self._saved:
            # an extra __exit__ (torch restores its saved state again): the same state, nesting untouched
            if self._restored is None:
                raise RuntimeError("autocast.__exit__ called on an autocast that was never entered")
            cache_enabled, enabled, dtype = self._restored
        else:
            cache_enabled, enabled, dtype = self._restored = self._saved.pop()
            if _C.autocast_decrement_nesting() == 0:
                _C.clear_autocast_cache()
        _C.set_autocast_enabled(self._kind, enabled)
        _C.set_autocast_dtype(self._kind, dtype)
        _C.set_autocast_cache_enabled(cache_enabled)
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return decorate_autocast


def _cast(value, device_type, dtype):
    """Casts floating, non-float64 tensors on `device_type` inside nested containers."""
    from .._C import Tensor

    if isinstance(value, Tensor):
        if value.is_floating_point() and value.dtype != _C.float64 and value.device.type == device_type:
            return value.to(dtype)
        return value
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, dict):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    return value


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorator for the forward of a custom autograd.Function (torch.amp.custom_fwd)."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = _C.get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = _C.is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        autocast_context = _C.is_autocast_enabled(device_type)
        ctx._fwd_used_autocast = False
        if autocast_context:
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """Decorator for the backward of a custom autograd.Function: runs it under the autocast
    state its forward saw (torch.amp.custom_bwd)."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd
