"""The article's first two loops: the standard training loop, then the same loop with AMP
("добавляем всего 4 строки"). Both run from the same seed; the AMP run should end within
mixed-precision tolerance of the FP32 one.

    python examples/basic_loop.py --epochs 2 --limit 2048

Ported by changing imports: `import torch` -> `import ampc as torch`, and so on below. The
article leaves `YourModel` and `train_loader` to the reader: here they are ampc.models.SmallCNN
and a Fashion-MNIST DataLoader (_common.py)."""
import ampc as torch
import ampc.nn as nn
import ampc.optim as optim

import _common


def run_fp32(YourModel, train_loader, epochs):
    # Стандартный цикл обучения (the article's loop, unchanged; the epoch loop and the loss log added)
    model = YourModel()
    optimizer = optim.Adam(model.parameters())
    criterion = nn.CrossEntropyLoss()

    losses = []
    for epoch in range(epochs):
        for batch_idx, (data, target) in enumerate(train_loader):
            optimizer.zero_grad()
            output = model(data)
            loss = criterion(output, target)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return model, losses


def run_amp(YourModel, train_loader, epochs, autocast, GradScaler):
    # Цикл обучения с AMP
    model = YourModel()
    optimizer = optim.Adam(model.parameters())
    criterion = nn.CrossEntropyLoss()
    scaler = GradScaler()  # Добавляем скалер

    losses = []
    for epoch in range(epochs):
        for batch_idx, (data, target) in enumerate(train_loader):
            optimizer.zero_grad()

            with autocast():  # Включаем автокаст
                output = model(data)
                loss = criterion(output, target)

            scaler.scale(loss).backward()  # Масштабируем loss
            scaler.step(optimizer)         # Шаг оптимизатора
            scaler.update()                # Обновляем скалер
            losses.append(loss.item())
    return model, losses


def main(argv=None):
    args = _common.parser(__doc__.splitlines()[0]).parse_args(argv)
    device = _common.pick_device(args.device)
    autocast, GradScaler = _common.amp_api(device)

    def YourModel():
        torch.manual_seed(args.seed)  # same initial weights for both runs
        return _common.small_cnn(args).to(device)

    results = {}
    for mode in ("fp32", "amp"):
        train_loader = _common.image_loader(args, device=device)
        if mode == "fp32":
            model, losses = run_fp32(YourModel, train_loader, args.epochs)
        else:
            model, losses = run_amp(YourModel, train_loader, args.epochs, autocast, GradScaler)
        final = _common.mean_loss(model, train_loader, nn.CrossEntropyLoss(), device)
        results[mode] = {"losses": losses, "final_loss": final}
        _common.log(args, f"{mode}: first batch loss {losses[0]:.4f}, final train loss {final:.4f}")
    return results


if __name__ == "__main__":
    main()
