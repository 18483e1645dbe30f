/* cuda_nn_conv_pool.cu: the NN kernels around convolution and pooling on CUDA: IM2COL, COL2IM,
 * MAX_POOL2D (+ backward), AVG_POOL2D (+ backward), ADAPTIVE_AVG_POOL2D (+ backward).
 *
 * Semantics are those of csrc/cpu/cpu_nn_conv.c and cpu_nn_pool.c (PyTorch's window rules);
 * every tensor is a contiguous (N, C, H, W) plane stack, (n, c) planes flattened to `planes`.
 * One thread per output element, no inter-thread communication, except:
 *  - COL2IM and the avg / adaptive-avg backward are gathers (one thread per image element sums
 *    the windows that cover it: deterministic, no atomics; Caffe's / PyTorch's col2im pattern);
 *  - MAX_POOL2D_BACKWARD receives only grad y and the argmax indices (the row has no window
 *    geometry to gather with), so it scatters with atomicAdd into a zeroed buffer, as PyTorch's
 *    CUDA kernel for indices does: fp32 sums into grad x directly (order of the adds, hence the
 *    last bit when windows overlap, may vary between runs), fp16/bf16 sum into an fp32 scratch
 *    plane that is rounded once into grad x (as the CPU rounds its double sums once).
 * Sums run in the opmath type (fp32 for fp16/bf16/fp32, double for fp64). */
#include <math.h>

#include "../core/kernel_args.h"
#include "cuda_common.cuh"

/* Threads per block for the one-thread-per-element kernels here. */
#define POOL_THREADS 256

static unsigned pool_blocks(int64_t n) {
    int64_t b = (n + POOL_THREADS - 1) / POOL_THREADS;
    return (unsigned)(b < 1 ? 1 : b > 65535 * 16 ? 65535 * 16 : b);
}

#define POOL_LOOP(i, n) \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

/* ---------------------------------------------------------------- im2col / col2im */

/* ints: kh kw sh sw ph pw dh dw OH OW (padding is top/left; the output size is given, so
 * asymmetric padding needs nothing more). */
struct conv_geom {
    int64_t planes, h, w;
    int64_t kh, kw, sh, sw, ph, pw, dh, dw;
    int64_t oh, ow;
};

static conv_geom conv_geom_of(const ampc_tensor *x, const ampc_im2col_args *a) {
    conv_geom g;
    g.planes = x->shape[0] * x->shape[1], g.h = x->shape[2], g.w = x->shape[3];
    g.kh = a->kernel[0], g.kw = a->kernel[1], g.sh = a->stride[0], g.sw = a->stride[1];
    g.ph = a->padding[0], g.pw = a->padding[1], g.dh = a->dilation[0], g.dw = a->dilation[1];
    g.oh = a->out_size[0], g.ow = a->out_size[1];
    return g;
}

/* One thread per (plane, oh, ow): writes the kh * kw column entries of that output position,
 * cols (planes * kh * kw, OH * OW). Elements are copied as bits (T: an unsigned type of the
 * dtype's size), padding reads as zero bits, as on the CPU. */
template <typename T>
__global__ void im2col_kernel(const T *__restrict__ x, T *__restrict__ cols, conv_geom g) {
    int64_t l_n = g.oh * g.ow, total = g.planes * l_n, kk = g.kh * g.kw;
    POOL_LOOP(i, total) {
        int64_t l = i % l_n, p = i / l_n;
        int64_t oh = l / g.ow, ow = l - oh * g.ow;
        const T *plane = x + p * g.h * g.w;
        T *col = cols + p * kk * l_n + l; /* row (p, ki, kj) at + (ki * kw + kj) * l_n */
        int64_t h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;
        for (int64_t ki = 0; ki < g.kh; ki++) {
            int64_t ih = h0 + ki * g.dh;
            bool row_in = ih >= 0 && ih < g.h;
            for (int64_t kj = 0; kj < g.kw; kj++) {
                int64_t iw = w0 + kj * g.dw;
                col[(ki * g.kw + kj) * l_n] = row_in && iw >= 0 && iw < g.w ? plane[ih * g.w + iw] : (T)0;
            }
        }
    }
}

/* One thread per image element (plane, h, w): the sum of every column entry that im2col copied
 * from it (PyTorch's col2im_kernel with dilation), overwriting x. */
