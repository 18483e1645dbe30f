/* pdist_math.h: the per-coordinate terms of pdist's p-norm and of its gradient, torch's
 * (aten/src/ATen/native/cpu/DistanceOpsKernel.cpp: zdist, odist, tdist, idist, pdist and their
 * backward), for both backends: cpu/cpu_nn_pdist.c (double) and cuda/cuda_nn_pdist.cu (the
 * storage type). The kind is picked once per call from p. */
#ifndef AMPC_PDIST_MATH_H
#define AMPC_PDIST_MATH_H

#include <math.h>

#include "half.h"

enum { AMPC_PDIST_ZERO, AMPC_PDIST_ONE, AMPC_PDIST_TWO, AMPC_PDIST_INF, AMPC_PDIST_P };

static inline int ampc_pdist_kind(double p) {
    return p == 0 ? AMPC_PDIST_ZERO : p == 1 ? AMPC_PDIST_ONE : p == 2 ? AMPC_PDIST_TWO
         : isinf(p) ? AMPC_PDIST_INF : AMPC_PDIST_P;
}

/* the running reduction over coordinates: count of nonzeros, sum |d|, sum d^2, max |d|, sum |d|^p */
AMPC_HD double ampc_pdist_acc(int kind, double acc, double d, double p) {
    double a = fabs(d);
    switch (kind) {
    case AMPC_PDIST_ZERO: return acc + (d != 0);
    case AMPC_PDIST_ONE: return acc + a;
    case AMPC_PDIST_TWO: return acc + d * d;
    case AMPC_PDIST_INF: return a > acc ? a : acc;
    default: return acc + pow(a, p);
    }
}

AMPC_HD double ampc_pdist_finish(int kind, double acc, double p) {
    return kind == AMPC_PDIST_TWO ? sqrt(acc) : kind == AMPC_PDIST_P ? pow(acc, 1.0 / p) : acc;
}

/* d dist / d x_i of one coordinate, times the grad g, diff = x_i - x_j */
AMPC_HD double ampc_pdist_grad(int kind, double diff, double dist, double g, double p) {
    double sign = (double)((diff > 0) - (diff < 0));
    switch (kind) {
    case AMPC_PDIST_ZERO: return 0;
    case AMPC_PDIST_ONE: return g * sign;
    case AMPC_PDIST_TWO: return dist == 0 ? 0 : g * diff / dist;
    case AMPC_PDIST_INF: return g * sign * (fabs(diff) == dist);
    default:
        if (p < 2) return (dist == 0 || (diff == 0 && p < 1)) ? 0 : sign * pow(fabs(diff), p - 1) * g / pow(dist, p - 1);
        return dist == 0 ? 0 : diff * pow(fabs(diff), p - 2) * g / pow(dist, p - 1);
    }
}

#endif
