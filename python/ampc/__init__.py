"""ampc: PyTorch's tensor and automatic mixed precision (AMP) API on a C/CUDA core, without PyTorch.

`import ampc as torch` is the intended use: the names below mirror torch's. The tensor, its ops
and the creation functions live in the compiled module ampc._C; this file re-exports them and
the Python subpackages (amp, cuda, cpu, nn, random), as `import torch` does.
"""
import os as _os

# ampc's OpenMP kernels share a few cores with OpenBLAS and with the Python thread: spinning idle
# threads (GOMP's default) collapse throughput when the machine is busy. Users can still override.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from . import _C  # noqa: E402
from ._C import *  # noqa: E402,F401,F403  (every function of every area's module table)
from ._C import Size, Tensor, device, dtype  # noqa: F401
from ._C import (  # noqa: F401  dtype objects and their aliases
    bfloat16, bool, double, float, float16, float32, float64, half, int, int32, int64, long, uint8,
)
from ._tensor_str import get_printoptions, set_printoptions  # noqa: F401

from . import amp, cpu, cuda, nn, random  # noqa: E402,F401
from .amp import autocast, GradScaler  # noqa: E402,F401  (torch.GradScaler is torch.amp.GradScaler)
from .amp._legacy_state import *  # noqa: E402,F401,F403  (torch's deprecated per-device autocast getters/setters)
# the GradScaler kernels under torch's top-level names (third-party scalers call them directly)
from ._C import _amp_foreach_non_finite_check_and_unscale_, _amp_update_scale_  # noqa: E402,F401
# The Python-level seeding functions (they return and manage ampc.Generator objects) replace
# the raw ones of _C.
from .random import Generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state  # noqa: E402,F401

__version__ = "0.1.0"

from . import autograd  # noqa: E402
from .autograd import enable_grad, inference_mode, no_grad, set_grad_enabled  # noqa: E402,F401

from .serialization import load, save  # noqa: E402,F401
from . import backends, linalg, optim, utils  # noqa: E402,F401  (torch.optim / torch.utils.data reachable from `import torch`)
from . import multiprocessing  # noqa: E402,F401  (torch.multiprocessing; registers the tensor reductions)
from .backends import get_float32_matmul_precision, set_float32_matmul_precision  # noqa: E402,F401

# The composed surface: top-level functions for Tensor methods, composed math, settings and
# constants (ampc._functions, ampc._composed, ampc._runtime), and the methods they add to Tensor.
# A name ampc._C already exports (a kernel-backed version) is kept, as for Tensor methods.
from . import _composed, _functions, _runtime  # noqa: E402
globals().update({k: v for k, v in _functions.install().items() if k not in globals()})
_C._install_tensor_methods(_composed.TENSOR_METHODS)
from ._notebook import tensor_html as _tensor_html  # noqa: E402
_C._install_tensor_methods({"_repr_html_": _tensor_html})  # Jupyter's rich display
globals().update({k: v for k, v in _composed.FUNCTIONS.items() if k not in globals()})
from ._runtime import (  # noqa: E402,F401
    are_deterministic_algorithms_enabled, asarray, compile, e, empty_permuted, empty_strided, finfo, frombuffer,
    get_deterministic_debug_mode, has_openmp, iinfo, inf, init_num_threads, is_deterministic_algorithms_warn_only_enabled,
    nan, newaxis, pi, scalar_tensor, set_deterministic_debug_mode, typename, use_deterministic_algorithms,
)
from . import _nn_toplevel  # noqa: E402
globals().update({k: v for k, v in _nn_toplevel.FUNCTIONS.items() if k not in globals()})
from ._rnn_toplevel import gru_cell, lstm_cell, rnn_relu_cell, rnn_tanh_cell  # noqa: E402,F401  (issue 13: rnn)
from . import _nn_toplevel_act  # noqa: E402  (issue 13, act)
globals().update({k: v for k, v in _nn_toplevel_act.FUNCTIONS.items() if k not in globals()})
from . import accelerator, onnx  # noqa: E402,F401
from . import testing  # noqa: E402,F401  (torch.testing is there after `import torch`)
from . import distributed  # noqa: E402,F401  (torch.distributed likewise)
from . import func  # noqa: E402,F401  (torch.func.functional_call)
from ._legacy_types import CPU_TYPES as _LEGACY_TYPES, CUDA_TYPES as _LEGACY_CUDA_TYPES  # noqa: E402
globals().update(_LEGACY_TYPES)  # ampc.FloatTensor & co.
vars(cuda).update(_LEGACY_CUDA_TYPES)  # ampc.cuda.FloatTensor & co.
