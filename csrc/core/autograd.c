/* autograd.c: the autograd engine (autograd.h): grad mode, nodes and their lifetime, recording,
 * saved tensors with version checks, tensor hooks, AccumulateGrad and backward itself.
 *
 * Backward (ampc_backward) in four steps, all with explicit work lists so a graph of any depth
 * runs without recursion:
 *   1. discover: walk the edges from the roots, giving every reachable node an entry in a
 *      per-run hash table and counting its dependencies (edges from other reachable nodes);
 *   2. plan: in reverse topological order mark which nodes must run (a node runs when one of
 *      its edges leads to a node that is needed: plain backward needs every AccumulateGrad,
 *      autograd.grad only the nodes of the requested inputs);
 *   3. execute: a ready queue ordered by sequence number (newest first, as PyTorch) pops a node
 *      once all its dependencies ran, applies the tensor hooks to its summed incoming grads,
 *      calls its rule and adds each returned grad into the buffer of the node it leads to;
 *   4. clean up: buffers, and (without retain_graph) every saved tensor of the nodes that ran.
 * Grad mode during backward is create_graph, so rules are recorded exactly when second-order
 * gradients were asked for. */
#include "autograd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "derivatives.h"
#include "ops.h"

/* ------------------------------------------------------------------ grad mode */

static _Thread_local bool grad_mode_disabled = false; /* stored inverted so zero-init means on */
static _Thread_local bool inference_mode = false;
static _Thread_local uint64_t next_sequence_nr = 0;
/* The node whose rule is running (saved outputs are re-attached to it under create_graph). */
static _Thread_local ampc_node *running_node = NULL;
/* the node the engine is executing (its hooks, rule, and the sums and accumulation of its grads) */
static _Thread_local ampc_node *executing_node = NULL;
static int64_t live_nodes = 0;

bool ampc_grad_enabled(void) { return !grad_mode_disabled && !inference_mode; }
void ampc_set_grad_enabled(bool enabled) { grad_mode_disabled = !enabled; }
bool ampc_inference_mode_enabled(void) { return inference_mode; }
void ampc_set_inference_mode(bool enabled) { inference_mode = enabled; }
int64_t ampc_live_nodes(void) { return live_nodes; }

bool ampc_grad_mode_pause(void) {
    bool prev = !grad_mode_disabled;
    grad_mode_disabled = true;
    return prev;
}

void ampc_grad_mode_restore(bool previous) { grad_mode_disabled = !previous; }

bool ampc_any_requires_grad(int n, const ampc_tensor *const *inputs) {
    if (grad_mode_disabled || inference_mode) return false;
    for (int i = 0; i < n; i++)
        if (inputs[i] && inputs[i]->requires_grad) return true;
    return false;
}

/* ------------------------------------------------------------------ per-tensor metadata */

typedef struct ampc_hook {
    int64_t id;
    int32_t output_nr; /* which output of the node it is registered on (0 for leaves) */
    ampc_hook_fn fn;   /* NULL: a retain_grad entry */
    void *ctx;
    void (*release)(void *ctx);
    ampc_tensor *retain; /* retain_grad: the non-leaf (borrowed; removed when it is freed) */
    struct ampc_hook *next;
} ampc_hook;

struct ampc_autograd_meta {
    ampc_node *grad_accumulator; /* weak: the AccumulateGrad node clears it when freed */
    ampc_hook *hooks;            /* hooks of a leaf */
    bool retains_grad;
};

static int64_t next_hook_id = 1;

static struct ampc_autograd_meta *get_meta(ampc_tensor *t) {
    if (!t->autograd_meta) {
        t->autograd_meta = (struct ampc_autograd_meta *)calloc(1, sizeof(struct ampc_autograd_meta));
        if (!t->autograd_meta) ampc_set_error(AMPC_E_NOMEM, "autograd: out of host memory");
    }
    return t->autograd_meta;
}

static void hook_free(ampc_hook *h) {
    if (h->release) h->release(h->ctx);
    free(h);
}

static void hook_list_free(ampc_hook *h) {
    while (h) {
        ampc_hook *next = h->next;
        hook_free(h);
        h = next;
    }
}

static void hook_append(ampc_hook **list, ampc_hook *h) {
    while (*list) list = &(*list)->next;
    *list = h;
}

/* ------------------------------------------------------------------ nodes */

static const ampc_grad_rule accumulate_grad_rule = {"AccumulateGrad", NULL};

/* One allocation per node: the struct followed by its per-input, per-output and saved arrays. */
static ampc_node *node_alloc(int n_in, int n_out, int n_saved) {
    size_t ni = (size_t)n_in, no = (size_t)n_out, ns = (size_t)n_saved;
    size_t off = sizeof(ampc_node), o_next, o_shape_in, o_shape_out, o_dev_in, o_dev_out, o_saved, o_ndim_in,
           o_ndim_out, o_dt_in, o_dt_out, o_needs;
#define PLACE(o, count, type)                                           \
    off = (off + _Alignof(type) - 1) / _Alignof(type) * _Alignof(type); \
    o = off;                                                            \
    off += (count) * sizeof(type)
    PLACE(o_next, ni, ampc_edge);
    PLACE(o_shape_in, ni, int64_t[AMPC_MAX_DIMS]);
    PLACE(o_shape_out, no, int64_t[AMPC_MAX_DIMS]);
    PLACE(o_dev_in, ni, ampc_device);
    PLACE(o_dev_out, no, ampc_device);
    PLACE(o_saved, ns, ampc_saved);
    PLACE(o_ndim_in, ni, int32_t);
    PLACE(o_ndim_out, no, int32_t);
    PLACE(o_dt_in, ni, ampc_dtype);
    PLACE(o_dt_out, no, ampc_dtype);
    PLACE(o_needs, ni, bool);
#undef PLACE
    char *p = (char *)calloc(1, off);
    if (!p) {
        ampc_set_error(AMPC_E_NOMEM, "autograd: out of host memory allocating a graph node");
        return NULL;
    }
    ampc_node *n = (ampc_node *)p;
    n->refcount = 1;
    n->n_inputs = n_in;
    n->n_outputs = n_out;
    n->n_saved = n_saved;
    n->next = (ampc_edge *)(p + o_next);
    n->in_shape = (int64_t(*)[AMPC_MAX_DIMS])(p + o_shape_in);
    n->out_shape = (int64_t(*)[AMPC_MAX_DIMS])(p + o_shape_out);
    n->in_device = (ampc_device *)(p + o_dev_in);
    n->out_device = (ampc_device *)(p + o_dev_out);
    n->saved = (ampc_saved *)(p + o_saved);
    n->in_ndim = (int32_t *)(p + o_ndim_in);
    n->out_ndim = (int32_t *)(p + o_ndim_out);
    n->in_dtype = (ampc_dtype *)(p + o_dt_in);
    n->out_dtype = (ampc_dtype *)(p + o_dt_out);
    n->needs_input_grad = (bool *)(p + o_needs);
    n->materialize_grads = true;
    n->sequence_nr = next_sequence_nr++;
    live_nodes++;
    return n;
}

/* What a node keeps of its input i and its output k: their metadata, enough to shape, cast and
 * place a gradient without holding the tensors. */
static void node_keep_input(ampc_node *n, int i, const ampc_tensor *t) {
    n->in_ndim[i] = t->ndim;
    memcpy(n->in_shape[i], t->shape, sizeof(int64_t) * (size_t)t->ndim);
    n->in_dtype[i] = t->dtype;
    n->in_device[i] = t->device;
}

