/* status.c: the thread-local last-error slot behind ampc_set_error. */
#include "status.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local ampc_status last_status = AMPC_OK;
static _Thread_local char last_message[1024];

ampc_status ampc_set_error(ampc_status code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_message, sizeof last_message, fmt, ap);
    va_end(ap);
    last_status = code;
    return code;
}

ampc_status ampc_last_status(void) { return last_status; }
const char *ampc_last_error(void) { return last_status == AMPC_OK ? "" : last_message; }
void ampc_clear_error(void) {
    last_status = AMPC_OK;
    last_message[0] = '\0';
}
