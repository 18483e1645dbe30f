/* cpu_gemm.c: the GEMM kernel on the CPU: C = beta * bias + alpha * (A @ B) over a batch (the
 * argument layout is on the GEMM row of ops.def).
 *
 * Routing per dtype:
 *   float32/float64  CBLAS (OpenBLAS) when the build has it, operands passed as they lie when
 *                    BLAS can read them (row-major with a leading dimension, or transposed);
 *                    else ampc's blocked kernel (cpu_gemm_blocked.c), which takes any strides.
 *   bfloat16         the AMX tile kernel (cpu_gemm_amx.c) where the CPU and OS offer it; else
 *   float16          A and B widened to fp32, the fp32 GEMM above, C rounded once at the end:
 *                    fp32 accumulation, as PyTorch does on the CPU.
 *   int64/int32/uint8  a plain loop in wrapping arithmetic of the element width (alpha and beta
 *                    truncated to integers, as PyTorch does).
 * The batch loop walks the leading dims of all operands with their own strides, so a broadcast
 * operand (batch stride 0) is never materialised. */
#include <stdlib.h>
#include <string.h>

#include "../core/dispatch.h"
#include "../core/kernel_args.h"
#include "../core/ops.h"
#include "cpu_backend.h"
#include "cpu_dtype_loops.h"
#include "cpu_gemm.h"
#include "cpu_half_convert.h"

#ifdef AMPC_WITH_CBLAS
#include <cblas.h>
#include <limits.h>
#endif

/* Below this many multiply-adds a loop is not worth waking OpenMP threads for. */
#define PARALLEL_WORK (1 << 18)

/* ---------------------------------------------------------------- backend choice */

static ampc_cpu_gemm_backend gemm_backend = AMPC_CPU_GEMM_AUTO;
static const char *const backend_names[] = {"auto", "blas", "fallback"};

bool ampc_cpu_gemm_has_blas(void) {
#ifdef AMPC_WITH_CBLAS
    return true;
#else
    return false;
#endif
}

bool ampc_cpu_gemm_has_amx(void) {
    static int supported = -1;
    if (supported < 0) supported = ampc_cpu_gemm_amx_supported();
    return supported == 1;
}

ampc_status ampc_cpu_gemm_set_backend(const char *name) {
    for (int i = 0; i < 3; i++)
        if (name && strcmp(name, backend_names[i]) == 0) {
            if (i == AMPC_CPU_GEMM_BLAS && !ampc_cpu_gemm_has_blas())
                return ampc_set_error(AMPC_E_VALUE, "gemm: this build of ampc has no CBLAS");
            gemm_backend = (ampc_cpu_gemm_backend)i;
            return AMPC_OK;
        }
    return ampc_set_error(AMPC_E_VALUE, "gemm: unknown backend '%s' (expected 'auto', 'blas' or 'fallback')",
                          name ? name : "(null)");
}

const char *ampc_cpu_gemm_get_backend(void) { return backend_names[gemm_backend]; }

/* ---------------------------------------------------------------- float32 / float64 */

/* One matrix of a batch entry: its data and element strides between rows and between columns. */
typedef struct gemm_mat {
    char *p;
    int64_t rs, cs;
} gemm_mat;

#define ELEM(mat, i, j, item) ((mat).p + ((i) * (mat).rs + (j) * (mat).cs) * (int64_t)(item))

#ifdef AMPC_WITH_CBLAS
/* An operand as BLAS takes it: as it lies when it can, else packed row-major into `owned`. */
typedef struct blas_operand {
    enum CBLAS_TRANSPOSE trans;
    int ld;
    const void *p;
    void *owned;
} blas_operand;

/* Row-major (NoTrans, ld = rs) needs unit column stride, column-major (Trans, ld = cs) unit row
 * stride; the stride of a size-1 dim does not matter, and BLAS wants ld >= the other extent. */
