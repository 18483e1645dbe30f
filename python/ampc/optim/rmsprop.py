"""RMSprop: PyTorch's algorithm (torch.optim.RMSprop) with momentum, centered, weight decay and
maximize, one fused C call per (device, dtype) group per step."""
from .. import _C
from .optimizer import Optimizer, _check_lr, _to_float

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    _step_supports_amp_scaling = True

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False, *, master_weights=False):
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        if differentiable:
            raise NotImplementedError("ampc optimizers do not support differentiable=True")
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps, "centered": centered,
                    "weight_decay": weight_decay, "capturable": capturable, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "master_weights": master_weights}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        self._setdefault_groups(momentum=0, centered=False, foreach=None, maximize=False, differentiable=False,
                                capturable=False, master_weights=False)

    def _init_param_state(self, state, p, group, master):
        if "step" not in state:
            state["step"] = self._zero_step(p)
            self._note_created(state)
            state["square_avg"] = self._zeros_state(p, master)
        if group["momentum"] > 0 and "momentum_buffer" not in state:
            state["momentum_buffer"] = self._zeros_state(p, master)
        if group["centered"] and "grad_avg" not in state:
            state["grad_avg"] = self._zeros_state(p, master)

    def step(self, closure=None):
        loss = self._begin_step(closure)
        amp_cache = {}
        for group in self.param_groups:
            momentum = group["momentum"] > 0
            centered = bool(group["centered"])
            keys = ["square_avg"] + (["momentum_buffer"] if momentum else []) + (["grad_avg"] if centered else [])
            for (device, _, _), t in self._fused_lists(group, keys).items():
                grad_scale, found_inf = self._amp_tensors(device, amp_cache)
                _C._fused_rmsprop_(t["params"], t["grads"], t["square_avg"], t.get("momentum_buffer"),
                                   t.get("grad_avg"), t["steps"], lr=_to_float(group["lr"]),
                                   alpha=float(group["alpha"]), eps=float(group["eps"]),
                                   weight_decay=_to_float(group["weight_decay"]), momentum=float(group["momentum"]),
                                   centered=centered, maximize=bool(group["maximize"]), masters=t["masters"],
                                   grad_scale=grad_scale, found_inf=found_inf)
        self._end_step()
        return loss
