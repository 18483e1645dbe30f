"""The GPU figures of issue 6, ampc beside PyTorch eager in the same process on the same GPU.

  1. GEMM TFLOP/s: fp32 (TF32 off in both), fp16, bf16; square n = 1024 .. 8192.
  2. Bandwidth: a device copy, and GradScaler's unscale + inf/NaN check over ~1B gradient
     elements in 1000 tensors (fp32 and fp16), as a share of the copy bandwidth of this run.
  3. Training steps: the PyTorch AMP recipe's MLP (batch 512, width 4096, 3 layers, MSE, SGD)
     and a GPT block (pre-LN transformer layer + vocabulary head), FP32 and AMP (fp16 autocast +
     GradScaler): ms/step, AMP-vs-FP32 speedup and peak memory.

Usage: python benchmarks/bench_cuda.py [--device cuda|cpu] [--quick] [--out DIR]
`--device cpu --quick` is the dry run on a machine without a GPU: same code paths, tiny sizes.
With --out, writes results.md (Markdown tables) and results.json there."""
import argparse
import json
import os
import time

from bench_train import GPTBlockHead
from common import machine_line, try_import_torch

import ampc


def syncer(lib, device):
    if device == "cuda":
        return lib.cuda.synchronize
    return lambda: None


def seconds_per_call(fn, sync, min_time, max_iters=1000):
    """Median-of-5 seconds per call; each sample loops until min_time has passed."""
    fn()
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    one = max(time.perf_counter() - t0, 1e-7)
    iters = max(1, min(max_iters, int(min_time / one)))
    samples = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        sync()
        samples.append((time.perf_counter() - t0) / iters)
    samples.sort()
    return samples[2]


def ratio(a, b):
    return f"{a / b:.2f}" if a and b else "-"


# ---------------------------------------------------------------- 1. GEMM

def bench_gemm(libs, device, sizes, min_time):
    rows = []
    for dtype_name in ("float32", "float16", "bfloat16"):
        for n in sizes:
            row = {"dtype": dtype_name, "n": n}
            for name, lib in libs:
                dt = getattr(lib, dtype_name)
                a = lib.randn(n, n, device=device).to(dt)
                b = lib.randn(n, n, device=device).to(dt)
                s = seconds_per_call(lambda: lib.mm(a, b), syncer(lib, device), min_time)
                row[name] = 2 * n ** 3 / s / 1e12
                del a, b
            rows.append(row)
    return rows


# ---------------------------------------------------------------- 2. bandwidth

def split_sizes(total, n):
    base = total // n
    return [base + (1 if i < total - base * n else 0) for i in range(n)]


def bench_bandwidth(libs, device, total, n_tensors, min_time):
    """GB/s of a copy and of unscale+check; each moves every byte twice (read + write)."""
    rows = []
    inv = 1.0000001  # just above 1: every call multiplies, values stay normal
    for dtype_name in ("float32", "float16"):
        row = {"dtype": dtype_name, "elements": total, "tensors": n_tensors}
        for name, lib in libs:
            dt = getattr(lib, dtype_name)
            sync = syncer(lib, device)
            src = lib.randn(total, device=device).to(dt)
            dst = lib.empty_like(src)
            moved = 2 * total * src.element_size()
            row[f"{name}_copy"] = moved / seconds_per_call(lambda: dst.copy_(src), sync, min_time, 50) / 1e9
            del src, dst
            grads = [lib.randn(s, device=device).to(dt) for s in split_sizes(total, n_tensors)]
            found = lib.zeros((), device=device)
            inv_scale = lib.full((), inv, device=device)
            if lib is ampc:
                fn = lambda: ampc._C._amp_foreach_non_finite_check_and_unscale_(grads, found, inv_scale)
            else:
                fn = lambda: lib._amp_foreach_non_finite_check_and_unscale_(grads, found, inv_scale)
            row[f"{name}_unscale"] = moved / seconds_per_call(fn, sync, min_time, 50) / 1e9
            assert float(found.item()) == 0.0, f"{name}: unscale found an inf in finite data"
            del grads
        rows.append(row)
    return rows


# ---------------------------------------------------------------- 3. training steps

