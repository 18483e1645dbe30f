/* test_autograd.c: the autograd engine of the C core (autograd.c) and the foundation rules
 * (derivatives_*.c): values of gradients, accumulation, retain_graph, the version check,
 * hooks, autograd.grad, second order, a 10,000-node chain, and that every node is freed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/derivatives.h"
#include "ctest.h"

/* ------------------------------------------------------------------ helpers */

static ampc_tensor *vec(int n, const double *v) { return ctest_vec(AMPC_FLOAT64, n, v); }

static ampc_tensor *leaf(int n, const double *v) {
    ampc_tensor *t = vec(n, v);
    ampc_set_requires_grad(t, true);
    return t;
}

static double at(const ampc_tensor *t, int64_t i) { return ctest_value(t, i); }

/* The frontends record their own nodes; the helpers record explicitly only where a frontend
 * did not (so the rules can also be driven directly). */
static ampc_tensor *bin(ampc_op op, ampc_tensor *a, ampc_tensor *b) {
    ampc_tensor *out = ampc_binary(op, a, b, ampc_scalar_none());
    const ampc_tensor *ins[2] = {a, b};
    if (out && !out->grad_fn && ampc_any_requires_grad(2, ins)) ampc_ad_record_binary(op, a, b, ampc_scalar_none(), out);
    return out;
}

static ampc_tensor *un(ampc_op op, ampc_tensor *a) {
    ampc_tensor *out = ampc_unary(op, a);
    if (out && !out->grad_fn && ampc_any_requires_grad(1, (const ampc_tensor *const *)&a))
        ampc_ad_record_unary(op, a, out, NULL);
    return out;
}

static ampc_tensor *sum_all(ampc_tensor *a) {
    ampc_tensor *out = ampc_reduce(AMPC_OP_SUM, a, 0, NULL, false, AMPC_DTYPE_UNDEFINED);
    if (out && !out->grad_fn && ampc_any_requires_grad(1, (const ampc_tensor *const *)&a))
        ampc_ad_record_reduce(AMPC_OP_SUM, a, 0, NULL, false, out);
    return out;
}

/* Every test leaves as many graph nodes and tensors alive as it found. */
static int64_t nodes_before, tensors_before;
static void begin(void) {
    nodes_before = ampc_live_nodes();
    tensors_before = ampc_live_tensors();
    ampc_clear_error();
}
static void end(void) {
    CHECK(ampc_live_nodes() == nodes_before);
    CHECK(ampc_live_tensors() == tensors_before);
    ampc_set_grad_enabled(true);
}

static bool error_has(const char *text) { return strstr(ampc_last_error(), text) != NULL; }

/* root.backward(retain_graph=retain): one root, its implicit gradient, into every leaf. */
static ampc_status backward(ampc_tensor *root, bool retain) {
    return ampc_backward(1, &root, NULL, retain, false, 0, NULL, NULL, false);
}

/* ------------------------------------------------------------------ tests */

CTEST(autograd_grad_mode) {
    begin();
    double v[2] = {1, 2};
    ampc_tensor *x = leaf(2, v);
    const ampc_tensor *ins[1] = {x};
    CHECK(ampc_grad_enabled() && ampc_any_requires_grad(1, ins));
    ampc_set_grad_enabled(false);
    CHECK(!ampc_grad_enabled() && !ampc_any_requires_grad(1, ins));
    ampc_set_grad_enabled(true);
    ampc_set_inference_mode(true);
    CHECK(!ampc_grad_enabled() && ampc_inference_mode_enabled());
    ampc_set_inference_mode(false);
    bool prev = ampc_grad_mode_pause();
    CHECK(prev && !ampc_grad_enabled());
    ampc_grad_mode_restore(prev);
    CHECK(ampc_grad_enabled());
    ampc_tensor *i = ampc_zeros(1, (int64_t[]){2}, AMPC_INT64, ampc_cpu_device());
    CHECK(ampc_set_requires_grad(i, true) != AMPC_OK && error_has("only Tensors of floating point dtype"));
    ampc_tensor_decref(i);
    ampc_tensor_decref(x);
    end();
}

