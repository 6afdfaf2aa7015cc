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
 * Descriptors(iterable=())
 *   The gradient's view and pending candidates, and its messages' descriptors, as C arrays
 *   (`_descriptors.h`). `rank` and `freshest` take a store as they take a list, and answer with a
 *   store: a plain one in the kernel, any other through the reference on a copy of its items.
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
#include "_descriptors.h"
#include "_overlay_kernel.h"

static PyObject *reference, *freshest_reference; /* overlay.gradient's, imported at first need */
static PyTypeObject DescriptorsType;

#define IS_DESCRIPTORS(obj) Py_IS_TYPE((obj), &DescriptorsType)

/* -- Descriptors (`_descriptors.h`) ---------------------------------------------------------- */

static PyObject *descriptors_of(PyObject *iterable) { /* Descriptors(iterable), a new store */
    Descriptors *d = descriptors_new(&DescriptorsType, 0);
    if (d != NULL && iterable != NULL && descriptors_extend(d, iterable) < 0) Py_CLEAR(d);
    return (PyObject *)d;
}

static PyObject *descriptors_tp_new(PyTypeObject *Py_UNUSED(type), PyObject *args, PyObject *kwargs) {
    PyObject *iterable = NULL;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) > 0) {
        PyErr_SetString(PyExc_TypeError, "Descriptors() takes no keyword arguments");
        return NULL;
    }
    return PyArg_UnpackTuple(args, "Descriptors", 0, 1, &iterable) ? descriptors_of(iterable) : NULL;
}

static int descriptors_traverse(Descriptors *self, visitproc visit, void *arg) {
    Py_VISIT(self->objects);
    Py_VISIT(self->boxed);
    return 0;
}

static int descriptors_tp_clear(Descriptors *self) {
    Py_CLEAR(self->objects);
    Py_CLEAR(self->boxed);
    self->length = 0;
    return 0;
}

static void descriptors_dealloc(Descriptors *self) {
    PyObject_GC_UnTrack(self);
    descriptors_tp_clear(self);
    if (self->items != self->inline_items) PyMem_Free(self->items);
    PyObject_GC_Del(self);
}

static Py_ssize_t descriptors_sq_length(Descriptors *self) { return descriptors_length(self); }

static PyObject *descriptors_subscript(Descriptors *self, PyObject *key) {
    PyObject *list = descriptors_list(self);
    return list == NULL ? NULL : PyObject_GetItem(list, key);
}

static PyObject *descriptors_sq_item(Descriptors *self, Py_ssize_t i) {
    PyObject *list = descriptors_list(self);
    if (list == NULL) return NULL;
    if (i < 0 || i >= PyList_GET_SIZE(list)) {
        PyErr_SetString(PyExc_IndexError, "list index out of range");
        return NULL;
    }
    return Py_NewRef(PyList_GET_ITEM(list, i));
}

static int descriptors_contains(Descriptors *self, PyObject *value) {
    PyObject *list = descriptors_list(self);
    return list == NULL ? -1 : PySequence_Contains(list, value);
}

static PyObject *descriptors_iter(Descriptors *self) {
    PyObject *list = descriptors_list(self);
    return list == NULL ? NULL : PyObject_GetIter(list);
}

static PyObject *as_list(PyObject *obj) { /* a list's or a store's items as a list (borrowed), or NULL */
    if (PyList_Check(obj)) return obj;
    return IS_DESCRIPTORS(obj) ? descriptors_list((Descriptors *)obj) : NULL;
}

static PyObject *descriptors_concat(PyObject *a, PyObject *b) { /* `a + b`: a new list, as a list's `+` */
    PyObject *left = as_list(a), *right = left == NULL || PyErr_Occurred() ? NULL : as_list(b);
    if (right == NULL) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "can only concatenate list (not \"%.200s\") to list", Py_TYPE(b)->tp_name);
        return NULL;
    }
    return PySequence_Concat(left, right);
}

static PyObject *descriptors_inplace_concat(Descriptors *self, PyObject *values) { /* `self += values` */
    if (descriptors_extend(self, values) < 0) return NULL;
    return Py_NewRef(self);
}

