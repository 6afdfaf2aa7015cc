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
 * The fast path takes plain data only: `me` and every node an exact int of 64 bits, utilities,
 * stamps and `oldest` exact floats other than NaN, `size` an exact int >= 0, every descriptor an
 * exact 3-tuple. It reads them without running any Python code, so nothing can change the list
 * under it. Any other input goes, untouched, to the reference (overlay.gradient.rank_python),
 * which gives Python's answer or exception.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_accelerator.h"
#include <string.h>

typedef struct {
    double utility;
    long long node;
    double stamp;
    PyObject *descriptor; /* borrowed from the candidates list */
} Entry;

static inline int below(const Entry *x, const Entry *y) { /* x before y in (utility, node) */
    return x->utility < y->utility || (x->utility == y->utility && x->node < y->node);
}

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

/* `d` read as an Entry if it is a plain descriptor (else 0, and nothing read is kept). */
static int plain_descriptor(PyObject *d, Entry *out) {
    if (!PyTuple_CheckExact(d) || PyTuple_GET_SIZE(d) != 3 || !plain_float(PyTuple_GET_ITEM(d, 0), &out->utility)
        || !plain_int(PyTuple_GET_ITEM(d, 1), &out->node) || !plain_float(PyTuple_GET_ITEM(d, 2), &out->stamp))
        return 0;
    out->descriptor = d;
    return 1;
}

/* Keep `e` as its node's freshest entry: open addressing on the node id in `table` (`slots` a
 * power of two, at most half full; a slot holds entry index + 1). The fresher wins; at equal
 * stamps the later. */
static void keep_freshest(Entry e, Entry *entries, Py_ssize_t *unique, Py_ssize_t *table, size_t slots) {
    size_t h = ((unsigned long long)e.node * 0x9E3779B97F4A7C15ULL) >> 32;
    for (;; h++) {
        h &= slots - 1;
        Py_ssize_t at = table[h];
        if (at == 0) { /* first descriptor of this node */
            table[h] = *unique + 1;
            entries[(*unique)++] = e;
            return;
        }
        if (entries[at - 1].node == e.node) {
            if (e.stamp >= entries[at - 1].stamp) entries[at - 1] = e;
            return;
        }
    }
}

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
    Py_ssize_t size = (Py_ssize_t)size_ll;
    Py_ssize_t n = PyList_GET_SIZE(candidates);
    /* Open addressing on the node id, at most half full: slots hold entry index + 1. */
    size_t slots = 16;
    while (slots < 2 * (size_t)n) slots <<= 1;
    Entry small_entries[128];
    Py_ssize_t small_table[256];
    Entry *entries = n <= 128 ? small_entries : PyMem_Malloc(sizeof(Entry) * (size_t)n);
    Py_ssize_t *table = slots <= 256 ? small_table : PyMem_Malloc(sizeof(Py_ssize_t) * slots);
    PyObject *result = NULL;
    int handed_off = 0;
    if (entries == NULL || table == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    memset(table, 0, sizeof(Py_ssize_t) * slots);
    Py_ssize_t unique = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Entry e;
        if (!plain_descriptor(PyList_GET_ITEM(candidates, i), &e)) {
            handed_off = 1; /* nothing has changed yet: the reference decides */
            goto done;
        }
        if (e.stamp < oldest || e.node == me) continue;
        keep_freshest(e, entries, &unique, table, slots);
    }
    /* The `size` nearest above me, ascending, and the `size` nearest below, descending: a
     * bounded insertion into each, O(unique * size), no full sort. Nodes are unique here,
     * so (utility, node) orders them totally. */
    Entry mine = {my_utility, me, 0.0, NULL};
    Py_ssize_t cap = size < unique ? size : unique;
    Entry small_up[64], small_down[64];
    Entry *up = cap <= 64 ? small_up : PyMem_Malloc(sizeof(Entry) * (size_t)cap);
    Entry *down = cap <= 64 ? small_down : PyMem_Malloc(sizeof(Entry) * (size_t)cap);
    if (up == NULL || down == NULL) {
        PyErr_NoMemory();
        goto selected;
    }
    Py_ssize_t n_up = 0, n_down = 0;
    for (Py_ssize_t i = 0; cap > 0 && i < unique; i++) {
        Entry e = entries[i];
        if (below(&e, &mine)) { /* below me: keep the cap largest */
            if (n_down == cap && !below(&down[cap - 1], &e)) continue;
            Py_ssize_t j = n_down < cap ? n_down++ : cap - 1;
            while (j > 0 && below(&down[j - 1], &e)) {
                down[j] = down[j - 1];
                j--;
            }
            down[j] = e;
        } else { /* above me: keep the cap smallest */
            if (n_up == cap && !below(&e, &up[cap - 1])) continue;
            Py_ssize_t j = n_up < cap ? n_up++ : cap - 1;
            while (j > 0 && below(&e, &up[j - 1])) {
                up[j] = up[j - 1];
                j--;
            }
            up[j] = e;
        }
    }
    Py_ssize_t under = size - n_up < n_down ? size - n_up : n_down;
    result = PyList_New(n_up + under);
    if (result != NULL) {
        for (Py_ssize_t k = 0; k < n_up; k++) {
            Py_INCREF(up[k].descriptor);
            PyList_SET_ITEM(result, k, up[k].descriptor);
        }
        for (Py_ssize_t k = 0; k < under; k++) {
            Py_INCREF(down[k].descriptor);
            PyList_SET_ITEM(result, n_up + k, down[k].descriptor);
        }
    }
selected:
    if (up != NULL && up != small_up) PyMem_Free(up);
    if (down != NULL && down != small_down) PyMem_Free(down);
done:
    if (entries != NULL && entries != small_entries) PyMem_Free(entries);
    if (table != NULL && table != small_table) PyMem_Free(table);
    return handed_off ? call_reference(args, nargs) : result;
}

static PyObject *freshest(PyObject *Py_UNUSED(self), PyObject *candidates) {
    if (!PyList_CheckExact(candidates)) goto reference;
    Py_ssize_t n = PyList_GET_SIZE(candidates);
    size_t slots = 16;
    while (slots < 2 * (size_t)n) slots <<= 1;
    Entry *entries = PyMem_Malloc(sizeof(Entry) * (size_t)(n > 0 ? n : 1));
    Py_ssize_t *table = PyMem_Calloc(slots, sizeof(Py_ssize_t));
    PyObject *result = NULL;
    if (entries == NULL || table == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t unique = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Entry e;
        if (!plain_descriptor(PyList_GET_ITEM(candidates, i), &e)) {
            PyMem_Free(entries);
            PyMem_Free(table);
            goto reference; /* nothing has changed: the reference decides */
        }
        keep_freshest(e, entries, &unique, table, slots);
    }
    result = PyList_New(unique);
    if (result != NULL)
        for (Py_ssize_t k = 0; k < unique; k++) PyList_SET_ITEM(result, k, Py_NewRef(entries[k].descriptor));
done:
    PyMem_Free(entries);
    PyMem_Free(table);
    return result;
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