template <typename T>
__global__ void col2im_kernel(const T *__restrict__ cols, T *__restrict__ x, conv_geom g) {
    typedef ampc_opmath_t<T> acc_t;
    int64_t hw = g.h * g.w, l_n = g.oh * g.ow, total = g.planes * hw;
    int64_t ext_h = (g.kh - 1) * g.dh + 1, ext_w = (g.kw - 1) * g.dw + 1;
    POOL_LOOP(i, total) {
        int64_t p = i / hw, r = i - p * hw;
        int64_t h_im = r / g.w + g.ph, w_im = r % g.w + g.pw; /* in padded coordinates */
        /* output rows whose window [oh * sh, oh * sh + ext_h) holds h_im */
        int64_t oh0 = h_im < ext_h ? 0 : (h_im - ext_h) / g.sh + 1;
        int64_t oh1 = h_im / g.sh + 1 < g.oh ? h_im / g.sh + 1 : g.oh;
        int64_t ow0 = w_im < ext_w ? 0 : (w_im - ext_w) / g.sw + 1;
        int64_t ow1 = w_im / g.sw + 1 < g.ow ? w_im / g.sw + 1 : g.ow;
        const T *pc = cols + p * g.kh * g.kw * l_n;
        acc_t s = 0;
        for (int64_t oh = oh0; oh < oh1; oh++) {
            int64_t dk_h = h_im - oh * g.sh;
            if (dk_h % g.dh != 0) continue;
            int64_t ki = dk_h / g.dh;
            for (int64_t ow = ow0; ow < ow1; ow++) {
                int64_t dk_w = w_im - ow * g.sw;
                if (dk_w % g.dw != 0) continue;
                int64_t kj = dk_w / g.dw;
                s += ampc_load(pc, (ki * g.kw + kj) * l_n + oh * g.ow + ow);
            }
        }
        x[i] = ampc_convert<T>(s);
    }
}

