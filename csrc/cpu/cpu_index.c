/* cpu_index.c: CPU kernels of the index family: the gather and scatter forms that every
 * indexing op reduces to (their layouts are described in core/index.c and ops.def), masked_fill
 * and nonzero.
 *
 * Both forms walk the result shape R with the elementwise iterator; each element's address in
 * the indexed tensor is its R-position plus sum_j index_j * stride_j. Indices are checked against
 * their sizes in a pass before the loop, so the loops never read or write out of bounds and a
 * failing call leaves memory untouched. Moves are byte copies by item size (every dtype, no
 * casts: the frontend matched dtypes); only accumulation needs arithmetic, per dtype, with
 * fp16/bf16 computed in float. Scatters run on one thread in row-major order: repeated indices
 * then accumulate without races, and the last write wins as in NumPy. */
#include <string.h>

#include "../core/index_bounds.h"
#include "../core/scatter_reduce.h"
#include "../core/kernel_args.h"
#include "../core/ops.h"
#include "cpu_backend.h"
#include "cpu_dtype_loops.h"
#include "cpu_iter.h"

#define MAX_INDEX_TENSORS AMPC_MAX_INDEX_TENSORS

typedef struct index_ctx {
    int k;
    int64_t size[MAX_INDEX_TENSORS];
    int64_t stride[MAX_INDEX_TENSORS]; /* bytes */
    double alpha_f;
    int64_t alpha_i;
} index_ctx;

/* Checks each stored element of an index tensor (seen as R) once: dims where it broadcasts
 * (stride 0) are skipped, so a small index over a large R costs little. */
static ampc_status check_index(ampc_op op, const ampc_tensor *idx, int64_t size, int64_t dim) {
    int64_t lowest = ampc_index_counts_from_end(op) ? -size : 0; /* index_bounds.h */
    int64_t shape[AMPC_MAX_DIMS], strides[AMPC_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < idx->ndim; i++) {
        if (idx->shape[i] == 0) return AMPC_OK;
        if (idx->strides[i] == 0 || idx->shape[i] == 1) continue;
        shape[nd] = idx->shape[i];
        strides[nd] = idx->strides[i];
        nd++;
    }
    const int64_t *base = (const int64_t *)ampc_data_ptr(idx);
    int64_t inner = nd ? shape[nd - 1] : 1, inner_stride = nd ? strides[nd - 1] : 0;
    int64_t rows = 1;
    for (int i = 0; i < nd - 1; i++) rows *= shape[i];
    for (int64_t row = 0; row < rows; row++) {
        const int64_t *p = base;
        for (int64_t i = nd - 2, rem = row; i >= 0; i--) {
            p += (rem % shape[i]) * strides[i];
            rem /= shape[i];
        }
        for (int64_t e = 0; e < inner; e++) {
            int64_t v = p[e * inner_stride];
            if (v < lowest || v >= size)
                return ampc_set_error(ampc_index_error_status(op),
                                      "%s: index %lld is out of bounds for dimension %lld with size %lld",
                                      ampc_op_name(op), (long long)v, (long long)dim, (long long)size);
        }
    }
    return AMPC_OK;
}

/* Checks every index and prepares the iterator over (out, in, the k indices): the layout of a
 * gather or scatter form call. `alpha` is NONE for the gather form. */
static ampc_status index_setup(ampc_op op, ampc_tensor *out, const ampc_tensor *in, const ampc_tensor *const *indices,
                               int k, const ampc_index_dim *dims, ampc_scalar alpha, index_ctx *x, ampc_cpu_iter *it) {
    x->k = k; /* <= MAX_INDEX_TENSORS int64 indices: the frontend checked (index.c, dispatch_index) */
    int64_t item = (int64_t)ampc_dtype_itemsize(out->dtype);
    const ampc_tensor *ins[1 + MAX_INDEX_TENSORS] = {in};
    for (int j = 0; j < x->k; j++) {
        const ampc_tensor *idx = ins[1 + j] = indices[j];
        x->size[j] = dims[j].size;
        x->stride[j] = dims[j].stride * item;
        AMPC_TRY(check_index(op, idx, x->size[j], dims[j].dim));
    }
    x->alpha_f = alpha.kind == AMPC_SCALAR_NONE ? 1.0 : ampc_scalar_to_double(alpha);
    x->alpha_i = alpha.kind == AMPC_SCALAR_NONE ? 1 : ampc_scalar_to_int(alpha);
    return ampc_cpu_iter_init(it, 1, &out, 1 + x->k, ins);
}

