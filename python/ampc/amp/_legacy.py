"""The bases of the legacy per-device names (torch.cpu.amp.autocast / GradScaler,
torch.cuda.amp.autocast / GradScaler): ampc.amp's classes with the device fixed and, for
autocast, the device's default lower-precision dtype. Each device's module subclasses them with
two class attributes, so the constructor signatures exist once.

Constructing one emits torch 2.4+'s FutureWarning word for word (its text names torch, as the
scripts that run on ampc by `import ampc as torch` spell it), so warning filters and tests that
match it behave the same."""
import warnings

from . import autocast_mode as _autocast_mode
from . import grad_scaler as _grad_scaler


class LegacyAutocast(_autocast_mode.autocast):
    _legacy_device_type = None  # set by the subclass: "cpu" / "cuda"
    _legacy_dtype = None        # the dtype when dtype=None: bfloat16 on cpu, float16 on cuda

    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        dev = type(self)._legacy_device_type
        warnings.warn(f"`torch.{dev}.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('{dev}', "
                      "args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__(type(self)._legacy_device_type, enabled=enabled,
                         dtype=type(self)._legacy_dtype if dtype is None else dtype, cache_enabled=cache_enabled)


class LegacyGradScaler(_grad_scaler.GradScaler):
    _legacy_device_type = None

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        dev = type(self)._legacy_device_type
        warnings.warn(f"`torch.{dev}.amp.GradScaler(args...)` is deprecated. Please use `torch.amp.GradScaler('{dev}', "
                      "args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__(type(self)._legacy_device_type, init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)


def _warn_custom(kind, device_type):
    warnings.warn(f"`torch.{device_type}.amp.{kind}(args...)` is deprecated. Please use `torch.amp.{kind}(args..., "
                  f"device_type='{device_type}')` instead.", FutureWarning, stacklevel=3)


def legacy_custom_fwd(device_type):
    """torch.<device>.amp.custom_fwd(fwd=None, *, cast_inputs=None): torch.amp.custom_fwd with the
    device fixed, warning as torch does when applied."""
    def custom_fwd(fwd=None, *, cast_inputs=None):
        _warn_custom("custom_fwd", device_type)
        return _autocast_mode.custom_fwd(fwd, device_type=device_type, cast_inputs=cast_inputs)
    return custom_fwd


def legacy_custom_bwd(device_type):
    """torch.<device>.amp.custom_bwd(bwd): torch.amp.custom_bwd with the device fixed."""
    def custom_bwd(bwd):
        _warn_custom("custom_bwd", device_type)
        return _autocast_mode.custom_bwd(bwd, device_type=device_type)
    return custom_bwd
