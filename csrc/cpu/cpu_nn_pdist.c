/* cpu_nn_pdist.c: pdist and its backward on the CPU. Forward: one task per row i computing its
 * pairs (i, j > i); backward: one task per row i summing the terms of all its N - 1 pairs (a
 * term is odd in x_i - x_j, so pair (j, i) adds the same term as (i, j) with the sign of the
 * difference), so every grad row has one writer. Accumulation in double (torch: the storage
 * type). Math: core/pdist_math.h. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>

#include "../core/kernel_args.h"
#include "../core/pdist_math.h"
#include "cpu_backend.h"

/* index of pair (i, j), i < j, in the row-major upper triangle of n rows */
static inline int64_t pair_index(int64_t i, int64_t j, int64_t n) { return i * n - i * (i + 1) / 2 + (j - i - 1); }

#define PDIST_KERNELS(T, S)                                                                                          \
    static void pdist_forward_##S(const ampc_pdist_args *a) {                                                        \
        const T *x = (const T *)ampc_data_ptr(a->input);                                                             \
        T *out = (T *)ampc_data_ptr(a->out);                                                                         \
        int64_t n = a->input->shape[0], m = a->input->shape[1];                                                      \
        double p = a->p;                                                                                             \
        int kind = ampc_pdist_kind(p);                                                                               \
        _Pragma("omp parallel for schedule(dynamic, 4) if (n * n * m > 65536)")                                     \
        for (int64_t i = 0; i < n - 1; i++) {                                                                        \
            const T *xi = x + i * m;                                                                                 \
            for (int64_t j = i + 1; j < n; j++) {                                                                    \
                const T *xj = x + j * m;                                                                             \
                double acc = 0;                                                                                      \
                if (kind == AMPC_PDIST_TWO) { /* the common case: 8 lanes, so it vectorises */                      \
                    double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                                       \
                    int64_t k = 0;                                                                                   \
                    for (; k + 8 <= m; k += 8)                                                                       \
                        for (int l = 0; l < 8; l++) {                                                                \
                            double d = (double)xi[k + l] - (double)xj[k + l];                                        \
                            lane[l] += d * d;                                                                        \
                        }                                                                                            \
                    for (; k < m; k++) {                                                                             \
                        double d = (double)xi[k] - (double)xj[k];                                                    \
                        lane[0] += d * d;                                                                            \
                    }                                                                                                \
                    for (int l = 0; l < 8; l++) acc += lane[l];                                                      \
                } else {                                                                                             \
                    for (int64_t k = 0; k < m; k++) acc = ampc_pdist_acc(kind, acc, (double)xi[k] - (double)xj[k], p); \
                }                                                                                                    \
                out[pair_index(i, j, n)] = (T)ampc_pdist_finish(kind, acc, p);                                       \
            }                                                                                                        \
        }                                                                                                            \
    }                                                                                                                \
    /* grad row i: sum over j != i of f(pair) * term(x_i - x_j), the pair's factor hoisted out of the   \
     * coordinate loop, which then runs over contiguous rows into a double accumulator */                      \
    static void pdist_backward_##S(const ampc_pdist_backward_args *a) {                                              \
        const T *x = (const T *)ampc_data_ptr(a->input), *g = (const T *)ampc_data_ptr(a->grad);                     \
        const T *dist = (const T *)ampc_data_ptr(a->dist);                                                           \
        T *gx = (T *)ampc_data_ptr(a->grad_input);                                                                   \
        int64_t n = a->input->shape[0], m = a->input->shape[1];                                                      \
        double p = a->p;                                                                                             \
        int kind = ampc_pdist_kind(p);                                                                               \
        _Pragma("omp parallel for schedule(dynamic, 4) if (n * n * m > 65536)")                                     \
        for (int64_t i = 0; i < n; i++) {                                                                            \
            const T *xi = x + i * m;                                                                                 \
            double *acc = (double *)calloc((size_t)m, sizeof(double));                                               \
            if (!acc) continue; /* grad row left 0: calloc of m doubles does not fail in practice */                 \
            for (int64_t j = 0; j < n; j++) {                                                                        \
                if (j == i) continue;                                                                                \
                int64_t k = i < j ? pair_index(i, j, n) : pair_index(j, i, n);                                       \
                double gk = (double)g[k], dk = (double)dist[k];                                                      \
                const T *xj = x + j * m;                                                                             \
                if (kind == AMPC_PDIST_TWO) {                                                                        \
                    if (dk == 0) continue;                                                                           \
                    double f = gk / dk;                                                                              \
                    for (int64_t c = 0; c < m; c++) acc[c] += f * ((double)xi[c] - (double)xj[c]);                   \
                } else if (kind == AMPC_PDIST_ONE) {                                                                 \
                    for (int64_t c = 0; c < m; c++) {                                                                \
                        T d = xi[c] - xj[c];                                                                         \
                        acc[c] += gk * (double)((d > 0) - (d < 0));                                                  \
                    }                                                                                                \
                } else if (kind != AMPC_PDIST_ZERO) {                                                                \
                    for (int64_t c = 0; c < m; c++) {                                                                \
                        T d = xi[c] - xj[c]; /* in T, as the dist it is compared with (p = inf) */                   \
                        acc[c] += ampc_pdist_grad(kind, (double)d, dk, gk, p);                                       \
                    }                                                                                                \
                }                                                                                                    \
            }                                                                                                        \
            for (int64_t c = 0; c < m; c++) gx[i * m + c] = (T)acc[c];                                               \
            free(acc);                                                                                               \
        }                                                                                                            \
    }

PDIST_KERNELS(float, f)
PDIST_KERNELS(double, d)

static ampc_status cpu_pdist(ampc_op op, const ampc_pdist_args *a) {
    (void)op;
    if (a->input->dtype == AMPC_FLOAT64)
        pdist_forward_d(a);
    else
        pdist_forward_f(a);
    return AMPC_OK;
}

static ampc_status cpu_pdist_backward(ampc_op op, const ampc_pdist_backward_args *a) {
    (void)op;
    if (a->input->dtype == AMPC_FLOAT64)
        pdist_backward_d(a);
    else
        pdist_backward_f(a);
    return AMPC_OK;
}

void ampc_cpu_register_nn_pdist(void) {
    ampc_register_pdist(AMPC_CPU, cpu_pdist);
    ampc_register_pdist_backward(AMPC_CPU, cpu_pdist_backward);
}
