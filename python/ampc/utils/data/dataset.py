"""Datasets: torch.utils.data's Dataset, IterableDataset, TensorDataset, Subset, ConcatDataset and
random_split, with torch's behaviour and messages.

TensorDataset and Subset also describe themselves as tensor columns (`_tensor_columns`), which
lets DataLoader gather a whole batch with one indexing call per tensor instead of building B
samples in Python and stacking them."""
import bisect
import math
import warnings

from ... import _C


class Dataset:
    """A map-style dataset: __getitem__(index) and usually __len__."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset that is a stream: __iter__ yields samples; DataLoader batches them in order."""

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")


class TensorDataset(Dataset):
    """Sample i is tuple(t[i] for t in tensors); every tensor has the same first dimension."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset: expected at least one tensor")
        n = tensors[0].size(0)
        for t in tensors:
            if not isinstance(t, _C.Tensor):
                raise TypeError(f"TensorDataset: expected tensors, got {type(t).__name__}")
            if t.dim() == 0 or t.size(0) != n:
                raise ValueError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].size(0)

    def _tensor_columns(self):
        """(tensors, index map or None): see dataloader._gather_plan."""
        if type(self).__getitem__ is not TensorDataset.__getitem__:
            return None  # a subclass that changes samples must go through __getitem__
        return self.tensors, None


class Subset(Dataset):
    """The samples of `dataset` at `indices` (a sequence of ints or a 1-D integer tensor)."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        inner = getattr(self.dataset, "__getitems__", None)
        if inner is not None:
            return inner([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self):
        return len(self.indices)

    def _tensor_columns(self):
        source = getattr(self.dataset, "_tensor_columns", None)
        plan = source() if source is not None else None
        if plan is None or type(self).__getitem__ is not Subset.__getitem__:
            return None
        tensors, inner = plan
        mine = self.indices
        if isinstance(mine, _C.Tensor):
            mine = mine.long().cpu()
        else:
            mine = _C.tensor([int(i) for i in mine], dtype=_C.int64)
        n = len(self.dataset)
        if mine.numel() and (int(mine.min()) < -n or int(mine.max()) >= n):
            raise IndexError(f"Subset: an index is out of range for a dataset of {n} samples")
        mine = _C.where(mine < 0, mine + n, mine) if mine.numel() else mine
        return tensors, (mine if inner is None else inner[mine])


class ConcatDataset(Dataset):
    """Datasets one after another; index i goes to the dataset whose range holds it."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = []
        total = 0
        for d in self.datasets:
            total += len(d)
            self.cumulative_sizes.append(total)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which > 0 else 0
        return self.datasets[which][idx - start]


def _split_lengths(n, lengths):
    """Fractions summing to 1 become counts the way torch does: floor each, then hand out the
    remainder one by one from the first split on."""
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            counts.append(int(math.floor(n * frac)))
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        for i, c in enumerate(counts):
            if c == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.")
        return counts
    return [int(x) for x in lengths]


def random_split(dataset, lengths, generator=None):
    """Splits `dataset` into non-overlapping Subsets of the given lengths (counts, or fractions
    that sum to 1), in an order drawn from `generator` (the global generator when None)."""
    counts = _split_lengths(len(dataset), lengths)
    if any(c < 0 for c in counts):
        raise ValueError("random_split: lengths must be non-negative")
    if sum(counts) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    if generator is None:
        order = _C.randperm(sum(counts))
    else:
        order = _C.randperm(sum(counts), generator=generator)
    order = order.tolist()
    splits, offset = [], 0
    for c in counts:
        splits.append(Subset(dataset, order[offset:offset + c]))
        offset += c
    return splits


class ChainDataset(IterableDataset):
    """IterableDatasets one after another, as one stream."""

    def __init__(self, datasets):
        super().__init__()
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self):
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(d)
        return total


class StackDataset(Dataset):
    """Datasets of one length side by side: sample i is the tuple (or dict, given keywords) of
    their samples i."""

    def __init__(self, *args, **kwargs):
        if args:
            if kwargs:
                raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like "
                                 "input/output, but both types are given.")
            self._length = len(args[0])
            if any(self._length != len(dataset) for dataset in args):
                raise ValueError("Size mismatch between datasets")
            self.datasets = args
        elif kwargs:
            tmp = list(kwargs.values())
            self._length = len(tmp[0])
            if any(self._length != len(dataset) for dataset in tmp):
                raise ValueError("Size mismatch between datasets")
            self.datasets = kwargs
        else:
            raise ValueError("At least one dataset should be passed")

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: dataset[index] for k, dataset in self.datasets.items()}
        return tuple(dataset[index] for dataset in self.datasets)

    def __getitems__(self, indices):
        if isinstance(self.datasets, dict):
            dict_batch = [{} for _ in indices]
            for k, dataset in self.datasets.items():
                if callable(getattr(dataset, "__getitems__", None)):
                    items = dataset.__getitems__(indices)
                    if len(items) != len(indices):
                        raise ValueError("Nested dataset's output size mismatch. "
                                         f"Expected {len(indices)}, got {len(items)}")
                    for data, d_sample in zip(items, dict_batch):
                        d_sample[k] = data
                else:
                    for idx, d_sample in zip(indices, dict_batch):
                        d_sample[k] = dataset[idx]
            return dict_batch
        list_batch = [[] for _ in indices]
        for dataset in self.datasets:
            if callable(getattr(dataset, "__getitems__", None)):
                items = dataset.__getitems__(indices)
                if len(items) != len(indices):
                    raise ValueError("Nested dataset's output size mismatch. "
                                     f"Expected {len(indices)}, got {len(items)}")
                for data, t_sample in zip(items, list_batch):
                    t_sample.append(data)
            else:
                for idx, t_sample in zip(indices, list_batch):
                    t_sample.append(dataset[idx])
        return [tuple(sample) for sample in list_batch]

    def __len__(self):
        return self._length


def _iterable_add(self, other):
    return ChainDataset([self, other])


IterableDataset.__add__ = _iterable_add  # torch: IterableDataset + IterableDataset is a ChainDataset
