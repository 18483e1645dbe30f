/* py_common.h: what every file of the binding layer shares.
 *
 * The binding holds no math: it parses Python arguments, converts them to core types, calls the
 * core (csrc/core/ops.h, tensor.h) and turns the result or the core's status into Python objects
 * and exceptions. Each py_*.c file contributes method tables that module.c merges:
 *   ampc_py_module_methods_<area>[]  functions of ampc._C (re-exported by python/ampc)
 *   ampc_py_tensor_methods_<area>[]  methods of ampc.Tensor
 * both terminated by {NULL}. */
#ifndef AMPC_PY_COMMON_H
#define AMPC_PY_COMMON_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "core/ampc.h"

/* ---- the Tensor type (py_tensor.c) ---- */
typedef struct {
    PyObject_HEAD
    ampc_tensor *t; /* owned reference; never NULL after construction */
    PyObject *dict; /* user attributes (p.some_attr = ...), as on torch tensors */
    PyObject *weakreflist;
} AmpcTensorObject;

extern PyTypeObject AmpcTensor_Type;
#define AmpcTensor_Check(o) PyObject_TypeCheck((o), &AmpcTensor_Type)

/* Wraps a core tensor, stealing the reference; returns the existing Python object when the
 * tensor already has one (so `x.grad is x.grad`). NULL in -> the core's error is raised. */
PyObject *ampc_py_wrap(ampc_tensor *t);
/* The Tensor type's GC traversal beyond its __dict__ (py_autograd.c): the Python objects its
 * graph holds for it alone (hook dicts, a custom Function's ctx), so cycles through them
 * (ctx.out = y, a hook whose closure holds its own tensor) are collected. */
int ampc_py_traverse_graph(ampc_tensor *t, visitproc visit, void *arg);
/* Borrowed core tensor of a Python Tensor, or NULL with TypeError naming `op` and `arg`. */
ampc_tensor *ampc_py_unwrap(PyObject *obj, const char *op, const char *arg);

/* Converts a Tensor or a Python number (bool/int/float, NumPy scalar) to a new core reference.
 * Numbers become wrapped 0-dim tensors on `device` (they take part in promotion like PyTorch's
 * wrapped numbers). Fails with TypeError naming op/arg otherwise. */
ampc_tensor *ampc_py_tensor_or_scalar(PyObject *obj, ampc_device device, const char *op, const char *arg);
/* Python number (bool/int/float, NumPy scalar) -> ampc_scalar. Returns 0 on success, -1 with
 * TypeError naming op/arg if obj is not a number (like every other helper here). */
int ampc_py_scalar(PyObject *obj, ampc_scalar *out, const char *op, const char *arg);
/* Sequence of ints (or a single int) -> dims; returns count or -1 with an exception. Accepts
 * f(2, 3) style varargs when `args` has several ints (pass the tuple). */
int ampc_py_int_list(PyObject *obj, int64_t *out, int cap, const char *op, const char *arg);
/* ampc.dtype object -> ampc_dtype (None -> AMPC_DTYPE_UNDEFINED); -1 with TypeError on error. */
int ampc_py_dtype(PyObject *obj, ampc_dtype *out, const char *op);
/* "cpu", "cuda", "cuda:1", ampc.device, int (cuda index), None (-> `dflt`) -> ampc_device. */
int ampc_py_device(PyObject *obj, ampc_device dflt, ampc_device *out, const char *op);
/* Python objects for dtypes and devices. New references. */
PyObject *ampc_py_dtype_object(ampc_dtype dt);
PyObject *ampc_py_device_object(ampc_device d);

/* ---- factory arguments (py_args.c), shared by the creation and random factories and Tensor.new_* ---- */
typedef struct ampc_py_factory_kw {
    PyObject *dtype, *device, *size, *generator; /* borrowed; NULL when not given */
    int requires_grad;
} ampc_py_factory_kw;
/* What a factory takes beyond dtype, device and requires_grad (ampc_py_parse_factory_kw). */
enum {
    AMPC_PY_KW_SIZE = 1,      /* size= */
    AMPC_PY_KW_GENERATOR = 2, /* generator= (the random factories) */
    AMPC_PY_KW_OUT = 4,       /* out=None and memory_format= (the module factories; Tensor.new_* take neither) */
};
/* Accepts dtype, device, requires_grad and what `takes` names; tolerates layout and pin_memory;
 * rejects out= other than None and unknown keywords. Keys in `skip` (NULL-terminated, or NULL)
 * belong to the caller. Returns 0, or -1 with an exception. */
