/* backends.c: start-up of the device backends. The CPU backend always registers; the CUDA
 * backend only exists in builds made with nvcc (AMPC_WITH_CUDA) and registers its kernels and
 * allocator only when the driver reports at least one GPU. */
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
