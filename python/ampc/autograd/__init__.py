"""ampc.autograd: reverse-mode automatic differentiation (the engine is in the C core).

backward(tensors, grad_tensors) accumulates gradients into the leaves' .grad; grad(outputs,
inputs, ...) returns them instead. Grad mode switches and custom Functions live in grad_mode.py
and function.py.
"""
from .. import _C
from .function import Function, FunctionCtx, once_differentiable
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
                        set_grad_enabled)

__all__ = ["backward", "grad", "Function", "FunctionCtx", "once_differentiable", "no_grad", "enable_grad",
           "set_grad_enabled", "inference_mode", "is_grad_enabled", "is_inference_mode_enabled", "detect_anomaly",
           "set_detect_anomaly", "is_anomaly_enabled"]


def _tensor_tuple(x, what):
    if isinstance(x, _C.Tensor):
        return (x,)
    if x is None:
        return None
    try:
        return tuple(x)
    except TypeError:
        raise TypeError(f"{what} must be a Tensor or a sequence of Tensors, not {type(x).__name__}") from None


def _grad_tuple(grads, n, what):
    if grads is None:
        return (None,) * n
    grads = (grads,) if isinstance(grads, _C.Tensor) or grads is None else tuple(grads)
    if len(grads) != n:
        raise RuntimeError(f"{what} should be a sequence of length {n} but got {len(grads)}")
    return grads


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None, inputs=None):
    """Accumulates d(sum(tensors * grad_tensors))/d(leaf) into the .grad of every leaf reached
    (or only of `inputs`)."""
    if grad_variables is not None:
        grad_tensors = grad_variables
    tensors = _tensor_tuple(tensors, "tensors")
    grad_tensors = _grad_tuple(grad_tensors, len(tensors), "grad_tensors")
    if retain_graph is None:
        retain_graph = create_graph
    inputs = _tensor_tuple(inputs, "inputs")
    if inputs is not None and len(inputs) == 0:
        raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    _C._run_backward(tensors, grad_tensors, bool(retain_graph), bool(create_graph), inputs, False, True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of sum(outputs * grad_outputs) with respect to each of `inputs`, as a tuple.
    .grad is not touched. create_graph=True records the computation, for higher derivatives."""
    if is_grads_batched:
        raise NotImplementedError("ampc.autograd.grad: is_grads_batched is not supported")
    outputs = _tensor_tuple(outputs, "outputs")
    inputs = _tensor_tuple(inputs, "inputs")
    grad_outputs = _grad_tuple(grad_outputs, len(outputs), "grad_outputs")
    if retain_graph is None:
        retain_graph = create_graph
    if allow_unused is None:
        allow_unused = materialize_grads
    if materialize_grads and not allow_unused:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but got "
                         "allow_unused=False.")
    result = _C._run_backward(outputs, grad_outputs, bool(retain_graph), bool(create_graph), inputs,
                              bool(allow_unused), False)
    if materialize_grads:
        result = tuple(_C.zeros_like(i) if g is None else g for g, i in zip(result, inputs))
    return result


_anomaly = False


def is_anomaly_enabled():
    return _anomaly


class set_detect_anomaly:
    """Accepted for compatibility: ampc records no forward traces, so anomaly mode only toggles
    the flag is_anomaly_enabled() reports (the engine's errors already name the failing node)."""

    def __init__(self, mode, check_nan=True):
        global _anomaly
        self.prev, _anomaly = _anomaly, bool(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        global _anomaly
        _anomaly = self.prev


class detect_anomaly(set_detect_anomaly):
    def __init__(self, check_nan=True):
        super().__init__(True, check_nan)
