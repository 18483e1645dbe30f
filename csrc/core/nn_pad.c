/* nn_pad.c: torch.nn.functional.pad in its four modes (constant, reflect, replicate, circular),
 * forward and backward, and their gradient rules.
 *
 * Every mode is one gather: along each padded dim, output index o reads input index src[o]
 * (constant: -1 outside the input, which reads the fill value; reflect: mirrored about the edge
 * without repeating it; replicate: clamped; circular: wrapped). The frontend computes those small
 * per-dim tables on the host, and their inverse (which output indices read input index i, as
 * CSR) for the backward gather, so one kernel per direction serves every mode and the CUDA
 * backward needs no atomics. Shapes: the last k <= 3 dims are padded, the rest merge into P:
 *
 *   x (P, D, H, W)  --pad-->  y (P, OD, OH, OW),   OD = D + pad_lo + pad_hi, ...
 *
 * Constant mode pads any number of dims: the dims beyond the last three are padded in further
 * passes over a permuted view. Its gradient is the negative pad (a crop), itself differentiable;
 * the other modes' gradient is the PAD_BACKWARD kernel. */
#include <stdio.h>

#include "autograd.h"
#include "nn_common.h"
#include "nn_conv_more.h"

static const char *const mode_names[4] = {"constant", "reflect", "replicate", "circular"};
static const ampc_op mode_ops[4] = {AMPC_OP_CONSTANT_PAD_ND, AMPC_OP_REFLECTION_PAD, AMPC_OP_REPLICATION_PAD,
                                    AMPC_OP_CIRCULAR_PAD};

/* ---------------------------------------------------------------- the tables */

/* The input index output index o reads, along a dim of n elements padded by lo before and hi
 * after (-1: the fill value). The checks guarantee n > 0 for the non-constant modes. Circular
 * padding crops first (negative pads) and wraps around what is left, as PyTorch's. */
static int64_t pad_source(ampc_pad_mode mode, int64_t o, int64_t n, int64_t lo, int64_t hi) {
    int64_t i = o - lo;
    if (mode == AMPC_PAD_CIRCULAR) {
        int64_t c0 = lo < 0 ? -lo : 0, kept = n - c0 - (hi < 0 ? -hi : 0);
        int64_t r = (o - (lo > 0 ? lo : 0)) % kept;
        return c0 + (r < 0 ? r + kept : r);
    }
    switch (mode) {
    case AMPC_PAD_REFLECT:
        if (i < 0) i = -i;
        if (i >= n) i = 2 * (n - 1) - i;
        return i;
    case AMPC_PAD_REPLICATE: return i < 0 ? 0 : i >= n ? n - 1 : i;
    default: return i >= 0 && i < n ? i : -1;
    }
}

/* (P, D, H, W) of a shape whose last k dims are padded: dims before them multiply into P, and
 * the padded ones sit right-aligned in (D, H, W) with 1 for the missing ones. */
static void as_4d_shape(int ndim, const int64_t *shape, int k, int64_t out[4]) {
    out[0] = 1, out[1] = out[2] = out[3] = 1;
    for (int i = 0; i < ndim - k; i++) out[0] *= shape[i];
    for (int i = 0; i < k; i++) out[3 - i] = shape[ndim - 1 - i];
}

/* The kernel's table (ops.def, the pad rows) for x4 (P, D, H, W) -> y4, the pad pairs of the
 * last k dims in PyTorch's order (last dim first), on `device`. */
