/* cuda_blaslt.cu: the cuBLASLt half of the CUDA GEMM: one handle and workspace per device, the
 * per-shape algorithm cache, and the cublasLtMatmul calls of one GEMM (cuda_gemm.cu decides the
 * operands' layout and how C is passed; see cuda_gemm.cuh).
 *
 * Row-major D (n, m) = A (n, k) @ B (k, m) is column-major D^T (m, n) = B^T (m, k) @ A^T (k, n),
 * so cuBLAS's A is our B and cuBLAS's B is our A; a row-major operand is the column-major data
 * of its transpose (op N, ld = row stride), a column-major one (a transposed view) is op T.
 *
 * Numerics: fp16/bf16 in CUBLAS_COMPUTE_32F with fp32 scale (accumulate in fp32, round once),
 * fp32 in CUBLAS_COMPUTE_32F, or CUBLAS_COMPUTE_32F_FAST_TF32 when
 * ampc.backends.cuda.matmul.allow_tf32 is set, fp64 in CUBLAS_COMPUTE_64F. With
 * allow_{fp16,bf16}_reduced_precision_reduction off, split-K may only reduce in fp32.
 *
 * Concurrency: one mutex guards the cache, the handles and workspaces, and the shared matmul
 * descriptors (the bias pointer is set per call). Calls hold the GIL anyway; the lock costs
 * tens of nanoseconds and keeps a future GIL-free caller correct. */
#include "cuda_gemm.cuh"

#ifdef AMPC_WITH_CUBLAS
#include <cublasLt.h>
#include <limits.h>

#include <mutex>

/* ---------------------------------------------------------------- errors */

/* What an error message names besides the call: the problem's dtype and shape. */
struct lt_problem {
    ampc_dtype dtype;
    const gemm_geom *g;
};

static ampc_status lt_fail(cublasStatus_t st, const char *call, const char *file, int line, const lt_problem &p) {
    cudaGetLastError(); /* a failed launch inside cuBLAS must not poison the next CUDA call */
    return ampc_set_error(AMPC_E_RUNTIME,
                          "cuBLAS error: %s (%s) in %s at %s:%d, for a %s GEMM of (%lld x %lld) @ (%lld x %lld), "
                          "batch %lld",
                          cublasLtGetStatusName(st), cublasLtGetStatusString(st), call, file, line,
                          ampc_dtype_name(p.dtype), (long long)p.g->n, (long long)p.g->k, (long long)p.g->k,
                          (long long)p.g->m, (long long)p.g->batch);
}

/* cublasCheck: returns an ampc error naming the call, the status and the problem. */
#define LT_TRY(prob, call)                                                               \
    do {                                                                                 \
        cublasStatus_t lt_st_ = (call);                                                  \
        if (lt_st_ != CUBLAS_STATUS_SUCCESS) return lt_fail(lt_st_, #call, __FILE__, __LINE__, (prob)); \
    } while (0)

/* ---------------------------------------------------------------- handles and workspaces */

static std::mutex lt_mutex;
static cublasLtHandle_t lt_handles[AMPC_CUDA_MAX_DEVICES]; /* created on first use, never destroyed */

/* Hopper's fastest kernels want a large workspace (PyTorch gives cuBLAS 32 MiB there); older
 * GPUs get 4 MiB. */
static size_t workspace_bytes(int device) {
    static size_t bytes[AMPC_CUDA_MAX_DEVICES]; /* under lt_mutex */
    if (!bytes[device]) {
        int major = 0;
        if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) {
            cudaGetLastError();
            major = 0;
        }
        bytes[device] = (size_t)(major >= 9 ? 32 : 4) << 20;
    }
    return bytes[device];
}

/* One workspace per (device, stream), kept for the life of the process, as PyTorch keeps one per
 * (handle, stream): a buffer shared by two streams would let their GEMMs overwrite each other's
 * split-K partials, and allocating per call would cost an allocator round trip (with the plain
 * cudaMalloc allocator, a device synchronisation on free) in every GEMM. Beyond LT_MAX_WORKSPACES
 * streams, calls take per-call scratch instead (stream-ordered, so still correct). */
#define LT_MAX_WORKSPACES 32
struct lt_workspace {
    int device;
    cudaStream_t stream;
    void *ptr;
    size_t nbytes;
};
static lt_workspace lt_workspaces[LT_MAX_WORKSPACES];
static int lt_n_workspaces;

