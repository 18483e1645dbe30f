"""ampc.amp.debug: a precision-aware anomaly mode. It records, for every kernel that runs inside it
(forward and backward), the dtype it ran in, the largest finite |value| of each floating output,
and how many values are NaN, infinite, exactly zero or subnormal in the output's own dtype; and it
finds the first op where a non-finite value appeared, so a user can see why GradScaler keeps
skipping steps.

    with ampc.amp.debug(model) as dbg:
        with ampc.autocast("cpu", dtype=ampc.float16):
            loss = model(x).sum()
        loss.backward()
    print(dbg.first_nonfinite)        # OpRecord: op, module, phase, dtypes, counts
    print(dbg.to_markdown())          # per-op table

`model` is optional: with it, forward records name the submodule that ran them ("encoder.2").
Backward records name the autograd node (e.g. "MmBackward0"). Overhead: off (outside the block)
nothing but one atomic load per kernel; on, every output is read back and counted, and device
outputs are copied to the host, which synchronises after each kernel.

Terms. An fp16/bf16 output value is *overflowed* when it is infinite (inputs finite or not: the
first op with a non-finite output is where it started), *underflowed* when it is exactly zero or
subnormal (0 < |x| < 2**-14 for fp16, < 2**-126 for bf16); zeros also come from relu or masking,
so the underflow share is an upper bound, compared across ops rather than read alone.
"""
import warnings

from .. import _C

__all__ = ["debug", "OpRecord", "OutputStats"]


class OutputStats:
    """The census of one floating output of one kernel call."""

    __slots__ = ("dtype", "shape", "numel", "n_nan", "n_inf", "n_zero", "n_subnormal", "max_abs")

    def __init__(self, dtype, shape, numel, n_nan, n_inf, n_zero, n_subnormal, max_abs):
        self.dtype, self.shape, self.numel = dtype, tuple(shape), numel
        self.n_nan, self.n_inf, self.n_zero, self.n_subnormal, self.max_abs = n_nan, n_inf, n_zero, n_subnormal, max_abs

    @property
    def nonfinite(self):
        return self.n_nan + self.n_inf

    @property
    def overflow_share(self):
        return self.n_inf / self.numel if self.numel else 0.0

    @property
    def underflow_share(self):
        return (self.n_zero + self.n_subnormal) / self.numel if self.numel else 0.0

    def __repr__(self):
        return (f"OutputStats(dtype={self.dtype}, shape={self.shape}, max_abs={self.max_abs:.4g}, nan={self.n_nan}, "
                f"inf={self.n_inf}, zero={self.n_zero}, subnormal={self.n_subnormal})")


class OpRecord:
    """One kernel call: `op` (the op-table name, e.g. "gemm", "exp"), `phase` ("forward" or
    "backward"), `node` (the backward node that ran it, None in forward), `module` (the innermost
    submodule running, when debug was given a model and the call is in its forward), `device`,
    `autocast` (enabled on that device when it ran), `input_dtypes`, `outputs` (OutputStats)."""

    __slots__ = ("index", "op", "phase", "node", "module", "device", "autocast", "input_dtypes", "outputs")

    def __init__(self, index, op, node, module, device, autocast, input_dtypes, outputs):
        self.index, self.op, self.node, self.module = index, op, node, module
        self.phase = "forward" if node is None else "backward"
        self.device, self.autocast, self.input_dtypes = device, autocast, tuple(input_dtypes)
        self.outputs = [OutputStats(*o) for o in outputs]

    @property
    def dtype(self):
        """The dtype the op ran in: its first floating output's (None when it has none)."""
        return self.outputs[0].dtype if self.outputs else None

    @property
    def nonfinite(self):
        return sum(o.nonfinite for o in self.outputs)

    @property
    def max_abs(self):
        return max((o.max_abs for o in self.outputs), default=0.0)

    def where(self):
        """"gemm in forward of module 'fc2'" / "mul in backward (MulBackward0)"."""
        if self.phase == "backward":
            return f"{self.op} in backward ({self.node})"
        return f"{self.op} in forward" + (f" of module {self.module!r}" if self.module is not None else "")

    def __repr__(self):
        return (f"OpRecord(#{self.index} {self.where()}, dtype={self.dtype}, inputs={list(self.input_dtypes)}, "
                f"max_abs={self.max_abs:.4g}, nonfinite={self.nonfinite})")


