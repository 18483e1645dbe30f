"""Problem 3 of the article (slow convergence under AMP): raise the learning rate 1.5x and warm
it up with LambdaLR over the first 5 epochs.

    python examples/warmup_lambdalr.py --epochs 6

`from torch.optim.lr_scheduler import LambdaLR` -> `from ampc.optim.lr_scheduler import LambdaLR`;
the article's lines are otherwise unchanged. The model is an ampc.models.MLP on Fashion-MNIST."""
import ampc as torch
import ampc.nn as nn
import ampc.optim as optim
from ampc.models import MLP
from ampc.optim.lr_scheduler import LambdaLR

import _common


def warmup_lambda(epoch):
    return min(1.0, epoch / 5)  # 5 эпох warmup


def main(argv=None):
    args = _common.parser(__doc__.splitlines()[0], epochs=6, limit=1024).parse_args(argv)
    device = _common.pick_device(args.device)
    autocast, GradScaler = _common.amp_api(device)

    results = {}
    for mode in ("fp32", "amp"):
        torch.manual_seed(args.seed)
        model = MLP(args.image_size ** 2, [128], 10).to(device)
        # Увеличь learning rate в 1.5-2 раза
        optimizer = optim.Adam(model.parameters(), lr=0.001 * 1.5)
        scheduler = LambdaLR(optimizer, lr_lambda=warmup_lambda)
        criterion = nn.CrossEntropyLoss()
        scaler = GradScaler(enabled=mode == "amp")
        lrs, losses = [], []
        loader = _common.image_loader(args, device=device)
        for epoch in range(args.epochs):
            lrs.append(scheduler.get_last_lr()[0])
            for data, target in loader:
                optimizer.zero_grad()
                with autocast(enabled=mode == "amp"):
                    loss = criterion(model(data), target)
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
                losses.append(loss.item())
            scheduler.step()  # once per epoch: the lambda counts epochs
        results[mode] = {"losses": losses, "lrs": lrs, "final_loss": _common.mean_loss(model, loader, criterion, device)}
        _common.log(args, f"{mode}: lr per epoch {[round(x, 6) for x in lrs]}, final loss {results[mode]['final_loss']:.4f}")
    return results


if __name__ == "__main__":
    main()
