/* cuda_gemm.cu: the GEMM kernel on CUDA: D = beta * C + alpha * (A @ B) over a batch (the
 * argument layout is on the GEMM row of ops.def; the CPU twin is cpu/cpu_gemm.c).
 *
 * Routing per dtype:
 *   float32/float64/float16/bfloat16  cuBLASLt (cuda_blaslt.cu): operands passed as they lie
 *                    (a transposed view is a transpose flag, a sliced one a leading dimension, a
 *                    broadcast batch a batch stride of 0); an operand with neither a unit row
 *                    nor a unit column stride is first packed into contiguous scratch. fp16 and
 *                    bf16 accumulate in fp32 and round once, as on the CPU.
 *   int64/int32/uint8  ampc's own tiled kernel below, in wrapping arithmetic of the element
 *                    width (alpha and beta truncated), as on the CPU. cuBLAS has no integer GEMM
 *                    of these types; PyTorch's CUDA backend has none at all. Correctness only.
 *   bool             not implemented, as on the CPU.
 * The same tiled kernel serves k == 0 (D = beta * C, or zeros) and any float problem for which
 * cuBLASLt reports no algorithm (ampc._C._cuda_gemm_stats counts it, so tests see it).
 *
 * How the C input reaches cuBLASLt, cheapest first:
 *   a bias row broadcast over the rows with beta == 1 (nn.Linear's addmm; stride 0 on the n
 *   dim): CUBLASLT_EPILOGUE_BIAS, one call; a row-major C: cuBLASLt's own C matrix with beta;
 *   anything else (a column bias as in conv, broadcast batches, transposed C): copied into the
 *   output first, then beta applies in place (C == D), which is what PyTorch's addmm does.
 *
 * Convolutions reach this kernel through core/nn_conv.c (im2col + one batched GEMM per chunk):
 * there is no cuDNN in this build, conv is im2col + cuBLASLt. */
#include <stdint.h>
#include <string.h>

#include <type_traits>

#include "../core/kernel_args.h"
#include "cuda_gemm.cuh"

/* ---------------------------------------------------------------- statistics */

static int64_t gemm_stats[AMPC_CUDA_GEMM_NUM_STATS];

/* Plain increments: every GEMM call holds the GIL (the binding never releases it around ops). */
void ampc_cuda_gemm_count(int stat) { gemm_stats[stat]++; }

extern "C" void ampc_cuda_gemm_stats(int64_t *out, int reset) {
    memcpy(out, gemm_stats, sizeof gemm_stats);
    if (reset) memset(gemm_stats, 0, sizeof gemm_stats);
}

/* ---------------------------------------------------------------- geometry */

/* The call's pointers and strides, batch dims simplified: size-1 dims dropped, a dim merged into
 * the one outside it when that is contiguous over it in every operand. ops[GEMM_C] may be NULL. */
static void build_geom(gemm_geom *g, const ampc_tensor *const ops[GEMM_NOPS]) {
    const ampc_tensor *d = ops[GEMM_D];
    int nd = d->ndim;
    memset(g, 0, sizeof *g);
    g->n = d->shape[nd - 2];
    g->m = d->shape[nd - 1];
    g->k = ops[GEMM_A]->shape[nd - 1];
    g->batch = 1;
    for (int op = 0; op < GEMM_NOPS; op++) {
        const ampc_tensor *t = ops[op];
        if (!t) continue;
        g->ptr[op] = (char *)ampc_data_ptr(t);
        g->rs[op] = t->strides[nd - 2];
        g->cs[op] = t->strides[nd - 1];
    }
    for (int dim = 0; dim < nd - 2; dim++) {
        int64_t ext = d->shape[dim], st[GEMM_NOPS];
        g->batch *= ext;
        if (ext == 1) continue;
        for (int op = 0; op < GEMM_NOPS; op++) st[op] = ops[op] ? ops[op]->strides[dim] : 0;
        int last = g->nb - 1;
        bool merge = last >= 0;
        for (int op = 0; op < GEMM_NOPS && merge; op++) merge = g->bstride[op][last] == st[op] * ext;
        if (merge) {
            g->bshape[last] *= ext;
            for (int op = 0; op < GEMM_NOPS; op++) g->bstride[op][last] = st[op];
            continue;
        }
        g->bshape[g->nb] = ext;
        for (int op = 0; op < GEMM_NOPS; op++) g->bstride[op][g->nb] = st[op];
        g->nb++;
    }
}

