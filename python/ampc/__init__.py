"""ampc: PyTorch's tensor and automatic mixed precision (AMP) API on a C/CUDA core, without PyTorch.

`import ampc as torch` is the intended use: the names below mirror torch's. Everything here is
implemented in the compiled module ampc._C; this file only re-exports it.
"""
from . import _C
from ._C import *  # noqa: F401,F403  (every function of every area's module table)
from ._C import Size, Tensor, device, dtype  # noqa: F401
from ._C import (  # noqa: F401  dtype objects and their aliases
    bfloat16, bool, double, float, float16, float32, float64, half, int, int32, int64, long, uint8,
)
from ._tensor_str import get_printoptions, set_printoptions  # noqa: F401

__version__ = "0.1.0"
