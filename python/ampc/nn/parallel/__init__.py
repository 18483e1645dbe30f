"""ampc.nn.parallel: torch.nn.parallel's names. DataParallel runs its module on one device (and
splits a batch across several GPUs when given more, each replica a differentiable copy);
DistributedDataParallel needs a process group (ampc.distributed)."""
from .data_parallel import DataParallel, data_parallel  # noqa: F401
from .distributed import DistributedDataParallel  # noqa: F401
from .parallel_apply import parallel_apply  # noqa: F401
from .replicate import replicate  # noqa: F401
from .scatter_gather import gather, scatter, scatter_kwargs  # noqa: F401

__all__ = ["replicate", "scatter", "parallel_apply", "gather", "data_parallel", "DataParallel",
           "DistributedDataParallel"]
