/* cuda_reduce.cu: the REDUCE kernels on CUDA (sum, mean, prod, amax/amin, max/min with indices,
 * argmax/argmin, var/std, norm, logsumexp, any/all), with the semantics of cpu_reduce.c; CUMSUM
 * is in cuda_scan.cu and registered from here.
 *
 * The input is seen as kept dims x reduced dims (the plan of core/reduce_plan.h, which
 * cpu_reduce_loops.c runs too: size-1 dims dropped, dims sorted by stride and merged where
 * contiguous). Output element o, numbered
 * row-major over the kept dims, is reduced by a group of threads, mapped one of two ways:
 *   - rows, when the reduced elements lie closer together in memory (x.sum(-1)): 32 to 256
 *     threads per output stride over them, with 16-byte loads on contiguous rows; a warp
 *     shuffle, then shared memory, merges the threads;
 *   - columns, when the kept elements lie closer (x.sum(0), a bias gradient): neighbouring
 *     lanes take neighbouring outputs, so loads coalesce, threadIdx.y splits the reduced
 *     elements, and shared memory merges them. With few reduced elements (<= 16) this is one
 *     thread per output, whatever the layout.
 * When too few outputs are there to fill the GPU (a full reduction, a tall x.sum(0)), the reduced
 * range is also cut across blockIdx.y: each block writes a partial accumulator to scratch and
 * reduce_finish_kernel merges them. Every merge happens in a fixed order for a given shape and
 * GPU, without atomics, so results are deterministic.
 *
 * Accumulators: float for fp32/fp16/bf16, double when the input or the output is float64, int64
 * for integer and bool inputs (wrapping, as the CPU does), so results agree with the CPU (which
 * accumulates floats in double) within fp32 rounding of the sums, not bit for bit. var/std and
 * logsumexp take two passes, like the CPU's rows: the mean (the max) of each output, then the
 * squared deviations (the exponentials) around it. max/min/argmax/argmin keep (value, index)
 * pairs whose merge prefers a NaN, then the extreme, then the smaller index, so merging in any
 * order gives the CPU's answer: the first NaN, else the first extreme. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/kernel_args.h"
#include "../core/reduce_plan.h"
#include "cuda_reduce.cuh"
#include "cuda_reduce_ops.cuh"

#define RED_THREADS 256

/* ---------------------------------------------------------------- the plan */

/* The shared plan (core/reduce_plan.h: kept and reduced dims, strides in elements, innermost
 * last), with what the kernels compute from it. */
struct red_plan : ampc_reduce_plan {
    int32_t red32; /* n_red < 2^32: reduced indices split with 32-bit divisions */

    /* Offsets of output o's first input element and of its element in each output. */
    __device__ __forceinline__ void kept_offsets(int64_t o, int64_t &in_off, int64_t &off0, int64_t &off1) const {
        in_off = off0 = off1 = 0;
        for (int d = nk - 1; d > 0; d--) {
            int64_t q = o / kshape[d], i = o - q * kshape[d];
            o = q;
            in_off += i * kin[d], off0 += i * ko0[d], off1 += i * ko1[d];
        }
        in_off += o * kin[0], off0 += o * ko0[0], off1 += o * ko1[0];
    }
    /* Offset of reduced element r (row-major over the reduced dims) from the output's first:
     * per element, so the divisions are 32-bit where they can be (an emulated 64-bit one costs
     * several times more). */
    __device__ __forceinline__ int64_t red_offset(int64_t r) const {
        if (nr == 1) return r * rin[0];
        int64_t off = 0;
        if (red32) {
            uint32_t q = (uint32_t)r;
            for (int d = nr - 1; d > 0; d--) {
                uint32_t n = (uint32_t)rshape[d], t = q / n;
                off += (int64_t)(q - t * n) * rin[d];
                q = t;
            }
            return off + (int64_t)q * rin[0];
        }
        for (int d = nr - 1; d > 0; d--) {
            int64_t q = r / rshape[d];
            off += (r - q * rshape[d]) * rin[d];
            r = q;
        }
        return off + r * rin[0];
    }
};

/* The plan of cpu_reduce_loops.c, in elements. `ordered` (the arg ops) keeps the reduced dims in
 * their logical order, so the flat index of a reduced element is PyTorch's. */
