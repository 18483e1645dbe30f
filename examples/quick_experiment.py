"""The article's `quick_experiment`: train several architectures for a few epochs under AMP and
compare them.

    python examples/quick_experiment.py --epochs 2

The function is the article's, unchanged (it relies on `torch.optim` and `torch.nn` being reachable
from `import ampc as torch`, as they are from `import torch`). The article's list
`[ResNet(), EfficientNet(), DenseNet()]` names models ampc does not ship (EfficientNet, DenseNet),
so the list here is taken from ampc.models by `--models` (linear, mlp, cnn, resnet18)."""
import ampc as torch
from ampc.models import MLP, resnet18

import _common

autocast = GradScaler = None  # bound in main() to the device's AMP names (see _common.amp_api)


# Быстрая проверка гипотез
def quick_experiment(model_fn, data_loader, epochs=5):
    model = model_fn()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    criterion = torch.nn.CrossEntropyLoss()
    scaler = GradScaler()

    for epoch in range(epochs):
        for data, target in data_loader:
            optimizer.zero_grad()
            with autocast():
                output = model(data)
                loss = criterion(output, target)

            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()

    return model


def main(argv=None):
    global autocast, GradScaler
    p = _common.parser(__doc__.splitlines()[0], epochs=2, limit=512, batch_size=64)
    p.add_argument("--models", default="mlp,cnn,resnet18")
    args = p.parse_args(argv)
    device = _common.pick_device(args.device)
    autocast, GradScaler = _common.amp_api(device)
    train_loader = _common.image_loader(args, device=device)

    def seeded(build):
        def model_fn():
            torch.manual_seed(args.seed)
            return build().to(device)
        return model_fn

    pixels = args.image_size ** 2
    builders = {
        "linear": lambda: MLP(pixels, [], 10),  # logistic regression: the baseline
        "mlp": lambda: MLP(pixels, [128], 10),
        "cnn": lambda: _common.small_cnn(args),
        "resnet18": lambda: resnet18(num_classes=10, in_channels=1),
    }
    names = args.models.split(",")
    # Теперь можно быстро тестировать разные архитектуры
    models = [seeded(builders[n]) for n in names]
    criterion = torch.nn.CrossEntropyLoss()
    before = [_common.mean_loss(fn(), train_loader, criterion, device) for fn in models]
    results = [quick_experiment(model_fn, train_loader, epochs=args.epochs) for model_fn in models]
    after = [_common.mean_loss(m, train_loader, criterion, device) for m in results]
    table = {n: {"loss_before": b, "loss_after": a} for n, b, a in zip(names, before, after)}
    for n, row in table.items():
        _common.log(args, f"{n:>9}: loss {row['loss_before']:.4f} -> {row['loss_after']:.4f}")
    return table


if __name__ == "__main__":
    main()
