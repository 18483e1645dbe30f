/* cuda_nn_attn.cu: fused scaled_dot_product_attention on CUDA (rows SDPA_FLASH and
 * SDPA_FLASH_BACKWARD of ops.def; the CPU twin is cpu/cpu_nn_attn.c, the frontend core/nn_attn.c).
 *
 * Flash attention with one thread per query row (forward, dQ) or per key row (dK, dV): a block
 * of AT_ROWS rows streams the other side through shared memory in tiles of AT_TILE rows, so
 * memory stays O(L + S) per head and the (L, S) matrix is never stored. Sums run in the opmath
 * type (fp32 for fp16/bf16). The forward keeps the online softmax (running max m and sum l,
 * output rescaled once per tile) and writes lse = m + log(l); the backward recomputes
 * P = exp(s - lse):
 *   dq kernel   D = rowsum(P * dP) (first pass over the keys), then dQ = scale * sum dS K, with
 *               dS = P * (dP - D), dP = dO . v * keep / (1 - p); D goes to a workspace
 *   dkv kernel  per key row over the queries of every head of its group (GQA sums there):
 *               dV = sum P' dO,  dK = sum dS (q * scale)
 * Dropout draws the same Philox word per (head, i, j) as the CPU (philox.h). Head dims up to
 * AT_DMAX (256, as PyTorch's fused kernels): the rows a thread owns live in registers/local memory. */
#include "../core/kernel_args.h"
#include "../core/philox.h"
#include "cuda_nn_rows.cuh"

#define AT_ROWS 64   /* rows (threads) per block */
#define AT_TILE 32   /* rows of the other side per shared-memory tile */
#define AT_DMAX 256  /* largest head dim */
#define AT_SMEM (46 * 1024) /* bytes of the static shared tile buffer (under the 48 KiB a block may have) */

struct at_geom {
    int64_t n, hq, hk, group, l, s, e, ev;
    const void *mask;
    int mask_dt;
    int64_t ms[4];
    int causal, tile; /* tile: rows per shared-memory tile, <= AT_TILE, so a tile fits AT_SMEM */
    double scale, p;
    unsigned long long seed, offset;
};

__device__ __forceinline__ int64_t at_kv_head(const at_geom &g, int64_t nq) {
    return (nq / g.hq) * g.hk + (nq % g.hq) / g.group;
}

/* The additive mask of (nq, i, j) and the causal cut: -inf where masked out. */
template <typename A> __device__ __forceinline__ A at_bias(const at_geom &g, int64_t nq, int64_t i, int64_t j) {
    if (g.causal && j > i) return nn_neg_inf<A>();
    if (!g.mask) return (A)0;
    int64_t off = (nq / g.hq) * g.ms[0] + (nq % g.hq) * g.ms[1] + i * g.ms[2] + j * g.ms[3];
    if (g.mask_dt == AMPC_BOOL) return ((const bool *)g.mask)[off] ? (A)0 : nn_neg_inf<A>();
    return ampc_load_dyn<A>(g.mask, g.mask_dt, off);
}

/* keep / (1 - p) or 0 for probability (nq, i, j). */
template <typename A> __device__ __forceinline__ A at_drop(const at_geom &g, int64_t nq, int64_t i, int64_t j) {
    if (g.p <= 0) return (A)1;
    uint64_t w = g.offset + (uint64_t)((nq * g.l + i) * g.s + j);
    return ampc_philox_u32(ampc_philox_word(g.seed, w)) < 1.0 - g.p ? (A)(1.0 / (1.0 - g.p)) : (A)0;
}

/* ---------------------------------------------------------------- forward */

