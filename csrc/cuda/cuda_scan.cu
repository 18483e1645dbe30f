/* cuda_scan.cu: the SCAN kernel CUMSUM on CUDA, with the semantics of cpu_scan.c: running sums
 * along one dim of a contiguous input into a contiguous output of the same dtype (the frontend
 * casts and copies first). Floats accumulate in double and round each prefix once, integers in
 * uint64 (wrapping), as on the CPU.
 *
 * The tensor is (outer, n, cols), the scanned dim n in the middle.
 *   - cols > 1, or rows of at most 32: a thread per (outer, col) line scans serially down the
 *     dim; neighbouring threads take neighbouring columns, so loads coalesce.
 *   - cols == 1: a block per row scans it in tiles of 4 elements per thread (a warp-shuffle scan,
 *     then one over the warps' totals), carrying the running sum from tile to tile.
 * When the lines are too few to fill the GPU (one long row, a tall cumsum(0)), the dim is cut
 * into chunks: a first pass sums each chunk, a second turns those sums into each chunk's carry
 * (an exclusive scan per line), and the scan then starts every chunk from its carry. Fixed
 * order, no atomics: deterministic. */
#include "../core/kernel_args.h"
#include "../core/reduce_plan.h"
#include "cuda_reduce.cuh"

#define SCAN_ITEMS 4   /* elements per thread and tile in the row scan */
#define SCAN_BLOCK 512 /* the row scan's largest block */

template <typename T> struct scan_acc { typedef uint64_t type; };
template <> struct scan_acc<float> { typedef double type; };
template <> struct scan_acc<double> { typedef double type; };
template <> struct scan_acc<__half> { typedef double type; };
template <> struct scan_acc<__nv_bfloat16> { typedef double type; };

/* (outer, n, cols), with n cut into n_chunks chunks of `chunk` (the last one shorter). Carries
 * and chunk sums are laid out [outer][n_chunks][cols]. */
struct scan_shape {
    int64_t outer, n, cols, chunk, n_chunks;
};

/* ---------------------------------------------------------------- serial lines */

/* Thread t = (b * n_chunks + c) * cols + col scans chunk c of line (b, col), from carry[t]. */
template <typename T, typename A>
__global__ void scan_lines_kernel(const T *__restrict__ in, T *__restrict__ out, scan_shape s, const A *carry) {
    const int64_t total = s.outer * s.n_chunks * s.cols;
    AMPC_CUDA_KERNEL_LOOP(t, total) {
        const int64_t col = t % s.cols, q = t / s.cols, c = q % s.n_chunks, b = q / s.n_chunks;
        const int64_t begin = c * s.chunk, end = ampc_min64(begin + s.chunk, s.n);
        A acc = carry ? carry[t] : (A)0;
        int64_t off = (b * s.n + begin) * s.cols + col;
        for (int64_t i = begin; i < end; i++, off += s.cols) {
            acc += ampc_convert<A>(in[off]);
            out[off] = ampc_convert<T>(acc);
        }
    }
}

template <typename T, typename A>
__global__ void chunk_sums_lines_kernel(const T *__restrict__ in, scan_shape s, A *sums) {
    const int64_t total = s.outer * s.n_chunks * s.cols;
    AMPC_CUDA_KERNEL_LOOP(t, total) {
        const int64_t col = t % s.cols, q = t / s.cols, c = q % s.n_chunks, b = q / s.n_chunks;
        const int64_t begin = c * s.chunk, end = ampc_min64(begin + s.chunk, s.n);
        A acc = 0;
        int64_t off = (b * s.n + begin) * s.cols + col;
        for (int64_t i = begin; i < end; i++, off += s.cols) acc += ampc_convert<A>(in[off]);
        sums[t] = acc;
    }
}

/* Chunk sums -> carries, in place: an exclusive scan over the chunks of each line. */
template <typename A> __global__ void carries_kernel(A *sums, scan_shape s) {
    const int64_t lines = s.outer * s.cols;
    AMPC_CUDA_KERNEL_LOOP(l, lines) {
        const int64_t col = l % s.cols, b = l / s.cols;
        A acc = 0;
        for (int64_t c = 0; c < s.n_chunks; c++) {
            const int64_t k = (b * s.n_chunks + c) * s.cols + col;
            const A v = sums[k];
            sums[k] = acc;
            acc += v;
        }
    }
}

