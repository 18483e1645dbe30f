/* cuda_layout.cuh: device-side helpers shared by the CUDA kernels: the grid size for n
 * elements, and the storage offset of element i (row-major) of a strided layout. */
#ifndef AMPC_CUDA_LAYOUT_CUH
#define AMPC_CUDA_LAYOUT_CUH

#include "cuda_backend.h"

#define AMPC_CUDA_THREADS 256

/* Enough blocks to cover n threads, capped so huge tensors use grid-stride loops. */
static inline unsigned ampc_cuda_blocks(int64_t n) {
    int64_t b = (n + AMPC_CUDA_THREADS - 1) / AMPC_CUDA_THREADS;
    return (unsigned)(b < 1 ? 1 : b > 65535 * 8 ? 65535 * 8 : b);
}

/* Element offset (in elements) of linear index i. */
__device__ __forceinline__ int64_t ampc_cuda_offset(const ampc_cuda_layout &l, int64_t i) {
    if (l.contiguous) return i;
    int64_t off = 0;
    for (int d = l.ndim - 1; d >= 0; d--) {
        off += (i % l.shape[d]) * l.strides[d];
        i /= l.shape[d];
    }
    return off;
}

#endif
