"""Adamax: Adam with the infinity norm (torch.optim.Adamax), including maximize; one fused C call per
(device, dtype) group per step."""
from .. import _C
from .optimizer import Optimizer, _check_adam_args, _check_not_differentiable, _to_float

__all__ = ["Adamax"]


class Adamax(Optimizer):
    _step_supports_amp_scaling = True

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check_adam_args(lr, betas, eps, weight_decay)
        _check_not_differentiable(differentiable)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        self._setdefault_groups(foreach=None, maximize=False, differentiable=False, capturable=False)

    def _init_param_state(self, state, p, group, master):
        self._init_step_state(state, p, master, ("exp_avg", "exp_inf"))

    def _state_keys(self, group):
        return ["exp_avg", "exp_inf"]

    def _fused_update(self, group, t, grad_scale, found_inf):
        beta1, beta2 = group["betas"]
        _C._fused_adamax_(t["params"], t["grads"], t["exp_avg"], t["exp_inf"], t["steps"],
                          lr=_to_float(group["lr"]), beta1=_to_float(beta1), beta2=_to_float(beta2),
                          eps=float(group["eps"]), weight_decay=float(group["weight_decay"]),
                          maximize=bool(group["maximize"]), masters=t["masters"], grad_scale=grad_scale,
                          found_inf=found_inf)

    def step(self, closure=None):
        return self._fused_step(closure)