static ampc_tensor *make_table(const int64_t x4[4], const int64_t y4[4], int k, const int64_t *pad, ampc_pad_mode mode,
                               ampc_device device) {
    int64_t len = 0;
    for (int d = 1; d < 4; d++) len += 2 * y4[d] + x4[d] + 1;
    ampc_tensor *t = ampc_empty(1, &len, AMPC_INT64, ampc_cpu_device());
    if (!t) return NULL;
    int64_t *v = (int64_t *)ampc_data_ptr(t), *src = v, *ptr = v + y4[1] + y4[2] + y4[3];
    int64_t *idx = ptr + x4[1] + x4[2] + x4[3] + 3;
    for (int d = 1; d < 4; d++) {
        int pair = 3 - d; /* dim d of the 4-d view is pad pair `pair` (W is pair 0) */
        int64_t lo = pair < k ? pad[2 * pair] : 0, hi = pair < k ? pad[2 * pair + 1] : 0, n = x4[d], on = y4[d];
        for (int64_t o = 0; o < on; o++) src[o] = pad_source(mode, o, n, lo, hi);
        /* CSR of the inverse: count per input index, prefix sums, then place each output index
         * at its input's cursor (ptr[i] while filling; restored by the shift below) */
        for (int64_t i = 0; i <= n; i++) ptr[i] = 0;
        for (int64_t o = 0; o < on; o++)
            if (src[o] >= 0) ptr[src[o] + 1]++;
        for (int64_t i = 0; i < n; i++) ptr[i + 1] += ptr[i];
        for (int64_t o = 0; o < on; o++)
            if (src[o] >= 0) idx[ptr[src[o]]++] = o;
        for (int64_t i = n; i > 0; i--) ptr[i] = ptr[i - 1];
        ptr[0] = 0;
        src += on, ptr += n + 1, idx += on;
    }
    if (device.type == AMPC_CPU) return t;
    ampc_tensor *d = ampc_to(t, AMPC_INT64, device, false);
    ampc_tensor_decref(t);
    return d;
}

/* ---------------------------------------------------------------- checks (PyTorch's messages) */

/* F.pad's argument rules, then the mode's own. */
static ampc_status pad_check(const ampc_tensor *x, int npad, const int64_t *pad, ampc_pad_mode mode) {
    char s1[96];
    if ((unsigned)mode > AMPC_PAD_CIRCULAR) return ampc_set_error(AMPC_E_NOT_IMPLEMENTED, "Unrecognised padding mode");
    if (npad % 2 != 0) return ampc_set_error(AMPC_E_RUNTIME, "Padding length must be divisible by 2");
    if (npad / 2 > x->ndim)
        return ampc_set_error(AMPC_E_RUNTIME,
                              "Padding length should be less than or equal to two times the input dimension but got "
                              "padding length %d and input of dimension %d",
                              npad, x->ndim);
    int k = npad / 2;
    if (mode == AMPC_PAD_CONSTANT) {
        for (int i = 0; i < k; i++) {
            int dim = x->ndim - 1 - i;
            if (x->shape[dim] + pad[2 * i] + pad[2 * i + 1] < 0)
                return ampc_set_error(AMPC_E_RUNTIME,
                                      "The input size %lld, plus negative padding %lld and %lld resulted in a negative "
                                      "output size, which is invalid. Check dimension %d of your input.",
                                      (long long)x->shape[dim], (long long)pad[2 * i], (long long)pad[2 * i + 1], dim);
        }
        return AMPC_OK;
    }
    if (k < 1 || k > 3 || (x->ndim != k + 1 && x->ndim != k + 2))
        return ampc_set_error(AMPC_E_NOT_IMPLEMENTED,
                              "Padding size %d is not supported for %dD input tensor.\n"
                              "Supported combinations for non-constant padding:\n"
                              "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                              "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                              "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)",
                              npad, x->ndim);
    if (mode == AMPC_PAD_CIRCULAR) {
        for (int i = 0; i < k; i++) {
            int64_t n = x->shape[x->ndim - 1 - i], lo = pad[2 * i], hi = pad[2 * i + 1];
            if (lo > n || hi > n || n == 0)
                return ampc_set_error(AMPC_E_RUNTIME, "Padding value causes wrapping around more than once.");
            if (n + lo + hi <= 0)
                return ampc_set_error(AMPC_E_RUNTIME, "Negative padding value is resulting in an empty dimension");
            /* wrapping reads the part the negative pad keeps: PyTorch's copies would overlap there
             * (an error or undefined values), ampc refuses */
            int64_t kept = n + (lo < 0 ? lo : 0) + (hi < 0 ? hi : 0);
            if (kept <= 0 || lo > kept || hi > kept)
                return ampc_set_error(AMPC_E_RUNTIME,
                                      "Padding value causes wrapping around more than once (pads %lld, %lld around the "
                                      "%lld elements the negative padding keeps of dimension %d).",
                                      (long long)lo, (long long)hi, (long long)kept, x->ndim - 1 - i);
        }
        return AMPC_OK;
    }
    /* reflect, replicate: every dim but an optional batch dim non-empty */
    for (int d = x->ndim == k + 2 ? 1 : 0; d < x->ndim; d++)
        if (x->shape[d] == 0)
            return ampc_set_error(AMPC_E_RUNTIME,
                                  "Expected %dD or %dD (batch mode) tensor with possibly 0 batch size and other "
                                  "non-zero dimensions for input, but got: %s",
                                  k + 1, k + 2, nn_shape(x, s1, sizeof s1));
    if (mode == AMPC_PAD_REFLECT)
        for (int i = 0; i < k; i++) {
            int dim = x->ndim - 1 - i;
            int64_t n = x->shape[dim], lo = pad[2 * i], hi = pad[2 * i + 1];
            if (lo >= n || hi >= n)
                return ampc_set_error(AMPC_E_RUNTIME,
                                      "Argument #%d: Padding size should be less than the corresponding input "
                                      "dimension, but got: padding (%lld, %lld) at dimension %d of input %s",
                                      4 + 2 * i, (long long)lo, (long long)hi, dim, nn_shape(x, s1, sizeof s1));
        }
    static const char *const dim_names[3] = {"W", "H", "D"};
    for (int i = 0; i < k; i++) {
        int64_t n = x->shape[x->ndim - 1 - i];
        int64_t on = n + pad[2 * i] + pad[2 * i + 1];
        if (on < 1)
            return ampc_set_error(AMPC_E_RUNTIME, "input (%s: %lld) is too small. Calculated output %s: %lld",
                                  dim_names[i], (long long)n, dim_names[i], (long long)on);
    }
    return AMPC_OK;
}