static void make_plan(red_plan *pl, const ampc_reduce_args *a, bool ordered) {
    ampc_reduce_plan_make(pl, a->input, a->values, a->indices, ordered);
    pl->red32 = pl->n_red <= (int64_t)UINT32_MAX;
}

/* ---------------------------------------------------------------- kernels */

/* Folds reduced elements r, r + step, ... (< re) of the output whose first element is at base. */
template <typename scalar_t, typename Op, typename P>
__device__ __forceinline__ typename Op::acc fold_strided(const Op &op, typename Op::acc a, const scalar_t *base,
                                                         const red_plan &pl, int64_t r, int64_t re, int step, P p) {
    if (pl.nr == 1) {
        const int64_t s = pl.rin[0];
#pragma unroll 4
        for (; r < re; r += step) a = op.update(a, ampc_load(base, r * s), r, p);
    } else { /* several reduced dims: the slow path, an offset per element */
        for (; r < re; r += step) a = op.update(a, ampc_load(base, pl.red_offset(r)), r, p);
    }
    return a;
}

/* The reduced elements [rb, re) of this block's part of the split (blockIdx.y of chunk each). */
__device__ __forceinline__ void block_red_range(const red_plan &pl, int64_t chunk, int64_t &rb, int64_t &re) {
    rb = (int64_t)blockIdx.y * chunk;
    re = ampc_min64(rb + chunk, pl.n_red);
}

/* Output o's result a: a partial for reduce_finish_kernel when the reduced range is split across
 * blockIdx.y, else stored. */
template <typename Op>
__device__ __forceinline__ void put_result(const red_plan &pl, const Op &op, const red_out &st,
                                           typename Op::acc *partials, int64_t o, int64_t off0, int64_t off1,
                                           const typename Op::acc &a) {
    if (gridDim.y > 1)
        partials[(int64_t)blockIdx.y * pl.n_out + o] = a;
    else
        op.store(st, o, off0, off1, a);
}

template <typename T> struct alignas(16) vec16 {
    T v[16 / sizeof(T)];
};

/* Rows: block (bx, by) reduces outputs g*by + ty, bx threads each (bx a multiple of 32), over
 * reduced elements [blockIdx.y * chunk, + chunk). `vec`: one contiguous row per output (nr == 1,
 * unit stride): 16-byte loads after a head that reaches alignment. With gridDim.y > 1 the
 * results are partials, merged by reduce_finish_kernel. */
template <typename scalar_t, typename Op>
__global__ void __launch_bounds__(RED_THREADS)
reduce_rows_kernel(const scalar_t *__restrict__ in, red_plan pl, Op op, red_out st, typename Op::acc *partials,
                   int64_t chunk, bool vec) {
    typedef typename Op::acc acc;
    typedef ampc_opmath_t<scalar_t> val_t;
    constexpr int V = 16 / sizeof(scalar_t);
    __shared__ acc warp_acc[RED_THREADS / 32];
    const int bx = blockDim.x, by = blockDim.y, tx = threadIdx.x, ty = threadIdx.y;
    int64_t rb, re;
    block_red_range(pl, chunk, rb, re);
    const int64_t groups = ampc_ceil_div(pl.n_out, by);
    for (int64_t g = blockIdx.x; g < groups; g += gridDim.x) {
        const int64_t o = g * by + ty;
        acc a = op.identity();
        int64_t in_off = 0, off0 = 0, off1 = 0;
        if (o < pl.n_out) {
            pl.kept_offsets(o, in_off, off0, off1);
            const auto p = op.param_of(o);
            const scalar_t *row = in + in_off;
            if (vec) {
                int64_t b = rb;
                int64_t mis = (int64_t)(((uintptr_t)(row + b) & 15) / sizeof(scalar_t));
                int64_t head = mis ? ampc_min64(V - mis, re - b) : 0; /* < V <= bx */
                if (tx < head) a = op.update(a, ampc_load(row, b + tx), b + tx, p);
                b += head;
                const int64_t nv = (re - b) / V;
                const vec16<scalar_t> *vp = reinterpret_cast<const vec16<scalar_t> *>(row + b);
                for (int64_t i = tx; i < nv; i += bx) {
                    vec16<scalar_t> x = vp[i];
#pragma unroll
                    for (int k = 0; k < V; k++) a = op.update(a, ampc_convert<val_t>(x.v[k]), b + i * V + k, p);
                }
                const int64_t t = b + nv * V + tx; /* the tail: < V elements */
                if (t < re) a = op.update(a, ampc_load(row, t), t, p);
            } else {
                a = fold_strided(op, a, row, pl, rb + tx, re, bx, p);
            }
        }
        a = warp_merge(op, a);
        if (bx > 32) {
            const int lane = tx & 31, warps = bx >> 5;
            __syncthreads(); /* the previous group may still be reading warp_acc */
            if (lane == 0) warp_acc[(ty * bx + tx) >> 5] = a;
            __syncthreads();
            if (tx < 32) a = warp_merge(op, lane < warps ? warp_acc[ty * warps + lane] : op.identity());
        }
        if (tx == 0 && o < pl.n_out) put_result(pl, op, st, partials, o, off0, off1, a);
    }
}