template <typename T>
__global__ void at_forward_kernel(at_geom g, const T *q, const T *k, const T *v, T *out, ampc_opmath_t<T> *lse) {
    typedef ampc_opmath_t<T> A;
    __shared__ A at_smem[AT_SMEM / sizeof(A)];
    A *ks = at_smem, *vs = ks + g.tile * g.e;
    const int64_t nq = blockIdx.y, nk = at_kv_head(g, nq), i = (int64_t)blockIdx.x * AT_ROWS + threadIdx.x;
    const bool row_ok = i < g.l;
    A qr[AT_DMAX], o[AT_DMAX], m = nn_neg_inf<A>(), lsum = 0;
    for (int64_t c = 0; c < g.e; c++) qr[c] = row_ok ? ampc_load(q, (nq * g.l + i) * g.e + c) * (A)g.scale : (A)0;
    for (int64_t c = 0; c < g.ev; c++) o[c] = 0;
    int64_t last = (int64_t)blockIdx.x * AT_ROWS + AT_ROWS - 1; /* keys the block needs */
    int64_t jend = g.causal ? (last + 1 < g.s ? last + 1 : g.s) : g.s;
    for (int64_t j0 = 0; j0 < jend; j0 += g.tile) {
        int64_t bk = jend - j0 < g.tile ? jend - j0 : g.tile;
        __syncthreads();
        for (int64_t t = threadIdx.x; t < bk * g.e; t += blockDim.x) ks[t] = ampc_load(k, (nk * g.s + j0) * g.e + t);
        for (int64_t t = threadIdx.x; t < bk * g.ev; t += blockDim.x) vs[t] = ampc_load(v, (nk * g.s + j0) * g.ev + t);
        __syncthreads();
        if (!row_ok) continue;
        A sc[AT_TILE], mx = nn_neg_inf<A>();
        for (int jj = 0; jj < bk; jj++) {
            A s = 0;
            for (int64_t c = 0; c < g.e; c++) s += qr[c] * ks[jj * g.e + c];
            s += at_bias<A>(g, nq, i, j0 + jj);
            sc[jj] = s;
            if (s > mx) mx = s; /* NaN scores do not count (an all-NaN row is empty), as on the CPU */
        }
        A mnew = mx > m ? mx : m;
        if (mnew == nn_neg_inf<A>()) continue; /* nothing kept yet */
        A alpha = exp(m - mnew), sum = 0;
        for (int jj = 0; jj < bk; jj++) {
            A pj = exp(sc[jj] - mnew);
            sum += pj;
            sc[jj] = pj * at_drop<A>(g, nq, i, j0 + jj);
        }
        lsum = lsum * alpha + sum;
        m = mnew;
        for (int64_t c = 0; c < g.ev; c++) {
            A acc = o[c] * alpha;
            for (int jj = 0; jj < bk; jj++) acc += sc[jj] * vs[jj * g.ev + c];
            o[c] = acc;
        }
    }
    if (!row_ok) return;
    A inv = lsum == (A)0 ? (A)0 : (A)1 / lsum;
    for (int64_t c = 0; c < g.ev; c++) out[(nq * g.l + i) * g.ev + c] = ampc_convert<T>(o[c] * inv);
    lse[nq * g.l + i] = lsum == (A)0 ? (A)INFINITY : m + nn_log(lsum);
}

/* ---------------------------------------------------------------- backward: dQ and D */

