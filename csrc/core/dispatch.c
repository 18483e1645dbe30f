/* dispatch.c: the op table's columns as arrays, the per-device kernel registry (one typed kernel
 * per (device type, op), registered per schema), and the dispatcher (with its schema check for
 * typed arguments). */
#include "dispatch.h"

#include <stdio.h>
#include <string.h>

#include "kernel_args.h"

/* Column values of ops.def, as this file reads them. */
#define AC_NONE AMPC_AC_POLICY_NONE
#define AC_LOWER AMPC_AC_POLICY_LOWER
#define AC_FP32 AMPC_AC_POLICY_FP32
#define AC_FP32_DTYPE AMPC_AC_POLICY_FP32_DTYPE
#define AC_PROMOTE AMPC_AC_POLICY_PROMOTE
#define AC_BANNED AMPC_AC_POLICY_BANNED
#define BACKENDS_ALL true
#define BACKENDS_NONE false
/* The GRAD column as {node name, kind} */
#define GRAD(node) {node, AMPC_GRAD_RULE}
#define GRAD_BY(node, op) {node, AMPC_GRAD_RULE}
#define GRAD_LINEAR(node) {node, AMPC_GRAD_RULE}
#define GRAD_COMPOSED {NULL, AMPC_GRAD_COMPOSED}
#define NOGRAD {NULL, AMPC_GRAD_NONE}
#define INTERNAL {NULL, AMPC_GRAD_INTERNAL}

static const char *const op_names[AMPC_NUM_OPS] = {
#define AMPC_OP(id, name, kind, schema, backends, ac, ...) name,
#include "ops.def"
#undef AMPC_OP
};

static const ampc_op_kind op_kinds[AMPC_NUM_OPS] = {
#define AMPC_OP(id, name, kind, schema, backends, ac, ...) AMPC_KIND_##kind,
#include "ops.def"
#undef AMPC_OP
};

static const ampc_schema op_schemas[AMPC_NUM_OPS] = {
#define AMPC_OP(id, name, kind, schema, backends, ac, ...) ampc_schema_##schema,
#include "ops.def"
#undef AMPC_OP
};

static const bool op_has_kernels[AMPC_NUM_OPS] = {
#define AMPC_OP(id, name, kind, schema, backends, ac, ...) BACKENDS_##backends,
#include "ops.def"
#undef AMPC_OP
};

static const ampc_autocast_policy op_autocast[AMPC_NUM_OPS] = {
#define AMPC_OP(id, name, kind, schema, backends, ac, ...) ac,
#include "ops.def"
#undef AMPC_OP
};

typedef struct op_grad {
    const char *node;
    ampc_grad_kind kind;
} op_grad;
static const op_grad op_grads[AMPC_NUM_OPS] = {
#define AMPC_OP(id, name, kind, schema, backends, ac, ...) __VA_ARGS__,
#include "ops.def"
#undef AMPC_OP
};

static const char *const schema_names[AMPC_NUM_SCHEMAS] = {
    "bag", "none",
#define AMPC_ARGS(schema, fields) #schema,
#include "ops.def"
#undef AMPC_ARGS
};

static const char *const kind_names[] = {"UNARY", "BINARY", "COMPARE", "TERNARY", "COPY", "FILL", "REDUCE",
                                         "SCAN", "GEMM", "INDEX", "RANDOM", "AMP", "NN", "MULTI_TENSOR",
                                         "OPTIM", "SORT", "COMPOSITE"};
_Static_assert(sizeof kind_names / sizeof kind_names[0] == AMPC_KIND_COMPOSITE + 1, "kind_names: one per ampc_op_kind");

/* A registered kernel, kept as the function-pointer type of its op's schema: call_kernel reads
 * the member of the row's schema, the one ampc_register_<schema> wrote. */
typedef union ampc_kernel {
#define AMPC_ARGS(schema, fields) ampc_##schema##_kernel schema;
#include "ops.def"
#undef AMPC_ARGS
} ampc_kernel;

static ampc_kernel kernels[AMPC_NUM_DEVICE_TYPES][AMPC_NUM_OPS];
static bool registered[AMPC_NUM_DEVICE_TYPES][AMPC_NUM_OPS];
static int64_t dispatch_counts[AMPC_NUM_DEVICE_TYPES][AMPC_NUM_OPS];

static bool valid_op(int op) { return op >= 0 && op < AMPC_NUM_OPS; }

const char *ampc_op_name(ampc_op op) { return valid_op(op) ? op_names[op] : "?"; }
ampc_op_kind ampc_op_kind_of(ampc_op op) { return op_kinds[op]; }
const char *ampc_op_kind_name(ampc_op_kind kind) {
    return kind >= 0 && kind <= AMPC_KIND_COMPOSITE ? kind_names[kind] : "?";
}
bool ampc_op_is_elementwise(ampc_op op) {
    if (!valid_op(op)) return false;
    ampc_op_kind k = op_kinds[op];
    return k == AMPC_KIND_UNARY || k == AMPC_KIND_BINARY || k == AMPC_KIND_COMPARE || k == AMPC_KIND_TERNARY;
}
bool ampc_op_has_kernels(ampc_op op) { return valid_op(op) && op_has_kernels[op]; }
ampc_autocast_policy ampc_op_autocast_policy(ampc_op op) { return valid_op(op) ? op_autocast[op] : AMPC_AC_POLICY_NONE; }
ampc_grad_kind ampc_op_grad_kind(ampc_op op) { return valid_op(op) ? op_grads[op].kind : AMPC_GRAD_NONE; }
const char *ampc_op_grad_name(ampc_op op) { return valid_op(op) ? op_grads[op].node : NULL; }
ampc_schema ampc_op_schema(ampc_op op) { return valid_op(op) ? op_schemas[op] : ampc_schema_bag; }
const char *ampc_schema_name(ampc_schema schema) {
    return schema >= 0 && schema < AMPC_NUM_SCHEMAS ? schema_names[schema] : "?";
}

