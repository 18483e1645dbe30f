/* cpu_scan_more.c: the CPU kernels of issue 12's scans: CUMPROD and LOGCUMSUMEXP (the `scan`
 * schema: contiguous input and output of one dtype) and CUMMAX/CUMMIN (`scan_indices`: values
 * of the input's dtype and int64 indices, all contiguous), with PyTorch's CPU semantics
 * (aten/src/ATen/native/cpu/ReduceOpsKernel.cpp, cummax_cummin_helper):
 *   cumprod       running product, floats in double (rounded once per prefix), integers wrapping;
 *   logcumsumexp  running log(sum exp) in double through torch's _log_add_exp_helper (infinities
 *                 of one sign stay, NaN propagates);
 *   cummax/min    the running extremum and its index; ties and NaN take the latest index, and a
 *                 NaN stays once seen.
 * The tensor is (outer, n, cols) with the scanned dim n in the middle (reduce_plan.h); each
 * (outer, col) line is scanned serially, lines in parallel. */
#include <math.h>

#include "cpu_backend.h"
#include "cpu_dtype_loops.h"
#include "cpu_reduce.h"

/* floats accumulate in double, integers in uint64 (wrapping, defined) */
#define SCAN_MORE_DTYPES(X)                                                                    \
    X(f32, float, double) X(f16, ampc_half, double) X(bf16, ampc_bfloat16, double)             \
    X(f64, double, double) X(i64, int64_t, uint64_t) X(i32, int32_t, uint64_t)                 \
    X(u8, uint8_t, uint64_t) X(b8, bool, uint64_t)

typedef void (*line_fn)(char *out, char *idx, const char *in, int64_t n, int64_t stride);

/* cumprod along one line: in/out step `stride` elements */
#define DEFINE_CUMPROD(SUF, CT, ACC)                                                           \
    static void cumprod_##SUF(char *out, char *idx, const char *in, int64_t n, int64_t s) {    \
        const CT *x = (const CT *)in;                                                          \
        CT *o = (CT *)out;                                                                     \
        ACC acc = 1;                                                                           \
        for (int64_t i = 0; i < n; i++) {                                                      \
            acc *= (ACC)AMPC_LOAD_##SUF(x + i * s);                                            \
            AMPC_STORE_##SUF(o + i * s, acc);                                                  \
        }                                                                                      \
    }
SCAN_MORE_DTYPES(DEFINE_CUMPROD)

/* torch's _log_add_exp_helper(x, y) */
static inline double log_add_exp(double x, double y) {
    double lo = isnan(y) ? y : (x < y ? x : y), hi = isnan(y) ? y : (x < y ? y : x);
    if (lo != hi || isfinite(lo)) return log1p(exp(lo - hi)) + hi;
    return x;
}

#define DEFINE_LOGCUMSUMEXP(SUF, CT)                                                           \
    static void logcumsumexp_##SUF(char *out, char *idx, const char *in, int64_t n, int64_t s) { \
        const CT *x = (const CT *)in;                                                          \
        CT *o = (CT *)out;                                                                     \
        double acc = -INFINITY;                                                                \
        for (int64_t i = 0; i < n; i++) {                                                      \
            acc = log_add_exp((double)AMPC_LOAD_##SUF(x + i * s), acc);                        \
            AMPC_STORE_##SUF(o + i * s, acc);                                                  \
        }                                                                                      \
    }
DEFINE_LOGCUMSUMEXP(f32, float)
DEFINE_LOGCUMSUMEXP(f16, ampc_half)
DEFINE_LOGCUMSUMEXP(bf16, ampc_bfloat16)
DEFINE_LOGCUMSUMEXP(f64, double)

/* cummax (GE) / cummin (LE): NAN(v) tests a value for NaN (0 for integers) */
#define IS_NAN_F(v) ((v) != (v))
#define IS_NAN_I(v) 0
#define DEFINE_CUMEXT(NAME, CMP, SUF, CT, VT, NANF)                                                \
    static void NAME##_##SUF(char *out, char *idx, const char *in, int64_t n, int64_t s) {     \
        const CT *x = (const CT *)in;                                                          \
        CT *o = (CT *)out;                                                                     \
        int64_t *ix = (int64_t *)idx;                                                          \
        VT best = AMPC_LOAD_##SUF(x);                                                          \
        int64_t at = 0;                                                                        \
        for (int64_t i = 0; i < n; i++) {                                                      \
            VT v = AMPC_LOAD_##SUF(x + i * s);                                                 \
            if (NANF(v) || (!NANF(best) && v CMP best)) {                                      \
                best = v;                                                                      \
                at = i;                                                                        \
            }                                                                                  \
            AMPC_STORE_##SUF(o + i * s, best);                                                 \
            ix[i * s] = at;                                                                    \
        }                                                                                      \
    }
