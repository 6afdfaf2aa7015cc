/* Cyclon's view, merge and subset draws (overlay.cyclon.merge_python, pop_oldest_python,
 * sample_python, sample_values_python) in C: run by every server every tick; and a walk's hop over
 * the view (frontier_hop_python), run at every hop of a placement walk. Same contract as
 * the Python versions, which stay the reference; tests check that the two agree on arbitrary
 * inputs and that whole runs give the same events.
 *
 * View(capacity=0): the Cyclon view as C arrays, a mapping node -> descriptor that behaves as
 *   the dict it replaces (below; its layout and the steps `_plane.c` shares are `_view.h`).
 * merge(entries, me, size, received, replaceable) -> None
 *   entries: the view, node -> descriptor (utility, node, stamp), changed in place. The
 *   descriptors of `received` that name neither `me` nor a node in the view are new; they
 *   fill the free slots (size - len(entries)); when there are more of them, the
 *   entries sent in the exchange (`replaceable`, in order) that are still in the view make
 *   room, until there is enough; the new descriptors that still do not fit are dropped,
 *   from the last. The rest join the view in the order received.
 * pop_oldest(entries) -> node or None: the oldest entry leaves the view.
 * sample_values(draw, entries, k) -> tuple: k random entries.
 * frontier_hop(visited, frontier, peers, draw) -> a walk's next hop over a Cyclon view (below).
 *
 * merge is the overlay kernel's rule (`_overlay_kernel.h`), carried out on the View.
 * The functions take their fast path on a View of plain data only: descriptors exact tuples
 * whose nodes are exact ints of 64 bits and stamps exact floats, `received` and `replaceable`
 * exact tuples of such descriptors, `me`, `size` and `k` exact ints, and a draw that is the
 * stock generator (`_stock_draw.h`). There they run no Python code, so nothing can change their
 * input under them. Anything else — a dict view, another draw, other numbers — goes, untouched,
 * to the reference (overlay.cyclon.*_python), imported at first need, which gives Python's
 * answer or exception.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include "_accelerator.h"
#include "_overlay_kernel.h"
#include "_stock_draw.h"
#include "_view.h"

static PyObject *references[4]; /* overlay.cyclon's merge_python, pop_oldest_python, sample_values_python,
                                    frontier_hop_python */
static const char *reference_names[4] = {"merge_python", "pop_oldest_python", "sample_values_python",
                                         "frontier_hop_python"};
enum { MERGE, POP_OLDEST, SAMPLE_VALUES, FRONTIER_HOP };

static PyObject *call_reference(int which, PyObject *const *args, Py_ssize_t nargs) {
    PyObject *function = imported(&references[which], "drfemu.overlay.cyclon", reference_names[which]);
    return function == NULL ? NULL : PyObject_Vectorcall(function, args, (size_t)nargs, NULL);
}

/* -- View: a Cyclon view as arrays -------------------------------------------------------------
 * The Cyclon view (overlay.cyclon.Cyclon.entries) where the extension is built (`_view.h`): a mapping
 * node -> descriptor (utility, node, stamp) that behaves as the dict it replaces — insertion
 * order, an assignment to a held node keeps its place, a deletion closes the gap — but keeps
 * the nodes, stamps and utilities in arrays of C numbers beside the descriptors. The Cyclon steps
 * that every server runs every tick (is this node held? which entry is oldest? the k-th
 * entry?) then read a few contiguous cache lines instead of one dict entry, one tuple and
 * one float per descriptor (issue 18: at 1,000 servers each was a cache miss); an entry the C
 * exchanges set as C data gets its tuple when Python first reads it.
 * Lookups scan the array, so the view is meant for Cyclon's small views
 * (overlay.cyclon.ARRAY_VIEW_MAX); larger views stay dicts. A key is a node id, an int of
 * 64 bits, compared by its value (an int subclass's own __eq__ and __hash__ are not called,
 * where a dict would call them); any other key is simply not held, and a descriptor of another
 * node is refused. */
static PyTypeObject View_Type;
#define View_Check(op) Py_IS_TYPE(op, &View_Type)

static int node_id(PyObject *node, long long *id) { /* 1 with *id for an int of 64 bits, else 0 */
    if (!PyLong_Check(node)) return 0;
    return int64_of(node, id);
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
    if (capacity > 0 && view_grow(v, capacity) < 0) {
        Py_DECREF(v);
        return NULL;
    }
    return (PyObject *)v;
}

