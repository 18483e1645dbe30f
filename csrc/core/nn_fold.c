/* nn_fold.c: torch.nn.functional.unfold (im2col) and fold (col2im) as user-facing ops over the
 * IM2COL / COL2IM kernels that convolution runs inside (nn_conv.c), and their gradient rules:
 * each is the other's adjoint, so unfold's gradient is fold of the grad and fold's is unfold
 * (both recording, so second order works too).
 *
 *   unfold  x (N, C, H, W)          -> cols (N, C*kh*kw, L),  L = OH * OW sliding blocks
 *   fold    cols (N, C*kh*kw, L)    -> x (N, C, H, W), overlapping blocks summed
 *
 * Unbatched inputs drop N. Padding is symmetric, as PyTorch's. */
#include <stdio.h>

#include "autograd.h"
#include "nn_common.h"
#include "nn_conv_more.h"

typedef struct fold_geom {
    int64_t kernel[2], dilation[2], padding[2], stride[2];
    int64_t blocks[2]; /* OH, OW */
} fold_geom;

/* The sliding blocks of an (h, w) image; fails with PyTorch's message when one is < 1. */
static ampc_status blocks_of(fold_geom *g, int64_t h, int64_t w, const char *prefix) {
    int64_t size[2] = {h, w};
    for (int i = 0; i < 2; i++) {
        if (g->kernel[i] <= 0 || g->stride[i] <= 0 || g->dilation[i] <= 0 || g->padding[i] < 0)
            return ampc_set_error(AMPC_E_RUNTIME,
                                  "%s: kernel_size, stride and dilation must be positive and padding non-negative, "
                                  "but got kernel_size=(%lld, %lld), dilation=(%lld, %lld), padding=(%lld, %lld), "
                                  "stride=(%lld, %lld)",
                                  prefix, (long long)g->kernel[0], (long long)g->kernel[1], (long long)g->dilation[0],
                                  (long long)g->dilation[1], (long long)g->padding[0], (long long)g->padding[1],
                                  (long long)g->stride[0], (long long)g->stride[1]);
        g->blocks[i] = (size[i] + 2 * g->padding[i] - (g->dilation[i] * (g->kernel[i] - 1) + 1)) / g->stride[i] + 1;
        if (size[i] + 2 * g->padding[i] < g->dilation[i] * (g->kernel[i] - 1) + 1) g->blocks[i] = 0;
    }
    return AMPC_OK;
}

static ampc_status run_cols(ampc_op op, ampc_tensor *out, const ampc_tensor *in, const fold_geom *g) {
    ampc_im2col_args a = {.out = out, .in = in, .kernel = {g->kernel[0], g->kernel[1]},
                          .stride = {g->stride[0], g->stride[1]}, .padding = {g->padding[0], g->padding[1]},
                          .dilation = {g->dilation[0], g->dilation[1]}, .out_size = {g->blocks[0], g->blocks[1]}};
    return ampc_numel(out) > 0 && ampc_numel(in) > 0 ? ampc_dispatch_im2col(op, &a) : AMPC_OK;
}

static ampc_status unfold_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs);
static ampc_status fold_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs);
static const ampc_grad_rule unfold_rule = {"Im2ColBackward0", unfold_rule_fn};
static const ampc_grad_rule fold_rule = {"Col2ImBackward0", fold_rule_fn};

static void geom_to_attrs(const fold_geom *g, int64_t h, int64_t w, ampc_node_attrs *attrs) {
    memset(attrs, 0, sizeof *attrs);
    int64_t v[10] = {g->kernel[0], g->kernel[1], g->dilation[0], g->dilation[1], g->padding[0], g->padding[1],
                     g->stride[0], g->stride[1], h, w};
    memcpy(attrs->ints, v, sizeof v);
    attrs->n_ints = 10;
}

ampc_tensor *ampc_unfold_im2col(const ampc_tensor *input, const int64_t kernel[2], const int64_t dilation[2],
                                const int64_t padding[2], const int64_t stride[2]) {
    char s1[96];
    bool batched = input->ndim == 4;
    for (int d = batched ? 1 : 0; d < input->ndim; d++)
        if (input->shape[d] == 0 || (input->ndim != 3 && input->ndim != 4)) {
            ampc_set_error(AMPC_E_RUNTIME,
                           "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
                           "dimensions for input, but got: %s",
                           nn_shape(input, s1, sizeof s1));
            return NULL;
        }
    if (nn_check_floating("im2col", input, "input") != AMPC_OK) return NULL;
    fold_geom g = {{kernel[0], kernel[1]}, {dilation[0], dilation[1]}, {padding[0], padding[1]}, {stride[0], stride[1]}, {0, 0}};
    int64_t n = batched ? input->shape[0] : 1, c = input->shape[batched], h = input->shape[input->ndim - 2],
            w = input->shape[input->ndim - 1];
    if (blocks_of(&g, h, w, "im2col") != AMPC_OK) return NULL;
    if (g.blocks[0] < 1 || g.blocks[1] < 1) {
        ampc_set_error(AMPC_E_RUNTIME,
                       "Given input with spatial size (%lld, %lld), kernel_size=(%lld, %lld), dilation=(%lld, %lld), "
                       "padding=(%lld, %lld), calculated shape of the array of sliding blocks as (%lld, %lld), but "
                       "its components must be at least one.",
                       (long long)h, (long long)w, (long long)kernel[0], (long long)kernel[1], (long long)dilation[0],
                       (long long)dilation[1], (long long)padding[0], (long long)padding[1], (long long)g.blocks[0],
                       (long long)g.blocks[1]);
        return NULL;
    }
    int64_t x4[4] = {n, c, h, w}, cols3[3] = {n, c * kernel[0] * kernel[1], g.blocks[0] * g.blocks[1]};
    ampc_tensor *xc = ampc_contiguous(input), *xv = xc ? nn_reshape_view(xc, 4, x4) : NULL;
    ampc_tensor *out = xv ? ampc_empty(batched ? 3 : 2, batched ? cols3 : cols3 + 1, input->dtype, input->device) : NULL;
    ampc_tensor *ov = out ? nn_reshape_view(out, 3, cols3) : NULL;
    ampc_status st = ov ? run_cols(AMPC_OP_IM2COL, ov, xv, &g) : ampc_last_status();
    nn_release(3, (ampc_tensor *[]){xc, xv, ov});
    if (st == AMPC_OK && ampc_any_requires_grad(1, &input)) {
        ampc_node_attrs attrs;
        geom_to_attrs(&g, h, w, &attrs);
        if (!ampc_autograd_record(&unfold_rule, 1, &input, 1, &out, 0, NULL, &attrs)) st = ampc_last_status();
    }
    return nn_finish(st, out, 0, NULL);
}

