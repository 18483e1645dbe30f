"""ampc.utils: torch.utils's data-loading part (ampc.utils.data)."""
from . import data  # noqa: F401
