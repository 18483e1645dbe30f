/* cuda_host.h: what the host-side C files of the CUDA backend share (cuda_runtime.c,
 * cuda_allocator.c, cuda_stream.c): the CUDA_TRY macro and a device switch for C code (the .cu
 * files have ampc_cuda_guard in cuda_common.cuh). Internal: not part of the backend's API. */
#ifndef AMPC_CUDA_HOST_H
#define AMPC_CUDA_HOST_H

#include <cuda_runtime_api.h>

#include "../core/ampc.h"
#include "cuda_backend.h"

/* Returns from the enclosing function (which returns ampc_status) when a CUDA call fails. */
#define CUDA_TRY(call)                                                                 \
    do {                                                                               \
        cudaError_t cuda_try_err_ = (call);                                            \
        if (cuda_try_err_ != cudaSuccess)                                              \
            return ampc_cuda_error((int)cuda_try_err_, #call, __FILE__, __LINE__);     \
    } while (0)

/* Makes GPU `index` current for the CUDA calls that follow; returns the previous device, which
 * leave_device restores. */
static inline int ampc_cuda_enter_device(int index) {
    int prev = 0;
    if (cudaGetDevice(&prev) != cudaSuccess) {
        cudaGetLastError();
        prev = index;
    }
    if (prev != index) cudaSetDevice(index);
    return prev;
}
static inline void ampc_cuda_leave_device(int prev, int index) {
    if (prev != index) cudaSetDevice(prev);
}

/* cuda_allocator.c: registers the device and pinned-host allocators (called at start-up). */
void ampc_cuda_register_allocators(void);

#endif
