"""NAdam: Adam with Nesterov momentum (torch.optim.NAdam), including momentum_decay, decoupled weight
decay and maximize; one fused C call per (device, dtype) group per step. The step counter and
mu_product (the running product of the momentum schedule) are 0-dim float32 tensors on the device,
advanced by the kernel, so a step the GradScaler skips leaves them as they were.
"""
from .. import _C
from .optimizer import Optimizer, _check_adam_args, _check_not_differentiable, _to_float

__all__ = ["NAdam"]


class NAdam(Optimizer):
    _step_supports_amp_scaling = True

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_adam_args(lr, betas, eps, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        _check_not_differentiable(differentiable)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay, "decoupled_weight_decay": decoupled_weight_decay,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        self._setdefault_groups(maximize=False, foreach=None, capturable=False, differentiable=False,
                                decoupled_weight_decay=False)

    def _init_param_state(self, state, p, group, master):
        if "step" not in state:  # torch's key order: step, mu_product, exp_avg, exp_avg_sq
            self._init_step_state(state, p, master, ())
            state["mu_product"] = _C.ones((), dtype=_C.float32, device=p.device)
            state["exp_avg"] = self._zeros_state(p, master)
            state["exp_avg_sq"] = self._zeros_state(p, master)

    def _state_keys(self, group):
        return ["exp_avg", "exp_avg_sq", "mu_product"]

    def _fused_update(self, group, t, grad_scale, found_inf):
        beta1, beta2 = group["betas"]
        _C._fused_nadam_(t["params"], t["grads"], t["exp_avg"], t["exp_avg_sq"], t["mu_product"], t["steps"],
                         lr=_to_float(group["lr"]), beta1=_to_float(beta1), beta2=_to_float(beta2),
                         eps=float(group["eps"]), weight_decay=float(group["weight_decay"]),
                         momentum_decay=float(group["momentum_decay"]), maximize=bool(group["maximize"]),
                         decoupled_weight_decay=bool(group["decoupled_weight_decay"]), masters=t["masters"],
                         grad_scale=grad_scale, found_inf=found_inf)

    def step(self, closure=None):
        return self._fused_step(closure)
