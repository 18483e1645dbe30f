"""ampc.backends.cuda: torch.backends.cuda. `matmul` holds the cuBLAS switches:

    allow_tf32                               fp32 GEMMs may use TF32 tensor cores
                                             (CUBLAS_COMPUTE_32F_FAST_TF32). Default False.
    allow_fp16_reduced_precision_reduction   fp16 split-K GEMMs may sum partial results in fp16.
                                             Default True; False keeps every reduction in fp32.
    allow_bf16_reduced_precision_reduction   the same for bf16. Default True.

They steer every GEMM on CUDA: mm, bmm, matmul, addmm, baddbmm, einsum, nn.Linear, attention,
and convolutions (im2col + GEMM: there is no cuDNN in ampc).
"""
from ... import _C

_FLAGS = {
    "allow_tf32": (_C._get_cublas_allow_tf32, _C._set_cublas_allow_tf32),
    "allow_fp16_reduced_precision_reduction": (_C._get_cublas_allow_fp16_reduced_precision_reduction,
                                               _C._set_cublas_allow_fp16_reduced_precision_reduction),
    "allow_bf16_reduced_precision_reduction": (_C._get_cublas_allow_bf16_reduced_precision_reduction,
                                               _C._set_cublas_allow_bf16_reduced_precision_reduction),
}


class cuBLASModule:
    """Attribute access to the C core's flags, as torch.backends.cuda.matmul is."""

    def __getattr__(self, name):
        if name in _FLAGS:
            return _FLAGS[name][0]()
        raise AttributeError("Unknown attribute " + name)

    def __setattr__(self, name, value):
        if name in _FLAGS:
            return _FLAGS[name][1](bool(value))
        raise AttributeError("Unknown attribute " + name)

    def __dir__(self):
        return sorted(_FLAGS)


matmul = cuBLASModule()


def is_built():
    """True when ampc was compiled with CUDA support (a GPU may still be absent)."""
    return _C._cuda_is_built()
