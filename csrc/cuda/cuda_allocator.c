/* cuda_allocator.c: the CUDA backend's memory: device memory through the caching allocator
 * (core/caching_allocator.c holds the block logic; this file gives it cudaMalloc/cudaFree and a
 * lock), kernels' scratch buffers from the same cache, and pinned host memory.
 *
 * Device memory: one cache per GPU, created on the GPU's first allocation. A block belongs to
 * the stream that was current when it was allocated and returns to that stream's pool when
 * freed; the stream's order makes it safe to reuse for the next request on that stream without
 * waiting. A tensor used on another stream than the one it was allocated on must not be freed
 * while that work is pending (PyTorch's record_stream; not provided yet).
 *
 * Pinned host memory (tensor.pin_memory(), DataLoader(pin_memory=True)): page-locked blocks from
 * cudaHostAlloc, kept for reuse because cudaHostAlloc and cudaFreeHost are slow and
 * synchronising. Sizes round up to powers of two, so a block is reused by any request of the
 * same rounded size. An asynchronous copy from or to a block records its stream
 * (ampc_cuda_pinned_record_use); when the block is freed, an event is recorded on each such
 * stream and the block is reused only once they have all completed, so a pending transfer never
 * reads memory that a new tensor already overwrote. */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../core/caching_allocator.h"
#include "cuda_host.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* ================================================================ device memory */

static ampc_caching_allocator *caches[AMPC_CUDA_MAX_DEVICES];
static int device_ids[AMPC_CUDA_MAX_DEVICES]; /* the driver ctx of cache i points at device_ids[i] */

static int segment_alloc(void *ctx, size_t nbytes, void **ptr) {
    int device = *(const int *)ctx;
    int prev = ampc_cuda_enter_device(device);
    cudaError_t err = cudaMalloc(ptr, nbytes);
    ampc_cuda_leave_device(prev, device);
    if (err == cudaSuccess) return AMPC_CA_OK;
    if (err == cudaErrorMemoryAllocation) {
        cudaGetLastError(); /* not sticky: the cache frees what it holds and retries */
        return AMPC_CA_OOM;
    }
    ampc_cuda_error((int)err, "cudaMalloc", __FILE__, __LINE__);
    return AMPC_CA_ERROR;
}

static void segment_free(void *ctx, void *ptr, size_t nbytes) {
    (void)nbytes;
    int device = *(const int *)ctx;
    int prev = ampc_cuda_enter_device(device);
    cudaFree(ptr);
    cudaGetLastError();
    ampc_cuda_leave_device(prev, device);
}

static void mem_info(void *ctx, size_t *free_bytes, size_t *total_bytes) {
    int device = *(const int *)ctx;
    int prev = ampc_cuda_enter_device(device);
    if (cudaMemGetInfo(free_bytes, total_bytes) != cudaSuccess) {
        cudaGetLastError();
        *free_bytes = *total_bytes = 0;
    }
    ampc_cuda_leave_device(prev, device);
}

static void device_synchronize(void *ctx) {
    int device = *(const int *)ctx;
    int prev = ampc_cuda_enter_device(device);
    cudaDeviceSynchronize(); /* cached blocks may still be in use by pending kernels */
    cudaGetLastError();
    ampc_cuda_leave_device(prev, device);
}

/* The cache of a GPU, created on first use. Call with the lock held. */
static ampc_caching_allocator *cache_of(int device) {
    if (!caches[device]) {
        device_ids[device] = device;
        ampc_ca_driver drv = {&device_ids[device], segment_alloc, segment_free, mem_info, device_synchronize};
        caches[device] = ampc_ca_new(device, drv);
        if (!caches[device]) ampc_set_error(AMPC_E_NOMEM, "CUDA caching allocator: out of host memory");
    }
    return caches[device];
}

