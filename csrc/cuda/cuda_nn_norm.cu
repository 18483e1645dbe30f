/* cuda_nn_norm.cu: batch norm (STATS, APPLY, BACKWARD), layer norm and group norm (forward and
 * backward) on CUDA, with the semantics of csrc/cpu/cpu_nn_norm.c.
 *
 * Every tensor is contiguous and read and written in its own dtype (fp16 activations with fp32
 * weight and running stats is the autocast case); arithmetic runs in fp32 (double for fp64
 * input), as the ops.def NN preamble allows; "stats" tensors (mean, rstd, invstd) are fp32 or
 * fp64. Each op has a typed path for the common case (the big tensors x, y, grads of one dtype,
 * weight of that dtype or fp32) and a general path where every tensor's dtype is read at run
 * time (nn_dyn), which is slower but takes any mix.
 *
 * Layer norm, the transformer hot path, (M, D):
 *   forward   one warp per row (D <= 512) or one block per row (D <= 8192), the row held in
 *             registers (at most 16 values per thread), 128-bit loads and stores when D and the
 *             pointers allow; mean and variance in two passes over the registers.
 *   backward  grad x the same way (needs sum(g*w) and sum(g*w*xhat) per row); grad weight and
 *             grad bias as column sums: per-chunk partials (fixed chunks of rows) into scratch,
 *             then one thread per column adds the chunks in order (no float atomics, so the
 *             result is deterministic: PyTorch's and Apex's two-stage scheme).
 * Group norm (N, C, L), G groups: one block per (n, g) for the statistics and grad x (two-pass),
 *   one block per channel for grad weight and bias.
 * Batch norm (N, C, L): per-channel statistics over N * L from a 2-d split (channel, chunk of
 *   N * L): each block folds its chunk into (count, mean, M2) (shifted sums per thread, Chan's
 *   merge across threads), a second kernel merges the chunks of a channel in order and updates
 *   the running stats; APPLY and grad x are elementwise with per-channel coefficients computed
 *   once per channel (in double, as the CPU does). */
#include <math.h>

#include <type_traits>

#include "../core/kernel_args.h"
#include "cuda_common.cuh"

/* ---------------------------------------------------------------- element access */

/* Marks tensors whose dtype is known only at run time (the general path). */
struct nn_dyn {};

template <typename T> struct nn_elem {
    template <typename A> __device__ __forceinline__ static A ld(const void *p, int, int64_t i) {
        return ampc_convert<A>(((const T *)p)[i]);
    }
    template <typename A> __device__ __forceinline__ static void st(void *p, int, int64_t i, A v) {
        ((T *)p)[i] = ampc_convert<T>(v);
    }
};
template <> struct nn_elem<nn_dyn> {
    template <typename A> __device__ __forceinline__ static A ld(const void *p, int dt, int64_t i) {
        return ampc_load_dyn<A>(p, dt, i);
    }
    template <typename A> __device__ __forceinline__ static void st(void *p, int dt, int64_t i, A v) {
        ampc_store_dyn<A>(p, dt, i, v);
    }
};
template <typename T, typename A> __device__ __forceinline__ A nn_ld(const void *p, int dt, int64_t i) {
    return nn_elem<T>::template ld<A>(p, dt, i);
}
template <typename T, typename A> __device__ __forceinline__ void nn_st(void *p, int dt, int64_t i, A v) {
    nn_elem<T>::template st<A>(p, dt, i, v);
}

/* A tensor's data and dtype, or {NULL, 0} for an absent optional one. */
struct nn_ref {
    void *p;
    int dt;
};
static nn_ref ref_of(const ampc_tensor *t) {
    nn_ref r = {t ? ampc_data_ptr(t) : nullptr, t ? (int)t->dtype : 0};
    return r;
}
template <typename A> __device__ __forceinline__ A ref_ld(nn_ref r, int64_t i, A dflt) {
    return r.p ? ampc_load_dyn<A>(r.p, r.dt, i) : dflt;
}
template <typename A> __device__ __forceinline__ void ref_st(nn_ref r, int64_t i, A v) {
    if (r.p) ampc_store_dyn<A>(r.p, r.dt, i, v);
}

/* VEC elements loaded or stored as one access (128 bits when VEC * sizeof(T) == 16). */
template <typename T, int VEC> struct alignas(sizeof(T) * VEC) nn_vec {
    T v[VEC];
};

static bool aligned16(const void *p) { return p == nullptr || ((uintptr_t)p & 15) == 0; }

#define NN_THREADS 256
#define NN_MAX_BLOCKS (65535 * 16)

static unsigned nn_blocks(int64_t n, int threads) {
    int64_t b = (n + threads - 1) / threads;
    return (unsigned)(b < 1 ? 1 : b > NN_MAX_BLOCKS ? NN_MAX_BLOCKS : b);
}
static unsigned nn_grid(int64_t n) { return (unsigned)(n < 1 ? 1 : n > NN_MAX_BLOCKS ? NN_MAX_BLOCKS : n); }

#define NN_LOOP(i, n) \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

/* Runs the statements with io_t the storage type of the big tensors (or nn_dyn when `typed` is
 * false) and acc_t their arithmetic type (double for float64 input, else float). */
#define NN_SWITCH_IO(typed, xdt, what, ...)                                    \
    do {                                                                       \
        if (typed) {                                                           \
            AMPC_CUDA_SWITCH_FLOATING(xdt, what, {                             \
                typedef scalar_t io_t;                                         \
                typedef ampc_opmath_t<scalar_t> acc_t;                         \
                __VA_ARGS__                                                    \
            });                                                                \
        } else if ((xdt) == AMPC_FLOAT64) {                                    \
            typedef nn_dyn io_t;                                               \
            typedef double acc_t;                                              \
            __VA_ARGS__                                                        \
        } else {                                                               \
            typedef nn_dyn io_t;                                               \
            typedef float acc_t;                                               \
            __VA_ARGS__                                                        \
        }                                                                      \
    } while (0)

/* Sum over the threads that share a row: a warp (blockDim.x == 32, several rows per block) or
 * the whole block (blockDim.y == 1). Every thread of the row gets the result; the block case
 * synchronises, so all its threads must call it. */
template <typename A> __device__ __forceinline__ A row_sum(A v, A *shared) {
    if (blockDim.x == 32) return ampc_warp_sum(v);
    return ampc_block_sum(v, shared);
}

/* ---------------------------------------------------------------- layer norm */

/* Values of a row one thread holds in registers on the register path (16 keeps the backward,
 * which holds g and x, near 64 registers), and the rows that path takes (512 threads x 16). */
#define LN_VALS 16
#define LN_MAX_REG_D (512 * LN_VALS)
/* Rows per block in warp-per-row mode. */
#define LN_WARP_ROWS 4

/* The register path's launch shape for rows of nvec vectors of VEC values (at most LN_VALS
 * values, LN_VALS / VEC vectors, per thread): a warp per row when 32 threads hold it, else a
 * block of the fewest warps that do. */
