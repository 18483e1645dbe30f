/* nn_poolnorm.c: the pools that nn_pool.c does not hold (max_pool3d, avg_pool3d,
 * adaptive_avg_pool3d, adaptive_max_pool2d/3d) and rms_norm, with PyTorch's checks and messages
 * and their gradient rules.
 *
 * One kernel schema (pool3d) serves every spatial rank: an input with nsp spatial dims is viewed
 * as a contiguous (N, C, D, H, W) stack with the missing leading spatial dims 1 (and N 1 when
 * unbatched), and the window arrays are padded with kernel 1, stride 1, padding 0, dilation 1,
 * which leaves the extra dims untouched. Max pools keep flat argmax indices within the plane,
 * so their backward is the plane scatter of max_pool2d_backward over planes viewed (N, C, 1,
 * D * H * W); backward needs only the input's shape, so the nodes keep no input alive. */
#include <float.h>
#include <math.h>
#include <stdio.h>

#include "autocast.h"
#include "autograd.h"
#include "nn_common.h"
#include "nn_poolnorm.h"

/* ---------------------------------------------------------------- pool kinds */

typedef struct pool_kind {
    const char *name;
    ampc_op fwd, bwd;
    const ampc_grad_rule *rule;
    int nsp;      /* spatial dims */
    bool is_max;  /* indices out, scatter backward */
    bool adaptive;
} pool_kind;

static ampc_status max_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs);
static ampc_status avg_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs);

static const ampc_grad_rule max3d_rule = {"MaxPool3DWithIndicesBackward0", max_rule_fn};
static const ampc_grad_rule amax2d_rule = {"AdaptiveMaxPool2DBackward0", max_rule_fn};
static const ampc_grad_rule amax3d_rule = {"AdaptiveMaxPool3DBackward0", max_rule_fn};
static const ampc_grad_rule avg3d_rule = {"AvgPool3DBackward0", avg_rule_fn};
static const ampc_grad_rule aavg3d_rule = {"AdaptiveAvgPool3DBackward0", avg_rule_fn};

static const pool_kind MAX3D = {"max_pool3d", AMPC_OP_MAX_POOL3D, AMPC_OP_MAX_POOL3D_BACKWARD, &max3d_rule, 3, true, false};
static const pool_kind AVG3D = {"avg_pool3d", AMPC_OP_AVG_POOL3D, AMPC_OP_AVG_POOL3D_BACKWARD, &avg3d_rule, 3, false, false};
static const pool_kind AAVG3D = {"adaptive_avg_pool3d", AMPC_OP_ADAPTIVE_AVG_POOL3D,
                                 AMPC_OP_ADAPTIVE_AVG_POOL3D_BACKWARD, &aavg3d_rule, 3, false, true};
static const pool_kind AMAX2D = {"adaptive_max_pool2d", AMPC_OP_ADAPTIVE_MAX_POOL2D,
                                 AMPC_OP_ADAPTIVE_MAX_POOL2D_BACKWARD, &amax2d_rule, 2, true, true};
static const pool_kind AMAX3D = {"adaptive_max_pool3d", AMPC_OP_ADAPTIVE_MAX_POOL3D,
                                 AMPC_OP_ADAPTIVE_MAX_POOL3D_BACKWARD, &amax3d_rule, 3, true, true};
static const ampc_grad_rule frac2d_rule = {"FractionalMaxPool2DBackward0", max_rule_fn};
static const ampc_grad_rule frac3d_rule = {"FractionalMaxPool3DBackward0", max_rule_fn};
static const pool_kind FRAC2D = {"fractional_max_pool2d", AMPC_OP_FRACTIONAL_MAX_POOL2D,
                                 AMPC_OP_FRACTIONAL_MAX_POOL2D_BACKWARD, &frac2d_rule, 2, true, false};
static const pool_kind FRAC3D = {"fractional_max_pool3d", AMPC_OP_FRACTIONAL_MAX_POOL3D,
                                 AMPC_OP_FRACTIONAL_MAX_POOL3D_BACKWARD, &frac3d_rule, 3, true, false};
/* The max kinds by their rule (the backward rule serves them all). */
static const pool_kind *const MAX_KINDS[] = {&MAX3D, &AMAX2D, &AMAX3D, &FRAC2D, &FRAC3D};

/* The window of one call, in (d, h, w) order with the padding of the unused leading dims. */
typedef struct pool_window {
    int64_t k[3], s[3], p[3], d[3];
    bool ceil_mode, count_include_pad;
    int64_t divisor_override;
} pool_window;

