/* py_random.c: Python bindings of the random ops (placeholder until implemented). */
#include "py_common.h"

PyMethodDef ampc_py_module_methods_random[] = {{NULL, NULL, 0, NULL}};
PyMethodDef ampc_py_tensor_methods_random[] = {{NULL, NULL, 0, NULL}};
