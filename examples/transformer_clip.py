"""Case 2 of the article: a transformer trained with AMP and gradient clipping, where the
gradients must be unscaled (`scaler.unscale_`) before `clip_grad_norm_` sees them.

    python examples/transformer_clip.py --epochs 3 --limit 512

The model is ampc.models.GPT on a synthetic next-token task (each sequence counts up by a random
stride modulo the vocabulary, so the loss can fall far). The article's loop is unchanged; the
article leaves model, criterion, optimizer and train_loader to the reader: they are built in
main(). `import torch.nn.utils as nn_utils` -> `import ampc.nn.utils as nn_utils`."""
import ampc as torch
import ampc.nn as nn
import ampc.nn.utils as nn_utils
import ampc.optim as optim
from ampc.models import GPT, GPTConfig
from ampc.utils.data import DataLoader, TensorDataset

import _common


class NextTokenModel(nn.Module):
    """GPT whose output is (B*T, vocab) logits, so `criterion(output, target)` is plain
    cross-entropy against the flattened (B*T,) next tokens."""

    def __init__(self, cfg):
        super().__init__()
        self.gpt = GPT(cfg)

    def forward(self, idx):
        logits, _ = self.gpt(idx)
        return logits.flatten(0, 1)


def counting_data(n, block_size, vocab, generator):
    start = torch.randint(0, vocab, (n, 1), generator=generator)
    stride = torch.randint(1, 4, (n, 1), generator=generator)
    seq = (start + stride * torch.arange(block_size + 1).view(1, -1)) % vocab  # (n, T+1)
    return seq[:, :-1].contiguous(), seq[:, 1:].contiguous()


def train(model, train_loader, optimizer, criterion, autocast, GradScaler, epochs, max_norm=1.0):
    scaler = GradScaler()
    losses, norms = [], []
    for epoch in range(epochs):
        for batch_idx, (data, target) in enumerate(train_loader):
            target = target.flatten()  # (B*T,) to match the (B*T, vocab) output
            # --- the article's loop from here
            optimizer.zero_grad()

            with autocast():
                output = model(data)
                loss = criterion(output, target)

            scaler.scale(loss).backward()

            # Важно: unscale перед clipping
            scaler.unscale_(optimizer)
            norm = nn_utils.clip_grad_norm_(model.parameters(), max_norm=max_norm)

            scaler.step(optimizer)
            scaler.update()
            # --- to here
            losses.append(loss.item())
            norms.append(norm.item())
    return losses, norms, scaler


def main(argv=None):
    p = _common.parser(__doc__.splitlines()[0], epochs=3, batch_size=32, limit=512, lr=3e-3)
    p.add_argument("--block-size", type=int, default=16)
    p.add_argument("--vocab", type=int, default=32)
    p.add_argument("--n-layer", type=int, default=2)
    p.add_argument("--n-embd", type=int, default=64)
    p.add_argument("--n-head", type=int, default=4)
    args = p.parse_args(argv)
    device = _common.pick_device(args.device)
    cfg = GPTConfig(vocab_size=args.vocab, block_size=args.block_size, n_layer=args.n_layer,
                    n_head=args.n_head, n_embd=args.n_embd)
    x, y = counting_data(args.limit, args.block_size, args.vocab, torch.Generator().manual_seed(7))
    x, y = x.to(device), y.to(device)

    results = {}
    for mode in ("fp32", "amp"):
        autocast, GradScaler = _common.amp_api(device)
        enabled = mode == "amp"
        torch.manual_seed(args.seed)
        model = NextTokenModel(cfg).to(device)
        optimizer = optim.AdamW(model.parameters(), lr=args.lr)
        criterion = nn.CrossEntropyLoss()
        loader = DataLoader(TensorDataset(x, y), batch_size=args.batch_size, shuffle=True,
                            generator=torch.Generator().manual_seed(args.seed))
        losses, norms, scaler = train(
            model, loader, optimizer, criterion,
            lambda: autocast(enabled=enabled), lambda: GradScaler(enabled=enabled), args.epochs)
        results[mode] = {"losses": losses, "grad_norms": norms, "scale": scaler.get_scale()}
        _common.log(args, f"{mode}: loss {losses[0]:.3f} -> {losses[-1]:.3f}, last grad norm {norms[-1]:.3f}")
    return results


if __name__ == "__main__":
    main()
