/* nn_common.c: helpers shared by the nn frontends (nn_common.h). */
#include "nn_common.h"

#include "autograd.h"
#include "kernel_args.h"

#include <stdio.h>

const char *nn_shape(const ampc_tensor *t, char *buf, size_t cap) { return ampc_shape_str(t->ndim, t->shape, buf, cap); }

const char *nn_type_name(const ampc_tensor *t, char *buf, size_t cap) {
    static const char *const names[AMPC_NUM_DTYPES] = {"FloatTensor", "HalfTensor", "BFloat16Tensor", "DoubleTensor",
                                                       "LongTensor",  "IntTensor",  "ByteTensor",     "BoolTensor"};
    const char *name = (t->dtype >= 0 && t->dtype < AMPC_NUM_DTYPES) ? names[t->dtype] : "Tensor";
    snprintf(buf, cap, "torch.%s%s", t->device.type == AMPC_CPU ? "" : "cuda.", name);
    return buf;
}

ampc_status nn_check_floating(const char *op, const ampc_tensor *t, const char *what) {
    if (ampc_dtype_is_floating(t->dtype)) return AMPC_OK;
    return ampc_set_error(AMPC_E_RUNTIME, "%s: expected %s to be a floating point tensor, but got %s", op, what,
                          ampc_dtype_name(t->dtype));
}

ampc_status nn_check_device(const char *op, int n, const ampc_tensor *const *ts) {
    const ampc_tensor *first = NULL;
    for (int i = 0; i < n; i++) {
        if (!ts[i]) continue;
        if (!first) {
            first = ts[i];
            continue;
        }
        if (!ampc_device_eq(first->device, ts[i]->device)) {
            char a[32], b[32];
            return ampc_set_error(AMPC_E_RUNTIME,
                                  "Expected all tensors to be on the same device, but found at least two devices, "
                                  "%s and %s! (in %s)",
                                  ampc_device_str(first->device, a, sizeof a),
                                  ampc_device_str(ts[i]->device, b, sizeof b), op);
        }
    }
    return AMPC_OK;
}

ampc_status nn_contig(const ampc_tensor *t, ampc_tensor **out) {
    *out = NULL;
    if (!t) return AMPC_OK;
    *out = ampc_contiguous(t);
    return *out ? AMPC_OK : ampc_last_status();
}

void nn_release(int n, ampc_tensor **ts) {
    for (int i = 0; i < n; i++) {
        ampc_tensor_decref(ts[i]);
        ts[i] = NULL;
    }
}

ampc_status nn_gemm_into(ampc_tensor *c, const ampc_tensor *a, const ampc_tensor *b, const ampc_tensor *bias,
                         double beta, double alpha) {
    if (ampc_numel(c) == 0) return AMPC_OK;
    ampc_gemm_args args = {.out = c, .a = a, .b = b, .c = bias, .alpha = alpha, .beta = bias ? beta : 0.0};
    return ampc_dispatch_gemm(AMPC_OP_GEMM, &args);
}

ampc_tensor *nn_gemm(const ampc_tensor *a, const ampc_tensor *b, const ampc_tensor *bias, double beta, double alpha) {
    int nd = a->ndim;
    int64_t shape[AMPC_MAX_DIMS];
    memcpy(shape, a->shape, sizeof(int64_t) * (size_t)nd);
    shape[nd - 1] = b->shape[nd - 1];
    ampc_tensor *c = ampc_empty(nd, shape, a->dtype, a->device);
    if (c && nn_gemm_into(c, a, b, bias, beta, alpha) != AMPC_OK) {
        ampc_tensor_decref(c);
        return NULL;
    }
    return c;
}

ampc_tensor *nn_reshape_view(const ampc_tensor *t, int ndim, const int64_t *shape) {
    return ampc_tensor_from_storage(t->storage, t->offset, ndim, shape, NULL, t->dtype);
}

ampc_tensor *nn_sum_to(const ampc_tensor *grad, int ndim, const int64_t *shape) {
    int lead = grad->ndim - ndim;
    int64_t dims[AMPC_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < grad->ndim; i++)
        if (i < lead || (shape[i - lead] == 1 && grad->shape[i] != 1)) dims[n++] = i;
    if (n == 0) {
        ampc_tensor_incref((ampc_tensor *)grad);
        return (ampc_tensor *)grad;
    }
    ampc_tensor *s = ampc_reduce(AMPC_OP_SUM, grad, n, dims, true, AMPC_DTYPE_UNDEFINED);
    if (!s) return NULL;
    ampc_tensor *r = ampc_reshape(s, ndim, shape);
    ampc_tensor_decref(s);
    return r;
}

ampc_status nn_first_order_only(const ampc_node *node) {
    if (!ampc_grad_enabled()) return AMPC_OK;
    return ampc_set_error(AMPC_E_NOT_IMPLEMENTED,
                          "%s: double backward (create_graph=True) through this op is not supported yet",
                          node->rule && node->rule->name ? node->rule->name : "nn op");
}

ampc_status nn_rule_saved(ampc_node *node, int cap, const ampc_tensor **saved) {
    AMPC_TRY(nn_first_order_only(node));
    for (int i = 0; i < cap; i++) saved[i] = NULL;
    for (int i = 0; i < node->n_saved && i < cap; i++)
        if (!(saved[i] = ampc_node_saved(node, i))) return ampc_last_status();
    return AMPC_OK;
}
