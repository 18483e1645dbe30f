/* py_random.c: Python bindings of the random ops: manual_seed / seed / initial_seed, the RNG
 * state, rand / randn / randint / randperm (+ _like), bernoulli, normal, and the in-place
 * Tensor methods uniform_ / normal_ / random_ / bernoulli_.
 *
 * generator=: an ampc.Generator (python/ampc/random.py) is a (seed, offset) pair held in its
 * `_seed` and `_offset` attributes. For the duration of one call its state is swapped into the
 * device's generator and read back after, so the core keeps one generator per device and the
 * kernels never know the difference. Passing the default generator is the same as passing none. */
#include "py_common.h"

#include "core/autograd.h"

#define KW(...) static char *kwlist[] = {__VA_ARGS__, NULL}
#define METHOD(name) (PyCFunction)(void (*)(void))(name)
#define VA (METH_VARARGS | METH_KEYWORDS)

#define SELF_T(o) (((AmpcTensorObject *)(o))->t)

/* ------------------------------------------------------------------ generator= */

typedef struct gen_scope {
    PyObject *gen; /* borrowed; NULL when the call uses the device's own generator */
    ampc_device dev;
    uint64_t saved_seed, saved_offset;
} gen_scope;

static int read_u64_attr(PyObject *o, const char *name, uint64_t *out) {
    PyObject *v = PyObject_GetAttrString(o, name);
    if (!v) return -1;
    *out = PyLong_AsUnsignedLongLongMask(v);
    Py_DECREF(v);
    return PyErr_Occurred() ? -1 : 0;
}

/* Installs `gen`'s state into the generator of `dev`. */
static int gen_enter(gen_scope *g, PyObject *gen, ampc_device dev, const char *op) {
    g->gen = NULL;
    g->dev = dev;
    if (!gen || gen == Py_None) return 0;
    PyObject *is_default = PyObject_GetAttrString(gen, "_is_default");
    if (!is_default) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s(): argument 'generator' must be ampc.Generator, not %s", op,
                     Py_TYPE(gen)->tp_name);
        return -1;
    }
    int dflt = PyObject_IsTrue(is_default);
    Py_DECREF(is_default);
    if (dflt < 0) return -1;
    PyObject *gdev_obj = PyObject_GetAttrString(gen, "device");
    if (!gdev_obj) return -1;
    ampc_device gdev;
    int rc = ampc_py_device(gdev_obj, ampc_cpu_device(), &gdev, op);
    Py_DECREF(gdev_obj);
    if (rc < 0) return -1;
    if (gdev.type != dev.type) {
        PyErr_Format(PyExc_RuntimeError, "Expected a '%s' device type for generator but found '%s'",
                     dev.type == AMPC_CPU ? "cpu" : "cuda", gdev.type == AMPC_CPU ? "cpu" : "cuda");
        return -1;
    }
    if (dflt) return 0;
    uint64_t seed, offset;
    if (read_u64_attr(gen, "_seed", &seed) < 0 || read_u64_attr(gen, "_offset", &offset) < 0) return -1;
    ampc_get_rng_state(dev, &g->saved_seed, &g->saved_offset);
    ampc_set_rng_state(dev, seed, offset);
    g->gen = gen;
    return 0;
}

/* Writes the advanced state back to the generator and restores the device's own. Keeps any
 * exception already set; returns -1 if one is set afterwards. */
static int gen_exit(gen_scope *g) {
    if (!g->gen) return PyErr_Occurred() ? -1 : 0;
    uint64_t seed, offset;
    ampc_get_rng_state(g->dev, &seed, &offset);
    ampc_set_rng_state(g->dev, g->saved_seed, g->saved_offset);
    PyObject *exc_type, *exc_value, *exc_tb;
    PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
    PyObject *o = PyLong_FromUnsignedLongLong(offset);
    int rc = o ? PyObject_SetAttrString(g->gen, "_offset", o) : -1;
    Py_XDECREF(o);
    if (exc_type) {
        if (rc < 0) PyErr_Clear();
        PyErr_Restore(exc_type, exc_value, exc_tb);
        return -1;
    }
    return rc;
}

/* ------------------------------------------------------------------ shared helpers */

/* The random factories' keywords (ampc_py_parse_factory_kw, py_creation.c) add generator=. Keys
 * in `skip` belong to the caller (low/high/mean/std...). */
