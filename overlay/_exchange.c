/* The overlay exchanges of `nodes.overlay_peer.OverlayPeer` in C: the two rounds a server
 * starts every tick (`cyclon_round`, `gradient_round`) and the four handlers of the answers
 * and replies, with `overlay.cyclon.Cyclon`'s and `overlay.gradient.Gradient`'s exchange
 * steps inlined. Every server runs them every tick, so they are most of a distributed run's
 * Python frames (issue 18). The Python methods stay the reference: each C method does what
 * its reference does, step for step — the same state changes, the same random draws (through
 * the same `sample_values` and `rng.random`), the same messages in the same order — and tests run
 * whole emulations both ways and compare every event.
 *
 * peer_methods(peer, cyclon, gradient, messages, functions, references) -> {name: method}
 *   peer, cyclon, gradient: the classes OverlayPeer, Cyclon, Gradient (state in __slots__);
 *   messages: (CyclonShuffle, CyclonReply, GradientShuffle, GradientReply, JoinRequest);
 *   functions: (sample_values, merge, pop_oldest, rank), as overlay.cyclon and overlay.gradient
 *   use them;
 *   references: {name: the Python method}, called instead when a node holds a subclass of
 *   Cyclon or Gradient (e.g. KompicsGradient), or a message of another class arrives.
 * The module keeps one configuration: the last call's.
 *
 * Messages are made as their class's generated __init__ makes them (every field set, nothing
 * else), by allocating the instance and filling its slots. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#define SLOT(obj, offset) (*(PyObject **)((char *)(obj) + (offset)))

static PyTypeObject *peer_type, *cyclon_type, *gradient_type;
static PyTypeObject *cyclon_shuffle_type, *cyclon_reply_type, *gradient_shuffle_type, *gradient_reply_type;
static PyObject *join_request, *sample_fn, *merge_fn, *pop_oldest_fn, *rank_fn;
static PyObject *one, *minus_one, *zero, *empty_tuple;
static PyObject *str_descriptor, *str_offer, *str_random;

enum { CYCLON_ROUND, GRADIENT_ROUND, ON_CYCLON_SHUFFLE, ON_CYCLON_REPLY, ON_GRADIENT_SHUFFLE, ON_GRADIENT_REPLY,
       METHODS };
static const char *method_names[METHODS] = {"cyclon_round", "gradient_round", "_on_cyclon_shuffle",
                                            "_on_cyclon_reply", "_on_gradient_shuffle", "_on_gradient_reply"};
static PyObject *references[METHODS];

static Py_ssize_t p_id, p_outbox, p_cyclon, p_gradient, p_cyclon_exchanges, p_gradient_exchanges, p_gossip_gradient,
    p_rejoin_via;
static Py_ssize_t c_me, c_size, c_length, c_rng, c_entries, c_partner, c_sent;
static Py_ssize_t g_me, g_size, g_utility, g_max_age, g_rng, g_clock, g_own, g_view, g_pending, g_stale;
static Py_ssize_t cs_entries, cr_sender, cr_entries, gs_descriptors, gr_descriptors;

/* -- slots -------------------------------------------------------------------------------- */

static PyObject *get(PyObject *obj, Py_ssize_t offset, const char *name) { /* borrowed */
    PyObject *value = SLOT(obj, offset);
    if (value == NULL) PyErr_Format(PyExc_AttributeError, "'%s' object has no attribute '%s'", Py_TYPE(obj)->tp_name, name);
    return value;
}

static void put(PyObject *obj, Py_ssize_t offset, PyObject *value) { /* value is borrowed */
    PyObject *old = SLOT(obj, offset);
    Py_INCREF(value);
    SLOT(obj, offset) = value;
    Py_XDECREF(old);
}

static void put_new(PyObject *obj, Py_ssize_t offset, PyObject *value) { /* steals value */
    PyObject *old = SLOT(obj, offset);
    SLOT(obj, offset) = value;
    Py_XDECREF(old);
}

