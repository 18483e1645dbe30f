"""Adadelta: PyTorch's algorithm (torch.optim.Adadelta) with weight decay and maximize, one fused C
call per (device, dtype) group per step."""
from .. import _C
from .optimizer import Optimizer, _check_lr, _check_nonnegative, _check_not_differentiable, _to_float

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    _step_supports_amp_scaling = True

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False, master_weights=False):
        _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check_nonnegative(("epsilon", eps), ("weight_decay", weight_decay))
        _check_not_differentiable(differentiable)
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay, "maximize": maximize,
                    "capturable": capturable, "foreach": foreach, "differentiable": differentiable,
                    "master_weights": master_weights}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        self._setdefault_groups(foreach=None, maximize=False, differentiable=False, capturable=False,
                                master_weights=False)

    def _init_param_state(self, state, p, group, master):
        self._init_step_state(state, p, master, ("square_avg", "acc_delta"))

    def _state_keys(self, group):
        return ["square_avg", "acc_delta"]

    def _fused_update(self, group, t, grad_scale, found_inf):
        _C._fused_adadelta_(t["params"], t["grads"], t["square_avg"], t["acc_delta"], t["steps"],
                            lr=_to_float(group["lr"]), rho=float(group["rho"]), eps=float(group["eps"]),
                            weight_decay=_to_float(group["weight_decay"]), maximize=bool(group["maximize"]),
                            masters=t["masters"], grad_scale=grad_scale, found_inf=found_inf)

    def step(self, closure=None):
        return self._fused_step(closure)
