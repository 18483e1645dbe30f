/* device.c: the registry of per-device allocators (and the pinned host one) and device counts,
 * and the copy hooks that every allocator of host memory shares. */
#include "device.h"

#include <stdio.h>
#include <string.h>

static const ampc_allocator *allocators[AMPC_NUM_DEVICE_TYPES];
static int (*device_counts[AMPC_NUM_DEVICE_TYPES])(void);

const char *ampc_device_str(ampc_device d, char *buf, size_t cap) {
    if (d.type == AMPC_CPU)
        snprintf(buf, cap, "cpu");
    else
        snprintf(buf, cap, "cuda:%d", (int)d.index);
    return buf;
}

ampc_status ampc_host_memcpy(void *dst, ampc_device dd, const void *src, ampc_device sd, size_t n) {
    (void)dd;
    (void)sd;
    if (n) memcpy(dst, src, n);
    return AMPC_OK;
}

ampc_status ampc_host_memset_zero(void *dst, ampc_device dev, size_t n) {
    (void)dev;
    if (n) memset(dst, 0, n);
    return AMPC_OK;
}

void ampc_register_allocator(ampc_device_type type, const ampc_allocator *alloc) {
    allocators[type] = alloc;
}

const ampc_allocator *ampc_get_allocator(ampc_device_type type) {
    return (type >= 0 && type < AMPC_NUM_DEVICE_TYPES) ? allocators[type] : NULL;
}

static const ampc_allocator *pinned_allocator;

void ampc_register_pinned_allocator(const ampc_allocator *alloc) { pinned_allocator = alloc; }
const ampc_allocator *ampc_get_pinned_allocator(void) { return pinned_allocator; }

void ampc_register_device_count(ampc_device_type type, int (*count)(void)) { device_counts[type] = count; }

int ampc_device_count(ampc_device_type type) {
    if (type == AMPC_CPU) return 1;
    if (type < 0 || type >= AMPC_NUM_DEVICE_TYPES || !device_counts[type]) return 0;
    return device_counts[type]();
}

ampc_status ampc_check_device(const char *op, ampc_device d) {
    if (d.type == AMPC_CPU) return AMPC_OK;
    int n = ampc_device_count((ampc_device_type)d.type);
    if (d.type == AMPC_CUDA && n == 0)
        return ampc_set_error(AMPC_E_RUNTIME,
                              "%s: CUDA is not available: ampc was built without CUDA, or no "
                              "NVIDIA driver/GPU was found",
                              op);
    if (d.index < 0 || d.index >= n)
        return ampc_set_error(AMPC_E_RUNTIME, "%s: invalid device ordinal cuda:%d (%d device(s) present)",
                              op, (int)d.index, n);
    if (!ampc_get_allocator((ampc_device_type)d.type))
        return ampc_set_error(AMPC_E_RUNTIME, "%s: no allocator registered for this device", op);
    return AMPC_OK;
}
