/* index_bounds.h: how the gather/scatter kernels of both backends treat an index outside
 * [0, size), per op as torch does. Advanced indexing (a[idx], index_put_) lets a negative index
 * count from the end, as NumPy; index_select, gather, scatter_add and index_add refuse a negative
 * index ("index -1 is out of bounds for dimension 1 with size 3"); index_fill counts from the end,
 * scatter and index_copy refuse a negative index (torch). */
#ifndef AMPC_INDEX_BOUNDS_H
#define AMPC_INDEX_BOUNDS_H

#include <stdbool.h>

#include "dispatch.h"
#include "status.h"

static inline bool ampc_index_counts_from_end(ampc_op op) {
    return op == AMPC_OP_INDEX || op == AMPC_OP_INDEX_PUT || op == AMPC_OP_INDEX_FILL;
}

/* The error an out-of-range index of op raises: IndexError for advanced indexing, embedding and
 * index_select (torch's row selection path: "index out of range in self"; torch raises a
 * RuntimeError for index_select of other dims, ampc keeps one type per op on every backend),
 * RuntimeError for gather, scatter_add and index_add. */
static inline ampc_status ampc_index_error_status(ampc_op op) {
    bool index_error = ampc_index_counts_from_end(op) || op == AMPC_OP_EMBEDDING || op == AMPC_OP_EMBEDDING_BACKWARD ||
                       op == AMPC_OP_INDEX_SELECT || op == AMPC_OP_INDEX_COPY || op == AMPC_OP_INDEX_FILL;
    return index_error ? AMPC_E_INDEX : AMPC_E_RUNTIME;
}

#endif
