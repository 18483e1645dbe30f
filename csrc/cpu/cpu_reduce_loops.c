/* cpu_reduce_loops.c: runs a reduction kernel (cpu_reduce.h) over an input of any layout.
 *
 * The frontend (core/reduce.c) passes the outputs viewed with keepdim shape, so a dim is reduced
 * exactly where the output has size 1 and the input does not. The plan (core/reduce_plan.h, the
 * CUDA kernels run the same) splits the dims into kept and reduced ones, drops size-1 dims and
 * merges neighbours contiguous with each other; plan_reduction() turns its strides into bytes.
 * Then one of two loops runs:
 *   - along rows: every output element folds its own elements, one row (run of the innermost
 *     reduced dim) at a time;
 *   - across rows: when the innermost input dim is kept and contiguous (x.sum(0), a bias
 *     gradient), whole input rows are folded into a buffer of accumulators, which vectorizes and
 *     reads memory once, in order.
 * OpenMP splits large work over output elements when there are enough of them, else over the
 * reduced elements of each output, and combines the per-thread partial results in order (so
 * argmax keeps the first occurrence). */
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
static int omp_thread(void) { return omp_get_thread_num(); }
#else
static int omp_thread(void) { return 0; }
#endif

#include "cpu_reduce.h"

/* Below this many input elements a parallel region costs more than it saves. */
#define PARALLEL_GRAIN 32768
/* The across-rows loop pays off only for rows at least this long. */
#define MIN_VERTICAL_COLS 4
/* Parts of a parallel loop per thread (see parts_for). */
#define PARTS_PER_THREAD 4

/* ---- the plan: kept and reduced dims, coalesced ---- */

typedef struct rplan {
    char *in, *out0, *out1;
    int nk, nr; /* >= 1 each (a size-1 dim stands in for none) */
    int64_t kshape[AMPC_MAX_DIMS], kin[AMPC_MAX_DIMS], ko0[AMPC_MAX_DIMS], ko1[AMPC_MAX_DIMS]; /* byte strides */
    int64_t rshape[AMPC_MAX_DIMS], rin[AMPC_MAX_DIMS];
    int64_t n_out, n_red, in_item;
} rplan;

/* The shared plan (core/reduce_plan.h), its strides turned into bytes. */
static void plan_reduction(rplan *pl, const ampc_reduce_args *a, bool ordered) {
    const ampc_tensor *in = a->input, *o0 = a->values, *o1 = a->indices;
    int64_t isz = (int64_t)ampc_dtype_itemsize(in->dtype), osz0 = (int64_t)ampc_dtype_itemsize(o0->dtype);
    int64_t osz1 = o1 ? (int64_t)ampc_dtype_itemsize(o1->dtype) : 0;
    ampc_reduce_plan rp;
    ampc_reduce_plan_make(&rp, in, o0, o1, ordered);
    memset(pl, 0, sizeof *pl);
    pl->in = (char *)ampc_data_ptr(in);
    pl->out0 = (char *)ampc_data_ptr(o0);
    pl->out1 = o1 ? (char *)ampc_data_ptr(o1) : NULL;
    pl->in_item = isz;
    pl->nk = rp.nk;
    pl->nr = rp.nr;
    pl->n_out = rp.n_out;
    pl->n_red = rp.n_red;
    for (int i = 0; i < rp.nk; i++) {
        pl->kshape[i] = rp.kshape[i];
        pl->kin[i] = rp.kin[i] * isz;
        pl->ko0[i] = rp.ko0[i] * osz0;
        pl->ko1[i] = rp.ko1[i] * osz1;
    }
    for (int i = 0; i < rp.nr; i++) {
        pl->rshape[i] = rp.rshape[i];
        pl->rin[i] = rp.rin[i] * isz;
    }
}

int ampc_cpu_reduce_threads(int64_t work) {
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
        reduce_combine(k, acc, &r);
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
        reduce_combine(k, acc, &r);
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
        if (pl->nr == 1 && pl->n_red > 0) /* the common case, kept short: one row per output */
            k->row(k, &acc, pl->in + c.off[0], pl->n_red, pl->rin[0], 0);
        else
            reduce_span(k, pl, pl->in + c.off[0], 0, pl->n_red, &acc);
        k->store(k, pl->out0 + c.off[1], pl->out1 ? pl->out1 + c.off[2] : NULL, &acc);
        ndcounter_next(&c, pl->nk, pl->kshape, kstrides);
    }
}

/* Work is cut into a few parts per thread and handed out dynamically, so a thread slowed down
 * by another process on its core does not hold the others up. Part p of n items: [*b, *e). */
static int parts_for(int nt, int64_t items) {
    int64_t parts = (int64_t)nt * PARTS_PER_THREAD;
    return (int)(parts < items ? parts : items > 0 ? items : 1);
}

static void part_range(int64_t items, int parts, int p, int64_t *b, int64_t *e) {
    *b = items * p / parts;
    *e = items * (p + 1) / parts;
}

