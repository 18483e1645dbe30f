/* nn_rnn.c: the fused recurrent cells (torch's _thnn_fused_lstm_cell, _thnn_fused_gru_cell) and
 * their gradient rules. nn.LSTM / nn.GRU and their cells (python/ampc/nn/modules/rnn.py) run one
 * step as two GEMMs (input and hidden gates; the input GEMM of a whole layer is one call) and one
 * of these kernels, whose math is core/rnn_math.h.
 *
 * The rules run the backward kernels: grad gates (B, G*H) feed both GEMMs' inputs, the biases get
 * the gates' grads summed over the batch (the engine's sum to the bias shape). */
#include <stdio.h>

#include "autocast.h"
#include "autograd.h"
#include "nn_common.h"
#include "nn_rnn.h"

/* Checks the gates (B, G*H), the state (B, H) and the optional biases (G*H) of a cell. */
static ampc_status check_cell(const char *op, int gates, const ampc_tensor *ig, const ampc_tensor *hg,
                              const ampc_tensor *state, const char *state_name, const ampc_tensor *ib,
                              const ampc_tensor *hb) {
    const ampc_tensor *all[5] = {ig, hg, state, ib, hb};
    AMPC_TRY(nn_check_device(op, 5, all));
    char s1[96], s2[96];
    if (ig->ndim != 2 || state->ndim != 2 || ig->shape[1] != gates * state->shape[1] ||
        ig->shape[0] != state->shape[0])
        return ampc_set_error(AMPC_E_RUNTIME, "%s: expected input gates (B, %d * H) and %s (B, H), got %s and %s", op,
                              gates, state_name, nn_shape(ig, s1, sizeof s1), nn_shape(state, s2, sizeof s2));
    if (hg->ndim != 2 || hg->shape[0] != ig->shape[0] || hg->shape[1] != ig->shape[1])
        return ampc_set_error(AMPC_E_RUNTIME, "%s: input gates %s and hidden gates %s differ in shape", op,
                              nn_shape(ig, s1, sizeof s1), nn_shape(hg, s2, sizeof s2));
    if ((ib == NULL) != (hb == NULL))
        return ampc_set_error(AMPC_E_RUNTIME, "%s: pass both biases or neither", op);
    for (int k = 0; k < 2 && ib; k++) {
        const ampc_tensor *b = k ? hb : ib;
        if (b->ndim != 1 || b->shape[0] != ig->shape[1])
            return ampc_set_error(AMPC_E_RUNTIME, "%s: expected a bias of shape [%lld], got %s", op,
                                  (long long)ig->shape[1], nn_shape(b, s1, sizeof s1));
    }
    for (int k = 0; k < 5; k++) {
        if (!all[k]) continue;
        AMPC_TRY(nn_check_floating(op, all[k], "input"));
        if (all[k]->dtype != ig->dtype)
            return ampc_set_error(AMPC_E_RUNTIME, "%s: expected all tensors of dtype %s, got %s", op,
                                  ampc_dtype_torch_name(ig->dtype), ampc_dtype_torch_name(all[k]->dtype));
    }
    return AMPC_OK;
}

static ampc_tensor *empty_2d(const ampc_tensor *like, int64_t rows, int64_t cols) {
    int64_t shape[2] = {rows, cols};
    return ampc_empty(2, shape, like->dtype, like->device);
}

/* ---------------------------------------------------------------- LSTM */

static ampc_status lstm_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs);
static const ampc_grad_rule lstm_rule = {"ThnnFusedLstmCellBackward0", lstm_rule_fn};

