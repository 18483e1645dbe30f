/* cuda_host.h: what the host-side C files of the CUDA backend share (cuda_runtime.c,
 * cuda_allocator.c, cuda_stream.c) and the .cu files through cuda_common.cuh: the CUDA_TRY
 * macros and the device switch (ampc_cuda_guard in cuda_common.cuh is its C++ scope form).
 * Internal: not part of the backend's API. */
#ifndef AMPC_CUDA_HOST_H
#define AMPC_CUDA_HOST_H

#include <cuda_runtime_api.h>

#include "../core/ampc.h"
#include "cuda_backend.h"

/* Returns from the enclosing function (which returns ampc_status) when a CUDA call fails. */
#define AMPC_CUDA_TRY(call)                                                             \
    do {                                                                                \
        cudaError_t ampc_cuda_err_ = (call);                                            \
        if (ampc_cuda_err_ != cudaSuccess)                                              \
            return ampc_cuda_error((int)ampc_cuda_err_, #call, __FILE__, __LINE__);     \
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

/* AMPC_CUDA_TRY with GPU `device` current for the one call (the previous device is restored
 * before a failure returns). */
#define AMPC_CUDA_TRY_ON(device, call)                                                  \
    do {                                                                                \
        int ampc_cuda_prev_ = ampc_cuda_enter_device(device);                           \
        cudaError_t ampc_cuda_err_ = (call);                                            \
        ampc_cuda_leave_device(ampc_cuda_prev_, device);                                \
        if (ampc_cuda_err_ != cudaSuccess)                                              \
            return ampc_cuda_error((int)ampc_cuda_err_, #call, __FILE__, __LINE__);     \
    } while (0)

/* cuda_allocator.c: registers the device and pinned-host allocators (called at start-up). */
void ampc_cuda_register_allocators(void);

#endif