/* ---------------------------------------------------------------- kernels */

/* The fill value in dtype dt, as the bits the kernel stores. */
static ampc_status fill_bits_of(double value, ampc_dtype dt, uint64_t *bits) {
    *bits = 0;
    ampc_tensor *t = ampc_full(0, NULL, ampc_scalar_float(value), dt, ampc_cpu_device());
    if (!t) return ampc_last_status();
    memcpy(bits, ampc_data_ptr(t), ampc_dtype_itemsize(dt));
    ampc_tensor_decref(t);
    return AMPC_OK;
}

/* y = pad of the last k <= 3 dims of x (checked), no recording. */
static ampc_tensor *pad_trailing(const ampc_tensor *x, int k, const int64_t *pad, ampc_pad_mode mode, double value) {
    int64_t shape[AMPC_MAX_DIMS], x4[4], y4[4];
    memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    for (int i = 0; i < k; i++) shape[x->ndim - 1 - i] += pad[2 * i] + pad[2 * i + 1];
    as_4d_shape(x->ndim, x->shape, k, x4);
    as_4d_shape(x->ndim, shape, k, y4);
    ampc_tensor *y = ampc_empty(x->ndim, shape, x->dtype, x->device);
    if (!y || ampc_numel(y) == 0) return y;
    ampc_pad_args a = {0};
    ampc_tensor *xc = ampc_contiguous(x), *x4v = xc ? nn_reshape_view(xc, 4, x4) : NULL;
    ampc_tensor *y4v = x4v ? nn_reshape_view(y, 4, y4) : NULL;
    ampc_tensor *table = y4v ? make_table(x4, y4, k, pad, mode, x->device) : NULL;
    ampc_status st = table ? fill_bits_of(value, x->dtype, &a.fill_bits) : ampc_last_status();
    if (st == AMPC_OK) {
        a.out = y4v, a.in = x4v, a.table = table;
        st = ampc_dispatch_pad(mode_ops[mode], &a);
    }
    return nn_finish(st, y, 4, (ampc_tensor *[]){xc, x4v, y4v, table});
}

