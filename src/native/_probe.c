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
 * imported at first need.
 *
 * tick_method(cls) -> the method a probe server class has as `on_tick` (nodes.server.server_class)
 *   What ServerNode.on_tick(server, now) does, `server.rule.on_tick(server, now)`, without the
 *   node's frame; and while the rule's `on_tick` is ProbeRule.on_tick (its type's, the rule without an
 *   instance dict), that method's body without its frame: every server ticks every tick, 3.4 M ticks
 *   on the trace's first 5 minutes. The body is the reference's own operations in its order —
 *   attribute reads and writes, `+=`, `==`, `%`, truth, iteration, method calls — each through the
 *   C API call that the bytecode makes, so any rule or server, hostile or not, gets Python's answer
 *   or exception. One call is shortened where the result is the same: `server.republish()`, where
 *   it is ServerNode.republish (the server's type's, no instance dict), is that method's body,
 *   `server.published.clear()`.
 *
 * replies_of(load_replies, load_reply, lowest_notice, _lowest) -> the poll's answer, `answer(rule, server)`
 *   What ProbeRule.load_replies(rule, server) returns and does: every server answers each neighbour's load
 *   request once a tick (3.4 M answers on the trace's first 5 minutes), through three Python methods and two
 *   functions. ProbeRule's class body passes its four functions; the answer keeps them, their module's globals,
 *   and what those globals held under the names the bodies read (cpu_load, _same_minimum, LoadReply,
 *   LowestShare, the two classes with their version tags). It does what the reference does, a method call at
 *   a time: where rule.load_reply resolves to the function kept (its type's, not in the instance dict), the
 *   globals still hold what was kept, and every value the body reads is plain (mode the exact str "cpu",
 *   server.free[0] and server.capacity[0] exact floats of an exact list or tuple, said_load None or a LoadReply
 *   with an exact float load; `__slots__` members, remembered as the hearing remembers them), it runs that
 *   body; otherwise it calls rule.load_reply(server) as Python does. The band is read and tested likewise,
 *   and rule.lowest_notice() with its `_lowest()` where they resolve to the functions kept and the table they
 *   read is plain (exact ints of 64 bits, floats that are not NaN, exact tuples, dict and set; the module's
 *   HEARD_TICKS and STUCK_TICKS exact ints). Each body checks every value before it changes anything, the
 *   only Python code it runs is the kept classes' constructors, and the checks are made again after any. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_accelerator.h"

enum { HEARD, COUNTING, TICKS, LOW_KNOWN, LOW, RULE_FIELDS };
enum { USER, TASK, SHARE, MSG_FIELDS };
static const char *rule_names[RULE_FIELDS] = {"heard", "counting", "ticks", "low_known", "low"};
static const char *msg_names[MSG_FIELDS] = {"user", "task", "share"};
static PyObject *rule_strs[RULE_FIELDS], *msg_strs[MSG_FIELDS], *str_republish, *str_stuck;
static PyObject *probe_module, *reference; /* protocols.probe and ProbeRule.hear, at first need */

_Static_assert(RULE_FIELDS <= LAYOUT_FIELDS && MSG_FIELDS <= LAYOUT_FIELDS, "a layout holds every field it reads");

static Layout rule_layout, msg_layout;

static int plain_int(PyObject *number, long long *out) { return PyLong_CheckExact(number) && int64_of(number, out); }

static int plain_float(PyObject *number, double *out) {
    if (!PyFloat_CheckExact(number)) return 0;
    *out = PyFloat_AS_DOUBLE(number);
    return *out == *out;
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

/* -- the tick ----------------------------------------------------------------------------------- */

static PyObject *str_rule, *str_on_tick, *str_ticks, *str_low_known, *str_poll_every, *str_poll, *str_neighbors,
    *str_send, *str_stored, *str_offer, *str_published, *str_clear, *one;
static PyObject *tick_reference, *republish_reference; /* ProbeRule.on_tick, ServerNode.republish: at first need */
static PyObject *send_descriptor; /* Actor's own `send` (nodes._engine's C method where built), at first need */

enum { T_TICKS, T_LOW_KNOWN, T_POLL_EVERY, T_POLL, T_STORED, TICK_FIELDS };
enum { S_PUBLISHED, S_NEIGHBORS, S_OUTBOX, SERVER_FIELDS };
static PyObject *tick_strs[TICK_FIELDS], *server_strs[SERVER_FIELDS];
static Layout tick_layout, server_layout;
static Py_ssize_t actor_outbox = -1; /* where Actor keeps `outbox`, the slot its C `send` appends to */

_Static_assert(TICK_FIELDS <= LAYOUT_FIELDS && SERVER_FIELDS <= LAYOUT_FIELDS, "a layout holds every field it reads");

/* `obj.<name>`, as Python reads it (new reference; NULL on error), and in *is_it whether it is the function
 * `expected` bound to obj: calling it then runs that function's body with obj as self. */
static PyObject *method_of(PyObject *obj, PyObject *name, PyObject *expected, int *is_it) {
    PyObject *method = PyObject_GetAttr(obj, name);
    *is_it = method != NULL && PyMethod_Check(method) && PyMethod_GET_FUNCTION(method) == expected
             && PyMethod_GET_SELF(method) == obj;
    return method;
}

static int references_loaded(void) {
    if (tick_reference != NULL) return 0;
    PyObject *rule_class = probe() == NULL ? NULL : PyObject_GetAttrString(probe_module, "ProbeRule");
    PyObject *servers = rule_class == NULL ? NULL : PyImport_ImportModule("drfemu.nodes.server");
    PyObject *node_class = servers == NULL ? NULL : PyObject_GetAttrString(servers, "ServerNode");
    PyObject *republish = node_class == NULL ? NULL : PyObject_GetAttr(node_class, str_republish);
    PyObject *on_tick = republish == NULL ? NULL : PyObject_GetAttr(rule_class, str_on_tick);
    PyObject *actors = on_tick == NULL ? NULL : PyImport_ImportModule("drfemu.nodes.actor");
    PyObject *actor_class = actors == NULL ? NULL : PyObject_GetAttrString(actors, "Actor");
    PyObject *send = actor_class == NULL || !PyType_Check(actor_class) ? NULL
                     : _PyType_Lookup((PyTypeObject *)actor_class, str_send); /* borrowed */
    Py_XDECREF(rule_class);
    Py_XDECREF(servers);
    Py_XDECREF(node_class);
    Py_XDECREF(actors);
    if (send == NULL) {
        if (send == NULL && !PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "drfemu.nodes.actor.Actor has no send");
        Py_XDECREF(actor_class);
        Py_XDECREF(republish);
        Py_XDECREF(on_tick);
        return -1;
    }
    send_descriptor = Py_NewRef(send);
    actor_outbox = member_offset((PyTypeObject *)actor_class, server_strs[S_OUTBOX], NULL); /* -1: no fast tail */
    Py_DECREF(actor_class);
    republish_reference = republish;
    tick_reference = on_tick;
    return 0;
}

static PyObject *call_method(PyObject *obj, PyObject *name, PyObject *arg1, PyObject *arg2) { /* obj.name(args…) */
    PyObject *args[3] = {obj, arg1, arg2};
    return PyObject_VectorcallMethod(name, args, (size_t)(1 + (arg1 != NULL) + (arg2 != NULL)), NULL);
}

static PyObject *call_method_object(PyObject *method, PyObject *arg1, PyObject *arg2) { /* method(arg1, arg2) */
    PyObject *args[2] = {arg1, arg2};
    return PyObject_Vectorcall(method, args, 2, NULL);
}

static int done(PyObject *result) { /* a statement's call: its result dropped; 0, or -1 on error */
    if (result == NULL) return -1;
    Py_DECREF(result);
    return 0;
}

/* `server.republish()`: ServerNode.republish's body where it is that method. */
static int republish(PyObject *server) {
    int is_it;
    PyObject *method = method_of(server, str_republish, republish_reference, &is_it);
    if (method == NULL) return -1;
    if (!is_it) {
        int status = done(PyObject_CallNoArgs(method));
        Py_DECREF(method);
        return status;
    }
    Py_DECREF(method);
    PyObject *published = PyObject_GetAttr(server, str_published);
    if (published == NULL) return -1;
    int status = 0;
    if (PyDict_CheckExact(published))
        PyDict_Clear(published);
    else
        status = done(call_method(published, str_clear, NULL, NULL));
    Py_DECREF(published);
    return status;
}

static int truth_of(PyObject *value) { /* the truth of a new reference, which it drops; -1 on error */
    if (value == NULL) return -1;
    int truth = PyObject_IsTrue(value);
    Py_DECREF(value);
    return truth;
}

static int attribute_equals_one(PyObject *obj, PyObject *name) { /* `obj.<name> == 1`, its truth */
    PyObject *value = PyObject_GetAttr(obj, name);
    if (value == NULL) return -1;
    int truth = truth_of(PyObject_RichCompare(value, one, Py_EQ));
    Py_DECREF(value);
    return truth;
}

/* -- ProbeRule.on_tick's body: its head (the tick counted, the republish) and its tail (the polls, the offer),
 * each run on remembered `__slots__` members where every value it reads is plain (1), else 0 having changed
 * nothing, and then through the C API operation for operation. */


static int plain_server(PyObject *server) { /* its fields are slots, republish and send the engine's own */
    PyTypeObject *type = Py_TYPE(server);
    return type->tp_dictoffset == 0 && members_of(type, server_strs, SERVER_FIELDS, 0, &server_layout)
           && server_layout.offset[S_OUTBOX] == actor_outbox && _PyType_Lookup(type, str_republish) == republish_reference
           && _PyType_Lookup(type, str_send) == send_descriptor;
}

static int head_fast(PyObject *rule, PyObject *server) {
    if (!members_of(Py_TYPE(rule), tick_strs, TICK_FIELDS, 1, &tick_layout) || !plain_server(server)) return 0;
    PyObject *ticks = MEMBER(rule, tick_layout, T_TICKS), *published = MEMBER(server, server_layout, S_PUBLISHED);
    long long tick;
    if (ticks == NULL || published == NULL || !plain_int(ticks, &tick) || tick == LLONG_MAX
        || !PyDict_CheckExact(published))
        return 0;
    PyObject *next = PyLong_FromLongLong(tick + 1);
    if (next == NULL) return -1;
    set_member(rule, &tick_layout, T_TICKS, next); /* may free the old int only: no Python code */
    Py_DECREF(next);
    set_member(rule, &tick_layout, T_LOW_KNOWN, Py_False);
    Py_INCREF(published);
    PyDict_Clear(published); /* ServerNode.republish's body; its values' deallocation may run Python code */
    Py_DECREF(published);
    return 1;
}

static int tail_fast(PyObject *rule, PyObject *server) {
    if (!members_of(Py_TYPE(rule), tick_strs, TICK_FIELDS, 1, &tick_layout) || !plain_server(server)) return 0;
    PyObject *ticks = MEMBER(rule, tick_layout, T_TICKS), *every = MEMBER(rule, tick_layout, T_POLL_EVERY);
    PyObject *poll = MEMBER(rule, tick_layout, T_POLL), *stored = MEMBER(rule, tick_layout, T_STORED);
    PyObject *neighbors = MEMBER(server, server_layout, S_NEIGHBORS), *outbox = MEMBER(server, server_layout, S_OUTBOX);
    long long tick, period;
    if (ticks == NULL || every == NULL || stored == NULL || neighbors == NULL || outbox == NULL
        || !plain_int(ticks, &tick) || !plain_int(every, &period) || period < 1 || tick < 0
        || !PyDict_CheckExact(stored) || !PyList_CheckExact(neighbors) || !PyList_CheckExact(outbox))
        return 0;
    if (period == 1 || tick % period == 1) {
        if (poll == NULL) return 0; /* the reference's AttributeError */
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(neighbors); i++) { /* actor_send's append: no Python code */
            PyObject *pair = PyTuple_Pack(2, PyList_GET_ITEM(neighbors, i), poll);
            int status = pair == NULL ? -1 : PyList_Append(outbox, pair);
            Py_XDECREF(pair);
            if (status < 0) return -1;
        }
    }
    if (PyDict_GET_SIZE(stored) == 0) return 1;
    return done(call_method(rule, str_offer, server, NULL)) < 0 ? -1 : 1;
}

static int head_generic(PyObject *rule, PyObject *server) {
    PyObject *ticks = PyObject_GetAttr(rule, str_ticks); /* self.ticks += 1 */
    if (ticks == NULL) return -1;
    PyObject *next = PyNumber_InPlaceAdd(ticks, one);
    Py_DECREF(ticks);
    if (next == NULL) return -1;
    int status = PyObject_SetAttr(rule, str_ticks, next);
    Py_DECREF(next);
    if (status < 0 || PyObject_SetAttr(rule, str_low_known, Py_False) < 0 || republish(server) < 0) return -1;
    return 0;
}

static int tail_generic(PyObject *rule, PyObject *server) {
    int polls = attribute_equals_one(rule, str_poll_every); /* self.poll_every == 1 or self.ticks % self.poll_every == 1 */
    if (polls == 0) {
        PyObject *now_ticks = PyObject_GetAttr(rule, str_ticks);
        PyObject *every = now_ticks == NULL ? NULL : PyObject_GetAttr(rule, str_poll_every);
        PyObject *left = every == NULL ? NULL : PyNumber_Remainder(now_ticks, every);
        Py_XDECREF(now_ticks);
        Py_XDECREF(every);
        if (left == NULL) return -1;
        polls = truth_of(PyObject_RichCompare(left, one, Py_EQ));
        Py_DECREF(left);
    }
    if (polls < 0) return -1;
    int status = 0;
    if (polls) {
        PyObject *poll = PyObject_GetAttr(rule, str_poll);
        PyObject *neighbors = poll == NULL ? NULL : PyObject_GetAttr(server, str_neighbors);
        PyObject *each = neighbors == NULL ? NULL : PyObject_GetIter(neighbors);
        Py_XDECREF(neighbors);
        if (each == NULL) {
            Py_XDECREF(poll);
            return -1;
        }
        PyObject *neighbour;
        while (status == 0 && (neighbour = PyIter_Next(each)) != NULL) {
            status = done(call_method(server, str_send, neighbour, poll));
            Py_DECREF(neighbour);
        }
        Py_DECREF(each);
        Py_DECREF(poll);
        if (status < 0 || PyErr_Occurred()) return -1;
    }
    int stored = truth_of(PyObject_GetAttr(rule, str_stored)); /* if self.stored: self.offer(server) */
    if (stored <= 0) return stored;
    return done(call_method(rule, str_offer, server, NULL));
}

static int probe_tick(PyObject *rule, PyObject *server) {
    int head = head_fast(rule, server);
    if (head < 0 || (head == 0 && head_generic(rule, server) < 0)) return -1;
    int tail = tail_fast(rule, server);
    return tail < 0 ? -1 : tail == 0 ? tail_generic(rule, server) : 0;
}

/* A probe server's `on_tick(now)`: ServerNode.on_tick, `self.rule.on_tick(self, now)`. */
static PyObject *node_tick(PyObject *server, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 1) {
        PyErr_Format(PyExc_TypeError, "on_tick() takes 1 argument (now), %zd given", nargs);
        return NULL;
    }
    if (references_loaded() < 0) return NULL;
    PyObject *rule = PyObject_GetAttr(server, str_rule);
    if (rule == NULL) return NULL;
    int is_it;
    PyObject *method = method_of(rule, str_on_tick, tick_reference, &is_it);
    int status = method == NULL ? -1 : is_it ? probe_tick(rule, server) : done(call_method_object(method, server, args[0]));
    Py_XDECREF(method);
    Py_DECREF(rule);
    if (status < 0) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef node_tick_def = {"on_tick", (PyCFunction)(void (*)(void))node_tick, METH_FASTCALL,
                                    "The server's tick: its rule's on_tick (the probe's in C)."};

static PyObject *tick_method(PyObject *Py_UNUSED(module), PyObject *cls) {
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "tick_method(cls): cls is a class");
        return NULL;
    }
    return PyDescr_NewMethod((PyTypeObject *)cls, &node_tick_def);
}


