"""ampc.nn.utils.rnn: PackedSequence and the packing / padding helpers of torch.nn.utils.rnn.

A PackedSequence holds the steps of a batch of variable-length sequences back to back: `data`
(sum of lengths, *) in time-major order, `batch_sizes` (int64, CPU) the number of sequences still
running at each step, and the permutation that sorted the batch by length (sorted_indices) with its
inverse. Packing and unpacking are one index_select each over precomputed row indices (one
gather and one IndexSelectBackward), padding a cat + stack, so gradients flow through all of
them; the recurrent layers (modules/rnn.py) run packed data step by step on shrinking batches.
"""
from typing import NamedTuple, Optional

from ... import _C

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence",
           "pad_sequence", "unpad_sequence", "pack_sequence", "unpack_sequence"]


class PackedSequence_(NamedTuple):
    data: object
    batch_sizes: object
    sorted_indices: Optional[object]
    unsorted_indices: Optional[object]


def bind(optional, fn):
    if optional is None:
        return None
    return fn(optional)


class PackedSequence(PackedSequence_):
    """Holds the data and list of batch_sizes of a packed sequence (torch.nn.utils.rnn.PackedSequence);
    build it with pack_padded_sequence or pack_sequence rather than by hand."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is not None:
            if batch_sizes.device.type != "cpu":
                raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence should never be "
                                 "created manually. They should be instantiated by functions like pack_sequence and "
                                 "pack_padded_sequences in nn.utils.rnn. "
                                 "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
            return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)
        # the (data, batch_sizes) tuple form
        if not (isinstance(data, (list, tuple)) and len(data) == 2):
            raise TypeError("PackedSequence: expected data and batch_sizes, or a (data, batch_sizes) pair")
        return super().__new__(cls, data[0], data[1], sorted_indices, unsorted_indices)

    def pin_memory(self):
        return type(self)(self.data.pin_memory(), self.batch_sizes,
                          bind(self.sorted_indices, lambda t: t.pin_memory()),
                          bind(self.unsorted_indices, lambda t: t.pin_memory()))

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        kwargs = {k: v for k, v in kwargs.items() if k not in ("device", "dtype")}
        sorted_indices = bind(self.sorted_indices, lambda t: t.to(data.device, **kwargs))
        unsorted_indices = bind(self.unsorted_indices, lambda t: t.to(data.device, **kwargs))
        return type(self)(data, self.batch_sizes, sorted_indices, unsorted_indices)

    def cuda(self, *args, **kwargs):
        ex = _C.tensor((), dtype=self.data.dtype, device=self.data.device).to(*args, **kwargs)
        if ex.is_cuda:
            return self.to(*args, **kwargs)
        kwargs["device"] = "cuda"
        return self.to(*args, **kwargs)

    def cpu(self, *args, **kwargs):
        ex = _C.tensor((), dtype=self.data.dtype, device=self.data.device).to(*args, **kwargs)
        if ex.device.type == "cpu":
            return self.to(*args, **kwargs)
        kwargs["device"] = "cpu"
        return self.to(*args, **kwargs)

    def double(self):
        return self.to(dtype=_C.float64)

    def float(self):
        return self.to(dtype=_C.float32)

    def half(self):
        return self.to(dtype=_C.float16)

    def long(self):
        return self.to(dtype=_C.int64)

    def int(self):
        return self.to(dtype=_C.int32)

    def byte(self):
        return self.to(dtype=_C.uint8)

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return self.data.is_pinned()


def invert_permutation(permutation):
    """The inverse permutation (None stays None)."""
    if permutation is None:
        return None
    output = _C.empty_like(permutation)
    output.scatter_(0, permutation, _C.arange(0, permutation.numel(), device=permutation.device))
    return output


def _lengths_list(lengths):
    if isinstance(lengths, _C.Tensor):
        return [int(v) for v in lengths.to(device="cpu", dtype=_C.int64).tolist()]
    return [int(v) for v in lengths]


def _pack_padded(input, lengths, batch_first):
    """data, batch_sizes of a padded (T, B, *) (or (B, T, *)) input whose lengths are sorted."""
    if batch_first:
        input = input.transpose(0, 1)
    T, B = input.shape[0], input.shape[1]
    if len(lengths) != B:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} "
                           f"(batch_size={B})")
    if B and lengths[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    for a, b in zip(lengths, lengths[1:]):
        if b > a:
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
                               "to sidestep this requirement if you do not need ONNX exportability.")
    steps = lengths[0] if B else 0
    if steps > T:
        raise RuntimeError(f"Expected the longest length ({steps}) to be at most the input's sequence length ({T})")
    batch_sizes = [sum(1 for n in lengths if n > t) for t in range(steps)]
    rows = [t * B + b for t in range(steps) for b in range(batch_sizes[t])]
    flat = input.reshape((T * B,) + tuple(input.shape[2:]))
    data = flat.index_select(0, _C.tensor(rows, dtype=_C.int64, device=input.device))
    return data, _C.tensor(batch_sizes, dtype=_C.int64)  # batch_sizes live on the CPU (torch's rule)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Packs a padded batch of variable-length sequences (torch.nn.utils.rnn.pack_padded_sequence)."""
    if isinstance(lengths, _C.Tensor):
        lengths = lengths.to(dtype=_C.int64)
    else:
        lengths = _lengths_list(lengths)
        lengths = _C.tensor(lengths, dtype=_C.int64)  # on the CPU, as torch's
    if enforce_sorted:
        sorted_indices = None
    else:
        lengths, sorted_indices = _C.sort(lengths.cpu(), descending=True)
        sorted_indices = sorted_indices.to(input.device)
        batch_dim = 0 if batch_first else 1
        input = input.index_select(batch_dim, sorted_indices)
    data, batch_sizes = _pack_padded(input, _lengths_list(lengths), batch_first)
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Pads a packed batch of variable-length sequences back: (padded, lengths)
    (torch.nn.utils.rnn.pad_packed_sequence)."""
    batch_sizes = [int(b) for b in sequence.batch_sizes.tolist()]
    max_seq_length = len(batch_sizes)
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, but "
                             f"got total_length={total_length} and max sequence length being {max_seq_length}")
        max_seq_length = total_length
    data = sequence.data
    B = batch_sizes[0] if batch_sizes else 0
    n = data.shape[0]
    trailing = tuple(data.shape[1:])
    pad_row = _C.full((1,) + trailing, padding_value, dtype=data.dtype, device=data.device)
    ext = _C.cat([data, pad_row], 0)
    # padded row (t, b) (or (b, t)) reads packed row offset[t] + b, or the padding row n
    offsets, acc = [], 0
    for bs in batch_sizes:
        offsets.append(acc)
        acc += bs
    index = []
    if batch_first:
        for b in range(B):
            index.extend(offsets[t] + b if t < len(batch_sizes) and b < batch_sizes[t] else n
                         for t in range(max_seq_length))
        shape = (B, max_seq_length) + trailing
    else:
        for t in range(max_seq_length):
            index.extend(offsets[t] + b if t < len(batch_sizes) and b < batch_sizes[t] else n for b in range(B))
        shape = (max_seq_length, B) + trailing
    padded = ext.index_select(0, _C.tensor(index, dtype=_C.int64, device=data.device)).reshape(shape)
    lengths = [sum(1 for bs in batch_sizes if bs > b) for b in range(B)]
    lengths = _C.tensor(lengths, dtype=_C.int64)  # on the CPU, as torch's
    unsorted_indices = sequence.unsorted_indices
    if unsorted_indices is not None:
        batch_dim = 0 if batch_first else 1
        return padded.index_select(batch_dim, unsorted_indices), lengths[unsorted_indices.cpu()]
    return padded, lengths


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Pads a list of variable-length tensors (L_i, *) to (L, B, *) or (B, L, *)
    (torch.nn.utils.rnn.pad_sequence)."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if isinstance(sequences, _C.Tensor):
        sequences = sequences.unbind(0)
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    max_len = max(s.shape[0] for s in sequences)
    trailing = tuple(sequences[0].shape[1:])
    rows = []
    for s in sequences:
        if tuple(s.shape[1:]) != trailing:
            raise RuntimeError(f"The size of tensor a ({trailing}) must match the size of tensor b "
                               f"({tuple(s.shape[1:])}) at non-singleton dimension 1")
        extra = max_len - s.shape[0]
        if extra:
            pad = _C.full((extra,) + trailing, padding_value, dtype=s.dtype, device=s.device)
            s = _C.cat([s, pad] if padding_side == "right" else [pad, s], 0)
        rows.append(s)
    return _C.stack(rows, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of unpadded tensors of a padded batch (torch.nn.utils.rnn.unpad_sequence)."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq.narrow(0, 0, n) for seq, n in zip(padded_sequences.unbind(0), _lengths_list(lengths))]


def pack_sequence(sequences, enforce_sorted=True):
    """Packs a list of variable-length tensors (torch.nn.utils.rnn.pack_sequence)."""
    lengths = [v.size(0) for v in sequences]
    lengths = _C.tensor(lengths, dtype=_C.int64)
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of tensors of a PackedSequence (torch.nn.utils.rnn.unpack_sequence)."""
    padded_sequences, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded_sequences, lengths, batch_first=True)


