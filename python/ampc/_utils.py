"""ampc._utils: small helpers the Python package shares (torch keeps the same in torch._utils)."""
from . import _C


def _typename(obj):
    """The type name PyTorch's error messages show: "ampc.Tensor", "int", "mymodule.MyClass"."""
    if isinstance(obj, _C.Tensor):
        return "ampc.Tensor"
    cls = type(obj)
    module = getattr(cls, "__module__", "")
    return cls.__qualname__ if module in ("", "builtins", None) else f"{module}.{cls.__qualname__}"


def _zero_grads(params, set_to_none=True):
    """Module.zero_grad and Optimizer.zero_grad: drop each grad, or zero it in place (detached
    first, so the zeroing is not recorded in a graph the grad may belong to)."""
    for p in params:
        if p.grad is None:
            continue
        if set_to_none:
            p.grad = None
        else:
            if p.grad.grad_fn is not None:
                p.grad.detach_()
            else:
                p.grad.requires_grad_(False)
            p.grad.zero_()