static int parse_kw(PyObject *kwargs, const char *op, int takes_size, const char *const *skip,
                    ampc_py_factory_kw *kw) {
    return ampc_py_parse_factory_kw(kwargs, op, AMPC_PY_KW_OUT | AMPC_PY_KW_GENERATOR | (takes_size ? AMPC_PY_KW_SIZE : 0),
                                    skip, kw);
}

/* Applies requires_grad and wraps; steals t. The random factories fail with PyTorch's factory
 * wording here, ahead of the core's (requires_grad_'s) wording in ampc_py_factory_finish. */
static PyObject *finish(ampc_tensor *t, int requires_grad) {
    if (t && requires_grad && !ampc_dtype_is_floating(t->dtype)) {
        ampc_tensor_decref(t);
        PyErr_SetString(PyExc_RuntimeError, "Only Tensors of floating point and complex dtype can require gradients");
        return NULL;
    }
    return ampc_py_factory_finish(t, requires_grad);
}

static int parse_i64(PyObject *o, int64_t *out, const char *op, const char *arg) {
    if (!PyLong_Check(o) && !PyIndex_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be int, not %s", op, arg, Py_TYPE(o)->tp_name);
        return -1;
    }
    PyObject *i = PyNumber_Index(o);
    if (!i) return -1;
    int overflow = 0;
    *out = PyLong_AsLongLongAndOverflow(i, &overflow);
    Py_DECREF(i);
    if (overflow) {
        PyErr_Format(PyExc_RuntimeError, "%s(): argument '%s' is out of the range of int64", op, arg);
        return -1;
    }
    return PyErr_Occurred() ? -1 : 0;
}

/* A new tensor of `shape`, then fill(t) under the generator scope. */
typedef ampc_status (*fill_fn)(ampc_tensor *t, const void *ctx);

static PyObject *make_filled(int nd, const int64_t *shape, ampc_dtype dtype, ampc_device dev, PyObject *generator,
                             int requires_grad, fill_fn fill, const void *ctx, const char *op) {
    ampc_tensor *t = ampc_empty(nd, shape, dtype, dev);
    if (!t) return ampc_py_raise();
    gen_scope g;
    if (gen_enter(&g, generator, dev, op) < 0) {
        ampc_tensor_decref(t);
        return NULL;
    }
    ampc_status st = fill(t, ctx);
    if (st != AMPC_OK) ampc_py_raise();
    if (gen_exit(&g) < 0) {
        ampc_tensor_decref(t);
        return NULL;
    }
    return finish(t, requires_grad);
}

/* Runs fill(t) on an existing tensor under the generator scope; returns self. */
static PyObject *fill_in_place(PyObject *self, PyObject *generator, fill_fn fill, const void *ctx, const char *op) {
    ampc_tensor *t = SELF_T(self);
    /* A leaf that requires grad may only be refilled under no_grad (nn.init does that). */
    if (ampc_py_check(ampc_autograd_check_inplace(t)) < 0) return NULL;
    gen_scope g;
    if (gen_enter(&g, generator, t->device, op) < 0) return NULL;
    ampc_status st = fill(t, ctx);
    if (st != AMPC_OK) ampc_py_raise();
    if (gen_exit(&g) < 0) return NULL;
    Py_INCREF(self);
    return self;
}

typedef struct two_doubles {
    double a, b;
} two_doubles;
typedef struct two_ints {
    int64_t low, high;
    int to_max; /* random_(from) with no `to` */
} two_ints;

static ampc_status fill_uniform(ampc_tensor *t, const void *c) {
    const two_doubles *p = (const two_doubles *)c;
    return ampc_uniform_(t, p->a, p->b);
}
static ampc_status fill_normal(ampc_tensor *t, const void *c) {
    const two_doubles *p = (const two_doubles *)c;
    return ampc_normal_(t, p->a, p->b);
}
static ampc_status fill_random(ampc_tensor *t, const void *c) {
    const two_ints *p = (const two_ints *)c;
    return p->to_max ? ampc_random_to_max_(t, p->low) : ampc_random_(t, p->low, p->high);
}
static ampc_status fill_bernoulli(ampc_tensor *t, const void *c) { return ampc_bernoulli_(t, *(const double *)c); }
static ampc_status fill_bernoulli_p(ampc_tensor *t, const void *c) {
    return ampc_bernoulli_p_(t, (const ampc_tensor *)c);
}

/* ------------------------------------------------------------------ seeds and state */