/* -- the answer to a load request --------------------------------------------------------------- */

enum { R_MODE, R_SAID_LOAD, R_BAND, R_LOW_KNOWN, R_LOW, R_SAID_LOWEST, R_HEARD, R_COUNTING, R_TICKS, REPLY_FIELDS };
enum { V_FREE, V_CAPACITY, V_ID, VALUE_FIELDS };
enum { G_CPU_LOAD, G_SAME_MINIMUM, G_LOAD_REPLY, G_LOWEST_SHARE, GLOBALS_KEPT };
/* What replies_of keeps (its function's self, a tuple): the reference and the three methods it calls, their
 * globals, what those held under the names the bodies read when it was made, and the two classes' tags. */
enum { K_REPLIES, K_LOAD_REPLY, K_LOWEST_NOTICE, K_LOWEST, K_GLOBALS, K_HELD, K_TAGS = K_HELD + GLOBALS_KEPT, KEPT };
static const char *reply_names[REPLY_FIELDS] = {"mode", "said_load", "band", "low_known", "low", "said_lowest", "heard",
                                                "counting", "ticks"};
static const char *value_names[VALUE_FIELDS] = {"free", "capacity", "id"};
static const char *global_names[GLOBALS_KEPT] = {"cpu_load", "_same_minimum", "LoadReply", "LowestShare"};
static PyObject *reply_strs[REPLY_FIELDS], *value_strs[VALUE_FIELDS], *global_strs[GLOBALS_KEPT];
static PyObject *str_load, *str_load_reply, *str_lowest_notice, *str_lowest, *str_cpu, *str_heard_ticks;
static Layout reply_layout, value_layout, load_layout;

