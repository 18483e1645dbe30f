/* emu_cublaslt.cpp: the CUDA emulator's cuBLASLt (include/cublasLt.h): the documented semantics
 * of the descriptors, checked strictly, computed on the host in double.
 *
 *   D = alpha * op(A) @ op(B) + beta * C  [+ bias, broadcast along columns: bias[i] for row i]
 *
 * Column-major layouts: element (r, c) of a matrix is at ptr[r + c * ld]; op T swaps the layout's
 * rows and columns. Batches: matrix b is at ptr + b * stride (stride 0 repeats one matrix).
 * beta == 0 does not read C. CUBLAS_COMPUTE_32F_FAST_TF32 rounds A and B to TF32 first, as the
 * tensor cores do. Everything a real cuBLASLt would reject, or where it would silently compute
 * garbage (D overlapping an input, misaligned pointers for the alignment promised to the
 * heuristic, a D batch stride that makes batches overlap, an access beyond the allocation), is
 * reported (ampc-emu log) and fails the call with CUBLAS_STATUS_INVALID_VALUE. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <mutex>
#include <vector>

#include "cublasLt.h"
#include "cuda_runtime.h"

#ifdef AMPC_WITH_CBLAS
#include <cblas.h>
#endif

namespace emu {
void device_access(bool on);
}

struct cublasLtContext {
    int magic;
};
struct cublasLtMatmulDescOpaque_st {
    cublasComputeType_t compute;
    cudaDataType_t scale;
    int32_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N;
    uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    const void *bias = nullptr;
    int64_t bias_batch_stride = 0;
    int32_t bias_type = -1;
};
struct cublasLtMatrixLayoutOpaque_st {
    cudaDataType type;
    uint64_t rows, cols;
    int64_t ld;
    int32_t batch = 1;
    int64_t stride = 0;
};
struct cublasLtMatmulPreferenceOpaque_st {
    uint64_t workspace = 0;
    uint32_t align[4] = {256, 256, 256, 256};
    uint32_t reduction_mask = CUBLASLT_REDUCTION_SCHEME_MASK;
};

namespace {
cublasStatus_t bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
cublasStatus_t bad(const char *fmt, ...) {
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "ampc-emu: cuBLASLt: %s\n", msg);
    const char *log = getenv("AMPC_EMU_LOG");
    if (log && *log) {
        FILE *f = fopen(log, "a");
        if (f) {
            fprintf(f, "ampc-emu: cuBLASLt: %s\n", msg);
            fclose(f);
        }
    }
    return CUBLAS_STATUS_INVALID_VALUE;
}

/* An attribute value copied into `field`: cuBLASLt takes exactly the field's size (int32, uint64,
 * a pointer, ...), anything else is INVALID_VALUE, logged with the attribute's name. */
template <class T> cublasStatus_t copy_attr(T *field, const void *buf, size_t size, const char *name) {
    if (size != sizeof(T)) return bad("%s: size %zu (%zu bytes expected)", name, size, sizeof(T));
    memcpy(field, buf, sizeof(T));
    return CUBLAS_STATUS_SUCCESS;
}

size_t type_size(cudaDataType t) {
    switch (t) {
    case CUDA_R_16F: case CUDA_R_16BF: return 2;
    case CUDA_R_32F: return 4;
    case CUDA_R_64F: return 8;
    default: return 0;
    }
}

double load(const void *p, cudaDataType t, int64_t i) {
    switch (t) {
    case CUDA_R_16F: return ampc_half_to_f32(((const uint16_t *)p)[i]);
    case CUDA_R_16BF: return ampc_bf16_to_f32(((const uint16_t *)p)[i]);
    case CUDA_R_32F: return ((const float *)p)[i];
    default: return ((const double *)p)[i];
    }
}
void store(void *p, cudaDataType t, int64_t i, double v) {
    switch (t) {
    case CUDA_R_16F: ((uint16_t *)p)[i] = ampc_f32_to_half((float)v); break; /* via fp32, like the GPU's epilogue */
    case CUDA_R_16BF: ((uint16_t *)p)[i] = ampc_f32_to_bf16((float)v); break;
    case CUDA_R_32F: ((float *)p)[i] = (float)v; break;
    default: ((double *)p)[i] = v; break;
    }
}
double tf32(double v) {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0xfffu + ((u >> 13) & 1u)) & ~0x1fffu; /* RNE to 10 bits */
    memcpy(&f, &u, 4);
    return f;
}