static void *device_alloc(ampc_device dev, size_t nbytes) {
    if (nbytes == 0) return NULL; /* zero-size tensors hold no device memory */
    pthread_mutex_lock(&lock);
    ampc_caching_allocator *ca = cache_of(dev.index);
    void *p = ca ? ampc_ca_alloc(ca, nbytes, ampc_cuda_current_stream(dev.index)) : NULL;
    pthread_mutex_unlock(&lock);
    return p;
}

static void device_free(ampc_device dev, void *ptr, size_t nbytes) {
    (void)nbytes;
    if (!ptr) return;
    pthread_mutex_lock(&lock);
    if (caches[dev.index]) ampc_ca_free(caches[dev.index], ptr);
    pthread_mutex_unlock(&lock);
}

/* Synchronous copy (the allocator hook's contract), ordered after the current stream's work. */
static ampc_status device_memcpy(void *dst, ampc_device dd, const void *src, ampc_device sd, size_t n) {
    if (!n) return AMPC_OK;
    int device = dd.type == AMPC_CUDA ? dd.index : sd.index;
    cudaStream_t stream = (cudaStream_t)ampc_cuda_current_stream(device);
    int prev = ampc_cuda_enter_device(device);
    cudaError_t err = cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, stream);
    if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
    ampc_cuda_leave_device(prev, device);
    if (err != cudaSuccess) return ampc_cuda_error((int)err, "cudaMemcpyAsync", __FILE__, __LINE__);
    return AMPC_OK;
}

static ampc_status device_memset_zero(void *dst, ampc_device dev, size_t n) {
    if (!n) return AMPC_OK;
    AMPC_CUDA_TRY_ON(dev.index, cudaMemsetAsync(dst, 0, n, (cudaStream_t)ampc_cuda_current_stream(dev.index)));
    return AMPC_OK;
}

static void device_stats(ampc_device dev, ampc_memory_stats *out) {
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&lock);
    if (caches[dev.index]) ampc_ca_stats(caches[dev.index], out);
    pthread_mutex_unlock(&lock);
}

static void device_reset_peak(ampc_device dev) {
    pthread_mutex_lock(&lock);
    if (caches[dev.index]) ampc_ca_reset_peak(caches[dev.index]);
    pthread_mutex_unlock(&lock);
}

static void device_empty_cache(ampc_device dev) {
    pthread_mutex_lock(&lock);
    if (caches[dev.index]) ampc_ca_empty_cache(caches[dev.index]);
    pthread_mutex_unlock(&lock);
}

static const ampc_allocator device_allocator = {device_alloc,  device_free,       device_memcpy,     device_memset_zero,
                                                device_stats, device_reset_peak, device_empty_cache};

void *ampc_cuda_scratch_alloc(int device, size_t nbytes) {
    ampc_device d = {AMPC_CUDA, (int8_t)device};
    return device_alloc(d, nbytes);
}

void ampc_cuda_scratch_free(int device, void *ptr, size_t nbytes) {
    ampc_device d = {AMPC_CUDA, (int8_t)device};
    device_free(d, ptr, nbytes);
}

ampc_status ampc_cuda_mem_get_info(int device, size_t *free_bytes, size_t *total_bytes) {
    AMPC_TRY(ampc_cuda_check("mem_get_info", device));
    AMPC_CUDA_TRY_ON(device, cudaMemGetInfo(free_bytes, total_bytes));
    return AMPC_OK;
}

/* ================================================================ pinned host memory */

#define HOST_MAX_USES 8

typedef struct host_block {
    void *ptr;
    size_t size;
    bool allocated;
    int n_uses; /* streams with asynchronous copies from/to the block since it was allocated */
    int use_device[HOST_MAX_USES];
    cudaStream_t use_stream[HOST_MAX_USES];
    bool too_many_uses; /* more streams than fit: freeing waits for the devices instead */
    int n_events;       /* > 0: freed, waiting for these before reuse */
    cudaEvent_t events[HOST_MAX_USES];
} host_block;

