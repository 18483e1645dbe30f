/* py_linalg.c: Python bindings of the matrix ops: mm, bmm, matmul and the `@` operator, addmm,
 * baddbmm, dot, mv and einsum, as ampc functions and Tensor methods, with PyTorch's signatures
 * (beta and alpha keyword-only). Also ampc._C._gemm_backend, the test and benchmark hook that
 * reads or switches the CPU GEMM implementation (cpu/cpu_gemm.h). */
#include "py_common.h"

#include "cpu/cpu_gemm.h"

#define KW(...) static char *kwlist[] = {__VA_ARGS__, NULL}
#define METHOD(name) (PyCFunction)(void (*)(void))(name)
#define VA (METH_VARARGS | METH_KEYWORDS)

/* Two tensor arguments -> op(a, b). */
typedef ampc_tensor *(*binary_fn)(const ampc_tensor *, const ampc_tensor *);

static PyObject *call_binary(binary_fn fn, PyObject *a_o, PyObject *b_o, const char *op, const char *an,
                             const char *bn) {
    ampc_tensor *a = ampc_py_unwrap(a_o, op, an), *b = a ? ampc_py_unwrap(b_o, op, bn) : NULL;
    if (!b) return NULL;
    return ampc_py_wrap(fn(a, b));
}

/* ------------------------------------------------------------------ module functions */

#define DEFINE_BINARY_FUNCTION(NAME, FN, A, B)                                                 \
    static PyObject *py_##NAME(PyObject *mod, PyObject *args, PyObject *kwargs) {              \
        KW("input", B);                                                                        \
        PyObject *a, *b;                                                                       \
        if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO:" #NAME, kwlist, &a, &b)) return NULL; \
        return call_binary(FN, a, b, #NAME, A, B);                                             \
    }

DEFINE_BINARY_FUNCTION(mm, ampc_mm, "input", "mat2")
DEFINE_BINARY_FUNCTION(bmm, ampc_bmm, "input", "mat2")
DEFINE_BINARY_FUNCTION(matmul, ampc_matmul, "input", "other")
DEFINE_BINARY_FUNCTION(dot, ampc_dot, "input", "tensor")
DEFINE_BINARY_FUNCTION(mv, ampc_mv, "input", "vec")

typedef ampc_tensor *(*addmm_fn)(const ampc_tensor *, const ampc_tensor *, const ampc_tensor *, double, double);

/* addmm / baddbmm: self (or input), the two factors, then keyword-only beta and alpha. */
static PyObject *call_add_product(addmm_fn fn, PyObject *self_o, PyObject *x_o, PyObject *y_o, PyObject *beta_o,
                                  PyObject *alpha_o, const char *op, const char *xn, const char *yn) {
    double beta = 1.0, alpha = 1.0;
    ampc_tensor *c = ampc_py_unwrap(self_o, op, "input");
    ampc_tensor *x = c ? ampc_py_unwrap(x_o, op, xn) : NULL;
    ampc_tensor *y = x ? ampc_py_unwrap(y_o, op, yn) : NULL;
    if (!y || ampc_py_double(beta_o, &beta, op, "beta") < 0 || ampc_py_double(alpha_o, &alpha, op, "alpha") < 0) return NULL;
    return ampc_py_wrap(fn(c, x, y, beta, alpha));
}

static PyObject *py_addmm(PyObject *mod, PyObject *args, PyObject *kwargs) {
    KW("input", "mat1", "mat2", "beta", "alpha");
    PyObject *c, *x, *y, *beta = NULL, *alpha = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|$OO:addmm", kwlist, &c, &x, &y, &beta, &alpha)) return NULL;
    return call_add_product(ampc_addmm, c, x, y, beta, alpha, "addmm", "mat1", "mat2");
}

