/* cpu_sort_search.c: the CPU kernels that read sorted data or count: SEARCHSORTED and ISIN
 * (binary searches, one per value, in parallel), UNIQUE_CONSECUTIVE (one pass over a sorted or
 * run-structured row), HISTC and BINCOUNT (counting into bins). The SORT and selection kernels
 * are in cpu_sort.c; the contracts of all of them are in ops.def ("sorting and selection").
 *
 * Comparisons are PyTorch's: searchsorted finds the first position whose element is not below
 * the value, `!(s >= v)` moving right (so NaN values land at the end), and equality is `==` (NaN
 * equals nothing, -0.0 equals 0.0). Floats compare in double (exact for every float dtype),
 * integers in int64. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/half.h"
#include "../core/kernel_args.h"
#include "cpu_backend.h"
#include "cpu_reduce.h"
#include "cpu_sort_rows.h"


/* element i (elements from p) of dtype dt, as double / as int64 */
static inline double load_f(ampc_dtype dt, const char *p, int64_t i) {
    switch (dt) {
    case AMPC_FLOAT32: return ((const float *)p)[i];
    case AMPC_FLOAT16: return ampc_half_to_f32(((const ampc_half *)p)[i]);
    case AMPC_BFLOAT16: return ampc_bf16_to_f32(((const ampc_bfloat16 *)p)[i]);
    default: return ((const double *)p)[i];
    }
}

static inline int64_t load_i(ampc_dtype dt, const char *p, int64_t i) {
    switch (dt) {
    case AMPC_INT64: return ((const int64_t *)p)[i];
    case AMPC_INT32: return ((const int32_t *)p)[i];
    case AMPC_UINT8: return ((const uint8_t *)p)[i];
    default: return ((const bool *)p)[i];
    }
}

/* ------------------------------------------------------------------ searchsorted, isin */

/* The insertion point of v in the n elements s[ix(j) * st] (ix through sorter when given),
 * and whether the element there equals v. T: double or int64_t, LOAD its loader. */
#define DEFINE_SEARCH(NAME, T, LOAD)                                                               \
    static int64_t search_##NAME(ampc_dtype dt, const char *s, int64_t st, const int64_t *sorter,  \
                                 int64_t sst, int64_t n, T v, bool right, bool *equal) {           \
        int64_t lo = 0, hi = n;                                                                    \
        while (lo < hi) {                                                                          \
            int64_t mid = lo + (hi - lo) / 2;                                                      \
            T m = LOAD(dt, s, (sorter ? sorter[mid * sst] : mid) * st);                            \
            if (right ? !(m > v) : !(m >= v)) lo = mid + 1;                                        \
            else hi = mid;                                                                         \
        }                                                                                          \
        *equal = lo < n && LOAD(dt, s, (sorter ? sorter[lo * sst] : lo) * st) == v;                \
        return lo;                                                                                 \
    }
DEFINE_SEARCH(f, double, load_f)
DEFINE_SEARCH(i, int64_t, load_i)

