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

static PyObject *reference; /* overlay.gradient.rank_python, imported at first need */

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
    int small_table[256];
    Entry *entries = n <= 128 ? small_entries : PyMem_Malloc(sizeof(Entry) * (size_t)n);
    int *table = slots <= 256 ? small_table : PyMem_Malloc(sizeof(int) * slots);
    PyObject *result = NULL;
    int handed_off = 0;
    if (entries == NULL || table == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    memset(table, 0, sizeof(int) * slots);
    Py_ssize_t unique = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PyList_GET_ITEM(candidates, i);
        double utility, stamp;
        long long node;
        if (!PyTuple_CheckExact(d) || PyTuple_GET_SIZE(d) != 3 || !plain_float(PyTuple_GET_ITEM(d, 0), &utility)
            || !plain_int(PyTuple_GET_ITEM(d, 1), &node) || !plain_float(PyTuple_GET_ITEM(d, 2), &stamp)) {
            handed_off = 1; /* nothing has changed yet: the reference decides */
            goto done;
        }
        if (stamp < oldest || node == me) continue;
        size_t h = ((unsigned long long)node * 0x9E3779B97F4A7C15ULL) >> 32;
        for (;;) {
            h &= slots - 1;
            int at = table[h];
            if (at == 0) { /* first descriptor of this node */
                table[h] = (int)unique + 1;
                entries[unique++] = (Entry){utility, node, stamp, d};
                break;
            }
            Entry *e = &entries[at - 1];
            if (e->node == node) { /* the fresher wins; at equal stamps the later */
                if (stamp >= e->stamp) *e = (Entry){utility, node, stamp, d};
                break;
            }
            h++;
        }
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

static PyMethodDef methods[] = {
    {"rank", (PyCFunction)(void (*)(void))rank, METH_FASTCALL,
     "rank(me, my_utility, candidates, size, oldest) -> the most preferred descriptors"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "overlay._rank", NULL, -1, methods};

PyMODINIT_FUNC PyInit__rank(void) {
    if (main_interpreter_only("drfemu.overlay._rank") < 0) return NULL;
    return PyModule_Create(&module);
}
