"""Problem 2 of the article: an operation that must run in FP32 inside an autocast region.

    python examples/fp32_region.py --epochs 2

Two ways, both from the article's advice: cast up explicitly (`output.float()`, the article's
code, unchanged), or switch autocast off locally with `autocast(enabled=False)` around the
FP32-only function (PyTorch's documented idiom; inputs produced inside the region are
low-precision, so they are cast up too). The FP32-only function here is a confidence penalty
(mean log-sum-exp of the logits), a reduction that loses accuracy in half precision."""
import ampc as torch
import ampc.nn as nn
import ampc.optim as optim

import _common

seen_dtypes = []


def make_fp32_only_function(autocast):
    def some_fp32_only_function(x):
        with autocast(enabled=False):  # FP32 island inside the autocast region
            x = x.float()
            seen_dtypes.append(x.dtype)
            return 1e-2 * torch.logsumexp(x, dim=1).pow(2).mean()
    return some_fp32_only_function


def main(argv=None):
    args = _common.parser(__doc__.splitlines()[0], epochs=2, limit=1024).parse_args(argv)
    device = _common.pick_device(args.device)
    autocast, GradScaler = _common.amp_api(device)
    some_fp32_only_function = make_fp32_only_function(autocast)

    results = {}
    for mode in ("fp32", "amp"):
        torch.manual_seed(args.seed)
        model = _common.small_cnn(args).to(device)
        optimizer = optim.Adam(model.parameters(), lr=args.lr)
        criterion = nn.CrossEntropyLoss()
        scaler = GradScaler(enabled=mode == "amp")
        losses, output_dtypes = [], []
        for epoch in range(args.epochs):
            for data, target in _common.image_loader(args, device=device):
                optimizer.zero_grad()
                # --- the article's code
                with autocast(enabled=mode == "amp"):
                    output = model(data)
                    # Если нужна операция в FP32
                    output_fp32 = output.float()
                    custom_loss = some_fp32_only_function(output_fp32)
                    loss = criterion(output, target) + custom_loss
                # ---
                output_dtypes.append(output.dtype)
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
                losses.append(loss.item())
        results[mode] = {"losses": losses, "output_dtype": output_dtypes[-1], "custom_dtype": seen_dtypes[-1]}
        _common.log(args, f"{mode}: model output {output_dtypes[-1]}, penalty computed in {seen_dtypes[-1]}, "
                          f"loss {losses[0]:.4f} -> {losses[-1]:.4f}")
    return results


if __name__ == "__main__":
    main()
