/* py_optim.c: bindings of the fused optimizer steps (core/optim.h), used by python/ampc/optim:
 *   _fused_sgd_(params, grads, momentum_buffers, steps, *, lr, momentum, dampening, weight_decay,
 *               nesterov, maximize, masters=None, grad_scale=None, found_inf=None)
 *   _fused_adam_(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, *, lr, beta1, beta2,
 *                eps, weight_decay, amsgrad, maximize, decoupled_weight_decay=False, masters=None, ...)
 *   _fused_adadelta_(params, grads, square_avgs, acc_deltas, steps, *, lr, rho, eps, weight_decay,
 *                    maximize, masters=None, ...)
 *   _fused_rmsprop_(params, grads, square_avgs, momentum_buffers, grad_avgs, steps, *, lr, alpha,
 *                   eps, weight_decay, momentum, centered, maximize, masters=None, ...)
 *   _fused_adagrad_(params, grads, sums, steps, *, lr, lr_decay, weight_decay, eps, maximize,
 *                   masters=None, ...)
 *   _fused_nadam_(params, grads, exp_avgs, exp_avg_sqs, mu_products, steps, *, lr, beta1, beta2, eps,
 *                 weight_decay, momentum_decay, maximize, decoupled_weight_decay, masters=None, ...)
 *   _fused_radam_(params, grads, exp_avgs, exp_avg_sqs, steps, *, lr, beta1, beta2, eps, weight_decay,
 *                 maximize, decoupled_weight_decay, masters=None, ...)
 *   _fused_adamax_(params, grads, exp_avgs, exp_infs, steps, *, lr, beta1, beta2, eps, weight_decay,
 *                  maximize, masters=None, ...)
 *   _fused_asgd_(params, grads, axs, etas, mus, steps, *, lr, lambd, alpha, t0, weight_decay, maximize,
 *                masters=None, ...)
 *   _fused_rprop_(params, grads, prevs, step_sizes, steps, *, etaminus, etaplus, step_size_min,
 *                 step_size_max, maximize, masters=None, ...)
 * (mu_products, etas, mus: 0-dim float32 per parameter, like steps.)
 * Hyperparameters are keyword-only, with PyTorch's defaults.
 * Lists are sequences of Tensors as long as params, or None where the op does not use them.
 * Also the host-read counter of core/tensor.h: _host_read_count(). */
#include "py_common.h"

/* The tensors of one call, parsed from Python lists (borrowed core pointers). */
typedef struct {
    PyObject *fast[8];
    ampc_tensor **arrays[8];
    int n_arrays;
    ampc_optim_tensors t;
} parsed_tensors;

static void parsed_free(parsed_tensors *pt) {
    for (int i = 0; i < pt->n_arrays; i++) {
        PyMem_Free(pt->arrays[i]);
        Py_XDECREF(pt->fast[i]);
    }
    pt->n_arrays = 0;
}

/* A list of n tensors (n < 0: take the length from this list) or None -> *out (NULL for None). */
static int tensor_list(parsed_tensors *pt, PyObject *obj, Py_ssize_t *n, const char *op, const char *arg,
                       ampc_tensor *const **out) {
    *out = NULL;
    if (obj == NULL || obj == Py_None) return 0;
    PyObject *fast = PySequence_Fast(obj, "expected a sequence of Tensors");
    if (!fast) return -1;
    Py_ssize_t len = PySequence_Fast_GET_SIZE(fast);
    if (*n < 0) *n = len;
    if (len != *n) {
        Py_DECREF(fast);
        PyErr_Format(PyExc_ValueError, "%s: %s has %zd tensors but there are %zd params", op, arg, len, *n);
        return -1;
    }
    ampc_tensor **arr = (ampc_tensor **)PyMem_Malloc(sizeof *arr * (size_t)(len ? len : 1));
    if (!arr) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return -1;
    }
    pt->fast[pt->n_arrays] = fast;
    pt->arrays[pt->n_arrays++] = arr;
    for (Py_ssize_t i = 0; i < len; i++)
        if (!(arr[i] = ampc_py_unwrap(PySequence_Fast_GET_ITEM(fast, i), op, arg))) return -1;
    *out = arr;
    return 0;
}