_Static_assert(REPLY_FIELDS <= LAYOUT_FIELDS, "a layout holds every field it reads");

#define KEPT_ITEM(kept, i) PyTuple_GET_ITEM(kept, i)

static int unchanged_class(PyObject *cls, PyObject *tag) { /* the class as it was when kept: the same valid tag */
    PyTypeObject *type = (PyTypeObject *)cls;
    return (type->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) && PyLong_AsUnsignedLong(tag) == type->tp_version_tag;
}

/* 1 if the globals still hold what they held when `kept` was made, the classes unchanged, and HEARD_TICKS and
 * STUCK_TICKS exact ints of 64 bits (in *heard_ticks, *stuck); else 0. Runs no Python code. */
static int globals_hold(PyObject *kept, long long *heard_ticks, long long *stuck) {
    PyObject *globals = KEPT_ITEM(kept, K_GLOBALS);
    for (int i = 0; i < GLOBALS_KEPT; i++) {
        PyObject *value = PyDict_GetItemWithError(globals, global_strs[i]); /* an exact str's hash: no Python code */
        if (value == NULL) {
            PyErr_Clear();
            return 0;
        }
        if (value != KEPT_ITEM(kept, K_HELD + i)) return 0;
    }
    PyObject *tags = KEPT_ITEM(kept, K_TAGS);
    if (!unchanged_class(KEPT_ITEM(kept, K_HELD + G_LOAD_REPLY), PyTuple_GET_ITEM(tags, 0))
        || !unchanged_class(KEPT_ITEM(kept, K_HELD + G_LOWEST_SHARE), PyTuple_GET_ITEM(tags, 1)))
        return 0;
    PyObject *heard = PyDict_GetItemWithError(globals, str_heard_ticks);
    PyObject *stuck_value = heard == NULL ? NULL : PyDict_GetItemWithError(globals, str_stuck);
    if (stuck_value == NULL) {
        PyErr_Clear();
        return 0;
    }
    return plain_int(heard, heard_ticks) && plain_int(stuck_value, stuck);
}

