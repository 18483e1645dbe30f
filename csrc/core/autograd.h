/* autograd.h: the reverse-mode autograd engine of the C core (issue 3).
 *
 * Graph: a differentiable frontend that ran with grad mode on and at least one input requiring
 * grad records an ampc_node on its outputs (t->grad_fn, t->output_nr). A node holds edges to the
 * nodes that produced its inputs (or to the AccumulateGrad node of a leaf), the tensors and
 * attributes its gradient rule needs, and the rule itself. Backward walks the graph in reverse
 * topological order with an explicit work list (no recursion), summing incoming gradients per
 * node output, and calls each rule once.
 *
 * Rules are written with the core frontends (ops.h), so when backward runs with
 * create_graph=true (grad mode on during backward) the rules themselves are recorded, which gives
 * second-order gradients for free. Backward of an op runs in the dtype its forward ran in: a rule
 * receives grads in the dtype of the op's outputs; the engine then reduces each returned grad to
 * its input's (broadcast) shape and casts it to the input's dtype, as PyTorch's validate_outputs
 * does, so rules may return a grad of the output's shape and dtype (autocast relies on this).
 *
 * Recording, in a frontend (one block after computing the outputs):
 *     const ampc_tensor *ins[2] = {a, b};
 *     if (ampc_any_requires_grad(2, ins)) {
 *         ampc_node_attrs at = {0};  at.scalars[0] = alpha;
 *         if (!ampc_autograd_record(&my_rule, 2, ins, 1, &out, 2, ins, &at)) { decref out; return NULL; }
 *     }
 * and the rule:
 *     static ampc_status my_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
 *         if (n->needs_input_grad[0]) gi[0] = ...;   // new reference
 *         ...
 *     }
 *     const ampc_grad_rule my_rule = {"MyBackward0", my_backward};
 *
 * Lifetime: a tensor owns its grad_fn; a node owns its edges' nodes and its saved tensors; an
 * AccumulateGrad node owns its leaf (the leaf knows its accumulator only weakly). Saving an output
 * of the node itself stores a detached alias, so there is no cycle. Freeing is iterative: a chain
 * of 100k nodes frees without deep recursion. */
#ifndef AMPC_AUTOGRAD_H
#define AMPC_AUTOGRAD_H

#include "dispatch.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Nodes size their per-input / per-output / saved arrays on creation; these are only the
 * capacities callers may use for stack arrays in the common case (cat takes any count). */
#define AMPC_NODE_MAX_INPUTS 8
#define AMPC_NODE_MAX_OUTPUTS 4
#define AMPC_NODE_MAX_SAVED 8

typedef struct ampc_node ampc_node;

typedef struct ampc_edge {
    ampc_node *node; /* owned reference; NULL when that input needs no grad */
    int input_nr;    /* which output of `node` (which input slot of an AccumulateGrad: 0) */
} ampc_edge;

/* Attributes a rule may need besides tensors (alpha, dims, keepdim, stride, ...). */
#define AMPC_MAX_NODE_INTS 16
typedef struct ampc_node_attrs {
    ampc_scalar scalars[4];
    int64_t ints[AMPC_MAX_NODE_INTS];
    int n_ints;
} ampc_node_attrs;

/* A gradient rule.
 * grad_outputs[i]: gradient w.r.t. output i. When some but not all outputs received a gradient,
 *   the engine fills the missing floating ones with zeros (unless node->materialize_grads is
 *   false), so single-output rules never see NULL; non-floating outputs (indices) stay NULL.
 * grad_inputs[j]: to be set to a new reference (or left NULL: "no gradient") for each input j;
 *   the engine only asks for inputs with node->needs_input_grad[j]. The grad may have the
 *   output's shape or dtype: the engine sums it to the input's shape and casts it. */
typedef ampc_status (*ampc_backward_fn)(ampc_node *node, ampc_tensor *const *grad_outputs,
                                        ampc_tensor **grad_inputs);

typedef struct ampc_grad_rule {
    const char *name;          /* PyTorch's grad_fn name: "AddBackward0", "MmBackward0", ... */
    ampc_backward_fn backward;
} ampc_grad_rule;

/* Saved tensor with the version it had when saved, to detect in-place changes. */
typedef struct ampc_saved {
    ampc_tensor *tensor;   /* owned reference (a detached alias when saving an output); may be NULL */
    int64_t version;
    bool is_output;        /* saved output of this node: stored without grad_fn (no cycle) */
    int32_t output_nr;
    ampc_tensor *unpacked; /* create_graph: the output re-attached to this node while a rule runs */
} ampc_saved;