int ampc_py_parse_factory_kw(PyObject *kwargs, const char *op, unsigned takes, const char *const *skip,
                             ampc_py_factory_kw *kw);
/* kw's dtype (`dflt_dtype` when not given) and device (`dflt_dev` when not given). */
/* The device of a factory called without device=: the CPU unless set_default_device changed it
 * (py_surface.c). */
ampc_device ampc_py_factory_device(void);
int ampc_py_factory_dtype_device(const ampc_py_factory_kw *kw, const char *op, ampc_dtype dflt_dtype,
                                 ampc_device dflt_dev, ampc_dtype *dtype, ampc_device *device);
/* Wraps a factory's new tensor (stolen; NULL raises the core's error), applying requires_grad
 * with the core's check (floating dtypes only). */
PyObject *ampc_py_factory_finish(ampc_tensor *t, int requires_grad);
/* A size given as varargs (f(2, 3)), one sequence (f((2, 3))) or size= (`size_kw`, NULL when not
 * given); the count of dims, or -1 with an exception naming `op` (wrong type, missing, given
 * twice, negative dimension). */
int ampc_py_size_args(PyObject *args, PyObject *size_kw, int64_t *shape, const char *op);
/* One size object (an int or a sequence of ints), with the same checks; count or -1. */
int ampc_py_size_arg(PyObject *obj, int64_t *shape, const char *op);
/* RuntimeError "<op>(): Trying to create tensor with negative dimension -3: [2, -3]" when a
 * dimension is negative; 0 or -1. */
int ampc_py_check_sizes(int nd, const int64_t *shape, const char *op);

/* A float parameter (any Python or NumPy real number) as a double; obj NULL (not given) leaves
 * *out as it is. 0, or -1 with TypeError naming op/arg. */
int ampc_py_double(PyObject *obj, double *out, const char *op, const char *arg);
/* len(x): the size of the first dim; TypeError for a 0-dim tensor (py_tensor.c; the sequence
 * and mapping protocols both use it). */
Py_ssize_t ampc_py_tensor_len(PyObject *self);

/* ---- errors (py_errors.c) ---- */
/* Raises the Python exception for the core's last status and message; returns NULL. */
PyObject *ampc_py_raise(void);
/* Same, for functions returning int: returns -1. */
int ampc_py_raise_int(void);
/* Checks a core status: AMPC_OK -> 0; else raise and -1. */
int ampc_py_check(ampc_status st);

