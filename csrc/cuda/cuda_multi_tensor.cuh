/* cuda_multi_tensor.cuh: the multi-tensor apply machinery of the list ops (cuda_amp.cu: the
 * scaler's unscale + check, the grad norm and scale; cuda_optim.cu: the fused optimizers).
 *
 * One launch serves as many tensors as fit in one kernel's parameter block (CUDA 12.1+ allows
 * 32764 bytes of parameters on Volta and later): the host packs, per tensor, NPTR data pointers
 * (the same element range of NPTR tensors of one shape: param, grad, states...) and its element
 * count, plus the running count of blocks before it. Every block takes one chunk of
 * AMPC_MT_CHUNK elements of one tensor and finds its tensor by a binary search of first_block
 * (uniform across the block, so the reads are constant-bank broadcasts). Only the tensor table
 * bounds a launch, not the number of chunks: a list launches again only when MAXT tensors were
 * packed, so a model's whole grad list is normally one launch.
 *
 * Dtypes: a launch serves one storage type (the kernels are templates per dtype); the callers
 * group a mixed list by dtype on the host, at most one launch per dtype present. This keeps the
 * inner loops monomorphic (no per-tensor switch, no extra registers for the other paths) and
 * lets each dtype use its own vector width; a list of one dtype, the common case (GradScaler
 * and the optimizers already group by dtype), pays nothing for it.
 *
 * Loads and stores: each thread handles W consecutive elements per step, as one aligned vector
 * access of W elements (128 bits for the single-stream ops) when the block's pointers allow it,
 * else element by element (a tensor viewed at an odd offset). Chunks start at multiples of
 * AMPC_MT_CHUNK elements, so a tensor's alignment is its base pointer's. */
#ifndef AMPC_CUDA_MULTI_TENSOR_CUH
#define AMPC_CUDA_MULTI_TENSOR_CUH

#include <limits.h>

#include <new>

#include "cuda_common.cuh"

#define AMPC_MT_CHUNK ((int64_t)32768) /* elements per block */
#define AMPC_MT_THREADS 512
/* Bytes the tensor table may take: the 32764-byte limit less room for a kernel's other arguments
 * (options, scalar pointers: under 256 bytes for every kernel here). */
#define AMPC_MT_META_BYTES 32256

/* The tensor table of one launch: NPTR pointers per tensor (NULL for an unused slot), the element
 * count, and first_block[t] = blocks of the launch before tensor t (first_block[n_tensors] =
 * gridDim.x). Passed by value as a __grid_constant__ kernel parameter. */
template <int NPTR, int MAXT> struct ampc_mt_meta {
    void *ptr[NPTR][MAXT];
    int64_t numel[MAXT];
    int32_t first_block[MAXT + 1];
    int32_t n_tensors;

    /* The tensor that block b works on. */
    __host__ __device__ __forceinline__ int locate(int32_t b) const {
        int lo = 0, hi = n_tensors - 1;
        while (lo < hi) {
            int mid = (lo + hi + 1) >> 1;
            if (first_block[mid] <= b) lo = mid;
            else hi = mid - 1;
        }
        return lo;
    }
};

/* As many tensors as fit in AMPC_MT_META_BYTES with NPTR pointers each. */
template <int NPTR> struct ampc_mt_capacity {
    static constexpr int value = (int)((AMPC_MT_META_BYTES - 2 * sizeof(int32_t)) / (NPTR * sizeof(void *) + sizeof(int64_t) + sizeof(int32_t)));
};

/* What one block works on: tensor t, elements [start, start + n) of it. */
struct ampc_mt_chunk {
    int t;
    int64_t start, n;
};

template <int NPTR, int MAXT>
__host__ __device__ __forceinline__ ampc_mt_chunk ampc_mt_chunk_of(const ampc_mt_meta<NPTR, MAXT> &m, int32_t b) {
    ampc_mt_chunk c;
    c.t = m.locate(b);
    c.start = (int64_t)(b - m.first_block[c.t]) * AMPC_MT_CHUNK;
    int64_t left = m.numel[c.t] - c.start;
    c.n = left < AMPC_MT_CHUNK ? left : AMPC_MT_CHUNK;
    return c;
}

/* The host-side buffer a table is built in before it is copied into a launch: one per thread
 * (32 KiB is a lot for some threads' stacks), reused by every call, since <<<...>>> copies the
 * arguments before it returns. */
static inline void *ampc_mt_table_buffer(void) {
    alignas(16) static thread_local unsigned char buf[AMPC_MT_META_BYTES];
    return buf;
}

/* Packs tensors 0..n-1 into launches. get(i, ptrs, &numel) fills tensor i's NPTR pointers and
 * element count, or returns false to leave it out; launch(meta, blocks, block_offset) runs one
 * launch (block_offset: blocks of the earlier launches of this call, for per-block outputs) and
 * returns an ampc_status. Empty tensors take no entry. */
