"""ampc._blend: torch's lerp, addcmul and addcdiv, composed of kernel-backed elementwise ops.

torch computes them in one kernel in opmath (fp32 for fp16/bf16 storage) and rounds once; here
16-bit inputs are widened to fp32, combined, and rounded back, which gives the same single
rounding. lerp uses torch's two-sided formula (from `start` below weight 0.5, from `end` above),
so lerp(a, b, 1) is exactly b. Autograd, devices and broadcasting follow from the ops used.
"""
from . import _C
from ._C import Tensor
from ._functions import _dtype_stem

_LOW = (_C.float16, _C.bfloat16)


def _check(fname, value, what):
    if not isinstance(value, Tensor):
        raise TypeError(f"{fname}(): argument '{what}' must be Tensor, not {type(value).__name__}")


def _wide(t):
    return t.float() if isinstance(t, Tensor) and t.dtype in _LOW else t


def _into(out, result, fname):
    from ._composed import _into as into  # one out= rule for every composed function
    return into(out, result, fname)


def _finish(result, dtype, out, fname):
    return _into(out, result.to(dtype) if result.dtype != dtype else result, fname)


def lerp(input, end, weight, *, out=None):
    _check("lerp", input, "input")
    _check("lerp", end, "end")
    if end.dtype != input.dtype:
        raise RuntimeError(f"expected dtype {_dtype_stem(input.dtype)} for `end` but got dtype {_dtype_stem(end.dtype)}")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"lerp(): expected a floating point input, got {_dtype_stem(input.dtype)}")
    dtype = input.dtype
    a, b = _wide(input), _wide(end)
    diff = b - a
    if isinstance(weight, Tensor):
        if weight.dtype != input.dtype:
            raise RuntimeError(f"expected dtype {_dtype_stem(input.dtype)} for `weight` but got dtype "
                               f"{_dtype_stem(weight.dtype)}")
        w = _wide(weight)
        result = _C.where(w.abs() < 0.5, a + w * diff, b - diff * (1 - w))
    else:
        w = float(weight)
        result = a + w * diff if abs(w) < 0.5 else b - diff * (1 - w)
    return _finish(result, dtype, out, "lerp")


def addcmul(input, tensor1, tensor2, *, value=1, out=None):
    for what, t in (("input", input), ("tensor1", tensor1), ("tensor2", tensor2)):
        _check("addcmul", t, what)
    dtype = _C.promote_types(_C.result_type(input, tensor1), _C.result_type(input, tensor2))
    result = _wide(input) + value * (_wide(tensor1) * _wide(tensor2))
    return _finish(result, dtype, out, "addcmul")


def addcdiv(input, tensor1, tensor2, *, value=1, out=None):
    for what, t in (("input", input), ("tensor1", tensor1), ("tensor2", tensor2)):
        _check("addcdiv", t, what)
    if not tensor1.dtype.is_floating_point and not tensor2.dtype.is_floating_point and tensor1.dtype != _C.bool:
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future release addcdiv "
                           "will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be "
                           "implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for "
                           "integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future "
                           "addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), "
                           "for all dtypes.")
    dtype = _C.promote_types(_C.result_type(input, tensor1), _C.result_type(input, tensor2))
    result = _wide(input) + value * (_wide(tensor1) / _wide(tensor2))
    return _finish(result, dtype, out, "addcdiv")


FUNCTIONS = {"lerp": lerp, "addcmul": addcmul, "addcdiv": addcdiv}
