/* cuda_nn_rnn.cu: the fused LSTM and GRU cells and their backward on CUDA, torch's
 * _thnn_fused_lstm_cell / _thnn_fused_gru_cell kernels. The CPU twin is cpu/cpu_nn_rnn.c; the
 * per-element math is core/rnn_math.h, shared with it.
 *
 * Every tensor arrives contiguous: gates (B, G*H), states (B, H), biases (G*H). One thread per
 * (b, j) element of the state loads its G gates, adds the biases, runs the cell in opmath (float
 * for fp32/fp16/bf16, double for fp64) and stores each value once. */
#include "../core/kernel_args.h"
#include "../core/rnn_math.h"
#include "cuda_common.cuh"

/* The opmath overloads of rnn_math.h's float (_f) and double (_d) functions. */
__device__ __forceinline__ void rnn_lstm(const float *p, float cx, float *a, float *c, float *h) {
    ampc_lstm_cell_f(p, cx, a, c, h);
}
__device__ __forceinline__ void rnn_lstm(const double *p, double cx, double *a, double *c, double *h) {
    ampc_lstm_cell_d(p, cx, a, c, h);
}
__device__ __forceinline__ void rnn_lstm_bwd(const float *a, float cx, float cy, float go, float gc, float *d,
                                             float *dcx) {
    ampc_lstm_cell_backward_f(a, cx, cy, go, gc, d, dcx);
}
__device__ __forceinline__ void rnn_lstm_bwd(const double *a, double cx, double cy, double go, double gc, double *d,
                                             double *dcx) {
    ampc_lstm_cell_backward_d(a, cx, cy, go, gc, d, dcx);
}
__device__ __forceinline__ float rnn_gru(const float *x, const float *h, float hx, float *w) {
    return ampc_gru_cell_f(x, h, hx, w);
}
__device__ __forceinline__ double rnn_gru(const double *x, const double *h, double hx, double *w) {
    return ampc_gru_cell_d(x, h, hx, w);
}
__device__ __forceinline__ float rnn_gru_bwd(const float *w, float go, float *dx, float *dh) {
    return ampc_gru_cell_backward_f(w, go, dx, dh);
}
__device__ __forceinline__ double rnn_gru_bwd(const double *w, double go, double *dx, double *dh) {
    return ampc_gru_cell_backward_d(w, go, dx, dh);
}

template <typename T>
__global__ void lstm_fwd_kernel(const T *ig, const T *hg, const T *ib, const T *hb, const T *cx, T *hy, T *cy, T *ws,
                                int64_t B, int64_t H) {
    typedef ampc_opmath_t<T> O;
    AMPC_CUDA_KERNEL_LOOP(e, B * H) {
        int64_t b = e / H, j = e - b * H;
        O pre[4], act[4], c, h;
        for (int g = 0; g < 4; g++) {
            int64_t k = g * H + j, i = b * 4 * H + k;
            pre[g] = ampc_load(ig, i) + ampc_load(hg, i);
            if (ib) pre[g] += ampc_load(ib, k) + ampc_load(hb, k);
        }
        rnn_lstm(pre, ampc_load(cx, e), act, &c, &h);
        for (int g = 0; g < 4; g++) ws[b * 4 * H + g * H + j] = ampc_convert<T>(act[g]);
        cy[e] = ampc_convert<T>(c);
        hy[e] = ampc_convert<T>(h);
    }
}

template <typename T>
__global__ void lstm_bwd_kernel(const T *ghy, const T *gcy, const T *cx, const T *cy, const T *ws, T *gg, T *gcx,
                                int64_t B, int64_t H) {
    typedef ampc_opmath_t<T> O;
    AMPC_CUDA_KERNEL_LOOP(e, B * H) {
        int64_t b = e / H, j = e - b * H;
        O act[4], d[4], dcx;
        for (int g = 0; g < 4; g++) act[g] = ampc_load(ws, b * 4 * H + g * H + j);
        O go = ghy ? ampc_load(ghy, e) : (O)0, gc = gcy ? ampc_load(gcy, e) : (O)0;
        rnn_lstm_bwd(act, ampc_load(cx, e), ampc_load(cy, e), go, gc, d, &dcx);
        for (int g = 0; g < 4; g++) gg[b * 4 * H + g * H + j] = ampc_convert<T>(d[g]);
        gcx[e] = ampc_convert<T>(dcx);
    }
}

template <typename T>
__global__ void gru_fwd_kernel(const T *ig, const T *hg, const T *ib, const T *hb, const T *hx, T *hy, T *ws,
                               int64_t B, int64_t H) {
    typedef ampc_opmath_t<T> O;
    AMPC_CUDA_KERNEL_LOOP(e, B * H) {
        int64_t b = e / H, j = e - b * H;
        O x[3], h[3], w[5];
        for (int g = 0; g < 3; g++) {
            int64_t k = g * H + j, i = b * 3 * H + k;
            x[g] = ampc_load(ig, i), h[g] = ampc_load(hg, i);
            if (ib) x[g] += ampc_load(ib, k), h[g] += ampc_load(hb, k);
        }
        O y = rnn_gru(x, h, ampc_load(hx, e), w);
        for (int g = 0; g < 5; g++) ws[b * 5 * H + g * H + j] = ampc_convert<T>(w[g]);
        hy[e] = ampc_convert<T>(y);
    }
}

