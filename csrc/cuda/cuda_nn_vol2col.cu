/* cuda_nn_vol2col.cu: VOL2COL and COL2VOL on CUDA, the 3-d counterparts of im2col/col2im in
 * cuda_nn_conv_pool.cu, with the semantics of cpu/cpu_nn_vol2col.c.
 *
 * VOL2COL: one thread per (volume, od, oh, ow) writes that position's kd*kh*kw column entries
 * (bits copied, padding zero bits). COL2VOL: one thread per volume element gathers the column
 * entries copied from it (no atomics, deterministic), summed in the opmath type. */
#include "../core/kernel_args.h"
#include "cuda_common.cuh"

#define VOL_THREADS 256

static unsigned vol_blocks(int64_t n) {
    int64_t b = (n + VOL_THREADS - 1) / VOL_THREADS;
    return (unsigned)(b < 1 ? 1 : b > 65535 * 16 ? 65535 * 16 : b);
}

#define VOL_LOOP(i, n) \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

struct vol_geom {
    int64_t planes, d, h, w;
    int64_t kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw;
    int64_t od, oh, ow;
};

static vol_geom vol_geom_of(const ampc_tensor *x, const ampc_vol2col_args *a) {
    vol_geom g;
    g.planes = x->shape[0] * x->shape[1], g.d = x->shape[2], g.h = x->shape[3], g.w = x->shape[4];
    g.kd = a->kernel[0], g.kh = a->kernel[1], g.kw = a->kernel[2];
    g.sd = a->stride[0], g.sh = a->stride[1], g.sw = a->stride[2];
    g.pd = a->padding[0], g.ph = a->padding[1], g.pw = a->padding[2];
    g.dd = a->dilation[0], g.dh = a->dilation[1], g.dw = a->dilation[2];
    g.od = a->out_size[0], g.oh = a->out_size[1], g.ow = a->out_size[2];
    return g;
}

template <typename T>
__global__ void vol2col_kernel(const T *__restrict__ x, T *__restrict__ cols, vol_geom g) {
    int64_t l_n = g.od * g.oh * g.ow, total = g.planes * l_n, kk = g.kd * g.kh * g.kw;
    VOL_LOOP(i, total) {
        int64_t l = i % l_n, p = i / l_n;
        int64_t zw = l % g.ow, zh = (l / g.ow) % g.oh, zd = l / (g.ow * g.oh);
        const T *vol = x + p * g.d * g.h * g.w;
        T *col = cols + p * kk * l_n + l;
        int64_t d0 = zd * g.sd - g.pd, h0 = zh * g.sh - g.ph, w0 = zw * g.sw - g.pw;
        for (int64_t a = 0; a < g.kd; a++) {
            int64_t id = d0 + a * g.dd;
            for (int64_t b = 0; b < g.kh; b++) {
                int64_t ih = h0 + b * g.dh;
                bool in = id >= 0 && id < g.d && ih >= 0 && ih < g.h;
                for (int64_t c = 0; c < g.kw; c++) {
                    int64_t iw = w0 + c * g.dw;
                    col[((a * g.kh + b) * g.kw + c) * l_n] =
                        in && iw >= 0 && iw < g.w ? vol[(id * g.h + ih) * g.w + iw] : (T)0;
                }
            }
        }
    }
}

/* The output positions z along one dim whose window [z*s - p, z*s - p + ext) holds x_pad = x + p. */
__device__ __forceinline__ void covering(int64_t x_pad, int64_t ext, int64_t s, int64_t out, int64_t *lo, int64_t *hi) {
    *lo = x_pad < ext ? 0 : (x_pad - ext) / s + 1;
    *hi = x_pad / s + 1 < out ? x_pad / s + 1 : out;
}

template <typename T>
__global__ void col2vol_kernel(const T *__restrict__ cols, T *__restrict__ x, vol_geom g) {
    typedef ampc_opmath_t<T> acc_t;
    int64_t vol = g.d * g.h * g.w, l_n = g.od * g.oh * g.ow, total = g.planes * vol;
    int64_t ed = (g.kd - 1) * g.dd + 1, eh = (g.kh - 1) * g.dh + 1, ew = (g.kw - 1) * g.dw + 1;
    VOL_LOOP(i, total) {
        int64_t p = i / vol, r = i - p * vol;
        int64_t xd = r / (g.h * g.w) + g.pd, xh = (r / g.w) % g.h + g.ph, xw = r % g.w + g.pw;
        int64_t d0, d1, h0, h1, w0, w1;
        covering(xd, ed, g.sd, g.od, &d0, &d1);
        covering(xh, eh, g.sh, g.oh, &h0, &h1);
        covering(xw, ew, g.sw, g.ow, &w0, &w1);
        const T *pc = cols + p * g.kd * g.kh * g.kw * l_n;
        acc_t s = 0;
        for (int64_t zd = d0; zd < d1; zd++) {
            int64_t td = xd - zd * g.sd;
            if (td % g.dd != 0) continue;
            for (int64_t zh = h0; zh < h1; zh++) {
                int64_t th = xh - zh * g.sh;
                if (th % g.dh != 0) continue;
                for (int64_t zw = w0; zw < w1; zw++) {
                    int64_t tw = xw - zw * g.sw;
                    if (tw % g.dw != 0) continue;
                    int64_t row = ((td / g.dd) * g.kh + th / g.dh) * g.kw + tw / g.dw;
                    s += ampc_load(pc, row * l_n + (zd * g.oh + zh) * g.ow + zw);
                }
            }
        }
        x[i] = ampc_convert<T>(s);
    }
}

static ampc_status cuda_vol_cols(ampc_op op, const ampc_vol2col_args *a) {
    bool to_cols = op == AMPC_OP_VOL2COL;
    const ampc_tensor *vol = to_cols ? a->in : a->out;
    if (a->in->dtype != a->out->dtype)
        return ampc_set_error(AMPC_E_TYPE, "%s: columns (%s) and volume (%s) must have one dtype",
                              to_cols ? "vol2col" : "col2vol", ampc_dtype_name(a->out->dtype),
                              ampc_dtype_name(a->in->dtype));
    vol_geom g = vol_geom_of(vol, a);
    int64_t total = to_cols ? g.planes * g.od * g.oh * g.ow : ampc_numel(a->out);
    if (total == 0 || ampc_numel(a->out) == 0) return AMPC_OK;
    ampc_cuda_guard guard(a->out);
    cudaStream_t s = ampc_cuda_stream_of(a->out);
    if (to_cols) {
        AMPC_CUDA_SWITCH_BITS(vol->dtype, "vol2col", {
            vol2col_kernel<bits_t><<<vol_blocks(total), VOL_THREADS, 0, s>>>((const bits_t *)ampc_data_ptr(a->in),
                                                                             (bits_t *)ampc_data_ptr(a->out), g);
        });
    } else {
        AMPC_CUDA_SWITCH_FLOATING(vol->dtype, "col2vol", {
            col2vol_kernel<scalar_t><<<vol_blocks(total), VOL_THREADS, 0, s>>>(
                (const scalar_t *)ampc_data_ptr(a->in), (scalar_t *)ampc_data_ptr(a->out), g);
        });
    }
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

extern "C" void ampc_cuda_register_nn_vol2col(void) {
    ampc_register_vol2col(AMPC_CUDA, cuda_vol_cols);
}
