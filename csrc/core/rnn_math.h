/* rnn_math.h: the per-element math of the fused recurrent cells (torch's _thnn_fused_lstm_cell and
 * _thnn_fused_gru_cell, forward and backward), shared by the CPU and CUDA kernels (AMPC_HD).
 *
 * One call computes element j of one batch row: the cell's gate pre-activations are the sums of
 * an input-gate GEMM, a hidden-gate GEMM and the two optional biases, so a step of an LSTM or a
 * GRU is two GEMMs and one pass of this math. T is the opmath type (float for fp32/fp16/bf16,
 * double for fp64); loads and stores (and their one rounding) belong to the kernels.
 *
 * LSTM, gates (i, f, g, o) at offsets (0, H, 2H, 3H) of a (B, 4H) row:
 *   i = sigmoid(.), f = sigmoid(.), g = tanh(.), o = sigmoid(.)
 *   cy = f * cx + i * g;  hy = o * tanh(cy);  workspace = (i, f, g, o)
 * its backward (go = dL/dhy, gc = dL/dcy):
 *   t = tanh(cy);  dc = go * o * (1 - t^2) + gc
 *   di = dc * g * i(1 - i);  df = dc * cx * f(1 - f);  dg = dc * i * (1 - g^2);  do = go * t * o(1 - o)
 *   dcx = dc * f
 * GRU, gates (r, z, n) at offsets (0, H, 2H) of a (B, 3H) row, as torch's gru_cell:
 *   r = sigmoid(xr + hr);  z = sigmoid(xz + hz);  hn = h_n + b_hn;  n = tanh(x_n + b_in + r * hn)
 *   hy = n + z * (hx - n);  workspace (B, 5H) = (r, z, n, hn, hx)
 * its backward (go = dL/dhy):
 *   dz = go * (hx - n) * z(1 - z);  dhx = go * z;  dn = go * (1 - z) * (1 - n^2)
 *   d(hidden n) = dn * r;  dr = dn * hn * r(1 - r)
 *   grad input gates = (dr, dz, dn), grad hidden gates = (dr, dz, dn * r) */
#ifndef AMPC_RNN_MATH_H
#define AMPC_RNN_MATH_H

#include <math.h>

#include "half.h"

/* The cells of opmath type T under suffix S, with the activations SIG(x) and TANH(x): libm's here
 * (both backends); the CPU kernels also stamp a float set with vectorizable activations. */
#define AMPC_RNN_MATH(T, S, SIG, TANH)                                                                          \
    /* pre: the four pre-activations (i, f, g, o); out: the activated gates; returns via *cy, *hy */       \
    AMPC_HD void ampc_lstm_cell_##S(const T pre[4], T cx, T act[4], T *cy, T *hy) {                             \
        act[0] = SIG(pre[0]);                                                                                   \
        act[1] = SIG(pre[1]);                                                                                   \
        act[2] = TANH(pre[2]);                                                                                  \
        act[3] = SIG(pre[3]);                                                                                   \
        T c = act[1] * cx + act[0] * act[2];                                                                    \
        *cy = c;                                                                                                \
        *hy = act[3] * TANH(c);                                                                                 \
    }                                                                                                           \
    /* act: the saved gates (i, f, g, o); d: their grads; *dcx the grad of cx */                               \
    AMPC_HD void ampc_lstm_cell_backward_##S(const T act[4], T cx, T cy, T go, T gc, T d[4], T *dcx) {          \
        T t = TANH(cy);                                                                                         \
        T dc = go * act[3] * ((T)1 - t * t) + gc;                                                               \
        d[0] = dc * act[2] * act[0] * ((T)1 - act[0]);                                                          \
        d[1] = dc * cx * act[1] * ((T)1 - act[1]);                                                              \
        d[2] = dc * act[0] * ((T)1 - act[2] * act[2]);                                                          \
        d[3] = go * t * act[3] * ((T)1 - act[3]);                                                               \
        *dcx = dc * act[1];                                                                                     \
    }                                                                                                           \
    /* x: input-gate sums (r, z, n) with the input bias; h: hidden-gate sums with the hidden bias;           \
     * ws: the five saved values (r, z, n, hn, hx); returns hy */                                             \
    AMPC_HD T ampc_gru_cell_##S(const T x[3], const T h[3], T hx, T ws[5]) {                                     \
        T r = SIG(x[0] + h[0]);                                                                                 \
        T z = SIG(x[1] + h[1]);                                                                                 \
        T n = TANH(x[2] + r * h[2]);                                                                            \
        ws[0] = r, ws[1] = z, ws[2] = n, ws[3] = h[2], ws[4] = hx;                                              \
        return n + z * (hx - n);                                                                                \
    }                                                                                                           \
    /* dx: grads of the input gates (r, z, n), dh: of the hidden gates; returns the grad of hx */           \
    AMPC_HD T ampc_gru_cell_backward_##S(const T ws[5], T go, T dx[3], T dh[3]) {                               \
        T r = ws[0], z = ws[1], n = ws[2], hn = ws[3], hx = ws[4];                                              \
        T dn = go * ((T)1 - z) * ((T)1 - n * n);                                                                \
        T dz = go * (hx - n) * z * ((T)1 - z);                                                                  \
        T dr = dn * hn * r * ((T)1 - r);                                                                        \
        dx[0] = dr, dx[1] = dz, dx[2] = dn;                                                                     \
        dh[0] = dr, dh[1] = dz, dh[2] = dn * r;                                                                 \
        return go * z;                                                                                          \
    }

AMPC_HD float ampc_rnn_sigmoid_f(float x) { return 1.0f / (1.0f + expf(-x)); }
AMPC_HD double ampc_rnn_sigmoid_d(double x) { return 1.0 / (1.0 + exp(-x)); }
AMPC_HD float ampc_rnn_tanh_f(float x) { return tanhf(x); }
AMPC_HD double ampc_rnn_tanh_d(double x) { return tanh(x); }
AMPC_RNN_MATH(float, f, ampc_rnn_sigmoid_f, ampc_rnn_tanh_f)
AMPC_RNN_MATH(double, d, ampc_rnn_sigmoid_d, ampc_rnn_tanh_d)

#endif
