/* cpu_amp.c: the scaler's kernels on the CPU: multi-tensor unscale + inf/NaN check, and the
 * scale update (formula shared with CUDA in core/amp_math.h). */
#include <math.h>

#include "../core/amp_math.h"
#include "cpu_backend.h"
#include "cpu_dtype_loops.h"
#include "cpu_iter.h"

typedef struct {
    float inv_scale;
    int found; /* per-row flag; rows of one call may run on several threads */
} unscale_ctx;

/* The check looks at the value before scaling, as PyTorch's kernel does; the product is formed
 * in fp32 and rounded once into the grad's dtype. */
#define DEFINE_UNSCALE(ENUM, SUF, CT, VT)                                                        \
    static void unscale_##SUF(char **d, const int64_t *s, int64_t n, const void *c) {            \
        unscale_ctx *ctx = (unscale_ctx *)c;                                                     \
        float inv = ctx->inv_scale;                                                              \
        int bad = 0;                                                                             \
        char *p = d[0];                                                                          \
        for (int64_t k = 0; k < n; k++, p += s[0]) {                                             \
            float v = (float)AMPC_LOAD_##SUF(p);                                                 \
            bad |= !isfinite(v);                                                                 \
            AMPC_STORE_##SUF(p, inv == 1.0f ? v : v * inv);                                      \
        }                                                                                        \
        if (bad) __atomic_store_n(&ctx->found, 1, __ATOMIC_RELAXED);                             \
    }
DEFINE_UNSCALE(AMPC_FLOAT32, f32, float, float)
DEFINE_UNSCALE(AMPC_FLOAT16, f16, ampc_half, float)
DEFINE_UNSCALE(AMPC_BFLOAT16, bf16, ampc_bfloat16, float)

/* float64 grads: check and scale in double. */
static void unscale_f64(char **d, const int64_t *s, int64_t n, const void *c) {
    unscale_ctx *ctx = (unscale_ctx *)c;
    double inv = ctx->inv_scale;
    int bad = 0;
    char *p = d[0];
    for (int64_t k = 0; k < n; k++, p += s[0]) {
        double v = *(double *)p;
        bad |= !isfinite(v);
        *(double *)p = v * inv;
    }
    if (bad) __atomic_store_n(&ctx->found, 1, __ATOMIC_RELAXED);
}

static ampc_status cpu_unscale_check(ampc_op op, const ampc_kernel_args *a) {
    (void)op;
    unscale_ctx ctx = {*(const float *)ampc_data_ptr(a->in[0]), 0};
    for (int i = 0; i < a->n_list; i++) {
        ampc_tensor *g = a->list[i];
        ampc_cpu_loop_fn fn = g->dtype == AMPC_FLOAT32    ? unscale_f32
                              : g->dtype == AMPC_FLOAT16  ? unscale_f16
                              : g->dtype == AMPC_BFLOAT16 ? unscale_bf16
                                                          : unscale_f64;
        ampc_cpu_iter it;
        AMPC_TRY(ampc_cpu_iter_init(&it, 1, &g, 0, NULL));
        ampc_cpu_iter_run(&it, fn, &ctx);
    }
    if (ctx.found) *(float *)ampc_data_ptr(a->out[0]) = 1.0f;
    return AMPC_OK;
}

static ampc_status cpu_update_scale(ampc_op op, const ampc_kernel_args *a) {
    (void)op;
    float *scale = (float *)ampc_data_ptr(a->out[0]);
    int32_t *tracker = (int32_t *)ampc_data_ptr(a->out[1]);
    float found_inf = *(const float *)ampc_data_ptr(a->in[0]);
    ampc_amp_update_scale_math(scale, tracker, found_inf, a->scalars[0].v.f, a->scalars[1].v.f, a->ints[0],
                               a->scalars[2].v.f, a->scalars[3].v.f);
    if (a->out[2])
        ampc_amp_record_stats((int64_t *)ampc_data_ptr(a->out[2]),
                              a->out[3] ? (float *)ampc_data_ptr(a->out[3]) : NULL,
                              a->out[3] ? ampc_numel(a->out[3]) : 0, found_inf, *scale);
    return AMPC_OK;
}

void ampc_cpu_register_amp(void) {
    ampc_register_kernel(AMPC_CPU, AMPC_OP_AMP_UNSCALE_CHECK, cpu_unscale_check);
    ampc_register_kernel(AMPC_CPU, AMPC_OP_AMP_UPDATE_SCALE, cpu_update_scale);
}
