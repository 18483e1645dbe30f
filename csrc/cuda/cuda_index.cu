/* cuda_index.cu: the INDEX family on CUDA (the gather and scatter forms every indexing op reduces
 * to, masked_fill, nonzero) and the embedding kernels (a row gather and its backward).
 *
 * The layouts are core/index.c's (and ops.def's INDEX rows): the kernels walk the result shape R
 * like an elementwise op; element p of R sits in the indexed tensor at its R-position plus
 * sum_j index_j(p) * stride_j. One thread per element of R, as cpu_index.c's loops per row.
 *
 * Out-of-range indices cannot raise here without a host synchronisation, so a kernel that meets
 * one writes AMPC_CUDA_ERR_INDEX * 65536 + op into the device's error word (cuda_backend.h) and
 * skips that element; the runtime raises IndexError at the next synchronising call, as PyTorch's
 * device-side assert surfaces at the next synchronisation. Unlike the CPU kernel (which checks
 * every index before the loop), a failing scatter may have written its other elements.
 *
 * Accumulating scatters (scatter_add, index_add, index_put with accumulate) use atomics, as
 * PyTorch's CUDA kernels do: sums are exact for integers and equal to the CPU's up to the order
 * of the floating-point additions. Without accumulate, repeated indices leave an unspecified
 * winner (PyTorch CUDA too). Embedding backward is deterministic: a stable radix sort groups
 * the positions of each index, and each weight row sums its grads in position order in double,
 * exactly as cpu_nn_misc.c does, so both devices give the same bits. */
#include <cub/device/device_radix_sort.cuh>

#include "../core/index_bounds.h"
#include "../core/scatter_reduce.h"
#include "../core/kernel_args.h"
#include <type_traits>

#include "cuda_common.cuh"
#include "cuda_scatter_reduce.cuh"

#define MAX_INDEX_TENSORS AMPC_MAX_INDEX_TENSORS
#define INDEX_OPERANDS (2 + MAX_INDEX_TENSORS) /* out, in, the k indices */

/* First error wins; `word` is NULL only before the runtime provides one. */
__device__ __forceinline__ void report_index_error(int *word, int op) {
    if (word) atomicCAS(word, 0, AMPC_CUDA_ERR_INDEX * 65536 + op);
}

/* ix.offsets for the first two operands, with the divisions in U: uint32_t when the iteration
 * has fewer than 2^31 elements (several times cheaper than 64-bit division), else uint64_t. */
template <typename U>
__device__ __forceinline__ void offsets2(const ampc_cuda_indexer &ix, U i, int64_t *o0, int64_t *o1) {
    if (ix.contiguous) {
        *o0 = *o1 = (int64_t)i;
        return;
    }
    int64_t a = 0, b = 0;
    for (int d = ix.ndim - 1; d >= 0; d--) {
        U s = (U)ix.shape[d], q = i / s;
        int64_t r = (int64_t)(i - q * s);
        i = q;
        a += r * ix.strides[0][d];
        b += r * ix.strides[1][d];
    }
    *o0 = a;
    *o1 = b;
}

static bool fits_u32(int64_t numel) { return numel < ((int64_t)1 << 31); }

/* ---------------------------------------------------------------- gather and scatter forms */

/* R after coalescing (cpu_iter's rules), with the element strides of every operand and what
 * the index tensors address. Passed by value (about 600 bytes). */
struct index_geometry {
    int32_t ndim, k;
    int64_t numel;
    int64_t shape[AMPC_MAX_DIMS];
    int64_t strides[INDEX_OPERANDS][AMPC_MAX_DIMS]; /* elements of each operand's dtype; 0 unused */
    const int64_t *index[MAX_INDEX_TENSORS];
    int64_t size[MAX_INDEX_TENSORS];   /* the indexed dim's size */
    int64_t lowest[MAX_INDEX_TENSORS]; /* -size where a negative index counts from the end, else 0 */
    int64_t stride[MAX_INDEX_TENSORS]; /* and its stride, in elements of the indexed tensor */

    /* Element offsets of linear index i (row-major over R) in every operand. U is uint32_t when
     * numel < 2^31 (cheaper division), else uint64_t. */
    template <typename U> __device__ __forceinline__ void offsets(U i, int64_t *off) const {
#pragma unroll
        for (int q = 0; q < INDEX_OPERANDS; q++) off[q] = 0;
        for (int d = ndim - 1; d >= 0; d--) {
            U s = (U)shape[d], q = i / s;
            int64_t r = (int64_t)(i - q * s);
            i = q;
#pragma unroll
            for (int o = 0; o < INDEX_OPERANDS; o++) off[o] += r * strides[o][d];
        }
    }