CTEST(autograd_simple_chain) {
    begin();
    double va[3] = {1, 2, 3}, vb[3] = {4, -5, 6};
    ampc_tensor *a = leaf(3, va), *b = leaf(3, vb);
    ampc_tensor *ab = bin(AMPC_OP_MUL, a, b);
    ampc_tensor *s = bin(AMPC_OP_ADD, ab, a);
    ampc_tensor *y = sum_all(s);
    CHECK(y && y->grad_fn && !strcmp(ampc_node_name(y->grad_fn), "SumBackward0"));
    CHECK(backward(y, false) == AMPC_OK);
    for (int i = 0; i < 3; i++) {
        CHECK_CLOSE(at(a->grad, i), vb[i] + 1, 1e-12); /* d(ab + a)/da = b + 1 */
        CHECK_CLOSE(at(b->grad, i), va[i], 1e-12);     /* d/db = a */
    }
    CHECK(a->grad->dtype == AMPC_FLOAT64 && !a->grad->requires_grad && !a->grad->grad_fn);
    /* the graph was freed of its saved tensors: a second pass fails with PyTorch's text */
    CHECK(backward(y, false) != AMPC_OK);
    CHECK(error_has("Trying to backward through the graph a second time"));
    DECREF(y, s, ab, a, b);
    end();
}

CTEST(autograd_accumulates_and_retains) {
    begin();
    double va[2] = {1.5, -2};
    ampc_tensor *a = leaf(2, va);
    ampc_tensor *sq = bin(AMPC_OP_MUL, a, a);
    ampc_tensor *y = sum_all(sq);
    CHECK(backward(y, true) == AMPC_OK);
    CHECK(backward(y, false) == AMPC_OK);
    for (int i = 0; i < 2; i++) CHECK_CLOSE(at(a->grad, i), 4 * va[i], 1e-12); /* 2 a, twice */
    /* non-scalar root without a gradient */
    CHECK(backward(sq, false) != AMPC_OK);
    CHECK(error_has("grad can be implicitly created only for scalar outputs"));
    ampc_tensor *c = vec(2, va);
    CHECK(backward(c, false) != AMPC_OK);
    CHECK(error_has("element 0 of tensors does not require grad and does not have a grad_fn"));
    DECREF(c, y, sq, a);
    end();
}

CTEST(autograd_broadcast_and_dtype) {
    begin();
    /* (3, 1) * (2,) float32 -> grads summed back to each shape */
    ampc_tensor *a = ampc_full(2, (int64_t[]){3, 1}, ampc_scalar_float(2.0), AMPC_FLOAT32, ampc_cpu_device());
    ampc_tensor *b = ampc_full(1, (int64_t[]){2}, ampc_scalar_float(3.0), AMPC_FLOAT64, ampc_cpu_device());
    ampc_set_requires_grad(a, true);
    ampc_set_requires_grad(b, true);
    ampc_tensor *p = bin(AMPC_OP_MUL, a, b); /* float64 (3, 2) */
    ampc_tensor *y = sum_all(p);
    CHECK(backward(y, false) == AMPC_OK);
    CHECK(a->grad && a->grad->dtype == AMPC_FLOAT32 && a->grad->ndim == 2 && a->grad->shape[0] == 3 &&
          a->grad->shape[1] == 1);
    CHECK_CLOSE(at(a->grad, 1), 6.0, 1e-6); /* sum over the broadcast dim of b */
    CHECK(b->grad && b->grad->dtype == AMPC_FLOAT64 && b->grad->shape[0] == 2);
    CHECK_CLOSE(at(b->grad, 0), 6.0, 1e-12);
    DECREF(y, p, a, b);
    end();
}

