/* elementwise_forms.h: the kernel forms of the elementwise ops, generated from ops.def, and the
 * host-side conversion of a call's parameters that both backends share.
 *
 * A form is one loop a kernel can run: every AMPC_EW_OP row is a form of its own name, and the
 * AMPC_EW_FORM rows add the variants a frontend picks from an op's parameters (add with alpha,
 * div's rounding modes, x ** 2, ...). core/elementwise.c chooses the form of each call and
 * puts it in ampc_elementwise_args.form; the CPU loop table (cpu_elementwise.c) and the CUDA
 * functors (cuda_elementwise.cu) are generated from the same rows and call the same formulas
 * (elementwise_math.h), so a form exists on every backend or fails to compile. */
#ifndef AMPC_ELEMENTWISE_FORMS_H
#define AMPC_ELEMENTWISE_FORMS_H

#include "elementwise_math.h"
#include "kernel_args.h"

/* Per storage-dtype suffix of the generated code (f32 ... b8, dtype.h's AMPC_DTYPES):
 * AMPC_EW_MS_<suf> its opmath suffix (the formulas' and parameter structs' names) and
 * AMPC_EW_DT_<suf> its ampc_dtype. AMPC_EW_FORMULA(stem, suf) names the formula a loop calls. */
#define AMPC_EW_MS_f32 f
#define AMPC_EW_MS_f16 f
#define AMPC_EW_MS_bf16 f
#define AMPC_EW_MS_f64 d
#define AMPC_EW_MS_i64 i64
#define AMPC_EW_MS_i32 i32
#define AMPC_EW_MS_u8 u8
#define AMPC_EW_MS_b8 b8
#define AMPC_EW_DT_f32 AMPC_FLOAT32
#define AMPC_EW_DT_f16 AMPC_FLOAT16
#define AMPC_EW_DT_bf16 AMPC_BFLOAT16
#define AMPC_EW_DT_f64 AMPC_FLOAT64
#define AMPC_EW_DT_i64 AMPC_INT64
#define AMPC_EW_DT_i32 AMPC_INT32
#define AMPC_EW_DT_u8 AMPC_UINT8
#define AMPC_EW_DT_b8 AMPC_BOOL
#define AMPC_EW_PARAMS_OF(SUF) AMPC_EW_CAT3_(ampc_ew_params_, AMPC_EW_MS_##SUF, )
#define AMPC_EW_FORMULA(STEM, SUF) AMPC_EW_CAT3_(ampc_ew_##STEM, _, AMPC_EW_MS_##SUF)
#define AMPC_EW_CAT3_(a, b, c) AMPC_EW_CAT3__(a, b, c)
#define AMPC_EW_CAT3__(a, b, c) a##b##c

typedef enum ampc_ew_form {
#define AMPC_EW_OP(id, name, kind, ac, grad, save, rule, tkernel, form, dtypes, stem, bind) AMPC_EW_FORM_##id,
#define AMPC_EW_FORM(id, of, form, dtypes, stem) AMPC_EW_FORM_##id,
#include "ops.def"
#undef AMPC_EW_OP
#undef AMPC_EW_FORM
    AMPC_EW_NUM_FORMS
} ampc_ew_form;

/* The form of op's own row (AMPC_EW_NUM_FORMS for ops without one). */
static inline ampc_ew_form ampc_ew_form_of_op(ampc_op op) {
    switch (op) {
#define AMPC_EW_OP(id, name, kind, ac, grad, save, rule, tkernel, form, dtypes, stem, bind) \
    case AMPC_OP_##id: return AMPC_EW_FORM_##id;
#include "ops.def"
#undef AMPC_EW_OP
    default: return AMPC_EW_NUM_FORMS;
    }
}

/* The form's shape: U unary, UB unary with bool out, B commutative binary, BNC binary, BB binary
 * with bool out. */
typedef enum ampc_ew_arity { AMPC_EW_U, AMPC_EW_UB, AMPC_EW_B, AMPC_EW_BNC, AMPC_EW_BB } ampc_ew_arity;

