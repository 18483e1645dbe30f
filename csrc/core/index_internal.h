/* index_internal.h: what index.c shares with the other frontends of its family (index_ops.c):
 * one call that runs a one-index gather or scatter form kernel (layouts in index.c). Not part of
 * the public core API (ampc.h). */
#ifndef AMPC_INDEX_INTERNAL_H
#define AMPC_INDEX_INTERNAL_H

#include "tensor.h"
#include "dispatch.h"

/* Runs op's kernel with one index: `target` is the tensor the index addresses (the source of a
 * gather form, the destination of a scatter form) seen as R = (nd, shape) with target_strides
 * (0 along `dim`); `index` (int64) is seen as R with index_strides; `other` is the output of a
 * gather form (contiguous, R's numel) or the values of a scatter form (already shaped R).
 * size/stride: the addressed dim of target. accumulate: add (scatter form) instead of store;
 * reduce: an AMPC_SCATTER_REDUCE_* combine instead (scatter_reduce.h), 0 for none. */
ampc_status ampc_index_run_one(ampc_op op, bool scatter, bool accumulate, int reduce, const ampc_tensor *target,
                               const ampc_tensor *other, int nd, const int64_t *shape, const int64_t *target_strides,
                               const ampc_tensor *index, const int64_t *index_strides, int dim, int64_t size,
                               int64_t stride, ampc_scalar alpha);

#endif
