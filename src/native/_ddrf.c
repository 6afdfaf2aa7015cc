/* A DDRF server's tick (protocols.ddrf.DdrfRule.on_tick, its reference) in C: on the trace hour
 * under `ddrf-random` a home ticks about 3.5 M times, and nearly every tick allocates nothing and
 * sends the request it made before to each neighbour; the frames of that tick (the node's, the
 * rule's, HomeUsers.lowest's, min's and each send's) were about 8 % of the run (issue 58).
 *
 * tick_method(cls) -> the method a DDRF server class has as `on_tick` (nodes.server.server_class)
 *   What ServerNode.on_tick(server, now) does, `server.rule.on_tick(server, now)`. Where the rule's
 *   `on_tick` is DdrfRule.on_tick (read as Python reads it: its type's, not shadowed), or
 *   DdrfGradientRule.on_tick on a rule of exactly that class that is frozen (whose tick then is
 *   DdrfRule's), and the tick is a plain one, it does what the reference does without running any
 *   Python code: the round counted and the cached request appended, as `(neighbour, request)`, to
 *   the outbox once per neighbour. A plain tick is one where every value the reference reads is
 *   plain — the rule's `reported`, `_round` and `_request`, the server's `homes`, `neighbors` and
 *   `outbox`, HomeUsers' `records` and each HomeUser's fields are `__slots__` members (found as the
 *   generic lookup finds them, remembered by the type's version tag), the homes and their records
 *   of exactly the classes of protocols.homes, whose `__bool__`, `lowest` and `idle` are the
 *   references', the server's `send` Actor's own, `reported` an exact dict of exact floats,
 *   `_round` an exact int in [0, 2**63 - 1), STALE_ROUNDS an exact positive int, the fields that
 *   `lowest` reads exact bools and floats — and where the reference would do nothing else: a user is
 *   homed, the round is not one that forgets silent askers, no user is chosen to allocate for, and
 *   the request is made. It checks all of that before it changes anything; any other tick is the
 *   reference's, called as ServerNode.on_tick calls it. The references are imported at first need.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_accelerator.h"

enum { R_REPORTED, R_ROUND, R_REQUEST, RULE_FIELDS };
enum { S_HOMES, S_NEIGHBORS, S_OUTBOX, SERVER_FIELDS };
enum { U_ACTIVE, U_SATURATED, U_SHARE, U_PENDING, U_BUSY, USER_FIELDS };
static const char *rule_names[RULE_FIELDS] = {"reported", "_round", "_request"};
static const char *server_names[SERVER_FIELDS] = {"homes", "neighbors", "outbox"};
static const char *user_names[USER_FIELDS] = {"active", "saturated", "share", "pending", "busy"};
static PyObject *rule_strs[RULE_FIELDS], *server_strs[SERVER_FIELDS], *user_strs[USER_FIELDS];
static PyObject *str_rule, *str_on_tick, *str_send, *str_stale, *str_bool, *str_lowest, *str_idle, *str_records,
    *str_frozen;
static Layout rule_layout, server_layout, user_layout, records_layout, frozen_layout;

_Static_assert(RULE_FIELDS <= LAYOUT_FIELDS && SERVER_FIELDS <= LAYOUT_FIELDS && USER_FIELDS <= LAYOUT_FIELDS,
               "a layout holds every field it reads");

/* The references, at first need: DdrfRule.on_tick, DdrfGradientRule and its on_tick, HomeUsers and
 * HomeUser with their __bool__, lowest and idle, Actor's send and where Actor keeps `outbox`. */
static PyObject *ddrf_tick, *gradient_class, *gradient_tick, *homes_class, *user_class, *bool_ref, *lowest_ref,
    *idle_ref, *send_descriptor;
static Py_ssize_t actor_outbox = -1;

static PyObject *attribute_of(const char *module_name, const char *name) { /* module.name, a new reference */
    PyObject *module = PyImport_ImportModule(module_name);
    PyObject *value = module == NULL ? NULL : PyObject_GetAttrString(module, name);
    Py_XDECREF(module);
    return value;
}

