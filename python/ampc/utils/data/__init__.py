"""ampc.utils.data: torch.utils.data's datasets, samplers and DataLoader.

`from ampc.utils.data import DataLoader, TensorDataset` replaces torch's import unchanged.
Batches of a TensorDataset (or a Subset of one) are gathered with one indexing call per tensor
instead of stacking samples in Python; see dataloader.py."""
from .dataloader import DataLoader, default_collate, default_convert  # noqa: F401
from .dataset import (  # noqa: F401
    ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split,
)
from .sampler import (  # noqa: F401
    BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
)

__all__ = [
    "BatchSampler", "ConcatDataset", "DataLoader", "Dataset", "IterableDataset", "RandomSampler",
    "Sampler", "SequentialSampler", "Subset", "SubsetRandomSampler", "TensorDataset",
    "default_collate", "default_convert", "random_split",
]
