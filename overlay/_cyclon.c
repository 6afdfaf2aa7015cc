/* Cyclon's view, merge and subset draws (overlay.cyclon.merge_python, pop_oldest_python,
 * sample_python, sample_values_python) in C: run by every server every tick. Same contract as
 * the Python versions, which stay the reference; tests check that the two agree on arbitrary
 * inputs and that whole runs give the same events.
 *
 * View(capacity=0): the Cyclon view as C arrays, a mapping node -> descriptor that behaves as
 *   the dict it replaces (below).
 * merge(entries, me, size, received, replaceable) -> None
 *   entries: the view, a View or a dict node -> descriptor (utility, node, stamp), changed in
 *   place. The descriptors of `received` that name neither `me` nor a node in the view are
 *   new; they fill the free slots (size - len(entries)); when there are more of them, the
 *   entries sent in the exchange (`replaceable`, in order) that are still in the view make
 *   room, until there is enough; the new descriptors that still do not fit are dropped,
 *   from the last. The rest join the view in the order received.
 * pop_oldest(entries) -> node or None: the oldest entry leaves the view.
 * sample(draw, items, k), sample_values(draw, entries, k) -> tuple: k random entries.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

static PyObject *node_of(PyObject *descriptor) {
    if (PyTuple_Check(descriptor) && PyTuple_GET_SIZE(descriptor) >= 2) return PyTuple_GET_ITEM(descriptor, 1);
    PyErr_SetString(PyExc_TypeError, "a descriptor is a (utility, node, stamp) tuple");
    return NULL;
}

/* -- View: a Cyclon view as arrays -------------------------------------------------------------
 * The Cyclon view (overlay.cyclon.Cyclon.entries) where the extension is built: a mapping
 * node -> descriptor (utility, node, stamp) that behaves as the dict it replaces — insertion
 * order, an assignment to a held node keeps its place, a deletion closes the gap — but keeps
 * the nodes and the stamps in arrays of C numbers beside the descriptors. The Cyclon steps
 * that every server runs every tick (is this node held? which entry is oldest? the k-th
 * entry?) then read a few contiguous cache lines instead of one dict entry, one tuple and
 * one float per descriptor (issue 18: at 1,000 servers each was a cache miss).
 * Lookups scan the array, so the view is meant for Cyclon's small views
 * (overlay.cyclon.ARRAY_VIEW_MAX); larger views stay dicts. A key is a node id, an int of
 * 64 bits; any other key is simply not held, and a descriptor of another node is refused. */
typedef struct {
    PyObject_HEAD
    Py_ssize_t len, cap;
    long long *nodes;        /* nodes[i] == descriptors[i][1] */
    double *stamps;          /* descriptors[i][2], when it is a float */
    PyObject **descriptors;  /* owned */
    Py_ssize_t odd_stamps;   /* descriptors whose stamp is not an exact float */
} ViewObject;

static PyTypeObject View_Type;
#define View_Check(op) Py_IS_TYPE(op, &View_Type)

static int node_id(PyObject *node, long long *id) { /* 1 with *id for an int of 64 bits, else 0; -1 on error */
    if (!PyLong_Check(node)) return 0;
    int overflow;
    *id = PyLong_AsLongLongAndOverflow(node, &overflow);
    if (overflow) return 0;
    return *id == -1 && PyErr_Occurred() ? -1 : 1;
}

static Py_ssize_t view_find(ViewObject *v, long long id) {
    const long long *nodes = v->nodes;
    for (Py_ssize_t i = 0, n = v->len; i < n; i++)
        if (nodes[i] == id) return i;
    return -1;
}

static void view_remove_at(ViewObject *v, Py_ssize_t i) {
    PyObject *gone = v->descriptors[i];
    if (!PyFloat_CheckExact(PyTuple_GET_ITEM(gone, 2))) v->odd_stamps--;
    Py_ssize_t tail = v->len - i - 1;
    memmove(v->nodes + i, v->nodes + i + 1, sizeof(long long) * (size_t)tail);
    memmove(v->stamps + i, v->stamps + i + 1, sizeof(double) * (size_t)tail);
    memmove(v->descriptors + i, v->descriptors + i + 1, sizeof(PyObject *) * (size_t)tail);
    v->len--;
    Py_DECREF(gone);
}

