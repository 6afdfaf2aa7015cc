/* Cyclon's merge and subset draws (overlay.cyclon.merge_python, sample_python,
 * sample_values_python) in C: run by every server every tick. Same contract as the Python version, which stays the reference; tests check
 * that the two agree on arbitrary inputs and that whole runs give the same events.
 *
 * merge(entries, me, size, received, replaceable) -> None
 *   entries: the view, a dict node -> descriptor (utility, node, stamp), changed in place.
 *   The descriptors of `received` that name neither `me` nor a node in the view are new;
 *   they fill the free slots (size - len(entries)); when there are more of them, the
 *   entries sent in the exchange (`replaceable`, in order) that are still in the view make
 *   room, until there is enough; the new descriptors that still do not fit are dropped,
 *   from the last. The rest join the view in the order received.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

static PyObject *node_of(PyObject *descriptor) {
    if (PyTuple_Check(descriptor) && PyTuple_GET_SIZE(descriptor) >= 2) return PyTuple_GET_ITEM(descriptor, 1);
    PyErr_SetString(PyExc_TypeError, "a descriptor is a (utility, node, stamp) tuple");
    return NULL;
}

static PyObject *merge(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5 || !PyDict_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "merge(entries: dict, me, size, received, replaceable)");
        return NULL;
    }
    PyObject *entries = args[0], *me = args[1];
    Py_ssize_t size = PyLong_AsSsize_t(args[2]);
    if (size == -1 && PyErr_Occurred()) return NULL;
    PyObject *received = PySequence_Fast(args[3], "merge: received is a sequence");
    if (received == NULL) return NULL;
    PyObject *replaceable = NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(received);
    PyObject **incoming = PySequence_Fast_ITEMS(received);
    PyObject *small[32];
    PyObject **fresh = n <= 32 ? small : PyMem_Malloc(sizeof(PyObject *) * (size_t)n);
    PyObject *result = NULL;
    if (fresh == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t count = 0; /* the new descriptors, borrowed from `received` */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *node = node_of(incoming[i]);
        if (node == NULL) goto done;
        int known = PyDict_Contains(entries, node);
        if (known < 0) goto done;
        if (known) continue;
        int mine = PyObject_RichCompareBool(node, me, Py_EQ);
        if (mine < 0) goto done;
        if (!mine) fresh[count++] = incoming[i];
    }
    if (count > 0) {
        Py_ssize_t room = size - PyDict_GET_SIZE(entries);
        if (count > room) {
            replaceable = PySequence_Fast(args[4], "merge: replaceable is a sequence");
            if (replaceable == NULL) goto done;
            Py_ssize_t m = PySequence_Fast_GET_SIZE(replaceable);
            PyObject **sent = PySequence_Fast_ITEMS(replaceable);
            for (Py_ssize_t j = 0; j < m; j++) { /* in the order the entries were sent */
                PyObject *victim = node_of(sent[j]);
                if (victim == NULL) goto done;
                int held = PyDict_Contains(entries, victim);
                if (held < 0) goto done;
                if (held) {
                    if (PyDict_DelItem(entries, victim) < 0) goto done;
                    if (++room == count) break;
                }
            }
            /* as Python's `del new[room:]` */
            Py_ssize_t keep = room >= 0 ? room : count + room;
            if (keep < 0) keep = 0;
            if (keep < count) count = keep;
        }
        for (Py_ssize_t i = 0; i < count; i++) {
            if (PyDict_SetItem(entries, node_of(fresh[i]), fresh[i]) < 0) goto done;
        }
    }
    result = Py_None;
    Py_INCREF(result);
done:
    if (fresh != NULL && fresh != small) PyMem_Free(fresh);
    Py_XDECREF(replaceable);
    Py_DECREF(received);
    return result;
}

