/* dispatch.c: the op table's names and kinds, and the per-device kernel registry. */
#include "dispatch.h"

#include <stdio.h>

static const char *const op_names[AMPC_NUM_OPS] = {
#define AMPC_OP(id, name, kind) name,
#include "ops.def"
#undef AMPC_OP
};

static const ampc_op_kind op_kinds[AMPC_NUM_OPS] = {
#define AMPC_OP(id, name, kind) AMPC_KIND_##kind,
#include "ops.def"
#undef AMPC_OP
};

static ampc_kernel_fn kernels[AMPC_NUM_DEVICE_TYPES][AMPC_NUM_OPS];

const char *ampc_op_name(ampc_op op) { return (op >= 0 && op < AMPC_NUM_OPS) ? op_names[op] : "?"; }
ampc_op_kind ampc_op_kind_of(ampc_op op) { return op_kinds[op]; }

void ampc_register_kernel(ampc_device_type dev, ampc_op op, ampc_kernel_fn fn) { kernels[dev][op] = fn; }

ampc_status ampc_dispatch(ampc_op op, const ampc_kernel_args *args) {
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
    ampc_kernel_fn fn = kernels[dev.type][op];
    if (!fn)
        return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "%s: no kernel for device %s", op_names[op],
                              ampc_device_str(dev, d0, sizeof d0));
    return fn(op, args);
}
