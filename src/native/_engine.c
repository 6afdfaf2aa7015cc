/* The engine's per-message work in C: the runtime's delivery phase
 * (nodes.runtime.deliver_python), the network's tally of a batch by message type
 * (nodes.network.count_types_python) and Actor.send (nodes.actor.send_python). Same
 * contracts as the Python versions, which stay the reference; tests run both on the same
 * runs and compare them event by event.
 *
 * deliver(deliveries, mailboxes, actors, inline_drain, now, batch, flush) -> None
 *   deliveries: list of (dst, msg), in the order they were sent. Each message goes to its
 *   destination's mailbox; then every actor that received something, in the order of its
 *   first message, is woken once: with inline_drain[dst] true its handlers are called as
 *   type(actor).DISPATCH[type(msg)](actor, msg, now), one message after the other (a type
 *   without a handler: actor.check_handled(messages) raises), otherwise actor.drain(messages,
 *   now). Its outbox is then appended to `batch` and cleared or, with batch None, handed
 *   to flush(actor). Mailboxes, actors and flags are read when each actor's turn comes, so a
 *   handler that crashes or replaces another actor is seen as in Python.
 *
 * count_items(out, cls, field) -> int
 *   Σ len(msg.<field>) over the messages of type exactly `cls` in the (dst, msg) list `out`
 *   (nodes.network.count_items_python: the items variable-size messages carry).
 *
 * fire_each(actors, action, now, batch, flush, skip_idle=False) -> None
 *   A periodic driver's round (nodes.runtime.fire_each_python): action(actor, now) for each
 *   actor of the list in turn (read by index, as Python's list iterator does), each actor's
 *   outbox then moved as in `deliver`; with skip_idle true, an actor whose `idle_tick` is true
 *   is skipped (the attribute read and its truth taken as Python does).
 *
 * call_on_tick(actor, now) -> None
 *   The tick driver's action (nodes.runtime.call_on_tick_python): actor.on_tick(now), its result
 *   dropped, without a Python frame of its own.
 *
 * rule_handler(handler) -> a callable h with h(node, msg, now) == handler(node.rule, node, msg,
 *   now) and None returned (nodes.rule_dispatch.to_rule_python: how a server hands a message to its
 *   rule's handler, without a Python frame of its own); a call of another shape goes to the
 *   reference's closure.
 *
 * poll_answer(replies, keep=()), poll_record(table, field) -> a server's dispatch entry for a poll's request
 *   or reply (protocols.polls; nodes.rule_dispatch.answer_python and record_python, the references): each
 *   runs its reference's Python operations in the same order — attribute reads, `dict.get` or
 *   `get`, `tuple()`, item assignment, `node.send` — on whatever objects it is given, so a hostile
 *   node or message gets Python's answer or exception; a call of another shape goes to the
 *   reference's closure. Each entry remembers where a type keeps the attributes it reads in
 *   `__slots__` (`SlotRead`, below) and reads them there while the type is unchanged, and calls
 *   `actor_send` itself where `node.send` is it: both are the reads and calls Python would make.
 *
 * `deliver`, `count_types` and `count_items` first check, without running any Python code, that
 * their input is plain — exact (dst, msg) tuples, exact int destinations that index the lists,
 * message classes without a metaclass or a `__class__` of their own — and otherwise hand it,
 * untouched, to their reference (imported at first need), which gives Python's answer or
 * exception. Every object the C keeps across a call that can run Python code (a handler, an
 * action, a `len`) is held by a reference of its own, and lists are re-read after such calls.
 * One case is refused rather than matched: a `len` in `count_items` that puts something other
 * than a (dst, msg) tuple into the very batch being counted raises TypeError.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_accelerator.h"

static PyObject *str_dispatch, *str_outbox, *str_drain, *str_check_handled, *str_class, *str_rule, *str_idle_tick;
static PyObject *str_published, *str_sender, *str_send, *str_get, *str_on_tick;
static PyObject *object_class; /* object's `__class__` descriptor */

enum { DELIVER, COUNT_TYPES, COUNT_ITEMS, TO_RULE, ANSWER, RECORD, REFERENCES };
static PyObject *references[REFERENCES];
static const struct { const char *module, *name; } reference_names[REFERENCES] = {
    {"drfemu.nodes.runtime", "deliver_python"},
    {"drfemu.nodes.network", "count_types_python"},
    {"drfemu.nodes.network", "count_items_python"},
    {"drfemu.nodes.rule_dispatch", "to_rule_python"},
    {"drfemu.nodes.rule_dispatch", "answer_python"},
    {"drfemu.nodes.rule_dispatch", "record_python"},
};

