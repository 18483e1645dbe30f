/* autocast.c: autocast's thread-local state, the policy table, casting of op inputs and the
 * weight-cast cache. */
#include "autocast.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- state */

static _Thread_local bool enabled[AMPC_NUM_DEVICE_TYPES];
static _Thread_local ampc_dtype fast_dtype[AMPC_NUM_DEVICE_TYPES] = {AMPC_BFLOAT16, AMPC_FLOAT16};
static _Thread_local bool cache_enabled = true;
static _Thread_local int nesting;
/* > 0 while an autocast wrapper runs its op: nested op calls are not cast again. */
static _Thread_local int excluded;

bool ampc_autocast_is_enabled(ampc_device_type dev) { return enabled[dev]; }
void ampc_autocast_set_enabled(ampc_device_type dev, bool on) { enabled[dev] = on; }
ampc_dtype ampc_autocast_get_dtype(ampc_device_type dev) { return fast_dtype[dev]; }
void ampc_autocast_set_dtype(ampc_device_type dev, ampc_dtype dt) { fast_dtype[dev] = dt; }
bool ampc_autocast_is_cache_enabled(void) { return cache_enabled; }
void ampc_autocast_set_cache_enabled(bool on) { cache_enabled = on; }
int ampc_autocast_increment_nesting(void) { return ++nesting; }
int ampc_autocast_decrement_nesting(void) { return nesting > 0 ? --nesting : 0; }

static ampc_tensor *default_cast(const ampc_tensor *t, ampc_dtype dtype) {
    return ampc_to(t, dtype, t->device, false);
}
ampc_tensor *(*ampc_autocast_cast_fn)(const ampc_tensor *t, ampc_dtype dtype) = default_cast;

/* ---------------------------------------------------------------- weight-cast cache
 * Process-global like PyTorch's (autograd may run on other threads). Each entry holds a strong
 * reference to its source, so a freed tensor's address can never hit a stale entry; all entries
 * go when the outermost region exits. A model has few hundred parameters: a linear scan is fine. */

typedef struct {
    ampc_tensor *src, *cast;
} cache_entry;

static cache_entry *cache;
static int64_t cache_len, cache_cap;

/* Guards cache/cache_len/cache_cap (PyTorch's cached_casts_mutex). Held only for lookups and
 * inserts, never while casting or freeing tensors. */