CTEST(autograd_version_check) {
    begin();
    double v[2] = {0.5, 1};
    ampc_tensor *x = leaf(2, v);
    ampc_tensor *e = un(AMPC_OP_EXP, x); /* saves its output */
    ampc_tensor *y = sum_all(e);
    CHECK(ampc_fill_(e, ampc_scalar_float(1.0)) == AMPC_OK); /* modifies the saved output */
    CHECK(backward(y, false) != AMPC_OK);
    CHECK(error_has("one of the variables needed for gradient computation has been modified by an inplace "
                    "operation: [ampc.DoubleTensor [2]], which is output 0 of Exp, is at version"));
    /* leaf in-place */
    CHECK(ampc_autograd_check_inplace(x) != AMPC_OK &&
          error_has("a leaf Variable that requires grad is being used in an in-place operation."));
    ampc_set_grad_enabled(false);
    CHECK(ampc_autograd_check_inplace(x) == AMPC_OK); /* allowed under no_grad */
    ampc_set_grad_enabled(true);
    DECREF(y, e, x);
    end();
}

CTEST(autograd_deep_chain_frees) {
    begin();
    int64_t live_before = ampc_live_nodes();
    double v[1] = {1.0};
    ampc_tensor *x = leaf(1, v);
    ampc_tensor *h = x;
    ampc_tensor_incref(h);
    ampc_tensor *half = ampc_wrap_scalar(ampc_scalar_float(0.5), ampc_cpu_device());
    for (int i = 0; i < 10000; i++) { /* h = h * 0.5 + h * 0.5: 20,000 nodes */
        ampc_tensor *p = bin(AMPC_OP_MUL, h, half);
        ampc_tensor *q = bin(AMPC_OP_ADD, p, p);
        ampc_tensor_decref(p);
        ampc_tensor_decref(h);
        h = q;
        if (!h) break;
    }
    CHECK(h && ampc_live_nodes() - live_before > 10000);
    CHECK(backward(h, false) == AMPC_OK);
    CHECK_CLOSE(at(x->grad, 0), 1.0, 1e-9);
    ampc_tensor_decref(h); /* frees 20,000 nodes without recursion */
    CHECK(ampc_live_nodes() == live_before + 0);
    ampc_tensor_decref(half);
    ampc_tensor_decref(x);
    end();
}

CTEST(autograd_grad_inputs_and_unused) {
    begin();
    double va[2] = {1, 2}, vb[2] = {3, 4};
    ampc_tensor *a = leaf(2, va), *b = leaf(2, vb), *c = leaf(2, vb);
    ampc_tensor *p = bin(AMPC_OP_MUL, a, b);
    ampc_tensor *y = sum_all(p);
    ampc_tensor *ins[2] = {a, p}, *grads[2];
    CHECK(ampc_backward(1, &y, NULL, true, false, 2, ins, grads, false) == AMPC_OK);
    CHECK(!a->grad && !b->grad); /* autograd.grad leaves .grad alone */
    CHECK_CLOSE(at(grads[0], 1), 4.0, 1e-12);
    CHECK_CLOSE(at(grads[1], 0), 1.0, 1e-12); /* d sum(p)/dp */
    ampc_tensor_decref(grads[0]);
    ampc_tensor_decref(grads[1]);
    ampc_tensor *ins2[2] = {b, c};
    CHECK(ampc_backward(1, &y, NULL, true, false, 2, ins2, grads, false) != AMPC_OK);
    CHECK(error_has("The differentiated Tensor at index 1 appears to not have been used in the graph."));
    CHECK(ampc_backward(1, &y, NULL, true, false, 2, ins2, grads, true) == AMPC_OK);
    CHECK(grads[1] == NULL && grads[0] && fabs(at(grads[0], 0) - 1.0) < 1e-12);
    ampc_tensor_decref(grads[0]);
    /* backward(inputs=[b]) accumulates into b only */
    ampc_tensor *only_b[1] = {b};
    CHECK(ampc_backward(1, &y, NULL, false, false, 1, only_b, NULL, false) == AMPC_OK);
    CHECK(!a->grad && b->grad && fabs(at(b->grad, 1) - 2.0) < 1e-12);
    DECREF(y, p, a, b, c);
    end();
}