static inline int64_t element_offset(const index_ctx *x, char **d, const int64_t *s, int64_t i) {
    int64_t off = 0;
    for (int j = 0; j < x->k; j++) {
        int64_t v = *(const int64_t *)(d[2 + j] + i * s[2 + j]);
        off += (v < 0 ? v + x->size[j] : v) * x->stride[j];
    }
    return off;
}

/* True when no index moves along the row (every index stride 0): then the whole row has one
 * offset. That is the common case of selecting whole rows or planes (t[idx] of a batch,
 * index_select on dim 0), where the row is a contiguous slice of the indexed tensor. */
static inline bool row_offset_is_constant(const index_ctx *x, const int64_t *s) {
    for (int j = 0; j < x->k; j++)
        if (s[2 + j] != 0) return false;
    return true;
}

/* Gather: out[i] = in0[i + offset]; put: out[i + offset] = in0[i]. memcpy of a constant size
 * compiles to one load and store; a row with one offset and both sides contiguous is one
 * memcpy (rows of a contiguous source: 4-5x faster than element by element). */
#define DEFINE_MOVES(BYTES)                                                                    \
    static void gather_##BYTES(char **d, const int64_t *s, int64_t n, const void *c) {         \
        const index_ctx *x = (const index_ctx *)c;                                             \
        if (row_offset_is_constant(x, s)) {                                                    \
            const char *src = d[1] + element_offset(x, d, s, 0);                               \
            if (s[0] == BYTES && s[1] == BYTES) {                                              \
                memcpy(d[0], src, (size_t)n * BYTES);                                          \
                return;                                                                        \
            }                                                                                  \
            for (int64_t i = 0; i < n; i++) memcpy(d[0] + i * s[0], src + i * s[1], BYTES);    \
            return;                                                                            \
        }                                                                                      \
        for (int64_t i = 0; i < n; i++)                                                        \
            memcpy(d[0] + i * s[0], d[1] + i * s[1] + element_offset(x, d, s, i), BYTES);      \
    }                                                                                          \
    static void put_##BYTES(char **d, const int64_t *s, int64_t n, const void *c) {            \
        const index_ctx *x = (const index_ctx *)c;                                             \
        if (row_offset_is_constant(x, s) && s[0] == BYTES && s[1] == BYTES) {                  \
            /* memmove: a put whose values overlap the destination stays well defined */      \
            memmove(d[0] + element_offset(x, d, s, 0), d[1], (size_t)n * BYTES);               \
            return;                                                                            \
        }                                                                                      \
        for (int64_t i = 0; i < n; i++)                                                        \
            memcpy(d[0] + i * s[0] + element_offset(x, d, s, i), d[1] + i * s[1], BYTES);      \
    }
DEFINE_MOVES(1)
DEFINE_MOVES(2)
DEFINE_MOVES(4)
DEFINE_MOVES(8)

/* Accumulate: out[i + offset] += alpha * in0[i]. Floats in their opmath type; integers in
 * unsigned 64-bit so overflow wraps like PyTorch instead of being undefined. */