static int plain_first(PyObject *vector, double *out) { /* vector[0], of an exact list or tuple, an exact float */
    PyObject *first;
    if (PyList_CheckExact(vector))
        first = PyList_GET_SIZE(vector) > 0 ? PyList_GET_ITEM(vector, 0) : NULL;
    else if (PyTuple_CheckExact(vector))
        first = PyTuple_GET_SIZE(vector) > 0 ? PyTuple_GET_ITEM(vector, 0) : NULL;
    else
        return 0;
    if (first == NULL || !PyFloat_CheckExact(first)) return 0;
    *out = PyFloat_AS_DOUBLE(first);
    return 1;
}

/* Set the rule's member `i` to value, as `self.<name> = value` does, after Python code may have run. */
static int store(PyObject *rule, int i, PyObject *value) {
    if (members_of(Py_TYPE(rule), reply_strs, REPLY_FIELDS, 1, &reply_layout)) {
        set_member(rule, &reply_layout, i, value);
        return 0;
    }
    return PyObject_SetAttr(rule, reply_strs[i], value);
}

/* ProbeRule.load_reply's body, `rule.load_reply(server)`, where every value it reads is plain and the globals hold
 * what `kept` kept (the caller's check): 1 with the load in *out (and *ran set if Python code may have run), or 0
 * having read nothing that runs Python code and changed nothing; -1 on error. */
