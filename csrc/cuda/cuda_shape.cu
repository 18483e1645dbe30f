/* cuda_shape.cu: the CUDA kernel of tril/triu (the other shape ops of issue 12 are views, COPY or
 * the index kernels over computed strides: core/shape_ops.c), as cpu_shape.c.
 *
 * One thread per output element, walked in row-major order by the elementwise indexer (out,
 * input): the linear index gives the column (i % m) and row ((i / m) % n), which decide between
 * the input's element and zero. Moves are by item size (bits_t), so every dtype is one kernel
 * per width; all-zero bits are 0 in every dtype. In place (out == input) the kept elements are
 * rewritten with themselves, which is harmless. */
#include "../core/kernel_args.h"
#include "cuda_common.cuh"

template <typename T>
__global__ void tril_kernel(ampc_cuda_indexer ix, T *out, const T *in, int64_t n, int64_t m, int64_t k, bool lower) {
    AMPC_CUDA_KERNEL_LOOP(i, ix.numel) {
        int64_t off[AMPC_CUDA_MAX_OPERANDS];
        ix.offsets(i, off);
        int64_t col = i % m, row = (i / m) % n;
        bool keep = lower ? col - row <= k : col - row >= k;
        out[off[0]] = keep ? in[off[1]] : (T)0;
    }
}

static ampc_status cuda_tril(ampc_op op, const ampc_tril_args *p) {
    ampc_tensor *out = p->out;
    const ampc_tensor *in = p->input;
    int nd = out->ndim;
    if (nd < 2 || in->ndim != nd || in->dtype != out->dtype)
        return ampc_set_error(AMPC_E_RUNTIME, "%s: expects input and out of one dtype and shape (*, n, m)",
                              ampc_op_name(op));
    if (ampc_numel(out) == 0) return AMPC_OK;
    ampc_cuda_indexer ix;
    AMPC_TRY(ampc_cuda_indexer_init(&ix, 1, &out, 1, &in));
    ampc_cuda_guard guard(out);
    cudaStream_t stream = ampc_cuda_stream_of(out);
    int64_t n = out->shape[nd - 2], m = out->shape[nd - 1];
    AMPC_CUDA_SWITCH_BITS(out->dtype, ampc_op_name(op), {
        tril_kernel<bits_t><<<ampc_cuda_blocks(ix.numel), AMPC_CUDA_THREADS, 0, stream>>>(
            ix, (bits_t *)ampc_data_ptr(out), (const bits_t *)ampc_data_ptr(in), n, m, p->diagonal,
            op == AMPC_OP_TRIL);
        AMPC_CUDA_CHECK_LAUNCH();
    })
    return AMPC_OK;
}

extern "C" void ampc_cuda_register_shape(void) { ampc_register_tril(AMPC_CUDA, cuda_tril); }