static int view_clear(ViewObject *v) {
    Py_ssize_t n = v->len;
    v->len = 0;
    v->odd_stamps = v->odd_nodes = v->not_plain = 0;
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
    PyMem_Free(v->utilities);
    PyMem_Free(v->kinds);
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
    return Py_XNewRef(view_descriptor(v, i));
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
        PyObject *descriptor = what == 0 ? NULL : view_descriptor(v, i), *node = what == 1 ? NULL : view_node(v, i);
        PyObject *item = what == 0 ? Py_XNewRef(node) : what == 1 ? Py_XNewRef(descriptor)
                         : node == NULL || descriptor == NULL ? NULL : PyTuple_Pack(2, node, descriptor);
        Py_XDECREF(node);
        if (item == NULL) {
            if (!PyErr_Occurred()) PyErr_NoMemory();
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
    return Py_XNewRef(i >= 0 ? view_descriptor(v, i) : nargs == 2 ? args[1] : Py_None);
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
    PyObject *descriptor = Py_XNewRef(view_descriptor(v, i));
    if (descriptor != NULL) view_remove_at(v, i);
    return descriptor;
}

static PyObject *view_as_dict(ViewObject *v) {
    PyObject *dict = PyDict_New();
    for (Py_ssize_t i = 0; dict != NULL && i < v->len; i++) {
        PyObject *descriptor = view_descriptor(v, i);
        if (descriptor == NULL || PyDict_SetItem(dict, PyTuple_GET_ITEM(descriptor, 1), descriptor) < 0) Py_CLEAR(dict);
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

/* merge(entries, me, size, received, replaceable): overlay.cyclon.merge_python on a View of
 * plain data: the overlay kernel's plan (`_overlay_kernel.h`) over the nodes as C numbers,
 * carried out on the View. */
static PyObject *merge(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    long long me_id, size_ll;
    if (nargs != 5 || !View_Check(args[0]) || !PyLong_CheckExact(args[1]) || node_id(args[1], &me_id) != 1
        || !PyLong_CheckExact(args[2]) || node_id(args[2], &size_ll) != 1 || !PyTuple_CheckExact(args[3])
        || !PyTuple_CheckExact(args[4]))
        return call_reference(MERGE, args, nargs);
    ViewObject *v = (ViewObject *)args[0];
    PyObject *received = args[3], *replaceable = args[4]; /* tuples: nothing below can change them */
    Py_ssize_t m = PyTuple_GET_SIZE(received), r = PyTuple_GET_SIZE(replaceable), n = m + r;
    long long small_ids[64];
    Py_ssize_t small_places[64];
    long long *ids = n <= 64 ? small_ids : PyMem_Malloc(sizeof(long long) * (size_t)n);
    Py_ssize_t *places = n <= 64 ? small_places : PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)n);
    PyObject *result = NULL;
    int handed_off = 0;
    if (ids == NULL || places == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (!view_tuple_nodes(received, ids) || !view_tuple_nodes(replaceable, ids + m)) {
        handed_off = 1; /* nothing has changed yet */
        goto done;
    }
    Py_ssize_t count = view_merge_plan(v, me_id, size_ll, ids, m, r, places);
    for (Py_ssize_t i = 0; i < count; i++)
        if (view_set(v, ids[places[i]], PyTuple_GET_ITEM(received, places[i])) < 0) goto done;
    result = Py_NewRef(Py_None);
done:
    if (ids != NULL && ids != small_ids) PyMem_Free(ids);
    if (places != NULL && places != small_places) PyMem_Free(places);
    return handed_off ? call_reference(MERGE, args, nargs) : result;
}

/* pop_oldest(entries) -> node or None: overlay.cyclon.pop_oldest_python on a View whose stamps are
 * all exact floats. The entry with the smallest stamp (the first of equal ones, as `min`) leaves
 * the view; its node is returned. */
static PyObject *pop_oldest(PyObject *Py_UNUSED(self), PyObject *entries) {
    if (!View_Check(entries) || ((ViewObject *)entries)->odd_stamps != 0)
        return call_reference(POP_OLDEST, &entries, 1);
    return view_pop_oldest((ViewObject *)entries);
}

/* sample_values(draw, entries, k) -> tuple: overlay.cyclon.sample_values_python, draw for draw.
 * One draw.random() picks the index of a k-subset of range(n) in itertools.combinations order
 * (at most MAX_TABLE of them; more go to the reference's partial Fisher-Yates). The drawn
 * positions are ascending, so they are read from the View's array and the descriptors not
 * chosen are not touched (at 1,000 servers each is a cache miss). */
static PyObject *sample_values(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    long long k;
    if (nargs != 3 || !View_Check(args[1]) || !PyLong_CheckExact(args[2]) || node_id(args[2], &k) != 1)
        return call_reference(SAMPLE_VALUES, args, nargs);
    ViewObject *view = (ViewObject *)args[1];
    Py_ssize_t n = view->len;
    if (k == 0 && n > 0) return PyTuple_New(0);
    if (n > k && (k < 0 || view_comb(n, (Py_ssize_t)k) > VIEW_MAX_TABLE))
        return call_reference(SAMPLE_VALUES, args, nargs); /* its error, or its partial Fisher-Yates */
    Py_ssize_t count = n <= k ? n : (Py_ssize_t)k; /* positions to take, ascending */
    Py_ssize_t small[32], *picks = small;
    if (count < n) {
        double r;
        int stock = is_stock_draw(args[0]);
        if (stock <= 0) return stock < 0 ? NULL : call_reference(SAMPLE_VALUES, args, nargs);
        if (stock_uniform(args[0], &r) < 0) return NULL;
        if (count > 32 && (picks = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)count)) == NULL) return PyErr_NoMemory();
        view_picks(n, count, r, picks);
    }
    PyObject *result = PyTuple_New(count); /* nothing has run since the view was read */
    for (Py_ssize_t taken = 0; result != NULL && taken < count; taken++) {
        PyObject *descriptor = view_descriptor(view, count == n ? taken : picks[taken]);
        if (descriptor == NULL) Py_CLEAR(result);
        else PyTuple_SET_ITEM(result, taken, Py_NewRef(descriptor));
    }
    if (picks != small) PyMem_Free(picks);
    return result;
}

