/* nn_loss_ctc.c: the connectionist temporal classification loss (torch's _ctc_loss: the
 * per-sample negative log-likelihood and its log-space alpha lattice) and its gradient rule.
 * The reduction (mean over target lengths, sum), zero_infinity's where and the unbatched form
 * are ampc.nn.functional.ctc_loss's, composed over this op as ATen's ctc_loss composes them.
 *
 * The lengths arrive as host int64 arrays (torch reads them on the host too: they size the
 * lattice); the frontend checks them, computes where each sample's labels start in targets
 * (padded (N, S): b * S; concatenated: the running sum of target_lengths) and hands the kernels
 * all of it as int64 tensors on the log_probs' device. Kernels: cpu/cpu_nn_loss_ctc.c,
 * cuda/cuda_nn_loss_ctc.cu. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "autocast.h"
#include "autograd.h"
#include "nn_common.h"
#include "nn_loss_ops.h"

static ampc_status ctc_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs);
static const ampc_grad_rule ctc_rule = {"CtcLossBackward0", ctc_rule_fn};

/* A host int64 array as a tensor on dev. */
static ampc_tensor *host_longs(const int64_t *v, int64_t n, ampc_device dev) {
    ampc_tensor *h = ampc_empty(1, &n, AMPC_INT64, ampc_cpu_device());
    if (!h) return NULL;
    if (n) memcpy(ampc_data_ptr(h), v, sizeof(int64_t) * (size_t)n);
    ampc_tensor *d = ampc_to(h, AMPC_INT64, dev, false);
    ampc_tensor_decref(h);
    return d;
}

/* The checks of torch's ctc_loss_cpu / ctc_loss_gpu_template, with their messages. */
static ampc_status ctc_check(const ampc_tensor *lp, const ampc_tensor *targets, const int64_t *il, int64_t n_il,
                             const int64_t *tl, int64_t n_tl, int64_t blank, int64_t *offsets, int64_t *max_target) {
    char buf[96];
    if (lp->ndim != 3)
        return ampc_set_error(AMPC_E_RUNTIME, "ctc_loss: expected log_probs of 3 dims (T, N, C), got %s",
                              nn_shape(lp, buf, sizeof buf));
    if (lp->dtype != AMPC_FLOAT32 && lp->dtype != AMPC_FLOAT64)
        return ampc_set_error(AMPC_E_RUNTIME, "\"ctc_loss_%s\" not implemented for '%s'",
                              lp->device.type == AMPC_CPU ? "cpu" : "cuda", ampc_dtype_torch_name(lp->dtype));
    if (ampc_dtype_is_floating(targets->dtype) || targets->dtype == AMPC_BOOL)
        return ampc_set_error(AMPC_E_RUNTIME, "ctc_loss: expected integral targets, got %s",
                              ampc_dtype_torch_name(targets->dtype));
    int64_t t_max = lp->shape[0], n = lp->shape[1], c = lp->shape[2];
    if (blank < 0 || blank >= c) return ampc_set_error(AMPC_E_RUNTIME, "blank must be in label range");
    if (n_il != n) return ampc_set_error(AMPC_E_RUNTIME, "input_lengths must be of size batch_size");
    if (n_tl != n) return ampc_set_error(AMPC_E_RUNTIME, "target_lengths must be of size batch_size");
    int64_t pos = 0;
    *max_target = 0;
    for (int64_t b = 0; b < n; b++) {
        if (tl[b] < 0)
            return ampc_set_error(AMPC_E_RUNTIME, "ctc_loss: target_lengths must be non-negative, got %lld at %lld",
                                  (long long)tl[b], (long long)b);
        if (il[b] < 0)
            return ampc_set_error(AMPC_E_RUNTIME, "ctc_loss: input_lengths must be non-negative, got %lld at %lld",
                                  (long long)il[b], (long long)b);
        if (il[b] > t_max)
            return ampc_set_error(AMPC_E_RUNTIME,
                                  "Expected input_lengths to have value at most %lld, but got value %lld (while "
                                  "checking arguments for ctc_loss_%s)",
                                  (long long)t_max, (long long)il[b], lp->device.type == AMPC_CPU ? "cpu" : "gpu");
        if (tl[b] > *max_target) *max_target = tl[b];
        if (targets->ndim == 1) {
            offsets[b] = pos;
            pos += tl[b];
        } else {
            offsets[b] = b * (targets->ndim == 2 ? targets->shape[1] : 0);
        }
    }
    if (targets->ndim == 1) {
        if (pos > targets->shape[0])
            return ampc_set_error(AMPC_E_RUNTIME,
                                  "ctc_loss: the target lengths sum to %lld, more than the %lld concatenated targets",
                                  (long long)pos, (long long)targets->shape[0]);
    } else if (targets->ndim == 2) {
        if (targets->shape[0] != n)
            return ampc_set_error(AMPC_E_RUNTIME, "ctc_loss: expected targets of batch size %lld, got %s",
                                  (long long)n, nn_shape(targets, buf, sizeof buf));
        if (targets->shape[1] < *max_target)
            return ampc_set_error(AMPC_E_RUNTIME,
                                  "Expected tensor to have size at least %lld at dimension 1, but got size %lld for "
                                  "argument #2 'targets' (while checking arguments for ctc_loss_%s)",
                                  (long long)*max_target, (long long)targets->shape[1],
                                  lp->device.type == AMPC_CPU ? "cpu" : "gpu");
    } else {
        return ampc_set_error(AMPC_E_RUNTIME, "ctc_loss: expected targets of 1 (concatenated) or 2 (N, S) dims, got %s",
                              nn_shape(targets, buf, sizeof buf));
    }
    return AMPC_OK;
}

