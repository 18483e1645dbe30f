/* storage.c: refcounted device memory (owned, pinned, or borrowed). */
#include "storage.h"

#include <stdlib.h>

static ampc_storage *new_header(void) {
    ampc_storage *s = (ampc_storage *)calloc(1, sizeof *s);
    if (!s) ampc_set_error(AMPC_E_NOMEM, "out of host memory allocating a storage header");
    return s;
}

ampc_storage *ampc_storage_new(ampc_device device, size_t nbytes) {
    if (ampc_check_device("empty", device) != AMPC_OK) return NULL;
    const ampc_allocator *a = ampc_get_allocator((ampc_device_type)device.type);
    ampc_storage *s = new_header();
    if (!s) return NULL;
    s->data = a->alloc(device, nbytes);
    if (!s->data && nbytes) {
        free(s);
        return NULL; /* the allocator set the error */
    }
    s->refcount = 1;
    s->nbytes = nbytes;
    s->device = device;
    return s;
}

ampc_storage *ampc_storage_new_pinned(size_t nbytes) {
    const ampc_allocator *a = ampc_get_pinned_allocator();
    if (!a) {
        ampc_set_error(AMPC_E_RUNTIME, "pin_memory: cannot pin host memory: CUDA is not available (ampc was built "
                                       "without CUDA, or no NVIDIA driver/GPU was found)");
        return NULL;
    }
    ampc_storage *s = new_header();
    if (!s) return NULL;
    s->data = a->alloc(ampc_cpu_device(), nbytes);
    if (!s->data && nbytes) {
        free(s);
        return NULL;
    }
    s->refcount = 1;
    s->nbytes = nbytes;
    s->device = ampc_cpu_device();
    s->pinned = true;
    return s;
}

ampc_storage *ampc_storage_wrap(ampc_device device, void *data, size_t nbytes,
                                void (*release)(void *ctx), void *ctx) {
    ampc_storage *s = new_header();
    if (!s) return NULL;
    s->refcount = 1;
    s->data = data;
    s->nbytes = nbytes;
    s->device = device;
    s->release = release;
    s->release_ctx = ctx;
    return s;
}

void ampc_storage_incref(ampc_storage *s) { s->refcount++; }

void ampc_storage_decref(ampc_storage *s) {
    if (!s || --s->refcount > 0) return;
    if (s->release)
        s->release(s->release_ctx);
    else if (s->pinned)
        ampc_get_pinned_allocator()->free(s->device, s->data, s->nbytes);
    else if (s->data)
        ampc_get_allocator((ampc_device_type)s->device.type)->free(s->device, s->data, s->nbytes);
    free(s);
}
