"""ampc.backends.cudnn: torch.backends.cudnn's switches, for scripts that set them.

ampc has no cuDNN: convolutions on CUDA run as im2col + cuBLASLt GEMMs (core/nn_conv.c and
cuda/cuda_gemm.cu), so is_available() is False and version() None. The switches are kept so
that `torch.backends.cudnn.benchmark = True` and friends work unchanged; none of them changes
ampc's arithmetic. In particular allow_tf32 (PyTorch's default True) only *allows* TF32:
ampc's convolution GEMMs follow ampc.backends.cuda.matmul.allow_tf32 (default False), so
convolutions compute in full fp32 unless that flag is set.
"""
import sys
import types

from ... import _C

enabled = True
benchmark = False
deterministic = False


def is_available():
    return False


def version():
    return None


class _CudnnModule(types.ModuleType):
    """allow_tf32 reads and writes the C core's flag, like torch.backends.cudnn's."""

    @property
    def allow_tf32(self):
        return _C._get_cudnn_allow_tf32()

    @allow_tf32.setter
    def allow_tf32(self, value):
        _C._set_cudnn_allow_tf32(bool(value))


sys.modules[__name__].__class__ = _CudnnModule