static bool blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, blas_operand *op) {
    int64_t ld;
    if ((cols <= 1 || cs == 1) && (rows <= 1 || rs >= cols)) {
        op->trans = CblasNoTrans;
        ld = rows <= 1 ? cols : rs;
    } else if ((rows <= 1 || rs == 1) && (cols <= 1 || cs >= rows)) {
        op->trans = CblasTrans;
        ld = cols <= 1 ? rows : cs;
    } else {
        return false;
    }
    if (ld > INT_MAX) return false;
    op->ld = ld < 1 ? 1 : (int)ld;
    return true;
}

static ampc_status blas_operand_init(blas_operand *op, gemm_mat mat, int64_t rows, int64_t cols, size_t item) {
    op->owned = NULL;
    op->p = mat.p;
    if (blas_layout(rows, cols, mat.rs, mat.cs, op)) return AMPC_OK;
    /* e.g. a slice with a step in both dims, or rows broadcast from one: copy it */
    char *dst = (char *)malloc(item * (size_t)(rows * cols));
    if (!dst) return ampc_set_error(AMPC_E_NOMEM, "gemm: out of memory packing an operand");
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) memcpy(dst + (size_t)(i * cols + j) * item, ELEM(mat, i, j, item), item);
    op->owned = dst;
    op->p = dst;
    blas_layout(rows, cols, cols, 1, op);
    return AMPC_OK;
}

static ampc_status blas_gemm(ampc_dtype dt, int64_t n, int64_t m, int64_t k, double alpha, gemm_mat a, gemm_mat b,
                             double beta, void *c, int64_t ldc) {
    size_t item = ampc_dtype_itemsize(dt);
    blas_operand oa, ob = {CblasNoTrans, 1, NULL, NULL};
    ampc_status st = blas_operand_init(&oa, a, n, k, item);
    if (st == AMPC_OK) st = blas_operand_init(&ob, b, k, m, item);
    if (st == AMPC_OK) {
        int ildc = ldc < 1 ? 1 : (int)ldc;
        if (dt == AMPC_FLOAT32)
            cblas_sgemm(CblasRowMajor, oa.trans, ob.trans, (int)n, (int)m, (int)k, (float)alpha, (const float *)oa.p,
                        oa.ld, (const float *)ob.p, ob.ld, (float)beta, (float *)c, ildc);
        else
            cblas_dgemm(CblasRowMajor, oa.trans, ob.trans, (int)n, (int)m, (int)k, alpha, (const double *)oa.p, oa.ld,
                        (const double *)ob.p, ob.ld, beta, (double *)c, ildc);
    }
    free(oa.owned);
    free(ob.owned);
    return st;
}
#endif

/* C (n x m, row stride ldc) = alpha * A @ B + beta * C for float32 or float64. */
static ampc_status gemm_float(ampc_dtype dt, int64_t n, int64_t m, int64_t k, double alpha, gemm_mat a, gemm_mat b,
                              double beta, void *c, int64_t ldc) {
#ifdef AMPC_WITH_CBLAS
    if (gemm_backend != AMPC_CPU_GEMM_FALLBACK && n <= INT_MAX && m <= INT_MAX && k <= INT_MAX && ldc <= INT_MAX)
        return blas_gemm(dt, n, m, k, alpha, a, b, beta, c, ldc);
#endif
    if (dt == AMPC_FLOAT32)
        return ampc_cpu_gemm_blocked_f32(n, m, k, (float)alpha, (const float *)a.p, a.rs, a.cs, (const float *)b.p,
                                         b.rs, b.cs, (float)beta, (float *)c, ldc);
    return ampc_cpu_gemm_blocked_f64(n, m, k, alpha, (const double *)a.p, a.rs, a.cs, (const double *)b.p, b.rs, b.cs,
                                     beta, (double *)c, ldc);
}

/* ---------------------------------------------------------------- float16 / bfloat16 */

/* fp32 copies of the current batch entry's operands and result, reused across the batch. A
 * source that is the same as the previous entry's (a broadcast operand) is not widened again. */
