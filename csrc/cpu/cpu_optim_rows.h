/* cpu_optim_rows.h: the CPU loops of the fused optimizers for one compute type and instruction
 * set. Included by cpu_optim.c once per variant: ROW_T the compute type, ROW_MATH(name) the
 * optim_math.h rule of that type (name##_f32 / name##_f64), ROW_FN(name) the names of this
 * variant's functions, ROW_ATTR its target attribute (empty for the baseline); no include guard
 * on purpose.
 *
 * A loop runs one rule of core/optim_math.h over n consecutive elements: p (param or master), g
 * (grad; divided by the grad scale and written back when has_gs) and the state arrays. GCC only
 * vectorizes loops whose stores are unconditional, so every option that decides whether a store
 * happens (has_gs, momentum, amsgrad, centered) is a constant argument of an always-inlined loop,
 * and the row function picks the instance; the remaining options are loop-invariant selects. */

#define ROW_INLINE ROW_ATTR static inline __attribute__((always_inline))

/* The body of every loop: gk, the grad of element k (divided by gs and written back when has_gs),
 * then UPDATE, the rule's call for element k. */
#define ROW_EACH_GRAD(UPDATE)                   \
    for (int64_t k = 0; k < n; k++) {           \
        ROW_T gk = g[k];                        \
        if (has_gs) g[k] = gk = gk / gs;        \
        UPDATE;                                 \
    }

ROW_INLINE void ROW_FN(sgd_loop)(int64_t n, ROW_T *restrict p, ROW_T *restrict g, ROW_T *restrict buf,
                                 ampc_sgd_coeffs c, ROW_T gs, bool has_gs, bool use_momentum) {
    c.use_momentum = use_momentum;
    ROW_EACH_GRAD(ROW_MATH(ampc_sgd_update)(p + k, gk, buf + k, &c));
}

ROW_ATTR static void ROW_FN(sgd_row)(int64_t n, ROW_T *p, ROW_T *g, ROW_T *buf, const ampc_sgd_coeffs *c, ROW_T gs,
                            bool has_gs) {
    if (has_gs)
        c->use_momentum ? ROW_FN(sgd_loop)(n, p, g, buf, *c, gs, true, true)
                        : ROW_FN(sgd_loop)(n, p, g, buf, *c, gs, true, false);
    else
        c->use_momentum ? ROW_FN(sgd_loop)(n, p, g, buf, *c, gs, false, true)
                        : ROW_FN(sgd_loop)(n, p, g, buf, *c, gs, false, false);
}

ROW_INLINE void ROW_FN(adam_loop)(int64_t n, ROW_T *restrict p, ROW_T *restrict g, ROW_T *restrict m,
                                  ROW_T *restrict v, ROW_T *restrict vmax, ampc_adam_coeffs c, ROW_T gs, bool has_gs,
                                  bool amsgrad) {
    c.amsgrad = amsgrad;
    ROW_EACH_GRAD(ROW_MATH(ampc_adam_update)(p + k, gk, m + k, v + k, vmax + k, &c));
}

ROW_ATTR static void ROW_FN(adam_row)(int64_t n, ROW_T *p, ROW_T *g, ROW_T *m, ROW_T *v, ROW_T *vmax,
                             const ampc_adam_coeffs *c, ROW_T gs, bool has_gs) {
    if (has_gs)
        c->amsgrad ? ROW_FN(adam_loop)(n, p, g, m, v, vmax, *c, gs, true, true)
                   : ROW_FN(adam_loop)(n, p, g, m, v, vmax, *c, gs, true, false);
    else
        c->amsgrad ? ROW_FN(adam_loop)(n, p, g, m, v, vmax, *c, gs, false, true)
                   : ROW_FN(adam_loop)(n, p, g, m, v, vmax, *c, gs, false, false);
}