/* Frees the workspaces (PyTorch's torch._C._cuda_clearCublasWorkspaces): for memory tests that
 * compare ampc.cuda.memory_allocated() before and after GEMMs. The allocator reuses a freed
 * block only for later work on its stream, so GEMMs still queued keep their workspace. */
extern "C" void ampc_cuda_gemm_clear_workspaces(void) {
    std::lock_guard<std::mutex> lock(lt_mutex);
    for (int i = 0; i < lt_n_workspaces; i++) {
        ampc_cuda_guard guard(lt_workspaces[i].device);
        ampc_cuda_scratch_free(lt_workspaces[i].device, lt_workspaces[i].ptr, lt_workspaces[i].nbytes);
    }
    lt_n_workspaces = 0;
}

/* ---------------------------------------------------------------- the algorithm cache */

/* Everything the descriptors and the heuristic's answer depend on; all int64 so memcmp and the
 * hash see no padding. "a"/"b" are cuBLAS's operands (our B and A). */
struct lt_key {
    int64_t device, dtype, compute, epilogue, reduction_mask, c_separate;
    int64_t trans_a, trans_b, m, n, k, lda, ldb, ldc, ldd, batch;
    int64_t stride_a, stride_b, stride_c, stride_d, stride_bias; /* batch strides, elements */
    int64_t align_a, align_b, align_c, align_d, align_bias;      /* bytes, 1..16 */
};

struct lt_plan {
    bool used, ok; /* ok: the heuristic found an algorithm (else the caller takes another path) */
    lt_key key;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, c, d; /* c NULL: C shares D's layout */
    cublasLtMatmulAlgo_t algo;
};

/* Fixed size, open addressing over LT_PROBE slots; a full neighbourhood evicts its first slot.
 * A training run has a few dozen distinct GEMM shapes. */
#define LT_CACHE_SIZE 1024
#define LT_PROBE 8
static lt_plan lt_cache[LT_CACHE_SIZE];

