/* The gradient's merge (overlay.gradient.rank) in C: the hottest function of every overlay
 * run. Same contract as the Python version, which stays the reference; tests check that the
 * two agree on arbitrary and on hostile inputs.
 *
 * rank(me, my_utility, candidates, size, oldest=-inf) -> list
 *   candidates: a list of descriptors (utility, node, stamp). Each node's freshest descriptor
 *   counts (larger stamp; at equal stamps the later in the list); descriptors stamped before
 *   `oldest` and those of `me` are ignored. Returns the `size` most preferred (thesis eq. 3.9
 *   over the total order (utility, node)): the nodes just above `me`, nearest first, topped up
 *   with the nodes just below it, nearest first.
 *
 * freshest(candidates) -> list | None
 *   Each node's freshest descriptor (larger stamp; at equal stamps the later), in the order of
 *   each node's first descriptor: all `rank` ever takes of `candidates`. None when a candidate
 *   is not a plain descriptor (overlay.gradient.freshest_python, the reference).
 *
 * Both are the overlay kernel's (`_overlay_kernel.h`), on the list read into its arrays.
 * The fast path takes plain data only: `me` and every node an exact int of 64 bits, utilities,
 * stamps and `oldest` exact floats other than NaN, `size` an exact int >= 0, every descriptor an
 * exact 3-tuple. It reads them without running any Python code, so nothing can change the list
 * under it. Any other input goes, untouched, to the reference (overlay.gradient.rank_python),
 * which gives Python's answer or exception.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_accelerator.h"
#include "_overlay_kernel.h"

static PyObject *reference, *freshest_reference; /* overlay.gradient's, imported at first need */

static PyObject *call_reference(PyObject *const *args, Py_ssize_t nargs) {
    PyObject *function = imported(&reference, "drfemu.overlay.gradient", "rank_python");
    return function == NULL ? NULL : PyObject_Vectorcall(function, args, (size_t)nargs, NULL);
}

static PyObject *rank(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 4 || nargs > 5) {
        PyErr_Format(PyExc_TypeError, "rank() takes 4 or 5 arguments (%zd given)", nargs);
        return NULL;
    }
    long long me, size_ll;
    double my_utility, oldest = -Py_HUGE_VAL;
    PyObject *candidates = args[2];
    if (!kernel_plain_int(args[0], &me) || !kernel_plain_float(args[1], &my_utility) || !PyList_CheckExact(candidates)
        || !kernel_plain_int(args[3], &size_ll) || size_ll < 0 || size_ll > PY_SSIZE_T_MAX
        || (nargs == 5 && !kernel_plain_float(args[4], &oldest)))
        return call_reference(args, nargs);
    int plain;
    PyObject *result = kernel_rank_lists(me, my_utility, candidates, NULL, (Py_ssize_t)size_ll, oldest, &plain);
    return plain ? result : call_reference(args, nargs); /* not plain: nothing has changed, the reference decides */
}

static PyObject *freshest(PyObject *Py_UNUSED(self), PyObject *candidates) {
    if (!PyList_CheckExact(candidates)) goto reference;
    Py_ssize_t n = PyList_GET_SIZE(candidates);
    size_t slots = kernel_slots(n);
    KernelDescriptor *read = PyMem_Malloc(sizeof(KernelDescriptor) * (size_t)(2 * n + 1));
    Py_ssize_t *table = PyMem_Calloc(slots + (size_t)n, sizeof(Py_ssize_t)); /* the table, then where each kept one is */
    PyObject *result = NULL;
    int handed_off = 0;
    if (read == NULL || table == NULL) {
        PyErr_NoMemory();
    } else if (!kernel_read_descriptors(candidates, read)) {
        handed_off = 1; /* nothing has changed: the reference decides */
    } else {
        Py_ssize_t unique = 0, *kept_at = table + slots;
        for (Py_ssize_t i = 0; i < n; i++) kernel_keep_freshest(read[i], i, read + n, kept_at, &unique, table, slots);
        result = PyList_New(unique);
        for (Py_ssize_t k = 0; result != NULL && k < unique; k++)
            PyList_SET_ITEM(result, k, Py_NewRef(PyList_GET_ITEM(candidates, kept_at[k])));
    }
    PyMem_Free(read);
    PyMem_Free(table);
    if (!handed_off) return result;
reference:;
    PyObject *function = imported(&freshest_reference, "drfemu.overlay.gradient", "freshest_python");
    return function == NULL ? NULL : PyObject_CallOneArg(function, candidates);
}

static PyMethodDef methods[] = {
    {"freshest", freshest, METH_O, "freshest(candidates) -> each node's freshest descriptor, or None"},
    {"rank", (PyCFunction)(void (*)(void))rank, METH_FASTCALL,
     "rank(me, my_utility, candidates, size, oldest) -> the most preferred descriptors"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "overlay._rank", NULL, -1, methods};

PyMODINIT_FUNC PyInit__rank(void) {
    if (main_interpreter_only("drfemu.overlay._rank") < 0) return NULL;
    return PyModule_Create(&module);
}
