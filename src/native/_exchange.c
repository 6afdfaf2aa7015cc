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
 *   references: {name: the Python method}.
 * The configuration is written once: a call that fails leaves the module unconfigured (no
 * methods exist to run on what it checked so far); once configured, a call with the same
 * arguments gives the same methods and one with others raises RuntimeError, changing nothing.
 *
 * A method inlines the steps of `Cyclon` and `Gradient` only for a peer whose Cyclon and gradient
 * are of exactly the configured classes, and a message of exactly its class; anything else — a
 * subclass such as KompicsGradient — runs the Python method. Every other step is Python's own
 * operation (`+=`, `append`, `extend`, indexing, `(own, *view)`, `int(r * len(view))`, the
 * comparisons), with a C shortcut where its operands are exact builtins, so a hostile number or
 * container in the state or a message gets Python's answer or exception. Each slot is read when
 * the reference reads it, and every object the method keeps across a call that can run Python
 * code (the functions above hand what they do not accelerate to their references) is held by a
 * reference of its own, so no state change can free what the method uses.
 *
 * Messages are made as their class's generated __init__ makes them (every field set, nothing
 * else), by allocating the instance and filling its slots; the configuration checks that the
 * classes are plain `@message` classes whose slots are exactly those fields. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include "_accelerator.h"
#include "_stock_draw.h"

#define SLOT(obj, offset) (*(PyObject **)((char *)(obj) + (offset)))

static PyTypeObject *peer_type, *cyclon_type, *gradient_type;
static PyTypeObject *cyclon_shuffle_type, *cyclon_reply_type, *gradient_shuffle_type, *gradient_reply_type;
static PyObject *join_request, *sample_fn, *merge_fn, *pop_oldest_fn, *rank_fn;
static Py_ssize_t compact_at = PY_SSIZE_T_MAX; /* Gradient.COMPACT_AT, read when configured */
static PyObject *configured_with; /* the arguments of the one configuration, to compare a repeat with */
static PyObject *configured_methods;
static PyObject *one, *minus_one, *empty_tuple;

enum { CYCLON_ROUND, GRADIENT_ROUND, ON_CYCLON_SHUFFLE, ON_CYCLON_REPLY, ON_GRADIENT_SHUFFLE, ON_GRADIENT_REPLY,
       METHODS };
static const char *method_names[METHODS] = {"cyclon_round", "gradient_round", "_on_cyclon_shuffle",
                                            "_on_cyclon_reply", "_on_gradient_shuffle", "_on_gradient_reply"};
static PyObject *references[METHODS];

static Py_ssize_t p_id, p_outbox, p_cyclon, p_gradient, p_cyclon_exchanges, p_gradient_exchanges, p_gossip_gradient,
    p_feeds_gradient, p_rejoin_via;
static Py_ssize_t c_me, c_size, c_length, c_rng, c_entries, c_partner, c_sent;
static Py_ssize_t g_me, g_size, g_utility, g_max_age, g_rng, g_clock, g_own, g_view, g_pending, g_stale;
static Py_ssize_t cs_entries, cr_sender, cr_entries, gs_descriptors, gr_descriptors;

/* -- slots and Python's operations ------------------------------------------------------------ */

static PyObject *take(PyObject *obj, Py_ssize_t offset) { /* obj.<slot>, a new reference; NULL with Python's error */
    PyObject *value = SLOT(obj, offset);
    if (value == NULL) {
        PyErr_Format(PyExc_AttributeError, "'%s' object has no attribute at slot offset %zd", Py_TYPE(obj)->tp_name,
                     offset);
        return NULL;
    }
    return Py_NewRef(value);
}

static void put(PyObject *obj, Py_ssize_t offset, PyObject *value) { /* value is borrowed */
    Py_XSETREF(SLOT(obj, offset), Py_NewRef(value));
}

static void put_new(PyObject *obj, Py_ssize_t offset, PyObject *value) { /* steals value */
    Py_XSETREF(SLOT(obj, offset), value);
}

static int truth_of(PyObject *a, PyObject *b, int op) { /* bool(a <op> b), as Python's operator */
    PyObject *result = PyObject_RichCompare(a, b, op);
    if (result == NULL) return -1;
    int truth = PyObject_IsTrue(result);
    Py_DECREF(result);
    return truth;
}

static PyObject *item(PyObject *sequence, Py_ssize_t i) { /* sequence[i] for a small i >= 0 */
    if (PyTuple_CheckExact(sequence) && i < PyTuple_GET_SIZE(sequence)) return Py_NewRef(PyTuple_GET_ITEM(sequence, i));
    PyObject *index = PyLong_FromSsize_t(i);
    PyObject *value = index == NULL ? NULL : PyObject_GetItem(sequence, index);
    Py_XDECREF(index);
    return value;
}

