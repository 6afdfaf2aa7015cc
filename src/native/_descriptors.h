/* The gradient's descriptors as C arrays: `Descriptors` (overlay._rank's type; issue 57).
 *
 * A `Gradient` (the Python reference's object: a peer that no overlay plane holds, `nodes.plane`)
 * keeps its view and its pending candidates as (utility, node, stamp) structs instead of lists of
 * tuples, so that its merges and offers move no Python object per descriptor. To Python
 * a `Descriptors` is a sequence of descriptor tuples, built when Python first reads it (and kept
 * until it changes), that can be extended like a list. A descriptor that is not plain (an exact
 * 3-tuple of an exact float, an exact int of 64 bits and an exact float, neither float NaN: what
 * `kernel_read_descriptors` accepts) turns the whole store into a list of the objects themselves,
 * on which every operation is the list's, so any input gets the reference's answer
 * (`overlay.gradient` uses `list` itself where this type was not built).
 *
 * The type object is `_rank.c`'s, the one module that includes this header. */
#ifndef DRFEMU_DESCRIPTORS_H
#define DRFEMU_DESCRIPTORS_H

#include <Python.h>
#include <string.h>

#include "_overlay_kernel.h"

#define DESCRIPTORS_INLINE 8 /* descriptors held without a second allocation: a view and its message */

typedef struct {
    PyObject_HEAD
    Py_ssize_t length, capacity; /* plain: the descriptors held, and room for */
    KernelDescriptor *items;     /* plain: the descriptors, `inline_items` or the heap */
    PyObject *objects;           /* not plain: a list of the items (then the only truth); else NULL */
    PyObject *boxed;             /* plain: the items as a list of tuples, from Python's first read to a change */
    KernelDescriptor inline_items[DESCRIPTORS_INLINE];
} Descriptors;

static inline int descriptors_plain(const Descriptors *d) { return d->objects == NULL; }

/* A new, empty, plain store of `type` (the Descriptors type) with room for `capacity`; NULL with
 * Python's error. It is not tracked by the collector until it holds objects. */
static inline Descriptors *descriptors_new(PyTypeObject *type, Py_ssize_t capacity) {
    Descriptors *d = PyObject_GC_New(Descriptors, type);
    if (d == NULL) return NULL;
    d->length = 0;
    d->objects = d->boxed = NULL;
    d->items = d->inline_items;
    d->capacity = DESCRIPTORS_INLINE;
    if (capacity > DESCRIPTORS_INLINE) {
        d->items = PyMem_Malloc(sizeof(KernelDescriptor) * (size_t)capacity);
        if (d->items == NULL) {
            d->items = d->inline_items;
            Py_DECREF(d);
            PyErr_NoMemory();
            return NULL;
        }
        d->capacity = capacity;
    }
    return d;
}

/* Room for `extra` more plain descriptors: 0, or -1 with MemoryError. */
static inline int descriptors_reserve(Descriptors *d, Py_ssize_t extra) {
    if (extra <= d->capacity - d->length) return 0;
    if (extra > PY_SSIZE_T_MAX / (Py_ssize_t)sizeof(KernelDescriptor) / 2 - d->length) goto no_memory;
    Py_ssize_t capacity = d->length + extra;
    capacity += capacity >> 1;
    KernelDescriptor *items = PyMem_Malloc(sizeof(KernelDescriptor) * (size_t)capacity);
    if (items == NULL) goto no_memory;
    memcpy(items, d->items, sizeof(KernelDescriptor) * (size_t)d->length);
    if (d->items != d->inline_items) PyMem_Free(d->items);
    d->items = items;
    d->capacity = capacity;
    return 0;
no_memory:
    PyErr_NoMemory();
    return -1;
}

/* The plain contents changed: Python's cached reading is dropped. */
static inline void descriptors_changed(Descriptors *d) { Py_CLEAR(d->boxed); }

/* The items as Python sees them, a list (borrowed): the objects of a store that is not plain, or a
 * plain store's tuples, made at the first call after a change. NULL with Python's error. */
static inline PyObject *descriptors_list(Descriptors *d) {
    if (d->objects != NULL) return d->objects;
    if (d->boxed != NULL) return d->boxed;
    PyObject *list = PyList_New(d->length);
    for (Py_ssize_t i = 0; list != NULL && i < d->length; i++) {
        PyObject *t = kernel_box_descriptor(&d->items[i]);
        if (t == NULL) Py_CLEAR(list);
        else PyList_SET_ITEM(list, i, t);
    }
    d->boxed = list;
    return list;
}

/* The number of items, plain or not. */
static inline Py_ssize_t descriptors_length(const Descriptors *d) {
    return d->objects != NULL ? PyList_GET_SIZE(d->objects) : d->length;
}

/* Appends the items of `sequence` (an exact tuple or list) if every one is plain: 1; 0 when one is
 * not (nothing changed); -1 with MemoryError. Runs no Python code. */
static inline int descriptors_read(Descriptors *d, PyObject *sequence) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(sequence);
    if (descriptors_reserve(d, n) < 0) return -1;
    KernelDescriptor *out = d->items + d->length;
    PyObject **items = PySequence_Fast_ITEMS(sequence);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = items[i];
        if (!PyTuple_CheckExact(t) || PyTuple_GET_SIZE(t) != 3
            || !kernel_plain_float(PyTuple_GET_ITEM(t, 0), &out[i].utility)
            || !kernel_plain_int(PyTuple_GET_ITEM(t, 1), &out[i].node)
            || !kernel_plain_float(PyTuple_GET_ITEM(t, 2), &out[i].stamp))
            return 0;
    }
    d->length += n;
    if (n > 0) descriptors_changed(d);
    return 1;
}