static int optional_tensor(PyObject *obj, const char *op, const char *arg, const ampc_tensor **out) {
    *out = NULL;
    if (obj == NULL || obj == Py_None) return 0;
    return (*out = ampc_py_unwrap(obj, op, arg)) ? 0 : -1;
}

/* params, grads, the op's state lists (n_state of them), steps, and the keyword tensors. */
static int parse_tensors(parsed_tensors *pt, const char *op, PyObject *params, PyObject *grads, PyObject **states,
                         int n_state, PyObject *steps, PyObject *masters, PyObject *grad_scale, PyObject *found_inf) {
    static const char *const state_args[3] = {"state0", "state1", "state2"};
    memset(pt, 0, sizeof *pt);
    Py_ssize_t n = -1;
    if (tensor_list(pt, params, &n, op, "params", &pt->t.params) < 0 ||
        tensor_list(pt, grads, &n, op, "grads", &pt->t.grads) < 0 ||
        tensor_list(pt, steps, &n, op, "steps", &pt->t.steps) < 0 ||
        tensor_list(pt, masters, &n, op, "masters", &pt->t.masters) < 0)
        return -1;
    for (int j = 0; j < n_state; j++)
        if (tensor_list(pt, states[j], &n, op, state_args[j], &pt->t.state[j]) < 0) return -1;
    if (n > INT32_MAX) {
        PyErr_Format(PyExc_ValueError, "%s: too many parameters (%zd)", op, n);
        return -1;
    }
    pt->t.n = (int)n;
    if (optional_tensor(grad_scale, op, "grad_scale", &pt->t.grad_scale) < 0 ||
        optional_tensor(found_inf, op, "found_inf", &pt->t.found_inf) < 0)
        return -1;
    return 0;
}

/* Parses the tensors (parse_tensors), runs `run` (the core call) on them with `options` and
 * converts its status; frees the parsed lists either way. */
static PyObject *fused_step(const char *op, PyObject *params, PyObject *grads, PyObject **states, int n_state,
                            PyObject *steps, PyObject *masters, PyObject *grad_scale, PyObject *found_inf,
                            ampc_status (*run)(const ampc_optim_tensors *, const void *), const void *options) {
    parsed_tensors pt;
    PyObject *result = NULL;
    if (parse_tensors(&pt, op, params, grads, states, n_state, steps, masters, grad_scale, found_inf) == 0 &&
        ampc_py_check(run(&pt.t, options)) == 0)
        result = Py_NewRef(Py_None);
    parsed_free(&pt);
    return result;
}

static ampc_status run_sgd(const ampc_optim_tensors *t, const void *o) { return ampc_fused_sgd_(t, o); }
static ampc_status run_adam(const ampc_optim_tensors *t, const void *o) { return ampc_fused_adam_(t, o); }
static ampc_status run_adadelta(const ampc_optim_tensors *t, const void *o) { return ampc_fused_adadelta_(t, o); }
static ampc_status run_rmsprop(const ampc_optim_tensors *t, const void *o) { return ampc_fused_rmsprop_(t, o); }
static ampc_status run_adagrad(const ampc_optim_tensors *t, const void *o) { return ampc_fused_adagrad_(t, o); }

static PyObject *py_fused_sgd(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"params", "grads", "momentum_buffers", "steps", "lr", "momentum", "dampening",
                             "weight_decay", "nesterov", "maximize", "masters", "grad_scale", "found_inf", NULL};
    PyObject *params, *grads, *bufs, *steps, *masters = Py_None, *gs = Py_None, *fi = Py_None;
    ampc_sgd_options o = {.lr = 1e-3};
    int nesterov = 0, maximize = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOO|$ddddppOOO:_fused_sgd_", kwlist, &params, &grads, &bufs, &steps,
                                     &o.lr, &o.momentum, &o.dampening, &o.weight_decay, &nesterov, &maximize, &masters,
                                     &gs, &fi))
        return NULL;
    o.nesterov = nesterov;
    o.maximize = maximize;
    return fused_step("_fused_sgd_", params, grads, &bufs, 1, steps, masters, gs, fi, run_sgd, &o);
}

