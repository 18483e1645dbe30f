/* cpu_reduce.c: CPU kernels of the REDUCE family (sum, mean, prod, amax/amin, max/min with
 * indices, argmax/argmin, var/std, norm, logsumexp, any/all) and of the SCAN cumsum.
 *
 * The frontend (core/reduce.c) passes the outputs viewed with keepdim shape, so a dim is reduced
 * exactly where the output has size 1 and the input does not. plan_reduction() splits the dims
 * into kept and reduced ones, drops size-1 dims and merges neighbours contiguous with each other.
 * Then one of two loops runs:
 *   - along rows: every output element folds its own elements, one row (innermost reduced dim)
 *     at a time, with the typed folds of cpu_reduce_folds.h;
 *   - across rows: when the innermost input dim is kept and contiguous (x.sum(0), a bias
 *     gradient), whole input rows are folded into a buffer of accumulators, which vectorizes and
 *     reads memory once, in order.
 * Floating inputs accumulate in double, integers in int64 (wrapping like PyTorch); the result is
 * rounded once to the output dtype. OpenMP splits large work over output elements when there are
 * enough of them, else over the reduced elements of each output and combines the per-thread
 * partial results in order (so argmax keeps the first occurrence). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
static int omp_thread(void) { return omp_get_thread_num(); }
#else
static int omp_thread(void) { return 0; }
#endif

#include "../core/dispatch.h"
#include "cpu_backend.h"
#include "cpu_dtype_loops.h"
#include "cpu_reduce_folds.h"

/* Below this many input elements a parallel region costs more than it saves. */
#define PARALLEL_GRAIN 32768
/* Columns one across-rows task accumulates at a time: 4 KiB of accumulators stay in L1. */
#define COL_CHUNK 512
/* The across-rows loop pays off only for rows at least this long. */
#define MIN_VERTICAL_COLS 4

/* ---- accumulators and what each op does with them ---- */

/* The running result of one output element; which fields matter depends on the op. */
typedef struct racc {
    double v;    /* floating sum, product, extreme, sum of |x|^p; mean (var); max (logsumexp) */
    double w;    /* sum of squared deviations (var); sum of exp(x - v) (logsumexp) */
    int64_t i;   /* integer sum, product, extreme; any/all */
    int64_t idx; /* max/min/argmax/argmin: index of the extreme among the reduced elements */
    int64_t cnt; /* elements folded in; 0 means nothing yet (the identity) */
} racc;

/* Accumulators of COL_CHUNK output elements for the across-rows loop: the racc fields, as arrays
 * the typed column loops can vectorize over. */
typedef struct colbuf {
    double v[COL_CHUNK], w[COL_CHUNK];
    int64_t i[COL_CHUNK], idx[COL_CHUNK];
} colbuf;

typedef struct rkernel rkernel;
/* A fresh accumulator of the n > 0 elements at p (byte stride s); `first` is the flat index of
 * the first one among the reduced elements (for arg ops). */
typedef void (*row_fn)(const rkernel *k, racc *r, const char *p, int64_t n, int64_t s, int64_t first);
/* a = a then b, both non-empty */
typedef void (*merge_fn)(const rkernel *k, racc *a, const racc *b);
/* Finishes an accumulator and writes the output element(s). */
typedef void (*store_fn)(const rkernel *k, char *out0, char *out1, const racc *a);
/* Across rows: start n accumulators at reduced row r0, then fold row r (the `count`-th of this
 * buffer) into them. */
typedef void (*col_init_fn)(const rkernel *k, colbuf *b, int64_t n, int64_t r0);
typedef void (*col_step_fn)(const rkernel *k, colbuf *b, const char *p, int64_t n, int64_t r, int64_t count);

/* What each family of ops does at each step, for double and for int64 accumulators. */
typedef struct rfamily {
    row_fn row_d, row_i;
    merge_fn merge_d, merge_i;
    store_fn store;
    col_init_fn col_init;
    col_step_fn col_d, col_i; /* NULL: no across-rows loop */
} rfamily;

struct rkernel {
    ampc_op op;
    int fold;      /* the main typed loop (enum fold) */
    bool int_acc;  /* accumulates in racc.i (int64) rather than racc.v (double) */
    bool ordered;  /* reduced dims keep their logical order: arg ops count their index in it */
    row_fn row;
    merge_fn merge;
    store_fn store;
    col_init_fn col_init;
    col_step_fn col_step;
    /* typed loops of the input dtype */
    fold_d_fn fd, fd2; /* fd2: the second pass of var (sqdev) and logsumexp (expsum) */
    fold_i_fn fi;
    col_d_fn cd;
    col_i_fn ci;
    find_d_fn find_d;
    find_i_fn find_i;
    col_arg_d_fn col_arg_d;
    col_arg_i_fn col_arg_i;
    col_welford_fn col_welford;
    double param; /* p of norm, correction of var/std */
    ampc_dtype out_dtype;
};