static int cache_lock;
static void lock_cache(void) {
    while (__atomic_exchange_n(&cache_lock, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(&cache_lock, __ATOMIC_RELAXED)) {
        }
}
static void unlock_cache(void) { __atomic_store_n(&cache_lock, 0, __ATOMIC_RELEASE); }

void ampc_autocast_clear_cache(void) {
    lock_cache();
    cache_entry *entries = cache;
    int64_t n = cache_len;
    cache = NULL;
    cache_len = cache_cap = 0;
    unlock_cache();
    for (int64_t i = 0; i < n; i++) {
        ampc_tensor_decref(entries[i].cast);
        ampc_tensor_decref(entries[i].src);
    }
    free(entries);
}

int64_t ampc_autocast_cache_size(void) {
    lock_cache();
    int64_t n = cache_len;
    unlock_cache();
    return n;
}

/* PyTorch's can_try_cache: fp32 leaves that require grad, not views, cast to the fast dtype. */
static bool cacheable(const ampc_tensor *t, ampc_dtype to) {
    return cache_enabled && to == fast_dtype[t->device.type] && t->dtype == AMPC_FLOAT32 && t->requires_grad &&
           t->grad_fn == NULL && t->view_base == NULL;
}

static ampc_tensor *cached_cast(const ampc_tensor *t, ampc_dtype to) {
    if (t->dtype == to) {
        ampc_tensor_incref((ampc_tensor *)t);
        return (ampc_tensor *)t;
    }
    bool use_cache = cacheable(t, to);
    if (use_cache) {
        ampc_tensor *hit = NULL;
        lock_cache();
        for (int64_t i = 0; i < cache_len && !hit; i++)
            if (cache[i].src == t && cache[i].cast->dtype == to) hit = cache[i].cast;
        if (hit) ampc_tensor_incref(hit);
        unlock_cache();
        if (hit) return hit;
    }
    ampc_tensor *c = ampc_autocast_cast_fn(t, to);
    if (!c || !use_cache) return c;
    /* A cast made without grad history (under no_grad) must never be reused to build a graph
     * later (PyTorch issues #65766, #112583): only cache casts that carry the history. */
    if (c->grad_fn == NULL) return c;
    lock_cache();
    if (cache_len == cache_cap) {
        int64_t cap = cache_cap ? cache_cap * 2 : 64;
        cache_entry *grown = (cache_entry *)realloc(cache, (size_t)cap * sizeof *grown);
        if (!grown) { /* no cache, still correct */
            unlock_cache();
            return c;
        }
        cache = grown;
        cache_cap = cap;
    }
    ampc_tensor_incref((ampc_tensor *)t);
    ampc_tensor_incref(c);
    cache[cache_len].src = (ampc_tensor *)t;
    cache[cache_len].cast = c;
    cache_len++;
    unlock_cache();
    return c;
}

/* ---------------------------------------------------------------- op entry */

/* Python numbers reach ops as wrapped 0-dim tensors; in PyTorch they are double (or not tensors
 * at all, pow.Tensor_Scalar), so autocast never casts them: casting would also drop the wrapped
 * flag and change the op's type promotion. */
static bool eligible(const ampc_tensor *t, ampc_device_type dev) {
    return t && !t->is_wrapped_number && t->device.type == (int)dev && ampc_dtype_is_floating(t->dtype) &&
           t->dtype != AMPC_FLOAT64;
}

static const char banned_message[] =
    "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
    "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
    "safe to autocast.";

int ampc_autocast_enter(ampc_op op, int n, const ampc_tensor *const *inputs, bool explicit_dtype,
                        ampc_autocast_scope *ac) {
    ac->active = false;
    ac->n = 0;
    /* An explicit dtype= makes any op ineligible (PyTorch): the call runs as written. */
    if (excluded || explicit_dtype) return 0;
    /* The region's device type: that of the first tensor input with autocast on for it. */
    int dev = -1;
    for (int i = 0; i < n && dev < 0; i++)
        if (inputs[i] && !inputs[i]->is_wrapped_number && enabled[inputs[i]->device.type]) dev = inputs[i]->device.type;
    if (dev < 0) return 0;
    ampc_autocast_policy policy = ampc_op_autocast_policy_on(op, (ampc_device_type)dev);
    ampc_dtype to;
    switch (policy) {
    case AMPC_AC_POLICY_LOWER: to = fast_dtype[dev]; break;
    case AMPC_AC_POLICY_FP32: to = AMPC_FLOAT32; break;
    case AMPC_AC_POLICY_FP32_DTYPE:
        /* only when the first argument is eligible */
        if (!eligible(inputs[0], (ampc_device_type)dev)) return 0;
        to = AMPC_DTYPE_UNDEFINED;
        break;
    case AMPC_AC_POLICY_PROMOTE:
        /* PyTorch's promote_type: start from the region's dtype; any fp32 input wins; another
         * lower-precision type (bf16 in an fp16 region) is an error there too. */
        to = fast_dtype[dev];
        for (int i = 0; i < n; i++) {
            if (!eligible(inputs[i], (ampc_device_type)dev) || inputs[i]->dtype == to) continue;
            if (to == AMPC_FLOAT32 || inputs[i]->dtype == AMPC_FLOAT32) {
                to = AMPC_FLOAT32;
            } else {
                ampc_set_error(AMPC_E_RUNTIME, "Unexpected floating ScalarType in at::autocast::prioritize");
                return -1;
            }
        }
        break;
    case AMPC_AC_POLICY_BANNED:
        if (dev == AMPC_CUDA) {
            ampc_set_error(AMPC_E_RUNTIME, "%s", banned_message);
            return -1;
        }
        to = AMPC_FLOAT32; /* not reached on the CPU, whose list runs binary_cross_entropy in fp32 */
        break;
    default: return 0;
    }
    if (n > AMPC_AUTOCAST_MAX_INPUTS) {
        ampc_set_error(AMPC_E_VALUE, "autocast: %s has more than %d tensor inputs", ampc_op_name(op),
                       AMPC_AUTOCAST_MAX_INPUTS);
        return -1;
    }
    ac->n = n;
    ac->dtype = policy == AMPC_AC_POLICY_FP32_DTYPE ? AMPC_FLOAT32 : AMPC_DTYPE_UNDEFINED;
    for (int i = 0; i < n; i++) {
        const ampc_tensor *t = inputs[i];
        if (t && to != AMPC_DTYPE_UNDEFINED && eligible(t, (ampc_device_type)dev)) {
            ac->t[i] = cached_cast(t, to);
            if (!ac->t[i]) {
                for (int j = 0; j < i; j++) ampc_tensor_decref(ac->t[j]);
                ac->n = 0;
                return -1;
            }
        } else {
            if (t) ampc_tensor_incref((ampc_tensor *)t);
            ac->t[i] = (ampc_tensor *)t;
        }
    }
    ac->active = true;
    excluded++;
    return 1;
}

int ampc_autocast_check_list_promote(ampc_op op, int n, const ampc_tensor *const *ts) {
    if (excluded || n <= 0) return 0;
    int dev = -1;
    for (int i = 0; i < n && dev < 0; i++)
        if (ts[i] && enabled[ts[i]->device.type]) dev = ts[i]->device.type;
    if (dev < 0 || ampc_op_autocast_policy_on(op, (ampc_device_type)dev) != AMPC_AC_POLICY_PROMOTE) return 0;
    ampc_dtype to = fast_dtype[dev];
    for (int i = 0; i < n; i++) { /* PyTorch's prioritize, in argument order */
        if (!eligible(ts[i], (ampc_device_type)dev) || ts[i]->dtype == to) continue;
        if (to == AMPC_FLOAT32 || ts[i]->dtype == AMPC_FLOAT32) {
            to = AMPC_FLOAT32;
        } else {
            ampc_set_error(AMPC_E_RUNTIME, "Unexpected floating ScalarType in at::autocast::prioritize");
            return -1;
        }
    }
    return 0;
}

/* The frontends that serve many ops (ampc_unary, ampc_binary, ampc_reduce) enter through this:
 * a cheap early exit when no device type has autocast on, then the op's row decides. */
int ampc_autocast_enter_op(ampc_op op, int n, const ampc_tensor *const *inputs, bool explicit_dtype,
                           ampc_autocast_scope *ac) {
    ac->active = false;
    ac->n = 0;
    bool any_policy = false;
    for (int d = 0; d < AMPC_NUM_DEVICE_TYPES; d++)
        any_policy |= enabled[d] && ampc_op_autocast_policy_on(op, (ampc_device_type)d) != AMPC_AC_POLICY_NONE;
    if (!any_policy || excluded) return 0;
    return ampc_autocast_enter(op, n, inputs, explicit_dtype, ac);
}

void *ampc_autocast_exit(ampc_autocast_scope *ac, void *result) {
    if (!ac->active) return result;
    excluded--;
    for (int i = 0; i < ac->n; i++) ampc_tensor_decref(ac->t[i]);
    ac->active = false;
    return result;
}

ampc_status ampc_autocast_exit_status(ampc_autocast_scope *ac, ampc_status st) {
    ampc_autocast_exit(ac, NULL);
    return st;
}