/* sample(draw, items, k) -> tuple: overlay.cyclon.sample_python, draw for draw. One
 * draw.random() picks the index of a k-subset of range(n) in itertools.combinations order
 * when there are at most MAX_TABLE of them, else a partial Fisher-Yates shuffles. */
#define MAX_TABLE 4096

static long long comb_computed(Py_ssize_t n, Py_ssize_t k) { /* C(n, k) for 0 <= k <= n, or MAX_TABLE + 1 if larger */
    if (k > n - k) k = n - k;
    long long c = 1;
    for (Py_ssize_t i = 1; i <= k; i++) {
        c = c * (n - k + i) / i; /* exact: c·(n−k+i) is divisible by i at every step */
        if (c > MAX_TABLE) return MAX_TABLE + 1;
    }
    return c;
}

#define PASCAL_ROWS 64
static long long pascal[PASCAL_ROWS][PASCAL_ROWS]; /* comb_capped(n, k) for n, k < PASCAL_ROWS, filled at import */

static long long comb_capped(Py_ssize_t n, Py_ssize_t k) { /* C(n, k), or MAX_TABLE + 1 if larger */
    if (k < 0 || k > n) return 0;
    if (n < PASCAL_ROWS) return pascal[n][k];
    return comb_computed(n, k);
}

static PyObject *str_random; /* "random", interned at import */

static int uniform(PyObject *draw, double *out) { /* draw.random() */
    PyObject *value = PyObject_CallMethodNoArgs(draw, str_random);
    if (value == NULL) return -1;
    *out = PyFloat_AsDouble(value);
    Py_DECREF(value);
    return *out == -1.0 && PyErr_Occurred() ? -1 : 0;
}