/* -- frontier_hop: a walk's hop over the Cyclon graph ------------------------------------------
 * frontier_hop(visited, frontier, peers, draw) -> (next, visited + (next,), rest) or None: the
 * frontier grown by the nodes of `peers`, in view order, that are neither in `visited` nor in
 * `frontier`; None when that is empty, else its node at int(draw.random() * len(grown)), with
 * `visited` extended by it and `rest` the grown frontier without it. Fast path: `visited` and
 * `frontier` exact tuples of exact ints of 64 bits, `peers` a View whose nodes are exact ints or
 * an exact list of exact ints of 64 bits (a view's nodes, `Cyclon.neighbors()`), a stock draw;
 * the draw is taken only when the grown frontier is not empty, as the reference takes it.
 * Anything else goes, untouched, to overlay.cyclon.frontier_hop_python. */
static int known_insert(long long *keys, unsigned char *used, size_t slots, long long id) { /* 1 if new */
    size_t h = ((unsigned long long)id * 0x9E3779B97F4A7C15ULL) >> 32;
    for (;; h++) {
        h &= slots - 1;
        if (!used[h]) {
            used[h] = 1;
            keys[h] = id;
            return 1;
        }
        if (keys[h] == id) return 0;
    }
}

static int known_has(const long long *keys, const unsigned char *used, size_t slots, long long id) {
    size_t h = ((unsigned long long)id * 0x9E3779B97F4A7C15ULL) >> 32;
    for (;; h++) {
        h &= slots - 1;
        if (!used[h]) return 0;
        if (keys[h] == id) return 1;
    }
}

/* The nodes of `peers` for frontier_hop's fast path: a View's node array (borrowed), or an exact
 * list's exact ints read into *owned (to free); their count, or -1 when `peers` is neither. */
static Py_ssize_t peer_nodes(PyObject *peers, const long long **nodes, long long **owned) {
    *owned = NULL;
    if (View_Check(peers)) {
        if (((ViewObject *)peers)->odd_nodes != 0) return -1;
        *nodes = ((ViewObject *)peers)->nodes;
        return ((ViewObject *)peers)->len;
    }
    if (!PyList_CheckExact(peers)) return -1;
    Py_ssize_t n = PyList_GET_SIZE(peers);
    long long *ids = PyMem_Malloc(sizeof(long long) * (size_t)(n > 0 ? n : 1));
    if (ids == NULL) return -2;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *node = PyList_GET_ITEM(peers, i);
        if (!PyLong_CheckExact(node) || !int64_of(node, &ids[i])) {
            PyMem_Free(ids);
            return -1;
        }
    }
    *nodes = *owned = ids;
    return n;
}

