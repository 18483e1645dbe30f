"""ampc.cuda.amp: the legacy torch.cuda.amp names (autocast defaults to float16 on "cuda")."""
from ...amp._legacy import LegacyAutocast as _LegacyAutocast
from ...amp._legacy import LegacyGradScaler as _LegacyGradScaler
from ...amp._legacy import legacy_custom_bwd as _legacy_custom_bwd
from ...amp._legacy import legacy_custom_fwd as _legacy_custom_fwd
from ... import _C


class autocast(_LegacyAutocast):
    """torch.cuda.amp.autocast(enabled=True, dtype=float16, cache_enabled=True)."""

    _legacy_device_type, _legacy_dtype = "cuda", _C.float16


class GradScaler(_LegacyGradScaler):
    """torch.cuda.amp.GradScaler(init_scale, growth_factor, backoff_factor, growth_interval, enabled)."""

    _legacy_device_type = "cuda"


custom_fwd = _legacy_custom_fwd("cuda")
custom_bwd = _legacy_custom_bwd("cuda")