template <typename T>
__global__ void at_dq_kernel(at_geom g, const T *q, const T *k, const T *v, const T *dout,
                             const ampc_opmath_t<T> *lse, T *dq, ampc_opmath_t<T> *dws) {
    typedef ampc_opmath_t<T> A;
    __shared__ A at_smem[AT_SMEM / sizeof(A)];
    A *ks = at_smem, *vs = ks + g.tile * g.e;
    const int64_t nq = blockIdx.y, nk = at_kv_head(g, nq), i = (int64_t)blockIdx.x * AT_ROWS + threadIdx.x;
    const bool row_ok = i < g.l;
    A qr[AT_DMAX], dor[AT_DMAX], acc[AT_DMAX], d = 0, li = row_ok ? lse[nq * g.l + i] : (A)0;
    for (int64_t c = 0; c < g.e; c++) qr[c] = row_ok ? ampc_load(q, (nq * g.l + i) * g.e + c) * (A)g.scale : (A)0;
    for (int64_t c = 0; c < g.ev; c++) dor[c] = row_ok ? ampc_load(dout, (nq * g.l + i) * g.ev + c) : (A)0;
    for (int64_t c = 0; c < g.e; c++) acc[c] = 0;
    int64_t last = (int64_t)blockIdx.x * AT_ROWS + AT_ROWS - 1;
    int64_t jend = g.causal ? (last + 1 < g.s ? last + 1 : g.s) : g.s;
    for (int pass = 0; pass < 2; pass++)
        for (int64_t j0 = 0; j0 < jend; j0 += g.tile) {
            int64_t bk = jend - j0 < g.tile ? jend - j0 : g.tile;
            __syncthreads();
            for (int64_t t = threadIdx.x; t < bk * g.e; t += blockDim.x) ks[t] = ampc_load(k, (nk * g.s + j0) * g.e + t);
            for (int64_t t = threadIdx.x; t < bk * g.ev; t += blockDim.x) vs[t] = ampc_load(v, (nk * g.s + j0) * g.ev + t);
            __syncthreads();
            if (!row_ok) continue;
            for (int jj = 0; jj < bk; jj++) {
                A s = 0, dp = 0;
                for (int64_t c = 0; c < g.e; c++) s += qr[c] * ks[jj * g.e + c];
                A p = exp(s + at_bias<A>(g, nq, i, j0 + jj) - li);
                for (int64_t c = 0; c < g.ev; c++) dp += dor[c] * vs[jj * g.ev + c];
                dp *= at_drop<A>(g, nq, i, j0 + jj);
                if (pass == 0) {
                    d += p * dp;
                } else {
                    A ds = p * (dp - d);
                    for (int64_t c = 0; c < g.e; c++) acc[c] += ds * ks[jj * g.e + c];
                }
            }
        }
    if (!row_ok) return;
    for (int64_t c = 0; c < g.e; c++) dq[(nq * g.l + i) * g.e + c] = ampc_convert<T>(acc[c] * (A)g.scale);
    dws[nq * g.l + i] = d;
}

/* ---------------------------------------------------------------- backward: dK, dV */

template <typename T>
__global__ void at_dkv_kernel(at_geom g, const T *q, const T *k, const T *v, const T *dout,
                              const ampc_opmath_t<T> *lse, const ampc_opmath_t<T> *dws, T *dk, T *dv) {
    typedef ampc_opmath_t<T> A;
    __shared__ A at_smem[AT_SMEM / sizeof(A)];
    A *qs = at_smem, *ds_ = qs + g.tile * g.e, *ls = ds_ + g.tile * g.ev, *dd = ls + g.tile;
    const int64_t nk = blockIdx.y, j = (int64_t)blockIdx.x * AT_ROWS + threadIdx.x;
    const bool row_ok = j < g.s;
    A kr[AT_DMAX], vr[AT_DMAX], dkr[AT_DMAX], dvr[AT_DMAX];
    for (int64_t c = 0; c < g.e; c++) kr[c] = row_ok ? ampc_load(k, (nk * g.s + j) * g.e + c) : (A)0, dkr[c] = 0;
    for (int64_t c = 0; c < g.ev; c++) vr[c] = row_ok ? ampc_load(v, (nk * g.s + j) * g.ev + c) : (A)0, dvr[c] = 0;
    const int64_t first = (nk / g.hk) * g.hq + (nk % g.hk) * g.group;
    /* queries that can see a key of this block: i >= the block's first key under is_causal */
    const int64_t i_start = g.causal ? (int64_t)blockIdx.x * AT_ROWS : 0;
    for (int64_t gi = 0; gi < g.group; gi++) {
        const int64_t nq = first + gi;
        for (int64_t i0 = i_start - i_start % g.tile; i0 < g.l; i0 += g.tile) {
            int64_t bq = g.l - i0 < g.tile ? g.l - i0 : g.tile;
            __syncthreads();
            for (int64_t t = threadIdx.x; t < bq * g.e; t += blockDim.x)
                qs[t] = ampc_load(q, (nq * g.l + i0) * g.e + t) * (A)g.scale;
            for (int64_t t = threadIdx.x; t < bq * g.ev; t += blockDim.x) ds_[t] = ampc_load(dout, (nq * g.l + i0) * g.ev + t);
            for (int64_t t = threadIdx.x; t < bq; t += blockDim.x) ls[t] = lse[nq * g.l + i0 + t], dd[t] = dws[nq * g.l + i0 + t];
            __syncthreads();
            if (!row_ok) continue;
            for (int ii = 0; ii < bq; ii++) {
                const int64_t i = i0 + ii;
                A s = 0, dp = 0;
                for (int64_t c = 0; c < g.e; c++) s += qs[ii * g.e + c] * kr[c];
                A p = exp(s + at_bias<A>(g, nq, i, j) - ls[ii]);
                if (p == (A)0) continue;
                A keep = at_drop<A>(g, nq, i, j);
                for (int64_t c = 0; c < g.ev; c++) {
                    dvr[c] += p * keep * ds_[ii * g.ev + c];
                    dp += ds_[ii * g.ev + c] * vr[c];
                }
                A dsc = p * (dp * keep - dd[ii]);
                for (int64_t c = 0; c < g.e; c++) dkr[c] += dsc * qs[ii * g.e + c];
            }
        }
    }
    if (!row_ok) return;
    for (int64_t c = 0; c < g.e; c++) dk[(nk * g.s + j) * g.e + c] = ampc_convert<T>(dkr[c]);
    for (int64_t c = 0; c < g.ev; c++) dv[(nk * g.s + j) * g.ev + c] = ampc_convert<T>(dvr[c]);
}

