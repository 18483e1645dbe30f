/* cuda_nn_pdist.cu: pdist and its backward on CUDA, the CPU twin's loops (cpu/cpu_nn_pdist.c)
 * one thread per output: forward a thread per pair (i, j) over the M coordinates, backward a
 * thread per grad element (i, c) over the N - 1 pairs of row i (one writer per element, no
 * atomics). Accumulation in double; math core/pdist_math.h. */
#include "../core/kernel_args.h"
#include "../core/pdist_math.h"
#include "cuda_common.cuh"

#define PDIST_THREADS 256

struct pdist_params {
    const void *x, *g, *dist;
    void *out;
    int64_t n, m, pairs;
    double p;
    int kind;
};

__device__ __forceinline__ int64_t pdist_pair_index(int64_t i, int64_t j, int64_t n) {
    return i * n - i * (i + 1) / 2 + (j - i - 1);
}

template <typename T> __global__ void pdist_forward_kernel(const pdist_params q) {
    int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= q.pairs) return;
    /* row i of pair k: the largest i with pair_index(i, i + 1) <= k (a root of the triangle sum) */
    double nn = (double)q.n;
    int64_t i = (int64_t)floor(nn - 0.5 - sqrt((nn - 0.5) * (nn - 0.5) - 2.0 * (double)k));
    if (i < 0) i = 0;
    while (i > 0 && pdist_pair_index(i, i + 1, q.n) > k) i--;
    while (i + 1 < q.n - 1 && pdist_pair_index(i + 1, i + 2, q.n) <= k) i++;
    int64_t j = k - pdist_pair_index(i, i + 1, q.n) + i + 1;
    const T *xi = (const T *)q.x + i * q.m, *xj = (const T *)q.x + j * q.m;
    double acc = 0;
    for (int64_t c = 0; c < q.m; c++) acc = ampc_pdist_acc(q.kind, acc, (double)xi[c] - (double)xj[c], q.p);
    ((T *)q.out)[k] = (T)ampc_pdist_finish(q.kind, acc, q.p);
}

template <typename T> __global__ void pdist_backward_kernel(const pdist_params q) {
    int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= q.n * q.m) return;
    int64_t i = e / q.m, c = e % q.m;
    const T *x = (const T *)q.x, *g = (const T *)q.g, *dist = (const T *)q.dist;
    T xi = x[e];
    double acc = 0;
    for (int64_t j = 0; j < q.n; j++) {
        if (j == i) continue;
        int64_t k = i < j ? pdist_pair_index(i, j, q.n) : pdist_pair_index(j, i, q.n);
        T diff = xi - x[j * q.m + c]; /* in T, as the dist it is compared with (p = inf) */
        acc += ampc_pdist_grad(q.kind, (double)diff, (double)dist[k], (double)g[k], q.p);
    }
    ((T *)q.out)[e] = (T)acc;
}

static unsigned pdist_blocks(int64_t n) { return (unsigned)((n + PDIST_THREADS - 1) / PDIST_THREADS); }

static ampc_status cuda_pdist(ampc_op op, const ampc_pdist_args *a) {
    (void)op;
    ampc_cuda_guard guard(a->input);
    pdist_params q;
    memset(&q, 0, sizeof q);
    q.x = ampc_data_ptr(a->input), q.out = ampc_data_ptr(a->out);
    q.n = a->input->shape[0], q.m = a->input->shape[1], q.pairs = ampc_numel(a->out), q.p = a->p;
    q.kind = ampc_pdist_kind(a->p);
    cudaStream_t stream = ampc_cuda_stream_of(a->input);
    if (a->input->dtype == AMPC_FLOAT64)
        pdist_forward_kernel<double><<<pdist_blocks(q.pairs), PDIST_THREADS, 0, stream>>>(q);
    else
        pdist_forward_kernel<float><<<pdist_blocks(q.pairs), PDIST_THREADS, 0, stream>>>(q);
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

static ampc_status cuda_pdist_backward(ampc_op op, const ampc_pdist_backward_args *a) {
    (void)op;
    ampc_cuda_guard guard(a->input);
    pdist_params q;
    memset(&q, 0, sizeof q);
    q.x = ampc_data_ptr(a->input), q.g = ampc_data_ptr(a->grad), q.dist = ampc_data_ptr(a->dist);
    q.out = ampc_data_ptr(a->grad_input);
    q.n = a->input->shape[0], q.m = a->input->shape[1], q.pairs = ampc_numel(a->dist), q.p = a->p;
    q.kind = ampc_pdist_kind(a->p);
    cudaStream_t stream = ampc_cuda_stream_of(a->input);
    if (a->input->dtype == AMPC_FLOAT64)
        pdist_backward_kernel<double><<<pdist_blocks(q.n * q.m), PDIST_THREADS, 0, stream>>>(q);
    else
        pdist_backward_kernel<float><<<pdist_blocks(q.n * q.m), PDIST_THREADS, 0, stream>>>(q);
    AMPC_CUDA_CHECK_LAUNCH();
    return AMPC_OK;
}

extern "C" void ampc_cuda_register_nn_pdist(void) {
    ampc_register_pdist(AMPC_CUDA, cuda_pdist);
    ampc_register_pdist_backward(AMPC_CUDA, cuda_pdist_backward);
}
