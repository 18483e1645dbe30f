/* caching_allocator.h: the block cache behind the CUDA allocator (PyTorch's and CuPy's design),
 * in plain C with no CUDA call, so the C tests drive it with a fake device.
 *
 * Device memory comes from the driver in segments (cudaMalloc); the cache carves blocks out of
 * them and keeps freed blocks for reuse, because cudaMalloc and cudaFree are slow and cudaFree
 * synchronises the device. The rules, as PyTorch's CUDACachingAllocator:
 * - requests are rounded up to 512 bytes; requests up to 1 MiB come from the small pool (2 MiB
 *   segments), larger ones from the large pool (20 MiB segments below 10 MiB, else the request
 *   rounded up to 2 MiB);
 * - a request takes the smallest free block that fits (best fit), of its pool and its stream;
 *   the block is split when the remainder is worth keeping (small pool: >= 512 bytes; large
 *   pool: > 1 MiB);
 * - a freed block merges with its free neighbours in the same segment and goes back to the
 *   pool of the stream it was allocated on. Work on one stream runs in order, so a block freed
 *   right after the launches that use it is safe to hand to the next request on that stream,
 *   without waiting for the device; other streams never see it;
 * - when the driver is out of memory, every cached whole segment is returned to it and the
 *   request retried once; if it still fails, the request fails with PyTorch's "CUDA out of
 *   memory. Tried to allocate ..." message (AMPC_E_NOMEM);
 * - empty_cache returns cached whole segments (no allocated block in them) to the driver.
 *
 * Not thread-safe: the caller serialises (cuda_allocator.c holds a mutex). */
#ifndef AMPC_CACHING_ALLOCATOR_H
#define AMPC_CACHING_ALLOCATOR_H

#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AMPC_CA_ROUND 512                          /* every block size is a multiple */
#define AMPC_CA_SMALL_SIZE ((size_t)1 << 20)       /* largest request of the small pool */
#define AMPC_CA_SMALL_SEGMENT ((size_t)2 << 20)    /* segment size of the small pool */
#define AMPC_CA_LARGE_SEGMENT ((size_t)20 << 20)   /* segment for large requests below ... */
#define AMPC_CA_MIN_LARGE_ALLOC ((size_t)10 << 20) /* ... this size */
#define AMPC_CA_ROUND_LARGE ((size_t)2 << 20)      /* larger segments round up to this */

/* What segment_alloc reports. */
enum { AMPC_CA_OK = 0, AMPC_CA_OOM = 1, AMPC_CA_ERROR = 2 };

/* The device underneath: raw segment allocation and a few queries. */
typedef struct ampc_ca_driver {
    void *ctx;
    /* Allocates exactly `nbytes`: AMPC_CA_OK with *ptr set, AMPC_CA_OOM when the device is out
     * of memory (the cache then frees what it holds and retries), or AMPC_CA_ERROR for any other
     * failure, with the ampc error already set. */
    int (*segment_alloc)(void *ctx, size_t nbytes, void **ptr);
    void (*segment_free)(void *ctx, void *ptr, size_t nbytes);
    /* Free and total device memory, for the out-of-memory message (zeros if unknown). */
    void (*mem_info)(void *ctx, size_t *free_bytes, size_t *total_bytes);
    /* Waits for all work on the device; called once before cached segments are returned to the
     * driver, so no pending kernel still uses them. May be NULL. */
    void (*synchronize)(void *ctx);
} ampc_ca_driver;

typedef struct ampc_caching_allocator ampc_caching_allocator;

/* A cache for device `device` (its index is only used in messages); NULL when out of host memory. */
ampc_caching_allocator *ampc_ca_new(int device, ampc_ca_driver driver);
/* Frees the bookkeeping and returns every segment to the driver (allocated blocks included). */
void ampc_ca_destroy(ampc_caching_allocator *ca);

/* A block of at least `nbytes` for work on `stream` (any opaque handle; NULL is a stream too).
 * nbytes == 0 returns NULL without error. On failure: NULL with the error set. */
void *ampc_ca_alloc(ampc_caching_allocator *ca, size_t nbytes, void *stream);
/* Returns a block to its stream's pool. Unknown pointers (and NULL) are ignored. */
void ampc_ca_free(ampc_caching_allocator *ca, void *ptr);
/* Returns all cached whole segments to the driver. */
void ampc_ca_empty_cache(ampc_caching_allocator *ca);

void ampc_ca_stats(const ampc_caching_allocator *ca, ampc_memory_stats *out);
void ampc_ca_reset_peak(ampc_caching_allocator *ca);

/* The size a request is served with (rounded up to 512 bytes). */
size_t ampc_ca_round_size(size_t nbytes);
/* The size of the segment a new request of (rounded) size `size` allocates. */
size_t ampc_ca_segment_size(size_t size);
/* Size of the block that holds ptr (an allocated block's start), 0 if unknown. For tests. */
size_t ampc_ca_block_size(const ampc_caching_allocator *ca, const void *ptr);
/* Number of cached free blocks (both pools, every stream). For tests. */
size_t ampc_ca_free_blocks(const ampc_caching_allocator *ca);

/* PyTorch's format_size: "512 bytes", "1.50 KiB", "20.00 MiB", "2.00 GiB". */
const char *ampc_ca_format_size(uint64_t nbytes, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