/* ---------------------------------------------------------------- launches */

static ampc_status at_geom_of(const char *what, const ampc_tensor *q, const ampc_tensor *k, const ampc_tensor *v,
                              const ampc_tensor *mask, double scale, bool causal, double p, uint64_t seed,
                              uint64_t offset, at_geom *g) {
    memset(g, 0, sizeof *g);
    g->n = q->shape[0], g->hq = q->shape[1], g->l = q->shape[2], g->e = q->shape[3];
    g->hk = k->shape[1], g->s = k->shape[2], g->ev = v->shape[3];
    g->group = g->hk > 0 ? g->hq / g->hk : 1;
    if (g->e > AT_DMAX || g->ev > AT_DMAX)
        return ampc_set_error(AMPC_E_RUNTIME, "%s: CUDA kernel supports head dims up to %d, got %lld and %lld", what,
                              AT_DMAX, (long long)g->e, (long long)g->ev);
    if (mask) {
        g->mask = ampc_data_ptr(mask), g->mask_dt = (int)mask->dtype;
        for (int i = 0; i < 4; i++) g->ms[i] = mask->strides[i];
    }
    g->causal = causal, g->scale = scale, g->p = p, g->seed = seed, g->offset = offset;
    size_t el = q->dtype == AMPC_FLOAT64 ? sizeof(double) : sizeof(float);
    int64_t fit = (int64_t)(AT_SMEM / (el * (size_t)(g->e + g->ev + 2)));
    g->tile = (int)(fit < AT_TILE ? fit : AT_TILE);
    return AMPC_OK;
}

static size_t at_elem(ampc_dtype dt) { return dt == AMPC_FLOAT64 ? sizeof(double) : sizeof(float); }