/* Constant padding of any number of trailing dims: three at a time, the later groups over a view
 * that moves their dims to the end. */
static ampc_tensor *pad_constant_any(const ampc_tensor *x, int k, const int64_t *pad, double value) {
    ampc_tensor *y = pad_trailing(x, k < 3 ? k : 3, pad, AMPC_PAD_CONSTANT, value);
    for (int first = 3; y && first < k; first += 3) {
        int g = k - first < 3 ? k - first : 3, nd = x->ndim;
        /* perm moves dims nd-1-first-g+1 .. nd-1-first (the group) to the end, in order */
        int64_t perm[AMPC_MAX_DIMS], inv[AMPC_MAX_DIMS];
        int at = 0, lo = nd - first - g, hi = nd - first; /* group dims [lo, hi) */
        for (int d = 0; d < nd; d++)
            if (d < lo || d >= hi) perm[at++] = d;
        for (int d = lo; d < hi; d++) perm[at++] = d;
        for (int d = 0; d < nd; d++) inv[perm[d]] = d;
        ampc_tensor *v = ampc_permute(y, nd, perm);
        ampc_tensor *p = v ? pad_trailing(v, g, pad + 2 * first, AMPC_PAD_CONSTANT, value) : NULL;
        ampc_tensor *back = p ? ampc_permute(p, nd, inv) : NULL;
        ampc_tensor *c = back ? ampc_contiguous(back) : NULL;
        nn_release(4, (ampc_tensor *[]){y, v, p, back});
        y = c;
    }
    return y;
}

/* ---------------------------------------------------------------- frontends and rules */

static ampc_status constant_pad_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs);
static ampc_status pad_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs);

/* PyTorch's node names per (mode, padded dims); circular pads are CopySlices in PyTorch, which
 * composes them of slices: ampc's are one node, named in the same pattern. */
static const ampc_grad_rule pad_rules[4][3] = {
    {{"ConstantPadNdBackward0", constant_pad_rule_fn},
     {"ConstantPadNdBackward0", constant_pad_rule_fn},
     {"ConstantPadNdBackward0", constant_pad_rule_fn}},
    {{"ReflectionPad1DBackward0", pad_rule_fn}, {"ReflectionPad2DBackward0", pad_rule_fn},
     {"ReflectionPad3DBackward0", pad_rule_fn}},
    {{"ReplicationPad1DBackward0", pad_rule_fn}, {"ReplicationPad2DBackward0", pad_rule_fn},
     {"ReplicationPad3DBackward0", pad_rule_fn}},
    {{"CircularPad1DBackward0", pad_rule_fn}, {"CircularPad2DBackward0", pad_rule_fn},
     {"CircularPad3DBackward0", pad_rule_fn}},
};

ampc_tensor *ampc_pad(const ampc_tensor *input, int npad, const int64_t *pad, ampc_pad_mode mode, double value) {
    if (npad < 0 || npad > 2 * AMPC_MAX_DIMS) {
        ampc_set_error(AMPC_E_RUNTIME, "pad: %d padding values for at most %d dims", npad, AMPC_MAX_DIMS);
        return NULL;
    }
    if (pad_check(input, npad, pad, mode) != AMPC_OK) return NULL;
    int k = npad / 2;
    ampc_tensor *y = mode == AMPC_PAD_CONSTANT ? pad_constant_any(input, k, pad, value)
                                               : pad_trailing(input, k, pad, mode, value);
    if (y && ampc_any_requires_grad(1, &input)) {
        ampc_node_attrs attrs;
        memset(&attrs, 0, sizeof attrs);
        memcpy(attrs.ints, pad, sizeof(int64_t) * (size_t)npad);
        attrs.n_ints = npad;
        const ampc_grad_rule *rule = &pad_rules[mode][k >= 1 && k <= 3 ? k - 1 : 0];
        if (!ampc_autograd_record(rule, 1, &input, 1, &y, 0, NULL, &attrs)) {
            ampc_tensor_decref(y);
            return NULL;
        }
    }
    return y;
}

