#!/usr/bin/env python3
"""The article's universal script: `create_amp_trainer` returns a train step with or without
AMP, chosen by `--amp`.

    python examples/amp_trainer.py --amp --model cnn --epochs 1

Lines that differ from the article, and why:
- imports: `import torch` -> `import ampc as torch`; `from torch.cuda.amp import ...` comes from
  _common.amp_api (torch.cpu.amp's names on a CPU, where torch.cuda.amp's autocast does nothing);
- `if use_amp and torch.cuda.is_available():` -> `if use_amp:`: the article turns AMP off
  without a GPU because CUDA autocast is all it has; ampc's CPU autocast (bfloat16) makes AMP
  meaningful on a CPU too;
- the article leaves `create_model` and `train_loader` to the reader: create_model picks an
  ampc.models network by name (--model mlp, cnn, resnet18, resnet50)."""

import ampc as torch
from ampc.models import MLP, resnet18, resnet50

import _common


def create_model(name, args):
    if name == "mlp":
        return MLP(args.image_size ** 2, [256, 128], 10)
    if name == "cnn":
        return _common.small_cnn(args)
    if name in ("resnet18", "resnet50"):
        return {"resnet18": resnet18, "resnet50": resnet50}[name](num_classes=10, in_channels=1)
    raise ValueError(f"unknown model {name!r}: expected mlp, cnn, resnet18 or resnet50")


def make_factory(autocast, GradScaler, printer=print):
    def create_amp_trainer(model, optimizer, criterion, use_amp=True):
        """Фабрика для создания тренера с AMP"""

        if use_amp:  # article: `use_amp and torch.cuda.is_available()` (see the module docstring)
            scaler = GradScaler()
            printer("✓ AMP enabled")

            def train_step(data, target):
                optimizer.zero_grad()
                with autocast():
                    output = model(data)
                    loss = criterion(output, target)

                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
                return loss

        else:
            printer("✗ AMP disabled")

            def train_step(data, target):
                optimizer.zero_grad()
                output = model(data)
                loss = criterion(output, target)
                loss.backward()
                optimizer.step()
                return loss

        return train_step

    return create_amp_trainer


def main(argv=None):
    parser = _common.parser(__doc__.splitlines()[0], epochs=10, limit=1024)
    parser.add_argument('--amp', action='store_true', help='Enable AMP')
    parser.add_argument('--model', default='resnet50', help='Model architecture')
    args = parser.parse_args(argv)
    device = _common.pick_device(args.device)
    autocast, GradScaler = _common.amp_api(device)
    create_amp_trainer = make_factory(autocast, GradScaler, printer=(lambda s: None) if args.quiet else print)
    train_loader = _common.image_loader(args, device=device)

    # Твоя модель
    torch.manual_seed(args.seed)
    model = create_model(args.model, args).to(device)
    optimizer = torch.optim.Adam(model.parameters())
    criterion = torch.nn.CrossEntropyLoss()

    # Создаём тренер
    train_step = create_amp_trainer(model, optimizer, criterion, args.amp)

    # Обучение
    losses = []
    for epoch in range(args.epochs):  # article: range(10)
        for batch_idx, (data, target) in enumerate(train_loader):
            loss = train_step(data, target)
            losses.append(loss.item())
    final = _common.mean_loss(model, train_loader, criterion, device)
    _common.log(args, f"{'amp' if args.amp else 'fp32'} {args.model}: loss {losses[0]:.4f} -> final {final:.4f}")
    return {"amp" if args.amp else "fp32": {"losses": losses, "final_loss": final}}


if __name__ == "__main__":
    main()