/* the descriptor's node id: 0 with *id, -1 (TypeError) when it is not a (utility, node: int, stamp) tuple */
static int descriptor_node(PyObject *descriptor, long long *id) {
    if (!PyTuple_Check(descriptor) || PyTuple_GET_SIZE(descriptor) < 3) {
        PyErr_SetString(PyExc_TypeError, "a descriptor is a (utility, node, stamp) tuple");
        return -1;
    }
    int is_id = node_id(PyTuple_GET_ITEM(descriptor, 1), id);
    if (is_id == 0) PyErr_SetString(PyExc_TypeError, "a descriptor's node is an int of 64 bits");
    return is_id == 1 ? 0 : -1;
}

/* view[id] = descriptor (borrowed): replaced in place when held, else appended */
static int view_set(ViewObject *v, long long id, PyObject *descriptor) {
    PyObject *stamp = PyTuple_GET_ITEM(descriptor, 2);
    int odd = !PyFloat_CheckExact(stamp);
    Py_ssize_t i = view_find(v, id);
    if (i < 0) {
        if (v->len == v->cap) {
            Py_ssize_t cap = v->cap < 4 ? 8 : v->cap * 2;
            long long *nodes = PyMem_Realloc(v->nodes, sizeof(long long) * (size_t)cap);
            if (nodes == NULL) return PyErr_NoMemory(), -1;
            v->nodes = nodes;
            double *stamps = PyMem_Realloc(v->stamps, sizeof(double) * (size_t)cap);
            if (stamps == NULL) return PyErr_NoMemory(), -1;
            v->stamps = stamps;
            PyObject **descriptors = PyMem_Realloc(v->descriptors, sizeof(PyObject *) * (size_t)cap);
            if (descriptors == NULL) return PyErr_NoMemory(), -1;
            v->descriptors = descriptors;
            v->cap = cap;
        }
        i = v->len++;
        v->nodes[i] = id;
        v->descriptors[i] = NULL;
    }
    PyObject *old = v->descriptors[i];
    if (old != NULL && !PyFloat_CheckExact(PyTuple_GET_ITEM(old, 2))) v->odd_stamps--;
    Py_INCREF(descriptor);
    v->descriptors[i] = descriptor;
    v->stamps[i] = odd ? 0.0 : PyFloat_AS_DOUBLE(stamp);
    v->odd_stamps += odd;
    Py_XDECREF(old);
    return 0;
}

static Py_ssize_t view_index(ViewObject *v, PyObject *key) { /* the key's place, -1 when not held, -2 on error */
    long long id;
    int is_id = node_id(key, &id);
    if (is_id < 0) return -2;
    return is_id ? view_find(v, id) : -1;
}

static PyObject *view_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *keywords[] = {"capacity", NULL};
    Py_ssize_t capacity = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|n:View", keywords, &capacity)) return NULL;
    if (capacity < 0) {
        PyErr_SetString(PyExc_ValueError, "View: capacity is at least 0");
        return NULL;
    }
    ViewObject *v = (ViewObject *)type->tp_alloc(type, 0);
    if (v == NULL) return NULL;
    if (capacity > 0) {
        v->nodes = PyMem_Malloc(sizeof(long long) * (size_t)capacity);
        v->stamps = PyMem_Malloc(sizeof(double) * (size_t)capacity);
        v->descriptors = PyMem_Malloc(sizeof(PyObject *) * (size_t)capacity);
        if (v->nodes == NULL || v->stamps == NULL || v->descriptors == NULL) {
            Py_DECREF(v);
            return PyErr_NoMemory();
        }
        v->cap = capacity;
    }
    return (PyObject *)v;
}

