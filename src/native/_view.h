/* Cyclon's view as C arrays (`overlay._cyclon.View`, whose type object is `_cyclon.c`'s): its layout and
 * the steps on it that `_cyclon.c` and `_plane.c` share (the plane makes Views of its peers' entries).
 *
 * A View is a mapping node -> descriptor (utility, node, stamp) that behaves as the dict it replaces
 * (insertion order, an assignment to a held node keeps its place, a deletion closes the gap), with
 * the nodes, stamps and utilities in arrays of C numbers. An entry set from Python keeps its
 * descriptor object; an entry set as C data (`view_set_plain`: the C exchanges merging a message
 * that a row carried as a store of structs, issue 57) has none until Python first reads it, when a
 * tuple equal to it is made and kept (`view_descriptor`). Per entry, `kinds` says what the arrays
 * cannot: a stamp that is not an exact float, a node that is not an exact int, a descriptor that is
 * not plain (an exact 3-tuple of an exact float, an exact int of 64 bits and an exact float, neither
 * float NaN); the counts of each let a step tell in O(1) whether the whole view is plain. */
#ifndef DRFEMU_VIEW_H
#define DRFEMU_VIEW_H

#include <Python.h>
#include <string.h>

#include "_accelerator.h"
#include "_overlay_kernel.h"

enum { VIEW_ODD_STAMP = 1, VIEW_ODD_NODE = 2, VIEW_NOT_PLAIN = 4 };

typedef struct {
    PyObject_HEAD
    Py_ssize_t len, cap;
    long long *nodes;        /* nodes[i] == descriptors[i][1] */
    double *stamps;          /* descriptors[i][2], when it is an exact float */
    double *utilities;       /* descriptors[i][0], when the entry is plain */
    unsigned char *kinds;    /* VIEW_* flags of entry i */
    PyObject **descriptors;  /* owned; NULL for a plain entry set as C data and not read by Python yet */
    Py_ssize_t odd_stamps, odd_nodes, not_plain; /* entries with each flag */
} ViewObject;

/* Every entry plain: the C exchanges may work on the arrays alone. */
static inline int view_plain(const ViewObject *v) { return v->not_plain == 0; }

static inline Py_ssize_t view_find(const ViewObject *v, long long id) { /* the place of `id` in the view, or -1 */
    KernelNodes nodes = {v->nodes, 1};
    Py_ssize_t at = kernel_find(nodes, v->len, id);
    return at < v->len ? at : -1;
}

static inline void view_count(ViewObject *v, unsigned char kinds, Py_ssize_t sign) {
    v->odd_stamps += sign * ((kinds & VIEW_ODD_STAMP) != 0);
    v->odd_nodes += sign * ((kinds & VIEW_ODD_NODE) != 0);
    v->not_plain += sign * ((kinds & VIEW_NOT_PLAIN) != 0);
}

static inline void view_remove_at(ViewObject *v, Py_ssize_t i) {
    PyObject *gone = v->descriptors[i];
    view_count(v, v->kinds[i], -1);
    for (Py_ssize_t j = i + 1; j < v->len; j++) { /* a few entries: a loop costs less than five memmove calls */
        v->nodes[j - 1] = v->nodes[j];
        v->stamps[j - 1] = v->stamps[j];
        v->utilities[j - 1] = v->utilities[j];
        v->kinds[j - 1] = v->kinds[j];
        v->descriptors[j - 1] = v->descriptors[j];
    }
    v->len--;
    Py_XDECREF(gone);
}

