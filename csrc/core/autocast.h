/* autocast.h: autocast (torch.autocast semantics) in the C core.
 *
 * State is thread-local: per device type an enabled flag and a lower-precision dtype (CUDA fp16,
 * CPU bf16 by default), plus cache_enabled and the nesting depth shared by all device types.
 * The policy of every op is the AUTOCAST column of its ops.def row. A frontend of an eligible op
 * starts with three lines:
 *
 *     ampc_autocast_scope ac;
 *     int acr = ampc_autocast_enter(AMPC_OP_MM, 2, (const ampc_tensor *[]){a, b}, false, &ac);
 *     if (acr) return acr < 0 ? NULL : ampc_autocast_exit(&ac, ampc_mm(ac.t[0], ac.t[1]));
 *
 * enter() returns 1 when autocast applies, 0 when it does not, -1 on error (banned op, failed
 * cast: the error is set). On 1: ac.t[] then holds the inputs cast per policy (new
 * references, or the originals), ac.dtype the dtype an FP32_DTYPE op must compute in, and nested
 * op calls are excluded from autocast until exit() (as PyTorch's ExcludeDispatchKeyGuard), so the
 * recursive call runs the real op. exit() releases the casts and returns its second argument. */
#ifndef AMPC_AUTOCAST_H
#define AMPC_AUTOCAST_H

#include "dispatch.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- thread-local state (torch.is_autocast_enabled & co.) ---- */
bool ampc_autocast_is_enabled(ampc_device_type dev);
void ampc_autocast_set_enabled(ampc_device_type dev, bool enabled);
ampc_dtype ampc_autocast_get_dtype(ampc_device_type dev);
void ampc_autocast_set_dtype(ampc_device_type dev, ampc_dtype dtype);
bool ampc_autocast_is_cache_enabled(void);
void ampc_autocast_set_cache_enabled(bool enabled);
int ampc_autocast_increment_nesting(void);
int ampc_autocast_decrement_nesting(void); /* returns the new depth; the caller clears at 0 */
void ampc_autocast_clear_cache(void);
int64_t ampc_autocast_cache_size(void);   /* entries held, for tests of cache growth */

/* The cast autocast applies. The default is ampc_to, which is differentiable: with grad mode on
 * and an input that requires grad it records ToCopyBackward0 (derivatives_shape.c), so gradients
 * reach fp32 master weights through their casts, and only such casts (with history) are cached.
 * A hook for a backend that wants another cast; it must keep that property. */
extern ampc_tensor *(*ampc_autocast_cast_fn)(const ampc_tensor *t, ampc_dtype dtype);

#define AMPC_AUTOCAST_MAX_INPUTS 8

typedef struct ampc_autocast_scope {
    ampc_tensor *t[AMPC_AUTOCAST_MAX_INPUTS]; /* owned references (may equal the inputs) */
    int n;
    ampc_dtype dtype; /* FP32_DTYPE ops: the dtype to compute in */
    bool active;
} ampc_autocast_scope;

/* explicit_dtype: the caller passed dtype=..., which makes the op ineligible (PyTorch). Inputs
 * may contain NULLs (optional arguments). */
int ampc_autocast_enter(ampc_op op, int n, const ampc_tensor *const *inputs, bool explicit_dtype,
                         ampc_autocast_scope *ac);
/* cat / stack under a promote policy (torch's CPU list): their own dtype promotion already gives
 * the promoted result, so nothing is cast; this only raises torch's error for a lower-precision
 * input of another type than the region's. 0: go on; -1: error set. */
int ampc_autocast_check_list_promote(ampc_op op, int n, const ampc_tensor *const *ts);
void *ampc_autocast_exit(ampc_autocast_scope *ac, void *result);
/* enter() for frontends serving many ops: 0 at once when autocast is off everywhere or the op's
 * row says AC_NONE. */
int ampc_autocast_enter_op(ampc_op op, int n, const ampc_tensor *const *inputs, bool explicit_dtype,
                           ampc_autocast_scope *ac);
/* Status-returning variant of exit for frontends that return ampc_status. */
ampc_status ampc_autocast_exit_status(ampc_autocast_scope *ac, ampc_status st);

#ifdef __cplusplus
}
#endif
#endif