ROW_INLINE void ROW_FN(adadelta_loop)(int64_t n, ROW_T *restrict p, ROW_T *restrict g, ROW_T *restrict sq,
                                      ROW_T *restrict acc, ampc_adadelta_coeffs c, ROW_T gs, bool has_gs) {
    ROW_EACH_GRAD(ROW_MATH(ampc_adadelta_update)(p + k, gk, sq + k, acc + k, &c));
}

ROW_ATTR static void ROW_FN(adadelta_row)(int64_t n, ROW_T *p, ROW_T *g, ROW_T *sq, ROW_T *acc, const ampc_adadelta_coeffs *c,
                                 ROW_T gs, bool has_gs) {
    if (has_gs)
        ROW_FN(adadelta_loop)(n, p, g, sq, acc, *c, gs, true);
    else
        ROW_FN(adadelta_loop)(n, p, g, sq, acc, *c, gs, false);
}

ROW_INLINE void ROW_FN(rmsprop_loop)(int64_t n, ROW_T *restrict p, ROW_T *restrict g, ROW_T *restrict sq,
                                     ROW_T *restrict buf, ROW_T *restrict ga, ampc_rmsprop_coeffs c, ROW_T gs,
                                     bool has_gs, bool momentum, bool centered) {
    if (!momentum) c.momentum = 0.0;
    c.centered = centered;
    ROW_EACH_GRAD(ROW_MATH(ampc_rmsprop_update)(p + k, gk, sq + k, buf + k, ga + k, &c));
}

/* The momentum > 0 test is made here so the loop instance knows it as a constant. */
#define ROW_RMSPROP(HAS_GS)                                                                                   \
    (momentum ? (c->centered ? ROW_FN(rmsprop_loop)(n, p, g, sq, buf, ga, *c, gs, HAS_GS, true, true)         \
                             : ROW_FN(rmsprop_loop)(n, p, g, sq, buf, ga, *c, gs, HAS_GS, true, false))       \
              : (c->centered ? ROW_FN(rmsprop_loop)(n, p, g, sq, buf, ga, *c, gs, HAS_GS, false, true)        \
                             : ROW_FN(rmsprop_loop)(n, p, g, sq, buf, ga, *c, gs, HAS_GS, false, false)))

ROW_ATTR static void ROW_FN(rmsprop_row)(int64_t n, ROW_T *p, ROW_T *g, ROW_T *sq, ROW_T *buf, ROW_T *ga,
                                const ampc_rmsprop_coeffs *c, ROW_T gs, bool has_gs) {
    bool momentum = c->momentum > 0.0;
    if (has_gs)
        ROW_RMSPROP(true);
    else
        ROW_RMSPROP(false);
}
#undef ROW_RMSPROP

ROW_INLINE void ROW_FN(adagrad_loop)(int64_t n, ROW_T *restrict p, ROW_T *restrict g, ROW_T *restrict sum,
                                     ampc_adagrad_coeffs c, ROW_T gs, bool has_gs) {
    ROW_EACH_GRAD(ROW_MATH(ampc_adagrad_update)(p + k, gk, sum + k, &c));
}

ROW_ATTR static void ROW_FN(adagrad_row)(int64_t n, ROW_T *p, ROW_T *g, ROW_T *sum, const ampc_adagrad_coeffs *c, ROW_T gs,
                                bool has_gs) {
    if (has_gs)
        ROW_FN(adagrad_loop)(n, p, g, sum, *c, gs, true);
    else
        ROW_FN(adagrad_loop)(n, p, g, sum, *c, gs, false);
}

