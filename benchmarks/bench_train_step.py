"""One training step of the demo's SmallCNN (python -m ampc.demo), ampc beside PyTorch.

The step is the demo's: gather a batch of rows from the data set by an index tensor, zero_grad,
forward (under autocast in AMP mode), cross_entropy, scaler.scale(loss).backward(),
scaler.step(SGD nesterov + weight decay), scaler.update(), loss.item().

Modes:
  compare  whole steps, FP32 and AMP (fp16 autocast + GradScaler), ampc and torch alternated in one
           process (the machine is shared: alternation and medians keep the ratio honest).
  profile  each piece of the step on its own, forward and forward+backward, FP32 and AMP, ampc beside
           torch: the gather, each layer of the model, the loss, the optimizer and scaler. The
           hot spots are the rows with the largest ampc milliseconds and ratios.
  both     compare, then profile (default).

Usage: python benchmarks/bench_train_step.py [compare|profile|both] [--batch 128] [--repeats 5]
                                               [--steps 5] [--inner 3] [--skip-torch-amp] [--threads N]
Synthetic data of Fashion-MNIST's shape (the step's cost does not depend on the pixel values).
Prints milliseconds (medians over repeats) and ampc/torch ratios (lower is better)."""
import argparse
import statistics
import time

import numpy as np

from common import machine_line, print_table, try_import_torch

import ampc
import ampc.nn.functional as AF
from ampc.amp import GradScaler as AGradScaler
from ampc.amp import autocast as aautocast
from ampc.models import SmallCNN

N_DATA = 4096


# ------------------------------------------------------------------------------------ the two sides
class Side:
    """One framework: module namespace, model, optimizer, scaler, data."""

    def __init__(self, lib, name, amp, batch, weights, seed=0):
        self.lib, self.name, self.amp, self.batch = lib, name, amp, batch
        rng = np.random.default_rng(seed)
        x = rng.standard_normal((N_DATA, 1, 28, 28)).astype(np.float32)
        y = rng.integers(0, 10, N_DATA).astype(np.int64)
        self.data, self.targets = lib.from_numpy(x), lib.from_numpy(y)
        self.order = rng.permutation(N_DATA)
        self.pos = 0
        if lib is ampc:
            self.model = SmallCNN()
            self.F = AF
            self.autocast = lambda: aautocast("cpu", dtype=ampc.float16, enabled=amp)
            self.scaler = AGradScaler("cpu", init_scale=2.0 ** 16, enabled=amp)
        else:
            self.model = torch_small_cnn(lib)
            self.F = lib.nn.functional
            self.autocast = lambda: lib.autocast("cpu", dtype=lib.float16, enabled=amp)
            self.scaler = lib.amp.GradScaler("cpu", init_scale=2.0 ** 16, enabled=amp)
        load_weights(self.model, weights, lib)
        self.opt = lib.optim.SGD(self.model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)

    def next_index(self):
        if self.pos + self.batch > N_DATA:
            self.pos = 0
        idx = self.order[self.pos:self.pos + self.batch]
        self.pos += self.batch
        return idx

    def step(self):
        lib = self.lib
        index = lib.from_numpy(self.next_index())
        x, y = self.data[index], self.targets[index]
        self.opt.zero_grad(set_to_none=True)
        with self.autocast():
            loss = self.F.cross_entropy(self.model(x), y)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.opt)
        self.scaler.update()
        return loss.item()


def torch_small_cnn(torch):
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(inplace=True), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True), nn.MaxPool2d(2),
        nn.Flatten(1), nn.Linear(64 * 7 * 7, 10))


def ampc_weights():
    """The ampc model's initial parameters, in module order, as NumPy arrays."""
    ampc.manual_seed(0)
    return [p.detach().numpy().copy() for p in SmallCNN().parameters()]


def load_weights(model, weights, lib):
    with lib.no_grad():
        for p, w in zip(model.parameters(), weights):
            p.copy_(lib.from_numpy(w.copy()))


def time_steps(side, steps):
    t0 = time.perf_counter()
    for _ in range(steps):
        side.step()
    return (time.perf_counter() - t0) / steps