static host_block **host_blocks; /* every block: allocated, waiting or free */
static size_t host_n, host_cap;
static ampc_memory_stats host_stats;

static size_t host_round(size_t n) {
    size_t r = 512;
    while (r < n && r <= SIZE_MAX / 2) r <<= 1;
    return r < n ? n : r;
}

static host_block *host_find(const void *ptr) {
    for (size_t i = 0; i < host_n; i++)
        if (host_blocks[i]->ptr == ptr) return host_blocks[i];
    return NULL;
}

/* Frees the events of waiting blocks whose copies are done, making them reusable. */
static void host_poll_events(void) {
    for (size_t i = 0; i < host_n; i++) {
        host_block *b = host_blocks[i];
        if (b->allocated || !b->n_events) continue;
        bool done = true;
        for (int k = 0; k < b->n_events && done; k++) {
            cudaError_t err = cudaEventQuery(b->events[k]);
            if (err == cudaErrorNotReady) done = false;
            cudaGetLastError(); /* other errors: the event will never fire usefully; treat as done */
        }
        if (!done) continue;
        for (int k = 0; k < b->n_events; k++) cudaEventDestroy(b->events[k]);
        cudaGetLastError();
        b->n_events = 0;
    }
}

/* Returns free (not waiting) blocks to the driver. */
static void host_release_free(void) {
    size_t kept = 0;
    for (size_t i = 0; i < host_n; i++) {
        host_block *b = host_blocks[i];
        if (!b->allocated && !b->n_events) {
            cudaFreeHost(b->ptr);
            cudaGetLastError();
            host_stats.reserved -= (int64_t)b->size;
            host_stats.segments--;
            host_stats.num_device_frees++;
            free(b);
        } else {
            host_blocks[kept++] = b;
        }
    }
    host_n = kept;
}

static void *host_alloc(ampc_device dev, size_t nbytes) {
    (void)dev;
    if (nbytes == 0) return NULL;
    size_t size = host_round(nbytes);
    pthread_mutex_lock(&lock);
    host_poll_events();
    host_block *b = NULL;
    for (size_t i = 0; i < host_n && !b; i++) {
        host_block *c = host_blocks[i];
        if (!c->allocated && !c->n_events && c->size == size) b = c;
    }
    if (!b && host_n == host_cap) {
        size_t cap = host_cap ? 2 * host_cap : 32;
        host_block **grown = (host_block **)realloc(host_blocks, cap * sizeof *grown);
        if (grown) {
            host_blocks = grown;
            host_cap = cap;
        }
    }
    if (!b && host_n < host_cap && (b = (host_block *)calloc(1, sizeof *b)) != NULL) {
        cudaError_t err = cudaHostAlloc(&b->ptr, size, cudaHostAllocDefault);
        if (err != cudaSuccess) { /* give the cache back and try once more */
            cudaGetLastError();
            host_stats.num_alloc_retries++;
            host_poll_events();
            host_release_free();
            err = cudaHostAlloc(&b->ptr, size, cudaHostAllocDefault);
        }
        if (err != cudaSuccess) {
            char want[32];
            host_stats.num_ooms++;
            cudaGetLastError();
            ampc_set_error(AMPC_E_NOMEM, "CUDA out of memory: pin_memory could not allocate %s of pinned host memory (%s)",
                           ampc_ca_format_size(size, want, sizeof want), cudaGetErrorString(err));
            free(b);
            pthread_mutex_unlock(&lock);
            return NULL;
        }
        b->size = size;
        host_blocks[host_n++] = b;
        host_stats.reserved += (int64_t)size;
        host_stats.segments++;
        host_stats.num_device_allocs++;
    }
    if (!b) {
        pthread_mutex_unlock(&lock);
        ampc_set_error(AMPC_E_NOMEM, "pin_memory: out of host memory for the pinned allocator's bookkeeping");
        return NULL;
    }
    b->allocated = true;
    b->n_uses = 0;
    b->too_many_uses = false;
    host_stats.allocated += (int64_t)b->size;
    host_stats.active_blocks++;
    host_stats.num_allocs++;
    if (host_stats.allocated > host_stats.peak_allocated) host_stats.peak_allocated = host_stats.allocated;
    if (host_stats.reserved > host_stats.peak_reserved) host_stats.peak_reserved = host_stats.reserved;
    void *p = b->ptr;
    pthread_mutex_unlock(&lock);
    return p;
}