static void node_keep_output(ampc_node *n, int k, const ampc_tensor *t) {
    n->out_ndim[k] = t->ndim;
    memcpy(n->out_shape[k], t->shape, sizeof(int64_t) * (size_t)t->ndim);
    n->out_dtype[k] = t->dtype;
    n->out_device[k] = t->device;
}

void ampc_node_incref(ampc_node *n) {
    if (n) n->refcount++;
}

static void release_saved(ampc_node *n);
static const ampc_grad_rule copy_slices_rule;

static void release_saved(ampc_node *n) {
    if (n->rule == &copy_slices_rule) release_saved(*(ampc_node **)n->ctx); /* the op inside CopySlices */
    for (int i = 0; i < n->n_saved; i++) {
        ampc_tensor_decref(n->saved[i].unpacked);
        ampc_tensor_decref(n->saved[i].tensor);
        n->saved[i].unpacked = NULL;
        n->saved[i].tensor = NULL;
    }
    n->saved_released = true;
}

/* Nodes whose refcount reached zero wait here; one loop frees them, so freeing a node that frees
 * a tensor that frees the next node never nests deeper than one level. */
static _Thread_local ampc_node **pending = NULL;
static _Thread_local size_t pending_n = 0, pending_cap = 0;
static _Thread_local bool draining = false;

static void node_destroy(ampc_node *n) {
    release_saved(n);
    for (int j = 0; j < n->n_inputs; j++) ampc_node_decref(n->next[j].node);
    if (n->variable) {
        if (n->variable->autograd_meta && n->variable->autograd_meta->grad_accumulator == n)
            n->variable->autograd_meta->grad_accumulator = NULL;
        ampc_tensor_decref(n->variable);
    }
    if (n->ctx_release) n->ctx_release(n->ctx);
    hook_list_free(n->hooks);
    live_nodes--;
    free(n);
}

void ampc_node_decref(ampc_node *n) {
    if (!n || --n->refcount > 0) return;
    if (pending_n == pending_cap) {
        size_t cap = pending_cap ? pending_cap * 2 : 64;
        ampc_node **p = (ampc_node **)realloc(pending, cap * sizeof *p);
        if (!p) { /* out of memory: free this one right away (recursion is the lesser evil) */
            node_destroy(n);
            return;
        }
        pending = p;
        pending_cap = cap;
    }
    pending[pending_n++] = n;
    if (draining) return;
    draining = true;
    while (pending_n) node_destroy(pending[--pending_n]);
    draining = false;
}

const char *ampc_node_name(const ampc_node *n) { return n->rule && n->rule->name ? n->rule->name : "Node"; }
const ampc_node *ampc_running_node(void) { return running_node ? running_node : executing_node; }

/* ------------------------------------------------------------------ edges and recording */

static ampc_node *grad_accumulator(ampc_tensor *t) {
    struct ampc_autograd_meta *m = get_meta(t);
    if (!m) return NULL;
    if (m->grad_accumulator) {
        ampc_node_incref(m->grad_accumulator);
        return m->grad_accumulator;
    }
    ampc_node *acc = node_alloc(0, 1, 0);
    if (!acc) return NULL;
    acc->rule = &accumulate_grad_rule;
    acc->sequence_nr = UINT64_MAX; /* accumulate as soon as ready: frees the grad early */
    node_keep_output(acc, 0, t);
    ampc_tensor_incref(t);
    acc->variable = t;
    m->grad_accumulator = acc;
    return acc;
}

ampc_edge ampc_gradient_edge(ampc_tensor *t) {
    ampc_edge e = {NULL, 0};
    if (t->grad_fn) {
        ampc_node_incref(t->grad_fn);
        e.node = t->grad_fn;
        e.input_nr = t->output_nr;
    } else if (t->requires_grad) {
        e.node = grad_accumulator(t);
    }
    return e;
}

/* A tensor over t's memory that references neither t nor t's base (ampc_alias would keep the
 * base alive through view_base): what a node saves of its own outputs. */
static ampc_tensor *detached_alias(const ampc_tensor *t) {
    return ampc_tensor_from_storage(t->storage, t->offset, t->ndim, t->shape, t->strides, t->dtype);
}

/* Moves t's retain_grad entry from the node it was on to `to` (in-place ops rebase history). */
static void move_retain_hook(ampc_tensor *t, ampc_node *from, ampc_node *to, int output_nr) {
    for (ampc_hook **p = &from->hooks; *p; p = &(*p)->next)
        if ((*p)->retain == t) {
            ampc_hook *h = *p;
            *p = h->next;
            h->next = NULL;
            h->output_nr = output_nr;
            hook_append(&to->hooks, h);
            return;
        }
}

/* The node of a recording, with its edges, metadata and saved tensors, not yet attached to the
 * outputs. */
static ampc_node *build_node(const ampc_grad_rule *rule, int n_inputs, const ampc_tensor *const *inputs,
                             int n_outputs, ampc_tensor *const *outputs, int n_saved, const ampc_tensor *const *saved,
                             const ampc_node_attrs *attrs) {
    ampc_node *n = node_alloc(n_inputs, n_outputs, n_saved);
    if (!n) return NULL;
    n->rule = rule;
    if (attrs) n->attrs = *attrs;
    /* Inputs first: for an in-place op input 0 is also the output, and its edge must be the
     * history it had before this op. */
    for (int i = 0; i < n_inputs; i++) {
        const ampc_tensor *t = inputs[i];
        if (!t) continue;
        node_keep_input(n, i, t);
        if (t->requires_grad) {
            n->next[i] = ampc_gradient_edge((ampc_tensor *)t);
            if (!n->next[i].node) goto fail;
            n->needs_input_grad[i] = true;
        }
    }
    for (int s = 0; s < n_saved; s++) {
        const ampc_tensor *t = saved[s];
        if (!t) continue;
        ampc_saved *sv = &n->saved[s];
        sv->version = t->storage->version;
        for (int k = 0; k < n_outputs; k++)
            if (outputs[k] == t) {
                sv->is_output = true;
                sv->output_nr = k;
            }
        if (sv->is_output) {
            sv->tensor = detached_alias(t); /* the node must not own its own output: no cycle */
            if (!sv->tensor) goto fail;
        } else {
            ampc_tensor_incref((ampc_tensor *)t);
            sv->tensor = (ampc_tensor *)t;
        }
    }
    for (int k = 0; k < n_outputs; k++) {
        ampc_tensor *t = outputs[k];
        if (!t) continue;
        node_keep_output(n, k, t);
    }
    return n;
fail:
    ampc_node_decref(n);
    return NULL;
}

/* Makes n the grad_fn of t (output k), rebasing t's history if it had one. */
static void attach(ampc_node *n, ampc_tensor *t, int k) {
    ampc_node *old = t->grad_fn;
    ampc_node_incref(n);
    t->grad_fn = n;
    t->output_nr = k;
    t->requires_grad = true;
    if (old) {
        if (t->autograd_meta && t->autograd_meta->retains_grad) move_retain_hook(t, old, n, k);
        ampc_node_decref(old);
    }
}

/* ------------------------------------------------------------------ in-place ops on views
 *
 * `v = base[...]; v.mul_(w)` changes base too, so base's history must include the op (PyTorch's
 * CopySlices): base gets a CopySlices node whose backward runs the op's rule on the slice of the
 * gradient that v covers and passes the rest through, and v gets an AsStridedBackward0 node
 * that reads its gradient from base's. Supported for contiguous bases (fresh tensors: the common
 * case of building a tensor by slice assignment); second order through it is not. */

