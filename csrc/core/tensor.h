/* tensor.h: the one tensor struct of ampc and the functions that create tensors and views.
 *
 * A tensor is a strided view (shape, strides in elements, offset in elements) into a refcounted
 * storage. Views share storage; nothing here copies data except ampc_contiguous/ampc_clone.
 * Autograd fields are filled by the autograd engine (autograd.h); a tensor that never takes
 * part in autograd leaves them zero. */
#ifndef AMPC_TENSOR_H
#define AMPC_TENSOR_H

#include <stdbool.h>
#include <stdint.h>

#include "device.h"
#include "dtype.h"
#include "scalar.h"
#include "status.h"
#include "storage.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AMPC_MAX_DIMS 8

struct ampc_node;          /* autograd graph node (autograd.h) */
struct ampc_autograd_meta; /* hooks, retain_grad, grad accumulator (autograd.h) */

typedef struct ampc_tensor {
    int64_t refcount;
    ampc_storage *storage;
    int64_t offset; /* elements from storage->data */
    int64_t shape[AMPC_MAX_DIMS];
    int64_t strides[AMPC_MAX_DIMS]; /* elements; may be 0 (expand) */
    int32_t ndim;
    ampc_dtype dtype;
    ampc_device device;
    bool is_wrapped_number; /* a Python scalar turned into a 0-dim tensor: lowest promotion tier */

    /* autograd */
    bool requires_grad;
    int32_t output_nr;          /* which output of grad_fn this tensor is */
    struct ampc_tensor *grad;   /* owned reference, or NULL */
    struct ampc_node *grad_fn;  /* owned reference, or NULL (a leaf) */
    struct ampc_autograd_meta *autograd_meta;
    struct ampc_tensor *view_base; /* owned: the tensor this one views, NULL when not a view */

    void *pyobj; /* borrowed back-pointer to the binding's wrapper, NULL in pure C */
} ampc_tensor;

/* ---- lifetime ---- */
void ampc_tensor_incref(ampc_tensor *t);
void ampc_tensor_decref(ampc_tensor *t); /* NULL-safe */
/* Hook the binding sets so the core can clear `pyobj` links and autograd can free its metadata;
 * the core calls it just before freeing a tensor. */
extern void (*ampc_tensor_free_hook)(ampc_tensor *t);
/* Number of tensor structs alive (debugging, tests: graphs must free what they hold). */
int64_t ampc_live_tensors(void);

/* ---- shape helpers ---- */
int64_t ampc_numel(const ampc_tensor *t);
bool ampc_is_contiguous(const ampc_tensor *t);
/* Whether two elements of t share memory (an expanded view: a stride 0 over a dim of size > 1),
 * which makes writing into t ill-defined; the check sets torch's "unsupported operation: more than
 * one element of the written-to tensor refers to a single memory location" error. */
bool ampc_has_internal_overlap(const ampc_tensor *t);
ampc_status ampc_check_writable_once(const ampc_tensor *t);
size_t ampc_nbytes(const ampc_tensor *t);                 /* numel * itemsize */
void *ampc_data_ptr(const ampc_tensor *t);                /* storage data + offset (bytes) */
void ampc_contiguous_strides(int ndim, const int64_t *shape, int64_t *strides);
/* Wraps a possibly negative dim into [0, ndim) or fails with PyTorch's IndexError message
 * ("Dimension out of range (expected to be in range of [-2, 1], but got 5)"). */
ampc_status ampc_wrap_dim(const char *op, int64_t dim, int ndim, int *out);
/* "[2, 3]" into buf; for error messages. */
const char *ampc_shape_str(int ndim, const int64_t *shape, char *buf, size_t cap);
/* Broadcast two shapes (PyTorch/NumPy rules) or fail naming the op and both shapes. */
ampc_status ampc_broadcast_shapes(const char *op, int nda, const int64_t *a, int ndb,
                                  const int64_t *b, int *ndout, int64_t *out);

/* ---- creation (new storage) ---- */
ampc_tensor *ampc_empty(int ndim, const int64_t *shape, ampc_dtype dtype, ampc_device device);
ampc_tensor *ampc_empty_like(const ampc_tensor *t);
ampc_tensor *ampc_zeros(int ndim, const int64_t *shape, ampc_dtype dtype, ampc_device device);
ampc_tensor *ampc_full(int ndim, const int64_t *shape, ampc_scalar value, ampc_dtype dtype,
                       ampc_device device);
