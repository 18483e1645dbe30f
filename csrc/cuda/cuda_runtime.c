/* cuda_runtime.c: start-up of the CUDA backend, its allocator, and the COPY, FILL and RANDOM
 * entries of the dispatcher for CUDA tensors.
 *
 * Start-up never fails: without a driver or GPU cudaGetDeviceCount reports an error, which
 * means zero devices, and only the device count is registered (so `ampc.cuda.is_available()`
 * is False and creating a CUDA tensor raises "CUDA is not available"). With a GPU it registers
 * a plain cudaMalloc/cudaFree allocator with statistics (the caching allocator is a later
 * step) and the minimal kernels every tensor needs: copies between host and device and fills.
 * Copies that are not one contiguous block of the same dtype go through host staging: correct
 * for every layout and cast, slow, and replaced when the full CUDA backend arrives.
 *
 * Everything runs on the default stream and cudaMemcpy is synchronous, so no copy here can
 * race with a kernel launched before it. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>

#include "../core/ampc.h"
#include "cuda_backend.h"

static int device_count = 0;
static ampc_memory_stats stats[AMPC_CUDA_MAX_DEVICES];

/* Records a failed CUDA call as an ampc error naming the call, file and line; clears CUDA's
 * sticky "last error" so the next call starts clean. */
