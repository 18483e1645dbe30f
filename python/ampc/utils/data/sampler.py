"""Samplers: the order in which DataLoader visits a map-style dataset (torch.utils.data.sampler).

Each index sampler can also hand over one epoch's order as int64 tensors of at most _CHUNK
indices (`_index_chunks`), drawn lazily by the same randperm/randint calls its __iter__ uses, so
the DataLoader's gather fast path and the per-sample path see the same order for the same seed,
and RandomSampler(replacement=True, num_samples=10**10) never holds more than one chunk (torch
draws 32 at a time for the same reason).

Randomness: with generator=None the draw comes from ampc's global generator (so
ampc.manual_seed(s) makes shuffling reproducible); with an ampc.Generator it comes from that
generator's own Philox stream and leaves the global one untouched. (torch instead seeds a fresh
generator from the global one; the reproducibility guarantee is the same, the orders differ.)"""
import math

from ... import _C

_CHUNK = 1 << 16  # indices drawn per randint/slice: large enough to amortise the call, small in memory


def _draw(fn, *args, generator=None, **kwargs):
    if generator is None:
        return fn(*args, **kwargs)
    return fn(*args, generator=generator, **kwargs)


class Sampler:
    """Base class: __iter__ yields dataset indices; __len__ says how many (when known)."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    def __init__(self, data_source):
        self.data_source = data_source

    def _index_chunks(self):
        n = len(self.data_source)
        for start in range(0, n, _CHUNK):
            yield _C.arange(start, min(n, start + _CHUNK), dtype=_C.int64)

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation per epoch (or num_samples draws with replacement)."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def _index_chunks(self):
        n, want = len(self.data_source), self.num_samples
        if self.replacement:
            for start in range(0, want, _CHUNK):
                yield _draw(_C.randint, 0, n, (min(_CHUNK, want - start),), generator=self.generator, dtype=_C.int64)
            return
        while want > 0:  # whole permutations, then the head of one more
            perm = _draw(_C.randperm, n, generator=self.generator)
            take = min(n, want)
            for start in range(0, take, _CHUNK):
                yield perm[start:min(take, start + _CHUNK)]
            want -= take

    def __iter__(self):
        for chunk in self._index_chunks():
            yield from chunk.tolist()

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order each epoch."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def _index_chunks(self):
        idx = self.indices
        idx = idx.long().cpu() if isinstance(idx, _C.Tensor) else _C.tensor(list(idx), dtype=_C.int64)
        yield idx.index_select(0, _draw(_C.randperm, len(self.indices), generator=self.generator))

    def __iter__(self):
        for chunk in self._index_chunks():
            yield from chunk.tolist()

    def __len__(self):
        return len(self.indices)


class BatchSampler(Sampler):
    """Groups the indices of `sampler` into lists of batch_size (the last one shorter unless
    drop_last)."""

    def __init__(self, sampler, batch_size, drop_last):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size


class WeightedRandomSampler(Sampler):
    """num_samples indices drawn with probabilities proportional to `weights` (torch.multinomial)."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        weights_tensor = _C.as_tensor(weights, dtype=_C.float64, device="cpu")  # torch: CPU weights
        if len(weights_tensor.shape) != 1:
            raise ValueError("weights should be a 1d sequence but given "
                             f"weights have shape {tuple(weights_tensor.shape)}")
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        rand_tensor = _draw(_C.multinomial, self.weights, self.num_samples, self.replacement, generator=self.generator)
        yield from iter(rand_tensor.tolist())

    def __len__(self):
        return self.num_samples


class DistributedSampler(Sampler):
    """The share of rank `rank` among num_replicas processes of one epoch's order (shuffled from
    seed + epoch, padded or dropped to an even split), as torch.utils.data.DistributedSampler."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if num_replicas is None or rank is None:
            dist = _distributed()
            if num_replicas is None:
                num_replicas = dist.get_world_size()
            if rank is None:
                rank = dist.get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if self.drop_last and len(self.dataset) % self.num_replicas != 0:
            self.num_samples = math.ceil((len(self.dataset) - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(len(self.dataset) / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        if self.shuffle:
            from ...random import Generator

            g = Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = _C.randperm(len(self.dataset), generator=g, device="cpu").tolist()
        else:
            indices = list(range(len(self.dataset)))
        if not self.drop_last:
            padding_size = self.total_size - len(indices)
            if padding_size <= len(indices):
                indices += indices[:padding_size]
            else:
                indices += (indices * math.ceil(padding_size / len(indices)))[:padding_size]
        else:
            indices = indices[: self.total_size]
        if len(indices) != self.total_size:
            raise AssertionError(f"Number of indices ({len(indices)}) does not match total_size ({self.total_size})")
        indices = indices[self.rank: self.total_size: self.num_replicas]
        if len(indices) != self.num_samples:
            raise AssertionError(f"Number of subsampled indices ({len(indices)}) does not match num_samples "
                                 f"({self.num_samples})")
        return iter(indices)

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        self.epoch = epoch


def _distributed():
    """ampc.distributed when this build has it initialised; torch's error otherwise."""
    try:
        from ... import distributed as dist
    except ImportError:
        dist = None
    if dist is None or not getattr(dist, "is_available", lambda: False)():
        raise RuntimeError("Requires distributed package to be available")
    return dist
