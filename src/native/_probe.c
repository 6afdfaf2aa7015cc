/* The probe's hearing of a share (protocols.probe.ProbeRule.hear, its reference) in C: on the trace's
 * first 5 minutes a server hears 16 M lowest-share notices, one from each neighbour it polls every
 * tick, and the Python frame of each was a seventh of the run (issue 58). The Python method stays
 * the reference and the handler wherever this module is not built; tests hold the two to the same
 * state and calls on any input.
 *
 * hear(rule, server, msg, now) -> None
 *   What ProbeRule.hear(rule, server, msg, now) does: the share msg carries for its user's task
 *   noted in rule.heard (a late copy of an older task ignored), the user put in rule.counting unless
 *   stuck, and the band's minimum kept (rule.low, rule.low_known), with server.republish() called
 *   when it changes.
 *
 * The fast path runs when every value it reads is plain: rule's `heard`, `counting`, `ticks`,
 * `low_known` and `low` and msg's `user`, `task` and `share` are `__slots__` members of their types
 * (found as the generic attribute lookup finds them, remembered by the type's version tag, as
 * nodes._engine's reads are), heard an exact dict whose entry for the user, if any, is an exact
 * 4-tuple (float, any, int, int), counting an exact set, the ints exact and of 64 bits, the floats
 * exact and not NaN, low None or an exact 3-tuple (float, int, any), low_known True or False, and the
 * module's STUCK_TICKS, read at each call as the reference reads it, an exact int. It checks all of
 * that before it changes anything, and it runs no Python code until the last step, the republish
 * call, which is the reference's last step too. Anything else goes, untouched, to the reference,
 * imported at first need. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_accelerator.h"

enum { HEARD, COUNTING, TICKS, LOW_KNOWN, LOW, RULE_FIELDS };
enum { USER, TASK, SHARE, MSG_FIELDS };
static const char *rule_names[RULE_FIELDS] = {"heard", "counting", "ticks", "low_known", "low"};
static const char *msg_names[MSG_FIELDS] = {"user", "task", "share"};
static PyObject *rule_strs[RULE_FIELDS], *msg_strs[MSG_FIELDS], *str_republish, *str_stuck;
static PyObject *probe_module, *reference; /* protocols.probe and ProbeRule.hear, at first need */

/* Where a type keeps each of a set of attributes, as `__slots__` members, remembered by its version tag. */
typedef struct {
    SlotRead type; /* the type remembered, and its tag (`offset` unused) */
    Py_ssize_t offset[RULE_FIELDS];
} Layout;

static Layout rule_layout, msg_layout;

/* 1 if objects of `type` read (and, `writable`, set) each of `names` as a `__slots__` member of
 * theirs, its offset in layout->offset; else 0. Nothing here runs Python code. */