static PyObject *py_fused_adam(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"params", "grads", "exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs", "steps", "lr", "beta1",
                             "beta2", "eps", "weight_decay", "amsgrad", "maximize", "decoupled_weight_decay",
                             "masters", "grad_scale", "found_inf", NULL};
    PyObject *params, *grads, *states[3], *steps, *masters = Py_None, *gs = Py_None, *fi = Py_None;
    ampc_adam_options o = {.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8};
    int amsgrad = 0, maximize = 0, decoupled = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOOOO|$dddddpppOOO:_fused_adam_", kwlist, &params, &grads, &states[0],
                                     &states[1], &states[2], &steps, &o.lr, &o.beta1, &o.beta2, &o.eps,
                                     &o.weight_decay, &amsgrad, &maximize, &decoupled, &masters, &gs, &fi))
        return NULL;
    o.amsgrad = amsgrad;
    o.maximize = maximize;
    o.decoupled_weight_decay = decoupled;
    return fused_step("_fused_adam_", params, grads, states, 3, steps, masters, gs, fi, run_adam, &o);
}

static PyObject *py_fused_adadelta(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"params", "grads", "square_avgs", "acc_deltas", "steps", "lr", "rho", "eps",
                             "weight_decay", "maximize", "masters", "grad_scale", "found_inf", NULL};
    PyObject *params, *grads, *states[2], *steps, *masters = Py_None, *gs = Py_None, *fi = Py_None;
    ampc_adadelta_options o = {.lr = 1.0, .rho = 0.9, .eps = 1e-6};
    int maximize = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOOO|$ddddpOOO:_fused_adadelta_", kwlist, &params, &grads, &states[0],
                                     &states[1], &steps, &o.lr, &o.rho, &o.eps, &o.weight_decay, &maximize, &masters,
                                     &gs, &fi))
        return NULL;
    o.maximize = maximize;
    return fused_step("_fused_adadelta_", params, grads, states, 2, steps, masters, gs, fi, run_adadelta, &o);
}

static PyObject *py_fused_rmsprop(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"params", "grads", "square_avgs", "momentum_buffers", "grad_avgs", "steps", "lr",
                             "alpha", "eps", "weight_decay", "momentum", "centered", "maximize", "masters",
                             "grad_scale", "found_inf", NULL};
    PyObject *params, *grads, *states[3], *steps, *masters = Py_None, *gs = Py_None, *fi = Py_None;
    ampc_rmsprop_options o = {.lr = 1e-2, .alpha = 0.99, .eps = 1e-8};
    int centered = 0, maximize = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOOOO|$dddddppOOO:_fused_rmsprop_", kwlist, &params, &grads,
                                     &states[0], &states[1], &states[2], &steps, &o.lr, &o.alpha, &o.eps,
                                     &o.weight_decay, &o.momentum, &centered, &maximize, &masters, &gs, &fi))
        return NULL;
    o.centered = centered;
    o.maximize = maximize;
    return fused_step("_fused_rmsprop_", params, grads, states, 3, steps, masters, gs, fi, run_rmsprop, &o);
}

