/* cpu_nn_rnn.c: the fused LSTM and GRU cells and their backward on the CPU (math: core/rnn_math.h).
 *
 * Every tensor arrives contiguous: gates (B, G*H), states (B, H), biases (G*H). One pass over the
 * (b, j) elements loads the G gates of element j of row b, adds the biases, runs the cell in opmath
 * (float for fp32/fp16/bf16, double for fp64) and stores each result once, so fp16/bf16 round once
 * per value, as on CUDA. Rows are split across threads when the step is large.
 *
 * The float cells use rnn_expf / rnn_tanhf below instead of libm's: branch-free (Cephes' range
 * reduction and polynomials, within a few ulp of libm's), so the gate loops compile to SIMD code
 * where calls into libm would leave them scalar; fp64 keeps libm. */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "../core/kernel_args.h"
#include "../core/rnn_math.h"
#include "cpu_backend.h"
#include "cpu_nn_common.h"

/* The activations' selects (clamps, |x| < 0.625 ? ...) only become SIMD blends when GCC may
 * assume they raise no FP exception; nothing here reads the FP flags. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

/* Storage <-> opmath for the four floating storage types (p: a pointer to the storage type). */
#define LD_f32(p, i) ((p)[i])
#define ST_f32(p, i, v) ((p)[i] = (v))
#define LD_f64(p, i) ((p)[i])
#define ST_f64(p, i, v) ((p)[i] = (v))
#define LD_f16(p, i) ampc_half_to_f32((p)[i])
#define ST_f16(p, i, v) ((p)[i] = ampc_f32_to_half(v))
#define LD_bf16(p, i) ampc_bf16_to_f32((p)[i])
#define ST_bf16(p, i, v) ((p)[i] = ampc_f32_to_bf16(v))

/* e^x, vectorizable: x = n ln2 + r, |r| <= ln2 / 2, e^r by Cephes' degree-6 polynomial, 2^n by
 * the exponent bits; x is clamped to [-87.3, 88.3] (e^x stays a normal float). */