ampc_tensor *ampc_fold_col2im(const ampc_tensor *input, const int64_t output_size[2], const int64_t kernel[2],
                              const int64_t dilation[2], const int64_t padding[2], const int64_t stride[2]) {
    char s1[96];
    if (input->ndim != 2 && input->ndim != 3) {
        ampc_set_error(AMPC_E_RUNTIME,
                       "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
                       "dimensions for input, but got: %s",
                       nn_shape(input, s1, sizeof s1));
        return NULL;
    }
    bool batched = input->ndim == 3;
    if (nn_check_floating("col2im", input, "input") != AMPC_OK) return NULL;
    fold_geom g = {{kernel[0], kernel[1]}, {dilation[0], dilation[1]}, {padding[0], padding[1]}, {stride[0], stride[1]}, {0, 0}};
    int64_t n = batched ? input->shape[0] : 1, ck = input->shape[batched], l = input->shape[batched + 1];
    if (blocks_of(&g, output_size[0], output_size[1], "col2im") != AMPC_OK) return NULL;
    int64_t kk = kernel[0] * kernel[1];
    if (ck % kk != 0) {
        ampc_set_error(AMPC_E_RUNTIME,
                       "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got "
                       "input.size(1)=%lld and kernel_size=(%lld, %lld).",
                       (long long)ck, (long long)kernel[0], (long long)kernel[1]);
        return NULL;
    }
    if (l != g.blocks[0] * g.blocks[1] || g.blocks[0] < 1 || g.blocks[1] < 1) {
        ampc_set_error(AMPC_E_RUNTIME,
                       "Given output_size=(%lld, %lld), kernel_size=(%lld, %lld), dilation=(%lld, %lld), "
                       "padding=(%lld, %lld), stride=(%lld, %lld), expected size of input's dimension %d to match "
                       "the calculated number of sliding blocks %lld * %lld = %lld, but got input.size(%d)=%lld.",
                       (long long)output_size[0], (long long)output_size[1], (long long)kernel[0],
                       (long long)kernel[1], (long long)dilation[0], (long long)dilation[1], (long long)padding[0],
                       (long long)padding[1], (long long)stride[0], (long long)stride[1], batched + 1,
                       (long long)g.blocks[0], (long long)g.blocks[1], (long long)(g.blocks[0] * g.blocks[1]),
                       batched + 1, (long long)l);
        return NULL;
    }
    int64_t c = ck / kk, x4[4] = {n, c, output_size[0], output_size[1]}, cols3[3] = {n, ck, l};
    ampc_tensor *cc = ampc_contiguous(input), *cv = cc ? nn_reshape_view(cc, 3, cols3) : NULL;
    ampc_tensor *out = cv ? (batched ? ampc_zeros(4, x4, input->dtype, input->device)
                                     : ampc_zeros(3, x4 + 1, input->dtype, input->device))
                          : NULL;
    ampc_tensor *ov = out ? nn_reshape_view(out, 4, x4) : NULL;
    ampc_status st = ov ? run_cols(AMPC_OP_COL2IM, ov, cv, &g) : ampc_last_status();
    nn_release(3, (ampc_tensor *[]){cc, cv, ov});
    if (st == AMPC_OK && ampc_any_requires_grad(1, &input)) {
        ampc_node_attrs attrs;
        geom_to_attrs(&g, output_size[0], output_size[1], &attrs);
        if (!ampc_autograd_record(&fold_rule, 1, &input, 1, &out, 0, NULL, &attrs)) st = ampc_last_status();
    }
    return nn_finish(st, out, 0, NULL);
}

static ampc_status unfold_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs) {
    if (!grads[0]) return AMPC_OK;
    const int64_t *v = node->attrs.ints;
    grad_inputs[0] = ampc_fold_col2im(grads[0], v + 8, v, v + 2, v + 4, v + 6);
    return grad_inputs[0] ? AMPC_OK : ampc_last_status();
}

static ampc_status fold_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs) {
    if (!grads[0]) return AMPC_OK;
    const int64_t *v = node->attrs.ints;
    grad_inputs[0] = ampc_unfold_im2col(grads[0], v, v + 2, v + 4, v + 6);
    return grad_inputs[0] ? AMPC_OK : ampc_last_status();
}