template <int NPTR, int MAXT, typename Get, typename Launch>
static ampc_status ampc_mt_apply(int n, Get get, Launch launch) {
    typedef ampc_mt_meta<NPTR, MAXT> meta_t;
    static_assert(sizeof(meta_t) <= AMPC_MT_META_BYTES, "multi-tensor table exceeds the parameter budget");
    meta_t &m = *new (ampc_mt_table_buffer()) meta_t;
    int nt = 0;
    int64_t blocks = 0, offset = 0;
    m.first_block[0] = 0;
    for (int i = 0; i < n; i++) {
        void *p[NPTR];
        int64_t numel = 0;
        if (!get(i, p, &numel) || numel <= 0) continue;
        int64_t nb = (numel + AMPC_MT_CHUNK - 1) / AMPC_MT_CHUNK;
        if (nb > INT_MAX / 2)
            return ampc_set_error(AMPC_E_VALUE, "multi-tensor kernel: a tensor of %lld elements is too large",
                                  (long long)numel);
        if (nt == MAXT || blocks + nb > INT_MAX) {
            m.n_tensors = nt;
            AMPC_TRY(launch(m, (int)blocks, offset));
            offset += blocks;
            nt = 0;
            blocks = 0;
        }
        for (int k = 0; k < NPTR; k++) m.ptr[k][nt] = p[k];
        m.numel[nt] = numel;
        blocks += nb;
        m.first_block[++nt] = (int32_t)blocks;
    }
    if (nt > 0) {
        m.n_tensors = nt;
        AMPC_TRY(launch(m, (int)blocks, offset));
    }
    return AMPC_OK;
}

/* Blocks the tensors 0..n-1 take in all (for per-block output buffers). */
template <typename Numel> static int64_t ampc_mt_total_blocks(int n, Numel numel_of) {
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        int64_t numel = numel_of(i);
        if (numel > 0) total += (numel + AMPC_MT_CHUNK - 1) / AMPC_MT_CHUNK;
    }
    return total;
}

/* ---------------------------------------------------------------- W elements per thread */

template <typename T, int W> struct alignas(sizeof(T) * W) ampc_mt_vec {
    T v[W];
};

/* True when p may be accessed as W-element vectors (p + i for i a multiple of W). NULL is. */
template <int W, typename T> __host__ __device__ __forceinline__ bool ampc_mt_aligned(const T *p) {
    return ((uintptr_t)p % (sizeof(T) * W)) == 0;
}

/* r[w] = element i + w of p as V, for i + w < n (0 beyond it); vec: one vector access. */
template <int W, typename V, typename T>
__device__ __forceinline__ void ampc_mt_load(V (&r)[W], const T *p, int64_t i, int64_t n, bool vec) {
    if (vec && i + W <= n) {
        ampc_mt_vec<T, W> v = *(const ampc_mt_vec<T, W> *)(p + i);
#pragma unroll
        for (int w = 0; w < W; w++) r[w] = ampc_convert<V>(v.v[w]);
    } else {
#pragma unroll
        for (int w = 0; w < W; w++) r[w] = i + w < n ? ampc_convert<V>(p[i + w]) : (V)0;
    }
}

/* Element i + w of p = r[w] rounded to T, for i + w < n. */
template <int W, typename V, typename T>
__device__ __forceinline__ void ampc_mt_store(T *p, const V (&r)[W], int64_t i, int64_t n, bool vec) {
    if (vec && i + W <= n) {
        ampc_mt_vec<T, W> v;
#pragma unroll
        for (int w = 0; w < W; w++) v.v[w] = ampc_convert<T>(r[w]);
        *(ampc_mt_vec<T, W> *)(p + i) = v;
    } else {
#pragma unroll
        for (int w = 0; w < W; w++)
            if (i + w < n) p[i + w] = ampc_convert<T>(r[w]);
    }
}

/* ---------------------------------------------------------------- layouts */

/* True when t's elements fill [data_ptr, data_ptr + numel) exactly, in some order of dims
 * (contiguous, transposed, any permutation): an elementwise in-place op may then treat it as
 * one flat run. Expanded (stride 0) and sliced views are not. */
static inline bool ampc_mt_is_dense(const ampc_tensor *t) {
    int64_t shape[AMPC_MAX_DIMS], stride[AMPC_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] == 1) continue;
        if (t->shape[d] == 0) return true;
        int k = nd++;
        /* insertion sort by stride, ascending */
        while (k > 0 && stride[k - 1] > t->strides[d]) {
            stride[k] = stride[k - 1];
            shape[k] = shape[k - 1];
            k--;
        }
        stride[k] = t->strides[d];
        shape[k] = t->shape[d];
    }
    int64_t expected = 1;
    for (int k = 0; k < nd; k++) {
        if (stride[k] != expected) return false;
        expected *= shape[k];
    }
    return true;
}

#endif
