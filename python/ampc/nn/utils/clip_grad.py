"""Gradient clipping: clip_grad_norm_ with one fused norm over all grads (a single C kernel call
per device, accumulating in double on the CPU) and a device-side scale, so clipping reads nothing
back to the host unless error_if_nonfinite asks for it; clip_grad_value_.

The total norm comes back in the grads' (promoted) dtype, as PyTorch's does; the clip
coefficient is computed from the fp32/fp64 accumulation, so fp16 grads whose norm exceeds the
fp16 range are still clipped correctly.
"""
import math
import types
import warnings

from ... import _C
from ...autograd import no_grad

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]


def _tensor_list(tensors):
    return [tensors] if isinstance(tensors, _C.Tensor) else list(tensors)


def _group_by_device(tensors):
    groups = {}
    for t in tensors:
        groups.setdefault(str(t.device), []).append(t)
    return list(groups.values())


def _accumulated_norm(tensors, norm_type):
    """The total norm as a 0-dim float32 (float64 when a tensor is float64) tensor on the first
    tensor's device: one fused kernel per device, then the per-device norms combined."""
    if norm_type == 0.0:
        # PyTorch takes the 0-"norm" of the per-tensor norms: the number of non-zero tensors
        per_tensor = [_C._multi_tensor_norm([t], math.inf).to(tensors[0].device) for t in tensors]
        return _C.stack(per_tensor).ne(0).sum().float()
    groups = _group_by_device(tensors)
    if len(groups) == 1:
        return _C._multi_tensor_norm(groups[0], norm_type)
    norms = [_C._multi_tensor_norm(g, norm_type).to(tensors[0].device) for g in groups]
    return _C._multi_tensor_norm([_C.stack(norms)], norm_type)


def _result_dtype(tensors):
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        dtype = _C.promote_types(dtype, t.dtype)
    return dtype


def _checked_total_norm(tensors, norm_type, error_if_nonfinite):
    """_accumulated_norm of `tensors` (None when there are none), which must be finite when
    error_if_nonfinite asks (the one host read clipping can make)."""
    norm_type = float(norm_type)
    if not tensors:
        return None
    total = _accumulated_norm(tensors, norm_type)
    if error_if_nonfinite and not bool(_C.isfinite(total)):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           "it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           "norm anyway, set `error_if_nonfinite=False`")
    return total


@no_grad()
def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of all tensors as if concatenated into one vector (0 for an empty list)."""
    tensors = _tensor_list(tensors)
    total = _checked_total_norm(tensors, norm_type, error_if_nonfinite)
    return _C.tensor(0.0) if total is None else total.to(dtype=_result_dtype(tensors))


@no_grad()
def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scales every grad by min(1, max_norm / (total_norm + 1e-6)), on the device."""
    grads = [p.grad for p in _tensor_list(parameters) if p.grad is not None]
    if not grads:
        return
    coef = _C.clamp(float(max_norm) / (total_norm.float() + 1e-6), max=1.0)
    for group in _group_by_device(grads):
        _C._multi_tensor_scale_(group, coef.to(group[0].device))


@no_grad()
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Clips the grads of `parameters` in place so their total norm is at most max_norm; returns
    the total norm before clipping (a tensor). foreach is accepted for compatibility: ampc always
    uses its fused multi-tensor kernels."""
    if isinstance(parameters, _C.Tensor):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if is_generator and not parameters:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=3)
    grads = [p.grad for p in parameters if p.grad is not None]
    total = _checked_total_norm(grads, norm_type, error_if_nonfinite)
    if total is None:
        return _C.tensor(0.0)
    clip_grads_with_norm_(parameters, max_norm, total)
    return total.to(dtype=_result_dtype(grads))


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


@no_grad()
def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamps every grad into [-clip_value, clip_value] in place."""
    clip_value = float(clip_value)
    for p in _tensor_list(parameters):
        if p.grad is not None:
            p.grad.clamp_(min=-clip_value, max=clip_value)