/* A 0-dim tensor holding a Python number (is_wrapped_number set), for `t + 2.0`. */
ampc_tensor *ampc_wrap_scalar(ampc_scalar value, ampc_device device);
/* A tensor over existing storage (takes a new reference to `storage`). */
ampc_tensor *ampc_tensor_from_storage(ampc_storage *storage, int64_t offset, int ndim,
                                      const int64_t *shape, const int64_t *strides,
                                      ampc_dtype dtype);

/* ---- views (share storage; no autograd recording here: see ops.h for differentiable ones) ---- */
ampc_tensor *ampc_as_strided(const ampc_tensor *t, int ndim, const int64_t *shape,
                             const int64_t *strides, int64_t offset);
ampc_tensor *ampc_view(const ampc_tensor *t, int ndim, const int64_t *shape); /* -1 allowed once */
ampc_tensor *ampc_reshape(const ampc_tensor *t, int ndim, const int64_t *shape); /* view or copy */
ampc_tensor *ampc_permute(const ampc_tensor *t, int ndim, const int64_t *dims);
ampc_tensor *ampc_transpose(const ampc_tensor *t, int64_t dim0, int64_t dim1);
ampc_tensor *ampc_unsqueeze(const ampc_tensor *t, int64_t dim);
ampc_tensor *ampc_squeeze(const ampc_tensor *t, int ndims, const int64_t *dims); /* ndims 0: all */
ampc_tensor *ampc_expand(const ampc_tensor *t, int ndim, const int64_t *shape);  /* -1 keeps */
ampc_tensor *ampc_narrow(const ampc_tensor *t, int64_t dim, int64_t start, int64_t length);
ampc_tensor *ampc_select(const ampc_tensor *t, int64_t dim, int64_t index);
ampc_tensor *ampc_slice(const ampc_tensor *t, int64_t dim, int64_t start, int64_t stop, int64_t step);
ampc_tensor *ampc_flatten(const ampc_tensor *t, int64_t start_dim, int64_t end_dim);
ampc_tensor *ampc_alias(const ampc_tensor *t); /* same view, new tensor struct (detach) */

/* ---- copies ---- */
/* dst[...] = src, broadcasting src to dst's shape, casting dtypes, across devices. */
ampc_status ampc_copy_(ampc_tensor *dst, const ampc_tensor *src);
ampc_tensor *ampc_contiguous(const ampc_tensor *t); /* new ref to t itself when already contiguous */
ampc_tensor *ampc_clone(const ampc_tensor *t);
/* Tensor.resize_: t gets `shape` with contiguous strides from its offset; a storage too small
 * grows in place (old bytes kept as the prefix). RuntimeError when t requires grad or its memory
 * is borrowed (NumPy, DLPack). resize.c. */
ampc_status ampc_resize_(ampc_tensor *t, int ndim, const int64_t *shape);
/* `t` converted to dtype/device; returns a new ref to `t` itself when nothing changes and
 * copy is false. */
ampc_tensor *ampc_to(const ampc_tensor *t, ampc_dtype dtype, ampc_device device, bool copy);
/* PyTorch's non_blocking=True, as a thread-local setting (off by default) that the binding turns
 * on around one to()/cuda()/copy_() call: while it is on, a copy between pinned host memory and
 * a GPU may return before the transfer ends (it is ordered on the current stream, like a
 * kernel). Copies from or to pageable memory stay synchronous. Returns the previous setting. */
bool ampc_set_non_blocking(bool on);
bool ampc_non_blocking(void);
/* Pinned host memory (device.h): a contiguous copy of CPU tensor t in pinned memory, or t itself
 * (a new reference) when it already is pinned. RuntimeError for device tensors and without a GPU. */
ampc_tensor *ampc_pin_memory(const ampc_tensor *t);
bool ampc_is_pinned(const ampc_tensor *t);
ampc_status ampc_fill_(ampc_tensor *t, ampc_scalar value);
ampc_status ampc_zero_(ampc_tensor *t);
/* Reads element `linear_index` (row-major over t's shape) as a scalar (for .item(), repr). */
ampc_status ampc_get_scalar(const ampc_tensor *t, int64_t linear_index, ampc_scalar *out);
/* Host reads of tensor values (ampc_get_scalar, and the binding's .tolist()/.numpy() copies): each
 * is a device-to-host synchronisation on a GPU. A counter, so tests can assert that a hot path
 * (GradScaler.step + update with an ampc optimizer) makes none. Relaxed atomics; never reset. */
void ampc_note_host_read(void);
int64_t ampc_host_read_count(void);

#ifdef __cplusplus
}
#endif
#endif