int ampc_op_find(const char *name) {
    for (int op = 0; op < AMPC_NUM_OPS; op++)
        if (strcmp(op_names[op], name) == 0) return op;
    return -1;
}

bool ampc_op_has_kernel(ampc_device_type dev, ampc_op op) {
    return dev >= 0 && dev < AMPC_NUM_DEVICE_TYPES && valid_op(op) && registered[dev][op];
}

int64_t ampc_op_dispatch_count(ampc_device_type dev, ampc_op op) {
    if (dev < 0 || dev >= AMPC_NUM_DEVICE_TYPES || !valid_op(op)) return 0;
    return __atomic_load_n(&dispatch_counts[dev][op], __ATOMIC_RELAXED);
}

static ampc_dispatch_observer observer_fn;
static void *observer_ctx;
static _Thread_local bool observing; /* inside the observer: its own kernels are not observed */

void ampc_set_dispatch_observer(ampc_dispatch_observer fn, void *ctx) {
    __atomic_store_n(&observer_ctx, ctx, __ATOMIC_RELAXED);
    __atomic_store_n(&observer_fn, fn, __ATOMIC_RELEASE);
}

static ampc_status observed(ampc_op op, const ampc_dispatch_tensors *args, ampc_status st) {
    ampc_dispatch_observer fn = __atomic_load_n(&observer_fn, __ATOMIC_ACQUIRE);
    if (!fn || st != AMPC_OK || observing) return st;
    observing = true;
    fn(op, args, __atomic_load_n(&observer_ctx, __ATOMIC_RELAXED));
    observing = false;
    return st;
}

/* ampc_register_<schema>: fn serves every row of the schema that has kernels (BACKENDS ALL). */
#define AMPC_ARGS(schema, fields)                                                          \
    void ampc_register_##schema(ampc_device_type dev, ampc_##schema##_kernel fn) {         \
        for (int op = 0; op < AMPC_NUM_OPS; op++)                                          \
            if (op_schemas[op] == ampc_schema_##schema && op_has_kernels[op]) {            \
                kernels[dev][op].schema = fn;                                              \
                registered[dev][op] = fn != NULL;                                          \
            }                                                                              \
    }
#include "ops.def"
#undef AMPC_ARGS

/* Calls k with its real type: the member of the op row's schema. */
static ampc_status call_kernel(ampc_op op, ampc_kernel k, const void *typed) {
    switch (op_schemas[op]) {
#define AMPC_ARGS(schema, fields) \
    case ampc_schema_##schema: return k.schema(op, (const ampc_##schema##_args *)typed);
#include "ops.def"
#undef AMPC_ARGS
    default: return ampc_set_error(AMPC_E_RUNTIME, "%s: its row has no kernel schema (ops.def)", op_names[op]);
    }
}

ampc_status ampc_dispatch_typed(ampc_op op, ampc_schema schema, const void *typed, const ampc_dispatch_tensors *args) {
    if (!valid_op(op)) return ampc_set_error(AMPC_E_VALUE, "dispatch: op %d is not in the op table", (int)op);
    if (!op_has_kernels[op])
        return ampc_set_error(AMPC_E_RUNTIME, "%s: a composed op has no kernel of its own (ops.def)", op_names[op]);
    if (schema != op_schemas[op])
        return ampc_set_error(AMPC_E_RUNTIME, "%s: called with arguments of schema '%s', but its ops.def row says '%s'",
                              op_names[op], ampc_schema_name(schema), schema_names[op_schemas[op]]);
    /* The device of the first tensor present: an nn backward may leave out[0] NULL (no grad
     * wanted for the input) and still compute grad weight. */
    const ampc_tensor *first = NULL;
    for (int i = 0; i < args->n_out && !first; i++) first = args->out[i];
    for (int i = 0; i < args->n_in && !first; i++) first = args->in[i];
    if (!first && args->n_list) first = args->list[0];
    if (!first) return ampc_set_error(AMPC_E_RUNTIME, "%s: called without any tensor", op_names[op]);
    ampc_device dev = first->device;
    char d0[32], d1[32];
    for (int i = 0; i < args->n_in; i++)
        if (args->in[i] && !ampc_device_eq(args->in[i]->device, dev) && op != AMPC_OP_COPY)
            return ampc_set_error(AMPC_E_RUNTIME,
                                  "Expected all tensors to be on the same device, but found at least two "
                                  "devices, %s and %s! (in %s)",
                                  ampc_device_str(dev, d0, sizeof d0),
                                  ampc_device_str(args->in[i]->device, d1, sizeof d1), op_names[op]);
    /* Cross-device copies run on the non-CPU side's backend. */
    if (op == AMPC_OP_COPY && dev.type == AMPC_CPU) dev = args->in[0]->device;
    if (!registered[dev.type][op])
        return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "%s: no kernel for device %s", op_names[op],
                              ampc_device_str(dev, d0, sizeof d0));
    __atomic_fetch_add(&dispatch_counts[dev.type][op], 1, __ATOMIC_RELAXED);
    return observed(op, args, call_kernel(op, kernels[dev.type][op], typed));
}