static PyObject *py_baddbmm(PyObject *mod, PyObject *args, PyObject *kwargs) {
    KW("input", "batch1", "batch2", "beta", "alpha");
    PyObject *c, *x, *y, *beta = NULL, *alpha = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|$OO:baddbmm", kwlist, &c, &x, &y, &beta, &alpha))
        return NULL;
    return call_add_product(ampc_baddbmm, c, x, y, beta, alpha, "baddbmm", "batch1", "batch2");
}

/* einsum(equation, *operands) or einsum(equation, [operands]) as torch accepts both. */
static PyObject *py_einsum(PyObject *mod, PyObject *args) {
    Py_ssize_t n_args = PyTuple_GET_SIZE(args);
    if (n_args < 1 || !PyUnicode_Check(PyTuple_GET_ITEM(args, 0))) {
        PyErr_SetString(PyExc_TypeError, "einsum(): argument 'equation' (position 1) must be str");
        return NULL;
    }
    const char *equation = PyUnicode_AsUTF8(PyTuple_GET_ITEM(args, 0));
    if (!equation) return NULL;
    PyObject *seq = args;
    Py_ssize_t first = 1;
    if (n_args == 2 && (PyList_Check(PyTuple_GET_ITEM(args, 1)) || PyTuple_Check(PyTuple_GET_ITEM(args, 1)))) {
        seq = PyTuple_GET_ITEM(args, 1);
        first = 0;
    }
    PyObject *fast = PySequence_Fast(seq, "einsum(): operands must be a sequence of Tensors");
    if (!fast) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast) - first;
    const ampc_tensor *ops[8];
    PyObject *result = NULL;
    if (n > 8) {
        PyErr_Format(PyExc_RuntimeError, "einsum(): at most 8 operands are supported, got %zd", n);
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        ops[i] = ampc_py_unwrap(PySequence_Fast_GET_ITEM(fast, first + i), "einsum", "operands");
        if (!ops[i]) goto done;
    }
    result = ampc_py_wrap(ampc_einsum(equation, (int)n, ops));
done:
    Py_DECREF(fast);
    return result;
}

/* _gemm_backend() -> the CPU GEMM implementation in use; _gemm_backend(name) switches it
 * ("auto", "blas", "fallback") and returns the previous one. */
static PyObject *py_gemm_backend(PyObject *mod, PyObject *args) {
    const char *name = NULL;
    if (!PyArg_ParseTuple(args, "|z:_gemm_backend", &name)) return NULL;
    PyObject *previous = PyUnicode_FromString(ampc_cpu_gemm_get_backend());
    if (previous && name && ampc_py_check(ampc_cpu_gemm_set_backend(name)) < 0) Py_CLEAR(previous);
    return previous;
}

/* _gemm_features() -> {"blas": bool, "amx": bool}: what this build, CPU and OS offer. */
static PyObject *py_gemm_features(PyObject *mod, PyObject *unused) {
    return Py_BuildValue("{s:O,s:O}", "blas", ampc_cpu_gemm_has_blas() ? Py_True : Py_False, "amx",
                         ampc_cpu_gemm_has_amx() ? Py_True : Py_False);
}

PyMethodDef ampc_py_module_methods_linalg[] = {
    {"mm", METHOD(py_mm), VA, "mm(input, mat2) -> Tensor: matrix product of two 2-D tensors"},
    {"bmm", METHOD(py_bmm), VA, "bmm(input, mat2) -> Tensor: batched matrix product of two 3-D tensors"},
    {"matmul", METHOD(py_matmul), VA, "matmul(input, other) -> Tensor: matrix product with NumPy's broadcasting"},
    {"dot", METHOD(py_dot), VA, "dot(input, tensor) -> Tensor: inner product of two 1-D tensors"},
    {"mv", METHOD(py_mv), VA, "mv(input, vec) -> Tensor: matrix-vector product"},
    {"addmm", METHOD(py_addmm), VA, "addmm(input, mat1, mat2, *, beta=1, alpha=1) -> beta*input + alpha*(mat1 @ mat2)"},
    {"baddbmm", METHOD(py_baddbmm), VA,
     "baddbmm(input, batch1, batch2, *, beta=1, alpha=1) -> beta*input + alpha*bmm(batch1, batch2)"},
    {"einsum", METHOD(py_einsum), METH_VARARGS, "einsum(equation, *operands) -> Tensor: Einstein summation"},
    {"_gemm_backend", METHOD(py_gemm_backend), METH_VARARGS, "_gemm_backend(name=None): CPU GEMM implementation"},
    {"_gemm_features", METHOD(py_gemm_features), METH_NOARGS, "_gemm_features(): CBLAS / AMX availability"},
    {NULL, NULL, 0, NULL},
};

