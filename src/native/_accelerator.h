/* What every C accelerator of drfemu shares (src/native/_engine.c, src/native/_cyclon.c,
 * src/native/_plane.c, src/native/_rank.c, src/native/_gini.c, src/native/_probe.c, src/native/_ddrf.c,
 * src/native/_cycle.c); setup.py puts src/native/ on their include path. */
#ifndef DRFEMU_ACCELERATOR_H
#define DRFEMU_ACCELERATOR_H

#include <Python.h>
#include <structmember.h>

/* The accelerators keep their state in C globals (single-phase init), so they load in the main
 * interpreter only: elsewhere the import fails, and `kernel.compiled` gives the Python
 * reference instead. */
static int main_interpreter_only(const char *module) {
    if (PyInterpreterState_Get() == PyInterpreterState_Main()) return 0;
    PyErr_Format(PyExc_ImportError, "%s loads in the main interpreter only", module);
    return -1;
}

/* `module_name.name`, imported at the first call and kept in *cache (borrowed); NULL with the
 * import's error. Each accelerator reaches its Python reference so, when it first hands it a
 * call: importing it when the extension loads would import the Python module that loads the
 * extension. */
static inline PyObject *imported(PyObject **cache, const char *module_name, const char *name) {
    if (*cache == NULL) {
        PyObject *module = PyImport_ImportModule(module_name);
        if (module == NULL) return NULL;
        *cache = PyObject_GetAttrString(module, name);
        Py_DECREF(module);
    }
    return *cache;
}

/* *out = the value of `number`, an int (its layout, whatever its class), when it fits in 64 bits:
 * 1; else 0, with no error. An int of one digit (30 bits), nearly every node id and index, is
 * read without a call: PyLong_AsLongLongAndOverflow was 1.4 % of a walking run. */
static inline int int64_of(PyObject *number, long long *out) {
#if PY_VERSION_HEX >= 0x030C0000
    if (PyUnstable_Long_IsCompact((PyLongObject *)number)) {
        *out = (long long)PyUnstable_Long_CompactValue((PyLongObject *)number);
        return 1;
    }
#else
    Py_ssize_t size = Py_SIZE(number);
    if (size == 0) {
        *out = 0;
        return 1;
    }
    if (size == 1 || size == -1) {
        *out = (long long)size * (long long)((PyLongObject *)number)->ob_digit[0];
        return 1;
    }
#endif
    int overflow;
    *out = PyLong_AsLongLongAndOverflow(number, &overflow);
    return !overflow; /* an int raises nothing here */
}

/* Where the object slot that `descr` reads is kept, if it is a `__slots__` member (an object
 * reference, read without an audit event); else -1. */
static inline Py_ssize_t slot_offset(PyObject *descr) {
    if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type)) return -1;
    PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
    return member->type == T_OBJECT_EX && !(member->flags & PY_AUDIT_READ) ? member->offset : -1;
}

/* A remembered attribute read. Where an object's type reads attributes generically and finds a
 * `__slots__` member under `name`, Python's read of obj.<name> is that member's and runs no Python
 * code; so while an object's type is the one remembered and unchanged — the same valid version
 * tag, which any change to the type or to one of its bases replaces, and which no other type is
 * ever given — the member is read at its offset without asking Python again. */
typedef struct {
    PyTypeObject *type; /* not a reference: only compared, with the tag */
    unsigned int version;
    Py_ssize_t offset;
} SlotRead;

static inline int still_read(PyTypeObject *type, const SlotRead *read) {
    return type == read->type && (type->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG)
           && type->tp_version_tag == read->version;
}

/* What `type` reads generically under `name`, if it has a version tag to remember it by (borrowed; the
 * lookup gives the type a tag if it can have one): a descriptor of a class in its MRO, or NULL. */
static inline PyObject *found_on(PyTypeObject *type, PyObject *name) {
    if (type->tp_getattro != PyObject_GenericGetAttr) return NULL;
    PyObject *found = _PyType_Lookup(type, name);
    int tagged = (type->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) && type->tp_version_tag != 0;
    return tagged ? found : NULL;
}

/* Where objects of `type` keep the `__slots__` member they read under `name` (found as `found_on` finds
 * it, and a member of a class `type` derives from, as the member's own check asks), or -1; the member
 * descriptor in *descr if not NULL. Runs no Python code. */