CTEST(autograd_second_order) {
    begin();
    double v[2] = {1.5, -2};
    ampc_tensor *x = leaf(2, v);
    ampc_tensor *x2 = bin(AMPC_OP_MUL, x, x);
    ampc_tensor *x3 = bin(AMPC_OP_MUL, x2, x);
    ampc_tensor *y = sum_all(x3);
    ampc_tensor *g = NULL;
    CHECK(ampc_backward(1, &y, NULL, true, true, 1, &x, &g, false) == AMPC_OK);
    CHECK(g && g->requires_grad && g->grad_fn); /* 3 x^2, with a graph */
    CHECK_CLOSE(at(g, 0), 3 * v[0] * v[0], 1e-12);
    ampc_tensor *gs = sum_all(g);
    CHECK(backward(gs, false) == AMPC_OK);
    CHECK_CLOSE(at(x->grad, 0), 6 * v[0], 1e-12); /* d(3x^2)/dx = 6x */
    CHECK_CLOSE(at(x->grad, 1), 6 * v[1], 1e-12);
    DECREF(gs, g, y, x3, x2, x);
    end();
}

static int hook_calls = 0;
static ampc_status double_hook(void *ctx, const ampc_tensor *grad, ampc_tensor **rep) {
    (void)ctx;
    hook_calls++;
    ampc_tensor *two = ampc_wrap_scalar(ampc_scalar_float(2.0), grad->device);
    *rep = ampc_binary(AMPC_OP_MUL, grad, two, ampc_scalar_none());
    ampc_tensor_decref(two);
    return *rep ? AMPC_OK : ampc_last_status();
}
static int released = 0;
static void count_release(void *ctx) {
    (void)ctx;
    released++;
}

CTEST(autograd_hooks_and_retain_grad) {
    begin();
    hook_calls = released = 0;
    double v[2] = {1, 2};
    ampc_tensor *x = leaf(2, v);
    ampc_tensor *h = bin(AMPC_OP_MUL, x, x);
    CHECK(ampc_retain_grad(h) == AMPC_OK && ampc_retains_grad(h));
    int64_t id = ampc_register_hook(h, double_hook, NULL, count_release);
    int64_t id2 = ampc_register_hook(x, double_hook, NULL, count_release);
    CHECK(id > 0 && id2 > 0);
    ampc_tensor *y = sum_all(h);
    CHECK(backward(y, true) == AMPC_OK);
    CHECK(hook_calls == 2);
    CHECK_CLOSE(at(h->grad, 0), 2.0, 1e-12);        /* retained after the hook doubled it */
    CHECK_CLOSE(at(x->grad, 1), 2 * 2 * 2 * 2, 1e-12); /* 2 * (2x * 2) */
    CHECK(ampc_remove_hook(h, id) && ampc_remove_hook(x, id2) && released == 2);
    CHECK(!ampc_remove_hook(h, id));
    ampc_tensor *c = vec(2, v);
    CHECK(ampc_register_hook(c, double_hook, NULL, NULL) < 0 &&
          error_has("cannot register a hook on a tensor that doesn't require gradient"));
    DECREF(c, y, h, x);
    end();
}

CTEST(autograd_rules_spot_values) {
    begin();
    double v[3] = {0.3, -1.2, 2.0};
    ampc_op ops[] = {AMPC_OP_EXP, AMPC_OP_TANH, AMPC_OP_SIGMOID, AMPC_OP_SIN, AMPC_OP_RELU, AMPC_OP_ABS};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        ampc_tensor *x = leaf(3, v);
        ampc_tensor *y = un(ops[k], x);
        ampc_tensor *s = sum_all(y);
        CHECK(backward(s, false) == AMPC_OK);
        for (int i = 0; i < 3; i++) {
            double a = v[i], want;
            switch (ops[k]) {
            case AMPC_OP_EXP: want = exp(a); break;
            case AMPC_OP_TANH: want = 1 - tanh(a) * tanh(a); break;
            case AMPC_OP_SIGMOID: want = exp(-a) / ((1 + exp(-a)) * (1 + exp(-a))); break;
            case AMPC_OP_SIN: want = cos(a); break;
            case AMPC_OP_RELU: want = a > 0; break;
            default: want = a > 0 ? 1 : -1; break;
            }
            CHECK_CLOSE(at(x->grad, i), want, 1e-9);
        }
        DECREF(s, y, x);
    }
    end();
}