ampc_status ampc_thnn_fused_lstm_cell(const ampc_tensor *input_gates, const ampc_tensor *hidden_gates,
                                      const ampc_tensor *cx, const ampc_tensor *input_bias,
                                      const ampc_tensor *hidden_bias, ampc_tensor **hy, ampc_tensor **cy,
                                      ampc_tensor **workspace) {
    *hy = *cy = *workspace = NULL;
    const ampc_tensor *ins[5] = {input_gates, hidden_gates, cx, input_bias, hidden_bias};
    ampc_autocast_scope ac;
    int acr = ampc_autocast_enter(AMPC_OP_THNN_FUSED_LSTM_CELL, 5, ins, false, &ac);
    if (acr)
        return acr < 0 ? ampc_last_status()
                       : ampc_autocast_exit_status(&ac, ampc_thnn_fused_lstm_cell(ac.t[0], ac.t[1], ac.t[2], ac.t[3],
                                                                                  ac.t[4], hy, cy, workspace));
    const char *op = "_thnn_fused_lstm_cell";
    AMPC_TRY(check_cell(op, 4, input_gates, hidden_gates, cx, "cx", input_bias, hidden_bias));
    ampc_tensor *c[5] = {NULL};
    ampc_status st = AMPC_OK;
    for (int k = 0; k < 5 && st == AMPC_OK; k++) st = nn_contig(ins[k], &c[k]);
    int64_t b = input_gates->shape[0], h = cx->shape[1];
    if (st == AMPC_OK) {
        *hy = empty_2d(cx, b, h), *cy = *hy ? empty_2d(cx, b, h) : NULL;
        *workspace = *cy ? empty_2d(cx, b, 4 * h) : NULL;
        st = *workspace ? AMPC_OK : ampc_last_status();
    }
    if (st == AMPC_OK && b * h > 0) {
        ampc_fused_lstm_cell_args a = {.hy = *hy, .cy = *cy, .workspace = *workspace, .input_gates = c[0],
                                       .hidden_gates = c[1], .cx = c[2], .input_bias = c[3], .hidden_bias = c[4]};
        st = ampc_dispatch_fused_lstm_cell(AMPC_OP_THNN_FUSED_LSTM_CELL, &a);
    }
    nn_release(5, c);
    if (st == AMPC_OK && ampc_any_requires_grad(5, ins)) {
        ampc_tensor *outs[2] = {*hy, *cy};
        const ampc_tensor *saved[3] = {cx, *cy, *workspace};
        ampc_node_attrs attrs;
        memset(&attrs, 0, sizeof attrs);
        if (!ampc_autograd_record(&lstm_rule, 5, ins, 2, outs, 3, saved, &attrs)) st = ampc_last_status();
    }
    if (st != AMPC_OK) {
        ampc_tensor *o[3] = {*hy, *cy, *workspace};
        nn_release(3, o);
        *hy = *cy = *workspace = NULL;
    }
    return st;
}

ampc_status ampc_thnn_fused_lstm_cell_backward(const ampc_tensor *grad_hy, const ampc_tensor *grad_cy,
                                               const ampc_tensor *cx, const ampc_tensor *cy,
                                               const ampc_tensor *workspace, bool has_bias,
                                               ampc_tensor **grad_gates, ampc_tensor **grad_cx,
                                               ampc_tensor **grad_bias) {
    *grad_gates = *grad_cx = *grad_bias = NULL;
    const char *op = "_thnn_fused_lstm_cell_backward_impl";
    const ampc_tensor *all[5] = {grad_hy, grad_cy, cx, cy, workspace};
    AMPC_TRY(nn_check_device(op, 5, all));
    char s1[96];
    if (cx->ndim != 2 || workspace->ndim != 2 || workspace->shape[1] != 4 * cx->shape[1])
        return ampc_set_error(AMPC_E_RUNTIME, "%s: expected cx (B, H) and a workspace (B, 4 * H), got workspace %s", op,
                              nn_shape(workspace, s1, sizeof s1));
    int64_t b = cx->shape[0], h = cx->shape[1];
    ampc_tensor *c[5] = {NULL};
    ampc_status st = AMPC_OK;
    for (int k = 0; k < 5 && st == AMPC_OK; k++) {
        const ampc_tensor *t = all[k];
        if (t && (ampc_numel(t) != b * (k == 4 ? 4 * h : h) || t->dtype != workspace->dtype)) {
            st = ampc_set_error(AMPC_E_RUNTIME, "%s: tensor %d has shape %s or dtype %s, expected %lld elements of %s",
                                op, k, nn_shape(t, s1, sizeof s1), ampc_dtype_torch_name(t->dtype),
                                (long long)(b * (k == 4 ? 4 * h : h)), ampc_dtype_torch_name(workspace->dtype));
            break;
        }
        st = nn_contig(t, &c[k]);
    }
    if (st == AMPC_OK) {
        *grad_gates = empty_2d(workspace, b, 4 * h), *grad_cx = *grad_gates ? empty_2d(workspace, b, h) : NULL;
        st = *grad_cx ? AMPC_OK : ampc_last_status();
    }
    if (st == AMPC_OK && b * h > 0) {
        ampc_fused_lstm_cell_backward_args a = {.grad_gates = *grad_gates, .grad_cx = *grad_cx, .grad_hy = c[0],
                                                .grad_cy = c[1], .cx = c[2], .cy = c[3], .workspace = c[4]};
        st = ampc_dispatch_fused_lstm_cell_backward(AMPC_OP_THNN_FUSED_LSTM_CELL_BACKWARD, &a);
    }
    nn_release(5, c);
    if (st == AMPC_OK && has_bias) {
        int64_t bs[1] = {4 * h};
        *grad_bias = nn_sum_to(*grad_gates, 1, bs);
        if (!*grad_bias) st = ampc_last_status();
    }
    if (st != AMPC_OK) {
        ampc_tensor *o[3] = {*grad_gates, *grad_cx, *grad_bias};
        nn_release(3, o);
        *grad_gates = *grad_cx = *grad_bias = NULL;
    }
    return st;
}