static PyObject *call_reference(int which, PyObject *const *args, Py_ssize_t nargs) {
    PyObject *function = imported(&references[which], reference_names[which].module, reference_names[which].name);
    return function == NULL ? NULL : PyObject_Vectorcall(function, args, (size_t)nargs, NULL);
}

static int plain_class(PyTypeObject *type) { /* dict lookups with it as key and `x.__class__` run no Python code */
    return Py_IS_TYPE(type, &PyType_Type) && _PyType_Lookup(type, str_class) == object_class;
}

/* 1 when `out` is an exact list of exact (dst, msg) tuples — exactly 2 long, or at least 2 with
 * `pairs` 0 — whose messages are of plain classes; runs no Python code. A batch is runs of one
 * class, so a class is checked once per run. */
static int plain_sends(PyObject *out, int pairs) {
    if (!PyList_CheckExact(out)) return 0;
    PyTypeObject *checked = NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(out); i++) {
        PyObject *item = PyList_GET_ITEM(out, i);
        if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) < 2 || (pairs && PyTuple_GET_SIZE(item) != 2))
            return 0;
        PyTypeObject *type = Py_TYPE(PyTuple_GET_ITEM(item, 1));
        if (type != checked && !plain_class(checked = type)) return 0;
    }
    return 1;
}

/* Where a Python list of `size` items puts index `i` (negative ones count from the end), or -1. */
static Py_ssize_t list_index(Py_ssize_t i, Py_ssize_t size) {
    if (i < 0) i += size;
    return i >= 0 && i < size ? i : -1;
}

static int wake(PyObject *actor, PyObject *messages, int inline_drain, PyObject *now) {
    if (!inline_drain) {
        PyObject *done = PyObject_CallMethodObjArgs(actor, str_drain, messages, now, NULL);
        Py_XDECREF(done);
        return done == NULL ? -1 : 0;
    }
    PyObject *dispatch = PyObject_GetAttr(actor, str_dispatch);
    if (dispatch == NULL) return -1;
    if (!PyDict_Check(dispatch)) {
        Py_DECREF(dispatch);
        PyErr_SetString(PyExc_TypeError, "an actor's DISPATCH is a dict");
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(messages); i++) {
        PyObject *msg = Py_NewRef(PyList_GET_ITEM(messages, i));
        PyObject *handler = PyDict_GetItemWithError(dispatch, (PyObject *)Py_TYPE(msg)); /* borrowed */
        if (handler == NULL) {
            Py_DECREF(msg);
            Py_DECREF(dispatch);
            if (PyErr_Occurred()) return -1;
            PyObject *raised = PyObject_CallMethodObjArgs(actor, str_check_handled, messages, NULL);
            if (raised != NULL) { /* check_handled found nothing to refuse: as Python's KeyError */
                Py_DECREF(raised);
                PyErr_SetObject(PyExc_KeyError, (PyObject *)Py_TYPE(msg));
            }
            return -1;
        }
        Py_INCREF(handler);
        PyObject *args[3] = {actor, msg, now};
        PyObject *done = PyObject_Vectorcall(handler, args, 3, NULL);
        Py_DECREF(msg);
        Py_DECREF(handler);
        if (done == NULL) {
            Py_DECREF(dispatch);
            return -1;
        }
        Py_DECREF(done);
    }
    Py_DECREF(dispatch);
    return 0;
}

static int move_outbox(PyObject *actor, PyObject *batch, PyObject *flush) {
    PyObject *outbox = PyObject_GetAttr(actor, str_outbox);
    if (outbox == NULL) return -1;
    int status = 0;
    if (batch != Py_None) {
        status = outbox_to_batch(outbox, batch);
    } else if (!outbox_is_list(outbox)) {
        status = -1;
    } else if (PyList_GET_SIZE(outbox) > 0) {
        PyObject *done = PyObject_CallOneArg(flush, actor);
        status = done == NULL ? -1 : 0;
        Py_XDECREF(done);
    }
    Py_DECREF(outbox);
    return status;
}

