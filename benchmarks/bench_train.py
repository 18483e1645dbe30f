"""Training steps side by side: ampc and PyTorch run the *same* model code (ampc mirrors
torch's API, so each model is written once against a `lib` namespace), in FP32 and in AMP.

Models: the AMP-recipe MLP, the demo's small CNN (Fashion-MNIST sized), and a GPT block
(pre-LN TransformerEncoderLayer). AMP is autocast + GradScaler on CUDA (fp16) and autocast bf16 on
the CPU (each library's CPU autocast default; no scaler needed for bf16).

Usage: python benchmarks/bench_train.py [--device cpu|cuda] [--quick]
Prints ms per step and ampc/torch ratios (below 1: ampc is faster)."""
import argparse
import time

from common import machine_line, print_table, try_import_torch

import ampc


def mlp(lib, width, depth=3):
    layers = [lib.nn.Linear(784, width), lib.nn.ReLU()]
    for _ in range(depth - 1):
        layers += [lib.nn.Linear(width, width), lib.nn.ReLU()]
    return lib.nn.Sequential(*layers, lib.nn.Linear(width, 10))


def cnn(lib):
    n = lib.nn
    return n.Sequential(n.Conv2d(1, 32, 3, padding=1, bias=False), n.BatchNorm2d(32), n.ReLU(), n.MaxPool2d(2),
                        n.Conv2d(32, 64, 3, padding=1, bias=False), n.BatchNorm2d(64), n.ReLU(), n.MaxPool2d(2),
                        n.Flatten(), n.Linear(64 * 7 * 7, 10))


class GPTBlockHead:
    """A pre-LN transformer block plus a vocabulary head, as one callable model."""

    def __new__(cls, lib, d_model=256, n_head=4, vocab=512):
        n = lib.nn

        class Model(n.Module):
            def __init__(self):
                super().__init__()
                self.emb = n.Embedding(vocab, d_model)
                self.block = n.TransformerEncoderLayer(d_model, n_head, 4 * d_model, dropout=0.0, batch_first=True,
                                                       norm_first=True, activation="gelu")
                self.head = n.Linear(d_model, vocab)

            def forward(self, idx):
                return self.head(self.block(self.emb(idx))).flatten(0, 1)

        return Model()


def cases(quick):
    b = 64 if quick else 256
    return [
        ("MLP 784-1024x3-10", lambda lib: mlp(lib, 1024), lambda lib: (lib.randn(b, 784), lib.randint(0, 10, (b,)))),
        ("small CNN 28x28", cnn, lambda lib: (lib.randn(b // 2, 1, 28, 28), lib.randint(0, 10, (b // 2,)))),
        ("GPT block d256 T64", lambda lib: GPTBlockHead(lib),
         lambda lib: (lib.randint(0, 512, (8 if quick else 16, 64)), lib.randint(0, 512, ((8 if quick else 16) * 64,)))),
    ]


def make_step(lib, model, x, y, amp, device, amp_dtype):
    F = lib.nn.functional
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    use_scaler = amp and amp_dtype == lib.float16
    scaler = lib.amp.GradScaler(device, enabled=use_scaler)

    def step():
        opt.zero_grad(set_to_none=True)
        with lib.autocast(device, dtype=amp_dtype, enabled=amp):
            loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss

    return step


def time_step(step, sync, repeat):
    step()
    step()  # warm-up (lazy state, caches)
    sync()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


def run(lib, name, build, data, amp, device, repeat):
    lib.manual_seed(0)
    model = build(lib).to(device)
    x, y = (t.to(device) for t in data(lib))
    amp_dtype = lib.float16 if device == "cuda" else lib.bfloat16
    sync = (lambda: lib.cuda.synchronize()) if device == "cuda" else (lambda: None)
    return time_step(make_step(lib, model, x, y, amp, device, amp_dtype), sync, repeat)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cuda" if ampc.cuda.is_available() else "cpu")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--repeat", type=int, default=7)
    args = p.parse_args()
    torch = try_import_torch()
    if torch is not None:
        torch.set_num_threads(max(1, torch.get_num_threads()))
    print(machine_line(), f"device {args.device}")
    rows = []
    for name, build, data in cases(args.quick):
        for amp in (False, True):
            mode = "AMP" if amp else "FP32"
            t_a = run(ampc, name, build, data, amp, args.device, args.repeat) * 1e3
            row = [name, mode, f"{t_a:.1f}"]
            if torch is not None:
                t_t = run(torch, name, build, data, amp, args.device, args.repeat) * 1e3
                row += [f"{t_t:.1f}", f"{t_a / t_t:.2f}"]
            rows.append(row)
    header = ["model", "mode", "ampc ms/step", "torch ms/step", "ampc/torch"] if torch else ["model", "mode", "ampc ms"]
    print_table("Training step (median; lower is better)", header, rows)


if __name__ == "__main__":
    main()
