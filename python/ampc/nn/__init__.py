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