static PyObject *py_manual_seed(PyObject *m, PyObject *arg) {
    /* Any int in [-2^63, 2^64): negative seeds wrap to uint64 as in PyTorch. */
    PyObject *i = PyNumber_Index(arg);
    if (!i) return NULL;
    uint64_t seed;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(i, &overflow);
    if (overflow > 0) {
        seed = PyLong_AsUnsignedLongLong(i);
        if (seed == (uint64_t)-1 && PyErr_Occurred()) {
            Py_DECREF(i);
            PyErr_SetString(PyExc_ValueError, "Overflow when unpacking long long");
            return NULL;
        }
    } else if (overflow < 0) {
        Py_DECREF(i);
        PyErr_SetString(PyExc_ValueError, "Overflow when unpacking long long");
        return NULL;
    } else {
        seed = (uint64_t)v;
    }
    Py_DECREF(i);
    if (PyErr_Occurred()) return NULL;
    ampc_manual_seed(seed);
    Py_RETURN_NONE;
}

static PyObject *py_initial_seed(PyObject *m, PyObject *unused) {
    return PyLong_FromUnsignedLongLong(ampc_initial_seed());
}

static PyObject *py_seed(PyObject *m, PyObject *unused) { return PyLong_FromUnsignedLongLong(ampc_seed()); }

/* The state as PyTorch's CUDA generator has it: 16 bytes, seed then offset, little-endian. */
static PyObject *py_get_rng_state(PyObject *m, PyObject *args, PyObject *kwargs) {
    KW("device");
    PyObject *devobj = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:get_rng_state", kwlist, &devobj)) return NULL;
    ampc_device dev;
    if (ampc_py_device(devobj, ampc_cpu_device(), &dev, "get_rng_state") < 0) return NULL;
    uint64_t seed, offset;
    ampc_get_rng_state(dev, &seed, &offset);
    int64_t shape[1] = {16};
    ampc_tensor *t = ampc_empty(1, shape, AMPC_UINT8, ampc_cpu_device());
    if (!t) return ampc_py_raise();
    uint8_t *p = (uint8_t *)ampc_data_ptr(t);
    for (int i = 0; i < 8; i++) {
        p[i] = (uint8_t)(seed >> (8 * i));
        p[8 + i] = (uint8_t)(offset >> (8 * i));
    }
    return ampc_py_wrap(t);
}

