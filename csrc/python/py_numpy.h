/* py_numpy.h: includes the NumPy C API with the one shared API table (module.c fills it with
 * import_array). Any binding file that needs NumPy includes this instead of numpy's headers. */
#ifndef AMPC_PY_NUMPY_H
#define AMPC_PY_NUMPY_H

#include "py_common.h"

#define PY_ARRAY_UNIQUE_SYMBOL ampc_PyArray_API
#ifndef AMPC_PY_NUMPY_IMPORT /* defined only in module.c, which calls import_array() */
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>
#include <numpy/arrayscalars.h>

#endif
