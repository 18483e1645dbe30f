/* storage.h: a refcounted block of device memory that one or more tensors view.
 *
 * Storage either owns its bytes (allocated through the device allocator) or borrows them from
 * an external owner (a NumPy array, a DLPack capsule), in which case `release` is called with
 * `release_ctx` when the last reference goes. The version counter lives here, so every view of
 * the same memory shares it, as PyTorch's views share theirs: autograd compares it to detect
 * in-place modification of a tensor saved for backward. */
#ifndef AMPC_STORAGE_H
#define AMPC_STORAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ampc_storage {
    int64_t refcount; /* the binding holds the GIL; the core is not used from several threads */
    void *data;
    size_t nbytes;
    ampc_device device;
    int64_t version;
    void (*release)(void *ctx); /* external owner's release; NULL when ampc owns `data` */
    void *release_ctx;
    bool pinned; /* CPU storage in page-locked memory from the pinned allocator (device.h) */
} ampc_storage;

/* New owning storage of `nbytes` on `device`; contents uninitialised. */
ampc_storage *ampc_storage_new(ampc_device device, size_t nbytes);
/* New owning CPU storage in pinned host memory (ampc_get_pinned_allocator); fails with a
 * RuntimeError without a GPU. */
ampc_storage *ampc_storage_new_pinned(size_t nbytes);
/* Storage over memory owned elsewhere; `release(ctx)` runs when the last reference is dropped. */
ampc_storage *ampc_storage_wrap(ampc_device device, void *data, size_t nbytes,
                                void (*release)(void *ctx), void *ctx);
/* Shared memory (storage_shared.c, torch.multiprocessing): moves a CPU storage's bytes into an
 * anonymous shared region in place (every view keeps its data); a no-op when already shared. */
ampc_status ampc_storage_share_(ampc_storage *s);
bool ampc_storage_is_shared(const ampc_storage *s);
/* The shared region's fd (owned by the storage; dup it to pass it on), or -1 when not shared. */
int ampc_storage_shared_fd(const ampc_storage *s);
/* A CPU storage over the shared region of `fd` (taken over: closed with the storage, or on
 * failure), as another process's share_memory_ made it. */
ampc_storage *ampc_storage_from_shared_fd(int fd, size_t nbytes);
void ampc_storage_incref(ampc_storage *s);
void ampc_storage_decref(ampc_storage *s);

#ifdef __cplusplus
}
#endif
#endif
