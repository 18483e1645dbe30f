"""Adafactor (torch.optim.Adafactor): Adam-like steps with a factored second moment (a row and a
column variance per matrix, one variance per vector), relative step sizes and update clipping.
Ported from torch's single-tensor loop: composed tensor ops per parameter (norms, a matmul of the
factors, lerp), with the host reads PyTorch makes too (the step, two norms), so it takes no
GradScaler, as in PyTorch."""
import ampc as torch  # the package namespace (bound lazily: ampc is importing this module)

from .._C import Tensor
from .optimizer import Optimizer, _to_float

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
                 foreach=None, maximize=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = {"lr": lr, "beta2_decay": beta2_decay, "eps": eps, "d": d, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        self._setdefault_groups(foreach=None)

    def _init_state(self, p):
        state = self.state[p]
        if len(state) == 0:
            state["step"] = torch.tensor(0.0, dtype=torch.float32, device=p.device)
            if p.grad.dim() > 1:
                row_shape = list(p.grad.shape)
                row_shape[-1] = 1
                state["row_var"] = p.grad.new_zeros(row_shape)
                col_shape = list(p.grad.shape)
                col_shape[-2] = 1
                state["col_var"] = p.grad.new_zeros(col_shape)
            else:
                state["variance"] = torch.zeros_like(p.grad)
        return state

    @torch.no_grad()
    def step(self, closure=None):
        loss = self._closure_loss(closure)
        if getattr(self, "grad_scale", None) is not None or getattr(self, "found_inf", None) is not None:
            raise AssertionError("Grad scaling should occur outside of optimizer.step()")
        for group in self.param_groups:
            eps1, eps2 = group["eps"]
            lr = _to_float(group["lr"])
            for param in group["params"]:
                if param.grad is None:
                    continue
                state = self._init_state(param)
                self._update(param, state, lr, eps1, eps2, group)
        return loss

    @staticmethod
    def _update(param, state, lr, eps1, eps2, group):
        grad = param.grad if not group["maximize"] else -param.grad
        if eps1 is None:
            eps1 = torch.finfo(param.dtype).eps
        step_t = state["step"]
        step_t += 1
        step_float = step_t.item()
        one_minus_beta2_t = step_float ** group["beta2_decay"]
        rho_t = min(lr, 1 / (step_float**0.5))
        alpha = max(eps2, param.norm(2).item() / (param.numel() ** 0.5)) * rho_t
        if group["weight_decay"] != 0:
            param.mul_(1 - lr * group["weight_decay"])
        if grad.dim() > 1:
            row_var, col_var = state["row_var"], state["col_var"]
            row_mean = torch.norm(grad, dim=-1, keepdim=True).square_().div_(grad.size(-1))
            row_var.lerp_(row_mean, one_minus_beta2_t)
            col_mean = torch.norm(grad, dim=-2, keepdim=True).square_().div_(grad.size(-2))
            col_var.lerp_(col_mean, one_minus_beta2_t)
            var_estimate = row_var @ col_var
            var_estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
        else:
            variance = state["variance"]
            grad_squared = grad * grad
            variance.lerp_(grad_squared, one_minus_beta2_t)
            var_estimate = variance.clone()
        update = var_estimate.clamp_(min=eps1 * eps1).rsqrt_()
        update.mul_(grad)
        denom = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * group["d"]))
        param.add_(update, alpha=-alpha / denom)
