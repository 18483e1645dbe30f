"""ampc.cpu.amp: the legacy torch.cpu.amp names (autocast defaults to bfloat16 on "cpu")."""
from ...amp._legacy import LegacyAutocast as _LegacyAutocast
from ...amp._legacy import LegacyGradScaler as _LegacyGradScaler
from ... import _C


class autocast(_LegacyAutocast):
    """torch.cpu.amp.autocast(enabled=True, dtype=bfloat16, cache_enabled=True)."""

    _legacy_device_type, _legacy_dtype = "cpu", _C.bfloat16


class GradScaler(_LegacyGradScaler):
    _legacy_device_type = "cpu"
