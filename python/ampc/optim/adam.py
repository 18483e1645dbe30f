"""Adam (and, with decoupled_weight_decay=True, AdamW): PyTorch's algorithm (torch.optim.Adam),
including amsgrad and maximize, one fused C call per (device, dtype) group per step. The step
counter, the bias corrections derived from it and the skip on found_inf all live on the device.
"""
from .. import _C
from .optimizer import Optimizer, _check_lr, _check_nonnegative, _check_not_differentiable, _to_float

__all__ = ["Adam"]


class Adam(Optimizer):
    _step_supports_amp_scaling = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False, fused=None, decoupled_weight_decay=False,
                 master_weights=False):
        _check_lr(lr)
        _check_nonnegative(("epsilon", eps))
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        _check_nonnegative(("weight_decay", weight_decay))
        if not ((isinstance(betas[0], float) and isinstance(betas[1], float))
                or (isinstance(betas[0], _C.Tensor) and isinstance(betas[1], _C.Tensor))):
            raise ValueError("betas must be either both floats or both Tensors")
        _check_not_differentiable(differentiable)
        betas = tuple(_to_float(b) for b in betas)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "amsgrad": amsgrad,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable, "fused": fused, "decoupled_weight_decay": decoupled_weight_decay,
                    "master_weights": master_weights}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        self._setdefault_groups(amsgrad=False, maximize=False, foreach=None, capturable=False, differentiable=False,
                                decoupled_weight_decay=False, fused=None, master_weights=False)

    def _init_param_state(self, state, p, group, master):
        self._init_step_state(state, p, master, ("exp_avg", "exp_avg_sq"))
        self._init_option_state(state, p, master, "max_exp_avg_sq", group["amsgrad"])

    def _state_keys(self, group):
        return ["exp_avg", "exp_avg_sq", "max_exp_avg_sq"] if group["amsgrad"] else ["exp_avg", "exp_avg_sq"]

    def _fused_update(self, group, t, grad_scale, found_inf):
        beta1, beta2 = group["betas"]
        _C._fused_adam_(t["params"], t["grads"], t["exp_avg"], t["exp_avg_sq"], t.get("max_exp_avg_sq"), t["steps"],
                        lr=_to_float(group["lr"]), beta1=_to_float(beta1), beta2=_to_float(beta2),
                        eps=float(group["eps"]), weight_decay=_to_float(group["weight_decay"]),
                        amsgrad=bool(group["amsgrad"]), maximize=bool(group["maximize"]),
                        decoupled_weight_decay=bool(group["decoupled_weight_decay"]), masters=t["masters"],
                        grad_scale=grad_scale, found_inf=found_inf)

    def step(self, closure=None):
        return self._fused_step(closure)
