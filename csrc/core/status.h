/* status.h: error reporting of the C core.
 *
 * Every fallible core function returns either an ampc_status (AMPC_OK == 0) or a pointer that is
 * NULL on failure. On failure it records a message in a thread-local buffer with ampc_set_error;
 * the binding layer turns (status, message) into the matching Python exception. The core never
 * prints and never exits. */
#ifndef AMPC_STATUS_H
#define AMPC_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ampc_status {
    AMPC_OK = 0,
    AMPC_E_VALUE,          /* bad value or shape: Python ValueError / RuntimeError by context */
    AMPC_E_TYPE,           /* wrong dtype or argument type: TypeError */
    AMPC_E_INDEX,          /* index or dim out of range: IndexError */
    AMPC_E_RUNTIME,        /* everything PyTorch reports as RuntimeError (shape mismatch, ...) */
    AMPC_E_NOMEM,          /* allocation failed: MemoryError (or ampc.cuda.OutOfMemoryError) */
    AMPC_E_NOT_IMPLEMENTED, /* op has no kernel for this device/dtype: NotImplementedError */
    AMPC_E_VALUE_ERROR      /* an argument check PyTorch makes in Python with ValueError */
} ampc_status;

/* Records the error for this thread and returns `code`, so callers can write
 * `return ampc_set_error(AMPC_E_RUNTIME, "add: shapes %s and %s ...", ...)`. */
ampc_status ampc_set_error(ampc_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
ampc_status ampc_last_status(void);
const char *ampc_last_error(void);
void ampc_clear_error(void);

/* Propagate a failing status from a callee. */
#define AMPC_TRY(expr)                                  \
    do {                                                \
        ampc_status ampc_try_st_ = (expr);              \
        if (ampc_try_st_ != AMPC_OK) return ampc_try_st_; \
    } while (0)

#ifdef __cplusplus
}
#endif
#endif