#define DEFINE_ACCUMULATE_FLOAT(SUF, VT)                                                       \
    static void accumulate_##SUF(char **d, const int64_t *s, int64_t n, const void *c) {       \
        const index_ctx *x = (const index_ctx *)c;                                             \
        VT alpha = (VT)x->alpha_f;                                                             \
        for (int64_t i = 0; i < n; i++) {                                                      \
            char *p = d[0] + i * s[0] + element_offset(x, d, s, i);                            \
            AMPC_STORE_##SUF(p, AMPC_LOAD_##SUF(p) + alpha * AMPC_LOAD_##SUF(d[1] + i * s[1])); \
        }                                                                                      \
    }
#define DEFINE_ACCUMULATE_INT(SUF)                                                             \
    static void accumulate_##SUF(char **d, const int64_t *s, int64_t n, const void *c) {       \
        const index_ctx *x = (const index_ctx *)c;                                             \
        uint64_t alpha = (uint64_t)x->alpha_i;                                                 \
        for (int64_t i = 0; i < n; i++) {                                                      \
            char *p = d[0] + i * s[0] + element_offset(x, d, s, i);                            \
            uint64_t v = (uint64_t)(int64_t)AMPC_LOAD_##SUF(p) +                               \
                         alpha * (uint64_t)(int64_t)AMPC_LOAD_##SUF(d[1] + i * s[1]);          \
            AMPC_STORE_##SUF(p, (int64_t)v);                                                   \
        }                                                                                      \
    }
DEFINE_ACCUMULATE_FLOAT(f32, float)
DEFINE_ACCUMULATE_FLOAT(f16, float)
DEFINE_ACCUMULATE_FLOAT(bf16, float)
DEFINE_ACCUMULATE_FLOAT(f64, double)
DEFINE_ACCUMULATE_INT(i64)
DEFINE_ACCUMULATE_INT(i32)
DEFINE_ACCUMULATE_INT(u8)
DEFINE_ACCUMULATE_INT(b8)

static const ampc_cpu_loop_fn accumulate_loops[AMPC_NUM_DTYPES] = {
    [AMPC_FLOAT32] = accumulate_f32, [AMPC_FLOAT16] = accumulate_f16, [AMPC_BFLOAT16] = accumulate_bf16,
    [AMPC_FLOAT64] = accumulate_f64, [AMPC_INT64] = accumulate_i64,   [AMPC_INT32] = accumulate_i32,
    [AMPC_UINT8] = accumulate_u8,    [AMPC_BOOL] = accumulate_b8,
};

/* Reduce (scatter_reduce / index_reduce): out[i + offset] = combine(out[i + offset], in0[i]),
 * the formula of scatter_reduce.h; floats in double (fp32 in float, as its opmath), integers
 * through int64. */
typedef struct reduce_ctx {
    index_ctx x;
    int reduce;
} reduce_ctx;
#define DEFINE_REDUCE(SUF, COMBINE, VT)                                                        \
    static void reduce_##SUF(char **d, const int64_t *s, int64_t n, const void *c) {           \
        const reduce_ctx *r = (const reduce_ctx *)c;                                           \
        for (int64_t i = 0; i < n; i++) {                                                      \
            char *p = d[0] + i * s[0] + element_offset(&r->x, d, s, i);                        \
            VT v = COMBINE(r->reduce, (VT)AMPC_LOAD_##SUF(p), (VT)AMPC_LOAD_##SUF(d[1] + i * s[1])); \
            AMPC_STORE_##SUF(p, v);                                                            \
        }                                                                                      \
    }
DEFINE_REDUCE(f32, ampc_scatter_combine_f32, float)
DEFINE_REDUCE(f16, ampc_scatter_combine_f32, float)
DEFINE_REDUCE(bf16, ampc_scatter_combine_f32, float)
DEFINE_REDUCE(f64, ampc_scatter_combine_f, double)
DEFINE_REDUCE(i64, ampc_scatter_combine_i, int64_t)
DEFINE_REDUCE(i32, ampc_scatter_combine_i, int64_t)
DEFINE_REDUCE(u8, ampc_scatter_combine_i, int64_t)
DEFINE_REDUCE(b8, ampc_scatter_combine_i, int64_t)

