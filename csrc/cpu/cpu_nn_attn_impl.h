/* cpu_nn_attn_impl.h: the forward and backward of cpu_nn_attn.c for one accumulation type,
 * included once with T = float (float32, float16, bfloat16 storage) and once with T = double
 * (float64). The includer defines T, SUF, GEMM(n, m, k, a, lda, b, ldb, c, ldc) (C += A B),
 * EXP_SUB(x, n, sub) (x = exp(x - sub), returns the sum) and ROW_MAX(x, n) (over the non-NaN values). */

#define ATTN_CAT_(a, b) a##_##b
#define ATTN_CAT(a, b) ATTN_CAT_(a, b)
#define FN(name) ATTN_CAT(name, SUF)
#define LOAD FN(load)
#define STORE FN(store)

DEFINE_DROPOUT_ROW(FN(dropout_row), T)

/* A (rows x cols) row-major matrix of the input at element `off` as transposed key tiles:
 * dst[(kb * cols + c) * KT_LD + jj] = src[kb * BK + jj, c], zero past `rows`. */
static void FN(pack_tiles)(ampc_dtype dt, const void *src, int64_t off, int64_t rows, int64_t cols, T *dst, T *row) {
    int64_t nkb = (rows + BK - 1) / BK;
    memset(dst, 0, sizeof(T) * (size_t)(nkb * cols * KT_LD));
    for (int64_t j = 0; j < rows; j++) {
        LOAD(dt, src, off + j * cols, cols, row);
        T *d = dst + (j / BK) * cols * KT_LD + j % BK;
        for (int64_t c = 0; c < cols; c++) d[c * KT_LD] = row[c];
    }
}

/* The mask and the causal rule on a (bq, bk) score tile (row stride BK) at (i0, j0). */
static void FN(mask_tile)(const attn_geom *g, int64_t nq, int64_t i0, int64_t bq, int64_t j0, int64_t bk, T *sc) {
    if (g->mask) {
        int64_t base = (nq / g->hq) * g->ms[0] + (nq % g->hq) * g->ms[1] + j0 * g->ms[3], sj = g->ms[3];
        for (int64_t r = 0; r < bq; r++) {
            int64_t off = base + (i0 + r) * g->ms[2];
            T *sr = sc + r * BK;
            if (g->mask_dt == AMPC_BOOL) {
                const uint8_t *mb = (const uint8_t *)g->mask + off;
                for (int64_t jj = 0; jj < bk; jj++)
                    if (!mb[jj * sj]) sr[jj] = (T)-INFINITY;
            } else if (g->mask_dt == AMPC_FLOAT32) {
                const float *mf = (const float *)g->mask + off;
                for (int64_t jj = 0; jj < bk; jj++) sr[jj] += (T)mf[jj * sj];
            } else {
                for (int64_t jj = 0; jj < bk; jj++) sr[jj] += (T)mask_value(g->mask_dt, g->mask, off + jj * sj);
            }
        }
    }
    if (g->causal)
        for (int64_t r = 0; r < bq; r++) {
            int64_t first = i0 + r + 1 - j0; /* columns jj >= first lie above the diagonal */
            for (int64_t jj = first < 0 ? 0 : first; jj < bk; jj++) sc[r * BK + jj] = (T)-INFINITY;
        }
}

/* ---------------------------------------------------------------- forward */

