/* kernel_args.h: typed, named kernel arguments and typed kernels, generated from the AMPC_ARGS
 * schemas of ops.def.
 *
 * For a schema
 *     AMPC_ARGS(layer_norm, IN(x) IN(weight) IN(bias) OUT(y) OUT(mean) OUT(rstd) VAL(double, eps))
 * this header defines
 *     typedef struct ampc_layer_norm_args {
 *         const ampc_tensor *x, *weight, *bias; ampc_tensor *y, *mean, *rstd; double eps;
 *     } ampc_layer_norm_args;
 *     typedef ampc_status (*ampc_layer_norm_kernel)(ampc_op op, const ampc_layer_norm_args *a);
 *     ampc_status ampc_dispatch_layer_norm(ampc_op op, const ampc_layer_norm_args *p);   (frontends)
 *     void ampc_register_layer_norm(ampc_device_type dev, ampc_layer_norm_kernel fn);   (backends)
 * A backend registers one kernel per schema: ampc_register_<schema> installs fn for every ops.def
 * row of that schema with BACKENDS ALL, and the kernel tells the rows apart by `op`. The
 * dispatcher keeps each kernel as its own function-pointer type (a union over the schemas) and
 * calls it through a switch on the row's schema, so no function pointer is ever cast.
 * ampc_dispatch_<schema> also hands the dispatcher the struct's IN, OUT and LIST tensors (in
 * schema order, an ampc_dispatch_tensors) so it can pick the device and check that every tensor
 * is on it, and the struct's schema, which it checks against the op's row: a frontend that fills
 * the wrong struct fails with a message naming both, not with garbage in a kernel.
 *
 * Field kinds: IN(name) a const input tensor (NULL: optional and absent), OUT(name) an output
 * tensor (NULL: not wanted), VAL(type, name) a value, ARR(type, name, n) a fixed array,
 * LIST(name) a tensor list (`ampc_tensor *const *name; int name##_n`). */
#ifndef AMPC_KERNEL_ARGS_H
#define AMPC_KERNEL_ARGS_H

#include <string.h>

#include "dispatch.h"
#include "optim.h" /* the fused optimizers' options (schema fused_optim) */

#ifdef __cplusplus
extern "C" {
#endif

/* one enum value per schema (ampc_schema_<name>), `bag` and `none` included */
typedef enum ampc_schema {
    ampc_schema_bag,  /* no typed struct (what ampc_op_schema answers for an invalid op) */
    ampc_schema_none, /* a COMPOSITE row: no kernel */
#define AMPC_ARGS(schema, fields) ampc_schema_##schema,
#include "ops.def"
#undef AMPC_ARGS
    AMPC_NUM_SCHEMAS
} ampc_schema;

/* ---- value types the schemas use */
/* One indexed source dim of the gather and scatter forms (index.c): its size and stride
 * (elements), and its number (only to name it in errors). */
typedef struct ampc_index_dim {
    int64_t size, stride;
    int64_t dim;
} ampc_index_dim;
#define AMPC_MAX_INDEX_TENSORS 5 /* index tensors per gather/scatter call: index0..index4 */

/* ---- the structs */
#define IN(n) const ampc_tensor *n;
#define OUT(n) ampc_tensor *n;
#define VAL(type, n) type n;
#define ARR(type, n, len) type n[len];
#define LIST(n) ampc_tensor *const *n; int n##_n;
#define AMPC_ARGS(schema, fields) typedef struct ampc_##schema##_args { fields } ampc_##schema##_args;
#include "ops.def"
#include "kernel_args_end.h"

/* ---- every schema fits the dispatcher's tensor slots: a build-time check */
#ifdef __cplusplus
#define AMPC_SCHEMA_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define AMPC_SCHEMA_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif
#define IN(n) +1
#define OUT(n)
#define VAL(type, n)
#define ARR(type, n, len)
#define LIST(n)
#define AMPC_ARGS(schema, fields) \
    AMPC_SCHEMA_ASSERT(0 fields <= AMPC_MAX_KERNEL_TENSORS, "schema " #schema ": more IN fields than kernel slots");
#include "ops.def"
#include "kernel_args_end.h"
#define IN(n)
#define OUT(n) +1
#define VAL(type, n)
#define ARR(type, n, len)
#define LIST(n)
#define AMPC_ARGS(schema, fields) \
    AMPC_SCHEMA_ASSERT(0 fields <= AMPC_MAX_KERNEL_TENSORS, "schema " #schema ": more OUT fields than kernel slots");
#include "ops.def"
#include "kernel_args_end.h"

/* ---- the kernel types and their registration (dispatch.c defines the registrations) */
#define AMPC_ARGS(schema, fields)                                                                        \
    typedef ampc_status (*ampc_##schema##_kernel)(ampc_op op, const ampc_##schema##_args *a);            \
    void ampc_register_##schema(ampc_device_type dev, ampc_##schema##_kernel fn);
#include "ops.def"
#undef AMPC_ARGS

/* ---- packing for the dispatcher */
/* Runs op's kernel for the device of its first tensor (outputs first) with `typed`, an
 * ampc_<schema>_args. Fails naming the op when `schema` is not its row's, and naming the op and
 * device when that device has no kernel for it. */
ampc_status ampc_dispatch_typed(ampc_op op, ampc_schema schema, const void *typed, const ampc_dispatch_tensors *t);

#define IN(n) t.in[t.n_in++] = p->n;
#define OUT(n) t.out[t.n_out++] = p->n;
#define VAL(type, n)
#define ARR(type, n, len)
#define LIST(n) t.list = p->n, t.n_list = p->n##_n;
#define AMPC_ARGS(schema, fields)                                                                    \
    static inline ampc_status ampc_dispatch_##schema(ampc_op op, const ampc_##schema##_args *p) {  \
        ampc_dispatch_tensors t;                                                                   \
        memset(&t, 0, sizeof t);                                                                   \
        fields return ampc_dispatch_typed(op, ampc_schema_##schema, p, &t);                         \
    }
#include "ops.def"
#include "kernel_args_end.h"

/* The schema of an op's row, and its name ("layer_norm", "bag"). */
ampc_schema ampc_op_schema(ampc_op op);
const char *ampc_schema_name(ampc_schema schema);

#ifdef __cplusplus
}
#endif
#endif