typedef struct copy_slices_ctx {
    ampc_node *fn; /* the in-place op's own node: its rule, saved tensors and input metadata */
    int ndim;      /* where v sits inside base, in base's contiguous layout */
    int64_t shape[AMPC_MAX_DIMS], strides[AMPC_MAX_DIMS], offset;
} copy_slices_ctx;

static void copy_slices_release(void *ctx) {
    copy_slices_ctx *cs = (copy_slices_ctx *)ctx;
    ampc_node_decref(cs->fn);
    free(cs);
}

/* The region of v inside a contiguous tensor shaped like base. */
static ampc_tensor *region_of(const copy_slices_ctx *cs, const ampc_tensor *base_like) {
    return ampc_as_strided(base_like, cs->ndim, cs->shape, cs->strides, base_like->offset + cs->offset);
}

/* g (shaped like v) summed/cast to the op's input 0 and written into the region; NULL g: zeros */
static ampc_status write_region(const copy_slices_ctx *cs, ampc_tensor *result, ampc_tensor *g) {
    ampc_tensor *region = region_of(cs, result);
    if (!region) return ampc_last_status();
    ampc_status st = g ? ampc_copy_(region, g) : ampc_zero_(region);
    ampc_tensor_decref(region);
    return st;
}

static ampc_status copy_slices_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    copy_slices_ctx *cs = (copy_slices_ctx *)n->ctx;
    ampc_node *fn = cs->fn;
    bool prev = ampc_grad_mode_pause();
    ampc_status st = AMPC_OK;
    ampc_tensor *result = ampc_clone(go[0]); /* contiguous, shaped like base */
    ampc_tensor *region = result ? region_of(cs, result) : NULL;
    ampc_tensor *gv = region ? ampc_clone(region) : NULL;
    ampc_tensor_decref(region);
    ampc_tensor **fgi = (ampc_tensor **)calloc((size_t)fn->n_inputs, sizeof *fgi);
    if (!gv || !fgi) st = fgi ? ampc_last_status() : ampc_set_error(AMPC_E_NOMEM, "backward: out of host memory");
    if (st == AMPC_OK) {
        bool needs0 = fn->needs_input_grad[0];
        fn->needs_input_grad[0] = n->needs_input_grad[0];
        for (int j = 1; j < fn->n_inputs; j++) fn->needs_input_grad[j] = n->needs_input_grad[j];
        ampc_node *prev_running = running_node;
        running_node = fn;
        st = fn->rule->backward(fn, &gv, fgi);
        running_node = prev_running;
        fn->needs_input_grad[0] = needs0;
    }
    if (st == AMPC_OK && n->needs_input_grad[0]) {
        ampc_tensor *g0 = fgi[0] ? ampc_sum_to_shape(fgi[0], fn->in_ndim[0], fn->in_shape[0]) : NULL;
        if (fgi[0] && !g0) st = ampc_last_status();
        if (st == AMPC_OK) st = write_region(cs, result, g0);
        ampc_tensor_decref(g0);
        if (st == AMPC_OK) {
            gi[0] = result;
            result = NULL;
        }
    }
    for (int j = 1; j < n->n_inputs && fgi; j++) {
        if (st == AMPC_OK) gi[j] = fgi[j];
        else ampc_tensor_decref(fgi[j]);
        fgi[j] = NULL;
    }
    if (fgi) ampc_tensor_decref(fgi[0]);
    free(fgi);
    ampc_tensor_decref(gv);
    ampc_tensor_decref(result);
    ampc_grad_mode_restore(prev);
    return st;
}

static ampc_status as_strided_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    /* v's gradient placed where v sits in zeros shaped like base */
    const copy_slices_ctx *cs = (const copy_slices_ctx *)n->ctx;
    bool prev = ampc_grad_mode_pause();
    ampc_tensor *z = ampc_zeros(n->in_ndim[0], n->in_shape[0], n->in_dtype[0], n->in_device[0]);
    ampc_status st = z ? write_region(cs, z, go[0]) : ampc_last_status();
    ampc_grad_mode_restore(prev);
    if (st != AMPC_OK) {
        ampc_tensor_decref(z);
        return st;
    }
    gi[0] = z;
    return AMPC_OK;
}

static const ampc_grad_rule copy_slices_rule = {"CopySlices", copy_slices_backward},
                            as_strided_rule = {"AsStridedBackward0", as_strided_backward};

static ampc_node *record_on_view(const ampc_grad_rule *rule, int n_inputs, const ampc_tensor *const *inputs,
                                 ampc_tensor *v, int n_saved, const ampc_tensor *const *saved,
                                 const ampc_node_attrs *attrs) {
    ampc_tensor *base = v->view_base;
    if (base->requires_grad && !base->grad_fn) {
        ampc_set_error(AMPC_E_RUNTIME, "a view of a leaf Variable that requires grad is being used in an in-place operation.");
        return NULL;
    }
    if (!ampc_is_contiguous(base) || base->ndim > AMPC_MAX_DIMS) {
        ampc_set_error(AMPC_E_NOT_IMPLEMENTED,
                       "%s: an in-place operation on a view of a non-contiguous tensor cannot be differentiated by ampc "
                       "yet; make the tensor contiguous first or use an out-of-place operation",
                       rule->name);
        return NULL;
    }
    ampc_node *fn = build_node(rule, n_inputs, inputs, 1, &v, n_saved, saved, attrs);
    copy_slices_ctx *cs = fn ? (copy_slices_ctx *)calloc(1, sizeof *cs) : NULL;
    ampc_node *c = cs ? node_alloc(n_inputs, 1, 0) : NULL;
    ampc_node *vn = c ? node_alloc(1, 1, 0) : NULL;
    if (!vn) {
        if (fn && !cs) ampc_set_error(AMPC_E_NOMEM, "autograd: out of host memory");
        free(cs);
        ampc_node_decref(c);
        ampc_node_decref(fn);
        return NULL;
    }
    cs->fn = fn;
    cs->ndim = v->ndim;
    memcpy(cs->shape, v->shape, sizeof cs->shape);
    memcpy(cs->strides, v->strides, sizeof cs->strides);
    cs->offset = v->offset - base->offset;
    /* CopySlices: input 0 is base's old history, the others the op's other inputs */
    c->rule = &copy_slices_rule;
    c->ctx = cs;
    c->ctx_release = copy_slices_release;
    for (int j = 0; j < n_inputs; j++) {
        const ampc_tensor *t = j == 0 ? base : inputs[j];
        if (!t) continue;
        node_keep_input(c, j, t);
        if (j > 0) { /* the op's own edges move over */
            c->next[j] = fn->next[j];
            c->needs_input_grad[j] = fn->needs_input_grad[j];
            fn->next[j].node = NULL;
        }
    }
    ampc_node_decref(fn->next[0].node); /* v's old history: replaced by base's */
    fn->next[0].node = NULL;
    if (base->requires_grad) {
        c->next[0] = ampc_gradient_edge(base);
        c->needs_input_grad[0] = true;
    }
    node_keep_output(c, 0, base);
    attach(c, base, 0);
    ampc_node_decref(c);
    /* v reads its gradient out of base's */
    vn->rule = &as_strided_rule;
    vn->ctx = cs; /* borrowed: vn holds c, which owns cs */
    node_keep_input(vn, 0, base);
    vn->next[0] = ampc_gradient_edge(base);
    vn->needs_input_grad[0] = true;
    node_keep_output(vn, 0, v);
    attach(vn, v, 0);
    ampc_node_decref(vn);
    return fn;
}

