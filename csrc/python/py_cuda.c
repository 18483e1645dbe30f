/* py_cuda.c: the ampc.cuda functions (placeholder until implemented). */
#include "py_common.h"

PyMethodDef ampc_py_module_methods_cuda[] = {{NULL, NULL, 0, NULL}};
int ampc_py_init_cuda(PyObject *module) { return 0; }