static PyObject *deliver(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "deliver(deliveries, mailboxes, actors, inline_drain, now, batch, flush)");
        return NULL;
    }
    PyObject *deliveries = args[0], *mailboxes = args[1], *actors = args[2], *inline_drain = args[3];
    PyObject *now = args[4], *batch = args[5], *flush = args[6];
    if (!PyList_CheckExact(deliveries) || !PyList_CheckExact(mailboxes) || !PyList_CheckExact(actors)
        || !PyList_CheckExact(inline_drain) || !(batch == Py_None || PyList_CheckExact(batch)))
        return call_reference(DELIVER, args, nargs);
    Py_ssize_t n = PyList_GET_SIZE(deliveries), boxes = PyList_GET_SIZE(mailboxes);
    for (Py_ssize_t i = 0; i < n; i++) { /* plain, or the reference delivers (nothing has moved yet) */
        PyObject *item = PyList_GET_ITEM(deliveries, i);
        Py_ssize_t dst = -1;
        long long raw;
        if (PyTuple_CheckExact(item) && PyTuple_GET_SIZE(item) == 2 && PyLong_CheckExact(PyTuple_GET_ITEM(item, 0))) {
            int outside = !int64_of(PyTuple_GET_ITEM(item, 0), &raw) || raw < -(long long)boxes
                          || raw >= (long long)boxes;
            dst = outside ? -1 : list_index((Py_ssize_t)raw, boxes);
        }
        if (dst < 0 || !PyList_CheckExact(PyList_GET_ITEM(mailboxes, dst))) return call_reference(DELIVER, args, nargs);
    }
    Py_ssize_t *ready = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(n > 0 ? n : 1)); /* destinations as given */
    if (ready == NULL) return PyErr_NoMemory();
    Py_ssize_t woken = 0;
    for (Py_ssize_t i = 0; i < n; i++) { /* no Python code runs in this loop */
        PyObject *item = PyList_GET_ITEM(deliveries, i);
        long long raw;
        int64_of(PyTuple_GET_ITEM(item, 0), &raw); /* an exact int within ±boxes, as checked */
        Py_ssize_t given = (Py_ssize_t)raw;
        PyObject *mailbox = PyList_GET_ITEM(mailboxes, list_index(given, boxes));
        if (PyList_GET_SIZE(mailbox) == 0) ready[woken++] = given;
        if (PyList_Append(mailbox, PyTuple_GET_ITEM(item, 1)) < 0) goto fail;
    }
    for (Py_ssize_t k = 0; k < woken; k++) { /* indexed as Python would when each turn comes */
        Py_ssize_t given = ready[k];
        Py_ssize_t at_actor = list_index(given, PyList_GET_SIZE(actors));
        Py_ssize_t at_box = list_index(given, PyList_GET_SIZE(mailboxes));
        Py_ssize_t at_flag = list_index(given, PyList_GET_SIZE(inline_drain));
        if (at_actor < 0 || at_box < 0 || at_flag < 0) {
            PyErr_SetString(PyExc_IndexError, "list index out of range"); /* a handler shrank the runtime's lists */
            goto fail;
        }
        PyObject *actor = Py_NewRef(PyList_GET_ITEM(actors, at_actor));
        PyObject *messages = Py_NewRef(PyList_GET_ITEM(mailboxes, at_box));
        PyObject *fresh = PyList_New(0);
        int status = fresh == NULL ? -1 : PyList_SetItem(mailboxes, at_box, fresh); /* steals fresh */
        PyObject *flag = Py_NewRef(PyList_GET_ITEM(inline_drain, at_flag));
        int inline_flag = status < 0 ? -1 : PyObject_IsTrue(flag);
        Py_DECREF(flag);
        status = inline_flag < 0 ? -1 : wake(actor, messages, inline_flag, now);
        if (status == 0) status = move_outbox(actor, batch, flush);
        Py_DECREF(messages);
        Py_DECREF(actor);
        if (status < 0) goto fail;
    }
    PyMem_Free(ready);
    Py_RETURN_NONE;
fail:
    PyMem_Free(ready);
    return NULL;
}

/* count_types(out) -> dict: how many messages of each type the (dst, msg) pairs of `out`
 * carry, types in the order of their first message. Runs of one type (the common case: a
 * batch of one periodic driver) cost one dict update per run. */
static PyObject *count_types(PyObject *Py_UNUSED(self), PyObject *out) {
    if (!plain_sends(out, 0)) return call_reference(COUNT_TYPES, &out, 1);
    PyObject *kinds = PyDict_New(); /* type keys of plain classes: no Python code runs below */
    if (kinds == NULL) return NULL;
    PyObject *run_type = NULL; /* borrowed: kept alive by the messages of `out` */
    Py_ssize_t run = 0;
    Py_ssize_t n = PyList_GET_SIZE(out);
    for (Py_ssize_t i = 0; i <= n; i++) {
        PyObject *type = NULL;
        if (i < n) {
            type = (PyObject *)Py_TYPE(PyTuple_GET_ITEM(PyList_GET_ITEM(out, i), 1));
            if (type == run_type) {
                run++;
                continue;
            }
        }
        if (run_type != NULL) { /* the run of run_type ends here */
            PyObject *before = PyDict_GetItemWithError(kinds, run_type);
            if (before == NULL && PyErr_Occurred()) goto fail;
            Py_ssize_t total = run + (before == NULL ? 0 : PyLong_AsSsize_t(before));
            PyObject *value = PyLong_FromSsize_t(total);
            if (value == NULL) goto fail;
            int status = PyDict_SetItem(kinds, run_type, value);
            Py_DECREF(value);
            if (status < 0) goto fail;
        }
        run_type = type;
        run = 1;
    }
    return kinds;
fail:
    Py_DECREF(kinds);
    return NULL;
}

