/* cuda_runtime.c: start-up of the CUDA backend, device queries, the deferred device error word,
 * and the interim COPY, FILL and RANDOM entries of the dispatcher.
 *
 * Start-up never fails: without a driver or GPU cudaGetDeviceCount reports an error, which
 * means zero devices: the device count and the kernel families (the .cu files) are registered,
 * but no allocator, so `ampc.cuda.is_available()` is False and creating a CUDA tensor raises
 * "CUDA is not available". With a GPU it also registers the allocators (cuda_allocator.c).
 *
 * The interim COPY handles one contiguous block of the same dtype on the device (or between
 * host and device) and stages everything else through the host: correct for every layout and
 * cast, slow. Host<->device transfers follow PyTorch's rules, which every COPY kernel must keep
 * (cuda_backend.h, "host<->device transfers"): they run on the current stream; a copy to the
 * host waits for that stream and then checks the deferred error word, unless it is
 * non_blocking into pinned memory; a copy from pageable host memory waits for the transfer,
 * one from pinned memory with non_blocking does not. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "../core/index_bounds.h"
#include "cuda_host.h"

static int device_count = 0;

/* Records a failed CUDA call as an ampc error naming the call, file and line; clears CUDA's
 * sticky "last error" so the next call starts clean. */
ampc_status ampc_cuda_error(int err, const char *call, const char *file, int line) {
    cudaGetLastError();
    return ampc_set_error(AMPC_E_RUNTIME, "CUDA error: %s (%s) in %s at %s:%d", cudaGetErrorString((cudaError_t)err),
                          cudaGetErrorName((cudaError_t)err), call, file, line);
}

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
    AMPC_CUDA_TRY(cudaGetDeviceProperties(&prop, index));
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
    AMPC_CUDA_TRY(cudaSetDevice(index));
    return AMPC_OK;
}

/* ---------------------------------------------------------------- deferred device errors */

/* One int per device, allocated when a kernel first asks for it (not at import: that would create
 * a CUDA context on every GPU of the machine). Until then checks cost nothing; afterwards each
 * check is one 4-byte read on a stream that the caller has just waited for anyway. */
static pthread_mutex_t word_lock = PTHREAD_MUTEX_INITIALIZER;
static int *error_words[AMPC_CUDA_MAX_DEVICES];

int *ampc_cuda_error_word(int device) {
    if (device < 0 || device >= device_count) return NULL;
    pthread_mutex_lock(&word_lock);
    if (!error_words[device]) {
        int prev = ampc_cuda_enter_device(device);
        int *w = NULL;
        cudaError_t err = cudaMalloc((void **)&w, sizeof(int));
        if (err == cudaSuccess) err = cudaMemset(w, 0, sizeof(int));
        /* cudaMemset runs on the legacy stream, which non-blocking streams do not wait for */
        if (err == cudaSuccess) err = cudaDeviceSynchronize();
        if (err == cudaSuccess) error_words[device] = w;
        cudaGetLastError();
        ampc_cuda_leave_device(prev, device);
    }
    int *w = error_words[device];
    pthread_mutex_unlock(&word_lock);
    return w;
}

/* Reads the word on `stream` (waiting for it), clears it, and raises what it holds. A kernel
 * still running on another stream reports at a later check. */
