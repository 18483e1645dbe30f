/* py_autograd.c: the Python surface of the autograd engine (csrc/core/autograd.h).
 *
 * - Tensor methods and properties: backward, grad (get/set/del), grad_fn, requires_grad_,
 *   is_leaf, retain_grad / retains_grad, register_hook, detach / detach_, _version.
 * - ampc._C functions: grad mode and inference mode switches, _run_backward (behind
 *   ampc.autograd.grad / backward), _function_record (behind autograd.Function.apply), debug
 *   counters.
 * - The grad_fn objects: one C type, ampc._C._FunctionBase, with a Python subclass per rule name
 *   created on first use so that `type(y.grad_fn).__name__ == "AddBackward0"` as in PyTorch.
 *   For a custom autograd.Function the grad_fn object *is* the ctx its forward saw (PyTorch's
 *   design too): the node owns it, and it points back at the node without owning it.
 * Python is only called from here: tensor hooks and custom Functions are core callbacks
 * (ampc_hook_fn, ampc_grad_rule) whose context is a Python object. The GIL is held throughout,
 * since backward itself is entered from Python. */
#include <string.h>

#include "core/autograd.h"
#include "py_common.h"

#define SELF_T(self) (((AmpcTensorObject *)(self))->t)

/* A borrowed core tensor as a Python object (new reference). */
static PyObject *wrap_borrowed(const ampc_tensor *t) {
    if (!t) Py_RETURN_NONE;
    ampc_tensor_incref((ampc_tensor *)t);
    return ampc_py_wrap((ampc_tensor *)t);
}

/* ctx.<attr> (a sequence of Tensors save_for_backward, mark_dirty or mark_non_differentiable
 * stored, maybe absent) as a new tuple, empty when absent; NULL on error. */
static PyObject *ctx_tuple(PyObject *ctx, const char *attr) {
    PyObject *v = PyObject_GetAttrString(ctx, attr);
    if (!v) {
        PyErr_Clear();
        return PyTuple_New(0);
    }
    PyObject *t = PySequence_Tuple(v);
    Py_DECREF(v);
    return t;
}

/* A failed core call: the Python exception already set by a callback (hook, Function.backward)
 * wins over the core's message. */
static PyObject *raise_status(void) { return ampc_py_raise(); }

/* ------------------------------------------------------------------ grad_fn objects */

typedef struct {
    PyObject_HEAD
    ampc_node *node; /* owned for built-in nodes; borrowed for a custom Function's ctx */
    bool owns;
    PyObject *dict;
    PyObject *weakreflist;
} NodeObject;

static PyTypeObject Node_Type;
static PyObject *node_types = NULL; /* rule name -> subclass of _FunctionBase */

static PyObject *node_type_for(const char *name) {
    if (!node_types && !(node_types = PyDict_New())) return NULL;
    PyObject *type = PyDict_GetItemString(node_types, name);
    if (type) return type;
    type = PyObject_CallFunction((PyObject *)&PyType_Type, "s(O){s:s}", name, (PyObject *)&Node_Type, "__module__",
                                 "ampc._C");
    if (!type) return NULL;
    int r = PyDict_SetItemString(node_types, name, type);
    Py_DECREF(type);
    return r < 0 ? NULL : type; /* borrowed from the cache */
}

/* The Python object of a node: the cached one, the custom Function's ctx, or a new wrapper. */
static PyObject *wrap_node(ampc_node *n) {
    if (!n) Py_RETURN_NONE;
    if (n->pyobj) {
        Py_INCREF((PyObject *)n->pyobj);
        return (PyObject *)n->pyobj;
    }
    PyTypeObject *type = (PyTypeObject *)node_type_for(ampc_node_name(n));
    if (!type) return NULL;
    NodeObject *o = (NodeObject *)type->tp_alloc(type, 0);
    if (!o) return NULL;
    ampc_node_incref(n);
    o->node = n;
    o->owns = true;
    n->pyobj = o;
    return (PyObject *)o;
}

static int node_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(((NodeObject *)self)->dict);
    return 0;
}

static int node_clear(PyObject *self) {
    Py_CLEAR(((NodeObject *)self)->dict);
    return 0;
}

static void node_dealloc(PyObject *self) {
    NodeObject *o = (NodeObject *)self;
    PyObject_GC_UnTrack(self);
    if (o->weakreflist) PyObject_ClearWeakRefs(self);
    Py_CLEAR(o->dict);
    if (o->node) {
        if (o->node->pyobj == (void *)o) o->node->pyobj = NULL;
        if (o->owns) ampc_node_decref(o->node);
        o->node = NULL;
    }
    Py_TYPE(self)->tp_free(self);
}