static int members_of(PyTypeObject *type, PyObject *const *names, int n, int writable, Layout *layout) {
    if (still_read(type, &layout->type)) return 1;
    if (writable && type->tp_setattro != PyObject_GenericSetAttr) return 0;
    Py_ssize_t offset[RULE_FIELDS];
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

static int plain_int(PyObject *number, long long *out) { return PyLong_CheckExact(number) && int64_of(number, out); }

static int plain_float(PyObject *number, double *out) {
    if (!PyFloat_CheckExact(number)) return 0;
    *out = PyFloat_AS_DOUBLE(number);
    return *out == *out;
}

static void set_member(PyObject *obj, const Layout *layout, int i, PyObject *value) { /* as the member's __set__ */
    PyObject **slot = (PyObject **)((char *)obj + layout->offset[i]);
    PyObject *old = *slot;
    *slot = Py_NewRef(value);
    Py_XDECREF(old);
}

static PyObject *probe(void) { /* protocols.probe (borrowed), imported at first need */
    if (probe_module == NULL) probe_module = PyImport_ImportModule("drfemu.protocols.probe");
    return probe_module;
}

static PyObject *hand_off(PyObject *const *args, Py_ssize_t nargs) {
    if (reference == NULL) {
        PyObject *rule_class = probe() == NULL ? NULL : PyObject_GetAttrString(probe_module, "ProbeRule");
        reference = rule_class == NULL ? NULL : PyObject_GetAttrString(rule_class, "hear");
        Py_XDECREF(rule_class);
        if (reference == NULL) return NULL;
    }
    return PyObject_Vectorcall(reference, args, (size_t)nargs, NULL);
}

/* STUCK_TICKS as the reference's globals hold it, when an exact int of 64 bits: 1; else 0 (-1 on error). */
static int stuck_ticks(long long *out) {
    if (probe() == NULL) return -1;
    PyObject *globals = PyModule_Check(probe_module) ? PyModule_GetDict(probe_module) : NULL;
    PyObject *value = globals == NULL ? NULL : PyDict_GetItemWithError(globals, str_stuck);
    if (value == NULL) return PyErr_Occurred() ? -1 : 0;
    return plain_int(value, out);
}

static PyObject *hear(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) return hand_off(args, nargs);
    PyObject *rule = args[0], *server = args[1], *msg = args[2];
    if (!members_of(Py_TYPE(rule), rule_strs, RULE_FIELDS, 1, &rule_layout)
        || !members_of(Py_TYPE(msg), msg_strs, MSG_FIELDS, 0, &msg_layout))
        return hand_off(args, nargs);
    PyObject *user = MEMBER(msg, msg_layout, USER), *task = MEMBER(msg, msg_layout, TASK);
    PyObject *share = MEMBER(msg, msg_layout, SHARE), *heard = MEMBER(rule, rule_layout, HEARD);
    PyObject *counting = MEMBER(rule, rule_layout, COUNTING), *ticks = MEMBER(rule, rule_layout, TICKS);
    PyObject *low_known = MEMBER(rule, rule_layout, LOW_KNOWN), *low = MEMBER(rule, rule_layout, LOW);
    long long u, t, now_tick, stuck, since_tick, low_user = 0;
    double s, low_share = 0.0;
    if (user == NULL || task == NULL || share == NULL || heard == NULL || counting == NULL || ticks == NULL
        || low_known == NULL || low == NULL || !plain_int(user, &u) || !plain_int(task, &t) || !plain_float(share, &s)
        || !PyDict_CheckExact(heard) || !PySet_CheckExact(counting) || !plain_int(ticks, &now_tick)
        || (low_known != Py_True && low_known != Py_False))
        return hand_off(args, nargs);
    if (low != Py_None && !(PyTuple_CheckExact(low) && PyTuple_GET_SIZE(low) == 3
                            && plain_float(PyTuple_GET_ITEM(low, 0), &low_share)
                            && plain_int(PyTuple_GET_ITEM(low, 1), &low_user))) /* low[2] is never read */
        return hand_off(args, nargs);
    int stuck_read = stuck_ticks(&stuck);
    if (stuck_read <= 0) return stuck_read < 0 ? NULL : hand_off(args, nargs);
    PyObject *entry = PyDict_GetItemWithError(heard, user); /* borrowed; an exact int's hash runs no Python code */
    if (entry == NULL && PyErr_Occurred()) return NULL;
    PyObject *since = ticks;
    since_tick = now_tick;
    if (entry != NULL) { /* heard = (share, tick heard, tick it took it, task) */
        double entry_share;
        long long entry_since, entry_task;
        if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 4
            || !plain_float(PyTuple_GET_ITEM(entry, 0), &entry_share)
            || !plain_int(PyTuple_GET_ITEM(entry, 2), &entry_since) || !plain_int(PyTuple_GET_ITEM(entry, 3), &entry_task))
            return hand_off(args, nargs);
        if (t < entry_task) Py_RETURN_NONE; /* a late copy of an older task */
        if (entry_share == s) {
            since = PyTuple_GET_ITEM(entry, 2);
            since_tick = entry_since;
        }
    }
    long long waited;
    if (__builtin_sub_overflow(now_tick, since_tick, &waited)) return hand_off(args, nargs);
    int counts = waited <= stuck;
    /* Nothing read from here on can change: the tuples and ints are immutable, and nothing below
     * runs Python code until the republish. */
    PyObject *noted = PyTuple_Pack(4, share, ticks, since, task);
    if (noted == NULL) return NULL;
    int status = PyDict_SetItem(heard, user, noted); /* entry and since may be freed: neither is read again */
    Py_DECREF(noted);
    if (status < 0 || (counts && PySet_Add(counting, user) < 0)) return NULL;
    int republish = 0;
    if (low_known == Py_True) { /* keep the minimum up to date: only this user's entry changed this tick */
        if (low != Py_None && low_user == u) {
            set_member(rule, &rule_layout, LOW_KNOWN, Py_False);
            republish = 1;
        } else if (counts && (low == Py_None || (s != low_share ? s < low_share : u < low_user))) {
            /* (share, user, task) < low, as Python compares tuples: the users differ here */
            PyObject *lowest = PyTuple_Pack(3, share, user, task);
            if (lowest == NULL) return NULL;
            set_member(rule, &rule_layout, LOW, lowest);
            Py_DECREF(lowest);
            republish = 1;
        }
    }
    if (republish) {
        PyObject *done = PyObject_CallMethodNoArgs(server, str_republish);
        if (done == NULL) return NULL;
        Py_DECREF(done);
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"hear", (PyCFunction)(void (*)(void))hear, METH_FASTCALL,
     "hear(rule, server, msg, now): ProbeRule.hear(rule, server, msg, now), the same state and calls."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "protocols._probe", NULL, -1, methods};

PyMODINIT_FUNC PyInit__probe(void) {
    if (main_interpreter_only("drfemu.protocols._probe") < 0) return NULL;
    for (int i = 0; i < RULE_FIELDS; i++)
        if ((rule_strs[i] = PyUnicode_InternFromString(rule_names[i])) == NULL) return NULL;
    for (int i = 0; i < MSG_FIELDS; i++)
        if ((msg_strs[i] = PyUnicode_InternFromString(msg_names[i])) == NULL) return NULL;
    if ((str_republish = PyUnicode_InternFromString("republish")) == NULL
        || (str_stuck = PyUnicode_InternFromString("STUCK_TICKS")) == NULL)
        return NULL;
    return PyModule_Create(&module);
}