    /* The offset the indices add in the indexed tensor; false when one is out of range.
     * Negative indices count from the end where the op allows it (index_bounds.h), as on the CPU. */
    __device__ __forceinline__ bool indexed_offset(const int64_t *off, int64_t *extra) const {
        int64_t e = 0;
#pragma unroll
        for (int j = 0; j < MAX_INDEX_TENSORS; j++) {
            if (j >= k) break;
            int64_t v = index[j][off[2 + j]];
            if (v < lowest[j] || v >= size[j]) return false;
            e += (v < 0 ? v + size[j] : v) * stride[j];
        }
        *extra = e;
        return true;
    }
};

/* The geometry of a gather or scatter form call over (out, in, the k indices). */
static ampc_status index_geometry_init(ampc_op op, ampc_tensor *out, const ampc_tensor *in,
                                       const ampc_tensor *const *indices, int k, const ampc_index_dim *dims,
                                       index_geometry *g) {
    memset(g, 0, sizeof *g);
    g->k = k; /* <= MAX_INDEX_TENSORS int64 indices: the frontend checked (index.c, dispatch_index) */
    const ampc_tensor *ins[1 + MAX_INDEX_TENSORS] = {in};
    for (int j = 0; j < g->k; j++) {
        const ampc_tensor *idx = ins[1 + j] = indices[j];
        g->index[j] = (const int64_t *)ampc_data_ptr(idx);
        g->size[j] = dims[j].size;
        g->lowest[j] = ampc_index_counts_from_end(op) ? -dims[j].size : 0;
        g->stride[j] = dims[j].stride;
    }
    ampc_cpu_iter it;
    AMPC_TRY(ampc_cpu_iter_init(&it, 1, &out, 1 + g->k, ins));
    g->ndim = it.ndim;
    g->numel = it.numel;
    for (int d = 0; d < it.ndim; d++) g->shape[d] = it.shape[d];
    for (int q = 0; q < it.n_operands; q++) {
        const ampc_tensor *t = q == 0 ? out : ins[q - 1];
        int64_t item = (int64_t)ampc_dtype_itemsize(t->dtype);
        for (int d = 0; d < it.ndim; d++) g->strides[q][d] = it.strides[q][d] / item;
    }
    return AMPC_OK;
}

/* One thread per position p of R: the checked offset `extra` of p's indexed element, then
 * f(off, extra) does the move (gather_move, put_move) or the accumulation (accumulate_into). */
template <typename U, typename F> __global__ void index_kernel(index_geometry g, F f, int *err, int op) {
    AMPC_CUDA_KERNEL_LOOP(i, g.numel) {
        int64_t off[INDEX_OPERANDS], extra;
        g.offsets((U)i, off);
        if (!g.indexed_offset(off, &extra)) {
            report_index_error(err, op);
            continue;
        }
        f(off, extra);
    }
}

/* Gather: out[p] = src[p + extra]; put: out[p + extra] = values[p]. T is an unsigned type of
 * the item size (moves are bytes). */
template <typename T> struct gather_move {
    T *out;
    const T *src;
    __device__ void operator()(const int64_t *off, int64_t extra) const { out[off[0]] = src[off[1] + extra]; }
};
template <typename T> struct put_move {
    T *out;
    const T *values;
    __device__ void operator()(const int64_t *off, int64_t extra) const { out[off[0] + extra] = values[off[1]]; }
};

/* alpha of index_add (1 otherwise), as the CPU kernel reads it: a float for floating dtypes,
 * an int64 for integers. */
struct index_alpha {
    double f;
    int64_t i;
};

/* Atomic read-modify-write of one byte through its aligned 32-bit word (uint8 and bool have
 * no byte atomics; PyTorch does the same). */
template <typename F> __device__ __forceinline__ void atomic_update_byte(uint8_t *addr, F f) {
    unsigned int *word = (unsigned int *)((uintptr_t)addr & ~(uintptr_t)3);
    unsigned int shift = (unsigned int)((uintptr_t)addr & 3) * 8u;
    unsigned int old = *word, assumed;
    do {
        assumed = old;
        unsigned int b = f((assumed >> shift) & 0xffu) & 0xffu;
        old = atomicCAS(word, assumed, (assumed & ~(0xffu << shift)) | (b << shift));
    } while (assumed != old);
}

/* *p += alpha * v, atomically, with the CPU kernel's arithmetic per addition: floats in their
 * opmath type, integers in wrapping unsigned arithmetic. fp16/bf16 use the hardware atomicAdd
 * (sm_70+/sm_80+), so the addend is rounded to the storage type first (exact when alpha is 1). */