def recipe_mlp(lib, width, layers):
    """torch's AMP recipe (docs: 'Automatic Mixed Precision'): Linear+ReLU blocks, Linear out."""
    mods = []
    for _ in range(layers - 1):
        mods += [lib.nn.Linear(width, width), lib.nn.ReLU()]
    mods.append(lib.nn.Linear(width, width))
    return lib.nn.Sequential(*mods)


def gpt_block(lib, d_model, n_head, vocab):
    return GPTBlockHead(lib, d_model=d_model, n_head=n_head, vocab=vocab)


def train_cases(quick):
    if quick:
        mlp = dict(batch=16, width=64, layers=3)
        gpt = dict(batch=2, seq=16, d_model=64, n_head=4, vocab=128)
    else:
        mlp = dict(batch=512, width=4096, layers=3)
        gpt = dict(batch=8, seq=1024, d_model=768, n_head=12, vocab=8192)
    return [
        (f"MLP b{mlp['batch']} w{mlp['width']} x{mlp['layers']}",
         lambda lib: recipe_mlp(lib, mlp["width"], mlp["layers"]),
         lambda lib, dev: (lib.randn(mlp["batch"], mlp["width"], device=dev),
                           lib.randn(mlp["batch"], mlp["width"], device=dev)),
         "mse"),
        (f"GPT block d{gpt['d_model']} T{gpt['seq']} b{gpt['batch']}",
         lambda lib: gpt_block(lib, gpt["d_model"], gpt["n_head"], gpt["vocab"]),
         lambda lib, dev: (lib.randint(0, gpt["vocab"], (gpt["batch"], gpt["seq"]), device=dev),
                           lib.randint(0, gpt["vocab"], (gpt["batch"] * gpt["seq"],), device=dev)),
         "ce"),
    ]


def step_fn(lib, model, x, y, loss_kind, amp, device):
    F = lib.nn.functional
    opt = lib.optim.SGD(model.parameters(), lr=1e-3)
    scaler = lib.amp.GradScaler(device, enabled=amp and device == "cuda")
    amp_dtype = lib.float16 if device == "cuda" else lib.bfloat16

    def step():
        with lib.autocast(device, dtype=amp_dtype, enabled=amp):
            out = model(x)
            loss = F.mse_loss(out, y) if loss_kind == "mse" else F.cross_entropy(out, y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)

    return step


def peak_reset(lib, device):
    if device == "cuda":
        lib.cuda.synchronize()
        lib.cuda.empty_cache()
        lib.cuda.reset_peak_memory_stats()


def peak_bytes(lib, device):
    if device == "cuda":
        return lib.cuda.max_memory_allocated()
    if lib is ampc:
        return ampc._C._cpu_memory_stats()["peak_allocated"]
    return 0


def bench_train(libs, device, quick, min_time):
    rows = []
    for name, build, data, loss_kind in train_cases(quick):
        for amp in (False, True):
            row = {"model": name, "mode": "AMP" if amp else "FP32"}
            for lib_name, lib in libs:
                lib.manual_seed(0)
                peak_reset(lib, device)
                if lib is ampc and device == "cpu":
                    ampc._C._cpu_reset_peak()
                model = build(lib).to(device)
                x, y = data(lib, device)
                step = step_fn(lib, model, x, y, loss_kind, amp, device)
                s = seconds_per_call(step, syncer(lib, device), min_time, 50)
                row[f"{lib_name}_ms"] = s * 1e3
                row[f"{lib_name}_peak_mib"] = peak_bytes(lib, device) / 2 ** 20
                del model, x, y, step
            rows.append(row)
    for row in rows:  # AMP speedup over FP32 of the same model and library
        if row["mode"] == "AMP":
            fp32 = next(r for r in rows if r["model"] == row["model"] and r["mode"] == "FP32")
            for lib_name, _ in libs:
                row[f"{lib_name}_amp_speedup"] = fp32[f"{lib_name}_ms"] / row[f"{lib_name}_ms"]
    return rows


# ---------------------------------------------------------------- report