static pool_window window_of(int nsp, const int64_t *k, const int64_t *s, const int64_t *p, const int64_t *d) {
    pool_window w;
    memset(&w, 0, sizeof w);
    for (int i = 0; i < 3; i++) {
        int j = i - (3 - nsp); /* index into the caller's arrays */
        bool used = j >= 0 && k;
        w.k[i] = used ? k[j] : (k ? 1 : 0);
        w.s[i] = used ? (s && s[j] ? s[j] : k[j]) : 1;
        w.p[i] = used && p ? p[j] : 0;
        w.d[i] = used && d ? d[j] : 1;
    }
    return w;
}

static int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

/* PyTorch's pooling_output_shape. */
static int64_t pool_out_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil_mode) {
    int64_t out = floor_div(in + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0), stride) + 1;
    if (ceil_mode && (out - 1) * stride >= in + pad) out--;
    return out;
}

/* The (N, C, D, H, W) shape of an input with kind->nsp spatial dims (rank nsp + 1 or nsp + 2). */
static void shape5_of(int nsp, int ndim, const int64_t *shape, int64_t s5[5]) {
    bool batched = ndim == nsp + 2;
    s5[0] = batched ? shape[0] : 1;
    s5[1] = shape[batched ? 1 : 0];
    for (int i = 0; i < 3; i++) {
        int j = i - (3 - nsp);
        s5[2 + i] = j >= 0 ? shape[ndim - nsp + j] : 1;
    }
}

/* The input checked (rank, empty dims, dtype; PyTorch's messages) and viewed 5-d contiguous. */
static ampc_tensor *pool_input5(const pool_kind *kd, const ampc_tensor *x) {
    char s[96];
    int nsp = kd->nsp;
    if (x->ndim != nsp + 1 && x->ndim != nsp + 2) {
        if (kd->adaptive)
            ampc_set_error(AMPC_E_RUNTIME, "%s(): Expected %dD or %dD tensor, but got%s %s", kd->name, nsp + 1, nsp + 2,
                           kd->is_max ? ":" : "", nn_shape(x, s, sizeof s));
        else
            ampc_set_error(AMPC_E_RUNTIME, "non-empty %dD or %dD (batch mode) tensor expected for input", nsp + 1,
                           nsp + 2);
        return NULL;
    }
    int first = x->ndim == nsp + 2 ? 1 : 0; /* the non-batch dims */
    for (int i = kd->adaptive ? 1 : first; i < x->ndim; i++)
        if (x->shape[i] == 0) {
            if (kd->adaptive)
                ampc_set_error(AMPC_E_RUNTIME,
                               "%s(): Expected input to have non-zero size for non-batch dimensions, but input has "
                               "sizes %s with dimension %d being empty",
                               kd->name, nn_shape(x, s, sizeof s), i);
            else /* torch names max_pool3d's check after its per-device template */
                ampc_set_error(AMPC_E_RUNTIME,
                               "%s%s(): Expected input's non-batch dimensions to have positive length, but input has "
                               "a shape of %s and non-batch dimension %d has length zero!",
                               kd->name,
                               kd->is_max ? (x->device.type == AMPC_CPU ? "_with_indices_out_cpu_template"
                                                                       : "_with_indices_out_cuda_template")
                                          : "",
                               nn_shape(x, s, sizeof s), i - first);
            return NULL;
        }
    if (nn_check_floating(kd->name, x, "input") != AMPC_OK) return NULL;
    int64_t s5[5];
    shape5_of(nsp, x->ndim, x->shape, s5);
    ampc_tensor *c = ampc_contiguous(x);
    if (!c) return NULL;
    ampc_tensor *v = nn_reshape_view(c, 5, s5);
    ampc_tensor_decref(c);
    return v;
}

