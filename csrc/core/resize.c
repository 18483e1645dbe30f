/* resize.c: Tensor.resize_ and resize_as_, in place on the tensor and its storage.
 *
 * torch's resize_ gives the tensor a new shape with contiguous strides from its offset; when the
 * storage is too small it grows it in place, keeping the old bytes as the prefix, so every
 * tensor sharing the storage sees the new memory (their own shapes do not change). Growing is a
 * new allocation of the larger size, a device copy of the old bytes, and a swap of the two
 * allocations between the storage structs, so the allocator that made each one frees it. */
#include "tensor.h"

#include "status.h"

ampc_status ampc_resize_(ampc_tensor *t, int ndim, const int64_t *shape) {
    char buf[256];
    if (ndim < 0 || ndim > AMPC_MAX_DIMS)
        return ampc_set_error(AMPC_E_RUNTIME, "resize_: %d dims (at most %d)", ndim, AMPC_MAX_DIMS);
    if (t->requires_grad)
        return ampc_set_error(AMPC_E_RUNTIME, "cannot resize variables that require grad");
    int64_t numel = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return ampc_set_error(AMPC_E_RUNTIME, "Trying to create tensor with negative dimension %lld: %s",
                                  (long long)shape[i], ampc_shape_str(ndim, shape, buf, sizeof buf));
        numel *= shape[i];
    }
    size_t item = ampc_dtype_itemsize(t->dtype);
    size_t need = numel ? (size_t)(t->offset + numel) * item : 0;
    ampc_storage *s = t->storage;
    if (need > s->nbytes) {
        if (s->release)
            return ampc_set_error(AMPC_E_RUNTIME, "Trying to resize storage that is not resizable");
        ampc_storage *grown = s->pinned ? ampc_storage_new_pinned(need) : ampc_storage_new(s->device, need);
        if (!grown) return ampc_last_status();
        if (s->nbytes) {
            int64_t old_n = (int64_t)s->nbytes;
            ampc_tensor *src = ampc_tensor_from_storage(s, 0, 1, &old_n, (int64_t[]){1}, AMPC_UINT8);
            ampc_tensor *dst = src ? ampc_tensor_from_storage(grown, 0, 1, &old_n, (int64_t[]){1}, AMPC_UINT8) : NULL;
            ampc_status st = dst ? ampc_copy_(dst, src) : ampc_last_status();
            ampc_tensor_decref(src);
            ampc_tensor_decref(dst);
            if (st != AMPC_OK) {
                ampc_storage_decref(grown);
                return st;
            }
        }
        void *data = s->data;
        size_t nbytes = s->nbytes;
        s->data = grown->data;
        s->nbytes = grown->nbytes;
        grown->data = data;
        grown->nbytes = nbytes;
        ampc_storage_decref(grown); /* frees the old allocation */
    }
    for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
    t->ndim = ndim;
    ampc_contiguous_strides(ndim, t->shape, t->strides);
    s->version++;
    return AMPC_OK;
}
