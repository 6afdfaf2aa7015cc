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

static int plain_float(PyObject *number, double *out) { /* an exact float other than NaN */
    if (!PyFloat_CheckExact(number)) return 0;
    *out = PyFloat_AS_DOUBLE(number);
    return *out == *out;
}

static int plain_int(PyObject *number, long long *out) { /* an exact int of 64 bits */
    if (!PyLong_CheckExact(number)) return 0;
    int overflow;
    *out = PyLong_AsLongLongAndOverflow(number, &overflow);
    return !overflow; /* an exact int raises nothing here */
}

static PyObject *reference, *freshest_reference; /* overlay.gradient's, imported at first need */

static PyObject *call_reference(PyObject *const *args, Py_ssize_t nargs) {
    PyObject *function = imported(&reference, "drfemu.overlay.gradient", "rank_python");
    return function == NULL ? NULL : PyObject_Vectorcall(function, args, (size_t)nargs, NULL);
}

/* The list's items read as the kernel's descriptors, if every one is a plain descriptor; else 0,
 * and nothing read is kept. */
static int plain_descriptors(PyObject *list, KernelDescriptor *out) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
        PyObject *d = PyList_GET_ITEM(list, i);
        if (!PyTuple_CheckExact(d) || PyTuple_GET_SIZE(d) != 3 || !plain_float(PyTuple_GET_ITEM(d, 0), &out[i].utility)
            || !plain_int(PyTuple_GET_ITEM(d, 1), &out[i].node) || !plain_float(PyTuple_GET_ITEM(d, 2), &out[i].stamp))
            return 0;
    }
    return 1;
}

/* The items of `list` at `at[chosen[k]]` for k < count (at[k] when `chosen` is NULL), as a new list. */
static PyObject *chosen_items(PyObject *list, const Py_ssize_t *at, const Py_ssize_t *chosen, Py_ssize_t count) {
    PyObject *result = PyList_New(count);
    if (result != NULL)
        for (Py_ssize_t k = 0; k < count; k++)
            PyList_SET_ITEM(result, k, Py_NewRef(PyList_GET_ITEM(list, at[chosen != NULL ? chosen[k] : k])));
    return result;
}

#define SMALL 128 /* candidates ranked without an allocation */

static PyObject *rank(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 4 || nargs > 5) {
        PyErr_Format(PyExc_TypeError, "rank() takes 4 or 5 arguments (%zd given)", nargs);
        return NULL;
    }
    long long me, size_ll;
    double my_utility, oldest = -Py_HUGE_VAL;
    PyObject *candidates = args[2];
    if (!plain_int(args[0], &me) || !plain_float(args[1], &my_utility) || !PyList_CheckExact(candidates)
        || !plain_int(args[3], &size_ll) || size_ll < 0 || size_ll > PY_SSIZE_T_MAX
        || (nargs == 5 && !plain_float(args[4], &oldest)))
        return call_reference(args, nargs);
    Py_ssize_t n = PyList_GET_SIZE(candidates), size = (Py_ssize_t)size_ll;
    Py_ssize_t cap = size < n ? size : n;
    size_t slots = kernel_slots(n);
    /* descriptors: the candidates read, those kept; indices: the table, where each kept one is,
     * above, below and the ranked view */
    KernelDescriptor small[2 * SMALL];
    Py_ssize_t small_indices[6 * SMALL];
    int fits = n <= SMALL && slots <= 2 * SMALL;
    KernelDescriptor *read = fits ? small : PyMem_Malloc(sizeof(KernelDescriptor) * (size_t)(2 * n + 1));
    Py_ssize_t *table = fits ? small_indices : PyMem_Malloc(sizeof(Py_ssize_t) * (slots + (size_t)(n + 3 * cap)));
    PyObject *result = NULL;
    int handed_off = 0;
    if (read == NULL || table == NULL) {
        PyErr_NoMemory();
    } else if (!plain_descriptors(candidates, read)) {
        handed_off = 1; /* nothing has changed yet: the reference decides */
    } else {
        Py_ssize_t *kept_at = table + slots, *above = kept_at + n, *below = above + cap, *out = below + cap;
        Py_ssize_t length = kernel_rank(me, my_utility, read, n, NULL, 0, 0, size, oldest, read + n, kept_at, table, above,
                                        below, out);
        result = chosen_items(candidates, kept_at, out, length);
    }
    if (read != NULL && read != small) PyMem_Free(read);
    if (table != NULL && table != small_indices) PyMem_Free(table);
    return handed_off ? call_reference(args, nargs) : result;
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
    } else if (!plain_descriptors(candidates, read)) {
        handed_off = 1; /* nothing has changed: the reference decides */
    } else {
        Py_ssize_t unique = 0, *kept_at = table + slots;
        for (Py_ssize_t i = 0; i < n; i++) kernel_keep_freshest(read[i], i, read + n, kept_at, &unique, table, slots);
        result = chosen_items(candidates, kept_at, NULL, unique);
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
