/* cpu_nn_rnn.c: the fused LSTM and GRU cells and their backward on the CPU (math: core/rnn_math.h).
 *
 * Every tensor arrives contiguous: gates (B, G*H), states (B, H), biases (G*H). One pass over the
 * (b, j) elements loads the G gates of element j of row b, adds the biases, runs the cell in opmath
 * (float for fp32/fp16/bf16, double for fp64) and stores each result once, so fp16/bf16 round once
 * per value, as on CUDA. Rows are split across threads when the step is large. */
#include <stddef.h>

#include "../core/kernel_args.h"
#include "../core/rnn_math.h"
#include "cpu_backend.h"
#include "cpu_nn_common.h"

/* Storage <-> opmath for the four floating storage types. */
#define LD_f32(p, i) (((const float *)(p))[i])
#define ST_f32(p, i, v) (((float *)(p))[i] = (v))
#define LD_f64(p, i) (((const double *)(p))[i])
#define ST_f64(p, i, v) (((double *)(p))[i] = (v))
#define LD_f16(p, i) ampc_half_to_f32(((const ampc_half *)(p))[i])
#define ST_f16(p, i, v) (((ampc_half *)(p))[i] = ampc_f32_to_half(v))
#define LD_bf16(p, i) ampc_bf16_to_f32(((const ampc_bfloat16 *)(p))[i])
#define ST_bf16(p, i, v) (((ampc_bfloat16 *)(p))[i] = ampc_f32_to_bf16(v))

/* Threads for a step of `work` elements. */
#define RNN_THREADS(work) nn_threads((work) * 8)

/* One kernel body per (storage suffix D, opmath type T, opmath suffix S). */
#define RNN_KERNELS(D, T, S)                                                                                      \
    static void lstm_fwd_##D(const ampc_fused_lstm_cell_args *a, int64_t B, int64_t H) {                         \
        const void *ig = ampc_data_ptr(a->input_gates), *hg = ampc_data_ptr(a->hidden_gates);                    \
        const void *ib = nn_data(a->input_bias), *hb = nn_data(a->hidden_bias), *cx = ampc_data_ptr(a->cx);      \
        void *hy = ampc_data_ptr(a->hy), *cy = ampc_data_ptr(a->cy), *ws = ampc_data_ptr(a->workspace);          \
        _Pragma("omp parallel for schedule(static) num_threads(RNN_THREADS(B * H))")                             \
        for (int64_t b = 0; b < B; b++)                                                                          \
            for (int64_t j = 0; j < H; j++) {                                                                    \
                T pre[4], act[4], c, h;                                                                           \
                for (int g = 0; g < 4; g++) {                                                                    \
                    int64_t k = g * H + j, i = b * 4 * H + k;                                                     \
                    pre[g] = (T)LD_##D(ig, i) + (T)LD_##D(hg, i);                                                 \
                    if (ib) pre[g] += (T)LD_##D(ib, k) + (T)LD_##D(hb, k);                                        \
                }                                                                                                \
                ampc_lstm_cell_##S(pre, (T)LD_##D(cx, b * H + j), act, &c, &h);                                  \
                for (int g = 0; g < 4; g++) ST_##D(ws, b * 4 * H + g * H + j, act[g]);                           \
                ST_##D(cy, b * H + j, c);                                                                         \
                ST_##D(hy, b * H + j, h);                                                                         \
            }                                                                                                    \
    }                                                                                                            \
    static void lstm_bwd_##D(const ampc_fused_lstm_cell_backward_args *a, int64_t B, int64_t H) {                \
        const void *ghy = nn_data(a->grad_hy), *gcy = nn_data(a->grad_cy), *cx = ampc_data_ptr(a->cx);           \
        const void *cy = ampc_data_ptr(a->cy), *ws = ampc_data_ptr(a->workspace);                                \
        void *gg = ampc_data_ptr(a->grad_gates), *gcx = ampc_data_ptr(a->grad_cx);                               \
        _Pragma("omp parallel for schedule(static) num_threads(RNN_THREADS(B * H))")                             \
        for (int64_t b = 0; b < B; b++)                                                                          \
            for (int64_t j = 0; j < H; j++) {                                                                    \
                int64_t e = b * H + j;                                                                           \
                T act[4], d[4], dcx;                                                                              \
                for (int g = 0; g < 4; g++) act[g] = (T)LD_##D(ws, b * 4 * H + g * H + j);                       \
                T go = ghy ? (T)LD_##D(ghy, e) : (T)0, gc = gcy ? (T)LD_##D(gcy, e) : (T)0;                       \
                ampc_lstm_cell_backward_##S(act, (T)LD_##D(cx, e), (T)LD_##D(cy, e), go, gc, d, &dcx);           \
                for (int g = 0; g < 4; g++) ST_##D(gg, b * 4 * H + g * H + j, d[g]);                             \
                ST_##D(gcx, e, dcx);                                                                              \
            }                                                                                                    \
    }                                                                                                            \
    static void gru_fwd_##D(const ampc_fused_gru_cell_args *a, int64_t B, int64_t H) {                           \
        const void *ig = ampc_data_ptr(a->input_gates), *hg = ampc_data_ptr(a->hidden_gates);                    \
        const void *ib = nn_data(a->input_bias), *hb = nn_data(a->hidden_bias), *hx = ampc_data_ptr(a->hx);      \
        void *hy = ampc_data_ptr(a->hy), *ws = ampc_data_ptr(a->workspace);                                      \
        _Pragma("omp parallel for schedule(static) num_threads(RNN_THREADS(B * H))")                             \
        for (int64_t b = 0; b < B; b++)                                                                          \
            for (int64_t j = 0; j < H; j++) {                                                                    \
                T x[3], h[3], w[5];                                                                               \
                for (int g = 0; g < 3; g++) {                                                                    \
                    int64_t k = g * H + j, i = b * 3 * H + k;                                                     \
                    x[g] = (T)LD_##D(ig, i), h[g] = (T)LD_##D(hg, i);                                             \
                    if (ib) x[g] += (T)LD_##D(ib, k), h[g] += (T)LD_##D(hb, k);                                   \
                }                                                                                                \
                T y = ampc_gru_cell_##S(x, h, (T)LD_##D(hx, b * H + j), w);                                      \
                for (int g = 0; g < 5; g++) ST_##D(ws, b * 5 * H + g * H + j, w[g]);                             \
                ST_##D(hy, b * H + j, y);                                                                         \
            }                                                                                                    \
    }                                                                                                            \
    static void gru_bwd_##D(const ampc_fused_gru_cell_backward_args *a, int64_t B, int64_t H) {                  \
        const void *ghy = ampc_data_ptr(a->grad_hy), *ws = ampc_data_ptr(a->workspace);                          \
        void *gi = ampc_data_ptr(a->grad_input_gates), *gh = ampc_data_ptr(a->grad_hidden_gates);               \
        void *ghx = ampc_data_ptr(a->grad_hx);                                                                    \
        _Pragma("omp parallel for schedule(static) num_threads(RNN_THREADS(B * H))")                             \
        for (int64_t b = 0; b < B; b++)                                                                          \
            for (int64_t j = 0; j < H; j++) {                                                                    \
                T w[5], dx[3], dh[3];                                                                             \
                for (int g = 0; g < 5; g++) w[g] = (T)LD_##D(ws, b * 5 * H + g * H + j);                         \
                T dhx = ampc_gru_cell_backward_##S(w, (T)LD_##D(ghy, b * H + j), dx, dh);                        \
                for (int g = 0; g < 3; g++) {                                                                    \
                    ST_##D(gi, b * 3 * H + g * H + j, dx[g]);                                                     \
                    ST_##D(gh, b * 3 * H + g * H + j, dh[g]);                                                     \
                }                                                                                                \
                ST_##D(ghx, b * H + j, dhx);                                                                      \
            }                                                                                                    \
    }