static int load_reply_fast(PyObject *kept, PyObject *rule, PyObject *server, PyObject **out, int *ran) {
    if (!members_of(Py_TYPE(rule), reply_strs, REPLY_FIELDS, 1, &reply_layout)
        || !members_of(Py_TYPE(server), value_strs, VALUE_FIELDS, 0, &value_layout))
        return 0;
    PyObject *load_class = KEPT_ITEM(kept, K_HELD + G_LOAD_REPLY);
    PyObject *mode = MEMBER(rule, reply_layout, R_MODE), *last = MEMBER(rule, reply_layout, R_SAID_LOAD);
    PyObject *free = MEMBER(server, value_layout, V_FREE), *capacity = MEMBER(server, value_layout, V_CAPACITY);
    PyObject *id = MEMBER(server, value_layout, V_ID);
    double f, c, said = 0.0;
    if (mode == NULL || last == NULL || free == NULL || capacity == NULL || id == NULL || !PyUnicode_CheckExact(mode)
        || PyUnicode_Compare(mode, str_cpu) != 0 || !plain_first(free, &f) || !plain_first(capacity, &c))
        return 0;
    if (last != Py_None) { /* last.load, a member of the class kept */
        PyObject *said_value;
        if (Py_TYPE(last) != (PyTypeObject *)load_class
            || !members_of((PyTypeObject *)load_class, &str_load, 1, 0, &load_layout)
            || (said_value = MEMBER(last, load_layout, 0)) == NULL || !PyFloat_CheckExact(said_value))
            return 0;
        said = PyFloat_AS_DOUBLE(said_value);
    }
    double cpu = c > 0 ? 1.0 - f / c : 1.0; /* cpu_load(server): Python's float arithmetic is C's */
    PyObject *load;
    if (last != Py_None && said == cpu) {
        load = Py_NewRef(last);
    } else {
        PyObject *value = PyFloat_FromDouble(cpu);
        if (value == NULL) return -1;
        PyObject *fields[2] = {id, value};
        *ran = 1; /* the constructor, and the old reply's freeing */
        Py_INCREF(id); /* the constructor's Python code may drop the server's */
        load = PyObject_Vectorcall(load_class, fields, 2, NULL);
        Py_DECREF(id);
        Py_DECREF(value);
        if (load == NULL) return -1;
    }
    if (store(rule, R_SAID_LOAD, load) < 0) {
        Py_DECREF(load);
        return -1;
    }
    *out = load;
    return 1;
}

/* An entry of the band's table: (share, tick heard, tick it took it, task), each plain. */
static int plain_entry(PyObject *entry, double *share, long long *last, long long *since) {
    long long task;
    return entry != NULL && PyTuple_CheckExact(entry) && PyTuple_GET_SIZE(entry) == 4
           && plain_float(PyTuple_GET_ITEM(entry, 0), share) && plain_int(PyTuple_GET_ITEM(entry, 1), last)
           && plain_int(PyTuple_GET_ITEM(entry, 2), since) && plain_int(PyTuple_GET_ITEM(entry, 3), &task);
}

/* A minimum (share, user, task), plain: an exact 3-tuple of a float that is not NaN and two ints of 64 bits. */
static int plain_minimum(PyObject *minimum, double *share, long long *user, long long *task) {
    return PyTuple_CheckExact(minimum) && PyTuple_GET_SIZE(minimum) == 3 && plain_float(PyTuple_GET_ITEM(minimum, 0), share)
           && plain_int(PyTuple_GET_ITEM(minimum, 1), user) && plain_int(PyTuple_GET_ITEM(minimum, 2), task);
}