static PyObject *descriptors_extend_method(Descriptors *self, PyObject *values) {
    if (descriptors_extend(self, values) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *descriptors_richcompare(PyObject *a, PyObject *b, int op) { /* as the lists of their items */
    PyObject *left = as_list(a);
    if (left == NULL) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NOTIMPLEMENTED;
    }
    PyObject *right = as_list(b);
    if (right == NULL) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NOTIMPLEMENTED;
    }
    return PyObject_RichCompare(left, right, op);
}

static PyObject *descriptors_repr(Descriptors *self) {
    PyObject *list = descriptors_list(self);
    return list == NULL ? NULL : PyObject_Repr(list);
}

static PyObject *descriptors_reduce(Descriptors *self, PyObject *Py_UNUSED(unused)) {
    PyObject *list = descriptors_list(self);
    if (list == NULL) return NULL;
    return Py_BuildValue("O(N)", (PyObject *)Py_TYPE(self), PyList_GetSlice(list, 0, PY_SSIZE_T_MAX));
}

static PyObject *descriptors_plain_get(Descriptors *self, void *Py_UNUSED(closure)) {
    return PyBool_FromLong(descriptors_plain(self));
}

static PySequenceMethods descriptors_as_sequence = {
    .sq_length = (lenfunc)descriptors_sq_length,
    .sq_concat = descriptors_concat,
    .sq_item = (ssizeargfunc)descriptors_sq_item,
    .sq_contains = (objobjproc)descriptors_contains,
    .sq_inplace_concat = (binaryfunc)descriptors_inplace_concat,
};

static PyMappingMethods descriptors_as_mapping = {
    .mp_length = (lenfunc)descriptors_sq_length,
    .mp_subscript = (binaryfunc)descriptors_subscript,
};