/* inputs (input gates, hidden gates, cx, input bias, hidden bias); saved (cx, cy, workspace). */
static ampc_status lstm_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs) {
    const ampc_tensor *s[3];
    AMPC_TRY(nn_rule_saved(node, 3, s));
    ampc_tensor *gg, *gcx, *gb;
    AMPC_TRY(ampc_thnn_fused_lstm_cell_backward(grads[0], grads[1], s[0], s[1], s[2], false, &gg, &gcx, &gb));
    /* the engine sums each grad to its input's shape: the gates' grads become the biases' */
    for (int k = 0; k < 5; k++)
        if (node->needs_input_grad[k] && k != 2) grad_inputs[k] = (ampc_tensor_incref(gg), gg);
    if (node->needs_input_grad[2]) grad_inputs[2] = (ampc_tensor_incref(gcx), gcx);
    ampc_tensor_decref(gg), ampc_tensor_decref(gcx);
    return AMPC_OK;
}

/* ---------------------------------------------------------------- GRU */

static ampc_status gru_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs);
static const ampc_grad_rule gru_rule = {"ThnnFusedGruCellBackward0", gru_rule_fn};

ampc_status ampc_thnn_fused_gru_cell(const ampc_tensor *input_gates, const ampc_tensor *hidden_gates,
                                     const ampc_tensor *hx, const ampc_tensor *input_bias,
                                     const ampc_tensor *hidden_bias, ampc_tensor **hy, ampc_tensor **workspace) {
    *hy = *workspace = NULL;
    const ampc_tensor *ins[5] = {input_gates, hidden_gates, hx, input_bias, hidden_bias};
    ampc_autocast_scope ac;
    int acr = ampc_autocast_enter(AMPC_OP_THNN_FUSED_GRU_CELL, 5, ins, false, &ac);
    if (acr)
        return acr < 0 ? ampc_last_status()
                       : ampc_autocast_exit_status(&ac, ampc_thnn_fused_gru_cell(ac.t[0], ac.t[1], ac.t[2], ac.t[3],
                                                                                 ac.t[4], hy, workspace));
    const char *op = "_thnn_fused_gru_cell";
    AMPC_TRY(check_cell(op, 3, input_gates, hidden_gates, hx, "hx", input_bias, hidden_bias));
    ampc_tensor *c[5] = {NULL};
    ampc_status st = AMPC_OK;
    for (int k = 0; k < 5 && st == AMPC_OK; k++) st = nn_contig(ins[k], &c[k]);
    int64_t b = input_gates->shape[0], h = hx->shape[1];
    if (st == AMPC_OK) {
        *hy = empty_2d(hx, b, h), *workspace = *hy ? empty_2d(hx, b, 5 * h) : NULL;
        st = *workspace ? AMPC_OK : ampc_last_status();
    }
    if (st == AMPC_OK && b * h > 0) {
        ampc_fused_gru_cell_args a = {.hy = *hy, .workspace = *workspace, .input_gates = c[0], .hidden_gates = c[1],
                                      .hx = c[2], .input_bias = c[3], .hidden_bias = c[4]};
        st = ampc_dispatch_fused_gru_cell(AMPC_OP_THNN_FUSED_GRU_CELL, &a);
    }
    nn_release(5, c);
    if (st == AMPC_OK && ampc_any_requires_grad(5, ins)) {
        ampc_node_attrs attrs;
        memset(&attrs, 0, sizeof attrs);
        const ampc_tensor *saved[1] = {*workspace};
        if (!ampc_autograd_record(&gru_rule, 5, ins, 1, hy, 1, saved, &attrs)) st = ampc_last_status();
    }
    if (st != AMPC_OK) {
        ampc_tensor *o[2] = {*hy, *workspace};
        nn_release(2, o);
        *hy = *workspace = NULL;
    }
    return st;
}