static int references_loaded(void) {
    if (ddrf_tick != NULL) return 0;
    PyObject *rule_class = attribute_of("drfemu.protocols.ddrf", "DdrfRule");
    PyObject *gradient = rule_class == NULL ? NULL : attribute_of("drfemu.protocols.ddrf", "DdrfGradientRule");
    PyObject *homes = gradient == NULL ? NULL : attribute_of("drfemu.protocols.homes", "HomeUsers");
    PyObject *user = homes == NULL ? NULL : attribute_of("drfemu.protocols.homes", "HomeUser");
    PyObject *actor = user == NULL ? NULL : attribute_of("drfemu.nodes.actor", "Actor");
    int ok = actor != NULL && PyType_Check(rule_class) && PyType_Check(gradient) && PyType_Check(homes)
             && PyType_Check(user) && PyType_Check(actor);
    PyObject *send = ok ? _PyType_Lookup((PyTypeObject *)actor, str_send) : NULL; /* borrowed */
    PyObject *found[6] = {NULL};
    if (send != NULL) {
        PyObject *owners[6] = {rule_class, gradient, homes, homes, user, NULL};
        PyObject *names[6] = {str_on_tick, str_on_tick, str_bool, str_lowest, str_idle, NULL};
        for (int i = 0; owners[i] != NULL; i++)
            if ((found[i] = _PyType_Lookup((PyTypeObject *)owners[i], names[i])) == NULL) send = NULL;
    }
    if (send == NULL) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "drfemu.protocols._ddrf: a reference is missing");
        Py_XDECREF(rule_class);
        Py_XDECREF(gradient);
        Py_XDECREF(homes);
        Py_XDECREF(user);
        Py_XDECREF(actor);
        return -1;
    }
    send_descriptor = Py_NewRef(send);
    actor_outbox = member_offset((PyTypeObject *)actor, server_strs[S_OUTBOX], NULL); /* -1: no fast tick */
    gradient_tick = Py_NewRef(found[1]);
    bool_ref = Py_NewRef(found[2]);
    lowest_ref = Py_NewRef(found[3]);
    idle_ref = Py_NewRef(found[4]);
    gradient_class = gradient;
    homes_class = homes;
    user_class = user;
    Py_DECREF(actor);
    Py_DECREF(rule_class);
    ddrf_tick = Py_NewRef(found[0]);
    return 0;
}

static int plain_float(PyObject *number, double *out) {
    if (!PyFloat_CheckExact(number)) return 0;
    *out = PyFloat_AS_DOUBLE(number);
    return 1;
}

static int plain_bool(PyObject *value, int *out) {
    if (value != Py_True && value != Py_False) return 0;
    *out = value == Py_True;
    return 1;
}

/* rule.STALE_ROUNDS, a class attribute that is an exact positive int of 64 bits: 1; else 0. */
static int stale_rounds(PyObject *rule, long long *out) {
    PyObject *value = type_attribute(rule, str_stale);
    return value != NULL && PyLong_CheckExact(value) && int64_of(value, out) && *out > 0;
}

/* `homes.lowest(idle=True, at_most=bound) is None`, read as the reference reads it: 1 if no user is
 * chosen, 0 if one is or a value it reads is not plain (the tick is then the reference's). Some user
 * is chosen exactly when one is active, not saturated, within the bound and idle: the first such
 * user meets `best is None` too, and the search stops there. */