typedef struct half_scratch {
    float *a32, *b32, *c32;
    gemm_mat a_src, b_src; /* what a32 / b32 hold, p NULL when nothing yet */
    gemm_mat a_w, b_w;     /* a32 / b32 as matrices */
} half_scratch;

/* Serial on purpose: O(n^2) next to the GEMM's O(n^3), and an OpenMP team here would still be
 * spinning when OpenBLAS starts its own threads on the same cores. */
#define WIDEN_LOOPS(LOAD)                                                                        \
    do {                                                                                         \
        if (col_major) {                                                                         \
            for (int64_t j = 0; j < cols; j++)                                                   \
                for (int64_t i = 0; i < rows; i++) dst[j * rows + i] = LOAD(ELEM(src, i, j, 2)); \
        } else {                                                                                 \
            for (int64_t i = 0; i < rows; i++)                                                   \
                for (int64_t j = 0; j < cols; j++) dst[i * cols + j] = LOAD(ELEM(src, i, j, 2)); \
        }                                                                                        \
    } while (0)

/* Widens a rows x cols fp16/bf16 matrix to fp32, keeping its orientation (column-major when
 * its rows are closer together in memory than its columns) so the reads run along memory. */
/* One contiguous run of fp16/bf16 widened with the vectorised converters (bit-identical to the
 * per-element loads). */
static void widen_run(const char *src, float *dst, ampc_dtype dt, int64_t n) {
    if (dt == AMPC_FLOAT16)
        ampc_cpu_f16_to_f32((const ampc_half *)src, dst, n);
    else
        ampc_cpu_bf16_to_f32((const ampc_bfloat16 *)src, dst, n);
}

static gemm_mat widen(float *dst, gemm_mat src, ampc_dtype dt, int64_t rows, int64_t cols) {
    bool col_major = rows > 1 && cols > 1 && src.rs < src.cs;
    if (col_major && src.rs == 1) { /* columns are contiguous runs */
        for (int64_t j = 0; j < cols; j++) widen_run(ELEM(src, 0, j, 2), dst + j * rows, dt, rows);
    } else if (!col_major && (src.cs == 1 || cols == 1)) { /* rows are contiguous runs */
        for (int64_t i = 0; i < rows; i++) widen_run(ELEM(src, i, 0, 2), dst + i * cols, dt, cols);
    } else if (dt == AMPC_FLOAT16)
        WIDEN_LOOPS(AMPC_LOAD_f16);
    else
        WIDEN_LOOPS(AMPC_LOAD_bf16);
    gemm_mat w = {(char *)dst, col_major ? 1 : cols, col_major ? rows : 1};
    return w;
}

static bool same_mat(gemm_mat x, gemm_mat y) { return x.p == y.p && x.rs == y.rs && x.cs == y.cs; }

static ampc_status gemm_half(ampc_dtype dt, half_scratch *s, int64_t n, int64_t m, int64_t k, double alpha,
                             gemm_mat a, gemm_mat b, double beta, const gemm_mat *bias, char *c, int64_t ldc) {
    float *c32 = s->c32;
    if (bias) {
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < m; j++)
                c32[i * m + j] = dt == AMPC_FLOAT16 ? AMPC_LOAD_f16(ELEM(*bias, i, j, 2)) : AMPC_LOAD_bf16(ELEM(*bias, i, j, 2));
    } else {
        beta = 0;
    }
    ampc_status st;
    if (dt == AMPC_BFLOAT16 && gemm_backend == AMPC_CPU_GEMM_AUTO && ampc_cpu_gemm_has_amx()) {
        st = ampc_cpu_gemm_bf16_amx(n, m, k, (float)alpha, (const uint16_t *)a.p, a.rs, a.cs, (const uint16_t *)b.p,
                                    b.rs, b.cs, (float)beta, c32, m);
    } else {
        if (!s->a32) s->a32 = (float *)malloc(sizeof(float) * (size_t)(n * k + 1));
        if (!s->b32) s->b32 = (float *)malloc(sizeof(float) * (size_t)(k * m + 1));
        if (!s->a32 || !s->b32)
            return ampc_set_error(AMPC_E_NOMEM, "gemm: out of memory for the fp32 copies of a %s matmul",
                                  ampc_dtype_name(dt));
        if (!same_mat(a, s->a_src)) s->a_w = widen(s->a32, a, dt, n, k), s->a_src = a;
        if (!same_mat(b, s->b_src)) s->b_w = widen(s->b32, b, dt, k, m), s->b_src = b;
        st = gemm_float(AMPC_FLOAT32, n, m, k, alpha, s->a_w, s->b_w, beta, c32, m);
    }
    if (st != AMPC_OK) return st;
    /* the one rounding of each result */
    for (int64_t i = 0; i < n; i++) {
        char *row = c + i * ldc * 2;
        if (dt == AMPC_FLOAT16)
            ampc_cpu_f32_to_f16(c32 + i * m, (ampc_half *)row, m);
        else
            ampc_cpu_f32_to_bf16(c32 + i * m, (ampc_bfloat16 *)row, m);
    }
    return AMPC_OK;
}