ampc_status ampc_thnn_fused_gru_cell_backward(const ampc_tensor *grad_hy, const ampc_tensor *workspace,
                                              bool has_bias, ampc_tensor **grad_input_gates,
                                              ampc_tensor **grad_hidden_gates, ampc_tensor **grad_hx,
                                              ampc_tensor **grad_input_bias, ampc_tensor **grad_hidden_bias) {
    *grad_input_gates = *grad_hidden_gates = *grad_hx = *grad_input_bias = *grad_hidden_bias = NULL;
    const char *op = "_thnn_fused_gru_cell_backward";
    const ampc_tensor *all[2] = {grad_hy, workspace};
    AMPC_TRY(nn_check_device(op, 2, all));
    char s1[96], s2[96];
    if (grad_hy->ndim != 2 || workspace->ndim != 2 || workspace->shape[1] != 5 * grad_hy->shape[1] ||
        workspace->shape[0] != grad_hy->shape[0] || grad_hy->dtype != workspace->dtype)
        return ampc_set_error(AMPC_E_RUNTIME, "%s: expected grad_hy (B, H) and a workspace (B, 5 * H) of one dtype, "
                              "got %s and %s", op, nn_shape(grad_hy, s1, sizeof s1), nn_shape(workspace, s2, sizeof s2));
    int64_t b = grad_hy->shape[0], h = grad_hy->shape[1];
    ampc_tensor *c[2] = {NULL};
    ampc_status st = nn_contig(grad_hy, &c[0]);
    if (st == AMPC_OK) st = nn_contig(workspace, &c[1]);
    if (st == AMPC_OK) {
        *grad_input_gates = empty_2d(workspace, b, 3 * h);
        *grad_hidden_gates = *grad_input_gates ? empty_2d(workspace, b, 3 * h) : NULL;
        *grad_hx = *grad_hidden_gates ? empty_2d(workspace, b, h) : NULL;
        st = *grad_hx ? AMPC_OK : ampc_last_status();
    }
    if (st == AMPC_OK && b * h > 0) {
        ampc_fused_gru_cell_backward_args a = {.grad_input_gates = *grad_input_gates,
                                               .grad_hidden_gates = *grad_hidden_gates, .grad_hx = *grad_hx,
                                               .grad_hy = c[0], .workspace = c[1]};
        st = ampc_dispatch_fused_gru_cell_backward(AMPC_OP_THNN_FUSED_GRU_CELL_BACKWARD, &a);
    }
    nn_release(2, c);
    if (st == AMPC_OK && has_bias) {
        int64_t bs[1] = {3 * h};
        *grad_input_bias = nn_sum_to(*grad_input_gates, 1, bs);
        *grad_hidden_bias = *grad_input_bias ? nn_sum_to(*grad_hidden_gates, 1, bs) : NULL;
        if (!*grad_hidden_bias) st = ampc_last_status();
    }
    if (st != AMPC_OK) {
        ampc_tensor *o[5] = {*grad_input_gates, *grad_hidden_gates, *grad_hx, *grad_input_bias, *grad_hidden_bias};
        nn_release(5, o);
        *grad_input_gates = *grad_hidden_gates = *grad_hx = *grad_input_bias = *grad_hidden_bias = NULL;
    }
    return st;
}

/* inputs (input gates, hidden gates, hx, input bias, hidden bias); saved (workspace). */
static ampc_status gru_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs) {
    const ampc_tensor *s[1];
    AMPC_TRY(nn_rule_saved(node, 1, s));
    ampc_tensor *gi, *gh, *ghx, *gib, *ghb;
    AMPC_TRY(ampc_thnn_fused_gru_cell_backward(grads[0], s[0], false, &gi, &gh, &ghx, &gib, &ghb));
    ampc_tensor *per_input[5] = {gi, gh, ghx, gi, gh}; /* biases: the engine sums the gates' grads */
    for (int k = 0; k < 5; k++)
        if (node->needs_input_grad[k]) grad_inputs[k] = (ampc_tensor_incref(per_input[k]), per_input[k]);
    ampc_tensor_decref(gi), ampc_tensor_decref(gh), ampc_tensor_decref(ghx);
    return AMPC_OK;
}