/* Columns: block (bx, by) reduces outputs g*bx + tx; the by threads of one output take every
 * by-th reduced element of [blockIdx.y * chunk, + chunk); a tree in shared memory merges them. */
template <typename scalar_t, typename Op>
__global__ void __launch_bounds__(RED_THREADS)
reduce_cols_kernel(const scalar_t *__restrict__ in, red_plan pl, Op op, red_out st, typename Op::acc *partials,
                   int64_t chunk) {
    typedef typename Op::acc acc;
    __shared__ acc cell[RED_THREADS];
    const int bx = blockDim.x, by = blockDim.y, tx = threadIdx.x, ty = threadIdx.y;
    int64_t rb, re;
    block_red_range(pl, chunk, rb, re);
    const int64_t groups = ampc_ceil_div(pl.n_out, bx);
    for (int64_t g = blockIdx.x; g < groups; g += gridDim.x) {
        const int64_t o = g * bx + tx;
        acc a = op.identity();
        int64_t in_off = 0, off0 = 0, off1 = 0;
        if (o < pl.n_out) {
            pl.kept_offsets(o, in_off, off0, off1);
            const auto p = op.param_of(o);
            a = fold_strided(op, a, in + in_off, pl, rb + ty, re, by, p);
        }
        if (by > 1) {
            __syncthreads(); /* the previous group may still be reading cell */
            cell[ty * bx + tx] = a;
            __syncthreads();
            for (int s = by >> 1; s > 0; s >>= 1) { /* by is a power of two */
                if (ty < s) cell[ty * bx + tx] = op.merge(cell[ty * bx + tx], cell[(ty + s) * bx + tx]);
                __syncthreads();
            }
            a = cell[tx];
        }
        if (ty == 0 && o < pl.n_out) put_result(pl, op, st, partials, o, off0, off1, a);
    }
}

/* Merges the `splits` partial results of each output (a warp per output) and stores them. */
template <typename Op>
__global__ void __launch_bounds__(RED_THREADS)
reduce_finish_kernel(red_plan pl, Op op, red_out st, const typename Op::acc *partials, int splits) {
    const int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    for (int64_t o = (int64_t)blockIdx.x * warps + (threadIdx.x >> 5); o < pl.n_out; o += (int64_t)gridDim.x * warps) {
        typename Op::acc a = op.identity();
        for (int y = lane; y < splits; y += 32) a = op.merge(a, partials[(int64_t)y * pl.n_out + o]);
        a = warp_merge(op, a);
        if (lane == 0) {
            int64_t in_off, off0, off1;
            pl.kept_offsets(o, in_off, off0, off1);
            op.store(st, o, off0, off1, a);
        }
    }
}

/* ---------------------------------------------------------------- launches */

struct red_ctx {
    red_plan pl;
    const void *in;
    cudaStream_t stream;
    int dev, sms;
};

struct red_launch {
    bool cols, vec;
    dim3 block, grid;
    int64_t chunk;
    int splits;
};

