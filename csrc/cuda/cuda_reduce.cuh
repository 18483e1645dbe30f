/* cuda_reduce.cuh: what the REDUCE and SCAN kernel files (cuda_reduce.cu, cuda_scan.cu) share:
 * the size of the GPU a launch should fill, small integer helpers, and the scan's registration,
 * which ampc_cuda_register_reduce calls. */
#ifndef AMPC_CUDA_REDUCE_CUH
#define AMPC_CUDA_REDUCE_CUH

#include "cuda_common.cuh"

/* Streaming multiprocessors of GPU `dev`, asked once per device (a host query, no sync); the
 * launch heuristics only need a rough number, so a failed query answers 80. */
static inline int ampc_cuda_sm_count(int dev) {
    static int cache[AMPC_CUDA_MAX_DEVICES];
    if (dev < 0 || dev >= AMPC_CUDA_MAX_DEVICES) return 80;
    if (cache[dev] == 0) {
        int n = 0;
        if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || n <= 0) {
            (void)cudaGetLastError();
            n = 80;
        }
        cache[dev] = n;
    }
    return cache[dev];
}

__host__ __device__ __forceinline__ int64_t ampc_min64(int64_t a, int64_t b) { return a < b ? a : b; }
__host__ __device__ __forceinline__ int64_t ampc_max64(int64_t a, int64_t b) { return a > b ? a : b; }
__host__ __device__ __forceinline__ int64_t ampc_ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* cuda_scan.cu: registers CUMSUM. */
void ampc_cuda_register_scan(void);

#endif