/* Actor.send(dst, msg): `self.outbox.append((dst, msg))` as a C method, the call every
 * handler makes per message. send_method(cls) makes the descriptor for class `cls`. */
static Py_ssize_t outbox_offset = -1; /* where the `outbox` slot lives in an Actor */

static PyObject *actor_send(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "send() takes 2 arguments (dst, msg), %zd given", nargs);
        return NULL;
    }
    /* The method descriptor only accepts instances of the class it was made for, whose
     * `outbox` slot is at outbox_offset (a subclass keeps its base's slots in place). */
    PyObject *outbox = *(PyObject **)((char *)self + outbox_offset);
    if (outbox == NULL || !PyList_CheckExact(outbox)) {
        PyErr_SetString(PyExc_TypeError, "an actor's outbox is a list");
        return NULL;
    }
    PyObject *pair = PyTuple_New(2);
    if (pair == NULL) return NULL;
    Py_INCREF(args[0]);
    PyTuple_SET_ITEM(pair, 0, args[0]);
    Py_INCREF(args[1]);
    PyTuple_SET_ITEM(pair, 1, args[1]);
    int status = PyList_Append(outbox, pair);
    Py_DECREF(pair);
    if (status < 0) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef send_def = {"send", (PyCFunction)(void (*)(void))actor_send, METH_FASTCALL,
                               "Queue `msg` for actor `dst`; the runtime moves it after this wake-up."};

static PyObject *send_method(PyObject *Py_UNUSED(self), PyObject *cls) {
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "send_method(cls): cls is a class");
        return NULL;
    }
    PyObject *slot = PyObject_GetAttr(cls, str_outbox);
    if (slot == NULL) return NULL;
    Py_ssize_t offset = slot_offset(slot);
    Py_DECREF(slot);
    if (offset < 0 || (outbox_offset >= 0 && offset != outbox_offset)) {
        PyErr_SetString(PyExc_TypeError, "send_method(cls): cls keeps its outbox in a __slots__ entry");
        return NULL;
    }
    outbox_offset = offset;
    return PyDescr_NewMethod((PyTypeObject *)cls, &send_def);
}

static PyObject *count_items(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyUnicode_CheckExact(args[2]) || !plain_sends(args[0], 1))
        return call_reference(COUNT_ITEMS, args, nargs);
    PyObject *out = args[0], *cls = args[1], *field = args[2];
    Py_ssize_t total = 0;
    PyObject *big = NULL; /* the sum as a Python int, once it no longer fits */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(out); i++) { /* re-read: a `len` may change `out` */
        PyObject *item = PyList_GET_ITEM(out, i);
        if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != 2) {
            PyErr_SetString(PyExc_TypeError, "a send is a (dst, msg) tuple"); /* a `len` put it there */
            goto fail;
        }
        PyObject *msg = PyTuple_GET_ITEM(item, 1);
        if ((PyObject *)Py_TYPE(msg) != cls) continue;
        Py_INCREF(msg);
        PyObject *items = PyObject_GetAttr(msg, field);
        Py_DECREF(msg);
        if (items == NULL) goto fail;
        Py_ssize_t length = PyObject_Length(items);
        Py_DECREF(items);
        if (length < 0) goto fail;
        if (total > PY_SSIZE_T_MAX - length) { /* fold the C sum into a Python int */
            PyObject *part = PyLong_FromSsize_t(total);
            if (part == NULL) goto fail;
            if (big == NULL) {
                big = part;
            } else {
                PyObject *sum = PyNumber_Add(big, part);
                Py_DECREF(part);
                Py_SETREF(big, sum);
                if (big == NULL) goto fail;
            }
            total = 0;
        }
        total += length;
    }
    if (big == NULL) return PyLong_FromSsize_t(total);
    PyObject *part = PyLong_FromSsize_t(total);
    PyObject *sum = part == NULL ? NULL : PyNumber_Add(big, part);
    Py_XDECREF(part);
    Py_DECREF(big);
    return sum;
fail:
    Py_XDECREF(big);
    return NULL;
}