static int view_clear(ViewObject *v) {
    Py_ssize_t n = v->len;
    v->len = 0;
    v->odd_stamps = 0;
    for (Py_ssize_t i = 0; i < n; i++) Py_CLEAR(v->descriptors[i]);
    return 0;
}

static int view_traverse(ViewObject *v, visitproc visit, void *arg) {
    for (Py_ssize_t i = 0; i < v->len; i++) Py_VISIT(v->descriptors[i]);
    return 0;
}

static void view_dealloc(ViewObject *v) {
    PyObject_GC_UnTrack(v);
    view_clear(v);
    PyMem_Free(v->nodes);
    PyMem_Free(v->stamps);
    PyMem_Free(v->descriptors);
    Py_TYPE(v)->tp_free((PyObject *)v);
}

static Py_ssize_t view_length(ViewObject *v) { return v->len; }

static PyObject *view_subscript(ViewObject *v, PyObject *key) {
    Py_ssize_t i = view_index(v, key);
    if (i == -2) return NULL;
    if (i < 0) {
        PyErr_SetObject(PyExc_KeyError, key);
        return NULL;
    }
    return Py_NewRef(v->descriptors[i]);
}

static int view_ass_subscript(ViewObject *v, PyObject *key, PyObject *value) {
    if (value == NULL) {
        Py_ssize_t i = view_index(v, key);
        if (i == -2) return -1;
        if (i < 0) {
            PyErr_SetObject(PyExc_KeyError, key);
            return -1;
        }
        view_remove_at(v, i);
        return 0;
    }
    long long id, own;
    if (descriptor_node(value, &own) < 0) return -1;
    int is_id = node_id(key, &id);
    if (is_id < 0) return -1;
    if (!is_id || id != own) {
        PyErr_SetString(PyExc_ValueError, "a Cyclon view maps a node to a descriptor of that node");
        return -1;
    }
    return view_set(v, id, value);
}

static int view_contains(ViewObject *v, PyObject *key) {
    Py_ssize_t i = view_index(v, key);
    return i == -2 ? -1 : i >= 0;
}

static PyObject *view_list(ViewObject *v, int what) { /* 0: nodes, 1: descriptors, 2: (node, descriptor) */
    PyObject *list = PyList_New(v->len);
    if (list == NULL) return NULL;
    for (Py_ssize_t i = 0; i < v->len; i++) {
        PyObject *descriptor = v->descriptors[i], *node = PyTuple_GET_ITEM(descriptor, 1), *item;
        if (what == 0) item = Py_NewRef(node);
        else if (what == 1) item = Py_NewRef(descriptor);
        else if ((item = PyTuple_Pack(2, node, descriptor)) == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, item);
    }
    return list;
}

static PyObject *view_keys(ViewObject *v, PyObject *Py_UNUSED(ignored)) { return view_list(v, 0); }
static PyObject *view_values(ViewObject *v, PyObject *Py_UNUSED(ignored)) { return view_list(v, 1); }
static PyObject *view_items(ViewObject *v, PyObject *Py_UNUSED(ignored)) { return view_list(v, 2); }

static PyObject *view_iter(ViewObject *v) {
    PyObject *keys = view_list(v, 0);
    if (keys == NULL) return NULL;
    PyObject *iterator = PyObject_GetIter(keys);
    Py_DECREF(keys);
    return iterator;
}

static PyObject *view_get(ViewObject *v, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "get(node, default=None)");
        return NULL;
    }
    Py_ssize_t i = view_index(v, args[0]);
    if (i == -2) return NULL;
    return Py_NewRef(i >= 0 ? v->descriptors[i] : nargs == 2 ? args[1] : Py_None);
}

static PyObject *view_pop(ViewObject *v, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "pop(node[, default])");
        return NULL;
    }
    Py_ssize_t i = view_index(v, args[0]);
    if (i == -2) return NULL;
    if (i < 0) {
        if (nargs == 2) return Py_NewRef(args[1]);
        PyErr_SetObject(PyExc_KeyError, args[0]);
        return NULL;
    }
    PyObject *descriptor = Py_NewRef(v->descriptors[i]);
    view_remove_at(v, i);
    return descriptor;
}