struct ampc_hook; /* tensor hooks (autograd.c) */

struct ampc_node {
    int64_t refcount;
    const ampc_grad_rule *rule;
    int n_inputs, n_outputs, n_saved;
    ampc_edge *next;                 /* [n_inputs] */
    bool *needs_input_grad;          /* [n_inputs] */
    /* metadata of inputs, to reduce broadcast grads and cast them back to the input dtype */
    int32_t *in_ndim;                /* [n_inputs] */
    int64_t (*in_shape)[AMPC_MAX_DIMS];
    ampc_dtype *in_dtype;
    ampc_device *in_device;
    /* metadata of outputs, to materialise zero grads for outputs no gradient reached */
    int32_t *out_ndim;               /* [n_outputs] */
    int64_t (*out_shape)[AMPC_MAX_DIMS];
    ampc_dtype *out_dtype;
    ampc_device *out_device;
    ampc_saved *saved;               /* [n_saved] */
    bool saved_released;             /* after a backward without retain_graph */
    bool materialize_grads;          /* default true; autograd.Function.set_materialize_grads */
    ampc_node_attrs attrs;
    /* AccumulateGrad: the leaf it accumulates into (owned). NULL for other nodes. */
    ampc_tensor *variable;
    /* opaque payload for nodes made outside the core (Python autograd.Function) */
    void *ctx;
    void (*ctx_release)(void *ctx);
    struct ampc_hook *hooks;         /* hooks on this node's outputs (register_hook, retain_grad) */
    void *pyobj;                     /* borrowed back-pointer to the binding's grad_fn object */
    uint64_t sequence_nr;            /* creation order: the ready queue runs newest first */
};

/* ---- grad mode (thread-local) ---- */
bool ampc_grad_enabled(void); /* false inside no_grad and inside inference_mode */
void ampc_set_grad_enabled(bool enabled);
bool ampc_inference_mode_enabled(void);
void ampc_set_inference_mode(bool enabled);
/* For frontends that compose other frontends and record once themselves: turns recording off
 * and returns the previous setting for ampc_grad_mode_restore. */
bool ampc_grad_mode_pause(void);
void ampc_grad_mode_restore(bool previous);

/* ---- recording (called by frontends after computing outputs) ----
 * True when grad mode is on and any input requires grad: only then does a frontend need to
 * build a node (keeps the no-grad path free of autograd work). NULL entries are allowed. */
bool ampc_any_requires_grad(int n, const ampc_tensor *const *inputs);
/* Builds a node for `rule` over `inputs` (NULLs allowed for non-tensor slots), saves the listed
 * tensors (NULLs allowed), copies attrs (NULL: none), and sets grad_fn/output_nr/requires_grad
 * on every floating output (an output that already had a grad_fn, as in an in-place op, is
 * rebased onto the new node). `saved` may contain inputs or outputs (outputs are saved as
 * detached aliases to avoid a reference cycle). Returns the node (borrowed: owned by the
 * outputs) or NULL with an error. */
ampc_node *ampc_autograd_record(const ampc_grad_rule *rule, int n_inputs, const ampc_tensor *const *inputs,
                                int n_outputs, ampc_tensor *const *outputs, int n_saved,
                                const ampc_tensor *const *saved, const ampc_node_attrs *attrs);
/* Saved tensor i, after checking it was not modified in place since it was saved (PyTorch's
 * "one of the variables needed for gradient computation has been modified by an inplace
 * operation" error) or freed by an earlier backward ("Trying to backward through the graph a
 * second time ..."). Borrowed; NULL with the error set (also when NULL was saved: no error
 * then, check ampc_last_status only if you saved non-NULL). */
const ampc_tensor *ampc_node_saved(ampc_node *node, int i);
/* The rule's name ("AddBackward0", "AccumulateGrad"). */
const char *ampc_node_name(const ampc_node *node);
/* The node whose backward this thread is running, or whose grads the engine is summing and
 * accumulating (NULL in a forward pass): borrowed. */
const ampc_node *ampc_running_node(void);

/* In-place ops on tensors that take part in autograd. Call before modifying `self` (with grad
 * mode on): fails with PyTorch's error when `self` is a leaf that requires grad ("a leaf
 * Variable that requires grad is being used in an in-place operation.") or a view of one. After
 * the op, record a node with `self` as both input 0 and the output: ampc_autograd_record then
 * rebases self's history onto the new node. */