static PyObject *frontier_hop(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 || !PyTuple_CheckExact(args[0]) || !PyTuple_CheckExact(args[1]))
        return call_reference(FRONTIER_HOP, args, nargs);
    PyObject *visited = args[0], *frontier = args[1], *draw = args[3], *peers = args[2];
    int stock = is_stock_draw(draw);
    if (stock <= 0) return stock < 0 ? NULL : call_reference(FRONTIER_HOP, args, nargs);
    const long long *nodes;
    long long *owned;
    Py_ssize_t nv = PyTuple_GET_SIZE(visited), nf = PyTuple_GET_SIZE(frontier), np = peer_nodes(peers, &nodes, &owned);
    if (np == -2) return PyErr_NoMemory();
    if (np < 0) return call_reference(FRONTIER_HOP, args, nargs);
    size_t slots = 16;
    while (slots < 2 * (size_t)(nv + nf)) slots <<= 1;
    long long *keys = PyMem_Malloc(sizeof(long long) * slots);
    unsigned char *used = PyMem_Calloc(slots, 1);
    Py_ssize_t *fresh = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(np > 0 ? np : 1));
    PyObject **fresh_nodes = PyMem_Calloc((size_t)(np > 0 ? np : 1), sizeof(PyObject *)); /* their node objects */
    PyObject *result = NULL;
    if (keys == NULL || used == NULL || fresh == NULL || fresh_nodes == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < nv + nf; i++) { /* no Python code runs: the ints are exact */
        PyObject *node = i < nv ? PyTuple_GET_ITEM(visited, i) : PyTuple_GET_ITEM(frontier, i - nv);
        long long id;
        if (!PyLong_CheckExact(node) || !int64_of(node, &id)) {
            result = call_reference(FRONTIER_HOP, args, nargs);
            goto done;
        }
        known_insert(keys, used, slots, id);
    }
    Py_ssize_t added = 0;
    for (Py_ssize_t i = 0; i < np; i++)
        if (!known_has(keys, used, slots, nodes[i])) fresh[added++] = i;
    for (Py_ssize_t j = 0; j < added; j++)
        if ((fresh_nodes[j] = owned != NULL ? Py_NewRef(PyList_GET_ITEM(peers, fresh[j]))
                                            : view_node((ViewObject *)peers, fresh[j])) == NULL)
            goto done;
    Py_ssize_t m = nf + added;
    if (m == 0) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    double r;
    if (stock_uniform(draw, &r) < 0) goto done;
    Py_ssize_t k = (Py_ssize_t)(r * (double)m); /* int(draw.random() * len(grown)) */
    if (k >= m) {
        PyErr_SetString(PyExc_IndexError, "tuple index out of range");
        goto done;
    }
#define GROWN(j) ((j) < nf ? PyTuple_GET_ITEM(frontier, (j)) : fresh_nodes[(j) - nf])
    PyObject *next = GROWN(k);
    PyObject *walked = PyTuple_New(nv + 1), *rest = PyTuple_New(m - 1);
    if (walked == NULL || rest == NULL) {
        Py_XDECREF(walked);
        Py_XDECREF(rest);
        goto done;
    }
    for (Py_ssize_t i = 0; i < nv; i++) PyTuple_SET_ITEM(walked, i, Py_NewRef(PyTuple_GET_ITEM(visited, i)));
    PyTuple_SET_ITEM(walked, nv, Py_NewRef(next));
    for (Py_ssize_t j = 0, at = 0; j < m; j++)
        if (j != k) PyTuple_SET_ITEM(rest, at++, Py_NewRef(GROWN(j)));
#undef GROWN
    result = PyTuple_Pack(3, next, walked, rest);
    Py_DECREF(walked);
    Py_DECREF(rest);
done:
    for (Py_ssize_t j = 0; fresh_nodes != NULL && j < np; j++) Py_XDECREF(fresh_nodes[j]);
    PyMem_Free(fresh_nodes);
    PyMem_Free(owned);
    PyMem_Free(keys);
    PyMem_Free(used);
    PyMem_Free(fresh);
    return result;
}

static PyMethodDef methods[] = {
    {"sample_values", (PyCFunction)(void (*)(void))sample_values, METH_FASTCALL,
     "sample_values(draw, entries, k) -> sample(draw, list(entries.values()), k), without the list"},
    {"merge", (PyCFunction)(void (*)(void))merge, METH_FASTCALL,
     "merge(entries, me, size, received, replaceable): Cyclon's merge rule, in place"},
    {"pop_oldest", pop_oldest, METH_O,
     "pop_oldest(entries) -> the node of the oldest entry, removed from the view (None if it is empty)"},
    {"frontier_hop", (PyCFunction)(void (*)(void))frontier_hop, METH_FASTCALL,
     "frontier_hop(visited, frontier, peers, draw) -> (next, visited + (next,), rest), or None: a walk's hop"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "overlay._cyclon", NULL, -1, methods};

PyMODINIT_FUNC PyInit__cyclon(void) {
    if (main_interpreter_only("drfemu.overlay._cyclon") < 0 || stock_draw_init() < 0) return NULL;
    view_init();
    if (PyType_Ready(&View_Type) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddObjectRef(m, "View", (PyObject *)&View_Type) < 0) Py_CLEAR(m);
    return m;
}
