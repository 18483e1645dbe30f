"""GradScaler: PyTorch's dynamic loss scaling (torch/amp/grad_scaler.py), exactly, plus ampc's
sync-free step and opt-in extras.

The state machine, defaults, error messages and pickling rules are PyTorch's. The device-side
work is two C calls: `_amp_foreach_non_finite_check_and_unscale_` (one multi-tensor pass per
device and dtype; fp32, fp16 and bf16 grads) and `_amp_update_scale_` (scale, growth tracker and
telemetry updated in one kernel). With an ampc optimizer (`_step_supports_amp_scaling`), `step()`
hands the device-side `found_inf` to the optimizer, which skips inside its kernel, so `step()` +
`update()` read nothing back from the device. Foreign optimizers take PyTorch's path (one
`.item()` per device in `step()`).

Beyond PyTorch (all opt-in, none on the hot path unless asked for):
  min_scale / max_scale   bounds on the scale (the scale can otherwise collapse to 0, #40497)
  step(..., return_found_inf=True)  returns (retval, found_inf) as PyTorch 2.6+
  stats()                 steps, skipped steps, overflow streak, last skipped step, scale history
                          (kept on the device, read only when asked)
  diagnose()              after a skipped step: the parameters whose grads held inf/NaN
"""
import inspect
import math
import warnings
from collections import abc, defaultdict
from enum import Enum

from .. import _C
from .._notebook import ScalerStats, scaler_html


def _step_parameters(optimizer):
    try:
        return inspect.signature(optimizer.step).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        return {}


def _is_ampc_optimizer(optimizer):
    """ampc's own optimizers (the class that declares _step_supports_amp_scaling lives in
    ampc.optim) take GradScaler's sync-free path: grads unscaled in one multi-tensor pass, as torch's
    default optimizers see them, and the skip decided on the device. Any other optimizer that
    declares it gets torch's protocol to the letter (_step_torch_protocol)."""
    for klass in type(optimizer).__mro__:
        if "_step_supports_amp_scaling" in vars(klass):
            return klass.__module__.startswith("ampc.optim")
    return False


def _sync_found_inf_across_ranks(found_inf_per_device):
    """Under ampc.distributed with more than one rank, every rank must skip the same steps: the
    found_inf flags are max-reduced across the ranks (in device order) before step decides, as
    torch's ShardedGradScaler and DeepSpeed's overflow all-reduce do. One process: unchanged, no
    communication."""
    from .. import distributed as dist
    if dist.is_initialized() and dist.get_world_size() > 1:
        for device in sorted(found_inf_per_device, key=str):
            dist.all_reduce(found_inf_per_device[device], op=dist.ReduceOp.MAX)
    return found_inf_per_device


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state():
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class _MultiDeviceReplicator:
    """Lazily serves copies of a master tensor to the devices that ask for it."""

    def __init__(self, master_tensor):
        self.master = master_tensor
        self._per_device_tensors = {}

    def get(self, device):
        retval = self._per_device_tensors.get(device, None)
        if retval is None:
            retval = self.master.to(device=device, non_blocking=True, copy=True)
            self._per_device_tensors[device] = retval
        return retval


def _cuda_unavailable():
    from .. import cuda

    return not cuda.is_available()