static PyObject *get_list(PyObject *obj, Py_ssize_t offset, const char *name) {
    PyObject *value = get(obj, offset, name);
    if (value != NULL && !PyList_Check(value)) {
        PyErr_Format(PyExc_TypeError, "%s is a list", name);
        return NULL;
    }
    return value;
}

static int increment(PyObject *obj, Py_ssize_t offset, const char *name) { /* obj.name += 1 */
    PyObject *count = get(obj, offset, name);
    if (count == NULL) return -1;
    PyObject *next = PyNumber_Add(count, one);
    if (next == NULL) return -1;
    put_new(obj, offset, next);
    return 0;
}

static int truth_of(PyObject *a, PyObject *b, int op) { /* bool(a <op> b), as Python's operator */
    PyObject *result = PyObject_RichCompare(a, b, op);
    if (result == NULL) return -1;
    int truth = PyObject_IsTrue(result);
    Py_DECREF(result);
    return truth;
}

static PyObject *node_of(PyObject *descriptor) { /* descriptor[1], borrowed */
    if (PyTuple_Check(descriptor) && PyTuple_GET_SIZE(descriptor) >= 3) return PyTuple_GET_ITEM(descriptor, 1);
    PyErr_SetString(PyExc_TypeError, "a descriptor is a (utility, node, stamp) tuple");
    return NULL;
}

static PyObject *sender_of(PyObject *descriptors) { /* descriptors[0][1], borrowed */
    if (!PyTuple_Check(descriptors) || PyTuple_GET_SIZE(descriptors) == 0) {
        PyErr_SetString(PyExc_IndexError, "tuple index out of range");
        return NULL;
    }
    return node_of(PyTuple_GET_ITEM(descriptors, 0));
}

static PyObject *with_first(PyObject *first, PyObject *rest) { /* (first, *rest) for a tuple or list */
    PyObject *items = PySequence_Fast(rest, "a sequence of descriptors");
    if (items == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(items);
    PyObject **item = PySequence_Fast_ITEMS(items);
    PyObject *result = PyTuple_New(n + 1);
    if (result != NULL) {
        Py_INCREF(first);
        PyTuple_SET_ITEM(result, 0, first);
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_INCREF(item[i]);
            PyTuple_SET_ITEM(result, i + 1, item[i]);
        }
    }
    Py_DECREF(items);
    return result;
}

static PyObject *new_message(PyTypeObject *type, Py_ssize_t offset0, PyObject *value0, Py_ssize_t offset1,
                             PyObject *value1) { /* value1 may be NULL for a one-field message; borrows */
    PyObject *msg = type->tp_alloc(type, 0);
    if (msg == NULL) return NULL;
    put(msg, offset0, value0);
    if (value1 != NULL) put(msg, offset1, value1);
    return msg;
}

static int append_pair(PyObject *list, PyObject *a, PyObject *b) { /* list.append((a, b)) */
    PyObject *pair = PyTuple_Pack(2, a, b);
    if (pair == NULL) return -1;
    int status = PyList_Append(list, pair);
    Py_DECREF(pair);
    return status;
}

static PyObject *call_reference(int which, PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    PyObject *full[3] = {self, nargs > 0 ? args[0] : NULL, nargs > 1 ? args[1] : NULL};
    return PyObject_Vectorcall(references[which], full, (size_t)nargs + 1, NULL);
}

/* -- Gradient (exact class) ------------------------------------------------------------- */

