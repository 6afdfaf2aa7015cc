/* The stock generator test shared by src/native/_cyclon.c and src/native/_plane.c.
 *
 * A draw is *stock* when `draw.random` is random.Random's own C method bound to it:
 * random.Random or a subclass that replaces neither `random` nor attribute lookup, with no
 * instance attribute `random`. Its draw runs no Python code and returns a float in [0, 1), so a
 * fast path may index with it directly; any other draw goes to the Python reference. The test
 * itself runs no Python code. `stock_draw_init()` runs once, at import. */
#ifndef DRFEMU_STOCK_DRAW_H
#define DRFEMU_STOCK_DRAW_H

#include <Python.h>

static PyObject *stock_str_random;      /* "random" */
static PyObject *stock_random_method;   /* random.Random's `random`, as its class finds it */
static PyCFunction stock_random;        /* the C function behind it */

static int stock_draw_init(void) {
    stock_str_random = PyUnicode_InternFromString("random");
    if (stock_str_random == NULL) return -1;
    PyObject *module = PyImport_ImportModule("random");
    if (module == NULL) return -1;
    PyObject *random_class = PyObject_GetAttrString(module, "Random");
    Py_DECREF(module);
    if (random_class == NULL) return -1;
    PyObject *method = PyType_Check(random_class) ? _PyType_Lookup((PyTypeObject *)random_class, stock_str_random)
                                                  : NULL;
    Py_DECREF(random_class);
    if (method == NULL || !Py_IS_TYPE(method, &PyMethodDescr_Type)
        || ((PyMethodDescrObject *)method)->d_method->ml_flags != METH_NOARGS) {
        PyErr_SetString(PyExc_ImportError, "random.Random.random is not the C method the accelerators expect");
        return -1;
    }
    stock_random_method = Py_NewRef(method);
    stock_random = ((PyMethodDescrObject *)method)->d_method->ml_meth;
    return 0;
}

/* 1 when `draw` is stock, 0 when not, -1 on error. Its instance dict, if it has one, is read
 * (and made, the first time) without running any Python code. */
static int is_stock_draw(PyObject *draw) {
    PyTypeObject *type = Py_TYPE(draw);
    if (type->tp_getattro != PyObject_GenericGetAttr || _PyType_Lookup(type, stock_str_random) != stock_random_method)
        return 0;
    if (type->tp_dictoffset == 0) return 1; /* no instance attributes: _random.Random itself */
    PyObject *dict = PyObject_GenericGetDict(draw, NULL);
    if (dict == NULL) return -1;
    PyObject *own = PyDict_Check(dict) ? PyDict_GetItemWithError(dict, stock_str_random) : NULL;
    int stock = PyDict_Check(dict) && own == NULL && !PyErr_Occurred();
    Py_DECREF(dict);
    return PyErr_Occurred() ? -1 : stock;
}

/* What `is_stock_draw_seen` remembers of the one draw it last found stock: its type by the type's
 * version tag, which any change to the type or a base replaces, and its instance dict (NULL: none)
 * by the dict's version tag (PEP 509: unique to the dict and its contents, replaced on every change,
 * never given again). Zeroed, it remembers nothing. */
typedef struct {
    PyTypeObject *type; /* not references: only compared, each with its tag */
    unsigned int type_version;
    PyObject *dict;
    uint64_t dict_version;
} StockSeen;

/* is_stock_draw(draw), the same answer, for a caller that asks again and again of one draw (a peer's
 * stream, twice a peer-round): while neither the type nor the instance dict has changed since `seen`
 * found the draw stock, it is stock still, and the test is two comparisons. On Python 3.12 and later,
 * where a dict's version tag is deprecated, it is is_stock_draw. */
static inline int is_stock_draw_seen(PyObject *draw, StockSeen *seen) {
#if PY_VERSION_HEX < 0x030C0000
    PyTypeObject *type = Py_TYPE(draw);
    PyObject **where = type->tp_dictoffset == 0 ? NULL : _PyObject_GetDictPtr(draw);
    PyObject *dict = where == NULL ? NULL : *where;
    if (type == seen->type && (type->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG)
        && type->tp_version_tag == seen->type_version && (type->tp_dictoffset == 0 || where != NULL) && dict == seen->dict
        && (dict == NULL || ((PyDictObject *)dict)->ma_version_tag == seen->dict_version))
        return 1;
    seen->type = NULL;
    int stock = is_stock_draw(draw);
    if (stock != 1 || !(type->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) || type->tp_version_tag == 0) return stock;
    dict = where == NULL ? NULL : *where; /* the instance dict is_stock_draw read, in the place found above */
    if (type->tp_dictoffset != 0 && (dict == NULL || !PyDict_CheckExact(dict))) return stock;
    *seen = (StockSeen){type, type->tp_version_tag, dict, dict == NULL ? 0 : ((PyDictObject *)dict)->ma_version_tag};
    return stock;
#else
    (void)seen;
    return is_stock_draw(draw);
#endif
}

/* The draw of a stock `draw`: 0 with *r in [0, 1), -1 on error. */
static int stock_uniform(PyObject *draw, double *r) {
    PyObject *value = stock_random(draw, NULL);
    if (value == NULL) return -1;
    int in_range = PyFloat_CheckExact(value) && PyFloat_AS_DOUBLE(value) >= 0.0 && PyFloat_AS_DOUBLE(value) < 1.0;
    *r = in_range ? PyFloat_AS_DOUBLE(value) : 0.0;
    Py_DECREF(value);
    if (!in_range) {
        PyErr_SetString(PyExc_SystemError, "random.Random.random() returned a value outside [0, 1)");
        return -1;
    }
    return 0;
}

#endif