/* ---------------------------------------------------------------- integers */

/* Unsigned arithmetic of the element's width wraps like PyTorch's integer matmul and has no
 * undefined overflow; the accumulator is C's own row. */
#define DEFINE_INT_GEMM(SUF, CT, UT)                                                                    \
    static void gemm_##SUF(int64_t n, int64_t m, int64_t k, int64_t alpha, gemm_mat a, gemm_mat b,       \
                           int64_t beta, const gemm_mat *bias, char *c, int64_t ldc) {                   \
        _Pragma("omp parallel for if (n * m * k >= PARALLEL_WORK)")                                      \
        for (int64_t i = 0; i < n; i++) {                                                                \
            UT *row = (UT *)(c + i * ldc * (int64_t)sizeof(CT));                                         \
            for (int64_t j = 0; j < m; j++) row[j] = 0;                                                  \
            for (int64_t p = 0; p < k; p++) {                                                            \
                UT av = (UT) * (const CT *)ELEM(a, i, p, sizeof(CT));                                    \
                for (int64_t j = 0; j < m; j++) row[j] += av * (UT) * (const CT *)ELEM(b, p, j, sizeof(CT)); \
            }                                                                                            \
            for (int64_t j = 0; j < m; j++) {                                                            \
                UT v = (UT)alpha * row[j];                                                               \
                if (bias) v += (UT)beta * (UT) * (const CT *)ELEM(*bias, i, j, sizeof(CT));              \
                row[j] = v;                                                                              \
            }                                                                                            \
        }                                                                                                \
    }

DEFINE_INT_GEMM(i64, int64_t, uint64_t)
DEFINE_INT_GEMM(i32, int32_t, uint32_t)
DEFINE_INT_GEMM(u8, uint8_t, uint8_t)

/* ---------------------------------------------------------------- the kernel */

/* alpha / beta of an integer GEMM: truncated toward zero like PyTorch, saturated (a C cast of
 * an out-of-range double is undefined). */
static int64_t int_coef(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775807.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}

static gemm_mat matrix_of(const ampc_tensor *t, int64_t offset) {
    gemm_mat mat = {(char *)t->storage->data + offset * (int64_t)ampc_dtype_itemsize(t->dtype),
                    t->strides[t->ndim - 2], t->strides[t->ndim - 1]};
    return mat;
}