static inline float rnn_expf(float x) {
    x = x < -87.3f ? -87.3f : x > 88.3f ? 88.3f : x;
    float t = x * 1.44269504088896341f;
    int n = (int)(t + (t >= 0.0f ? 0.5f : -0.5f));
    float fn = (float)n;
    float r = x - fn * 0.693359375f;
    r = r + fn * 2.12194440e-4f;
    float y = ((((1.9875691500E-4f * r + 1.3981999507E-3f) * r + 8.3334519073E-3f) * r + 4.1665795894E-2f) * r +
               1.6666665459E-1f) * r + 5.0000001201E-1f;
    y = y * (r * r) + r + 1.0f;
    uint32_t bits = (uint32_t)(n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return y * scale;
}

static inline float rnn_sigmoidf(float x) { return 1.0f / (1.0f + rnn_expf(-x)); }

/* tanh: Cephes' odd polynomial below |x| = 0.625 (no cancellation near 0), 1 - 2 / (e^2|x| + 1)
 * above, with x's sign. */
static inline float rnn_tanhf(float x) {
    float a = fabsf(x), s = x * x;
    float p = ((((-5.70498872745E-3f * s + 2.06390887954E-2f) * s - 5.37397155531E-2f) * s + 1.33314422036E-1f) * s -
               3.33332819422E-1f) * s * x + x;
    float q = 1.0f - 2.0f / (rnn_expf(2.0f * a) + 1.0f);
    q = x < 0.0f ? -q : q;
    return a < 0.625f ? p : q;
}

AMPC_RNN_MATH(float, fast, rnn_sigmoidf, rnn_tanhf)

/* Threads for a step of `work` elements. */
#define RNN_THREADS(work) nn_threads((work) * 8)

/* One kernel body per (storage suffix D, storage type ST, opmath type T, opmath suffix S). The
 * pointers are restrict, so the element loops vectorize without alias checks. */
#define RNN_KERNELS(D, ST, T, S)                                                                         \
    static void lstm_fwd_##D(const ampc_fused_lstm_cell_args *a, int64_t B, int64_t H) {                \
        const ST *restrict ig = ampc_data_ptr(a->input_gates);                                          \
        const ST *restrict hg = ampc_data_ptr(a->hidden_gates);                                         \
        const ST *restrict ib = nn_data(a->input_bias);                                                 \
        const ST *restrict hb = nn_data(a->hidden_bias);                                                \
        const ST *restrict cx = ampc_data_ptr(a->cx);                                                   \
        ST *restrict hy = ampc_data_ptr(a->hy);                                                         \
        ST *restrict cy = ampc_data_ptr(a->cy);                                                         \
        ST *restrict ws = ampc_data_ptr(a->workspace);                                                  \
        _Pragma("omp parallel for schedule(static) num_threads(RNN_THREADS(B * H))")                    \
        for (int64_t b = 0; b < B; b++)                                                                 \
            for (int64_t j = 0; j < H; j++) {                                                           \
                T pre[4], act[4], c, h;                                                                  \
                for (int g = 0; g < 4; g++) {                                                           \
                    int64_t k = g * H + j, i = b * 4 * H + k;                                            \
                    pre[g] = (T)LD_##D(ig, i) + (T)LD_##D(hg, i);                                        \
                    if (ib) pre[g] += (T)LD_##D(ib, k) + (T)LD_##D(hb, k);                               \
                }                                                                                       \
                ampc_lstm_cell_##S(pre, (T)LD_##D(cx, b * H + j), act, &c, &h);                         \
                for (int g = 0; g < 4; g++) ST_##D(ws, b * 4 * H + g * H + j, act[g]);                  \
                ST_##D(cy, b * H + j, c);                                                                \
                ST_##D(hy, b * H + j, h);                                                                \
            }                                                                                           \
    }                                                                                                   \
    static void lstm_bwd_##D(const ampc_fused_lstm_cell_backward_args *a, int64_t B, int64_t H) {       \
        const ST *restrict ghy = nn_data(a->grad_hy);                                                   \
        const ST *restrict gcy = nn_data(a->grad_cy);                                                   \
        const ST *restrict cx = ampc_data_ptr(a->cx);                                                   \
        const ST *restrict cy = ampc_data_ptr(a->cy);                                                   \
        const ST *restrict ws = ampc_data_ptr(a->workspace);                                            \
        ST *restrict gg = ampc_data_ptr(a->grad_gates);                                                 \
        ST *restrict gcx = ampc_data_ptr(a->grad_cx);                                                   \
        _Pragma("omp parallel for schedule(static) num_threads(RNN_THREADS(B * H))")                    \
        for (int64_t b = 0; b < B; b++)                                                                 \
            for (int64_t j = 0; j < H; j++) {                                                           \
                int64_t e = b * H + j;                                                                  \
                T act[4], d[4], dcx;                                                                     \
                for (int g = 0; g < 4; g++) act[g] = (T)LD_##D(ws, b * 4 * H + g * H + j);              \
                T go = ghy ? (T)LD_##D(ghy, e) : (T)0, gc = gcy ? (T)LD_##D(gcy, e) : (T)0;              \
                ampc_lstm_cell_backward_##S(act, (T)LD_##D(cx, e), (T)LD_##D(cy, e), go, gc, d, &dcx);  \
                for (int g = 0; g < 4; g++) ST_##D(gg, b * 4 * H + g * H + j, d[g]);                    \
                ST_##D(gcx, e, dcx);                                                                     \
            }                                                                                           \
    }                                                                                                   \
    static void gru_fwd_##D(const ampc_fused_gru_cell_args *a, int64_t B, int64_t H) {                  \
        const ST *restrict ig = ampc_data_ptr(a->input_gates);                                          \
        const ST *restrict hg = ampc_data_ptr(a->hidden_gates);                                         \
        const ST *restrict ib = nn_data(a->input_bias);                                                 \
        const ST *restrict hb = nn_data(a->hidden_bias);                                                \
        const ST *restrict hx = ampc_data_ptr(a->hx);                                                   \
        ST *restrict hy = ampc_data_ptr(a->hy);                                                         \
        ST *restrict ws = ampc_data_ptr(a->workspace);                                                  \
        _Pragma("omp parallel for schedule(static) num_threads(RNN_THREADS(B * H))")                    \
        for (int64_t b = 0; b < B; b++)                                                                 \
            for (int64_t j = 0; j < H; j++) {                                                           \
                T x[3], h[3], w[5];                                                                      \
                for (int g = 0; g < 3; g++) {                                                           \
                    int64_t k = g * H + j, i = b * 3 * H + k;                                            \
                    x[g] = (T)LD_##D(ig, i), h[g] = (T)LD_##D(hg, i);                                    \
                    if (ib) x[g] += (T)LD_##D(ib, k), h[g] += (T)LD_##D(hb, k);                          \
                }                                                                                       \
                T y = ampc_gru_cell_##S(x, h, (T)LD_##D(hx, b * H + j), w);                             \
                for (int g = 0; g < 5; g++) ST_##D(ws, b * 5 * H + g * H + j, w[g]);                    \
                ST_##D(hy, b * H + j, y);                                                                \
            }                                                                                           \
    }                                                                                                   \
    static void gru_bwd_##D(const ampc_fused_gru_cell_backward_args *a, int64_t B, int64_t H) {         \
        const ST *restrict ghy = ampc_data_ptr(a->grad_hy);                                             \
        const ST *restrict ws = ampc_data_ptr(a->workspace);                                            \
        ST *restrict gi = ampc_data_ptr(a->grad_input_gates);                                           \
        ST *restrict gh = ampc_data_ptr(a->grad_hidden_gates);                                          \
        ST *restrict ghx = ampc_data_ptr(a->grad_hx);                                                   \
        _Pragma("omp parallel for schedule(static) num_threads(RNN_THREADS(B * H))")                    \
        for (int64_t b = 0; b < B; b++)                                                                 \
            for (int64_t j = 0; j < H; j++) {                                                           \
                T w[5], dx[3], dh[3];                                                                    \
                for (int g = 0; g < 5; g++) w[g] = (T)LD_##D(ws, b * 5 * H + g * H + j);                \
                T dhx = ampc_gru_cell_backward_##S(w, (T)LD_##D(ghy, b * H + j), dx, dh);               \
                for (int g = 0; g < 3; g++) {                                                           \
                    ST_##D(gi, b * 3 * H + g * H + j, dx[g]);                                            \
                    ST_##D(gh, b * 3 * H + g * H + j, dh[g]);                                            \
                }                                                                                       \
                ST_##D(ghx, b * H + j, dhx);                                                             \
            }                                                                                           \
    }

