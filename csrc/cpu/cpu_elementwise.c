/* cpu_elementwise.c: CPU kernels of the elementwise family (UNARY, BINARY, COMPARE, TERNARY).
 *
 * The loop table is generated from ops.def: one loop per (form, storage dtype) of the
 * AMPC_EW_OP / AMPC_EW_FORM rows, whose body is the row's formula in core/elementwise_math.h
 * (shared with the CUDA backend). Nothing here names an op: adding an elementwise op adds its
 * loops. The frontend (core/elementwise.c) has already chosen the form and hands over inputs in
 * the compute dtype and an output in the result dtype (bool for comparisons, isnan, logical
 * ops). A NULL operand means "the scalar value scalar_a/b/c" (a Python number or a 0-dim CPU
 * tensor); a kernel also treats any one-element input tensor that way. Scalars reach the inner
 * loop as values in registers, so `x * 0.5` runs as fast as a unary op.
 *
 * Each loop has a contiguous branch with typed pointers (which -O3 vectorizes for float32,
 * float64 and integer types), a branch for an operand broadcast along the row (stride 0) and a
 * generic strided branch. fp16/bf16 load into float, compute, and round once on store
 * (PyTorch's CPU opmath). */
#include <math.h>
#include <string.h>

#include "../core/elementwise_forms.h"
#include "cpu_backend.h"
#include "cpu_dtype_loops.h"
#include "cpu_half_convert.h"
#include "cpu_iter.h"

/* Per-call constants of a loop: the form's parameters (an ampc_ew_params_<s> of the opmath type)
 * and the scalar operand (scalar_b of `x OP s`, scalar_a of `s OP x`) in the opmath type. */
typedef struct ew_ctx {
    ampc_ew_params_any params;
    _Alignas(8) unsigned char scalar[8];
} ew_ctx;


/* p: the parameters, P2: the scalar operand */
#define EW_PARAMS(SUF, VT)                          \
    const ew_ctx *ctx = (const ew_ctx *)ctxp;       \
    AMPC_EW_PARAMS_OF(SUF) p;                           \
    VT P2;                                          \
    memcpy(&p, &ctx->params, sizeof p);             \
    memcpy(&P2, ctx->scalar, sizeof P2);            \
    (void)p;                                        \
    (void)P2

#define SZ(T) ((int64_t)sizeof(T))

/* ------------------------------------------------------------------ fp16/bf16 blocks
 * Contiguous fp16/bf16 rows run in blocks of EW_BLOCK: inputs widened to float with the vector
 * converters (cpu_half_convert.h), the expression on float arrays (vectorized as for float32),
 * results rounded back in one pass. Per element this is the same float computation and the same
 * single rounding as the scalar loop, so results are bit-identical; it is 5-10x faster.
 * EW_BLOCKED_<suffix> selects the path at compile time; the other dtypes keep their plain loops
 * (EW_WIDEN/EW_NARROW exist for them only so the dead branch compiles). */
#define EW_BLOCK 256
#define EW_BLOCKED_f16 1
#define EW_BLOCKED_bf16 1
#define EW_BLOCKED_f32 0
#define EW_BLOCKED_f64 0
#define EW_BLOCKED_i64 0
#define EW_BLOCKED_i32 0
#define EW_BLOCKED_u8 0
#define EW_BLOCKED_b8 0
#define EW_WIDEN_f16(src, dst, m) ampc_cpu_f16_to_f32(src, dst, m)
#define EW_WIDEN_bf16(src, dst, m) ampc_cpu_bf16_to_f32(src, dst, m)
#define EW_NARROW_f16(src, dst, m) ampc_cpu_f32_to_f16(src, dst, m)
#define EW_NARROW_bf16(src, dst, m) ampc_cpu_f32_to_bf16(src, dst, m)
#define EW_PLAIN_COPY(SUF, src, dst, m) \
    for (int64_t k_ = 0; k_ < (m); k_++) (dst)[k_] = AMPC_LOAD_##SUF((src) + k_)
