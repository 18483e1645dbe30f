/* py_linalg.c: Python bindings of the linalg ops (placeholder until implemented). */
#include "py_common.h"

PyMethodDef ampc_py_module_methods_linalg[] = {{NULL, NULL, 0, NULL}};
PyMethodDef ampc_py_tensor_methods_linalg[] = {{NULL, NULL, 0, NULL}};
