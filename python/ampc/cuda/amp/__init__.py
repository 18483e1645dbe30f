"""ampc.cuda.amp: the legacy torch.cuda.amp names (autocast defaults to float16 on "cuda")."""
import functools
import warnings

from ...amp import autocast_mode as _autocast_mode
from ...amp._legacy import LegacyAutocast as _LegacyAutocast
from ...amp._legacy import LegacyGradScaler as _LegacyGradScaler
from ... import _C


class autocast(_LegacyAutocast):
    """torch.cuda.amp.autocast(enabled=True, dtype=float16, cache_enabled=True)."""

    _legacy_device_type, _legacy_dtype = "cuda", _C.float16


class GradScaler(_LegacyGradScaler):
    """torch.cuda.amp.GradScaler(init_scale, growth_factor, backoff_factor, growth_interval, enabled)."""

    _legacy_device_type = "cuda"


custom_fwd = functools.partial(_autocast_mode.custom_fwd, device_type="cuda")
custom_bwd = functools.partial(_autocast_mode.custom_bwd, device_type="cuda")
