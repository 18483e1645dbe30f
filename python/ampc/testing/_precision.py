"""ampc.testing.compare_precision: the same model trained in FP32 and under autocast, side by side.

compare_precision(model, inputs, dtype=ampc.float16, steps=3) deep-copies the model twice (same
weights), runs `steps` training steps on each with the same data and the same RNG seed per step
(dropout draws the same masks), the FP32 copy in full precision and the AMP copy under
`autocast(device_type, dtype)` with a GradScaler when dtype is float16 (as a user's AMP loop does),
and compares, per step:
- the loss (absolute and relative difference, and whether the scaler skipped the step);
- every submodule's output (forward hooks) and the gradient of that output (tensor hooks; the AMP
  side's grads are divided by the loss scale), as the relative error ||amp - fp32|| / ||fp32||,
  with the number of values that overflowed (inf/NaN in the AMP tensor where FP32 is finite) and
  that underflowed (zero in the AMP tensor where FP32 is not);
- after the last step, every parameter's drift ||p_amp - p_fp32|| / ||p_fp32||.

Tolerances come from the AMP dtype's machine epsilon eps (2**-10 for float16, 2**-7 for
bfloat16), scaled by how far rounding errors can accumulate:
- layer k's output (k-th submodule to run, from 1): rel error <= 4 * eps * sqrt(k);
- a gradient: <= 16 * eps * sqrt(n_layers) (backward passes through every layer);
- the loss: rel difference <= 4 * eps * sqrt(n_layers);
- a parameter after N steps: drift <= 16 * eps * sqrt(N) * (lr-independent: relative to |p|);
- any overflow in an activation or gradient fails; a skipped step is reported, not failed
  (GradScaler is meant to skip), unless every step was skipped.
`tolerance=` multiplies all of them. These are the bounds of well-conditioned layers; a model that
legitimately amplifies rounding (very deep, badly scaled) needs a larger `tolerance`.
"""
import copy
import math

import numpy as np

__all__ = ["compare_precision", "assert_precision", "PrecisionReport"]

_EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -23}


def _ampc():
    import ampc
    return ampc


def _host64(t):
    return np.asarray(t.detach().float().cpu().numpy(), dtype=np.float64)


def _rel(a, ref):
    """||a - ref|| / ||ref|| over the finite entries of both (inf when a has non-finite values where ref has none)."""
    finite = np.isfinite(ref)
    if not np.isfinite(a[finite]).all():
        return math.inf
    num = np.linalg.norm((a - ref)[finite])
    den = np.linalg.norm(ref[finite])
    return float(num / den) if den > 0 else float(num)


class Deviation:
    """One compared tensor: `kind` ("activation" or "grad"), `name` (the submodule), `step`, the
    AMP tensor's `dtype`, `rel_error`, `max_abs_diff`, `overflow` / `underflow` counts, `numel`,
    the `tol` it is held to and `ok`."""

    __slots__ = ("kind", "name", "step", "dtype", "rel_error", "max_abs_diff", "overflow", "underflow", "numel", "tol",
                 "ok")

    def __init__(self, kind, name, step, amp, ref, tol):
        a, r = _host64(amp), _host64(ref)
        self.kind, self.name, self.step, self.dtype, self.tol = kind, name, step, str(amp.dtype).split(".")[-1], tol
        self.numel = int(r.size)
        ref_finite = np.isfinite(r)
        self.overflow = int((~np.isfinite(a) & ref_finite).sum())
        self.underflow = int(((a == 0) & (r != 0) & ref_finite).sum())
        self.rel_error = _rel(a, r)
        both = ref_finite & np.isfinite(a)
        self.max_abs_diff = float(np.abs(a - r)[both].max()) if both.any() else 0.0
        self.ok = self.overflow == 0 and self.rel_error <= tol

    def __repr__(self):
        return (f"Deviation({self.kind} {self.name!r} step {self.step}: rel {self.rel_error:.3g} <= {self.tol:.3g}? "
                f"{self.ok}, overflow {self.overflow}, underflow {self.underflow}/{self.numel})")