static int within(long long now, long long then, long long limit, int *yes) { /* now - then <= limit, or 0: overflow */
    long long waited;
    if (__builtin_sub_overflow(now, then, &waited)) return 0;
    *yes = waited <= limit;
    return 1;
}

/* ProbeRule._lowest's body: 1 with the new minimum (a new reference, or None) in *out, set as rule.low with
 * rule.low_known True and the entries that no longer count left out of counting; or 0, having changed nothing,
 * where an entry is not plain or a user counted was never heard (the reference's KeyError); -1 on error. One pass
 * finds the minimum without changing anything (the entries are totally ordered, so the order they are looked at
 * in does not change which is least), and a second, only where some entry no longer counts, leaves those out:
 * a set never moves its entries when one is discarded, and which are discarded does not depend on the order. */
static int lowest_of(PyObject *rule, long long now, long long heard_ticks, long long stuck, PyObject **out) {
    PyObject *heard = MEMBER(rule, reply_layout, R_HEARD), *counting = MEMBER(rule, reply_layout, R_COUNTING);
    PyObject *low = NULL, *low_user = NULL, *user;
    double low_share = 0.0;
    long long low_u = 0;
    Py_ssize_t position = 0, stale = 0;
    Py_hash_t hash;
    while (_PySet_NextEntry(counting, &position, &user, &hash)) {
        double share;
        long long last, since, u;
        int fresh, moving;
        if (!plain_int(user, &u)) return 0;
        PyObject *entry = PyDict_GetItemWithError(heard, user); /* an exact int's hash: no Python code */
        if (entry == NULL) return PyErr_Occurred() ? -1 : 0;
        if (!plain_entry(entry, &share, &last, &since) || !within(now, last, heard_ticks, &fresh)
            || !within(now, since, stuck, &moving))
            return 0;
        if (!(fresh && moving))
            stale++;
        else if (low == NULL || (share != low_share ? share < low_share : u < low_u)) { /* (share, user, task) < low */
            low = entry;
            low_user = user;
            low_share = share;
            low_u = u;
        }
    }
    PyObject *minimum = low == NULL ? Py_NewRef(Py_None)
                                    : PyTuple_Pack(3, PyTuple_GET_ITEM(low, 0), low_user, PyTuple_GET_ITEM(low, 3));
    if (minimum == NULL) return -1;
    for (position = 0; stale > 0 && _PySet_NextEntry(counting, &position, &user, &hash);) {
        double share = 0.0;
        long long last = 0, since = 0;
        int fresh = 0, moving = 0;
        plain_entry(PyDict_GetItem(heard, user), &share, &last, &since); /* read and checked above */
        within(now, last, heard_ticks, &fresh);
        within(now, since, stuck, &moving);
        if (!(fresh && moving)) {
            stale--;
            if (PySet_Discard(counting, user) < 0) { /* `user` may be freed: it is not read again */
                Py_DECREF(minimum);
                return -1;
            }
        }
    }
    set_member(rule, &reply_layout, R_LOW, minimum); /* the old one is plain: freeing it runs no Python code */
    set_member(rule, &reply_layout, R_LOW_KNOWN, Py_True);
    *out = minimum;
    return 1;
}

/* ProbeRule.lowest_notice's body where every value it reads is plain, with the globals' HEARD_TICKS and STUCK_TICKS
 * as the caller found them holding what `kept` kept: 1 with the notice (or None) in *out, or 0 having read nothing
 * that runs Python code and changed nothing; -1 on error. */
