/* cpu_reduce.c: the CPU REDUCE kernels (sum, mean, prod, amax/amin, max/min with indices,
 * argmax/argmin, var/std, norm, logsumexp, any/all): what each op does with an accumulator.
 *
 * An op becomes an rkernel (cpu_reduce.h): the typed loops of its input dtype
 * (cpu_reduce_folds.h), how a row of elements becomes an accumulator, how two partial results
 * merge and how the final one is stored; cpu_reduce_loops.c runs it over the tensor. Floating
 * inputs accumulate in double, integers in int64 (wrapping like PyTorch); the result is rounded
 * once to the output dtype. Ops come in four families: plain folds, extremes with their index,
 * moments (var/std) and logsumexp. */
#include <math.h>
#include <string.h>

#include "cpu_backend.h"
#include "cpu_dtype_loops.h"
#include "cpu_reduce.h"

/* What each family of ops does at each step, for double and for int64 accumulators. */
typedef struct rfamily {
    row_fn row_d, row_i;
    merge_fn merge_d, merge_i;
    store_fn store;
    col_init_fn col_init;
    col_step_fn col_d, col_i; /* NULL: no across-rows loop */
    col_finish_fn col_finish; /* NULL: nothing to do */
} rfamily;

/* Rounds an accumulator once into an output element of dtype dt. The families send floating
 * accumulators to floating and bool outputs, integer ones to integer and bool outputs; an
 * integer into a floating output goes through double. */
#define WRITE_CASE(V, ENUM, SUF, CT, VT) \
    case ENUM: AMPC_STORE_##SUF(o, V); break;
static void write_d(char *o, ampc_dtype dt, double v) {
    switch (dt) {
        AMPC_FOR_EACH_DTYPE_ARG(WRITE_CASE, v)
    default: break;
    }
}

static void write_i(char *o, ampc_dtype dt, int64_t v) {
    if (ampc_dtype_is_floating(dt)) {
        write_d(o, dt, (double)v);
        return;
    }
    switch (dt) {
        AMPC_FOR_EACH_DTYPE_ARG(WRITE_CASE, v)
    default: break;
    }
}
#undef WRITE_CASE

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

static void col_fold_d(const rkernel *k, colbuf *b, const char *p, int64_t n, int64_t rows, int64_t rs, int64_t r,
                       int64_t before) {
    k->cd(b->v, p, n, rows, rs, k->param);
}

static void col_fold_i(const rkernel *k, colbuf *b, const char *p, int64_t n, int64_t rows, int64_t rs, int64_t r,
                       int64_t before) {
    k->ci(b->i, p, n, rows, rs, k->param);
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

static void col_arg_d(const rkernel *k, colbuf *b, const char *p, int64_t n, int64_t rows, int64_t rs, int64_t r,
                      int64_t before) {
    k->col_arg_d(b->v, b->idx, p, n, rows, rs, r);
}

static void col_arg_i(const rkernel *k, colbuf *b, const char *p, int64_t n, int64_t rows, int64_t rs, int64_t r,
                      int64_t before) {
    k->col_arg_i(b->i, b->idx, p, n, rows, rs, r);
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
    for (int64_t j = 0; j < n; j++) b->v[j] = b->w[j] = b->shift[j] = 0.0;
}

static void col_moments(const rkernel *k, colbuf *b, const char *p, int64_t n, int64_t rows, int64_t rs, int64_t r,
                        int64_t before) {
    k->col_welford(b->v, b->w, b->shift, p, n, rows, rs, before);
}

static void col_finish_moments(colbuf *b, int64_t n) {
    for (int64_t j = 0; j < n; j++) b->v[j] += b->shift[j];
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
                                    col_init_fold, col_fold_d, col_fold_i, NULL};
static const rfamily family_arg = {row_arg_d, row_arg_i, merge_arg_d, merge_arg_i, store_arg,
                                   col_init_arg, col_arg_d, col_arg_i, NULL};
static const rfamily family_moments = {row_moments, NULL, merge_moments, NULL, store_moments,
                                       col_init_moments, col_moments, NULL, col_finish_moments};
static const rfamily family_lse = {row_lse, NULL, merge_lse, NULL, store_lse, NULL, NULL, NULL, NULL};

static ampc_status make_kernel(ampc_op op, const ampc_reduce_args *a, rkernel *k) {
    memset(k, 0, sizeof *k);
    ampc_dtype in = a->input->dtype;
    k->op = op;
    k->out_dtype = a->values->dtype;
    k->param = op == AMPC_OP_NORM ? a->p : (op == AMPC_OP_VAR || op == AMPC_OP_STD) ? a->correction : 0.0;
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
    case AMPC_OP_NORM: k->fold = ampc_norm_fold(k->param); break;
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
        k->fd2 = ampc_fold_d_loops[FOLD_sqdev][in];
        f = &family_moments;
        break;
    case AMPC_OP_LOGSUMEXP:
        k->fold = FOLD_max;
        k->fd2 = ampc_fold_d_loops[FOLD_expsum][in];
        f = &family_lse;
        break;
    default: return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "%s: not a CPU reduction", ampc_op_name(op));
    }
    int arg_row = k->fold == FOLD_max ? 0 : 1;
    k->fd = ampc_fold_d_loops[k->fold][in];
    k->fi = ampc_fold_i_loops[k->fold][in];
    k->cd = ampc_col_d_loops[k->fold][in];
    k->ci = ampc_col_i_loops[k->fold][in];
    k->find_d = ampc_find_d_loops[in];
    k->find_i = ampc_find_i_loops[in];
    k->col_arg_d = ampc_col_arg_d_loops[arg_row][in];
    k->col_arg_i = ampc_col_arg_i_loops[arg_row][in];
    k->col_welford = ampc_col_welford_loops[in];
    k->row = k->int_acc ? f->row_i : f->row_d;
    k->merge = k->int_acc ? f->merge_i : f->merge_d;
    k->store = f->store;
    k->col_init = f->col_init;
    k->col_step = k->int_acc ? f->col_i : f->col_d;
    k->col_finish = f->col_finish;
    /* The frontends only send combinations that have loops; refuse the rest rather than crash. */
    bool two_pass = f == &family_moments || f == &family_lse;
    bool have = k->row && (k->int_acc ? k->fi != NULL : k->fd != NULL) && (!two_pass || k->fd2 != NULL);
    if (!have)
        return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "\"%s_cpu\" not implemented for '%s'", ampc_op_name(op),
                              ampc_dtype_name(in));
    return AMPC_OK;
}

static ampc_status cpu_reduce(ampc_op op, const ampc_reduce_args *a) {
    rkernel k;
    AMPC_TRY(make_kernel(op, a, &k));
    return ampc_cpu_reduce_run(&k, a);
}

/* Every ops.def row of schema `reduce`. */
void ampc_cpu_register_reduce(void) {
    ampc_register_reduce(AMPC_CPU, cpu_reduce);
    ampc_cpu_register_scan();
}