__device__ __forceinline__ void atomic_accumulate(float *p, float v, index_alpha a) {
    atomicAdd(p, __fmul_rn((float)a.f, v));
}
__device__ __forceinline__ void atomic_accumulate(double *p, double v, index_alpha a) {
    atomicAdd(p, __dmul_rn(a.f, v));
}
__device__ __forceinline__ void atomic_accumulate(__half *p, __half v, index_alpha a) {
    atomicAdd(p, a.f == 1.0 ? v : __float2half_rn(__fmul_rn((float)a.f, __half2float(v))));
}
__device__ __forceinline__ void atomic_accumulate(__nv_bfloat16 *p, __nv_bfloat16 v, index_alpha a) {
    atomicAdd(p, a.f == 1.0 ? v : __float2bfloat16_rn(__fmul_rn((float)a.f, __bfloat162float(v))));
}
__device__ __forceinline__ void atomic_accumulate(int64_t *p, int64_t v, index_alpha a) {
    atomicAdd((unsigned long long *)p, (unsigned long long)a.i * (unsigned long long)v);
}
__device__ __forceinline__ void atomic_accumulate(int32_t *p, int32_t v, index_alpha a) {
    atomicAdd((unsigned int *)p, (unsigned int)((uint64_t)a.i * (uint64_t)(int64_t)v));
}
__device__ __forceinline__ void atomic_accumulate(uint8_t *p, uint8_t v, index_alpha a) {
    unsigned int add = (unsigned int)((uint64_t)a.i * (uint64_t)v);
    atomic_update_byte(p, [add](unsigned int old) { return old + add; });
}
__device__ __forceinline__ void atomic_accumulate(bool *p, bool v, index_alpha a) {
    /* the CPU's (uint64)old + alpha * v, stored as bool */
    uint64_t add = (uint64_t)a.i * (uint64_t)v;
    atomic_update_byte((uint8_t *)p, [add](unsigned int old) { return (unsigned int)((uint64_t)old + add != 0); });
}

template <typename T> struct accumulate_into {
    T *out;
    const T *values;
    index_alpha alpha;
    __device__ void operator()(const int64_t *off, int64_t extra) const {
        atomic_accumulate(out + off[0] + extra, values[off[1]], alpha);
    }
};

/* Launches index_kernel over g with f, the index type chosen by the iteration size (F spelled
 * out: launchers that take the kernel's address, the emulator's among them, cannot deduce it). */
#define LAUNCH_INDEX_KERNEL(g, stream, f, err, op)                                                             \
    do {                                                                                                       \
        if (fits_u32((g).numel))                                                                               \
            index_kernel<uint32_t, std::decay_t<decltype(f)>><<<ampc_cuda_blocks((g).numel), AMPC_CUDA_THREADS, 0, stream>>>(g, f, err, op); \
        else                                                                                                   \
            index_kernel<uint64_t, std::decay_t<decltype(f)>><<<ampc_cuda_blocks((g).numel), AMPC_CUDA_THREADS, 0, stream>>>(g, f, err, op); \
        AMPC_CUDA_CHECK_LAUNCH();                                                                              \
    } while (0)

/* Gathers and puts move bits, no casts: the frontend (index.c, dispatch_index) matched the
 * dtypes and checked the index tensors. */

/* INDEX_SELECT, GATHER, INDEX */
static ampc_status cuda_gather_form(ampc_op op, const ampc_gather_args *p) {
    ampc_tensor *out = p->out;
    if (ampc_numel(out) == 0) return AMPC_OK;
    index_geometry g;
    const ampc_tensor *indices[MAX_INDEX_TENSORS] = {p->index0, p->index1, p->index2, p->index3, p->index4};
    AMPC_TRY(index_geometry_init(op, out, p->src, indices, p->n_indices, p->dims, &g));
    ampc_cuda_guard guard(out);
    cudaStream_t stream = ampc_cuda_stream_of(out);
    int *err = ampc_cuda_error_word((int)out->device.index);
    AMPC_CUDA_SWITCH_BITS(out->dtype, ampc_op_name(op), {
        gather_move<bits_t> f = {(bits_t *)ampc_data_ptr(out), (const bits_t *)ampc_data_ptr(p->src)};
        LAUNCH_INDEX_KERNEL(g, stream, f, err, (int)op);
    })
    return AMPC_OK;
}

