"""The article's AMPMonitor: log memory and the loss scale every 50 batches, count overflows.

    python examples/amp_monitor.py --epochs 1

The article's class reads GPU memory through GPUtil and guesses overflows from `scale < 1.0`;
ampc ships the class as ampc.monitor.AMPMonitor, which reads ampc's own allocator statistics
(CPU or CUDA) and the scaler's skipped-step telemetry, so here the import changes:
`import GPUtil` + the class body -> `from ampc.monitor import AMPMonitor`. The article's
`monitor.scaler` (the class made its own GradScaler) is passed in. The monitor's calls in the
loop are the article's, unchanged."""
import ampc as torch
import ampc.nn as nn
import ampc.optim as optim
from ampc.monitor import AMPMonitor

import _common


def main(argv=None):
    p = _common.parser(__doc__.splitlines()[0], epochs=1, limit=1024, batch_size=16)
    p.add_argument("--init-scale", type=float, default=2.0 ** 16)
    args = p.parse_args(argv)
    device = _common.pick_device(args.device)
    autocast, GradScaler = _common.amp_api(device)

    torch.manual_seed(args.seed)
    model = _common.small_cnn(args).to(device)
    optimizer = optim.Adam(model.parameters(), lr=args.lr)
    criterion = nn.CrossEntropyLoss()
    lines = []
    printer = (lambda s: lines.append(s)) if args.quiet else (lambda s: (lines.append(s), print(s)))
    # every=0: the loop below logs every 50 batches itself, as in the article
    monitor = AMPMonitor(GradScaler(init_scale=args.init_scale), every=0, device=device, printer=printer)
    train_loader = _common.image_loader(args, device=device)
    losses = []
    num_epochs = args.epochs

    # Используй в цикле обучения
    for epoch in range(num_epochs):
        for batch_idx, (data, target) in enumerate(train_loader):
            # ... твой код обучения ...
            optimizer.zero_grad()
            with autocast():
                loss = criterion(model(data), target)
            monitor.scaler.scale(loss).backward()
            monitor.scaler.step(optimizer)
            monitor.scaler.update()
            losses.append(loss.item())
            monitor.step(epoch, batch_idx)  # ampc's addition: times the step

            if batch_idx % 50 == 0:
                monitor.log_stats(epoch, batch_idx)
                monitor.check_overflow()
    summary = monitor.summary()
    _common.log(args, f"summary: {summary}")
    return {"amp": {"losses": losses}, "summary": summary, "lines": lines}


if __name__ == "__main__":
    main()
