/* What every C accelerator of drfemu shares (src/native/_engine.c, src/native/_cyclon.c,
 * src/native/_exchange.c, src/native/_rank.c, src/native/_gini.c, src/native/_cycle.c); setup.py puts src/native/ on
 * their include path. */
#ifndef DRFEMU_ACCELERATOR_H
#define DRFEMU_ACCELERATOR_H

#include <Python.h>

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

#endif
