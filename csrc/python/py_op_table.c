/* py_op_table.c: the op table (core/ops.def) as Python data, for the tests that check every row
 * (tests/test_op_table.py) and for tools: ampc._C._op_table() and _dispatch_counts(). */
#include "py_common.h"

#include "../core/kernel_args.h"

static const char *const autocast_names[] = {"none", "lower_precision_fp", "fp32", "fp32_set_opt_dtype", "promote",
                                             "banned"};
static const char *const grad_kind_names[] = {"rule", "none", "internal", "composed"};

/* [{name, kind, schema, kernels_required, autocast, grad, grad_node, cpu_kernel, cuda_kernel}] */
static PyObject *py_op_table(PyObject *self, PyObject *unused) {
    PyObject *list = PyList_New(0);
    if (!list) return NULL;
    for (int i = 0; i < AMPC_NUM_OPS; i++) {
        ampc_op op = (ampc_op)i;
        const char *node = ampc_op_grad_name(op);
        PyObject *row = Py_BuildValue(
            "{s:s,s:s,s:s,s:O,s:s,s:s,s:z,s:O,s:O}", "name", ampc_op_name(op), "kind",
            ampc_op_kind_name(ampc_op_kind_of(op)), "schema", ampc_schema_name(ampc_op_schema(op)), "kernels_required",
            ampc_op_has_kernels(op) ? Py_True : Py_False, "autocast", autocast_names[ampc_op_autocast_policy(op)], "grad",
            grad_kind_names[ampc_op_grad_kind(op)], "grad_node", node, "cpu_kernel",
            ampc_op_has_kernel(AMPC_CPU, op) ? Py_True : Py_False, "cuda_kernel",
            ampc_op_has_kernel(AMPC_CUDA, op) ? Py_True : Py_False);
        if (!row || PyList_Append(list, row) < 0) {
            Py_XDECREF(row);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(row);
    }
    return list;
}

/* {(device type name, op name): kernel calls since start-up}, rows with calls only */
static PyObject *py_dispatch_counts(PyObject *self, PyObject *unused) {
    static const char *const devices[AMPC_NUM_DEVICE_TYPES] = {"cpu", "cuda"};
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    for (int dev = 0; dev < AMPC_NUM_DEVICE_TYPES; dev++)
        for (int i = 0; i < AMPC_NUM_OPS; i++) {
            int64_t n = ampc_op_dispatch_count((ampc_device_type)dev, (ampc_op)i);
            if (!n) continue;
            PyObject *key = Py_BuildValue("(ss)", devices[dev], ampc_op_name((ampc_op)i));
            PyObject *v = PyLong_FromLongLong(n);
            int bad = !key || !v || PyDict_SetItem(d, key, v) < 0;
            Py_XDECREF(key);
            Py_XDECREF(v);
            if (bad) {
                Py_DECREF(d);
                return NULL;
            }
        }
    return d;
}

PyMethodDef ampc_py_module_methods_op_table[] = {
    {"_op_table", py_op_table, METH_NOARGS, "Every row of the op table (core/ops.def) with its columns."},
    {"_dispatch_counts", py_dispatch_counts, METH_NOARGS, "Kernel calls per (device, op) since start-up."},
    {NULL, NULL, 0, NULL},
};
