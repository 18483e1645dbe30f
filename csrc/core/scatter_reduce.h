/* scatter_reduce.h: the reductions of scatter_reduce / index_reduce that a scatter form kernel
 * applies per element (the `reduce` field of ampc_scatter_args), with the combining formula
 * shared by the CPU loops and the CUDA atomics (AMPC_HD), so both backends agree.
 *
 * sum and mean are not here: sum is the accumulate path (scatter_add's loops) and mean is sum
 * divided by counts in the frontend (core/scatter_reduce.c). amax/amin propagate NaN as torch
 * does; integers multiply in unsigned arithmetic so overflow wraps like torch; bool: prod is
 * `and`, amax `or`, amin `and`. */
#ifndef AMPC_SCATTER_REDUCE_H
#define AMPC_SCATTER_REDUCE_H

#include <stdint.h>

#include "half.h"

enum {
    AMPC_SCATTER_REDUCE_NONE = 0, /* store, or add with accumulate */
    AMPC_SCATTER_REDUCE_PROD = 1,
    AMPC_SCATTER_REDUCE_AMAX = 2,
    AMPC_SCATTER_REDUCE_AMIN = 3,
};

AMPC_HD double ampc_scatter_combine_f(int r, double a, double b) {
    if (r == AMPC_SCATTER_REDUCE_PROD) return a * b;
    if (a != a || b != b) return a != a ? a : b; /* NaN wins */
    return r == AMPC_SCATTER_REDUCE_AMAX ? (a > b ? a : b) : (a < b ? a : b);
}

AMPC_HD float ampc_scatter_combine_f32(int r, float a, float b) {
    if (r == AMPC_SCATTER_REDUCE_PROD) return a * b;
    if (a != a || b != b) return a != a ? a : b;
    return r == AMPC_SCATTER_REDUCE_AMAX ? (a > b ? a : b) : (a < b ? a : b);
}

AMPC_HD int64_t ampc_scatter_combine_i(int r, int64_t a, int64_t b) {
    if (r == AMPC_SCATTER_REDUCE_PROD) return (int64_t)((uint64_t)a * (uint64_t)b);
    return r == AMPC_SCATTER_REDUCE_AMAX ? (a > b ? a : b) : (a < b ? a : b);
}

#endif