static PyObject *own_descriptor(PyObject *g, PyObject *now) { /* Gradient.descriptor(now), new ref */
    if (!Py_IS_TYPE(g, gradient_type)) return PyObject_CallMethodOneArg(g, str_descriptor, now);
    PyObject *own = get(g, g_own, "_own"), *utility = get(g, g_utility, "utility");
    if (own == NULL || utility == NULL) return NULL;
    if (!PyTuple_Check(own) || PyTuple_GET_SIZE(own) < 3) {
        PyErr_SetString(PyExc_TypeError, "a descriptor is a (utility, node, stamp) tuple");
        return NULL;
    }
    int differs = truth_of(PyTuple_GET_ITEM(own, 2), now, Py_NE);
    if (differs == 0) differs = truth_of(PyTuple_GET_ITEM(own, 0), utility, Py_NE);
    if (differs < 0) return NULL;
    if (differs) {
        PyObject *me = get(g, g_me, "me");
        if (me == NULL) return NULL;
        own = PyTuple_Pack(3, utility, me, now);
        if (own == NULL) return NULL;
        put(g, g_own, own);
        return own;
    }
    Py_INCREF(own);
    return own;
}

static int offer(PyObject *g, PyObject *descriptors) { /* Gradient.offer(descriptors) */
    if (!Py_IS_TYPE(g, gradient_type)) {
        PyObject *done = PyObject_CallMethodOneArg(g, str_offer, descriptors);
        Py_XDECREF(done);
        return done == NULL ? -1 : 0;
    }
    PyObject *pending = get_list(g, g_pending, "_pending");
    if (pending == NULL) return -1;
    return PyList_SetSlice(pending, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, descriptors); /* extend */
}

static int gradient_merge(PyObject *g) { /* Gradient._merge */
    PyObject *candidates = get_list(g, g_pending, "_pending"), *view = get(g, g_view, "_view");
    if (candidates == NULL || view == NULL) return -1;
    if (PyList_SetSlice(candidates, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, view) < 0) return -1; /* candidates += view */
    PyObject *clock = get(g, g_clock, "_clock"), *max_age = get(g, g_max_age, "max_age");
    PyObject *me = get(g, g_me, "me"), *utility = get(g, g_utility, "utility"), *size = get(g, g_size, "size");
    if (clock == NULL || max_age == NULL || me == NULL || utility == NULL || size == NULL) return -1;
    PyObject *oldest = PyNumber_Subtract(clock, max_age);
    if (oldest == NULL) return -1;
    Py_INCREF(candidates);
    PyObject *args[5] = {me, utility, candidates, size, oldest};
    PyObject *ranked = PyObject_Vectorcall(rank_fn, args, 5, NULL);
    Py_DECREF(oldest);
    Py_DECREF(candidates);
    if (ranked == NULL) return -1;
    put_new(g, g_view, ranked);
    PyObject *fresh = PyList_New(0);
    if (fresh == NULL) return -1;
    put_new(g, g_pending, fresh);
    put(g, g_stale, Py_False);
    return 0;
}

static int merge_if_needed(PyObject *g) { /* `if self._pending or self._stale: self._merge()` */
    PyObject *pending = get(g, g_pending, "_pending"), *stale = get(g, g_stale, "_stale");
    if (pending == NULL || stale == NULL) return -1;
    int needed = PyObject_IsTrue(pending);
    if (needed == 0) needed = PyObject_IsTrue(stale);
    if (needed < 0) return -1;
    return needed ? gradient_merge(g) : 0;
}

/* Gradient.initiate(now): 1 with *started = (partner, GradientShuffle), 0 with an empty view, -1 on error */
static int gradient_initiate(PyObject *g, PyObject *now, PyObject **started) {
    put(g, g_clock, now);
    if (merge_if_needed(g) < 0) return -1;
    PyObject *view = get(g, g_view, "_view");
    if (view == NULL) return -1;
    int any = PyObject_IsTrue(view);
    if (any <= 0) return any;
    PyObject *items = PySequence_Fast(view, "the gradient view is a sequence");
    if (items == NULL) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(items);
    PyObject *rng = get(g, g_rng, "rng");
    PyObject *draw = rng == NULL ? NULL : PyObject_CallMethodNoArgs(rng, str_random);
    double r = draw == NULL ? -1.0 : PyFloat_AsDouble(draw);
    Py_XDECREF(draw);
    if (r == -1.0 && PyErr_Occurred()) goto fail;
    Py_ssize_t index = (Py_ssize_t)(r * (double)n);
    if (index < 0 || index >= n) {
        PyErr_SetString(PyExc_IndexError, "list index out of range");
        goto fail;
    }
    PyObject *partner = node_of(PySequence_Fast_GET_ITEM(items, index));
    if (partner == NULL) goto fail;
    Py_INCREF(partner);
    PyObject *own = own_descriptor(g, now);
    PyObject *descriptors = own == NULL ? NULL : with_first(own, items);
    Py_XDECREF(own);
    PyObject *shuffle = descriptors == NULL ? NULL
                        : new_message(gradient_shuffle_type, gs_descriptors, descriptors, 0, NULL);
    Py_XDECREF(descriptors);
    *started = shuffle == NULL ? NULL : PyTuple_Pack(2, partner, shuffle);
    Py_DECREF(partner);
    Py_XDECREF(shuffle);
    Py_DECREF(items);
    return *started == NULL ? -1 : 1;
fail:
    Py_DECREF(items);
    return -1;
}