static PyObject *sample(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "sample(draw, items, k)");
        return NULL;
    }
    Py_ssize_t k = PyLong_AsSsize_t(args[2]);
    if (k == -1 && PyErr_Occurred()) return NULL;
    PyObject *items = PySequence_Fast(args[1], "sample: items is a sequence");
    if (items == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(items);
    PyObject **item = PySequence_Fast_ITEMS(items);
    PyObject *result = NULL, *draw = args[0];
    if (n <= k) {
        result = PySequence_Tuple(items);
        goto done;
    }
    if (k < 0) {
        PyErr_SetString(PyExc_ValueError, "k must be a non-negative integer");
        goto done;
    }
    if (k == 0) {
        result = PyTuple_New(0);
        goto done;
    }
    double r;
    if (k == 1) {
        if (uniform(draw, &r) < 0) goto done;
        result = PyTuple_Pack(1, item[(Py_ssize_t)(r * (double)n)]);
        goto done;
    }
    long long subsets = comb_capped(n, k);
    result = PyTuple_New(k);
    if (result == NULL) goto done;
    if (subsets <= MAX_TABLE) {
        if (uniform(draw, &r) < 0) goto fail;
        long long index = (long long)(r * (double)subsets);
        Py_ssize_t next = 0; /* unrank `index` among the k-subsets in lexicographic order */
        for (Py_ssize_t p = 0; p < k; p++) {
            for (;; next++) {
                long long after = comb_capped(n - 1 - next, k - 1 - p);
                if (index < after) break;
                index -= after;
            }
            Py_INCREF(item[next]);
            PyTuple_SET_ITEM(result, p, item[next]);
            next++;
        }
        goto done;
    }
    PyObject **pool = PyMem_Malloc(sizeof(PyObject *) * (size_t)n);
    if (pool == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    memcpy(pool, item, sizeof(PyObject *) * (size_t)n);
    for (Py_ssize_t i = 0; i < k; i++) {
        if (uniform(draw, &r) < 0) {
            PyMem_Free(pool);
            goto fail;
        }
        Py_ssize_t j = i + (Py_ssize_t)(r * (double)(n - i));
        PyObject *swap = pool[i];
        pool[i] = pool[j];
        pool[j] = swap;
        Py_INCREF(pool[i]);
        PyTuple_SET_ITEM(result, i, pool[i]);
    }
    PyMem_Free(pool);
    goto done;
fail:
    Py_CLEAR(result);
done:
    Py_DECREF(items);
    return result;
}

/* sample_values(draw, entries, k) -> tuple: sample(draw, list(entries.values()), k) for a
 * dict `entries`, without the list: the drawn positions are ascending, so one pass over the
 * dict picks them, and the descriptors not chosen are not touched (at 1,000 servers each is a
 * cache miss). The partial Fisher-Yates (more than MAX_TABLE subsets) goes through the list. */
static PyObject *sample_values(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "sample_values(draw, entries: dict, k)");
        return NULL;
    }
    PyObject *draw = args[0], *entries = args[1];
    Py_ssize_t k = PyLong_AsSsize_t(args[2]);
    if (k == -1 && PyErr_Occurred()) return NULL;
    Py_ssize_t n = PyDict_GET_SIZE(entries);
    Py_ssize_t small[32], *picks = small;
    Py_ssize_t count; /* positions to take, ascending */
    if (n <= k) {
        count = n;
    } else if (k < 0) {
        PyErr_SetString(PyExc_ValueError, "k must be a non-negative integer");
        return NULL;
    } else if (k == 0) {
        return PyTuple_New(0);
    } else if (k == 1 || comb_capped(n, k) <= MAX_TABLE) {
        double r;
        if (uniform(draw, &r) < 0) return NULL;
        count = k;
        if (k > 32 && (picks = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)k)) == NULL) return PyErr_NoMemory();
        if (k == 1) {
            picks[0] = (Py_ssize_t)(r * (double)n);
        } else {
            long long index = (long long)(r * (double)comb_capped(n, k));
            Py_ssize_t next = 0; /* unrank `index` as `sample` does */
            for (Py_ssize_t p = 0; p < k; p++) {
                for (;; next++) {
                    long long after = comb_capped(n - 1 - next, k - 1 - p);
                    if (index < after) break;
                    index -= after;
                }
                picks[p] = next++;
            }
        }
    } else {
        PyObject *values = PyDict_Values(entries);
        if (values == NULL) return NULL;
        PyObject *call[3] = {draw, values, args[2]};
        PyObject *chosen = sample(NULL, call, 3);
        Py_DECREF(values);
        return chosen;
    }
    PyObject *result = PyTuple_New(count);
    if (result != NULL) {
        Py_ssize_t pos = 0, at = 0, taken = 0;
        PyObject *key, *value;
        while (taken < count && PyDict_Next(entries, &pos, &key, &value)) {
            if (count == n || at == picks[taken]) {
                Py_INCREF(value);
                PyTuple_SET_ITEM(result, taken++, value);
            }
            at++;
        }
    }
    if (picks != small) PyMem_Free(picks);
    return result;
}

static PyMethodDef methods[] = {
    {"sample_values", (PyCFunction)(void (*)(void))sample_values, METH_FASTCALL,
     "sample_values(draw, entries, k) -> sample(draw, list(entries.values()), k), without the list"},
    {"sample", (PyCFunction)(void (*)(void))sample, METH_FASTCALL,
     "sample(draw, items, k) -> k distinct random elements of items, as overlay.cyclon.sample_python"},
    {"merge", (PyCFunction)(void (*)(void))merge, METH_FASTCALL,
     "merge(entries, me, size, received, replaceable): Cyclon's merge rule, in place"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "overlay._cyclon", NULL, -1, methods};

PyMODINIT_FUNC PyInit__cyclon(void) {
    str_random = PyUnicode_InternFromString("random");
    if (str_random == NULL) return NULL;
    for (Py_ssize_t n = 0; n < PASCAL_ROWS; n++)
        for (Py_ssize_t k = 0; k <= n; k++) pascal[n][k] = comb_computed(n, k);
    return PyModule_Create(&module);
}
