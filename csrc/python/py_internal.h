/* py_internal.h: declarations shared by the files of the binding core (module.c, py_tensor.c,
 * py_tensor_methods.c, py_dtype.c, py_creation.c, py_convert.c) that other areas do not need.
 * Other areas use py_common.h only. */
#ifndef AMPC_PY_INTERNAL_H
#define AMPC_PY_INTERNAL_H

#include <stdbool.h>

#include "py_common.h"

/* py_dtype.c */
int ampc_py_init_dtypes(PyObject *module);
int ampc_py_is_dtype(PyObject *obj);
int ampc_py_is_device(PyObject *obj);
/* ampc.Size (a tuple subclass) of a shape. */
PyObject *ampc_py_size_object(int ndim, const int64_t *shape);

/* py_tensor.c */
/* Wraps `t` (stolen) in a new object of `type` (Tensor or a subclass such as nn.Parameter). */
PyObject *ampc_py_wrap_as(PyTypeObject *type, ampc_tensor *t);
/* The number-protocol conversions (__bool__, __int__, __float__, __index__) module.c installs
 * into ampc_py_tensor_as_number where the elementwise area left them empty. */
int ampc_py_tensor_bool(PyObject *self);
PyObject *ampc_py_tensor_int(PyObject *self);
PyObject *ampc_py_tensor_float(PyObject *self);
PyObject *ampc_py_tensor_index(PyObject *self);
extern PyGetSetDef ampc_py_tensor_getset[];
/* Tensor.item() */
PyObject *ampc_py_tensor_item(PyObject *self, PyObject *unused);
/* Copies `t` to a contiguous CPU tensor (new reference) for reading its elements on the host. */
ampc_tensor *ampc_py_host_contiguous(const ampc_tensor *t);
/* Python number for element `i` of a contiguous CPU tensor. */
PyObject *ampc_py_element(const ampc_tensor *host, int64_t i);

/* py_tensor_data.c: the data -> tensor conversion behind ampc.tensor, new_tensor and Tensor(data).
 * dtype AMPC_DTYPE_UNDEFINED infers it from the data. */
PyObject *ampc_py_tensor_from_data(PyObject *data, ampc_dtype dtype, ampc_device device, int requires_grad);
/* A NumPy array as a tensor of `dtype` on `device` (new reference); copy=false shares the array's
 * memory when dtype and device already match. */
ampc_tensor *ampc_py_tensor_from_ndarray(PyObject *data, ampc_dtype dtype, ampc_device device, bool copy);

/* py_creation.c */
/* Sets requires_grad with PyTorch's check (floating dtypes only); 0 or -1. */
int ampc_py_set_requires_grad(ampc_tensor *t, int flag);

/* py_convert.c: NumPy and DLPack. */
extern PyMethodDef ampc_py_tensor_methods_convert[];
extern PyMethodDef ampc_py_module_methods_convert[];
/* py_storage.c: storage identity and bytes (serialization), shared memory (multiprocessing) */
extern PyMethodDef ampc_py_module_methods_storage[];
extern PyMethodDef ampc_py_tensor_methods_storage[];
/* The NumPy array sharing t's memory (CPU only); `owner` is kept alive as the array's base. */
PyObject *ampc_py_to_numpy(PyObject *owner, ampc_tensor *t);
/* A CPU tensor sharing the memory of a NumPy array (new reference), or NULL with an exception. */
ampc_tensor *ampc_py_from_numpy(PyObject *array, const char *op);
/* ndarray check without including NumPy headers. */
int ampc_py_is_ndarray(PyObject *obj);
/* The ampc dtype of a NumPy dtype object/scalar type, or -1 (no exception) if none. */
int ampc_py_numpy_dtype_to_ampc(PyObject *descr);

#endif
