/* cuda_backend.h: what the CUDA backend exports: its start-up hook (called by core/backends.c),
 * device queries for the binding (python/py_cuda.c), and the kernel launchers the .cu files
 * provide to the host code in cuda_runtime.c.
 *
 * Only compiled into builds made with nvcc (AMPC_WITH_CUDA). Everything here works, and reports
 * zero devices, on a machine without a driver or GPU. */
#ifndef AMPC_CUDA_BACKEND_H
#define AMPC_CUDA_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "../core/dispatch.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AMPC_CUDA_MAX_DEVICES 64

/* ---- cuda_runtime.c ---- */
void ampc_cuda_register(void);
int ampc_cuda_device_count(void); /* 0 without a driver or GPU */
/* Name of device `index` ("NVIDIA H100 80GB HBM3"), or an error naming the problem. */
ampc_status ampc_cuda_device_name(int index, char *buf, size_t cap);
ampc_status ampc_cuda_synchronize(int index); /* index < 0: the current device */
ampc_status ampc_cuda_set_device(int index);
int ampc_cuda_current_device(void);
/* Checks that CUDA is usable for `op` (a GPU exists) and the index is valid. */
ampc_status ampc_cuda_check(const char *op, int index);

/* ---- kernel launchers (.cu files); return a cudaError_t value (0 = success) ---- */

/* An output's layout for kernels that write through strides (elements, row-major order). */
typedef struct ampc_cuda_layout {
    int32_t ndim;
    int32_t contiguous;
    int64_t shape[AMPC_MAX_DIMS];
    int64_t strides[AMPC_MAX_DIMS];
} ampc_cuda_layout;

ampc_cuda_layout ampc_cuda_layout_of(const ampc_tensor *t);

/* cuda_fill.cu: sets every element of the layout at `data` to the `itemsize` bytes at `value`. */
int ampc_cuda_launch_fill(void *data, int64_t numel, ampc_cuda_layout layout, const void *value, size_t itemsize);

/* cuda_random.cu: the RANDOM kernels (UNIFORM, NORMAL, RANDINT, BERNOULLI, ARANGE). */
int ampc_cuda_launch_random(ampc_op op, const ampc_kernel_args *args);

#ifdef __cplusplus
}
#endif
#endif
