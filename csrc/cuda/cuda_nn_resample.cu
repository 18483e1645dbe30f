/* cuda_nn_resample.cu: the RESAMPLE rows on CUDA (UPSAMPLE_NEAREST/LINEAR/BICUBIC/AREA and
 * RESAMPLE_BACKWARD) with the semantics of cpu/cpu_nn_resample.c over the same taps
 * (core/nn_resample.c; layout in ops.def). One thread per output element sums its taps in the
 * opmath type (weights read as float64, converted once); the backward runs the same kernel over
 * the transposed taps, a gather with no atomics. */
#include "../core/kernel_args.h"
#include "cuda_common.cuh"

#define RESAMPLE_THREADS 256

static unsigned resample_blocks(int64_t n) {
    int64_t b = (n + RESAMPLE_THREADS - 1) / RESAMPLE_THREADS;
    return (unsigned)(b < 1 ? 1 : b > 65535 * 16 ? 65535 * 16 : b);
}

struct resample_geom {
    int64_t d, h, w, od, oh, ow, total;
    int64_t ptr[3], idx[3], wt[3]; /* offsets into the tables */
};

template <typename T>
__global__ void resample_kernel(const T *__restrict__ x, T *__restrict__ y, const int64_t *__restrict__ iv,
                                const double *__restrict__ wv, resample_geom g) {
    typedef ampc_opmath_t<T> acc_t;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < g.total; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t k = i % g.ow, r = i / g.ow;
        int64_t j = r % g.oh, a = (r / g.oh) % g.od, p = r / (g.oh * g.od);
        const int64_t *pd = iv + g.ptr[0], *ph = iv + g.ptr[1], *pw = iv + g.ptr[2];
        acc_t s = 0;
        for (int64_t ea = pd[a]; ea < pd[a + 1]; ea++)
            for (int64_t eb = ph[j]; eb < ph[j + 1]; eb++) {
                acc_t wab = (acc_t)(wv[g.wt[0] + ea] * wv[g.wt[1] + eb]);
                int64_t src = ((p * g.d + iv[g.idx[0] + ea]) * g.h + iv[g.idx[1] + eb]) * g.w;
                acc_t t = 0;
                for (int64_t ec = pw[k]; ec < pw[k + 1]; ec++)
                    t += (acc_t)wv[g.wt[2] + ec] * ampc_load(x, src + iv[g.idx[2] + ec]);
                s += wab * t;
            }
        y[i] = ampc_convert<T>(s);
    }
}

static ampc_status cuda_resample(ampc_op op, const ampc_resample_args *a) {
    if (a->in->dtype != a->out->dtype)
        return ampc_set_error(AMPC_E_TYPE, "interpolate: input (%s) and output (%s) must have one dtype",
                              ampc_dtype_name(a->in->dtype), ampc_dtype_name(a->out->dtype));
    resample_geom g;
    g.d = a->in->shape[1], g.h = a->in->shape[2], g.w = a->in->shape[3];
    g.od = a->out->shape[1], g.oh = a->out->shape[2], g.ow = a->out->shape[3];
    g.total = ampc_numel(a->out);
    if (g.total == 0) return AMPC_OK;
    int64_t rows[3] = {g.od, g.oh, g.ow}, at = 0, wat = 0;
    for (int d = 0; d < 3; d++) g.ptr[d] = at, at += rows[d] + 1;
    for (int d = 0; d < 3; d++) g.idx[d] = at, g.wt[d] = wat, at += a->nnz[d], wat += a->nnz[d];
    ampc_cuda_guard guard(a->out);
    cudaStream_t s = ampc_cuda_stream_of(a->out);
    AMPC_CUDA_SWITCH_FLOATING(a->out->dtype, "interpolate", {
        resample_kernel<scalar_t><<<resample_blocks(g.total), RESAMPLE_THREADS, 0, s>>>(
            (const scalar_t *)ampc_data_ptr(a->in), (scalar_t *)ampc_data_ptr(a->out),
            (const int64_t *)ampc_data_ptr(a->index), (const double *)ampc_data_ptr(a->weight), g);
    });
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

extern "C" void ampc_cuda_register_nn_resample(void) {
    ampc_register_resample(AMPC_CUDA, cuda_resample);
}