static PyObject *node_repr(PyObject *self) {
    return PyUnicode_FromFormat("<%s object at %p>", Py_TYPE(self)->tp_name, self);
}

static PyObject *node_name(PyObject *self, PyObject *unused) {
    NodeObject *o = (NodeObject *)self;
    if (!o->node || o->node->ctx) return PyUnicode_FromString(Py_TYPE(self)->tp_name);
    return PyUnicode_FromString(ampc_node_name(o->node));
}

/* The tuple (item(n, 0), ..., item(n, count - 1)); an item's NULL (an exception) fails it. */
static PyObject *node_tuple(ampc_node *n, int count, PyObject *(*item)(ampc_node *n, int i)) {
    PyObject *t = PyTuple_New(count);
    for (int i = 0; t && i < count; i++) {
        PyObject *v = item(n, i);
        if (!v) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

static PyObject *next_function(ampc_node *n, int j) {
    PyObject *fn = wrap_node(n->next[j].node);
    return fn ? Py_BuildValue("(Ni)", fn, n->next[j].input_nr) : NULL;
}

static PyObject *node_next_functions(PyObject *self, void *c) {
    ampc_node *n = ((NodeObject *)self)->node;
    if (!n) return PyTuple_New(0);
    return node_tuple(n, n->n_inputs, next_function);
}

/* AccumulateGrad.variable: the leaf it accumulates into */
static PyObject *node_variable(PyObject *self, void *c) {
    ampc_node *n = ((NodeObject *)self)->node;
    if (!n || !n->variable) {
        PyErr_SetString(PyExc_AttributeError, "only AccumulateGrad nodes have a variable");
        return NULL;
    }
    return wrap_borrowed(n->variable);
}

/* A saved tensor, checked for an in-place change since it was saved and for a freed graph. */
static PyObject *saved_tensor(ampc_node *n, int i) {
    ampc_clear_error();
    const ampc_tensor *s = ampc_node_saved(n, i);
    if (!s && (n->saved_released || ampc_last_status() != AMPC_OK)) return raise_status();
    return wrap_borrowed(s);
}

/* ctx.saved_tensors / grad_fn.saved_tensors */
static PyObject *node_saved_tensors(PyObject *self, void *c) {
    ampc_node *n = ((NodeObject *)self)->node;
    if (!n) return ctx_tuple(self, "to_save"); /* still inside forward: what save_for_backward was given */
    return node_tuple(n, n->n_saved, saved_tensor);
}

static PyObject *node_metadata(PyObject *self, void *c) {
    PyObject *dict = PyObject_GenericGetDict(self, NULL);
    if (!dict) return NULL;
    PyObject *m = PyDict_GetItemString(dict, "__metadata");
    if (!m) {
        m = PyDict_New();
        if (m && PyDict_SetItemString(dict, "__metadata", m) < 0) Py_CLEAR(m);
    } else {
        Py_INCREF(m);
    }
    Py_DECREF(dict);
    return m;
}

static PyMethodDef node_methods[] = {
    {"name", node_name, METH_NOARGS, "the node's name, e.g. 'AddBackward0'"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef node_getset[] = {
    {"next_functions", node_next_functions, NULL, "((node or None, input_nr), ...) per input", NULL},
    {"variable", node_variable, NULL, NULL, NULL},
    {"saved_tensors", node_saved_tensors, NULL, NULL, NULL},
    {"metadata", node_metadata, NULL, NULL, NULL},
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject Node_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ampc._C._FunctionBase",
    .tp_basicsize = sizeof(NodeObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A node of the autograd graph (a tensor's grad_fn); also the ctx of autograd.Function.",
    .tp_dealloc = node_dealloc,
    .tp_traverse = node_traverse,
    .tp_clear = node_clear,
    .tp_repr = node_repr,
    .tp_methods = node_methods,
    .tp_getset = node_getset,
    .tp_new = PyType_GenericNew,
    .tp_dictoffset = offsetof(NodeObject, dict),
    .tp_weaklistoffset = offsetof(NodeObject, weakreflist),
};

/* ------------------------------------------------------------------ hooks */

/* Tensor hooks are filed as torch files them: in an OrderedDict {handle.id: fn} that the returned
 * ampc.utils.hooks.RemovableHandle refers to weakly. The core hook owns that dict (its ctx), so the
 * dict lives exactly as long as the hook is registered, and handle.remove() just empties it: a
 * hook whose dict is empty passes the gradient through. */
static ampc_status py_hook_call(void *ctx, const ampc_tensor *grad, ampc_tensor **replacement) {
    PyObject *fns = PyDict_Values((PyObject *)ctx); /* a copy: a hook may remove itself */
    PyObject *g = fns ? wrap_borrowed(grad) : NULL;
    if (!g) {
        Py_XDECREF(fns);
        return ampc_set_error(AMPC_E_RUNTIME, "hook raised an exception");
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(fns); i++) {
        PyObject *r = PyObject_CallOneArg(PyList_GET_ITEM(fns, i), g);
        if (!r) {
            Py_DECREF(g);
            Py_DECREF(fns);
            return ampc_set_error(AMPC_E_RUNTIME, "hook raised an exception");
        }
        if (r == Py_None) {
            Py_DECREF(r);
            continue;
        }
        if (!AmpcTensor_Check(r)) {
            PyErr_Format(PyExc_TypeError, "hook must return None or a Tensor, not %s", Py_TYPE(r)->tp_name);
            Py_DECREF(r);
            Py_DECREF(g);
            Py_DECREF(fns);
            return ampc_set_error(AMPC_E_TYPE, "hook returned a wrong type");
        }
        Py_SETREF(g, r); /* the next hook sees this one's result */
    }
    Py_DECREF(fns);
    if (SELF_T(g) != grad) {
        ampc_tensor_incref(SELF_T(g));
        *replacement = SELF_T(g);
    }
    Py_DECREF(g);
    return AMPC_OK;
}

static void py_release(void *ctx) { Py_XDECREF((PyObject *)ctx); }

/* A new reference to attribute `name` of module `mod`, looked up once. */
static PyObject *module_attr(PyObject **cache, const char *mod, const char *name) {
    if (!*cache) {
        PyObject *m = PyImport_ImportModule(mod);
        *cache = m ? PyObject_GetAttrString(m, name) : NULL;
        Py_XDECREF(m);
    }
    return Py_XNewRef(*cache);
}

typedef struct {
    visitproc visit;
    void *arg;
} py_visit;
static int visit_py_ctx(void *ctx, void *arg) { return ((py_visit *)arg)->visit((PyObject *)ctx, ((py_visit *)arg)->arg); }

int ampc_py_traverse_graph(ampc_tensor *t, visitproc visit, void *arg) {
    py_visit v = {visit, arg};
    return ampc_autograd_visit_owned_ctxs(t, py_hook_call, visit_py_ctx, &v);
}

static PyObject *t_register_hook(PyObject *self, PyObject *fn) {
    static PyObject *ordered_dict, *removable_handle;
    if (!PyCallable_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "register_hook(): hook must be callable, not %s", Py_TYPE(fn)->tp_name);
        return NULL;
    }
    PyObject *odict_type = module_attr(&ordered_dict, "collections", "OrderedDict");
    PyObject *handle_type = odict_type ? module_attr(&removable_handle, "ampc.utils.hooks", "RemovableHandle") : NULL;
    PyObject *hooks = handle_type ? PyObject_CallNoArgs(odict_type) : NULL;
    PyObject *handle = hooks ? PyObject_CallOneArg(handle_type, hooks) : NULL;
    PyObject *id = handle ? PyObject_GetAttrString(handle, "id") : NULL;
    int ok = id && PyObject_SetItem(hooks, id, fn) == 0;
    Py_XDECREF(id);
    Py_XDECREF(odict_type);
    Py_XDECREF(handle_type);
    /* the core hook takes over the reference to `hooks` (released by py_release) */
    if (ok && ampc_register_hook(SELF_T(self), py_hook_call, hooks, py_release) < 0) {
        ok = 0;
        raise_status();
    }
    if (!ok) {
        Py_XDECREF(hooks);
        Py_XDECREF(handle);
        return NULL;
    }
    return handle;
}

/* ------------------------------------------------------------------ backward */

/* A tensor or a sequence of tensors (None allowed where allow_none) as core pointers
 * (borrowed, kept alive by `keep`, a tuple the caller releases). Returns the count or -1. */
static int tensor_list(PyObject *obj, ampc_tensor ***out, PyObject **keep, bool allow_none, const char *what) {
    *out = NULL;
    *keep = NULL;
    PyObject *seq = AmpcTensor_Check(obj) ? PyTuple_Pack(1, obj) : PySequence_Tuple(obj);
    if (!seq) {
        PyErr_Format(PyExc_TypeError, "%s must be a Tensor or a sequence of Tensors", what);
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(seq);
    ampc_tensor **list = (ampc_tensor **)PyMem_Calloc((size_t)(n ? n : 1), sizeof *list);
    if (!list) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(seq, i);
        if (item == Py_None && allow_none) continue;
        if (!AmpcTensor_Check(item)) {
            PyErr_Format(PyExc_TypeError, "%s: expected a Tensor at position %zd, got %s", what, i, Py_TYPE(item)->tp_name);
            PyMem_Free(list);
            Py_DECREF(seq);
            return -1;
        }
        list[i] = SELF_T(item);
    }
    *out = list;
    *keep = seq;
    return (int)n;
}

/* The engine call behind Tensor.backward, autograd.backward and autograd.grad. Returns the
 * grads tuple for autograd.grad, None otherwise. */
static PyObject *run_backward(PyObject *tensors, PyObject *grad_tensors, int retain_graph, int create_graph,
                              PyObject *inputs, int allow_unused, int accumulate) {
    ampc_tensor **roots = NULL, **groots = NULL, **ins = NULL, **grads = NULL;
    PyObject *keep1 = NULL, *keep2 = NULL, *keep3 = NULL, *result = NULL;
    int n = tensor_list(tensors, &roots, &keep1, false, "tensors");
    if (n < 0) goto done;
    if (grad_tensors && grad_tensors != Py_None) {
        int ng = tensor_list(grad_tensors, &groots, &keep2, true, "grad_tensors");
        if (ng < 0) goto done;
        if (ng != n) {
            PyErr_Format(PyExc_RuntimeError, "grad_tensors should have the same length as tensors (%d), got %d", n, ng);
            goto done;
        }
    }
    int ni = 0;
    if (inputs && inputs != Py_None) {
        ni = tensor_list(inputs, &ins, &keep3, false, "inputs");
        if (ni < 0) goto done;
        if (ni == 0 && accumulate) {
            PyErr_SetString(PyExc_RuntimeError, "'inputs' argument to backward() cannot be empty.");
            goto done;
        }
        if (ni == 0) {
            PyErr_SetString(PyExc_RuntimeError, "grad requires non-empty inputs.");
            goto done;
        }
    }
    if (!accumulate) {
        grads = (ampc_tensor **)PyMem_Calloc((size_t)(ni ? ni : 1), sizeof *grads);
        if (!grads) {
            PyErr_NoMemory();
            goto done;
        }
    }
    ampc_clear_error();
    ampc_status st = ampc_backward(n, roots, groots, retain_graph != 0, create_graph != 0, ni, ins, grads,
                                   allow_unused != 0);
    if (st != AMPC_OK) {
        raise_status();
        goto done;
    }
    if (accumulate) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    result = PyTuple_New(ni);
    for (int i = 0; result && i < ni; i++) {
        PyObject *g = grads[i] ? ampc_py_wrap(grads[i]) : Py_NewRef(Py_None);
        grads[i] = NULL;
        if (!g) Py_CLEAR(result);
        else PyTuple_SET_ITEM(result, i, g);
    }
done:
    if (grads)
        for (int i = 0; i < ni; i++) ampc_tensor_decref(grads[i]);
    PyMem_Free(grads);
    PyMem_Free(roots);
    PyMem_Free(groots);
    PyMem_Free(ins);
    Py_XDECREF(keep1);
    Py_XDECREF(keep2);
    Py_XDECREF(keep3);
    return result;
}

static PyObject *t_backward(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"gradient", "retain_graph", "create_graph", "inputs", NULL};
    PyObject *gradient = Py_None, *retain = Py_None, *inputs = Py_None;
    int create_graph = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OOpO:backward", kwlist, &gradient, &retain, &create_graph, &inputs))
        return NULL;
    int retain_graph = retain == Py_None ? create_graph : PyObject_IsTrue(retain);
    if (retain_graph < 0) return NULL;
    if (gradient != Py_None && !AmpcTensor_Check(gradient)) {
        PyErr_Format(PyExc_TypeError, "backward(): argument 'gradient' must be Tensor or None, not %s",
                     Py_TYPE(gradient)->tp_name);
        return NULL;
    }
    /* fast path of loss.backward(): no tuples */
    if (inputs == Py_None) {
        ampc_tensor *root = SELF_T(self), *g = gradient == Py_None ? NULL : SELF_T(gradient);
        ampc_clear_error();
        if (ampc_backward(1, &root, &g, retain_graph != 0, create_graph != 0, 0, NULL, NULL, false) != AMPC_OK)
            return raise_status();
        Py_RETURN_NONE;
    }
    return run_backward(self, gradient == Py_None ? NULL : gradient, retain_graph, create_graph, inputs, 0, 1);
}

static PyObject *m_run_backward(PyObject *unused, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"tensors", "grad_tensors", "retain_graph", "create_graph", "inputs", "allow_unused",
                             "accumulate_grad", NULL};
    PyObject *tensors, *grad_tensors = Py_None, *inputs = Py_None;
    int retain = 0, create = 0, allow_unused = 0, accumulate = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OppOpp:_run_backward", kwlist, &tensors, &grad_tensors, &retain,
                                     &create, &inputs, &allow_unused, &accumulate))
        return NULL;
    return run_backward(tensors, grad_tensors, retain, create, inputs, allow_unused, accumulate);
}

/* ------------------------------------------------------------------ tensor properties */

static PyObject *get_grad(PyObject *self, void *c) {
    ampc_tensor *t = SELF_T(self);
    if (t->grad_fn && !ampc_retains_grad(t) &&
        PyErr_WarnEx(PyExc_UserWarning,
                     "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute "
                     "won't be populated during autograd.backward(). If you indeed want the .grad field to be "
                     "populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the "
                     "non-leaf Tensor by mistake, make sure you access the leaf Tensor instead.",
                     1) < 0)
        return NULL;
    return wrap_borrowed(t->grad);
}

static int set_grad(PyObject *self, PyObject *value, void *c) {
    ampc_tensor *t = SELF_T(self);
    if (!value || value == Py_None) {
        ampc_tensor *old = t->grad;
        t->grad = NULL;
        ampc_tensor_decref(old);
        return 0;
    }
    if (!AmpcTensor_Check(value)) {
        PyErr_Format(PyExc_TypeError, "assigned grad expected to be a Tensor or None but got grad of type %s",
                     Py_TYPE(value)->tp_name);
        return -1;
    }
    ampc_tensor *g = SELF_T(value);
    char sa[160], sb[160], da[32], db[32];
    if (g == t) {
        PyErr_SetString(PyExc_RuntimeError, "can't assign Variable as its own grad");
        return -1;
    }
    if (g->dtype != t->dtype) {
        PyErr_Format(PyExc_RuntimeError,
                     "attempting to assign a gradient with dtype '%s' to a tensor with dtype '%s'. Please ensure "
                     "that the gradient and the tensor have the same dtype",
                     ampc_dtype_name(g->dtype), ampc_dtype_name(t->dtype));
        return -1;
    }
    if (g->ndim != t->ndim || memcmp(g->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim) != 0) {
        PyErr_Format(PyExc_RuntimeError,
                     "attempting to assign a gradient of size '%s' to a tensor of size '%s'. Please ensure that the "
                     "gradient and the tensor are the same size",
                     ampc_shape_str(g->ndim, g->shape, sa, sizeof sa), ampc_shape_str(t->ndim, t->shape, sb, sizeof sb));
        return -1;
    }
    if (!ampc_device_eq(g->device, t->device)) {
        PyErr_Format(PyExc_RuntimeError,
                     "attempting to assign a gradient located on device with type '%s' to a tensor located on device "
                     "with type '%s'. Please ensure that the gradient and the tensor are on the same device",
                     ampc_device_str(g->device, da, sizeof da), ampc_device_str(t->device, db, sizeof db));
        return -1;
    }
    ampc_tensor_incref(g);
    ampc_tensor *old = t->grad;
    t->grad = g;
    ampc_tensor_decref(old);
    return 0;
}

static PyObject *get_grad_fn(PyObject *self, void *c) { return wrap_node(SELF_T(self)->grad_fn); }
static PyObject *get_is_leaf(PyObject *self, void *c) { return PyBool_FromLong(SELF_T(self)->grad_fn == NULL); }
static PyObject *get_retains_grad(PyObject *self, void *c) { return PyBool_FromLong(ampc_retains_grad(SELF_T(self))); }
static PyObject *get_version(PyObject *self, void *c) { return PyLong_FromLongLong(SELF_T(self)->storage->version); }
static PyObject *get_output_nr(PyObject *self, void *c) { return PyLong_FromLong(SELF_T(self)->output_nr); }

static PyGetSetDef autograd_getset[] = {
    {"grad", get_grad, set_grad, "the accumulated gradient (None until a backward reaches this tensor)", NULL},
    {"grad_fn", get_grad_fn, NULL, "the node that made this tensor (None for leaves)", NULL},
    {"is_leaf", get_is_leaf, NULL, NULL, NULL},
    {"retains_grad", get_retains_grad, NULL, NULL, NULL},
    {"_version", get_version, NULL, "in-place modification counter (shared by views)", NULL},
    {"output_nr", get_output_nr, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* ------------------------------------------------------------------ tensor methods */

static PyObject *t_requires_grad_(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"requires_grad", NULL};
    int flag = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|p:requires_grad_", kwlist, &flag)) return NULL;
    if (ampc_py_check(ampc_set_requires_grad(SELF_T(self), flag != 0)) < 0) return NULL;
    return Py_NewRef(self);
}

static PyObject *t_retain_grad(PyObject *self, PyObject *unused) {
    if (ampc_py_check(ampc_retain_grad(SELF_T(self))) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *t_detach(PyObject *self, PyObject *unused) { return ampc_py_wrap(ampc_detach(SELF_T(self))); }

static PyObject *t_detach_(PyObject *self, PyObject *unused) {
    if (ampc_py_check(ampc_detach_(SELF_T(self))) < 0) return NULL;
    return Py_NewRef(self);
}

PyMethodDef ampc_py_tensor_methods_autograd[] = {
    {"backward", (PyCFunction)(void (*)(void))t_backward, METH_VARARGS | METH_KEYWORDS,
     "backward(gradient=None, retain_graph=None, create_graph=False, inputs=None)"},
    {"requires_grad_", (PyCFunction)(void (*)(void))t_requires_grad_, METH_VARARGS | METH_KEYWORDS,
     "requires_grad_(requires_grad=True): sets requires_grad in place; returns self"},
    {"retain_grad", t_retain_grad, METH_NOARGS, "keep .grad of this non-leaf tensor during backward"},
    {"register_hook", t_register_hook, METH_O, "register_hook(fn): fn(grad) -> Tensor or None; returns a handle"},
    {"detach", t_detach, METH_NOARGS, "the same memory without autograd history"},
    {"detach_", t_detach_, METH_NOARGS, "drops this tensor's history in place"},
    {NULL, NULL, 0, NULL},
};

/* ------------------------------------------------------------------ custom Function */

/* The rule of every custom Function node: calls ctx.apply(*grads), i.e. the user's backward. */
static ampc_status py_function_backward(ampc_node *n, ampc_tensor *const *go, ampc_tensor **gi) {
    PyObject *ctx = (PyObject *)n->ctx;
    PyObject *grads = PyTuple_New(n->n_outputs);
    for (int k = 0; grads && k < n->n_outputs; k++) {
        PyObject *g = wrap_borrowed(go[k]);
        if (!g) Py_CLEAR(grads);
        else PyTuple_SET_ITEM(grads, k, g);
    }
    PyObject *apply = grads ? PyObject_GetAttrString(ctx, "apply") : NULL;
    PyObject *res = apply ? PyObject_Call(apply, grads, NULL) : NULL;
    Py_XDECREF(apply);
    Py_XDECREF(grads);
    if (!res) return ampc_set_error(AMPC_E_RUNTIME, "custom Function backward raised");
    if (!PyTuple_Check(res)) {
        PyObject *t = PyTuple_Pack(1, res);
        Py_DECREF(res);
        if (!(res = t)) return ampc_set_error(AMPC_E_RUNTIME, "custom Function backward raised");
    }
    Py_ssize_t got = PyTuple_GET_SIZE(res);
    const char *name = Py_TYPE(ctx)->tp_name;
    if (got < n->n_inputs) {
        PyErr_Format(PyExc_RuntimeError, "function %s returned an incorrect number of gradients (expected %d, got %zd)",
                     name, n->n_inputs, got);
        goto fail;
    }
    for (Py_ssize_t j = n->n_inputs; j < got; j++)
        if (PyTuple_GET_ITEM(res, j) != Py_None) {
            PyErr_Format(PyExc_RuntimeError,
                         "function %s returned an incorrect number of gradients (expected %d, got %zd)", name,
                         n->n_inputs, got);
            goto fail;
        }
    for (int j = 0; j < n->n_inputs; j++) {
        PyObject *r = PyTuple_GET_ITEM(res, j);
        if (r == Py_None) continue;
        if (!AmpcTensor_Check(r)) {
            PyErr_Format(PyExc_TypeError, "function %s returned a gradient of type %s at position %d, expected a Tensor "
                         "or None", name, Py_TYPE(r)->tp_name, j);
            goto fail;
        }
        if (n->needs_input_grad[j]) {
            ampc_tensor_incref(SELF_T(r));
            gi[j] = SELF_T(r);
        }
    }
    Py_DECREF(res);
    return AMPC_OK;
fail:
    Py_DECREF(res);
    for (int j = 0; j < n->n_inputs; j++) {
        ampc_tensor_decref(gi[j]);
        gi[j] = NULL;
    }
    return ampc_set_error(AMPC_E_RUNTIME, "custom Function backward failed");
}

static const ampc_grad_rule py_function_rule = {"PythonFunctionBackward", py_function_backward};

/* Called when the node is freed: the ctx stops pointing at it and is released. */
static void py_function_ctx_release(void *ctx) {
    NodeObject *o = (NodeObject *)ctx;
    o->node = NULL;
    Py_DECREF((PyObject *)o);
}

static bool tuple_has_tensor(PyObject *tuple, const ampc_tensor *t) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tuple); i++) {
        PyObject *o = PyTuple_GET_ITEM(tuple, i);
        if (AmpcTensor_Check(o) && SELF_T(o) == t) return true;
    }
    return false;
}

/* _function_record(ctx, args, outputs, differentiable): makes the graph node of a custom
 * Function after its forward ran (under no_grad): edges to the tensor args, the saved tensors
 * (ctx.to_save), grad_fn on the outputs (minus ctx.non_differentiable), in-place rebasing of
 * ctx.dirty_tensors, and an alias for an input returned unchanged. Returns the outputs. */
static PyObject *m_function_record(PyObject *unused, PyObject *args) {
    PyObject *ctx, *fargs, *outputs;
    int differentiable;
    if (!PyArg_ParseTuple(args, "O!O!Op:_function_record", &Node_Type, &ctx, &PyTuple_Type, &fargs, &outputs,
                          &differentiable))
        return NULL;
    bool is_tuple = PyTuple_Check(outputs);
    PyObject *outs = is_tuple ? PySequence_List(outputs) : Py_BuildValue("[O]", outputs);
    if (!outs) return NULL;
    PyObject *dirty = ctx_tuple(ctx, "dirty_tensors"), *nondiff = ctx_tuple(ctx, "non_differentiable"),
             *to_save = ctx_tuple(ctx, "to_save");
    PyObject *result = NULL;
    Py_ssize_t n_in = PyTuple_GET_SIZE(fargs), n_out = PyList_GET_SIZE(outs), n_saved;
    const ampc_tensor **ins = NULL, **saved = NULL;
    ampc_tensor **core_outs = NULL;
    if (!dirty || !nondiff || !to_save) goto done;
    n_saved = PyTuple_GET_SIZE(to_save);
    ins = (const ampc_tensor **)PyMem_Calloc((size_t)n_in + 1, sizeof *ins);
    core_outs = (ampc_tensor **)PyMem_Calloc((size_t)n_out + 1, sizeof *core_outs);
    saved = (const ampc_tensor **)PyMem_Calloc((size_t)n_saved + 1, sizeof *saved);
    if (!ins || !core_outs || !saved) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n_in; i++) {
        PyObject *a = PyTuple_GET_ITEM(fargs, i);
        if (AmpcTensor_Check(a)) ins[i] = SELF_T(a);
    }
    bool any_float_out = false;
    for (Py_ssize_t k = 0; k < n_out; k++) {
        PyObject *o = PyList_GET_ITEM(outs, k);
        if (!AmpcTensor_Check(o)) continue;
        ampc_tensor *t = SELF_T(o);
        bool is_input = false;
        for (Py_ssize_t i = 0; i < n_in; i++) is_input |= ins[i] == t;
        if (tuple_has_tensor(dirty, t)) {
            if (differentiable && t->requires_grad && !t->grad_fn) {
                PyErr_SetString(PyExc_RuntimeError,
                                "a leaf Variable that requires grad has been used in an in-place operation.");
                goto done;
            }
        } else if (is_input && differentiable) {
            /* an input returned as it is: the output is a new tensor over it (PyTorch's view_as) */
            PyObject *alias = ampc_py_wrap(ampc_detach(t));
            if (!alias) goto done;
            if (PyList_SetItem(outs, k, alias) < 0) goto done;
            t = SELF_T(alias);
        }
        core_outs[k] = t;
        any_float_out |= ampc_dtype_is_floating(t->dtype) && !tuple_has_tensor(nondiff, t);
    }
    if (differentiable && any_float_out) {
        for (Py_ssize_t s = 0; s < n_saved; s++) {
            PyObject *o = PyTuple_GET_ITEM(to_save, s);
            if (o == Py_None) continue;
            if (!AmpcTensor_Check(o)) {
                PyErr_Format(PyExc_TypeError, "save_for_backward can only save variables, but argument %zd is of type %s",
                             s, Py_TYPE(o)->tp_name);
                goto done;
            }
            saved[s] = SELF_T(o);
        }
        ampc_clear_error();
        ampc_node *node = ampc_autograd_record(&py_function_rule, (int)n_in, ins, (int)n_out, core_outs, (int)n_saved,
                                               saved, NULL);
        if (!node) {
            raise_status();
            goto done;
        }
        Py_INCREF(ctx);
        node->ctx = ctx;
        node->ctx_release = py_function_ctx_release;
        node->pyobj = ctx;
        ((NodeObject *)ctx)->node = node;
        ((NodeObject *)ctx)->owns = false;
        PyObject *mat = PyObject_GetAttrString(ctx, "materialize_grads");
        if (mat) {
            node->materialize_grads = PyObject_IsTrue(mat) != 0;
            Py_DECREF(mat);
        } else {
            PyErr_Clear();
        }
        for (Py_ssize_t k = 0; k < n_out; k++)
            if (core_outs[k] && tuple_has_tensor(nondiff, core_outs[k]) && core_outs[k]->grad_fn == node)
                ampc_detach_(core_outs[k]);
        /* the node holds the saved tensors now (ctx.saved_tensors reads them there): the tuple on
         * the ctx would keep an output alive through output -> grad_fn -> ctx -> to_save */
        if (PyObject_DelAttrString(ctx, "to_save") < 0) PyErr_Clear();
    }
    result = is_tuple ? PyList_AsTuple(outs) : Py_NewRef(PyList_GET_ITEM(outs, 0));
done:
    PyMem_Free(ins);
    PyMem_Free(core_outs);
    PyMem_Free(saved);
    Py_XDECREF(dirty);
    Py_XDECREF(nondiff);
    Py_XDECREF(to_save);
    Py_DECREF(outs);
    return result;
}

