"""ampc.utils: torch.utils's data-loading part (ampc.utils.data) and the hook handle
(ampc.utils.hooks.RemovableHandle)."""
from . import data, hooks  # noqa: F401
from . import checkpoint  # noqa: F401,E402  (activation checkpointing, torch.utils.checkpoint)
