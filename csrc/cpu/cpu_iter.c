/* cpu_iter.c: broadcasting, dim coalescing and the row loop of the CPU elementwise iterator. */
#include "cpu_iter.h"

#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

/* Below this many elements a parallel region costs more than it saves. */
#define AMPC_PARALLEL_GRAIN 32768

ampc_status ampc_cpu_iter_init(ampc_cpu_iter *it, int n_out, ampc_tensor *const *outs, int n_in,
                               const ampc_tensor *const *ins) {
    const ampc_tensor *ref = outs[0];
    int nd = ref->ndim;
    it->n_operands = n_out + n_in;
    it->numel = ampc_numel(ref);
    int64_t shape[AMPC_MAX_DIMS], strides[AMPC_ITER_MAX_OPERANDS][AMPC_MAX_DIMS];
    if (nd) memcpy(shape, ref->shape, sizeof(int64_t) * (size_t)nd);
    for (int k = 0; k < it->n_operands; k++) {
        const ampc_tensor *t = k < n_out ? outs[k] : ins[k - n_out];
        int64_t item = (int64_t)ampc_dtype_itemsize(t->dtype);
        it->data[k] = (char *)ampc_data_ptr(t);
        if (t->ndim > nd) {
            return ampc_set_error(AMPC_E_RUNTIME, "iterator: operand with %d dims cannot broadcast to %d dims",
                                  t->ndim, nd);
        }
        for (int i = 0; i < nd; i++) {
            int j = i - (nd - t->ndim);
            if (j < 0 || t->shape[j] == 1)
                strides[k][i] = 0;
            else if (t->shape[j] == shape[i])
                strides[k][i] = t->strides[j] * item;
            else
                return ampc_set_error(AMPC_E_RUNTIME, "iterator: operand %d does not broadcast (size %lld vs %lld at dim %d)",
                                      k, (long long)t->shape[j], (long long)shape[i], i);
        }
    }
    /* Drop size-1 dims, then merge neighbours (i, i+1) when stride[i] == shape[i+1]*stride[i+1]
     * for every operand, walking from the innermost dim outwards. */
    int64_t cs[AMPC_MAX_DIMS], cst[AMPC_ITER_MAX_OPERANDS][AMPC_MAX_DIMS];
    int cn = 0;
    for (int i = 0; i < nd; i++) {
        if (shape[i] == 1) continue;
        cs[cn] = shape[i];
        for (int k = 0; k < it->n_operands; k++) cst[k][cn] = strides[k][i];
        cn++;
    }
    if (cn == 0) {
        cs[0] = 1;
        for (int k = 0; k < it->n_operands; k++) cst[k][0] = 0;
        cn = 1;
    }
    /* merge into it->shape, built innermost first, then reversed */
    int64_t ms[AMPC_MAX_DIMS], mst[AMPC_ITER_MAX_OPERANDS][AMPC_MAX_DIMS];
    int mn = 0;
    ms[0] = cs[cn - 1];
    for (int k = 0; k < it->n_operands; k++) mst[k][0] = cst[k][cn - 1];
    mn = 1;
    for (int i = cn - 2; i >= 0; i--) {
        int can = 1;
        for (int k = 0; k < it->n_operands; k++)
            if (cst[k][i] != ms[mn - 1] * mst[k][mn - 1]) can = 0;
        if (can) {
            ms[mn - 1] *= cs[i];
        } else {
            ms[mn] = cs[i];
            for (int k = 0; k < it->n_operands; k++) mst[k][mn] = cst[k][i];
            mn++;
        }
    }
    it->ndim = mn;
    for (int i = 0; i < mn; i++) {
        it->shape[i] = ms[mn - 1 - i];
        for (int k = 0; k < it->n_operands; k++) it->strides[k][i] = mst[k][mn - 1 - i];
    }
    return AMPC_OK;
}

/* Runs rows [row_begin, row_end) of the outer dims (all dims but the last). */
static void run_rows(const ampc_cpu_iter *it, ampc_cpu_loop_fn fn, const void *ctx, int64_t row_begin,
                     int64_t row_end) {
    int nd = it->ndim, nops = it->n_operands;
    int64_t inner = it->shape[nd - 1];
    int64_t inner_strides[AMPC_ITER_MAX_OPERANDS];
    char *ptrs[AMPC_ITER_MAX_OPERANDS];
    for (int k = 0; k < nops; k++) inner_strides[k] = it->strides[k][nd - 1];
    for (int64_t row = row_begin; row < row_end; row++) {
        int64_t rem = row;
        for (int k = 0; k < nops; k++) ptrs[k] = it->data[k];
        for (int i = nd - 2; i >= 0; i--) {
            int64_t idx = rem % it->shape[i];
            rem /= it->shape[i];
            for (int k = 0; k < nops; k++) ptrs[k] += idx * it->strides[k][i];
        }
        fn(ptrs, inner_strides, inner, ctx);
    }
}

void ampc_cpu_iter_run(const ampc_cpu_iter *it, ampc_cpu_loop_fn fn, const void *ctx) {
    if (it->numel == 0) return;
    int nd = it->ndim;
    int64_t rows = 1;
    for (int i = 0; i < nd - 1; i++) rows *= it->shape[i];
#ifdef _OPENMP
    if (it->numel >= AMPC_PARALLEL_GRAIN && omp_get_max_threads() > 1) {
        if (rows == 1) {
            /* One long row: split it into chunks along the innermost dim. */
            int64_t n = it->shape[nd - 1];
            int nops = it->n_operands;
#pragma omp parallel
            {
                int nt = omp_get_num_threads(), tid = omp_get_thread_num();
                int64_t chunk = (n + nt - 1) / nt, b = tid * chunk, e = b + chunk < n ? b + chunk : n;
                if (b < e) {
                    char *ptrs[AMPC_ITER_MAX_OPERANDS];
                    int64_t st[AMPC_ITER_MAX_OPERANDS];
                    for (int k = 0; k < nops; k++) {
                        st[k] = it->strides[k][nd - 1];
                        ptrs[k] = it->data[k] + b * st[k];
                    }
                    fn(ptrs, st, e - b, ctx);
                }
            }
        } else {
#pragma omp parallel
            {
                int nt = omp_get_num_threads(), tid = omp_get_thread_num();
                int64_t chunk = (rows + nt - 1) / nt, b = tid * chunk, e = b + chunk < rows ? b + chunk : rows;
                if (b < e) run_rows(it, fn, ctx, b, e);
            }
        }
        return;
    }
#endif
    run_rows(it, fn, ctx, 0, rows);
}

void ampc_cpu_iter_run_serial(const ampc_cpu_iter *it, ampc_cpu_loop_fn fn, const void *ctx) {
    if (it->numel == 0) return;
    int64_t rows = 1;
    for (int i = 0; i < it->ndim - 1; i++) rows *= it->shape[i];
    run_rows(it, fn, ctx, 0, rows);
}