class PrecisionReport:
    """What compare_precision measured: `steps` (dicts: step, loss_fp32, loss_amp, abs_diff,
    rel_diff, tol, skipped, ok), `layers` (Deviation per submodule output and output grad per step),
    `params` (dicts: name, drift, tol, ok), `dtype`, `eps`, and `passed`."""

    def __init__(self, dtype, eps, steps, layers, params):
        self.dtype, self.eps, self.steps, self.layers, self.params = dtype, eps, steps, layers, params

    @property
    def all_skipped(self):
        return bool(self.steps) and all(s["skipped"] for s in self.steps)

    def failures(self):
        """Human-readable lines, one per failed check."""
        out = []
        if self.all_skipped:
            out.append(f"every one of the {len(self.steps)} steps was skipped by GradScaler (non-finite gradients)")
        for s in self.steps:
            if not s["ok"]:
                out.append(f"step {s['step']}: loss {s['loss_amp']!r} vs FP32 {s['loss_fp32']!r} "
                           f"(rel diff {s['rel_diff']:.3g} > {s['tol']:.3g})")
        for d in self.layers:
            if not d.ok:
                why = f"{d.overflow} values overflowed" if d.overflow else f"rel error {d.rel_error:.3g} > {d.tol:.3g}"
                out.append(f"step {d.step}: {d.kind} of {d.name!r} ({d.dtype}): {why}")
        for p in self.params:
            if not p["ok"]:
                out.append(f"parameter {p['name']!r}: drift {p['drift']:.3g} > {p['tol']:.3g}")
        return out

    @property
    def passed(self):
        return not self.failures()

    def worst(self, kind="activation"):
        """The Deviation of `kind` with the largest relative error (None when there is none)."""
        ds = [d for d in self.layers if d.kind == kind]
        return max(ds, key=lambda d: d.rel_error) if ds else None

    def to_markdown(self):
        lines = [f"**compare_precision** ({self.dtype} vs float32, eps {self.eps:.3g}): "
                 + ("passed" if self.passed else "FAILED"), "",
                 "| step | loss fp32 | loss amp | rel diff | skipped |", "| ---: | ---: | ---: | ---: | --- |"]
        for s in self.steps:
            lines.append(f"| {s['step']} | {s['loss_fp32']:.6g} | {s['loss_amp']:.6g} | {s['rel_diff']:.3g} | "
                         f"{'yes' if s['skipped'] else 'no'} |")
        last = max((d.step for d in self.layers), default=0)
        lines += ["", f"Layers at step {last}:", "",
                  "| layer | kind | dtype | rel error | tol | overflow | underflow | ok |",
                  "| --- | --- | --- | ---: | ---: | ---: | ---: | --- |"]
        for d in self.layers:
            if d.step == last:
                lines.append(f"| {d.name} | {d.kind} | {d.dtype} | {d.rel_error:.3g} | {d.tol:.3g} | {d.overflow} | "
                             f"{d.underflow}/{d.numel} | {'yes' if d.ok else '**no**'} |")
        if self.params:
            lines += ["", "| parameter | drift | tol | ok |", "| --- | ---: | ---: | --- |"]
            lines += [f"| {p['name']} | {p['drift']:.3g} | {p['tol']:.3g} | {'yes' if p['ok'] else '**no**'} |"
                      for p in self.params]
        fails = self.failures()
        if fails:
            lines += ["", "Failures:", ""] + [f"- {f}" for f in fails]
        return "\n".join(lines)

    _repr_markdown_ = to_markdown

    def __repr__(self):
        return (f"PrecisionReport({self.dtype}: {'passed' if self.passed else 'failed'}, {len(self.steps)} steps, "
                f"{len(self.failures())} failures)")

    def plot(self, ax=None):
        """Per-layer relative error of the last step (activations and grads) against the tolerance,
        on a log scale (matplotlib; returns the axes)."""
        import matplotlib.pyplot as plt
        if ax is None:
            _, ax = plt.subplots(figsize=(7, 3.5))
        last = max((d.step for d in self.layers), default=0)
        for kind, marker in (("activation", "o"), ("grad", "s")):
            ds = [d for d in self.layers if d.kind == kind and d.step == last]
            if ds:
                ax.semilogy(range(len(ds)), [max(d.rel_error, 1e-12) for d in ds], marker, label=kind)
                ax.semilogy(range(len(ds)), [d.tol for d in ds], "--", alpha=0.5, label=f"{kind} tolerance")
        names = [d.name for d in self.layers if d.kind == "activation" and d.step == last]
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, rotation=45, ha="right", fontsize=8)
        ax.set_ylabel("relative error vs FP32")
        ax.set_title(f"{self.dtype} vs float32")
        ax.legend(fontsize=8)
        return ax