class GradScaler:
    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True, *, min_scale=None, max_scale=None, history_size=256):
        self._device = device
        self._enabled = enabled
        if self._device == "cuda" and enabled and _cuda_unavailable():
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.")
            self._enabled = False
        if self._enabled:
            assert growth_factor > 1.0, "The growth factor must be > 1.0."
            assert backoff_factor < 1.0, "The backoff factor must be < 1.0."
            if min_scale is not None and max_scale is not None and min_scale > max_scale:
                raise ValueError(f"min_scale ({min_scale}) must not exceed max_scale ({max_scale})")
            self._init_scale = init_scale
            self._scale = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)
            self._min_scale = min_scale
            self._max_scale = max_scale
            self._history_size = int(history_size)
            self._stats = None
            self._history = None
            self._last_found_inf = {}  # id(optimizer) -> {device: found_inf} of the last step, for diagnose()
            self._last_params = {}

    # ------------------------------------------------------------------ lazy state
    def _check_scale_growth_tracker(self, funcname):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        assert self._scale is not None, f"Attempted {funcname} but _scale is None.  " + fix
        assert self._growth_tracker is not None, f"Attempted {funcname} but _growth_tracker is None.  " + fix
        return (self._scale, self._growth_tracker)

    def _lazy_init_scale_growth_tracker(self, dev):
        assert self._growth_tracker is None, "_growth_tracker initialized before _scale"
        self._scale = _C.full((), self._init_scale, dtype=_C.float32, device=dev)
        self._growth_tracker = _C.full((), self._init_growth_tracker, dtype=_C.int32, device=dev)
        if self._stats is None:
            self._stats = _C.zeros(4, dtype=_C.int64, device=dev)
            self._history = _C.zeros(max(self._history_size, 1), dtype=_C.float32, device=dev)

    # ------------------------------------------------------------------ scale
    def scale(self, outputs):
        if not self._enabled:
            return outputs
        if isinstance(outputs, _C.Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            assert self._scale is not None
            return outputs * self._scale.to(device=outputs.device, non_blocking=True)

        stash = []

        def apply_scale(val):
            if isinstance(val, _C.Tensor):
                if len(stash) == 0:
                    if self._scale is None:
                        self._lazy_init_scale_growth_tracker(val.device)
                    assert self._scale is not None
                    stash.append(_MultiDeviceReplicator(self._scale))
                return val * stash[0].get(val.device)
            if isinstance(val, abc.Iterable):
                iterable = map(apply_scale, val)
                if isinstance(val, (list, tuple)):
                    return type(val)(iterable)
                return iterable
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply_scale(outputs)

    # ------------------------------------------------------------------ unscale
    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
        per_device_inv_scale = _MultiDeviceReplicator(inv_scale)
        per_device_found_inf = _MultiDeviceReplicator(found_inf)
        per_device_and_dtype_grads = defaultdict(lambda: defaultdict(list))
        for group in optimizer.param_groups:
            for param in group["params"]:
                assert isinstance(param, _C.Tensor)
                if param.grad is None:
                    continue
                if (not allow_fp16) and param.grad.dtype == _C.float16:
                    raise ValueError("Attempting to unscale FP16 gradients.")
                grad = param.grad
                per_device_and_dtype_grads[grad.device][grad.dtype].append(grad)
        for device, per_dtype_grads in per_device_and_dtype_grads.items():
            for grads in per_dtype_grads.values():
                _C._amp_foreach_non_finite_check_and_unscale_(grads, per_device_found_inf.get(device),
                                                              per_device_inv_scale.get(device))
        per_device_found_inf.get(found_inf.device)  # present even on a rank without grads there
        return _sync_found_inf_across_ranks(per_device_found_inf._per_device_tensors)

    def unscale_(self, optimizer):
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        elif optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        assert self._scale is not None
        # The reciprocal in fp64, as PyTorch: fp32 division can be imprecise for some compile options.
        inv_scale = self._scale.double().reciprocal().float()
        found_inf = _C.full((), 0.0, dtype=_C.float32, device=self._scale.device)
        optimizer_state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf, False)
        optimizer_state["stage"] = OptState.UNSCALED
        self._last_params[id(optimizer)] = optimizer

    # ------------------------------------------------------------------ step
    def _maybe_opt_step(self, optimizer, optimizer_state, *args, **kwargs):
        retval = None
        if not sum(v.item() for v in optimizer_state["found_inf_per_device"].values()):
            retval = optimizer.step(*args, **kwargs)
        return retval

    def step(self, optimizer, *args, return_found_inf=False, **kwargs):
        if not self._enabled:
            retval = optimizer.step(*args, **kwargs)
            return (retval, False) if return_found_inf else retval
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")

        if getattr(optimizer, "_step_supports_amp_scaling", False) and not _is_ampc_optimizer(optimizer):
            return self._step_torch_protocol(optimizer, optimizer_state, args, kwargs, return_found_inf)

        if getattr(optimizer, "_step_supports_amp_scaling", False):
            # ampc's sync-free path: one unscale + check pass (unless the user already ran
            # unscale_), then the optimizer skips on the device when found_inf != 0.
            grad_scale = None
            if optimizer_state["stage"] is OptState.READY:
                if self._has_fp16_master_weights(optimizer):
                    # fp16 grads of fp16 params with fp32 master weights: unscaling them in fp16
                    # would underflow (why PyTorch refuses), so check only, and let the optimizer's
                    # kernel divide by the scale in fp32 (PyTorch's fused-optimizer protocol).
                    self._check_inf_per_device(optimizer)
                    grad_scale = self._scale
                else:
                    self.unscale_(optimizer)
            found_inf = self._combined_found_inf(optimizer_state)
            optimizer.grad_scale = grad_scale
            optimizer.found_inf = found_inf
            try:
                retval = optimizer.step(*args, **kwargs)
            finally:
                del optimizer.grad_scale
                del optimizer.found_inf
            optimizer_state["stage"] = OptState.STEPPED
            self._last_found_inf[id(optimizer)] = optimizer_state["found_inf_per_device"]
            return (retval, found_inf) if return_found_inf else retval

        if optimizer_state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        assert len(optimizer_state["found_inf_per_device"]) > 0, "No inf checks were recorded for this optimizer."
        found_inf = bool(sum(v.item() for v in optimizer_state["found_inf_per_device"].values()))
        retval = None if found_inf else optimizer.step(*args, **kwargs)
        optimizer_state["stage"] = OptState.STEPPED
        self._last_found_inf[id(optimizer)] = optimizer_state["found_inf_per_device"]
        return (retval, found_inf) if return_found_inf else retval

    def _step_torch_protocol(self, optimizer, optimizer_state, args, kwargs, return_found_inf):
        """A third-party optimizer that declares _step_supports_amp_scaling: torch's contract to the
        letter. With a `grad_scaler` parameter in its step it gets the scaler itself (legacy,
        FutureWarning); otherwise GradScaler only checks the grads for infs (they stay scaled) and
        sets `optimizer.grad_scale` (the scale, times one the user set; None after unscale_) and
        `optimizer.found_inf` for the step, then removes them."""
        legacy = "grad_scaler" in _step_parameters(optimizer)
        if legacy:
            warnings.warn(
                "GradScaler is going to stop passing itself as a keyword argument to the passed "
                "optimizer. In the near future GradScaler registers `grad_scale: Tensor` and "
                "`found_inf: Tensor` to the passed optimizer and let the optimizer use them directly.",
                FutureWarning, stacklevel=3)
            kwargs.update({"grad_scaler": self})
            found_inf = None
        else:
            if optimizer_state["stage"] is OptState.READY:
                self._check_inf_per_device(optimizer)
            found_inf = self._combined_found_inf(optimizer_state)
            optimizer.grad_scale = (getattr(optimizer, "grad_scale", None)
                                    if optimizer_state["stage"] is OptState.UNSCALED
                                    else self._scale * getattr(optimizer, "grad_scale", 1))
            optimizer.found_inf = found_inf
        retval = optimizer.step(*args, **kwargs)
        optimizer_state["stage"] = OptState.STEPPED
        if not legacy:
            del optimizer.grad_scale
            del optimizer.found_inf
            self._last_found_inf[id(optimizer)] = optimizer_state["found_inf_per_device"]
        return (retval, found_inf) if return_found_inf else retval

    @staticmethod
    def _has_fp16_master_weights(optimizer):
        # Groups without master weights cost one dict lookup: no per-parameter work on the hot path.
        return any(group.get("master_weights", False)
                   and any(p.grad is not None and p.grad.dtype == _C.float16 for p in group["params"])
                   for group in optimizer.param_groups)

    def _combined_found_inf(self, optimizer_state):
        values = [t.to(self._scale.device, non_blocking=True) for t in optimizer_state["found_inf_per_device"].values()]
        if not values:
            return _C.full((), 0.0, dtype=_C.float32, device=self._scale.device)
        found_inf = values[0]
        for v in values[1:]:
            found_inf = found_inf + v
        return found_inf

    # ------------------------------------------------------------------ update
    def update(self, new_scale=None):
        if not self._enabled:
            return
        _scale, _growth_tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            assert self._scale is not None
            if isinstance(new_scale, float):
                self._scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                          "torch.FloatTensor with requires_grad=False.")
                assert new_scale.device.type == self._device, reason
                assert new_scale.numel() == 1, reason
                assert new_scale.requires_grad is False, reason
                self._scale.copy_(new_scale)
        else:
            found_infs = [found_inf.to(device=_scale.device, non_blocking=True)
                          for state in self._per_optimizer_states.values()
                          for found_inf in state["found_inf_per_device"].values()]
            assert len(found_infs) > 0, "No inf checks were recorded prior to update."
            found_inf_combined = found_infs[0]
            if len(found_infs) > 1:
                for i in range(1, len(found_infs)):
                    found_inf_combined += found_infs[i]
            _C._amp_update_scale_(_scale, _growth_tracker, found_inf_combined, self._growth_factor,
                                  self._backoff_factor, self._growth_interval,
                                  0.0 if self._min_scale is None else float(self._min_scale),
                                  math.inf if self._max_scale is None else float(self._max_scale),
                                  stats=self._stats, history=self._history)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    # ------------------------------------------------------------------ accessors
    def _get_scale_async(self):
        return self._scale

    def get_scale(self):
        if self._enabled:
            scale = self._get_scale_async()
            return self._init_scale if scale is None else scale.item()
        return 1.0

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        if self._enabled:
            return self._init_growth_tracker if self._growth_tracker is None else self._growth_tracker.item()
        return 0

    def is_enabled(self):
        return self._enabled

    def state_dict(self):
        if self._enabled:
            return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                    "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                    "_growth_tracker": self._get_growth_tracker()}
        return {}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self):
        state = self.__dict__.copy()
        if self._enabled:
            assert len(self._per_optimizer_states) == 0, (
                "A GradScaler instance may only be pickled at the beginning of an iteration, or at the end after "
                "scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
            state["_stats_snapshot"] = self.stats() if self._stats is not None else None
            state["_stats"] = None
            state["_history"] = None
            state["_last_found_inf"] = {}
            state["_last_params"] = {}
        return state

    def __setstate__(self, state):
        snapshot = state.pop("_stats_snapshot", None)
        self.__dict__.update(state)
        if snapshot is not None:
            self._restore_stats = snapshot

    def _check_inf_per_device(self, optimizer):
        _scale, _ = self._check_scale_growth_tracker("_check_inf_per_device")
        dummy_inv_scale = _C.full((), 1.0, dtype=_C.float32, device=_scale.device)
        found_inf = _C.full((), 0.0, dtype=_C.float32, device=_scale.device)
        self._per_optimizer_states[id(optimizer)]["found_inf_per_device"] = self._unscale_grads_(
            optimizer, dummy_inv_scale, found_inf, True)
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]

    def _found_inf_per_device(self, optimizer):
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]

    # ------------------------------------------------------------------ telemetry (ampc)
    def stats(self):
        """Telemetry kept on the device by update(); reading it is the only host sync:
        {"steps", "skipped_steps", "overflow_streak", "last_skipped_step" (None if none),
         "scale", "scale_history" (oldest first, at most history_size entries)}."""
        if not self._enabled:
            return ScalerStats({"steps": 0, "skipped_steps": 0, "overflow_streak": 0, "last_skipped_step": None,
                                "scale": 1.0, "scale_history": []})
        if self._stats is None:
            restored = getattr(self, "_restore_stats", None)
            if restored is not None:
                return ScalerStats(restored)
            return ScalerStats({"steps": 0, "skipped_steps": 0, "overflow_streak": 0, "last_skipped_step": None,
                                "scale": float(self._init_scale), "scale_history": []})
        steps, skipped, streak, last = (int(v) for v in self._stats.tolist())
        cap = self._history.numel()
        raw = self._history.tolist()
        n = min(steps, cap)
        start = (steps - n) % cap
        history = [raw[(start + i) % cap] for i in range(n)]
        return ScalerStats({"steps": steps, "skipped_steps": skipped, "overflow_streak": streak,
                            "last_skipped_step": last or None, "scale": self.get_scale(), "scale_history": history})

    def _repr_html_(self):
        return scaler_html(self)

    def diagnose(self, optimizer=None):
        """Names the parameters whose grads hold inf/NaN now (call it after a skipped step, before
        zero_grad). Returns a list of (name, number of non-finite elements); names come from
        `optimizer.param_names` when the optimizer has them, else "group{g}.param{i}"."""
        optimizers = [optimizer] if optimizer is not None else list(self._last_params.values())
        found = []
        for opt in optimizers:
            names = getattr(opt, "param_names", None)
            for g, group in enumerate(opt.param_groups):
                for i, p in enumerate(group["params"]):
                    if p.grad is None:
                        continue
                    bad = int((~_C.isfinite(p.grad)).sum().item())
                    if bad:
                        name = names.get(id(p)) if isinstance(names, dict) else None
                        found.append((name or f"group{g}.param{i}", bad))
        return found
