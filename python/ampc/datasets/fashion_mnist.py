"""FashionMNIST: reads the IDX files of Debian's `dataset-fashion-mnist` package.

The files (train-images-idx3-ubyte.gz, ...) live under /usr/share/datasets/fashion-mnist; pass
`root` to read them from elsewhere (gzipped or not). Each file's IDX header and exact size are
checked, so a truncated or corrupted download fails with a clear message instead of training on
garbage. Images come back as float32 in [0, 1] of shape (N, 1, 28, 28) (normalised with
`mean`/`std` when given), labels as int64."""
import gzip
import os
import struct

import numpy as np

DEFAULT_ROOT = "/usr/share/datasets/fashion-mnist"
CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot")
_FILES = {
    True: ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", 60000),
    False: ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte", 10000),
}


class DatasetMissingError(FileNotFoundError):
    pass


def _open(root, name):
    for candidate in (name + ".gz", name):
        path = os.path.join(root, candidate)
        if os.path.exists(path):
            return path, (gzip.open if candidate.endswith(".gz") else open)
    raise DatasetMissingError(
        f"Fashion-MNIST file {name}(.gz) not found under {root}: install Debian's package "
        f"'dataset-fashion-mnist' (apt-get install dataset-fashion-mnist) or pass root=")


def read_idx(root, name, expected_count=None):
    """Reads one IDX file into a uint8 array, checking magic, dims and size (and the item count
    when expected_count is given)."""
    path, opener = _open(root, name)
    try:
        with opener(path, "rb") as f:
            data = f.read()
    except (OSError, EOFError) as e:  # gzip raises EOFError on a truncated stream
        raise ValueError(f"{path}: cannot be read ({e}); the file is truncated or corrupted") from None
    if len(data) < 8:
        raise ValueError(f"{path}: too short for an IDX header ({len(data)} bytes)")
    zero, dtype_code, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype_code != 0x08 or ndim not in (1, 3):
        raise ValueError(f"{path}: not an unsigned-byte IDX file (magic {data[:4].hex()})")
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    header = 4 + 4 * ndim
    expected = int(np.prod(dims))
    if len(data) - header != expected:
        raise ValueError(f"{path}: the header promises {dims[0]} items ({expected} bytes of data) but the file "
                         f"holds {len(data) - header} bytes; the file is truncated or corrupted")
    if expected_count is not None and dims[0] != expected_count:
        raise ValueError(f"{path}: expected {expected_count} items, found {dims[0]}")
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(dims)


class FashionMNIST:
    """Fashion-MNIST as tensors: `data` (N, 1, 28, 28) float32 and `targets` (N,) int64.

    Indexing gives (image, label) pairs, so it works with ampc.utils.data.DataLoader; `limit`
    keeps the first N samples (for quick runs)."""

    classes = CLASSES

    def __init__(self, root=None, train=True, limit=None, mean=0.2860, std=0.3530, device="cpu"):
        import ampc

        root = root or DEFAULT_ROOT
        images_name, labels_name, count = _FILES[bool(train)]
        # The official files have exactly `count` items; a directory of one's own (root=) may
        # hold any number, as long as images and labels agree.
        official = root == DEFAULT_ROOT
        images = read_idx(root, images_name, count if official else None)
        labels = read_idx(root, labels_name, count if official else None)
        if images.shape[0] != labels.shape[0]:
            raise ValueError(f"{root}: {images.shape[0]} images but {labels.shape[0]} labels")
        if limit is not None:
            images, labels = images[:limit], labels[:limit]
        x = images.astype(np.float32)[:, None, :, :] / 255.0
        if mean is not None and std is not None:
            x = (x - np.float32(mean)) / np.float32(std)
        self.train = bool(train)
        self.data = ampc.from_numpy(np.ascontiguousarray(x)).to(device)
        self.targets = ampc.from_numpy(labels.astype(np.int64)).to(device)

    def __len__(self):
        return self.targets.shape[0]

    def __getitem__(self, index):
        return self.data[index], self.targets[index]

    def __repr__(self):
        return f"FashionMNIST(split={'train' if self.train else 'test'}, samples={len(self)})"