static PyObject *fire_each(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 5 || nargs > 6 || !PyList_Check(args[0]) || !(args[3] == Py_None || PyList_Check(args[3]))) {
        PyErr_SetString(PyExc_TypeError,
                        "fire_each(actors: list, action, now, batch: list | None, flush, skip_idle: bool = False)");
        return NULL;
    }
    PyObject *actors = args[0], *action = args[1], *now = args[2], *batch = args[3], *flush = args[4];
    int skip_idle = nargs == 6 ? PyObject_IsTrue(args[5]) : 0;
    if (skip_idle < 0) return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(actors); i++) {
        PyObject *actor = PyList_GET_ITEM(actors, i);
        Py_INCREF(actor);
        if (skip_idle) {
            PyObject *idle = PyObject_GetAttr(actor, str_idle_tick);
            int is_idle = idle == NULL ? -1 : PyObject_IsTrue(idle);
            Py_XDECREF(idle);
            if (is_idle != 0) {
                Py_DECREF(actor);
                if (is_idle < 0) return NULL;
                continue;
            }
        }
        PyObject *call[2] = {actor, now};
        PyObject *done = PyObject_Vectorcall(action, call, 2, NULL);
        int status = done == NULL ? -1 : move_outbox(actor, batch, flush);
        Py_XDECREF(done);
        Py_DECREF(actor);
        if (status < 0) return NULL;
    }
    Py_RETURN_NONE;
}

/* Remember in `read` that objects of `type` read at `offset` (-1: nothing to remember); 1 if remembered. */
static int remember(PyTypeObject *type, Py_ssize_t offset, SlotRead *read) {
    read->type = offset >= 0 ? type : NULL;
    read->version = type->tp_version_tag;
    read->offset = offset;
    return offset >= 0;
}

/* obj.<name>, a new reference: at the __slots__ member's offset as above, else PyObject_GetAttr. An
 * unset member goes to PyObject_GetAttr too, for Python's AttributeError. */
static PyObject *read_attribute(PyObject *obj, PyObject *name, SlotRead *read) {
    PyTypeObject *type = Py_TYPE(obj);
    if (!still_read(type, read)) remember(type, member_offset(type, name, NULL), read);
    if (read->type != NULL) {
        PyObject *value = *(PyObject **)((char *)obj + read->offset);
        if (value != NULL) return Py_NewRef(value);
    }
    return PyObject_GetAttr(obj, name);
}

/* Does a `node.send(dst, msg)` on objects of `type` call `actor_send`, with nothing an instance
 * holds to shadow it (no instance dict)? Remembered in `read` as above (offset unused). */
static int sends_itself(PyTypeObject *type, SlotRead *read) {
    if (still_read(type, read)) return 1;
    PyObject *found = type->tp_dictoffset == 0 && outbox_offset >= 0 ? found_on(type, str_send) : NULL;
    int ours = found != NULL && Py_IS_TYPE(found, &PyMethodDescr_Type)
               && ((PyMethodDescrObject *)found)->d_method == &send_def && PyType_IsSubtype(type, PyDescr_TYPE(found));
    return remember(type, ours ? 0 : -1, read);
}

enum { READ_RULE, READ_SENDER, READ_PUBLISHED, READ_SEND, READS_FIXED }; /* then a field's and a table's per pair */

/* rule_handler(handler), poll_answer(replies, keep), poll_record(table, field): a server's dispatch entries,
 * one type whose call is the entry's kind (TO_RULE, ANSWER or RECORD). */
typedef struct {
    PyObject_HEAD
    PyObject *first;  /* the handler, the replies function, or the table's name */
    PyObject *second; /* NULL, the field's name (None: the reply itself), or an answer's keep (a tuple of pairs) */
    int which;        /* TO_RULE, ANSWER or RECORD: its reference */
    vectorcallfunc vectorcall;
    SlotRead *reads;  /* READS_FIXED, then two per stored (table, field): the reads this entry makes */
} Entry;

static PyObject *by_reference(Entry *entry, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    PyObject *made[2] = {entry->first, entry->second}; /* the reference's closure says what a call means */
    PyObject *closure = call_reference(entry->which, made, entry->second == NULL ? 1 : 2);
    PyObject *done = closure == NULL ? NULL : PyObject_Vectorcall(closure, args, nargsf, kwnames);
    Py_XDECREF(closure);
    return done;
}

static PyObject *rule_handler_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Entry *entry = (Entry *)self;
    if (PyVectorcall_NARGS(nargsf) != 3 || kwnames != NULL) return by_reference(entry, args, nargsf, kwnames);
    PyObject *handler = Py_NewRef(entry->first), *done = NULL;
    PyObject *rule = read_attribute(args[0], str_rule, &entry->reads[READ_RULE]);
    if (rule != NULL) {
        PyObject *call[4] = {rule, args[0], args[1], args[2]};
        done = PyObject_Vectorcall(handler, call, 4, NULL);
        Py_DECREF(rule);
    }
    Py_DECREF(handler);
    if (done == NULL) return NULL;
    Py_DECREF(done);
    Py_RETURN_NONE;
}

