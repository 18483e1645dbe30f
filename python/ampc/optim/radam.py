"""RAdam: Adam with the variance rectification of Liu et al. (torch.optim.RAdam), including decoupled
weight decay and maximize; one fused C call per (device, dtype) group per step. Whether a step is
rectified (rho_t > 5) is decided per parameter on the device, from its step counter.
"""
from .. import _C
from .optimizer import Optimizer, _check_adam_args, _check_not_differentiable, _to_float

__all__ = ["RAdam"]


class RAdam(Optimizer):
    _step_supports_amp_scaling = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False):
        _check_adam_args(lr, betas, eps, weight_decay)
        _check_not_differentiable(differentiable)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable, "decoupled_weight_decay": decoupled_weight_decay,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        self._setdefault_groups(foreach=None, maximize=False, differentiable=False, decoupled_weight_decay=False,
                                capturable=False)

    def _init_param_state(self, state, p, group, master):
        self._init_step_state(state, p, master, ("exp_avg", "exp_avg_sq"))

    def _state_keys(self, group):
        return ["exp_avg", "exp_avg_sq"]

    def _fused_update(self, group, t, grad_scale, found_inf):
        beta1, beta2 = group["betas"]
        _C._fused_radam_(t["params"], t["grads"], t["exp_avg"], t["exp_avg_sq"], t["steps"],
                         lr=_to_float(group["lr"]), beta1=_to_float(beta1), beta2=_to_float(beta2),
                         eps=float(group["eps"]), weight_decay=float(group["weight_decay"]),
                         maximize=bool(group["maximize"]),
                         decoupled_weight_decay=bool(group["decoupled_weight_decay"]), masters=t["masters"],
                         grad_scale=grad_scale, found_inf=found_inf)

    def step(self, closure=None):
        return self._fused_step(closure)