ampc_node *ampc_autograd_record(const ampc_grad_rule *rule, int n_inputs, const ampc_tensor *const *inputs,
                                int n_outputs, ampc_tensor *const *outputs, int n_saved,
                                const ampc_tensor *const *saved, const ampc_node_attrs *attrs) {
    for (int k = 0; k < n_outputs; k++)
        if (outputs[k] && outputs[k]->requires_grad && !outputs[k]->grad_fn)
            for (int i = 0; i < n_inputs; i++)
                if (inputs[i] == outputs[k]) {
                    ampc_set_error(AMPC_E_RUNTIME,
                                   "a leaf Variable that requires grad is being used in an in-place operation.");
                    return NULL;
                }
    /* an in-place op (output 0 is input 0) on a view: base's history must change too */
    if (n_outputs == 1 && n_inputs >= 1 && inputs[0] && inputs[0] == outputs[0] && outputs[0]->view_base &&
        ampc_dtype_is_floating(outputs[0]->dtype))
        return record_on_view(rule, n_inputs, inputs, outputs[0], n_saved, saved, attrs);
    ampc_node *n = build_node(rule, n_inputs, inputs, n_outputs, outputs, n_saved, saved, attrs);
    if (!n) return NULL;
    bool attached = false;
    for (int k = 0; k < n_outputs; k++) {
        if (!outputs[k] || !ampc_dtype_is_floating(outputs[k]->dtype)) continue; /* indices, masks */
        attach(n, outputs[k], k);
        attached = true;
    }
    if (!attached) {
        ampc_set_error(AMPC_E_RUNTIME, "%s: autograd_record needs a floating-point output", ampc_node_name(n));
        ampc_node_decref(n);
        return NULL;
    }
    ampc_node_decref(n); /* the outputs own it now */
    return n;
}

/* "ExpBackward0" -> "Exp", as PyTorch names a saved tensor's producer in its version error. */
static void forward_name(const char *name, char *buf, size_t cap) {
    snprintf(buf, cap, "%s", name);
    char *b = strstr(buf, "Backward");
    if (b) *b = '\0';
}

static const char *tensor_type_name(const ampc_tensor *t) {
    static const char *const names[AMPC_NUM_DTYPES] = {"FloatTensor", "HalfTensor", "BFloat16Tensor",
                                                       "DoubleTensor", "LongTensor", "IntTensor",
                                                       "ByteTensor",  "BoolTensor"};
    return ampc_dtype_is_valid(t->dtype) ? names[t->dtype] : "Tensor";
}

const ampc_tensor *ampc_node_saved(ampc_node *node, int i) {
    if (i < 0 || i >= node->n_saved) {
        ampc_set_error(AMPC_E_INDEX, "%s: saved tensor %d out of range (%d saved)", ampc_node_name(node), i,
                       node->n_saved);
        return NULL;
    }
    if (node->saved_released) {
        ampc_set_error(AMPC_E_RUNTIME,
                       "Trying to backward through the graph a second time (or directly access saved tensors after "
                       "they have already been freed). Saved intermediate values of the graph are freed when you "
                       "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
                       "through the graph a second time or if you need to access saved tensors after calling "
                       "backward.");
        return NULL;
    }
    ampc_saved *s = &node->saved[i];
    if (!s->tensor) return NULL;
    if (s->tensor->storage->version != s->version) {
        char shape[160], producer[200] = "", fname[64];
        ampc_shape_str(s->tensor->ndim, s->tensor->shape, shape, sizeof shape);
        const ampc_node *by = s->is_output ? node : s->tensor->grad_fn;
        if (by) {
            forward_name(ampc_node_name(by), fname, sizeof fname);
            snprintf(producer, sizeof producer, ", which is output %d of %s,",
                     s->is_output ? s->output_nr : s->tensor->output_nr, fname);
        }
        ampc_set_error(AMPC_E_RUNTIME,
                       "one of the variables needed for gradient computation has been modified by an inplace "
                       "operation: [ampc.%s%s %s]%s is at version %lld; expected version %lld instead.",
                       s->tensor->device.type == AMPC_CUDA ? "cuda." : "", tensor_type_name(s->tensor), shape,
                       producer, (long long)s->tensor->storage->version, (long long)s->version);
        return NULL;
    }
    /* Under create_graph a rule's use of its own output must be differentiable: hand out the
     * output re-attached to this node (PyTorch's SavedVariable::unpack does the same). The
     * engine drops it after the rule, which breaks the node -> tensor -> node cycle. */
    if (s->is_output && running_node == node && ampc_grad_enabled()) {
        if (!s->unpacked) {
            ampc_tensor *a = detached_alias(s->tensor);
            if (!a) return NULL;
            ampc_node_incref(node);
            a->grad_fn = node;
            a->output_nr = s->output_nr;
            a->requires_grad = true;
            s->unpacked = a;
        }
        return s->unpacked;
    }
    return s->tensor;
}

ampc_status ampc_autograd_check_inplace(const ampc_tensor *self) {
    if (!ampc_grad_enabled() || !self->requires_grad) return AMPC_OK;
    if (!self->grad_fn)
        return ampc_set_error(AMPC_E_RUNTIME, "a leaf Variable that requires grad is being used in an in-place operation.");
    const ampc_tensor *base = self->view_base;
    if (base && base->requires_grad && !base->grad_fn)
        return ampc_set_error(AMPC_E_RUNTIME,
                              "a view of a leaf Variable that requires grad is being used in an in-place operation.");
    return AMPC_OK;
}

ampc_tensor *ampc_sum_to_shape(const ampc_tensor *grad, int ndim, const int64_t *shape) {
    char sa[160], sb[160];
    int lead = grad->ndim - ndim;
    bool same = lead == 0;
    for (int i = 0; same && i < ndim; i++) same = grad->shape[i] == shape[i];
    if (same) {
        ampc_tensor_incref((ampc_tensor *)grad);
        return (ampc_tensor *)grad;
    }
    int64_t dims[AMPC_MAX_DIMS];
    int nd = 0;
    if (lead < 0) goto bad;
    for (int i = 0; i < lead; i++) dims[nd++] = i;
    for (int i = 0; i < ndim; i++) {
        int64_t g = grad->shape[lead + i];
        if (shape[i] == g) continue;
        if (shape[i] != 1) goto bad;
        dims[nd++] = lead + i;
    }
    ampc_tensor *r = nd ? ampc_reduce(AMPC_OP_SUM, grad, nd, dims, true, AMPC_DTYPE_UNDEFINED) : NULL;
    if (!nd) {
        ampc_tensor_incref((ampc_tensor *)grad);
        r = (ampc_tensor *)grad;
    }
    if (!r) return NULL;
    ampc_tensor *out = ampc_reshape(r, ndim, shape);
    ampc_tensor_decref(r);
    return out;
bad:
    ampc_set_error(AMPC_E_RUNTIME, "sum_to_shape: a gradient of shape %s cannot be summed to shape %s",
                   ampc_shape_str(grad->ndim, grad->shape, sa, sizeof sa), ampc_shape_str(ndim, shape, sb, sizeof sb));
    return NULL;
}

/* ------------------------------------------------------------------ tensors in autograd */

ampc_status ampc_set_requires_grad(ampc_tensor *t, bool requires_grad) {
    if (requires_grad && !ampc_dtype_is_floating(t->dtype))
        return ampc_set_error(AMPC_E_RUNTIME, "only Tensors of floating point dtype can require gradients");
    if (!requires_grad && t->grad_fn)
        return ampc_set_error(AMPC_E_RUNTIME,
                              "you can only change requires_grad flags of leaf variables. If you want to use a "
                              "computed variable in a subgraph that doesn't require differentiation use var_no_grad "
                              "= var.detach().");
    t->requires_grad = requires_grad;
    return AMPC_OK;
}

