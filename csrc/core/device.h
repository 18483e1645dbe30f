/* device.h: where a tensor's storage lives, and the per-device hooks (allocator) a backend
 * registers. The CPU backend is always present; the CUDA backend registers itself when the
 * extension was built with nvcc and a driver with at least one GPU is found. */
#ifndef AMPC_DEVICE_H
#define AMPC_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ampc_device_type { AMPC_CPU = 0, AMPC_CUDA = 1, AMPC_NUM_DEVICE_TYPES } ampc_device_type;

typedef struct ampc_device {
    int8_t type;  /* ampc_device_type */
    int8_t index; /* 0 for the CPU */
} ampc_device;

static inline ampc_device ampc_cpu_device(void) {
    ampc_device d = {AMPC_CPU, 0};
    return d;
}
static inline bool ampc_device_eq(ampc_device a, ampc_device b) {
    return a.type == b.type && a.index == b.index;
}
/* "cpu", "cuda:0": writes at most `cap` bytes into buf and returns buf. */
const char *ampc_device_str(ampc_device d, char *buf, size_t cap);

/* Memory statistics of one device's allocator (bytes). On the CPU they count tensor storage
 * allocated by ampc, which is what the demo reports as the CPU's peak memory. The counters after
 * num_allocs are kept by caching allocators (CUDA: core/caching_allocator.h) and zero elsewhere. */
typedef struct ampc_memory_stats {
    int64_t allocated, peak_allocated, reserved, peak_reserved, num_allocs;
    int64_t num_frees;         /* blocks returned to the cache */
    int64_t active_blocks;     /* blocks handed out now */
    int64_t segments;          /* segments held from the driver now */
    int64_t num_device_allocs; /* segments ever allocated from the driver (cudaMalloc calls) */
    int64_t num_device_frees;  /* segments ever returned to it (cudaFree calls) */
    int64_t num_alloc_retries; /* failed driver allocations retried after freeing the cache */
    int64_t num_ooms;          /* requests that failed with out of memory */
} ampc_memory_stats;

/* The hooks a device backend provides. */
typedef struct ampc_allocator {
    void *(*alloc)(ampc_device dev, size_t nbytes); /* NULL + ampc_set_error on failure */
    void (*free)(ampc_device dev, void *ptr, size_t nbytes);
    /* Copies between this device and the host or within the device (synchronous). */
    ampc_status (*memcpy)(void *dst, ampc_device dst_dev, const void *src, ampc_device src_dev,
                          size_t nbytes);
    ampc_status (*memset_zero)(void *dst, ampc_device dev, size_t nbytes);
    void (*stats)(ampc_device dev, ampc_memory_stats *out);
    void (*reset_peak)(ampc_device dev);
    void (*empty_cache)(ampc_device dev);
} ampc_allocator;

/* The memcpy and memset_zero hooks of every allocator of host memory (the CPU's, the pinned one). */
ampc_status ampc_host_memcpy(void *dst, ampc_device dst_dev, const void *src, ampc_device src_dev, size_t nbytes);
ampc_status ampc_host_memset_zero(void *dst, ampc_device dev, size_t nbytes);

void ampc_register_allocator(ampc_device_type type, const ampc_allocator *alloc);
const ampc_allocator *ampc_get_allocator(ampc_device_type type); /* NULL if not built/available */

/* Page-locked ("pinned") host memory, which GPUs read and write directly, so host<->device copies
 * from it can be asynchronous. The CUDA backend registers it (cudaHostAlloc); without a GPU
 * there is none. Its storage is CPU storage with `pinned` set (storage.h): the CPU kernels treat
 * it as any host memory. Only alloc, free, stats, reset_peak and empty_cache are used. */
void ampc_register_pinned_allocator(const ampc_allocator *alloc);
const ampc_allocator *ampc_get_pinned_allocator(void); /* NULL without a GPU */

/* Number of devices of a type (CPU: 1; CUDA: 0 when no driver/GPU or a CPU-only build). */
int ampc_device_count(ampc_device_type type);
void ampc_register_device_count(ampc_device_type type, int (*count)(void));

/* Validates that the device exists; error names the op. */
ampc_status ampc_check_device(const char *op, ampc_device d);

#ifdef __cplusplus
}
#endif
#endif
