/* PDGDRF's allocation test (protocols.pdgdrf.lowers_gini) in C: at P = 10 it was most of a
 * PDGDRF server's tick and a fifth of the run (issue 18). The Python function stays the
 * reference; tests hold the two to the same answers.
 *
 * lowers_gini(share, task_share, neighbour_utilities) -> bool
 *   Whether `share -> share + task_share` lowers the population Gini of
 *   [share] + [-u for every finite u], the Gini being
 *   fsum((2i - n + 1) * x_i) / (n * fsum(x)) over the values sorted ascending (0 when the
 *   total is 0), as protocols.fairness.gini_of_sorted computes it.
 * fsum(values) -> float: the correctly rounded sum of finite floats (what math.fsum returns);
 *   exposed so tests can hold it to math.fsum.
 *
 * Same floats, same answer: math.fsum is correctly rounded (round half to even), and so is
 * `sum_exactly` below, so each sum is the same double whatever the order of equal values.
 * Anything off the fast path — a value that is not an exact float, a NaN or a negative share
 * (the reference raises ValueError), a sum that overflows — is handed to the reference. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdlib.h>

static PyObject *reference; /* protocols.pdgdrf.lowers_gini_python, set by `use_reference` */

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

static PyObject *call_reference(PyObject *share, PyObject *task_share, PyObject *utilities) {
    if (reference == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "protocols._gini: use_reference() was not called");
        return NULL;
    }
    PyObject *args[3] = {share, task_share, utilities};
    return PyObject_Vectorcall(reference, args, 3, NULL);
}

static PyObject *lowers_gini(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "lowers_gini() takes 3 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *share = args[0], *task_share = args[1];
    PyObject *utilities = PySequence_Fast(args[2], "lowers_gini: neighbour_utilities is iterable");
    if (utilities == NULL) return NULL;
    Py_ssize_t m = PySequence_Fast_GET_SIZE(utilities);
    PyObject **items = PySequence_Fast_ITEMS(utilities);
    double small[6 * 32], *values = small;
    /* the shares, the two populations of m + 1 and gini_of_sorted's 2(m + 1) of scratch */
    if (m + 1 > 32 && (values = PyMem_Malloc(sizeof(double) * 6 * (size_t)(m + 1))) == NULL) {
        Py_DECREF(utilities);
        return PyErr_NoMemory();
    }
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
    PyObject *result;
    if (answer < 0) {
        result = call_reference(share, task_share, utilities);
    } else {
        result = answer ? Py_True : Py_False;
        Py_INCREF(result);
    }
    Py_DECREF(utilities);
    return result;
}

static PyObject *fsum(PyObject *Py_UNUSED(self), PyObject *iterable) {
    PyObject *values = PySequence_Fast(iterable, "fsum: values is iterable");
    if (values == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(values);
    double *buffer = PyMem_Malloc(sizeof(double) * 2 * (size_t)(n + 1));
    if (buffer == NULL) {
        Py_DECREF(values);
        return PyErr_NoMemory();
    }
    int status = 0;
    for (Py_ssize_t i = 0; i < n && status == 0; i++) {
        buffer[i] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(values, i));
        if (buffer[i] == -1.0 && PyErr_Occurred()) status = -2;
    }
    double sum = 0.0;
    if (status == 0) status = sum_exactly(buffer, n, buffer + n, &sum);
    PyMem_Free(buffer);
    Py_DECREF(values);
    if (status == -1) PyErr_SetString(PyExc_OverflowError, "fsum: a value or a partial sum is not finite");
    return status < 0 ? NULL : PyFloat_FromDouble(sum);
}

static PyObject *use_reference(PyObject *Py_UNUSED(self), PyObject *function) {
    Py_INCREF(function);
    Py_XSETREF(reference, function);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"lowers_gini", (PyCFunction)(void (*)(void))lowers_gini, METH_FASTCALL,
     "lowers_gini(share, task_share, neighbour_utilities) -> bool, as protocols.pdgdrf.lowers_gini_python"},
    {"fsum", fsum, METH_O, "fsum(values) -> the correctly rounded sum of finite floats, as math.fsum"},
    {"use_reference", use_reference, METH_O,
     "use_reference(function): what lowers_gini calls for inputs off its fast path"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "protocols._gini", NULL, -1, methods};

PyMODINIT_FUNC PyInit__gini(void) { return PyModule_Create(&module); }
