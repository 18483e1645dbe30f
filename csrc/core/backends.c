/* backends.c: start-up of the device backends, and their numeric switches. The CPU backend
 * always registers; the CUDA backend only exists in builds made with nvcc (AMPC_WITH_CUDA) and
 * registers its kernels and allocator only when the driver reports at least one GPU.
 *
 * The switches (torch.backends.cuda.matmul.allow_tf32 and friends) live here rather than in the
 * CUDA backend so that every build, with or without CUDA, keeps and reports them. */
#include "dispatch.h"

void ampc_cpu_register(void);
#ifdef AMPC_WITH_CUDA
void ampc_cuda_register(void);
#endif

void ampc_init_backends(void) {
    static int done = 0;
    if (done) return;
    done = 1;
    ampc_cpu_register();
#ifdef AMPC_WITH_CUDA
    ampc_cuda_register();
#endif
}

/* PyTorch's defaults: fp32 matmuls in full fp32, fp16/bf16 split-K reductions may round partial
 * sums to the output type, convolutions (cuDNN in PyTorch) may use TF32. */
static bool backend_flags[AMPC_NUM_BACKEND_FLAGS] = {
    [AMPC_CUBLAS_ALLOW_TF32] = false,
    [AMPC_CUBLAS_ALLOW_FP16_REDUCED_REDUCTION] = true,
    [AMPC_CUBLAS_ALLOW_BF16_REDUCED_REDUCTION] = true,
    [AMPC_CUDNN_ALLOW_TF32] = true,
};

bool ampc_backend_flag_get(ampc_backend_flag flag) {
    return (unsigned)flag < AMPC_NUM_BACKEND_FLAGS && backend_flags[flag];
}

void ampc_backend_flag_set(ampc_backend_flag flag, bool value) {
    if ((unsigned)flag < AMPC_NUM_BACKEND_FLAGS) backend_flags[flag] = value;
}