/* SCATTER_ADD, INDEX_ADD, INDEX_PUT, SCATTER, INDEX_COPY, INDEX_FILL, SCATTER_REDUCE, INDEX_REDUCE */
static ampc_status cuda_scatter_form(ampc_op op, const ampc_scatter_args *p) {
    ampc_tensor *out = p->dst;
    ampc_dtype dt = out->dtype;
    if (ampc_numel(out) == 0) return AMPC_OK;
    index_geometry g;
    const ampc_tensor *indices[MAX_INDEX_TENSORS] = {p->index0, p->index1, p->index2, p->index3, p->index4};
    AMPC_TRY(index_geometry_init(op, out, p->values, indices, p->n_indices, p->dims, &g));
    ampc_cuda_guard guard(out);
    cudaStream_t stream = ampc_cuda_stream_of(out);
    int *err = ampc_cuda_error_word((int)out->device.index);
    if (p->reduce != AMPC_SCATTER_REDUCE_NONE) {
        AMPC_CUDA_SWITCH_ALL(dt, ampc_op_name(op), {
            reduce_into<scalar_t> f = {(scalar_t *)ampc_data_ptr(out), (const scalar_t *)ampc_data_ptr(p->values),
                                       p->reduce};
            LAUNCH_INDEX_KERNEL(g, stream, f, err, (int)op);
        })
        return AMPC_OK;
    }
    bool accumulate = p->accumulate; /* false: scatter, index_copy/fill, index_put */
    if (!accumulate) {
        AMPC_CUDA_SWITCH_BITS(dt, ampc_op_name(op), {
            put_move<bits_t> f = {(bits_t *)ampc_data_ptr(out), (const bits_t *)ampc_data_ptr(p->values)};
            LAUNCH_INDEX_KERNEL(g, stream, f, err, (int)op);
        })
        return AMPC_OK;
    }
    index_alpha alpha;
    alpha.f = p->alpha.kind == AMPC_SCALAR_NONE ? 1.0 : ampc_scalar_to_double(p->alpha);
    alpha.i = p->alpha.kind == AMPC_SCALAR_NONE ? 1 : ampc_scalar_to_int(p->alpha);
    /* PyTorch's CUDA scatter_add/index_add/index_put(accumulate) use atomicAdd too. */
    AMPC_CUDA_SWITCH_ALL(dt, ampc_op_name(op), {
        accumulate_into<scalar_t> f = {(scalar_t *)ampc_data_ptr(out), (const scalar_t *)ampc_data_ptr(p->values), alpha};
        LAUNCH_INDEX_KERNEL(g, stream, f, err, (int)op);
    })
    return AMPC_OK;
}

/* ---------------------------------------------------------------- masked_fill */

/* out[p] = *value where mask[p]; the value is read on the device (0-dim, of out's dtype). */
template <typename T, typename U>
__global__ void masked_fill_kernel(ampc_cuda_indexer ix, T *out, const uint8_t *mask, const T *value) {
    T v = *value;
    AMPC_CUDA_KERNEL_LOOP(i, ix.numel) {
        int64_t o, m;
        offsets2(ix, (U)i, &o, &m);
        if (mask[m]) out[o] = v; /* bool storage holds 0 or 1 */
    }
}

static ampc_status cuda_masked_fill(ampc_op op, const ampc_masked_fill_args *p) {
    AMPC_TRY(ampc_masked_fill_check(op, p));
    ampc_tensor *out = p->dst;
    if (ampc_numel(out) == 0) return AMPC_OK;
    ampc_cuda_indexer ix;
    AMPC_TRY(ampc_cuda_indexer_init(&ix, 1, &out, 1, &p->mask)); /* out, mask (broadcast) */
    ampc_cuda_guard guard(out);
    cudaStream_t stream = ampc_cuda_stream_of(out);
    AMPC_CUDA_SWITCH_BITS(out->dtype, ampc_op_name(op), {
        bits_t *o = (bits_t *)ampc_data_ptr(out);
        const uint8_t *m = (const uint8_t *)ampc_data_ptr(p->mask);
        const bits_t *v = (const bits_t *)ampc_data_ptr(p->value);
        if (fits_u32(ix.numel))
            masked_fill_kernel<bits_t, uint32_t><<<ampc_cuda_blocks(ix.numel), AMPC_CUDA_THREADS, 0, stream>>>(ix, o, m, v);
        else
            masked_fill_kernel<bits_t, uint64_t><<<ampc_cuda_blocks(ix.numel), AMPC_CUDA_THREADS, 0, stream>>>(ix, o, m, v);
        AMPC_CUDA_CHECK_LAUNCH();
    })
    return AMPC_OK;
}

/* ---------------------------------------------------------------- nonzero */

/* The fill phase cuts the input (row-major) into tiles of NZ_TILE elements, NZ_ITEMS
 * consecutive ones per thread: count per tile, scan the counts into each tile's first output
 * row, then each tile scans its threads' counts and writes its rows in order. */
#define NZ_THREADS 256
#define NZ_ITEMS 8
#define NZ_TILE (NZ_THREADS * NZ_ITEMS)
#define SCAN_THREADS 1024

/* Value comparison, as the CPU: NaN is nonzero, -0.0 is zero. */
template <typename T> __device__ __forceinline__ bool is_nonzero(T v) { return v != (T)0; }
template <> __device__ __forceinline__ bool is_nonzero(__half v) { return __half2float(v) != 0.0f; }
template <> __device__ __forceinline__ bool is_nonzero(__nv_bfloat16 v) { return __bfloat162float(v) != 0.0f; }