static PyObject *sender_of(PyObject *descriptors) { /* descriptors[0][1]: a message's `sender` property */
    PyObject *first = item(descriptors, 0);
    PyObject *sender = first == NULL ? NULL : item(first, 1);
    Py_XDECREF(first);
    return sender;
}

static int append_to(PyObject *list, PyObject *value) { /* list.append(value) */
    if (PyList_CheckExact(list)) return PyList_Append(list, value);
    PyObject *done = PyObject_CallMethod(list, "append", "O", value);
    Py_XDECREF(done);
    return done == NULL ? -1 : 0;
}

static int extend(PyObject *list, PyObject *values) { /* list.extend(values) */
    if (PyList_CheckExact(list) && (PyTuple_CheckExact(values) || PyList_CheckExact(values)))
        return PyList_SetSlice(list, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, values);
    PyObject *done = PyObject_CallMethod(list, "extend", "O", values);
    Py_XDECREF(done);
    return done == NULL ? -1 : 0;
}

static int increment(PyObject *obj, Py_ssize_t offset) { /* obj.<slot> += 1 */
    PyObject *count = take(obj, offset);
    PyObject *next = count == NULL ? NULL : PyNumber_InPlaceAdd(count, one);
    Py_XDECREF(count);
    if (next == NULL) return -1;
    put_new(obj, offset, next);
    return 0;
}