static ampc_status cuda_sdpa_flash(ampc_op op, const ampc_sdpa_flash_args *a) {
    at_geom g;
    AMPC_TRY(at_geom_of("_scaled_dot_product_flash_attention", a->q, a->k, a->v, a->mask, a->scale, a->is_causal,
                        a->dropout_p, a->seed, a->offset, &g));
    if (g.n * g.hq * g.l == 0) return AMPC_OK;
    ampc_cuda_guard guard(a->q);
    cudaStream_t st = ampc_cuda_stream_of(a->q);
    dim3 grid((unsigned)((g.l + AT_ROWS - 1) / AT_ROWS), (unsigned)(g.n * g.hq));
    AMPC_CUDA_SWITCH_FLOATING(a->q->dtype, "_scaled_dot_product_flash_attention", {
        at_forward_kernel<scalar_t><<<grid, AT_ROWS, 0, st>>>(
            g, (const scalar_t *)ampc_data_ptr(a->q), (const scalar_t *)ampc_data_ptr(a->k),
            (const scalar_t *)ampc_data_ptr(a->v), (scalar_t *)ampc_data_ptr(a->out),
            (ampc_opmath_t<scalar_t> *)ampc_data_ptr(a->lse));
    });
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

static ampc_status cuda_sdpa_flash_backward(ampc_op op, const ampc_sdpa_flash_backward_args *a) {
    at_geom g;
    AMPC_TRY(at_geom_of("_scaled_dot_product_flash_attention_backward", a->q, a->k, a->v, a->mask, a->scale,
                        a->is_causal, a->dropout_p, a->seed, a->offset, &g));
    ampc_cuda_guard guard(a->q);
    cudaStream_t st = ampc_cuda_stream_of(a->q);
    const int dev = (int)a->q->device.index;
    size_t el = at_elem(a->q->dtype), dbytes = el * (size_t)(g.n * g.hq * g.l + 1);
    void *dws = ampc_cuda_scratch_alloc(dev, dbytes);
    if (!dws) return ampc_last_status();
    ampc_status status = AMPC_OK;
    dim3 gq((unsigned)((g.l + AT_ROWS - 1) / AT_ROWS), (unsigned)(g.n * g.hq));
    dim3 gk((unsigned)((g.s + AT_ROWS - 1) / AT_ROWS), (unsigned)(g.n * g.hk));
    auto run = [&](auto tag) -> ampc_status {
        typedef decltype(tag) scalar_t;
        typedef ampc_opmath_t<scalar_t> A;
        const scalar_t *q = (const scalar_t *)ampc_data_ptr(a->q), *k = (const scalar_t *)ampc_data_ptr(a->k);
        const scalar_t *v = (const scalar_t *)ampc_data_ptr(a->v), *go = (const scalar_t *)ampc_data_ptr(a->grad_out);
        const A *lse = (const A *)ampc_data_ptr(a->lse);
        if (g.n * g.hq * g.l > 0 && g.s > 0)
            at_dq_kernel<scalar_t><<<gq, AT_ROWS, 0, st>>>(g, q, k, v, go, lse, (scalar_t *)ampc_data_ptr(a->grad_q),
                                                               (A *)dws);
        else if (ampc_numel(a->grad_q) > 0)
            AMPC_CUDA_TRY(cudaMemsetAsync(ampc_data_ptr(a->grad_q), 0, ampc_numel(a->grad_q) * sizeof(scalar_t), st));
        AMPC_CUDA_CHECK_LAUNCH();
        if (g.n * g.hk * g.s > 0) {
            if (g.l == 0)
                AMPC_CUDA_TRY(cudaMemsetAsync(dws, 0, dbytes, st));
            at_dkv_kernel<scalar_t><<<gk, AT_ROWS, 0, st>>>(g, q, k, v, go, lse, (const A *)dws,
                                                                (scalar_t *)ampc_data_ptr(a->grad_k),
                                                                (scalar_t *)ampc_data_ptr(a->grad_v));
            AMPC_CUDA_CHECK_LAUNCH();
        }
        return AMPC_OK;
    };
    switch (a->q->dtype) {
    case AMPC_FLOAT32: status = run(float()); break;
    case AMPC_FLOAT16: status = run(__half()); break;
    case AMPC_BFLOAT16: status = run(__nv_bfloat16()); break;
    case AMPC_FLOAT64: status = run(double()); break;
    default:
        status = ampc_set_error(AMPC_E_TYPE, "_scaled_dot_product_flash_attention_backward: CUDA kernel does not support "
                                             "dtype %s", ampc_dtype_name(a->q->dtype));
    }
    ampc_cuda_scratch_free(dev, dws, dbytes);
    return status;
}

extern "C" void ampc_cuda_register_nn_attn(void) {
    ampc_register_sdpa_flash(AMPC_CUDA, cuda_sdpa_flash);
    ampc_register_sdpa_flash_backward(AMPC_CUDA, cuda_sdpa_flash_backward);
}