/* Exclusive prefix sum of one value per thread over the block (blockDim.x a multiple of 32);
 * *total gets the block's sum. Every thread of the block must call it. shared: 32 values. */
__device__ __forceinline__ long long block_exclusive_scan(long long v, long long *shared, long long *total) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    long long x = v;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        long long y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o) x += y;
    }
    __syncthreads(); /* shared may still be read by a previous call */
    if (lane == 31) shared[warp] = x;
    __syncthreads();
    if (warp == 0) {
        long long w = lane < n_warps ? shared[lane] : 0;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            long long y = __shfl_up_sync(0xffffffffu, w, o);
            if (lane >= o) w += y;
        }
        shared[lane] = w; /* inclusive sums of the warps' totals */
    }
    __syncthreads();
    *total = shared[n_warps - 1];
    return (warp ? shared[warp - 1] : 0) + x - v;
}

template <typename T, typename U>
__global__ void nonzero_count_kernel(ampc_cuda_indexer ix, const T *in, unsigned long long *count) {
    __shared__ long long shared[32];
    long long c = 0;
    AMPC_CUDA_KERNEL_LOOP(i, ix.numel) {
        int64_t o, unused;
        offsets2(ix, (U)i, &o, &unused);
        c += is_nonzero(in[o]);
    }
    c = ampc_block_sum(c, shared);
    if (threadIdx.x == 0 && c) atomicAdd(count, (unsigned long long)c); /* integers: exact */
}

template <typename T, typename U>
__global__ void nonzero_tile_count_kernel(ampc_cuda_indexer ix, const T *in, int64_t n_tiles, long long *tile_count) {
    __shared__ long long shared[32];
    for (int64_t tile = blockIdx.x; tile < n_tiles; tile += gridDim.x) {
        int64_t first = tile * NZ_TILE + (int64_t)threadIdx.x * NZ_ITEMS;
        long long c = 0;
        for (int s = 0; s < NZ_ITEMS; s++) {
            if (first + s >= ix.numel) break;
            int64_t o, unused;
            offsets2(ix, (U)(first + s), &o, &unused);
            c += is_nonzero(in[o]);
        }
        c = ampc_block_sum(c, shared);
        if (threadIdx.x == 0) tile_count[tile] = c;
    }
}

/* In place: v[i] = sum of v[0..i); one block walks the array with a running carry. */
__global__ void exclusive_scan_kernel(long long *v, int64_t n) {
    __shared__ long long shared[32];
    long long carry = 0;
    for (int64_t base = 0; base < n; base += blockDim.x) {
        int64_t i = base + threadIdx.x;
        long long x = i < n ? v[i] : 0, total;
        long long e = block_exclusive_scan(x, shared, &total);
        if (i < n) v[i] = carry + e;
        carry += total;
    }
}

struct nz_shape {
    int32_t ndim;
    int64_t shape[AMPC_MAX_DIMS];
};

/* Rows of out (cap, ndim): the coordinates of each nonzero element, in row-major order. */
template <typename T, typename U>
__global__ void nonzero_fill_kernel(ampc_cuda_indexer ix, const T *in, nz_shape shp, int64_t n_tiles,
                                    const long long *tile_first, int64_t *out, int64_t cap) {
    __shared__ long long shared[32];
    for (int64_t tile = blockIdx.x; tile < n_tiles; tile += gridDim.x) {
        int64_t first = tile * NZ_TILE + (int64_t)threadIdx.x * NZ_ITEMS;
        unsigned flags = 0;
        long long c = 0, total;
        for (int s = 0; s < NZ_ITEMS; s++) {
            if (first + s >= ix.numel) break;
            int64_t o, unused;
            offsets2(ix, (U)(first + s), &o, &unused);
            if (is_nonzero(in[o])) {
                flags |= 1u << s;
                c++;
            }
        }
        long long row = tile_first[tile] + block_exclusive_scan(c, shared, &total);
        for (int s = 0; s < NZ_ITEMS; s++) {
            if (!(flags >> s & 1u)) continue;
            if (row < cap) {
                int64_t rem = first + s, *r = out + row * shp.ndim;
                for (int d = shp.ndim - 1; d >= 0; d--) {
                    r[d] = rem % shp.shape[d];
                    rem /= shp.shape[d];
                }
            }
            row++;
        }
    }
}

static unsigned tile_blocks(int64_t n_tiles) {
    return (unsigned)(n_tiles < 65535 * 16 ? n_tiles : 65535 * 16);
}

/* fill false: count into the 0-dim int64 out (the frontend then reads it on the host, the one
 * synchronisation, as PyTorch's nonzero); true: fill out (count, ndim). */
