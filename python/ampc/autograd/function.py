"""autograd.Function: user-defined ops with a forward and a backward written in Python.

As in PyTorch, the ctx object forward receives is also the graph node (the output's grad_fn):
an instance of `<Name>Backward`, a subclass of ampc._C._FunctionBase created per Function class.
apply() runs forward under no_grad, then ampc._C._function_record builds the node (edges to the
tensor arguments, saved tensors, grad_fn on the outputs). During backward the C engine calls
ctx.apply(*grads), which calls the user's backward.
"""
from .. import _C
from .grad_mode import no_grad

__all__ = ["Function", "FunctionCtx", "once_differentiable"]


class FunctionCtx:
    """What forward / setup_context can record on ctx."""

    def save_for_backward(self, *tensors):
        """Tensors backward needs (read back as ctx.saved_tensors, checked for in-place changes)."""
        self.to_save = tensors

    def save_for_forward(self, *tensors):
        self.saved_for_forward = tensors

    def mark_dirty(self, *args):
        """Inputs forward modified in place (they must also be returned as outputs)."""
        self.dirty_tensors = args

    def mark_non_differentiable(self, *args):
        """Outputs that get no grad_fn (indices, masks)."""
        self.non_differentiable = args

    def set_materialize_grads(self, value):
        """False: backward receives None (not zeros) for outputs no gradient reached."""
        self.materialize_grads = bool(value)


class BackwardCFunction(_C._FunctionBase, FunctionCtx):
    """Base of the per-Function node classes; apply() is what the engine calls."""

    def apply(self, *grads):
        return self._forward_cls.backward(self, *grads)


class FunctionMeta(type):
    """Gives each Function subclass its node class, <Name>Backward."""

    def __init__(cls, name, bases, attrs):
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls})
        super().__init__(name, bases, attrs)


def _is_tensor(x):
    return isinstance(x, _C.Tensor)


class Function(FunctionCtx, metaclass=FunctionMeta):
    """Subclass with static forward(ctx, *args) and backward(ctx, *grad_outputs), then call
    MyFunction.apply(*args). forward(*args) with a separate setup_context(ctx, inputs, output)
    works too."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError("autograd.Function is used through its classmethod apply(), not by creating instances "
                           "(define forward and backward as @staticmethod)")

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @classmethod
    def apply(cls, *args, **kwargs):
        grad_on = _C.is_grad_enabled()
        ctx = cls._backward_cls()
        ctx.needs_input_grad = tuple(grad_on and _is_tensor(a) and a.requires_grad for a in args)
        differentiable = any(ctx.needs_input_grad)
        separate = cls.setup_context is not Function.setup_context
        with no_grad():
            if separate:
                outputs = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, outputs)
            else:
                outputs = cls.forward(ctx, *args, **kwargs)
        return _C._function_record(ctx, args, outputs, differentiable)


def once_differentiable(fn):
    """Marks a backward that is not itself differentiable: it runs with grad mode off."""
    import functools

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            return fn(ctx, *args)
    return wrapper