static void write_d(char *o, ampc_dtype dt, double v) {
    switch (dt) {
    case AMPC_FLOAT32: AMPC_STORE_f32(o, v); break;
    case AMPC_FLOAT16: AMPC_STORE_f16(o, v); break;
    case AMPC_BFLOAT16: AMPC_STORE_bf16(o, v); break;
    case AMPC_FLOAT64: AMPC_STORE_f64(o, v); break;
    case AMPC_BOOL: AMPC_STORE_b8(o, v); break;
    default: break; /* integer outputs come from integer accumulators */
    }
}

static void write_i(char *o, ampc_dtype dt, int64_t v) {
    switch (dt) {
    case AMPC_INT64: AMPC_STORE_i64(o, v); break;
    case AMPC_INT32: AMPC_STORE_i32(o, v); break;
    case AMPC_UINT8: AMPC_STORE_u8(o, v); break;
    case AMPC_BOOL: AMPC_STORE_b8(o, v); break;
    default: write_d(o, dt, (double)v); break;
    }
}

/* -- plain folds: sum, mean, prod, amax, amin, any, all, norm -- */

static void row_fold_d(const rkernel *k, racc *r, const char *p, int64_t n, int64_t s, int64_t first) {
    r->v = k->fd(p, n, s, k->param);
    r->cnt = n;
}

static void row_fold_i(const rkernel *k, racc *r, const char *p, int64_t n, int64_t s, int64_t first) {
    r->i = k->fi(p, n, s, k->param);
    r->cnt = n;
}

static void merge_fold_d(const rkernel *k, racc *a, const racc *b) { a->v = fold_merge_d(k->fold, a->v, b->v); }
static void merge_fold_i(const rkernel *k, racc *a, const racc *b) { a->i = fold_merge_i(k->fold, a->i, b->i); }

static void store_fold(const rkernel *k, char *o0, char *o1, const racc *a) {
    if (k->int_acc) {
        write_i(o0, k->out_dtype, a->cnt ? a->i : fold_identity_i(k->fold));
        return;
    }
    double v = a->cnt ? a->v : fold_identity_d(k->fold);
    if (k->op == AMPC_OP_MEAN) v /= (double)a->cnt; /* empty: 0/0 = nan, as in PyTorch */
    if (k->fold == FOLD_sq_sum) v = sqrt(v);
    if (k->fold == FOLD_pow_sum) v = pow(v, 1.0 / k->param);
    write_d(o0, k->out_dtype, v);
}

static void col_init_fold(const rkernel *k, colbuf *b, int64_t n, int64_t r0) {
    double id_d = fold_identity_d(k->fold);
    int64_t id_i = fold_identity_i(k->fold);
    for (int64_t j = 0; j < n; j++) b->v[j] = id_d, b->i[j] = id_i;
}

static void col_fold_d(const rkernel *k, colbuf *b, const char *p, int64_t n, int64_t r, int64_t count) {
    k->cd(b->v, p, n, k->param);
}

static void col_fold_i(const rkernel *k, colbuf *b, const char *p, int64_t n, int64_t r, int64_t count) {
    k->ci(b->i, p, n, k->param);
}

/* -- max/min with indices, argmax/argmin: the extreme by the vectorized fold, then the first
 * element equal to it (the first NaN when it is NaN) -- */

static void row_arg_d(const rkernel *k, racc *r, const char *p, int64_t n, int64_t s, int64_t first) {
    r->v = k->fd(p, n, s, 0.0);
    r->idx = first + k->find_d(p, n, s, r->v);
    r->cnt = n;
}

static void row_arg_i(const rkernel *k, racc *r, const char *p, int64_t n, int64_t s, int64_t first) {
    r->i = k->fi(p, n, s, 0.0);
    r->idx = first + k->find_i(p, n, s, r->i);
    r->cnt = n;
}

/* b comes after a: it wins only when strictly better, or when it holds the first NaN. */
static void merge_arg_d(const rkernel *k, racc *a, const racc *b) {
    bool better = k->fold == FOLD_max ? b->v > a->v : b->v < a->v;
    if (a->v == a->v && (better || b->v != b->v)) a->v = b->v, a->idx = b->idx;
}

static void merge_arg_i(const rkernel *k, racc *a, const racc *b) {
    if (k->fold == FOLD_max ? b->i > a->i : b->i < a->i) a->i = b->i, a->idx = b->idx;
}

static void store_arg(const rkernel *k, char *o0, char *o1, const racc *a) {
    if (k->op == AMPC_OP_ARGMAX || k->op == AMPC_OP_ARGMIN) {
        AMPC_STORE_i64(o0, a->idx);
        return;
    }
    if (k->int_acc)
        write_i(o0, k->out_dtype, a->i);
    else
        write_d(o0, k->out_dtype, a->v);
    AMPC_STORE_i64(o1, a->idx);
}