ampc_tensor *ampc_pad_backward(const ampc_tensor *grad_out, int ndim, const int64_t *input_shape, int npad,
                               const int64_t *pad, ampc_pad_mode mode) {
    char s1[96];
    int k = npad / 2;
    if (mode == AMPC_PAD_CONSTANT || k < 1 || k > 3 || ndim < k || grad_out->ndim != ndim) {
        ampc_set_error(AMPC_E_RUNTIME, "pad_backward: a %s pad of %d values does not fit grad_output %s",
                       (unsigned)mode <= AMPC_PAD_CIRCULAR ? mode_names[mode] : "?", npad,
                       nn_shape(grad_out, s1, sizeof s1));
        return NULL;
    }
    int64_t y_shape[AMPC_MAX_DIMS], x4[4], y4[4];
    memcpy(y_shape, input_shape, sizeof(int64_t) * (size_t)ndim);
    for (int i = 0; i < k; i++) y_shape[ndim - 1 - i] += pad[2 * i] + pad[2 * i + 1];
    for (int d = 0; d < ndim; d++)
        if (grad_out->shape[d] != y_shape[d]) {
            ampc_set_error(AMPC_E_RUNTIME, "pad_backward: expected grad_output of the padded shape, got %s",
                           nn_shape(grad_out, s1, sizeof s1));
            return NULL;
        }
    if (nn_check_floating("pad_backward", grad_out, "grad_output") != AMPC_OK) return NULL;
    as_4d_shape(ndim, input_shape, k, x4);
    as_4d_shape(ndim, y_shape, k, y4);
    ampc_tensor *gx = ampc_empty(ndim, input_shape, grad_out->dtype, grad_out->device);
    if (!gx || ampc_numel(gx) == 0) return gx;
    ampc_tensor *gc = ampc_contiguous(grad_out), *g4 = gc ? nn_reshape_view(gc, 4, y4) : NULL;
    ampc_tensor *gx4 = g4 ? nn_reshape_view(gx, 4, x4) : NULL;
    ampc_tensor *table = gx4 ? make_table(x4, y4, k, pad, mode, grad_out->device) : NULL;
    ampc_status st = table ? AMPC_OK : ampc_last_status();
    if (st == AMPC_OK) {
        ampc_pad_args a = {.out = gx4, .in = g4, .table = table, .fill_bits = 0};
        st = ampc_dispatch_pad(AMPC_OP_PAD_BACKWARD, &a);
    }
    return nn_finish(st, gx, 4, (ampc_tensor *[]){gc, g4, gx4, table});
}

/* d pad / d x of a constant pad is the crop by the same amounts: the negative pad, which
 * records itself under create_graph. */
static ampc_status constant_pad_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs) {
    if (!grads[0]) return AMPC_OK;
    int64_t neg[2 * AMPC_MAX_DIMS];
    for (int i = 0; i < node->attrs.n_ints; i++) neg[i] = -node->attrs.ints[i];
    grad_inputs[0] = ampc_pad(grads[0], node->attrs.n_ints, neg, AMPC_PAD_CONSTANT, 0.0);
    return grad_inputs[0] ? AMPC_OK : ampc_last_status();
}

static ampc_status pad_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs) {
    AMPC_TRY(nn_first_order_only(node));
    if (!grads[0]) return AMPC_OK;
    ampc_pad_mode mode = (ampc_pad_mode)((node->rule - &pad_rules[0][0]) / 3);
    grad_inputs[0] = ampc_pad_backward(grads[0], node->in_ndim[0], node->in_shape[0], node->attrs.n_ints,
                                       node->attrs.ints, mode);
    return grad_inputs[0] ? AMPC_OK : ampc_last_status();
}
