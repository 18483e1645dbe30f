/* py_random.h: the generator= scope the random bindings share (py_random.c, py_sampling.c):
 * for one call, an ampc.Generator's state is installed into its device's generator and the
 * advanced state is written back to the Generator after. */
#ifndef AMPC_PY_RANDOM_H
#define AMPC_PY_RANDOM_H

#include "py_common.h"

typedef struct gen_scope {
    PyObject *gen; /* borrowed; NULL when the call uses the device's own generator */
    ampc_device dev;
    uint8_t *saved; /* the device generator's own state while gen's is installed */
} gen_scope;

/* 0, or -1 with an exception (a wrong generator type or device). */
int ampc_py_gen_enter(gen_scope *g, PyObject *gen, ampc_device dev, const char *op);
/* Keeps an exception already set; -1 when one is set afterwards. */
int ampc_py_gen_exit(gen_scope *g);

#endif
