"""ampc.cuda.amp: the legacy torch.cuda.amp names (autocast defaults to float16 on "cuda")."""
import functools
import warnings

from ...amp import autocast_mode as _autocast_mode
from ...amp import grad_scaler as _grad_scaler
from ... import _C


class autocast(_autocast_mode.autocast):
    """torch.cuda.amp.autocast(enabled=True, dtype=float16, cache_enabled=True)."""

    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        super().__init__("cuda", enabled=enabled, dtype=_C.float16 if dtype is None else dtype,
                         cache_enabled=cache_enabled)


class GradScaler(_grad_scaler.GradScaler):
    """torch.cuda.amp.GradScaler(init_scale, growth_factor, backoff_factor, growth_interval, enabled)."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True, **kwargs):
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled, **kwargs)


custom_fwd = functools.partial(_autocast_mode.custom_fwd, device_type="cuda")
custom_bwd = functools.partial(_autocast_mode.custom_bwd, device_type="cuda")