/* Room for `cap` entries in every array: 0, or -1 with MemoryError (the arrays that grew stay grown). */
static inline int view_grow(ViewObject *v, Py_ssize_t cap) {
    long long *nodes = PyMem_Realloc(v->nodes, sizeof(long long) * (size_t)cap);
    if (nodes != NULL) v->nodes = nodes;
    double *stamps = nodes == NULL ? NULL : PyMem_Realloc(v->stamps, sizeof(double) * (size_t)cap);
    if (stamps != NULL) v->stamps = stamps;
    double *utilities = stamps == NULL ? NULL : PyMem_Realloc(v->utilities, sizeof(double) * (size_t)cap);
    if (utilities != NULL) v->utilities = utilities;
    unsigned char *kinds = utilities == NULL ? NULL : PyMem_Realloc(v->kinds, (size_t)cap);
    if (kinds != NULL) v->kinds = kinds;
    PyObject **descriptors = kinds == NULL ? NULL : PyMem_Realloc(v->descriptors, sizeof(PyObject *) * (size_t)cap);
    if (descriptors == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    v->descriptors = descriptors;
    v->cap = cap;
    return 0;
}

/* The place of `id`, appended (its descriptor NULL, its kinds 0) when not held: -1 with MemoryError. */
static inline Py_ssize_t view_place(ViewObject *v, long long id) {
    Py_ssize_t i = view_find(v, id);
    if (i >= 0) return i;
    if (v->len == v->cap && view_grow(v, v->cap < 4 ? 8 : v->cap * 2) < 0) return -1;
    i = v->len++;
    v->nodes[i] = id;
    v->kinds[i] = 0;
    v->descriptors[i] = NULL;
    return i;
}

/* view[e.node] = e, a plain descriptor as C data: replaced in place when held, else appended. 0 or -1. */
static inline int view_set_plain(ViewObject *v, const KernelDescriptor *e) {
    Py_ssize_t i = view_place(v, e->node);
    if (i < 0) return -1;
    PyObject *old = v->descriptors[i];
    view_count(v, v->kinds[i], -1);
    v->kinds[i] = 0;
    v->descriptors[i] = NULL;
    v->stamps[i] = e->stamp;
    v->utilities[i] = e->utility;
    Py_XDECREF(old);
    return 0;
}

/* view[id] = descriptor (borrowed; a tuple of 3 or more whose node, an int, is `id`). 0 or -1. */
static inline int view_set(ViewObject *v, long long id, PyObject *descriptor) {
    PyObject *stamp = PyTuple_GET_ITEM(descriptor, 2);
    KernelDescriptor e;
    unsigned char kinds = (PyFloat_CheckExact(stamp) ? 0 : VIEW_ODD_STAMP)
                          | (PyLong_CheckExact(PyTuple_GET_ITEM(descriptor, 1)) ? 0 : VIEW_ODD_NODE);
    int plain = kinds == 0 && PyTuple_CheckExact(descriptor) && PyTuple_GET_SIZE(descriptor) == 3
                && kernel_plain_float(PyTuple_GET_ITEM(descriptor, 0), &e.utility)
                && kernel_plain_float(stamp, &e.stamp);
    if (!plain) kinds |= VIEW_NOT_PLAIN;
    Py_ssize_t i = view_place(v, id);
    if (i < 0) return -1;
    PyObject *old = v->descriptors[i];
    view_count(v, v->kinds[i], -1);
    view_count(v, kinds, 1);
    v->kinds[i] = kinds;
    v->descriptors[i] = Py_NewRef(descriptor);
    v->stamps[i] = kinds & VIEW_ODD_STAMP ? 0.0 : PyFloat_AS_DOUBLE(stamp);
    v->utilities[i] = plain ? e.utility : 0.0;
    Py_XDECREF(old);
    return 0;
}

/* Entry i as C data (a plain entry). */
static inline KernelDescriptor view_entry(const ViewObject *v, Py_ssize_t i) {
    KernelDescriptor e = {v->utilities[i], v->nodes[i], v->stamps[i]};
    return e;
}

/* Entry i's descriptor as Python reads it, borrowed: its object, made from its C data (and kept) for
 * an entry set as C data. NULL with MemoryError. */
static inline PyObject *view_descriptor(ViewObject *v, Py_ssize_t i) {
    if (v->descriptors[i] == NULL) {
        KernelDescriptor e = view_entry(v, i);
        v->descriptors[i] = kernel_box_descriptor(&e);
    }
    return v->descriptors[i];
}

/* Entry i's node as Python reads it (its descriptor's node object), a new reference; NULL with MemoryError. */
static inline PyObject *view_node(ViewObject *v, Py_ssize_t i) {
    if (v->descriptors[i] == NULL) return PyLong_FromLongLong(v->nodes[i]);
    return Py_NewRef(PyTuple_GET_ITEM(v->descriptors[i], 1));
}

/* The nodes of a tuple of descriptors into `ids` if each is an exact tuple of 3 or more whose node is
 * an exact int of 64 bits: 1; else 0. Runs no Python code. */
static inline int view_tuple_nodes(PyObject *items, long long *ids) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(items); i++) {
        PyObject *d = PyTuple_GET_ITEM(items, i);
        if (!PyTuple_CheckExact(d) || PyTuple_GET_SIZE(d) < 3 || !PyLong_CheckExact(PyTuple_GET_ITEM(d, 1))
            || !int64_of(PyTuple_GET_ITEM(d, 1), &ids[i]))
            return 0;
    }
    return 1;
}