static int lowest_notice_fast(PyObject *kept, PyObject *rule, PyObject **out, long long heard_ticks, long long stuck) {
    long long now = 0, u, t, said_user = 0, said_task = 0;
    double s = 0.0, said_share = 0.0;
    if (!members_of(Py_TYPE(rule), reply_strs, REPLY_FIELDS, 1, &reply_layout)) return 0;
    PyObject *low_known = MEMBER(rule, reply_layout, R_LOW_KNOWN), *low = MEMBER(rule, reply_layout, R_LOW);
    PyObject *said_lowest = MEMBER(rule, reply_layout, R_SAID_LOWEST);
    if (low_known == NULL || low == NULL || said_lowest == NULL || (low_known != Py_True && low_known != Py_False)
        || (low != Py_None && !plain_minimum(low, &s, &u, &t)) || !PyTuple_CheckExact(said_lowest)
        || PyTuple_GET_SIZE(said_lowest) != 2)
        return 0;
    PyObject *said = PyTuple_GET_ITEM(said_lowest, 0), *notice = PyTuple_GET_ITEM(said_lowest, 1);
    if (said != Py_None && !plain_minimum(said, &said_share, &said_user, &said_task)) return 0;
    if (low_known == Py_False) { /* self._lowest(), where it is ProbeRule._lowest and its entries are plain */
        PyObject *heard = MEMBER(rule, reply_layout, R_HEARD), *counting = MEMBER(rule, reply_layout, R_COUNTING);
        PyObject *ticks = MEMBER(rule, reply_layout, R_TICKS);
        if (!resolves_to(rule, str_lowest, KEPT_ITEM(kept, K_LOWEST)) || heard == NULL || counting == NULL
            || ticks == NULL || !PyDict_CheckExact(heard) || !PySet_CheckExact(counting) || !plain_int(ticks, &now))
            return 0;
        int found = lowest_of(rule, now, heard_ticks, stuck, &low);
        if (found <= 0) return found;
        if (low != Py_None) plain_minimum(low, &s, &u, &t);
    } else {
        Py_INCREF(low);
    }
    if (low == Py_None) {
        *out = low;
        return 1;
    }
    /* _same_minimum(said, low): equal, and the share of the same sign (both are exact floats) */
    int same = said != Py_None && said_share == s && said_user == u && said_task == t
               && copysign(1.0, said_share) == copysign(1.0, s);
    if (notice != Py_None && same) {
        Py_DECREF(low);
        *out = Py_NewRef(notice);
        return 1;
    }
    PyObject *fields[3] = {PyTuple_GET_ITEM(low, 1), PyTuple_GET_ITEM(low, 2), PyTuple_GET_ITEM(low, 0)};
    PyObject *made = PyObject_Vectorcall(KEPT_ITEM(kept, K_HELD + G_LOWEST_SHARE), fields, 3, NULL);
    PyObject *pair = made == NULL ? NULL : PyTuple_Pack(2, low, made);
    Py_DECREF(low);
    if (pair == NULL || store(rule, R_SAID_LOWEST, pair) < 0) {
        Py_XDECREF(pair);
        Py_XDECREF(made);
        return -1;
    }
    Py_DECREF(pair);
    *out = made;
    return 1;
}

/* A load request's answer: ProbeRule.load_replies(rule, server), its reference, with the bodies of the
 * methods it calls run here while they are the ones kept and what they read is plain. */
static PyObject *load_replies(PyObject *kept, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) return PyObject_Vectorcall(KEPT_ITEM(kept, K_REPLIES), args, (size_t)nargs, NULL);
    PyObject *rule = args[0], *server = args[1], *load = NULL, *notice = NULL;
    long long heard_ticks, stuck;
    int held = globals_hold(kept, &heard_ticks, &stuck), ran = 0; /* ran: Python code may have run since */
    int fast = held && resolves_to(rule, str_load_reply, KEPT_ITEM(kept, K_LOAD_REPLY))
               ? load_reply_fast(kept, rule, server, &load, &ran) : 0;
    if (fast < 0 || (fast == 0 && (ran = 1, load = call_method(rule, str_load_reply, server, NULL)) == NULL)) return NULL;
    PyObject *band = members_of(Py_TYPE(rule), reply_strs, REPLY_FIELDS, 1, &reply_layout)
                     ? MEMBER(rule, reply_layout, R_BAND) : NULL; /* if not self.band: return (load,) */
    int banded;
    if (band != NULL && PyFloat_CheckExact(band)) {
        banded = PyFloat_AS_DOUBLE(band) != 0.0;
    } else {
        ran = 1;
        banded = truth_of(PyObject_GetAttr(rule, reply_strs[R_BAND]));
    }
    if (banded <= 0) {
        PyObject *result = banded < 0 ? NULL : PyTuple_Pack(1, load);
        Py_DECREF(load);
        return result;
    }
    if (ran) held = globals_hold(kept, &heard_ticks, &stuck);
    fast = held && resolves_to(rule, str_lowest_notice, KEPT_ITEM(kept, K_LOWEST_NOTICE))
           ? lowest_notice_fast(kept, rule, &notice, heard_ticks, stuck) : 0;
    if (fast < 0 || (fast == 0 && (notice = call_method(rule, str_lowest_notice, NULL, NULL)) == NULL)) {
        Py_DECREF(load);
        return NULL;
    }
    PyObject *result = notice == Py_None ? PyTuple_Pack(1, load) : PyTuple_Pack(2, load, notice);
    Py_DECREF(load);
    Py_DECREF(notice);
    return result;
}

static PyMethodDef load_replies_def = {"load_replies", (PyCFunction)(void (*)(void))load_replies, METH_FASTCALL,
                                       "load_replies(rule, server): ProbeRule.load_replies(rule, server)."};

/* replies_of(load_replies, load_reply, lowest_notice, _lowest): ProbeRule's functions, given from its class body;
 * returns the poll's answer in C, which keeps what their module's globals hold now. */
