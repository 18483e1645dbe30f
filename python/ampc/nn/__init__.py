"""ampc.nn: torch.nn's modules, parameters, functional ops, init and utils over ampc's core.

`import ampc.nn as nn` gives the names a PyTorch model definition uses: nn.Module, nn.Parameter,
the layers and losses, nn.functional, nn.init and nn.utils.
"""
from . import functional  # noqa: F401
from . import init  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all
from .parameter import Buffer, Parameter  # noqa: F401
from . import utils  # noqa: F401,E402

__all__ = ["Parameter", "Buffer", "functional", "init", "utils"] + list(_modules_all)
from . import parallel  # noqa: F401,E402
from .parallel import DataParallel  # noqa: F401,E402
__all__ += ["parallel", "DataParallel"]


def factory_kwargs(kwargs):
    """torch.nn.factory_kwargs: the device / dtype / memory_format entries of a module's **kwargs,
    merged with its factory_kwargs dict (each key at most once)."""
    if kwargs is None:
        return {}
    simple_keys = {"device", "dtype", "memory_format"}
    expected_keys = simple_keys | {"factory_kwargs"}
    if not kwargs.keys() <= expected_keys:
        raise TypeError(f"unexpected kwargs {kwargs.keys() - expected_keys}")
    r = dict(kwargs.get("factory_kwargs", {}))
    for k in simple_keys:
        if k in kwargs:
            if k in r:
                raise TypeError(f"{k} specified twice, in **kwargs and in factory_kwargs")
            r[k] = kwargs[k]
    return r


__all__ += ["factory_kwargs"]