template <int VEC> static void ln_shape(int64_t m, int64_t d, dim3 *grid, dim3 *block) {
    const int items = LN_VALS / VEC;
    int64_t nvec = d / VEC;
    if (nvec <= 32 * items) {
        *block = dim3(32, LN_WARP_ROWS);
        *grid = dim3(nn_grid((m + LN_WARP_ROWS - 1) / LN_WARP_ROWS));
    } else {
        int64_t per = (nvec + items - 1) / items;
        *block = dim3((unsigned)((per + 31) / 32 * 32), 1);
        *grid = dim3(nn_grid(m));
    }
}

/* y = (x - mean) * rstd * w + b per row of (M, D); mean, rstd (M) stats. x, y of type T, w and b
 * of type PT (NULL: 1 and 0). Thread tid of a row holds vectors tid, tid + G, ... in registers. */
template <typename T, typename PT, int VEC>
__global__ void __launch_bounds__(512) layer_norm_kernel(const T *__restrict__ x, const PT *__restrict__ w,
                                                          const PT *__restrict__ b, T *__restrict__ y, nn_ref mean,
                                                          nn_ref rstd, int64_t m, int d, ampc_opmath_t<T> eps) {
    typedef ampc_opmath_t<T> A;
    typedef nn_vec<T, VEC> V;
    constexpr int ITEMS = LN_VALS / VEC;
    __shared__ A shared[32];
    const int g = blockDim.x, tid = threadIdx.x, nvec = d / VEC;
    for (int64_t row = blockIdx.x * (int64_t)blockDim.y + threadIdx.y; row < m; row += (int64_t)gridDim.x * blockDim.y) {
        const V *xr = (const V *)(x + row * d);
        A v[ITEMS][VEC];
        A s = 0;
#pragma unroll
        for (int k = 0; k < ITEMS; k++) {
            int j = tid + k * g;
            if (j < nvec) {
                V t = xr[j];
#pragma unroll
                for (int e = 0; e < VEC; e++) {
                    v[k][e] = ampc_convert<A>(t.v[e]);
                    s += v[k][e];
                }
            }
        }
        A mu = row_sum(s, shared) / (A)d;
        A q = 0;
#pragma unroll
        for (int k = 0; k < ITEMS; k++)
            if (tid + k * g < nvec) {
#pragma unroll
                for (int e = 0; e < VEC; e++) {
                    A dv = v[k][e] - mu;
                    q += dv * dv;
                }
            }
        A var = row_sum(q, shared) / (A)d;
        A rs = (A)1 / sqrt(var + eps);
        V *yr = (V *)(y + row * d);
#pragma unroll
        for (int k = 0; k < ITEMS; k++) {
            int j = tid + k * g;
            if (j < nvec) {
                V t;
#pragma unroll
                for (int e = 0; e < VEC; e++) {
                    int col = j * VEC + e;
                    A wv = w ? ampc_convert<A>(w[col]) : (A)1, bv = b ? ampc_convert<A>(b[col]) : (A)0;
                    t.v[e] = ampc_convert<T>((v[k][e] - mu) * rs * wv + bv);
                }
                yr[j] = t;
            }
        }
        if (tid == 0) {
            ref_st(mean, row, mu);
            ref_st(rstd, row, rs);
        }
    }
}

/* The general path: one block per row, three passes over global memory, every dtype at run
 * time (rows longer than LN_MAX_REG_D, or mixed dtypes). */
template <typename A>
__global__ void layer_norm_general_kernel(nn_ref x, nn_ref w, nn_ref b, nn_ref y, nn_ref mean, nn_ref rstd, int64_t m,
                                          int64_t d, A eps) {
    __shared__ A shared[32];
    for (int64_t row = blockIdx.x; row < m; row += gridDim.x) {
        int64_t base = row * d;
        A s = 0;
        for (int64_t k = threadIdx.x; k < d; k += blockDim.x) s += ampc_load_dyn<A>(x.p, x.dt, base + k);
        A mu = ampc_block_sum(s, shared) / (A)d;
        A q = 0;
        for (int64_t k = threadIdx.x; k < d; k += blockDim.x) {
            A dv = ampc_load_dyn<A>(x.p, x.dt, base + k) - mu;
            q += dv * dv;
        }
        A rs = (A)1 / sqrt(ampc_block_sum(q, shared) / (A)d + eps);
        for (int64_t k = threadIdx.x; k < d; k += blockDim.x) {
            A xv = ampc_load_dyn<A>(x.p, x.dt, base + k);
            ampc_store_dyn<A>(y.p, y.dt, base + k, (xv - mu) * rs * ref_ld(w, k, (A)1) + ref_ld(b, k, (A)0));
        }
        if (threadIdx.x == 0) {
            ref_st(mean, row, mu);
            ref_st(rstd, row, rs);
        }
    }
}

template <typename T, typename PT, int VEC>
static void launch_layer_norm(const ampc_tensor *x, const ampc_tensor *w, const ampc_tensor *b, ampc_tensor *y,
                              ampc_tensor *mean, ampc_tensor *rstd, double eps, cudaStream_t s) {
    int64_t m = x->shape[0], d = x->shape[1];
    dim3 grid, block;
    ln_shape<VEC>(m, d, &grid, &block);
    layer_norm_kernel<T, PT, VEC><<<grid, block, 0, s>>>(
        (const T *)ampc_data_ptr(x), w ? (const PT *)ampc_data_ptr(w) : nullptr,
        b ? (const PT *)ampc_data_ptr(b) : nullptr, (T *)ampc_data_ptr(y), ref_of(mean), ref_of(rstd), m, (int)d,
        (ampc_opmath_t<T>)eps);
}

/* The dtype weight and bias share (x's when both are absent), or UNDEFINED when they differ. */
static ampc_dtype param_dtype(const ampc_tensor *x, const ampc_tensor *w, const ampc_tensor *b) {
    if (w && b && w->dtype != b->dtype) return AMPC_DTYPE_UNDEFINED;
    return w ? w->dtype : b ? b->dtype : x->dtype;
}

/* Whether rows of d elements at these pointers can move in 16-byte vectors of T. */
static bool vec_ok(int64_t d, size_t item, int n, const void *const *ptrs) {
    if (d % (int64_t)(16 / item) != 0) return false;
    for (int i = 0; i < n; i++)
        if (!aligned16(ptrs[i])) return false;
    return true;
}

