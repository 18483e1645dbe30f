/* py_backends.c: the private functions behind ampc.backends (python/ampc/backends/): PyTorch's
 * torch._C names for reading and setting the backends' numeric switches (core/backends.c), what
 * the build holds (CUDA, cuBLAS), the cuBLASLt workspaces, and ampc._C._cuda_gemm_stats, the
 * test hook that shows which path the CUDA GEMM took.
 *
 * The switches exist in every build; without CUDA they are kept and have nothing to steer. */
#include "py_common.h"

#ifdef AMPC_WITH_CUDA
#include "cuda/cuda_backend.h"
#endif

#define METHOD(name) (PyCFunction)(void (*)(void))(name)

/* One getter and one setter per flag, named as in torch._C. */
#define DEFINE_FLAG(NAME, FLAG)                                                          \
    static PyObject *py_get_##NAME(PyObject *mod, PyObject *unused) {                    \
        return PyBool_FromLong(ampc_backend_flag_get(FLAG));                             \
    }                                                                                    \
    static PyObject *py_set_##NAME(PyObject *mod, PyObject *value) {                     \
        int on = PyObject_IsTrue(value);                                                 \
        if (on < 0) return NULL;                                                         \
        ampc_backend_flag_set(FLAG, on != 0);                                            \
        Py_RETURN_NONE;                                                                  \
    }

DEFINE_FLAG(cublas_allow_tf32, AMPC_CUBLAS_ALLOW_TF32)
DEFINE_FLAG(cublas_allow_fp16_reduced_precision_reduction, AMPC_CUBLAS_ALLOW_FP16_REDUCED_REDUCTION)
DEFINE_FLAG(cublas_allow_bf16_reduced_precision_reduction, AMPC_CUBLAS_ALLOW_BF16_REDUCED_REDUCTION)
DEFINE_FLAG(cudnn_allow_tf32, AMPC_CUDNN_ALLOW_TF32)

/* Names of the counters, in the order of the AMPC_CUDA_GEMM_* enum of cuda/cuda_backend.h. */
static const char *const gemm_stat_names[] = {
    "calls",          /* GEMM kernel calls on CUDA tensors */
    "cublaslt_calls", /* cublasLtMatmul launches (one per host-loop batch entry) */
    "bias_epilogue",  /* calls that added in[2] through CUBLASLT_EPILOGUE_BIAS */
    "c_input",        /* calls that passed in[2] to cuBLASLt as its C matrix */
    "c_copied",       /* calls that copied in[2] into the output first (beta applied in place) */
    "packed",         /* operands copied to contiguous scratch (strides cuBLAS cannot take) */
    "heuristic",      /* cublasLtMatmulAlgoGetHeuristic queries (algorithm cache misses) */
    "cache_hits",     /* calls answered by the algorithm cache */
    "generic_kernel", /* calls run by ampc's own GEMM kernel (integers, or no cuBLAS algorithm) */
    "tf32",           /* float32 calls with CUBLAS_COMPUTE_32F_FAST_TF32 */
};
#define N_GEMM_STATS ((int)(sizeof gemm_stat_names / sizeof gemm_stat_names[0]))
#ifdef AMPC_WITH_CUDA
_Static_assert(N_GEMM_STATS == AMPC_CUDA_GEMM_NUM_STATS, "gemm_stat_names matches cuda_backend.h");
#endif

/* _cuda_gemm_stats(reset=False) -> dict of counters of the CUDA GEMM kernel since start-up (or
 * the last reset): which path each call took and how often the algorithm cache answered. All
 * zero in builds without CUDA or cuBLAS. */
static PyObject *py_cuda_gemm_stats(PyObject *mod, PyObject *args) {
    int reset = 0;
    if (!PyArg_ParseTuple(args, "|p:_cuda_gemm_stats", &reset)) return NULL;
    int64_t v[N_GEMM_STATS] = {0};
#ifdef AMPC_WITH_CUDA
    ampc_cuda_gemm_stats(v, reset);
#endif
    PyObject *d = PyDict_New();
    for (int i = 0; d && i < N_GEMM_STATS; i++) {
        PyObject *x = PyLong_FromLongLong((long long)v[i]);
        if (!x || PyDict_SetItemString(d, gemm_stat_names[i], x) < 0) {
            Py_XDECREF(x);
            Py_CLEAR(d);
            break;
        }
        Py_DECREF(x);
    }
    return d;
}

/* _cuda_is_built() / _cublas_is_built(): what this build was compiled with (a GPU may still be
 * absent): torch.backends.cuda.is_built(), and whether CUDA GEMMs of floating types can run. */
static PyObject *py_cuda_is_built(PyObject *mod, PyObject *unused) {
#ifdef AMPC_WITH_CUDA
    Py_RETURN_TRUE;
#else
    Py_RETURN_FALSE;
#endif
}

static PyObject *py_cublas_is_built(PyObject *mod, PyObject *unused) {
#if defined(AMPC_WITH_CUDA) && defined(AMPC_WITH_CUBLAS)
    Py_RETURN_TRUE;
#else
    Py_RETURN_FALSE;
#endif
}

/* _cuda_clear_cublas_workspaces(): torch._C._cuda_clearCublasWorkspaces. */
static PyObject *py_clear_cublas_workspaces(PyObject *mod, PyObject *unused) {
#ifdef AMPC_WITH_CUDA
    if (ampc_device_count(AMPC_CUDA) > 0) ampc_cuda_gemm_clear_workspaces();
#endif
    Py_RETURN_NONE;
}

#define FLAG_METHODS(NAME)                                                                    \
    {"_get_" #NAME, METHOD(py_get_##NAME), METH_NOARGS, "_get_" #NAME "() -> bool"},         \
    {"_set_" #NAME, METHOD(py_set_##NAME), METH_O, "_set_" #NAME "(bool)"}

PyMethodDef ampc_py_module_methods_backends[] = {
    FLAG_METHODS(cublas_allow_tf32),
    FLAG_METHODS(cublas_allow_fp16_reduced_precision_reduction),
    FLAG_METHODS(cublas_allow_bf16_reduced_precision_reduction),
    FLAG_METHODS(cudnn_allow_tf32),
    {"_cuda_is_built", py_cuda_is_built, METH_NOARGS, "_cuda_is_built() -> bool: compiled with CUDA"},
    {"_cublas_is_built", py_cublas_is_built, METH_NOARGS, "_cublas_is_built() -> bool: compiled with cuBLAS"},
    {"_cuda_clear_cublas_workspaces", py_clear_cublas_workspaces, METH_NOARGS,
     "_cuda_clear_cublas_workspaces(): frees the cuBLASLt workspaces (they come back on the next GEMM)"},
    {"_cuda_gemm_stats", METHOD(py_cuda_gemm_stats), METH_VARARGS,
     "_cuda_gemm_stats(reset=False) -> dict: which paths the CUDA GEMM took (a test hook)"},
    {NULL, NULL, 0, NULL},
};
