/* sort_internal.h: what the sorting frontends (sort.c, sort_compose.c) and their gradient rules
 * (derivatives_sort.c) share inside the core. */
#ifndef AMPC_SORT_INTERNAL_H
#define AMPC_SORT_INTERNAL_H

#include "dispatch.h"

/* t with dim d moved last (d of a 0-dim t: a 1-element row), an as_strided view: no copy, no node */
ampc_tensor *ampc_sort_dim_last(const ampc_tensor *t, int d);

/* Records the node of SORT, TOPK (keepdim true) or a selection along dim (d wrapped) whose
 * values and int64 indices were computed from a: its grad scatters into the indices. */
ampc_status ampc_ad_record_sort_select(ampc_op op, const ampc_tensor *a, int64_t dim, bool keepdim,
                                       ampc_tensor *values, ampc_tensor *indices);
/* median() / nanmedian() without a dim (op MEDIAN or NANMEDIAN): the grad is shared evenly by
 * the elements equal to the result (NaN: the NaNs). */
ampc_status ampc_ad_record_median_all(ampc_op op, const ampc_tensor *a, ampc_tensor *value);

#endif
