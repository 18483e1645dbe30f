/* cuda_nn_poolnorm.cu: the pool3d rows (MAX_POOL3D, AVG_POOL3D (+ backward), ADAPTIVE_AVG_POOL3D
 * (+ backward), ADAPTIVE_MAX_POOL2D/3D) and RMS_NORM (+ backward) on CUDA, with the semantics of
 * csrc/cpu/cpu_nn_poolnorm.c. The max rows' backward is cuda_nn_conv_pool.cu's plane scatter.
 *
 * Pools: every tensor a contiguous (N, C, D, H, W) plane stack, (n, c) planes flattened. One
 * thread per output element for the forwards; the average backward is a gather (one thread per
 * input element sums the windows that cover it: deterministic, no atomics).
 * RMS norm (M, D): one block per row (block sums of x^2, then of g * w * xhat); grad weight as
 * column sums over fixed chunks of rows into scratch, then one thread per column adds the chunks
 * in order (no float atomics, deterministic). Tensors may differ in dtype (fp16 x with fp32
 * weight under autocast): operands are read and written through their run-time dtype.
 * Arithmetic in fp32 (double for fp64 input), results rounded once. */
#include <math.h>

#include "../core/fractional_pool.h"
#include "../core/kernel_args.h"
#include "cuda_common.cuh"

#define PN_THREADS 256

static unsigned pn_blocks(int64_t n) {
    int64_t b = (n + PN_THREADS - 1) / PN_THREADS;
    return (unsigned)(b < 1 ? 1 : b > 65535 * 16 ? 65535 * 16 : b);
}

#define PN_LOOP(i, n) \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

/* ---------------------------------------------------------------- pooling */

struct p3_geom {
    int64_t planes, in[3], out[3], k[3], s[3], p[3], d[3];
    int adaptive, is_max, count_include_pad;
    int64_t divisor_override;
};

struct axis_win {
    int64_t lo, hi, step, size;
};

/* Axis i of output position o: as axis_of in cpu_nn_poolnorm.c. */
__device__ __forceinline__ axis_win axis_of(const p3_geom &g, int i, int64_t o) {
    axis_win a;
    int64_t in = g.in[i];
    if (g.adaptive) {
        a.lo = o * in / g.out[i];
        a.hi = ((o + 1) * in + g.out[i] - 1) / g.out[i];
        a.step = 1, a.size = a.hi - a.lo;
        return a;
    }
    int64_t start = o * g.s[i] - g.p[i];
    if (g.is_max) {
        a.step = g.d[i];
        a.lo = start < 0 ? start + (-start + a.step - 1) / a.step * a.step : start;
        int64_t end = start + (g.k[i] - 1) * a.step + 1;
        a.hi = end < in ? end : in;
        a.size = 0;
        return a;
    }
    int64_t end = start + g.k[i] < in + g.p[i] ? start + g.k[i] : in + g.p[i];
    a.size = end - start;
    a.lo = start > 0 ? start : 0;
    a.hi = end < in ? end : in;
    a.step = 1;
    return a;
}

__device__ __forceinline__ int64_t avg_divisor(const p3_geom &g, const axis_win *w) {
    if (g.divisor_override) return g.divisor_override;
    if (g.adaptive || !g.count_include_pad) return (w[0].hi - w[0].lo) * (w[1].hi - w[1].lo) * (w[2].hi - w[2].lo);
    return w[0].size * w[1].size * w[2].size;
}

template <typename T>
__global__ void pool3d_kernel(const T *__restrict__ x, T *__restrict__ y, int64_t *__restrict__ ind, p3_geom g) {
    typedef ampc_opmath_t<T> acc_t;
    int64_t H = g.in[1], W = g.in[2], iv = g.in[0] * H * W;
    int64_t ov = g.out[0] * g.out[1] * g.out[2], total = g.planes * ov;
    PN_LOOP(i, total) {
        int64_t p = i / ov, r = i - p * ov;
        int64_t od = r / (g.out[1] * g.out[2]), r2 = r - od * g.out[1] * g.out[2];
        int64_t oh = r2 / g.out[2], ow = r2 - oh * g.out[2];
        axis_win w[3] = {axis_of(g, 0, od), axis_of(g, 1, oh), axis_of(g, 2, ow)};
        const T *plane = x + p * iv;
        if (g.is_max) {
            acc_t best = -INFINITY;
            int64_t best_i = (w[0].lo * H + w[1].lo) * W + w[2].lo;
            for (int64_t d = w[0].lo; d < w[0].hi; d += w[0].step)
                for (int64_t h = w[1].lo; h < w[1].hi; h += w[1].step)
                    for (int64_t c = w[2].lo; c < w[2].hi; c += w[2].step) {
                        int64_t k = (d * H + h) * W + c;
                        acc_t v = ampc_load(plane, k);
                        if (v > best || isnan(v)) { /* NaN wins (the last one), as on the CPU */
                            best = v;
                            best_i = k;
                        }
                    }
            y[i] = ampc_convert<T>(best);
            ind[i] = best_i;
            continue;
        }
        if (w[0].lo >= w[0].hi || w[1].lo >= w[1].hi || w[2].lo >= w[2].hi) {
            y[i] = ampc_convert<T>((acc_t)0);
            continue;
        }
        acc_t s = 0;
        for (int64_t d = w[0].lo; d < w[0].hi; d++)
            for (int64_t h = w[1].lo; h < w[1].hi; h++)
                for (int64_t c = w[2].lo; c < w[2].hi; c++) s += ampc_load(plane, (d * H + h) * W + c);
        y[i] = ampc_convert<T>(s / (acc_t)avg_divisor(g, w));
    }
}