static int none_chosen(PyObject *records, double bound) {
    PyObject *key, *record;
    Py_ssize_t pos = 0;
    while (PyDict_Next(records, &pos, &key, &record)) {
        if (!Py_IS_TYPE(record, (PyTypeObject *)user_class)
            || !members_of(Py_TYPE(record), user_strs, USER_FIELDS, 0, &user_layout))
            return 0;
        int active, saturated, busy;
        double share;
        PyObject *value = MEMBER(record, user_layout, U_ACTIVE);
        if (value == NULL || !plain_bool(value, &active)) return 0;
        if (!active) continue;
        value = MEMBER(record, user_layout, U_SATURATED);
        if (value == NULL || !plain_bool(value, &saturated)) return 0;
        if (saturated) continue;
        value = MEMBER(record, user_layout, U_SHARE);
        if (value == NULL || !plain_float(value, &share)) return 0;
        if (!(share <= bound)) continue;
        if (!resolves_to(record, str_idle, idle_ref)) return 0; /* record.idle(): pending is not None and not busy */
        PyObject *pending = MEMBER(record, user_layout, U_PENDING);
        if (pending == NULL) return 0;
        if (pending == Py_None) continue;
        value = MEMBER(record, user_layout, U_BUSY);
        if (value == NULL || !plain_bool(value, &busy) || !busy) return 0;
    }
    return 1;
}

/* DdrfRule.on_tick(rule, server, now) where it is a plain tick (above): 1, done; 0, nothing changed
 * (the reference's tick); -1 on error. */
static int plain_tick(PyObject *rule, PyObject *server) {
    PyTypeObject *type = Py_TYPE(server);
    if (actor_outbox < 0 || !members_of(Py_TYPE(rule), rule_strs, RULE_FIELDS, 1, &rule_layout)
        || type->tp_dictoffset != 0 || !members_of(type, server_strs, SERVER_FIELDS, 0, &server_layout)
        || server_layout.offset[S_OUTBOX] != actor_outbox || type->tp_getattro != PyObject_GenericGetAttr
        || _PyType_Lookup(type, str_send) != send_descriptor)
        return 0;
    PyObject *reported = MEMBER(rule, rule_layout, R_REPORTED), *round = MEMBER(rule, rule_layout, R_ROUND);
    PyObject *request = MEMBER(rule, rule_layout, R_REQUEST), *homes = MEMBER(server, server_layout, S_HOMES);
    PyObject *neighbors = MEMBER(server, server_layout, S_NEIGHBORS), *outbox = MEMBER(server, server_layout, S_OUTBOX);
    long long rounds, stale;
    if (reported == NULL || round == NULL || request == NULL || request == Py_None || homes == NULL
        || neighbors == NULL || outbox == NULL || !PyDict_CheckExact(reported) || !PyLong_CheckExact(round)
        || !int64_of(round, &rounds) || rounds < 0 || rounds == LLONG_MAX || !stale_rounds(rule, &stale)
        || (rounds + 1) % stale == 0 || !PyList_CheckExact(neighbors) || !PyList_CheckExact(outbox))
        return 0;
    /* `not homes` and `homes.lowest(...)`: HomeUsers' own, on its records */
    if (!Py_IS_TYPE(homes, (PyTypeObject *)homes_class) || _PyType_Lookup(Py_TYPE(homes), str_bool) != bool_ref
        || !resolves_to(homes, str_lowest, lowest_ref)
        || !members_of(Py_TYPE(homes), &str_records, 1, 0, &records_layout))
        return 0;
    PyObject *records = MEMBER(homes, records_layout, 0);
    if (records == NULL || !PyDict_CheckExact(records) || PyDict_GET_SIZE(records) == 0) return 0;
    double bound = Py_HUGE_VAL, value; /* min(reported.values(), default=INF): the first of the least */
    PyObject *key, *item;
    Py_ssize_t pos = 0;
    int first = 1;
    while (PyDict_Next(reported, &pos, &key, &item)) {
        if (!plain_float(item, &value)) return 0;
        if (first || value < bound) bound = value;
        first = 0;
    }
    if (!none_chosen(records, bound)) return 0;
    /* Nothing below runs Python code: a new int, the old one freed, tuples appended to a list. */
    PyObject *next = PyLong_FromLongLong(rounds + 1);
    if (next == NULL) return -1;
    set_member(rule, &rule_layout, R_ROUND, next);
    Py_DECREF(next);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(neighbors); i++) { /* server.send(neighbour, request) */
        PyObject *pair = PyTuple_Pack(2, PyList_GET_ITEM(neighbors, i), request);
        int status = pair == NULL ? -1 : PyList_Append(outbox, pair);
        Py_XDECREF(pair);
        if (status < 0) return -1;
    }
    return 1;
}