RNN_KERNELS(f64, double, double, d)
RNN_KERNELS(f16, ampc_half, float, fast)
RNN_KERNELS(bf16, ampc_bfloat16, float, fast)

/* float storage, one row b at a time: every gate is a contiguous run of H values, so the j loops
 * vectorize (the generic bodies above index all gates from one loop and stay scalar). `bias` is a
 * constant at each call, so each caller gets its own copy of the loop. */
static inline void lstm_row_f32(const float *restrict ig, const float *restrict hg, const float *restrict ib,
                                const float *restrict hb, const float *restrict cx, float *restrict hy,
                                float *restrict cy, float *restrict ws, int64_t H, bool bias) {
    for (int64_t j = 0; j < H; j++) {
        float pre[4], act[4], c, h;
        for (int g = 0; g < 4; g++)
            pre[g] = ig[g * H + j] + hg[g * H + j] + (bias ? ib[g * H + j] + hb[g * H + j] : 0.0f);
        ampc_lstm_cell_fast(pre, cx[j], act, &c, &h);
        for (int g = 0; g < 4; g++) ws[g * H + j] = act[g];
        cy[j] = c;
        hy[j] = h;
    }
}

static void lstm_fwd_f32v(const ampc_fused_lstm_cell_args *a, int64_t B, int64_t H) {
    const float *ig = ampc_data_ptr(a->input_gates), *hg = ampc_data_ptr(a->hidden_gates);
    const float *ib = nn_data(a->input_bias), *hb = nn_data(a->hidden_bias), *cx = ampc_data_ptr(a->cx);
    float *hy = ampc_data_ptr(a->hy), *cy = ampc_data_ptr(a->cy), *ws = ampc_data_ptr(a->workspace);
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(RNN_THREADS(B * H))
#endif
    for (int64_t b = 0; b < B; b++) {
        int64_t g4 = b * 4 * H, s = b * H;
        if (ib)
            lstm_row_f32(ig + g4, hg + g4, ib, hb, cx + s, hy + s, cy + s, ws + g4, H, true);
        else
            lstm_row_f32(ig + g4, hg + g4, NULL, NULL, cx + s, hy + s, cy + s, ws + g4, H, false);
    }
}

static inline void lstm_bwd_row_f32(const float *restrict ghy, const float *restrict gcy, const float *restrict cx,
                                    const float *restrict cy, const float *restrict ws, float *restrict gg,
                                    float *restrict gcx, int64_t H, bool has_gh, bool has_gc) {
    for (int64_t j = 0; j < H; j++) {
        float act[4], d[4], dcx;
        for (int g = 0; g < 4; g++) act[g] = ws[g * H + j];
        ampc_lstm_cell_backward_fast(act, cx[j], cy[j], has_gh ? ghy[j] : 0.0f, has_gc ? gcy[j] : 0.0f, d, &dcx);
        for (int g = 0; g < 4; g++) gg[g * H + j] = d[g];
        gcx[j] = dcx;
    }
}

