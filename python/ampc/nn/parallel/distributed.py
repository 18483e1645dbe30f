"""torch.nn.parallel.distributed: DistributedDataParallel lives in ampc.distributed._ddp."""
from ...distributed._ddp import DistributedDataParallel  # noqa: F401

__all__ = ["DistributedDataParallel"]