static void col_init_arg(const rkernel *k, colbuf *b, int64_t n, int64_t r0) {
    col_init_fold(k, b, n, r0); /* -inf / +inf: only a strictly better or NaN row moves idx */
    for (int64_t j = 0; j < n; j++) b->idx[j] = r0;
}

static void col_arg_d(const rkernel *k, colbuf *b, const char *p, int64_t n, int64_t r, int64_t count) {
    k->col_arg_d(b->v, b->idx, p, n, r);
}

static void col_arg_i(const rkernel *k, colbuf *b, const char *p, int64_t n, int64_t r, int64_t count) {
    k->col_arg_i(b->i, b->idx, p, n, r);
}

/* -- var/std: along a row two passes (the mean, then squared deviations from it), exact where
 * one-pass sums of squares cancel; across rows Welford's update; partial results merge with
 * Chan's formula -- */

static void row_moments(const rkernel *k, racc *r, const char *p, int64_t n, int64_t s, int64_t first) {
    r->v = k->fd(p, n, s, 0.0) / (double)n;
    r->w = k->fd2(p, n, s, r->v);
    r->cnt = n;
}

static void merge_moments(const rkernel *k, racc *a, const racc *b) {
    double na = (double)a->cnt, nb = (double)b->cnt, n = na + nb, delta = b->v - a->v;
    a->v += delta * nb / n;
    a->w += b->w + delta * delta * na * nb / n;
}

static void store_moments(const rkernel *k, char *o0, char *o1, const racc *a) {
    /* PyTorch divides by max(0, N - correction): inf or nan when no degrees of freedom are left */
    double dof = (double)a->cnt - k->param;
    double v = (a->cnt ? a->w : 0.0) / (dof > 0 ? dof : 0.0);
    write_d(o0, k->out_dtype, k->op == AMPC_OP_STD ? sqrt(v) : v);
}

static void col_init_moments(const rkernel *k, colbuf *b, int64_t n, int64_t r0) {
    for (int64_t j = 0; j < n; j++) b->v[j] = b->w[j] = 0.0;
}

static void col_moments(const rkernel *k, colbuf *b, const char *p, int64_t n, int64_t r, int64_t count) {
    k->col_welford(b->v, b->w, p, n, 1.0 / (double)count);
}

/* -- logsumexp: the max, then the sum of exp(x - max); an infinite or NaN max is the answer
 * itself -- */

static void row_lse(const rkernel *k, racc *r, const char *p, int64_t n, int64_t s, int64_t first) {
    r->v = k->fd(p, n, s, 0.0);
    r->w = isfinite(r->v) ? k->fd2(p, n, s, r->v) : 1.0;
    r->cnt = n;
}

static void merge_lse(const rkernel *k, racc *a, const racc *b) {
    double m = fold_merge_d(FOLD_max, a->v, b->v);
    a->w = isfinite(m) ? a->w * exp(a->v - m) + b->w * exp(b->v - m) : 1.0;
    a->v = m;
}

static void store_lse(const rkernel *k, char *o0, char *o1, const racc *a) {
    write_d(o0, k->out_dtype, a->cnt == 0 ? -INFINITY : isfinite(a->v) ? a->v + log(a->w) : a->v);
}

static const rfamily family_fold = {row_fold_d, row_fold_i, merge_fold_d, merge_fold_i, store_fold,
                                    col_init_fold, col_fold_d, col_fold_i};
static const rfamily family_arg = {row_arg_d, row_arg_i, merge_arg_d, merge_arg_i, store_arg,
                                   col_init_arg, col_arg_d, col_arg_i};
static const rfamily family_moments = {row_moments, NULL, merge_moments, NULL, store_moments,
                                       col_init_moments, col_moments, NULL};
static const rfamily family_lse = {row_lse, NULL, merge_lse, NULL, store_lse, NULL, NULL, NULL};

/* a = a then b, for any op; an empty side is the identity. */
static void combine(const rkernel *k, racc *a, const racc *b) {
    if (b->cnt == 0) return;
    if (a->cnt == 0) {
        *a = *b;
        return;
    }
    k->merge(k, a, b);
    a->cnt += b->cnt;
}

/* The fold a norm of order p runs: the common orders avoid pow(). */
static int norm_fold(double p) {
    if (p == 2) return FOLD_sq_sum;
    if (p == 1) return FOLD_abs_sum;
    if (p == 0) return FOLD_nonzero;
    if (p == INFINITY) return FOLD_abs_max;
    if (p == -INFINITY) return FOLD_abs_min;
    return FOLD_pow_sum;
}