static ampc_status cuda_fail(cudaError_t err, const char *call, const char *file, int line) {
    cudaGetLastError();
    return ampc_set_error(AMPC_E_RUNTIME, "CUDA error: %s (%s) in %s at %s:%d", cudaGetErrorString(err),
                          cudaGetErrorName(err), call, file, line);
}
#define CUDA_TRY(call)                                                    \
    do {                                                                  \
        cudaError_t cuda_try_err_ = (call);                               \
        if (cuda_try_err_ != cudaSuccess)                                 \
            return cuda_fail(cuda_try_err_, #call, __FILE__, __LINE__);   \
    } while (0)

/* ---------------------------------------------------------------- devices */

static int count_devices(void) { return device_count; }

int ampc_cuda_device_count(void) { return device_count; }

ampc_status ampc_cuda_check(const char *op, int index) {
    if (device_count == 0)
        return ampc_set_error(AMPC_E_RUNTIME,
                              "%s: CUDA is not available: no NVIDIA driver or GPU was found on this machine", op);
    if (index < 0 || index >= device_count)
        return ampc_set_error(AMPC_E_RUNTIME, "%s: invalid device ordinal %d (%d CUDA device(s) present)", op, index,
                              device_count);
    return AMPC_OK;
}

ampc_status ampc_cuda_device_name(int index, char *buf, size_t cap) {
    AMPC_TRY(ampc_cuda_check("get_device_name", index));
    struct cudaDeviceProp prop;
    CUDA_TRY(cudaGetDeviceProperties(&prop, index));
    snprintf(buf, cap, "%s", prop.name);
    return AMPC_OK;
}

int ampc_cuda_current_device(void) {
    int d = 0;
    if (device_count == 0 || cudaGetDevice(&d) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return d;
}

ampc_status ampc_cuda_set_device(int index) {
    AMPC_TRY(ampc_cuda_check("set_device", index));
    CUDA_TRY(cudaSetDevice(index));
    return AMPC_OK;
}

ampc_status ampc_cuda_synchronize(int index) {
    if (index < 0) index = ampc_cuda_current_device();
    AMPC_TRY(ampc_cuda_check("synchronize", index));
    int prev = ampc_cuda_current_device();
    CUDA_TRY(cudaSetDevice(index));
    cudaError_t err = cudaDeviceSynchronize();
    cudaSetDevice(prev);
    if (err != cudaSuccess) return cuda_fail(err, "cudaDeviceSynchronize()", __FILE__, __LINE__);
    return AMPC_OK;
}

/* Runs the following CUDA calls on `index`, returning the device that was current before. */
static int enter_device(int index) {
    int prev = ampc_cuda_current_device();
    if (prev != index) cudaSetDevice(index);
    return prev;
}
static void leave_device(int prev, int index) {
    if (prev != index) cudaSetDevice(prev);
}

/* ---------------------------------------------------------------- allocator */

static void *cuda_alloc(ampc_device dev, size_t nbytes) {
    if (nbytes == 0) return NULL; /* zero-size tensors hold no device memory */
    int prev = enter_device(dev.index);
    void *p = NULL;
    cudaError_t err = cudaMalloc(&p, nbytes);
    if (err != cudaSuccess) {
        cudaGetLastError();
        size_t free_b = 0, total_b = 0;
        cudaMemGetInfo(&free_b, &total_b);
        cudaGetLastError();
        leave_device(prev, dev.index);
        /* PyTorch's wording, so scripts that grep for it keep working. */
        ampc_set_error(AMPC_E_NOMEM,
                       "CUDA out of memory. Tried to allocate %.2f MiB. GPU %d has a total capacity of %.2f GiB of "
                       "which %.2f GiB is free. Of the allocated memory %.2f MiB is allocated by ampc.",
                       (double)nbytes / 1048576.0, (int)dev.index, (double)total_b / 1073741824.0,
                       (double)free_b / 1073741824.0, (double)stats[dev.index].allocated / 1048576.0);
        return NULL;
    }
    leave_device(prev, dev.index);
    ampc_memory_stats *s = &stats[dev.index];
    s->allocated += (int64_t)nbytes;
    s->num_allocs++;
    if (s->allocated > s->peak_allocated) s->peak_allocated = s->allocated;
    s->reserved = s->allocated; /* no cache yet: everything reserved is allocated */
    if (s->reserved > s->peak_reserved) s->peak_reserved = s->reserved;
    return p;
}

static void cuda_free(ampc_device dev, void *ptr, size_t nbytes) {
    if (!ptr) return;
    int prev = enter_device(dev.index);
    cudaFree(ptr); /* synchronises with pending work on the device, so no kernel still uses it */
    cudaGetLastError();
    leave_device(prev, dev.index);
    stats[dev.index].allocated -= (int64_t)nbytes;
    stats[dev.index].reserved = stats[dev.index].allocated;
}

static ampc_status cuda_memcpy(void *dst, ampc_device dd, const void *src, ampc_device sd, size_t n) {
    (void)dd;
    (void)sd;
    if (n) CUDA_TRY(cudaMemcpy(dst, src, n, cudaMemcpyDefault)); /* unified addressing tells the direction */
    return AMPC_OK;
}

static ampc_status cuda_memset_zero(void *dst, ampc_device dev, size_t n) {
    if (!n) return AMPC_OK;
    int prev = enter_device(dev.index);
    cudaError_t err = cudaMemset(dst, 0, n);
    leave_device(prev, dev.index);
    if (err != cudaSuccess) return cuda_fail(err, "cudaMemset", __FILE__, __LINE__);
    return AMPC_OK;
}

static void cuda_stats(ampc_device dev, ampc_memory_stats *out) { *out = stats[dev.index]; }

static void cuda_reset_peak(ampc_device dev) {
    stats[dev.index].peak_allocated = stats[dev.index].allocated;
    stats[dev.index].peak_reserved = stats[dev.index].reserved;
}

static void cuda_empty_cache(ampc_device dev) { (void)dev; } /* nothing cached yet */

static const ampc_allocator cuda_allocator = {cuda_alloc,  cuda_free,       cuda_memcpy,     cuda_memset_zero,
                                              cuda_stats,  cuda_reset_peak, cuda_empty_cache};

/* ---------------------------------------------------------------- staging helpers */

ampc_cuda_layout ampc_cuda_layout_of(const ampc_tensor *t) {
    ampc_cuda_layout l;
    memset(&l, 0, sizeof l);
    l.ndim = t->ndim;
    l.contiguous = ampc_is_contiguous(t);
    for (int i = 0; i < t->ndim; i++) {
        l.shape[i] = t->shape[i];
        l.strides[i] = t->strides[i];
    }
    return l;
}

/* The element range [lo, hi] of the storage a view touches (strides may be 0, never negative
 * in ampc, but handled anyway). */
static void view_span(const ampc_tensor *t, int64_t *lo, int64_t *hi) {
    *lo = *hi = t->offset;
    for (int i = 0; i < t->ndim; i++) {
        int64_t reach = (t->shape[i] - 1) * t->strides[i];
        if (reach < 0) *lo += reach;
        else *hi += reach;
    }
}

/* A host tensor with the same shape and strides as the device tensor t, over a host copy of
 * the storage span t touches. */
static ampc_tensor *download_view(const ampc_tensor *t) {
    int64_t lo, hi;
    view_span(t, &lo, &hi);
    size_t item = ampc_dtype_itemsize(t->dtype);
    size_t nbytes = ampc_numel(t) ? (size_t)(hi - lo + 1) * item : 0;
    ampc_storage *s = ampc_storage_new(ampc_cpu_device(), nbytes);
    if (!s) return NULL;
    if (nbytes) {
        cudaError_t err = cudaMemcpy(s->data, (const char *)t->storage->data + lo * (int64_t)item, nbytes,
                                     cudaMemcpyDeviceToHost);
        if (err != cudaSuccess) {
            ampc_storage_decref(s);
            cuda_fail(err, "cudaMemcpy(device to host)", __FILE__, __LINE__);
            return NULL;
        }
    }
    ampc_tensor *h = ampc_tensor_from_storage(s, t->offset - lo, t->ndim, t->shape, t->strides, t->dtype);
    ampc_storage_decref(s);
    return h;
}

/* Writes the span of host view h (made by download_view of t) back to t's storage. */
static ampc_status upload_view(ampc_tensor *t, const ampc_tensor *h) {
    int64_t lo, hi;
    view_span(t, &lo, &hi);
    size_t item = ampc_dtype_itemsize(t->dtype);
    if (!ampc_numel(t)) return AMPC_OK;
    CUDA_TRY(cudaMemcpy((char *)t->storage->data + lo * (int64_t)item, h->storage->data, (size_t)(hi - lo + 1) * item,
                        cudaMemcpyHostToDevice));
    return AMPC_OK;
}

/* ---------------------------------------------------------------- COPY */

static ampc_status cuda_copy(ampc_op op, const ampc_kernel_args *a) {
    (void)op;
    ampc_tensor *dst = a->out[0];
    const ampc_tensor *src = a->in[0];
    int64_t n = ampc_numel(dst);
    if (n == 0) return AMPC_OK;
    /* Fast path: one block of the same bytes (broadcasting excluded by the equal numel). */
    if (src->dtype == dst->dtype && ampc_numel(src) == n && ampc_is_contiguous(src) && ampc_is_contiguous(dst)) {
        CUDA_TRY(cudaMemcpy(ampc_data_ptr(dst), ampc_data_ptr(src), ampc_nbytes(dst), cudaMemcpyDefault));
        return AMPC_OK;
    }
    /* Everything else: bring the source to the host, let the CPU kernel cast/broadcast/stride,
     * then send the result to the destination. */
    ampc_tensor *src_host;
    if (src->device.type == AMPC_CUDA) {
        src_host = download_view(src);
    } else {
        src_host = (ampc_tensor *)src;
        ampc_tensor_incref(src_host);
    }
    if (!src_host) return ampc_last_status();
    ampc_status st;
    if (dst->device.type == AMPC_CPU) {
        st = ampc_copy_(dst, src_host);
    } else if (ampc_is_contiguous(dst)) {
        ampc_tensor *stage = ampc_empty(dst->ndim, dst->shape, dst->dtype, ampc_cpu_device());
        st = stage ? ampc_copy_(stage, src_host) : ampc_last_status();
        if (st == AMPC_OK) {
            cudaError_t err = cudaMemcpy(ampc_data_ptr(dst), ampc_data_ptr(stage), ampc_nbytes(dst), cudaMemcpyHostToDevice);
            if (err != cudaSuccess) st = cuda_fail(err, "cudaMemcpy(host to device)", __FILE__, __LINE__);
        }
        ampc_tensor_decref(stage);
    } else {
        /* A strided destination: read-modify-write its span, so bytes between its elements
         * (other views' data) go back unchanged. */
        ampc_tensor *dst_host = download_view(dst);
        st = dst_host ? ampc_copy_(dst_host, src_host) : ampc_last_status();
        if (st == AMPC_OK) st = upload_view(dst, dst_host);
        ampc_tensor_decref(dst_host);
    }
    ampc_tensor_decref(src_host);
    return st;
}

/* ---------------------------------------------------------------- FILL */

static ampc_status cuda_fill(ampc_op op, const ampc_kernel_args *a) {
    (void)op;
    ampc_tensor *t = a->out[0];
    int64_t n = ampc_numel(t);
    if (n == 0) return AMPC_OK;
    /* The value's bytes in the tensor's dtype: the CPU FILL kernel does the conversion. */
    ampc_tensor *one = ampc_full(0, NULL, a->scalars[0], t->dtype, ampc_cpu_device());
    if (!one) return ampc_last_status();
    unsigned char value[8] = {0};
    size_t item = ampc_dtype_itemsize(t->dtype);
    memcpy(value, ampc_data_ptr(one), item);
    ampc_tensor_decref(one);
    int prev = enter_device(t->device.index);
    cudaError_t err;
    static const unsigned char zeros[8] = {0};
    if (ampc_is_contiguous(t) && memcmp(value, zeros, item) == 0)
        err = cudaMemset(ampc_data_ptr(t), 0, ampc_nbytes(t));
    else
        err = (cudaError_t)ampc_cuda_launch_fill(ampc_data_ptr(t), n, ampc_cuda_layout_of(t), value, item);
    leave_device(prev, t->device.index);
    if (err != cudaSuccess) return cuda_fail(err, "fill_ kernel", __FILE__, __LINE__);
    return AMPC_OK;
}

/* ---------------------------------------------------------------- RANDOM */

static ampc_status cuda_random(ampc_op op, const ampc_kernel_args *a) {
    ampc_tensor *t = a->out[0];
    int prev = enter_device(t->device.index);
    cudaError_t err = (cudaError_t)ampc_cuda_launch_random(op, a);
    leave_device(prev, t->device.index);
    if (err != cudaSuccess) return cuda_fail(err, "random kernel", __FILE__, __LINE__);
    return AMPC_OK;
}

/* ---------------------------------------------------------------- start-up */

void ampc_cuda_register(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0; /* no driver, no GPU, or a driver too old */
    cudaGetLastError();
    device_count = n > AMPC_CUDA_MAX_DEVICES ? AMPC_CUDA_MAX_DEVICES : n;
    ampc_register_device_count(AMPC_CUDA, count_devices);
    if (device_count == 0) return;
    ampc_register_allocator(AMPC_CUDA, &cuda_allocator);
    ampc_register_kernel(AMPC_CUDA, AMPC_OP_COPY, cuda_copy);
    ampc_register_kernel(AMPC_CUDA, AMPC_OP_FILL, cuda_fill);
    static const ampc_op random_ops[] = {AMPC_OP_UNIFORM, AMPC_OP_NORMAL, AMPC_OP_RANDINT, AMPC_OP_BERNOULLI,
                                         AMPC_OP_ARANGE};
    for (size_t i = 0; i < sizeof random_ops / sizeof random_ops[0]; i++)
        ampc_register_kernel(AMPC_CUDA, random_ops[i], cuda_random);
}