/* ---------------------------------------------------------------- ampc's tiled kernel */

/* Accumulator: fp32 for fp16/bf16/fp32, fp64 for fp64; the unsigned type of the element's width
 * for integers (wraps without undefined behaviour; uint8 in 32 bits, equal modulo 256). */
template <typename T> struct gemm_acc { typedef ampc_opmath_t<T> type; };
template <> struct gemm_acc<int64_t> { typedef uint64_t type; };
template <> struct gemm_acc<int32_t> { typedef uint32_t type; };
template <> struct gemm_acc<uint8_t> { typedef uint32_t type; };

/* alpha / beta of an integer GEMM: truncated toward zero like PyTorch, saturated (cpu_gemm.c). */
static int64_t int_coef(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775807.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}

template <typename Acc> static Acc coef_as(double v) {
    if (std::is_integral<Acc>::value) return (Acc)int_coef(v);
    return (Acc)v;
}

#define GEMM_TILE 16

/* One 16x16 tile of D per block and iteration, k in steps of 16 through shared memory; tiles
 * and batch entries in grid-stride loops (every thread of a block runs the same iterations, so
 * the __syncthreads are uniform). Any strides in every operand. */
template <typename T, typename Acc>
__global__ void __launch_bounds__(GEMM_TILE *GEMM_TILE)
    gemm_tiled_kernel(gemm_geom g, Acc alpha, Acc beta, bool use_c) {
    __shared__ Acc as[GEMM_TILE][GEMM_TILE + 1]; /* A (i, p) */
    __shared__ Acc bs[GEMM_TILE][GEMM_TILE + 1]; /* B (p, j) */
    const int tx = threadIdx.x, ty = threadIdx.y;
    const T *A = (const T *)g.ptr[GEMM_A], *B = (const T *)g.ptr[GEMM_B], *C = (const T *)g.ptr[GEMM_C];
    T *D = (T *)g.ptr[GEMM_D];
    const int64_t row_tiles = (g.n + GEMM_TILE - 1) / GEMM_TILE, col_tiles = (g.m + GEMM_TILE - 1) / GEMM_TILE;
    for (int64_t e = blockIdx.z; e < g.batch; e += gridDim.z) {
        int64_t off[GEMM_NOPS] = {0, 0, 0, 0}, rest = e;
        for (int d = g.nb - 1; d >= 0; d--) {
            int64_t idx = rest % g.bshape[d];
            rest /= g.bshape[d];
            for (int op = 0; op < GEMM_NOPS; op++) off[op] += idx * g.bstride[op][d];
        }
        for (int64_t rt = blockIdx.y; rt < row_tiles; rt += gridDim.y)
            for (int64_t ct = blockIdx.x; ct < col_tiles; ct += gridDim.x) {
                const int64_t i = rt * GEMM_TILE + ty, j = ct * GEMM_TILE + tx;
                Acc acc = Acc(0);
                for (int64_t p0 = 0; p0 < g.k; p0 += GEMM_TILE) {
                    const int64_t pa = p0 + tx, pb = p0 + ty;
                    as[ty][tx] = i < g.n && pa < g.k
                                     ? ampc_convert<Acc>(A[off[GEMM_A] + i * g.rs[GEMM_A] + pa * g.cs[GEMM_A]])
                                     : Acc(0);
                    bs[ty][tx] = pb < g.k && j < g.m
                                     ? ampc_convert<Acc>(B[off[GEMM_B] + pb * g.rs[GEMM_B] + j * g.cs[GEMM_B]])
                                     : Acc(0);
                    __syncthreads();
#pragma unroll
                    for (int q = 0; q < GEMM_TILE; q++) acc += as[ty][q] * bs[q][tx];
                    __syncthreads();
                }
                if (i < g.n && j < g.m) {
                    Acc v = alpha * acc;
                    /* read before the write: C may be D itself (the C input copied into the output) */
                    if (use_c) v += beta * ampc_convert<Acc>(C[off[GEMM_C] + i * g.rs[GEMM_C] + j * g.cs[GEMM_C]]);
                    D[off[GEMM_D] + i * g.rs[GEMM_D] + j * g.cs[GEMM_D]] = ampc_convert<T>(v);
                }
            }
    }
}

