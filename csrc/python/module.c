/* module.c: PyInit__C, the start of ampc._C.
 *
 * Registers the device backends, imports NumPy's C API, and assembles the Tensor type and the
 * module from the per-area method tables (py_common.h), so that adding an area's functions is a
 * line in one of the two lists below rather than an edit of the type. */
#define AMPC_PY_NUMPY_IMPORT
#include "py_internal.h"
#include "py_numpy.h"

#include <string.h>

/* The tensor core's tables come last: where an area defines a name the core also has (e.g. an
 * autograd-aware detach), the area's definition wins. */
static PyMethodDef *const module_tables[] = {
    ampc_py_module_methods_elementwise, ampc_py_module_methods_elementwise_more, ampc_py_module_methods_reduce,
    ampc_py_module_methods_reduce_more, ampc_py_module_methods_linalg,
    ampc_py_module_methods_index, ampc_py_module_methods_shape, ampc_py_module_methods_random, ampc_py_module_methods_cuda,
    ampc_py_module_methods_amp, ampc_py_module_methods_autocast, ampc_py_module_methods_nn,
    ampc_py_module_methods_autograd, ampc_py_module_methods_multi_tensor, ampc_py_module_methods_optim,
    ampc_py_module_methods_backends, ampc_py_module_methods_op_table, ampc_py_module_methods_surface,
    ampc_py_module_methods_storage, ampc_py_module_methods_sort,
    ampc_py_module_methods_tensor, ampc_py_module_methods_creation, ampc_py_module_methods_convert,
    ampc_py_module_methods_sampling, ampc_py_module_methods_rng_state, /* issue 12: rng */
    ampc_py_module_methods_amp_debug, /* issue 18: ampc.amp.debug */
    ampc_py_module_methods_nn_rnn, /* issue 13: rnn */
    ampc_py_module_methods_nn_conv, /* issue 13: conv */
    ampc_py_module_methods_nn_poolnorm, /* issue 13, poolnorm */
    ampc_py_module_methods_nn_loss, /* issue 13: loss */
    ampc_py_module_methods_nn_act, /* issue 13: act */
};

static PyMethodDef *const tensor_tables[] = {
    ampc_py_tensor_methods_elementwise, ampc_py_tensor_methods_elementwise_more, ampc_py_tensor_methods_reduce,
    ampc_py_tensor_methods_reduce_more, ampc_py_tensor_methods_linalg,
    ampc_py_tensor_methods_index, ampc_py_tensor_methods_shape, ampc_py_tensor_methods_random, ampc_py_tensor_methods_autograd,
    ampc_py_tensor_methods_core, ampc_py_tensor_methods_convert, ampc_py_tensor_methods_surface,
    ampc_py_tensor_methods_storage, ampc_py_tensor_methods_sort,
    ampc_py_tensor_methods_sampling, /* issue 12: rng */
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Concatenates {NULL}-terminated tables into one, kept for the life of the process (CPython
 * holds pointers into it). When two areas define the same name, the first table wins. */
static PyMethodDef *merge_tables(PyMethodDef *const *tables, size_t n_tables) {
    size_t total = 0;
    for (size_t i = 0; i < n_tables; i++)
        for (PyMethodDef *m = tables[i]; m->ml_name; m++) total++;
    PyMethodDef *merged = (PyMethodDef *)PyMem_RawCalloc(total + 1, sizeof *merged);
    if (!merged) {
        PyErr_NoMemory();
        return NULL;
    }
    size_t k = 0;
    for (size_t i = 0; i < n_tables; i++)
        for (PyMethodDef *m = tables[i]; m->ml_name; m++) {
            size_t j = 0;
            while (j < k && strcmp(merged[j].ml_name, m->ml_name) != 0) j++;
            if (j == k) merged[k++] = *m;
        }
    return merged;
}

/* __bool__, __int__, __float__, __index__ are conversions of the tensor core and `@` belongs
 * to linalg; the arithmetic slots of the same struct belong to the elementwise area. */
static void install_number_slots(PyNumberMethods *nb) {
    if (!nb->nb_matrix_multiply) nb->nb_matrix_multiply = ampc_py_matmul_op;
    if (!nb->nb_bool) nb->nb_bool = ampc_py_tensor_bool;
    if (!nb->nb_int) nb->nb_int = ampc_py_tensor_int;
    if (!nb->nb_float) nb->nb_float = ampc_py_tensor_float;
    if (!nb->nb_index) nb->nb_index = ampc_py_tensor_index;
}

static struct PyModuleDef ampc_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "ampc._C",
    .m_doc = "ampc's compiled core: tensors, ops, autocast, autograd and the device backends.",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__C(void) {
    ampc_init_backends();
    import_array();

    PyMethodDef *tensor_methods = merge_tables(tensor_tables, COUNT(tensor_tables));
    if (!tensor_methods) return NULL;
    AmpcTensor_Type.tp_methods = tensor_methods;
    install_number_slots(&ampc_py_tensor_as_number);
    AmpcTensor_Type.tp_as_number = &ampc_py_tensor_as_number;
    AmpcTensor_Type.tp_as_mapping = &ampc_py_tensor_as_mapping;
    AmpcTensor_Type.tp_richcompare = ampc_py_tensor_richcompare;
    if (PyType_Ready(&AmpcTensor_Type) < 0) return NULL;

    PyObject *m = PyModule_Create(&ampc_module);
    if (!m) return NULL;
    PyMethodDef *functions = merge_tables(module_tables, COUNT(module_tables));
    if (!functions || PyModule_AddFunctions(m, functions) < 0) goto fail;
    if (ampc_py_init_tensor(m) < 0 || ampc_py_init_cuda(m) < 0 || ampc_py_init_autograd(m) < 0) goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