static ampc_status make_kernel(ampc_op op, const ampc_kernel_args *a, rkernel *k) {
    memset(k, 0, sizeof *k);
    ampc_dtype in = a->in[0]->dtype;
    k->op = op;
    k->out_dtype = a->out[0]->dtype;
    k->param = ampc_scalar_to_double(a->scalars[1]);
    /* Integer accumulators for integer inputs, except: sums and products follow the output
     * (the frontend casts the input first where that matters), any/all always count in int64. */
    k->int_acc = !ampc_dtype_is_floating(in);
    const rfamily *f = &family_fold;
    switch (op) {
    case AMPC_OP_SUM:
    case AMPC_OP_MEAN:
    case AMPC_OP_PROD:
        k->fold = op == AMPC_OP_PROD ? FOLD_prod : FOLD_sum;
        k->int_acc = !ampc_dtype_is_floating(k->out_dtype);
        break;
    case AMPC_OP_AMAX: k->fold = FOLD_max; break;
    case AMPC_OP_AMIN: k->fold = FOLD_min; break;
    case AMPC_OP_ANY:
    case AMPC_OP_ALL:
        k->fold = op == AMPC_OP_ANY ? FOLD_any : FOLD_all;
        k->int_acc = true;
        break;
    case AMPC_OP_NORM: k->fold = norm_fold(k->param); break;
    case AMPC_OP_MAX_DIM:
    case AMPC_OP_ARGMAX:
    case AMPC_OP_MIN_DIM:
    case AMPC_OP_ARGMIN:
        k->fold = (op == AMPC_OP_MAX_DIM || op == AMPC_OP_ARGMAX) ? FOLD_max : FOLD_min;
        k->ordered = true;
        f = &family_arg;
        break;
    case AMPC_OP_VAR:
    case AMPC_OP_STD:
        k->fold = FOLD_sum;
        k->fd2 = fold_d_loops[FOLD_sqdev][in];
        f = &family_moments;
        break;
    case AMPC_OP_LOGSUMEXP:
        k->fold = FOLD_max;
        k->fd2 = fold_d_loops[FOLD_expsum][in];
        f = &family_lse;
        break;
    default: return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "%s: not a CPU reduction", ampc_op_name(op));
    }
    int arg_row = k->fold == FOLD_max ? 0 : 1;
    k->fd = fold_d_loops[k->fold][in];
    k->fi = fold_i_loops[k->fold][in];
    k->cd = col_d_loops[k->fold][in];
    k->ci = col_i_loops[k->fold][in];
    k->find_d = find_d_loops[in];
    k->find_i = find_i_loops[in];
    k->col_arg_d = col_arg_d_loops[arg_row][in];
    k->col_arg_i = col_arg_i_loops[arg_row][in];
    k->col_welford = col_welford_loops[in];
    k->row = k->int_acc ? f->row_i : f->row_d;
    k->merge = k->int_acc ? f->merge_i : f->merge_d;
    k->store = f->store;
    k->col_init = f->col_init;
    k->col_step = k->int_acc ? f->col_i : f->col_d;
    /* The frontends only send combinations that have loops; refuse the rest rather than crash. */
    bool have = k->row && (k->int_acc ? k->fi != NULL : k->fd != NULL) &&
                (f != &family_moments && f != &family_lse ? true : k->fd2 != NULL);
    if (!have)
        return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "\"%s_cpu\" not implemented for '%s'", ampc_op_name(op),
                              ampc_dtype_name(in));
    return AMPC_OK;
}

/* ---- the plan: kept and reduced dims, coalesced ---- */

typedef struct rplan {
    char *in, *out0, *out1;
    int nk, nr; /* >= 1 each (a size-1 dim stands in for none) */
    int64_t kshape[AMPC_MAX_DIMS], kin[AMPC_MAX_DIMS], ko0[AMPC_MAX_DIMS], ko1[AMPC_MAX_DIMS]; /* byte strides */
    int64_t rshape[AMPC_MAX_DIMS], rin[AMPC_MAX_DIMS];
    int64_t n_out, n_red, in_item;
} rplan;

static int64_t stride_key(int64_t s) { return s == 0 ? INT64_MAX : llabs(s); }

/* Sorts dims outermost (largest input stride) first; stride-0 (expanded) dims go outermost.
 * `cols` arrays of strides move along with the keys (insertion sort: at most 8 dims). */
static void sort_dims(int n, int64_t *shape, int ncols, int64_t **cols) {
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && stride_key(cols[0][j - 1]) < stride_key(cols[0][j]); j--) {
            int64_t t = shape[j];
            shape[j] = shape[j - 1];
            shape[j - 1] = t;
            for (int c = 0; c < ncols; c++) {
                t = cols[c][j];
                cols[c][j] = cols[c][j - 1];
                cols[c][j - 1] = t;
            }
        }
}

