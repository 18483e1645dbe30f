/* cpu_multi_tensor.c: the list ops of core/multi_tensor.h on the CPU: the total norm of many
 * tensors (clip_grad_norm_) and the in-place scale of many tensors by a one-element tensor.
 *
 * Both split the contiguous tensors of the list into fixed chunks and run one OpenMP loop over
 * all chunks of the call. The norm reduces each chunk in double and combines the chunk results in
 * list order on one thread, so its result does not depend on the number of threads (its frontend
 * hands contiguous tensors only); the scale handles a strided tensor with the strided iterator. */
#include <math.h>
#include <stdlib.h>

#include "../core/kernel_args.h"
#include "cpu_backend.h"
#include "cpu_dtype_loops.h"
#include "cpu_iter.h"

#define CHUNK ((int64_t)1 << 16)             /* elements per unit of work */
#define PARALLEL_ELEMENTS ((int64_t)1 << 17) /* below this a call stays on one thread */

/* What is accumulated for each p, and how two partial results combine. */
typedef enum { NORM_ZERO, NORM_ONE, NORM_TWO, NORM_INF, NORM_NEG_INF, NORM_P } norm_kind;

static norm_kind kind_of(double p) {
    if (p == 0.0) return NORM_ZERO;
    if (p == 1.0) return NORM_ONE;
    if (p == 2.0) return NORM_TWO;
    if (isinf(p)) return p > 0 ? NORM_INF : NORM_NEG_INF;
    return NORM_P;
}

/* Max and min that let NaN win, as torch.linalg.vector_norm does. */
static inline double max_nan(double m, double a) { return (a > m || a != a) ? a : m; }
static inline double min_nan(double m, double a) { return (a < m || a != a) ? a : m; }

/* One chunk of n contiguous elements -> its partial result. Four accumulators for the sums give
 * the compiler independent chains (strict IEEE order within each chain, so results are fixed). */
