"""Adagrad: PyTorch's algorithm (torch.optim.Adagrad) with lr decay, weight decay,
initial_accumulator_value and maximize, one fused C call per (device, dtype) group per step. As in
PyTorch, the state of every parameter is created by the constructor."""
from .. import _C
from .optimizer import Optimizer, _check_lr, _check_nonnegative, _check_not_differentiable, _to_float

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    _step_supports_amp_scaling = True

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None, master_weights=False):
        _check_lr(lr)
        _check_nonnegative(("lr_decay", lr_decay), ("weight_decay", weight_decay),
                           ("initial_accumulator_value", initial_accumulator_value), ("epsilon", eps))
        _check_not_differentiable(differentiable)
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "fused": fused, "master_weights": master_weights}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                master = self._uses_master(group, p)
                state = self.state[p]
                self._init_param_state(state, p, group, master)
                if master:
                    state["master_param"] = p.detach().to(dtype=_C.float32, copy=True)

    def __setstate__(self, state):
        super().__setstate__(state)
        self._setdefault_groups(foreach=None, maximize=False, differentiable=False, fused=None, master_weights=False)

    def _init_param_state(self, state, p, group, master):
        if "step" not in state:
            state["step"] = self._zero_step(p)
            init = float(self.defaults["initial_accumulator_value"])
            state["sum"] = _C.full_like(p, init, dtype=_C.float32 if master else p.dtype)

    def _state_keys(self, group):
        return ["sum"]

    def _fused_update(self, group, t, grad_scale, found_inf):
        _C._fused_adagrad_(t["params"], t["grads"], t["sum"], t["steps"], lr=_to_float(group["lr"]),
                           lr_decay=float(group["lr_decay"]), weight_decay=_to_float(group["weight_decay"]),
                           eps=float(group["eps"]), maximize=bool(group["maximize"]), masters=t["masters"],
                           grad_scale=grad_scale, found_inf=found_inf)

    def step(self, closure=None):
        return self._fused_step(closure)
