/* cpu_nn_common.c: conversions between storage dtypes and the double buffers the CPU nn
 * kernels compute in (cpu_nn_common.h). */
#include "cpu_nn_common.h"

#include "cpu_backend.h"
#include "cpu_dtype_loops.h"
#include "cpu_half_convert.h"

#define LOAD_CASE(ENUM, SUF, CT, VT)                                                        \
    case ENUM: {                                                                            \
        const CT *p = (const CT *)base + i0;                                                \
        if (stride == 1)                                                                    \
            for (int64_t k = 0; k < n; k++) dst[k] = (double)AMPC_LOAD_##SUF(p + k);        \
        else                                                                                \
            for (int64_t k = 0; k < n; k++) dst[k] = (double)AMPC_LOAD_##SUF(p + k * stride); \
        break;                                                                              \
    }

/* Contiguous fp16/bf16 runs go through float blocks and the vector converters of
 * cpu_half_convert.h (same values as the per-element conversions, several times faster). */
#define NN_HALF_BLOCK 256

static void load_half_run(ampc_dtype dt, const uint16_t *p, int64_t n, double *dst) {
    float f[NN_HALF_BLOCK];
    for (int64_t k0 = 0; k0 < n; k0 += NN_HALF_BLOCK) {
        int64_t m = n - k0 < NN_HALF_BLOCK ? n - k0 : NN_HALF_BLOCK;
        if (dt == AMPC_FLOAT16)
            ampc_cpu_f16_to_f32(p + k0, f, m);
        else
            ampc_cpu_bf16_to_f32(p + k0, f, m);
        for (int64_t k = 0; k < m; k++) dst[k0 + k] = f[k];
    }
}

static void store_half_run(ampc_dtype dt, uint16_t *p, int64_t n, const double *src) {
    float f[NN_HALF_BLOCK];
    for (int64_t k0 = 0; k0 < n; k0 += NN_HALF_BLOCK) {
        int64_t m = n - k0 < NN_HALF_BLOCK ? n - k0 : NN_HALF_BLOCK;
        for (int64_t k = 0; k < m; k++) f[k] = (float)src[k0 + k]; /* as AMPC_STORE_f16: via float */
        if (dt == AMPC_FLOAT16)
            ampc_cpu_f32_to_f16(f, p + k0, m);
        else
            ampc_cpu_f32_to_bf16(f, p + k0, m);
    }
}

static bool is_half(ampc_dtype dt) { return dt == AMPC_FLOAT16 || dt == AMPC_BFLOAT16; }

void nn_load(ampc_dtype dt, const void *base, int64_t i0, int64_t stride, int64_t n, double *dst) {
    if (stride == 1 && n > 1 && is_half(dt)) {
        load_half_run(dt, (const uint16_t *)base + i0, n, dst);
        return;
    }
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
    if (stride == 1 && n > 1 && is_half(dt)) {
        store_half_run(dt, (uint16_t *)base + i0, n, src);
        return;
    }
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