static void host_free(ampc_device dev, void *ptr, size_t nbytes) {
    (void)dev;
    (void)nbytes;
    if (!ptr) return;
    pthread_mutex_lock(&lock);
    host_block *b = host_find(ptr);
    if (b && b->allocated) {
        b->allocated = false;
        host_stats.allocated -= (int64_t)b->size;
        host_stats.active_blocks--;
        host_stats.num_frees++;
        if (b->too_many_uses) {
            for (int d = 0; d < ampc_cuda_device_count(); d++) {
                int prev = ampc_cuda_enter_device(d);
                cudaDeviceSynchronize();
                ampc_cuda_leave_device(prev, d);
            }
            cudaGetLastError();
        } else {
            for (int k = 0; k < b->n_uses; k++) {
                int prev = ampc_cuda_enter_device(b->use_device[k]);
                cudaEvent_t e = NULL;
                cudaError_t err = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
                if (err == cudaSuccess) err = cudaEventRecord(e, b->use_stream[k]);
                if (err == cudaSuccess) {
                    b->events[b->n_events++] = e;
                } else { /* no event: wait for the stream now instead */
                    cudaGetLastError();
                    if (e) cudaEventDestroy(e);
                    cudaStreamSynchronize(b->use_stream[k]);
                    cudaGetLastError();
                }
                ampc_cuda_leave_device(prev, b->use_device[k]);
            }
        }
        b->n_uses = 0;
    }
    pthread_mutex_unlock(&lock);
}

void ampc_cuda_pinned_record_use(const ampc_storage *s, int device, void *stream) {
    if (!s || !s->pinned || !s->data) return;
    pthread_mutex_lock(&lock);
    host_block *b = host_find(s->data);
    if (b && b->allocated && !b->too_many_uses) {
        bool known = false;
        for (int k = 0; k < b->n_uses && !known; k++)
            known = b->use_device[k] == device && b->use_stream[k] == (cudaStream_t)stream;
        if (!known) {
            if (b->n_uses < HOST_MAX_USES) {
                b->use_device[b->n_uses] = device;
                b->use_stream[b->n_uses++] = (cudaStream_t)stream;
            } else {
                b->too_many_uses = true;
            }
        }
    }
    pthread_mutex_unlock(&lock);
}

static void host_stats_of(ampc_device dev, ampc_memory_stats *out) {
    (void)dev;
    pthread_mutex_lock(&lock);
    *out = host_stats;
    pthread_mutex_unlock(&lock);
}

static void host_reset_peak(ampc_device dev) {
    (void)dev;
    pthread_mutex_lock(&lock);
    host_stats.peak_allocated = host_stats.allocated;
    host_stats.peak_reserved = host_stats.reserved;
    pthread_mutex_unlock(&lock);
}

static void host_empty_cache(ampc_device dev) {
    (void)dev;
    pthread_mutex_lock(&lock);
    host_poll_events();
    host_release_free();
    pthread_mutex_unlock(&lock);
}

static const ampc_allocator pinned_allocator = {host_alloc,    host_free,       ampc_host_memcpy, ampc_host_memset_zero,
                                                host_stats_of, host_reset_peak, host_empty_cache};

void ampc_cuda_register_allocators(void) {
    ampc_register_allocator(AMPC_CUDA, &device_allocator);
    ampc_register_pinned_allocator(&pinned_allocator);
}