ampc_tensor *ampc_detach(const ampc_tensor *t) {
    /* a fresh struct over the same memory (so the version counter is shared) that is not an
     * autograd view: in-place ops on it never reach t's history */
    ampc_tensor *a = detached_alias(t);
    if (a) a->is_wrapped_number = t->is_wrapped_number;
    return a;
}

static void drop_retain_hook(ampc_tensor *t) {
    if (!t->grad_fn || !t->autograd_meta || !t->autograd_meta->retains_grad) return;
    for (ampc_hook **p = &t->grad_fn->hooks; *p; p = &(*p)->next)
        if ((*p)->retain == t) {
            ampc_hook *h = *p;
            *p = h->next;
            hook_free(h);
            break;
        }
    t->autograd_meta->retains_grad = false;
}

ampc_status ampc_detach_(ampc_tensor *t) {
    drop_retain_hook(t);
    ampc_node *old = t->grad_fn;
    t->grad_fn = NULL;
    t->output_nr = 0;
    t->requires_grad = false;
    ampc_node_decref(old);
    return AMPC_OK;
}

void ampc_autograd_tensor_release(ampc_tensor *t) {
    struct ampc_autograd_meta *m = t->autograd_meta;
    if (m) {
        drop_retain_hook(t);
        hook_list_free(m->hooks);
        free(m);
        t->autograd_meta = NULL;
    }
    ampc_node *fn = t->grad_fn;
    t->grad_fn = NULL;
    ampc_node_decref(fn);
}

/* ------------------------------------------------------------------ hooks */

static int visit_hook_ctxs(const ampc_hook *h, ampc_hook_fn hook_fn, int (*visit)(void *, void *), void *arg) {
    for (; h; h = h->next) {
        int r = h->fn == hook_fn && h->ctx ? visit(h->ctx, arg) : 0;
        if (r) return r;
    }
    return 0;
}

int ampc_autograd_visit_owned_ctxs(const ampc_tensor *t, ampc_hook_fn hook_fn, int (*visit)(void *ctx, void *arg),
                                   void *arg) {
    if (!t || t->refcount != 1) return 0;
    int r = t->autograd_meta ? visit_hook_ctxs(t->autograd_meta->hooks, hook_fn, visit, arg) : 0;
    const ampc_node *n = t->grad_fn;
    if (r || !n || n->refcount != 1) return r;
    /* CopySlices and the AsStridedBackward0 of its view keep a C struct (copy_slices_ctx) in
     * ctx: only a custom Function's ctx is the binding's object */
    bool core_ctx = n->rule == &copy_slices_rule || n->rule == &as_strided_rule;
    if (n->ctx && !core_ctx && (r = visit(n->ctx, arg))) return r;
    return visit_hook_ctxs(n->hooks, hook_fn, visit, arg);
}

int64_t ampc_register_hook(ampc_tensor *t, ampc_hook_fn fn, void *ctx, void (*release)(void *ctx)) {
    if (!t->requires_grad) {
        ampc_set_error(AMPC_E_RUNTIME, "cannot register a hook on a tensor that doesn't require gradient");
        return -1;
    }
    ampc_hook *h = (ampc_hook *)calloc(1, sizeof *h);
    if (!h) {
        ampc_set_error(AMPC_E_NOMEM, "register_hook: out of host memory");
        return -1;
    }
    h->id = next_hook_id++;
    h->fn = fn;
    h->ctx = ctx;
    h->release = release;
    if (t->grad_fn) {
        h->output_nr = t->output_nr;
        /* user hooks run before the retain_grad entry: insert ahead of it */
        ampc_hook **p = &t->grad_fn->hooks;
        while (*p && (*p)->fn) p = &(*p)->next;
        h->next = *p;
        *p = h;
    } else {
        struct ampc_autograd_meta *m = get_meta(t);
        if (!m) {
            free(h);
            return -1;
        }
        hook_append(&m->hooks, h);
    }
    return h->id;
}

static bool remove_from(ampc_hook **list, int64_t id) {
    for (ampc_hook **p = list; *p; p = &(*p)->next)
        if ((*p)->id == id) {
            ampc_hook *h = *p;
            *p = h->next;
            hook_free(h);
            return true;
        }
    return false;
}

bool ampc_remove_hook(ampc_tensor *t, int64_t id) {
    if (t->autograd_meta && remove_from(&t->autograd_meta->hooks, id)) return true;
    return t->grad_fn && remove_from(&t->grad_fn->hooks, id);
}

ampc_status ampc_retain_grad(ampc_tensor *t) {
    if (!t->requires_grad)
        return ampc_set_error(AMPC_E_RUNTIME, "can't retain_grad on Tensor that has requires_grad=False");
    if (!t->grad_fn) return AMPC_OK; /* leaves keep their grad anyway */
    struct ampc_autograd_meta *m = get_meta(t);
    if (!m) return ampc_last_status();
    if (m->retains_grad) return AMPC_OK;
    ampc_hook *h = (ampc_hook *)calloc(1, sizeof *h);
    if (!h) return ampc_set_error(AMPC_E_NOMEM, "retain_grad: out of host memory");
    h->id = next_hook_id++;
    h->output_nr = t->output_nr;
    h->retain = t;
    hook_append(&t->grad_fn->hooks, h);
    m->retains_grad = true;
    return AMPC_OK;
}

bool ampc_retains_grad(const ampc_tensor *t) { return t->grad_fn && t->autograd_meta && t->autograd_meta->retains_grad; }

/* ------------------------------------------------------------------ gradient arithmetic */

static bool same_shape(const ampc_tensor *t, int ndim, const int64_t *shape) {
    if (t->ndim != ndim) return false;
    for (int i = 0; i < ndim; i++)
        if (t->shape[i] != shape[i]) return false;
    return true;
}

/* A tensor nobody else can see: safe to overwrite in place. */
static bool exclusively_owned(const ampc_tensor *t) {
    return t->refcount == 1 && t->storage->refcount == 1 && !t->view_base && !t->pyobj && !t->grad_fn &&
           !t->requires_grad && ampc_is_contiguous(t);
}

/* *acc += g (steals g). In place when nothing else can observe *acc and no graph is being
 * built; otherwise a new tensor. */
static ampc_status accumulate_into(ampc_tensor **acc, ampc_tensor *g) {
    if (!*acc) {
        *acc = g;
        return AMPC_OK;
    }
    ampc_status st = AMPC_OK;
    if (!ampc_grad_enabled() && exclusively_owned(*acc) && (*acc)->dtype == g->dtype &&
        same_shape(*acc, g->ndim, g->shape)) {
        st = ampc_binary_(AMPC_OP_ADD, *acc, g, ampc_scalar_none());
    } else {
        ampc_tensor *sum = ampc_binary(AMPC_OP_ADD, *acc, g, ampc_scalar_none());
        if (sum) {
            ampc_tensor_decref(*acc);
            *acc = sum;
        } else {
            st = ampc_last_status();
        }
    }
    ampc_tensor_decref(g);
    return st;
}

/* Stores a gradient into t->grad with PyTorch's AccumulateGrad semantics: the first gradient is
 * kept as a tensor of its own (stolen when nobody else holds it, else cloned, so a user's tensor
 * is never aliased), later ones are added in place, or out of place when building a graph
 * (create_graph), so the old .grad stays intact for the graph that uses it. Borrows g. */
