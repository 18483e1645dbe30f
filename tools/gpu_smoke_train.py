"""A short AMP training loop for compute-sanitizer (tools/gpu-first.sh): a small CNN and a
transformer layer, fp16 autocast + GradScaler + AdamW, a few steps on `--device` (cuda; cpu for
the dry run), then the loss is checked to be finite and falling. Small on purpose: memcheck
slows kernels down 10-100x."""
import argparse
import math
import sys

import ampc
import ampc.nn as nn
import ampc.nn.functional as F


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cuda" if ampc.cuda.is_available() else "cpu")
    p.add_argument("--steps", type=int, default=6)
    args = p.parse_args()
    dev = args.device
    ampc.manual_seed(0)
    cnn = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Flatten(), nn.Dropout(0.1), nn.Linear(8 * 14 * 14, 10)).to(dev)
    tr = nn.Sequential(nn.Embedding(64, 32),
                       nn.TransformerEncoderLayer(32, 4, 64, dropout=0.1, batch_first=True, norm_first=True),
                       nn.LayerNorm(32), nn.Linear(32, 64)).to(dev)
    params = list(cnn.parameters()) + list(tr.parameters())
    opt = ampc.optim.AdamW(params, lr=1e-2)
    scaler = ampc.amp.GradScaler(dev, enabled=dev == "cuda")
    amp_dtype = ampc.float16 if dev == "cuda" else ampc.bfloat16
    x = ampc.randn(16, 1, 28, 28, device=dev)
    y = ampc.randint(0, 10, (16,), device=dev)
    idx = ampc.randint(0, 64, (4, 12), device=dev)
    losses = []
    for _ in range(args.steps):
        opt.zero_grad(set_to_none=True)
        with ampc.autocast(dev, dtype=amp_dtype):
            loss = F.cross_entropy(cnn(x), y) + F.cross_entropy(tr(idx).flatten(0, 1), idx.flatten())
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        nn.utils.clip_grad_norm_(params, 1.0)
        scaler.step(opt)
        scaler.update()
        losses.append(float(loss.item()))
    print("losses:", " ".join(f"{v:.4f}" for v in losses))
    ok = all(math.isfinite(v) for v in losses) and losses[-1] < losses[0]
    print("smoke training", "OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
