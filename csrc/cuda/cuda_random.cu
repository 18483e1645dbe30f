/* cuda_random.cu: the RANDOM kernels on CUDA (UNIFORM, NORMAL, RANDINT, BERNOULLI from Philox,
 * and ARANGE), and dropout with its backward, masked_scale.
 *
 * One thread per Philox block: it computes the block's elements with the transforms of
 * core/random_transforms.h, shared with the CPU kernels, so a seed gives the same tensor on
 * both devices (uniform, random_, bernoulli and dropout masks bit for bit; normal samples within
 * an ulp of double, philox.h). Element i is the output's row-major index, so strides never
 * change the values; a contiguous output takes one aligned vector store per block.
 *
 * Dropout follows cpu_nn_misc.c exactly: element i keeps when philox_u32(word offset + i) <
 * 1 - p (the BERNOULLI transform over the same words), y = x * (1 / (1 - p)) in double, rounded
 * once; masked_scale (its backward) is y = keep ? g * scale : 0, also in double. Both are
 * memory bound, so the double arithmetic costs nothing and both devices store the same bits. */
#include "../core/random_transforms.h"
#include "../core/kernel_args.h"
#include "cuda_common.cuh"

/* Four consecutive elements as one aligned store (used when 4 * sizeof(T) <= 16). */
template <typename T> struct alignas(4 * sizeof(T)) pack4 {
    T v[4];
};

/* True when `p` is aligned for pack4<T>. */
template <typename T> static bool pack4_aligned(const void *p) {
    return 4 * sizeof(T) <= 16 && (uintptr_t)p % (4 * sizeof(T)) == 0;
}

/* ---------------------------------------------------------------- RANDOM */

template <typename T, bool CONTIG, bool VEC>
__global__ void random_kernel(ampc_random_params params, T *out, int64_t n, ampc_cuda_layout layout) {
    ampc_random_params p = params; /* a local copy: taking a kernel parameter's address forces a stack copy */
    int64_t n_blocks = (n + p.per_block - 1) / p.per_block;
    bool ints = ampc_random_makes_ints(&p);
    AMPC_CUDA_KERNEL_LOOP(k, n_blocks) {
        int64_t first = k * p.per_block;
        int count = n - first < p.per_block ? (int)(n - first) : p.per_block;
        if (count == 4) {
            /* a full block of four: a constant count lets the compiler keep the arrays in
             * registers (the general path below goes through the stack) */
            double d[4];
            int64_t iv[4];
            ampc_random_block(&p, (uint64_t)k, 4, d, iv);
            pack4<T> pk;
#pragma unroll
            for (int s = 0; s < 4; s++) pk.v[s] = ints ? ampc_convert<T>(iv[s]) : ampc_convert<T>(d[s]);
            if constexpr (VEC) {
                *(pack4<T> *)(out + first) = pk;
            } else {
#pragma unroll
                for (int s = 0; s < 4; s++) out[CONTIG ? first + s : ampc_cuda_offset(layout, first + s)] = pk.v[s];
            }
            continue;
        }
        double d[4];
        int64_t iv[4];
        ampc_random_block(&p, (uint64_t)k, count, d, iv);
        for (int s = 0; s < count; s++) {
            T v = ints ? ampc_convert<T>(iv[s]) : ampc_convert<T>(d[s]);
            out[CONTIG ? first + s : ampc_cuda_offset(layout, first + s)] = v;
        }
    }
}

/* ARANGE: int64 arithmetic for int start/step into an integral output, else double (as on the
 * CPU, with a separate multiply and add so both devices round alike). */
template <typename T, bool CONTIG>
__global__ void arange_kernel(T *out, int64_t n, ampc_cuda_layout layout, bool ints, int64_t istart, int64_t istep,
                              double dstart, double dstep) {
    AMPC_CUDA_KERNEL_LOOP(i, n) {
        int64_t off = CONTIG ? i : ampc_cuda_offset(layout, i);
        if (ints) out[off] = ampc_convert<T>((int64_t)((uint64_t)istart + (uint64_t)i * (uint64_t)istep));
        else out[off] = ampc_convert<T>(ampc_dadd(dstart, ampc_dmul((double)i, dstep)));
    }
}

