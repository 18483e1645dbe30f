"""The bases of the legacy per-device names (torch.cpu.amp.autocast / GradScaler,
torch.cuda.amp.autocast / GradScaler): ampc.amp's classes with the device fixed and, for
autocast, the device's default lower-precision dtype. Each device's module subclasses them with
two class attributes, so the constructor signatures exist once."""
from . import autocast_mode as _autocast_mode
from . import grad_scaler as _grad_scaler


class LegacyAutocast(_autocast_mode.autocast):
    _legacy_device_type = None  # set by the subclass: "cpu" / "cuda"
    _legacy_dtype = None        # the dtype when dtype=None: bfloat16 on cpu, float16 on cuda

    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        super().__init__(type(self)._legacy_device_type, enabled=enabled,
                         dtype=type(self)._legacy_dtype if dtype is None else dtype, cache_enabled=cache_enabled)


class LegacyGradScaler(_grad_scaler.GradScaler):
    _legacy_device_type = None

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True, **kwargs):
        super().__init__(type(self)._legacy_device_type, init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled, **kwargs)
