"""ampc.amp: autocast and GradScaler with PyTorch's semantics (torch.amp)."""
from .autocast_mode import autocast, custom_bwd, custom_fwd, is_autocast_available  # noqa: F401
from .grad_scaler import GradScaler, OptState  # noqa: F401
from .debug import OpRecord, OutputStats, debug  # noqa: F401,E402