/* The outputs [lo, hi) along axis i whose window may hold input position x (a superset is fine:
 * membership is checked again against the window). */
__device__ __forceinline__ void covering(const p3_geom &g, int i, int64_t x, int64_t *lo, int64_t *hi) {
    int64_t in = g.in[i], out = g.out[i];
    if (g.adaptive) {
        *lo = x * out / in;
        *hi = ((x + 1) * out + in - 1) / in;
    } else {
        int64_t xp = x + g.p[i]; /* windows [o * s, o * s + k) in padded coordinates */
        *lo = xp < g.k[i] ? 0 : (xp - g.k[i]) / g.s[i] + 1;
        *hi = xp / g.s[i] + 1;
    }
    if (*lo < 0) *lo = 0;
    if (*hi > out) *hi = out;
}

template <typename T>
__global__ void avg_pool3d_backward_kernel(const T *__restrict__ gy, T *__restrict__ gx, p3_geom g) {
    typedef ampc_opmath_t<T> acc_t;
    int64_t H = g.in[1], W = g.in[2], iv = g.in[0] * H * W, ov = g.out[0] * g.out[1] * g.out[2];
    int64_t total = g.planes * iv;
    PN_LOOP(i, total) {
        int64_t p = i / iv, r = i - p * iv;
        int64_t id = r / (H * W), r2 = r - id * H * W;
        int64_t ih = r2 / W, iw = r2 - ih * W;
        int64_t lo[3], hi[3];
        covering(g, 0, id, &lo[0], &hi[0]);
        covering(g, 1, ih, &lo[1], &hi[1]);
        covering(g, 2, iw, &lo[2], &hi[2]);
        const T *plane = gy + p * ov;
        acc_t s = 0;
        for (int64_t od = lo[0]; od < hi[0]; od++) {
            axis_win wd = axis_of(g, 0, od);
            if (id < wd.lo || id >= wd.hi) continue;
            for (int64_t oh = lo[1]; oh < hi[1]; oh++) {
                axis_win wh = axis_of(g, 1, oh);
                if (ih < wh.lo || ih >= wh.hi) continue;
                for (int64_t ow = lo[2]; ow < hi[2]; ow++) {
                    axis_win w[3] = {wd, wh, axis_of(g, 2, ow)};
                    if (iw < w[2].lo || iw >= w[2].hi) continue;
                    s += ampc_load(plane, (od * g.out[1] + oh) * g.out[2] + ow) / (acc_t)avg_divisor(g, w);
                }
            }
        }
        gx[i] = ampc_convert<T>(s);
    }
}

static bool pool_is_max(ampc_op op) {
    return op == AMPC_OP_MAX_POOL3D || op == AMPC_OP_ADAPTIVE_MAX_POOL2D || op == AMPC_OP_ADAPTIVE_MAX_POOL3D;
}