/* PyTorch's pool3d_shape_check (avg: check_input_size) and the output's spatial size. */
static ampc_status window_check(const pool_kind *kd, const ampc_tensor *x5, const pool_window *w, int64_t out[3]) {
    const int64_t *k = w->k, *s = w->s, *d = w->d;
    if (k[0] <= 0 || k[1] <= 0 || k[2] <= 0)
        return ampc_set_error(AMPC_E_RUNTIME, "kernel size should be greater than zero, but got kT: %lld kH: %lld kW: %lld",
                              (long long)k[0], (long long)k[1], (long long)k[2]);
    if (s[0] <= 0 || s[1] <= 0 || s[2] <= 0)
        return ampc_set_error(AMPC_E_RUNTIME, "stride should be greater than zero, but got dT: %lld dH: %lld dW: %lld",
                              (long long)s[0], (long long)s[1], (long long)s[2]);
    if (d[0] <= 0 || d[1] <= 0 || d[2] <= 0)
        return ampc_set_error(AMPC_E_RUNTIME,
                              "dilation should be greater than zero, but got dilationT: %lld dilationH: %lld dilationW: %lld",
                              (long long)d[0], (long long)d[1], (long long)d[2]);
    for (int i = 0; i < 3; i++)
        if (w->p[i] < 0 || w->p[i] > ((k[i] - 1) * d[i] + 1) / 2)
            return ampc_set_error(AMPC_E_RUNTIME,
                                  "pad should be at most half of effective kernel size, but got pad=%lld, "
                                  "kernel_size=%lld and dilation=%lld",
                                  (long long)w->p[i], (long long)k[i], (long long)d[i]);
    const int64_t *in = x5->shape + 2;
    if (!kd->is_max && (in[0] < k[0] || in[1] < k[1] || in[2] < k[2]))
        return ampc_set_error(AMPC_E_RUNTIME,
                              "input image (T: %lld H: %lld W: %lld) smaller than kernel size (kT: %lld kH: %lld kW: %lld)",
                              (long long)in[0], (long long)in[1], (long long)in[2], (long long)k[0], (long long)k[1],
                              (long long)k[2]);
    for (int i = 0; i < 3; i++) out[i] = pool_out_size(in[i], k[i], w->p[i], s[i], d[i], w->ceil_mode);
    if (out[0] < 1 || out[1] < 1 || out[2] < 1)
        return ampc_set_error(AMPC_E_RUNTIME,
                              "Given input size: (%lldx%lldx%lldx%lld). Calculated output size: "
                              "(%lldx%lldx%lldx%lld). Output size is too small",
                              (long long)x5->shape[1], (long long)in[0], (long long)in[1], (long long)in[2],
                              (long long)x5->shape[1], (long long)(out[0] > 0 ? out[0] : 0),
                              (long long)(out[1] > 0 ? out[1] : 0), (long long)(out[2] > 0 ? out[2] : 0));
    return AMPC_OK;
}

/* A 5-d result (steals r) viewed in the caller's rank: the input's leading dims and nsp spatial. */
static ampc_tensor *user_view(ampc_tensor *r, int nsp, int ndim, const int64_t *in_shape) {
    if (!r) return NULL;
    int64_t shape[5];
    int lead = ndim - nsp;
    for (int i = 0; i < lead; i++) shape[i] = in_shape[i];
    for (int i = 0; i < nsp; i++) shape[lead + i] = r->shape[5 - nsp + i];
    ampc_tensor *v = nn_reshape_view(r, ndim, shape);
    ampc_tensor_decref(r);
    return v;
}

static ampc_pool3d_args pool_args(const pool_window *w) {
    ampc_pool3d_args a;
    memset(&a, 0, sizeof a);
    memcpy(a.kernel, w->k, sizeof a.kernel), memcpy(a.stride, w->s, sizeof a.stride);
    memcpy(a.padding, w->p, sizeof a.padding), memcpy(a.dilation, w->d, sizeof a.dilation);
    a.count_include_pad = w->count_include_pad, a.divisor_override = w->divisor_override;
    return a;
}

/* The forward of every pool kind: checks, the kernel, the node. *indices only for max kinds. */
static ampc_status pool_forward(const pool_kind *kd, const ampc_tensor *input, pool_window w, const int64_t *out_size,
                                ampc_tensor **out, ampc_tensor **indices) {
    *out = NULL;
    if (indices) *indices = NULL;
    /* torch's CPU autocast list runs the 3-d pools in fp32 (core/autocast_cpu.c) */
    ampc_autocast_scope ac;
    int acr = ampc_autocast_enter_op(kd->fwd, 1, &input, false, &ac);
    if (acr) return acr < 0 ? ampc_last_status() : ampc_autocast_exit_status(&ac, pool_forward(kd, ac.t[0], w, out_size, out, indices));
    ampc_tensor *x5 = pool_input5(kd, input);
    if (!x5) return ampc_last_status();
    int64_t o[3] = {1, 1, 1};
    ampc_status st = AMPC_OK;
    if (kd->adaptive) {
        for (int i = 0; i < 3; i++) {
            int j = i - (3 - kd->nsp);
            o[i] = j < 0 ? 1 : out_size[j] < 0 ? x5->shape[2 + i] : out_size[j];
        }
    } else {
        st = window_check(kd, x5, &w, o);
    }
    int64_t s5[5] = {x5->shape[0], x5->shape[1], o[0], o[1], o[2]};
    ampc_tensor *y = st == AMPC_OK ? ampc_empty(5, s5, input->dtype, input->device) : NULL;
    ampc_tensor *ind = y && kd->is_max ? ampc_empty(5, s5, AMPC_INT64, input->device) : NULL;
    if (st == AMPC_OK && (!y || (kd->is_max && !ind))) st = ampc_last_status();
    if (st == AMPC_OK && ampc_numel(y) > 0) {
        ampc_pool3d_args a = pool_args(&w);
        a.out = y, a.indices = ind, a.in = x5;
        st = ampc_dispatch_pool3d(kd->fwd, &a);
    }
    ampc_tensor_decref(x5);
    if (st != AMPC_OK) {
        ampc_tensor_decref(y);
        ampc_tensor_decref(ind);
        return st;
    }
    y = user_view(y, kd->nsp, input->ndim, input->shape);
    ind = user_view(ind, kd->nsp, input->ndim, input->shape);
    if (!y || (kd->is_max && !ind)) st = ampc_last_status();
    if (st == AMPC_OK && ampc_any_requires_grad(1, &input)) {
        ampc_node_attrs at;
        memset(&at, 0, sizeof at);
        int64_t v[13] = {w.k[0], w.k[1], w.k[2], w.s[0], w.s[1], w.s[2], w.p[0], w.p[1], w.p[2],
                         w.ceil_mode, w.count_include_pad, w.divisor_override, 0};
        memcpy(at.ints, v, sizeof v);
        at.n_ints = 13;
        if (!ampc_autograd_record(kd->rule, 1, &input, 1, &y, kd->is_max ? 1 : 0, (const ampc_tensor *[]){ind}, &at))
            st = ampc_last_status();
    }
    if (st != AMPC_OK) {
        ampc_tensor_decref(y);
        ampc_tensor_decref(ind);
        return st;
    }
    *out = y;
    if (indices)
        *indices = ind;
    else
        ampc_tensor_decref(ind);
    return AMPC_OK;
}

