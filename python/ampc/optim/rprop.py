"""Rprop: resilient backpropagation (torch.optim.Rprop), including maximize; one fused C call per
(device, dtype) group per step. The per-element step sizes start at lr (state["step_size"])."""
from .. import _C
from .optimizer import Optimizer, _check_lr, _check_not_differentiable, _to_float

__all__ = ["Rprop"]


class Rprop(Optimizer):
    _step_supports_amp_scaling = True

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        _check_not_differentiable(differentiable)
        defaults = {"lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        self._setdefault_groups(foreach=None, maximize=False, differentiable=False, capturable=False)

    def _init_param_state(self, state, p, group, master):
        if "step" not in state:
            self._init_step_state(state, p, master, ("prev",))
            dtype = _C.float32 if master else p.dtype
            state["step_size"] = _C.full_like(p, _to_float(group["lr"]), dtype=dtype)

    def _state_keys(self, group):
        return ["prev", "step_size"]

    def _fused_update(self, group, t, grad_scale, found_inf):
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        _C._fused_rprop_(t["params"], t["grads"], t["prev"], t["step_size"], t["steps"], etaminus=float(etaminus),
                         etaplus=float(etaplus), step_size_min=float(step_size_min),
                         step_size_max=float(step_size_max), maximize=bool(group["maximize"]), masters=t["masters"],
                         grad_scale=grad_scale, found_inf=found_inf)

    def step(self, closure=None):
        return self._fused_step(closure)
