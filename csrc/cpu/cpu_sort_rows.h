/* cpu_sort_rows.h: how the CPU sort-family kernels (cpu_sort.c, cpu_sort_search.c) walk a strided
 * tensor as rows along its last dim: row r's offset unravels r over every other dim. */
#ifndef AMPC_CPU_SORT_ROWS_H
#define AMPC_CPU_SORT_ROWS_H

#include <stdint.h>

#include "../core/tensor.h"

/* offset (elements) of row r of t: r unravelled over every dim but the last */
static inline int64_t row_offset(const ampc_tensor *t, int64_t r) {
    int64_t off = 0;
    for (int d = t->ndim - 2; d >= 0; d--) {
        int64_t s = t->shape[d];
        off += (r % s) * t->strides[d];
        r /= s;
    }
    return off;
}

static inline int64_t last_dim(const ampc_tensor *t) { return t->ndim ? t->shape[t->ndim - 1] : 1; }
static inline int64_t last_stride(const ampc_tensor *t) { return t->ndim ? t->strides[t->ndim - 1] : 1; }

#endif