static inline ampc_ew_arity ampc_ew_form_arity(ampc_ew_form f) {
    static const ampc_ew_arity arity[AMPC_EW_NUM_FORMS] = {
#define AMPC_EW_OP(id, name, kind, ac, grad, save, rule, tkernel, form, dtypes, stem, bind) AMPC_EW_##form,
#define AMPC_EW_FORM(id, of, form, dtypes, stem) AMPC_EW_##form,
#include "ops.def"
#undef AMPC_EW_OP
#undef AMPC_EW_FORM
    };
    return arity[f];
}

static inline bool ampc_ew_form_is_unary(ampc_ew_form f) {
    return ampc_ew_form_arity(f) == AMPC_EW_U || ampc_ew_form_arity(f) == AMPC_EW_UB;
}

/* Integer division and remainder forms, whose loops report a zero divisor. */
static inline bool ampc_ew_form_checks_divisor(ampc_ew_form f) {
    return f == AMPC_EW_FORM_DIV_TRUNC || f == AMPC_EW_FORM_DIV_FLOOR || f == AMPC_EW_FORM_REMAINDER ||
           f == AMPC_EW_FORM_FMOD;
}

/* The form's name for messages: the op's ("add") or the variant's ID ("ADD_ALPHA"). */
static inline const char *ampc_ew_form_name(ampc_ew_form f) {
    static const char *const names[AMPC_EW_NUM_FORMS] = {
#define AMPC_EW_OP(id, name, kind, ac, grad, save, rule, tkernel, form, dtypes, stem, bind) name,
#define AMPC_EW_FORM(id, of, form, dtypes, stem) #id,
#include "ops.def"
#undef AMPC_EW_OP
#undef AMPC_EW_FORM
    };
    return (unsigned)f < AMPC_EW_NUM_FORMS ? names[f] : "?";
}

/* A call's form parameters as ampc_ew_params_<s> of compute dtype `dt`, into dst (at least
 * sizeof(ampc_ew_params_d) bytes), with where an integer division by zero is reported: the
 * CPU's flag (code 0) or the device's deferred error word and code (NULL: nowhere). */
static inline void ampc_ew_fill_params(ampc_dtype dt, const ampc_elementwise_args *a, int *error_word, int error_code,
                                       void *dst) {
    unsigned char p0[8] = {0}, p1[8] = {0};
    ampc_ew_scalar_as_opmath(dt, a->p0, p0);
    ampc_ew_scalar_as_opmath(dt, a->p1, p1);
#define AMPC_EW_FILL(T, S)                      \
    {                                           \
        ampc_ew_params_##S p;                   \
        memset(&p, 0, sizeof p);                \
        memcpy(&p.p0, p0, sizeof p.p0);         \
        memcpy(&p.p1, p1, sizeof p.p1);         \
        p.exponent = a->exponent;               \
        p.error_word = error_word;              \
        p.error_code = error_code;              \
        memcpy(dst, &p, sizeof p);              \
        break;                                  \
    }
    switch (dt) {
    case AMPC_FLOAT32: case AMPC_FLOAT16: case AMPC_BFLOAT16: AMPC_EW_FILL(float, f)
    case AMPC_FLOAT64: AMPC_EW_FILL(double, d)
    case AMPC_INT64: AMPC_EW_FILL(int64_t, i64)
    case AMPC_INT32: AMPC_EW_FILL(int32_t, i32)
    case AMPC_UINT8: AMPC_EW_FILL(uint8_t, u8)
    default: AMPC_EW_FILL(bool, b8)
    }
#undef AMPC_EW_FILL
}

/* The stored form of a params struct, large enough for every ampc_ew_params_<s>. */
typedef union ampc_ew_params_any {
    ampc_ew_params_f f;
    ampc_ew_params_d d;
    ampc_ew_params_i64 i64;
    ampc_ew_params_i32 i32;
    ampc_ew_params_u8 u8;
    ampc_ew_params_b8 b8;
} ampc_ew_params_any;

#endif