def markdown(results, lib_names):
    has_torch = "torch" in lib_names
    lines = [f"Machine: {results['machine']}", ""]
    lines += ["### GEMM (TFLOP/s, higher is better; fp32 without TF32)", "",
              "| dtype | n | ampc | torch | ampc/torch |" if has_torch else "| dtype | n | ampc |",
              "| --- | ---: | ---: | ---: | ---: |" if has_torch else "| --- | ---: | ---: |"]
    for r in results["gemm"]:
        cells = [r["dtype"], str(r["n"]), f"{r['ampc']:.1f}"]
        if has_torch:
            cells += [f"{r['torch']:.1f}", ratio(r["ampc"], r["torch"])]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "### Bandwidth (GB/s, read + write; unscale = GradScaler's unscale + inf/NaN check)", "",
              "| dtype | elements | tensors | ampc copy | ampc unscale | unscale / copy |"
              + (" torch copy | torch unscale | ampc/torch unscale |" if has_torch else ""),
              "| --- | ---: | ---: | ---: | ---: | ---: |" + (" ---: | ---: | ---: |" if has_torch else "")]
    for r in results["bandwidth"]:
        cells = [r["dtype"], f"{r['elements']:,}", str(r["tensors"]), f"{r['ampc_copy']:.0f}",
                 f"{r['ampc_unscale']:.0f}", f"{r['ampc_unscale'] / r['ampc_copy']:.0%}"]
        if has_torch:
            cells += [f"{r['torch_copy']:.0f}", f"{r['torch_unscale']:.0f}", ratio(r["ampc_unscale"], r["torch_unscale"])]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "### Training step (ms/step median, lower is better; peak = max_memory_allocated)", "",
              "| model | mode | ampc ms | torch ms | ampc/torch | ampc AMP speedup | torch AMP speedup | ampc peak MiB | torch peak MiB |"
              if has_torch else "| model | mode | ampc ms | ampc AMP speedup | ampc peak MiB |",
              "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |" if has_torch else
              "| --- | --- | ---: | ---: | ---: |"]
    for r in results["train"]:
        sp = lambda k: f"{r[k]:.2f}x" if k in r else "-"
        if has_torch:
            cells = [r["model"], r["mode"], f"{r['ampc_ms']:.2f}", f"{r['torch_ms']:.2f}",
                     ratio(r["ampc_ms"], r["torch_ms"]), sp("ampc_amp_speedup"), sp("torch_amp_speedup"),
                     f"{r['ampc_peak_mib']:.0f}", f"{r['torch_peak_mib']:.0f}"]
        else:
            cells = [r["model"], r["mode"], f"{r['ampc_ms']:.2f}", sp("ampc_amp_speedup"), f"{r['ampc_peak_mib']:.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cuda" if ampc.cuda.is_available() else "cpu")
    p.add_argument("--quick", action="store_true", help="tiny sizes (the dry run)")
    p.add_argument("--total", type=int, default=None, help="gradient elements for the bandwidth test")
    p.add_argument("--out", default=None)
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--only", default="gemm,bandwidth,train")
    args = p.parse_args()
    torch = None if args.no_torch else try_import_torch()
    if torch is not None and args.device == "cuda" and not torch.cuda.is_available():
        torch = None  # a CPU-only torch cannot be the GPU peer
    if torch is not None:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    libs = [("ampc", ampc)] + ([("torch", torch)] if torch is not None else [])
    sizes = [64, 128] if args.quick else [1024, 2048, 4096, 8192]
    total = args.total or (100_000 if args.quick else 1 << 30)
    min_time = 0.02 if args.quick else 0.3
    gpu = ampc.cuda.get_device_name() if args.device == "cuda" else "no GPU"
    results = {"machine": f"{machine_line()}; device {args.device} ({gpu}); "
                          f"torch {torch.__version__ if torch else 'absent'}",
               "date": time.strftime("%Y-%m-%d"), "gemm": [], "bandwidth": [], "train": []}
    only = args.only.split(",")
    if "gemm" in only:
        results["gemm"] = bench_gemm(libs, args.device, sizes, min_time)
    if "bandwidth" in only:
        results["bandwidth"] = bench_bandwidth(libs, args.device, total, 1000, min_time)
    if "train" in only:
        results["train"] = bench_train(libs, args.device, args.quick, min_time)
    md = markdown(results, [n for n, _ in libs])
    print(md)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "results.md"), "w") as f:
            f.write(md)
        with open(os.path.join(args.out, "results.json"), "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
