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
 * fire_each(actors, action, now, batch, flush) -> None
 *   A periodic driver's round (nodes.runtime.fire_each_python): action(actor, now) for each
 *   actor of the list in turn (read by index, as Python's list iterator does), each actor's
 *   outbox then moved as in `deliver`.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

static PyObject *str_dispatch, *str_outbox, *str_drain, *str_check_handled;

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
        PyObject *msg = PyList_GET_ITEM(messages, i);
        PyObject *handler = PyDict_GetItemWithError(dispatch, (PyObject *)Py_TYPE(msg)); /* borrowed */
        if (handler == NULL) {
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
        Py_INCREF(msg);
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
    if (!PyList_Check(outbox)) {
        PyErr_SetString(PyExc_TypeError, "an actor's outbox is a list");
        status = -1;
    } else if (PyList_GET_SIZE(outbox) > 0) {
        if (batch == Py_None) {
            PyObject *done = PyObject_CallOneArg(flush, actor);
            status = done == NULL ? -1 : 0;
            Py_XDECREF(done);
        } else {
            Py_ssize_t end = PyList_GET_SIZE(batch);
            status = PyList_SetSlice(batch, end, end, outbox);
            if (status == 0) status = PyList_SetSlice(outbox, 0, PyList_GET_SIZE(outbox), NULL);
        }
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
    if (!PyList_Check(deliveries) || !PyList_Check(mailboxes) || !PyList_Check(actors) || !PyList_Check(inline_drain)
        || !(batch == Py_None || PyList_Check(batch))) {
        PyErr_SetString(PyExc_TypeError, "deliver: deliveries, mailboxes, actors and inline_drain are lists");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(deliveries), boxes = PyList_GET_SIZE(mailboxes);
    Py_ssize_t *ready = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(n > 0 ? n : 1));
    if (ready == NULL) return PyErr_NoMemory();
    Py_ssize_t woken = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(deliveries, i);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2) {
            PyErr_SetString(PyExc_TypeError, "a delivery is a (dst, msg) tuple");
            goto fail;
        }
        Py_ssize_t dst = PyLong_AsSsize_t(PyTuple_GET_ITEM(item, 0));
        if (dst == -1 && PyErr_Occurred()) goto fail;
        if (dst < 0 || dst >= boxes) {
            PyErr_Format(PyExc_IndexError, "a delivery to actor %zd, of %zd", dst, boxes);
            goto fail;
        }
        PyObject *mailbox = PyList_GET_ITEM(mailboxes, dst);
        if (!PyList_Check(mailbox)) {
            PyErr_SetString(PyExc_TypeError, "a mailbox is a list");
            goto fail;
        }
        if (PyList_GET_SIZE(mailbox) == 0) ready[woken++] = dst;
        if (PyList_Append(mailbox, PyTuple_GET_ITEM(item, 1)) < 0) goto fail;
    }
    for (Py_ssize_t k = 0; k < woken; k++) {
        Py_ssize_t dst = ready[k];
        if (dst >= PyList_GET_SIZE(mailboxes) || dst >= PyList_GET_SIZE(actors)
            || dst >= PyList_GET_SIZE(inline_drain)) {
            PyErr_SetString(PyExc_IndexError, "the runtime's actor lists shrank during a delivery");
            goto fail;
        }
        PyObject *actor = PyList_GET_ITEM(actors, dst);
        PyObject *messages = PyList_GET_ITEM(mailboxes, dst);
        PyObject *fresh = PyList_New(0);
        if (fresh == NULL) goto fail;
        Py_INCREF(actor);
        Py_INCREF(messages);
        PyList_SetItem(mailboxes, dst, fresh); /* steals fresh, releases the old reference */
        int flag = PyObject_IsTrue(PyList_GET_ITEM(inline_drain, dst));
        int status = flag < 0 ? -1 : wake(actor, messages, flag, now);
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
    if (!PyList_Check(out)) {
        PyErr_SetString(PyExc_TypeError, "count_types(out): out is a list");
        return NULL;
    }
    PyObject *kinds = PyDict_New();
    if (kinds == NULL) return NULL;
    PyObject *run_type = NULL; /* borrowed: kept alive by the messages of `out` */
    Py_ssize_t run = 0;
    Py_ssize_t n = PyList_GET_SIZE(out);
    for (Py_ssize_t i = 0; i <= n; i++) {
        PyObject *type = NULL;
        if (i < n) {
            PyObject *item = PyList_GET_ITEM(out, i);
            if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2) {
                PyErr_SetString(PyExc_TypeError, "a send is a (dst, msg) tuple");
                goto fail;
            }
            type = (PyObject *)Py_TYPE(PyTuple_GET_ITEM(item, 1));
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
    int is_slot = Py_IS_TYPE(slot, &PyMemberDescr_Type)
                  && ((PyMemberDescrObject *)slot)->d_member->type == T_OBJECT_EX;
    Py_ssize_t offset = is_slot ? ((PyMemberDescrObject *)slot)->d_member->offset : -1;
    Py_DECREF(slot);
    if (!is_slot || (outbox_offset >= 0 && offset != outbox_offset)) {
        PyErr_SetString(PyExc_TypeError, "send_method(cls): cls keeps its outbox in a __slots__ entry");
        return NULL;
    }
    outbox_offset = offset;
    return PyDescr_NewMethod((PyTypeObject *)cls, &send_def);
}

static PyObject *count_items(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyList_Check(args[0]) || !PyUnicode_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "count_items(out: list, cls, field: str)");
        return NULL;
    }
    PyObject *out = args[0], *cls = args[1], *field = args[2];
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(out); i++) {
        PyObject *item = PyList_GET_ITEM(out, i);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2) {
            PyErr_SetString(PyExc_TypeError, "a send is a (dst, msg) tuple");
            return NULL;
        }
        PyObject *msg = PyTuple_GET_ITEM(item, 1);
        if ((PyObject *)Py_TYPE(msg) != cls) continue;
        PyObject *items = PyObject_GetAttr(msg, field);
        if (items == NULL) return NULL;
        Py_ssize_t length = PyObject_Length(items);
        Py_DECREF(items);
        if (length < 0) return NULL;
        total += length;
    }
    return PyLong_FromSsize_t(total);
}

static PyObject *fire_each(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5 || !PyList_Check(args[0]) || !(args[3] == Py_None || PyList_Check(args[3]))) {
        PyErr_SetString(PyExc_TypeError, "fire_each(actors: list, action, now, batch: list | None, flush)");
        return NULL;
    }
    PyObject *actors = args[0], *action = args[1], *now = args[2], *batch = args[3], *flush = args[4];
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(actors); i++) {
        PyObject *actor = PyList_GET_ITEM(actors, i);
        Py_INCREF(actor);
        PyObject *call[2] = {actor, now};
        PyObject *done = PyObject_Vectorcall(action, call, 2, NULL);
        int status = done == NULL ? -1 : move_outbox(actor, batch, flush);
        Py_XDECREF(done);
        Py_DECREF(actor);
        if (status < 0) return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
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
    if (!str_dispatch || !str_outbox || !str_drain || !str_check_handled) return NULL;
    return PyModule_Create(&module);
}