# ------------------------------------------------------------------------------------ compare
def compare(torch, args, weights):
    sides = []
    for amp in (False, True):
        sides.append(Side(ampc, "ampc", amp, args.batch, weights))
        if torch is not None and (not amp or not args.skip_torch_amp):
            sides.append(Side(torch, "torch", amp, args.batch, weights))
    for s in sides:  # warm-up: first-touch allocations, lazy scaler state, BLAS threads
        s.step()
        s.step()
    times = {(s.name, s.amp): [] for s in sides}
    for _ in range(args.repeats):
        for s in sides:  # alternate: ampc, torch, ampc, torch ... so load spikes hit both
            times[(s.name, s.amp)].append(time_steps(s, args.steps))
    rows = []
    for amp in (False, True):
        a = statistics.median(times[("ampc", amp)]) * 1e3
        row = ["AMP fp16" if amp else "FP32", f"{a:.1f}"]
        if ("torch", amp) in times:
            t = statistics.median(times[("torch", amp)]) * 1e3
            row += [f"{t:.1f}", f"{a / t:.2f}"]
        elif torch is not None:  # torch's CPU fp16 autocast is very slow: AMP set beside torch FP32
            t = statistics.median(times[("torch", False)]) * 1e3
            row += [f"{t:.1f} (FP32)", f"{a / t:.2f}"]
        rows.append(row)
    header = ["mode", "ampc ms/step"] + (["torch ms/step", "ratio"] if torch is not None else [])
    print_table(f"SmallCNN training step, batch {args.batch} (median of {args.repeats} x {args.steps} steps)",
                header, rows)


# ------------------------------------------------------------------------------------ profile
def median_time(fn, repeats, inner):
    fn()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        ts.append((time.perf_counter() - t0) / inner)
    return statistics.median(ts)