#define EW_PLAIN_STORE(SUF, src, dst, m) \
    for (int64_t k_ = 0; k_ < (m); k_++) AMPC_STORE_##SUF((dst) + k_, (src)[k_])
#define EW_WIDEN_f32(src, dst, m) EW_PLAIN_COPY(f32, src, dst, m)
#define EW_WIDEN_f64(src, dst, m) EW_PLAIN_COPY(f64, src, dst, m)
#define EW_WIDEN_i64(src, dst, m) EW_PLAIN_COPY(i64, src, dst, m)
#define EW_WIDEN_i32(src, dst, m) EW_PLAIN_COPY(i32, src, dst, m)
#define EW_WIDEN_u8(src, dst, m) EW_PLAIN_COPY(u8, src, dst, m)
#define EW_WIDEN_b8(src, dst, m) EW_PLAIN_COPY(b8, src, dst, m)
#define EW_NARROW_f32(src, dst, m) EW_PLAIN_STORE(f32, src, dst, m)
#define EW_NARROW_f64(src, dst, m) EW_PLAIN_STORE(f64, src, dst, m)
#define EW_NARROW_i64(src, dst, m) EW_PLAIN_STORE(i64, src, dst, m)
#define EW_NARROW_i32(src, dst, m) EW_PLAIN_STORE(i32, src, dst, m)
#define EW_NARROW_u8(src, dst, m) EW_PLAIN_STORE(u8, src, dst, m)
#define EW_NARROW_b8(src, dst, m) EW_PLAIN_STORE(b8, src, dst, m)

/* ------------------------------------------------------------------ loop generators */

/* One row of out = EXPR(VAR), VAR running along the row at d[VAR_SLOT]: blocks widened and
 * narrowed through the block converters when both are contiguous, else element by element. */
#define EW_ROW_ONE_INPUT(SUF, CT, VT, OSUF, OCT, EXPR, VAR, VAR_SLOT)                \
    if (s[0] == SZ(OCT) && s[VAR_SLOT] == SZ(CT) && EW_BLOCKED_##SUF) {               \
        for (int64_t k0 = 0; k0 < n; k0 += EW_BLOCK) {                                \
            int64_t m = n - k0 < EW_BLOCK ? n - k0 : EW_BLOCK;                        \
            VT vs[EW_BLOCK], r[EW_BLOCK];                                             \
            EW_WIDEN_##SUF((const CT *)d[VAR_SLOT] + k0, vs, m);                      \
            for (int64_t k = 0; k < m; k++) {                                         \
                VT VAR = vs[k];                                                       \
                r[k] = (VT)(EXPR);                                                    \
            }                                                                         \
            EW_NARROW_##OSUF(r, (OCT *)d[0] + k0, m);                                 \
        }                                                                             \
    } else if (s[0] == SZ(OCT) && s[VAR_SLOT] == SZ(CT)) {                            \
        OCT *o = (OCT *)d[0];                                                         \
        const CT *pv = (const CT *)d[VAR_SLOT];                                       \
        for (int64_t k = 0; k < n; k++) {                                             \
            VT VAR = AMPC_LOAD_##SUF(pv + k);                                         \
            AMPC_STORE_##OSUF(o + k, (EXPR));                                         \
        }                                                                             \
    } else {                                                                          \
        for (int64_t k = 0; k < n; k++) {                                             \
            VT VAR = AMPC_LOAD_##SUF(d[VAR_SLOT] + k * s[VAR_SLOT]);                  \
            AMPC_STORE_##OSUF(d[0] + k * s[0], (EXPR));                               \
        }                                                                             \
    }

/* out = EXPR(x) */
#define DEF_UNARY(ID, SUF, CT, VT, OSUF, OCT, EXPR)                                        \
    static void ew_##ID##_##SUF(char **d, const int64_t *s, int64_t n, const void *ctxp) { \
        EW_PARAMS(SUF, VT);                                                                \
        EW_ROW_ONE_INPUT(SUF, CT, VT, OSUF, OCT, EXPR, x, 1)                               \
    }

