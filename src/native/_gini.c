/* PDGDRF's allocation test (protocols.pdgdrf.lowers_gini) in C: at P = 10 it was most of a
 * PDGDRF server's tick and a fifth of the run (issue 18). The Python function stays the
 * reference; tests hold the two to the same answers.
 *
 * lowers_gini(share, task_share, neighbour_utilities) -> bool
 *   Whether `share -> share + task_share` lowers the population Gini of
 *   [share] + [-u for every finite u], the Gini being
 *   fsum((2i - n + 1) * x_i) / (n * fsum(x)) over the values sorted ascending (0 when the
 *   total is 0), as kernel.fairness.gini_of_sorted computes it.
 * fsum(values) -> float: what math.fsum returns; exposed so tests can hold the exact sum to
 *   math.fsum.
 *
 * Same floats, same answer: math.fsum is correctly rounded (round half to even), and so is
 * `sum_exactly` below, so each sum is the same double whatever the order of equal values.
 * Utilities that are not a list or tuple are read one item at a time, as the reference reads
 * them (see lowers_gini). Anything off the fast path — a value that is not an exact float, a
 * NaN or a negative share (the reference raises ValueError), a sum that overflows — is handed,
 * untouched, to the reference, imported at first need; the fast path runs no Python code, so
 * nothing can change its input under it. `fsum` hands the same cases to math.fsum. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_accelerator.h"
#include <math.h>
#include <stdlib.h>

static PyObject *reference; /* protocols.pdgdrf.lowers_gini_python, imported at first need */
static PyObject *math_fsum; /* math.fsum, likewise */
static PyObject *itertools_chain; /* itertools.chain, likewise */

/* Shewchuk's exact summation: `partials` holds non-overlapping doubles whose sum is exactly
 * the sum so far; the result is that sum rounded to nearest, ties to even. Returns 0 and sets
 * *sum, or -1 when a partial or the result is not finite (the caller falls back). */
static int sum_exactly(const double *values, Py_ssize_t n, double *partials, double *sum) {
    Py_ssize_t used = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        double x = values[k];
        Py_ssize_t kept = 0;
        for (Py_ssize_t j = 0; j < used; j++) {
            double y = partials[j];
            if (fabs(x) < fabs(y)) {
                double t = x;
                x = y;
                y = t;
            }
            double hi = x + y;
            double lo = y - (hi - x);
            if (lo != 0.0) partials[kept++] = lo;
            x = hi;
        }
        if (!isfinite(x)) return -1;
        if (x != 0.0) partials[kept++] = x; /* a zero partial adds nothing (math.fsum keeps none) */
        used = kept;
    }
    double hi = 0.0;
    if (used > 0) {
        Py_ssize_t j = used - 1;
        hi = partials[j];
        double lo = 0.0;
        while (j > 0) {
            double x = hi, y = partials[--j];
            hi = x + y;
            lo = y - (hi - x);
            if (lo != 0.0) break;
        }
        /* Round half to even: when the rest below `lo` pushes the same way as `lo`, and `lo`
         * is exactly half an ulp of `hi`, the sum lies past the halfway point. */
        if (j > 0 && ((lo < 0.0 && partials[j - 1] < 0.0) || (lo > 0.0 && partials[j - 1] > 0.0))) {
            double y = lo * 2.0;
            double x = hi + y;
            if (y == x - hi) hi = x;
        }
    }
    if (!isfinite(hi)) return -1;
    *sum = hi;
    return 0;
}

