/* cpu_nn_common.c: conversions between storage dtypes and the double buffers the CPU nn
 * kernels compute in (cpu_nn_common.h). */
#include "cpu_nn_common.h"

#include "cpu_backend.h"
#include "cpu_dtype_loops.h"

#define LOAD_CASE(ENUM, SUF, CT, VT)                                                        \
    case ENUM: {                                                                            \
        const CT *p = (const CT *)base + i0;                                                \
        if (stride == 1)                                                                    \
            for (int64_t k = 0; k < n; k++) dst[k] = (double)AMPC_LOAD_##SUF(p + k);        \
        else                                                                                \
            for (int64_t k = 0; k < n; k++) dst[k] = (double)AMPC_LOAD_##SUF(p + k * stride); \
        break;                                                                              \
    }

void nn_load(ampc_dtype dt, const void *base, int64_t i0, int64_t stride, int64_t n, double *dst) {
    switch (dt) {
        AMPC_FOR_EACH_DTYPE(LOAD_CASE)
    default: break;
    }
}

#define STORE_CASE(ENUM, SUF, CT, VT)                                                  \
    case ENUM: {                                                                       \
        CT *p = (CT *)base + i0;                                                       \
        if (stride == 1)                                                               \
            for (int64_t k = 0; k < n; k++) AMPC_STORE_##SUF(p + k, src[k]);           \
        else                                                                           \
            for (int64_t k = 0; k < n; k++) AMPC_STORE_##SUF(p + k * stride, src[k]);  \
        break;                                                                         \
    }

void nn_store(ampc_dtype dt, void *base, int64_t i0, int64_t stride, int64_t n, const double *src) {
    switch (dt) {
        AMPC_FOR_EACH_DTYPE(STORE_CASE)
    default: break;
    }
}

double nn_get(ampc_dtype dt, const void *base, int64_t i) {
    double v = 0;
    nn_load(dt, base, i, 1, 1, &v);
    return v;
}

void nn_set(ampc_dtype dt, void *base, int64_t i, double v) { nn_store(dt, base, i, 1, 1, &v); }

int64_t nn_get_index(ampc_dtype dt, const void *base, int64_t i) {
    switch (dt) {
    case AMPC_INT32: return ((const int32_t *)base)[i];
    case AMPC_UINT8: return ((const uint8_t *)base)[i];
    default: return ((const int64_t *)base)[i];
    }
}

ampc_status nn_nomem(ampc_op op) {
    return ampc_set_error(AMPC_E_NOMEM, "%s: out of memory for the kernel's work buffers", ampc_op_name(op));
}

void ampc_cpu_register_nn(void) {
    ampc_cpu_register_nn_conv();
    ampc_cpu_register_nn_pool();
    ampc_cpu_register_nn_norm();
    ampc_cpu_register_nn_softmax();
    ampc_cpu_register_nn_loss();
    ampc_cpu_register_nn_misc();
}