/* Is rule.on_tick, as Python would read it, DdrfRule's tick: DdrfRule.on_tick itself, or
 * DdrfGradientRule.on_tick on a frozen rule of exactly that class (whose body then is
 * `super().on_tick(server, now)`, DdrfRule's while DdrfGradientRule derives from it alone)? */
static int ddrf_ticks(PyObject *rule) {
    if (resolves_to(rule, str_on_tick, ddrf_tick)) return 1;
    PyTypeObject *type = Py_TYPE(rule);
    if (type != (PyTypeObject *)gradient_class || !resolves_to(rule, str_on_tick, gradient_tick)
        || PyTuple_GET_SIZE(type->tp_mro) < 2
        || _PyType_Lookup((PyTypeObject *)PyTuple_GET_ITEM(type->tp_mro, 1), str_on_tick) != ddrf_tick
        || !members_of(type, &str_frozen, 1, 0, &frozen_layout))
        return 0;
    return MEMBER(rule, frozen_layout, 0) == Py_True;
}

/* A DDRF server's `on_tick(now)`: ServerNode.on_tick, `self.rule.on_tick(self, now)`. */
static PyObject *node_tick(PyObject *server, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 1) {
        PyErr_Format(PyExc_TypeError, "on_tick() takes 1 argument (now), %zd given", nargs);
        return NULL;
    }
    if (references_loaded() < 0) return NULL;
    PyObject *rule = PyObject_GetAttr(server, str_rule);
    if (rule == NULL) return NULL;
    int status = ddrf_ticks(rule) ? plain_tick(rule, server) : 0;
    if (status == 0) {
        PyObject *method = PyObject_GetAttr(rule, str_on_tick);
        PyObject *call[2] = {server, args[0]};
        PyObject *done = method == NULL ? NULL : PyObject_Vectorcall(method, call, 2, NULL);
        Py_XDECREF(method);
        status = done == NULL ? -1 : 1;
        Py_XDECREF(done);
    }
    Py_DECREF(rule);
    if (status < 0) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef node_tick_def = {"on_tick", (PyCFunction)(void (*)(void))node_tick, METH_FASTCALL,
                                    "The server's tick: its rule's on_tick (DDRF's in C)."};

static PyObject *tick_method(PyObject *Py_UNUSED(module), PyObject *cls) {
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "tick_method(cls): cls is a class");
        return NULL;
    }
    return PyDescr_NewMethod((PyTypeObject *)cls, &node_tick_def);
}

static PyMethodDef methods[] = {
    {"tick_method", tick_method, METH_O,
     "tick_method(cls): the `on_tick` method of a DDRF server class, ServerNode.on_tick with DdrfRule.on_tick in C."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "protocols._ddrf", NULL, -1, methods};

static int interned(PyObject **out, const char *const *texts, int n) {
    for (int i = 0; i < n; i++)
        if ((out[i] = PyUnicode_InternFromString(texts[i])) == NULL) return -1;
    return 0;
}

PyMODINIT_FUNC PyInit__ddrf(void) {
    if (main_interpreter_only("drfemu.protocols._ddrf") < 0) return NULL;
    if (interned(rule_strs, rule_names, RULE_FIELDS) < 0 || interned(server_strs, server_names, SERVER_FIELDS) < 0
        || interned(user_strs, user_names, USER_FIELDS) < 0)
        return NULL;
    PyObject **names[] = {&str_rule, &str_on_tick, &str_send, &str_stale, &str_bool, &str_lowest, &str_idle,
                          &str_records, &str_frozen};
    const char *texts[] = {"rule", "on_tick", "send", "STALE_ROUNDS", "__bool__", "lowest", "idle", "records",
                           "frozen"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if ((*names[i] = PyUnicode_InternFromString(texts[i])) == NULL) return NULL;
    return PyModule_Create(&module);
}