/* Merges dim i into dim i+1 where every stride column allows it (row-major order is kept). */
static int coalesce(int n, int64_t *shape, int ncols, int64_t **cols) {
    if (n == 0) return 0;
    int m = 0;
    for (int i = 1; i < n; i++) {
        bool can = true;
        for (int c = 0; c < ncols; c++)
            if (cols[c][m] != shape[i] * cols[c][i]) can = false;
        if (can) {
            shape[m] *= shape[i];
            for (int c = 0; c < ncols; c++) cols[c][m] = cols[c][i];
        } else {
            m++;
            shape[m] = shape[i];
            for (int c = 0; c < ncols; c++) cols[c][m] = cols[c][i];
        }
    }
    return m + 1;
}

static void plan_reduction(rplan *pl, const ampc_kernel_args *a, bool ordered) {
    const ampc_tensor *in = a->in[0], *o0 = a->out[0], *o1 = a->n_out > 1 ? a->out[1] : NULL;
    int64_t isz = (int64_t)ampc_dtype_itemsize(in->dtype), osz0 = (int64_t)ampc_dtype_itemsize(o0->dtype);
    int64_t osz1 = o1 ? (int64_t)ampc_dtype_itemsize(o1->dtype) : 0;
    memset(pl, 0, sizeof *pl);
    pl->in = (char *)ampc_data_ptr(in);
    pl->out0 = (char *)ampc_data_ptr(o0);
    pl->out1 = o1 ? (char *)ampc_data_ptr(o1) : NULL;
    pl->in_item = isz;
    for (int d = 0; d < in->ndim; d++) {
        if (in->shape[d] == 1) continue;
        if (o0->shape[d] == 1) {
            pl->rshape[pl->nr] = in->shape[d];
            pl->rin[pl->nr++] = in->strides[d] * isz;
        } else {
            pl->kshape[pl->nk] = in->shape[d];
            pl->kin[pl->nk] = in->strides[d] * isz;
            pl->ko0[pl->nk] = o0->strides[d] * osz0;
            pl->ko1[pl->nk++] = o1 ? o1->strides[d] * osz1 : 0;
        }
    }
    int64_t *kcols[3] = {pl->kin, pl->ko0, pl->ko1}, *rcols[1] = {pl->rin};
    sort_dims(pl->nk, pl->kshape, 3, kcols); /* outputs are independent: visit them in memory order */
    if (!ordered) sort_dims(pl->nr, pl->rshape, 1, rcols);
    pl->nk = coalesce(pl->nk, pl->kshape, 3, kcols);
    pl->nr = coalesce(pl->nr, pl->rshape, 1, rcols);
    if (pl->nk == 0) pl->kshape[pl->nk++] = 1;
    if (pl->nr == 0) pl->rshape[pl->nr++] = 1;
    pl->n_out = pl->n_red = 1;
    for (int i = 0; i < pl->nk; i++) pl->n_out *= pl->kshape[i];
    for (int i = 0; i < pl->nr; i++) pl->n_red *= pl->rshape[i];
}

static int threads_for(int64_t work) {
#ifdef _OPENMP
    int64_t nt = work / PARALLEL_GRAIN;
    int max = omp_get_max_threads();
    return nt < 1 ? 1 : nt > max ? max : (int)nt;
#else
    (void)work;
    return 1;
#endif
}

/* Walks n-d positions in row-major order, keeping byte offsets into up to three arrays. */
typedef struct ndcounter {
    int64_t idx[AMPC_MAX_DIMS];
    int64_t off[3];
} ndcounter;

static void ndcounter_init(ndcounter *c, int nd, const int64_t *shape, int64_t *const *strides, int64_t pos) {
    c->off[0] = c->off[1] = c->off[2] = 0;
    for (int d = nd - 1; d >= 0; d--) {
        c->idx[d] = pos % shape[d];
        pos /= shape[d];
        for (int s = 0; s < 3; s++) c->off[s] += c->idx[d] * (strides[s] ? strides[s][d] : 0);
    }
}

static void ndcounter_next(ndcounter *c, int nd, const int64_t *shape, int64_t *const *strides) {
    for (int d = nd - 1; d >= 0; d--) {
        for (int s = 0; s < 3; s++)
            if (strides[s]) c->off[s] += strides[s][d];
        if (++c->idx[d] < shape[d]) return;
        for (int s = 0; s < 3; s++)
            if (strides[s]) c->off[s] -= shape[d] * strides[s][d];
        c->idx[d] = 0;
    }
}

/* ---- along rows ---- */