#define DEFINE_NORM_CHUNK(ENUM, SUF, CT, VT)                                                       \
    static double norm_chunk_##SUF(const char *data, int64_t n, norm_kind k, double p) {           \
        const CT *x = (const CT *)data;                                                            \
        double s[4] = {0, 0, 0, 0};                                                                \
        int64_t i = 0;                                                                             \
        switch (k) {                                                                               \
        case NORM_TWO:                                                                             \
            for (; i + 4 <= n; i += 4)                                                             \
                for (int j = 0; j < 4; j++) {                                                      \
                    double v = (double)AMPC_LOAD_##SUF(x + i + j);                                 \
                    s[j] += v * v;                                                                 \
                }                                                                                  \
            for (; i < n; i++) {                                                                   \
                double v = (double)AMPC_LOAD_##SUF(x + i);                                         \
                s[0] += v * v;                                                                     \
            }                                                                                      \
            return (s[0] + s[1]) + (s[2] + s[3]);                                                  \
        case NORM_ONE:                                                                             \
            for (; i + 4 <= n; i += 4)                                                             \
                for (int j = 0; j < 4; j++) s[j] += fabs((double)AMPC_LOAD_##SUF(x + i + j));      \
            for (; i < n; i++) s[0] += fabs((double)AMPC_LOAD_##SUF(x + i));                       \
            return (s[0] + s[1]) + (s[2] + s[3]);                                                  \
        case NORM_ZERO:                                                                            \
            for (; i < n; i++) {                                                                   \
                double v = (double)AMPC_LOAD_##SUF(x + i);                                         \
                s[0] += v != 0.0 ? 1.0 : 0.0; /* NaN counts, as torch's (x != 0).sum() */          \
            }                                                                                      \
            return s[0];                                                                           \
        case NORM_P:                                                                               \
            for (; i < n; i++) s[0] += pow(fabs((double)AMPC_LOAD_##SUF(x + i)), p);               \
            return s[0];                                                                           \
        case NORM_INF: {                                                                           \
            double m = 0.0;                                                                        \
            for (; i < n; i++) m = max_nan(m, fabs((double)AMPC_LOAD_##SUF(x + i)));               \
            return m;                                                                              \
        }                                                                                          \
        case NORM_NEG_INF: {                                                                       \
            double m = INFINITY;                                                                   \
            for (; i < n; i++) m = min_nan(m, fabs((double)AMPC_LOAD_##SUF(x + i)));               \
            return m;                                                                              \
        }                                                                                          \
        }                                                                                          \
        return 0.0;                                                                                \
    }
DEFINE_NORM_CHUNK(AMPC_FLOAT32, f32, float, float)
DEFINE_NORM_CHUNK(AMPC_FLOAT16, f16, ampc_half, float)
DEFINE_NORM_CHUNK(AMPC_BFLOAT16, bf16, ampc_bfloat16, float)
DEFINE_NORM_CHUNK(AMPC_FLOAT64, f64, double, double)

/* A run of contiguous elements of one tensor: the unit of work both ops split a list into, so a
 * list of many small tensors and one big tensor are spread over the threads alike, in one
 * parallel region per call. */
typedef struct {
    char *data;
    int64_t n;
    ampc_dtype dtype;
} chunk;

/* Chunks of every tensor with `keep` set (NULL: all), in list order. Returns the count, or -1
 * when out of memory (*out NULL). */
static int64_t split_into_chunks(int n_list, ampc_tensor *const *list, const bool *keep, chunk **out,
                                 int64_t *total) {
    int64_t n_chunks = 0;
    *total = 0;
    for (int i = 0; i < n_list; i++) {
        if (keep && !keep[i]) continue;
        int64_t n = ampc_numel(list[i]);
        n_chunks += (n + CHUNK - 1) / CHUNK;
        *total += n;
    }
    *out = (chunk *)malloc((size_t)(n_chunks ? n_chunks : 1) * sizeof **out);
    if (!*out) return -1;
    int64_t c = 0;
    for (int i = 0; i < n_list; i++) {
        if (keep && !keep[i]) continue;
        const ampc_tensor *x = list[i];
        char *base = (char *)ampc_data_ptr(x);
        size_t item = ampc_dtype_itemsize(x->dtype);
        int64_t n = ampc_numel(x);
        for (int64_t s = 0; s < n; s += CHUNK, c++)
            (*out)[c] = (chunk){base + (size_t)s * item, n - s < CHUNK ? n - s : CHUNK, x->dtype};
    }
    return n_chunks;
}

static double norm_chunk(const chunk *t, norm_kind k, double p) {
    switch (t->dtype) {
    case AMPC_FLOAT16: return norm_chunk_f16(t->data, t->n, k, p);
    case AMPC_BFLOAT16: return norm_chunk_bf16(t->data, t->n, k, p);
    case AMPC_FLOAT64: return norm_chunk_f64(t->data, t->n, k, p);
    default: return norm_chunk_f32(t->data, t->n, k, p);
    }
}

static ampc_status cpu_grad_norm(ampc_op op, const ampc_grad_norm_args *a) {
    double p = a->p;
    norm_kind k = kind_of(p);
    chunk *chunks;
    int64_t total;
    int64_t n_chunks = split_into_chunks(a->tensors_n, a->tensors, NULL, &chunks, &total);
    if (n_chunks < 0)
        return ampc_set_error(AMPC_E_NOMEM, "%s: out of host memory for %d tensors", ampc_op_name(op), a->tensors_n);
    double *partial = (double *)malloc((size_t)(n_chunks ? n_chunks : 1) * sizeof *partial);
    if (!partial) {
        free(chunks);
        return ampc_set_error(AMPC_E_NOMEM, "%s: out of host memory for %lld chunks", ampc_op_name(op),
                              (long long)n_chunks);
    }
#pragma omp parallel for schedule(static) if (total >= PARALLEL_ELEMENTS)
    for (int64_t j = 0; j < n_chunks; j++) partial[j] = norm_chunk(&chunks[j], k, p);
    /* Combine in list order on this thread: the same answer for any thread count. An empty list
     * (or only empty tensors) gives 0, whatever p. */
    double result = k == NORM_NEG_INF && n_chunks > 0 ? INFINITY : 0.0;
    for (int64_t j = 0; j < n_chunks; j++)
        result = k == NORM_INF       ? max_nan(result, partial[j])
                 : k == NORM_NEG_INF ? min_nan(result, partial[j])
                                     : result + partial[j];
    free(chunks);
    free(partial);
    if (k == NORM_TWO) result = sqrt(result);
    else if (k == NORM_P && n_chunks > 0) result = pow(result, 1.0 / p);
    ampc_tensor *out = a->out;
    if (out->dtype == AMPC_FLOAT64) *(double *)ampc_data_ptr(out) = result;
    else *(float *)ampc_data_ptr(out) = (float)result;
    return AMPC_OK;
}

/* ---- scale ---- */

/* fp16/bf16/fp32: the product in fp32, rounded once (PyTorch's CPU opmath for mul_). `s` is the
 * byte stride (the chunk path passes the item size). */
#define DEFINE_SCALE(ENUM, SUF, CT, VT)                                                           \
    static void scale_##SUF(char **d, const int64_t *s, int64_t n, const void *c) {               \
        VT f = (VT) * (const double *)c;                                                          \
        char *p = d[0];                                                                           \
        if (s[0] == (int64_t)sizeof(CT)) {                                                        \
            CT *x = (CT *)p;                                                                      \
            for (int64_t k = 0; k < n; k++) AMPC_STORE_##SUF(x + k, (VT)AMPC_LOAD_##SUF(x + k) * f); \
            return;                                                                               \
        }                                                                                         \
        for (int64_t k = 0; k < n; k++, p += s[0]) AMPC_STORE_##SUF(p, (VT)AMPC_LOAD_##SUF(p) * f); \
    }
DEFINE_SCALE(AMPC_FLOAT32, f32, float, float)
DEFINE_SCALE(AMPC_FLOAT16, f16, ampc_half, float)
DEFINE_SCALE(AMPC_BFLOAT16, bf16, ampc_bfloat16, float)
DEFINE_SCALE(AMPC_FLOAT64, f64, double, double)

static ampc_cpu_loop_fn scale_fn(ampc_dtype dt) {
    return dt == AMPC_FLOAT16    ? scale_f16
           : dt == AMPC_BFLOAT16 ? scale_bf16
           : dt == AMPC_FLOAT64  ? scale_f64
                                 : scale_f32;
}

static double load_one(const ampc_tensor *t) {
    const char *p = (const char *)ampc_data_ptr(t);
    switch (t->dtype) {
    case AMPC_FLOAT16: return AMPC_LOAD_f16(p);
    case AMPC_BFLOAT16: return AMPC_LOAD_bf16(p);
    case AMPC_FLOAT64: return AMPC_LOAD_f64(p);
    default: return AMPC_LOAD_f32(p);
    }
}

static ampc_status cpu_grad_scale(ampc_op op, const ampc_grad_scale_args *a) {
    double scale = load_one(a->scale);
    bool *contiguous = (bool *)malloc((size_t)(a->tensors_n ? a->tensors_n : 1) * sizeof *contiguous);
    if (!contiguous) return ampc_set_error(AMPC_E_NOMEM, "%s: out of host memory", ampc_op_name(op));
    for (int i = 0; i < a->tensors_n; i++) contiguous[i] = ampc_is_contiguous(a->tensors[i]);
    chunk *chunks;
    int64_t total;
    int64_t n_chunks = split_into_chunks(a->tensors_n, a->tensors, contiguous, &chunks, &total);
    if (n_chunks < 0) {
        free(contiguous);
        return ampc_set_error(AMPC_E_NOMEM, "%s: out of host memory for %d tensors", ampc_op_name(op), a->tensors_n);
    }
#pragma omp parallel for schedule(static) if (total >= PARALLEL_ELEMENTS)
    for (int64_t j = 0; j < n_chunks; j++) {
        int64_t stride = (int64_t)ampc_dtype_itemsize(chunks[j].dtype);
        scale_fn(chunks[j].dtype)(&chunks[j].data, &stride, chunks[j].n, &scale);
    }
    free(chunks);
    /* the rare strided tensor (a view of a bigger grad) goes through the strided iterator */
    ampc_status st = AMPC_OK;
    for (int i = 0; i < a->tensors_n && st == AMPC_OK; i++) {
        ampc_tensor *x = a->tensors[i];
        if (contiguous[i] || ampc_numel(x) == 0) continue;
        ampc_cpu_iter it;
        st = ampc_cpu_iter_init(&it, 1, &x, 0, NULL);
        if (st == AMPC_OK) ampc_cpu_iter_run(&it, scale_fn(x->dtype), &scale);
    }
    free(contiguous);
    return st;
}

void ampc_cpu_register_multi_tensor(void) {
    ampc_register_grad_norm(AMPC_CPU, cpu_grad_norm);
    ampc_register_grad_scale(AMPC_CPU, cpu_grad_scale);
}
