"""ampc.utils.data: torch.utils.data's datasets, samplers and DataLoader.

`from ampc.utils.data import DataLoader, TensorDataset` replaces torch's import unchanged.
Batches of a TensorDataset (or a Subset of one) are gathered with one indexing call per tensor
instead of stacking samples in Python; see dataloader.py. num_workers > 0 runs worker processes
(_worker.py)."""
from ._worker import get_worker_info  # noqa: F401
from .dataloader import DataLoader, default_collate, default_convert  # noqa: F401
from .dataset import (  # noqa: F401
    ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset, TensorDataset, random_split,
)
from .sampler import (  # noqa: F401
    BatchSampler, DistributedSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "DistributedSampler",
    "IterableDataset", "RandomSampler", "Sampler", "SequentialSampler", "StackDataset", "Subset",
    "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler", "default_collate", "default_convert",
    "get_worker_info", "random_split",
]