template <typename T>
static ampc_status launch_tiled(const gemm_geom &g, double alpha, double beta, bool use_c, cudaStream_t stream) {
    typedef typename gemm_acc<T>::type Acc;
    int64_t tiles_x = (g.m + GEMM_TILE - 1) / GEMM_TILE, tiles_y = (g.n + GEMM_TILE - 1) / GEMM_TILE;
    dim3 grid((unsigned)(tiles_x < 65535 ? tiles_x : 65535), (unsigned)(tiles_y < 65535 ? tiles_y : 65535),
              (unsigned)(g.batch < 65535 ? g.batch : 65535));
    dim3 block(GEMM_TILE, GEMM_TILE);
    gemm_tiled_kernel<T, Acc><<<grid, block, 0, stream>>>(g, coef_as<Acc>(alpha), coef_as<Acc>(beta), use_c);
    AMPC_CUDA_CHECK_LAUNCH();
    ampc_cuda_gemm_count(AMPC_CUDA_GEMM_GENERIC_KERNEL);
    return AMPC_OK;
}

static ampc_status run_tiled(ampc_dtype dt, const gemm_geom &g, double alpha, double beta, bool use_c,
                             cudaStream_t stream) {
    switch (dt) {
    case AMPC_FLOAT32: return launch_tiled<float>(g, alpha, beta, use_c, stream);
    case AMPC_FLOAT64: return launch_tiled<double>(g, alpha, beta, use_c, stream);
    case AMPC_FLOAT16: return launch_tiled<__half>(g, alpha, beta, use_c, stream);
    case AMPC_BFLOAT16: return launch_tiled<__nv_bfloat16>(g, alpha, beta, use_c, stream);
    case AMPC_INT64: return launch_tiled<int64_t>(g, alpha, beta, use_c, stream);
    case AMPC_INT32: return launch_tiled<int32_t>(g, alpha, beta, use_c, stream);
    case AMPC_UINT8: return launch_tiled<uint8_t>(g, alpha, beta, use_c, stream);
    default: return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "gemm: not implemented for '%s'", ampc_dtype_name(dt));
    }
}

/* ---------------------------------------------------------------- copies for the cuBLASLt path */

#ifdef AMPC_WITH_CUBLAS
/* dst (the output, row-major) = src (the C input broadcast to the output's shape, any strides). */
template <typename T> __global__ void copy_into_kernel(T *dst, const T *src, ampc_cuda_indexer ix) {
    AMPC_CUDA_KERNEL_LOOP(i, ix.numel) {
        int64_t off[AMPC_CUDA_MAX_OPERANDS];
        ix.offsets(i, off);
        dst[off[0]] = src[off[1]];
    }
}