/* Cyclon's merge rule on the view for the nodes received, ids[0..m), and those that may be replaced,
 * ids[m..m+r): the entries replaced leave the view, and the indices (into the received) of those that
 * join go to places[0..count), in order; returns count. `places` holds m + r. The caller then sets each
 * (a node received twice: the later descriptor, in the first's place). */
static inline Py_ssize_t view_merge_plan(ViewObject *v, long long me, long long size, const long long *ids,
                                         Py_ssize_t m, Py_ssize_t r, Py_ssize_t *places) {
    Py_ssize_t evicted;
    KernelNodes held = {v->nodes, 1}, got = {ids, 1}, sent = {ids + m, 1};
    Py_ssize_t count = kernel_merge_plan(me, size, held, v->len, got, m, sent, r, places, places + m, &evicted);
    for (Py_ssize_t e = evicted - 1; e >= 0; e--) view_remove_at(v, places[m + e]); /* from the last: places hold */
    return count;
}

/* pop_oldest on a view whose stamps are all exact floats: the entry with the smallest stamp (the first
 * of equal ones, as `min`) leaves the view; its node (a new reference), None for an empty view, or NULL
 * with MemoryError. */
static inline PyObject *view_pop_oldest(ViewObject *v) {
    if (v->len == 0) return Py_NewRef(Py_None);
    Py_ssize_t best = 0;
    for (Py_ssize_t i = 1; i < v->len; i++)
        if (v->stamps[i] < v->stamps[best]) best = i;
    PyObject *oldest = view_node(v, best);
    if (oldest != NULL) view_remove_at(v, best);
    return oldest;
}

/* -- drawing k of n entries: one draw picks a k-subset in itertools.combinations order ---------- */

#define VIEW_MAX_TABLE 4096 /* subsets a draw picks among; more go to the reference's partial Fisher-Yates */
#define VIEW_PASCAL_ROWS 64

/* C(n, k) capped, one table per module that includes this header: its module's init fills it (view_init) */
static long long view_pascal[VIEW_PASCAL_ROWS][VIEW_PASCAL_ROWS];

static inline long long view_comb_computed(Py_ssize_t n, Py_ssize_t k) { /* C(n, k), 0 <= k <= n, capped */
    if (k > n - k) k = n - k;
    long long c = 1;
    for (Py_ssize_t i = 1; i <= k; i++) {
        c = c * (n - k + i) / i; /* exact: c·(n−k+i) is divisible by i at every step */
        if (c > VIEW_MAX_TABLE) return VIEW_MAX_TABLE + 1;
    }
    return c;
}

static inline long long view_comb(Py_ssize_t n, Py_ssize_t k) { /* C(n, k), or VIEW_MAX_TABLE + 1 if larger */
    if (k < 0 || k > n) return 0;
    if (n < VIEW_PASCAL_ROWS) return view_pascal[n][k];
    return view_comb_computed(n, k);
}

static inline void view_init(void) { /* the table of view_comb, once per module that includes this */
    for (Py_ssize_t n = 0; n < VIEW_PASCAL_ROWS; n++)
        for (Py_ssize_t k = 0; k <= n; k++) view_pascal[n][k] = view_comb_computed(n, k);
}

/* The ascending positions of the `count` of `n` entries that the draw `r` in [0, 1) picks, into
 * `picks`, where 0 < count < n and view_comb(n, count) <= VIEW_MAX_TABLE. */
static inline void view_picks(Py_ssize_t n, Py_ssize_t count, double r, Py_ssize_t *picks) {
    if (count == 1) {
        picks[0] = (Py_ssize_t)(r * (double)n); /* r < 1 and n < 2^53: below n */
        return;
    }
    long long index = (long long)(r * (double)view_comb(n, count));
    Py_ssize_t next = 0; /* unrank `index` among the k-subsets in lexicographic order */
    for (Py_ssize_t p = 0; p < count; p++) {
        for (;; next++) {
            long long after = view_comb(n - 1 - next, count - 1 - p);
            if (index < after) break;
            index -= after;
        }
        picks[p] = next++;
    }
}

#endif