template <typename T>
__global__ void gru_bwd_kernel(const T *ghy, const T *ws, T *gi, T *gh, T *ghx, int64_t B, int64_t H) {
    typedef ampc_opmath_t<T> O;
    AMPC_CUDA_KERNEL_LOOP(e, B * H) {
        int64_t b = e / H, j = e - b * H;
        O w[5], dx[3], dh[3];
        for (int g = 0; g < 5; g++) w[g] = ampc_load(ws, b * 5 * H + g * H + j);
        O dhx = rnn_gru_bwd(w, ampc_load(ghy, e), dx, dh);
        for (int g = 0; g < 3; g++) {
            gi[b * 3 * H + g * H + j] = ampc_convert<T>(dx[g]);
            gh[b * 3 * H + g * H + j] = ampc_convert<T>(dh[g]);
        }
        ghx[e] = ampc_convert<T>(dhx);
    }
}

/* Typed data pointer of an optional tensor. */
template <typename T> static T *rnn_ptr(const ampc_tensor *t) { return t ? (T *)ampc_data_ptr(t) : NULL; }

static ampc_status cuda_fused_lstm_cell(ampc_op op, const ampc_fused_lstm_cell_args *a) {
    int64_t B = a->cx->shape[0], H = a->cx->shape[1];
    ampc_cuda_guard guard(a->hy);
    cudaStream_t stream = ampc_cuda_stream_of(a->hy);
    AMPC_CUDA_SWITCH_FLOATING(a->cx->dtype, "_thnn_fused_lstm_cell", {
        lstm_fwd_kernel<scalar_t><<<ampc_cuda_blocks(B * H), AMPC_CUDA_THREADS, 0, stream>>>(
            rnn_ptr<const scalar_t>(a->input_gates), rnn_ptr<const scalar_t>(a->hidden_gates),
            rnn_ptr<const scalar_t>(a->input_bias), rnn_ptr<const scalar_t>(a->hidden_bias),
            rnn_ptr<const scalar_t>(a->cx), rnn_ptr<scalar_t>(a->hy), rnn_ptr<scalar_t>(a->cy),
            rnn_ptr<scalar_t>(a->workspace), B, H);
        AMPC_CUDA_CHECK_LAUNCH();
    })
    return AMPC_OK;
}

static ampc_status cuda_fused_lstm_cell_backward(ampc_op op, const ampc_fused_lstm_cell_backward_args *a) {
    int64_t B = a->cx->shape[0], H = a->cx->shape[1];
    ampc_cuda_guard guard(a->grad_gates);
    cudaStream_t stream = ampc_cuda_stream_of(a->grad_gates);
    AMPC_CUDA_SWITCH_FLOATING(a->cx->dtype, "_thnn_fused_lstm_cell_backward_impl", {
        lstm_bwd_kernel<scalar_t><<<ampc_cuda_blocks(B * H), AMPC_CUDA_THREADS, 0, stream>>>(
            rnn_ptr<const scalar_t>(a->grad_hy), rnn_ptr<const scalar_t>(a->grad_cy), rnn_ptr<const scalar_t>(a->cx),
            rnn_ptr<const scalar_t>(a->cy), rnn_ptr<const scalar_t>(a->workspace), rnn_ptr<scalar_t>(a->grad_gates),
            rnn_ptr<scalar_t>(a->grad_cx), B, H);
        AMPC_CUDA_CHECK_LAUNCH();
    })
    return AMPC_OK;
}

static ampc_status cuda_fused_gru_cell(ampc_op op, const ampc_fused_gru_cell_args *a) {
    int64_t B = a->hx->shape[0], H = a->hx->shape[1];
    ampc_cuda_guard guard(a->hy);
    cudaStream_t stream = ampc_cuda_stream_of(a->hy);
    AMPC_CUDA_SWITCH_FLOATING(a->hx->dtype, "_thnn_fused_gru_cell", {
        gru_fwd_kernel<scalar_t><<<ampc_cuda_blocks(B * H), AMPC_CUDA_THREADS, 0, stream>>>(
            rnn_ptr<const scalar_t>(a->input_gates), rnn_ptr<const scalar_t>(a->hidden_gates),
            rnn_ptr<const scalar_t>(a->input_bias), rnn_ptr<const scalar_t>(a->hidden_bias),
            rnn_ptr<const scalar_t>(a->hx), rnn_ptr<scalar_t>(a->hy), rnn_ptr<scalar_t>(a->workspace), B, H);
        AMPC_CUDA_CHECK_LAUNCH();
    })
    return AMPC_OK;
}

static ampc_status cuda_fused_gru_cell_backward(ampc_op op, const ampc_fused_gru_cell_backward_args *a) {
    int64_t B = a->grad_hy->shape[0], H = a->grad_hy->shape[1];
    ampc_cuda_guard guard(a->grad_hx);
    cudaStream_t stream = ampc_cuda_stream_of(a->grad_hx);
    AMPC_CUDA_SWITCH_FLOATING(a->grad_hy->dtype, "_thnn_fused_gru_cell_backward", {
        gru_bwd_kernel<scalar_t><<<ampc_cuda_blocks(B * H), AMPC_CUDA_THREADS, 0, stream>>>(
            rnn_ptr<const scalar_t>(a->grad_hy), rnn_ptr<const scalar_t>(a->workspace),
            rnn_ptr<scalar_t>(a->grad_input_gates), rnn_ptr<scalar_t>(a->grad_hidden_gates),
            rnn_ptr<scalar_t>(a->grad_hx), B, H);
        AMPC_CUDA_CHECK_LAUNCH();
    })
    return AMPC_OK;
}

extern "C" void ampc_cuda_register_nn_rnn(void) {
    ampc_register_fused_lstm_cell(AMPC_CUDA, cuda_fused_lstm_cell);
    ampc_register_fused_lstm_cell_backward(AMPC_CUDA, cuda_fused_lstm_cell_backward);
    ampc_register_fused_gru_cell(AMPC_CUDA, cuda_fused_gru_cell);
    ampc_register_fused_gru_cell_backward(AMPC_CUDA, cuda_fused_gru_cell_backward);
}