/* One row of out = EXPR(a, b) where the operand named FIXED is the constant FIXED_VALUE and the
 * other (VAR, at d[VAR_SLOT]) runs along the row. */
#define EW_ROW_WITH_CONSTANT(SUF, CT, VT, OSUF, OCT, EXPR, FIXED, FIXED_VALUE, VAR, VAR_SLOT) \
    {                                                                                         \
        const VT FIXED = (FIXED_VALUE);                                                       \
        EW_ROW_ONE_INPUT(SUF, CT, VT, OSUF, OCT, EXPR, VAR, VAR_SLOT)                         \
    }

/* out = EXPR(a, b): ew_ID_SUF over (out, a, b), ew_ID_sb_SUF over (out, a) with b = P2. */
#define DEF_BINARY(ID, SUF, CT, VT, OSUF, OCT, EXPR)                                           \
    static void ew_##ID##_##SUF(char **d, const int64_t *s, int64_t n, const void *ctxp) {     \
        EW_PARAMS(SUF, VT);                                                                         \
        if (s[0] == SZ(OCT) && s[1] == SZ(CT) && s[2] == SZ(CT) && EW_BLOCKED_##SUF) {         \
            for (int64_t k0 = 0; k0 < n; k0 += EW_BLOCK) {                                     \
                int64_t m = n - k0 < EW_BLOCK ? n - k0 : EW_BLOCK;                             \
                VT as[EW_BLOCK], bs[EW_BLOCK], r[EW_BLOCK];                                    \
                EW_WIDEN_##SUF((const CT *)d[1] + k0, as, m);                                  \
                EW_WIDEN_##SUF((const CT *)d[2] + k0, bs, m);                                  \
                for (int64_t k = 0; k < m; k++) {                                              \
                    VT a = as[k], b = bs[k];                                                   \
                    r[k] = (VT)(EXPR);                                                         \
                }                                                                              \
                EW_NARROW_##OSUF(r, (OCT *)d[0] + k0, m);                                      \
            }                                                                                  \
        } else if (s[0] == SZ(OCT) && s[1] == SZ(CT) && s[2] == SZ(CT)) {                      \
            OCT *o = (OCT *)d[0];                                                              \
            const CT *pa = (const CT *)d[1], *pb = (const CT *)d[2];                           \
            for (int64_t k = 0; k < n; k++) {                                                  \
                VT a = AMPC_LOAD_##SUF(pa + k), b = AMPC_LOAD_##SUF(pb + k);                   \
                AMPC_STORE_##OSUF(o + k, (EXPR));                                              \
            }                                                                                  \
        } else if (s[2] == 0) {                                                                \
            EW_ROW_WITH_CONSTANT(SUF, CT, VT, OSUF, OCT, EXPR, b, AMPC_LOAD_##SUF(d[2]), a, 1) \
        } else if (s[1] == 0) {                                                                \
            EW_ROW_WITH_CONSTANT(SUF, CT, VT, OSUF, OCT, EXPR, a, AMPC_LOAD_##SUF(d[1]), b, 2) \
        } else {                                                                               \
            for (int64_t k = 0; k < n; k++) {                                                  \
                VT a = AMPC_LOAD_##SUF(d[1] + k * s[1]), b = AMPC_LOAD_##SUF(d[2] + k * s[2]); \
                AMPC_STORE_##OSUF(d[0] + k * s[0], (EXPR));                                    \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
    static void ew_##ID##_sb_##SUF(char **d, const int64_t *s, int64_t n, const void *ctxp) {  \
        EW_PARAMS(SUF, VT);                                                                         \
        EW_ROW_WITH_CONSTANT(SUF, CT, VT, OSUF, OCT, EXPR, b, P2, a, 1)                        \
    }

/* A non-commutative op also gets ew_ID_sa_SUF over (out, b) with a = P2 (`2 - x`, `2 ** x`). */
#define DEF_BINARY_NC(ID, SUF, CT, VT, OSUF, OCT, EXPR)                                       \
    DEF_BINARY(ID, SUF, CT, VT, OSUF, OCT, EXPR)                                              \
    static void ew_##ID##_sa_##SUF(char **d, const int64_t *s, int64_t n, const void *ctxp) { \
        EW_PARAMS(SUF, VT);                                                                        \
        EW_ROW_WITH_CONSTANT(SUF, CT, VT, OSUF, OCT, EXPR, a, P2, b, 1)                       \
    }

/* ------------------------------------------------------------------ the loops, from ops.def
 * Per (form, dtype): GEN_<FORM> picks the generator (U: unary, UB: unary with bool out, B:
 * commutative binary, BNC: binary with a scalar-left loop too, BB: binary with bool out) and
 * the body is the form's formula on (x) or (a, b) with the parameters p. */
#define CT_f32 float
#define CT_f16 ampc_half
#define CT_bf16 ampc_bfloat16
#define CT_f64 double
#define CT_i64 int64_t
#define CT_i32 int32_t
#define CT_u8 uint8_t
#define CT_b8 bool
#define VT_f32 float
#define VT_f16 float
#define VT_bf16 float
#define VT_f64 double
#define VT_i64 int64_t
#define VT_i32 int32_t
#define VT_u8 uint8_t
#define VT_b8 bool

#define GEN_U(ID, SUF, STEM) DEF_UNARY(ID, SUF, CT_##SUF, VT_##SUF, SUF, CT_##SUF, AMPC_EW_FORMULA(STEM, SUF)(x, p))
#define GEN_UB(ID, SUF, STEM) DEF_UNARY(ID, SUF, CT_##SUF, VT_##SUF, b8, bool, AMPC_EW_FORMULA(STEM, SUF)(x, p))
#define GEN_B(ID, SUF, STEM) DEF_BINARY(ID, SUF, CT_##SUF, VT_##SUF, SUF, CT_##SUF, AMPC_EW_FORMULA(STEM, SUF)(a, b, p))
#define GEN_BNC(ID, SUF, STEM) DEF_BINARY_NC(ID, SUF, CT_##SUF, VT_##SUF, SUF, CT_##SUF, AMPC_EW_FORMULA(STEM, SUF)(a, b, p))
#define GEN_BB(ID, SUF, STEM) DEF_BINARY(ID, SUF, CT_##SUF, VT_##SUF, b8, bool, AMPC_EW_FORMULA(STEM, SUF)(a, b, p))

#define GEN_DTYPE(SUF, ID, FORM, STEM) GEN_##FORM(ID, SUF, STEM)
#define AMPC_EW_OP(id, name, kind, ac, grad, save, rule, tkernel, form, dtypes, stem, bind) dtypes(GEN_DTYPE, id, form, stem)
#define AMPC_EW_FORM(id, of, form, dtypes, stem) dtypes(GEN_DTYPE, id, form, stem)
#include "../core/ops.def"
#undef AMPC_EW_OP
#undef AMPC_EW_FORM

/* ------------------------------------------------------------------ loop tables
 * [form][dtype]: the tensor-tensor form (unary forms: the only one), the scalar-b form and the
 * scalar-a form (NULL for commutative forms: the kernel swaps the operands instead). */
enum { FORM_TENSOR, FORM_SCALAR_B, FORM_SCALAR_A, NUM_FORMS };
static ampc_cpu_loop_fn loops[AMPC_EW_NUM_FORMS][AMPC_NUM_DTYPES][NUM_FORMS];

#define REG_U(ID, SUF) loops[AMPC_EW_FORM_##ID][AMPC_EW_DT_##SUF][FORM_TENSOR] = ew_##ID##_##SUF;
#define REG_UB REG_U
#define REG_B(ID, SUF) REG_U(ID, SUF) loops[AMPC_EW_FORM_##ID][AMPC_EW_DT_##SUF][FORM_SCALAR_B] = ew_##ID##_sb_##SUF;
#define REG_BB REG_B
#define REG_BNC(ID, SUF) REG_B(ID, SUF) loops[AMPC_EW_FORM_##ID][AMPC_EW_DT_##SUF][FORM_SCALAR_A] = ew_##ID##_sa_##SUF;
#define REG_DTYPE(SUF, ID, FORM, STEM) REG_##FORM(ID, SUF)

static void fill_loop_tables(void) {
#define AMPC_EW_OP(id, name, kind, ac, grad, save, rule, tkernel, form, dtypes, stem, bind) dtypes(REG_DTYPE, id, form, stem)
#define AMPC_EW_FORM(id, of, form, dtypes, stem) dtypes(REG_DTYPE, id, form, stem)
#include "../core/ops.def"
#undef AMPC_EW_OP
#undef AMPC_EW_FORM
}

/* ------------------------------------------------------------------ parameters */

/* The element of a one-element CPU tensor as a scalar (for the scalar-operand forms). */
static ampc_scalar element_of(const ampc_tensor *t) {
    const char *p = (const char *)ampc_data_ptr(t);
    switch (t->dtype) {
    case AMPC_FLOAT32: return ampc_scalar_float(AMPC_LOAD_f32(p));
    case AMPC_FLOAT16: return ampc_scalar_float(AMPC_LOAD_f16(p));
    case AMPC_BFLOAT16: return ampc_scalar_float(AMPC_LOAD_bf16(p));
    case AMPC_FLOAT64: return ampc_scalar_float(AMPC_LOAD_f64(p));
    case AMPC_INT64: return ampc_scalar_int(AMPC_LOAD_i64(p));
    case AMPC_INT32: return ampc_scalar_int(AMPC_LOAD_i32(p));
    case AMPC_UINT8: return ampc_scalar_int(AMPC_LOAD_u8(p));
    default: return ampc_scalar_bool(AMPC_LOAD_b8(p));
    }
}

/* The frontend rejects unsupported dtypes with PyTorch's messages first; this is the backstop. */
static ampc_status no_loop(ampc_op op, ampc_ew_form form, ampc_dtype dt) {
    return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "%s: the CPU backend has no %s loop for dtype %s", ampc_op_name(op),
                          ampc_ew_form_name(form), ampc_dtype_name(dt));
}

/* ------------------------------------------------------------------ kernels */

static ampc_status run_loop(ampc_tensor *out, int n_in, const ampc_tensor *const *ins, ampc_cpu_loop_fn fn,
                            const void *ctx) {
    ampc_cpu_iter it;
    AMPC_TRY(ampc_cpu_iter_init(&it, 1, &out, n_in, ins));
    ampc_cpu_iter_run(&it, fn, ctx);
    return AMPC_OK;
}

/* For a scalar on the left of a form without a scalar-left loop: the form computing b OP a
 * (comparisons mirror, commutative forms are their own mirror); -1 if none. */
static int mirrored_form(ampc_ew_form form) {
    switch (form) {
    case AMPC_EW_FORM_LT: return AMPC_EW_FORM_GT;
    case AMPC_EW_FORM_LE: return AMPC_EW_FORM_GE;
    case AMPC_EW_FORM_GT: return AMPC_EW_FORM_LT;
    case AMPC_EW_FORM_GE: return AMPC_EW_FORM_LE;
    default: return ampc_ew_form_arity(form) == AMPC_EW_BNC ? -1 : (int)form;
    }
}

static ampc_status cpu_elementwise_kernel(ampc_op op, const ampc_elementwise_args *a) {
    const ampc_tensor *const inputs[3] = {a->a, a->b, a->c};
    for (int k = 0; k < 3; k++)
        if (inputs[k] && inputs[k]->device.type != AMPC_CPU)
            return ampc_set_error(AMPC_E_RUNTIME, "%s: the CPU kernel got an input on another device", ampc_op_name(op));
    ampc_ew_form form = (ampc_ew_form)a->form;
    const ampc_tensor *ta = a->a, *tb = ampc_ew_form_is_unary(form) ? NULL : a->b;
    if (!ta && !tb) return ampc_set_error(AMPC_E_RUNTIME, "%s: both operands are scalars", ampc_op_name(op));
    ampc_dtype dt = ta ? ta->dtype : tb->dtype;
    if (!ampc_dtype_is_valid(dt)) return no_loop(op, form, dt);
    ew_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    int zero_division = 0;
    ampc_ew_fill_params(dt, a, &zero_division, 0, &ctx.params);

    ampc_cpu_loop_fn fn = NULL;
    if (ampc_ew_form_is_unary(form)) {
        fn = loops[form][dt][FORM_TENSOR];
        if (!fn) return no_loop(op, form, dt);
        AMPC_TRY(run_loop(a->out, 1, &ta, fn, &ctx));
    } else {
        ampc_scalar sa = a->scalar_a, sb = a->scalar_b;
        /* a one-element tensor operand becomes a scalar too (when the other one runs along the row) */
        if (ta && tb && ampc_numel(a->out) > 1) {
            if (ampc_numel(tb) == 1) {
                sb = element_of(tb);
                tb = NULL;
            } else if (ampc_numel(ta) == 1) {
                sa = element_of(ta);
                ta = NULL;
            }
        }
        if (ta && tb) {
            fn = loops[form][dt][FORM_TENSOR];
            const ampc_tensor *ins[2] = {ta, tb};
            if (!fn) return no_loop(op, form, dt);
            AMPC_TRY(run_loop(a->out, 2, ins, fn, &ctx));
        } else {
            const ampc_tensor *operand;
            if (!tb) { /* x OP s */
                operand = ta;
                ampc_ew_scalar_as_opmath(dt, sb, ctx.scalar);
                fn = loops[form][dt][FORM_SCALAR_B];
            } else { /* s OP x */
                operand = tb;
                ampc_ew_scalar_as_opmath(dt, sa, ctx.scalar);
                fn = loops[form][dt][FORM_SCALAR_A];
                int mirror = mirrored_form(form);
                if (!fn && mirror >= 0) fn = loops[mirror][dt][FORM_SCALAR_B];
            }
            if (!fn) return no_loop(op, form, dt);
            AMPC_TRY(run_loop(a->out, 1, &operand, fn, &ctx));
        }
    }
    if (zero_division) return ampc_set_error(AMPC_E_RUNTIME, "ZeroDivisionError");
    return AMPC_OK;
}

/* ------------------------------------------------------------------ where
 * A select only moves bytes, so its loops exist per item size, not per dtype. */
typedef struct where_ctx {
    _Alignas(8) unsigned char a[8], b[8]; /* scalar operands, already in the output dtype */
} where_ctx;

#define DEF_WHERE(BITS)                                                                                 \
    typedef uint##BITS##_t w##BITS##_t;                                                                 \
    static void where_##BITS(char **d, const int64_t *s, int64_t n, const void *c) {                    \
        (void)c;                                                                                        \
        const int64_t sz = BITS / 8;                                                                    \
        if (s[0] == sz && s[1] == 1 && s[2] == sz && s[3] == sz) {                                      \
            w##BITS##_t *o = (w##BITS##_t *)d[0];                                                       \
            const bool *m = (const bool *)d[1];                                                         \
            const w##BITS##_t *x = (const w##BITS##_t *)d[2], *y = (const w##BITS##_t *)d[3];           \
            for (int64_t k = 0; k < n; k++) o[k] = m[k] ? x[k] : y[k];                                  \
        } else {                                                                                        \
            for (int64_t k = 0; k < n; k++) {                                                           \
                const char *src = *(const bool *)(d[1] + k * s[1]) ? d[2] + k * s[2] : d[3] + k * s[3]; \
                memcpy(d[0] + k * s[0], src, sz);                                                       \
            }                                                                                           \
        }                                                                                               \
    }                                                                                                   \
    /* one operand a scalar: FIXED_FIRST says whether it is the "true" branch */                        \
    static void where_scalar_##BITS(char **d, const int64_t *s, int64_t n, const void *c,               \
                                    bool scalar_is_true_branch, const unsigned char *value) {           \
        (void)c;                                                                                        \
        w##BITS##_t v;                                                                                  \
        memcpy(&v, value, sizeof v);                                                                    \
        for (int64_t k = 0; k < n; k++) {                                                               \
            bool m = *(const bool *)(d[1] + k * s[1]);                                                  \
            w##BITS##_t t;                                                                              \
            memcpy(&t, d[2] + k * s[2], sizeof t);                                                      \
            w##BITS##_t r = (m == scalar_is_true_branch) ? v : t;                                       \
            memcpy(d[0] + k * s[0], &r, sizeof r);                                                      \
        }                                                                                               \
    }                                                                                                   \
    static void where_sa_##BITS(char **d, const int64_t *s, int64_t n, const void *c) {                 \
        where_scalar_##BITS(d, s, n, c, true, ((const where_ctx *)c)->a);                               \
    }                                                                                                   \
    static void where_sb_##BITS(char **d, const int64_t *s, int64_t n, const void *c) {                 \
        where_scalar_##BITS(d, s, n, c, false, ((const where_ctx *)c)->b);                              \
    }                                                                                                   \
    static void where_ss_##BITS(char **d, const int64_t *s, int64_t n, const void *c) {                 \
        const where_ctx *w = (const where_ctx *)c;                                                      \
        w##BITS##_t va, vb;                                                                             \
        memcpy(&va, w->a, sizeof va);                                                                   \
        memcpy(&vb, w->b, sizeof vb);                                                                   \
        for (int64_t k = 0; k < n; k++) {                                                               \
            w##BITS##_t r = *(const bool *)(d[1] + k * s[1]) ? va : vb;                                 \
            memcpy(d[0] + k * s[0], &r, sizeof r);                                                      \
        }                                                                                               \
    }
