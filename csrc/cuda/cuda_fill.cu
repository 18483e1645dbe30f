/* cuda_fill.cu: the FILL kernel (every element set to one value) for all dtypes. The host side
 * (cuda_runtime.c) converts the value to the dtype's bytes, so one kernel per item size covers
 * all eight dtypes. */
#include <cuda_runtime.h>
#include <string.h>

#include "cuda_layout.cuh"

template <typename T>
__global__ void fill_kernel(T *data, int64_t n, ampc_cuda_layout layout, T value) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        data[ampc_cuda_offset(layout, i)] = value;
}

template <typename T>
static int launch(void *data, int64_t n, const ampc_cuda_layout &layout, const void *value) {
    T v;
    memcpy(&v, value, sizeof v);
    fill_kernel<T><<<ampc_cuda_blocks(n), AMPC_CUDA_THREADS>>>((T *)data, n, layout, v);
    return (int)cudaGetLastError();
}

extern "C" int ampc_cuda_launch_fill(void *data, int64_t numel, ampc_cuda_layout layout, const void *value,
                                     size_t itemsize) {
    switch (itemsize) {
    case 1: return launch<uint8_t>(data, numel, layout, value);
    case 2: return launch<uint16_t>(data, numel, layout, value);
    case 4: return launch<uint32_t>(data, numel, layout, value);
    case 8: return launch<uint64_t>(data, numel, layout, value);
    default: return (int)cudaErrorInvalidValue;
    }
}