static uint64_t key_hash(const lt_key &k) {
    const unsigned char *p = (const unsigned char *)&k;
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < sizeof k; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static void plan_destroy(lt_plan *p) {
    if (p->desc) cublasLtMatmulDescDestroy(p->desc);
    if (p->a) cublasLtMatrixLayoutDestroy(p->a);
    if (p->b) cublasLtMatrixLayoutDestroy(p->b);
    if (p->c) cublasLtMatrixLayoutDestroy(p->c);
    if (p->d) cublasLtMatrixLayoutDestroy(p->d);
    memset(p, 0, sizeof *p);
}

static cudaDataType lt_type(ampc_dtype dt) {
    switch (dt) {
    case AMPC_FLOAT16: return CUDA_R_16F;
    case AMPC_BFLOAT16: return CUDA_R_16BF;
    case AMPC_FLOAT64: return CUDA_R_64F;
    default: return CUDA_R_32F;
    }
}

/* A column-major layout, strided-batched when the problem has a batch. */
static ampc_status layout_create(cublasLtMatrixLayout_t *l, ampc_dtype dt, int64_t rows, int64_t cols, int64_t ld,
                                 int64_t batch, int64_t batch_stride, const lt_problem &pr) {
    LT_TRY(pr, cublasLtMatrixLayoutCreate(l, lt_type(dt), (uint64_t)rows, (uint64_t)cols, ld));
    if (batch > 1) {
        int32_t count = (int32_t)batch;
        LT_TRY(pr, cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
        LT_TRY(pr, cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &batch_stride,
                                                    sizeof batch_stride));
    }
    return AMPC_OK;
}

/* Builds the descriptors of `k` and asks the heuristic for its first algorithm. */
static ampc_status plan_build(lt_plan *p, const lt_key &k, cublasLtHandle_t handle, size_t ws_bytes,
                              const lt_problem &pr) {
    ampc_dtype dt = (ampc_dtype)k.dtype;
    cudaDataType scale = dt == AMPC_FLOAT64 ? CUDA_R_64F : CUDA_R_32F;
    LT_TRY(pr, cublasLtMatmulDescCreate(&p->desc, (cublasComputeType_t)k.compute, scale));
    int32_t ta = k.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = k.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    LT_TRY(pr, cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    LT_TRY(pr, cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    if (k.epilogue) {
        /* The bias has D's type (the default of CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE for these
         * types). The heuristic reads the bias pointer only for its alignment: give it a value
         * aligned exactly as the key says, so the algorithm suits every pointer of that class. */
        uint32_t epilogue = CUBLASLT_EPILOGUE_BIAS;
        const void *bias_class = (const void *)(uintptr_t)k.align_bias;
        LT_TRY(pr, cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
        LT_TRY(pr, cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_class,
                                                  sizeof bias_class));
        if (k.batch > 1) {
            int64_t bs = k.stride_bias;
            LT_TRY(pr, cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &bs, sizeof bs));
        }
    }
    /* op(a) is (m, k), op(b) is (k, n), c and d are (m, n) */
    AMPC_TRY(layout_create(&p->a, dt, k.trans_a ? k.k : k.m, k.trans_a ? k.m : k.k, k.lda, k.batch, k.stride_a, pr));
    AMPC_TRY(layout_create(&p->b, dt, k.trans_b ? k.n : k.k, k.trans_b ? k.k : k.n, k.ldb, k.batch, k.stride_b, pr));
    AMPC_TRY(layout_create(&p->d, dt, k.m, k.n, k.ldd, k.batch, k.stride_d, pr));
    if (k.c_separate) AMPC_TRY(layout_create(&p->c, dt, k.m, k.n, k.ldc, k.batch, k.stride_c, pr));

    cublasLtMatmulPreference_t pref;
    LT_TRY(pr, cublasLtMatmulPreferenceCreate(&pref));
    uint64_t ws = ws_bytes;
    uint32_t al[4] = {(uint32_t)k.align_a, (uint32_t)k.align_b, (uint32_t)k.align_c, (uint32_t)k.align_d};
    uint32_t mask = (uint32_t)k.reduction_mask;
    cublasStatus_t st =
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    /* the default minimum alignment is 256 bytes: say what the pointers really guarantee */
    const cublasLtMatmulPreferenceAttributes_t align_attr[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4 && st == CUBLAS_STATUS_SUCCESS; i++)
        st = cublasLtMatmulPreferenceSetAttribute(pref, align_attr[i], &al[i], sizeof al[i]);
    if (st == CUBLAS_STATUS_SUCCESS && mask != CUBLASLT_REDUCTION_SCHEME_MASK)
        st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &mask, sizeof mask);
    cublasLtMatmulHeuristicResult_t result;
    memset(&result, 0, sizeof result);
    int found = 0;
    if (st == CUBLAS_STATUS_SUCCESS) {
        /* Any refusal here (NOT_SUPPORTED for an epilogue this type lacks, ...) means "no
         * algorithm": the caller has a path without cuBLASLt, and the stats show it was taken. */
        cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(handle, p->desc, p->a, p->b, p->c ? p->c : p->d, p->d, pref,
                                                           1, &result, &found);
        p->ok = hs == CUBLAS_STATUS_SUCCESS && found > 0 && result.state == CUBLAS_STATUS_SUCCESS;
    }
    cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS) return lt_fail(st, "cublasLtMatmulPreferenceSetAttribute", __FILE__, __LINE__, pr);
    p->algo = result.algo;
    ampc_cuda_gemm_count(AMPC_CUDA_GEMM_HEURISTIC);
    return AMPC_OK;
}

/* The cached plan of `k`, built on a miss. */
static ampc_status plan_get(const lt_key &k, cublasLtHandle_t handle, size_t ws_bytes, const lt_problem &pr,
                            lt_plan **out) {
    const size_t first = (size_t)(key_hash(k) % LT_CACHE_SIZE);
    lt_plan *empty = nullptr;
    for (int i = 0; i < LT_PROBE; i++) {
        lt_plan *p = &lt_cache[(first + i) % LT_CACHE_SIZE];
        if (p->used && memcmp(&p->key, &k, sizeof k) == 0) {
            ampc_cuda_gemm_count(AMPC_CUDA_GEMM_CACHE_HITS);
            *out = p;
            return AMPC_OK;
        }
        if (!p->used && !empty) empty = p;
    }
    lt_plan *p = empty ? empty : &lt_cache[first];
    if (p->used) plan_destroy(p); /* neighbourhood full: evict */
    ampc_status st = plan_build(p, k, handle, ws_bytes, pr);
    if (st != AMPC_OK) {
        plan_destroy(p);
        return st;
    }
    p->used = true;
    p->key = k;
    *out = p;
    return AMPC_OK;
}

/* ---------------------------------------------------------------- one GEMM */

/* The alignment (bytes, capped at 16) every matrix of the operand keeps: its base and each
 * batch step. */
