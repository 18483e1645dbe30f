/* py_reduce.c: Python bindings of the reduce ops (placeholder until implemented). */
#include "py_common.h"

PyMethodDef ampc_py_module_methods_reduce[] = {{NULL, NULL, 0, NULL}};
PyMethodDef ampc_py_tensor_methods_reduce[] = {{NULL, NULL, 0, NULL}};
