/* nn_autograd_shim.c: TEMPORARY weak stand-ins for the autograd entry points the nn frontends
 * call, so the tree links before autograd.c exists. The engine's strong definitions replace
 * them at link time; delete this file once autograd.c is in the tree. */
#include "autograd.h"

__attribute__((weak)) bool ampc_any_requires_grad(int n, const ampc_tensor *const *inputs) {
    (void)n, (void)inputs;
    return false;
}

__attribute__((weak)) ampc_node *ampc_autograd_record(const ampc_grad_rule *rule, int n_inputs,
                                                      const ampc_tensor *const *inputs, int n_outputs,
                                                      ampc_tensor *const *outputs, int n_saved,
                                                      const ampc_tensor *const *saved, const ampc_node_attrs *attrs) {
    (void)rule, (void)n_inputs, (void)inputs, (void)n_outputs, (void)outputs, (void)n_saved, (void)saved, (void)attrs;
    ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "autograd is not built yet");
    return NULL;
}

__attribute__((weak)) const ampc_tensor *ampc_node_saved(ampc_node *node, int i) {
    return node->saved[i].tensor;
}