/* ---------------------------------------------------------------- rows (cols == 1) */

/* Inclusive scan across a full warp. */
template <typename A> __device__ __forceinline__ A warp_inclusive_scan(A v, int lane) {
    for (int d = 1; d < 32; d <<= 1) {
        A u = __shfl_up_sync(0xffffffffu, v, d);
        if (lane >= d) v += u;
    }
    return v;
}

/* Block blk = row * n_chunks + c scans chunk c of its row from carry[blk] (blockDim.x a multiple
 * of 32). */
template <typename T, typename A>
__global__ void __launch_bounds__(SCAN_BLOCK) scan_rows_kernel(const T *__restrict__ in, T *__restrict__ out,
                                                               scan_shape s, const A *carry) {
    __shared__ A warp_total[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const int64_t tile = (int64_t)blockDim.x * SCAN_ITEMS, blocks = s.outer * s.n_chunks;
    for (int64_t blk = blockIdx.x; blk < blocks; blk += gridDim.x) {
        const int64_t row = blk / s.n_chunks, c = blk % s.n_chunks;
        const int64_t end = ampc_min64((c + 1) * s.chunk, s.n);
        const T *x = in + row * s.n;
        T *y = out + row * s.n;
        A run = carry ? carry[blk] : (A)0; /* the sum of everything before this tile */
        for (int64_t t0 = c * s.chunk; t0 < end; t0 += tile) {
            const int64_t i0 = t0 + (int64_t)threadIdx.x * SCAN_ITEMS;
            A part[SCAN_ITEMS], local = 0;
#pragma unroll
            for (int k = 0; k < SCAN_ITEMS; k++) {
                if (i0 + k < end) local += ampc_convert<A>(x[i0 + k]);
                part[k] = local;
            }
            const A incl = warp_inclusive_scan(local, lane);
            A before = __shfl_up_sync(0xffffffffu, incl, 1); /* lanes below this one */
            if (lane == 0) before = 0;
            if (lane == 31) warp_total[warp] = incl;
            __syncthreads();
            if (warp == 0) { /* warp_total becomes the inclusive scan of the warps' totals */
                A w = lane < warps ? warp_total[lane] : (A)0;
                warp_total[lane] = warp_inclusive_scan(w, lane);
            }
            __syncthreads();
            const A base = run + (warp > 0 ? warp_total[warp - 1] : (A)0) + before;
#pragma unroll
            for (int k = 0; k < SCAN_ITEMS; k++)
                if (i0 + k < end) y[i0 + k] = ampc_convert<T>(base + part[k]);
            run += warp_total[warps - 1];
            __syncthreads(); /* warp_total is rewritten by the next tile */
        }
    }
}

template <typename T, typename A>
__global__ void __launch_bounds__(SCAN_BLOCK) chunk_sums_rows_kernel(const T *__restrict__ in, scan_shape s,
                                                                    A *sums) {
    __shared__ A warp_sums[32];
    const int64_t blocks = s.outer * s.n_chunks;
    for (int64_t blk = blockIdx.x; blk < blocks; blk += gridDim.x) {
        const int64_t row = blk / s.n_chunks, c = blk % s.n_chunks;
        const int64_t end = ampc_min64((c + 1) * s.chunk, s.n);
        const T *x = in + row * s.n;
        A local = 0;
        for (int64_t i = c * s.chunk + threadIdx.x; i < end; i += blockDim.x) local += ampc_convert<A>(x[i]);
        const A total = ampc_block_sum(local, warp_sums);
        if (threadIdx.x == 0) sums[blk] = total;
    }
}

/* ---------------------------------------------------------------- launch */

/* The scan itself, each chunk starting from its carry (none: from 0). */
template <typename T, typename A>
static ampc_status launch_scan(const T *in, T *out, const scan_shape &s, bool rows, const A *carry,
                               cudaStream_t stream) {
    if (rows) {
        int threads = 32; /* enough for one tile to cover a chunk, at most SCAN_BLOCK */
        while (threads < SCAN_BLOCK && (int64_t)threads * SCAN_ITEMS < s.chunk) threads *= 2;
        unsigned grid = (unsigned)ampc_min64(s.outer * s.n_chunks, (int64_t)1 << 30);
        scan_rows_kernel<T, A><<<grid, threads, 0, stream>>>(in, out, s, carry);
    } else {
        int64_t threads = s.outer * s.n_chunks * s.cols;
        scan_lines_kernel<T, A><<<ampc_cuda_blocks(threads), AMPC_CUDA_THREADS, 0, stream>>>(in, out, s, carry);
    }
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

template <typename T>
static ampc_status cumsum_typed(const ampc_tensor *in_t, ampc_tensor *out_t, int64_t outer, int64_t n, int64_t cols) {
    typedef typename scan_acc<T>::type A;
    const T *in = (const T *)ampc_data_ptr(in_t);
    T *out = (T *)ampc_data_ptr(out_t);
    const int dev = (int)in_t->device.index, sms = ampc_cuda_sm_count(dev);
    cudaStream_t stream = ampc_cuda_stream_of(in_t);
    const bool rows = cols == 1 && n > 32;
    const int64_t lines = outer * cols;
    int64_t n_chunks = 1, chunk = n;
    if (rows) { /* blocks of SCAN_BLOCK threads, ~4 per SM; chunks of at least 2 tiles */
        int64_t target = (int64_t)sms * 4, tile = SCAN_BLOCK * SCAN_ITEMS;
        if (outer < target && n > 2 * tile) n_chunks = ampc_min64(ampc_ceil_div(target, outer), n / (2 * tile));
        if (n_chunks > 1) chunk = ampc_ceil_div(ampc_ceil_div(n, n_chunks), tile) * tile;
    } else { /* a thread per line and chunk, 2048 per SM; chunks of at least 32 */
        int64_t target = (int64_t)sms * 2048;
        if (lines < target && n > 64) n_chunks = ampc_min64(ampc_ceil_div(target, lines), n / 32);
        if (n_chunks > 1) chunk = ampc_ceil_div(n, n_chunks);
    }
    n_chunks = ampc_ceil_div(n, chunk);
    scan_shape s = {outer, n, cols, chunk, n_chunks};
    if (n_chunks == 1) return launch_scan<T, A>(in, out, s, rows, nullptr, stream);
    ampc_cuda_scratch sums(dev, (size_t)(lines * n_chunks) * sizeof(A));
    if (!sums.ok()) return ampc_last_status();
    A *carry = sums.as<A>();
    if (rows) {
        unsigned grid = (unsigned)ampc_min64(outer * n_chunks, (int64_t)1 << 30);
        chunk_sums_rows_kernel<T, A><<<grid, SCAN_BLOCK, 0, stream>>>(in, s, carry);
    } else {
        chunk_sums_lines_kernel<T, A><<<ampc_cuda_blocks(lines * n_chunks), AMPC_CUDA_THREADS, 0, stream>>>(in, s, carry);
    }
    AMPC_CUDA_CHECK_LAUNCH();
    carries_kernel<A><<<ampc_cuda_blocks(lines), AMPC_CUDA_THREADS, 0, stream>>>(carry, s);
    AMPC_CUDA_CHECK_LAUNCH();
    return launch_scan<T, A>(in, out, s, rows, carry, stream);
}

/* issue 12's scan rows and the scan_indices kernel (cuda_scan_more.cu) */
extern "C" ampc_status ampc_cuda_scan_more(ampc_op op, const ampc_scan_args *a);
extern "C" void ampc_cuda_register_scan_more(void);

static ampc_status cuda_cumsum(ampc_op op, const ampc_scan_args *a) {
    if (op != AMPC_OP_CUMSUM) return ampc_cuda_scan_more(op, a);
    ampc_tensor *out = a->output;
    const ampc_tensor *in = a->input;
    ampc_cuda_guard guard(in);
    ampc_scan_plan sp = ampc_scan_plan_make(in, a->dim); /* the scanned dim in the middle */
    int64_t outer = sp.outer, n = sp.n, cols = sp.cols;
    if (outer * n * cols == 0) return AMPC_OK;
    ampc_status s = AMPC_OK;
    AMPC_CUDA_SWITCH_ALL(in->dtype, ampc_op_name(op), s = cumsum_typed<scalar_t>(in, out, outer, n, cols);)
    return s;
}

void ampc_cuda_register_scan(void) {
    ampc_register_scan(AMPC_CUDA, cuda_cumsum);
    ampc_cuda_register_scan_more();
}