static ampc_status cpu_gemm(ampc_op op, const ampc_gemm_args *p) {
    AMPC_TRY(ampc_gemm_check_args(p));
    ampc_tensor *c = p->out;
    const ampc_tensor *a = p->a, *b = p->b, *bias = p->c;
    ampc_dtype dt = c->dtype;
    int nd = c->ndim, nb = nd - 2;
    int64_t n = c->shape[nd - 2], m = c->shape[nd - 1], k = a->shape[nd - 1], ldc = c->strides[nd - 2];
    int64_t batch = 1;
    for (int d = 0; d < nb; d++) batch *= c->shape[d];
    if (batch == 0 || n == 0 || m == 0) return AMPC_OK;
    double alpha = p->alpha, beta = p->beta;
    if (beta == 0) bias = NULL; /* beta 0 ignores the input, NaN included, as BLAS does */
    switch (dt) {
    case AMPC_FLOAT32: case AMPC_FLOAT64: case AMPC_FLOAT16: case AMPC_BFLOAT16:
    case AMPC_INT64: case AMPC_INT32: case AMPC_UINT8: break;
    default:
        return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "gemm: not implemented for '%s'", ampc_dtype_name(dt));
    }

    half_scratch hs = {0}; /* fp16/bf16: C accumulates in fp32 here; a32, b32 made on first use */
    if (dt == AMPC_FLOAT16 || dt == AMPC_BFLOAT16) {
        hs.c32 = (float *)malloc(sizeof(float) * (size_t)(n * m));
        if (!hs.c32)
            return ampc_set_error(AMPC_E_NOMEM, "gemm: out of memory for the fp32 result of a %s matmul",
                                  ampc_dtype_name(dt));
    }
    size_t item = ampc_dtype_itemsize(dt);
    int64_t ialpha = int_coef(alpha), ibeta = int_coef(beta);
    ampc_status st = AMPC_OK;
    int64_t idx[AMPC_MAX_DIMS] = {0};
    for (int64_t e = 0; e < batch && st == AMPC_OK; e++) {
        int64_t off[4] = {a->offset, b->offset, c->offset, bias ? bias->offset : 0};
        for (int d = 0; d < nb; d++) {
            off[0] += idx[d] * a->strides[d];
            off[1] += idx[d] * b->strides[d];
            off[2] += idx[d] * c->strides[d];
            if (bias) off[3] += idx[d] * bias->strides[d];
        }
        gemm_mat ma = matrix_of(a, off[0]), mb = matrix_of(b, off[1]), mc = matrix_of(c, off[2]);
        gemm_mat mbias = bias ? matrix_of(bias, off[3]) : mc;
        switch (dt) {
        case AMPC_FLOAT32: case AMPC_FLOAT64:
            if (bias) /* C = bias, then BLAS's own beta */
                for (int64_t i = 0; i < n; i++) {
                    if (mbias.cs == 1) memcpy(ELEM(mc, i, 0, item), ELEM(mbias, i, 0, item), item * (size_t)m);
                    else
                        for (int64_t j = 0; j < m; j++) memcpy(ELEM(mc, i, j, item), ELEM(mbias, i, j, item), item);
                }
            st = gemm_float(dt, n, m, k, alpha, ma, mb, bias ? beta : 0.0, mc.p, ldc);
            break;
        case AMPC_FLOAT16: case AMPC_BFLOAT16:
            st = gemm_half(dt, &hs, n, m, k, alpha, ma, mb, beta, bias ? &mbias : NULL, mc.p, ldc);
            break;
        case AMPC_INT64: gemm_i64(n, m, k, ialpha, ma, mb, ibeta, bias ? &mbias : NULL, mc.p, ldc); break;
        case AMPC_INT32: gemm_i32(n, m, k, ialpha, ma, mb, ibeta, bias ? &mbias : NULL, mc.p, ldc); break;
        default: gemm_u8(n, m, k, ialpha, ma, mb, ibeta, bias ? &mbias : NULL, mc.p, ldc); break;
        }
        for (int d = nb - 1; d >= 0; d--) { /* next batch index, last dim fastest */
            if (++idx[d] < c->shape[d]) break;
            idx[d] = 0;
        }
    }
    free(hs.a32), free(hs.b32), free(hs.c32);
    return st;
}

void ampc_cpu_register_gemm(void) {
    /* AMPC_GEMM=fallback|blas|auto picks the implementation for the whole process (read once);
     * an unknown or unavailable name keeps "auto". */
    const char *env = getenv("AMPC_GEMM");
    if (env && *env && ampc_cpu_gemm_set_backend(env) != AMPC_OK) ampc_clear_error();
    ampc_register_gemm(AMPC_CPU, cpu_gemm);
}
