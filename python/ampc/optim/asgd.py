"""ASGD: averaged stochastic gradient descent (torch.optim.ASGD), including maximize; one fused C call
per (device, dtype) group per step. eta (the decayed learning rate) and mu (the averaging weight)
are per-parameter 0-dim float32 tensors on the device; the kernel uses their values before the step
and stores the next ones, as PyTorch's single-tensor loop does."""
from .. import _C
from .optimizer import Optimizer, _check_lr, _check_nonnegative, _check_not_differentiable, _to_float

__all__ = ["ASGD"]


class ASGD(Optimizer):
    _step_supports_amp_scaling = True

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        _check_nonnegative(("weight_decay", weight_decay))
        _check_not_differentiable(differentiable)
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        self._setdefault_groups(foreach=None, maximize=False, differentiable=False, capturable=False)

    def _init_param_state(self, state, p, group, master):
        if "step" not in state:
            self._init_step_state(state, p, master, ())
            state["eta"] = _C.full((), _to_float(group["lr"]), dtype=_C.float32, device=p.device)
            state["mu"] = _C.ones((), dtype=_C.float32, device=p.device)
            state["ax"] = self._zeros_state(p, master)

    def _state_keys(self, group):
        return ["ax", "eta", "mu"]

    def _fused_update(self, group, t, grad_scale, found_inf):
        _C._fused_asgd_(t["params"], t["grads"], t["ax"], t["eta"], t["mu"], t["steps"], lr=_to_float(group["lr"]),
                        lambd=float(group["lambd"]), alpha=float(group["alpha"]), t0=float(group["t0"]),
                        weight_decay=float(group["weight_decay"]), maximize=bool(group["maximize"]),
                        masters=t["masters"], grad_scale=grad_scale, found_inf=found_inf)

    def step(self, closure=None):
        return self._fused_step(closure)
