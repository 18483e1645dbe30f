/* cuda_nn_pad.cu: the pad rows on CUDA (CONSTANT_PAD_ND, REFLECTION_PAD, REPLICATION_PAD,
 * CIRCULAR_PAD and PAD_BACKWARD), with the semantics of cpu/cpu_nn_pad.c over the same per-dim
 * tables (core/nn_pad.c; layout in ops.def).
 *
 * Forward: one thread per output element, a copy of bits (any dtype) or the fill bits. Backward:
 * one thread per input element gathers the output positions that read it from the tables'
 * inverse (CSR per dim), so there are no atomics and the sums do not depend on scheduling; they
 * run in the opmath type (fp32 for fp16/bf16, double for fp64) and round once. */
#include "../core/kernel_args.h"
#include "cuda_common.cuh"

#define PAD_THREADS 256

static unsigned pad_blocks(int64_t n) {
    int64_t b = (n + PAD_THREADS - 1) / PAD_THREADS;
    return (unsigned)(b < 1 ? 1 : b > 65535 * 16 ? 65535 * 16 : b);
}

#define PAD_LOOP(i, n) \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

/* x (P, D, H, W) the unpadded side, y (P, OD, OH, OW) the padded one; the table's parts as offsets
 * into it. */
struct pad_geom {
    int64_t p, d, h, w, od, oh, ow;
    int64_t src_d, src_h, src_w, ptr_d, ptr_h, ptr_w, idx_d, idx_h, idx_w;
};

static pad_geom pad_geom_of(const ampc_tensor *x4, const ampc_tensor *y4) {
    pad_geom g;
    g.p = x4->shape[0], g.d = x4->shape[1], g.h = x4->shape[2], g.w = x4->shape[3];
    g.od = y4->shape[1], g.oh = y4->shape[2], g.ow = y4->shape[3];
    g.src_d = 0, g.src_h = g.od, g.src_w = g.src_h + g.oh;
    g.ptr_d = g.src_w + g.ow, g.ptr_h = g.ptr_d + g.d + 1, g.ptr_w = g.ptr_h + g.h + 1;
    g.idx_d = g.ptr_w + g.w + 1, g.idx_h = g.idx_d + g.od, g.idx_w = g.idx_h + g.oh;
    return g;
}

template <typename T>
__global__ void pad_forward_kernel(const T *__restrict__ x, T *__restrict__ y, const int64_t *__restrict__ tab,
                                   pad_geom g, T fill) {
    int64_t total = g.p * g.od * g.oh * g.ow;
    PAD_LOOP(i, total) {
        int64_t ow = i % g.ow, r = i / g.ow;
        int64_t oh = r % g.oh, od = (r / g.oh) % g.od, p = r / (g.oh * g.od);
        int64_t sd = tab[g.src_d + od], sh = tab[g.src_h + oh], sw = tab[g.src_w + ow];
        y[i] = sd < 0 || sh < 0 || sw < 0 ? fill : x[((p * g.d + sd) * g.h + sh) * g.w + sw];
    }
}

template <typename T>
__global__ void pad_backward_kernel(const T *__restrict__ gy, T *__restrict__ gx, const int64_t *__restrict__ tab,
                                    pad_geom g) {
    typedef ampc_opmath_t<T> acc_t;
    int64_t total = g.p * g.d * g.h * g.w;
    PAD_LOOP(i, total) {
        int64_t w = i % g.w, r = i / g.w;
        int64_t h = r % g.h, d = (r / g.h) % g.d, p = r / (g.h * g.d);
        acc_t s = 0;
        for (int64_t a = tab[g.ptr_d + d]; a < tab[g.ptr_d + d + 1]; a++)
            for (int64_t b = tab[g.ptr_h + h]; b < tab[g.ptr_h + h + 1]; b++) {
                int64_t row = ((p * g.od + tab[g.idx_d + a]) * g.oh + tab[g.idx_h + b]) * g.ow;
                for (int64_t c = tab[g.ptr_w + w]; c < tab[g.ptr_w + w + 1]; c++)
                    s += ampc_load(gy, row + tab[g.idx_w + c]);
            }
        gx[i] = ampc_convert<T>(s);
    }
}

static ampc_status cuda_pad(ampc_op op, const ampc_pad_args *a) {
    bool backward = op == AMPC_OP_PAD_BACKWARD;
    const ampc_tensor *x4 = backward ? a->out : a->in, *y4 = backward ? a->in : a->out;
    if (a->in->dtype != a->out->dtype)
        return ampc_set_error(AMPC_E_TYPE, "pad: input (%s) and output (%s) must have one dtype",
                              ampc_dtype_name(a->in->dtype), ampc_dtype_name(a->out->dtype));
    pad_geom g = pad_geom_of(x4, y4);
    int64_t total = ampc_numel(a->out);
    if (total == 0) return AMPC_OK;
    ampc_cuda_guard guard(a->out);
    cudaStream_t s = ampc_cuda_stream_of(a->out);
    const int64_t *tab = (const int64_t *)ampc_data_ptr(a->table);
    if (backward) {
        AMPC_CUDA_SWITCH_FLOATING(a->out->dtype, "pad_backward", {
            pad_backward_kernel<scalar_t><<<pad_blocks(total), PAD_THREADS, 0, s>>>(
                (const scalar_t *)ampc_data_ptr(a->in), (scalar_t *)ampc_data_ptr(a->out), tab, g);
        });
    } else {
        AMPC_CUDA_SWITCH_BITS(a->out->dtype, "pad", {
            bits_t fill;
            memcpy(&fill, &a->fill_bits, sizeof fill);
            pad_forward_kernel<bits_t><<<pad_blocks(total), PAD_THREADS, 0, s>>>(
                (const bits_t *)ampc_data_ptr(a->in), (bits_t *)ampc_data_ptr(a->out), tab, g, fill);
        });
    }
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

extern "C" void ampc_cuda_register_nn_pad(void) {
    ampc_register_pad(AMPC_CUDA, cuda_pad);
}