/* Every label of every sample in [0, C): read on the host (one copy) so a bad label is an error,
 * not a read outside log_probs. */
static ampc_status ctc_check_labels(const ampc_tensor *tg_host, const int64_t *tl, const int64_t *offsets, int64_t n,
                                    int64_t c) {
    const int64_t *v = (const int64_t *)ampc_data_ptr(tg_host);
    for (int64_t b = 0; b < n; b++)
        for (int64_t s = 0; s < tl[b]; s++) {
            int64_t lab = v[offsets[b] + s];
            if (lab < 0 || lab >= c)
                return ampc_set_error(AMPC_E_INDEX, "ctc_loss: target %lld of sample %lld is %lld, outside [0, %lld)",
                                      (long long)s, (long long)b, (long long)lab, (long long)c);
        }
    return AMPC_OK;
}

ampc_tensor *ampc_ctc_loss(const ampc_tensor *log_probs, const ampc_tensor *targets, const int64_t *input_lengths,
                           int64_t n_input_lengths, const int64_t *target_lengths, int64_t n_target_lengths,
                           int64_t blank, bool zero_infinity, ampc_tensor **log_alpha_out) {
    if (log_alpha_out) *log_alpha_out = NULL;
    ampc_autocast_scope ac;
    int acr = ampc_autocast_enter(AMPC_OP_CTC_LOSS, 1, (const ampc_tensor *[]){log_probs}, false, &ac);
    if (acr)
        return acr < 0 ? NULL
                       : ampc_autocast_exit(&ac, ampc_ctc_loss(ac.t[0], targets, input_lengths, n_input_lengths,
                                                               target_lengths, n_target_lengths, blank, zero_infinity,
                                                               log_alpha_out));
    int64_t n = log_probs->ndim == 3 ? log_probs->shape[1] : 0, max_target = 0;
    int64_t *offsets = (int64_t *)malloc(sizeof(int64_t) * (size_t)(n + 1));
    if (!offsets) {
        ampc_set_error(AMPC_E_NOMEM, "ctc_loss: out of memory");
        return NULL;
    }
    ampc_tensor *lp = NULL, *tg_host = NULL, *tg = NULL, *il = NULL, *tl = NULL, *off = NULL, *nll = NULL,
                *alpha = NULL;
    ampc_status st = ctc_check(log_probs, targets, input_lengths, n_input_lengths, target_lengths, n_target_lengths,
                               blank, offsets, &max_target);
    ampc_device dev = log_probs->device;
    if (st == AMPC_OK) {
        ampc_tensor *h = ampc_to(targets, AMPC_INT64, ampc_cpu_device(), false);
        tg_host = h ? ampc_contiguous(h) : NULL;
        ampc_tensor_decref(h);
        st = tg_host ? ctc_check_labels(tg_host, target_lengths, offsets, n, log_probs->shape[2]) : ampc_last_status();
    }
    if (st == AMPC_OK) {
        lp = ampc_contiguous(log_probs);
        tg = ampc_to(tg_host, AMPC_INT64, dev, false);
        il = host_longs(input_lengths, n, dev);
        tl = host_longs(target_lengths, n, dev);
        off = host_longs(offsets, n, dev);
        int64_t ashape[3] = {n, log_probs->shape[0], 2 * max_target + 1};
        nll = ampc_empty(1, &n, log_probs->dtype, dev);
        alpha = ampc_full(3, ashape, ampc_scalar_float(-INFINITY), log_probs->dtype, dev);
        if (!lp || !tg || !il || !tl || !off || !nll || !alpha) st = ampc_last_status();
    }
    if (st == AMPC_OK && n > 0) {
        ampc_ctc_loss_args a = {.nll = nll, .log_alpha = alpha, .log_probs = lp, .targets = tg, .input_lengths = il,
                                .target_lengths = tl, .target_offsets = off, .blank = blank};
        st = ampc_dispatch_ctc_loss(AMPC_OP_CTC_LOSS, &a);
    }
    free(offsets);
    if (st == AMPC_OK && ampc_any_requires_grad(1, &log_probs)) {
        ampc_node_attrs attrs;
        memset(&attrs, 0, sizeof attrs);
        attrs.ints[0] = blank, attrs.ints[1] = zero_infinity, attrs.n_ints = 2;
        /* the rule reads the nll through an alias: saving the recorded output itself would tie
         * it to its own node */
        ampc_tensor *nll_saved = ampc_alias(nll);
        if (!nll_saved || !ampc_autograd_record(&ctc_rule, 1, &log_probs, 1, &nll, 7,
                                                (const ampc_tensor *[]){lp, tg, il, tl, off, nll_saved, alpha}, &attrs))
            st = ampc_last_status();
        ampc_tensor_decref(nll_saved);
    }
    ampc_tensor *tmp[6] = {lp, tg_host, tg, il, tl, off};
    nn_release(6, tmp);
    if (st != AMPC_OK) {
        ampc_tensor_decref(nll), ampc_tensor_decref(alpha);
        return NULL;
    }
    if (log_alpha_out)
        *log_alpha_out = alpha;
    else
        ampc_tensor_decref(alpha);
    return nll;
}