static PyObject *class_of(PyObject *obj) { /* obj.__class__, a new reference */
    return plain_class(Py_TYPE(obj)) ? Py_NewRef((PyObject *)Py_TYPE(obj)) : PyObject_GetAttr(obj, str_class);
}

static PyObject *lookup(PyObject *mapping, PyObject *key) { /* mapping.get(key), a new reference */
    if (PyDict_CheckExact(mapping)) {
        PyObject *value = PyDict_GetItemWithError(mapping, key);
        return value == NULL ? (PyErr_Occurred() ? NULL : Py_NewRef(Py_None)) : Py_NewRef(value);
    }
    return PyObject_CallMethodOneArg(mapping, str_get, key);
}

/* The answers node.published holds for the request's class, or replies(node.rule, node) as a tuple,
 * stored there (node.published read again, as the reference's chained assignment does). */
static PyObject *answers_for(Entry *entry, PyObject *replies, PyObject *node, PyObject *cls) {
    PyObject *published = read_attribute(node, str_published, &entry->reads[READ_PUBLISHED]);
    PyObject *answers = published == NULL ? NULL : lookup(published, cls);
    Py_XDECREF(published);
    if (answers != Py_None) return answers;
    Py_DECREF(answers);
    PyObject *rule = read_attribute(node, str_rule, &entry->reads[READ_RULE]);
    if (rule == NULL) return NULL;
    PyObject *call[2] = {rule, node};
    PyObject *made = PyObject_Vectorcall(replies, call, 2, NULL);
    Py_DECREF(rule);
    answers = made == NULL ? NULL : PySequence_Tuple(made);
    Py_XDECREF(made);
    if (answers == NULL) return NULL;
    published = read_attribute(node, str_published, &entry->reads[READ_PUBLISHED]);
    if (published == NULL || PyObject_SetItem(published, cls, answers) < 0) Py_CLEAR(answers);
    Py_XDECREF(published);
    return answers;
}

/* for reply in answers: node.send(sender, reply) */
static int send_each(Entry *entry, PyObject *node, PyObject *sender, PyObject *answers) {
    if (PyTuple_CheckExact(answers)) { /* the items in order, as its iterator gives them */
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(answers); i++) {
            PyObject *call[3] = {node, sender, PyTuple_GET_ITEM(answers, i)};
            PyObject *done = sends_itself(Py_TYPE(node), &entry->reads[READ_SEND])
                                 ? actor_send(node, call + 1, 2)
                                 : PyObject_VectorcallMethod(str_send, call, 3, NULL);
            if (done == NULL) return -1;
            Py_DECREF(done);
        }
        return 0;
    }
    PyObject *iterator = PyObject_GetIter(answers), *reply;
    if (iterator == NULL) return -1;
    while ((reply = PyIter_Next(iterator)) != NULL) {
        PyObject *call[3] = {node, sender, reply};
        PyObject *done = PyObject_VectorcallMethod(str_send, call, 3, NULL);
        Py_DECREF(reply);
        if (done == NULL) break;
        Py_DECREF(done);
    }
    Py_DECREF(iterator);
    return PyErr_Occurred() ? -1 : 0;
}

/* getattr(node.rule, table_name)[msg.sender] = msg if field is None else getattr(msg, field), in
 * Python's order of evaluation (the value, the table, the key): 0, or -1 with Python's error. */
static int record_into(Entry *entry, SlotRead *reads, PyObject *node, PyObject *msg, PyObject *table_name,
                       PyObject *field) {
    PyObject *value = field == Py_None ? Py_NewRef(msg) : read_attribute(msg, field, &reads[0]);
    PyObject *rule = value == NULL ? NULL : read_attribute(node, str_rule, &entry->reads[READ_RULE]);
    PyObject *table = rule == NULL ? NULL : read_attribute(rule, table_name, &reads[1]);
    PyObject *key = table == NULL ? NULL : read_attribute(msg, str_sender, &entry->reads[READ_SENDER]);
    int status = key == NULL ? -1 : PyObject_SetItem(table, key, value);
    Py_XDECREF(key);
    Py_XDECREF(table);
    Py_XDECREF(rule);
    Py_XDECREF(value);
    return status;
}

