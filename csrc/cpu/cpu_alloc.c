/* cpu_alloc.c: the CPU allocator: 64-byte aligned host memory with statistics.
 *
 * The statistics (bytes held by tensor storage, and their peak) are what the demo and
 * ampc.monitor report as CPU "peak memory": measured, not guessed. */
#include <stdlib.h>

#include "../core/device.h"
#include "cpu_backend.h"

static ampc_memory_stats stats;

static void *cpu_alloc(ampc_device dev, size_t nbytes) {
    (void)dev;
    size_t rounded = (nbytes + 63) & ~(size_t)63;
    void *p = aligned_alloc(64, rounded ? rounded : 64);
    if (!p) {
        ampc_set_error(AMPC_E_NOMEM, "CPU out of memory: tried to allocate %zu bytes", nbytes);
        return NULL;
    }
    stats.allocated += (int64_t)nbytes;
    stats.num_allocs++;
    stats.active_blocks++;
    if (stats.allocated > stats.peak_allocated) stats.peak_allocated = stats.allocated;
    stats.reserved = stats.allocated;
    if (stats.reserved > stats.peak_reserved) stats.peak_reserved = stats.reserved;
    return p;
}

static void cpu_free(ampc_device dev, void *ptr, size_t nbytes) {
    (void)dev;
    free(ptr);
    stats.allocated -= (int64_t)nbytes;
    stats.num_frees++;
    stats.active_blocks--;
    stats.reserved = stats.allocated;
}

static void cpu_stats(ampc_device dev, ampc_memory_stats *out) {
    (void)dev;
    *out = stats;
}

static void cpu_reset_peak(ampc_device dev) {
    (void)dev;
    stats.peak_allocated = stats.allocated;
    stats.peak_reserved = stats.reserved;
}

static void cpu_empty_cache(ampc_device dev) { (void)dev; }

const ampc_allocator ampc_cpu_allocator = {cpu_alloc, cpu_free, ampc_host_memcpy, ampc_host_memset_zero,
                                           cpu_stats, cpu_reset_peak, cpu_empty_cache};