static int ascending(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* gini_of_sorted(xs[0..n)); `scratch` has room for 2n doubles. 0 and *gini, or -1 to fall back. */
static int gini_of_sorted(const double *xs, Py_ssize_t n, double *scratch, double *gini) {
    double total, weighted;
    if (sum_exactly(xs, n, scratch, &total) < 0) return -1;
    if (total == 0.0) {
        *gini = 0.0;
        return 0;
    }
    double *terms = scratch + n;
    for (Py_ssize_t i = 0; i < n; i++) terms[i] = (double)(2 * i - n + 1) * xs[i];
    if (sum_exactly(terms, n, scratch, &weighted) < 0) return -1;
    *gini = weighted / ((double)n * total);
    return 0;
}

/* 1 or 0 for the answer; -1 when the reference must decide. `values` holds the neighbours'
 * shares in [0, count) and room for two more rows of count + 1 (the two populations) and the
 * scratch of gini_of_sorted. */
static int decide(double before, double after, double *values, Py_ssize_t count) {
    if (isnan(before) || isnan(after) || before < 0.0 || after < 0.0) return -1;
    qsort(values, (size_t)count, sizeof(double), ascending);
    if (count > 0 && values[0] < 0.0) return -1;
    Py_ssize_t n = count + 1;
    double *others = values + count, *grown = others + n, *scratch = grown + n;
    Py_ssize_t at_before = 0, at_after = 0; /* insertion points, to the right of equal values */
    while (at_before < count && values[at_before] <= before) at_before++;
    while (at_after < count && values[at_after] <= after) at_after++;
    for (Py_ssize_t i = 0, j = 0; i < n; i++) others[i] = i == at_before ? before : values[j++];
    for (Py_ssize_t i = 0, j = 0; i < n; i++) grown[i] = i == at_after ? after : values[j++];
    double gini_before, gini_after;
    if (gini_of_sorted(grown, n, scratch, &gini_after) < 0 || gini_of_sorted(others, n, scratch, &gini_before) < 0)
        return -1;
    return gini_after < gini_before;
}

static PyObject *call_reference(PyObject *const *args) {
    PyObject *function = imported(&reference, "drfemu.protocols.pdgdrf", "lowers_gini_python");
    return function == NULL ? NULL : PyObject_Vectorcall(function, args, 3, NULL);
}

static PyObject *decided(PyObject *const *args);

static PyObject *lowers_gini(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "lowers_gini() takes 3 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *share = args[0], *task_share = args[1], *utilities = args[2];
    if (PyList_CheckExact(utilities) || PyTuple_CheckExact(utilities) || !PyFloat_CheckExact(share)
        || !PyFloat_CheckExact(task_share))
        return decided(args);
    /* Another iterable is read one item at a time, as the reference reads it, while the items are
     * exact floats (reading them runs no Python code of ours); at the first other item the
     * reference gets those items, that one and the rest of the iterable, in that order. */
    PyObject *iterator = PyObject_GetIter(utilities), *items = PyList_New(0), *item = NULL, *result = NULL;
    if (iterator == NULL || items == NULL) goto done;
    while ((item = PyIter_Next(iterator)) != NULL && PyFloat_CheckExact(item)) {
        int status = PyList_Append(items, item);
        Py_CLEAR(item);
        if (status < 0) goto done;
    }
    if (PyErr_Occurred()) goto done;
    if (item == NULL) { /* all exact floats */
        PyObject *given[3] = {share, task_share, items};
        result = decided(given);
        goto done;
    }
    if (PyList_Append(items, item) < 0) goto done;
    PyObject *chain = imported(&itertools_chain, "itertools", "chain");
    PyObject *rest = chain == NULL ? NULL : PyObject_CallFunctionObjArgs(chain, items, iterator, NULL);
    if (rest != NULL) {
        PyObject *given[3] = {share, task_share, rest};
        result = call_reference(given);
        Py_DECREF(rest);
    }
done:
    Py_XDECREF(item);
    Py_XDECREF(items);
    Py_XDECREF(iterator);
    return result;
}

/* lowers_gini on an exact list or tuple of utilities. */
static PyObject *decided(PyObject *const *args) {
    PyObject *share = args[0], *task_share = args[1], *utilities = args[2];
    Py_ssize_t m = PySequence_Fast_GET_SIZE(utilities);
    PyObject **items = PySequence_Fast_ITEMS(utilities);
    double small[6 * 32], *values = small;
    /* the shares, the two populations of m + 1 and gini_of_sorted's 2(m + 1) of scratch */
    if (m + 1 > 32 && (values = PyMem_Malloc(sizeof(double) * 6 * (size_t)(m + 1))) == NULL) return PyErr_NoMemory();
    int answer = -1;
    if (PyFloat_CheckExact(share) && PyFloat_CheckExact(task_share)) {
        Py_ssize_t count = 0;
        answer = 0;
        for (Py_ssize_t i = 0; i < m; i++) {
            if (!PyFloat_CheckExact(items[i])) {
                answer = -1;
                break;
            }
            double u = PyFloat_AS_DOUBLE(items[i]);
            if (isfinite(u)) values[count++] = -u;
        }
        if (answer == 0) {
            double before = PyFloat_AS_DOUBLE(share);
            answer = decide(before, before + PyFloat_AS_DOUBLE(task_share), values, count);
        }
    }
    if (values != small) PyMem_Free(values);
    if (answer < 0) return call_reference(args);
    return Py_NewRef(answer ? Py_True : Py_False);
}

static PyObject *fsum(PyObject *Py_UNUSED(self), PyObject *values) {
    int plain = PyList_CheckExact(values) || PyTuple_CheckExact(values);
    Py_ssize_t n = plain ? PySequence_Fast_GET_SIZE(values) : 0;
    double *buffer = plain ? PyMem_Malloc(sizeof(double) * 2 * (size_t)(n + 1)) : NULL;
    if (plain && buffer == NULL) return PyErr_NoMemory();
    for (Py_ssize_t i = 0; plain && i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(values, i);
        if (PyFloat_CheckExact(item)) buffer[i] = PyFloat_AS_DOUBLE(item);
        else plain = 0;
    }
    double sum = 0.0;
    if (plain && sum_exactly(buffer, n, buffer + n, &sum) < 0) plain = 0;
    PyMem_Free(buffer);
    if (plain) return PyFloat_FromDouble(sum);
    PyObject *function = imported(&math_fsum, "math", "fsum"); /* not a list or tuple of floats, or not finite */
    return function == NULL ? NULL : PyObject_CallOneArg(function, values);
}

static PyMethodDef methods[] = {
    {"lowers_gini", (PyCFunction)(void (*)(void))lowers_gini, METH_FASTCALL,
     "lowers_gini(share, task_share, neighbour_utilities) -> bool, as protocols.pdgdrf.lowers_gini_python"},
    {"fsum", fsum, METH_O, "fsum(values) -> the correctly rounded sum, as math.fsum"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "protocols._gini", NULL, -1, methods};

PyMODINIT_FUNC PyInit__gini(void) {
    if (main_interpreter_only("drfemu.protocols._gini") < 0) return NULL;
    return PyModule_Create(&module);
}