static PyObject *py_set_rng_state(PyObject *m, PyObject *args, PyObject *kwargs) {
    KW("new_state", "device");
    PyObject *state, *devobj = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:set_rng_state", kwlist, &state, &devobj)) return NULL;
    ampc_tensor *t = ampc_py_unwrap(state, "set_rng_state", "new_state");
    if (!t) return NULL;
    ampc_device dev;
    if (ampc_py_device(devobj, ampc_cpu_device(), &dev, "set_rng_state") < 0) return NULL;
    if (t->dtype != AMPC_UINT8 || ampc_numel(t) != 16) {
        PyErr_SetString(PyExc_RuntimeError,
                        "set_rng_state: expected a uint8 tensor of 16 bytes (seed, offset) as returned by "
                        "get_rng_state()");
        return NULL;
    }
    ampc_tensor *host = ampc_to(t, AMPC_UINT8, ampc_cpu_device(), false);
    ampc_tensor *c = host ? ampc_contiguous(host) : NULL;
    ampc_tensor_decref(host);
    if (!c) return ampc_py_raise();
    const uint8_t *p = (const uint8_t *)ampc_data_ptr(c);
    uint64_t seed = 0, offset = 0;
    for (int i = 0; i < 8; i++) {
        seed |= (uint64_t)p[i] << (8 * i);
        offset |= (uint64_t)p[8 + i] << (8 * i);
    }
    ampc_tensor_decref(c);
    ampc_set_rng_state(dev, seed, offset);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ rand / randn */

static PyObject *rand_common(PyObject *args, PyObject *kwargs, const char *op, fill_fn fill) {
    ampc_py_factory_kw kw;
    if (parse_kw(kwargs, op, 1, NULL, &kw) < 0) return NULL;
    int64_t shape[AMPC_MAX_DIMS];
    int nd = ampc_py_size_args(args, kw.size, shape, op);
    if (nd < 0) return NULL;
    ampc_dtype dt;
    ampc_device dev;
    if (ampc_py_factory_dtype_device(&kw, op, ampc_get_default_dtype(), ampc_py_factory_device(), &dt, &dev) < 0) return NULL;
    two_doubles p = {0.0, 1.0};
    return make_filled(nd, shape, dt, dev, kw.generator, kw.requires_grad, fill, &p, op);
}

static PyObject *py_rand(PyObject *m, PyObject *args, PyObject *kwargs) {
    return rand_common(args, kwargs, "rand", fill_uniform);
}
static PyObject *py_randn(PyObject *m, PyObject *args, PyObject *kwargs) {
    return rand_common(args, kwargs, "randn", fill_normal);
}

/* rand_like(input, *, dtype, device, requires_grad, ...) */
static PyObject *like_common(PyObject *args, PyObject *kwargs, const char *op, fill_fn fill, const void *ctx,
                             const char *const *skip, int n_pos_max) {
    ampc_py_factory_kw kw;
    if (parse_kw(kwargs, op, 0, skip, &kw) < 0) return NULL;
    if (PyTuple_GET_SIZE(args) < 1 || PyTuple_GET_SIZE(args) > n_pos_max) {
        PyErr_Format(PyExc_TypeError, "%s() takes %d positional argument(s) but %zd were given", op, n_pos_max,
                     PyTuple_GET_SIZE(args));
        return NULL;
    }
    ampc_tensor *src = ampc_py_unwrap(PyTuple_GET_ITEM(args, 0), op, "input");
    if (!src) return NULL;
    ampc_dtype dt;
    ampc_device dev;
    if (ampc_py_factory_dtype_device(&kw, op, src->dtype, src->device, &dt, &dev) < 0) return NULL;
    return make_filled(src->ndim, src->shape, dt, dev, kw.generator, kw.requires_grad, fill, ctx, op);
}

static PyObject *py_rand_like(PyObject *m, PyObject *args, PyObject *kwargs) {
    two_doubles p = {0.0, 1.0};
    return like_common(args, kwargs, "rand_like", fill_uniform, &p, NULL, 1);
}
static PyObject *py_randn_like(PyObject *m, PyObject *args, PyObject *kwargs) {
    two_doubles p = {0.0, 1.0};
    return like_common(args, kwargs, "randn_like", fill_normal, &p, NULL, 1);
}

/* ------------------------------------------------------------------ randint */

/* randint's (low, high) from positional `pos` (after the leading `skip` ones) and low=/high=
 * keywords: f(high), f(low, high). Returns the number of positionals used, or -1. */
static int low_high(PyObject *args, Py_ssize_t skip, Py_ssize_t max_used, PyObject *kwargs, int64_t *low,
                    int64_t *high, const char *op) {
    PyObject *low_o = kwargs ? PyDict_GetItemString(kwargs, "low") : NULL;
    PyObject *high_o = kwargs ? PyDict_GetItemString(kwargs, "high") : NULL;
    Py_ssize_t npos = PyTuple_GET_SIZE(args) - skip;
    if (npos > max_used) npos = max_used;
    int used = 0;
    if (!high_o) {
        if (npos >= 2 && !low_o) {
            low_o = PyTuple_GET_ITEM(args, skip);
            high_o = PyTuple_GET_ITEM(args, skip + 1);
            used = 2;
        } else if (npos >= 1) {
            high_o = PyTuple_GET_ITEM(args, skip);
            used = 1;
        }
    } else if (!low_o && npos >= 1) {
        low_o = PyTuple_GET_ITEM(args, skip);
        used = 1;
    }
    if (!high_o) {
        PyErr_Format(PyExc_TypeError, "%s() missing required argument 'high'", op);
        return -1;
    }
    *low = 0;
    if (low_o && parse_i64(low_o, low, op, "low") < 0) return -1;
    if (parse_i64(high_o, high, op, "high") < 0) return -1;
    return used;
}

static const char *const low_high_kw[] = {"low", "high", NULL};

static PyObject *py_randint(PyObject *m, PyObject *args, PyObject *kwargs) {
    const char *op = "randint";
    ampc_py_factory_kw kw;
    if (parse_kw(kwargs, op, 1, low_high_kw, &kw) < 0) return NULL;
    /* randint(high, size) / randint(low, high, size): the size is the last positional unless
     * given as size=. */
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    Py_ssize_t n_num = kw.size ? n : n - 1;
    if (n_num < 0) n_num = 0;
    two_ints p = {0, 0, 0};
    if (low_high(args, 0, n_num, kwargs, &p.low, &p.high, op) < 0) return NULL;
    PyObject *size_o = kw.size;
    if (!size_o) {
        if (n < 1) {
            PyErr_Format(PyExc_TypeError, "%s() missing 1 required positional argument: 'size'", op);
            return NULL;
        }
        size_o = PyTuple_GET_ITEM(args, n - 1);
    }
    int64_t shape[AMPC_MAX_DIMS];
    int nd = ampc_py_size_arg(size_o, shape, op);
    if (nd < 0) return NULL;
    ampc_dtype dt;
    ampc_device dev;
    if (ampc_py_factory_dtype_device(&kw, op, AMPC_INT64, ampc_py_factory_device(), &dt, &dev) < 0) return NULL;
    return make_filled(nd, shape, dt, dev, kw.generator, kw.requires_grad, fill_random, &p, op);
}

static PyObject *py_randint_like(PyObject *m, PyObject *args, PyObject *kwargs) {
    two_ints p = {0, 0, 0};
    if (low_high(args, 1, 2, kwargs, &p.low, &p.high, "randint_like") < 0) return NULL;
    return like_common(args, kwargs, "randint_like", fill_random, &p, low_high_kw, 3);
}

/* ------------------------------------------------------------------ randperm */

static PyObject *py_randperm(PyObject *m, PyObject *args, PyObject *kwargs) {
    const char *op = "randperm";
    static const char *const n_kw[] = {"n", NULL};
    ampc_py_factory_kw kw;
    if (parse_kw(kwargs, op, 0, n_kw, &kw) < 0) return NULL;
    PyObject *n_o = PyTuple_GET_SIZE(args) ? PyTuple_GET_ITEM(args, 0) : (kwargs ? PyDict_GetItemString(kwargs, "n") : NULL);
    if (!n_o || PyTuple_GET_SIZE(args) > 1) {
        PyErr_SetString(PyExc_TypeError, "randperm() takes 1 positional argument: 'n'");
        return NULL;
    }
    int64_t n;
    if (parse_i64(n_o, &n, op, "n") < 0) return NULL;
    ampc_dtype dt;
    ampc_device dev;
    if (ampc_py_factory_dtype_device(&kw, op, AMPC_INT64, ampc_py_factory_device(), &dt, &dev) < 0) return NULL;
    gen_scope g;
    if (gen_enter(&g, kw.generator, dev, op) < 0) return NULL;
    ampc_tensor *t = ampc_randperm(n, dt, dev);
    if (!t) ampc_py_raise();
    if (gen_exit(&g) < 0) {
        ampc_tensor_decref(t);
        return NULL;
    }
    return finish(t, kw.requires_grad);
}

/* ------------------------------------------------------------------ bernoulli, normal */

/* bernoulli(input, p=None, *, generator): p None draws with input's probabilities. */
static PyObject *bernoulli_of(ampc_tensor *src, PyObject *p_obj, PyObject *generator, const char *op) {
    if (p_obj && p_obj != Py_None) {
        double p;
        if (ampc_py_double(p_obj, &p, op, "p") < 0) return NULL;
        return make_filled(src->ndim, src->shape, src->dtype, src->device, generator, 0, fill_bernoulli, &p, op);
    }
    return make_filled(src->ndim, src->shape, src->dtype, src->device, generator, 0, fill_bernoulli_p, src, op);
}

static PyObject *py_bernoulli(PyObject *m, PyObject *args, PyObject *kwargs) {
    KW("input", "p", "generator", "out");
    PyObject *input, *p = NULL, *gen = NULL, *out = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O$OO:bernoulli", kwlist, &input, &p, &gen, &out)) return NULL;
    if (out && out != Py_None) {
        PyErr_SetString(PyExc_NotImplementedError, "bernoulli(): out= is not supported by ampc");
        return NULL;
    }
    ampc_tensor *src = ampc_py_unwrap(input, "bernoulli", "input");
    return src ? bernoulli_of(src, p, gen, "bernoulli") : NULL;
}

static PyObject *tensor_bernoulli(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("p", "generator");
    PyObject *p = NULL, *gen = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O$O:bernoulli", kwlist, &p, &gen)) return NULL;
    return bernoulli_of(SELF_T(self), p, gen, "bernoulli");
}

static int is_number(PyObject *o) { return PyFloat_Check(o) || PyLong_Check(o) || PyBool_Check(o) || PyNumber_Check(o); }

/* normal(mean, std, size=None, *, generator, dtype, device, requires_grad): numbers with a size
 * make a new tensor; a tensor mean and/or std draws one sample per broadcast element. */
static PyObject *py_normal(PyObject *m, PyObject *args, PyObject *kwargs) {
    const char *op = "normal";
    static const char *const own[] = {"mean", "std", NULL};
    ampc_py_factory_kw kw;
    if (parse_kw(kwargs, op, 1, own, &kw) < 0) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    PyObject *mean = n > 0 ? PyTuple_GET_ITEM(args, 0) : (kwargs ? PyDict_GetItemString(kwargs, "mean") : NULL);
    PyObject *std = n > 1 ? PyTuple_GET_ITEM(args, 1) : (kwargs ? PyDict_GetItemString(kwargs, "std") : NULL);
    PyObject *size = n > 2 ? PyTuple_GET_ITEM(args, 2) : kw.size;
    if (n > 3 || (n > 2 && kw.size)) {
        PyErr_SetString(PyExc_TypeError, "normal() received an invalid combination of arguments");
        return NULL;
    }
    int mean_t = mean && AmpcTensor_Check(mean), std_t = std && AmpcTensor_Check(std);
    if (!mean_t && !std_t) {
        if (!size || !mean || !std || !is_number(mean) || !is_number(std)) {
            PyErr_SetString(PyExc_TypeError,
                            "normal() received an invalid combination of arguments: expected (Tensor mean, Tensor "
                            "std), (Tensor mean, float std), (float mean, Tensor std) or (float mean, float std, "
                            "tuple of ints size)");
            return NULL;
        }
        two_doubles p;
        if (ampc_py_double(mean, &p.a, op, "mean") < 0 || ampc_py_double(std, &p.b, op, "std") < 0) return NULL;
        int64_t shape[AMPC_MAX_DIMS];
        int nd = ampc_py_size_arg(size, shape, op);
        if (nd < 0) return NULL;
        ampc_dtype dt;
        ampc_device dev;
        if (ampc_py_factory_dtype_device(&kw, op, ampc_get_default_dtype(), ampc_py_factory_device(), &dt, &dev) < 0) return NULL;
        return make_filled(nd, shape, dt, dev, kw.generator, kw.requires_grad, fill_normal, &p, op);
    }
    if (size && size != Py_None) {
        PyErr_SetString(PyExc_TypeError, "normal(): size is only allowed when mean and std are numbers");
        return NULL;
    }
    ampc_device dev = mean_t ? SELF_T(mean)->device : SELF_T(std)->device;
    PyObject *one = NULL, *zero = NULL;
    if (!std) std = one = PyFloat_FromDouble(1.0);
    if (!mean) mean = zero = PyFloat_FromDouble(0.0);
    ampc_tensor *mt = ampc_py_tensor_or_scalar(mean, dev, op, "mean");
    ampc_tensor *st = mt ? ampc_py_tensor_or_scalar(std, dev, op, "std") : NULL;
    Py_XDECREF(one);
    Py_XDECREF(zero);
    PyObject *result = NULL;
    if (st) {
        gen_scope g;
        if (gen_enter(&g, kw.generator, dev, op) == 0) {
            ampc_tensor *t = ampc_normal_tensors(mt, st);
            if (!t) ampc_py_raise();
            if (gen_exit(&g) < 0) ampc_tensor_decref(t);
            else result = finish(t, kw.requires_grad);
        }
    }
    ampc_tensor_decref(mt);
    ampc_tensor_decref(st);
    return result;
}

/* ------------------------------------------------------------------ Tensor methods */

/* uniform_(from=0, to=1, *, generator=None) and normal_(mean=0, std=1, *, generator=None):
 * kwlist names the two parameters and generator, fmt is "|OO$O:<op>" */
static PyObject *fill_two_doubles_(PyObject *self, PyObject *args, PyObject *kwargs, char **kwlist, const char *fmt,
                                   fill_fn fill, const char *op) {
    PyObject *a = NULL, *b = NULL, *gen = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, fmt, kwlist, &a, &b, &gen)) return NULL;
    two_doubles p = {0.0, 1.0};
    if (ampc_py_double(a, &p.a, op, kwlist[0]) < 0) return NULL;
    if (ampc_py_double(b, &p.b, op, kwlist[1]) < 0) return NULL;
    return fill_in_place(self, gen, fill, &p, op);
}

