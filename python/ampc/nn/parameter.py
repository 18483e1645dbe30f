"""nn.Parameter and nn.Buffer: the markers a Module's attribute assignment looks for.

Parameter is a Python subclass of the C type ampc.Tensor (made through Tensor._make_subclass, as
in PyTorch), so `isinstance(p, ampc.Tensor)` holds and every tensor op accepts it. It shares the
memory of the tensor it was made from, is a leaf, and requires grad unless told otherwise.
"""
import copy

from .._C import Tensor

__all__ = ["Parameter", "Buffer"]


def _empty():
    from .. import empty
    return empty(0)


def _rebuild_parameter(data, requires_grad, attrs):
    param = Parameter(data, requires_grad)
    param.__dict__.update(attrs)
    return param


class Parameter(Tensor):
    """A tensor that is a module parameter: assigned as a Module attribute, it is registered and
    appears in parameters(), state_dict() and so in every optimizer."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _empty()
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): data must be a Tensor, not {type(data).__name__}")
        return Tensor._make_subclass(cls, data, requires_grad)

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.data.clone(), self.requires_grad)
        result.__dict__.update(copy.deepcopy(self.__dict__, memo))
        memo[id(self)] = result
        return result

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, proto):
        return _rebuild_parameter, (self.data, self.requires_grad, dict(self.__dict__))


class _BufferMeta(type):
    # isinstance(t, Buffer) is true for the plain tensors Buffer() marks, as in PyTorch.
    def __instancecheck__(cls, instance):
        if cls is Buffer:
            return isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False)
        return super().__instancecheck__(instance)


class Buffer(metaclass=_BufferMeta):
    """Marks a tensor as a buffer: `module.name = nn.Buffer(t, persistent=False)` registers it as
    register_buffer would. The tensor itself is returned (not a subclass)."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = _empty()
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t
