/* cuda_stream.c: the current stream of each GPU, a pool of streams, and events: what
 * ampc.cuda.Stream, ampc.cuda.Event and `with ampc.cuda.stream(s)` are made of.
 *
 * Every op runs on the current stream of its GPU (ampc_cuda_current_stream). It is per thread,
 * as in PyTorch, and starts as NULL: the legacy default stream, which orders itself with all
 * work on the device, so code that never touches streams never races.
 *
 * Streams come from a pool, as PyTorch's do: 32 non-blocking streams per device and priority,
 * created on first use and handed out round-robin, never destroyed. A stream handle can then
 * never be reused by the driver for another stream while the caching allocator still holds
 * blocks keyed by it (a destroyed stream's handle could come back for a new stream that would
 * inherit blocks still in use by the old one's pending work). */
#include <pthread.h>
#include <stdbool.h>

#include "cuda_host.h"

#define POOL_STREAMS 32
#define MAX_PRIORITY_LEVELS 8

static _Thread_local void *current[AMPC_CUDA_MAX_DEVICES];

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static cudaStream_t pool[AMPC_CUDA_MAX_DEVICES][MAX_PRIORITY_LEVELS][POOL_STREAMS];
static unsigned pool_next[AMPC_CUDA_MAX_DEVICES][MAX_PRIORITY_LEVELS];

static bool valid_index(int device) { return device >= 0 && device < ampc_cuda_device_count(); }

void *ampc_cuda_current_stream(int device) {
    return device >= 0 && device < AMPC_CUDA_MAX_DEVICES ? current[device] : NULL;
}

void ampc_cuda_set_current_stream(int device, void *stream) {
    if (device >= 0 && device < AMPC_CUDA_MAX_DEVICES) current[device] = stream;
}

ampc_status ampc_cuda_priority_range(int device, int *least, int *greatest) {
    AMPC_TRY(ampc_cuda_check("Stream", device));
    AMPC_CUDA_TRY_ON(device, cudaDeviceGetStreamPriorityRange(least, greatest));
    return AMPC_OK;
}

ampc_status ampc_cuda_stream_create(int device, int priority, void **stream) {
    int least, greatest; /* numerically: greatest <= priority <= least; lower is more urgent */
    AMPC_TRY(ampc_cuda_priority_range(device, &least, &greatest));
    if (priority > least) priority = least;
    if (priority < greatest) priority = greatest;
    int level = least - priority;
    if (level >= MAX_PRIORITY_LEVELS) {
        level = MAX_PRIORITY_LEVELS - 1;
        priority = least - level;
    }
    pthread_mutex_lock(&pool_lock);
    unsigned slot = pool_next[device][level]++ % POOL_STREAMS;
    cudaStream_t s = pool[device][level][slot];
    cudaError_t err = cudaSuccess;
    if (!s) {
        int prev = ampc_cuda_enter_device(device);
        err = cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, priority);
        ampc_cuda_leave_device(prev, device);
        if (err == cudaSuccess) pool[device][level][slot] = s;
    }
    pthread_mutex_unlock(&pool_lock);
    if (err != cudaSuccess) return ampc_cuda_error((int)err, "cudaStreamCreateWithPriority", __FILE__, __LINE__);
    *stream = (void *)s;
    return AMPC_OK;
}

ampc_status ampc_cuda_stream_synchronize(int device, void *stream) {
    AMPC_TRY(ampc_cuda_check("Stream.synchronize", device));
    AMPC_CUDA_TRY_ON(device, cudaStreamSynchronize((cudaStream_t)stream));
    return AMPC_OK;
}

ampc_status ampc_cuda_stream_query(int device, void *stream, bool *done) {
    AMPC_TRY(ampc_cuda_check("Stream.query", device));
    int prev = ampc_cuda_enter_device(device);
    cudaError_t err = cudaStreamQuery((cudaStream_t)stream);
    ampc_cuda_leave_device(prev, device);
    if (err == cudaErrorNotReady) {
        cudaGetLastError(); /* "not ready" is an answer, not an error to keep */
        *done = false;
        return AMPC_OK;
    }
    if (err != cudaSuccess) return ampc_cuda_error((int)err, "cudaStreamQuery", __FILE__, __LINE__);
    *done = true;
    return AMPC_OK;
}

ampc_status ampc_cuda_stream_priority(int device, void *stream, int *priority) {
    AMPC_TRY(ampc_cuda_check("Stream.priority", device));
    *priority = 0;
    if (!stream) return AMPC_OK; /* the legacy default stream */
    AMPC_CUDA_TRY_ON(device, cudaStreamGetPriority((cudaStream_t)stream, priority));
    return AMPC_OK;
}

ampc_status ampc_cuda_stream_wait_event(int device, void *stream, void *event) {
    AMPC_TRY(ampc_cuda_check("Stream.wait_event", device));
    AMPC_CUDA_TRY_ON(device, cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event, 0));
    return AMPC_OK;
}

/* ---------------------------------------------------------------- events */

ampc_status ampc_cuda_event_create(int device, bool enable_timing, bool blocking, void **event) {
    AMPC_TRY(ampc_cuda_check("Event", device));
    unsigned flags = (enable_timing ? 0u : cudaEventDisableTiming) | (blocking ? cudaEventBlockingSync : 0u);
    cudaEvent_t e = NULL;
    AMPC_CUDA_TRY_ON(device, cudaEventCreateWithFlags(&e, flags));
    *event = (void *)e;
    return AMPC_OK;
}

void ampc_cuda_event_destroy(int device, void *event) {
    if (!event || !valid_index(device)) return;
    int prev = ampc_cuda_enter_device(device);
    cudaEventDestroy((cudaEvent_t)event); /* returns at once; the driver frees it once it completes */
    cudaGetLastError();
    ampc_cuda_leave_device(prev, device);
}

ampc_status ampc_cuda_event_record(void *event, int device, void *stream) {
    AMPC_TRY(ampc_cuda_check("Event.record", device));
    AMPC_CUDA_TRY_ON(device, cudaEventRecord((cudaEvent_t)event, (cudaStream_t)stream));
    return AMPC_OK;
}

ampc_status ampc_cuda_event_synchronize(void *event) {
    AMPC_CUDA_TRY(cudaEventSynchronize((cudaEvent_t)event));
    return AMPC_OK;
}

ampc_status ampc_cuda_event_query(void *event, bool *done) {
    cudaError_t err = cudaEventQuery((cudaEvent_t)event);
    if (err == cudaErrorNotReady) {
        cudaGetLastError();
        *done = false;
        return AMPC_OK;
    }
    if (err != cudaSuccess) return ampc_cuda_error((int)err, "cudaEventQuery", __FILE__, __LINE__);
    *done = true;
    return AMPC_OK;
}

ampc_status ampc_cuda_event_elapsed_time(void *start, void *end, float *ms) {
    /* Waits for both first: PyTorch raises "device not ready" instead, which only ever means
     * the caller forgot to synchronise. */
    AMPC_CUDA_TRY(cudaEventSynchronize((cudaEvent_t)start));
    AMPC_CUDA_TRY(cudaEventSynchronize((cudaEvent_t)end));
    AMPC_CUDA_TRY(cudaEventElapsedTime(ms, (cudaEvent_t)start, (cudaEvent_t)end));
    return AMPC_OK;
}
