"""ampc._utils: small helpers the Python package shares (torch keeps the same in torch._utils)."""
from . import _C


def _typename(obj):
    """The type name PyTorch's error messages show: "ampc.Tensor", "int", "mymodule.MyClass"."""
    if isinstance(obj, _C.Tensor):
        return "ampc.Tensor"
    cls = type(obj)
    module = getattr(cls, "__module__", "")
    return cls.__qualname__ if module in ("", "builtins", None) else f"{module}.{cls.__qualname__}"