static const ampc_cpu_loop_fn reduce_loops[AMPC_NUM_DTYPES] = {
    [AMPC_FLOAT32] = reduce_f32, [AMPC_FLOAT16] = reduce_f16, [AMPC_BFLOAT16] = reduce_bf16,
    [AMPC_FLOAT64] = reduce_f64, [AMPC_INT64] = reduce_i64,   [AMPC_INT32] = reduce_i32,
    [AMPC_UINT8] = reduce_u8,    [AMPC_BOOL] = reduce_b8,
};

static ampc_cpu_loop_fn move_loop(size_t item, bool put) {
    switch (item) {
    case 1: return put ? put_1 : gather_1;
    case 2: return put ? put_2 : gather_2;
    case 4: return put ? put_4 : gather_4;
    case 8: return put ? put_8 : gather_8;
    default: return NULL;
    }
}

/* INDEX_SELECT, GATHER, INDEX */
static ampc_status cpu_gather_form(ampc_op op, const ampc_gather_args *p) {
    index_ctx x;
    ampc_cpu_iter it;
    if (ampc_numel(p->out) == 0) return AMPC_OK;
    const ampc_tensor *indices[MAX_INDEX_TENSORS] = {p->index0, p->index1, p->index2, p->index3, p->index4};
    AMPC_TRY(index_setup(op, p->out, p->src, indices, p->n_indices, p->dims, ampc_scalar_none(), &x, &it));
    ampc_cpu_iter_run(&it, move_loop(ampc_dtype_itemsize(p->out->dtype), false), &x);
    return AMPC_OK;
}

/* SCATTER_ADD, INDEX_ADD, INDEX_PUT, SCATTER, INDEX_COPY, INDEX_FILL, SCATTER_REDUCE, INDEX_REDUCE */
static ampc_status cpu_scatter_form(ampc_op op, const ampc_scatter_args *p) {
    index_ctx x;
    ampc_cpu_iter it;
    ampc_dtype dt = p->dst->dtype;
    if (ampc_numel(p->dst) == 0) return AMPC_OK;
    const ampc_tensor *indices[MAX_INDEX_TENSORS] = {p->index0, p->index1, p->index2, p->index3, p->index4};
    AMPC_TRY(index_setup(op, p->dst, p->values, indices, p->n_indices, p->dims, p->alpha, &x, &it));
    if (p->reduce != AMPC_SCATTER_REDUCE_NONE) {
        reduce_ctx r = {x, p->reduce};
        ampc_cpu_iter_run_serial(&it, reduce_loops[dt], &r);
        return AMPC_OK;
    }
    bool accumulate = p->accumulate; /* false: scatter, index_copy/fill, index_put */
    ampc_cpu_iter_run_serial(&it, accumulate ? accumulate_loops[dt] : move_loop(ampc_dtype_itemsize(dt), true), &x);
    return AMPC_OK;
}

/* MASKED_FILL: dst[i] = value where mask[i]; value is 0-dim, of dst's dtype. The
 * mask is read as bytes: bool storage holds 0 or 1. */
#define DEFINE_MASKED_FILL(BYTES)                                                              \
    static void masked_fill_##BYTES(char **d, const int64_t *s, int64_t n, const void *c) {    \
        (void)c;                                                                               \
        for (int64_t i = 0; i < n; i++)                                                        \
            if (*(const uint8_t *)(d[1] + i * s[1])) memcpy(d[0] + i * s[0], d[2], BYTES);     \
    }
DEFINE_MASKED_FILL(1)
DEFINE_MASKED_FILL(2)
DEFINE_MASKED_FILL(4)
DEFINE_MASKED_FILL(8)