static PyObject *poll_answer_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Entry *entry = (Entry *)self;
    if (PyVectorcall_NARGS(nargsf) != 3 || kwnames != NULL) return by_reference(entry, args, nargsf, kwnames);
    PyObject *replies = Py_NewRef(entry->first), *keep = Py_NewRef(entry->second), *node = args[0], *msg = args[1];
    int status = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(keep) && status == 0; i++) { /* (table, field) pairs, checked when made */
        PyObject *pair = PyTuple_GET_ITEM(keep, i);
        status = record_into(entry, &entry->reads[READS_FIXED + 2 * i], node, msg, PyTuple_GET_ITEM(pair, 0),
                             PyTuple_GET_ITEM(pair, 1));
    }
    PyObject *cls = status < 0 ? NULL : class_of(msg);
    PyObject *answers = cls == NULL ? NULL : answers_for(entry, replies, node, cls);
    PyObject *sender = answers == NULL ? NULL : read_attribute(msg, str_sender, &entry->reads[READ_SENDER]);
    status = sender == NULL ? -1 : send_each(entry, node, sender, answers);
    Py_XDECREF(sender);
    Py_XDECREF(answers);
    Py_XDECREF(cls);
    Py_DECREF(keep);
    Py_DECREF(replies);
    if (status < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *poll_record_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Entry *entry = (Entry *)self;
    if (PyVectorcall_NARGS(nargsf) != 3 || kwnames != NULL) return by_reference(entry, args, nargsf, kwnames);
    PyObject *table_name = Py_NewRef(entry->first), *field = Py_NewRef(entry->second);
    int status = record_into(entry, &entry->reads[READS_FIXED], args[0], args[1], table_name, field);
    Py_DECREF(field);
    Py_DECREF(table_name);
    if (status < 0) return NULL;
    Py_RETURN_NONE;
}

static int entry_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(((Entry *)self)->first);
    Py_VISIT(((Entry *)self)->second);
    return 0;
}

static int entry_clear(PyObject *self) {
    Py_CLEAR(((Entry *)self)->first);
    Py_CLEAR(((Entry *)self)->second);
    return 0;
}

static void entry_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    entry_clear(self);
    PyMem_Free(((Entry *)self)->reads);
    PyObject_GC_Del(self);
}

static PyObject *entry_repr(PyObject *self) {
    Entry *entry = (Entry *)self;
    static const char *names[REFERENCES] = {[TO_RULE] = "rule_handler", [ANSWER] = "poll_answer", [RECORD] = "poll_record"};
    if (entry->first == NULL) return PyUnicode_FromFormat("<%s>", names[entry->which]);
    if (entry->second == NULL) return PyUnicode_FromFormat("<%s %R>", names[entry->which], entry->first);
    return PyUnicode_FromFormat("<%s %R, %R>", names[entry->which], entry->first, entry->second);
}

static PyTypeObject EntryType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "drfemu.nodes._engine.Entry",
    .tp_basicsize = sizeof(Entry),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Entry, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_traverse = entry_traverse,
    .tp_clear = entry_clear,
    .tp_dealloc = entry_dealloc,
    .tp_repr = entry_repr,
    .tp_doc = "A server's dispatch entry, called as h(node, msg, now): a rule's handler, or a poll's answer or record.",
};

static PyObject *new_entry(int which, PyObject *first, PyObject *second, vectorcallfunc call) {
    Py_ssize_t pairs = which == ANSWER ? PyTuple_GET_SIZE(second) : which == RECORD ? 1 : 0;
    SlotRead *reads = PyMem_Calloc((size_t)(READS_FIXED + 2 * pairs), sizeof(SlotRead));
    if (reads == NULL) return PyErr_NoMemory();
    Entry *made = PyObject_GC_New(Entry, &EntryType);
    if (made == NULL) {
        PyMem_Free(reads);
        return NULL;
    }
    made->reads = reads;
    made->first = Py_NewRef(first);
    made->second = Py_XNewRef(second);
    made->which = which;
    made->vectorcall = call;
    PyObject_GC_Track(made);
    return (PyObject *)made;
}

static PyObject *rule_handler(PyObject *Py_UNUSED(self), PyObject *handler) {
    return new_entry(TO_RULE, handler, NULL, rule_handler_call);
}

static int table_and_field(PyObject *pair) { /* an exact 2-tuple (str, str or None)? */
    return PyTuple_CheckExact(pair) && PyTuple_GET_SIZE(pair) == 2 && PyUnicode_Check(PyTuple_GET_ITEM(pair, 0))
           && (PyTuple_GET_ITEM(pair, 1) == Py_None || PyUnicode_Check(PyTuple_GET_ITEM(pair, 1)));
}

/* The C entry when keep is an exact tuple of (str, str or None) pairs (or absent); otherwise the
 * reference's closure, which gives Python's answer, or the reference's exception. */