static PyObject *tensor_uniform_(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("from", "to", "generator");
    return fill_two_doubles_(self, args, kwargs, kwlist, "|OO$O:uniform_", fill_uniform, "uniform_");
}

static PyObject *tensor_normal_(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("mean", "std", "generator");
    return fill_two_doubles_(self, args, kwargs, kwlist, "|OO$O:normal_", fill_normal, "normal_");
}

/* random_() [0, max]; random_(to) [0, to); random_(from, to) [from, to); random_(from, None) and
 * random_(from=x) [from, max], as PyTorch's three overloads. */
static PyObject *tensor_random_(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("from", "to", "generator");
    PyObject *from = NULL, *to = NULL, *gen = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO$O:random_", kwlist, &from, &to, &gen)) return NULL;
    two_ints p = {0, 0, 0};
    int from_by_keyword = kwargs && PyDict_GetItemString(kwargs, "from") != NULL;
    if (from && !to && !from_by_keyword) { /* random_(to) */
        to = from;
        from = NULL;
    }
    if (from && parse_i64(from, &p.low, "random_", "from") < 0) return NULL;
    if (!to || to == Py_None) p.to_max = 1;
    else if (parse_i64(to, &p.high, "random_", "to") < 0) return NULL;
    return fill_in_place(self, gen, fill_random, &p, "random_");
}

