"""torch.nn.parallel: DistributedDataParallel (ampc.distributed)."""
from .distributed import DistributedDataParallel  # noqa: F401

__all__ = ["DistributedDataParallel"]