template <typename T>
static ampc_status launch_random(const ampc_random_params &p, ampc_tensor *t, int64_t n, cudaStream_t stream) {
    ampc_cuda_layout layout = ampc_cuda_layout_of(t);
    T *out = (T *)ampc_data_ptr(t);
    int64_t n_blocks = (n + p.per_block - 1) / p.per_block;
    unsigned grid = ampc_cuda_blocks(n_blocks);
    if (layout.contiguous && p.per_block == 4 && pack4_aligned<T>(out))
        random_kernel<T, true, true><<<grid, AMPC_CUDA_THREADS, 0, stream>>>(p, out, n, layout);
    else if (layout.contiguous)
        random_kernel<T, true, false><<<grid, AMPC_CUDA_THREADS, 0, stream>>>(p, out, n, layout);
    else
        random_kernel<T, false, false><<<grid, AMPC_CUDA_THREADS, 0, stream>>>(p, out, n, layout);
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

/* UNIFORM, NORMAL, RANDINT, BERNOULLI: cuda_uniform, ... (one kernel per schema) launch the draws here. */
static ampc_status random_fill(const ampc_random_params *p, ampc_tensor *t) {
    int64_t n = ampc_numel(t);
    if (n == 0) return AMPC_OK;
    ampc_cuda_guard guard(t);
    cudaStream_t stream = ampc_cuda_stream_of(t);
    AMPC_CUDA_SWITCH_ALL(t->dtype, ampc_op_name((ampc_op)p->op), { return launch_random<scalar_t>(*p, t, n, stream); })
    return AMPC_OK;
}
AMPC_RANDOM_KERNELS(cuda, random_fill)

static ampc_status cuda_arange(ampc_op op, const ampc_arange_args *ar) {
    ampc_tensor *t = ar->out;
    int64_t n = ampc_numel(t);
    if (n == 0) return AMPC_OK;
    ampc_cuda_guard guard(t);
    cudaStream_t stream = ampc_cuda_stream_of(t);
    bool ints = ar->start.kind == AMPC_SCALAR_INT && ar->step.kind == AMPC_SCALAR_INT &&
                !ampc_dtype_is_floating(t->dtype);
    int64_t istart = ampc_scalar_to_int(ar->start), istep = ampc_scalar_to_int(ar->step);
    double dstart = ampc_scalar_to_double(ar->start), dstep = ampc_scalar_to_double(ar->step);
    ampc_cuda_layout layout = ampc_cuda_layout_of(t);
    AMPC_CUDA_SWITCH_ALL(t->dtype, "arange", {
        if (layout.contiguous)
            arange_kernel<scalar_t, true><<<ampc_cuda_blocks(n), AMPC_CUDA_THREADS, 0, stream>>>(
                (scalar_t *)ampc_data_ptr(t), n, layout, ints, istart, istep, dstart, dstep);
        else
            arange_kernel<scalar_t, false><<<ampc_cuda_blocks(n), AMPC_CUDA_THREADS, 0, stream>>>(
                (scalar_t *)ampc_data_ptr(t), n, layout, ints, istart, istep, dstart, dstep);
        AMPC_CUDA_CHECK_LAUNCH();
    })
    return AMPC_OK;
}

/* ---------------------------------------------------------------- dropout */

/* One thread per Philox block of four elements: keep mask (one 32-bit store when aligned) and
 * y = keep ? x * scale : 0. x, y and mask are contiguous (the frontend's contract). */
template <typename T, bool VEC>
__global__ void dropout_kernel(const T *x, T *y, bool *mask, int64_t n, uint64_t seed, uint64_t block0, double keep_p,
                               double scale) {
    AMPC_CUDA_KERNEL_LOOP(k, (n + 3) / 4) {
        ampc_philox_block blk = ampc_philox_at(seed, block0 + (uint64_t)k);
        int64_t first = 4 * k;
        int count = n - first < 4 ? (int)(n - first) : 4;
        if constexpr (VEC) {
            if (count == 4) {
                pack4<T> xv = *(const pack4<T> *)(x + first), yv;
                uint32_t bits = 0;
                for (int s = 0; s < 4; s++) {
                    bool keep = ampc_philox_u32(blk.w[s]) < keep_p;
                    bits |= (uint32_t)keep << (8 * s); /* little endian: byte s is element s */
                    yv.v[s] = ampc_convert<T>(keep ? (double)ampc_load(xv.v, s) * scale : 0.0);
                }
                *(pack4<T> *)(y + first) = yv;
                *(uint32_t *)(mask + first) = bits;
                continue;
            }
        }
        for (int s = 0; s < count; s++) {
            bool keep = ampc_philox_u32(blk.w[s]) < keep_p;
            mask[first + s] = keep;
            y[first + s] = ampc_convert<T>(keep ? (double)ampc_load(x, first + s) * scale : 0.0);
        }
    }
}

/* x -> y, bool keep mask; p; seed/offset reserved by the frontend. */
static ampc_status cuda_dropout(ampc_op op, const ampc_dropout_args *a) {
    const ampc_tensor *x = a->x;
    ampc_tensor *y = a->y, *mask = a->mask;
    int64_t n = ampc_numel(x);
    if (y->dtype != x->dtype || mask->dtype != AMPC_BOOL || ampc_numel(y) != n || ampc_numel(mask) != n)
        return ampc_set_error(AMPC_E_RUNTIME, "%s: expects y of x's dtype and a bool mask of x's size",
                              ampc_op_name(op));
    if (n == 0) return AMPC_OK;
    double p = a->p, keep_p = 1 - p, scale = p < 1 ? 1 / (1 - p) : 0;
    uint64_t block0 = a->offset / 4;
    ampc_cuda_guard guard(y);
    cudaStream_t stream = ampc_cuda_stream_of(y);
    unsigned grid = ampc_cuda_blocks((n + 3) / 4);
    const void *xp = ampc_data_ptr(x);
    void *yp = ampc_data_ptr(y), *mp = ampc_data_ptr(mask);
    AMPC_CUDA_SWITCH_FLOATING(x->dtype, "dropout", {
        if (pack4_aligned<scalar_t>(xp) && pack4_aligned<scalar_t>(yp) && (uintptr_t)mp % 4 == 0)
            dropout_kernel<scalar_t, true><<<grid, AMPC_CUDA_THREADS, 0, stream>>>(
                (const scalar_t *)xp, (scalar_t *)yp, (bool *)mp, n, a->seed, block0, keep_p, scale);
        else
            dropout_kernel<scalar_t, false><<<grid, AMPC_CUDA_THREADS, 0, stream>>>(
                (const scalar_t *)xp, (scalar_t *)yp, (bool *)mp, n, a->seed, block0, keep_p, scale);
        AMPC_CUDA_CHECK_LAUNCH();
    })
    return AMPC_OK;
}

/* out[0] = in[0] * in[1] (mask, any dtype; bool from dropout) * scalars[0]; contiguous. */
template <typename T, bool BOOL_MASK>
__global__ void masked_scale_kernel(const T *g, const void *mask, int mask_dtype, T *y, int64_t n, double scale) {
    AMPC_CUDA_KERNEL_LOOP(i, n) {
        bool keep = BOOL_MASK ? ((const uint8_t *)mask)[i] != 0 : ampc_load_dyn<double>(mask, mask_dtype, i) != 0.0;
        y[i] = ampc_convert<T>(keep ? (double)ampc_load(g, i) * scale : 0.0);
    }
}

static ampc_status cuda_masked_scale(ampc_op op, const ampc_masked_scale_args *a) {
    const ampc_tensor *g = a->x, *mask = a->mask;
    ampc_tensor *y = a->out;
    int64_t n = ampc_numel(g);
    if (y->dtype != g->dtype || ampc_numel(mask) != n || ampc_numel(y) != n)
        return ampc_set_error(AMPC_E_RUNTIME, "%s: expects y of the grad's dtype and a mask of its size",
                              ampc_op_name(op));
    if (n == 0) return AMPC_OK;
    double scale = a->scale;
    ampc_cuda_guard guard(y);
    cudaStream_t stream = ampc_cuda_stream_of(y);
    const void *mp = ampc_data_ptr(mask);
    int mdt = (int)mask->dtype;
    AMPC_CUDA_SWITCH_FLOATING(g->dtype, "masked_scale", {
        const scalar_t *gp = (const scalar_t *)ampc_data_ptr(g);
        scalar_t *yp = (scalar_t *)ampc_data_ptr(y);
        if (mask->dtype == AMPC_BOOL)
            masked_scale_kernel<scalar_t, true><<<ampc_cuda_blocks(n), AMPC_CUDA_THREADS, 0, stream>>>(gp, mp, mdt, yp,
                                                                                                    n, scale);
        else
            masked_scale_kernel<scalar_t, false><<<ampc_cuda_blocks(n), AMPC_CUDA_THREADS, 0, stream>>>(gp, mp, mdt,
                                                                                                     yp, n, scale);
        AMPC_CUDA_CHECK_LAUNCH();
    })
    return AMPC_OK;
}

extern "C" void ampc_cuda_register_random(void) {
    ampc_register_uniform(AMPC_CUDA, cuda_uniform);
    ampc_register_normal(AMPC_CUDA, cuda_normal);
    ampc_register_randint(AMPC_CUDA, cuda_randint);
    ampc_register_bernoulli(AMPC_CUDA, cuda_bernoulli);
    ampc_register_arange(AMPC_CUDA, cuda_arange);
    ampc_register_dropout(AMPC_CUDA, cuda_dropout);
    ampc_register_masked_scale(AMPC_CUDA, cuda_masked_scale);
}