/* Folds reduced elements [begin, end) (flat, row-major over the reduced dims) at `base` into acc. */
static void reduce_span(const rkernel *k, const rplan *pl, const char *base, int64_t begin, int64_t end,
                        racc *acc) {
    if (begin >= end) return; /* also an empty reduced dim: nothing to divide by */
    int nr = pl->nr;
    int64_t len_row = pl->rshape[nr - 1], s = pl->rin[nr - 1];
    if (nr == 1) { /* one row: no outer reduced dims to walk */
        racc r = {0};
        k->row(k, &r, base + begin * s, end - begin, s, begin);
        combine(k, acc, &r);
        return;
    }
    int64_t row = begin / len_row, col = begin % len_row;
    int64_t *rstrides[3] = {(int64_t *)pl->rin, NULL, NULL};
    ndcounter c;
    ndcounter_init(&c, nr - 1, pl->rshape, rstrides, row);
    while (begin < end) {
        int64_t len = len_row - col < end - begin ? len_row - col : end - begin;
        racc r = {0};
        k->row(k, &r, base + c.off[0] + col * s, len, s, begin);
        combine(k, acc, &r);
        begin += len;
        col = 0;
        ndcounter_next(&c, nr - 1, pl->rshape, rstrides);
    }
}

static void reduce_outputs(const rkernel *k, const rplan *pl, int64_t o_begin, int64_t o_end) {
    int64_t *kstrides[3] = {(int64_t *)pl->kin, (int64_t *)pl->ko0, (int64_t *)pl->ko1};
    ndcounter c;
    ndcounter_init(&c, pl->nk, pl->kshape, kstrides, o_begin);
    for (int64_t o = o_begin; o < o_end; o++) {
        racc acc = {0};
        reduce_span(k, pl, pl->in + c.off[0], 0, pl->n_red, &acc);
        k->store(k, pl->out0 + c.off[1], pl->out1 ? pl->out1 + c.off[2] : NULL, &acc);
        ndcounter_next(&c, pl->nk, pl->kshape, kstrides);
    }
}

static ampc_status run_along_rows(const rkernel *k, const rplan *pl) {
    int nt = threads_for(pl->n_out * pl->n_red);
    if (nt <= 1) {
        reduce_outputs(k, pl, 0, pl->n_out);
        return AMPC_OK;
    }
    if (pl->n_out >= nt) {
        int64_t chunk = (pl->n_out + nt - 1) / nt;
#pragma omp parallel for schedule(static) num_threads(nt)
        for (int t = 0; t < nt; t++) {
            int64_t b = t * chunk, e = b + chunk < pl->n_out ? b + chunk : pl->n_out;
            if (b < e) reduce_outputs(k, pl, b, e);
        }
        return AMPC_OK;
    }
    /* Few outputs, many elements each: split every output's elements over the threads and
     * combine the partial results in thread order. */
    racc *part = (racc *)malloc(sizeof(racc) * (size_t)nt);
    if (!part) return ampc_set_error(AMPC_E_NOMEM, "%s: out of memory", ampc_op_name(k->op));
    int64_t *kstrides[3] = {(int64_t *)pl->kin, (int64_t *)pl->ko0, (int64_t *)pl->ko1};
    int64_t chunk = (pl->n_red + nt - 1) / nt;
    ndcounter c;
    ndcounter_init(&c, pl->nk, pl->kshape, kstrides, 0);
    for (int64_t o = 0; o < pl->n_out; o++) {
#pragma omp parallel for schedule(static) num_threads(nt)
        for (int t = 0; t < nt; t++) {
            int64_t b = t * chunk, e = b + chunk < pl->n_red ? b + chunk : pl->n_red;
            racc r = {0};
            reduce_span(k, pl, pl->in + c.off[0], b, e, &r);
            part[t] = r;
        }
        racc acc = {0};
        for (int t = 0; t < nt; t++) combine(k, &acc, &part[t]);
        k->store(k, pl->out0 + c.off[1], pl->out1 ? pl->out1 + c.off[2] : NULL, &acc);
        ndcounter_next(&c, pl->nk, pl->kshape, kstrides);
    }
    free(part);
    return AMPC_OK;
}

/* ---- across rows ---- */

/* Folds reduced rows [r_begin, r_end) of n columns at `base` into buf. */
static void fold_columns(const rkernel *k, const rplan *pl, const char *base, int64_t r_begin, int64_t r_end,
                         colbuf *buf, int64_t n) {
    k->col_init(k, buf, n, r_begin);
    if (r_begin >= r_end) return;
    int64_t *rstrides[3] = {(int64_t *)pl->rin, NULL, NULL};
    ndcounter c;
    ndcounter_init(&c, pl->nr, pl->rshape, rstrides, r_begin);
    for (int64_t r = r_begin; r < r_end; r++) {
        k->col_step(k, buf, base + c.off[0], n, r, r - r_begin + 1);
        ndcounter_next(&c, pl->nr, pl->rshape, rstrides);
    }
}

static racc column_acc(const colbuf *b, int64_t j, int64_t cnt) {
    racc a = {b->v[j], b->w[j], b->i[j], b->idx[j], cnt};
    return a;
}

