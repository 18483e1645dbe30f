/* scalar.h: a tagged Python-like number passed to ops (alpha, fill values, clamp bounds). */
#ifndef AMPC_SCALAR_H
#define AMPC_SCALAR_H

#include <stdbool.h>
#include <stdint.h>

#include "dtype.h"
#include "status.h"

typedef enum ampc_scalar_kind { AMPC_SCALAR_NONE = 0, AMPC_SCALAR_BOOL, AMPC_SCALAR_INT, AMPC_SCALAR_FLOAT } ampc_scalar_kind;

typedef struct ampc_scalar {
    ampc_scalar_kind kind;
    union {
        bool b;
        int64_t i;
        double f;
    } v;
} ampc_scalar;

static inline ampc_scalar ampc_scalar_none(void) { ampc_scalar s; s.kind = AMPC_SCALAR_NONE; s.v.i = 0; return s; }
static inline ampc_scalar ampc_scalar_bool(bool b) { ampc_scalar s; s.kind = AMPC_SCALAR_BOOL; s.v.b = b; return s; }
static inline ampc_scalar ampc_scalar_int(int64_t i) { ampc_scalar s; s.kind = AMPC_SCALAR_INT; s.v.i = i; return s; }
static inline ampc_scalar ampc_scalar_float(double f) { ampc_scalar s; s.kind = AMPC_SCALAR_FLOAT; s.v.f = f; return s; }

static inline double ampc_scalar_to_double(ampc_scalar s) {
    return s.kind == AMPC_SCALAR_FLOAT ? s.v.f : s.kind == AMPC_SCALAR_INT ? (double)s.v.i : (double)s.v.b;
}
static inline int64_t ampc_scalar_to_int(ampc_scalar s) {
    return s.kind == AMPC_SCALAR_FLOAT ? (int64_t)s.v.f : s.kind == AMPC_SCALAR_INT ? s.v.i : (int64_t)s.v.b;
}
/* The value of one element of dtype `dt` in host memory at `p`; AMPC_SCALAR_NONE for an invalid
 * dtype. Shared by the core's host reads and the binding's tolist(). */
static inline ampc_scalar ampc_scalar_load(const void *p, ampc_dtype dt) {
    switch (dt) {
    case AMPC_FLOAT32: return ampc_scalar_float(*(const float *)p);
    case AMPC_FLOAT16: return ampc_scalar_float(ampc_half_to_f32(*(const ampc_half *)p));
    case AMPC_BFLOAT16: return ampc_scalar_float(ampc_bf16_to_f32(*(const ampc_bfloat16 *)p));
    case AMPC_FLOAT64: return ampc_scalar_float(*(const double *)p);
    case AMPC_INT64: return ampc_scalar_int(*(const int64_t *)p);
    case AMPC_INT32: return ampc_scalar_int(*(const int32_t *)p);
    case AMPC_UINT8: return ampc_scalar_int(*(const uint8_t *)p);
    case AMPC_BOOL: return ampc_scalar_bool(*(const bool *)p);
    default: return ampc_scalar_none();
    }
}
/* The dtype a Python number of this kind wraps to (bool, int64, float64; result_type then
 * maps a wrapped float to the default dtype). */
static inline ampc_dtype ampc_scalar_dtype(ampc_scalar s) {
    return s.kind == AMPC_SCALAR_FLOAT ? AMPC_FLOAT64 : s.kind == AMPC_SCALAR_INT ? AMPC_INT64 : AMPC_BOOL;
}

/* Whether s converts to dtype dt without overflow (torch's rule, scalar.c); the check sets
 * torch's "value cannot be converted to type uint8_t without overflow" when it does not. */
bool ampc_scalar_fits(ampc_scalar s, ampc_dtype dt);
ampc_status ampc_check_scalar_fits(ampc_scalar s, ampc_dtype dt);

#endif