/* ---- method tables of each area, merged by module.c ---- */
extern PyMethodDef ampc_py_module_methods_tensor[];      /* py_tensor.c / py_creation.c */
extern PyMethodDef ampc_py_module_methods_creation[];
extern PyMethodDef ampc_py_module_methods_elementwise[]; /* py_elementwise.c */
extern PyMethodDef ampc_py_module_methods_elementwise_more[]; /* py_elementwise_more.c */
extern PyMethodDef ampc_py_module_methods_reduce[];      /* py_reduce.c */
extern PyMethodDef ampc_py_module_methods_reduce_more[]; /* py_reduce_more.c */
extern PyMethodDef ampc_py_module_methods_linalg[];      /* py_linalg.c */
extern PyMethodDef ampc_py_module_methods_index[];       /* py_index.c */
extern PyMethodDef ampc_py_module_methods_shape[];       /* py_shape.c (issue 12 shape and index ops) */
extern PyMethodDef ampc_py_module_methods_random[];      /* py_random.c */
extern PyMethodDef ampc_py_module_methods_sampling[];    /* py_sampling.c */
extern PyMethodDef ampc_py_module_methods_rng_state[];   /* py_rng_state.c */
extern PyMethodDef ampc_py_module_methods_cuda[];        /* py_cuda.c */
extern PyMethodDef ampc_py_module_methods_amp[];         /* py_amp.c */
extern PyMethodDef ampc_py_module_methods_autocast[];    /* py_autocast.c */
extern PyMethodDef ampc_py_module_methods_nn_rnn[];      /* py_nn_rnn.c (issue 13: fused LSTM/GRU cells) */
extern PyMethodDef ampc_py_module_methods_nn[];          /* py_nn.c (ampc.nn.functional) */
extern PyMethodDef ampc_py_module_methods_nn_conv[];     /* py_nn_conv.c (issue 13: pad, conv family) */
extern PyMethodDef ampc_py_module_methods_nn_poolnorm[]; /* py_nn_poolnorm.c (issue 13: 3-d and adaptive max pools, rms_norm) */
extern PyMethodDef ampc_py_module_methods_nn_loss[];     /* py_nn_loss.c (issue 13: ctc_loss, pdist) */
extern PyMethodDef ampc_py_module_methods_nn_act[];      /* py_nn_act.c (issue 13: activations) */
extern PyMethodDef ampc_py_module_methods_multi_tensor[]; /* py_multi_tensor.c (nn.utils.clip_grad_norm_) */
extern PyMethodDef ampc_py_module_methods_optim[];        /* py_optim.c (ampc.optim's fused steps) */
extern PyMethodDef ampc_py_module_methods_op_table[];     /* py_op_table.c (the rows of ops.def) */
extern PyMethodDef ampc_py_module_methods_backends[];     /* py_backends.c (ampc.backends' flags) */
extern PyMethodDef ampc_py_module_methods_sort[];         /* py_sort.c (sorting and selection) */
extern PyMethodDef ampc_py_module_methods_surface[];      /* py_surface.c (default device, threads) */
extern PyMethodDef ampc_py_module_methods_amp_debug[];    /* py_amp_debug.c (ampc.amp.debug's observer) */

extern PyMethodDef ampc_py_module_methods_autograd[];    /* py_autograd.c */
extern PyMethodDef ampc_py_tensor_methods_autograd[];
extern PyMethodDef ampc_py_tensor_methods_core[];        /* py_tensor.c */
extern PyMethodDef ampc_py_tensor_methods_elementwise[];
extern PyMethodDef ampc_py_tensor_methods_elementwise_more[];
extern PyMethodDef ampc_py_tensor_methods_reduce[];
extern PyMethodDef ampc_py_tensor_methods_sort[];          /* py_sort.c */
extern PyMethodDef ampc_py_tensor_methods_reduce_more[];
extern PyMethodDef ampc_py_tensor_methods_linalg[];
extern PyMethodDef ampc_py_tensor_methods_index[];
extern PyMethodDef ampc_py_tensor_methods_shape[];
extern PyMethodDef ampc_py_tensor_methods_random[];
extern PyMethodDef ampc_py_tensor_methods_surface[];     /* py_surface.c (resize_) */
extern PyMethodDef ampc_py_tensor_methods_sampling[];

/* Operators: number protocol and rich comparison live in py_elementwise.c, the mapping
 * protocol (indexing) in py_index.c; py_tensor.c installs them in the type. */
extern PyNumberMethods ampc_py_tensor_as_number;
extern PyMappingMethods ampc_py_tensor_as_mapping;
PyObject *ampc_py_tensor_richcompare(PyObject *a, PyObject *b, int op);
/* a @ b (py_linalg.c), for the nb_matrix_multiply slot of ampc_py_tensor_as_number. */
PyObject *ampc_py_matmul_op(PyObject *a, PyObject *b);

/* Called by module init after the Tensor type is ready: each area may add module attributes
 * (exception classes, constants). Return 0 or -1. */
int ampc_py_init_tensor(PyObject *module);
int ampc_py_init_cuda(PyObject *module);
int ampc_py_init_autograd(PyObject *module); /* py_autograd.c: Tensor.grad, grad_fn, ... */

/* ---- CUDA (py_cuda.c) ---- */
/* ampc.OutOfMemoryError (a RuntimeError, like torch.OutOfMemoryError); the exception for a
 * failed device allocation ("CUDA out of memory. ..."). NULL before module init. */
extern PyObject *ampc_py_out_of_memory_error;
/* The current CUDA device (ampc.cuda.set_device), which "cuda" without an index means; 0 when
 * there is no GPU. */
int ampc_py_cuda_current_index(void);

#endif