/* Task t: one chunk of columns of one outer output position. */
static void column_task(const rplan *pl, int64_t t, int64_t n_chunks, const char **in, char **out0, char **out1,
                        int64_t *n) {
    int64_t cols = pl->kshape[pl->nk - 1], c0 = (t % n_chunks) * COL_CHUNK;
    int64_t *kstrides[3] = {(int64_t *)pl->kin, (int64_t *)pl->ko0, (int64_t *)pl->ko1};
    ndcounter c;
    ndcounter_init(&c, pl->nk, pl->kshape, kstrides, (t / n_chunks) * cols + c0);
    *in = pl->in + c.off[0];
    *out0 = pl->out0 + c.off[1];
    *out1 = pl->out1 ? pl->out1 + c.off[2] : NULL;
    *n = cols - c0 < COL_CHUNK ? cols - c0 : COL_CHUNK;
}

static void store_columns(const rkernel *k, const rplan *pl, char *out0, char *out1, int64_t n, const colbuf *b) {
    int64_t s0 = pl->ko0[pl->nk - 1], s1 = pl->ko1[pl->nk - 1];
    for (int64_t j = 0; j < n; j++) {
        racc a = column_acc(b, j, pl->n_red);
        k->store(k, out0 + j * s0, out1 ? out1 + j * s1 : NULL, &a);
    }
}

static ampc_status run_across_rows(const rkernel *k, const rplan *pl) {
    int64_t cols = pl->kshape[pl->nk - 1], n_chunks = (cols + COL_CHUNK - 1) / COL_CHUNK;
    int64_t tasks = (pl->n_out / cols) * n_chunks;
    int nt = threads_for(pl->n_out * pl->n_red);
    if (nt <= 1 || tasks >= nt) {
        colbuf *bufs = (colbuf *)malloc(sizeof(colbuf) * (size_t)nt);
        if (!bufs) return ampc_set_error(AMPC_E_NOMEM, "%s: out of memory", ampc_op_name(k->op));
#pragma omp parallel for schedule(static) num_threads(nt)
        for (int64_t t = 0; t < tasks; t++) {
            colbuf *buf = &bufs[omp_thread()];
            const char *in;
            char *out0, *out1;
            int64_t n;
            column_task(pl, t, n_chunks, &in, &out0, &out1, &n);
            fold_columns(k, pl, in, 0, pl->n_red, buf, n);
            store_columns(k, pl, out0, out1, n, buf);
        }
        free(bufs);
        return AMPC_OK;
    }
    /* Few column chunks, many rows (x.sum(0) of a tall matrix): split the rows over the
     * threads, each into its own buffer, and combine the buffers in thread order. */
    colbuf *bufs = (colbuf *)malloc(sizeof(colbuf) * (size_t)nt);
    if (!bufs) return ampc_set_error(AMPC_E_NOMEM, "%s: out of memory", ampc_op_name(k->op));
    int64_t chunk = (pl->n_red + nt - 1) / nt;
    for (int64_t t = 0; t < tasks; t++) {
        const char *in;
        char *out0, *out1;
        int64_t n;
        column_task(pl, t, n_chunks, &in, &out0, &out1, &n);
#pragma omp parallel for schedule(static) num_threads(nt)
        for (int th = 0; th < nt; th++) {
            int64_t b = th * chunk < pl->n_red ? th * chunk : pl->n_red;
            int64_t e = b + chunk < pl->n_red ? b + chunk : pl->n_red;
            fold_columns(k, pl, in, b, e, &bufs[th], n);
        }
        int64_t s0 = pl->ko0[pl->nk - 1], s1 = pl->ko1[pl->nk - 1];
        for (int64_t j = 0; j < n; j++) {
            racc acc = {0};
            for (int th = 0; th < nt; th++) {
                int64_t b = th * chunk < pl->n_red ? th * chunk : pl->n_red;
                int64_t e = b + chunk < pl->n_red ? b + chunk : pl->n_red;
                racc part = column_acc(&bufs[th], j, e - b);
                combine(k, &acc, &part);
            }
            k->store(k, out0 + j * s0, out1 ? out1 + j * s1 : NULL, &acc);
        }
    }
    free(bufs);
    return AMPC_OK;
}

static ampc_status cpu_reduce(ampc_op op, const ampc_kernel_args *a) {
    rkernel k;
    AMPC_TRY(make_kernel(op, a, &k));
    rplan pl;
    plan_reduction(&pl, a, k.ordered);
    if (pl.n_out == 0) return AMPC_OK;
    /* Across rows when the innermost input dim is kept and contiguous and a reduced dim lies
     * outside it: each input row then feeds a row of accumulators. */
    int64_t inner = pl.kshape[pl.nk - 1];
    if (k.col_step && pl.kin[pl.nk - 1] == pl.in_item && inner >= MIN_VERTICAL_COLS && pl.n_red > 1 &&
        pl.rin[pl.nr - 1] != pl.in_item)
        return run_across_rows(&k, &pl);
    return run_along_rows(&k, &pl);
}