static PyObject *replies_of(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_Format(PyExc_TypeError, "replies_of() takes 4 functions, %zd given", nargs);
        return NULL;
    }
    for (int i = 0; i < 4; i++)
        if (!PyFunction_Check(args[i]) || PyFunction_GET_GLOBALS(args[i]) != PyFunction_GET_GLOBALS(args[0])) {
            PyErr_SetString(PyExc_TypeError, "replies_of(): four functions of one module");
            return NULL;
        }
    PyObject *globals = PyFunction_GET_GLOBALS(args[0]);
    if (!PyDict_CheckExact(globals)) {
        PyErr_SetString(PyExc_TypeError, "replies_of(): the functions' globals are a dict");
        return NULL;
    }
    PyObject *kept = PyTuple_New(KEPT);
    if (kept == NULL) return NULL;
    for (int i = 0; i < 4; i++) PyTuple_SET_ITEM(kept, K_REPLIES + i, Py_NewRef(args[i]));
    PyTuple_SET_ITEM(kept, K_GLOBALS, Py_NewRef(globals));
    for (int i = 0; i < GLOBALS_KEPT; i++) {
        PyObject *value = PyDict_GetItemWithError(globals, global_strs[i]);
        if (value == NULL) {
            if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "replies_of(): the module has no %U", global_strs[i]);
            Py_DECREF(kept);
            return NULL;
        }
        PyTuple_SET_ITEM(kept, K_HELD + i, Py_NewRef(value));
    }
    PyObject *classes[2] = {KEPT_ITEM(kept, K_HELD + G_LOAD_REPLY), KEPT_ITEM(kept, K_HELD + G_LOWEST_SHARE)};
    PyObject *tags = PyTuple_New(2);
    PyTuple_SET_ITEM(kept, K_TAGS, tags);
    if (tags == NULL) {
        Py_DECREF(kept);
        return NULL;
    }
    for (int i = 0; i < 2; i++) {
        PyTypeObject *type = PyType_Check(classes[i]) ? (PyTypeObject *)classes[i] : NULL;
        if (type != NULL) (void)_PyType_Lookup(type, str_load); /* gives the class a version tag if it can have one */
        if (type == NULL || !(type->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG)) {
            PyErr_SetString(PyExc_TypeError, "replies_of(): LoadReply and LowestShare are classes with a version tag");
            Py_DECREF(kept);
            return NULL;
        }
        PyObject *tag = PyLong_FromUnsignedLong(type->tp_version_tag);
        if (tag == NULL) {
            Py_DECREF(kept);
            return NULL;
        }
        PyTuple_SET_ITEM(tags, i, tag);
    }
    PyObject *function = PyCFunction_New(&load_replies_def, kept);
    Py_DECREF(kept);
    return function;
}

static PyMethodDef methods[] = {
    {"hear", (PyCFunction)(void (*)(void))hear, METH_FASTCALL,
     "hear(rule, server, msg, now): ProbeRule.hear(rule, server, msg, now), the same state and calls."},
    {"tick_method", tick_method, METH_O,
     "tick_method(cls): the `on_tick` method of a probe server class, ServerNode.on_tick with ProbeRule.on_tick in C."},
    {"replies_of", (PyCFunction)(void (*)(void))replies_of, METH_FASTCALL,
     "replies_of(load_replies, load_reply, lowest_notice, _lowest): ProbeRule.load_replies in C."},
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
    PyObject **names[] = {&str_rule, &str_on_tick, &str_ticks, &str_low_known, &str_poll_every, &str_poll,
                          &str_neighbors, &str_send, &str_stored, &str_offer, &str_published, &str_clear};
    const char *texts[] = {"rule", "on_tick", "ticks", "low_known", "poll_every", "poll", "neighbors", "send", "stored",
                           "offer", "published", "clear"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if ((*names[i] = PyUnicode_InternFromString(texts[i])) == NULL) return NULL;
    if ((one = PyLong_FromLong(1)) == NULL) return NULL;
    const char *tick_names[TICK_FIELDS] = {"ticks", "low_known", "poll_every", "poll", "stored"};
    const char *server_names[SERVER_FIELDS] = {"published", "neighbors", "outbox"};
    for (int i = 0; i < TICK_FIELDS; i++)
        if ((tick_strs[i] = PyUnicode_InternFromString(tick_names[i])) == NULL) return NULL;
    for (int i = 0; i < SERVER_FIELDS; i++)
        if ((server_strs[i] = PyUnicode_InternFromString(server_names[i])) == NULL) return NULL;
    for (int i = 0; i < REPLY_FIELDS; i++)
        if ((reply_strs[i] = PyUnicode_InternFromString(reply_names[i])) == NULL) return NULL;
    for (int i = 0; i < VALUE_FIELDS; i++)
        if ((value_strs[i] = PyUnicode_InternFromString(value_names[i])) == NULL) return NULL;
    for (int i = 0; i < GLOBALS_KEPT; i++)
        if ((global_strs[i] = PyUnicode_InternFromString(global_names[i])) == NULL) return NULL;
    PyObject **reply_names_[] = {&str_load, &str_load_reply, &str_lowest_notice, &str_lowest, &str_cpu, &str_heard_ticks};
    const char *reply_texts[] = {"load", "load_reply", "lowest_notice", "_lowest", "cpu", "HEARD_TICKS"};
    for (size_t i = 0; i < sizeof reply_names_ / sizeof reply_names_[0]; i++)
        if ((*reply_names_[i] = PyUnicode_InternFromString(reply_texts[i])) == NULL) return NULL;
    return PyModule_Create(&module);
}