/* One query tile of query head nq: the online softmax over the key tiles. */
static void FN(fwd_tile)(const attn_geom *g, const ampc_sdpa_flash_args *a, const T *kt, const T *vrows, int64_t nq,
                         int64_t qb, T *buf) {
    const int64_t e = g->e, ev = g->ev, s = g->s, i0 = qb * BQ;
    const int64_t bq = g->l - i0 < BQ ? g->l - i0 : BQ, nk = kv_head(g, nq);
    T *qs = buf, *sc = qs + BQ * e, *o = sc + BQ * BK, *m = o + BQ * ev, *lsum = m + BQ, *row = lsum + BQ;
    LOAD(g->dt, ampc_data_ptr(a->q), (nq * g->l + i0) * e, bq * e, qs);
    for (int64_t i = 0; i < bq * e; i++) qs[i] *= (T)g->scale;
    memset(o, 0, sizeof(T) * (size_t)(bq * ev));
    for (int64_t r = 0; r < bq; r++) m[r] = (T)-INFINITY, lsum[r] = 0;
    const T *ktn = kt + nk * g->nkb * e * KT_LD, *vn = vrows + nk * s * ev;
    const int64_t jend = key_end(g, i0, bq);
    for (int64_t j0 = 0; j0 < jend; j0 += BK) {
        const int64_t bk = jend - j0 < BK ? jend - j0 : BK;
        for (int64_t r = 0; r < bq; r++) memset(sc + r * BK, 0, sizeof(T) * (size_t)bk);
        GEMM(bq, bk, e, qs, e, ktn + (j0 / BK) * e * KT_LD, KT_LD, sc, BK);
        FN(mask_tile)(g, nq, i0, bq, j0, bk, sc);
        for (int64_t r = 0; r < bq; r++) {
            T *sr = sc + r * BK, mx = ROW_MAX(sr, bk);
            T mnew = mx > m[r] ? mx : m[r];
            if (mnew == (T)-INFINITY) { /* nothing kept in this row yet */
                memset(sr, 0, sizeof(T) * (size_t)bk);
                continue;
            }
            T alpha = (T)exp((double)(m[r] - mnew)), sum = EXP_SUB(sr, bk, mnew);
            lsum[r] = lsum[r] * alpha + sum;
            m[r] = mnew;
            if (alpha != (T)1)
                for (int64_t c = 0; c < ev; c++) o[r * ev + c] *= alpha;
            if (g->p > 0) FN(dropout_row)(g, nq, i0 + r, j0, bk, sr); /* l sums the undropped P */
        }
        GEMM(bq, ev, bk, sc, BK, vn + j0 * ev, ev, o, ev);
    }
    T *lse = (T *)ampc_data_ptr(a->lse) + nq * g->l + i0;
    for (int64_t r = 0; r < bq; r++) {
        T inv = lsum[r] == 0 ? (T)0 : (T)1 / lsum[r];
        for (int64_t c = 0; c < ev; c++) row[c] = o[r * ev + c] * inv;
        STORE(g->dt, ampc_data_ptr(a->out), (nq * g->l + i0 + r) * ev, ev, row);
        lse[r] = lsum[r] == 0 ? (T)INFINITY : m[r] + (T)log((double)lsum[r]);
    }
}

static ampc_status FN(attn_forward)(ampc_op op, const attn_geom *g, const ampc_sdpa_flash_args *a) {
    const int64_t nkv = g->n * g->hk, e = g->e, ev = g->ev, s = g->s, kt_size = g->nkb * e * KT_LD;
    const bool v_direct = g->dt == (sizeof(T) == sizeof(float) ? AMPC_FLOAT32 : AMPC_FLOAT64);
    T *kt = (T *)malloc(sizeof(T) * (size_t)(nkv * kt_size + 1));
    T *vb = v_direct ? NULL : (T *)malloc(sizeof(T) * (size_t)(nkv * s * ev + 1));
    bool nomem = !kt || (!v_direct && !vb);
    if (!nomem) {
#pragma omp parallel for schedule(static) num_threads(nn_threads(nkv * s * e))
        for (int64_t nk = 0; nk < nkv; nk++) {
            T *row = (T *)malloc(sizeof(T) * (size_t)(e + 1));
            if (!row) {
                nn_set_flag(&nomem);
                continue;
            }
            FN(pack_tiles)(g->dt, ampc_data_ptr(a->k), nk * s * e, s, e, kt + nk * kt_size, row);
            if (!v_direct) LOAD(g->dt, ampc_data_ptr(a->v), nk * s * ev, s * ev, vb + nk * s * ev);
            free(row);
        }
    }
    const T *vrows = v_direct ? (const T *)ampc_data_ptr(a->v) : vb;
    const int64_t nqb = (g->l + BQ - 1) / BQ, tasks = g->n * g->hq * nqb;
    const int64_t scratch = BQ * e + BQ * BK + BQ * ev + 2 * BQ + ev + 1;
    if (!nomem) {
#pragma omp parallel num_threads(nn_threads(tasks * BQ * (s + 1) * (e + ev)))
        {
            T *buf = (T *)malloc(sizeof(T) * (size_t)scratch);
            if (!buf) nn_set_flag(&nomem);
#pragma omp for schedule(dynamic, 1)
            for (int64_t t = 0; t < tasks; t++)
                if (buf) FN(fwd_tile)(g, a, kt, vrows, t / nqb, t % nqb, buf);
            free(buf);
        }
    }
    free(kt), free(vb);
    return nomem ? nn_nomem(op) : AMPC_OK;
}

/* ---------------------------------------------------------------- backward */