static inline Py_ssize_t member_offset(PyTypeObject *type, PyObject *name, PyObject **descr) {
    PyObject *found = found_on(type, name);
    Py_ssize_t offset = slot_offset(found);
    if (offset >= 0 && !PyType_IsSubtype(type, PyDescr_TYPE(found))) offset = -1;
    if (descr != NULL) *descr = found;
    return offset;
}

/* Where a type keeps each of a set of attributes, as `__slots__` members, remembered by its version tag. */
#define LAYOUT_FIELDS 9 /* the most attributes a layout remembers */

typedef struct {
    SlotRead type; /* the type remembered, and its tag (`offset` unused) */
    Py_ssize_t offset[LAYOUT_FIELDS];
} Layout;

/* 1 if objects of `type` read (and, `writable`, set) each of `names` as a `__slots__` member of
 * theirs, its offset in layout->offset; else 0. Nothing here runs Python code. */
static inline int members_of(PyTypeObject *type, PyObject *const *names, int n, int writable, Layout *layout) {
    if (still_read(type, &layout->type)) return 1;
    if (writable && type->tp_setattro != PyObject_GenericSetAttr) return 0;
    Py_ssize_t offset[LAYOUT_FIELDS];
    for (int i = 0; i < n; i++) {
        PyObject *found;
        offset[i] = member_offset(type, names[i], &found);
        if (offset[i] < 0 || (writable && (((PyMemberDescrObject *)found)->d_member->flags & READONLY))) return 0;
    }
    layout->type = (SlotRead){type, type->tp_version_tag, 0};
    memcpy(layout->offset, offset, sizeof(Py_ssize_t) * (size_t)n);
    return 1;
}

#define MEMBER(obj, layout, i) (*(PyObject **)((char *)(obj) + (layout).offset[i]))

static inline void set_member(PyObject *obj, const Layout *layout, int i, PyObject *value) { /* as the member's __set__ */
    PyObject **slot = (PyObject **)((char *)obj + layout->offset[i]);
    PyObject *old = *slot;
    *slot = Py_NewRef(value);
    Py_XDECREF(old);
}

/* What obj.<name> finds on obj's type, read generically, where no instance dict shadows it (borrowed);
 * else NULL, with no error. Runs no Python code. */
static inline PyObject *type_attribute(PyObject *obj, PyObject *name) {
    PyTypeObject *type = Py_TYPE(obj);
    PyObject *found = type->tp_getattro == PyObject_GenericGetAttr ? _PyType_Lookup(type, name) : NULL;
    if (found == NULL) return NULL;
    PyObject **dict = _PyObject_GetDictPtr(obj);
    if (dict == NULL || *dict == NULL) return found;
    if (!PyDict_CheckExact(*dict)) return NULL;
    PyObject *own = PyDict_GetItemWithError(*dict, name); /* an exact str's hash: no Python code */
    PyErr_Clear();
    return own == NULL ? found : NULL;
}

/* Does obj.<name> give `expected` from obj's type (for a function: bound to obj, so calling it runs that
 * function's body)? Runs no Python code. */
static inline int resolves_to(PyObject *obj, PyObject *name, PyObject *expected) {
    return expected != NULL && type_attribute(obj, name) == expected;
}

/* 1 if an actor's outbox is a list; else 0, with the runtime's deliver's TypeError. */
static inline int outbox_is_list(PyObject *outbox) {
    if (PyList_Check(outbox)) return 1;
    PyErr_SetString(PyExc_TypeError, "an actor's outbox is a list");
    return 0;
}

/* `batch += outbox; outbox.clear()`, as the runtime's deliver moves an actor's outbox once it has
 * handled its messages: 0, or -1 with Python's error. */
static inline int outbox_to_batch(PyObject *outbox, PyObject *batch) {
    if (!outbox_is_list(outbox)) return -1;
    if (PyList_GET_SIZE(outbox) == 0) return 0;
    Py_ssize_t end = PyList_GET_SIZE(batch);
    if (PyList_SetSlice(batch, end, end, outbox) < 0) return -1;
    return PyList_SetSlice(outbox, 0, PyList_GET_SIZE(outbox), NULL);
}

#endif