static ampc_status accumulate_grad(ampc_tensor *t, ampc_tensor *g, bool may_steal) {
    if (!t->grad) {
        if (may_steal && !ampc_grad_enabled() && exclusively_owned(g)) {
            ampc_tensor_incref(g);
            t->grad = g;
            return AMPC_OK;
        }
        ampc_tensor *c = ampc_grad_enabled() ? ampc_ad_clone(g) : ampc_clone(g);
        if (!c) return ampc_last_status();
        t->grad = c;
        return AMPC_OK;
    }
    if (!ampc_grad_enabled()) return ampc_binary_(AMPC_OP_ADD, t->grad, g, ampc_scalar_none());
    ampc_tensor *sum = ampc_binary(AMPC_OP_ADD, t->grad, g, ampc_scalar_none());
    if (!sum) return ampc_last_status();
    ampc_tensor_decref(t->grad);
    t->grad = sum;
    return AMPC_OK;
}

/* PyTorch's validate_outputs: a rule's grad for input j reduced to that input's shape and cast
 * to its dtype and device. Steals g; returns a new reference or NULL. */
static ampc_tensor *validate_grad(const ampc_node *n, int j, ampc_tensor *g) {
    if (!same_shape(g, n->in_ndim[j], n->in_shape[j])) {
        ampc_tensor *r = ampc_sum_to_shape(g, n->in_ndim[j], n->in_shape[j]);
        if (!r) {
            char sa[160], sb[160];
            ampc_set_error(AMPC_E_RUNTIME,
                           "Function %s returned an invalid gradient at index %d - got %s but expected shape "
                           "compatible with %s",
                           ampc_node_name(n), j, ampc_shape_str(g->ndim, g->shape, sa, sizeof sa),
                           ampc_shape_str(n->in_ndim[j], n->in_shape[j], sb, sizeof sb));
        }
        ampc_tensor_decref(g);
        g = r;
        if (!g) return NULL;
    }
    if (g->dtype != n->in_dtype[j] || !ampc_device_eq(g->device, n->in_device[j])) {
        ampc_tensor *c = ampc_to(g, n->in_dtype[j], n->in_device[j], false);
        ampc_tensor_decref(g);
        g = c;
    }
    return g;
}

/* Runs the hooks of slot `output_nr` of a node over *grad (replacing it when a hook returns a
 * new gradient), then the retain_grad entry. */
static ampc_status run_hooks(ampc_hook *hooks, int output_nr, ampc_tensor **grad) {
    for (ampc_hook *h = hooks; h; h = h->next) {
        if (h->output_nr != output_nr || !*grad) continue;
        if (h->fn) {
            ampc_tensor *rep = NULL;
            AMPC_TRY(h->fn(h->ctx, *grad, &rep));
            if (rep) {
                if (!same_shape(rep, (*grad)->ndim, (*grad)->shape)) {
                    ampc_tensor_decref(rep);
                    return ampc_set_error(AMPC_E_RUNTIME, "hook has changed the size of value");
                }
                ampc_tensor_decref(*grad);
                *grad = rep;
            }
        } else if (h->retain) {
            AMPC_TRY(accumulate_grad(h->retain, *grad, false));
        }
    }
    return AMPC_OK;
}

/* ------------------------------------------------------------------ the run's bookkeeping */

typedef struct run_entry {
    ampc_node *node;
    int32_t deps;        /* edges from reachable nodes into this one that have not run yet */
    bool visited;        /* reached from the roots */
    bool needed, exec;   /* needed: its grads are wanted; exec: its rule runs */
    bool target;         /* the grad of one of the inputs is taken here */
    ampc_tensor **buf;   /* [node->n_outputs] summed incoming grads, allocated on first use */
} run_entry;

typedef struct run_state {
    run_entry *e;
    size_t n, cap;
    int64_t *table; /* open addressing: entry index + 1, 0 empty */
    size_t table_cap;
    size_t *heap; /* ready entries, max-heap on sequence_nr */
    size_t heap_n;
} run_state;

static size_t hash_ptr(const void *p, size_t cap) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x & (cap - 1);
}

static ampc_status table_grow(run_state *rs) {
    size_t cap = rs->table_cap ? rs->table_cap * 2 : 64;
    int64_t *t = (int64_t *)calloc(cap, sizeof *t);
    if (!t) return ampc_set_error(AMPC_E_NOMEM, "backward: out of host memory");
    for (size_t i = 0; i < rs->n; i++) {
        size_t h = hash_ptr(rs->e[i].node, cap);
        while (t[h]) h = (h + 1) & (cap - 1);
        t[h] = (int64_t)i + 1;
    }
    free(rs->table);
    rs->table = t;
    rs->table_cap = cap;
    return AMPC_OK;
}

/* Index of node's entry; creates one when absent (*created set) unless create is false (-1). */
static int64_t entry_of(run_state *rs, ampc_node *node, bool create, bool *created) {
    if (created) *created = false;
    if (rs->table_cap) {
        size_t h = hash_ptr(node, rs->table_cap);
        while (rs->table[h]) {
            int64_t i = rs->table[h] - 1;
            if (rs->e[i].node == node) return i;
            h = (h + 1) & (rs->table_cap - 1);
        }
    }
    if (!create) return -1;
    if ((rs->n + 1) * 2 > rs->table_cap && table_grow(rs) != AMPC_OK) return -2;
    if (rs->n == rs->cap) {
        size_t cap = rs->cap ? rs->cap * 2 : 32;
        run_entry *e = (run_entry *)realloc(rs->e, cap * sizeof *e);
        if (!e) {
            ampc_set_error(AMPC_E_NOMEM, "backward: out of host memory");
            return -2;
        }
        rs->e = e;
        rs->cap = cap;
    }
    size_t i = rs->n++;
    memset(&rs->e[i], 0, sizeof rs->e[i]);
    rs->e[i].node = node;
    size_t h = hash_ptr(node, rs->table_cap);
    while (rs->table[h]) h = (h + 1) & (rs->table_cap - 1);
    rs->table[h] = (int64_t)i + 1;
    if (created) *created = true;
    return (int64_t)i;
}

static ampc_tensor **entry_buf(run_state *rs, size_t i) {
    run_entry *e = &rs->e[i];
    if (!e->buf) {
        e->buf = (ampc_tensor **)calloc((size_t)(e->node->n_outputs ? e->node->n_outputs : 1), sizeof(ampc_tensor *));
        if (!e->buf) ampc_set_error(AMPC_E_NOMEM, "backward: out of host memory");
    }
    return e->buf;
}

static bool heap_less(const run_state *rs, size_t a, size_t b) {
    return rs->e[a].node->sequence_nr < rs->e[b].node->sequence_nr;
}

static void heap_push(run_state *rs, size_t idx) { /* heap has capacity rs->n */
    size_t i = rs->heap_n++;
    rs->heap[i] = idx;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!heap_less(rs, rs->heap[parent], rs->heap[i])) break;
        size_t t = rs->heap[parent];
        rs->heap[parent] = rs->heap[i];
        rs->heap[i] = t;
        i = parent;
    }
}

static size_t heap_pop(run_state *rs) {
    size_t top = rs->heap[0];
    rs->heap[0] = rs->heap[--rs->heap_n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < rs->heap_n && heap_less(rs, rs->heap[m], rs->heap[l])) m = l;
        if (r < rs->heap_n && heap_less(rs, rs->heap[m], rs->heap[r])) m = r;
        if (m == i) break;
        size_t t = rs->heap[m];
        rs->heap[m] = rs->heap[i];
        rs->heap[i] = t;
        i = m;
    }
    return top;
}