static ampc_status run_along_rows(const rkernel *k, const rplan *pl) {
    int nt = ampc_cpu_reduce_threads(pl->n_out * pl->n_red);
    if (nt <= 1) {
        reduce_outputs(k, pl, 0, pl->n_out);
        return AMPC_OK;
    }
    if (pl->n_out >= nt) {
        int parts = parts_for(nt, pl->n_out);
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
        for (int p = 0; p < parts; p++) {
            int64_t b, e;
            part_range(pl->n_out, parts, p, &b, &e);
            reduce_outputs(k, pl, b, e);
        }
        return AMPC_OK;
    }
    /* Few outputs, many elements each: split every output's elements into parts and combine
     * the partial results in order. */
    int parts = parts_for(nt, pl->n_red);
    racc *part = (racc *)malloc(sizeof(racc) * (size_t)parts);
    if (!part) return ampc_set_error(AMPC_E_NOMEM, "%s: out of memory", ampc_op_name(k->op));
    int64_t *kstrides[3] = {(int64_t *)pl->kin, (int64_t *)pl->ko0, (int64_t *)pl->ko1};
    ndcounter c;
    ndcounter_init(&c, pl->nk, pl->kshape, kstrides, 0);
    for (int64_t o = 0; o < pl->n_out; o++) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
        for (int p = 0; p < parts; p++) {
            int64_t b, e;
            part_range(pl->n_red, parts, p, &b, &e);
            racc r = {0};
            reduce_span(k, pl, pl->in + c.off[0], b, e, &r);
            part[p] = r;
        }
        racc acc = {0};
        for (int p = 0; p < parts; p++) reduce_combine(k, &acc, &part[p]);
        k->store(k, pl->out0 + c.off[1], pl->out1 ? pl->out1 + c.off[2] : NULL, &acc);
        ndcounter_next(&c, pl->nk, pl->kshape, kstrides);
    }
    free(part);
    return AMPC_OK;
}

/* ---- across rows ---- */

/* Folds reduced rows [r_begin, r_end) of n columns at `base` into buf, one run of the innermost
 * reduced dim per call of the typed loop. */
static void fold_columns(const rkernel *k, const rplan *pl, const char *base, int64_t r_begin, int64_t r_end,
                         colbuf *buf, int64_t n) {
    k->col_init(k, buf, n, r_begin);
    int nr = pl->nr;
    int64_t len = pl->rshape[nr - 1], s = pl->rin[nr - 1];
    if (r_begin < r_end) {
        int64_t *rstrides[3] = {(int64_t *)pl->rin, NULL, NULL};
        ndcounter c;
        ndcounter_init(&c, nr - 1, pl->rshape, rstrides, r_begin / len);
        for (int64_t r = r_begin, col = r_begin % len; r < r_end; col = 0) {
            int64_t rows = len - col < r_end - r ? len - col : r_end - r;
            k->col_step(k, buf, base + c.off[0] + col * s, n, rows, s, r, r - r_begin);
            r += rows;
            ndcounter_next(&c, nr - 1, pl->rshape, rstrides);
        }
    }
    if (k->col_finish) k->col_finish(buf, n);
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
    int nt = ampc_cpu_reduce_threads(pl->n_out * pl->n_red);
    if (nt <= 1 || tasks >= nt) {
        colbuf *bufs = (colbuf *)malloc(sizeof(colbuf) * (size_t)nt); /* one per thread */
        if (!bufs) return ampc_set_error(AMPC_E_NOMEM, "%s: out of memory", ampc_op_name(k->op));
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
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
    /* Few column chunks, many rows (x.sum(0) of a tall matrix): split the rows into parts, each
     * folded into its own buffer, and combine the buffers in order. */
    int parts = parts_for(nt, pl->n_red);
    colbuf *bufs = (colbuf *)malloc(sizeof(colbuf) * (size_t)parts);
    if (!bufs) return ampc_set_error(AMPC_E_NOMEM, "%s: out of memory", ampc_op_name(k->op));
    int64_t s0 = pl->ko0[pl->nk - 1], s1 = pl->ko1[pl->nk - 1];
    for (int64_t t = 0; t < tasks; t++) {
        const char *in;
        char *out0, *out1;
        int64_t n;
        column_task(pl, t, n_chunks, &in, &out0, &out1, &n);
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
        for (int p = 0; p < parts; p++) {
            int64_t b, e;
            part_range(pl->n_red, parts, p, &b, &e);
            fold_columns(k, pl, in, b, e, &bufs[p], n);
        }
        for (int64_t j = 0; j < n; j++) {
            racc acc = {0};
            for (int p = 0; p < parts; p++) {
                int64_t b, e;
                part_range(pl->n_red, parts, p, &b, &e);
                racc part = column_acc(&bufs[p], j, e - b);
                reduce_combine(k, &acc, &part);
            }
            k->store(k, out0 + j * s0, out1 ? out1 + j * s1 : NULL, &acc);
        }
    }
    free(bufs);
    return AMPC_OK;
}

ampc_status ampc_cpu_reduce_run(const rkernel *k, const ampc_reduce_args *a) {
    rplan pl;
    plan_reduction(&pl, a, k->ordered);
    if (pl.n_out == 0) return AMPC_OK;
    /* Across rows when the innermost input dim is kept and contiguous and a reduced dim lies
     * outside it: each input row then feeds a row of accumulators. */
    int64_t inner = pl.kshape[pl.nk - 1];
    if (k->col_step && pl.kin[pl.nk - 1] == pl.in_item && inner >= MIN_VERTICAL_COLS && pl.n_red > 1 &&
        pl.rin[pl.nr - 1] != pl.in_item)
        return run_across_rows(k, &pl);
    return run_along_rows(k, &pl);
}