/* -- Cyclon (exact class) --------------------------------------------------------------- */

static PyObject *draw_sample(PyObject *c, PyObject *entries, PyObject *k) { /* sample_values(rng, entries, k) */
    PyObject *rng = get(c, c_rng, "rng");
    if (rng == NULL) return NULL;
    PyObject *args[3] = {rng, entries, k};
    return PyObject_Vectorcall(sample_fn, args, 3, NULL);
}

static int cyclon_merge(PyObject *c, PyObject *entries, PyObject *received, PyObject *replaceable) {
    PyObject *me = get(c, c_me, "me"), *size = get(c, c_size, "size");
    if (me == NULL || size == NULL) return -1;
    PyObject *args[5] = {entries, me, size, received, replaceable};
    PyObject *done = PyObject_Vectorcall(merge_fn, args, 5, NULL);
    Py_XDECREF(done);
    return done == NULL ? -1 : 0;
}

/* Cyclon.initiate(own): 1 with *started = (partner, CyclonShuffle), 0 with an empty view, -1 on error */
static int cyclon_initiate(PyObject *c, PyObject *own, PyObject **started) {
    PyObject *entries = get(c, c_entries, "entries");
    if (entries == NULL) return -1;
    PyObject *oldest = PyObject_Vectorcall(pop_oldest_fn, &entries, 1, NULL);
    if (oldest == NULL) return -1;
    if (oldest == Py_None) {
        Py_DECREF(oldest);
        return 0;
    }
    PyObject *length = get(c, c_length, "length");
    PyObject *k = NULL, *chosen = NULL, *sent = NULL, *shuffle = NULL;
    if (length == NULL) goto done;
    k = PyNumber_Subtract(length, one);
    if (k == NULL) goto done;
    chosen = draw_sample(c, entries, k);
    if (chosen == NULL) goto done;
    put(c, c_partner, oldest);
    put(c, c_sent, chosen);
    sent = with_first(own, chosen);
    if (sent == NULL) goto done;
    shuffle = new_message(cyclon_shuffle_type, cs_entries, sent, 0, NULL);
    if (shuffle == NULL) goto done;
    *started = PyTuple_Pack(2, oldest, shuffle);
done:
    Py_XDECREF(shuffle);
    Py_XDECREF(sent);
    Py_XDECREF(chosen);
    Py_XDECREF(k);
    Py_DECREF(oldest);
    return *started == NULL ? -1 : 1;
}

/* -- the methods ------------------------------------------------------------------------ */

static PyObject *peer_part(PyObject *self, Py_ssize_t offset, const char *name, PyTypeObject *exact) {
    /* self.cyclon or self.gradient (borrowed), or NULL without an error when it is not of class `exact` */
    PyObject *part = SLOT(self, offset);
    if (part == NULL) {
        PyErr_Format(PyExc_AttributeError, "'%s' object has no attribute '%s'", Py_TYPE(self)->tp_name, name);
        return NULL;
    }
    return exact == NULL || Py_IS_TYPE(part, exact) ? part : NULL;
}

