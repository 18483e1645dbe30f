/* dispatch.h: the op table's facts and the one path from an op to a device kernel.
 *
 * The ops, their names, kinds, argument schemas, backends, autocast policies and gradient
 * entries are the rows of ops.def; this header makes the enum and the accessors. A frontend
 * (elementwise.c, reduce.c, linalg.c, ...) validates arguments, applies the shape and dtype
 * rules, allocates outputs on the inputs' device and fills its op's typed argument struct
 * (kernel_args.h); ampc_dispatch_<schema> hands it to the dispatcher (dispatch.c), which
 * looks up kernels[device type][op] and calls it with the struct. A backend adds kernels at
 * start-up with ampc_register_<schema>(device, kernel), one call per schema (cpu/cpu_register.c
 * calls the ampc_cpu_register_<family> functions, cuda/cuda_runtime.c the
 * ampc_cuda_register_<family> ones); callers never change. Kernels receive outputs already
 * allocated and shaped, and inputs already on the same device. */
#ifndef AMPC_DISPATCH_H
#define AMPC_DISPATCH_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ampc_op {
#define AMPC_OP(id, name, kind, schema, backends, ac, ...) AMPC_OP_##id,
#include "ops.def"
#undef AMPC_OP
    AMPC_NUM_OPS
} ampc_op;

/* A loss's reduction, torch's reduction= ('none', 'mean', 'sum'; the values are torch's enum). */
typedef enum ampc_reduction { AMPC_REDUCTION_NONE = 0, AMPC_REDUCTION_MEAN = 1, AMPC_REDUCTION_SUM = 2 } ampc_reduction;

typedef enum ampc_op_kind {
    AMPC_KIND_UNARY, AMPC_KIND_BINARY, AMPC_KIND_COMPARE, AMPC_KIND_TERNARY, AMPC_KIND_COPY,
    AMPC_KIND_FILL, AMPC_KIND_REDUCE, AMPC_KIND_SCAN, AMPC_KIND_GEMM, AMPC_KIND_INDEX,
    AMPC_KIND_RANDOM, AMPC_KIND_AMP, AMPC_KIND_NN, AMPC_KIND_MULTI_TENSOR, AMPC_KIND_OPTIM,
    AMPC_KIND_SORT, /* sorting and selection (issue 12) */
    AMPC_KIND_COMPOSITE /* composed of other ops: no kernel of its own */
} ampc_op_kind;

/* The autocast policy column (autocast.h says what each does). */
typedef enum ampc_autocast_policy {
    AMPC_AC_POLICY_NONE,      /* not on PyTorch's autocast lists: runs as called */
    AMPC_AC_POLICY_LOWER,     /* eligible inputs cast to the region's dtype (fp16/bf16) */
    AMPC_AC_POLICY_FP32,      /* eligible inputs cast to float32; output float32 */
    AMPC_AC_POLICY_FP32_DTYPE, /* upcast inside the kernel: the frontend gets dtype=float32 */
    AMPC_AC_POLICY_PROMOTE,   /* all eligible inputs cast to the widest floating type among them */
    AMPC_AC_POLICY_BANNED     /* raises under CUDA fp16/bf16 autocast */
} ampc_autocast_policy;

/* The gradient column. */
typedef enum ampc_grad_kind {
    AMPC_GRAD_RULE,     /* differentiable: its rule names its nodes ampc_op_grad_name(op) */
    AMPC_GRAD_NONE,     /* not differentiable */
    AMPC_GRAD_INTERNAL, /* a kernel inside other ops' forward or backward: their gradient */
    AMPC_GRAD_COMPOSED  /* differentiable through the recording ops it is composed of */
} ampc_grad_kind;

const char *ampc_op_name(ampc_op op);
ampc_op_kind ampc_op_kind_of(ampc_op op);
const char *ampc_op_kind_name(ampc_op_kind kind);
bool ampc_op_is_elementwise(ampc_op op); /* UNARY, BINARY, COMPARE or TERNARY */
bool ampc_op_has_kernels(ampc_op op);    /* BACKENDS ALL: every backend must register a kernel */
ampc_autocast_policy ampc_op_autocast_policy(ampc_op op); /* the AUTOCAST column: torch's CUDA lists */
/* The policy on device type dev: the column on CUDA, torch's CPU lists on the CPU (autocast_cpu.c). */
ampc_autocast_policy ampc_op_autocast_policy_on(ampc_op op, ampc_device_type dev);
ampc_grad_kind ampc_op_grad_kind(ampc_op op);
const char *ampc_op_grad_name(ampc_op op); /* "ExpBackward0" for GRAD rows, NULL otherwise */
/* The op whose row has PyTorch's name `name`, or -1. */
int ampc_op_find(const char *name);
/* Whether backend dev registered a kernel for op (tests/test_op_table.py checks every row). */
bool ampc_op_has_kernel(ampc_device_type dev, ampc_op op);
/* Kernel calls per (device type, op) since start-up: the op-table test checks that its cases
 * ran every row's kernels. */
int64_t ampc_op_dispatch_count(ampc_device_type dev, ampc_op op);

#define AMPC_MAX_KERNEL_TENSORS 8

/* The tensors of one call's typed argument struct (kernel_args.h fills them from its IN / OUT /
 * LIST fields, in schema order): the dispatcher picks the device from them and checks that all
 * are on it. Kernels never see this; they receive the typed struct itself. */
typedef struct ampc_dispatch_tensors {
    ampc_tensor *out[AMPC_MAX_KERNEL_TENSORS];
    int n_out;
    const ampc_tensor *in[AMPC_MAX_KERNEL_TENSORS];
    int n_in;
    ampc_tensor *const *list; /* multi-tensor ops: the whole list of one launch */
    int n_list;
} ampc_dispatch_tensors;

/* The dispatch observer (ampc.amp.debug): when set, fn runs after every kernel call that
 * succeeded, on the calling thread, with the call's tensors (outputs written). Kernels the
 * observer itself runs (copies to the host, say) are not observed. One process-wide observer; NULL
 * clears it. Unset, the cost is one relaxed atomic load per dispatch. */
typedef void (*ampc_dispatch_observer)(ampc_op op, const ampc_dispatch_tensors *args, void *ctx);
void ampc_set_dispatch_observer(ampc_dispatch_observer fn, void *ctx);

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
