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

/* The matrix products bound both as ampc.name(input, ...) and x.name(...), one row each:
 *   BINARY_OPS(X)       X(name, core function, second argument, function's doc, method's doc)
 *   ADD_PRODUCT_OPS(X)  X(name, core function, first factor, second factor, function's doc, method's doc)
 * The method's keyword list is the function's without "input" (kw + 1), its format the
 * function's with one "O" fewer (fmt + 1). */
#define BINARY_OPS(X)                                                                                          \
    X(mm, ampc_mm, "mat2", "mm(input, mat2) -> Tensor: matrix product of two 2-D tensors", "mm(mat2) -> Tensor") \
    X(bmm, ampc_bmm, "mat2", "bmm(input, mat2) -> Tensor: batched matrix product of two 3-D tensors",          \
      "bmm(mat2) -> Tensor")                                                                                   \
    X(matmul, ampc_matmul, "other", "matmul(input, other) -> Tensor: matrix product with NumPy's broadcasting", \
      "matmul(other) -> Tensor")                                                                               \
    X(dot, ampc_dot, "tensor", "dot(input, tensor) -> Tensor: inner product of two 1-D tensors",              \
      "dot(tensor) -> Tensor")                                                                                 \
    X(mv, ampc_mv, "vec", "mv(input, vec) -> Tensor: matrix-vector product", "mv(vec) -> Tensor")
#define ADD_PRODUCT_OPS(X)                                                                                     \
    X(addmm, ampc_addmm, "mat1", "mat2",                                                                      \
      "addmm(input, mat1, mat2, *, beta=1, alpha=1) -> beta*input + alpha*(mat1 @ mat2)",                     \
      "addmm(mat1, mat2, *, beta=1, alpha=1) -> Tensor")                                                       \
    X(baddbmm, ampc_baddbmm, "batch1", "batch2",                                                              \
      "baddbmm(input, batch1, batch2, *, beta=1, alpha=1) -> beta*input + alpha*bmm(batch1, batch2)",         \
      "baddbmm(batch1, batch2, *, beta=1, alpha=1) -> Tensor")

/* fn(input, other) as a function (self NULL) or self.fn(other) as a method. */
static PyObject *binary_entry(binary_fn fn, PyObject *self, PyObject *args, PyObject *kwargs, char **kw,
                              const char *fmt, const char *op) {
    PyObject *a = self, *b;
    int ok = self ? PyArg_ParseTupleAndKeywords(args, kwargs, fmt + 1, kw + 1, &b)
                  : PyArg_ParseTupleAndKeywords(args, kwargs, fmt, kw, &a, &b);
    if (!ok) return NULL;
    return call_binary(fn, a, b, op, self ? "self" : "input", kw[1]);
}

typedef ampc_tensor *(*addmm_fn)(const ampc_tensor *, const ampc_tensor *, const ampc_tensor *, double, double);

/* addmm / baddbmm: input (or self), the two factors, then keyword-only beta and alpha. */
static PyObject *add_product_entry(addmm_fn fn, PyObject *self, PyObject *args, PyObject *kwargs, char **kw,
                                   const char *fmt, const char *op) {
    PyObject *c_o = self, *x_o, *y_o, *beta_o = NULL, *alpha_o = NULL;
    int ok = self ? PyArg_ParseTupleAndKeywords(args, kwargs, fmt + 1, kw + 1, &x_o, &y_o, &beta_o, &alpha_o)
                  : PyArg_ParseTupleAndKeywords(args, kwargs, fmt, kw, &c_o, &x_o, &y_o, &beta_o, &alpha_o);
    if (!ok) return NULL;
    double beta = 1.0, alpha = 1.0;
    ampc_tensor *c = ampc_py_unwrap(c_o, op, "input");
    ampc_tensor *x = c ? ampc_py_unwrap(x_o, op, kw[1]) : NULL;
    ampc_tensor *y = x ? ampc_py_unwrap(y_o, op, kw[2]) : NULL;
    if (!y || ampc_py_double(beta_o, &beta, op, "beta") < 0 || ampc_py_double(alpha_o, &alpha, op, "alpha") < 0) return NULL;
    return ampc_py_wrap(fn(c, x, y, beta, alpha));
}