/* The bytes a layout's batch spans from its base pointer. */
int64_t span_bytes(const cublasLtMatrixLayoutOpaque_st *l) {
    int64_t one = (int64_t)((l->cols - 1) * (uint64_t)l->ld + l->rows);
    int64_t last = (int64_t)(l->batch - 1) * l->stride;
    return (one + (last > 0 ? last : 0)) * (int64_t)type_size(l->type);
}

cublasStatus_t check_layout(const char *name, const cublasLtMatrixLayoutOpaque_st *l, const void *p,
                            uint32_t align) {
    if (!type_size(l->type)) return bad("%s: unsupported data type %d", name, (int)l->type);
    if (l->rows == 0 || l->cols == 0) return CUBLAS_STATUS_SUCCESS;
    if (l->ld < (int64_t)l->rows || l->ld < 1)
        return bad("%s: ld %lld < rows %llu (column-major)", name, (long long)l->ld, (unsigned long long)l->rows);
    if (l->stride < 0) return bad("%s: negative batch stride", name);
    if (!p) return bad("%s: NULL pointer", name);
    const size_t item = type_size(l->type);
    if (((uintptr_t)p % align) != 0 || (l->batch > 1 && ((uint64_t)l->stride * item) % align != 0))
        return bad("%s: pointer %p / batch stride %lld elements not aligned to the %u bytes promised to the "
                   "heuristic", name, p, (long long)l->stride, align);
    if (!ampc_emu_is_device_ptr(p, (size_t)span_bytes(l)))
        return bad("%s: [%p, +%lld bytes) (rows %llu cols %llu ld %lld batch %d stride %lld) is not inside one "
                   "device allocation", name, p, (long long)span_bytes(l), (unsigned long long)l->rows,
                   (unsigned long long)l->cols, (long long)l->ld, l->batch, (long long)l->stride);
    return CUBLAS_STATUS_SUCCESS;
}

bool overlaps(const void *a, int64_t na, const void *b, int64_t nb) {
    return (const char *)a < (const char *)b + nb && (const char *)b < (const char *)a + na;
}

/* op(X) as a dense row-major rows x cols double matrix. */
void gather(std::vector<double> &out, const void *p, const cublasLtMatrixLayoutOpaque_st *l, bool trans,
            int64_t rows, int64_t cols, bool round_tf32) {
    out.resize((size_t)(rows * cols));
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
            int64_t idx = trans ? c + r * l->ld : r + c * l->ld;
            double v = load(p, l->type, idx);
            out[(size_t)(r * cols + c)] = round_tf32 ? tf32(v) : v;
        }
}

void gemm_rowmajor(const std::vector<double> &a, const std::vector<double> &b, std::vector<double> &c, int64_t m,
                   int64_t n, int64_t k) {
    c.assign((size_t)(m * n), 0.0);
    if (!m || !n || !k) return;
#ifdef AMPC_WITH_CBLAS
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k, 1.0, a.data(), (int)k, b.data(),
                (int)n, 0.0, c.data(), (int)n);
#else
    for (int64_t i = 0; i < m; i++)
        for (int64_t p = 0; p < k; p++) {
            double av = a[(size_t)(i * k + p)];
            for (int64_t j = 0; j < n; j++) c[(size_t)(i * n + j)] += av * b[(size_t)(p * n + j)];
        }
#endif
}
} // namespace

