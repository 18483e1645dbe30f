/* py_elementwise.c: Python bindings of the elementwise ops (placeholder until implemented). */
#include "py_common.h"

PyMethodDef ampc_py_module_methods_elementwise[] = {{NULL, NULL, 0, NULL}};
PyMethodDef ampc_py_tensor_methods_elementwise[] = {{NULL, NULL, 0, NULL}};

PyNumberMethods ampc_py_tensor_as_number = {0};
PyObject *ampc_py_tensor_richcompare(PyObject *a, PyObject *b, int op) { Py_RETURN_NOTIMPLEMENTED; }