/* The rules whose stores are unconditional: one loop each, instanced on has_gs. */
#define ROW_SIMPLE(NAME, PARAMS, ARGS, UPDATE)                                                                  \
    ROW_INLINE void ROW_FN(NAME##_loop)(int64_t n, ROW_T *restrict p, ROW_T *restrict g, PARAMS,               \
                                        ampc_##NAME##_coeffs c, ROW_T gs, bool has_gs) {                       \
        ROW_EACH_GRAD(UPDATE);                                                                                  \
    }                                                                                                           \
    ROW_ATTR static void ROW_FN(NAME##_row)(int64_t n, ROW_T *p, ROW_T *g, PARAMS, const ampc_##NAME##_coeffs *c, \
                                            ROW_T gs, bool has_gs) {                                            \
        if (has_gs)                                                                                             \
            ROW_FN(NAME##_loop)(n, p, g, ARGS, *c, gs, true);                                                   \
        else                                                                                                    \
            ROW_FN(NAME##_loop)(n, p, g, ARGS, *c, gs, false);                                                  \
    }
#define ROW_COMMA ,
ROW_SIMPLE(nadam, ROW_T *restrict m ROW_COMMA ROW_T *restrict v, m ROW_COMMA v,
           ROW_MATH(ampc_nadam_update)(p + k, gk, m + k, v + k, &c))
ROW_SIMPLE(radam, ROW_T *restrict m ROW_COMMA ROW_T *restrict v, m ROW_COMMA v,
           ROW_MATH(ampc_radam_update)(p + k, gk, m + k, v + k, &c))
ROW_SIMPLE(adamax, ROW_T *restrict m ROW_COMMA ROW_T *restrict u, m ROW_COMMA u,
           ROW_MATH(ampc_adamax_update)(p + k, gk, m + k, u + k, &c))
ROW_SIMPLE(asgd, ROW_T *restrict ax, ax, ROW_MATH(ampc_asgd_update)(p + k, gk, ax + k, &c))
ROW_SIMPLE(rprop, ROW_T *restrict prev ROW_COMMA ROW_T *restrict ss, prev ROW_COMMA ss,
           ROW_MATH(ampc_rprop_update)(p + k, gk, prev + k, ss + k, &c))
#undef ROW_COMMA
#undef ROW_SIMPLE

/* One rule over n elements; s0..s2 are the op's state slots in ops.def order. */
ROW_ATTR static void ROW_FN(row)(ampc_op op, int64_t n, ROW_T *p, ROW_T *g, ROW_T *s0, ROW_T *s1, ROW_T *s2,
                        const optim_coeffs *c, bool has_gs, ROW_T gs) {
    switch (op) {
    case AMPC_OP_FUSED_SGD: ROW_FN(sgd_row)(n, p, g, s0, &c->sgd, gs, has_gs); break;
    case AMPC_OP_FUSED_ADAM: ROW_FN(adam_row)(n, p, g, s0, s1, s2, &c->adam, gs, has_gs); break;
    case AMPC_OP_FUSED_ADADELTA: ROW_FN(adadelta_row)(n, p, g, s0, s1, &c->adadelta, gs, has_gs); break;
    case AMPC_OP_FUSED_RMSPROP: ROW_FN(rmsprop_row)(n, p, g, s0, s1, s2, &c->rmsprop, gs, has_gs); break;
    case AMPC_OP_FUSED_ADAGRAD: ROW_FN(adagrad_row)(n, p, g, s0, &c->adagrad, gs, has_gs); break;
    case AMPC_OP_FUSED_NADAM: ROW_FN(nadam_row)(n, p, g, s0, s1, &c->nadam, gs, has_gs); break;
    case AMPC_OP_FUSED_RADAM: ROW_FN(radam_row)(n, p, g, s0, s1, &c->radam, gs, has_gs); break;
    case AMPC_OP_FUSED_ADAMAX: ROW_FN(adamax_row)(n, p, g, s0, s1, &c->adamax, gs, has_gs); break;
    case AMPC_OP_FUSED_ASGD: ROW_FN(asgd_row)(n, p, g, s0, &c->asgd, gs, has_gs); break;
    default: ROW_FN(rprop_row)(n, p, g, s0, s1, &c->rprop, gs, has_gs); break;
    }
}

#undef ROW_EACH_GRAD
#undef ROW_INLINE
