"""Loss scaling, reproduced (Micikevicius et al., "Mixed Precision Training", ICLR 2018).

One model, one dataset, one seed, trained four ways:
  FP32                      the reference;
  fp16 autocast, no scaling fp16 activation gradients below 2**-24 flush to zero, and the layers
                            under them stop learning;
  fp16 autocast + GradScaler  the loss is multiplied by the scale before backward, so the same
                            gradients land in fp16's range, and unscaled in fp32 before the step;
  bf16 autocast, no scaling bfloat16 has float32's exponent range, so nothing underflows
                            (Kalamkar et al., 2019) and no scaler is needed.

The setup where gradients underflow is the one large-batch training produces: the per-example
loss is normalised by the *global* batch (here SHARDS = 4096 shards of the step's 2048 examples,
as a data-parallel or gradient-accumulation trainer divides by the global count), so each
example's logit gradient is ~1e-7, and the four tanh layers below shrink it further. The table
shows, per layer, the share of the activation gradient that is exactly zero at the first step, the
test accuracy, skipped steps and the final scale. Adam is used, as in practice: it is invariant to
a constant factor on the loss, so FP32 is not slowed by the normalisation and any gap is fp16's.

    python examples/loss_scaling.py [--steps 120] [--plot loss_scaling.png]
"""
import argparse
import time

import ampc
import ampc.nn as nn
import ampc.nn.functional as F

D_IN, WIDTH, DEPTH, CLASSES = 32, 64, 4, 10
N_TRAIN, N_TEST = 2048, 4096
SHARDS = 4096  # the global batch is SHARDS x N_TRAIN examples; each step sees one shard

MODES = [
    ("FP32", None, False),
    ("fp16, no scaling", ampc.float16, False),
    ("fp16 + GradScaler", ampc.float16, True),
    ("bf16, no scaling", ampc.bfloat16, False),
]


def make_data(seed=0):
    """Inputs and labels from a random tanh teacher, so the lower layers matter."""
    ampc.manual_seed(seed)
    t1, t2 = ampc.randn(D_IN, 64) / D_IN ** 0.5, ampc.randn(64, CLASSES)
    x, xt = ampc.randn(N_TRAIN, D_IN), ampc.randn(N_TEST, D_IN)

    def label(v):
        return (ampc.tanh(v @ t1 * 2) @ t2).argmax(1)

    return x, label(x), xt, label(xt)


def make_model(seed=1):
    ampc.manual_seed(seed)
    layers = [nn.Linear(D_IN, WIDTH), nn.Tanh()]
    for _ in range(DEPTH - 1):
        layers += [nn.Linear(WIDTH, WIDTH), nn.Tanh()]
    return nn.Sequential(*layers, nn.Linear(WIDTH, CLASSES))


def activation_grad_capture(model):
    """Forward hooks that keep the gradient of every Linear's output (name -> tensor)."""
    grads, handles = {}, []
    for name, mod in model.named_modules():
        if isinstance(mod, nn.Linear):
            def hook(m, args, out, name=name):
                out.register_hook(lambda g: grads.__setitem__(name, g))
            handles.append(mod.register_forward_hook(hook))
    return grads, handles


def train(data, amp_dtype, use_scaler, steps, lr=3e-3):
    x, y, xt, yt = data
    model = make_model()
    opt = ampc.optim.Adam(model.parameters(), lr=lr)
    scaler = ampc.amp.GradScaler("cpu", enabled=use_scaler)
    grads, handles = activation_grad_capture(model)
    losses, zero_share = [], {}
    for step in range(steps):
        opt.zero_grad(set_to_none=True)
        with ampc.autocast("cpu", dtype=amp_dtype or ampc.float32, enabled=amp_dtype is not None):
            loss = F.cross_entropy(model(x), y) / SHARDS
        scaler.scale(loss).backward()
        if step == 0:
            zero_share = {n: float((g == 0).float().mean()) for n, g in grads.items()}
            for h in handles:
                h.remove()
        scaler.step(opt)
        scaler.update()
        losses.append(float(loss) * SHARDS)
    with ampc.no_grad(), ampc.autocast("cpu", dtype=amp_dtype or ampc.float32, enabled=amp_dtype is not None):
        accuracy = float((model(xt).argmax(1) == yt).float().mean())
    stats = scaler.stats()
    return {"accuracy": accuracy, "losses": losses, "zero_grad_share": zero_share,
            "skipped": stats["skipped_steps"], "scale": stats["scale"] if use_scaler else None}


def run_all(steps=120, modes=MODES):
    data = make_data()
    out = {}
    for name, dtype, use_scaler in modes:
        t0 = time.perf_counter()
        out[name] = train(data, dtype, use_scaler, steps)
        out[name]["seconds"] = time.perf_counter() - t0
    return out


def table(results):
    layers = sorted(next(iter(results.values()))["zero_grad_share"], key=int)
    head = "| run | test accuracy | " + " | ".join(f"zero grads, layer {n}" for n in layers) + \
        " | skipped steps | final scale |"
    lines = [head, "|" + " --- |" * (len(layers) + 4)]
    for name, r in results.items():
        z = " | ".join(f"{r['zero_grad_share'].get(n, 0.0):.1%}" for n in layers)
        scale = "-" if r["scale"] is None else f"{r['scale']:g}"
        lines.append(f"| {name} | {r['accuracy']:.1%} | {z} | {r['skipped']} | {scale} |")
    return "\n".join(lines)


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, r in results.items():
        ax.plot(r["losses"], label=f"{name} ({r['accuracy']:.1%})")
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (per example)")
    ax.set_title("Loss scaling: fp16 gradients underflow without it")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=120)
    p.add_argument("--plot", default=None, help="write the loss curves to this PNG")
    args = p.parse_args(argv)
    results = run_all(args.steps)
    print(table(results))
    if args.plot:
        print("plot:", plot(results, args.plot))
    return results


if __name__ == "__main__":
    main()
