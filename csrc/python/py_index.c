/* py_index.c: Python bindings of the index ops (placeholder until implemented). */
#include "py_common.h"

PyMethodDef ampc_py_module_methods_index[] = {{NULL, NULL, 0, NULL}};
PyMethodDef ampc_py_tensor_methods_index[] = {{NULL, NULL, 0, NULL}};

PyMappingMethods ampc_py_tensor_as_mapping = {0};