/* ---------------------------------------------------------------- public forwards */

ampc_status ampc_max_pool3d(const ampc_tensor *input, const int64_t kernel[3], const int64_t stride[3],
                            const int64_t padding[3], const int64_t dilation[3], bool ceil_mode, ampc_tensor **out,
                            ampc_tensor **indices) {
    pool_window w = window_of(3, kernel, stride, padding, dilation);
    w.ceil_mode = ceil_mode;
    return pool_forward(&MAX3D, input, w, NULL, out, indices);
}

ampc_tensor *ampc_avg_pool3d(const ampc_tensor *input, const int64_t kernel[3], const int64_t stride[3],
                             const int64_t padding[3], bool ceil_mode, bool count_include_pad,
                             int64_t divisor_override) {
    if (divisor_override < 0) {
        ampc_set_error(AMPC_E_RUNTIME, "avg_pool3d: divisor_override must be positive, got %lld",
                       (long long)divisor_override);
        return NULL;
    }
    pool_window w = window_of(3, kernel, stride, padding, NULL);
    w.ceil_mode = ceil_mode, w.count_include_pad = count_include_pad, w.divisor_override = divisor_override;
    ampc_tensor *y;
    return pool_forward(&AVG3D, input, w, NULL, &y, NULL) == AMPC_OK ? y : NULL;
}

ampc_tensor *ampc_adaptive_avg_pool3d(const ampc_tensor *input, const int64_t output_size[3]) {
    pool_window w = window_of(3, NULL, NULL, NULL, NULL);
    ampc_tensor *y;
    return pool_forward(&AAVG3D, input, w, output_size, &y, NULL) == AMPC_OK ? y : NULL;
}

ampc_status ampc_adaptive_max_pool_nd(int nsp, const ampc_tensor *input, const int64_t *output_size,
                                      ampc_tensor **out, ampc_tensor **indices) {
    if (nsp != 2 && nsp != 3) return ampc_set_error(AMPC_E_VALUE, "adaptive_max_pool: %d spatial dims", nsp);
    pool_window w = window_of(nsp, NULL, NULL, NULL, NULL);
    return pool_forward(nsp == 2 ? &AMAX2D : &AMAX3D, input, w, output_size, out, indices);
}

/* ---------------------------------------------------------------- backward */

/* grad_out (the output's shape, rank ndim) made contiguous and viewed with shape ns. */
static ampc_tensor *grad_view(const pool_kind *kd, const ampc_tensor *grad_out, int ndim, int nd, const int64_t *ns) {
    if (grad_out->ndim != ndim) {
        ampc_set_error(AMPC_E_RUNTIME, "%s_backward: grad_output of rank %d for an input of rank %d", kd->name,
                       grad_out->ndim, ndim);
        return NULL;
    }
    if (nn_check_floating(kd->name, grad_out, "grad_output") != AMPC_OK) return NULL;
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= ns[i];
    if (ampc_numel(grad_out) != n) {
        ampc_set_error(AMPC_E_RUNTIME, "%s_backward: grad_output has %lld elements, expected %lld", kd->name,
                       (long long)ampc_numel(grad_out), (long long)n);
        return NULL;
    }
    ampc_tensor *c = ampc_contiguous(grad_out);
    if (!c) return NULL;
    ampc_tensor *v = nn_reshape_view(c, nd, ns);
    ampc_tensor_decref(c);
    return v;
}

static ampc_tensor *max_backward(const pool_kind *kd, const ampc_tensor *grad_out, int ndim, const int64_t *input_shape,
                                 const ampc_tensor *indices);