extern "C" {

cublasStatus_t cublasLtCreate(cublasLtHandle_t *handle) {
    *handle = new cublasLtContext{0x1234};
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
    delete handle;
    return CUBLAS_STATUS_SUCCESS;
}
const char *cublasLtGetStatusName(cublasStatus_t st) {
    switch (st) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "CUBLAS_STATUS_INTERNAL_ERROR";
    }
}
const char *cublasLtGetStatusString(cublasStatus_t st) {
    switch (st) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid value was used as an argument (emulator: see its log)";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
    default: return "an internal operation failed";
    }
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *desc, cublasComputeType_t compute, cudaDataType_t scale) {
    if (compute != CUBLAS_COMPUTE_32F && compute != CUBLAS_COMPUTE_64F && compute != CUBLAS_COMPUTE_32F_FAST_TF32 &&
        compute != CUBLAS_COMPUTE_32F_FAST_16F && compute != CUBLAS_COMPUTE_32F_FAST_16BF)
        return bad("MatmulDescCreate: compute type %d", (int)compute);
    *desc = new cublasLtMatmulDescOpaque_st;
    (*desc)->compute = compute;
    (*desc)->scale = scale;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
    delete desc;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr,
                                              const void *buf, size_t size) {
    switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA: return copy_attr(&d->transa, buf, size, "TRANSA");
    case CUBLASLT_MATMUL_DESC_TRANSB: return copy_attr(&d->transb, buf, size, "TRANSB");
    case CUBLASLT_MATMUL_DESC_EPILOGUE: {
        cublasStatus_t st = copy_attr(&d->epilogue, buf, size, "EPILOGUE");
        if (st == CUBLAS_STATUS_SUCCESS && d->epilogue != CUBLASLT_EPILOGUE_DEFAULT &&
            d->epilogue != CUBLASLT_EPILOGUE_BIAS && d->epilogue != CUBLASLT_EPILOGUE_RELU &&
            d->epilogue != CUBLASLT_EPILOGUE_RELU_BIAS)
            return bad("EPILOGUE %u not emulated", d->epilogue);
        return st;
    }
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: return copy_attr(&d->bias, buf, size, "BIAS_POINTER");
    case CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE:
        return copy_attr(&d->bias_batch_stride, buf, size, "BIAS_BATCH_STRIDE");
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: return copy_attr(&d->bias_type, buf, size, "BIAS_DATA_TYPE");
    default: return bad("MatmulDescSetAttribute %d not emulated", (int)attr);
    }
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *layout, cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
    if (!type_size(type)) return bad("MatrixLayoutCreate: type %d", (int)type);
    *layout = new cublasLtMatrixLayoutOpaque_st;
    (*layout)->type = type;
    (*layout)->rows = rows;
    (*layout)->cols = cols;
    (*layout)->ld = ld;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
    delete layout;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t attr,
                                                const void *buf, size_t size) {
    switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: {
        cublasStatus_t st = copy_attr(&l->batch, buf, size, "BATCH_COUNT");
        if (st == CUBLAS_STATUS_SUCCESS && l->batch < 1) return bad("BATCH_COUNT %d", l->batch);
        return st;
    }
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET:
        return copy_attr(&l->stride, buf, size, "STRIDED_BATCH_OFFSET");
    default: return bad("MatrixLayoutSetAttribute %d not emulated", (int)attr);
    }
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref) {
    *pref = new cublasLtMatmulPreferenceOpaque_st;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
    delete pref;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void *buf,
                                                    size_t size) {
    switch (attr) {
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES: return copy_attr(&p->workspace, buf, size, "MAX_WORKSPACE_BYTES");
    case CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK:
        return copy_attr(&p->reduction_mask, buf, size, "REDUCTION_SCHEME_MASK");
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES: {
        uint32_t a = 0;
        cublasStatus_t st = copy_attr(&a, buf, size, "MIN_ALIGNMENT");
        if (st != CUBLAS_STATUS_SUCCESS) return st;
        if (a == 0 || (a & (a - 1))) return bad("MIN_ALIGNMENT %u is not a power of two", a);
        p->align[attr - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES] = a;
        return CUBLAS_STATUS_SUCCESS;
    }
    default: return bad("MatmulPreferenceSetAttribute %d not emulated", (int)attr);
    }
}

