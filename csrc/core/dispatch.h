/* dispatch.h: the one path from an op to a device kernel.
 *
 * A frontend (elementwise.c, reduce.c, linalg.c, ...) validates arguments, applies the shape and
 * dtype rules, allocates outputs on the inputs' device and fills an ampc_kernel_args; then
 * ampc_dispatch looks up kernels[device type][op] and runs it. A backend adds kernels by
 * registering them at start-up (cpu/cpu_register.c, cuda/cuda_register.c); callers never
 * change. Kernels receive outputs already allocated and shaped, and inputs already on the
 * same device. */
#ifndef AMPC_DISPATCH_H
#define AMPC_DISPATCH_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ampc_op {
#define AMPC_OP(id, name, kind) AMPC_OP_##id,
#include "ops.def"
#undef AMPC_OP
    AMPC_NUM_OPS
} ampc_op;

typedef enum ampc_op_kind {
    AMPC_KIND_UNARY, AMPC_KIND_BINARY, AMPC_KIND_COMPARE, AMPC_KIND_TERNARY, AMPC_KIND_COPY,
    AMPC_KIND_FILL, AMPC_KIND_REDUCE, AMPC_KIND_SCAN, AMPC_KIND_GEMM, AMPC_KIND_INDEX,
    AMPC_KIND_RANDOM, AMPC_KIND_AMP, AMPC_KIND_NN, AMPC_KIND_MULTI_TENSOR, AMPC_KIND_OPTIM
} ampc_op_kind;

const char *ampc_op_name(ampc_op op);
ampc_op_kind ampc_op_kind_of(ampc_op op);

#define AMPC_MAX_KERNEL_TENSORS 8
#define AMPC_MAX_KERNEL_INTS 16

/* The argument bag every kernel receives. What each slot means is fixed per op kind and noted
 * on the op's row in ops.def. */
typedef struct ampc_kernel_args {
    ampc_tensor *out[AMPC_MAX_KERNEL_TENSORS];
    int n_out;
    const ampc_tensor *in[AMPC_MAX_KERNEL_TENSORS];
    int n_in;
    ampc_scalar scalars[4];
    int64_t ints[AMPC_MAX_KERNEL_INTS];
    int n_ints;
    uint64_t seed, offset; /* Philox key and counter for RANDOM ops */
    /* Multi-tensor ops (the scaler's unscale, fused optimizers): any number of tensors, grouped
     * by the frontend so one kernel launch serves a whole list. */
    ampc_tensor *const *list;
    int n_list;
    /* An op's own parameter block, for ops with more parameters than scalars[] holds (the fused
     * optimizers: an ampc_*_options of core/optim.h); NULL otherwise. */
    const void *options;
} ampc_kernel_args;

typedef ampc_status (*ampc_kernel_fn)(ampc_op op, const ampc_kernel_args *args);

void ampc_register_kernel(ampc_device_type dev, ampc_op op, ampc_kernel_fn fn);
/* Runs the kernel for the device of args->out[0] (or in[0] if there are no outputs).
 * Fails with NotImplemented naming the op and device when none is registered. */
ampc_status ampc_dispatch(ampc_op op, const ampc_kernel_args *args);

/* Registers every built-in backend once (CPU always; CUDA when compiled and available). */
void ampc_init_backends(void);

/* Process-wide numeric switches of the device backends, PyTorch's torch.backends flags (global,
 * not per thread, as in PyTorch). Read by the kernels at each call (backends.c). */
typedef enum ampc_backend_flag {
    AMPC_CUBLAS_ALLOW_TF32,                   /* backends.cuda.matmul.allow_tf32, default false */
    AMPC_CUBLAS_ALLOW_FP16_REDUCED_REDUCTION, /* ...allow_fp16_reduced_precision_reduction, true */
    AMPC_CUBLAS_ALLOW_BF16_REDUCED_REDUCTION, /* ...allow_bf16_reduced_precision_reduction, true */
    AMPC_CUDNN_ALLOW_TF32,                    /* backends.cudnn.allow_tf32, default true */
    AMPC_NUM_BACKEND_FLAGS
} ampc_backend_flag;
bool ampc_backend_flag_get(ampc_backend_flag flag);
void ampc_backend_flag_set(ampc_backend_flag flag, bool value);

#ifdef __cplusplus
}
#endif
#endif
