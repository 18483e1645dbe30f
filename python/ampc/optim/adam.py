"""Adam (and, with decoupled_weight_decay=True, AdamW): PyTorch's algorithm (torch.optim.Adam),
including amsgrad and maximize, one fused C call per (device, dtype) group per step. The step
counter, the bias corrections derived from it and the skip on found_inf all live on the device.
"""
from .. import _C
from .optimizer import Optimizer, _check_lr, _to_float

__all__ = ["Adam"]


class Adam(Optimizer):
    _step_supports_amp_scaling = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False, fused=None, decoupled_weight_decay=False,
                 master_weights=False):
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not ((isinstance(betas[0], float) and isinstance(betas[1], float))
                or (isinstance(betas[0], _C.Tensor) and isinstance(betas[1], _C.Tensor))):
            raise ValueError("betas must be either both floats or both Tensors")
        if differentiable:
            raise NotImplementedError("ampc optimizers do not support differentiable=True")
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
        if "step" not in state:
            state["step"] = self._zero_step(p)
            self._note_created(state)
            state["exp_avg"] = self._zeros_state(p, master)
            state["exp_avg_sq"] = self._zeros_state(p, master)
        if group["amsgrad"] and "max_exp_avg_sq" not in state:
            state["max_exp_avg_sq"] = self._zeros_state(p, master)

    def step(self, closure=None):
        loss = self._begin_step(closure)
        amp_cache = {}
        for group in self.param_groups:
            amsgrad = bool(group["amsgrad"])
            keys = ["exp_avg", "exp_avg_sq", "max_exp_avg_sq"] if amsgrad else ["exp_avg", "exp_avg_sq"]
            beta1, beta2 = group["betas"]
            for (device, _, _), t in self._fused_lists(group, keys).items():
                grad_scale, found_inf = self._amp_tensors(device, amp_cache)
                _C._fused_adam_(t["params"], t["grads"], t["exp_avg"], t["exp_avg_sq"], t.get("max_exp_avg_sq"),
                                t["steps"], lr=_to_float(group["lr"]), beta1=_to_float(beta1), beta2=_to_float(beta2),
                                eps=float(group["eps"]), weight_decay=_to_float(group["weight_decay"]),
                                amsgrad=amsgrad, maximize=bool(group["maximize"]),
                                decoupled_weight_decay=bool(group["decoupled_weight_decay"]), masters=t["masters"],
                                grad_scale=grad_scale, found_inf=found_inf)
        self._end_step()
        return loss