DEF_WHERE(8)
DEF_WHERE(16)
DEF_WHERE(32)
DEF_WHERE(64)

static ampc_status cpu_where(ampc_op op, const ampc_where_args *a) {
    ampc_tensor *out = a->out;
    const ampc_tensor *cond = a->cond, *x = a->x, *y = a->y;
    if (!cond || cond->dtype != AMPC_BOOL || cond->device.type != AMPC_CPU)
        return ampc_set_error(AMPC_E_RUNTIME, "where: the CPU kernel needs a bool condition tensor on the CPU");
    where_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    if (!x) ampc_ew_scalar_as_element(out->dtype, a->x_scalar, ctx.a);
    if (!y) ampc_ew_scalar_as_element(out->dtype, a->y_scalar, ctx.b);
    int size_index;
    switch (ampc_dtype_itemsize(out->dtype)) {
    case 1: size_index = 0; break;
    case 2: size_index = 1; break;
    case 4: size_index = 2; break;
    default: size_index = 3; break;
    }
    static const ampc_cpu_loop_fn both[4] = {where_8, where_16, where_32, where_64};
    static const ampc_cpu_loop_fn only_b_tensor[4] = {where_sa_8, where_sa_16, where_sa_32, where_sa_64};
    static const ampc_cpu_loop_fn only_a_tensor[4] = {where_sb_8, where_sb_16, where_sb_32, where_sb_64};
    static const ampc_cpu_loop_fn none[4] = {where_ss_8, where_ss_16, where_ss_32, where_ss_64};
    const ampc_tensor *ins[3] = {cond, NULL, NULL};
    if (x && y) {
        ins[1] = x;
        ins[2] = y;
        return run_loop(out, 3, ins, both[size_index], &ctx);
    }
    if (x || y) {
        ins[1] = x ? x : y;
        return run_loop(out, 2, ins, x ? only_a_tensor[size_index] : only_b_tensor[size_index], &ctx);
    }
    return run_loop(out, 1, ins, none[size_index], &ctx);
}

/* ------------------------------------------------------------------ registration */

void ampc_cpu_register_elementwise(void) {
    fill_loop_tables();
    ampc_register_elementwise(AMPC_CPU, cpu_elementwise_kernel);
    ampc_register_where(AMPC_CPU, cpu_where);
}