static int64_t align_of(const char *ptr, const gemm_geom &g, int slot, size_t item) {
    uintptr_t bits = (uintptr_t)ptr | 16;
    for (int d = 0; d < g.nb; d++) bits |= (uintptr_t)(g.bstride[slot][d] * (int64_t)item);
    return (int64_t)(bits & (~bits + 1)); /* lowest set bit */
}

ampc_status ampc_cuda_gemm_cublaslt(int device, cudaStream_t stream, ampc_dtype dtype, const gemm_geom &g,
                                    enum gemm_c_mode mode, double alpha, double beta, bool *no_algo) {
    *no_algo = false;
    const lt_problem pr = {dtype, &g};
    const size_t item = ampc_dtype_itemsize(dtype);

    /* cuBLASLt batches one dim (the largest); the others are a loop of calls here */
    int bd = -1;
    for (int d = 0; d < g.nb; d++)
        if (bd < 0 || g.bshape[d] >= g.bshape[bd]) bd = d;
    const int64_t count = bd < 0 ? 1 : g.bshape[bd];
    if (g.m > INT_MAX || g.n > INT_MAX || g.k > INT_MAX || count > INT_MAX) {
        *no_algo = true; /* beyond cuBLASLt's int32 sizes */
        return AMPC_OK;
    }

    lt_key k;
    memset(&k, 0, sizeof k);
    bool ta, tb, td, tc = false;
    if (!gemm_blas_layout(g.k, g.m, g.rs[GEMM_B], g.cs[GEMM_B], &ta, &k.lda) ||
        !gemm_blas_layout(g.n, g.k, g.rs[GEMM_A], g.cs[GEMM_A], &tb, &k.ldb) ||
        !gemm_blas_layout(g.n, g.m, g.rs[GEMM_D], g.cs[GEMM_D], &td, &k.ldd) || td ||
        (mode == GEMM_C_SEPARATE && (!gemm_blas_layout(g.n, g.m, g.rs[GEMM_C], g.cs[GEMM_C], &tc, &k.ldc) || tc)))
        return ampc_set_error(AMPC_E_RUNTIME, "gemm: internal error: an operand's layout is not one cuBLAS takes");
    const bool fp32 = dtype == AMPC_FLOAT32, tf32 = fp32 && ampc_backend_flag_get(AMPC_CUBLAS_ALLOW_TF32);
    k.device = device;
    k.dtype = dtype;
    k.compute = dtype == AMPC_FLOAT64 ? CUBLAS_COMPUTE_64F : tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    k.epilogue = mode == GEMM_C_BIAS;
    k.reduction_mask = CUBLASLT_REDUCTION_SCHEME_MASK;
    if ((dtype == AMPC_FLOAT16 && !ampc_backend_flag_get(AMPC_CUBLAS_ALLOW_FP16_REDUCED_REDUCTION)) ||
        (dtype == AMPC_BFLOAT16 && !ampc_backend_flag_get(AMPC_CUBLAS_ALLOW_BF16_REDUCED_REDUCTION)))
        k.reduction_mask = CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    /* a C laid out exactly like D shares D's descriptor (out of place, C != D) */
    k.c_separate = mode == GEMM_C_SEPARATE &&
                   (k.ldc != k.ldd || (bd >= 0 && g.bstride[GEMM_C][bd] != g.bstride[GEMM_D][bd]));
    k.trans_a = ta, k.trans_b = tb;
    k.m = g.m, k.n = g.n, k.k = g.k, k.batch = count;
    if (bd >= 0) {
        k.stride_a = g.bstride[GEMM_B][bd];
        k.stride_b = g.bstride[GEMM_A][bd];
        k.stride_c = g.bstride[GEMM_C][bd];
        k.stride_d = g.bstride[GEMM_D][bd];
        if (mode == GEMM_C_BIAS) k.stride_bias = g.bstride[GEMM_C][bd];
    }
    if (!k.c_separate) k.ldc = k.ldd, k.stride_c = k.stride_d;
    k.align_a = align_of(g.ptr[GEMM_B], g, GEMM_B, item);
    k.align_b = align_of(g.ptr[GEMM_A], g, GEMM_A, item);
    k.align_d = align_of(g.ptr[GEMM_D], g, GEMM_D, item);
    k.align_c = mode == GEMM_C_SEPARATE ? align_of(g.ptr[GEMM_C], g, GEMM_C, item) : k.align_d;
    if (mode == GEMM_C_BIAS) k.align_bias = align_of(g.ptr[GEMM_C], g, GEMM_C, item);

    std::lock_guard<std::mutex> lock(lt_mutex);
    if (!lt_handles[device]) LT_TRY(pr, cublasLtCreate(&lt_handles[device]));
    cublasLtHandle_t handle = lt_handles[device];

    void *ws = nullptr;
    const size_t ws_bytes = workspace_bytes(device);
    gemm_scratch per_call;
    for (int i = 0; i < lt_n_workspaces && !ws; i++)
        if (lt_workspaces[i].device == device && lt_workspaces[i].stream == stream) ws = lt_workspaces[i].ptr;
    if (!ws && lt_n_workspaces < LT_MAX_WORKSPACES) {
        ws = ampc_cuda_scratch_alloc(device, ws_bytes);
        if (!ws) return ampc_last_status();
        lt_workspaces[lt_n_workspaces++] = {device, stream, ws, ws_bytes};
    } else if (!ws) {
        AMPC_TRY(per_call.alloc(device, ws_bytes));
        ws = per_call.ptr;
    }

    lt_plan *plan;
    AMPC_TRY(plan_get(k, handle, ws_bytes, pr, &plan));
    if (!plan->ok) {
        *no_algo = true;
        return AMPC_OK;
    }

    float alpha32 = (float)alpha, beta32 = (float)beta;
    double alpha64 = alpha, beta64 = beta;
    if (mode == GEMM_C_NONE || mode == GEMM_C_BIAS) beta32 = 0.0f, beta64 = 0.0;
    const void *alpha_p = dtype == AMPC_FLOAT64 ? (const void *)&alpha64 : (const void *)&alpha32;
    const void *beta_p = dtype == AMPC_FLOAT64 ? (const void *)&beta64 : (const void *)&beta32;
    const int c_slot = mode == GEMM_C_NONE || mode == GEMM_C_BIAS ? GEMM_D : GEMM_C;

    /* the loop over the batch dims cuBLASLt does not take (usually none: one call) */
    const int64_t outer = g.batch / count;
    for (int64_t e = 0; e < outer; e++) {
        int64_t off[GEMM_NOPS] = {0, 0, 0, 0}, rest = e;
        for (int d = g.nb - 1; d >= 0; d--) {
            if (d == bd) continue;
            int64_t idx = rest % g.bshape[d];
            rest /= g.bshape[d];
            for (int op = 0; op < GEMM_NOPS; op++) off[op] += idx * g.bstride[op][d];
        }
        const char *p[GEMM_NOPS];
        for (int op = 0; op < GEMM_NOPS; op++) p[op] = g.ptr[op] ? g.ptr[op] + off[op] * (int64_t)item : nullptr;
        cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
        const char *call = "cublasLtMatmul";
        if (mode == GEMM_C_BIAS) {
            const void *bias = p[GEMM_C];
            st = cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
            call = "cublasLtMatmulDescSetAttribute(CUBLASLT_MATMUL_DESC_BIAS_POINTER)";
        }
        if (st == CUBLAS_STATUS_SUCCESS) {
            st = cublasLtMatmul(handle, plan->desc, alpha_p, p[GEMM_B], plan->a, p[GEMM_A], plan->b, beta_p, p[c_slot],
                                plan->c ? plan->c : plan->d, (void *)p[GEMM_D], plan->d, &plan->algo, ws, ws_bytes,
                                stream);
            call = "cublasLtMatmul";
        }
        if (st != CUBLAS_STATUS_SUCCESS) {
            plan_destroy(plan); /* no cached plan outlives a failure: the next call asks the heuristic again */
            return lt_fail(st, call, __FILE__, __LINE__, pr);
        }
        ampc_cuda_gemm_count(AMPC_CUDA_GEMM_LT_CALLS);
    }
    if (mode == GEMM_C_BIAS) ampc_cuda_gemm_count(AMPC_CUDA_GEMM_BIAS_EPILOGUE);
    if (mode == GEMM_C_SEPARATE) ampc_cuda_gemm_count(AMPC_CUDA_GEMM_C_INPUT);
    if (tf32) ampc_cuda_gemm_count(AMPC_CUDA_GEMM_TF32);
    return AMPC_OK;
}

#else
extern "C" void ampc_cuda_gemm_clear_workspaces(void) {}
#endif /* AMPC_WITH_CUBLAS */