static ampc_status cpu_searchsorted(ampc_op op, const ampc_searchsorted_args *a) {
    const ampc_tensor *s = a->sorted, *v = a->values, *so = a->sorter;
    ampc_tensor *out = a->out;
    int64_t m = last_dim(v), total = ampc_numel(v);
    if (total == 0) return AMPC_OK;
    int64_t n = last_dim(s), s_rows = n ? ampc_numel(s) / n : 1;
    bool shared = s->ndim <= 1 || s_rows == 1; /* one sorted row for every row of values */
    ampc_dtype dt = s->dtype, odt = out->dtype;
    bool floating = ampc_dtype_is_floating(dt);
    size_t ssz = ampc_dtype_itemsize(dt), vsz = ampc_dtype_itemsize(v->dtype), osz = ampc_dtype_itemsize(odt);
    int64_t sst = last_stride(s), vst = last_stride(v), ost = last_stride(out), sost = so ? last_stride(so) : 0;
    int nt = ampc_cpu_reduce_threads(total * 8);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t e = 0; e < total; e++) {
        int64_t r = e / m, j = e % m;
        int64_t sr = shared ? 0 : r;
        const char *sp = (const char *)ampc_data_ptr(s) + row_offset(s, sr) * (int64_t)ssz;
        const int64_t *sop = so ? (const int64_t *)ampc_data_ptr(so) + row_offset(so, sr) : NULL;
        const char *vp = (const char *)ampc_data_ptr(v) + (row_offset(v, r) + j * vst) * (int64_t)vsz;
        char *op_ = (char *)ampc_data_ptr(out) + (row_offset(out, r) + j * ost) * (int64_t)osz;
        bool eq;
        int64_t pos = floating ? search_f(dt, sp, sst, sop, sost, n, load_f(dt, vp, 0), a->right, &eq)
                               : search_i(dt, sp, sst, sop, sost, n, load_i(dt, vp, 0), a->right, &eq);
        if (op == AMPC_OP_ISIN) *(bool *)op_ = eq != a->invert;
        else if (odt == AMPC_INT32) *(int32_t *)op_ = (int32_t)pos;
        else *(int64_t *)op_ = pos;
    }
    return AMPC_OK;
}

/* ------------------------------------------------------------------ unique_consecutive */

static ampc_status cpu_unique_consecutive(ampc_op op, const ampc_unique_consecutive_args *a) {
    (void)op;
    const ampc_tensor *in = a->input;
    int64_t n = ampc_numel(in);
    ampc_dtype dt = in->dtype;
    size_t sz = ampc_dtype_itemsize(dt);
    bool floating = ampc_dtype_is_floating(dt);
    const char *x = (const char *)ampc_data_ptr(in);
    char *vals = (char *)ampc_data_ptr(a->values);
    int64_t *counts = a->counts ? (int64_t *)ampc_data_ptr(a->counts) : NULL;
    int64_t *inverse = a->inverse ? (int64_t *)ampc_data_ptr(a->inverse) : NULL;
    const int64_t *perm = a->perm ? (const int64_t *)ampc_data_ptr(a->perm) : NULL;
    int64_t g = -1, run_start = 0;
    for (int64_t i = 0; i < n; i++) {
        bool same = i > 0 && (floating ? load_f(dt, x, i) == load_f(dt, x, i - 1) : load_i(dt, x, i) == load_i(dt, x, i - 1));
        if (!same) {
            if (g >= 0 && counts) counts[g] = i - run_start;
            g++;
            run_start = i;
            memcpy(vals + g * (int64_t)sz, x + i * (int64_t)sz, sz);
        }
        if (inverse) inverse[perm ? perm[i] : i] = g;
    }
    if (g >= 0 && counts) counts[g] = n - run_start;
    *(int64_t *)ampc_data_ptr(a->n_unique) = g + 1;
    return AMPC_OK;
}

/* ------------------------------------------------------------------ histc, bincount */

/* x rounded to the input dtype (as PyTorch's linspace computes the bin edges in it) */
static double round_to(ampc_dtype dt, double x) {
    switch (dt) {
    case AMPC_FLOAT32: return (float)x;
    case AMPC_FLOAT16: return ampc_half_to_f32(ampc_f32_to_half((float)x));
    case AMPC_BFLOAT16: return ampc_bf16_to_f32(ampc_f32_to_bf16((float)x));
    default: return x;
    }
}

static void store_f(ampc_dtype dt, char *p, int64_t i, double v) {
    switch (dt) {
    case AMPC_FLOAT32: ((float *)p)[i] = (float)v; break;
    case AMPC_FLOAT16: ((ampc_half *)p)[i] = ampc_f32_to_half((float)v); break;
    case AMPC_BFLOAT16: ((ampc_bfloat16 *)p)[i] = ampc_f32_to_bf16((float)v); break;
    default: ((double *)p)[i] = v; break;
    }
}