RNN_KERNELS(f32, float, f)
RNN_KERNELS(f64, double, d)
RNN_KERNELS(f16, float, f)
RNN_KERNELS(bf16, float, f)

/* Runs fn_<suffix>(a, B, H) for the storage dtype dt. */
#define RNN_SWITCH(dt, fn, a, B, H)                                                                               \
    switch (dt) {                                                                                                \
    case AMPC_FLOAT32: fn##_f32(a, B, H); break;                                                                  \
    case AMPC_FLOAT64: fn##_f64(a, B, H); break;                                                                  \
    case AMPC_FLOAT16: fn##_f16(a, B, H); break;                                                                  \
    case AMPC_BFLOAT16: fn##_bf16(a, B, H); break;                                                                \
    default: return ampc_set_error(AMPC_E_TYPE, "%s: no CPU kernel for %s", ampc_op_name(op),                   \
                                   ampc_dtype_torch_name(dt));                                                   \
    }

static ampc_status cpu_fused_lstm_cell(ampc_op op, const ampc_fused_lstm_cell_args *a) {
    RNN_SWITCH(a->cx->dtype, lstm_fwd, a, a->cx->shape[0], a->cx->shape[1]);
    return AMPC_OK;
}

static ampc_status cpu_fused_lstm_cell_backward(ampc_op op, const ampc_fused_lstm_cell_backward_args *a) {
    RNN_SWITCH(a->cx->dtype, lstm_bwd, a, a->cx->shape[0], a->cx->shape[1]);
    return AMPC_OK;
}

static ampc_status cpu_fused_gru_cell(ampc_op op, const ampc_fused_gru_cell_args *a) {
    RNN_SWITCH(a->hx->dtype, gru_fwd, a, a->hx->shape[0], a->hx->shape[1]);
    return AMPC_OK;
}

static ampc_status cpu_fused_gru_cell_backward(ampc_op op, const ampc_fused_gru_cell_backward_args *a) {
    RNN_SWITCH(a->grad_hy->dtype, gru_bwd, a, a->grad_hy->shape[0], a->grad_hy->shape[1]);
    return AMPC_OK;
}

void ampc_cpu_register_nn_rnn(void) {
    ampc_register_fused_lstm_cell(AMPC_CPU, cpu_fused_lstm_cell);
    ampc_register_fused_lstm_cell_backward(AMPC_CPU, cpu_fused_lstm_cell_backward);
    ampc_register_fused_gru_cell(AMPC_CPU, cpu_fused_gru_cell);
    ampc_register_fused_gru_cell_backward(AMPC_CPU, cpu_fused_gru_cell_backward);
}