ampc_tensor *ampc_max_pool_nd_backward(int nsp, bool adaptive, const ampc_tensor *grad_out, int ndim,
                                       const int64_t *input_shape, const ampc_tensor *indices) {
    return max_backward(adaptive ? (nsp == 2 ? &AMAX2D : &AMAX3D) : &MAX3D, grad_out, ndim, input_shape, indices);
}

static ampc_tensor *max_backward(const pool_kind *kd, const ampc_tensor *grad_out, int ndim, const int64_t *input_shape,
                                 const ampc_tensor *indices) {
    int nsp = kd->nsp;
    if (ndim != nsp + 1 && ndim != nsp + 2) {
        ampc_set_error(AMPC_E_RUNTIME, "%s_backward: input of rank %d", kd->name, ndim);
        return NULL;
    }
    int64_t x5[5], o = 1;
    shape5_of(nsp, ndim, input_shape, x5);
    for (int i = ndim - nsp; i < grad_out->ndim && grad_out->ndim == ndim; i++) o *= grad_out->shape[i];
    int64_t g4[4] = {x5[0], x5[1], 1, o}, gx4[4] = {x5[0], x5[1], 1, x5[2] * x5[3] * x5[4]};
    ampc_tensor *g = grad_view(kd, grad_out, ndim, 4, g4);
    if (!g) return NULL;
    ampc_tensor *ic = NULL, *iv = NULL, *gx = NULL;
    ampc_status st = AMPC_OK;
    if (indices->dtype != AMPC_INT64 || ampc_numel(indices) != ampc_numel(g))
        st = ampc_set_error(AMPC_E_RUNTIME, "%s_backward: expected int64 indices with %lld elements", kd->name,
                            (long long)ampc_numel(g));
    if (st == AMPC_OK) st = nn_contig(indices, &ic);
    if (st == AMPC_OK && !(iv = nn_reshape_view(ic, 4, g4))) st = ampc_last_status();
    if (st == AMPC_OK && !(gx = ampc_empty(4, gx4, grad_out->dtype, grad_out->device))) st = ampc_last_status();
    if (st == AMPC_OK && ampc_numel(gx) > 0)
        st = ampc_dispatch_max_pool2d_backward(kd->bwd, &(ampc_max_pool2d_backward_args){.grad_x = gx, .grad_y = g,
                                                                                        .indices = iv});
    gx = nn_finish(st, gx, 3, (ampc_tensor *[]){g, ic, iv});
    if (!gx) return NULL;
    ampc_tensor *r = nn_reshape_view(gx, ndim, input_shape);
    ampc_tensor_decref(gx);
    return r;
}

/* Backward of AVG_POOL3D (window w) and ADAPTIVE_AVG_POOL3D: grad y -> grad x. */
static ampc_tensor *avg_backward(const pool_kind *kd, const ampc_tensor *grad_out, int ndim, const int64_t *input_shape,
                                 const pool_window *w) {
    int64_t x5[5];
    shape5_of(kd->nsp, ndim, input_shape, x5);
    int64_t o[3] = {1, 1, 1};
    for (int i = 0; i < 3; i++) {
        int j = i - (3 - kd->nsp);
        o[i] = j < 0 ? 1 : (grad_out->ndim == ndim ? grad_out->shape[ndim - kd->nsp + j] : 0);
    }
    if (!kd->adaptive)
        for (int i = 0; i < 3; i++)
            if (o[i] != pool_out_size(x5[2 + i], w->k[i], w->p[i], w->s[i], w->d[i], w->ceil_mode)) {
                ampc_set_error(AMPC_E_RUNTIME, "%s_backward: grad_output does not have the pooled size", kd->name);
                return NULL;
            }
    int64_t g5[5] = {x5[0], x5[1], o[0], o[1], o[2]};
    ampc_tensor *g = grad_view(kd, grad_out, ndim, 5, g5);
    if (!g) return NULL;
    ampc_tensor *gx = ampc_empty(5, x5, grad_out->dtype, grad_out->device);
    ampc_status st = gx ? AMPC_OK : ampc_last_status();
    if (st == AMPC_OK && ampc_numel(gx) > 0) {
        ampc_pool3d_args a = pool_args(w);
        a.out = gx, a.in = g;
        st = ampc_dispatch_pool3d(kd->bwd, &a);
    }
    gx = nn_finish(st, gx, 1, &g);
    if (!gx) return NULL;
    ampc_tensor *r = nn_reshape_view(gx, ndim, input_shape);
    ampc_tensor_decref(gx);
    return r;
}

static ampc_status max_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs) {
    const ampc_tensor *indices;
    AMPC_TRY(nn_rule_saved(node, 1, &indices));
    if (!grads[0]) return AMPC_OK;
    const pool_kind *kd = NULL;
    for (size_t i = 0; i < sizeof MAX_KINDS / sizeof MAX_KINDS[0]; i++)
        if (MAX_KINDS[i]->rule == node->rule) kd = MAX_KINDS[i];
    grad_inputs[0] = max_backward(kd, grads[0], node->in_ndim[0], node->in_shape[0], indices);
    return grad_inputs[0] ? AMPC_OK : ampc_last_status();
}