/* ------------------------------------------------------------------ grad mode functions */

static PyObject *m_set_grad_enabled(PyObject *unused, PyObject *arg) {
    int flag = PyObject_IsTrue(arg);
    if (flag < 0) return NULL;
    ampc_set_grad_enabled(flag != 0);
    Py_RETURN_NONE;
}

static PyObject *m_is_grad_enabled(PyObject *unused, PyObject *noargs) { return PyBool_FromLong(ampc_grad_enabled()); }

/* The grad-mode switch itself, without inference mode folded in (what no_grad saves). */
static PyObject *m_grad_mode_flag(PyObject *unused, PyObject *noargs) {
    bool prev = ampc_grad_mode_pause();
    ampc_grad_mode_restore(prev);
    return PyBool_FromLong(prev);
}

static PyObject *m_set_inference_mode(PyObject *unused, PyObject *arg) {
    int flag = PyObject_IsTrue(arg);
    if (flag < 0) return NULL;
    ampc_set_inference_mode(flag != 0);
    Py_RETURN_NONE;
}

static PyObject *m_is_inference_mode_enabled(PyObject *unused, PyObject *noargs) {
    return PyBool_FromLong(ampc_inference_mode_enabled());
}

static PyObject *m_live_nodes(PyObject *unused, PyObject *noargs) { return PyLong_FromLongLong(ampc_live_nodes()); }
static PyObject *m_live_tensors(PyObject *unused, PyObject *noargs) { return PyLong_FromLongLong(ampc_live_tensors()); }