static ampc_status cuda_nonzero(ampc_op op, const ampc_nonzero_args *p) {
    ampc_tensor *t = (ampc_tensor *)p->input, *out = p->out;
    if (out->dtype != AMPC_INT64 || !ampc_is_contiguous(out) || (p->fill && out->ndim != 2))
        return ampc_set_error(AMPC_E_RUNTIME, "nonzero: expects a contiguous int64 output");
    ampc_cuda_guard guard(out);
    cudaStream_t stream = ampc_cuda_stream_of(out);
    int64_t numel = ampc_numel(t);
    ampc_cuda_indexer ix;
    memset(&ix, 0, sizeof ix);
    if (numel > 0) AMPC_TRY(ampc_cuda_indexer_init(&ix, 1, &t, 0, NULL)); /* the input alone */
    if (!p->fill) {
        AMPC_CUDA_TRY(cudaMemsetAsync(ampc_data_ptr(out), 0, sizeof(int64_t), stream));
        if (numel == 0) return AMPC_OK;
        unsigned long long *count = (unsigned long long *)ampc_data_ptr(out);
        AMPC_CUDA_SWITCH_ALL(t->dtype, "nonzero", {
            const scalar_t *in = (const scalar_t *)ampc_data_ptr(t);
            if (fits_u32(numel))
                nonzero_count_kernel<scalar_t, uint32_t><<<ampc_cuda_blocks(numel), AMPC_CUDA_THREADS, 0, stream>>>(
                    ix, in, count);
            else
                nonzero_count_kernel<scalar_t, uint64_t><<<ampc_cuda_blocks(numel), AMPC_CUDA_THREADS, 0, stream>>>(
                    ix, in, count);
            AMPC_CUDA_CHECK_LAUNCH();
        })
        return AMPC_OK;
    }
    int64_t cap = out->shape[0];
    if (numel == 0 || cap == 0 || t->ndim == 0) return AMPC_OK; /* a 0-dim input has no columns */
    nz_shape shp;
    memset(&shp, 0, sizeof shp);
    shp.ndim = t->ndim;
    for (int d = 0; d < t->ndim; d++) shp.shape[d] = t->shape[d];
    int64_t n_tiles = (numel + NZ_TILE - 1) / NZ_TILE;
    ampc_cuda_scratch tiles((int)out->device.index, (size_t)n_tiles * sizeof(long long));
    if (!tiles.ok()) return ampc_last_status();
    long long *first_row = tiles.as<long long>();
    int64_t *rows = (int64_t *)ampc_data_ptr(out);
    AMPC_CUDA_SWITCH_ALL(t->dtype, "nonzero", {
        const scalar_t *in = (const scalar_t *)ampc_data_ptr(t);
        if (fits_u32(numel))
            nonzero_tile_count_kernel<scalar_t, uint32_t><<<tile_blocks(n_tiles), NZ_THREADS, 0, stream>>>(
                ix, in, n_tiles, first_row);
        else
            nonzero_tile_count_kernel<scalar_t, uint64_t><<<tile_blocks(n_tiles), NZ_THREADS, 0, stream>>>(
                ix, in, n_tiles, first_row);
        AMPC_CUDA_CHECK_LAUNCH();
        exclusive_scan_kernel<<<1, SCAN_THREADS, 0, stream>>>(first_row, n_tiles); /* counts -> first rows */
        AMPC_CUDA_CHECK_LAUNCH();
        if (fits_u32(numel))
            nonzero_fill_kernel<scalar_t, uint32_t><<<tile_blocks(n_tiles), NZ_THREADS, 0, stream>>>(
                ix, in, shp, n_tiles, first_row, rows, cap);
        else
            nonzero_fill_kernel<scalar_t, uint64_t><<<tile_blocks(n_tiles), NZ_THREADS, 0, stream>>>(
                ix, in, shp, n_tiles, first_row, rows, cap);
        AMPC_CUDA_CHECK_LAUNCH();
    })
    return AMPC_OK;
}

/* ---------------------------------------------------------------- embedding */

/* Index i of an int64, int32 or uint8 index tensor (nn_get_index). */
__device__ __forceinline__ int64_t load_index(const void *p, int dtype, int64_t i) {
    switch (dtype) {
    case AMPC_INT32: return ((const int32_t *)p)[i];
    case AMPC_UINT8: return ((const uint8_t *)p)[i];
    default: return ((const int64_t *)p)[i];
    }
}

/* out (n, D) row i = weight (V, D) row idx[i], moved in units of T (up to 16 bytes: the
 * widest that divides the row's bytes and both base pointers' alignments). */
template <typename T>
__global__ void embedding_kernel(const T *w, const void *idx, int idx_dtype, T *out, int64_t n, int64_t v,
                                 int64_t units_per_row, int *err) {
    AMPC_CUDA_KERNEL_LOOP(u, n * units_per_row) {
        int64_t i = u / units_per_row, c = u - i * units_per_row;
        int64_t k = load_index(idx, idx_dtype, i);
        if (k < 0 || k >= v) {
            if (c == 0) report_index_error(err, AMPC_OP_EMBEDDING);
            continue;
        }
        out[u] = w[k * units_per_row + c];
    }
}