static ampc_status cpu_histc(const ampc_histogram_args *a) {
    const ampc_tensor *in = a->input;
    ampc_tensor *out = a->out;
    ampc_dtype dt = in->dtype;
    int64_t n = ampc_numel(in), bins = ampc_numel(out);
    double *edges = (double *)malloc(sizeof(double) * (size_t)(bins + 1));
    double *hist = (double *)calloc((size_t)bins, sizeof(double));
    if (!edges || !hist) {
        free(edges);
        free(hist);
        return ampc_set_error(AMPC_E_NOMEM, "histc: out of memory for %lld bins", (long long)bins);
    }
    /* linspace(min, max, bins + 1) as PyTorch's kernel: every step rounded to the dtype, the
     * first half counted up from min, the second down from max */
    double lo = round_to(dt, a->min), hi = round_to(dt, a->max);
    double step = round_to(dt, round_to(dt, hi - lo) / (double)bins);
    int64_t half = (bins + 1) / 2;
    for (int64_t i = 0; i <= bins; i++)
        edges[i] = i < half ? round_to(dt, lo + round_to(dt, step * (double)i))
                            : round_to(dt, hi - round_to(dt, step * (double)(bins - i)));
    double e0 = edges[0], e1 = edges[bins];
    const char *x = (const char *)ampc_data_ptr(in);
    for (int64_t i = 0; i < n; i++) {
        double v = load_f(dt, x, i);
        if (!(v >= e0 && v <= e1)) continue; /* outside, or NaN */
        /* PyTorch's histc interpolates, without searching the edges: (v - e0) * bins / (e1 - e0)
         * with every step rounded to the input's dtype */
        int64_t pos = (int64_t)round_to(dt, round_to(dt, round_to(dt, v - e0) * round_to(dt, (double)bins)) /
                                                round_to(dt, e1 - e0));
        if (pos < 0) pos = 0;
        if (pos >= bins) pos = bins - 1; /* max belongs to the last bin */
        hist[pos] += 1.0;
    }
    char *o = (char *)ampc_data_ptr(out);
    for (int64_t i = 0; i < bins; i++) store_f(out->dtype, o, i * out->strides[0], hist[i]);
    free(edges);
    free(hist);
    return AMPC_OK;
}

static ampc_status cpu_bincount(const ampc_histogram_args *a) {
    const ampc_tensor *in = a->input, *w = a->weights;
    ampc_tensor *out = a->out;
    int64_t n = ampc_numel(in), len = ampc_numel(out);
    const char *x = (const char *)ampc_data_ptr(in);
    char *o = (char *)ampc_data_ptr(out);
    memset(o, 0, (size_t)len * ampc_dtype_itemsize(out->dtype));
    if (!w) {
        int64_t *c = (int64_t *)o;
        for (int64_t i = 0; i < n; i++) c[load_i(in->dtype, x, i)]++;
    } else if (out->dtype == AMPC_FLOAT32) { /* float32 sums in float32, in order, as PyTorch */
        const float *wp = (const float *)ampc_data_ptr(w);
        for (int64_t i = 0; i < n; i++) ((float *)o)[load_i(in->dtype, x, i)] += wp[i];
    } else {
        const double *wp = (const double *)ampc_data_ptr(w);
        for (int64_t i = 0; i < n; i++) ((double *)o)[load_i(in->dtype, x, i)] += wp[i];
    }
    return AMPC_OK;
}

static ampc_status cpu_histogram(ampc_op op, const ampc_histogram_args *a) {
    return op == AMPC_OP_HISTC ? cpu_histc(a) : cpu_bincount(a);
}

void ampc_cpu_register_sort_search(void) {
    ampc_register_searchsorted(AMPC_CPU, cpu_searchsorted);
    ampc_register_unique_consecutive(AMPC_CPU, cpu_unique_consecutive);
    ampc_register_histogram(AMPC_CPU, cpu_histogram);
}