PyMethodDef ampc_py_module_methods_autograd[] = {
    {"_set_grad_enabled", m_set_grad_enabled, METH_O, "turns grad mode on or off for this thread"},
    {"is_grad_enabled", m_is_grad_enabled, METH_NOARGS, "whether ops record graphs (False under no_grad / inference_mode)"},
    {"_is_grad_enabled", m_is_grad_enabled, METH_NOARGS, NULL},
    {"_grad_mode_flag", m_grad_mode_flag, METH_NOARGS, "the grad-mode switch alone, ignoring inference mode"},
    {"_set_inference_mode", m_set_inference_mode, METH_O, NULL},
    {"is_inference_mode_enabled", m_is_inference_mode_enabled, METH_NOARGS, NULL},
    {"_is_inference_mode_enabled", m_is_inference_mode_enabled, METH_NOARGS, NULL},
    {"_run_backward", (PyCFunction)(void (*)(void))m_run_backward, METH_VARARGS | METH_KEYWORDS,
     "_run_backward(tensors, grad_tensors=None, retain_graph=False, create_graph=False, inputs=None, "
     "allow_unused=False, accumulate_grad=True)"},
    {"_function_record", m_function_record, METH_VARARGS, "_function_record(ctx, args, outputs, differentiable)"},
    {"_live_nodes", m_live_nodes, METH_NOARGS, "number of live autograd graph nodes (debugging, tests)"},
    {"_live_tensors", m_live_tensors, METH_NOARGS, "number of live core tensor structs (debugging, tests)"},
    {NULL, NULL, 0, NULL},
};

/* Called by module init once the Tensor type is ready: the autograd properties of Tensor and
 * the types of this file. */
int ampc_py_init_autograd(PyObject *module) {
    if (PyType_Ready(&Node_Type) < 0) return -1;
    for (PyGetSetDef *g = autograd_getset; g->name; g++) {
        PyObject *d = PyDescr_NewGetSet(&AmpcTensor_Type, g);
        if (!d || PyDict_SetItemString(AmpcTensor_Type.tp_dict, g->name, d) < 0) {
            Py_XDECREF(d);
            return -1;
        }
        Py_DECREF(d);
    }
    PyType_Modified(&AmpcTensor_Type);
    if (PyModule_AddObjectRef(module, "_FunctionBase", (PyObject *)&Node_Type) < 0) return -1;
    return 0;
}