def piece_cases(lib, F, amp, batch, rng_seed=0):
    """(name, forward-only fn, forward+backward fn) for each piece of the step, on one framework.
    Inputs are the shapes the step sees; AMP pieces run under fp16 autocast as in the step."""
    rng = np.random.default_rng(rng_seed)
    nd = lambda *s: rng.standard_normal(s).astype(np.float32)
    t = lambda a, rg=False: lib.from_numpy(a.copy()).requires_grad_(rg)
    ac = (lambda: aautocast("cpu", dtype=ampc.float16, enabled=amp)) if lib is ampc else \
        (lambda: lib.autocast("cpu", dtype=lib.float16, enabled=amp))
    act_dtype = lib.float16 if amp else lib.float32  # what conv outputs under autocast
    cases = []

    data = t(nd(N_DATA, 1, 28, 28))
    index = lib.from_numpy(rng.permutation(N_DATA)[:batch].astype(np.int64))
    cases.append(("gather data[index]", lambda: data[index], None))
    cases.append(("index_select(0)", lambda: data.index_select(0, index), None))

    def layer(name, make_inputs, fwd):
        inputs = make_inputs()

        def f():
            with ac():
                return fwd(*inputs)

        # a dense random gradient like the step's (sum().backward() would hand the layer an
        # expanded, stride-0 gradient that no real step produces)
        shape = tuple(f().shape)
        grad = lib.from_numpy(nd(*shape) if shape else np.array(1.0, np.float32)).to(f().dtype)

        def fb():
            with ac():
                out = fwd(*inputs)
            out.backward(grad)

        cases.append((name, f, fb))

    w1, w2 = nd(32, 1, 3, 3) * 0.3, nd(64, 32, 3, 3) * 0.06
    layer("conv1 1->32 28x28", lambda: (t(nd(batch, 1, 28, 28)), t(w1, True)),
          lambda x, w: F.conv2d(x, w, None, 1, 1))
    layer("conv2 32->64 14x14", lambda: (t(nd(batch, 32, 14, 14), True), t(w2, True)),
          lambda x, w: F.conv2d(x, w, None, 1, 1))

    def bn_inputs(c, s):
        x = lib.from_numpy(nd(batch, c, s, s)).to(act_dtype).requires_grad_(True)
        return x, lib.zeros(c), lib.ones(c), t(np.ones(c, np.float32), True), t(np.zeros(c, np.float32), True)

    for c, s in ((32, 28), (64, 14)):
        layer(f"batch_norm {c}x{s}x{s}", lambda c=c, s=s: bn_inputs(c, s),
              lambda x, rm, rv, w, b: F.batch_norm(x, rm, rv, w, b, True, 0.1, 1e-5))

    def act_inputs(c, s):
        return (lib.from_numpy(nd(batch, c, s, s)).to(act_dtype).requires_grad_(True),)

    # relu(inplace) in the model follows batch_norm, whose output is not a leaf: relu of a view
    for c, s in ((32, 28), (64, 14)):
        layer(f"relu {c}x{s}x{s}", lambda c=c, s=s: act_inputs(c, s), lambda x: F.relu(x * 1))
        layer(f"  (x*1 of the relu row)", lambda c=c, s=s: act_inputs(c, s), lambda x: x * 1)
        layer(f"max_pool2d {c}x{s}x{s}", lambda c=c, s=s: act_inputs(c, s), lambda x: F.max_pool2d(x, 2))
    layer("flatten+linear 3136->10", lambda: (act_inputs(64, 7)[0], t(nd(10, 3136) * 0.02, True),
                                               t(nd(10) * 0.02, True)),
          lambda x, w, b: F.linear(x.flatten(1), w, b))
    y = lib.from_numpy(rng.integers(0, 10, batch).astype(np.int64))
    layer("cross_entropy", lambda: (t(nd(batch, 10), True),), lambda z: F.cross_entropy(z, y))

    # optimizer + scaler over the model's parameters with grads (no backward: grads preset)
    if lib is ampc:
        model = SmallCNN()
        scaler = AGradScaler("cpu", init_scale=2.0 ** 16, enabled=amp)
    else:
        model = torch_small_cnn(lib)
        scaler = lib.amp.GradScaler("cpu", init_scale=2.0 ** 16, enabled=amp)
    params = list(model.parameters())
    grads = [lib.from_numpy(nd(*p.shape) * 1e-3) for p in params]
    opt = lib.optim.SGD(params, lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
    scaler.scale(lib.ones(()))  # the scaler's lazy state, as the step's scale(loss) makes it

    def opt_step():
        for p, g in zip(params, grads):
            p.grad = g.clone()
        scaler.step(opt)
        scaler.update()

    def grads_only():
        for p, g in zip(params, grads):
            p.grad = g.clone()

    cases.append(("scaler.step(SGD)+update", opt_step, None))
    cases.append(("  (grad clone of that row)", grads_only, None))
    cases.append(("zero_grad(set_to_none)", lambda: opt.zero_grad(set_to_none=True), None))
    return cases


def profile(torch, args):
    for amp in (False, True):
        acases = piece_cases(ampc, AF, amp, args.batch)
        with_torch = torch is not None and not (amp and args.skip_torch_amp)
        tcases = piece_cases(torch, torch.nn.functional, amp, args.batch) if with_torch else None
        rows = []
        total = [0.0, 0.0]
        for i, (name, f, fb) in enumerate(acases):
            for kind, fa in (("fwd", f), ("fwd+bwd", fb)):
                if fa is None:
                    continue
                ft = None if tcases is None else (tcases[i][1] if kind == "fwd" else tcases[i][2])
                a = t = None
                ta, tt = [], []
                for _ in range(3):  # alternate ampc and torch, median of medians
                    ta.append(median_time(fa, args.repeats, args.inner))
                    if ft is not None:
                        tt.append(median_time(ft, args.repeats, args.inner))
                a = statistics.median(ta) * 1e3
                row = [name, kind, f"{a:.3f}"]
                if ft is not None:
                    t = statistics.median(tt) * 1e3
                    row += [f"{t:.3f}", f"{a / t:.2f}"]
                if not name.startswith(" ") and (kind == "fwd+bwd" or fb is None):
                    total[0] += a
                    total[1] += t or 0.0
                rows.append(row)
        rows.append(["sum of pieces (fwd+bwd or only)", "", f"{total[0]:.3f}"] +
                    ([f"{total[1]:.3f}", f"{total[0] / total[1]:.2f}"] if tcases is not None else []))
        header = ["piece", "pass", "ampc ms"] + (["torch ms", "ratio"] if tcases is not None else [])
        print_table(f"Pieces of the step, {'AMP fp16 autocast' if amp else 'FP32'}, batch {args.batch}", header, rows)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", nargs="?", default="both", choices=["compare", "profile", "both"])
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--inner", type=int, default=3)
    p.add_argument("--skip-torch-amp", action="store_true",
                   help="no torch AMP runs (its CPU fp16 convolutions take seconds per step); compare sets "
                        "AMP beside torch FP32 instead, profile shows ampc's AMP pieces alone")
    p.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    args = p.parse_args()
    torch = try_import_torch()
    if torch is not None and args.threads:
        torch.set_num_threads(args.threads)
    print(machine_line())
    if torch is not None:
        print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    if args.mode in ("compare", "both"):
        compare(torch, args, ampc_weights())
    if args.mode in ("profile", "both"):
        profile(torch, args)


if __name__ == "__main__":
    main()