static PyMethodDef descriptors_methods[] = {
    {"extend", (PyCFunction)descriptors_extend_method, METH_O, "extend(descriptors): append them, as list.extend"},
    {"__reduce__", (PyCFunction)descriptors_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef descriptors_getset[] = {
    {"plain", (getter)descriptors_plain_get, NULL, "True while every item is a plain descriptor, kept as C data", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject DescriptorsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "drfemu.overlay._rank.Descriptors",
    .tp_doc = PyDoc_STR("Descriptors(iterable=()): gradient descriptors (utility, node, stamp) kept as C data; "
                        "a sequence of tuples to Python, extended like a list"),
    .tp_basicsize = sizeof(Descriptors),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_SEQUENCE,
    .tp_new = descriptors_tp_new,
    .tp_dealloc = (destructor)descriptors_dealloc,
    .tp_traverse = (traverseproc)descriptors_traverse,
    .tp_clear = (inquiry)descriptors_tp_clear,
    .tp_repr = (reprfunc)descriptors_repr,
    .tp_hash = PyObject_HashNotImplemented,
    .tp_as_sequence = &descriptors_as_sequence,
    .tp_as_mapping = &descriptors_as_mapping,
    .tp_iter = (getiterfunc)descriptors_iter,
    .tp_richcompare = descriptors_richcompare,
    .tp_methods = descriptors_methods,
    .tp_getset = descriptors_getset,
};

/* -- rank and freshest ------------------------------------------------------------------------ */

static PyObject *call_reference(PyObject *const *args, Py_ssize_t nargs) {
    PyObject *function = imported(&reference, "drfemu.overlay.gradient", "rank_python");
    return function == NULL ? NULL : PyObject_Vectorcall(function, args, (size_t)nargs, NULL);
}

/* The reference on a copy of a store's items, its answer a store again. */
static PyObject *call_reference_on_store(PyObject *const *args, Py_ssize_t nargs) {
    PyObject *items = descriptors_list((Descriptors *)args[2]), *copy = NULL, *ranked = NULL, *result = NULL;
    if (items != NULL && (copy = PyList_GetSlice(items, 0, PY_SSIZE_T_MAX)) != NULL) {
        PyObject *full[5] = {args[0], args[1], copy, args[3], nargs == 5 ? args[4] : NULL};
        ranked = call_reference(full, nargs);
    }
    if (ranked != NULL) result = descriptors_of(ranked);
    Py_XDECREF(ranked);
    Py_XDECREF(copy);
    return result;
}

static PyObject *rank(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 4 || nargs > 5) {
        PyErr_Format(PyExc_TypeError, "rank() takes 4 or 5 arguments (%zd given)", nargs);
        return NULL;
    }
    long long me, size_ll;
    double my_utility, oldest = -Py_HUGE_VAL;
    PyObject *candidates = args[2];
    int store = IS_DESCRIPTORS(candidates);
    if (!kernel_plain_int(args[0], &me) || !kernel_plain_float(args[1], &my_utility)
        || !(PyList_CheckExact(candidates) || (store && descriptors_plain((Descriptors *)candidates)))
        || !kernel_plain_int(args[3], &size_ll) || size_ll < 0 || size_ll > PY_SSIZE_T_MAX
        || (nargs == 5 && !kernel_plain_float(args[4], &oldest)))
        return store ? call_reference_on_store(args, nargs) : call_reference(args, nargs);
    if (store)
        return (PyObject *)descriptors_rank(&DescriptorsType, me, my_utility, (Descriptors *)candidates,
                                            (Py_ssize_t)size_ll, oldest);
    int plain;
    PyObject *result = kernel_rank_lists(me, my_utility, candidates, NULL, (Py_ssize_t)size_ll, oldest, &plain);
    return plain ? result : call_reference(args, nargs); /* not plain: nothing has changed, the reference decides */
}

static PyObject *freshest_of_store(Descriptors *candidates) { /* freshest() of a plain store: a new store */
    Py_ssize_t n = candidates->length, unique = 0;
    size_t slots = kernel_slots(n);
    Py_ssize_t *table = PyMem_Calloc(slots, sizeof(Py_ssize_t));
    Descriptors *result = table == NULL ? NULL : descriptors_new(&DescriptorsType, n);
    if (table == NULL) PyErr_NoMemory();
    for (Py_ssize_t i = 0; result != NULL && i < n; i++)
        kernel_keep_freshest(candidates->items[i], i, result->items, NULL, &unique, table, slots);
    if (result != NULL) result->length = unique;
    PyMem_Free(table);
    return (PyObject *)result;
}

static PyObject *freshest(PyObject *Py_UNUSED(self), PyObject *candidates) {
    if (IS_DESCRIPTORS(candidates)) {
        Descriptors *store = (Descriptors *)candidates;
        if (descriptors_plain(store)) return freshest_of_store(store);
        PyObject *function = imported(&freshest_reference, "drfemu.overlay.gradient", "freshest_python");
        PyObject *kept = function == NULL ? NULL : PyObject_CallOneArg(function, store->objects), *result = kept;
        if (kept != NULL && kept != Py_None) {
            result = descriptors_of(kept);
            Py_DECREF(kept);
        }
        return result;
    }
    if (!PyList_CheckExact(candidates)) goto reference;
    Py_ssize_t n = PyList_GET_SIZE(candidates);
    size_t slots = kernel_slots(n);
    KernelDescriptor *read = PyMem_Malloc(sizeof(KernelDescriptor) * (size_t)(2 * n + 1));
    Py_ssize_t *table = PyMem_Calloc(slots + (size_t)n, sizeof(Py_ssize_t)); /* the table, then where each kept one is */
    PyObject *result = NULL;
    int handed_off = 0;
    if (read == NULL || table == NULL) {
        PyErr_NoMemory();
    } else if (!kernel_read_descriptors(candidates, read)) {
        handed_off = 1; /* nothing has changed: the reference decides */
    } else {
        Py_ssize_t unique = 0, *kept_at = table + slots;
        for (Py_ssize_t i = 0; i < n; i++) kernel_keep_freshest(read[i], i, read + n, kept_at, &unique, table, slots);
        result = PyList_New(unique);
        for (Py_ssize_t k = 0; result != NULL && k < unique; k++)
            PyList_SET_ITEM(result, k, Py_NewRef(PyList_GET_ITEM(candidates, kept_at[k])));
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
    if (main_interpreter_only("drfemu.overlay._rank") < 0 || PyType_Ready(&DescriptorsType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddObjectRef(m, "Descriptors", (PyObject *)&DescriptorsType) < 0) Py_CLEAR(m);
    return m;
}