static PyObject *poll_answer(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    int plain = nargs == 1 || (nargs == 2 && PyTuple_CheckExact(args[1]));
    for (Py_ssize_t i = 0; plain && nargs == 2 && i < PyTuple_GET_SIZE(args[1]); i++)
        plain = table_and_field(PyTuple_GET_ITEM(args[1], i));
    if (!plain) return call_reference(ANSWER, args, nargs);
    PyObject *keep = nargs == 2 ? Py_NewRef(args[1]) : PyTuple_New(0);
    if (keep == NULL) return NULL;
    PyObject *made = new_entry(ANSWER, args[0], keep, poll_answer_call);
    Py_DECREF(keep);
    return made;
}

static PyObject *poll_record(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyUnicode_Check(args[0]) || !(args[1] == Py_None || PyUnicode_Check(args[1]))) {
        PyErr_SetString(PyExc_TypeError, "poll_record(table, field): a table's name and a field's name or None");
        return NULL;
    }
    return new_entry(RECORD, args[0], args[1], poll_record_call);
}

/* call_on_tick(actor, now): `actor.on_tick(now)`, the tick driver's action, without a frame of its own. */
static PyObject *call_on_tick(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "call_on_tick(actor, now) takes 2 arguments, %zd given", nargs);
        return NULL;
    }
    PyObject *done = PyObject_VectorcallMethod(str_on_tick, args, 2, NULL);
    if (done == NULL) return NULL;
    Py_DECREF(done);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"call_on_tick", (PyCFunction)(void (*)(void))call_on_tick, METH_FASTCALL,
     "call_on_tick(actor, now): actor.on_tick(now), None returned (the tick driver's action)"},
    {"poll_answer", (PyCFunction)(void (*)(void))poll_answer, METH_FASTCALL,
     "poll_answer(replies, keep=()) -> h, with h(node, msg, now) storing msg as keep says, then sending node's "
     "published answers to msg.sender"},
    {"poll_record", (PyCFunction)(void (*)(void))poll_record, METH_FASTCALL,
     "poll_record(table, field) -> h, with h(node, msg, now) storing msg (or its field) in node.rule.<table>"},
    {"rule_handler", rule_handler, METH_O,
     "rule_handler(handler) -> h, with h(node, msg, now) calling handler(node.rule, node, msg, now)"},
    {"send_method", send_method, METH_O, "send_method(cls) -> the C `send` method for class cls (an Actor)"},
    {"count_types", count_types, METH_O, "count_types(out) -> {message type: count}, in order of first appearance"},
    {"count_items", (PyCFunction)(void (*)(void))count_items, METH_FASTCALL,
     "count_items(out, cls, field) -> the items the messages of type cls carry in field, summed"},
    {"fire_each", (PyCFunction)(void (*)(void))fire_each, METH_FASTCALL,
     "fire_each(actors, action, now, batch, flush): action(actor, now) for each actor, outboxes moved"},
    {"deliver", (PyCFunction)(void (*)(void))deliver, METH_FASTCALL,
     "deliver(deliveries, mailboxes, actors, inline_drain, now, batch, flush): one instant's delivery phase"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "nodes._engine", NULL, -1, methods};

PyMODINIT_FUNC PyInit__engine(void) {
    str_dispatch = PyUnicode_InternFromString("DISPATCH");
    str_outbox = PyUnicode_InternFromString("outbox");
    str_drain = PyUnicode_InternFromString("drain");
    str_check_handled = PyUnicode_InternFromString("check_handled");
    str_class = PyUnicode_InternFromString("__class__");
    str_rule = PyUnicode_InternFromString("rule");
    str_idle_tick = PyUnicode_InternFromString("idle_tick");
    if (!str_dispatch || !str_outbox || !str_drain || !str_check_handled || !str_class || !str_rule || !str_idle_tick)
        return NULL;
    str_published = PyUnicode_InternFromString("published");
    str_sender = PyUnicode_InternFromString("sender");
    str_send = PyUnicode_InternFromString("send");
    str_get = PyUnicode_InternFromString("get");
    str_on_tick = PyUnicode_InternFromString("on_tick");
    if (!str_published || !str_sender || !str_send || !str_get || !str_on_tick) return NULL;
    if (PyType_Ready(&EntryType) < 0) return NULL;
    if (main_interpreter_only("drfemu.nodes._engine") < 0) return NULL;
    object_class = _PyType_Lookup(&PyBaseObject_Type, str_class);
    if (object_class == NULL) {
        PyErr_SetString(PyExc_ImportError, "nodes._engine: object has no __class__ descriptor");
        return NULL;
    }
    Py_INCREF(object_class);
    return PyModule_Create(&module);
}
