/* kernel_args.h: typed, named kernel arguments, generated from the AMPC_ARGS schemas of ops.def.
 *
 * For a schema
 *     AMPC_ARGS(layer_norm, IN(x) IN(weight) IN(bias) OUT(y) OUT(mean) OUT(rstd) VAL(double, eps))
 * this header defines
 *     typedef struct ampc_layer_norm_args {
 *         const ampc_tensor *x, *weight, *bias; ampc_tensor *y, *mean, *rstd; double eps;
 *     } ampc_layer_norm_args;
 *     ampc_status ampc_dispatch_layer_norm(ampc_op op, const ampc_layer_norm_args *p);   (frontends)
 *     const ampc_layer_norm_args *ampc_args_layer_norm(const ampc_kernel_args *a);       (kernels)
 * The dispatcher still receives an ampc_kernel_args: its tensor slots are filled from the IN and
 * OUT fields (in schema order) so it can pick the device and check that every tensor is on it;
 * the typed struct rides in `typed`, tagged with its schema. A kernel reads only the typed
 * struct, by name. ampc_dispatch checks that the struct's schema is the op row's, so a frontend
 * that fills the wrong struct fails with a message naming both, not with garbage in a kernel.
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

/* ---- packing for the dispatcher, and the kernels' typed view */
ampc_status ampc_dispatch_typed(ampc_op op, ampc_schema schema, const void *typed, ampc_kernel_args *bag);
/* The typed struct of a, after checking it is of `schema` (NULL with the error set otherwise). */
const void *ampc_kernel_args_typed(const ampc_kernel_args *a, ampc_schema schema, const char *schema_name);

#define IN(n) a.in[a.n_in++] = p->n;
#define OUT(n) a.out[a.n_out++] = p->n;
#define VAL(type, n)
#define ARR(type, n, len)
#define LIST(n) a.list = p->n, a.n_list = p->n##_n;
#define AMPC_ARGS(schema, fields)                                                                    \
    static inline ampc_status ampc_dispatch_##schema(ampc_op op, const ampc_##schema##_args *p) {  \
        ampc_kernel_args a;                                                                        \
        memset(&a, 0, sizeof a);                                                                   \
        fields return ampc_dispatch_typed(op, ampc_schema_##schema, p, &a);                         \
    }                                                                                              \
    static inline const ampc_##schema##_args *ampc_args_##schema(const ampc_kernel_args *a) {      \
        return (const ampc_##schema##_args *)ampc_kernel_args_typed(a, ampc_schema_##schema, #schema); \
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