static void run_free(run_state *rs) {
    for (size_t i = 0; i < rs->n; i++) {
        if (rs->e[i].buf) {
            for (int k = 0; k < rs->e[i].node->n_outputs; k++) ampc_tensor_decref(rs->e[i].buf[k]);
            free(rs->e[i].buf);
        }
    }
    free(rs->e);
    free(rs->table);
    free(rs->heap);
}

/* ------------------------------------------------------------------ backward */

static ampc_status root_grad(const ampc_tensor *root, const ampc_tensor *given, int i, ampc_tensor **out) {
    char sa[160], sb[160];
    if (!given) {
        if (ampc_numel(root) != 1)
            return ampc_set_error(AMPC_E_RUNTIME, "grad can be implicitly created only for scalar outputs");
        *out = ampc_full(root->ndim, root->shape, ampc_scalar_int(1), root->dtype, root->device);
        return *out ? AMPC_OK : ampc_last_status();
    }
    if (!same_shape(given, root->ndim, root->shape))
        return ampc_set_error(AMPC_E_RUNTIME,
                              "Mismatch in shape: grad_output[%d] has a shape of ampc.Size(%s) and output[%d] has a "
                              "shape of ampc.Size(%s).",
                              i, ampc_shape_str(given->ndim, given->shape, sa, sizeof sa), i,
                              ampc_shape_str(root->ndim, root->shape, sb, sizeof sb));
    *out = ampc_to(given, root->dtype, root->device, false);
    return *out ? AMPC_OK : ampc_last_status();
}

/* Steps 1 and 2: entries for every node reachable from the roots, dependency counts, and which
 * nodes are needed / run. */
static ampc_status plan(run_state *rs, size_t n_root_entries, bool grad_mode_capture, bool restrict_accumulate) {
    /* discovery (DFS with an explicit stack; entries double as the visit set) */
    size_t *stack = (size_t *)malloc(sizeof(size_t) * (rs->n + 16));
    size_t sp = 0, scap = rs->n + 16;
    if (!stack) return ampc_set_error(AMPC_E_NOMEM, "backward: out of host memory");
    for (size_t i = 0; i < n_root_entries; i++) {
        rs->e[i].visited = true;
        stack[sp++] = i;
    }
    while (sp) {
        ampc_node *node = rs->e[stack[--sp]].node;
        for (int j = 0; j < node->n_inputs; j++) {
            ampc_node *child = node->next[j].node;
            if (!child) continue;
            int64_t c = entry_of(rs, child, true, NULL);
            if (c < 0) {
                free(stack);
                return ampc_last_status();
            }
            rs->e[c].deps++;
            if (!rs->e[c].visited) {
                rs->e[c].visited = true;
                if (sp == scap) {
                    scap *= 2;
                    size_t *s = (size_t *)realloc(stack, sizeof(size_t) * scap);
                    if (!s) {
                        free(stack);
                        return ampc_set_error(AMPC_E_NOMEM, "backward: out of host memory");
                    }
                    stack = s;
                }
                stack[sp++] = (size_t)c;
            }
        }
    }
    free(stack);
    /* topological order (Kahn on a copy of the counts), then needed/exec from the leaves up */
    size_t n = rs->n;
    size_t *order = (size_t *)malloc(sizeof(size_t) * (n ? n : 1));
    int32_t *deg = (int32_t *)malloc(sizeof(int32_t) * (n ? n : 1));
    if (!order || !deg) {
        free(order);
        free(deg);
        return ampc_set_error(AMPC_E_NOMEM, "backward: out of host memory");
    }
    size_t head = 0, tail = 0;
    for (size_t i = 0; i < n; i++) {
        deg[i] = rs->e[i].deps;
        if (!deg[i]) order[tail++] = i;
    }
    while (head < tail) {
        run_entry *e = &rs->e[order[head++]];
        ampc_node *node = e->node;
        for (int j = 0; e->visited && j < node->n_inputs; j++) {
            if (!node->next[j].node) continue;
            int64_t c = entry_of(rs, node->next[j].node, false, NULL);
            if (--deg[c] == 0) order[tail++] = (size_t)c;
        }
    }
    for (size_t k = tail; k-- > 0;) {
        run_entry *e = &rs->e[order[k]];
        if (!e->visited) { /* an input the roots never reach */
            e->exec = e->needed = false;
        } else if (e->node->rule == &accumulate_grad_rule) {
            e->exec = grad_mode_capture ? false : restrict_accumulate ? e->target : true;
        } else {
            e->exec = false;
            for (int j = 0; j < e->node->n_inputs && !e->exec; j++)
                if (e->node->next[j].node) e->exec = rs->e[entry_of(rs, e->node->next[j].node, false, NULL)].needed;
        }
        e->needed = e->visited && (e->exec || e->target);
    }
    free(order);
    free(deg);
    return AMPC_OK;
}

/* Step 3 for one node: hooks, capture, rule, and handing its grads to the nodes its edges lead
 * to. */
static ampc_status execute(run_state *rs, size_t idx, bool retain_graph, int n_inputs, ampc_tensor *const *inputs,
                           const int64_t *input_entry, ampc_tensor **input_grads) {
    ampc_node *node = rs->e[idx].node;
    ampc_tensor **buf = rs->e[idx].buf;
    int n_out = node->n_outputs;
    bool any = false;
    if (buf) {
        if (node->variable) {
            struct ampc_autograd_meta *m = node->variable->autograd_meta;
            if (m) AMPC_TRY(run_hooks(m->hooks, 0, &buf[0]));
        } else if (node->hooks) {
            for (int k = 0; k < n_out; k++) AMPC_TRY(run_hooks(node->hooks, k, &buf[k]));
        }
        for (int k = 0; k < n_out; k++) any |= buf[k] != NULL;
    }
    for (int i = 0; rs->e[idx].target && buf && i < n_inputs; i++) {
        if (input_entry[i] != (int64_t)idx) continue;
        /* the grad of inputs[i]: for a leaf the AccumulateGrad's input, else the slot of grad_fn
         * that is this tensor */
        ampc_tensor *in = inputs[i];
        ampc_tensor *g = buf[node->variable ? 0 : in->output_nr];
        if (!g) continue;
        if (input_grads) {
            ampc_tensor_incref(g);
            input_grads[i] = g;
        } else if (!node->variable) { /* backward(inputs=[non-leaf]) accumulates into .grad */
            AMPC_TRY(accumulate_grad(in, g, false));
        }
    }
    if (!rs->e[idx].exec || !any) return AMPC_OK;
    if (node->variable) return accumulate_grad(node->variable, buf[0], true);

    if (node->materialize_grads)
        for (int k = 0; k < n_out; k++)
            if (!buf[k] && ampc_dtype_is_floating(node->out_dtype[k])) {
                buf[k] = ampc_zeros(node->out_ndim[k], node->out_shape[k], node->out_dtype[k], node->out_device[k]);
                if (!buf[k]) return ampc_last_status();
            }
    int n_in = node->n_inputs;
    ampc_tensor *stack_grads[AMPC_NODE_MAX_INPUTS];
    bool stack_needs[AMPC_NODE_MAX_INPUTS];
    ampc_tensor **grads = n_in <= AMPC_NODE_MAX_INPUTS ? stack_grads : (ampc_tensor **)calloc((size_t)n_in, sizeof *grads);
    bool *saved_needs = n_in <= AMPC_NODE_MAX_INPUTS ? stack_needs : (bool *)calloc((size_t)n_in, sizeof(bool));
    if (!grads || !saved_needs) {
        if (grads != stack_grads) free(grads);
        if (saved_needs != stack_needs) free(saved_needs);
        return ampc_set_error(AMPC_E_NOMEM, "backward: out of host memory");
    }
    /* Ask the rule only for grads some needed node will use (autograd.grad of one input must not
     * compute the others'). */
    for (int j = 0; j < n_in; j++) {
        grads[j] = NULL;
        saved_needs[j] = node->needs_input_grad[j];
        ampc_node *child = node->next[j].node;
        node->needs_input_grad[j] = child && rs->e[entry_of(rs, child, false, NULL)].needed;
    }
    ampc_node *prev_running = running_node;
    running_node = node;
    ampc_status st = node->rule->backward(node, buf, grads);
    running_node = prev_running;
    for (int i = 0; i < node->n_saved; i++) {
        ampc_tensor_decref(node->saved[i].unpacked);
        node->saved[i].unpacked = NULL;
    }
    for (int j = 0; j < n_in; j++) {
        bool wanted = node->needs_input_grad[j];
        node->needs_input_grad[j] = saved_needs[j];
        if (!grads[j]) continue;
        if (st != AMPC_OK || !wanted) {
            ampc_tensor_decref(grads[j]);
            continue;
        }
        ampc_tensor *g = validate_grad(node, j, grads[j]);
        if (!g) {
            st = ampc_last_status();
            continue;
        }
        int64_t c = entry_of(rs, node->next[j].node, false, NULL);
        ampc_tensor **cbuf = entry_buf(rs, (size_t)c);
        if (!cbuf) {
            ampc_tensor_decref(g);
            st = ampc_last_status();
            continue;
        }
        ampc_status a = accumulate_into(&cbuf[node->next[j].input_nr], g);
        if (a != AMPC_OK) st = a;
    }
    if (grads != stack_grads) free(grads);
    if (saved_needs != stack_needs) free(saved_needs);
    if (st == AMPC_OK && !retain_graph) release_saved(node);
    return st;
}

