"""Grad mode switches: no_grad, enable_grad, set_grad_enabled, inference_mode.

Each is a context manager and a decorator, as in PyTorch. The switch itself lives in the C core
(thread-local), so ops test it without calling back into Python; these classes only save and
restore it.
"""
import functools
import inspect

from .. import _C

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled"]

is_grad_enabled = _C.is_grad_enabled
is_inference_mode_enabled = _C.is_inference_mode_enabled


class _DecoratorContextManager:
    """Lets a context manager also decorate a function (each call runs inside a fresh copy)."""

    def __call__(self, func):
        if inspect.isclass(func):
            raise RuntimeError(f"{type(self).__name__} cannot decorate a class")
        if inspect.isgeneratorfunction(func):
            @functools.wraps(func)
            def generator(*args, **kwargs):
                gen = func(*args, **kwargs)
                with self.clone():
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        with self.clone():
                            gen.close()
                        raise
                    except BaseException as e:  # forwarded into the generator, as PyTorch does
                        with self.clone():
                            response = gen.throw(e)
                    else:
                        with self.clone():
                            try:
                                response = gen.send(request)
                            except StopIteration as stop:
                                return stop.value
            return generator

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)
        return wrapper

    def clone(self):
        return self.__class__()


class _GradModeRegion(_DecoratorContextManager):
    """Grad mode set to the class's `_enabled` inside the region, the previous mode after it."""

    _enabled = None

    def __enter__(self):
        self.prev = _C._grad_mode_flag()
        _C._set_grad_enabled(self._enabled)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev)


class no_grad(_GradModeRegion):
    """Ops inside do not record graphs: results have requires_grad=False."""

    _enabled = False


class enable_grad(_GradModeRegion):
    """Turns grad mode back on inside a no_grad region."""

    _enabled = True


class set_grad_enabled(_DecoratorContextManager):
    """set_grad_enabled(mode): takes effect when called (also as a plain function), and the
    previous mode comes back when used as a context manager exits."""

    def __init__(self, mode):
        self.prev = _C._grad_mode_flag()
        self.mode = bool(mode)
        _C._set_grad_enabled(self.mode)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev)

    def clone(self):
        return self.__class__(self.mode)

    def __call__(self, func):
        _C._set_grad_enabled(self.prev)  # as a decorator it must not change the mode now
        return super().__call__(func)


class inference_mode(_DecoratorContextManager):
    """inference_mode(mode=True): no graphs at all (like no_grad) and is_inference_mode_enabled()."""

    def __init__(self, mode=True):
        self.mode = bool(mode)

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)  # used as a bare decorator: @inference_mode

    def __enter__(self):
        self.prev = _C.is_inference_mode_enabled()
        _C._set_inference_mode(self.mode)

    def __exit__(self, *exc):
        _C._set_inference_mode(self.prev)

    def clone(self):
        return self.__class__(self.mode)