ampc_status ampc_autograd_check_inplace(const ampc_tensor *self);

/* Sums a gradient of `grad`'s shape down to the given (broadcast) input shape. New reference
 * (a new reference to `grad` itself when the shapes already match). */
ampc_tensor *ampc_sum_to_shape(const ampc_tensor *grad, int ndim, const int64_t *shape);

/* ---- running backward ---- */
/* Accumulates d(sum(roots * grad_roots))/d(leaf) into every reachable leaf's .grad, or, when
 * n_inputs > 0 and input_grads != NULL (autograd.grad), returns the gradients w.r.t. `inputs`
 * in `input_grads` instead (new references; NULL for unreachable inputs if allow_unused, else an
 * error). n_inputs > 0 with input_grads == NULL is backward(inputs=...): accumulate into the
 * .grad of those tensors only. grad_roots[i] NULL means ones (only allowed for scalar roots:
 * "grad can be implicitly created only for scalar outputs"). */
ampc_status ampc_backward(int n_roots, ampc_tensor *const *roots, ampc_tensor *const *grad_roots,
                          bool retain_graph, bool create_graph, int n_inputs, ampc_tensor *const *inputs,
                          ampc_tensor **input_grads, bool allow_unused);

void ampc_node_incref(ampc_node *n);
void ampc_node_decref(ampc_node *n); /* iterative: deep graphs free without recursion */

/* ---- tensors in autograd ---- */
/* requires_grad with PyTorch's checks: floating dtypes only ("only Tensors of floating point
 * dtype can require gradients"); only leaves may be set to false. */
ampc_status ampc_set_requires_grad(ampc_tensor *t, bool requires_grad);
/* A new tensor struct over the same memory without history (Tensor.detach). */
ampc_tensor *ampc_detach(const ampc_tensor *t);
/* Drops t's history in place, making it a leaf that does not require grad (detach_). */
ampc_status ampc_detach_(ampc_tensor *t);
/* The gradient edge of t: (grad_fn, output_nr) or (t's AccumulateGrad node, 0) for a leaf that
 * requires grad (created on first use); node NULL when t does not require grad. The node
 * reference is new. */
ampc_edge ampc_gradient_edge(ampc_tensor *t);
/* Frees the autograd state of a tensor that is being destroyed (tensor.c calls it). */
void ampc_autograd_tensor_release(ampc_tensor *t);

/* ---- hooks ----
 * A hook sees the gradient of the tensor it was registered on before it is used (accumulated
 * into a leaf's .grad or passed to grad_fn's rule) and may replace it: set *replacement to a
 * new reference of the same shape, or leave it NULL. `release(ctx)` runs when the hook is
 * removed or its tensor/node freed (the binding uses it to drop its Python callable). */
typedef ampc_status (*ampc_hook_fn)(void *ctx, const ampc_tensor *grad, ampc_tensor **replacement);
/* Returns a handle id (> 0) for ampc_remove_hook, or -1 with an error (t does not require grad:
 * "cannot register a hook on a tensor that doesn't require gradient"). */
int64_t ampc_register_hook(ampc_tensor *t, ampc_hook_fn fn, void *ctx, void (*release)(void *ctx));
/* For a binding's garbage collector: visit(ctx) for each context the graph keeps that t owns
 * alone: the ctx of every hook of kind hook_fn on t, and when t is its grad_fn's only owner, that
 * node's ctx (a custom Function) and its hook_fn hooks. Only with t's refcount 1 (its wrapper is
 * its only owner), so a collector never counts references that someone else also holds. Stops at
 * the first nonzero visit result and returns it. */
int ampc_autograd_visit_owned_ctxs(const ampc_tensor *t, ampc_hook_fn hook_fn, int (*visit)(void *ctx, void *arg),
                                   void *arg);
/* Removes the hook with that id from t (or from the node it lived on); false when gone already. */
bool ampc_remove_hook(ampc_tensor *t, int64_t id);
/* retain_grad(): a non-leaf keeps its gradient in .grad (leaves do anyway: no-op). */
ampc_status ampc_retain_grad(ampc_tensor *t);
bool ampc_retains_grad(const ampc_tensor *t);

/* ---- debug counters (tests: graph memory returns to baseline after backward) ---- */
int64_t ampc_live_nodes(void);

#ifdef __cplusplus
}
#endif
#endif