static ampc_status check_word(int device, cudaStream_t stream) {
    if (device < 0 || device >= device_count) return AMPC_OK;
    pthread_mutex_lock(&word_lock);
    int *w = error_words[device];
    pthread_mutex_unlock(&word_lock);
    if (!w) return AMPC_OK; /* no kernel has asked for it: nothing can be reported */
    int code = 0;
    int prev = ampc_cuda_enter_device(device);
    cudaError_t err = cudaMemcpyAsync(&code, w, sizeof code, cudaMemcpyDeviceToHost, stream);
    if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
    if (err == cudaSuccess && code != 0) err = cudaMemsetAsync(w, 0, sizeof(int), stream);
    ampc_cuda_leave_device(prev, device);
    if (err != cudaSuccess) return ampc_cuda_error((int)err, "reading the device error word", __FILE__, __LINE__);
    if (code == 0) return AMPC_OK;
    int kind = code / 65536;
    ampc_op op = (ampc_op)(code % 65536);
    if (kind == AMPC_CUDA_ERR_INDEX)
        return ampc_set_error(ampc_index_error_status(op), "index out of range in %s (reported by a CUDA kernel)",
                              ampc_op_name(op));
    if (kind == AMPC_CUDA_ERR_ZERO_DIVISION) /* the CPU kernel's wording */
        return ampc_set_error(AMPC_E_RUNTIME, "ZeroDivisionError");
    if (kind == AMPC_CUDA_ERR_VALUE && op == AMPC_OP_BCE_LOSS)
        return ampc_set_error(AMPC_E_RUNTIME, "all elements of input should be between 0 and 1");
    return ampc_set_error(AMPC_E_RUNTIME, "a CUDA kernel reported error %d in %s", kind, ampc_op_name(op));
}

ampc_status ampc_cuda_check_deferred_error(int device) {
    return check_word(device, (cudaStream_t)ampc_cuda_current_stream(device));
}

ampc_status ampc_cuda_finish_to_host(int device) {
    AMPC_TRY(ampc_cuda_check("copy to host", device));
    cudaStream_t stream = (cudaStream_t)ampc_cuda_current_stream(device);
    AMPC_CUDA_TRY_ON(device, cudaStreamSynchronize(stream));
    return check_word(device, stream);
}

ampc_status ampc_cuda_synchronize(int index) {
    if (index < 0) index = ampc_cuda_current_device();
    AMPC_TRY(ampc_cuda_check("synchronize", index));
    AMPC_CUDA_TRY_ON(index, cudaDeviceSynchronize());
    return check_word(index, (cudaStream_t)ampc_cuda_current_stream(index));
}

/* ---------------------------------------------------------------- layouts */

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

/* ---------------------------------------------------------------- start-up */

void ampc_cuda_register(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0; /* no driver, no GPU, or a driver too old */
    cudaGetLastError();
    device_count = n > AMPC_CUDA_MAX_DEVICES ? AMPC_CUDA_MAX_DEVICES : n;
    ampc_register_device_count(AMPC_CUDA, count_devices);
    /* The kernel families, one per .cu file. They are registered in every CUDA build, GPU or
     * not (nothing can reach them without a CUDA tensor, which needs the allocator below), so
     * tests/test_op_table.py checks on any machine that every ops.def row has its CUDA kernel. */
    ampc_cuda_register_copy();
    ampc_cuda_register_elementwise();
    ampc_cuda_register_reduce();
    ampc_cuda_register_gemm();
    ampc_cuda_register_index();
    ampc_cuda_register_shape();
    ampc_cuda_register_random();
    ampc_cuda_register_sampling();
    ampc_cuda_register_nn_conv_pool();
    ampc_cuda_register_nn_norm();
    ampc_cuda_register_nn_softmax();
    ampc_cuda_register_nn_loss();
    ampc_cuda_register_nn_loss_class();
    ampc_cuda_register_amp();
    ampc_cuda_register_optim();
    ampc_cuda_register_nn_attn();
    ampc_cuda_register_sort();
    ampc_cuda_register_nn_rnn(); /* issue 13: rnn */
    ampc_cuda_register_nn_pad(); /* issue 13, conv */
    ampc_cuda_register_nn_poolnorm(); /* issue 13, poolnorm */
    ampc_cuda_register_nn_loss_ctc();
    ampc_cuda_register_nn_pdist();
    ampc_cuda_register_nn_vol2col(); /* issue 13, conv */
    ampc_cuda_register_nn_resample(); /* issue 13, conv */
    if (device_count == 0) return;
    ampc_cuda_register_allocators();
}