typedef struct FN(bwd_bufs) {
    T *kt, *vt, *kr, *qs, *dout, *dq, *p, *dp, *tt, *d, *lse, *row;
} FN(bwd_bufs);

static int64_t FN(bwd_scratch)(const attn_geom *g, FN(bwd_bufs) *b, T *base) {
    const int64_t e = g->e, ev = g->ev, w = e > ev ? e : ev;
    const int64_t sizes[12] = {g->nkb * e * KT_LD, g->nkb * ev * KT_LD, g->s * e, BQ * e, BQ * ev, BQ * e,
                               g->nkb * BQ * BK, g->nkb * BQ * BK, BK * BQ, BQ, BQ, w + BK};
    T **slots[12] = {&b->kt, &b->vt, &b->kr, &b->qs, &b->dout, &b->dq, &b->p, &b->dp, &b->tt, &b->d, &b->lse,
                     &b->row};
    int64_t total = 0;
    for (int i = 0; i < 12; i++) {
        if (base) *slots[i] = base + total;
        total += sizes[i] + 1;
    }
    return total;
}

/* Query head nq: dQ of its rows, and its share of dK, dV (into dk, dv: (S, E), (S, Ev)). */
static void FN(bwd_head)(const attn_geom *g, const ampc_sdpa_flash_backward_args *a, int64_t nq, T *dk, T *dv,
                         FN(bwd_bufs) *b) {
    const int64_t e = g->e, ev = g->ev, s = g->s, l = g->l, nk = kv_head(g, nq);
    FN(pack_tiles)(g->dt, ampc_data_ptr(a->k), nk * s * e, s, e, b->kt, b->row);
    FN(pack_tiles)(g->dt, ampc_data_ptr(a->v), nk * s * ev, s, ev, b->vt, b->row);
    LOAD(g->dt, ampc_data_ptr(a->k), nk * s * e, s * e, b->kr);
    const T *lse_all = (const T *)ampc_data_ptr(a->lse) + nq * l;
    for (int64_t i0 = 0; i0 < l; i0 += BQ) {
        const int64_t bq = l - i0 < BQ ? l - i0 : BQ;
        LOAD(g->dt, ampc_data_ptr(a->q), (nq * l + i0) * e, bq * e, b->qs);
        for (int64_t i = 0; i < bq * e; i++) b->qs[i] *= (T)g->scale;
        LOAD(g->dt, ampc_data_ptr(a->grad_out), (nq * l + i0) * ev, bq * ev, b->dout);
        for (int64_t r = 0; r < bq; r++) b->d[r] = 0, b->lse[r] = lse_all[i0 + r];
        memset(b->dq, 0, sizeof(T) * (size_t)(bq * e));
        const int64_t jend = key_end(g, i0, bq);
        /* pass 1, per key tile: P, dV += P'^T dO, dP' = dO V^T (dropped like P), D += rowsum(P * dP').
         * D = rowsum(P * dP) as the composed softmax backward sums it, not rowsum(dO * O): where the
         * exact gradient cancels to 0 (equal keys, a saturated row) both round alike. The tiles of
         * P and dP of this query tile stay (BQ x S each, O(S) memory) for pass 2. */
        for (int64_t j0 = 0; j0 < jend; j0 += BK) {
            const int64_t bk = jend - j0 < BK ? jend - j0 : BK, kb = j0 / BK;
            T *pt = b->p + kb * BQ * BK, *dpt = b->dp + kb * BQ * BK;
            for (int64_t r = 0; r < bq; r++) memset(pt + r * BK, 0, sizeof(T) * (size_t)bk);
            GEMM(bq, bk, e, b->qs, e, b->kt + kb * e * KT_LD, KT_LD, pt, BK);
            FN(mask_tile)(g, nq, i0, bq, j0, bk, pt);
            for (int64_t r = 0; r < bq; r++) EXP_SUB(pt + r * BK, bk, b->lse[r]); /* P; +inf lse: 0 */
            for (int64_t r = 0; r < bq; r++) {
                const T *pr = pt + r * BK;
                if (g->p > 0) {
                    memcpy(b->row, pr, sizeof(T) * (size_t)bk);
                    FN(dropout_row)(g, nq, i0 + r, j0, bk, b->row);
                    pr = b->row;
                }
                for (int64_t jj = 0; jj < bk; jj++) b->tt[jj * BQ + r] = pr[jj];
            }
            GEMM(bk, ev, bq, b->tt, BQ, b->dout, ev, dv + j0 * ev, ev);
            for (int64_t r = 0; r < bq; r++) memset(dpt + r * BK, 0, sizeof(T) * (size_t)bk);
            GEMM(bq, bk, ev, b->dout, ev, b->vt + kb * ev * KT_LD, KT_LD, dpt, BK);
            for (int64_t r = 0; r < bq; r++) {
                T *dpr = dpt + r * BK, dsum = 0;
                const T *pr = pt + r * BK;
                if (g->p > 0) FN(dropout_row)(g, nq, i0 + r, j0, bk, dpr);
                for (int64_t jj = 0; jj < bk; jj++) dsum += pr[jj] * dpr[jj];
                b->d[r] += dsum;
            }
        }
        /* pass 2: dS = P * (dP' - D);  dQ += dS K;  dK += dS^T (Q * scale) */
        for (int64_t j0 = 0; j0 < jend; j0 += BK) {
            const int64_t bk = jend - j0 < BK ? jend - j0 : BK, kb = j0 / BK;
            T *pt = b->p + kb * BQ * BK, *dpt = b->dp + kb * BQ * BK;
            for (int64_t r = 0; r < bq; r++) {
                T *dpr = dpt + r * BK;
                const T *pr = pt + r * BK, dr = b->d[r];
                for (int64_t jj = 0; jj < bk; jj++) dpr[jj] = pr[jj] * (dpr[jj] - dr);
            }
            GEMM(bq, e, bk, dpt, BK, b->kr + j0 * e, e, b->dq, e);
            for (int64_t r = 0; r < bq; r++)
                for (int64_t jj = 0; jj < bk; jj++) b->tt[jj * BQ + r] = dpt[r * BK + jj];
            GEMM(bk, e, bq, b->tt, BQ, b->qs, e, dk + j0 * e, e);
        }
        for (int64_t i = 0; i < bq * e; i++) b->dq[i] *= (T)g->scale;
        STORE(g->dt, ampc_data_ptr(a->grad_q), (nq * l + i0) * e, bq * e, b->dq);
    }
}