/* ---- cumsum ---- */

/* out = running sums of `in` along a dim of length n, for columns [c0, c0 + w) of the `cols`
 * interleaved columns (the dims inside it). in and out are contiguous, of one dtype; floats
 * accumulate in double, integers in uint64 (wrapping, defined). */
#define SCAN_DTYPES(X)                                                                         \
    X(f32, float, double) X(f16, ampc_half, double) X(bf16, ampc_bfloat16, double)             \
    X(f64, double, double) X(i64, int64_t, uint64_t) X(i32, int32_t, uint64_t)                 \
    X(u8, uint8_t, uint64_t) X(b8, bool, uint64_t)

#define DEFINE_SCAN(SUF, CT, ACC)                                                              \
    static void scan_##SUF(char *out, const char *in, int64_t n, int64_t cols, int64_t c0, int64_t w) { \
        const CT *restrict x = (const CT *)in + c0;                                            \
        CT *restrict o = (CT *)out + c0;                                                       \
        if (cols == 1) { /* the scanned dim is innermost: one running sum */                   \
            ACC acc = 0;                                                                       \
            for (int64_t i = 0; i < n; i++) {                                                  \
                acc += (ACC)AMPC_LOAD_##SUF(x + i);                                            \
                AMPC_STORE_##SUF(o + i, acc);                                                  \
            }                                                                                  \
            return;                                                                            \
        }                                                                                      \
        ACC acc[COL_CHUNK];                                                                    \
        for (int64_t j = 0; j < w; j++) acc[j] = 0;                                            \
        for (int64_t i = 0; i < n; i++, x += cols, o += cols)                                  \
            for (int64_t j = 0; j < w; j++) {                                                  \
                acc[j] += (ACC)AMPC_LOAD_##SUF(x + j);                                         \
                AMPC_STORE_##SUF(o + j, acc[j]);                                               \
            }                                                                                  \
    }
SCAN_DTYPES(DEFINE_SCAN)

typedef void (*scan_fn)(char *out, const char *in, int64_t n, int64_t cols, int64_t c0, int64_t w);
static const scan_fn scan_loops[AMPC_NUM_DTYPES] = {
    [AMPC_FLOAT32] = scan_f32, [AMPC_FLOAT16] = scan_f16, [AMPC_BFLOAT16] = scan_bf16, [AMPC_FLOAT64] = scan_f64,
    [AMPC_INT64] = scan_i64,   [AMPC_INT32] = scan_i32,   [AMPC_UINT8] = scan_u8,      [AMPC_BOOL] = scan_b8};

static ampc_status cpu_cumsum(ampc_op op, const ampc_kernel_args *a) {
    ampc_tensor *out = a->out[0];
    const ampc_tensor *in = a->in[0];
    int d = (int)a->ints[0];
    int64_t outer = 1, n = 1, cols = 1; /* (outer, n, cols): the scanned dim in the middle */
    for (int i = 0; i < in->ndim; i++) {
        if (i < d)
            outer *= in->shape[i];
        else if (i == d)
            n = in->shape[i];
        else
            cols *= in->shape[i];
    }
    int64_t plane = n * cols * (int64_t)ampc_dtype_itemsize(in->dtype);
    int64_t n_chunks = (cols + COL_CHUNK - 1) / COL_CHUNK, tasks = outer * n_chunks;
    const char *x = (const char *)ampc_data_ptr(in);
    char *o = (char *)ampc_data_ptr(out);
    scan_fn fn = scan_loops[in->dtype];
    int nt = threads_for(outer * n * cols);
    if (tasks < nt) nt = (int)tasks;
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t t = 0; t < tasks; t++) {
        int64_t b = t / n_chunks, c0 = (t % n_chunks) * COL_CHUNK;
        fn(o + b * plane, x + b * plane, n, cols, c0, cols - c0 < COL_CHUNK ? cols - c0 : COL_CHUNK);
    }
    return AMPC_OK;
}

void ampc_cpu_register_reduce(void) {
    static const ampc_op ops[] = {AMPC_OP_SUM,    AMPC_OP_MEAN,    AMPC_OP_PROD,   AMPC_OP_AMAX,
                                  AMPC_OP_AMIN,   AMPC_OP_MAX_DIM, AMPC_OP_MIN_DIM, AMPC_OP_ARGMAX,
                                  AMPC_OP_ARGMIN, AMPC_OP_VAR,     AMPC_OP_STD,    AMPC_OP_NORM,
                                  AMPC_OP_LOGSUMEXP, AMPC_OP_ANY,  AMPC_OP_ALL};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) ampc_register_kernel(AMPC_CPU, ops[i], cpu_reduce);
    ampc_register_kernel(AMPC_CPU, AMPC_OP_CUMSUM, cpu_cumsum);
}