static ampc_status cpu_masked_fill(ampc_op op, const ampc_masked_fill_args *p) {
    AMPC_TRY(ampc_masked_fill_check(op, p));
    ampc_tensor *out = p->dst;
    ampc_cpu_loop_fn fn;
    switch (ampc_dtype_itemsize(out->dtype)) {
    case 1: fn = masked_fill_1; break;
    case 2: fn = masked_fill_2; break;
    case 4: fn = masked_fill_4; break;
    default: fn = masked_fill_8; break;
    }
    ampc_cpu_iter it;
    const ampc_tensor *ins[2] = {p->mask, p->value};
    AMPC_TRY(ampc_cpu_iter_init(&it, 1, &out, 2, ins));
    ampc_cpu_iter_run(&it, fn, NULL);
    return AMPC_OK;
}

/* NONZERO: walks t in row-major order; counts the nonzero elements and, when `out` is given,
 * writes the index of each as one row of `out` (at most `cap` rows). NaN counts as nonzero,
 * -0.0 as zero (value comparison, not bytes). */
#define DEFINE_NONZERO(ENUM, SUF, CT, VT)                                                      \
    static int64_t nonzero_##SUF(const ampc_tensor *t, int64_t *out, int64_t cap) {            \
        int nd = t->ndim;                                                                      \
        const char *base = (const char *)ampc_data_ptr(t);                                     \
        if (nd == 0) return AMPC_LOAD_##SUF(base) != 0;                                        \
        int64_t numel = ampc_numel(t);                                                         \
        if (numel == 0) return 0;                                                              \
        int64_t inner = t->shape[nd - 1], inner_stride = t->strides[nd - 1] * (int64_t)sizeof(CT); \
        int64_t pos[AMPC_MAX_DIMS] = {0}, count = 0;                                           \
        for (int64_t row = 0; row < numel / inner; row++) {                                    \
            const char *p = base;                                                              \
            for (int i = 0; i < nd - 1; i++) p += pos[i] * t->strides[i] * (int64_t)sizeof(CT); \
            for (int64_t e = 0; e < inner; e++, p += inner_stride) {                           \
                if (!(AMPC_LOAD_##SUF(p) != 0)) continue;                                      \
                if (out && count < cap) {                                                      \
                    int64_t *r = out + count * nd;                                             \
                    for (int i = 0; i < nd - 1; i++) r[i] = pos[i];                            \
                    r[nd - 1] = e;                                                             \
                }                                                                              \
                count++;                                                                       \
            }                                                                                  \
            for (int i = nd - 2; i >= 0 && ++pos[i] == t->shape[i]; i--) pos[i] = 0;           \
        }                                                                                      \
        return count;                                                                          \
    }
AMPC_FOR_EACH_DTYPE(DEFINE_NONZERO)

static ampc_status cpu_nonzero(ampc_op op, const ampc_nonzero_args *p) {
    const ampc_tensor *t = p->input;
    ampc_tensor *out = p->out;
    if (out->dtype != AMPC_INT64 || (p->fill && (out->ndim != 2 || !ampc_is_contiguous(out))))
        return ampc_set_error(AMPC_E_RUNTIME, "nonzero: expects a contiguous int64 output");
    int64_t *rows = p->fill ? (int64_t *)ampc_data_ptr(out) : NULL;
    int64_t cap = p->fill ? out->shape[0] : 0, count;
    switch (t->dtype) {
#define NONZERO_CASE(ENUM, SUF, CT, VT) \
    case ENUM: count = nonzero_##SUF(t, rows, cap); break;
        AMPC_FOR_EACH_DTYPE(NONZERO_CASE)
#undef NONZERO_CASE
    default: return ampc_set_error(AMPC_E_TYPE, "nonzero: unsupported dtype");
    }
    if (!p->fill) *(int64_t *)ampc_data_ptr(out) = count;
    return AMPC_OK;
}

void ampc_cpu_register_index(void) {
    ampc_register_gather(AMPC_CPU, cpu_gather_form);
    ampc_register_scatter(AMPC_CPU, cpu_scatter_form);
    ampc_register_masked_fill(AMPC_CPU, cpu_masked_fill);
    ampc_register_nonzero(AMPC_CPU, cpu_nonzero);
}