static ampc_status FN(attn_backward)(ampc_op op, const attn_geom *g, const ampc_sdpa_flash_backward_args *a) {
    const int64_t nqh = g->n * g->hq, nkv = g->n * g->hk, s = g->s, e = g->e, ev = g->ev;
    T *dkw = (T *)calloc((size_t)(nqh * s * e + 1), sizeof(T));
    T *dvw = (T *)calloc((size_t)(nqh * s * ev + 1), sizeof(T));
    bool nomem = !dkw || !dvw;
    const int64_t scratch = FN(bwd_scratch)(g, &(FN(bwd_bufs)){0}, NULL);
    if (!nomem) {
#pragma omp parallel num_threads(nn_threads(nqh * (g->l + 1) * (s + 1) * (e + ev)))
        {
            T *buf = (T *)malloc(sizeof(T) * (size_t)scratch);
            FN(bwd_bufs) b;
            if (buf)
                FN(bwd_scratch)(g, &b, buf);
            else
                nn_set_flag(&nomem);
#pragma omp for schedule(dynamic, 1)
            for (int64_t nq = 0; nq < nqh; nq++)
                if (buf) FN(bwd_head)(g, a, nq, dkw + nq * s * e, dvw + nq * s * ev, &b);
            free(buf);
        }
    }
    /* dK, dV of a key/value head: the sum over the query heads of its group */
    if (!nomem) {
#pragma omp parallel for schedule(static) num_threads(nn_threads(nqh * s * (e + ev)))
        for (int64_t nk = 0; nk < nkv; nk++) {
            const int64_t first = (nk / g->hk) * g->hq + (nk % g->hk) * g->group;
            for (int64_t gi = 1; gi < g->group; gi++) {
                const T *sk = dkw + (first + gi) * s * e, *sv = dvw + (first + gi) * s * ev;
                T *tk = dkw + first * s * e, *tv = dvw + first * s * ev;
                for (int64_t i = 0; i < s * e; i++) tk[i] += sk[i];
                for (int64_t i = 0; i < s * ev; i++) tv[i] += sv[i];
            }
            STORE(g->dt, ampc_data_ptr(a->grad_k), nk * s * e, s * e, dkw + first * s * e);
            STORE(g->dt, ampc_data_ptr(a->grad_v), nk * s * ev, s * ev, dvw + first * s * ev);
        }
    }
    free(dkw), free(dvw);
    return nomem ? nn_nomem(op) : AMPC_OK;
}

#undef ATTN_CAT_
#undef ATTN_CAT
#undef FN
#undef LOAD
#undef STORE