/* The widest unit (16, 8, 4, 2 or 1 bytes) dividing `bytes` and the addresses. */
static int move_unit(size_t bytes, const void *p, const void *q) {
    uintptr_t all = (uintptr_t)bytes | (uintptr_t)p | (uintptr_t)q;
    for (int u = 16; u > 1; u >>= 1)
        if (all % (uintptr_t)u == 0) return u;
    return 1;
}

/* in[0] weight (V, D) contiguous, in[1] int64/int32 indices (n) contiguous -> out[0] (n, D). */
static ampc_status cuda_embedding(ampc_op op, const ampc_embedding_args *a) {
    const ampc_tensor *w = a->weight, *idx = a->indices;
    ampc_tensor *out = a->out;
    int64_t v = w->shape[0], n = ampc_numel(idx);
    size_t row = (size_t)w->shape[1] * ampc_dtype_itemsize(w->dtype);
    if (n == 0 || row == 0) return AMPC_OK;
    ampc_cuda_guard guard(out);
    cudaStream_t stream = ampc_cuda_stream_of(out);
    int *err = ampc_cuda_error_word((int)out->device.index);
    const void *wp = ampc_data_ptr(w), *ip = ampc_data_ptr(idx);
    void *op_ = ampc_data_ptr(out);
    int unit = move_unit(row, wp, op_);
    int64_t upr = (int64_t)(row / (size_t)unit);
#define EMBEDDING_LAUNCH(T)                                                                              \
    embedding_kernel<T><<<ampc_cuda_blocks(n * upr), AMPC_CUDA_THREADS, 0, stream>>>((const T *)wp, ip,  \
                                                                                   (int)idx->dtype,      \
                                                                                   (T *)op_, n, v, upr, err)
    switch (unit) {
    case 16: EMBEDDING_LAUNCH(uint4); break;
    case 8: EMBEDDING_LAUNCH(unsigned long long); break;
    case 4: EMBEDDING_LAUNCH(uint32_t); break;
    case 2: EMBEDDING_LAUNCH(uint16_t); break;
    default: EMBEDDING_LAUNCH(uint8_t); break;
    }
#undef EMBEDDING_LAUNCH
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

/* Backward, deterministic (cpu_nn_misc.c's plan on the device):
 *   1. keys[i] = idx[i] (an out-of-range index reports and becomes the sentinel V), vals[i] = i;
 *   2. a stable radix sort of (key, position) pairs groups each index's positions in order;
 *   3. each weight row finds its run [start, end) of sorted keys;
 *   4. thread (row k, column c) sums grad[pos, c] over its run in double, in position order,
 *      divides by the count under scale_grad_by_freq, and stores once (padding_idx: zeros). */
__global__ void embedding_keys_kernel(const void *idx, int idx_dtype, int64_t n, int64_t v,
                                      unsigned long long *keys, int64_t *vals, int *err) {
    AMPC_CUDA_KERNEL_LOOP(i, n) {
        int64_t k = load_index(idx, idx_dtype, i);
        if (k < 0 || k >= v) {
            report_index_error(err, AMPC_OP_EMBEDDING_BACKWARD);
            k = v;
        }
        keys[i] = (unsigned long long)k;
        vals[i] = i;
    }
}

__global__ void embedding_runs_kernel(const unsigned long long *keys, int64_t n, int64_t v, int64_t *start,
                                      int64_t *end) {
    AMPC_CUDA_KERNEL_LOOP(j, n) {
        unsigned long long k = keys[j];
        if (k >= (unsigned long long)v) continue; /* the sentinel run of bad indices */
        if (j == 0 || keys[j - 1] != k) start[k] = j;
        if (j == n - 1 || keys[j + 1] != k) end[k] = j + 1;
    }
}

/* blockDim (32, 8): x along the columns (coalesced), y along the weight rows. */
template <typename T>
__global__ void embedding_backward_rows_kernel(const T *grad, const int64_t *order, const int64_t *start,
                                               const int64_t *end, T *gw, int64_t v, int64_t d, int64_t padding_idx,
                                               bool by_freq) {
    for (int64_t k = blockIdx.y * (int64_t)blockDim.y + threadIdx.y; k < v; k += (int64_t)gridDim.y * blockDim.y) {
        int64_t b = start[k], e = end[k];
        for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < d; c += (int64_t)gridDim.x * blockDim.x) {
            double acc = 0.0;
            if (k != padding_idx)
                for (int64_t j = b; j < e; j++) acc += (double)ampc_load(grad, order[j] * d + c);
            if (by_freq && e > b) acc /= (double)(e - b);
            gw[k * d + c] = ampc_convert<T>(acc);
        }
    }
}

