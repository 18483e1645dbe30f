"""ampc.backends: torch.backends' switches for how the device backends compute.

    ampc.backends.cuda.matmul.allow_tf32 = True        # fp32 GEMMs on TF32 tensor cores
    ampc.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    ampc.backends.cudnn.allow_tf32                     # kept for compatibility (see cudnn)

The flags are process-wide, as in PyTorch, and live in the C core (csrc/core/backends.c), where
the CUDA GEMM kernel reads them at each call; builds without CUDA keep them too.
`set_float32_matmul_precision` / `get_float32_matmul_precision` are torch's top-level
spellings of the TF32 switch.
"""
from .. import _C
from . import cuda, cudnn, mkldnn  # noqa: F401

_PRECISIONS = ("highest", "high", "medium")


def set_float32_matmul_precision(precision):
    """"highest": fp32 GEMMs in full fp32 (the default); "high" or "medium": TF32 allowed.
    (PyTorch's "medium" also allows bf16 passes; ampc treats it as "high".)"""
    if precision not in _PRECISIONS:
        raise RuntimeError(f"Invalid float32 matmul precision {precision!r}: expected one of {_PRECISIONS}")
    _C._set_cublas_allow_tf32(precision != "highest")


def get_float32_matmul_precision():
    return "high" if _C._get_cublas_allow_tf32() else "highest"
