/* cpu_reduce.h: what the CPU reduction files share (private to csrc/cpu/cpu_reduce*.c and
 * cpu_scan.c): the accumulator of one output element, the kernel an op is turned into, and the
 * loops that run a kernel over a tensor.
 *
 * cpu_reduce.c turns an op into an rkernel: which typed loops of cpu_reduce_folds.h it runs and
 * how partial results merge and are stored. cpu_reduce_loops.c runs any rkernel over any input
 * layout: it splits dims into kept and reduced ones and folds either along rows or across rows,
 * in parallel. */
#ifndef AMPC_CPU_REDUCE_H
#define AMPC_CPU_REDUCE_H

#include <stdbool.h>
#include <stdint.h>

#include "../core/kernel_args.h"
#include "cpu_reduce_folds.h"

/* Columns one across-rows task accumulates at a time: its accumulators stay in L1. */
#define COL_CHUNK 512

/* The running result of one output element; which fields matter depends on the op. */
typedef struct racc {
    double v;    /* floating sum, product, extreme, sum of |x|^p; mean (var); max (logsumexp) */
    double w;    /* sum of squared deviations (var); sum of exp(x - v) (logsumexp) */
    int64_t i;   /* integer sum, product, extreme; any/all */
    int64_t idx; /* max/min/argmax/argmin: index of the extreme among the reduced elements */
    int64_t cnt; /* elements folded in; 0 means nothing yet (the identity) */
} racc;

/* Accumulators of COL_CHUNK output elements for the across-rows loop: the racc fields, as arrays
 * the typed column loops can vectorize over. */
typedef struct colbuf {
    double v[COL_CHUNK], w[COL_CHUNK], shift[COL_CHUNK];
    int64_t i[COL_CHUNK], idx[COL_CHUNK];
} colbuf;

typedef struct rkernel rkernel;
/* A fresh accumulator of the n > 0 elements at p (byte stride s); `first` is the flat index of
 * the first one among the reduced elements (for arg ops). */
typedef void (*row_fn)(const rkernel *k, racc *r, const char *p, int64_t n, int64_t s, int64_t first);
/* a = a then b, both non-empty */
typedef void (*merge_fn)(const rkernel *k, racc *a, const racc *b);
/* Finishes an accumulator and writes the output element(s). */
typedef void (*store_fn)(const rkernel *k, char *out0, char *out1, const racc *a);
/* Across rows: start n accumulators at reduced row r0, then fold `rows` input rows (row_stride
 * bytes apart) into them, the first being reduced row r and `before` rows having come before it
 * into this buffer. */
typedef void (*col_init_fn)(const rkernel *k, colbuf *b, int64_t n, int64_t r0);
typedef void (*col_step_fn)(const rkernel *k, colbuf *b, const char *p, int64_t n, int64_t rows, int64_t row_stride,
                            int64_t r, int64_t before);
/* After the last row: brings the buffer back to racc's meaning (var un-shifts its means). */
typedef void (*col_finish_fn)(colbuf *b, int64_t n);

struct rkernel {
    ampc_op op;
    int fold;      /* the main typed loop (enum fold) */
    bool int_acc;  /* accumulates in racc.i (int64) rather than racc.v (double) */
    bool ordered;  /* reduced dims keep their logical order: arg ops count their index in it */
    row_fn row;
    merge_fn merge;
    store_fn store;
    col_init_fn col_init;
    col_step_fn col_step;
    col_finish_fn col_finish;
    /* typed loops of the input dtype */
    fold_d_fn fd, fd2; /* fd2: the second pass of var (sqdev) and logsumexp (expsum) */
    fold_i_fn fi;
    col_d_fn cd;
    col_i_fn ci;
    find_d_fn find_d;
    find_i_fn find_i;
    col_arg_d_fn col_arg_d;
    col_arg_i_fn col_arg_i;
    col_welford_fn col_welford;
    double param; /* p of norm, correction of var/std */
    ampc_dtype out_dtype;
};

/* a = a then b, for any op; an empty side is the identity. */
static inline void reduce_combine(const rkernel *k, racc *a, const racc *b) {
    if (b->cnt == 0) return;
    if (a->cnt == 0) {
        *a = *b;
        return;
    }
    k->merge(k, a, b);
    a->cnt += b->cnt;
}

/* Runs kernel k on the REDUCE kernel arguments (input, keepdim-shaped values and indices). */
ampc_status ampc_cpu_reduce_run(const rkernel *k, const ampc_reduce_args *a);
/* OpenMP threads worth starting for `work` elements (1 below the grain). */
int ampc_cpu_reduce_threads(int64_t work);
/* cpu_scan.c: CUMSUM; registered by ampc_cpu_register_reduce. */
void ampc_cpu_register_scan(void);
/* issue 12's scans (cpu_scan_more.c): cumprod/logcumsumexp rows of the scan schema, and the
 * scan_indices kernel (cummax/cummin) it registers */
ampc_status ampc_cpu_scan_more(ampc_op op, const ampc_scan_args *a);
void ampc_cpu_register_scan_more(void);

#endif