#define DEFINE_BINARY(NAME, FN, B, FDOC, MDOC)                                                       \
    static char *NAME##_kw[] = {"input", B, NULL};                                                   \
    static PyObject *py_##NAME(PyObject *mod, PyObject *args, PyObject *kwargs) {                    \
        return binary_entry(FN, NULL, args, kwargs, NAME##_kw, "OO:" #NAME, #NAME);                  \
    }                                                                                                \
    static PyObject *py_t_##NAME(PyObject *self, PyObject *args, PyObject *kwargs) {                 \
        return binary_entry(FN, self, args, kwargs, NAME##_kw, "OO:" #NAME, #NAME);                  \
    }
#define DEFINE_ADD_PRODUCT(NAME, FN, X, Y, FDOC, MDOC)                                               \
    static char *NAME##_kw[] = {"input", X, Y, "beta", "alpha", NULL};                               \
    static PyObject *py_##NAME(PyObject *mod, PyObject *args, PyObject *kwargs) {                    \
        return add_product_entry(FN, NULL, args, kwargs, NAME##_kw, "OOO|$OO:" #NAME, #NAME);        \
    }                                                                                                \
    static PyObject *py_t_##NAME(PyObject *self, PyObject *args, PyObject *kwargs) {                 \
        return add_product_entry(FN, self, args, kwargs, NAME##_kw, "OOO|$OO:" #NAME, #NAME);        \
    }
BINARY_OPS(DEFINE_BINARY)
ADD_PRODUCT_OPS(DEFINE_ADD_PRODUCT)

/* ------------------------------------------------------------------ other module functions */

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

#define BINARY_FUNCTION(NAME, FN, B, FDOC, MDOC) {#NAME, METHOD(py_##NAME), VA, FDOC},
#define ADD_PRODUCT_FUNCTION(NAME, FN, X, Y, FDOC, MDOC) {#NAME, METHOD(py_##NAME), VA, FDOC},

PyMethodDef ampc_py_module_methods_linalg[] = {
    BINARY_OPS(BINARY_FUNCTION) ADD_PRODUCT_OPS(ADD_PRODUCT_FUNCTION)
    {"einsum", METHOD(py_einsum), METH_VARARGS, "einsum(equation, *operands) -> Tensor: Einstein summation"},
    {"_gemm_backend", METHOD(py_gemm_backend), METH_VARARGS, "_gemm_backend(name=None): CPU GEMM implementation"},
    {"_gemm_features", METHOD(py_gemm_features), METH_NOARGS, "_gemm_features(): CBLAS / AMX availability"},
    {NULL, NULL, 0, NULL},
};

/* ------------------------------------------------------------------ Tensor methods and `@` */

/* nb_matrix_multiply: a @ b where either side is a Tensor (Python also routes b.__rmatmul__
 * here). Anything else is NotImplemented, so NumPy's own __rmatmul__ may take over. */
PyObject *ampc_py_matmul_op(PyObject *a, PyObject *b) {
    if (!AmpcTensor_Check(a) || !AmpcTensor_Check(b)) Py_RETURN_NOTIMPLEMENTED;
    return ampc_py_wrap(ampc_matmul(((AmpcTensorObject *)a)->t, ((AmpcTensorObject *)b)->t));
}

#define BINARY_METHOD(NAME, FN, B, FDOC, MDOC) {#NAME, METHOD(py_t_##NAME), VA, MDOC},
#define ADD_PRODUCT_METHOD(NAME, FN, X, Y, FDOC, MDOC) {#NAME, METHOD(py_t_##NAME), VA, MDOC},

PyMethodDef ampc_py_tensor_methods_linalg[] = {
    BINARY_OPS(BINARY_METHOD) ADD_PRODUCT_OPS(ADD_PRODUCT_METHOD)
    {NULL, NULL, 0, NULL},
};
