/* nn_pdist.c: torch.pdist / nn.functional.pdist, the p-norm distances between the rows of an
 * (N, M) matrix, the upper triangle only (N (N - 1) / 2 values, pair (i, j), i < j, in row-major
 * order), and its gradient rule (torch's _pdist_backward; first order only, as torch). Kernels:
 * cpu/cpu_nn_pdist.c, cuda/cuda_nn_pdist.cu. */
#include <math.h>

#include "autocast.h"
#include "autograd.h"
#include "nn_common.h"
#include "nn_loss_ops.h"

static ampc_status pdist_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs);
static const ampc_grad_rule pdist_rule = {"PdistBackward0", pdist_rule_fn};

static ampc_status pdist_check(const ampc_tensor *x, double p) {
    if (x->ndim != 2) return ampc_set_error(AMPC_E_RUNTIME, "pdist only supports 2D tensors, got: %dD", x->ndim);
    if (!ampc_dtype_is_floating(x->dtype))
        return ampc_set_error(AMPC_E_RUNTIME, "pdist only supports floating-point dtypes");
    if (x->dtype != AMPC_FLOAT32 && x->dtype != AMPC_FLOAT64)
        return ampc_set_error(AMPC_E_RUNTIME, "\"pdist\" not implemented for '%s'", ampc_dtype_torch_name(x->dtype));
    if (!(p >= 0)) return ampc_set_error(AMPC_E_RUNTIME, "pdist only supports non-negative p values");
    return AMPC_OK;
}

ampc_tensor *ampc_pdist(const ampc_tensor *input, double p) {
    ampc_autocast_scope ac;
    int acr = ampc_autocast_enter(AMPC_OP_PDIST, 1, (const ampc_tensor *[]){input}, false, &ac);
    if (acr) return acr < 0 ? NULL : ampc_autocast_exit(&ac, ampc_pdist(ac.t[0], p));
    if (pdist_check(input, p) != AMPC_OK) return NULL;
    int64_t n = input->shape[0], pairs = n > 1 ? n * (n - 1) / 2 : 0;
    ampc_tensor *x = ampc_contiguous(input);
    ampc_tensor *out = x ? ampc_empty(1, &pairs, input->dtype, input->device) : NULL;
    ampc_status st = out ? AMPC_OK : ampc_last_status();
    if (st == AMPC_OK && pairs > 0) {
        if (input->shape[1] == 0) {
            st = ampc_zero_(out);
        } else {
            ampc_pdist_args a = {.out = out, .input = x, .p = p};
            st = ampc_dispatch_pdist(AMPC_OP_PDIST, &a);
        }
    }
    if (st == AMPC_OK && ampc_any_requires_grad(1, &input)) {
        ampc_node_attrs attrs;
        memset(&attrs, 0, sizeof attrs);
        attrs.scalars[0] = ampc_scalar_float(p);
        ampc_tensor *dist = ampc_alias(out); /* the rule's copy of the output (not tied to its own node) */
        if (!dist || !ampc_autograd_record(&pdist_rule, 1, &input, 1, &out, 2, (const ampc_tensor *[]){x, dist},
                                           &attrs))
            st = ampc_last_status();
        ampc_tensor_decref(dist);
    }
    return nn_finish(st, out, 1, (ampc_tensor *[]){x});
}

ampc_tensor *ampc_pdist_backward(const ampc_tensor *grad, const ampc_tensor *input, const ampc_tensor *dist,
                                 double p) {
    if (pdist_check(input, p) != AMPC_OK) return NULL;
    if (ampc_numel(grad) != ampc_numel(dist)) {
        ampc_set_error(AMPC_E_RUNTIME, "_pdist_backward: expected a grad of %lld elements, got %lld",
                       (long long)ampc_numel(dist), (long long)ampc_numel(grad));
        return NULL;
    }
    ampc_tensor *x = ampc_contiguous(input), *d = x ? ampc_contiguous(dist) : NULL;
    ampc_tensor *gt = d ? ampc_to(grad, input->dtype, input->device, false) : NULL;
    ampc_tensor *g = gt ? ampc_contiguous(gt) : NULL;
    ampc_tensor *gx = g ? ampc_zeros(2, input->shape, input->dtype, input->device) : NULL;
    ampc_status st = gx ? AMPC_OK : ampc_last_status();
    if (st == AMPC_OK && ampc_numel(dist) > 0 && input->shape[1] > 0 && p != 0) {
        ampc_pdist_backward_args a = {.grad_input = gx, .grad = g, .input = x, .dist = d, .p = p};
        st = ampc_dispatch_pdist_backward(AMPC_OP_PDIST_BACKWARD, &a);
    }
    return nn_finish(st, gx, 4, (ampc_tensor *[]){x, d, gt, g});
}

static ampc_status pdist_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs) {
    const ampc_tensor *s[2];
    AMPC_TRY(nn_rule_saved(node, 2, s));
    if (!grads[0]) return AMPC_OK;
    grad_inputs[0] = ampc_pdist_backward(grads[0], s[0], s[1], ampc_scalar_to_double(node->attrs.scalars[0]));
    return grad_inputs[0] ? AMPC_OK : ampc_last_status();
}
