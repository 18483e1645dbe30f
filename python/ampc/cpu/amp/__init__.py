"""ampc.cpu.amp: the legacy torch.cpu.amp names (autocast defaults to bfloat16 on "cpu")."""
from ...amp import autocast_mode as _autocast_mode
from ...amp import grad_scaler as _grad_scaler
from ... import _C


class autocast(_autocast_mode.autocast):
    """torch.cpu.amp.autocast(enabled=True, dtype=bfloat16, cache_enabled=True)."""

    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        super().__init__("cpu", enabled=enabled, dtype=_C.bfloat16 if dtype is None else dtype,
                         cache_enabled=cache_enabled)


class GradScaler(_grad_scaler.GradScaler):
    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True, **kwargs):
        super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled, **kwargs)