#define CHECK_ARGS(count, usage)                                                  \
    if (nargs != (count)) {                                                       \
        PyErr_Format(PyExc_TypeError, usage " takes %d arguments, %zd given", (count), nargs); \
        return NULL;                                                              \
    }

static PyObject *cyclon_round(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CHECK_ARGS(1, "cyclon_round(now)");
    PyObject *c = peer_part(self, p_cyclon, "cyclon", cyclon_type);
    if (c == NULL) return PyErr_Occurred() ? NULL : call_reference(CYCLON_ROUND, self, args, nargs);
    PyObject *g = peer_part(self, p_gradient, "gradient", NULL), *outbox = get_list(self, p_outbox, "outbox");
    if (g == NULL || outbox == NULL) return NULL;
    PyObject *own = own_descriptor(g, args[0]);
    if (own == NULL) return NULL;
    PyObject *started = NULL;
    int status = cyclon_initiate(c, own, &started);
    Py_DECREF(own);
    if (status < 0) return NULL;
    if (status == 1) {
        status = PyList_Append(outbox, started);
        Py_DECREF(started);
        if (status < 0 || increment(self, p_cyclon_exchanges, "cyclon_exchanges") < 0) return NULL;
        Py_RETURN_NONE;
    }
    PyObject *via = get(self, p_rejoin_via, "rejoin_via");
    int rejoin = via == NULL ? -1 : truth_of(via, zero, Py_GE);
    if (rejoin < 0) return NULL;
    if (rejoin) {
        PyObject *id = get(self, p_id, "id"), *size = get(c, c_size, "size");
        if (id == NULL || size == NULL) return NULL;
        PyObject *request = PyObject_CallFunctionObjArgs(join_request, id, size, NULL);
        if (request == NULL) return NULL;
        status = append_pair(outbox, via, request);
        Py_DECREF(request);
        if (status < 0) return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *gradient_round(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CHECK_ARGS(1, "gradient_round(now)");
    PyObject *g = peer_part(self, p_gradient, "gradient", gradient_type);
    if (g == NULL) return PyErr_Occurred() ? NULL : call_reference(GRADIENT_ROUND, self, args, nargs);
    PyObject *gossip = get(self, p_gossip_gradient, "gossip_gradient");
    int on = gossip == NULL ? -1 : PyObject_IsTrue(gossip);
    if (on <= 0) return on < 0 ? NULL : Py_NewRef(Py_None);
    PyObject *outbox = get_list(self, p_outbox, "outbox");
    if (outbox == NULL) return NULL;
    PyObject *started = NULL;
    int status = gradient_initiate(g, args[0], &started);
    if (status <= 0) return status < 0 ? NULL : Py_NewRef(Py_None);
    status = PyList_Append(outbox, started);
    Py_DECREF(started);
    if (status < 0 || increment(self, p_gradient_exchanges, "gradient_exchanges") < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *on_cyclon_shuffle(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CHECK_ARGS(2, "_on_cyclon_shuffle(msg, now)");
    PyObject *c = peer_part(self, p_cyclon, "cyclon", cyclon_type);
    if (c == NULL || !Py_IS_TYPE(args[0], cyclon_shuffle_type))
        return PyErr_Occurred() ? NULL : call_reference(ON_CYCLON_SHUFFLE, self, args, nargs);
    PyObject *g = peer_part(self, p_gradient, "gradient", NULL), *outbox = get_list(self, p_outbox, "outbox");
    PyObject *received = get(args[0], cs_entries, "entries");
    if (g == NULL || outbox == NULL || received == NULL) return NULL;
    PyObject *sender = sender_of(received), *entries = get(c, c_entries, "entries");
    PyObject *length = get(c, c_length, "length"), *me = get(c, c_me, "me");
    if (sender == NULL || entries == NULL || length == NULL || me == NULL) return NULL;
    /* Cyclon.answer */
    PyObject *chosen = draw_sample(c, entries, length);
    if (chosen == NULL) return NULL;
    PyObject *reply = NULL;
    if (cyclon_merge(c, entries, received, chosen) == 0)
        reply = new_message(cyclon_reply_type, cr_sender, me, cr_entries, chosen);
    Py_DECREF(chosen);
    if (reply == NULL) return NULL;
    int status = append_pair(outbox, sender, reply);
    Py_DECREF(reply);
    if (status < 0 || offer(g, received) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *on_cyclon_reply(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CHECK_ARGS(2, "_on_cyclon_reply(msg, now)");
    PyObject *c = peer_part(self, p_cyclon, "cyclon", cyclon_type);
    if (c == NULL || !Py_IS_TYPE(args[0], cyclon_reply_type))
        return PyErr_Occurred() ? NULL : call_reference(ON_CYCLON_REPLY, self, args, nargs);
    PyObject *g = peer_part(self, p_gradient, "gradient", NULL), *entries = get(c, c_entries, "entries");
    PyObject *sender = get(args[0], cr_sender, "sender"), *received = get(args[0], cr_entries, "entries");
    PyObject *partner = get(c, c_partner, "_partner");
    if (g == NULL || entries == NULL || sender == NULL || received == NULL || partner == NULL) return NULL;
    /* Cyclon.complete */
    int answered = truth_of(sender, partner, Py_EQ);
    if (answered < 0) return NULL;
    PyObject *replaceable = empty_tuple;
    if (answered) {
        replaceable = get(c, c_sent, "_sent");
        if (replaceable == NULL) return NULL;
        Py_INCREF(replaceable);
        put(c, c_sent, empty_tuple);
        put(c, c_partner, minus_one);
    } else {
        Py_INCREF(replaceable);
    }
    int status = cyclon_merge(c, entries, received, replaceable);
    Py_DECREF(replaceable);
    if (status < 0 || offer(g, received) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *on_gradient_shuffle(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CHECK_ARGS(2, "_on_gradient_shuffle(msg, now)");
    PyObject *g = peer_part(self, p_gradient, "gradient", gradient_type);
    if (g == NULL || !Py_IS_TYPE(args[0], gradient_shuffle_type))
        return PyErr_Occurred() ? NULL : call_reference(ON_GRADIENT_SHUFFLE, self, args, nargs);
    PyObject *outbox = get_list(self, p_outbox, "outbox"), *received = get(args[0], gs_descriptors, "descriptors");
    if (outbox == NULL || received == NULL) return NULL;
    PyObject *sender = sender_of(received);
    if (sender == NULL) return NULL;
    /* Gradient.answer: the view as last merged, then the request's descriptors queued */
    put(g, g_clock, args[1]);
    if (offer(g, received) < 0) return NULL;
    PyObject *view = get(g, g_view, "_view");
    if (view == NULL) return NULL;
    PyObject *own = own_descriptor(g, args[1]);
    if (own == NULL) return NULL;
    PyObject *descriptors = with_first(own, view);
    Py_DECREF(own);
    if (descriptors == NULL) return NULL;
    PyObject *reply = new_message(gradient_reply_type, gr_descriptors, descriptors, 0, NULL);
    Py_DECREF(descriptors);
    if (reply == NULL) return NULL;
    int status = append_pair(outbox, sender, reply);
    Py_DECREF(reply);
    if (status < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *on_gradient_reply(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CHECK_ARGS(2, "_on_gradient_reply(msg, now)");
    PyObject *g = peer_part(self, p_gradient, "gradient", gradient_type);
    if (g == NULL || !Py_IS_TYPE(args[0], gradient_reply_type))
        return PyErr_Occurred() ? NULL : call_reference(ON_GRADIENT_REPLY, self, args, nargs);
    PyObject *received = get(args[0], gr_descriptors, "descriptors");
    if (received == NULL || offer(g, received) < 0) return NULL; /* Gradient.complete */
    Py_RETURN_NONE;
}

static PyMethodDef method_defs[METHODS] = {
    {"cyclon_round", (PyCFunction)(void (*)(void))cyclon_round, METH_FASTCALL,
     "Start a Cyclon shuffle (C; reference: OverlayPeer.cyclon_round)."},
    {"gradient_round", (PyCFunction)(void (*)(void))gradient_round, METH_FASTCALL,
     "Start a gradient exchange (C; reference: OverlayPeer.gradient_round)."},
    {"_on_cyclon_shuffle", (PyCFunction)(void (*)(void))on_cyclon_shuffle, METH_FASTCALL,
     "Answer a Cyclon shuffle (C; reference: OverlayPeer._on_cyclon_shuffle)."},
    {"_on_cyclon_reply", (PyCFunction)(void (*)(void))on_cyclon_reply, METH_FASTCALL,
     "Merge a Cyclon reply (C; reference: OverlayPeer._on_cyclon_reply)."},
    {"_on_gradient_shuffle", (PyCFunction)(void (*)(void))on_gradient_shuffle, METH_FASTCALL,
     "Answer a gradient exchange (C; reference: OverlayPeer._on_gradient_shuffle)."},
    {"_on_gradient_reply", (PyCFunction)(void (*)(void))on_gradient_reply, METH_FASTCALL,
     "Queue a gradient reply (C; reference: OverlayPeer._on_gradient_reply)."},
};

/* -- configuration ---------------------------------------------------------------------- */

static int offset_of(PyObject *cls, const char *name, Py_ssize_t *out) {
    PyObject *slot = PyObject_GetAttrString(cls, name);
    if (slot == NULL) return -1;
    int is_slot = Py_IS_TYPE(slot, &PyMemberDescr_Type)
                  && ((PyMemberDescrObject *)slot)->d_member->type == T_OBJECT_EX;
    if (is_slot) *out = ((PyMemberDescrObject *)slot)->d_member->offset;
    Py_DECREF(slot);
    if (!is_slot) {
        PyErr_Format(PyExc_TypeError, "%R keeps '%s' in no __slots__ entry", cls, name);
        return -1;
    }
    return 0;
}

static int class_arg(PyObject *obj, PyTypeObject **out) {
    if (!PyType_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "peer_methods: %R is not a class", obj);
        return -1;
    }
    Py_INCREF(obj);
    Py_XSETREF(*out, (PyTypeObject *)obj);
    return 0;
}

static PyObject *peer_methods(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6 || !PyTuple_Check(args[3]) || PyTuple_GET_SIZE(args[3]) != 5 || !PyTuple_Check(args[4])
        || PyTuple_GET_SIZE(args[4]) != 4 || !PyDict_Check(args[5])) {
        PyErr_SetString(PyExc_TypeError,
                        "peer_methods(peer, cyclon, gradient, (CyclonShuffle, CyclonReply, GradientShuffle, "
                        "GradientReply, JoinRequest), (sample_values, merge, pop_oldest, rank), references: dict)");
        return NULL;
    }
    PyObject *messages = args[3], *functions = args[4];
    PyObject *peer = args[0], *cyclon = args[1], *gradient = args[2];
    if (class_arg(peer, &peer_type) < 0 || class_arg(cyclon, &cyclon_type) < 0
        || class_arg(gradient, &gradient_type) < 0
        || class_arg(PyTuple_GET_ITEM(messages, 0), &cyclon_shuffle_type) < 0
        || class_arg(PyTuple_GET_ITEM(messages, 1), &cyclon_reply_type) < 0
        || class_arg(PyTuple_GET_ITEM(messages, 2), &gradient_shuffle_type) < 0
        || class_arg(PyTuple_GET_ITEM(messages, 3), &gradient_reply_type) < 0)
        return NULL;
    PyObject *gs = (PyObject *)gradient_shuffle_type, *gr = (PyObject *)gradient_reply_type;
    PyObject *cs = (PyObject *)cyclon_shuffle_type, *cr = (PyObject *)cyclon_reply_type;
    const struct { PyObject *cls; const char *name; Py_ssize_t *offset; } slots[] = {
        {peer, "id", &p_id}, {peer, "outbox", &p_outbox}, {peer, "cyclon", &p_cyclon},
        {peer, "gradient", &p_gradient}, {peer, "cyclon_exchanges", &p_cyclon_exchanges},
        {peer, "gradient_exchanges", &p_gradient_exchanges}, {peer, "gossip_gradient", &p_gossip_gradient},
        {peer, "rejoin_via", &p_rejoin_via},
        {cyclon, "me", &c_me}, {cyclon, "size", &c_size}, {cyclon, "length", &c_length}, {cyclon, "rng", &c_rng},
        {cyclon, "entries", &c_entries}, {cyclon, "_partner", &c_partner}, {cyclon, "_sent", &c_sent},
        {gradient, "me", &g_me}, {gradient, "size", &g_size}, {gradient, "utility", &g_utility},
        {gradient, "max_age", &g_max_age}, {gradient, "rng", &g_rng}, {gradient, "_clock", &g_clock},
        {gradient, "_own", &g_own}, {gradient, "_view", &g_view}, {gradient, "_pending", &g_pending},
        {gradient, "_stale", &g_stale},
        {cs, "entries", &cs_entries}, {cr, "sender", &cr_sender}, {cr, "entries", &cr_entries},
        {gs, "descriptors", &gs_descriptors}, {gr, "descriptors", &gr_descriptors},
    };
    for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++)
        if (offset_of(slots[i].cls, slots[i].name, slots[i].offset) < 0) return NULL;
    Py_XSETREF(join_request, Py_NewRef(PyTuple_GET_ITEM(messages, 4)));
    Py_XSETREF(sample_fn, Py_NewRef(PyTuple_GET_ITEM(functions, 0)));
    Py_XSETREF(merge_fn, Py_NewRef(PyTuple_GET_ITEM(functions, 1)));
    Py_XSETREF(pop_oldest_fn, Py_NewRef(PyTuple_GET_ITEM(functions, 2)));
    Py_XSETREF(rank_fn, Py_NewRef(PyTuple_GET_ITEM(functions, 3)));
    for (int i = 0; i < METHODS; i++) {
        PyObject *reference = PyDict_GetItemString(args[5], method_names[i]);
        if (reference == NULL) {
            PyErr_Format(PyExc_KeyError, "peer_methods: no reference for %s", method_names[i]);
            return NULL;
        }
        Py_XSETREF(references[i], Py_NewRef(reference));
    }
    PyObject *result = PyDict_New();
    if (result == NULL) return NULL;
    for (int i = 0; i < METHODS; i++) {
        PyObject *method = PyDescr_NewMethod(peer_type, &method_defs[i]);
        if (method == NULL || PyDict_SetItemString(result, method_names[i], method) < 0) {
            Py_XDECREF(method);
            Py_DECREF(result);
            return NULL;
        }
        Py_DECREF(method);
    }
    return result;
}

static PyMethodDef module_methods[] = {
    {"peer_methods", (PyCFunction)(void (*)(void))peer_methods, METH_FASTCALL,
     "peer_methods(peer, cyclon, gradient, messages, functions, references) -> {name: C method}"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "overlay._exchange", NULL, -1, module_methods};

PyMODINIT_FUNC PyInit__exchange(void) {
    one = PyLong_FromLong(1);
    minus_one = PyLong_FromLong(-1);
    zero = PyLong_FromLong(0);
    empty_tuple = PyTuple_New(0);
    str_descriptor = PyUnicode_InternFromString("descriptor");
    str_offer = PyUnicode_InternFromString("offer");
    str_random = PyUnicode_InternFromString("random");
    if (one == NULL || minus_one == NULL || zero == NULL || empty_tuple == NULL || str_descriptor == NULL
        || str_offer == NULL || str_random == NULL)
        return NULL;
    return PyModule_Create(&module);
}
