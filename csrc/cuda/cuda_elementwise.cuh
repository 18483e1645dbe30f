/* cuda_elementwise.cuh: the loop machinery shared by the elementwise-shaped kernels of
 * cuda_copy.cu (copies, casts, fills) and cuda_elementwise.cu (unary, binary, compare, where):
 * strided offsets with cheap division, 128-bit packs, and the alignment test that picks the
 * vectorised path. */
#ifndef AMPC_CUDA_ELEMENTWISE_CUH
#define AMPC_CUDA_ELEMENTWISE_CUH

#include <stdint.h>

#include "cuda_common.cuh"

/* Element offsets of linear (row-major) index i in the first N operands of ix. Dim 0 needs no
 * division (i < numel); the others use 32-bit division when the iteration has fewer than 2^32
 * elements, several times cheaper than 64-bit division. */
template <int N>
__device__ __forceinline__ void ampc_cuda_offsets(const ampc_cuda_indexer &ix, int64_t i, int64_t *off) {
    if (ix.contiguous) {
#pragma unroll
        for (int k = 0; k < N; k++) off[k] = i;
        return;
    }
#pragma unroll
    for (int k = 0; k < N; k++) off[k] = 0;
    if (ix.numel <= (int64_t)UINT32_MAX) {
        uint32_t rest = (uint32_t)i;
        for (int d = ix.ndim - 1; d > 0; d--) {
            uint32_t size = (uint32_t)ix.shape[d];
            uint32_t q = rest / size, r = rest - q * size;
            rest = q;
#pragma unroll
            for (int k = 0; k < N; k++) off[k] += (int64_t)r * ix.strides[k][d];
        }
#pragma unroll
        for (int k = 0; k < N; k++) off[k] += (int64_t)rest * ix.strides[k][0];
    } else {
        int64_t rest = i;
        for (int d = ix.ndim - 1; d > 0; d--) {
            int64_t q = rest / ix.shape[d], r = rest - q * ix.shape[d];
            rest = q;
#pragma unroll
            for (int k = 0; k < N; k++) off[k] += r * ix.strides[k][d];
        }
#pragma unroll
        for (int k = 0; k < N; k++) off[k] += rest * ix.strides[k][0];
    }
}

/* N elements of T moved as one aligned load or store (16 bytes: one 128-bit access). */
template <typename T, int N> struct alignas(sizeof(T) * N) ampc_cuda_pack {
    T v[N];
};

/* True when p may be accessed as ampc_cuda_pack<T, N> (NULL passes: a scalar operand). */
template <typename T, int N> static inline bool ampc_cuda_pack_aligned(const void *p) {
    return (uintptr_t)p % (sizeof(T) * N) == 0;
}

/* Grid for a grid-stride loop over n work items (at least one block). */
static inline unsigned ampc_cuda_grid(int64_t n) { return ampc_cuda_blocks(n < 1 ? 1 : n); }

#endif