static PyObject *tensor_bernoulli_(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("p", "generator");
    PyObject *p = NULL, *gen = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O$O:bernoulli_", kwlist, &p, &gen)) return NULL;
    if (p && AmpcTensor_Check(p)) return fill_in_place(self, gen, fill_bernoulli_p, SELF_T(p), "bernoulli_");
    double pv = 0.5;
    if (ampc_py_double(p, &pv, "bernoulli_", "p") < 0) return NULL;
    return fill_in_place(self, gen, fill_bernoulli, &pv, "bernoulli_");
}

/* ------------------------------------------------------------------ tables */

PyMethodDef ampc_py_module_methods_random[] = {
    {"manual_seed", py_manual_seed, METH_O, "Seeds the generators of every device (reproducible results)."},
    {"initial_seed", py_initial_seed, METH_NOARGS, "The seed the CPU generator was last seeded with."},
    {"seed", py_seed, METH_NOARGS, "Seeds every device with a non-deterministic seed and returns it."},
    {"get_rng_state", METHOD(py_get_rng_state), VA, "The generator state (seed, offset) as a uint8 tensor of 16 bytes."},
    {"set_rng_state", METHOD(py_set_rng_state), VA, "Restores a state returned by get_rng_state."},
    {"rand", METHOD(py_rand), VA, "rand(*size, dtype=None, device=None, requires_grad=False, generator=None): U[0, 1)"},
    {"randn", METHOD(py_randn), VA, "randn(*size, ...): standard normal samples"},
    {"rand_like", METHOD(py_rand_like), VA, "rand_like(input, *, dtype=None, device=None)"},
    {"randn_like", METHOD(py_randn_like), VA, "randn_like(input, *, dtype=None, device=None)"},
    {"randint", METHOD(py_randint), VA, "randint(low=0, high, size, *, dtype=int64, device=None): ints in [low, high)"},
    {"randint_like", METHOD(py_randint_like), VA, "randint_like(input, low=0, high, *, dtype=None, device=None)"},
    {"randperm", METHOD(py_randperm), VA, "randperm(n, *, dtype=int64, device=None): a random permutation of 0..n-1"},
    {"bernoulli", METHOD(py_bernoulli), VA, "bernoulli(input, p=None, *, generator=None): 0/1 draws"},
    {"normal", METHOD(py_normal), VA, "normal(mean, std, size=None, *, generator=None, ...)"},
    {NULL, NULL, 0, NULL},
};

PyMethodDef ampc_py_tensor_methods_random[] = {
    {"uniform_", METHOD(tensor_uniform_), VA, "uniform_(from=0, to=1, *, generator=None)"},
    {"normal_", METHOD(tensor_normal_), VA, "normal_(mean=0, std=1, *, generator=None)"},
    {"random_", METHOD(tensor_random_), VA, "random_(from=0, to=None, *, generator=None)"},
    {"bernoulli_", METHOD(tensor_bernoulli_), VA, "bernoulli_(p=0.5, *, generator=None)"},
    {"bernoulli", METHOD(tensor_bernoulli), VA, "bernoulli(p=None, *, generator=None)"},
    {NULL, NULL, 0, NULL},
};