static void lstm_bwd_f32v(const ampc_fused_lstm_cell_backward_args *a, int64_t B, int64_t H) {
    const float *ghy = nn_data(a->grad_hy), *gcy = nn_data(a->grad_cy), *cx = ampc_data_ptr(a->cx);
    const float *cy = ampc_data_ptr(a->cy), *ws = ampc_data_ptr(a->workspace);
    float *gg = ampc_data_ptr(a->grad_gates), *gcx = ampc_data_ptr(a->grad_cx);
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(RNN_THREADS(B * H))
#endif
    for (int64_t b = 0; b < B; b++) {
        int64_t g4 = b * 4 * H, s = b * H;
        const float *gh = ghy ? ghy + s : NULL, *gc = gcy ? gcy + s : NULL;
        if (gh && gc)
            lstm_bwd_row_f32(gh, gc, cx + s, cy + s, ws + g4, gg + g4, gcx + s, H, true, true);
        else
            lstm_bwd_row_f32(gh, gc, cx + s, cy + s, ws + g4, gg + g4, gcx + s, H, gh != NULL, gc != NULL);
    }
}

static inline void gru_row_f32(const float *restrict ig, const float *restrict hg, const float *restrict ib,
                               const float *restrict hb, const float *restrict hx, float *restrict hy,
                               float *restrict ws, int64_t H, bool bias) {
    for (int64_t j = 0; j < H; j++) {
        float x[3], h[3], w[5];
        for (int g = 0; g < 3; g++) {
            x[g] = ig[g * H + j] + (bias ? ib[g * H + j] : 0.0f);
            h[g] = hg[g * H + j] + (bias ? hb[g * H + j] : 0.0f);
        }
        hy[j] = ampc_gru_cell_fast(x, h, hx[j], w);
        for (int g = 0; g < 5; g++) ws[g * H + j] = w[g];
    }
}

static void gru_fwd_f32v(const ampc_fused_gru_cell_args *a, int64_t B, int64_t H) {
    const float *ig = ampc_data_ptr(a->input_gates), *hg = ampc_data_ptr(a->hidden_gates);
    const float *ib = nn_data(a->input_bias), *hb = nn_data(a->hidden_bias), *hx = ampc_data_ptr(a->hx);
    float *hy = ampc_data_ptr(a->hy), *ws = ampc_data_ptr(a->workspace);
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(RNN_THREADS(B * H))
#endif
    for (int64_t b = 0; b < B; b++) {
        int64_t g3 = b * 3 * H, s = b * H;
        if (ib)
            gru_row_f32(ig + g3, hg + g3, ib, hb, hx + s, hy + s, ws + b * 5 * H, H, true);
        else
            gru_row_f32(ig + g3, hg + g3, NULL, NULL, hx + s, hy + s, ws + b * 5 * H, H, false);
    }
}

static void gru_bwd_f32v(const ampc_fused_gru_cell_backward_args *a, int64_t B, int64_t H) {
    const float *ghy = ampc_data_ptr(a->grad_hy), *ws_all = ampc_data_ptr(a->workspace);
    float *gi_all = ampc_data_ptr(a->grad_input_gates), *gh_all = ampc_data_ptr(a->grad_hidden_gates);
    float *ghx = ampc_data_ptr(a->grad_hx);
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(RNN_THREADS(B * H))
#endif
    for (int64_t b = 0; b < B; b++) {
        const float *restrict ws = ws_all + b * 5 * H, *restrict go = ghy + b * H;
        float *restrict gi = gi_all + b * 3 * H, *restrict gh = gh_all + b * 3 * H, *restrict gx = ghx + b * H;
        for (int64_t j = 0; j < H; j++) {
            float w[5], dx[3], dh[3];
            for (int g = 0; g < 5; g++) w[g] = ws[g * H + j];
            gx[j] = ampc_gru_cell_backward_fast(w, go[j], dx, dh);
            for (int g = 0; g < 3; g++) gi[g * H + j] = dx[g], gh[g * H + j] = dh[g];
        }
    }
}

/* Runs fn_<suffix>(a, B, H) for the storage dtype dt. */
#define RNN_SWITCH(dt, fn, a, B, H)                                                                               \
    switch (dt) {                                                                                                \
    case AMPC_FLOAT32: fn##_f32v(a, B, H); break;                                                                 \
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