def _batches(inputs, steps):
    if callable(inputs):
        return [inputs(i) for i in range(steps)]
    if isinstance(inputs, list) and len(inputs) == steps:
        return list(inputs)
    return [inputs] * steps


def _as_args(batch):
    return tuple(batch) if isinstance(batch, tuple) else (batch,)


def _default_loss(out, *targets):
    return out.float().square().mean()


class _Capture:
    """Forward hooks on every submodule: its output tensor and (tensor hook) the gradient of it."""

    def __init__(self, model):
        self.outputs, self.grads, self.order, self.handles = {}, {}, [], []
        for name, mod in model.named_modules():
            if mod is model:
                continue
            self.handles.append(mod.register_forward_hook(self._hook(name)))

    def _hook(self, name):
        def hook(mod, args, out):
            ampc = _ampc()
            if not isinstance(out, ampc.Tensor) or not out.dtype.is_floating_point:
                return
            if name not in self.outputs:
                self.order.append(name)
            self.outputs[name] = out.detach().clone()
            if out.requires_grad:
                out.register_hook(lambda g: self.grads.__setitem__(name, g.detach().clone()))
        return hook

    def reset(self):
        self.outputs, self.grads, self.order = {}, {}, []

    def remove(self):
        for h in self.handles:
            h.remove()