static PyObject *view_as_dict(ViewObject *v) {
    PyObject *dict = PyDict_New();
    for (Py_ssize_t i = 0; dict != NULL && i < v->len; i++) {
        if (PyDict_SetItem(dict, PyTuple_GET_ITEM(v->descriptors[i], 1), v->descriptors[i]) < 0) Py_CLEAR(dict);
    }
    return dict;
}

static PyObject *view_repr(ViewObject *v) {
    PyObject *dict = view_as_dict(v);
    if (dict == NULL) return NULL;
    PyObject *repr = PyUnicode_FromFormat("View(%R)", dict);
    Py_DECREF(dict);
    return repr;
}

static PyObject *view_richcompare(PyObject *self, PyObject *other, int op) { /* == and != as the dicts */
    if ((op != Py_EQ && op != Py_NE) || !(View_Check(other) || PyDict_Check(other))) Py_RETURN_NOTIMPLEMENTED;
    PyObject *mine = view_as_dict((ViewObject *)self);
    PyObject *theirs = View_Check(other) ? view_as_dict((ViewObject *)other) : Py_NewRef(other);
    PyObject *result = mine != NULL && theirs != NULL ? PyObject_RichCompare(mine, theirs, op) : NULL;
    Py_XDECREF(mine);
    Py_XDECREF(theirs);
    return result;
}

static PyMappingMethods view_as_mapping = {
    .mp_length = (lenfunc)view_length,
    .mp_subscript = (binaryfunc)view_subscript,
    .mp_ass_subscript = (objobjargproc)view_ass_subscript,
};

static PySequenceMethods view_as_sequence = {.sq_contains = (objobjproc)view_contains};