static ampc_status avg_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs) {
    AMPC_TRY(nn_first_order_only(node));
    if (!grads[0]) return AMPC_OK;
    const pool_kind *kd = node->rule == &avg3d_rule ? &AVG3D : &AAVG3D;
    const int64_t *v = node->attrs.ints;
    pool_window w;
    memset(&w, 0, sizeof w);
    for (int i = 0; i < 3; i++) w.k[i] = v[i], w.s[i] = v[3 + i], w.p[i] = v[6 + i], w.d[i] = 1;
    w.ceil_mode = v[9] != 0, w.count_include_pad = v[10] != 0, w.divisor_override = v[11];
    grad_inputs[0] = avg_backward(kd, grads[0], node->in_ndim[0], node->in_shape[0], &w);
    return grad_inputs[0] ? AMPC_OK : ampc_last_status();
}

/* ---------------------------------------------------------------- fractional max pooling */

ampc_status ampc_fractional_max_pool_nd(int nsp, const ampc_tensor *input, const int64_t *kernel,
                                        const int64_t *output_size, const ampc_tensor *samples, ampc_tensor **out,
                                        ampc_tensor **indices) {
    *out = NULL;
    if (indices) *indices = NULL;
    if (nsp != 2 && nsp != 3) return ampc_set_error(AMPC_E_VALUE, "fractional_max_pool: %d spatial dims", nsp);
    const pool_kind *kd = nsp == 2 ? &FRAC2D : &FRAC3D;
    ampc_autocast_scope ac; /* torch's CPU autocast list: fp32 */
    int acr = ampc_autocast_enter_op(kd->fwd, 2, (const ampc_tensor *[]){input, samples}, false, &ac);
    if (acr)
        return acr < 0 ? ampc_last_status()
                       : ampc_autocast_exit_status(&ac, ampc_fractional_max_pool_nd(nsp, ac.t[0], kernel, output_size,
                                                                                    ac.t[1], out, indices));
    const char *name = nsp == 2 ? "fractional_max_pool2d" : "fractional_max_pool3d_out";
    char s[96];
    if (input->ndim != nsp + 1 && input->ndim != nsp + 2)
        return ampc_set_error(AMPC_E_RUNTIME, "%s(): Expected %dD or %dD tensor, but got: %s", name, nsp + 1, nsp + 2,
                              nn_shape(input, s, sizeof s));
    for (int i = input->ndim - nsp - 1; i < input->ndim; i++)
        if (input->shape[i] == 0)
            return ampc_set_error(AMPC_E_RUNTIME,
                                  "%s(): Expected input to have non-zero size for non-batch dimensions, but got%s "
                                  "with dimension %d being empty.",
                                  name, nn_shape(input, s, sizeof s), i);
    AMPC_TRY(nn_check_floating(kd->name, input, "input"));
    const ampc_tensor *both[2] = {input, samples};
    AMPC_TRY(nn_check_device(kd->name, 2, both));
    int64_t n = input->ndim == nsp + 2 ? input->shape[0] : 1, c = input->shape[input->ndim - nsp - 1];
    if (samples->dtype != input->dtype)
        return ampc_set_error(AMPC_E_RUNTIME, "Expect _random_samples to have the same dtype as input");
    if (samples->ndim != 3)
        return ampc_set_error(AMPC_E_RUNTIME, "Expect _random_samples to have 3 dimensions, got %d", samples->ndim);
    if (samples->shape[0] < n)
        return ampc_set_error(AMPC_E_RUNTIME, "Expect _random_samples.size(0) no less then input batch size.");
    if (samples->shape[1] != c)
        return ampc_set_error(AMPC_E_RUNTIME, "Expect _random_samples.size(1) equals to input channel size.");
    if (samples->shape[2] != nsp)
        return ampc_set_error(AMPC_E_RUNTIME, "Expect _random_samples.size(2) equals to %d; got %lld.", nsp,
                              (long long)samples->shape[2]);
    static const char *const axis[3] = {"time", "height", "width"};
    for (int j = 0; j < nsp; j++) {
        int64_t in = input->shape[input->ndim - nsp + j];
        /* torch's 3-d check is strict, its 2-d one is not */
        if (output_size[j] + kernel[j] - 1 > in || (nsp == 3 && output_size[j] + kernel[j] - 1 == in))
            return ampc_set_error(AMPC_E_RUNTIME, "%s(): pool %s %lld too large relative to input %s %lld", name,
                                  axis[3 - nsp + j], (long long)kernel[j], axis[3 - nsp + j], (long long)in);
        if (output_size[j] < 0)
            return ampc_set_error(AMPC_E_RUNTIME, "%s(): output size must be non-negative, got %lld", name,
                                  (long long)output_size[j]);
    }
    ampc_tensor *x5 = pool_input5(kd, input);
    if (!x5) return ampc_last_status();
    int64_t s5[5] = {x5->shape[0], x5->shape[1], 1, 1, 1}, k3[3] = {1, 1, 1};
    for (int j = 0; j < nsp; j++) s5[5 - nsp + j] = output_size[j], k3[3 - nsp + j] = kernel[j];
    ampc_tensor *sc = NULL, *y = NULL, *ind = NULL;
    ampc_status st = nn_contig(samples, &sc);
    if (st == AMPC_OK && !(y = ampc_empty(5, s5, input->dtype, input->device))) st = ampc_last_status();
    if (st == AMPC_OK && !(ind = ampc_empty(5, s5, AMPC_INT64, input->device))) st = ampc_last_status();
    if (st == AMPC_OK && ampc_numel(y) > 0) {
        ampc_fractional_max_pool_args a = {.out = y, .indices = ind, .in = x5, .samples = sc,
                                           .kernel = {k3[0], k3[1], k3[2]}};
        st = ampc_dispatch_fractional_max_pool(kd->fwd, &a);
    }
    nn_release(2, (ampc_tensor *[]){x5, sc});
    if (st == AMPC_OK) {
        y = user_view(y, nsp, input->ndim, input->shape);
        ind = user_view(ind, nsp, input->ndim, input->shape);
        if (!y || !ind) st = ampc_last_status();
    }
    if (st == AMPC_OK && ampc_any_requires_grad(1, &input) &&
        !ampc_autograd_record(kd->rule, 1, &input, 1, &y, 1, (const ampc_tensor *[]){ind}, NULL))
        st = ampc_last_status();
    if (st != AMPC_OK) {
        nn_release(2, (ampc_tensor *[]){y, ind});
        return st;
    }
    *out = y;
    if (indices)
        *indices = ind;
    else
        ampc_tensor_decref(ind);
    return AMPC_OK;
}