/* A plain store becomes the list of its tuples (a descriptor that is not plain joins it): 0, or -1
 * with Python's error. */
static inline int descriptors_to_objects(Descriptors *d) {
    if (d->objects != NULL) return 0;
    PyObject *list = descriptors_list(d);
    if (list == NULL) return -1;
    d->objects = list; /* the cache's reference becomes the store's */
    d->boxed = NULL;
    d->length = 0;
    if (d->items != d->inline_items) PyMem_Free(d->items);
    d->items = d->inline_items;
    d->capacity = DESCRIPTORS_INLINE;
    if (!PyObject_GC_IsTracked((PyObject *)d)) PyObject_GC_Track((PyObject *)d);
    return 0;
}

/* `d.extend(values)`, as list.extend: 0, or -1 with Python's error (values not iterable, or what
 * iterating it raised: then, as list.extend, what was iterated before stays added). Another plain
 * store is copied and an exact tuple or list of plain descriptors read without running Python code. */
static inline int descriptors_extend(Descriptors *d, PyObject *values) {
    if (Py_IS_TYPE(values, Py_TYPE(d)) && descriptors_plain((Descriptors *)values) && descriptors_plain(d)) {
        Descriptors *from = (Descriptors *)values;
        Py_ssize_t n = from->length; /* read before any move: `from` may be `d` */
        if (n == 0) return 0;
        if (descriptors_reserve(d, n) < 0) return -1;
        memcpy(d->items + d->length, from->items, sizeof(KernelDescriptor) * (size_t)n);
        d->length += n;
        descriptors_changed(d);
        return 0;
    }
    PyObject *sequence, *iterator = NULL;
    int raised = 0; /* iterating `values` raised, after `sequence` */
    if (PyTuple_CheckExact(values) || PyList_CheckExact(values)) {
        sequence = Py_NewRef(values);
    } else if (Py_IS_TYPE(values, Py_TYPE(d))) {
        PyObject *items = descriptors_list((Descriptors *)values);
        sequence = items == NULL ? NULL : PyList_GetSlice(items, 0, PyList_GET_SIZE(items));
    } else if ((iterator = PyObject_GetIter(values)) == NULL) {
        return -1;
    } else { /* iterated before anything changes: it may run Python code */
        sequence = PyList_New(0);
        PyObject *next;
        while (sequence != NULL && (next = PyIter_Next(iterator)) != NULL) {
            if (PyList_Append(sequence, next) < 0) Py_CLEAR(sequence);
            Py_DECREF(next);
        }
        Py_DECREF(iterator);
        raised = PyErr_Occurred() != NULL;
    }
    if (sequence == NULL) return -1;
    PyObject *type = NULL, *error = NULL, *traceback = NULL; /* what iterating raised, held while nothing can */
#if PY_VERSION_HEX >= 0x030C0000
    if (raised) error = PyErr_GetRaisedException();
#else
    if (raised) PyErr_Fetch(&type, &error, &traceback);
#endif
    int status = descriptors_plain(d) ? descriptors_read(d, sequence) : 0;
    if (status == 0) {
        status = descriptors_to_objects(d);
        if (status == 0) {
            Py_ssize_t end = PyList_GET_SIZE(d->objects);
            status = PyList_SetSlice(d->objects, end, end, sequence);
        }
    } else if (status == 1) {
        status = 0;
    }
    Py_DECREF(sequence);
    if (!raised) return status;
    if (status == 0) {
#if PY_VERSION_HEX >= 0x030C0000
        PyErr_SetRaisedException(error);
#else
        PyErr_Restore(type, error, traceback);
#endif
    } else {
        Py_XDECREF(type);
        Py_XDECREF(error);
        Py_XDECREF(traceback);
    }
    return -1;
}

/* The gradient's rank (overlay.gradient.rank_python) of the plain store `candidates`: the ranked view
 * in a new plain store of `type`; NULL with Python's error. */
static inline Descriptors *descriptors_rank(PyTypeObject *type, long long me, double my_utility,
                                            const Descriptors *candidates, Py_ssize_t size, double oldest) {
    Py_ssize_t n = candidates->length;
    Py_ssize_t cap = size < n ? size : n;
    size_t slots = kernel_slots(n);
    KernelDescriptor small[KERNEL_SMALL];
    Py_ssize_t small_indices[4 * KERNEL_SMALL];
    int fits = n <= KERNEL_SMALL && slots + (size_t)(3 * cap) <= 4 * KERNEL_SMALL;
    KernelDescriptor *kept = fits ? small : PyMem_Malloc(sizeof(KernelDescriptor) * (size_t)(n + 1));
    Py_ssize_t *table = fits ? small_indices : PyMem_Malloc(sizeof(Py_ssize_t) * (slots + (size_t)(3 * cap) + 1));
    Descriptors *result = NULL;
    if (kept == NULL || table == NULL) {
        PyErr_NoMemory();
    } else {
        Py_ssize_t *above = table + slots, *below = above + cap, *out = below + cap;
        Py_ssize_t length = kernel_rank(me, my_utility, candidates->items, n, NULL, 0, 0, size, oldest, kept, NULL,
                                        table, above, below, out);
        result = descriptors_new(type, length);
        if (result != NULL) {
            for (Py_ssize_t i = 0; i < length; i++) result->items[i] = kept[out[i]];
            result->length = length;
        }
    }
    if (kept != NULL && kept != small) PyMem_Free(kept);
    if (table != NULL && table != small_indices) PyMem_Free(table);
    return result;
}

#endif
