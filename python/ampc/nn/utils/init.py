"""nn.utils.skip_init: builds a module without running its initialisation (its parameters hold
whatever memory they got), for code that overwrites them right away."""
import inspect

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """module_cls(*args, **kwargs) with every nn.init / reset_parameters fill skipped: the
    tensors are allocated with empty(). The class must accept a `device` keyword, as torch
    requires."""
    from ... import _C
    from ..modules.module import Module
    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    patched = []
    # every class in the MRO that defines reset_parameters skips it during the build
    for cls in module_cls.__mro__:
        if "reset_parameters" in cls.__dict__:
            patched.append((cls, cls.__dict__["reset_parameters"]))
            cls.reset_parameters = lambda self: None
    try:
        module = module_cls(*args, **kwargs)
    finally:
        for cls, fn in patched:
            cls.reset_parameters = fn
    return module.to(device=_C.device(final_device) if not isinstance(final_device, _C.device) else final_device)