static PyObject *py_fused_adagrad(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"params", "grads", "sums", "steps", "lr", "lr_decay", "weight_decay", "eps",
                             "maximize", "masters", "grad_scale", "found_inf", NULL};
    PyObject *params, *grads, *sums, *steps, *masters = Py_None, *gs = Py_None, *fi = Py_None;
    ampc_adagrad_options o = {.lr = 1e-2, .eps = 1e-10};
    int maximize = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOO|$ddddpOOO:_fused_adagrad_", kwlist, &params, &grads, &sums,
                                     &steps, &o.lr, &o.lr_decay, &o.weight_decay, &o.eps, &maximize, &masters, &gs,
                                     &fi))
        return NULL;
    o.maximize = maximize;
    return fused_step("_fused_adagrad_", params, grads, &sums, 1, steps, masters, gs, fi, run_adagrad, &o);
}

static ampc_status run_nadam(const ampc_optim_tensors *t, const void *o) { return ampc_fused_nadam_(t, o); }
static ampc_status run_radam(const ampc_optim_tensors *t, const void *o) { return ampc_fused_radam_(t, o); }
static ampc_status run_adamax(const ampc_optim_tensors *t, const void *o) { return ampc_fused_adamax_(t, o); }
static ampc_status run_asgd(const ampc_optim_tensors *t, const void *o) { return ampc_fused_asgd_(t, o); }
static ampc_status run_rprop(const ampc_optim_tensors *t, const void *o) { return ampc_fused_rprop_(t, o); }

static PyObject *py_fused_nadam(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"params", "grads", "exp_avgs", "exp_avg_sqs", "mu_products", "steps", "lr", "beta1",
                             "beta2", "eps", "weight_decay", "momentum_decay", "maximize", "decoupled_weight_decay",
                             "masters", "grad_scale", "found_inf", NULL};
    PyObject *params, *grads, *states[3], *steps, *masters = Py_None, *gs = Py_None, *fi = Py_None;
    ampc_nadam_options o = {.lr = 2e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .momentum_decay = 4e-3};
    int maximize = 0, decoupled = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOOOO|$ddddddppOOO:_fused_nadam_", kwlist, &params, &grads,
                                     &states[0], &states[1], &states[2], &steps, &o.lr, &o.beta1, &o.beta2, &o.eps,
                                     &o.weight_decay, &o.momentum_decay, &maximize, &decoupled, &masters, &gs, &fi))
        return NULL;
    o.maximize = maximize;
    o.decoupled_weight_decay = decoupled;
    return fused_step("_fused_nadam_", params, grads, states, 3, steps, masters, gs, fi, run_nadam, &o);
}

static PyObject *py_fused_radam(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"params", "grads", "exp_avgs", "exp_avg_sqs", "steps", "lr", "beta1", "beta2", "eps",
                             "weight_decay", "maximize", "decoupled_weight_decay", "masters", "grad_scale",
                             "found_inf", NULL};
    PyObject *params, *grads, *states[2], *steps, *masters = Py_None, *gs = Py_None, *fi = Py_None;
    ampc_radam_options o = {.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8};
    int maximize = 0, decoupled = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOOO|$dddddppOOO:_fused_radam_", kwlist, &params, &grads, &states[0],
                                     &states[1], &steps, &o.lr, &o.beta1, &o.beta2, &o.eps, &o.weight_decay,
                                     &maximize, &decoupled, &masters, &gs, &fi))
        return NULL;
    o.maximize = maximize;
    o.decoupled_weight_decay = decoupled;
    return fused_step("_fused_radam_", params, grads, states, 2, steps, masters, gs, fi, run_radam, &o);
}

static PyObject *py_fused_adamax(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"params", "grads", "exp_avgs", "exp_infs", "steps", "lr", "beta1", "beta2", "eps",
                             "weight_decay", "maximize", "masters", "grad_scale", "found_inf", NULL};
    PyObject *params, *grads, *states[2], *steps, *masters = Py_None, *gs = Py_None, *fi = Py_None;
    ampc_adamax_options o = {.lr = 2e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8};
    int maximize = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOOO|$dddddpOOO:_fused_adamax_", kwlist, &params, &grads, &states[0],
                                     &states[1], &steps, &o.lr, &o.beta1, &o.beta2, &o.eps, &o.weight_decay,
                                     &maximize, &masters, &gs, &fi))
        return NULL;
    o.maximize = maximize;
    return fused_step("_fused_adamax_", params, grads, states, 2, steps, masters, gs, fi, run_adamax, &o);
}