ampc_tensor *ampc_ctc_loss_backward(const ampc_tensor *grad_nll, const ampc_tensor *log_probs,
                                    const ampc_tensor *targets, const ampc_tensor *input_lengths,
                                    const ampc_tensor *target_lengths, const ampc_tensor *target_offsets,
                                    const ampc_tensor *nll, const ampc_tensor *log_alpha, int64_t blank,
                                    bool zero_infinity) {
    if (log_probs->ndim != 3 || ampc_numel(grad_nll) != log_probs->shape[1]) {
        ampc_set_error(AMPC_E_RUNTIME, "ctc_loss_backward: expected a grad of %lld elements",
                       (long long)(log_probs->ndim == 3 ? log_probs->shape[1] : 0));
        return NULL;
    }
    ampc_tensor *g = ampc_to(grad_nll, log_probs->dtype, log_probs->device, false);
    ampc_tensor *gc = g ? ampc_contiguous(g) : NULL;
    ampc_tensor *grad = gc ? ampc_zeros(3, log_probs->shape, log_probs->dtype, log_probs->device) : NULL;
    ampc_tensor *beta = grad ? ampc_full(3, log_alpha->shape, ampc_scalar_float(-INFINITY), log_alpha->dtype,
                                         log_alpha->device)
                             : NULL;
    ampc_status st = beta ? AMPC_OK : ampc_last_status();
    if (st == AMPC_OK && log_probs->shape[1] > 0) {
        ampc_ctc_loss_backward_args a = {.grad_log_probs = grad, .log_beta = beta, .grad_nll = gc,
                                         .log_probs = log_probs, .targets = targets, .input_lengths = input_lengths,
                                         .target_lengths = target_lengths, .target_offsets = target_offsets,
                                         .nll = nll, .log_alpha = log_alpha, .blank = blank,
                                         .zero_infinity = zero_infinity};
        st = ampc_dispatch_ctc_loss_backward(AMPC_OP_CTC_LOSS_BACKWARD, &a);
    }
    return nn_finish(st, grad, 3, (ampc_tensor *[]){g, gc, beta});
}

static ampc_status ctc_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs) {
    const ampc_tensor *s[7];
    AMPC_TRY(nn_rule_saved(node, 7, s));
    if (!grads[0]) return AMPC_OK;
    grad_inputs[0] = ampc_ctc_loss_backward(grads[0], s[0], s[1], s[2], s[3], s[4], s[5], s[6], node->attrs.ints[0],
                                            node->attrs.ints[1] != 0);
    return grad_inputs[0] ? AMPC_OK : ampc_last_status();
}