/* ---------------------------------------------------------------- rms_norm */

static ampc_status rms_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs);
static const ampc_grad_rule rms_norm_rule = {"FusedRmsNormBackward0", rms_rule_fn};

static ampc_status rms_check(const ampc_tensor *x, int n_norm, const int64_t *ns, const ampc_tensor *w, int64_t *m,
                             int64_t *d) {
    char s1[96], s2[96], s3[96];
    const ampc_tensor *all[2] = {x, w};
    AMPC_TRY(nn_check_device("rms_norm", 2, all));
    AMPC_TRY(nn_check_floating("rms_norm", x, "input"));
    bool ok = n_norm >= 1 && n_norm <= x->ndim;
    for (int i = 0; ok && i < n_norm; i++) ok = x->shape[x->ndim - n_norm + i] == ns[i];
    if (!ok)
        return ampc_set_error(AMPC_E_RUNTIME,
                              "Given normalized_shape=%s, expected input with shape [*%s, but got input of size%s",
                              ampc_shape_str(n_norm, ns, s1, sizeof s1), ampc_shape_str(n_norm, ns, s2, sizeof s2) + 1,
                              nn_shape(x, s3, sizeof s3));
    if (w) {
        bool same = w->ndim == n_norm;
        for (int i = 0; same && i < n_norm; i++) same = w->shape[i] == ns[i];
        if (!same)
            return ampc_set_error(AMPC_E_RUNTIME,
                                  "Expected weight to be of same shape as normalized_shape, but got weight of shape %s "
                                  "and normalized_shape = %s",
                                  nn_shape(w, s1, sizeof s1), ampc_shape_str(n_norm, ns, s2, sizeof s2));
        AMPC_TRY(nn_check_floating("rms_norm", w, "weight"));
    }
    *d = 1;
    for (int i = 0; i < n_norm; i++) *d *= ns[i];
    *m = 1;
    for (int i = 0; i < x->ndim - n_norm; i++) *m *= x->shape[i];
    return AMPC_OK;
}

/* t made contiguous and viewed (m, d). */
static ampc_tensor *rows_view(const ampc_tensor *t, int64_t m, int64_t d) {
    ampc_tensor *c = ampc_contiguous(t);
    if (!c) return NULL;
    ampc_tensor *v = nn_reshape_view(c, 2, (int64_t[]){m, d});
    ampc_tensor_decref(c);
    return v;
}