static ampc_status cuda_im2col(ampc_op op, const ampc_im2col_args *a) {
    const ampc_tensor *x = a->in;
    ampc_tensor *cols = a->out;
    if (cols->dtype != x->dtype)
        return ampc_set_error(AMPC_E_TYPE, "im2col: columns (%s) and input (%s) must have one dtype",
                              ampc_dtype_name(cols->dtype), ampc_dtype_name(x->dtype));
    conv_geom g = conv_geom_of(x, a);
    int64_t total = g.planes * g.oh * g.ow;
    if (total == 0 || ampc_numel(cols) == 0) return AMPC_OK;
    ampc_cuda_guard guard(x);
    cudaStream_t s = ampc_cuda_stream_of(x);
    const void *xp = ampc_data_ptr(x);
    void *cp = ampc_data_ptr(cols);
    AMPC_CUDA_SWITCH_BITS(x->dtype, "im2col", {
        im2col_kernel<bits_t><<<pool_blocks(total), POOL_THREADS, 0, s>>>((const bits_t *)xp, (bits_t *)cp, g);
    });
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

static ampc_status cuda_col2im(ampc_op op, const ampc_im2col_args *a) {
    const ampc_tensor *cols = a->in;
    ampc_tensor *x = a->out;
    if (cols->dtype != x->dtype)
        return ampc_set_error(AMPC_E_TYPE, "col2im: columns (%s) and output (%s) must have one dtype",
                              ampc_dtype_name(cols->dtype), ampc_dtype_name(x->dtype));
    conv_geom g = conv_geom_of(x, a);
    int64_t total = ampc_numel(x);
    if (total == 0) return AMPC_OK;
    ampc_cuda_guard guard(x);
    cudaStream_t s = ampc_cuda_stream_of(x);
    AMPC_CUDA_SWITCH_FLOATING(x->dtype, "col2im", {
        col2im_kernel<scalar_t><<<pool_blocks(total), POOL_THREADS, 0, s>>>((const scalar_t *)ampc_data_ptr(cols),
                                                                           (scalar_t *)ampc_data_ptr(x), g);
    });
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

/* ---------------------------------------------------------------- pooling geometry */

struct pool_geom {
    int64_t planes, h, w, oh, ow;
    int64_t kh, kw, sh, sw, ph, pw, dh, dw;
    int count_include_pad;
    int64_t divisor_override;
};

/* x: the (N, C, H, W) side, y: the (N, C, OH, OW) side; the window (kernel, stride, padding,
 * dilation pairs) stays zero when k is NULL (adaptive). */
static pool_geom pool_geom_of(const ampc_tensor *x, const ampc_tensor *y, const int64_t *k, const int64_t *st,
                              const int64_t *p, const int64_t *d) {
    pool_geom g;
    memset(&g, 0, sizeof g);
    g.planes = x->shape[0] * x->shape[1];
    g.h = x->shape[2], g.w = x->shape[3], g.oh = y->shape[2], g.ow = y->shape[3];
    if (!k) return g;
    g.kh = k[0], g.kw = k[1], g.sh = st[0], g.sw = st[1], g.ph = p[0], g.pw = p[1], g.dh = d[0], g.dw = d[1];
    return g;
}

/* ---------------------------------------------------------------- max */

/* One thread per output: the first valid window position starts the scan at -inf; a larger
 * value or any NaN takes over (so the last NaN wins, as in PyTorch and on the CPU). */
template <typename T>
__global__ void max_pool2d_kernel(const T *__restrict__ x, T *__restrict__ y, int64_t *__restrict__ ind, pool_geom g) {
    typedef ampc_opmath_t<T> acc_t;
    int64_t ohw = g.oh * g.ow, total = g.planes * ohw;
    POOL_LOOP(i, total) {
        int64_t p = i / ohw, r = i - p * ohw;
        int64_t oh = r / g.ow, ow = r - oh * g.ow;
        int64_t h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;
        int64_t ih0 = h0 < 0 ? h0 + (-h0 + g.dh - 1) / g.dh * g.dh : h0; /* first row >= 0 */
        int64_t iw0 = w0 < 0 ? w0 + (-w0 + g.dw - 1) / g.dw * g.dw : w0;
        int64_t h1 = h0 + (g.kh - 1) * g.dh + 1 < g.h ? h0 + (g.kh - 1) * g.dh + 1 : g.h;
        int64_t w1 = w0 + (g.kw - 1) * g.dw + 1 < g.w ? w0 + (g.kw - 1) * g.dw + 1 : g.w;
        const T *plane = x + p * g.h * g.w;
        acc_t best = -INFINITY;
        int64_t best_i = ih0 * g.w + iw0;
        for (int64_t ih = ih0; ih < h1; ih += g.dh)
            for (int64_t iw = iw0; iw < w1; iw += g.dw) {
                acc_t v = ampc_load(plane, ih * g.w + iw);
                if (v > best || isnan(v)) {
                    best = v;
                    best_i = ih * g.w + iw;
                }
            }
        y[i] = ampc_convert<T>(best);
        ind[i] = best_i;
    }
}

/* One thread per grad y element: adds it at its argmax. An index outside the plane (indices
 * from elsewhere than max_pool2d) is skipped and reported through the deferred error word. */
template <typename T, typename A>
__global__ void max_pool2d_backward_kernel(const T *__restrict__ gy, const int64_t *__restrict__ ind, A *gx,
                                           int64_t ohw, int64_t hw, int64_t total, int *err, int err_code) {
    POOL_LOOP(i, total) {
        int64_t k = ind[i];
        if (k < 0 || k >= hw) {
            if (err) atomicCAS(err, 0, err_code);
            continue;
        }
        atomicAdd(gx + (i / ohw) * hw + k, ampc_convert<A>(gy[i]));
    }
}

template <typename T>
__global__ void round_into_kernel(const float *__restrict__ src, T *__restrict__ dst, int64_t n) {
    POOL_LOOP(i, n) dst[i] = ampc_convert<T>(src[i]);
}

static ampc_status cuda_max_pool2d(ampc_op op, const ampc_max_pool2d_args *a) {
    const ampc_tensor *x = a->x;
    ampc_tensor *y = a->y, *ind = a->indices;
    if (y->dtype != x->dtype || ind->dtype != AMPC_INT64)
        return ampc_set_error(AMPC_E_TYPE, "max_pool2d: CUDA kernel expects y of the input's dtype and int64 indices");
    pool_geom g = pool_geom_of(x, y, a->kernel, a->stride, a->padding, a->dilation);
    int64_t total = g.planes * g.oh * g.ow;
    if (total == 0) return AMPC_OK;
    ampc_cuda_guard guard(x);
    cudaStream_t s = ampc_cuda_stream_of(x);
    AMPC_CUDA_SWITCH_FLOATING(x->dtype, "max_pool2d", {
        max_pool2d_kernel<scalar_t><<<pool_blocks(total), POOL_THREADS, 0, s>>>(
            (const scalar_t *)ampc_data_ptr(x), (scalar_t *)ampc_data_ptr(y), (int64_t *)ampc_data_ptr(ind), g);
    });
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

static ampc_status cuda_max_pool2d_backward(ampc_op op, const ampc_max_pool2d_backward_args *a) {
    const ampc_tensor *gy = a->grad_y, *ind = a->indices;
    ampc_tensor *gx = a->grad_x;
    if (gx->dtype != gy->dtype || ind->dtype != AMPC_INT64)
        return ampc_set_error(AMPC_E_TYPE, "max_pool2d_backward: CUDA kernel expects grads of one dtype and int64 indices");
    int64_t n_gx = ampc_numel(gx), total = ampc_numel(gy);
    int64_t hw = gx->shape[2] * gx->shape[3], ohw = gy->shape[2] * gy->shape[3];
    if (n_gx == 0) return AMPC_OK;
    int dev = (int)gx->device.index;
    ampc_cuda_guard guard(gx);
    cudaStream_t s = ampc_cuda_stream_of(gx);
    int *err = ampc_cuda_error_word(dev);
    int code = AMPC_CUDA_ERR_INDEX * 65536 + (int)op;
    const int64_t *ip = (const int64_t *)ampc_data_ptr(ind);
    switch ((int)gx->dtype) {
    case AMPC_FLOAT32:
    case AMPC_FLOAT64: {
        /* atomics straight into grad x (PyTorch's CUDA scatter form) */
        AMPC_CUDA_TRY(cudaMemsetAsync(ampc_data_ptr(gx), 0, ampc_nbytes(gx), s));
        if (total == 0) return AMPC_OK;
        if (gx->dtype == AMPC_FLOAT32)
            max_pool2d_backward_kernel<float, float><<<pool_blocks(total), POOL_THREADS, 0, s>>>(
                (const float *)ampc_data_ptr(gy), ip, (float *)ampc_data_ptr(gx), ohw, hw, total, err, code);
        else
            max_pool2d_backward_kernel<double, double><<<pool_blocks(total), POOL_THREADS, 0, s>>>(
                (const double *)ampc_data_ptr(gy), ip, (double *)ampc_data_ptr(gx), ohw, hw, total, err, code);
        AMPC_CUDA_CHECK_LAUNCH();
        return AMPC_OK;
    }
    case AMPC_FLOAT16:
    case AMPC_BFLOAT16: {
        /* fp32 sums, rounded once into grad x */
        ampc_cuda_scratch acc(dev, sizeof(float) * (size_t)n_gx);
        if (!acc.ok()) return ampc_last_status();
        AMPC_CUDA_TRY(cudaMemsetAsync(acc.ptr, 0, sizeof(float) * (size_t)n_gx, s));
        if (gx->dtype == AMPC_FLOAT16) {
            if (total > 0)
                max_pool2d_backward_kernel<__half, float><<<pool_blocks(total), POOL_THREADS, 0, s>>>(
                    (const __half *)ampc_data_ptr(gy), ip, acc.as<float>(), ohw, hw, total, err, code);
            AMPC_CUDA_CHECK_LAUNCH();
            round_into_kernel<__half><<<pool_blocks(n_gx), POOL_THREADS, 0, s>>>(acc.as<float>(),
                                                                                (__half *)ampc_data_ptr(gx), n_gx);
        } else {
            if (total > 0)
                max_pool2d_backward_kernel<__nv_bfloat16, float><<<pool_blocks(total), POOL_THREADS, 0, s>>>(
                    (const __nv_bfloat16 *)ampc_data_ptr(gy), ip, acc.as<float>(), ohw, hw, total, err, code);
            AMPC_CUDA_CHECK_LAUNCH();
            round_into_kernel<__nv_bfloat16><<<pool_blocks(n_gx), POOL_THREADS, 0, s>>>(
                acc.as<float>(), (__nv_bfloat16 *)ampc_data_ptr(gx), n_gx);
        }
        AMPC_CUDA_CHECK_LAUNCH();
        return AMPC_OK;
    }
    default:
        return ampc_set_error(AMPC_E_TYPE, "max_pool2d_backward: CUDA kernel does not support dtype %s",
                              ampc_dtype_name(gx->dtype));
    }
}

/* ---------------------------------------------------------------- average */

/* The window of output (oh, ow) clipped to the input, and its divisor: PyTorch's rule, where the
 * size before clipping to the input (but after clipping to the padded input) counts padding.
 * Adaptive windows are [floor(o * in / out), ceil((o + 1) * in / out)). Same as cpu_nn_pool.c. */
struct avg_window {
    int64_t h0, h1, w0, w1;
    int64_t divisor;
};

__device__ __forceinline__ avg_window avg_window_of(const pool_geom &g, bool adaptive, int64_t oh, int64_t ow) {
    avg_window r;
    if (adaptive) {
        r.h0 = oh * g.h / g.oh;
        r.h1 = ((oh + 1) * g.h + g.oh - 1) / g.oh;
        r.w0 = ow * g.w / g.ow;
        r.w1 = ((ow + 1) * g.w + g.ow - 1) / g.ow;
        r.divisor = (r.h1 - r.h0) * (r.w1 - r.w0);
        return r;
    }
    int64_t h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;
    int64_t h1 = h0 + g.kh < g.h + g.ph ? h0 + g.kh : g.h + g.ph;
    int64_t w1 = w0 + g.kw < g.w + g.pw ? w0 + g.kw : g.w + g.pw;
    int64_t pool_size = (h1 - h0) * (w1 - w0);
    r.h0 = h0 > 0 ? h0 : 0, r.w0 = w0 > 0 ? w0 : 0;
    r.h1 = h1 < g.h ? h1 : g.h, r.w1 = w1 < g.w ? w1 : g.w;
    if (g.divisor_override)
        r.divisor = g.divisor_override;
    else if (g.count_include_pad)
        r.divisor = pool_size;
    else
        r.divisor = (r.h1 - r.h0) * (r.w1 - r.w0);
    return r;
}

/* Forward of AVG_POOL2D and ADAPTIVE_AVG_POOL2D: one thread per output. */
template <typename T>
__global__ void avg_pool2d_kernel(const T *__restrict__ x, T *__restrict__ y, pool_geom g, bool adaptive) {
    typedef ampc_opmath_t<T> acc_t;
    int64_t ohw = g.oh * g.ow, total = g.planes * ohw;
    POOL_LOOP(i, total) {
        int64_t p = i / ohw, r = i - p * ohw;
        int64_t oh = r / g.ow, ow = r - oh * g.ow;
        avg_window wnd = avg_window_of(g, adaptive, oh, ow);
        if (wnd.h0 >= wnd.h1 || wnd.w0 >= wnd.w1) { /* a ceil_mode window entirely in the padding */
            y[i] = ampc_convert<T>((acc_t)0);
            continue;
        }
        const T *plane = x + p * g.h * g.w;
        acc_t s = 0;
        for (int64_t ih = wnd.h0; ih < wnd.h1; ih++)
            for (int64_t iw = wnd.w0; iw < wnd.w1; iw++) s += ampc_load(plane, ih * g.w + iw);
        y[i] = ampc_convert<T>(s / (acc_t)wnd.divisor);
    }
}

/* The outputs [lo, hi) along one axis whose window holds input position i (a superset for
 * adaptive windows is fine: membership is checked again against the window). */
__device__ __forceinline__ void covering_outputs(int64_t i, int64_t in, int64_t out, int64_t k, int64_t s, int64_t pad,
                                                 bool adaptive, int64_t *lo, int64_t *hi) {
    if (adaptive) {
        *lo = i * out / in;                       /* first o with ceil((o + 1) * in / out) > i */
        *hi = ((i + 1) * out + in - 1) / in;      /* one past the last o with floor(o * in / out) <= i */
    } else {
        int64_t ip = i + pad;                     /* windows [o * s, o * s + k) in padded coordinates */
        *lo = ip < k ? 0 : (ip - k) / s + 1;
        *hi = ip / s + 1;
    }
    if (*lo < 0) *lo = 0;
    if (*hi > out) *hi = out;
}

/* Backward of AVG_POOL2D and ADAPTIVE_AVG_POOL2D as a gather: one thread per input element sums
 * grad y / divisor over the windows that hold it. */
template <typename T>
__global__ void avg_pool2d_backward_kernel(const T *__restrict__ gy, T *__restrict__ gx, pool_geom g, bool adaptive) {
    typedef ampc_opmath_t<T> acc_t;
    int64_t hw = g.h * g.w, ohw = g.oh * g.ow, total = g.planes * hw;
    POOL_LOOP(i, total) {
        int64_t p = i / hw, r = i - p * hw;
        int64_t ih = r / g.w, iw = r - ih * g.w;
        int64_t oh0, oh1, ow0, ow1;
        covering_outputs(ih, g.h, g.oh, g.kh, g.sh, g.ph, adaptive, &oh0, &oh1);
        covering_outputs(iw, g.w, g.ow, g.kw, g.sw, g.pw, adaptive, &ow0, &ow1);
        const T *plane = gy + p * ohw;
        acc_t s = 0;
        for (int64_t oh = oh0; oh < oh1; oh++)
            for (int64_t ow = ow0; ow < ow1; ow++) {
                avg_window wnd = avg_window_of(g, adaptive, oh, ow);
                if (ih < wnd.h0 || ih >= wnd.h1 || iw < wnd.w0 || iw >= wnd.w1) continue;
                s += ampc_load(plane, oh * g.ow + ow) / (acc_t)wnd.divisor;
            }
        gx[i] = ampc_convert<T>(s);
    }
}

/* Forward and backward of AVG_POOL2D (w: its window) and ADAPTIVE_AVG_POOL2D (w NULL), src -> dst. */
static ampc_status avg_pool_run(ampc_op op, const ampc_tensor *src, ampc_tensor *dst, const ampc_avg_pool2d_args *w) {
    bool backward = op == AMPC_OP_AVG_POOL2D_BACKWARD || op == AMPC_OP_ADAPTIVE_AVG_POOL2D_BACKWARD;
    if (src->dtype != dst->dtype)
        return ampc_set_error(AMPC_E_TYPE, "%s: CUDA kernel expects input and output of one dtype", ampc_op_name(op));
    const ampc_tensor *x = backward ? dst : src, *y = backward ? src : dst;
    static const int64_t one[2] = {1, 1};
    pool_geom g = pool_geom_of(x, y, w ? w->kernel : NULL, w ? w->stride : NULL, w ? w->padding : NULL, one);
    if (w) g.count_include_pad = w->count_include_pad, g.divisor_override = w->divisor_override;
    bool adaptive = !w;
    int64_t total = ampc_numel(dst);
    if (total == 0) return AMPC_OK;
    ampc_cuda_guard guard(dst);
    cudaStream_t s = ampc_cuda_stream_of(dst);
    AMPC_CUDA_SWITCH_FLOATING(dst->dtype, ampc_op_name(op), {
        const scalar_t *sp = (const scalar_t *)ampc_data_ptr(src);
        scalar_t *dp = (scalar_t *)ampc_data_ptr(dst);
        if (backward)
            avg_pool2d_backward_kernel<scalar_t><<<pool_blocks(total), POOL_THREADS, 0, s>>>(sp, dp, g, adaptive);
        else
            avg_pool2d_kernel<scalar_t><<<pool_blocks(total), POOL_THREADS, 0, s>>>(sp, dp, g, adaptive);
    });
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

static ampc_status cuda_avg_pool2d(ampc_op op, const ampc_avg_pool2d_args *a) {
    return avg_pool_run(op, a->in, a->out, a);
}

static ampc_status cuda_adaptive_avg_pool2d(ampc_op op, const ampc_adaptive_pool2d_args *a) {
    return avg_pool_run(op, a->in, a->out, NULL);
}

/* IM2COL and COL2IM share their schema (the frontend fills one geometry for both). */
static ampc_status cuda_cols(ampc_op op, const ampc_im2col_args *a) {
    return op == AMPC_OP_IM2COL ? cuda_im2col(op, a) : cuda_col2im(op, a);
}

extern "C" void ampc_cuda_register_nn_conv_pool(void) {
    ampc_register_im2col(AMPC_CUDA, cuda_cols);
    ampc_register_max_pool2d(AMPC_CUDA, cuda_max_pool2d);
    ampc_register_max_pool2d_backward(AMPC_CUDA, cuda_max_pool2d_backward);
    ampc_register_avg_pool2d(AMPC_CUDA, cuda_avg_pool2d);
    ampc_register_adaptive_pool2d(AMPC_CUDA, cuda_adaptive_avg_pool2d);
}
