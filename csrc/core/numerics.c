/* numerics.c: the census of a floating tensor's values (numerics.h). */
#include "numerics.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "half.h"

static double smallest_normal(ampc_dtype dt) {
    switch (dt) {
    case AMPC_FLOAT16: return 6.103515625e-05; /* 2^-14 */
    case AMPC_FLOAT64: return DBL_MIN;
    default: return FLT_MIN; /* float32 and bfloat16 share the exponent range */
    }
}

static void count(ampc_numerics *r, double v, double tiny) {
    if (isnan(v)) {
        r->n_nan++;
    } else if (isinf(v)) {
        r->n_inf++;
    } else {
        double a = fabs(v);
        if (a == 0.0) r->n_zero++;
        else if (a < tiny) r->n_subnormal++;
        if (a > r->max_abs) r->max_abs = a;
    }
}

ampc_status ampc_tensor_numerics(const ampc_tensor *t, ampc_numerics *r) {
    if (!t || !r) return ampc_set_error(AMPC_E_VALUE, "numerics: NULL argument");
    if (!ampc_dtype_is_floating(t->dtype))
        return ampc_set_error(AMPC_E_TYPE, "numerics: expected a floating tensor, got %s", ampc_dtype_name(t->dtype));
    memset(r, 0, sizeof *r);
    ampc_tensor *host = ampc_to(t, t->dtype, ampc_cpu_device(), false);
    if (!host) return ampc_last_status();
    ampc_tensor *c = ampc_contiguous(host);
    ampc_tensor_decref(host);
    if (!c) return ampc_last_status();
    int64_t n = ampc_numel(c);
    const void *p = ampc_data_ptr(c);
    double tiny = smallest_normal(c->dtype);
    r->numel = n;
    for (int64_t i = 0; i < n; i++) {
        double v;
        switch (c->dtype) {
        case AMPC_FLOAT16: v = ampc_half_to_f32(((const ampc_half *)p)[i]); break;
        case AMPC_BFLOAT16: v = ampc_bf16_to_f32(((const ampc_bfloat16 *)p)[i]); break;
        case AMPC_FLOAT64: v = ((const double *)p)[i]; break;
        default: v = ((const float *)p)[i]; break;
        }
        count(r, v, tiny);
    }
    ampc_tensor_decref(c);
    return AMPC_OK;
}