#define DEFINE_CUMEXT_BOTH(SUF, CT, VT, NANF) DEFINE_CUMEXT(cummax, >=, SUF, CT, VT, NANF) DEFINE_CUMEXT(cummin, <=, SUF, CT, VT, NANF)
DEFINE_CUMEXT_BOTH(f32, float, float, IS_NAN_F)
DEFINE_CUMEXT_BOTH(f16, ampc_half, float, IS_NAN_F)
DEFINE_CUMEXT_BOTH(bf16, ampc_bfloat16, float, IS_NAN_F)
DEFINE_CUMEXT_BOTH(f64, double, double, IS_NAN_F)
DEFINE_CUMEXT_BOTH(i64, int64_t, int64_t, IS_NAN_I)
DEFINE_CUMEXT_BOTH(i32, int32_t, int32_t, IS_NAN_I)
DEFINE_CUMEXT_BOTH(u8, uint8_t, uint8_t, IS_NAN_I)
DEFINE_CUMEXT_BOTH(b8, bool, bool, IS_NAN_I)

#define ALL_DTYPES_TABLE(P)                                                                                 \
    {[AMPC_FLOAT32] = P##_f32, [AMPC_FLOAT16] = P##_f16, [AMPC_BFLOAT16] = P##_bf16, [AMPC_FLOAT64] = P##_f64, \
     [AMPC_INT64] = P##_i64,   [AMPC_INT32] = P##_i32,   [AMPC_UINT8] = P##_u8,      [AMPC_BOOL] = P##_b8}
static const line_fn cumprod_loops[AMPC_NUM_DTYPES] = ALL_DTYPES_TABLE(cumprod);
static const line_fn cummax_loops[AMPC_NUM_DTYPES] = ALL_DTYPES_TABLE(cummax);
static const line_fn cummin_loops[AMPC_NUM_DTYPES] = ALL_DTYPES_TABLE(cummin);
static const line_fn logcumsumexp_loops[AMPC_NUM_DTYPES] = {[AMPC_FLOAT32] = logcumsumexp_f32,
                                                            [AMPC_FLOAT16] = logcumsumexp_f16,
                                                            [AMPC_BFLOAT16] = logcumsumexp_bf16,
                                                            [AMPC_FLOAT64] = logcumsumexp_f64};

/* Every (outer, col) line of `in` (and out, idx: same layout) through fn. */
static ampc_status run_lines(ampc_op op, line_fn fn, const ampc_tensor *in, ampc_tensor *out, ampc_tensor *idx, int dim) {
    if (!fn)
        return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "%s: the CPU backend has no loop for dtype %s", ampc_op_name(op),
                              ampc_dtype_name(in->dtype));
    ampc_scan_plan sp = ampc_scan_plan_make(in, dim);
    int64_t lines = sp.outer * sp.cols, item = (int64_t)ampc_dtype_itemsize(in->dtype);
    if (lines * sp.n == 0) return AMPC_OK;
    const char *x = (const char *)ampc_data_ptr(in);
    char *o = (char *)ampc_data_ptr(out), *ix = idx ? (char *)ampc_data_ptr(idx) : NULL;
    int nt = ampc_cpu_reduce_threads(lines * sp.n);
    if (lines < nt) nt = (int)lines;
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t l = 0; l < lines; l++) {
        int64_t b = l / sp.cols, c = l % sp.cols, first = b * sp.n * sp.cols + c; /* element offset */
        fn(o + first * item, ix ? ix + first * (int64_t)sizeof(int64_t) : NULL, x + first * item, sp.n, sp.cols);
    }
    return AMPC_OK;
}

ampc_status ampc_cpu_scan_more(ampc_op op, const ampc_scan_args *a) {
    const line_fn *table = op == AMPC_OP_CUMPROD ? cumprod_loops : op == AMPC_OP_LOGCUMSUMEXP ? logcumsumexp_loops : NULL;
    if (!table) return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "%s: not a CPU scan", ampc_op_name(op));
    return run_lines(op, table[a->input->dtype], a->input, a->output, NULL, a->dim);
}

static ampc_status cpu_scan_indices(ampc_op op, const ampc_scan_indices_args *a) {
    const line_fn *table = op == AMPC_OP_CUMMAX ? cummax_loops : cummin_loops;
    return run_lines(op, table[a->input->dtype], a->input, a->values, a->indices, a->dim);
}

void ampc_cpu_register_scan_more(void) { ampc_register_scan_indices(AMPC_CPU, cpu_scan_indices); }
