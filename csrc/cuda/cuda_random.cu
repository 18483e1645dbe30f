/* cuda_random.cu: the RANDOM kernels on CUDA: UNIFORM, NORMAL, RANDINT, BERNOULLI from Philox
 * (one thread per Philox block, the transforms of core/random_transforms.h, shared with the
 * CPU, so a seed gives the same tensor on both devices) and ARANGE (one thread per element). */
#include <cuda_runtime.h>

#include "../core/random_transforms.h"
#include "cuda_layout.cuh"

/* Stores an arithmetic value into element `off` of a tensor of `dtype`, rounding once (the
 * conversions of cpu_dtype_loops.h, device side). */
template <typename V>
__device__ __forceinline__ void store_value(int dtype, char *base, int64_t off, V v) {
    switch (dtype) {
    case AMPC_FLOAT32: ((float *)base)[off] = (float)v; break;
    case AMPC_FLOAT16: ((ampc_half *)base)[off] = ampc_f32_to_half((float)v); break;
    case AMPC_BFLOAT16: ((ampc_bfloat16 *)base)[off] = ampc_f32_to_bf16((float)v); break;
    case AMPC_FLOAT64: ((double *)base)[off] = (double)v; break;
    case AMPC_INT64: ((int64_t *)base)[off] = (int64_t)v; break;
    case AMPC_INT32: ((int32_t *)base)[off] = (int32_t)(int64_t)v; break;
    case AMPC_UINT8: ((uint8_t *)base)[off] = (uint8_t)(int64_t)v; break;
    case AMPC_BOOL: ((bool *)base)[off] = v != 0; break;
    default: break;
    }
}

__global__ void random_kernel(ampc_random_params p, char *base, int64_t n, ampc_cuda_layout layout) {
    int64_t n_blocks = (n + p.per_block - 1) / p.per_block;
    bool ints = ampc_random_makes_ints(&p);
    for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < n_blocks; k += (int64_t)gridDim.x * blockDim.x) {
        int64_t first = k * p.per_block;
        int count = n - first < p.per_block ? (int)(n - first) : p.per_block;
        double d[4];
        int64_t iv[4];
        ampc_random_block(&p, (uint64_t)k, count, d, iv);
        for (int s = 0; s < count; s++) {
            int64_t off = ampc_cuda_offset(layout, first + s);
            if (ints) store_value(p.dtype, base, off, iv[s]);
            else store_value(p.dtype, base, off, d[s]);
        }
    }
}

/* ARANGE: int64 arithmetic for int start/step into an integral output, else double (as on the CPU). */
__global__ void arange_kernel(int dtype, char *base, int64_t n, ampc_cuda_layout layout, bool ints, int64_t istart,
                              int64_t istep, double dstart, double dstep) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off = ampc_cuda_offset(layout, i);
        if (ints) store_value(dtype, base, off, istart + i * istep);
        else store_value(dtype, base, off, ampc_dadd(dstart, ampc_dmul((double)i, dstep)));
    }
}

extern "C" int ampc_cuda_launch_random(ampc_op op, const ampc_kernel_args *args) {
    ampc_tensor *t = args->out[0];
    int64_t n = ampc_numel(t);
    if (n == 0) return 0;
    char *base = (char *)ampc_data_ptr(t);
    ampc_cuda_layout layout = ampc_cuda_layout_of(t);
    if (op == AMPC_OP_ARANGE) {
        bool ints = args->scalars[0].kind == AMPC_SCALAR_INT && args->scalars[1].kind == AMPC_SCALAR_INT &&
                    !ampc_dtype_is_floating(t->dtype);
        arange_kernel<<<ampc_cuda_blocks(n), AMPC_CUDA_THREADS>>>(
            (int)t->dtype, base, n, layout, ints, ampc_scalar_to_int(args->scalars[0]),
            ampc_scalar_to_int(args->scalars[1]), ampc_scalar_to_double(args->scalars[0]),
            ampc_scalar_to_double(args->scalars[1]));
        return (int)cudaGetLastError();
    }
    if ((op == AMPC_OP_UNIFORM || op == AMPC_OP_NORMAL) && !ampc_dtype_is_floating(t->dtype))
        return (int)cudaErrorInvalidValue; /* the frontends reject this first */
    ampc_random_params p = ampc_random_params_of(op, args, t->dtype);
    int64_t n_blocks = (n + p.per_block - 1) / p.per_block;
    random_kernel<<<ampc_cuda_blocks(n_blocks), AMPC_CUDA_THREADS>>>(p, base, n, layout);
    return (int)cudaGetLastError();
}