static PyObject *with_first(PyObject *first, PyObject *rest) { /* (first, *rest), as Python unpacks `rest` */
    PyObject *items;
    if (PyTuple_CheckExact(rest) || PyList_CheckExact(rest)) {
        items = Py_NewRef(rest);
    } else if (Py_TYPE(rest)->tp_iter == NULL && !PySequence_Check(rest)) {
        PyErr_Format(PyExc_TypeError, "Value after * must be an iterable, not %.200s", Py_TYPE(rest)->tp_name);
        return NULL;
    } else if ((items = PySequence_List(rest)) == NULL) {
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(items); /* copied without running Python code */
    PyObject *result = PyTuple_New(n + 1);
    if (result != NULL) {
        PyTuple_SET_ITEM(result, 0, Py_NewRef(first));
        for (Py_ssize_t i = 0; i < n; i++)
            PyTuple_SET_ITEM(result, i + 1, Py_NewRef(PySequence_Fast_GET_ITEM(items, i)));
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

static PyObject *pair(PyObject *a, PyObject *b) { return PyTuple_Pack(2, a, b); }

static PyObject *call_reference(int which, PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    PyObject *full[3] = {self, nargs > 0 ? args[0] : NULL, nargs > 1 ? args[1] : NULL};
    return PyObject_Vectorcall(references[which], full, (size_t)nargs + 1, NULL);
}

/* -- Gradient ------------------------------------------------------------------------------- */

static PyObject *own_descriptor(PyObject *g, PyObject *now) { /* Gradient.descriptor(now), new ref */
    PyObject *own = take(g, g_own), *utility = take(g, g_utility);
    if (own == NULL || utility == NULL) goto fail;
    int differs;
    if (PyTuple_CheckExact(own) && PyTuple_GET_SIZE(own) == 3 && PyFloat_CheckExact(PyTuple_GET_ITEM(own, 0))
        && PyFloat_CheckExact(PyTuple_GET_ITEM(own, 2)) && PyFloat_CheckExact(utility) && PyFloat_CheckExact(now)) {
        /* own[2] != now or own[0] != self.utility, on exact floats: C's comparison is Python's */
        differs = PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(own, 2)) != PyFloat_AS_DOUBLE(now)
                  || PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(own, 0)) != PyFloat_AS_DOUBLE(utility);
    } else {
        PyObject *stamp = item(own, 2);
        differs = stamp == NULL ? -1 : truth_of(stamp, now, Py_NE);
        Py_XDECREF(stamp);
        if (differs == 0) {
            Py_SETREF(utility, take(g, g_utility)); /* read when Python reads it */
            PyObject *mine = utility == NULL ? NULL : item(own, 0);
            differs = mine == NULL ? -1 : truth_of(mine, utility, Py_NE);
            Py_XDECREF(mine);
        }
    }
    if (differs < 0) goto fail;
    if (differs) { /* own = self._own = (self.utility, self.me, now) */
        Py_SETREF(utility, take(g, g_utility));
        PyObject *me = utility == NULL ? NULL : take(g, g_me);
        PyObject *fresh = me == NULL ? NULL : PyTuple_Pack(3, utility, me, now);
        Py_XDECREF(me);
        if (fresh == NULL) goto fail;
        Py_SETREF(own, fresh);
        put(g, g_own, own);
    }
    Py_DECREF(utility);
    return own;
fail:
    Py_XDECREF(own);
    Py_XDECREF(utility);
    return NULL;
}

static int offer(PyObject *g, PyObject *descriptors) {
    /* Gradient.offer: self._pending.extend(descriptors); self._bound_pending() (its test inlined:
     * the compaction itself is the Python method, run once in thousands of offers) */
    PyObject *pending = take(g, g_pending);
    int status = pending == NULL ? -1 : extend(pending, descriptors);
    Py_XDECREF(pending);
    if (status < 0) return -1;
    pending = take(g, g_pending);
    if (pending == NULL) return -1;
    int over = PyList_CheckExact(pending) && PyList_GET_SIZE(pending) > compact_at;
    Py_DECREF(pending);
    if (!over) return 0;
    PyObject *done = PyObject_CallMethod(g, "_compact", NULL);
    Py_XDECREF(done);
    return done == NULL ? -1 : 0;
}

static int offer_to_peer(PyObject *self, PyObject *msg, Py_ssize_t field) {
    /* if self.feeds_gradient: self.gradient.offer(msg.<field>) */
    PyObject *feeds = take(self, p_feeds_gradient);
    int on = feeds == NULL ? -1 : PyObject_IsTrue(feeds);
    Py_XDECREF(feeds);
    if (on <= 0) return on;
    PyObject *g = take(self, p_gradient), *descriptors = g == NULL ? NULL : take(msg, field);
    int status = -1;
    if (descriptors != NULL && Py_IS_TYPE(g, gradient_type)) {
        status = offer(g, descriptors);
    } else if (descriptors != NULL) {
        PyObject *done = PyObject_CallMethod(g, "offer", "O", descriptors);
        status = done == NULL ? -1 : 0;
        Py_XDECREF(done);
    }
    Py_XDECREF(descriptors);
    Py_XDECREF(g);
    return status;
}

static int gradient_merge(PyObject *g) { /* Gradient._merge */
    PyObject *pending = take(g, g_pending), *view = pending == NULL ? NULL : take(g, g_view);
    PyObject *candidates = view == NULL ? NULL : PyNumber_InPlaceAdd(pending, view); /* candidates += self._view */
    Py_XDECREF(pending);
    Py_XDECREF(view);
    if (candidates == NULL) return -1;
    PyObject *me = take(g, g_me), *utility = me == NULL ? NULL : take(g, g_utility);
    PyObject *size = utility == NULL ? NULL : take(g, g_size), *clock = size == NULL ? NULL : take(g, g_clock);
    PyObject *max_age = clock == NULL ? NULL : take(g, g_max_age);
    PyObject *oldest = max_age == NULL ? NULL : PyNumber_Subtract(clock, max_age), *ranked = NULL;
    if (oldest != NULL) {
        PyObject *args[5] = {me, utility, candidates, size, oldest};
        ranked = PyObject_Vectorcall(rank_fn, args, 5, NULL);
    }
    Py_XDECREF(oldest);
    Py_XDECREF(max_age);
    Py_XDECREF(clock);
    Py_XDECREF(size);
    Py_XDECREF(utility);
    Py_XDECREF(me);
    Py_DECREF(candidates);
    if (ranked == NULL) return -1;
    put_new(g, g_view, ranked);
    PyObject *fresh = PyList_New(0);
    if (fresh == NULL) return -1;
    put_new(g, g_pending, fresh);
    put(g, g_stale, Py_False);
    return 0;
}

static int merge_if_needed(PyObject *g) { /* if self._pending or self._stale: self._merge() */
    PyObject *pending = take(g, g_pending);
    int needed = pending == NULL ? -1 : PyObject_IsTrue(pending);
    Py_XDECREF(pending);
    if (needed == 0) {
        PyObject *stale = take(g, g_stale);
        needed = stale == NULL ? -1 : PyObject_IsTrue(stale);
        Py_XDECREF(stale);
    }
    return needed <= 0 ? needed : gradient_merge(g);
}

/* view[int(self.rng.random() * len(view))][1], as Python evaluates it: the draw, then the length.
 * A stock rng and an exact list take the fast path; anything else Python's own operations. */
static PyObject *draw_partner(PyObject *g, PyObject *view) {
    PyObject *rng = take(g, g_rng), *chosen = NULL;
    if (rng == NULL) return NULL;
    int stock = PyList_CheckExact(view) ? is_stock_draw(rng) : 0;
    if (stock > 0) {
        double r;
        if (stock_uniform(rng, &r) == 0) {
            Py_ssize_t n = PyList_GET_SIZE(view), at = (Py_ssize_t)(r * (double)n); /* r < 1: at < n, if n > 0 */
            if (at < n) chosen = Py_NewRef(PyList_GET_ITEM(view, at));
            else PyErr_SetString(PyExc_IndexError, "list index out of range");
        }
    } else if (stock == 0) {
        PyObject *value = PyObject_CallMethodNoArgs(rng, stock_str_random), *length = NULL, *scaled = NULL;
        PyObject *index = NULL;
        Py_ssize_t n = value == NULL ? -1 : PyObject_Length(view);
        if (n >= 0 && (length = PyLong_FromSsize_t(n)) != NULL && (scaled = PyNumber_Multiply(value, length)) != NULL
            && (index = PyNumber_Long(scaled)) != NULL)
            chosen = PyObject_GetItem(view, index);
        Py_XDECREF(value);
        Py_XDECREF(length);
        Py_XDECREF(scaled);
        Py_XDECREF(index);
    }
    Py_DECREF(rng);
    PyObject *partner = chosen == NULL ? NULL : item(chosen, 1);
    Py_XDECREF(chosen);
    return partner;
}

/* Gradient.initiate(now): 1 with *started = (partner, GradientShuffle), 0 with an empty view, -1 on error */
static int gradient_initiate(PyObject *g, PyObject *now, PyObject **started) {
    put(g, g_clock, now);
    if (merge_if_needed(g) < 0) return -1;
    PyObject *view = take(g, g_view);
    if (view == NULL) return -1;
    int any = PyObject_IsTrue(view);
    if (any <= 0) {
        Py_DECREF(view);
        return any;
    }
    PyObject *partner = draw_partner(g, view), *own = NULL, *descriptors = NULL, *shuffle = NULL;
    if (partner == NULL || (own = own_descriptor(g, now)) == NULL || (descriptors = with_first(own, view)) == NULL)
        goto done;
    shuffle = new_message(gradient_shuffle_type, gs_descriptors, descriptors, 0, NULL);
    if (shuffle != NULL) *started = pair(partner, shuffle);
done:
    Py_XDECREF(shuffle);
    Py_XDECREF(descriptors);
    Py_XDECREF(own);
    Py_XDECREF(partner);
    Py_DECREF(view);
    return *started == NULL ? -1 : 1;
}

/* -- Cyclon --------------------------------------------------------------------------------- */

static PyObject *call_with(PyObject *function, PyObject *const *args, size_t count) { /* args: new refs, released */
    PyObject *result = NULL;
    int ready = 1;
    for (size_t i = 0; i < count; i++) ready = ready && args[i] != NULL;
    if (ready) result = PyObject_Vectorcall(function, args, count, NULL);
    for (size_t i = 0; i < count; i++) Py_XDECREF(args[i]);
    return result;
}

/* Cyclon.initiate(own): 1 with *started = (partner, CyclonShuffle), 0 with an empty view, -1 on error */
static int cyclon_initiate(PyObject *c, PyObject *own, PyObject **started) {
    PyObject *popped[1] = {take(c, c_entries)};
    PyObject *oldest = call_with(pop_oldest_fn, popped, 1), *chosen = NULL, *sent = NULL, *shuffle = NULL;
    if (oldest == NULL) return -1;
    if (oldest == Py_None) {
        Py_DECREF(oldest);
        return 0;
    }
    PyObject *rng = take(c, c_rng), *entries = rng == NULL ? NULL : take(c, c_entries);
    PyObject *length = entries == NULL ? NULL : take(c, c_length);
    PyObject *drawn[3] = {rng, entries, length == NULL ? NULL : PyNumber_Subtract(length, one)};
    Py_XDECREF(length);
    chosen = call_with(sample_fn, drawn, 3); /* sample_values(self.rng, self.entries, self.length - 1) */
    if (chosen == NULL) goto done;
    put(c, c_partner, oldest);
    put(c, c_sent, chosen);
    sent = with_first(own, chosen);
    if (sent == NULL) goto done;
    shuffle = new_message(cyclon_shuffle_type, cs_entries, sent, 0, NULL);
    if (shuffle != NULL) *started = pair(oldest, shuffle);
done:
    Py_XDECREF(shuffle);
    Py_XDECREF(sent);
    Py_XDECREF(chosen);
    Py_DECREF(oldest);
    return *started == NULL ? -1 : 1;
}

static int cyclon_merge(PyObject *c, PyObject *received, PyObject *replaceable) { /* Cyclon._merge */
    PyObject *entries = take(c, c_entries), *me = entries == NULL ? NULL : take(c, c_me);
    PyObject *size = me == NULL ? NULL : take(c, c_size);
    PyObject *args[5] = {entries, me, size, Py_NewRef(received), Py_NewRef(replaceable)};
    PyObject *done = call_with(merge_fn, args, 5);
    Py_XDECREF(done);
    return done == NULL ? -1 : 0;
}

/* -- the methods ---------------------------------------------------------------------------- */

#define CHECK_ARGS(count, usage)                                                  \
    if (nargs != (count)) {                                                       \
        PyErr_Format(PyExc_TypeError, usage " takes %d arguments, %zd given", (count), nargs); \
        return NULL;                                                              \
    }

/* Cyclon and gradient of exactly the configured classes, whose steps the methods inline (a
 * subclass, such as KompicsGradient, has its own); a message of exactly its class. Otherwise
 * the reference runs. */
static int inlined(PyObject *self) {
    PyObject *c = SLOT(self, p_cyclon), *g = SLOT(self, p_gradient);
    return c != NULL && g != NULL && Py_IS_TYPE(c, cyclon_type) && Py_IS_TYPE(g, gradient_type);
}

#define INLINED_OR_REFERENCE(condition, which)                                    \
    if (!(condition)) return call_reference((which), self, args, nargs)

static int ask_to_rejoin(PyObject *self) { /* elif self.rejoin_via >= 0: self.outbox.append((...)) */
    PyObject *via = take(self, p_rejoin_via), *zero = PyLong_FromLong(0);
    int rejoin = via == NULL || zero == NULL ? -1 : truth_of(via, zero, Py_GE);
    Py_XDECREF(via);
    Py_XDECREF(zero);
    if (rejoin <= 0) return rejoin;
    PyObject *outbox = take(self, p_outbox), *c = NULL, *request = NULL, *sent = NULL;
    PyObject *asked[2] = {NULL, NULL};
    via = outbox == NULL ? NULL : take(self, p_rejoin_via);
    if (via != NULL && (asked[0] = take(self, p_id)) != NULL && (c = take(self, p_cyclon)) != NULL)
        asked[1] = PyObject_GetAttrString(c, "size");
    request = via == NULL ? NULL : call_with(join_request, asked, 2);
    int status = request == NULL || (sent = pair(via, request)) == NULL ? -1 : append_to(outbox, sent);
    Py_XDECREF(sent);
    Py_XDECREF(request);
    Py_XDECREF(c);
    Py_XDECREF(via);
    Py_XDECREF(outbox);
    return status;
}

static PyObject *cyclon_round(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CHECK_ARGS(1, "cyclon_round(now)");
    INLINED_OR_REFERENCE(inlined(self), CYCLON_ROUND);
    /* started = self.cyclon.initiate(self.gradient.descriptor(now)) */
    PyObject *c = take(self, p_cyclon), *g = take(self, p_gradient), *started = NULL, *outbox = NULL;
    PyObject *own = own_descriptor(g, args[0]);
    int status = own == NULL ? -1 : cyclon_initiate(c, own, &started);
    if (status == 1) { /* self.outbox.append(started); self.cyclon_exchanges += 1 */
        outbox = take(self, p_outbox);
        status = outbox == NULL || append_to(outbox, started) < 0 || increment(self, p_cyclon_exchanges) < 0 ? -1 : 0;
    } else if (status == 0) {
        status = ask_to_rejoin(self);
    }
    Py_XDECREF(outbox);
    Py_XDECREF(started);
    Py_XDECREF(own);
    Py_DECREF(c);
    Py_DECREF(g);
    if (status < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *gradient_round(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CHECK_ARGS(1, "gradient_round(now)");
    INLINED_OR_REFERENCE(inlined(self), GRADIENT_ROUND);
    PyObject *gossip = take(self, p_gossip_gradient); /* if not self.gossip_gradient: return */
    int on = gossip == NULL ? -1 : PyObject_IsTrue(gossip);
    Py_XDECREF(gossip);
    if (on <= 0) return on < 0 ? NULL : Py_NewRef(Py_None);
    PyObject *g = take(self, p_gradient), *started = NULL, *outbox = NULL;
    int status = gradient_initiate(g, args[0], &started);
    if (status == 1) {
        outbox = take(self, p_outbox);
        status = outbox == NULL || append_to(outbox, started) < 0 || increment(self, p_gradient_exchanges) < 0 ? -1 : 0;
    }
    Py_XDECREF(outbox);
    Py_XDECREF(started);
    Py_DECREF(g);
    if (status < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *on_cyclon_shuffle(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CHECK_ARGS(2, "_on_cyclon_shuffle(msg, now)");
    INLINED_OR_REFERENCE(inlined(self) && Py_IS_TYPE(args[0], cyclon_shuffle_type), ON_CYCLON_SHUFFLE);
    /* self.outbox.append((msg.sender, self.cyclon.answer(msg))); self.gradient.offer(msg.entries) */
    PyObject *outbox = take(self, p_outbox), *received = outbox == NULL ? NULL : take(args[0], cs_entries);
    PyObject *sender = received == NULL ? NULL : sender_of(received), *c = sender == NULL ? NULL : take(self, p_cyclon);
    PyObject *chosen = NULL, *reply = NULL, *sent = NULL, *result = NULL;
    if (c == NULL) goto done;
    PyObject *rng = take(c, c_rng), *entries = rng == NULL ? NULL : take(c, c_entries);
    PyObject *drawn[3] = {rng, entries, entries == NULL ? NULL : take(c, c_length)};
    chosen = call_with(sample_fn, drawn, 3); /* Cyclon.answer: sample_values(self.rng, self.entries, self.length) */
    if (chosen == NULL) goto done;
    Py_SETREF(received, take(args[0], cs_entries)); /* self._merge(request.entries, chosen) */
    if (received == NULL || cyclon_merge(c, received, chosen) < 0) goto done;
    PyObject *me = take(c, c_me);
    reply = me == NULL ? NULL : new_message(cyclon_reply_type, cr_sender, me, cr_entries, chosen);
    Py_XDECREF(me);
    if (reply == NULL || (sent = pair(sender, reply)) == NULL || append_to(outbox, sent) < 0
        || offer_to_peer(self, args[0], cs_entries) < 0)
        goto done;
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(sent);
    Py_XDECREF(reply);
    Py_XDECREF(chosen);
    Py_XDECREF(c);
    Py_XDECREF(sender);
    Py_XDECREF(received);
    Py_XDECREF(outbox);
    return result;
}

static PyObject *on_cyclon_reply(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CHECK_ARGS(2, "_on_cyclon_reply(msg, now)");
    INLINED_OR_REFERENCE(inlined(self) && Py_IS_TYPE(args[0], cyclon_reply_type), ON_CYCLON_REPLY);
    /* Cyclon.complete(msg), then self.gradient.offer(msg.entries) */
    PyObject *c = take(self, p_cyclon), *sender = take(args[0], cr_sender), *partner = take(c, c_partner);
    PyObject *replaceable = NULL, *received = NULL, *result = NULL;
    int answered = sender == NULL || partner == NULL ? -1 : truth_of(sender, partner, Py_EQ);
    if (answered < 0) goto done;
    if (answered) { /* replaceable, self._sent, self._partner = self._sent, (), -1 */
        if ((replaceable = take(c, c_sent)) == NULL) goto done;
        put(c, c_sent, empty_tuple);
        put(c, c_partner, minus_one);
    } else {
        replaceable = Py_NewRef(empty_tuple);
    }
    received = take(args[0], cr_entries);
    if (received == NULL || cyclon_merge(c, received, replaceable) < 0 || offer_to_peer(self, args[0], cr_entries) < 0)
        goto done;
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(received);
    Py_XDECREF(replaceable);
    Py_XDECREF(partner);
    Py_XDECREF(sender);
    Py_DECREF(c);
    return result;
}

static PyObject *on_gradient_shuffle(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CHECK_ARGS(2, "_on_gradient_shuffle(msg, now)");
    INLINED_OR_REFERENCE(inlined(self) && Py_IS_TYPE(args[0], gradient_shuffle_type), ON_GRADIENT_SHUFFLE);
    /* self.outbox.append((msg.sender, self.gradient.answer(msg, now))) */
    PyObject *outbox = take(self, p_outbox), *received = outbox == NULL ? NULL : take(args[0], gs_descriptors);
    PyObject *sender = received == NULL ? NULL : sender_of(received);
    PyObject *g = sender == NULL ? NULL : take(self, p_gradient);
    PyObject *own = NULL, *view = NULL, *descriptors = NULL, *reply = NULL, *sent = NULL, *result = NULL;
    if (g == NULL) goto done;
    /* Gradient.answer: self._clock = now; self._pending.extend(request.descriptors);
     * return GradientReply((self.descriptor(now), *self._view)) */
    put(g, g_clock, args[1]);
    Py_SETREF(received, take(args[0], gs_descriptors));
    if (received == NULL || offer(g, received) < 0 || (own = own_descriptor(g, args[1])) == NULL
        || (view = take(g, g_view)) == NULL || (descriptors = with_first(own, view)) == NULL)
        goto done;
    reply = new_message(gradient_reply_type, gr_descriptors, descriptors, 0, NULL);
    if (reply == NULL || (sent = pair(sender, reply)) == NULL || append_to(outbox, sent) < 0) goto done;
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(sent);
    Py_XDECREF(reply);
    Py_XDECREF(descriptors);
    Py_XDECREF(view);
    Py_XDECREF(own);
    Py_XDECREF(g);
    Py_XDECREF(sender);
    Py_XDECREF(received);
    Py_XDECREF(outbox);
    return result;
}

static PyObject *on_gradient_reply(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CHECK_ARGS(2, "_on_gradient_reply(msg, now)");
    INLINED_OR_REFERENCE(inlined(self) && Py_IS_TYPE(args[0], gradient_reply_type), ON_GRADIENT_REPLY);
    PyObject *g = take(self, p_gradient), *received = g == NULL ? NULL : take(args[0], gr_descriptors);
    int status = received == NULL ? -1 : offer(g, received); /* Gradient.complete */
    Py_XDECREF(received);
    Py_XDECREF(g);
    if (status < 0) return NULL;
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
    Py_XSETREF(*out, (PyTypeObject *)Py_NewRef(obj));
    return 0;
}

/* A message class the methods may make by filling its slots: a plain class (no metaclass, no
 * __new__) whose __slots__ are exactly the fields named, as `@message` makes it. */
static int plain_message_class(PyObject *cls, const char *format, ...) {
    PyObject *slots = PyObject_GetAttrString(cls, "__slots__");
    if (slots == NULL) return -1;
    va_list names;
    va_start(names, format);
    PyObject *expected = Py_VaBuildValue(format, names);
    va_end(names);
    int same = expected == NULL ? -1 : PyObject_RichCompareBool(slots, expected, Py_EQ);
    Py_DECREF(slots);
    Py_XDECREF(expected);
    if (same < 0) return -1;
    if (!same || !Py_IS_TYPE(cls, &PyType_Type) || ((PyTypeObject *)cls)->tp_new != PyBaseObject_Type.tp_new) {
        PyErr_Format(PyExc_TypeError, "peer_methods: %R is not a plain @message class with the expected fields", cls);
        return -1;
    }
    return 0;
}

static int same_configuration(PyObject *with) { /* the same objects as the configuration in use */
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(with); i++) {
        PyObject *mine = PyTuple_GET_ITEM(configured_with, i), *theirs = PyTuple_GET_ITEM(with, i);
        if (PyTuple_Check(mine)) {
            if (!PyTuple_Check(theirs) || PyTuple_GET_SIZE(theirs) != PyTuple_GET_SIZE(mine)) return 0;
            for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(mine); j++)
                if (PyTuple_GET_ITEM(mine, j) != PyTuple_GET_ITEM(theirs, j)) return 0;
        } else if (mine != theirs) {
            return 0;
        }
    }
    return 1;
}

static PyObject *peer_methods(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6 || !PyTuple_CheckExact(args[3]) || PyTuple_GET_SIZE(args[3]) != 5 || !PyTuple_CheckExact(args[4])
        || PyTuple_GET_SIZE(args[4]) != 4 || !PyDict_Check(args[5])) {
        PyErr_SetString(PyExc_TypeError,
                        "peer_methods(peer, cyclon, gradient, (CyclonShuffle, CyclonReply, GradientShuffle, "
                        "GradientReply, JoinRequest), (sample_values, merge, pop_oldest, rank), references: dict)");
        return NULL;
    }
    PyObject *chosen[METHODS];
    for (int i = 0; i < METHODS; i++) { /* the references, read once */
        chosen[i] = PyDict_GetItemString(args[5], method_names[i]);
        if (chosen[i] == NULL || !PyCallable_Check(chosen[i])) {
            PyErr_Format(PyExc_TypeError, "peer_methods: no callable reference for %s", method_names[i]);
            return NULL;
        }
    }
    PyObject *named = PyTuple_New(METHODS);
    if (named == NULL) return NULL;
    for (int i = 0; i < METHODS; i++) PyTuple_SET_ITEM(named, i, Py_NewRef(chosen[i]));
    PyObject *with = PyTuple_Pack(6, args[0], args[1], args[2], args[3], args[4], named);
    Py_DECREF(named);
    if (with == NULL) return NULL;
    if (configured_with != NULL) { /* written once */
        int same = same_configuration(with);
        Py_DECREF(with);
        if (same) return PyDict_Copy(configured_methods);
        PyErr_SetString(PyExc_RuntimeError, "nodes._exchange is configured already, with other classes");
        return NULL;
    }
    PyObject *messages = args[3], *functions = args[4];
    PyObject *peer = args[0], *cyclon = args[1], *gradient = args[2];
    PyObject *result = NULL;
    if (class_arg(peer, &peer_type) < 0 || class_arg(cyclon, &cyclon_type) < 0
        || class_arg(gradient, &gradient_type) < 0
        || class_arg(PyTuple_GET_ITEM(messages, 0), &cyclon_shuffle_type) < 0
        || class_arg(PyTuple_GET_ITEM(messages, 1), &cyclon_reply_type) < 0
        || class_arg(PyTuple_GET_ITEM(messages, 2), &gradient_shuffle_type) < 0
        || class_arg(PyTuple_GET_ITEM(messages, 3), &gradient_reply_type) < 0)
        goto done;
    PyObject *gs = (PyObject *)gradient_shuffle_type, *gr = (PyObject *)gradient_reply_type;
    PyObject *cs = (PyObject *)cyclon_shuffle_type, *cr = (PyObject *)cyclon_reply_type;
    if (plain_message_class(cs, "(s)", "entries") < 0 || plain_message_class(cr, "(ss)", "sender", "entries") < 0
        || plain_message_class(gs, "(s)", "descriptors") < 0 || plain_message_class(gr, "(s)", "descriptors") < 0)
        goto done;
    const struct { PyObject *cls; const char *name; Py_ssize_t *offset; } slots[] = {
        {peer, "id", &p_id}, {peer, "outbox", &p_outbox}, {peer, "cyclon", &p_cyclon},
        {peer, "gradient", &p_gradient}, {peer, "cyclon_exchanges", &p_cyclon_exchanges},
        {peer, "gradient_exchanges", &p_gradient_exchanges}, {peer, "gossip_gradient", &p_gossip_gradient},
        {peer, "feeds_gradient", &p_feeds_gradient}, {peer, "rejoin_via", &p_rejoin_via},
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
        if (offset_of(slots[i].cls, slots[i].name, slots[i].offset) < 0) goto done;
    PyObject *limit = PyObject_GetAttrString(gradient, "COMPACT_AT");
    Py_ssize_t compact = limit != NULL && PyLong_CheckExact(limit) ? PyLong_AsSsize_t(limit) : -1;
    Py_XDECREF(limit);
    if (compact < 0) {
        if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_TypeError, "peer_methods: the gradient's COMPACT_AT is an int >= 0");
        }
        goto done;
    }
    for (Py_ssize_t i = 0; i < 4; i++)
        if (!PyCallable_Check(PyTuple_GET_ITEM(functions, i))) {
            PyErr_SetString(PyExc_TypeError, "peer_methods: the functions are callables");
            goto done;
        }
    result = PyDict_New();
    if (result == NULL) goto done;
    for (int i = 0; i < METHODS; i++) {
        PyObject *method = PyDescr_NewMethod(peer_type, &method_defs[i]);
        if (method == NULL || PyDict_SetItemString(result, method_names[i], method) < 0) {
            Py_XDECREF(method);
            Py_CLEAR(result);
            goto done;
        }
        Py_DECREF(method);
    }
    Py_XSETREF(join_request, Py_NewRef(PyTuple_GET_ITEM(messages, 4)));
    Py_XSETREF(sample_fn, Py_NewRef(PyTuple_GET_ITEM(functions, 0)));
    Py_XSETREF(merge_fn, Py_NewRef(PyTuple_GET_ITEM(functions, 1)));
    Py_XSETREF(pop_oldest_fn, Py_NewRef(PyTuple_GET_ITEM(functions, 2)));
    Py_XSETREF(rank_fn, Py_NewRef(PyTuple_GET_ITEM(functions, 3)));
    compact_at = compact;
    for (int i = 0; i < METHODS; i++) Py_XSETREF(references[i], Py_NewRef(chosen[i]));
    configured_methods = Py_NewRef(result);
    configured_with = Py_NewRef(with);
done:
    Py_DECREF(with);
    return result;
}

static PyMethodDef module_methods[] = {
    {"peer_methods", (PyCFunction)(void (*)(void))peer_methods, METH_FASTCALL,
     "peer_methods(peer, cyclon, gradient, messages, functions, references) -> {name: C method}"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "nodes._exchange", NULL, -1, module_methods};

PyMODINIT_FUNC PyInit__exchange(void) {
    if (main_interpreter_only("drfemu.nodes._exchange") < 0 || stock_draw_init() < 0) return NULL;
    one = PyLong_FromLong(1);
    minus_one = PyLong_FromLong(-1);
    empty_tuple = PyTuple_New(0);
    if (one == NULL || minus_one == NULL || empty_tuple == NULL) return NULL;
    return PyModule_Create(&module);
}
