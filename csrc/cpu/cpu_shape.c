/* cpu_shape.c: the CPU kernel of tril/triu (the other shape ops are views, COPY or the index
 * kernels over computed strides: core/shape_ops.c).
 *
 * out = input with the elements above (tril) or below (triu) the k-th diagonal zeroed, over a
 * batch of (n, m) matrices. A row keeps one contiguous column range, so a row is at most one
 * memcpy and one memset when the last dim is contiguous (all-zero bits are 0 in every dtype,
 * fp16/bf16 and bool included); other layouts copy element by element. Rows are independent:
 * OpenMP splits them when there is enough work. out may be input (tril_): the kept range is
 * then left alone. */
#include <string.h>

#include "../core/kernel_args.h"
#include "../core/ops.h"
#include "cpu_backend.h"

/* Columns [lo, hi) of row i are kept. */
static void kept_range(bool lower, int64_t i, int64_t k, int64_t m, int64_t *lo, int64_t *hi) {
    int64_t a = lower ? 0 : i + k, b = lower ? i + k + 1 : m;
    *lo = a < 0 ? 0 : a > m ? m : a;
    *hi = b < 0 ? 0 : b > m ? m : b;
    if (*hi < *lo) *hi = *lo;
}

#define STRIDED_ROW(T)                                                         \
    do {                                                                       \
        T *ot = (T *)(void *)o;                                                \
        const T *st = (const T *)(const void *)s;                              \
        for (int64_t j = 0; j < m; j++)                                        \
            if (j < lo || j >= hi) ot[j * so] = 0;                             \
            else if (!same) ot[j * so] = st[j * si];                           \
    } while (0)

static ampc_status cpu_tril(ampc_op op, const ampc_tril_args *p) {
    const ampc_tensor *in = p->input;
    ampc_tensor *out = p->out;
    int nd = out->ndim;
    if (nd < 2 || in->ndim != nd || in->dtype != out->dtype)
        return ampc_set_error(AMPC_E_RUNTIME, "%s: expects input and out of one dtype and shape (*, n, m)",
                              ampc_op_name(op));
    int64_t n = out->shape[nd - 2], m = out->shape[nd - 1], batch = 1;
    for (int i = 0; i < nd - 2; i++) batch *= out->shape[i];
    if (batch * n * m == 0) return AMPC_OK;
    bool lower = op == AMPC_OP_TRIL, same = ampc_data_ptr(in) == ampc_data_ptr(out) &&
                                             !memcmp(in->strides, out->strides, sizeof(int64_t) * (size_t)nd);
    size_t item = ampc_dtype_itemsize(out->dtype);
    char *ob = (char *)ampc_data_ptr(out);
    const char *ib = (const char *)ampc_data_ptr(in);
    int64_t rows = batch * n, k = p->diagonal;
    bool parallel = rows * m > 32768;
#pragma omp parallel for if (parallel) schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        int64_t i = r % n, b = r / n;
        int64_t off_o = i * out->strides[nd - 2], off_i = i * in->strides[nd - 2];
        for (int d = nd - 3; d >= 0; d--) {
            int64_t idx = b % out->shape[d];
            b /= out->shape[d];
            off_o += idx * out->strides[d];
            off_i += idx * in->strides[d];
        }
        char *o = ob + off_o * (int64_t)item;
        const char *s = ib + off_i * (int64_t)item;
        int64_t so = out->strides[nd - 1], si = in->strides[nd - 1], lo, hi;
        kept_range(lower, i, k, m, &lo, &hi);
        if (so == 1 && si == 1) {
            memset(o, 0, (size_t)lo * item);
            if (!same && hi > lo) memcpy(o + lo * (int64_t)item, s + lo * (int64_t)item, (size_t)(hi - lo) * item);
            memset(o + hi * (int64_t)item, 0, (size_t)(m - hi) * item);
            continue;
        }
        switch (item) { /* a transposed or strided row: items of a constant size */
        case 1: STRIDED_ROW(uint8_t); break;
        case 2: STRIDED_ROW(uint16_t); break;
        case 4: STRIDED_ROW(uint32_t); break;
        default: STRIDED_ROW(uint64_t); break;
        }
    }
    return AMPC_OK;
}

void ampc_cpu_register_shape(void) { ampc_register_tril(AMPC_CPU, cpu_tril); }
