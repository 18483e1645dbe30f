"""SGD with momentum, dampening, Nesterov momentum, weight decay and maximize: PyTorch's algorithm
(torch.optim.SGD), one fused C call per (device, dtype) group per step.

PyTorch creates the momentum buffer from the first gradient. A step the GradScaler may skip on the
device cannot know on the host whether that happened, so ampc creates the buffer up front and keeps
a private per-parameter counter of momentum updates on the device (state["_momentum_steps"]); the
kernel treats a counter of 0 as the first step. state_dict() shows PyTorch's layout: the buffer
appears once a momentum update really happened (Optimizer._export_state).
"""
from .. import _C
from .optimizer import Optimizer, _check_not_differentiable, _to_float

__all__ = ["SGD"]


class SGD(Optimizer):
    _step_supports_amp_scaling = True
    _counter_key = "_momentum_steps"  # momentum updates taken, on the device (0: the next is the first)

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *, maximize=False,
                 foreach=None, differentiable=False, fused=None, master_weights=False):
        if isinstance(lr, _C.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _check_not_differentiable(differentiable)
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening, "weight_decay": weight_decay,
                    "nesterov": nesterov, "maximize": maximize, "foreach": foreach, "differentiable": differentiable,
                    "fused": fused, "master_weights": master_weights}
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        self._setdefault_groups(nesterov=False, maximize=False, foreach=None, differentiable=False, fused=False,
                                master_weights=False)

    def _init_param_state(self, state, p, group, master):
        if group["momentum"] != 0 and "momentum_buffer" not in state:
            state["momentum_buffer"] = self._zeros_state(p, master)
            state["_momentum_steps"] = self._zero_step(p)
            self._note_created(state)

    def _restore_state(self, param, state, group):
        super()._restore_state(param, state, group)
        if "momentum_buffer" in state and state["momentum_buffer"] is None:  # old PyTorch state dicts
            del state["momentum_buffer"]
        if "momentum_buffer" in state:
            state["_momentum_steps"] = _C.ones((), dtype=_C.float32, device=param.device)

    def _state_keys(self, group):
        return ["momentum_buffer"] if group["momentum"] != 0 else []

    def _step_key(self, group):
        return "_momentum_steps" if group["momentum"] != 0 else None

    def _fused_update(self, group, t, grad_scale, found_inf):
        _C._fused_sgd_(t["params"], t["grads"], t.get("momentum_buffer"), t["steps"], lr=_to_float(group["lr"]),
                       momentum=float(group["momentum"]), dampening=float(group["dampening"]),
                       weight_decay=_to_float(group["weight_decay"]), nesterov=bool(group["nesterov"]),
                       maximize=bool(group["maximize"]), masters=t["masters"], grad_scale=grad_scale,
                       found_inf=found_inf)

    def step(self, closure=None):
        return self._fused_step(closure)
