"""RMSprop: PyTorch's algorithm (torch.optim.RMSprop) with momentum, centered, weight decay and
maximize, one fused C call per (device, dtype) group per step."""
from .. import _C
from .optimizer import Optimizer, _check_lr, _check_nonnegative, _check_not_differentiable, _to_float

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    _step_supports_amp_scaling = True

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False, *, master_weights=False):
        _check_lr(lr)
        _check_nonnegative(("epsilon", eps), ("momentum", momentum), ("weight_decay", weight_decay),
                           ("alpha", alpha))
        _check_not_differentiable(differentiable)
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps, "centered": centered,
                    "weight_decay": weight_decay, "capturable": capturable, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "master_weights": master_weights}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        self._setdefault_groups(momentum=0, centered=False, foreach=None, maximize=False, differentiable=False,
                                capturable=False, master_weights=False)

    def _init_param_state(self, state, p, group, master):
        self._init_step_state(state, p, master, ("square_avg",))
        self._init_option_state(state, p, master, "momentum_buffer", group["momentum"] > 0)
        self._init_option_state(state, p, master, "grad_avg", group["centered"])

    def _state_keys(self, group):
        return (["square_avg"] + (["momentum_buffer"] if group["momentum"] > 0 else [])
                + (["grad_avg"] if group["centered"] else []))

    def _fused_update(self, group, t, grad_scale, found_inf):
        _C._fused_rmsprop_(t["params"], t["grads"], t["square_avg"], t.get("momentum_buffer"), t.get("grad_avg"),
                           t["steps"], lr=_to_float(group["lr"]), alpha=float(group["alpha"]), eps=float(group["eps"]),
                           weight_decay=_to_float(group["weight_decay"]), momentum=float(group["momentum"]),
                           centered=bool(group["centered"]), maximize=bool(group["maximize"]), masters=t["masters"],
                           grad_scale=grad_scale, found_inf=found_inf)

    def step(self, closure=None):
        return self._fused_step(closure)