static PyMethodDef view_methods[] = {
    {"keys", (PyCFunction)view_keys, METH_NOARGS, "the nodes, in view order (a list)"},
    {"values", (PyCFunction)view_values, METH_NOARGS, "the descriptors, in view order (a list)"},
    {"items", (PyCFunction)view_items, METH_NOARGS, "(node, descriptor) pairs, in view order (a list)"},
    {"get", (PyCFunction)(void (*)(void))view_get, METH_FASTCALL, "get(node, default=None), as dict.get"},
    {"pop", (PyCFunction)(void (*)(void))view_pop, METH_FASTCALL, "pop(node[, default]), as dict.pop"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject View_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "overlay._cyclon.View",
    .tp_doc = "View(capacity=0): a Cyclon view, node -> descriptor, as a dict that keeps nodes and stamps in C arrays",
    .tp_basicsize = sizeof(ViewObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_MAPPING,
    .tp_new = view_new,
    .tp_dealloc = (destructor)view_dealloc,
    .tp_traverse = (traverseproc)view_traverse,
    .tp_clear = (inquiry)view_clear,
    .tp_repr = (reprfunc)view_repr,
    .tp_hash = PyObject_HashNotImplemented,
    .tp_richcompare = view_richcompare,
    .tp_iter = (getiterfunc)view_iter,
    .tp_as_mapping = &view_as_mapping,
    .tp_as_sequence = &view_as_sequence,
    .tp_methods = view_methods,
};

/* merge(...) on a View: the same steps as on a dict, with the nodes compared as C numbers. A
 * single body for both kinds, through View-or-dict helpers, made `pdgdrf` 1,000 x 200 3-4 %
 * slower (each node converted twice and compared as an object), so the View has its own. */
static PyObject *merge_view(ViewObject *v, PyObject *me, Py_ssize_t size, PyObject *received_arg,
                            PyObject *replaceable_arg) {
    long long me_id = 0;
    int me_is_id = node_id(me, &me_id); /* a `me` that is not an int names no descriptor */
    if (me_is_id < 0) return NULL;
    PyObject *received = PySequence_Fast(received_arg, "merge: received is a sequence");
    if (received == NULL) return NULL;
    PyObject *replaceable = NULL, *result = NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(received);
    PyObject **incoming = PySequence_Fast_ITEMS(received);
    PyObject *small[32];
    long long small_ids[32];
    PyObject **fresh = n <= 32 ? small : PyMem_Malloc(sizeof(PyObject *) * (size_t)n);
    long long *ids = n <= 32 ? small_ids : PyMem_Malloc(sizeof(long long) * (size_t)n);
    if (fresh == NULL || ids == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t count = 0; /* the new descriptors, borrowed from `received` */
    for (Py_ssize_t i = 0; i < n; i++) {
        long long id;
        if (descriptor_node(incoming[i], &id) < 0) goto done;
        if (view_find(v, id) >= 0 || (me_is_id && id == me_id)) continue;
        fresh[count] = incoming[i];
        ids[count++] = id;
    }
    if (count > 0) {
        Py_ssize_t room = size - v->len;
        if (count > room) {
            replaceable = PySequence_Fast(replaceable_arg, "merge: replaceable is a sequence");
            if (replaceable == NULL) goto done;
            Py_ssize_t m = PySequence_Fast_GET_SIZE(replaceable);
            PyObject **sent = PySequence_Fast_ITEMS(replaceable);
            for (Py_ssize_t j = 0; j < m; j++) { /* in the order the entries were sent */
                long long victim;
                if (descriptor_node(sent[j], &victim) < 0) goto done;
                Py_ssize_t at = view_find(v, victim);
                if (at >= 0) {
                    view_remove_at(v, at);
                    if (++room == count) break;
                }
            }
            Py_ssize_t keep = room >= 0 ? room : count + room; /* as Python's `del new[room:]` */
            if (keep < 0) keep = 0;
            if (keep < count) count = keep;
        }
        for (Py_ssize_t i = 0; i < count; i++) { /* a node received twice: the later descriptor, in the first's place */
            if (view_set(v, ids[i], fresh[i]) < 0) goto done;
        }
    }
    result = Py_NewRef(Py_None);
done:
    if (fresh != NULL && fresh != small) PyMem_Free(fresh);
    if (ids != NULL && ids != small_ids) PyMem_Free(ids);
    Py_XDECREF(replaceable);
    Py_DECREF(received);
    return result;
}

/* pop_oldest(entries) -> node or None: overlay.cyclon.pop_oldest_python. The entry with the
 * smallest stamp (the first of equal ones, as `min`) leaves the view; its node is returned. */
static PyObject *pop_oldest(PyObject *Py_UNUSED(self), PyObject *entries) {
    if (View_Check(entries)) {
        ViewObject *v = (ViewObject *)entries;
        if (v->len == 0) Py_RETURN_NONE;
        Py_ssize_t best = 0;
        if (v->odd_stamps == 0) {
            const double *stamps = v->stamps;
            for (Py_ssize_t i = 1; i < v->len; i++)
                if (stamps[i] < stamps[best]) best = i;
        } else {
            for (Py_ssize_t i = 1; i < v->len; i++) {
                int earlier = PyObject_RichCompareBool(PyTuple_GET_ITEM(v->descriptors[i], 2),
                                                       PyTuple_GET_ITEM(v->descriptors[best], 2), Py_LT);
                if (earlier < 0) return NULL;
                if (earlier) best = i;
            }
        }
        PyObject *oldest = Py_NewRef(PyTuple_GET_ITEM(v->descriptors[best], 1));
        view_remove_at(v, best);
        return oldest;
    }
    if (!PyDict_Check(entries)) {
        PyErr_SetString(PyExc_TypeError, "pop_oldest(entries: View or dict)");
        return NULL;
    }
    if (PyDict_GET_SIZE(entries) == 0) Py_RETURN_NONE;
    Py_ssize_t pos = 0;
    PyObject *key, *value, *best = NULL, *best_stamp = NULL;
    while (PyDict_Next(entries, &pos, &key, &value)) { /* min(entries.values(), key=STAMP) */
        if (!PyTuple_Check(value) || PyTuple_GET_SIZE(value) < 3) {
            PyErr_SetString(PyExc_TypeError, "a descriptor is a (utility, node, stamp) tuple");
            return NULL;
        }
        PyObject *stamp = PyTuple_GET_ITEM(value, 2);
        if (best != NULL) {
            int earlier = PyFloat_CheckExact(stamp) && PyFloat_CheckExact(best_stamp)
                              ? PyFloat_AS_DOUBLE(stamp) < PyFloat_AS_DOUBLE(best_stamp)
                              : PyObject_RichCompareBool(stamp, best_stamp, Py_LT);
            if (earlier < 0) return NULL;
            if (!earlier) continue;
        }
        best = value;
        best_stamp = stamp;
    }
    PyObject *oldest = Py_NewRef(PyTuple_GET_ITEM(best, 1));
    if (PyDict_DelItem(entries, oldest) < 0) Py_CLEAR(oldest);
    return oldest;
}

static PyObject *merge(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5 || !(View_Check(args[0]) || PyDict_Check(args[0]))) {
        PyErr_SetString(PyExc_TypeError, "merge(entries: View or dict, me, size, received, replaceable)");
        return NULL;
    }
    PyObject *entries = args[0], *me = args[1];
    Py_ssize_t size = PyLong_AsSsize_t(args[2]);
    if (size == -1 && PyErr_Occurred()) return NULL;
    if (View_Check(entries)) return merge_view((ViewObject *)entries, me, size, args[3], args[4]);
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
 * View or a dict `entries`, without the list: the drawn positions are ascending, so they are
 * read from the View's array, or one pass over the dict picks them, and the descriptors not
 * chosen are not touched (at 1,000 servers each is a cache miss). The partial Fisher-Yates
 * (more than MAX_TABLE subsets) goes through the list. */
static PyObject *sample_values(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !(View_Check(args[1]) || PyDict_Check(args[1]))) {
        PyErr_SetString(PyExc_TypeError, "sample_values(draw, entries: View or dict, k)");
        return NULL;
    }
    PyObject *draw = args[0], *entries = args[1];
    Py_ssize_t k = PyLong_AsSsize_t(args[2]);
    if (k == -1 && PyErr_Occurred()) return NULL;
    ViewObject *view = View_Check(entries) ? (ViewObject *)entries : NULL;
    Py_ssize_t n = view != NULL ? view->len : PyDict_GET_SIZE(entries);
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
        PyObject *values = view != NULL ? view_list(view, 1) : PyDict_Values(entries);
        if (values == NULL) return NULL;
        PyObject *call[3] = {draw, values, args[2]};
        PyObject *chosen = sample(NULL, call, 3);
        Py_DECREF(values);
        return chosen;
    }
    PyObject *result = PyTuple_New(count);
    if (result != NULL && view != NULL) {
        for (Py_ssize_t taken = 0; taken < count; taken++) {
            PyObject *value = view->descriptors[count == n ? taken : picks[taken]];
            Py_INCREF(value);
            PyTuple_SET_ITEM(result, taken, value);
        }
    } else if (result != NULL) {
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
    {"pop_oldest", pop_oldest, METH_O,
     "pop_oldest(entries) -> the node of the oldest entry, removed from the view (None if it is empty)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "overlay._cyclon", NULL, -1, methods};

PyMODINIT_FUNC PyInit__cyclon(void) {
    str_random = PyUnicode_InternFromString("random");
    if (str_random == NULL) return NULL;
    for (Py_ssize_t n = 0; n < PASCAL_ROWS; n++)
        for (Py_ssize_t k = 0; k <= n; k++) pascal[n][k] = comb_computed(n, k);
    if (PyType_Ready(&View_Type) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddObjectRef(m, "View", (PyObject *)&View_Type) < 0) Py_CLEAR(m);
    return m;
}