/* The mapping, block shape and split of the reduced range for one reduction. */
static red_launch choose_launch(const red_plan &pl, size_t itemsize, int sms) {
    red_launch L;
    /* columns when neighbouring outputs are nearer than neighbouring reduced elements (an
     * expanded, stride-0 dim counts as far: its loads hit one address) */
    L.cols = pl.n_out > 1 &&
             (ampc_reduce_stride_key(pl.kin[pl.nk - 1]) < ampc_reduce_stride_key(pl.rin[pl.nr - 1]) || pl.n_red <= 16);
    L.vec = !L.cols && pl.nr == 1 && pl.rin[0] == 1;
    int64_t V = L.vec ? (int64_t)(16 / itemsize) : 1;
    int bx, by;
    if (L.cols) {
        by = 1;
        while (by < 8 && by * 16 < pl.n_red) by *= 2;
        bx = RED_THREADS / by;
    } else { /* each thread gets at least ~8 loads before the row takes more threads */
        bx = 32;
        while (bx < RED_THREADS && (int64_t)bx * V * 8 < pl.n_red) bx *= 2;
        by = RED_THREADS / bx;
    }
    int64_t per_block = L.cols ? bx : by, red_threads = L.cols ? by : bx;
    int64_t groups = ampc_ceil_div(pl.n_out, per_block);
    int64_t target = (int64_t)sms * (2048 / RED_THREADS); /* blocks that fill every SM */
    int64_t splits = 1;
    if (groups < target) { /* split the reduced range, keeping >= 16 loads per thread and split */
        int64_t by_work = pl.n_red / (red_threads * V * 16);
        splits = ampc_max64(1, ampc_min64(ampc_min64(ampc_ceil_div(target, groups), by_work), 65535));
    }
    L.chunk = pl.n_red;
    if (splits > 1) {
        int64_t unit = red_threads * V;
        L.chunk = ampc_ceil_div(ampc_ceil_div(pl.n_red, splits), unit) * unit;
        splits = ampc_ceil_div(pl.n_red, L.chunk);
    }
    L.splits = (int)splits;
    L.block = dim3((unsigned)bx, (unsigned)by);
    L.grid = dim3((unsigned)ampc_min64(groups, (int64_t)1 << 30), (unsigned)splits);
    return L;
}