ampc_status ampc_backward(int n_roots, ampc_tensor *const *roots, ampc_tensor *const *grad_roots,
                          bool retain_graph, bool create_graph, int n_inputs, ampc_tensor *const *inputs,
                          ampc_tensor **input_grads, bool allow_unused) {
    run_state rs;
    memset(&rs, 0, sizeof rs);
    ampc_node **root_refs = (ampc_node **)calloc((size_t)(n_roots ? n_roots : 1), sizeof *root_refs);
    int64_t *input_entry = (int64_t *)malloc(sizeof(int64_t) * (size_t)(n_inputs ? n_inputs : 1));
    if (!root_refs || !input_entry) {
        free(root_refs);
        free(input_entry);
        return ampc_set_error(AMPC_E_NOMEM, "backward: out of host memory");
    }
    ampc_status st = AMPC_OK;
    if (input_grads)
        for (int i = 0; i < n_inputs; i++) input_grads[i] = NULL;

    /* roots: their gradient edges and initial grads */
    for (int i = 0; i < n_roots && st == AMPC_OK; i++) {
        ampc_tensor *r = roots[i];
        if (!r->requires_grad) {
            st = ampc_set_error(AMPC_E_RUNTIME, "element %d of tensors does not require grad and does not have a grad_fn", i);
            break;
        }
        ampc_edge e = ampc_gradient_edge(r);
        if (!e.node) {
            st = ampc_last_status();
            break;
        }
        root_refs[i] = e.node;
        ampc_tensor *g = NULL;
        st = root_grad(r, grad_roots ? grad_roots[i] : NULL, i, &g);
        if (st != AMPC_OK) break;
        int64_t idx = entry_of(&rs, e.node, true, NULL);
        ampc_tensor **buf = idx >= 0 ? entry_buf(&rs, (size_t)idx) : NULL;
        if (!buf) {
            ampc_tensor_decref(g);
            st = ampc_last_status();
            break;
        }
        st = accumulate_into(&buf[e.input_nr], g);
    }
    size_t n_root_entries = rs.n;
    /* inputs (autograd.grad / backward(inputs=)): where their grads are taken */
    for (int i = 0; i < n_inputs; i++) input_entry[i] = -1;
    for (int i = 0; i < n_inputs && st == AMPC_OK; i++) {
        ampc_tensor *t = inputs[i];
        if (!t->requires_grad) {
            st = ampc_set_error(AMPC_E_RUNTIME, "One of the differentiated Tensors does not require grad");
            break;
        }
        ampc_node *at = t->grad_fn ? t->grad_fn : t->autograd_meta ? t->autograd_meta->grad_accumulator : NULL;
        if (!at) continue; /* a leaf never used in any graph */
        int64_t idx = entry_of(&rs, at, true, NULL);
        if (idx < 0) {
            st = ampc_last_status();
            break;
        }
        rs.e[idx].target = true;
        input_entry[i] = idx;
    }
    if (st == AMPC_OK) st = plan(&rs, n_root_entries, input_grads != NULL, n_inputs > 0 && !input_grads);
    if (st == AMPC_OK) {
        rs.heap = (size_t *)malloc(sizeof(size_t) * (rs.n ? rs.n : 1));
        if (!rs.heap) st = ampc_set_error(AMPC_E_NOMEM, "backward: out of host memory");
    }
    if (st == AMPC_OK) {
        for (size_t i = 0; i < n_root_entries; i++)
            if (rs.e[i].deps == 0 && rs.e[i].needed) heap_push(&rs, i);
    }
    bool prev_grad_mode = ampc_grad_mode_pause();
    ampc_set_grad_enabled(create_graph);
    while (st == AMPC_OK && rs.heap_n) {
        size_t idx = heap_pop(&rs);
        ampc_node *prev_executing = executing_node;
        executing_node = rs.e[idx].node;
        st = execute(&rs, idx, retain_graph, n_inputs, inputs, input_entry, input_grads);
        executing_node = prev_executing;
        ampc_node *node = rs.e[idx].node;
        if (rs.e[idx].buf) { /* the grads of this node are consumed: free them now */
            for (int k = 0; k < node->n_outputs; k++) {
                ampc_tensor_decref(rs.e[idx].buf[k]);
                rs.e[idx].buf[k] = NULL;
            }
        }
        if (st != AMPC_OK || !rs.e[idx].exec) continue;
        for (int j = 0; j < node->n_inputs; j++) {
            if (!node->next[j].node) continue;
            int64_t c = entry_of(&rs, node->next[j].node, false, NULL);
            if (--rs.e[c].deps == 0 && rs.e[c].needed) heap_push(&rs, (size_t)c);
        }
    }
    ampc_grad_mode_restore(prev_grad_mode);
    if (st == AMPC_OK && input_grads && !allow_unused)
        for (int i = 0; i < n_inputs; i++)
            if (!input_grads[i]) {
                st = ampc_set_error(AMPC_E_RUNTIME,
                                    "The differentiated Tensor at index %d appears to not have been used in the graph. "
                                    "Set allow_unused=True if this is the desired behavior.",
                                    i);
                break;
            }
    if (st != AMPC_OK && input_grads)
        for (int i = 0; i < n_inputs; i++) {
            ampc_tensor_decref(input_grads[i]);
            input_grads[i] = NULL;
        }
    run_free(&rs);
    for (int i = 0; i < n_roots; i++) ampc_node_decref(root_refs[i]);
    free(root_refs);
    free(input_entry);
    return st;
}