static ampc_status cuda_pool3d(ampc_op op, const ampc_pool3d_args *a) {
    bool backward = op == AMPC_OP_AVG_POOL3D_BACKWARD || op == AMPC_OP_ADAPTIVE_AVG_POOL3D_BACKWARD;
    const ampc_tensor *src = a->in;
    ampc_tensor *dst = a->out;
    if (src->dtype != dst->dtype)
        return ampc_set_error(AMPC_E_TYPE, "%s: CUDA kernel expects input and output of one dtype", ampc_op_name(op));
    const ampc_tensor *x = backward ? dst : src, *y = backward ? src : dst;
    p3_geom g;
    memset(&g, 0, sizeof g);
    g.planes = x->shape[0] * x->shape[1];
    g.adaptive = a->kernel[0] == 0, g.is_max = pool_is_max(op);
    g.count_include_pad = a->count_include_pad, g.divisor_override = a->divisor_override;
    for (int i = 0; i < 3; i++) {
        g.in[i] = x->shape[2 + i], g.out[i] = y->shape[2 + i];
        g.k[i] = a->kernel[i], g.s[i] = a->stride[i], g.p[i] = a->padding[i], g.d[i] = a->dilation[i];
    }
    if (g.is_max && (!a->indices || a->indices->dtype != AMPC_INT64))
        return ampc_set_error(AMPC_E_TYPE, "%s: CUDA kernel expects int64 indices", ampc_op_name(op));
    int64_t total = ampc_numel(dst);
    if (total == 0) return AMPC_OK;
    ampc_cuda_guard guard(dst);
    cudaStream_t s = ampc_cuda_stream_of(dst);
    AMPC_CUDA_SWITCH_FLOATING(dst->dtype, ampc_op_name(op), {
        const scalar_t *sp = (const scalar_t *)ampc_data_ptr(src);
        scalar_t *dp = (scalar_t *)ampc_data_ptr(dst);
        if (backward)
            avg_pool3d_backward_kernel<scalar_t><<<pn_blocks(total), PN_THREADS, 0, s>>>(sp, dp, g);
        else
            pool3d_kernel<scalar_t><<<pn_blocks(total), PN_THREADS, 0, s>>>(
                sp, dp, g.is_max ? (int64_t *)ampc_data_ptr(a->indices) : nullptr, g);
    });
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

/* ---------------------------------------------------------------- fractional max pooling */

struct frac_geom {
    int64_t planes, in[3], out[3], k[3];
    int nsp;
};

/* One thread per output: its window starts from the plane's samples (core/fractional_pool.h;
 * 3-d pools take (t, h, w) from samples[0, 1, 2], 2-d pools (w, h) from samples[0, 1]). */
template <typename T>
__global__ void fractional_max_pool_kernel(const T *__restrict__ x, const T *__restrict__ smp, T *__restrict__ y,
                                           int64_t *__restrict__ ind, frac_geom g) {
    typedef ampc_opmath_t<T> acc_t;
    int64_t H = g.in[1], W = g.in[2], iv = g.in[0] * H * W;
    int64_t ov = g.out[0] * g.out[1] * g.out[2], total = g.planes * ov;
    PN_LOOP(i, total) {
        int64_t p = i / ov, r = i - p * ov;
        int64_t o[3];
        o[0] = r / (g.out[1] * g.out[2]);
        int64_t r2 = r - o[0] * g.out[1] * g.out[2];
        o[1] = r2 / g.out[2], o[2] = r2 - o[1] * g.out[2];
        int64_t st[3];
        for (int a = 0; a < 3; a++) {
            if (a < 3 - g.nsp) {
                st[a] = 0;
                continue;
            }
            acc_t u = ampc_load(smp, p * g.nsp + (g.nsp == 3 ? a : 2 - a));
            st[a] = sizeof(acc_t) == 8 ? ampc_frac_start_d((double)u, o[a], g.in[a], g.out[a], g.k[a])
                                       : ampc_frac_start_f((float)u, o[a], g.in[a], g.out[a], g.k[a]);
        }
        const T *plane = x + p * iv;
        acc_t best = -INFINITY;
        int64_t best_i = (st[0] * H + st[1]) * W + st[2];
        for (int64_t d = st[0]; d < st[0] + g.k[0]; d++)
            for (int64_t h = st[1]; h < st[1] + g.k[1]; h++)
                for (int64_t c = st[2]; c < st[2] + g.k[2]; c++) {
                    int64_t k = (d * H + h) * W + c;
                    acc_t v = ampc_load(plane, k);
                    if (v > best || isnan(v)) {
                        best = v;
                        best_i = k;
                    }
                }
        y[i] = ampc_convert<T>(best);
        ind[i] = best_i;
    }
}

static ampc_status cuda_fractional_max_pool(ampc_op op, const ampc_fractional_max_pool_args *a) {
    const ampc_tensor *x = a->in, *smp = a->samples;
    if (a->out->dtype != x->dtype || smp->dtype != x->dtype || a->indices->dtype != AMPC_INT64)
        return ampc_set_error(AMPC_E_TYPE, "%s: CUDA kernel expects x, y and samples of one dtype, int64 indices",
                              ampc_op_name(op));
    frac_geom g;
    memset(&g, 0, sizeof g);
    g.planes = x->shape[0] * x->shape[1], g.nsp = (int)smp->shape[2];
    for (int i = 0; i < 3; i++) g.in[i] = x->shape[2 + i], g.out[i] = a->out->shape[2 + i], g.k[i] = a->kernel[i];
    int64_t total = ampc_numel(a->out);
    if (total == 0) return AMPC_OK;
    ampc_cuda_guard guard(x);
    cudaStream_t s = ampc_cuda_stream_of(x);
    AMPC_CUDA_SWITCH_FLOATING(x->dtype, ampc_op_name(op), {
        fractional_max_pool_kernel<scalar_t><<<pn_blocks(total), PN_THREADS, 0, s>>>(
            (const scalar_t *)ampc_data_ptr(x), (const scalar_t *)ampc_data_ptr(smp), (scalar_t *)ampc_data_ptr(a->out),
            (int64_t *)ampc_data_ptr(a->indices), g);
    });
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

/* ---------------------------------------------------------------- rms_norm */

/* An operand of run-time dtype; p NULL for an absent optional one. */
struct pn_ref {
    void *p;
    int dt;
};

static pn_ref pn_ref_of(const ampc_tensor *t) {
    pn_ref r = {t ? ampc_data_ptr(t) : nullptr, t ? (int)t->dtype : 0};
    return r;
}

template <typename A> __device__ __forceinline__ A pn_ld(pn_ref r, int64_t i, A dflt) {
    return r.p ? ampc_load_dyn<A>(r.p, r.dt, i) : dflt;
}

#define RMS_MAX_BLOCKS 65535
#define RMS_CHUNK_ROWS 64

static unsigned rms_grid(int64_t m) { return (unsigned)(m < 1 ? 1 : m > RMS_MAX_BLOCKS ? RMS_MAX_BLOCKS : m); }

template <typename A>
__global__ void rms_norm_kernel(pn_ref x, pn_ref w, pn_ref y, pn_ref rstd, int64_t m, int64_t d, A eps) {
    __shared__ A shared[32];
    for (int64_t row = blockIdx.x; row < m; row += gridDim.x) {
        int64_t base = row * d;
        A q = 0;
        for (int64_t k = threadIdx.x; k < d; k += blockDim.x) {
            A v = ampc_load_dyn<A>(x.p, x.dt, base + k);
            q += v * v;
        }
        A rs = (A)1 / sqrt(ampc_block_sum(q, shared) / (A)d + eps);
        for (int64_t k = threadIdx.x; k < d; k += blockDim.x)
            ampc_store_dyn<A>(y.p, y.dt, base + k, ampc_load_dyn<A>(x.p, x.dt, base + k) * rs * pn_ld(w, k, (A)1));
        if (threadIdx.x == 0) ampc_store_dyn<A>(rstd.p, rstd.dt, row, rs);
    }
}

template <typename A>
__global__ void rms_norm_grad_x_kernel(pn_ref g, pn_ref x, pn_ref rstd, pn_ref w, pn_ref gx, int64_t m, int64_t d) {
    __shared__ A shared[32];
    for (int64_t row = blockIdx.x; row < m; row += gridDim.x) {
        int64_t base = row * d;
        A rs = ampc_load_dyn<A>(rstd.p, rstd.dt, row), s = 0;
        for (int64_t k = threadIdx.x; k < d; k += blockDim.x)
            s += ampc_load_dyn<A>(g.p, g.dt, base + k) * pn_ld(w, k, (A)1) * ampc_load_dyn<A>(x.p, x.dt, base + k) * rs;
        A mean = ampc_block_sum(s, shared) / (A)d;
        for (int64_t k = threadIdx.x; k < d; k += blockDim.x) {
            A xh = ampc_load_dyn<A>(x.p, x.dt, base + k) * rs;
            A gw = ampc_load_dyn<A>(g.p, g.dt, base + k) * pn_ld(w, k, (A)1);
            ampc_store_dyn<A>(gx.p, gx.dt, base + k, rs * (gw - xh * mean));
        }
    }
}

/* partial[chunk * d + j] = sum over the chunk's rows of g * x * rstd in column j. */
template <typename A>
__global__ void rms_norm_weight_partial_kernel(pn_ref g, pn_ref x, pn_ref rstd, A *partial, int64_t m, int64_t d) {
    int64_t chunk = blockIdx.y;
    int64_t r0 = chunk * RMS_CHUNK_ROWS, r1 = r0 + RMS_CHUNK_ROWS < m ? r0 + RMS_CHUNK_ROWS : m;
    for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < d; j += (int64_t)gridDim.x * blockDim.x) {
        A s = 0;
        for (int64_t r = r0; r < r1; r++)
            s += ampc_load_dyn<A>(g.p, g.dt, r * d + j) * ampc_load_dyn<A>(x.p, x.dt, r * d + j) *
                 ampc_load_dyn<A>(rstd.p, rstd.dt, r);
        partial[chunk * d + j] = s;
    }
}

template <typename A>
__global__ void rms_norm_weight_sum_kernel(const A *partial, pn_ref gw, int64_t chunks, int64_t d) {
    PN_LOOP(j, d) {
        A s = 0;
        for (int64_t c = 0; c < chunks; c++) s += partial[c * d + j];
        ampc_store_dyn<A>(gw.p, gw.dt, j, s);
    }
}

static ampc_status cuda_rms_norm(ampc_op op, const ampc_rms_norm_args *a) {
    (void)op;
    int64_t m = a->x->shape[0], d = a->x->shape[1];
    if (m == 0 || d == 0) return AMPC_OK;
    ampc_cuda_guard guard(a->x);
    cudaStream_t s = ampc_cuda_stream_of(a->x);
    if (a->x->dtype == AMPC_FLOAT64)
        rms_norm_kernel<double><<<rms_grid(m), PN_THREADS, 0, s>>>(pn_ref_of(a->x), pn_ref_of(a->weight),
                                                                   pn_ref_of(a->y), pn_ref_of(a->rstd), m, d, a->eps);
    else
        rms_norm_kernel<float><<<rms_grid(m), PN_THREADS, 0, s>>>(pn_ref_of(a->x), pn_ref_of(a->weight),
                                                                  pn_ref_of(a->y), pn_ref_of(a->rstd), m, d,
                                                                  (float)a->eps);
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

template <typename A>
static ampc_status rms_norm_backward_run(const ampc_rms_norm_backward_args *a, cudaStream_t s) {
    int64_t m = a->x->shape[0], d = a->x->shape[1];
    pn_ref g = pn_ref_of(a->grad_y), x = pn_ref_of(a->x), rstd = pn_ref_of(a->rstd);
    if (a->grad_x) {
        rms_norm_grad_x_kernel<A><<<rms_grid(m), PN_THREADS, 0, s>>>(g, x, rstd, pn_ref_of(a->weight),
                                                                      pn_ref_of(a->grad_x), m, d);
        AMPC_CUDA_CHECK_LAUNCH();
    }
    if (!a->grad_weight) return AMPC_OK;
    int64_t chunks = (m + RMS_CHUNK_ROWS - 1) / RMS_CHUNK_ROWS;
    ampc_cuda_scratch partial((int)a->x->device.index, sizeof(A) * (size_t)(chunks * d));
    if (!partial.ok()) return ampc_last_status();
    int64_t cols = (d + PN_THREADS - 1) / PN_THREADS;
    dim3 grid((unsigned)(cols < 1024 ? cols : 1024), (unsigned)chunks);
    rms_norm_weight_partial_kernel<A><<<grid, PN_THREADS, 0, s>>>(g, x, rstd, partial.as<A>(), m, d);
    AMPC_CUDA_CHECK_LAUNCH();
    rms_norm_weight_sum_kernel<A><<<pn_blocks(d), PN_THREADS, 0, s>>>(partial.as<A>(), pn_ref_of(a->grad_weight),
                                                                     chunks, d);
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

static ampc_status cuda_rms_norm_backward(ampc_op op, const ampc_rms_norm_backward_args *a) {
    (void)op;
    int64_t m = a->x->shape[0], d = a->x->shape[1];
    if (m == 0 || d == 0) return AMPC_OK; /* the frontend zeroes the weight grad of empty inputs */
    if ((m + RMS_CHUNK_ROWS - 1) / RMS_CHUNK_ROWS > 65535)
        return ampc_set_error(AMPC_E_RUNTIME, "rms_norm_backward: %lld rows exceed the CUDA kernel's limit",
                              (long long)m);
    ampc_cuda_guard guard(a->x);
    cudaStream_t s = ampc_cuda_stream_of(a->x);
    return a->x->dtype == AMPC_FLOAT64 ? rms_norm_backward_run<double>(a, s) : rms_norm_backward_run<float>(a, s);
}

extern "C" void ampc_cuda_register_nn_poolnorm(void) {
    ampc_register_pool3d(AMPC_CUDA, cuda_pool3d);
    ampc_register_fractional_max_pool(AMPC_CUDA, cuda_fractional_max_pool);
    ampc_register_rms_norm(AMPC_CUDA, cuda_rms_norm);
    ampc_register_rms_norm_backward(AMPC_CUDA, cuda_rms_norm_backward);
}
