"""Shared scaffolding of the examples: what the article leaves to the reader (`train_loader`,
`YourModel`, the device), so each example file holds only the article's own code.

Data: Fashion-MNIST from /usr/share/datasets/fashion-mnist (the article trains on ImageNet, which
is not here), cut to `--limit` samples, or synthetic tensors when the files are missing or
`--synthetic` is given. Every example takes the same size flags so the tests can run them in a
second or two."""
import argparse

import ampc as torch
from ampc.utils.data import DataLoader, TensorDataset


def parser(description, **defaults):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--epochs", type=int, default=defaults.get("epochs", 2))
    p.add_argument("--batch-size", type=int, default=defaults.get("batch_size", 64))
    p.add_argument("--limit", type=int, default=defaults.get("limit", 2048), help="training samples used")
    p.add_argument("--lr", type=float, default=defaults.get("lr", 1e-3))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    p.add_argument("--synthetic", action="store_true", help="random data instead of Fashion-MNIST")
    p.add_argument("--image-size", type=int, default=28, choices=[28, 14, 7],
                   help="28: Fashion-MNIST as it is; 14 or 7: average-pooled (quick runs)")
    p.add_argument("--cnn-channels", default="32,64", help="widths of SmallCNN's two conv blocks")
    p.add_argument("--quiet", action="store_true")
    return p


def pick_device(name=None):
    return name or ("cuda" if torch.cuda.is_available() else "cpu")


def amp_api(device):
    """autocast and GradScaler as the article imports them. `from torch.cuda.amp import ...`
    only autocasts CUDA tensors, so on a CPU the examples import the same names from
    torch.cpu.amp (bfloat16 autocast), the one import that differs from the article."""
    if device == "cuda":
        from ampc.cuda.amp import GradScaler, autocast
    else:
        from ampc.cpu.amp import GradScaler, autocast
    return autocast, GradScaler


_CACHE = {}


def small_cnn(args):
    """The examples' `YourModel`: ampc.models.SmallCNN at the size the flags ask for."""
    from ampc.models import SmallCNN

    return SmallCNN(channels=tuple(int(c) for c in args.cnn_channels.split(",")), image_size=args.image_size)


def image_data(limit, synthetic=False, train=True, size=28):
    """(N, 1, size, size) float32 images and (N,) int64 labels (read once per process)."""
    key = (limit, synthetic, train, size)
    if key not in _CACHE:
        x, y = _read_images(limit, synthetic, train)
        if size != 28:
            import ampc.nn.functional as F

            x = F.avg_pool2d(x, 28 // size)
        _CACHE[key] = x, y
    return _CACHE[key]


def _read_images(limit, synthetic, train):
    if not synthetic:
        try:
            from ampc.datasets import FashionMNIST

            ds = FashionMNIST(train=train, limit=limit)
            return ds.data, ds.targets
        except FileNotFoundError:
            pass
    g = torch.Generator().manual_seed(1234 if train else 4321)
    y = torch.randint(0, 10, (limit,), generator=g)
    # class-dependent mean so the task is learnable
    x = torch.randn(limit, 1, 28, 28, generator=g) * 0.5 + (y.float() / 5.0 - 1.0).view(-1, 1, 1, 1)
    return x, y


def image_loader(args, shuffle=True, train=True, device="cpu"):
    """A DataLoader over tensors already on `device` (the article's loops feed the model directly)."""
    x, y = image_data(args.limit, args.synthetic, train, args.image_size)
    x, y = x.to(device), y.to(device)
    g = torch.Generator().manual_seed(args.seed)
    return DataLoader(TensorDataset(x, y), batch_size=args.batch_size, shuffle=shuffle, generator=g)


def mean_loss(model, loader, criterion, device):
    """Average loss over a loader, in eval mode without autocast (the yardstick both modes share)."""
    was_training = model.training
    model.eval()
    total, n = 0.0, 0
    with torch.no_grad():
        for data, target in loader:
            data, target = data.to(device), target.to(device)
            total += criterion(model(data), target).item() * target.shape[0]
            n += target.shape[0]
    model.train(was_training)
    return total / max(n, 1)


def log(args, *msg):
    if not args.quiet:
        print(*msg)