static ampc_status cuda_layer_norm(ampc_op op, const ampc_layer_norm_args *a) {
    (void)op;
    const ampc_tensor *x = a->x, *w = a->weight, *b = a->bias;
    ampc_tensor *y = a->y, *mean = a->mean, *rstd = a->rstd;
    int64_t m = x->shape[0], d = x->shape[1];
    double eps = a->eps;
    if (m == 0) return AMPC_OK;
    ampc_cuda_guard guard(x);
    cudaStream_t s = ampc_cuda_stream_of(x);
    ampc_dtype pdt = param_dtype(x, w, b);
    bool fast = d <= LN_MAX_REG_D && y->dtype == x->dtype && (pdt == x->dtype || pdt == AMPC_FLOAT32);
    if (fast) {
        const void *ptrs[2] = {ampc_data_ptr(x), ampc_data_ptr(y)};
        bool vec = vec_ok(d, ampc_dtype_itemsize(x->dtype), 2, ptrs);
        AMPC_CUDA_SWITCH_FLOATING(x->dtype, "layer_norm", {
            constexpr int VEC = 16 / sizeof(scalar_t);
            if (pdt == x->dtype) {
                if (vec) launch_layer_norm<scalar_t, scalar_t, VEC>(x, w, b, y, mean, rstd, eps, s);
                else launch_layer_norm<scalar_t, scalar_t, 1>(x, w, b, y, mean, rstd, eps, s);
            } else {
                if (vec) launch_layer_norm<scalar_t, float, VEC>(x, w, b, y, mean, rstd, eps, s);
                else launch_layer_norm<scalar_t, float, 1>(x, w, b, y, mean, rstd, eps, s);
            }
        });
    } else if (x->dtype == AMPC_FLOAT64) {
        layer_norm_general_kernel<double><<<nn_grid(m), NN_THREADS, 0, s>>>(
            ref_of(x), ref_of(w), ref_of(b), ref_of(y), ref_of(mean), ref_of(rstd), m, d, eps);
    } else {
        layer_norm_general_kernel<float><<<nn_grid(m), NN_THREADS, 0, s>>>(
            ref_of(x), ref_of(w), ref_of(b), ref_of(y), ref_of(mean), ref_of(rstd), m, d, (float)eps);
    }
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

/* grad x of layer norm per row: gx = rstd * (g*w - mean(g*w) - xhat * mean(g*w*xhat)), with g
 * and x held in registers (the same layout as the forward). */
template <typename T, typename PT, int VEC>
__global__ void __launch_bounds__(512) layer_norm_grad_x_kernel(const T *__restrict__ g, const T *__restrict__ x,
                                                                 nn_ref mean, nn_ref rstd, const PT *__restrict__ w,
                                                                 T *__restrict__ gx, int64_t m, int d) {
    typedef ampc_opmath_t<T> A;
    typedef nn_vec<T, VEC> V;
    constexpr int ITEMS = LN_VALS / VEC;
    __shared__ A shared[32];
    const int nt = blockDim.x, tid = threadIdx.x, nvec = d / VEC;
    for (int64_t row = blockIdx.x * (int64_t)blockDim.y + threadIdx.y; row < m; row += (int64_t)gridDim.x * blockDim.y) {
        A mu = ref_ld(mean, row, (A)0), rs = ref_ld(rstd, row, (A)1);
        const V *gr = (const V *)(g + row * d), *xr = (const V *)(x + row * d);
        A gw[ITEMS][VEC], xh[ITEMS][VEC];
        A s1 = 0, s2 = 0; /* sums of g*w and g*w*xhat */
#pragma unroll
        for (int k = 0; k < ITEMS; k++) {
            int j = tid + k * nt;
            if (j < nvec) {
                V tg = gr[j], tx = xr[j];
#pragma unroll
                for (int e = 0; e < VEC; e++) {
                    int col = j * VEC + e;
                    A wv = w ? ampc_convert<A>(w[col]) : (A)1;
                    xh[k][e] = (ampc_convert<A>(tx.v[e]) - mu) * rs;
                    gw[k][e] = ampc_convert<A>(tg.v[e]) * wv;
                    s1 += gw[k][e];
                    s2 += gw[k][e] * xh[k][e];
                }
            }
        }
        A m1 = row_sum(s1, shared) / (A)d;
        A m2 = row_sum(s2, shared) / (A)d;
        V *out = (V *)(gx + row * d);
#pragma unroll
        for (int k = 0; k < ITEMS; k++) {
            int j = tid + k * nt;
            if (j < nvec) {
                V t;
#pragma unroll
                for (int e = 0; e < VEC; e++) t.v[e] = ampc_convert<T>(rs * (gw[k][e] - m1 - xh[k][e] * m2));
                out[j] = t;
            }
        }
    }
}

/* The general path of grad x: one block per row, two passes over global memory. */
template <typename A>
__global__ void layer_norm_grad_x_general_kernel(nn_ref g, nn_ref x, nn_ref mean, nn_ref rstd, nn_ref w, nn_ref gx,
                                                 int64_t m, int64_t d) {
    __shared__ A shared[32];
    for (int64_t row = blockIdx.x; row < m; row += gridDim.x) {
        int64_t base = row * d;
        A mu = ref_ld(mean, row, (A)0), rs = ref_ld(rstd, row, (A)1);
        A s1 = 0, s2 = 0;
        for (int64_t k = threadIdx.x; k < d; k += blockDim.x) {
            A gw = ampc_load_dyn<A>(g.p, g.dt, base + k) * ref_ld(w, k, (A)1);
            s1 += gw;
            s2 += gw * (ampc_load_dyn<A>(x.p, x.dt, base + k) - mu) * rs;
        }
        A m1 = ampc_block_sum(s1, shared) / (A)d;
        A m2 = ampc_block_sum(s2, shared) / (A)d;
        for (int64_t k = threadIdx.x; k < d; k += blockDim.x) {
            A gw = ampc_load_dyn<A>(g.p, g.dt, base + k) * ref_ld(w, k, (A)1);
            A xh = (ampc_load_dyn<A>(x.p, x.dt, base + k) - mu) * rs;
            ampc_store_dyn<A>(gx.p, gx.dt, base + k, rs * (gw - m1 - xh * m2));
        }
    }
}

/* Grad weight and bias, stage 1: block (column tile of 32, chunk of rows) sums g * xhat and g
 * over its rows (threadIdx.y strides the rows, then the 8 partial sums add in order) into
 * partial[chunk][0 or 1][col]. */
#define LN_COL_TILE 32
#define LN_COL_ROWS 8
template <typename T, typename A>
__global__ void layer_norm_param_partial_kernel(const void *g, int g_dt, const void *x, int x_dt, nn_ref mean,
                                                nn_ref rstd, int64_t m, int64_t d, int64_t rows_per_chunk, A *partial) {
    __shared__ A sw_sh[LN_COL_ROWS][LN_COL_TILE + 1], sb_sh[LN_COL_ROWS][LN_COL_TILE + 1];
    int64_t col = blockIdx.x * (int64_t)LN_COL_TILE + threadIdx.x, chunk = blockIdx.y;
    int64_t r0 = chunk * rows_per_chunk, r1 = r0 + rows_per_chunk < m ? r0 + rows_per_chunk : m;
    A sw = 0, sb = 0;
    if (col < d)
        for (int64_t r = r0 + threadIdx.y; r < r1; r += LN_COL_ROWS) {
            A mu = ref_ld(mean, r, (A)0), rs = ref_ld(rstd, r, (A)1);
            A gv = nn_ld<T, A>(g, g_dt, r * d + col);
            sw += gv * ((nn_ld<T, A>(x, x_dt, r * d + col) - mu) * rs);
            sb += gv;
        }
    sw_sh[threadIdx.y][threadIdx.x] = sw;
    sb_sh[threadIdx.y][threadIdx.x] = sb;
    __syncthreads();
    if (threadIdx.y == 0 && col < d) {
        for (int k = 1; k < LN_COL_ROWS; k++) sw += sw_sh[k][threadIdx.x], sb += sb_sh[k][threadIdx.x];
        partial[(chunk * 2) * d + col] = sw;
        partial[(chunk * 2 + 1) * d + col] = sb;
    }
}

/* Stage 2: one thread per column adds the chunks in order and stores grad weight / bias. */
template <typename A>
__global__ void layer_norm_param_final_kernel(const A *partial, int64_t chunks, int64_t d, nn_ref gw, nn_ref gb) {
    NN_LOOP(col, d) {
        A sw = 0, sb = 0;
        for (int64_t c = 0; c < chunks; c++) {
            sw += partial[(c * 2) * d + col];
            sb += partial[(c * 2 + 1) * d + col];
        }
        ref_st(gw, col, sw);
        ref_st(gb, col, sb);
    }
}

template <typename T, typename PT, int VEC>
static void launch_layer_norm_grad_x(const ampc_tensor *g, const ampc_tensor *x, const ampc_tensor *mean,
                                     const ampc_tensor *rstd, const ampc_tensor *w, ampc_tensor *gx, cudaStream_t s) {
    int64_t m = x->shape[0], d = x->shape[1];
    dim3 grid, block;
    ln_shape<VEC>(m, d, &grid, &block);
    layer_norm_grad_x_kernel<T, PT, VEC><<<grid, block, 0, s>>>(
        (const T *)ampc_data_ptr(g), (const T *)ampc_data_ptr(x), ref_of(mean), ref_of(rstd),
        w ? (const PT *)ampc_data_ptr(w) : nullptr, (T *)ampc_data_ptr(gx), m, (int)d);
}

/* Rows per chunk of the column sums: fixed by M alone (so results do not depend on the device),
 * at least 64 rows and at most 512 chunks (bounds the scratch to 512 * 2 * D sums). */
static int64_t ln_rows_per_chunk(int64_t m) {
    int64_t r = (m + 511) / 512;
    return r < 64 ? 64 : r;
}

static ampc_status cuda_layer_norm_backward(ampc_op op, const ampc_layer_norm_backward_args *a) {
    (void)op;
    const ampc_tensor *g = a->grad_y, *x = a->x, *mean = a->mean, *rstd = a->rstd, *w = a->weight;
    ampc_tensor *gx = a->grad_x, *gw = a->grad_weight, *gb = a->grad_bias;
    int64_t m = x->shape[0], d = x->shape[1];
    if (m == 0 || d == 0) return AMPC_OK; /* the frontend zeroes parameter grads of empty inputs */
    int dev = (int)x->device.index;
    ampc_cuda_guard guard(x);
    cudaStream_t s = ampc_cuda_stream_of(x);
    bool typed = g->dtype == x->dtype && (!gx || gx->dtype == x->dtype);
    if (gx) {
        ampc_dtype pdt = w ? w->dtype : x->dtype;
        if (typed && d <= LN_MAX_REG_D && (pdt == x->dtype || pdt == AMPC_FLOAT32)) {
            const void *ptrs[3] = {ampc_data_ptr(g), ampc_data_ptr(x), ampc_data_ptr(gx)};
            bool vec = vec_ok(d, ampc_dtype_itemsize(x->dtype), 3, ptrs);
            AMPC_CUDA_SWITCH_FLOATING(x->dtype, "layer_norm_backward", {
                constexpr int VEC = 16 / sizeof(scalar_t);
                if (pdt == x->dtype) {
                    if (vec) launch_layer_norm_grad_x<scalar_t, scalar_t, VEC>(g, x, mean, rstd, w, gx, s);
                    else launch_layer_norm_grad_x<scalar_t, scalar_t, 1>(g, x, mean, rstd, w, gx, s);
                } else {
                    if (vec) launch_layer_norm_grad_x<scalar_t, float, VEC>(g, x, mean, rstd, w, gx, s);
                    else launch_layer_norm_grad_x<scalar_t, float, 1>(g, x, mean, rstd, w, gx, s);
                }
            });
        } else if (x->dtype == AMPC_FLOAT64) {
            layer_norm_grad_x_general_kernel<double><<<nn_grid(m), NN_THREADS, 0, s>>>(
                ref_of(g), ref_of(x), ref_of(mean), ref_of(rstd), ref_of(w), ref_of(gx), m, d);
        } else {
            layer_norm_grad_x_general_kernel<float><<<nn_grid(m), NN_THREADS, 0, s>>>(
                ref_of(g), ref_of(x), ref_of(mean), ref_of(rstd), ref_of(w), ref_of(gx), m, d);
        }
        AMPC_CUDA_CHECK_LAUNCH();
    }
    if (!gw && !gb) return AMPC_OK;
    int64_t rows = ln_rows_per_chunk(m), chunks = (m + rows - 1) / rows;
    NN_SWITCH_IO(typed, x->dtype, "layer_norm_backward", {
        ampc_cuda_scratch partial(dev, sizeof(acc_t) * (size_t)(chunks * 2 * d));
        if (!partial.ok()) return ampc_last_status();
        dim3 grid((unsigned)((d + LN_COL_TILE - 1) / LN_COL_TILE), (unsigned)chunks), block(LN_COL_TILE, LN_COL_ROWS);
        layer_norm_param_partial_kernel<io_t, acc_t><<<grid, block, 0, s>>>(
            ampc_data_ptr(g), (int)g->dtype, ampc_data_ptr(x), (int)x->dtype, ref_of(mean), ref_of(rstd), m, d, rows,
            partial.as<acc_t>());
        AMPC_CUDA_CHECK_LAUNCH();
        layer_norm_param_final_kernel<acc_t><<<nn_blocks(d, NN_THREADS), NN_THREADS, 0, s>>>(
            partial.as<acc_t>(), chunks, d, ref_of(gw), ref_of(gb));
        AMPC_CUDA_CHECK_LAUNCH();
    });
    return AMPC_OK;
}

/* ---------------------------------------------------------------- group norm */

/* One block per (n, g) (its cg * L elements are contiguous): mean and 1/std in two passes, then
 * y = x * scale + shift with scale = rstd * w[c], shift = b[c] - mean * scale (the CPU's form).
 * x and y share the storage type T (or nn_dyn). */
template <typename T, typename A>
__global__ void group_norm_kernel(const void *x, int x_dt, nn_ref w, nn_ref b, void *y, int y_dt, nn_ref mean,
                                  nn_ref rstd, int64_t ng_total, int64_t groups, int64_t cg, int64_t l, A eps) {
    __shared__ A shared[32];
    int64_t len = cg * l;
    for (int64_t ng = blockIdx.x; ng < ng_total; ng += gridDim.x) {
        int64_t base = ng * len;
        A s = 0;
        for (int64_t i = threadIdx.x; i < len; i += blockDim.x) s += nn_ld<T, A>(x, x_dt, base + i);
        A mu = ampc_block_sum(s, shared) / (A)len;
        A q = 0;
        for (int64_t i = threadIdx.x; i < len; i += blockDim.x) {
            A dv = nn_ld<T, A>(x, x_dt, base + i) - mu;
            q += dv * dv;
        }
        A rs = (A)1 / sqrt(ampc_block_sum(q, shared) / (A)len + eps);
        int64_t c0 = (ng % groups) * cg;
        for (int64_t i = threadIdx.x; i < len; i += blockDim.x) {
            int64_t c = c0 + i / l;
            A scale = rs * ref_ld(w, c, (A)1), shift = ref_ld(b, c, (A)0) - mu * scale;
            nn_st<T, A>(y, y_dt, base + i, nn_ld<T, A>(x, x_dt, base + i) * scale + shift);
        }
        if (threadIdx.x == 0) {
            ref_st(mean, ng, mu);
            ref_st(rstd, ng, rs);
        }
    }
}

static ampc_status cuda_group_norm(ampc_op op, const ampc_group_norm_args *a) {
    (void)op;
    const ampc_tensor *x = a->x, *w = a->weight, *b = a->bias;
    ampc_tensor *y = a->y, *mean = a->mean, *rstd = a->rstd;
    int64_t n = x->shape[0], c = x->shape[1], l = x->shape[2], groups = a->groups;
    int64_t ng = n * groups, cg = c / groups;
    if (ng == 0) return AMPC_OK;
    double eps = a->eps;
    ampc_cuda_guard guard(x);
    cudaStream_t s = ampc_cuda_stream_of(x);
    bool typed = y->dtype == x->dtype;
    NN_SWITCH_IO(typed, x->dtype, "group_norm", {
        group_norm_kernel<io_t, acc_t><<<nn_grid(ng), NN_THREADS, 0, s>>>(
            ampc_data_ptr(x), (int)x->dtype, ref_of(w), ref_of(b), ampc_data_ptr(y), (int)y->dtype, ref_of(mean),
            ref_of(rstd), ng, groups, cg, l, (acc_t)eps);
    });
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

/* grad x of group norm, one block per (n, g): gx = rstd * (g*w - mean(g*w) - xhat * mean(g*w*xhat))
 * over the group's cg * L elements. g, x, gx share T (or nn_dyn, each its own dtype). */
template <typename T, typename A>
__global__ void group_norm_grad_x_kernel(nn_ref g, nn_ref x, nn_ref mean, nn_ref rstd, nn_ref w, nn_ref gx,
                                         int64_t ng_total, int64_t groups, int64_t cg, int64_t l) {
    __shared__ A shared[32];
    int64_t len = cg * l;
    for (int64_t ng = blockIdx.x; ng < ng_total; ng += gridDim.x) {
        int64_t base = ng * len, c0 = (ng % groups) * cg;
        A mu = ref_ld(mean, ng, (A)0), rs = ref_ld(rstd, ng, (A)1);
        A s1 = 0, s2 = 0;
        for (int64_t i = threadIdx.x; i < len; i += blockDim.x) {
            A gw = nn_ld<T, A>(g.p, g.dt, base + i) * ref_ld(w, c0 + i / l, (A)1);
            s1 += gw;
            s2 += gw * ((nn_ld<T, A>(x.p, x.dt, base + i) - mu) * rs);
        }
        A m1 = ampc_block_sum(s1, shared) / (A)len;
        A m2 = ampc_block_sum(s2, shared) / (A)len;
        for (int64_t i = threadIdx.x; i < len; i += blockDim.x) {
            A gw = nn_ld<T, A>(g.p, g.dt, base + i) * ref_ld(w, c0 + i / l, (A)1);
            A xh = (nn_ld<T, A>(x.p, x.dt, base + i) - mu) * rs;
            nn_st<T, A>(gx.p, gx.dt, base + i, rs * (gw - m1 - xh * m2));
        }
    }
}

/* grad weight and bias of group norm, one block per channel: sums over n and L of g * xhat and g. */
template <typename T, typename A>
__global__ void group_norm_grad_param_kernel(nn_ref g, nn_ref x, nn_ref mean, nn_ref rstd, nn_ref gw, nn_ref gb,
                                             int64_t n, int64_t c, int64_t l, int64_t groups, int64_t cg) {
    __shared__ A shared[32];
    for (int64_t ch = blockIdx.x; ch < c; ch += gridDim.x) {
        A sw = 0, sb = 0;
        for (int64_t i = 0; i < n; i++) {
            int64_t ng = i * groups + ch / cg, base = (i * c + ch) * l;
            A mu = ref_ld(mean, ng, (A)0), rs = ref_ld(rstd, ng, (A)1);
            for (int64_t k = threadIdx.x; k < l; k += blockDim.x) {
                A gv = nn_ld<T, A>(g.p, g.dt, base + k);
                sw += gv * (nn_ld<T, A>(x.p, x.dt, base + k) - mu) * rs;
                sb += gv;
            }
        }
        sw = ampc_block_sum(sw, shared);
        sb = ampc_block_sum(sb, shared);
        if (threadIdx.x == 0) {
            ref_st(gw, ch, sw);
            ref_st(gb, ch, sb);
        }
    }
}

static ampc_status cuda_group_norm_backward(ampc_op op, const ampc_group_norm_backward_args *a) {
    (void)op;
    const ampc_tensor *g = a->grad_y, *x = a->x, *mean = a->mean, *rstd = a->rstd, *w = a->weight;
    ampc_tensor *gx = a->grad_x, *gw = a->grad_weight, *gb = a->grad_bias;
    int64_t n = x->shape[0], c = x->shape[1], l = x->shape[2], groups = a->groups, cg = c / groups;
    ampc_cuda_guard guard(x);
    cudaStream_t s = ampc_cuda_stream_of(x);
    bool typed = g->dtype == x->dtype && (!gx || gx->dtype == x->dtype);
    NN_SWITCH_IO(typed, x->dtype, "group_norm_backward", {
        if (gx && ampc_numel(gx) > 0) {
            group_norm_grad_x_kernel<io_t, acc_t><<<nn_grid(n * groups), NN_THREADS, 0, s>>>(
                ref_of(g), ref_of(x), ref_of(mean), ref_of(rstd), ref_of(w), ref_of(gx), n * groups, groups, cg, l);
            AMPC_CUDA_CHECK_LAUNCH();
        }
        if ((gw || gb) && c > 0) {
            group_norm_grad_param_kernel<io_t, acc_t><<<nn_grid(c), NN_THREADS, 0, s>>>(
                ref_of(g), ref_of(x), ref_of(mean), ref_of(rstd), ref_of(gw), ref_of(gb), n, c, l, groups, cg);
            AMPC_CUDA_CHECK_LAUNCH();
        }
    });
    return AMPC_OK;
}

/* ---------------------------------------------------------------- batch norm */

/* The 2-d split of a per-channel reduction over E = N * L elements: S chunks per channel, fixed
 * by the shape alone (so results do not depend on the device): about 8192 elements per block,
 * and no more chunks than keep C * S near 2048 blocks. */
struct bn_split {
    int64_t s, chunk;
};
static bn_split bn_split_of(int64_t c, int64_t e) {
    int64_t by_size = (e + 8191) / 8192, by_blocks = (2048 + c - 1) / c;
    int64_t s = by_size < by_blocks ? by_size : by_blocks;
    if (s < 1) s = 1;
    bn_split r = {s, (e + s - 1) / s};
    return r;
}

/* Walks elements j of a chunk of channel ch in (N, C, L) with one division at the start: the
 * thread's j advances by `step`, its (n, l) by (dn, dl) with a carry. */
struct bn_walk {
    int64_t j, n, l, dn, dl;
    __device__ __forceinline__ bn_walk(int64_t j0, int64_t step, int64_t len) {
        j = j0;
        if (len <= 0) { /* no elements (N * L == 0): nothing to walk */
            n = l = dn = dl = 0;
            return;
        }
        n = j0 / len, l = j0 - n * len;
        dn = step / len, dl = step - dn * len;
    }
    __device__ __forceinline__ int64_t offset(int64_t ch, int64_t c, int64_t len) const { return (n * c + ch) * len + l; }
    __device__ __forceinline__ void next(int64_t step, int64_t len) {
        j += step, n += dn, l += dl;
        if (l >= len) l -= len, n++;
    }
};

/* (count, mean, M2) of a set of values, merged with Chan's formula. */
template <typename A> struct bn_moments {
    int64_t n;
    A mean, m2;
    __device__ __forceinline__ void merge(int64_t nb, A mb, A m2b) {
        if (nb == 0) return;
        if (n == 0) {
            n = nb, mean = mb, m2 = m2b;
            return;
        }
        int64_t nt = n + nb;
        A delta = mb - mean, fb = (A)nb / (A)nt;
        mean += delta * fb;
        m2 += m2b + delta * delta * (A)n * fb;
        n = nt;
    }
};

/* Stage 1 of the statistics: block (ch, s) folds its chunk into (count, mean, M2): each thread
 * sums x - K and (x - K)^2 with K its own first value (the CPU's shifted sums), then the threads'
 * moments merge (down the warp, then the warps in order on thread 0). */
template <typename T, typename A>
__global__ void bn_stats_partial_kernel(const void *x, int x_dt, int64_t c, int64_t len, int64_t e, int64_t splits,
                                        int64_t chunk, int64_t *pn, A *pmean, A *pm2) {
    __shared__ int64_t sh_n[32];
    __shared__ A sh_mean[32], sh_m2[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    for (int64_t blk = blockIdx.x; blk < c * splits; blk += gridDim.x) {
        int64_t ch = blk / splits, j0 = (blk % splits) * chunk, j1 = j0 + chunk < e ? j0 + chunk : e;
        A k = 0, s = 0, q = 0;
        int64_t cnt = 0;
        bn_walk it(j0 + threadIdx.x, blockDim.x, len);
        if (it.j < j1) k = nn_ld<T, A>(x, x_dt, it.offset(ch, c, len));
        for (; it.j < j1; it.next(blockDim.x, len)) {
            A d = nn_ld<T, A>(x, x_dt, it.offset(ch, c, len)) - k;
            s += d;
            q += d * d;
            cnt++;
        }
        bn_moments<A> mo;
        mo.n = cnt;
        mo.mean = cnt ? k + s / (A)cnt : (A)0;
        mo.m2 = cnt ? q - s * s / (A)cnt : (A)0;
        if (mo.m2 < 0) mo.m2 = 0;
        for (int o = 16; o > 0; o >>= 1) {
            int64_t nb = __shfl_down_sync(0xffffffffu, mo.n, o);
            A mb = __shfl_down_sync(0xffffffffu, mo.mean, o), m2b = __shfl_down_sync(0xffffffffu, mo.m2, o);
            if (lane + o < 32) mo.merge(nb, mb, m2b);
        }
        __syncthreads(); /* the previous block's results are read */
        if (lane == 0) sh_n[warp] = mo.n, sh_mean[warp] = mo.mean, sh_m2[warp] = mo.m2;
        __syncthreads();
        if (threadIdx.x == 0) {
            for (int k2 = 1; k2 < n_warps; k2++) mo.merge(sh_n[k2], sh_mean[k2], sh_m2[k2]);
            pn[blk] = mo.n, pmean[blk] = mo.mean, pm2[blk] = mo.m2;
        }
    }
}

/* Stage 2: one thread per channel merges its chunks in order; mean and invstd (stats dtype);
 * running stats updated in place (in double, as on the CPU) with the unbiased variance. */
template <typename A>
__global__ void bn_stats_final_kernel(const int64_t *pn, const A *pmean, const A *pm2, int64_t c, int64_t splits,
                                      double eps, double momentum, nn_ref mean, nn_ref invstd, nn_ref rmean,
                                      nn_ref rvar) {
    NN_LOOP(ch, c) {
        bn_moments<A> mo = {0, (A)0, (A)0};
        for (int64_t k = 0; k < splits; k++) mo.merge(pn[ch * splits + k], pmean[ch * splits + k], pm2[ch * splits + k]);
        double mu = mo.n ? (double)mo.mean : NAN, var = mo.n ? (double)mo.m2 / (double)mo.n : NAN;
        if (var < 0) var = 0;
        ref_st(mean, ch, mu);
        ref_st(invstd, ch, 1.0 / sqrt(var + eps));
        if (rmean.p)
            ref_st(rmean, ch, (1 - momentum) * ref_ld(rmean, ch, 0.0) + momentum * mu);
        if (rvar.p) {
            double unbiased = mo.n > 1 ? var * (double)mo.n / (double)(mo.n - 1) : INFINITY;
            ref_st(rvar, ch, (1 - momentum) * ref_ld(rvar, ch, 0.0) + momentum * unbiased);
        }
    }
}

static ampc_status cuda_batch_norm_stats(ampc_op op, const ampc_batch_norm_stats_args *a) {
    (void)op;
    const ampc_tensor *x = a->x;
    ampc_tensor *mean = a->mean, *invstd = a->invstd, *rmean = a->running_mean, *rvar = a->running_var;
    int64_t n = x->shape[0], c = x->shape[1], l = x->shape[2], e = n * l;
    if (c == 0) return AMPC_OK;
    double eps = a->eps, momentum = a->momentum;
    int dev = (int)x->device.index;
    ampc_cuda_guard guard(x);
    cudaStream_t s = ampc_cuda_stream_of(x);
    bn_split sp = bn_split_of(c, e);
    int64_t parts = c * sp.s;
    NN_SWITCH_IO(true, x->dtype, "batch_norm_stats", {
        ampc_cuda_scratch scratch(dev, (sizeof(int64_t) + 2 * sizeof(acc_t)) * (size_t)parts);
        if (!scratch.ok()) return ampc_last_status();
        int64_t *pn = scratch.as<int64_t>();
        acc_t *pmean = (acc_t *)(pn + parts), *pm2 = pmean + parts;
        bn_stats_partial_kernel<io_t, acc_t><<<nn_grid(parts), NN_THREADS, 0, s>>>(
            ampc_data_ptr(x), (int)x->dtype, c, l, e, sp.s, sp.chunk, pn, pmean, pm2);
        AMPC_CUDA_CHECK_LAUNCH();
        bn_stats_final_kernel<acc_t><<<nn_blocks(c, NN_THREADS), NN_THREADS, 0, s>>>(
            pn, pmean, pm2, c, sp.s, eps, momentum, ref_of(mean), ref_of(invstd), ref_of(rmean), ref_of(rvar));
        AMPC_CUDA_CHECK_LAUNCH();
    });
    return AMPC_OK;
}

/* 1/std of channel ch: stored, or from a variance (eval mode). */
__device__ __forceinline__ double bn_invstd(nn_ref t, int64_t ch, bool is_var, double eps) {
    double v = ref_ld(t, ch, 1.0);
    return is_var ? 1.0 / sqrt(v + eps) : v;
}

/* Per channel: scale = invstd * w, shift = b, and the mean, kept as A. y = (x - mean) * scale + b
 * as PyTorch computes it: folding the mean into the shift (x * scale + (b - mean * scale))
 * cancels badly in fp32 when |mean| / std is large. */
template <typename A>
__global__ void bn_apply_coef_kernel(nn_ref mean, nn_ref inv, nn_ref w, nn_ref b, bool is_var, double eps, int64_t c,
                                     A *coef) {
    NN_LOOP(ch, c) {
        double scale = bn_invstd(inv, ch, is_var, eps) * ref_ld(w, ch, 1.0);
        coef[ch] = (A)scale;
        coef[c + ch] = (A)ref_ld(b, ch, 0.0);
        coef[2 * c + ch] = (A)ref_ld(mean, ch, 0.0);
    }
}

/* y = (x - mean[c]) * scale[c] + shift[c]; thread v handles elements [v * VEC, v * VEC + VEC) of one row
 * (L % VEC == 0 when VEC > 1). */
template <typename T, typename A, int VEC>
__global__ void bn_apply_kernel(const void *x, int x_dt, void *y, int y_dt, const A *__restrict__ coef, int64_t c,
                                int64_t len, int64_t nvec) {
    NN_LOOP(v, nvec) {
        int64_t i0 = v * VEC, ch = (i0 / len) % c;
        A scale = coef[ch], shift = coef[c + ch], mu = coef[2 * c + ch];
        if constexpr (VEC == 1) {
            nn_st<T, A>(y, y_dt, i0, (nn_ld<T, A>(x, x_dt, i0) - mu) * scale + shift);
        } else {
            nn_vec<T, VEC> t = ((const nn_vec<T, VEC> *)x)[v];
#pragma unroll
            for (int e = 0; e < VEC; e++) t.v[e] = ampc_convert<T>((ampc_convert<A>(t.v[e]) - mu) * scale + shift);
            ((nn_vec<T, VEC> *)y)[v] = t;
        }
    }
}

static ampc_status cuda_batch_norm_apply(ampc_op op, const ampc_batch_norm_apply_args *a) {
    (void)op;
    const ampc_tensor *x = a->x, *mean = a->mean, *inv = a->invstd, *w = a->weight, *b = a->bias;
    ampc_tensor *y = a->y;
    int64_t c = x->shape[1], l = x->shape[2], total = ampc_numel(x);
    if (total == 0) return AMPC_OK;
    bool is_var = a->is_var;
    double eps = a->eps;
    int dev = (int)x->device.index;
    ampc_cuda_guard guard(x);
    cudaStream_t s = ampc_cuda_stream_of(x);
    bool typed = y->dtype == x->dtype;
    const void *ptrs[2] = {ampc_data_ptr(x), ampc_data_ptr(y)};
    bool vec = typed && vec_ok(l, ampc_dtype_itemsize(x->dtype), 2, ptrs);
    NN_SWITCH_IO(typed, x->dtype, "batch_norm_apply", {
        ampc_cuda_scratch coef(dev, sizeof(acc_t) * (size_t)(3 * c));
        if (!coef.ok()) return ampc_last_status();
        bn_apply_coef_kernel<acc_t><<<nn_blocks(c, NN_THREADS), NN_THREADS, 0, s>>>(
            ref_of(mean), ref_of(inv), ref_of(w), ref_of(b), is_var, eps, c, coef.as<acc_t>());
        AMPC_CUDA_CHECK_LAUNCH();
        constexpr int VEC = std::is_same<io_t, nn_dyn>::value ? 1 : 16 / sizeof(io_t);
        if (vec && VEC > 1)
            bn_apply_kernel<io_t, acc_t, VEC><<<nn_blocks(total / VEC, NN_THREADS), NN_THREADS, 0, s>>>(
                ampc_data_ptr(x), (int)x->dtype, ampc_data_ptr(y), (int)y->dtype, coef.as<acc_t>(), c, l,
                total / VEC);
        else
            bn_apply_kernel<io_t, acc_t, 1><<<nn_blocks(total, NN_THREADS), NN_THREADS, 0, s>>>(
                ampc_data_ptr(x), (int)x->dtype, ampc_data_ptr(y), (int)y->dtype, coef.as<acc_t>(), c, l, total);
        AMPC_CUDA_CHECK_LAUNCH();
    });
    return AMPC_OK;
}

/* Backward stage 1: block (ch, s) sums g and g * (x - mean) over its chunk. */
template <typename T, typename A>
__global__ void bn_backward_partial_kernel(nn_ref g, nn_ref x, nn_ref mean, int64_t c, int64_t len, int64_t e,
                                           int64_t splits, int64_t chunk, A *psum) {
    __shared__ A shared[32];
    for (int64_t blk = blockIdx.x; blk < c * splits; blk += gridDim.x) {
        int64_t ch = blk / splits, j0 = (blk % splits) * chunk, j1 = j0 + chunk < e ? j0 + chunk : e;
        A mu = ref_ld(mean, ch, (A)0), sg = 0, sgx = 0;
        for (bn_walk it(j0 + threadIdx.x, blockDim.x, len); it.j < j1; it.next(blockDim.x, len)) {
            int64_t off = it.offset(ch, c, len);
            A gv = nn_ld<T, A>(g.p, g.dt, off);
            sg += gv;
            sgx += gv * (nn_ld<T, A>(x.p, x.dt, off) - mu);
        }
        sg = ampc_block_sum(sg, shared);
        sgx = ampc_block_sum(sgx, shared);
        if (threadIdx.x == 0) psum[blk * 2] = sg, psum[blk * 2 + 1] = sgx;
    }
}

/* Backward stage 2, one thread per channel: the chunk sums in order; grad weight = sum(g * (x -
 * mean)) * invstd, grad bias = sum(g); the coefficients of grad x, (mean, mean_g, proj, k) with
 * gx = (g - mean_g - (x - mean) * proj) * k, k = invstd * w (mean_g = proj = 0 in eval mode). */
template <typename A>
__global__ void bn_backward_final_kernel(const A *psum, int64_t c, int64_t splits, nn_ref mean, nn_ref inv, nn_ref w,
                                         bool is_var, bool training, double eps, double count, nn_ref gw, nn_ref gb,
                                         A *coef) {
    NN_LOOP(ch, c) {
        double sg = 0, sgx = 0;
        if (psum)
            for (int64_t k = 0; k < splits; k++) sg += (double)psum[(ch * splits + k) * 2], sgx += (double)psum[(ch * splits + k) * 2 + 1];
        double mu = ref_ld(mean, ch, 0.0), istd = bn_invstd(inv, ch, is_var, eps), wc = ref_ld(w, ch, 1.0);
        ref_st(gw, ch, sgx * istd);
        ref_st(gb, ch, sg);
        if (coef) {
            coef[ch * 4] = (A)mu;
            coef[ch * 4 + 1] = (A)(training ? sg / count : 0.0);
            coef[ch * 4 + 2] = (A)(training ? sgx / count * istd * istd : 0.0);
            coef[ch * 4 + 3] = (A)(istd * wc);
        }
    }
}

/* Backward stage 3: grad x elementwise, VEC elements of one row per thread. */
template <typename T, typename A, int VEC>
__global__ void bn_backward_grad_x_kernel(nn_ref g, nn_ref x, nn_ref gx, const A *__restrict__ coef, int64_t c,
                                          int64_t len, int64_t nvec, bool training) {
    NN_LOOP(v, nvec) {
        int64_t i0 = v * VEC, ch = (i0 / len) % c;
        A mu = coef[ch * 4], mean_g = coef[ch * 4 + 1], proj = coef[ch * 4 + 2], k = coef[ch * 4 + 3];
        if constexpr (VEC == 1) {
            A gv = nn_ld<T, A>(g.p, g.dt, i0);
            A r = training ? (gv - mean_g - (nn_ld<T, A>(x.p, x.dt, i0) - mu) * proj) * k : gv * k;
            nn_st<T, A>(gx.p, gx.dt, i0, r);
        } else {
            nn_vec<T, VEC> tg = ((const nn_vec<T, VEC> *)g.p)[v], tx = tg;
            if (training) tx = ((const nn_vec<T, VEC> *)x.p)[v];
#pragma unroll
            for (int e = 0; e < VEC; e++) {
                A gv = ampc_convert<A>(tg.v[e]);
                A r = training ? (gv - mean_g - (ampc_convert<A>(tx.v[e]) - mu) * proj) * k : gv * k;
                tg.v[e] = ampc_convert<T>(r);
            }
            ((nn_vec<T, VEC> *)gx.p)[v] = tg;
        }
    }
}

static ampc_status cuda_batch_norm_backward(ampc_op op, const ampc_batch_norm_backward_args *a) {
    (void)op;
    const ampc_tensor *g = a->grad_y, *x = a->x, *mean = a->mean, *inv = a->invstd, *w = a->weight;
    ampc_tensor *gx = a->grad_x, *gw = a->grad_weight, *gb = a->grad_bias;
    int64_t n = x->shape[0], c = x->shape[1], l = x->shape[2], e = n * l, total = ampc_numel(x);
    bool is_var = a->is_var, training = a->training;
    double eps = a->eps;
    bool want_gx = gx && total > 0;
    if (c == 0 || (!want_gx && !gw && !gb)) return AMPC_OK;
    int dev = (int)x->device.index;
    ampc_cuda_guard guard(x);
    cudaStream_t s = ampc_cuda_stream_of(x);
    bool typed = g->dtype == x->dtype && (!gx || gx->dtype == x->dtype);
    bool need_sums = e > 0 && (gw || gb || (want_gx && training)); /* else the sums are 0 */
    bn_split sp = bn_split_of(c, e);
    int64_t parts = c * sp.s;
    const void *ptrs[3] = {ampc_data_ptr(g), ampc_data_ptr(x), gx ? ampc_data_ptr(gx) : nullptr};
    bool vec = typed && want_gx && vec_ok(l, ampc_dtype_itemsize(x->dtype), 3, ptrs);
    NN_SWITCH_IO(typed, x->dtype, "batch_norm_backward", {
        size_t n_sums = need_sums ? (size_t)(2 * parts) : 0, n_coef = want_gx ? (size_t)(4 * c) : 0;
        ampc_cuda_scratch scratch(dev, sizeof(acc_t) * (n_sums + n_coef));
        if (!scratch.ok()) return ampc_last_status();
        acc_t *psum = need_sums ? scratch.as<acc_t>() : nullptr;
        acc_t *coef = want_gx ? scratch.as<acc_t>() + n_sums : nullptr;
        if (need_sums) {
            bn_backward_partial_kernel<io_t, acc_t><<<nn_grid(parts), NN_THREADS, 0, s>>>(
                ref_of(g), ref_of(x), ref_of(mean), c, l, e, sp.s, sp.chunk, psum);
            AMPC_CUDA_CHECK_LAUNCH();
        }
        bn_backward_final_kernel<acc_t><<<nn_blocks(c, NN_THREADS), NN_THREADS, 0, s>>>(
            psum, c, sp.s, ref_of(mean), ref_of(inv), ref_of(w), is_var, training, eps, (double)e, ref_of(gw),
            ref_of(gb), coef);
        AMPC_CUDA_CHECK_LAUNCH();
        if (want_gx) {
            constexpr int VEC = std::is_same<io_t, nn_dyn>::value ? 1 : 16 / sizeof(io_t);
            if (vec && VEC > 1)
                bn_backward_grad_x_kernel<io_t, acc_t, VEC><<<nn_blocks(total / VEC, NN_THREADS), NN_THREADS, 0, s>>>(
                    ref_of(g), ref_of(x), ref_of(gx), coef, c, l, total / VEC, training);
            else
                bn_backward_grad_x_kernel<io_t, acc_t, 1><<<nn_blocks(total, NN_THREADS), NN_THREADS, 0, s>>>(
                    ref_of(g), ref_of(x), ref_of(gx), coef, c, l, total, training);
            AMPC_CUDA_CHECK_LAUNCH();
        }
    });
    return AMPC_OK;
}

extern "C" void ampc_cuda_register_nn_norm(void) {
    ampc_register_batch_norm_stats(AMPC_CUDA, cuda_batch_norm_stats);
    ampc_register_batch_norm_apply(AMPC_CUDA, cuda_batch_norm_apply);
    ampc_register_batch_norm_backward(AMPC_CUDA, cuda_batch_norm_backward);
    ampc_register_layer_norm(AMPC_CUDA, cuda_layer_norm);
    ampc_register_layer_norm_backward(AMPC_CUDA, cuda_layer_norm_backward);
    ampc_register_group_norm(AMPC_CUDA, cuda_group_norm);
    ampc_register_group_norm_backward(AMPC_CUDA, cuda_group_norm_backward);
}