CTEST(autograd_inplace_on_view) {
    begin();
    /* b = zeros(4); b[1:3] += x; y = sum(b * w): dy/dx = w[1:3] */
    double vx[2] = {5, 7}, vw[4] = {1, 2, 3, 4};
    ampc_tensor *x = leaf(2, vx), *w = vec(4, vw);
    ampc_tensor *b = ampc_zeros(1, (int64_t[]){4}, AMPC_FLOAT64, ampc_cpu_device());
    ampc_tensor *v = ampc_slice(b, 0, 1, 3, 1);
    CHECK(ampc_binary_(AMPC_OP_ADD, v, x, ampc_scalar_none()) == AMPC_OK);
    if (!b->requires_grad) CHECK(ampc_ad_record_binary_(AMPC_OP_ADD, NULL, v, x, ampc_scalar_none()) == AMPC_OK);
    CHECK(b->requires_grad && b->grad_fn && !strcmp(ampc_node_name(b->grad_fn), "CopySlices"));
    CHECK(v->grad_fn && !strcmp(ampc_node_name(v->grad_fn), "AsStridedBackward0"));
    ampc_tensor *bw = bin(AMPC_OP_MUL, b, w);
    ampc_tensor *y = sum_all(bw);
    CHECK(backward(y, false) == AMPC_OK);
    CHECK_CLOSE(at(x->grad, 0), 2.0, 1e-12);
    CHECK_CLOSE(at(x->grad, 1), 3.0, 1e-12);
    DECREF(y, bw, v, b);

    /* h = 2 z; h[1] *= 3; sum(h): dz = [2, 6, 2] */
    double vz[3] = {1, 1, 1};
    ampc_tensor *z = leaf(3, vz);
    ampc_tensor *two = ampc_wrap_scalar(ampc_scalar_float(2.0), ampc_cpu_device());
    ampc_tensor *three = ampc_wrap_scalar(ampc_scalar_float(3.0), ampc_cpu_device());
    ampc_tensor *h = bin(AMPC_OP_MUL, z, two);
    ampc_tensor *h1 = ampc_select(h, 0, 1);
    if (!h1->grad_fn) ampc_ad_record_view(AMPC_AD_SELECT, h, h1, 2, (int64_t[]){0, 1});
    CHECK(ampc_binary_(AMPC_OP_MUL, h1, three, ampc_scalar_none()) == AMPC_OK);
    if (strcmp(ampc_node_name(h->grad_fn), "CopySlices"))
        CHECK(ampc_ad_record_binary_(AMPC_OP_MUL, NULL, h1, three, ampc_scalar_none()) == AMPC_OK);
    ampc_tensor *s = sum_all(h);
    CHECK(backward(s, false) == AMPC_OK);
    CHECK_CLOSE(at(z->grad, 0), 2.0, 1e-12);
    CHECK_CLOSE(at(z->grad, 1), 6.0, 1e-12);
    CHECK_CLOSE(at(z->grad, 2), 2.0, 1e-12);
    /* a view of a leaf */
    ampc_tensor *z0 = ampc_select(z, 0, 0);
    if (!z0->grad_fn) ampc_ad_record_view(AMPC_AD_SELECT, z, z0, 2, (int64_t[]){0, 0});
    CHECK(ampc_autograd_check_inplace(z0) != AMPC_OK &&
          error_has("a view of a leaf Variable that requires grad is being used in an in-place operation."));
    DECREF(z0, s, h1, h, two, three, z, x, w);
    end();
}