ampc_tensor *ampc_rms_norm(const ampc_tensor *input, int n_norm, const int64_t *normalized_shape,
                           const ampc_tensor *weight, double eps, ampc_tensor **rstd_out) {
    if (rstd_out) *rstd_out = NULL;
    ampc_autocast_scope ac;
    int acr = ampc_autocast_enter(AMPC_OP_RMS_NORM, 2, (const ampc_tensor *[]){input, weight}, false, &ac);
    if (acr)
        return acr < 0 ? NULL
                       : ampc_autocast_exit(&ac, ampc_rms_norm(ac.t[0], n_norm, normalized_shape, ac.t[1], eps, rstd_out));
    int64_t m = 0, d = 0;
    if (rms_check(input, n_norm, normalized_shape, weight, &m, &d) != AMPC_OK) return NULL;
    if (eps < 0) eps = input->dtype == AMPC_FLOAT64 ? DBL_EPSILON : FLT_EPSILON; /* opmath's epsilon, as PyTorch */
    ampc_tensor *x = rows_view(input, m, d), *w = NULL, *y = NULL, *yv = NULL, *rstd = NULL;
    ampc_status st = x ? nn_contig(weight, &w) : ampc_last_status();
    if (st == AMPC_OK) {
        y = ampc_empty(input->ndim, input->shape, input->dtype, input->device);
        yv = y ? nn_reshape_view(y, 2, (int64_t[]){m, d}) : NULL;
        rstd = yv ? ampc_empty(1, (int64_t[]){m}, nn_stats_dtype(input->dtype), input->device) : NULL;
        if (!rstd) st = ampc_last_status();
    }
    if (st == AMPC_OK && m * d > 0)
        st = ampc_dispatch_rms_norm(AMPC_OP_RMS_NORM,
                                    &(ampc_rms_norm_args){.y = yv, .rstd = rstd, .x = x, .weight = w, .eps = eps});
    if (st == AMPC_OK && m > 0 && d == 0) st = ampc_fill_(rstd, ampc_scalar_float(1.0 / sqrt(eps)));
    if (st == AMPC_OK && ampc_any_requires_grad(2, (const ampc_tensor *[]){input, weight})) {
        ampc_node_attrs at;
        memset(&at, 0, sizeof at);
        at.ints[0] = n_norm, at.n_ints = 1;
        if (!ampc_autograd_record(&rms_norm_rule, 2, (const ampc_tensor *[]){input, weight}, 1, &y, 3,
                                  (const ampc_tensor *[]){input, rstd, weight}, &at))
            st = ampc_last_status();
    }
    nn_release(3, (ampc_tensor *[]){x, w, yv});
    if (st != AMPC_OK) {
        ampc_tensor_decref(y);
        ampc_tensor_decref(rstd);
        return NULL;
    }
    if (rstd_out)
        *rstd_out = rstd;
    else
        ampc_tensor_decref(rstd);
    return y;
}

static ampc_status rms_rule_fn(ampc_node *node, ampc_tensor *const *grads, ampc_tensor **grad_inputs) {
    const ampc_tensor *saved[3];
    AMPC_TRY(nn_rule_saved(node, 3, saved));
    if (!grads[0]) return AMPC_OK;
    const ampc_tensor *input = saved[0], *rstd = saved[1], *weight = saved[2];
    int n_norm = (int)node->attrs.ints[0];
    int64_t m = 1, d = 1;
    for (int i = 0; i < input->ndim; i++) *(i < input->ndim - n_norm ? &m : &d) *= input->shape[i];
    bool need_x = node->needs_input_grad[0], need_w = weight && node->needs_input_grad[1];
    ampc_tensor *g = rows_view(grads[0], m, d), *x = g ? rows_view(input, m, d) : NULL, *w = NULL;
    ampc_tensor *gx = NULL, *gw = NULL;
    ampc_status st = x ? nn_contig(weight, &w) : ampc_last_status();
    if (st == AMPC_OK && need_x && !(gx = ampc_empty(2, (int64_t[]){m, d}, input->dtype, input->device)))
        st = ampc_last_status();
    if (st == AMPC_OK && need_w && !(gw = ampc_empty(weight->ndim, weight->shape, weight->dtype, weight->device)))
        st = ampc_last_status();
    if (st == AMPC_OK && (gx || gw)) {
        if (m == 0) {
            if (gw) st = ampc_zero_(gw);
        } else if (d > 0) {
            st = ampc_dispatch_rms_norm_backward(AMPC_OP_RMS_NORM_BACKWARD,
                                                 &(ampc_rms_norm_backward_args){.grad_x = gx, .grad_weight = gw,
                                                                                .grad_y = g, .x = x, .rstd = rstd,
                                                                                .weight = w});
        }
    }
    nn_release(3, (ampc_tensor *[]){g, x, w});
    if (st != AMPC_OK) {
        nn_release(2, (ampc_tensor *[]){gx, gw});
        return st;
    }
    if (gx) {
        grad_inputs[0] = nn_reshape_view(gx, input->ndim, input->shape);
        ampc_tensor_decref(gx);
        if (!grad_inputs[0]) {
            ampc_tensor_decref(gw);
            return ampc_last_status();
        }
    }
    grad_inputs[1] = gw;
    return AMPC_OK;
}