static PyObject *py_fused_asgd(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"params", "grads", "axs", "etas", "mus", "steps", "lr", "lambd", "alpha", "t0",
                             "weight_decay", "maximize", "masters", "grad_scale", "found_inf", NULL};
    PyObject *params, *grads, *states[3], *steps, *masters = Py_None, *gs = Py_None, *fi = Py_None;
    ampc_asgd_options o = {.lr = 1e-2, .lambd = 1e-4, .alpha = 0.75, .t0 = 1e6};
    int maximize = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOOOO|$dddddpOOO:_fused_asgd_", kwlist, &params, &grads, &states[0],
                                     &states[1], &states[2], &steps, &o.lr, &o.lambd, &o.alpha, &o.t0,
                                     &o.weight_decay, &maximize, &masters, &gs, &fi))
        return NULL;
    o.maximize = maximize;
    return fused_step("_fused_asgd_", params, grads, states, 3, steps, masters, gs, fi, run_asgd, &o);
}

static PyObject *py_fused_rprop(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"params", "grads", "prevs", "step_sizes", "steps", "etaminus", "etaplus",
                             "step_size_min", "step_size_max", "maximize", "masters", "grad_scale", "found_inf", NULL};
    PyObject *params, *grads, *states[2], *steps, *masters = Py_None, *gs = Py_None, *fi = Py_None;
    ampc_rprop_options o = {.etaminus = 0.5, .etaplus = 1.2, .step_size_min = 1e-6, .step_size_max = 50};
    int maximize = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOOO|$ddddpOOO:_fused_rprop_", kwlist, &params, &grads, &states[0],
                                     &states[1], &steps, &o.etaminus, &o.etaplus, &o.step_size_min,
                                     &o.step_size_max, &maximize, &masters, &gs, &fi))
        return NULL;
    o.maximize = maximize;
    return fused_step("_fused_rprop_", params, grads, states, 2, steps, masters, gs, fi, run_rprop, &o);
}

static PyObject *py_host_read_count(PyObject *self, PyObject *unused) {
    return PyLong_FromLongLong(ampc_host_read_count());
}

#define KW_METHOD(name, fn, doc) {name, (PyCFunction)(void (*)(void))fn, METH_VARARGS | METH_KEYWORDS, doc}

PyMethodDef ampc_py_module_methods_optim[] = {
    KW_METHOD("_fused_sgd_", py_fused_sgd, "One SGD step over a list of params (one device and dtype), in place."),
    KW_METHOD("_fused_adam_", py_fused_adam, "One Adam/AdamW step over a list of params, in place."),
    KW_METHOD("_fused_adadelta_", py_fused_adadelta, "One Adadelta step over a list of params, in place."),
    KW_METHOD("_fused_rmsprop_", py_fused_rmsprop, "One RMSprop step over a list of params, in place."),
    KW_METHOD("_fused_adagrad_", py_fused_adagrad, "One Adagrad step over a list of params, in place."),
    KW_METHOD("_fused_nadam_", py_fused_nadam, "One NAdam step over a list of params, in place."),
    KW_METHOD("_fused_radam_", py_fused_radam, "One RAdam step over a list of params, in place."),
    KW_METHOD("_fused_adamax_", py_fused_adamax, "One Adamax step over a list of params, in place."),
    KW_METHOD("_fused_asgd_", py_fused_asgd, "One ASGD step over a list of params, in place."),
    KW_METHOD("_fused_rprop_", py_fused_rprop, "One Rprop step over a list of params, in place."),
    {"_host_read_count", py_host_read_count, METH_NOARGS,
     "How many tensor values were read back to the host so far (item(), tolist(), ...): a test hook."},
    {NULL, NULL, 0, NULL},
};