/* grad (n, D), indices (n) -> grad weight (V, D) of grad's dtype;
 * padding_idx (-1: none), scale_grad_by_freq. */
static ampc_status cuda_embedding_backward(ampc_op op, const ampc_embedding_backward_args *a) {
    const ampc_tensor *g = a->grad, *idx = a->indices;
    ampc_tensor *gw = a->grad_weight;
    int64_t n = ampc_numel(idx), v = gw->shape[0], d = gw->shape[1];
    if (g->dtype != gw->dtype)
        return ampc_set_error(AMPC_E_RUNTIME, "%s: grad and grad weight dtypes differ", ampc_op_name(op));
    if (v == 0 || d == 0) return AMPC_OK;
    ampc_cuda_guard guard(gw);
    cudaStream_t stream = ampc_cuda_stream_of(gw);
    int dev = (int)gw->device.index;
    int *err = ampc_cuda_error_word(dev);
    size_t nb = (size_t)(n > 0 ? n : 1) * sizeof(int64_t), vb = (size_t)v * sizeof(int64_t);
    ampc_cuda_scratch keys_in(dev, nb), keys_out(dev, nb), vals_in(dev, nb), vals_out(dev, nb);
    ampc_cuda_scratch start(dev, vb), end(dev, vb);
    if (!keys_in.ok() || !keys_out.ok() || !vals_in.ok() || !vals_out.ok() || !start.ok() || !end.ok())
        return ampc_last_status();
    /* empty runs (start == end == 0) for rows no index names */
    AMPC_CUDA_TRY(cudaMemsetAsync(start.ptr, 0, vb, stream));
    AMPC_CUDA_TRY(cudaMemsetAsync(end.ptr, 0, vb, stream));
    if (n > 0) {
        embedding_keys_kernel<<<ampc_cuda_blocks(n), AMPC_CUDA_THREADS, 0, stream>>>(
            ampc_data_ptr(idx), (int)idx->dtype, n, v, keys_in.as<unsigned long long>(), vals_in.as<int64_t>(), err);
        AMPC_CUDA_CHECK_LAUNCH();
        int end_bit = 1;
        while (end_bit < 64 && ((unsigned long long)v >> end_bit) != 0) end_bit++; /* keys <= v fit */
        size_t temp_bytes = 0;
        AMPC_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys_in.as<unsigned long long>(),
                                                      keys_out.as<unsigned long long>(), vals_in.as<int64_t>(),
                                                      vals_out.as<int64_t>(), n, 0, end_bit, stream));
        if (temp_bytes == 0) temp_bytes = 16; /* a NULL buffer would make the next call a size query */
        ampc_cuda_scratch temp(dev, temp_bytes);
        if (!temp.ok()) return ampc_last_status();
        AMPC_CUDA_TRY(cub::DeviceRadixSort::SortPairs(temp.ptr, temp_bytes, keys_in.as<unsigned long long>(),
                                                      keys_out.as<unsigned long long>(), vals_in.as<int64_t>(),
                                                      vals_out.as<int64_t>(), n, 0, end_bit, stream));
        embedding_runs_kernel<<<ampc_cuda_blocks(n), AMPC_CUDA_THREADS, 0, stream>>>(
            keys_out.as<unsigned long long>(), n, v, start.as<int64_t>(), end.as<int64_t>());
        AMPC_CUDA_CHECK_LAUNCH();
    }
    dim3 block(32, 8);
    int64_t gx = (d + 31) / 32, gy = (v + 7) / 8;
    dim3 grid((unsigned)(gx < 65535 ? gx : 65535), (unsigned)(gy < 65535 ? gy : 65535));
    int64_t padding_idx = a->padding_idx;
    bool by_freq = a->scale_grad_by_freq;
    AMPC_CUDA_SWITCH_FLOATING(gw->dtype, "embedding_backward", {
        embedding_backward_rows_kernel<scalar_t><<<grid, block, 0, stream>>>(
            (const scalar_t *)ampc_data_ptr(g), vals_out.as<int64_t>(), start.as<int64_t>(), end.as<int64_t>(),
            (scalar_t *)ampc_data_ptr(gw), v, d, padding_idx, by_freq);
        AMPC_CUDA_CHECK_LAUNCH();
    })
    return AMPC_OK;
}

extern "C" void ampc_cuda_register_index(void) {
    ampc_register_gather(AMPC_CUDA, cuda_gather_form);
    ampc_register_scatter(AMPC_CUDA, cuda_scatter_form);
    ampc_register_masked_fill(AMPC_CUDA, cuda_masked_fill);
    ampc_register_nonzero(AMPC_CUDA, cuda_nonzero);
    ampc_register_embedding(AMPC_CUDA, cuda_embedding);
    ampc_register_embedding_backward(AMPC_CUDA, cuda_embedding_backward);
}