/* ------------------------------------------------------------------ Tensor methods and `@` */

#define DEFINE_BINARY_METHOD(NAME, FN, B)                                                                   \
    static PyObject *py_t_##NAME(PyObject *self, PyObject *args, PyObject *kwargs) {                        \
        KW(B);                                                                                              \
        PyObject *b;                                                                                        \
        if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:" #NAME, kwlist, &b)) return NULL;                \
        return call_binary(FN, self, b, #NAME, "self", B);                                                  \
    }

DEFINE_BINARY_METHOD(mm, ampc_mm, "mat2")
DEFINE_BINARY_METHOD(bmm, ampc_bmm, "mat2")
DEFINE_BINARY_METHOD(matmul, ampc_matmul, "other")
DEFINE_BINARY_METHOD(dot, ampc_dot, "tensor")
DEFINE_BINARY_METHOD(mv, ampc_mv, "vec")

static PyObject *py_t_addmm(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("mat1", "mat2", "beta", "alpha");
    PyObject *x, *y, *beta = NULL, *alpha = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$OO:addmm", kwlist, &x, &y, &beta, &alpha)) return NULL;
    return call_add_product(ampc_addmm, self, x, y, beta, alpha, "addmm", "mat1", "mat2");
}

static PyObject *py_t_baddbmm(PyObject *self, PyObject *args, PyObject *kwargs) {
    KW("batch1", "batch2", "beta", "alpha");
    PyObject *x, *y, *beta = NULL, *alpha = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$OO:baddbmm", kwlist, &x, &y, &beta, &alpha)) return NULL;
    return call_add_product(ampc_baddbmm, self, x, y, beta, alpha, "baddbmm", "batch1", "batch2");
}

/* nb_matrix_multiply: a @ b where either side is a Tensor (Python also routes b.__rmatmul__
 * here). Anything else is NotImplemented, so NumPy's own __rmatmul__ may take over. */
PyObject *ampc_py_matmul_op(PyObject *a, PyObject *b) {
    if (!AmpcTensor_Check(a) || !AmpcTensor_Check(b)) Py_RETURN_NOTIMPLEMENTED;
    return ampc_py_wrap(ampc_matmul(((AmpcTensorObject *)a)->t, ((AmpcTensorObject *)b)->t));
}

PyMethodDef ampc_py_tensor_methods_linalg[] = {
    {"mm", METHOD(py_t_mm), VA, "mm(mat2) -> Tensor"},
    {"bmm", METHOD(py_t_bmm), VA, "bmm(mat2) -> Tensor"},
    {"matmul", METHOD(py_t_matmul), VA, "matmul(other) -> Tensor"},
    {"dot", METHOD(py_t_dot), VA, "dot(tensor) -> Tensor"},
    {"mv", METHOD(py_t_mv), VA, "mv(vec) -> Tensor"},
    {"addmm", METHOD(py_t_addmm), VA, "addmm(mat1, mat2, *, beta=1, alpha=1) -> Tensor"},
    {"baddbmm", METHOD(py_t_baddbmm), VA, "baddbmm(batch1, batch2, *, beta=1, alpha=1) -> Tensor"},
    {NULL, NULL, 0, NULL},
};
