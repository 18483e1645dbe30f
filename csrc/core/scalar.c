/* scalar.c: a Python number meeting a dtype: whether it converts without overflow, by torch's
 * checked_convert rule (c10::overflows), so fill_(300) on uint8 raises as in torch instead of
 * wrapping to 44, and fill_(1e6) on float16 raises instead of storing inf. (torch's fill of a
 * one-element CPU tensor skips the check; ampc checks every fill.) */
#include <float.h>
#include <math.h>

#include "scalar.h"
#include "status.h"

/* The C++ type torch's overflow message names. */
static const char *cpp_name(ampc_dtype dt) {
    switch (dt) {
    case AMPC_FLOAT32: return "float";
    case AMPC_FLOAT64: return "double";
    case AMPC_FLOAT16: return "c10::Half";
    case AMPC_BFLOAT16: return "c10::BFloat16";
    case AMPC_INT64: return "int64_t";
    case AMPC_INT32: return "int";
    case AMPC_UINT8: return "uint8_t";
    default: return "bool";
    }
}

/* The largest finite value of dt, as a double (float64 and bool: no limit). */
static double max_of(ampc_dtype dt) {
    switch (dt) {
    case AMPC_FLOAT32: return FLT_MAX;
    case AMPC_FLOAT16: return 65504.0;
    case AMPC_BFLOAT16: return 3.3895313892515355e38;
    case AMPC_INT64: return (double)INT64_MAX; /* 2^63 as a double, as torch compares */
    case AMPC_INT32: return INT32_MAX;
    case AMPC_UINT8: return UINT8_MAX;
    default: return INFINITY;
    }
}

bool ampc_scalar_fits(ampc_scalar s, ampc_dtype dt) {
    if (dt == AMPC_BOOL || dt == AMPC_FLOAT64 || s.kind == AMPC_SCALAR_BOOL || s.kind == AMPC_SCALAR_NONE) return true;
    double hi = max_of(dt);
    bool unsigned_int = dt == AMPC_UINT8, floating = ampc_dtype_is_floating(dt);
    if (s.kind == AMPC_SCALAR_INT) {
        int64_t i = s.v.i;
        if (dt == AMPC_INT64) return true;
        /* an unsigned dtype also takes -max..-1, which wrap (two's complement), as `a - b` on uint8 does */
        if (unsigned_int && i < 0) return i >= -(int64_t)UINT8_MAX;
        return (double)i <= hi && (double)i >= (dt == AMPC_INT32 ? (double)INT32_MIN : -hi);
    }
    double f = s.v.f; /* a float: within [lowest, max] of dt; inf and NaN only where dt has them */
    if (!isfinite(f)) return floating;
    double lo = floating ? -hi : dt == AMPC_INT64 ? (double)INT64_MIN : dt == AMPC_INT32 ? (double)INT32_MIN : 0.0;
    return f >= lo && f <= hi;
}

ampc_status ampc_check_scalar_fits(ampc_scalar s, ampc_dtype dt) {
    if (ampc_scalar_fits(s, dt)) return AMPC_OK;
    return ampc_set_error(AMPC_E_RUNTIME, "value cannot be converted to type %s without overflow", cpp_name(dt));
}