/* One algorithm; its data records the alignments it was chosen for (checked by every matmul). */
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                              cublasLtMatmulPreference_t pref, int requested,
                                              cublasLtMatmulHeuristicResult_t *results, int *returned) {
    if (!handle || !desc || !a || !b || !c || !d || !pref || requested < 1) return bad("heuristic: NULL argument");
    *returned = 0;
    if (a->type != b->type || c->type != d->type || a->type != d->type)
        return CUBLAS_STATUS_NOT_SUPPORTED; /* ampc never mixes types */
    memset(&results[0], 0, sizeof results[0]);
    for (int i = 0; i < 4; i++) results[0].algo.data[i] = pref->align[i];
    results[0].algo.data[7] = 0xa1607u; /* "from the heuristic" */
    results[0].state = CUBLAS_STATUS_SUCCESS;
    *returned = 1;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void *alpha, const void *A,
                              cublasLtMatrixLayout_t adesc, const void *B, cublasLtMatrixLayout_t bdesc,
                              const void *beta, const void *C, cublasLtMatrixLayout_t cdesc, void *D,
                              cublasLtMatrixLayout_t ddesc, const cublasLtMatmulAlgo_t *algo, void *workspace,
                              size_t workspace_bytes, cudaStream_t stream) {
    (void)stream;
    if (!handle || !desc || !adesc || !bdesc || !cdesc || !ddesc || !alpha || !beta)
        return bad("matmul: NULL handle, descriptor or scalar");
    if (algo && algo->data[7] != 0xa1607u) return bad("matmul: algo not from cublasLtMatmulAlgoGetHeuristic");
    uint32_t al[4] = {256, 256, 256, 256};
    if (algo)
        for (int i = 0; i < 4; i++) al[i] = (uint32_t)algo->data[i];
    const bool ta = desc->transa != CUBLAS_OP_N, tb = desc->transb != CUBLAS_OP_N;
    const int64_t m = (int64_t)ddesc->rows, n = (int64_t)ddesc->cols;
    const int64_t am = ta ? adesc->cols : adesc->rows, ak = ta ? adesc->rows : adesc->cols;
    const int64_t bk = tb ? bdesc->cols : bdesc->rows, bn = tb ? bdesc->rows : bdesc->cols;
    if (am != m || bn != n || ak != bk || cdesc->rows != ddesc->rows || cdesc->cols != ddesc->cols)
        return bad("matmul: shapes disagree: op(A) %lldx%lld, op(B) %lldx%lld, C %llux%llu, D %lldx%lld",
                   (long long)am, (long long)ak, (long long)bk, (long long)bn, (unsigned long long)cdesc->rows,
                   (unsigned long long)cdesc->cols, (long long)m, (long long)n);
    const int64_t k = ak;
    const int32_t batch = ddesc->batch;
    if (adesc->batch != batch || bdesc->batch != batch || cdesc->batch != batch)
        return bad("matmul: batch counts differ: A %d B %d C %d D %d", adesc->batch, bdesc->batch, cdesc->batch,
                   batch);
    if (adesc->type != ddesc->type || bdesc->type != ddesc->type || cdesc->type != ddesc->type)
        return bad("matmul: data types differ");
    const bool f64 = ddesc->type == CUDA_R_64F;
    if (f64 != (desc->compute == CUBLAS_COMPUTE_64F)) return bad("matmul: compute type %d with data type %d",
                                                                 (int)desc->compute, (int)ddesc->type);
    if ((f64 ? CUDA_R_64F : CUDA_R_32F) != desc->scale) return bad("matmul: scale type %d", (int)desc->scale);
    const double alpha_v = f64 ? *(const double *)alpha : *(const float *)alpha;
    const double beta_v = f64 ? *(const double *)beta : *(const float *)beta;
    const bool has_bias = desc->epilogue == CUBLASLT_EPILOGUE_BIAS || desc->epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
    const bool relu = desc->epilogue == CUBLASLT_EPILOGUE_RELU || desc->epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
    if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
    cublasStatus_t st;
    if ((st = check_layout("D", ddesc, D, al[3]))) return st;
    if (beta_v != 0.0 && (st = check_layout("C", cdesc, C, al[2]))) return st;
    if (k > 0 && ((st = check_layout("A", adesc, A, al[0])) || (st = check_layout("B", bdesc, B, al[1])))) return st;
    const size_t item = type_size(ddesc->type);
    if (batch > 1 && ddesc->stride < (int64_t)((n - 1) * ddesc->ld + m))
        return bad("matmul: D's batch stride %lld makes batches overlap (m %lld n %lld ld %lld)",
                   (long long)ddesc->stride, (long long)m, (long long)n, (long long)ddesc->ld);
    if (k > 0 && (overlaps(D, span_bytes(ddesc), A, span_bytes(adesc)) ||
                  overlaps(D, span_bytes(ddesc), B, span_bytes(bdesc))))
        return bad("matmul: D overlaps A or B");
    if (beta_v != 0.0 && C != D && overlaps(D, span_bytes(ddesc), C, span_bytes(cdesc)))
        return bad("matmul: D partly overlaps C");
    if (C == D && beta_v != 0.0 && (cdesc->ld != ddesc->ld || (batch > 1 && cdesc->stride != ddesc->stride)))
        return bad("matmul: C == D in memory but with a different layout");
    const cudaDataType bias_t = desc->bias_type < 0 ? ddesc->type : (cudaDataType)desc->bias_type;
    if (has_bias) {
        if (!desc->bias) return bad("matmul: BIAS epilogue without a bias pointer");
        size_t bytes = (size_t)(((batch > 1 ? (batch - 1) * desc->bias_batch_stride : 0) + m) * (int64_t)type_size(bias_t));
        if (!ampc_emu_is_device_ptr(desc->bias, bytes))
            return bad("matmul: the bias [%p, +%zu) is not inside one device allocation", desc->bias, bytes);
        if ((uintptr_t)desc->bias % type_size(bias_t)) return bad("matmul: misaligned bias %p", desc->bias);
    }
    if (workspace_bytes && !ampc_emu_is_device_ptr(workspace, workspace_bytes))
        return bad("matmul: the workspace [%p, +%zu) is not device memory", workspace, workspace_bytes);

    emu::device_access(true);
    const bool round_tf32 = desc->compute == CUBLAS_COMPUTE_32F_FAST_TF32;
    std::vector<double> a, b, acc, cin;
    for (int32_t bi = 0; bi < batch; bi++) {
        const char *pa = (const char *)A + (int64_t)bi * adesc->stride * (int64_t)item;
        const char *pb = (const char *)B + (int64_t)bi * bdesc->stride * (int64_t)item;
        const char *pc = (const char *)C + (int64_t)bi * cdesc->stride * (int64_t)item;
        char *pd = (char *)D + (int64_t)bi * ddesc->stride * (int64_t)item;
        if (k > 0) {
            gather(a, pa, adesc, ta, m, k, round_tf32);
            gather(b, pb, bdesc, tb, k, n, round_tf32);
        }
        gemm_rowmajor(a, b, acc, m, n, k);
        if (beta_v != 0.0) { /* read C fully before writing D (they may be the same memory) */
            cin.resize((size_t)(m * n));
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++) cin[(size_t)(i * n + j)] = load(pc, cdesc->type, i + j * cdesc->ld);
        }
        const char *pbias = has_bias ? (const char *)desc->bias + (int64_t)bi * desc->bias_batch_stride *
                                                                      (int64_t)type_size(bias_t)
                                     : nullptr;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double v = alpha_v * acc[(size_t)(i * n + j)];
                if (beta_v != 0.0) v += beta_v * cin[(size_t)(i * n + j)];
                if (pbias) v += load(pbias, bias_t, i);
                if (relu && v < 0) v = 0;
                if (!f64) v = (double)(float)v; /* fp32 compute: one rounding to fp32 before D's type */
                store(pd, ddesc->type, i + j * ddesc->ld, v);
            }
    }
    emu::device_access(false);
    return CUBLAS_STATUS_SUCCESS;
}

} /* extern "C" */