class debug:
    """Context manager: records every kernel call inside it (see the module docstring).

    model: an ampc.nn.Module whose submodules name the forward records (optional).
    on_nonfinite: None (record only), "warn" (a RuntimeWarning at exit naming the first op with a
    non-finite output) or "raise" (FloatingPointError at exit, unless the block already raised).
    Debug sessions do not nest."""

    def __init__(self, model=None, *, on_nonfinite=None):
        if on_nonfinite not in (None, "warn", "raise"):
            raise ValueError(f"ampc.amp.debug: on_nonfinite must be None, 'warn' or 'raise', got {on_nonfinite!r}")
        self.model, self.on_nonfinite = model, on_nonfinite
        self.records = []
        self._module_stack, self._handles = [], []

    # ---------------------------------------------------------------- recording
    def _record(self, rec):
        op, node, device, autocast, input_dtypes, outputs = rec
        module = self._module_stack[-1] if (node is None and self._module_stack) else None
        self.records.append(OpRecord(len(self.records), op, node, module, device, autocast, input_dtypes, outputs))

    def _hook_modules(self):
        for name, mod in self.model.named_modules():
            if mod is self.model:
                continue

            def pre(m, args, _name=name):
                self._module_stack.append(_name)

            def post(m, args, out, _name=name):
                if self._module_stack and self._module_stack[-1] == _name:
                    self._module_stack.pop()

            self._handles.append(mod.register_forward_pre_hook(pre))
            self._handles.append(mod.register_forward_hook(post, always_call=True))

    def __enter__(self):
        self.records = []
        if self.model is not None:
            self._hook_modules()
        _C._amp_debug_start(self._record)
        return self

    def __exit__(self, exc_type, exc, tb):
        _C._amp_debug_stop()
        for h in self._handles:
            h.remove()
        self._handles, self._module_stack = [], []
        first = self.first_nonfinite
        if first is not None and exc_type is None:
            msg = (f"ampc.amp.debug: the first non-finite value appeared in {first.where()} "
                   f"(record #{first.index}, dtype {first.dtype}, inputs {list(first.input_dtypes)})")
            if self.on_nonfinite == "raise":
                raise FloatingPointError(msg)
            if self.on_nonfinite == "warn":
                warnings.warn(msg, RuntimeWarning, stacklevel=2)
        return False

    # ---------------------------------------------------------------- the report
    @property
    def first_nonfinite(self):
        """The first record with a NaN or infinite output (None when there is none)."""
        return next((r for r in self.records if r.nonfinite), None)

    def summary(self):
        """One row per (op, phase, dtype): calls, elements, largest |value|, NaN and inf counts, the
        overflow and underflow shares (over all elements of those calls)."""
        rows = {}
        for r in self.records:
            for o in r.outputs:
                key = (r.op, r.phase, o.dtype)
                row = rows.setdefault(key, {"op": r.op, "phase": r.phase, "dtype": o.dtype, "calls": 0, "numel": 0,
                                            "max_abs": 0.0, "nan": 0, "inf": 0, "underflow": 0, "_calls": set()})
                row["_calls"].add(r.index)
                row["numel"] += o.numel
                row["max_abs"] = max(row["max_abs"], o.max_abs)
                row["nan"] += o.n_nan
                row["inf"] += o.n_inf
                row["underflow"] += o.n_zero + o.n_subnormal
        out = []
        for row in rows.values():
            row["calls"] = len(row.pop("_calls"))
            n = row["numel"]
            row["overflow_share"] = row["inf"] / n if n else 0.0
            row["underflow_share"] = row.pop("underflow") / n if n else 0.0
            out.append(row)
        return out

    def to_markdown(self):
        """The summary as a Markdown table, with the first non-finite op named above it."""
        first = self.first_nonfinite
        lines = [f"First non-finite value: {first.where()} (record #{first.index})" if first else
                 "No non-finite value.", "",
                 "| op | phase | dtype | calls | max abs | NaN | inf | overflow | underflow |",
                 "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for r in self.summary():
            lines.append(f"| {r['op']} | {r['phase']} | {r['dtype']} | {r['calls']} | {r['max_abs']:.4g} | {r['nan']} "
                         f"| {r['inf']} | {r['overflow_share']:.2%} | {r['underflow_share']:.2%} |")
        return "\n".join(lines)

    def _repr_markdown_(self):
        return self.to_markdown()