template <typename T>
static ampc_status launch_copy_into(ampc_tensor *out, const ampc_tensor *src, cudaStream_t stream) {
    ampc_cuda_indexer ix;
    AMPC_TRY(ampc_cuda_indexer_init(&ix, 1, &out, 1, &src));
    copy_into_kernel<T><<<ampc_cuda_blocks(ix.numel), AMPC_CUDA_THREADS, 0, stream>>>(
        (T *)ampc_data_ptr(out), (const T *)ampc_data_ptr(src), ix);
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

static ampc_status copy_into(ampc_tensor *out, const ampc_tensor *src, cudaStream_t stream) {
    ampc_cuda_gemm_count(AMPC_CUDA_GEMM_C_COPIED);
    AMPC_CUDA_SWITCH_BITS(out->dtype, "gemm", return launch_copy_into<bits_t>(out, src, stream););
}

/* dst (contiguous) = element i (row-major) of the strided layout at src. */
template <typename T> __global__ void pack_kernel(T *dst, const T *src, int64_t total, ampc_cuda_layout l) {
    AMPC_CUDA_KERNEL_LOOP(i, total) dst[i] = src[ampc_cuda_offset(l, i)];
}

static ampc_status launch_pack(void *dst, const void *src, size_t item, int64_t total, const ampc_cuda_layout &l,
                               cudaStream_t stream) {
    unsigned blocks = ampc_cuda_blocks(total);
    if (item == 2)
        pack_kernel<<<blocks, AMPC_CUDA_THREADS, 0, stream>>>((uint16_t *)dst, (const uint16_t *)src, total, l);
    else if (item == 4)
        pack_kernel<<<blocks, AMPC_CUDA_THREADS, 0, stream>>>((uint32_t *)dst, (const uint32_t *)src, total, l);
    else
        pack_kernel<<<blocks, AMPC_CUDA_THREADS, 0, stream>>>((uint64_t *)dst, (const uint64_t *)src, total, l);
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

/* Packs operand `slot` (rows x cols per batch entry) row-major into scratch, keeping broadcast
 * batch dims broadcast (stride 0, copied once), and points the geometry at the copy. */
static ampc_status pack_operand(gemm_geom *g, int slot, int64_t rows, int64_t cols, ampc_dtype dt, int device,
                                cudaStream_t stream, gemm_scratch *buf) {
    ampc_cuda_layout l;
    memset(&l, 0, sizeof l);
    int64_t packed[AMPC_MAX_DIMS], total = rows * cols;
    for (int d = g->nb - 1; d >= 0; d--) {
        bool broadcast = g->bstride[slot][d] == 0;
        l.shape[d] = broadcast ? 1 : g->bshape[d];
        l.strides[d] = g->bstride[slot][d];
        packed[d] = broadcast ? 0 : total;
        total *= l.shape[d];
    }
    l.ndim = g->nb + 2;
    l.shape[g->nb] = rows, l.strides[g->nb] = g->rs[slot];
    l.shape[g->nb + 1] = cols, l.strides[g->nb + 1] = g->cs[slot];
    size_t item = ampc_dtype_itemsize(dt);
    AMPC_TRY(buf->alloc(device, (size_t)total * item));
    AMPC_TRY(launch_pack(buf->ptr, g->ptr[slot], item, total, l, stream));
    ampc_cuda_gemm_count(AMPC_CUDA_GEMM_PACKED);
    g->ptr[slot] = (char *)buf->ptr;
    g->rs[slot] = cols;
    g->cs[slot] = 1;
    for (int d = 0; d < g->nb; d++) g->bstride[slot][d] = packed[d];
    return AMPC_OK;
}

/* True when no batch dim of size > 1 has stride 0 in t: cuBLASLt's C then gets plain batch
 * strides (a broadcast C is copied into the output instead, the well-trodden in-place form). */
static bool batch_strides_nonzero(const ampc_tensor *t) {
    for (int d = 0; d < t->ndim - 2; d++)
        if (t->shape[d] > 1 && t->strides[d] == 0) return false;
    return true;
}

static ampc_status run_cublaslt(const ampc_tensor *a, const ampc_tensor *b, ampc_tensor *out, const ampc_tensor *cin,
                                double alpha, double beta, cudaStream_t stream) {
    ampc_dtype dt = out->dtype;
    int device = (int)out->device.index, nd = out->ndim;
    int64_t n = out->shape[nd - 2], m = out->shape[nd - 1];
    bool trans;
    int64_t ld;

    gemm_c_mode mode = GEMM_C_NONE;
    if (cin) {
        int64_t crs = cin->strides[nd - 2], ccs = cin->strides[nd - 1];
        /* not when C shares D's storage (n == 1, in place): cuBLASLt may write D (split-K
         * partials) before it reads the bias, and its bias must not alias D */
        if (beta == 1.0 && (n <= 1 || crs == 0) && (m <= 1 || ccs == 1) && cin->storage != out->storage)
            mode = GEMM_C_BIAS;
        else if (gemm_blas_layout(n, m, crs, ccs, &trans, &ld) && !trans && batch_strides_nonzero(cin))
            mode = GEMM_C_SEPARATE;
        else
            mode = GEMM_C_IN_PLACE;
    }
    if (mode == GEMM_C_IN_PLACE) AMPC_TRY(copy_into(out, cin, stream));
    const ampc_tensor *ops[GEMM_NOPS] = {a, b, mode == GEMM_C_NONE ? NULL : mode == GEMM_C_IN_PLACE ? out : cin, out};
    gemm_geom g;
    build_geom(&g, ops);

    gemm_scratch packed_a, packed_b;
    if (!gemm_blas_layout(g.n, g.k, g.rs[GEMM_A], g.cs[GEMM_A], &trans, &ld))
        AMPC_TRY(pack_operand(&g, GEMM_A, g.n, g.k, dt, device, stream, &packed_a));
    if (!gemm_blas_layout(g.k, g.m, g.rs[GEMM_B], g.cs[GEMM_B], &trans, &ld))
        AMPC_TRY(pack_operand(&g, GEMM_B, g.k, g.m, dt, device, stream, &packed_b));

    bool no_algo = false;
    AMPC_TRY(ampc_cuda_gemm_cublaslt(device, stream, dt, g, mode, alpha, beta, &no_algo));
    if (no_algo && mode == GEMM_C_BIAS) {
        /* no bias epilogue for this problem: C copied into D, beta (== 1) in place; D's strides
         * took part in simplifying the batch dims, so the geometry holds for C = D */
        AMPC_TRY(copy_into(out, cin, stream));
        mode = GEMM_C_IN_PLACE;
        g.ptr[GEMM_C] = g.ptr[GEMM_D];
        g.rs[GEMM_C] = g.rs[GEMM_D];
        g.cs[GEMM_C] = g.cs[GEMM_D];
        memcpy(g.bstride[GEMM_C], g.bstride[GEMM_D], sizeof g.bstride[GEMM_D]);
        AMPC_TRY(ampc_cuda_gemm_cublaslt(device, stream, dt, g, mode, alpha, beta, &no_algo));
    }
    if (no_algo && (!packed_a.ptr || !packed_b.ptr)) {
        /* no algorithm for these alignments (a slice at an odd offset): once more with A and B
         * packed into fresh, 256-byte aligned scratch */
        if (!packed_a.ptr) AMPC_TRY(pack_operand(&g, GEMM_A, g.n, g.k, dt, device, stream, &packed_a));
        if (!packed_b.ptr) AMPC_TRY(pack_operand(&g, GEMM_B, g.k, g.m, dt, device, stream, &packed_b));
        AMPC_TRY(ampc_cuda_gemm_cublaslt(device, stream, dt, g, mode, alpha, beta, &no_algo));
    }
    if (no_algo) return run_tiled(dt, g, alpha, beta, mode != GEMM_C_NONE, stream);
    return AMPC_OK;
}
#endif

/* ---------------------------------------------------------------- the kernel */

static ampc_status cuda_gemm(ampc_op op, const ampc_gemm_args *p) {
    AMPC_TRY(ampc_gemm_check_args(p));
    ampc_tensor *out = p->out;
    const ampc_tensor *cin = p->c;
    ampc_dtype dt = out->dtype;
    int nd = out->ndim;
    int64_t k = p->a->shape[nd - 1];
    if (ampc_numel(out) == 0) return AMPC_OK;
    double alpha = p->alpha, beta = p->beta;
    if (beta == 0) cin = NULL; /* beta 0 ignores the input, NaN included, as BLAS does */
    if (dt == AMPC_BOOL)
        return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "gemm: not implemented for '%s'", ampc_dtype_name(dt));
    ampc_cuda_guard guard(out);
    cudaStream_t stream = ampc_cuda_stream_of(out);
    ampc_cuda_gemm_count(AMPC_CUDA_GEMM_CALLS);
    bool floating = dt == AMPC_FLOAT32 || dt == AMPC_FLOAT64 || dt == AMPC_FLOAT16 || dt == AMPC_BFLOAT16;

    if (!floating || k == 0) {
        /* k == 0: D = beta * C or zeros; alpha * (empty sum) is 0 even for alpha inf/NaN (BLAS) */
        const ampc_tensor *ops[GEMM_NOPS] = {p->a, p->b, cin, out};
        gemm_geom g;
        build_geom(&g, ops);
        return run_tiled(dt, g, k == 0 ? 0.0 : alpha, beta, cin != NULL, stream);
    }
#ifdef AMPC_WITH_CUBLAS
    return run_cublaslt(p->a, p->b, out, cin, alpha, beta, stream);
#else
    return ampc_set_error(AMPC_E_RUNTIME,
                          "gemm: ampc was built without cuBLAS, so %s matmul on CUDA is unavailable (install the "
                          "nvidia-cublas wheel into the build's Python and rebuild)",
                          ampc_dtype_name(dt));
#endif
}

extern "C" void ampc_cuda_register_gemm(void) { ampc_register_gemm(AMPC_CUDA, cuda_gemm); }