def compare_precision(model, inputs, *, dtype=None, steps=1, loss_fn=None, optimizer=None, device_type=None,
                      seed=0, tolerance=1.0, scaler=None):
    """Train copies of `model` in FP32 and under autocast from identical weights, data and RNG,
    and return a PrecisionReport (see the module docstring for what is compared and the tolerances).

    inputs: the forward arguments (a tensor or a tuple), the same every step; or a list of `steps`
    of them; or a callable step -> arguments. loss_fn(output): the scalar to train on (default:
    the mean of the squared output; close over the targets to use a real loss). optimizer: a factory params -> optimizer (default SGD,
    lr 1e-2). dtype: the autocast dtype (default: float16 on CUDA, bfloat16 on the CPU, as
    autocast's). scaler: True / False to force a GradScaler (default: only for float16).
    `model` itself is not modified."""
    ampc = _ampc()
    params = list(model.parameters())
    device = params[0].device if params else ampc.device("cpu")
    device_type = device_type or device.type
    if dtype is None:
        dtype = ampc.float16 if device_type == "cuda" else ampc.bfloat16
    dname = str(dtype).split(".")[-1]
    if dname not in ("float16", "bfloat16"):
        raise ValueError(f"compare_precision: dtype must be float16 or bfloat16, got {dtype}")
    if steps < 1:
        raise ValueError(f"compare_precision: steps must be >= 1, got {steps}")
    eps = _EPS[dname] * tolerance
    loss_fn = loss_fn or _default_loss
    optimizer = optimizer or (lambda ps: ampc.optim.SGD(ps, lr=1e-2))
    use_scaler = (dname == "float16") if scaler is None else bool(scaler)

    ref, amp = copy.deepcopy(model), copy.deepcopy(model)
    ref.train(model.training)
    amp.train(model.training)
    opt_ref, opt_amp = optimizer(list(ref.parameters())), optimizer(list(amp.parameters()))
    grad_scaler = ampc.amp.GradScaler(device_type) if use_scaler else None
    cap_ref, cap_amp = _Capture(ref), _Capture(amp)
    step_rows, layers = [], []
    try:
        for step, batch in enumerate(_batches(inputs, steps)):
            args = _as_args(batch)
            cap_ref.reset()
            cap_amp.reset()
            ampc.manual_seed(seed + step)
            opt_ref.zero_grad()
            loss_ref = loss_fn(ref(*args))
            loss_ref.backward()
            opt_ref.step()

            ampc.manual_seed(seed + step)
            opt_amp.zero_grad()
            with ampc.autocast(device_type, dtype=dtype):
                loss_amp = loss_fn(amp(*args))
            scale = 1.0
            if grad_scaler is not None:
                scale = float(grad_scaler.get_scale())
                grad_scaler.scale(loss_amp).backward()
                grad_scaler.step(opt_amp)
                grad_scaler.update()
                skipped = float(grad_scaler.get_scale()) < scale
            else:
                loss_amp.backward()
                skipped = not all(bool(ampc.isfinite(p.grad).all()) for p in amp.parameters() if p.grad is not None)
                if not skipped:
                    opt_amp.step()

            n_layers = max(len(cap_ref.order), 1)
            lr_, la = float(loss_ref), float(loss_amp)
            rel = abs(la - lr_) / abs(lr_) if lr_ != 0 else abs(la - lr_)
            tol = 4 * eps * math.sqrt(n_layers)
            step_rows.append({"step": step, "loss_fp32": lr_, "loss_amp": la, "abs_diff": abs(la - lr_),
                              "rel_diff": rel, "tol": tol, "skipped": skipped,
                              "ok": math.isfinite(la) and rel <= tol})
            for k, name in enumerate(cap_ref.order, start=1):
                if name in cap_amp.outputs:
                    layers.append(Deviation("activation", name, step, cap_amp.outputs[name], cap_ref.outputs[name],
                                            4 * eps * math.sqrt(k)))
            for name in cap_ref.order:
                if name in cap_ref.grads and name in cap_amp.grads:
                    g_amp = cap_amp.grads[name]
                    d = Deviation("grad", name, step, g_amp.float() / scale if scale != 1.0 else g_amp,
                                  cap_ref.grads[name], 16 * eps * math.sqrt(n_layers))
                    d.dtype = str(g_amp.dtype).split(".")[-1]  # the dtype backward ran in, before unscaling
                    layers.append(d)
    finally:
        cap_ref.remove()
        cap_amp.remove()
    param_rows = []
    ptol = 16 * eps * math.sqrt(steps)
    for (name, p_ref), (_, p_amp) in zip(ref.named_parameters(), amp.named_parameters()):
        r, a = _host64(p_ref), _host64(p_amp)
        den = np.linalg.norm(r)
        drift = float(np.linalg.norm(a - r) / den) if den > 0 else float(np.linalg.norm(a - r))
        if not np.isfinite(a).all():
            drift = math.inf
        param_rows.append({"name": name, "drift": drift, "tol": ptol, "ok": drift <= ptol})
    return PrecisionReport(dname, _EPS[dname], step_rows, layers, param_rows)


def assert_precision(report_or_model, *args, **kwargs):
    """pytest helper: raises AssertionError listing every failed check (the report's Markdown
    table follows). Takes a PrecisionReport, or compare_precision's arguments. Returns the report."""
    report = report_or_model if isinstance(report_or_model, PrecisionReport) else compare_precision(
        report_or_model, *args, **kwargs)
    if not report.passed:
        raise AssertionError("AMP run deviates from its FP32 reference:\n  " + "\n  ".join(report.failures())
                             + "\n\n" + report.to_markdown())
    return report
