"""Case 1 of the article: ResNet-50 with SGD and the timed `train_epoch`, with and without AMP.

    python examples/resnet50_train_epoch.py --limit 256 --batch-size 32 [--arch resnet18]

Lines that differ from the article, and why:
- `import torchvision.models as models` -> `import ampc.models as models` (ResNet-50 with
  torchvision's layout and parameter names lives in ampc.models).
- `models.resnet50(pretrained=True)` -> `models.resnet50(num_classes=10, in_channels=1)`: ampc
  downloads no weights, and the data here is Fashion-MNIST (1 channel, 10 classes), not ImageNet.
- `.cuda()` -> `.to(device)`: `.cuda()` raises on a machine without a GPU (as in torch), and the
  example must also run on a CPU.
- the loss of each batch is kept so the caller can see training progress (the article prints it)."""
import time

import ampc as torch
import ampc.models as models
import ampc.nn as nn
import ampc.optim as optim

import _common


def make_train_epoch(device, autocast, log_every=100, printer=print):
    losses = []

    # Функция для замера времени (the article's function)
    def train_epoch(model, train_loader, optimizer, criterion, scaler, use_amp=True):
        model.train()
        total_time = 0

        for batch_idx, (data, target) in enumerate(train_loader):
            data, target = data.to(device), target.to(device)  # article: data.cuda(), target.cuda()

            start_time = time.time()
            optimizer.zero_grad()

            if use_amp:
                with autocast():
                    output = model(data)
                    loss = criterion(output, target)

                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            else:
                output = model(data)
                loss = criterion(output, target)
                loss.backward()
                optimizer.step()

            total_time += time.time() - start_time
            losses.append(loss.item())

            if batch_idx % log_every == 0 and printer:
                printer(f'Batch {batch_idx}, Loss: {loss.item():.4f}')

        return total_time

    return train_epoch, losses


def main(argv=None):
    p = _common.parser(__doc__.splitlines()[0], epochs=1, batch_size=32, limit=256, lr=0.1)
    p.add_argument("--arch", default="resnet50", choices=["resnet18", "resnet34", "resnet50"])
    p.add_argument("--small-input", action="store_true", help="3x3 stride-1 stem (slower, better on 28x28)")
    p.add_argument("--modes", default="fp32,amp", help="which of the article's two paths to run")
    args = p.parse_args(argv)
    device = _common.pick_device(args.device)
    autocast, GradScaler = _common.amp_api(device)

    results = {}
    for use_amp in [m == "amp" for m in args.modes.split(",")]:
        torch.manual_seed(args.seed)
        # Настройка модели
        model = getattr(models, args.arch)(num_classes=10, in_channels=1, small_input=args.small_input).to(device)
        optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4)
        criterion = nn.CrossEntropyLoss()
        scaler = GradScaler()

        train_loader = _common.image_loader(args)
        train_epoch, losses = make_train_epoch(device, autocast, printer=None if args.quiet else print)
        seconds = [train_epoch(model, train_loader, optimizer, criterion, scaler, use_amp=use_amp)
                   for _ in range(args.epochs)]
        mode = "amp" if use_amp else "fp32"
        results[mode] = {"losses": losses, "seconds": seconds}
        _common.log(args, f"{mode}: {sum(seconds):.2f} s in train steps, last loss {losses[-1]:.4f}")
    if len(results) == 2 and results["amp"]["seconds"][0] > 0:
        _common.log(args, f"speedup (fp32 time / amp time): {sum(results['fp32']['seconds']) / sum(results['amp']['seconds']):.2f}x")
    return results


if __name__ == "__main__":
    main()
