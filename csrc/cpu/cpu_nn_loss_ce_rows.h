/* cpu_nn_loss_ce_rows.h: cross_entropy's (N, C) float32 fast path (cpu_nn_loss_ce_rows.c), one
 * job struct for both directions, filled by cpu_nn_loss_class.c. */
#ifndef AMPC_CPU_NN_LOSS_CE_ROWS_H
#define AMPC_CPU_NN_LOSS_CE_ROWS_H

#include <stdbool.h>
#include <stdint.h>

#include "../core/dtype.h"

typedef struct ce_rows_job {
    const float *x;          /* logits (N, C), contiguous */
    const void *target;      /* class targets (N), target_dtype */
    ampc_dtype target_dtype;
    int64_t n, c, ignore;
    double ls;               /* label smoothing */
    const double *w;         /* class weights (C), 1 without */
    const float *wf;         /* the same in float (backward with smoothing) */
    double wsum;
    float *lse;              /* forward: written; backward: read (N) */
    double *row_loss, *row_weight; /* forward (N) */
    bool *bad;               /* forward: an out-of-range target (raised by the caller) */
    int64_t *bad_target;
    float *gx;               /* backward: grad logits (N, C) */
    const float *grad;       /* backward: per-row loss grad (reduction none) or NULL: gscale */
    double gscale;
} ce_rows_job;

void cpu_ce_rows_forward(const ce_rows_job *j);
void cpu_ce_rows_backward(const ce_rows_job *j);

#endif
