/* py_errors.c: turns the core's (status, message) into the Python exception PyTorch would raise.
 *
 * The core reports AMPC_E_VALUE for bad values and shapes; PyTorch reports nearly all of those as
 * RuntimeError, so both map to RuntimeError. The mapping is one table, so a status never changes
 * its exception class depending on who raised it. */
#include "py_common.h"

#include <string.h>

static PyObject *exception_for(ampc_status st) {
    switch (st) {
    case AMPC_E_VALUE: return PyExc_RuntimeError;
    case AMPC_E_TYPE: return PyExc_TypeError;
    case AMPC_E_INDEX: return PyExc_IndexError;
    case AMPC_E_RUNTIME: return PyExc_RuntimeError;
    case AMPC_E_NOMEM: return PyExc_MemoryError;
    case AMPC_E_NOT_IMPLEMENTED: return PyExc_NotImplementedError;
    case AMPC_E_VALUE_ERROR: return PyExc_ValueError;
    default: return PyExc_RuntimeError;
    }
}

PyObject *ampc_py_raise(void) {
    ampc_status st = ampc_last_status();
    /* A Python exception already set (e.g. by a converter) is the more precise one: keep it. */
    if (PyErr_Occurred()) {
        ampc_clear_error();
        return NULL;
    }
    if (st == AMPC_OK)
        PyErr_SetString(PyExc_SystemError, "ampc: an operation failed without reporting an error");
    else if (st == AMPC_E_NOMEM && ampc_py_out_of_memory_error && strstr(ampc_last_error(), "CUDA"))
        PyErr_SetString(ampc_py_out_of_memory_error, ampc_last_error()); /* a device allocation */
    else
        PyErr_SetString(exception_for(st), ampc_last_error());
    ampc_clear_error();
    return NULL;
}

int ampc_py_raise_int(void) {
    ampc_py_raise();
    return -1;
}

int ampc_py_check(ampc_status st) {
    if (st == AMPC_OK) return 0;
    return ampc_py_raise_int();
}