template <typename scalar_t, typename Op>
static ampc_status launch_main(const red_ctx &c, const red_launch &L, const Op &op, const red_out &st,
                               typename Op::acc *partials) {
    const scalar_t *in = (const scalar_t *)c.in;
    if (L.cols)
        reduce_cols_kernel<scalar_t, Op><<<L.grid, L.block, 0, c.stream>>>(in, c.pl, op, st, partials, L.chunk);
    else
        reduce_rows_kernel<scalar_t, Op><<<L.grid, L.block, 0, c.stream>>>(in, c.pl, op, st, partials, L.chunk, L.vec);
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

template <typename scalar_t, typename Op>
static ampc_status run_reduce(const red_ctx &c, const Op &op, const red_out &st) {
    typedef typename Op::acc acc;
    red_launch L = choose_launch(c.pl, sizeof(scalar_t), c.sms);
    if (L.splits == 1) return launch_main<scalar_t>(c, L, op, st, (acc *)nullptr);
    ampc_cuda_scratch partials(c.dev, (size_t)L.splits * (size_t)c.pl.n_out * sizeof(acc));
    if (!partials.ok()) return ampc_last_status();
    AMPC_TRY(launch_main<scalar_t>(c, L, op, st, partials.as<acc>()));
    int64_t blocks = ampc_min64(ampc_ceil_div(c.pl.n_out, RED_THREADS / 32), (int64_t)1 << 30);
    reduce_finish_kernel<Op><<<(unsigned)blocks, RED_THREADS, 0, c.stream>>>(c.pl, op, st, partials.as<acc>(), L.splits);
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

static ampc_status no_kernel(int fold, const char *what) {
    return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "CUDA reduction: fold %d has no %s kernel", fold, what);
}

/* Floating folds of a floating input, accumulating in acc_t. */
template <typename scalar_t, typename acc_t>
static ampc_status run_float_fold(const red_ctx &c, int fold, acc_t param, const acc_t *params, const red_out &st) {
#define FLOAT_FOLD_CASE(F) \
    case F: return run_reduce<scalar_t>(c, fold_op<acc_t, F>{param, params}, st);
    switch (fold) {
        FLOAT_FOLD_CASE(FOLD_sum)
        FLOAT_FOLD_CASE(FOLD_prod)
        FLOAT_FOLD_CASE(FOLD_max)
        FLOAT_FOLD_CASE(FOLD_min)
        FLOAT_FOLD_CASE(FOLD_abs_sum)
        FLOAT_FOLD_CASE(FOLD_sq_sum)
        FLOAT_FOLD_CASE(FOLD_pow_sum)
        FLOAT_FOLD_CASE(FOLD_abs_max)
        FLOAT_FOLD_CASE(FOLD_abs_min)
        FLOAT_FOLD_CASE(FOLD_nonzero)
        FLOAT_FOLD_CASE(FOLD_sqdev)
        FLOAT_FOLD_CASE(FOLD_expsum)
    default: return no_kernel(fold, "floating");
    }
#undef FLOAT_FOLD_CASE
}

/* Folds with an int64 accumulator: any/all of every dtype; sum, prod, max, min of integers. */
template <typename scalar_t> static ampc_status run_int_fold(const red_ctx &c, int fold, const red_out &st) {
    if (fold == FOLD_any) return run_reduce<scalar_t>(c, fold_op<int64_t, FOLD_any>{0, nullptr}, st);
    if (fold == FOLD_all) return run_reduce<scalar_t>(c, fold_op<int64_t, FOLD_all>{0, nullptr}, st);
    if constexpr (!is_float_storage<scalar_t>::value) {
        switch (fold) {
        case FOLD_sum: return run_reduce<scalar_t>(c, fold_op<int64_t, FOLD_sum>{0, nullptr}, st);
        case FOLD_prod: return run_reduce<scalar_t>(c, fold_op<int64_t, FOLD_prod>{0, nullptr}, st);
        case FOLD_max: return run_reduce<scalar_t>(c, fold_op<int64_t, FOLD_max>{0, nullptr}, st);
        case FOLD_min: return run_reduce<scalar_t>(c, fold_op<int64_t, FOLD_min>{0, nullptr}, st);
        default: break;
        }
    }
    return no_kernel(fold, "integer");
}

/* A floating fold in the input's precision, or in double when the output is float64 (a wider
 * dtype= for sum, mean, prod, norm, logsumexp). */
template <typename scalar_t>
static ampc_status run_float(const red_ctx &c, int fold, bool wide, double param, const red_out &st) {
    if constexpr (is_float_storage<scalar_t>::value) {
        if (wide || std::is_same<scalar_t, double>::value)
            return run_float_fold<scalar_t, double>(c, fold, param, nullptr, st);
        return run_float_fold<scalar_t, float>(c, fold, (float)param, nullptr, st);
    } else {
        return no_kernel(fold, "floating");
    }
}

/* var/std and logsumexp: pass 1 stores the mean (the max) of each output in scratch; pass 2 folds
 * the squared deviations from it (the exponentials below it) and finishes. */
template <typename scalar_t, typename acc_t>
static ampc_status run_two_pass(const red_ctx &c, ampc_op op, red_out st) {
    ampc_cuda_scratch buf(c.dev, (size_t)c.pl.n_out * sizeof(acc_t));
    if (!buf.ok()) return ampc_last_status();
    bool lse = op == AMPC_OP_LOGSUMEXP;
    red_out first = st;
    first.kind = lse ? ST_TO_BUF : ST_TO_MEAN_BUF;
    first.buf = buf.ptr;
    AMPC_TRY((run_float_fold<scalar_t, acc_t>(c, lse ? FOLD_max : FOLD_sum, (acc_t)0, nullptr, first)));
    st.kind = lse ? ST_LSE : op == AMPC_OP_STD ? ST_STD : ST_VAR;
    st.params = buf.ptr;
    return run_float_fold<scalar_t, acc_t>(c, lse ? FOLD_expsum : FOLD_sqdev, (acc_t)0, buf.as<acc_t>(), st);
}

template <typename scalar_t> static ampc_status run_arg(const red_ctx &c, bool is_max, const red_out &st) {
    typedef red_acc_t<scalar_t> acc_t;
    if (is_max) return run_reduce<scalar_t>(c, arg_op<acc_t, true>{}, st);
    return run_reduce<scalar_t>(c, arg_op<acc_t, false>{}, st);
}

static ampc_status cuda_reduce(ampc_op op, const ampc_reduce_args *a) {
    const ampc_tensor *in = a->input;
    ampc_tensor *out0 = a->values;
    ampc_cuda_guard guard(in);
    bool arg = op == AMPC_OP_MAX_DIM || op == AMPC_OP_MIN_DIM || op == AMPC_OP_ARGMAX || op == AMPC_OP_ARGMIN;
    red_ctx c;
    make_plan(&c.pl, a, arg);
    if (c.pl.n_out == 0) return AMPC_OK;
    c.in = ampc_data_ptr(in);
    c.stream = ampc_cuda_stream_of(in);
    c.dev = (int)in->device.index;
    c.sms = ampc_cuda_sm_count(c.dev);

    red_out st;
    memset(&st, 0, sizeof st);
    st.kind = ST_PLAIN;
    st.dtype0 = (int)out0->dtype;
    st.out0 = ampc_data_ptr(out0);
    st.out1 = a->indices ? (int64_t *)ampc_data_ptr(a->indices) : NULL;
    st.n_red = c.pl.n_red;
    st.p = op == AMPC_OP_NORM ? a->p : (op == AMPC_OP_VAR || op == AMPC_OP_STD) ? a->correction : 0.0;
    const char *name = ampc_op_name(op);
    bool in_float = ampc_dtype_is_floating(in->dtype);
    bool wide = out0->dtype == AMPC_FLOAT64; /* accumulate in double */
    ampc_status s = AMPC_OK;
    switch (op) {
    case AMPC_OP_SUM:
    case AMPC_OP_MEAN:
    case AMPC_OP_PROD: {
        /* the frontend sends integer inputs exactly when the output is an integer (or bool) */
        int fold = op == AMPC_OP_PROD ? FOLD_prod : FOLD_sum;
        if (op == AMPC_OP_MEAN) st.kind = ST_MEAN;
        if (!ampc_dtype_is_floating(out0->dtype)) {
            AMPC_CUDA_SWITCH_ALL(in->dtype, name, s = run_int_fold<scalar_t>(c, fold, st);)
        } else {
            AMPC_CUDA_SWITCH_FLOATING(in->dtype, name, s = run_float<scalar_t>(c, fold, wide, 0.0, st);)
        }
        return s;
    }
    case AMPC_OP_AMAX:
    case AMPC_OP_AMIN: {
        int fold = op == AMPC_OP_AMAX ? FOLD_max : FOLD_min;
        if (in_float) {
            AMPC_CUDA_SWITCH_FLOATING(in->dtype, name, s = run_float<scalar_t>(c, fold, wide, 0.0, st);)
        } else {
            AMPC_CUDA_SWITCH_ALL(in->dtype, name, s = run_int_fold<scalar_t>(c, fold, st);)
        }
        return s;
    }
    case AMPC_OP_ANY:
    case AMPC_OP_ALL: {
        int fold = op == AMPC_OP_ANY ? FOLD_any : FOLD_all;
        AMPC_CUDA_SWITCH_ALL(in->dtype, name, s = run_int_fold<scalar_t>(c, fold, st);)
        return s;
    }
    case AMPC_OP_NORM: {
        int fold = ampc_norm_fold(st.p); /* and how it finishes */
        st.kind = fold == FOLD_sq_sum ? ST_SQRT : fold == FOLD_pow_sum ? ST_ROOT : ST_PLAIN;
        AMPC_CUDA_SWITCH_FLOATING(in->dtype, name, s = run_float<scalar_t>(c, fold, wide, st.p, st);)
        return s;
    }
    case AMPC_OP_MAX_DIM:
    case AMPC_OP_MIN_DIM:
    case AMPC_OP_ARGMAX:
    case AMPC_OP_ARGMIN: {
        st.kind = (op == AMPC_OP_ARGMAX || op == AMPC_OP_ARGMIN) ? ST_INDEX : ST_VALUE_INDEX;
        bool is_max = op == AMPC_OP_MAX_DIM || op == AMPC_OP_ARGMAX;
        AMPC_CUDA_SWITCH_ALL(in->dtype, name, s = run_arg<scalar_t>(c, is_max, st);)
        return s;
    }
    case AMPC_OP_VAR:
    case AMPC_OP_STD:
    case AMPC_OP_LOGSUMEXP:
        AMPC_CUDA_SWITCH_FLOATING(in->dtype, name, {
            if (wide || std::is_same<scalar_t, double>::value)
                s = run_two_pass<scalar_t, double>(c, op, st);
            else
                s = run_two_pass<scalar_t, float>(c, op, st);
        })
        return s;
    default: return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "%s: not a CUDA reduction", name);
    }
}

/* Every ops.def row of schema `reduce`. */
extern "C" void ampc_cuda_register_reduce(void) {
    ampc_register_reduce(AMPC_CUDA, cuda_reduce);
    ampc_cuda_register_scan();
}
