/* cuda_gemm.cuh: what the two halves of the CUDA GEMM share: the geometry of one GEMM call (the
 * GEMM row of ops.def reduced to pointers, matrix strides and a few batch dims) and the entry
 * of the cuBLASLt half (cuda_blaslt.cu), called by the kernel in cuda_gemm.cu.
 *
 * Matrices are row-major views as ops.def states them: A (n, k), B (k, m), C and D (n, m), each
 * with its own row stride `rs` and column stride `cs` (elements, any value), plus batch dims
 * that are already simplified (size-1 dims dropped, dims that are contiguous in every operand
 * merged), so most calls have zero or one batch dim. */
#ifndef AMPC_CUDA_GEMM_CUH
#define AMPC_CUDA_GEMM_CUH

#include "cuda_common.cuh"

/* Operand slots. C is the GEMM's input in[2] (absent: ptr NULL), D the output out[0]. */
enum { GEMM_A, GEMM_B, GEMM_C, GEMM_D, GEMM_NOPS };

struct gemm_geom {
    int64_t n, m, k;
    int64_t batch;                                /* product of bshape */
    int32_t nb;                                   /* batch dims, outermost first */
    int64_t bshape[AMPC_MAX_DIMS];
    int64_t bstride[GEMM_NOPS][AMPC_MAX_DIMS];    /* elements; 0 for a broadcast operand */
    int64_t rs[GEMM_NOPS], cs[GEMM_NOPS];         /* elements */
    char *ptr[GEMM_NOPS];                         /* element (0, 0) of batch entry 0 */
};

/* How in[2] reaches cuBLASLt. */
enum gemm_c_mode {
    GEMM_C_NONE,     /* no C input, or beta == 0: D = alpha * A @ B */
    GEMM_C_SEPARATE, /* C read through its own layout: D = alpha * A @ B + beta * C */
    GEMM_C_IN_PLACE, /* in[2] already copied into D: D = alpha * A @ B + beta * D */
    GEMM_C_BIAS,     /* C is one row broadcast over the n rows, beta == 1: the bias epilogue */
};

/* A rows x cols matrix with element strides rs, cs as BLAS reads it (column-major data with a
 * leading dimension): row-major (unit column stride) is the column-major transpose, *trans
 * false, ld = rs; column-major (unit row stride) is itself, *trans true, ld = cs. The stride of
 * a size-1 dim does not matter; BLAS wants ld >= the other extent and >= 1. False when the
 * matrix is neither (a step in both dims, overlapping rows): it has to be packed. Mirrors
 * blas_layout in cpu/cpu_gemm.c. */
static inline bool gemm_blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, bool *trans, int64_t *ld) {
    if ((cols <= 1 || cs == 1) && (rows <= 1 || rs >= cols)) {
        *trans = false;
        *ld = rows <= 1 ? cols : rs;
    } else if ((rows <= 1 || rs == 1) && (cols <= 1 || cs >= rows)) {
        *trans = true;
        *ld = cols <= 1 ? rows : cs;
    } else {
        return false;
    }
    if (*ld < 1) *ld = 1;
    return true;
}

/* Scratch owned by one GEMM call, allocated only when asked for, freed when the call returns:
 * the launches that use it were enqueued on the same stream by then, and the allocator hands a
 * freed block only to later work on that stream. */
struct gemm_scratch {
    void *ptr = nullptr;
    size_t nbytes = 0;
    int device = 0;
    gemm_scratch() = default;
    gemm_scratch(const gemm_scratch &) = delete;
    gemm_scratch &operator=(const gemm_scratch &) = delete;
    ampc_status alloc(int dev, size_t n) {
        device = dev;
        nbytes = n;
        ptr = ampc_cuda_scratch_alloc(dev, n);
        return ptr ? AMPC_OK : ampc_last_status();
    }
    ~gemm_scratch() {
        if (ptr) ampc_cuda_scratch_free(device, ptr, nbytes);
    }
};

#ifdef AMPC_WITH_CUBLAS
/* D = alpha * A @ B (+ C per `mode`) through cublasLtMatmul on `stream`, for float32, float64,
 * float16 and bfloat16 with fp32 accumulation (fp64 for float64). A and B must each have a unit
 * row or a unit column stride (the caller packs them otherwise), D unit column stride. Sets
 * *no_algo and returns AMPC_OK without touching memory when cuBLASLt has no algorithm for the
 * problem (the caller then takes another path); any other failure is an ampc error naming the
 * cuBLAS call, its status and the shape. */
ampc_status ampc_cuda_gemm_cublaslt(int device, cudaStream_t stream, ampc_dtype dtype, const gemm_geom &g,
                                    enum gemm_c_mode mode, double alpha, double beta, bool *no_algo);
#endif

/* Counters behind ampc._C._cuda_gemm_stats (cuda_gemm.cu); indices from cuda_backend.h. */
void ampc_cuda_gemm_count(int stat);

#endif
