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
 *   functions: (sample_values, merge, pop_oldest, rank, descriptors), as overlay.cyclon and
 *   overlay.gradient use them (where `rank` is overlay._rank's, the gradient's merge ranks its plain
 *   pending candidates and view with the overlay kernel itself, as that rank would, without joining
 *   the two first; where `descriptors` is overlay._rank's Descriptors, the gradient's view, pending
 *   candidates and messages are C arrays, `_descriptors.h`, which the methods work on directly; and
 *   where the first three are overlay._cyclon's too, Cyclon's steps run on a plain View's arrays,
 *   `_view.h`, its entries sent and received as such stores);
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
 * classes are plain `@message` classes whose slots are exactly those fields. Where a peer's lane
 * is open (below: `Lane`, issue 57), the same sends become rows of the lane instead, and the
 * handlers run on a row's fields as on the message's; peer_methods then also gives `_on_row`,
 * the handler of the lane's marks. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include "_accelerator.h"
#include "_descriptors.h"
#include "_overlay_kernel.h"
#include "_stock_draw.h"
#include "_view.h"

#define SLOT(obj, offset) (*(PyObject **)((char *)(obj) + (offset)))

static PyTypeObject *peer_type, *cyclon_type, *gradient_type;
static PyTypeObject *cyclon_shuffle_type, *cyclon_reply_type, *gradient_shuffle_type, *gradient_reply_type;
static PyObject *join_request, *sample_fn, *merge_fn, *pop_oldest_fn, *rank_fn;
static PyObject *descriptors_fn;          /* overlay.gradient.descriptors: what a gradient keeps descriptors in */
static PyTypeObject *descriptors_type;    /* descriptors_fn when it is overlay._rank's Descriptors, else NULL */

static PyTypeObject *view_type;           /* overlay._cyclon's View, when the Cyclon functions are _cyclon's and
                                           * descriptors_type is set: Cyclon's steps then run on its arrays */

static int is_store(PyObject *obj) { return descriptors_type != NULL && Py_IS_TYPE(obj, descriptors_type); }

static int is_plain_store(PyObject *obj) { return is_store(obj) && descriptors_plain((Descriptors *)obj); }

static int rank_is_kernel; /* rank_fn is overlay._rank's rank: the merge may run the kernel on its lists itself */
static Py_ssize_t compact_at = PY_SSIZE_T_MAX; /* Gradient.COMPACT_AT, read when configured */
static PyObject *configured_with; /* the arguments of the one configuration, to compare a repeat with */
static PyObject *configured_methods;
static PyObject *one, *minus_one, *empty_tuple;
static PyObject *row_handler, *str_dispatch; /* `_on_row` as configured; "DISPATCH" */
static PyObject *runtime_deliver; /* nodes.runtime.deliver, imported at first need */

enum { CYCLON_ROUND, GRADIENT_ROUND, ON_CYCLON_SHUFFLE, ON_CYCLON_REPLY, ON_GRADIENT_SHUFFLE, ON_GRADIENT_REPLY,
       METHODS };
static const char *method_names[METHODS] = {"cyclon_round", "gradient_round", "_on_cyclon_shuffle",
                                            "_on_cyclon_reply", "_on_gradient_shuffle", "_on_gradient_reply"};
static PyObject *references[METHODS];

static Py_ssize_t p_id, p_lane, p_outbox, p_cyclon, p_gradient, p_cyclon_exchanges, p_gradient_exchanges, p_gossip_gradient,
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
    if (is_plain_store(descriptors) && ((Descriptors *)descriptors)->length > 0)
        return PyLong_FromLongLong(((Descriptors *)descriptors)->items[0].node);
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

/* (own, *view): a plain store when `view` is one and `own` a plain descriptor (the message's tuple,
 * kept as C data; `message_of` makes the tuple where a message object is needed), else the tuple. */
static PyObject *with_own(PyObject *own, PyObject *view) {
    KernelDescriptor mine;
    if (is_plain_store(view) && PyTuple_CheckExact(own) && PyTuple_GET_SIZE(own) == 3
        && kernel_plain_float(PyTuple_GET_ITEM(own, 0), &mine.utility)
        && kernel_plain_int(PyTuple_GET_ITEM(own, 1), &mine.node)
        && kernel_plain_float(PyTuple_GET_ITEM(own, 2), &mine.stamp)) {
        Descriptors *from = (Descriptors *)view, *sent = descriptors_new(descriptors_type, from->length + 1);
        if (sent == NULL) return NULL;
        sent->items[0] = mine;
        memcpy(sent->items + 1, from->items, sizeof(KernelDescriptor) * (size_t)from->length);
        sent->length = from->length + 1;
        return (PyObject *)sent;
    }
    return with_first(own, view);
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

/* -- the lane: overlay messages as rows ------------------------------------------------------
 *
 * Lane(n, marks) -> lane, for actors 0..n-1; marks: four objects (one per kind: CyclonShuffle,
 * CyclonReply, GradientShuffle, GradientReply), each of a class of its own.
 * While `lane.open` is true, a peer whose `lane` slot holds the lane sends an overlay message to
 * an actor d in 0..n-1 as a row: its fields go to d's queue in the lane, and the outbox gets
 * (d, marks[kind]), one tuple shared by every such send (no message object, no pair). A list of
 * sends thus keeps one item per message, in the order of today's, and since every row to d is
 * sent under one fixed latency (the runtime materializes the rows and closes the lane before the
 * network changes), d's marks reach it in the order their rows were queued: the k-th mark d
 * receives stands for the k-th row of its queue. The handler of the marks (`_on_row`) takes that
 * row and runs the message's handler on its fields.
 *   lane.message(d, mark) -> the message the front row of d's queue stands for, taken off it
 *     (the row must be of mark's kind): what the runtime puts in place of a mark before the
 *     network changes, so that the run goes on with objects.
 *   lane.render(sends) -> the list of (d, message) pairs the list of sends stands for, marks
 *     rendered from their rows without taking them (an instant's deliveries, for a trace).
 *   lane.carried -> the descriptors carried by every row made, per kind (the tally's bytes).
 *   lane.in_flight -> rows queued and not yet taken.
 *   lane.deliver(...) -> an instant that carries marks, delivered by the lane itself as the
 *     runtime's deliver would (below, before lane_deliver): nearly every overlay message of a
 *     walking run arrives at such an instant, often with nothing else (89.5 % of them in the
 *     trace's first 5 minutes under pdgdrf, 64 % in its first 20), and there the mailboxes, the
 *     dispatch and the calls of deliver cost more than the lane's own walk.
 *   lane.settle() -> while lane.deliver runs, its marks not yet handled become messages (what a
 *     network change's materialize calls first: those marks are in no mailbox). */
enum { ROW_CS, ROW_CR, ROW_GS, ROW_GR, ROW_KINDS };

typedef struct {
    int kind;
    PyObject *sender;  /* CyclonReply's sender; NULL for the others (their sender is in the payload) */
    PyObject *payload; /* the entries or descriptors: an exact tuple, or a plain store of descriptors */
} Row;

typedef struct {
    Row *rows;
    Py_ssize_t head, count, capacity; /* a ring; capacity a power of two */
} Queue;

typedef struct {
    PyObject_HEAD
    Py_ssize_t n;
    Queue *queues;
    PyObject *marks[ROW_KINDS];
    PyObject **envelopes; /* (d, marks[kind]) at d * ROW_KINDS + kind */
    int open;
    long long carried[ROW_KINDS];
    Py_ssize_t in_flight;
    /* lane.deliver's scratch: per actor, its first and last delivery of the instant (valid where
     * seen[d] == instant); the actors in the order of their first; per delivery, the next one to
     * the same actor */
    Py_ssize_t *first, *last, *ready, *next;
    unsigned long *seen;
    unsigned long instant;
    Py_ssize_t next_capacity;
    /* while lane.deliver runs: its deliveries, how many actors it wakes, and where it is (the
     * k-th of them, its delivery at `at`, being handled; -1 before the first, -2 with the
     * runtime's deliver) */
    PyObject *delivering;
    Py_ssize_t woken, at_actor, at;
} Lane;

static PyTypeObject LaneType;

static int queue_push(Queue *q, int kind, PyObject *sender, PyObject *payload) {
    if (q->count == q->capacity) {
        Py_ssize_t capacity = q->capacity ? 2 * q->capacity : 4;
        Row *rows = PyMem_Malloc(sizeof(Row) * (size_t)capacity);
        if (rows == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        for (Py_ssize_t i = 0; i < q->count; i++) rows[i] = q->rows[(q->head + i) & (q->capacity - 1)];
        PyMem_Free(q->rows);
        q->rows = rows;
        q->head = 0;
        q->capacity = capacity;
    }
    Row *row = &q->rows[(q->head + q->count) & (q->capacity - 1)];
    row->kind = kind;
    row->sender = Py_XNewRef(sender);
    row->payload = Py_NewRef(payload);
    q->count++;
    return 0;
}

static Row *queue_at(Queue *q, Py_ssize_t k) { return k < q->count ? &q->rows[(q->head + k) & (q->capacity - 1)] : NULL; }

static Row queue_pop(Queue *q) { /* the front row, its references handed over; the queue is not empty */
    Row row = q->rows[q->head];
    q->head = (q->head + 1) & (q->capacity - 1);
    q->count--;
    return row;
}

static PyObject *lane_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    Py_ssize_t n;
    PyObject *marks;
    static char *names[] = {"n", "marks", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "nO!:Lane", names, &n, &PyTuple_Type, &marks)) return NULL;
    if (cyclon_shuffle_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Lane: nodes._exchange is not configured (peer_methods first)");
        return NULL;
    }
    if (n < 0 || n > PY_SSIZE_T_MAX / (Py_ssize_t)(ROW_KINDS * sizeof(PyObject *)) || PyTuple_GET_SIZE(marks) != ROW_KINDS) {
        PyErr_SetString(PyExc_ValueError, "Lane(n, marks): n >= 0 actors and four marks");
        return NULL;
    }
    for (int i = 0; i < ROW_KINDS; i++)
        for (int j = 0; j < i; j++)
            if (Py_TYPE(PyTuple_GET_ITEM(marks, i)) == Py_TYPE(PyTuple_GET_ITEM(marks, j))) {
                PyErr_SetString(PyExc_ValueError, "Lane: each mark is of a class of its own");
                return NULL;
            }
    Lane *self = (Lane *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    size_t actors = n ? (size_t)n : 1;
    self->queues = PyMem_Calloc(actors, sizeof(Queue));
    self->envelopes = PyMem_Calloc(actors * ROW_KINDS, sizeof(PyObject *));
    self->first = PyMem_Calloc(actors, sizeof(Py_ssize_t));
    self->last = PyMem_Calloc(actors, sizeof(Py_ssize_t));
    self->ready = PyMem_Calloc(actors, sizeof(Py_ssize_t));
    self->seen = PyMem_Calloc(actors, sizeof(unsigned long));
    if (self->queues == NULL || self->envelopes == NULL || self->first == NULL || self->last == NULL
        || self->ready == NULL || self->seen == NULL) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    self->n = n;
    for (int i = 0; i < ROW_KINDS; i++) self->marks[i] = Py_NewRef(PyTuple_GET_ITEM(marks, i));
    for (Py_ssize_t d = 0; d < n; d++) { /* made here, so that a run's objects do not grow with its destinations */
        PyObject *dst = PyLong_FromSsize_t(d);
        for (int kind = 0; dst != NULL && kind < ROW_KINDS; kind++)
            if ((self->envelopes[d * ROW_KINDS + kind] = PyTuple_Pack(2, dst, self->marks[kind])) == NULL) Py_CLEAR(dst);
        if (dst == NULL) {
            Py_DECREF(self);
            return NULL;
        }
        Py_DECREF(dst);
    }
    return (PyObject *)self;
}

static int lane_traverse(Lane *self, visitproc visit, void *arg) {
    Py_VISIT(self->delivering);
    for (int i = 0; i < ROW_KINDS; i++) Py_VISIT(self->marks[i]);
    if (self->queues != NULL)
        for (Py_ssize_t d = 0; d < self->n; d++)
            for (Py_ssize_t k = 0; k < self->queues[d].count; k++) {
                Row *row = queue_at(&self->queues[d], k);
                Py_VISIT(row->sender);
                Py_VISIT(row->payload);
            }
    if (self->envelopes != NULL)
        for (Py_ssize_t i = 0; i < self->n * ROW_KINDS; i++) Py_VISIT(self->envelopes[i]);
    return 0;
}

static int lane_clear(Lane *self) {
    Py_CLEAR(self->delivering);
    for (int i = 0; i < ROW_KINDS; i++) Py_CLEAR(self->marks[i]);
    if (self->queues != NULL)
        for (Py_ssize_t d = 0; d < self->n; d++) {
            Queue *q = &self->queues[d];
            while (q->count > 0) {
                Row row = queue_pop(q);
                Py_XDECREF(row.sender);
                Py_DECREF(row.payload);
            }
        }
    self->in_flight = 0;
    if (self->envelopes != NULL)
        for (Py_ssize_t i = 0; i < self->n * ROW_KINDS; i++) Py_CLEAR(self->envelopes[i]);
    return 0;
}

static void lane_dealloc(Lane *self) {
    PyObject_GC_UnTrack(self);
    lane_clear(self);
    if (self->queues != NULL)
        for (Py_ssize_t d = 0; d < self->n; d++) PyMem_Free(self->queues[d].rows);
    PyMem_Free(self->queues);
    PyMem_Free(self->envelopes);
    PyMem_Free(self->first);
    PyMem_Free(self->last);
    PyMem_Free(self->ready);
    PyMem_Free(self->seen);
    PyMem_Free(self->next);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *envelope(Lane *lane, Py_ssize_t d, int kind) { return lane->envelopes[d * ROW_KINDS + kind]; }

/* The message a row (or a send) stands for; its payload, a tuple or a gradient's store (`(own,
 * *view)` kept as C data: the message gets the tuple it stands for). */
static PyObject *message_of(int kind, PyObject *sender, PyObject *payload) {
    if (is_store(payload)) {
        PyObject *items = PySequence_Tuple(payload), *msg = items == NULL ? NULL : message_of(kind, sender, items);
        Py_XDECREF(items);
        return msg;
    }
    switch (kind) {
    case ROW_CS: return new_message(cyclon_shuffle_type, cs_entries, payload, 0, NULL);
    case ROW_CR: return new_message(cyclon_reply_type, cr_sender, sender, cr_entries, payload);
    case ROW_GS: return new_message(gradient_shuffle_type, gs_descriptors, payload, 0, NULL);
    default: return new_message(gradient_reply_type, gr_descriptors, payload, 0, NULL);
    }
}

static int kind_of(Lane *lane, PyObject *mark) { /* the kind `mark` stands for, or -1 */
    for (int i = 0; i < ROW_KINDS; i++)
        if (lane->marks[i] == mark) return i;
    return -1;
}

static Py_ssize_t actor_index(Lane *lane, PyObject *d) { /* d as an index of the lane's actors, or -1 (no error) */
    long long at;
    if (!PyLong_CheckExact(d) || !int64_of(d, &at)) return -1;
    return at >= 0 && at < (long long)lane->n ? (Py_ssize_t)at : -1;
}

/* Take the front row of d's queue, which must be of mark's kind; 0, or -1 with RuntimeError. */
static int take_row(Lane *lane, Py_ssize_t d, PyObject *mark, Row *out) {
    int kind = kind_of(lane, mark);
    Row *front = queue_at(&lane->queues[d], 0);
    if (kind < 0 || front == NULL || front->kind != kind) {
        PyErr_Format(PyExc_RuntimeError, "the overlay lane is out of step with actor %zd's messages", d);
        return -1;
    }
    *out = queue_pop(&lane->queues[d]);
    lane->in_flight--;
    return 0;
}

static PyObject *lane_message(Lane *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "message(dst, mark)");
        return NULL;
    }
    Py_ssize_t d = actor_index(self, args[0]);
    if (d < 0) {
        PyErr_Format(PyExc_ValueError, "message: %R is not an actor of the lane", args[0]);
        return NULL;
    }
    Row row;
    if (take_row(self, d, args[1], &row) < 0) return NULL;
    PyObject *msg = message_of(row.kind, row.sender, row.payload);
    Py_XDECREF(row.sender);
    Py_DECREF(row.payload);
    return msg;
}

static PyObject *lane_render(Lane *self, PyObject *sends) {
    if (!PyList_CheckExact(sends)) {
        PyErr_SetString(PyExc_TypeError, "render(sends): a list of (dst, message)");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(sends);
    Py_ssize_t *seen = PyMem_Calloc(self->n ? (size_t)self->n : 1, sizeof(Py_ssize_t)); /* marks met per actor */
    PyObject *shown = seen == NULL ? PyErr_NoMemory() : PyList_New(n);
    for (Py_ssize_t i = 0; shown != NULL && i < n; i++) {
        PyObject *item = PyList_GET_ITEM(sends, i), *rendered = NULL;
        int kind = PyTuple_CheckExact(item) && PyTuple_GET_SIZE(item) == 2 ? kind_of(self, PyTuple_GET_ITEM(item, 1)) : -1;
        Py_ssize_t d = kind < 0 ? -1 : actor_index(self, PyTuple_GET_ITEM(item, 0));
        if (kind < 0) {
            rendered = Py_NewRef(item);
        } else {
            Row *row = d < 0 ? NULL : queue_at(&self->queues[d], seen[d]++);
            if (row == NULL || row->kind != kind) {
                PyErr_Format(PyExc_RuntimeError, "the overlay lane is out of step with the sends (item %zd)", i);
            } else {
                PyObject *msg = message_of(row->kind, row->sender, row->payload);
                rendered = msg == NULL ? NULL : PyTuple_Pack(2, PyTuple_GET_ITEM(item, 0), msg);
                Py_XDECREF(msg);
            }
        }
        if (rendered == NULL) Py_CLEAR(shown);
        else PyList_SET_ITEM(shown, i, rendered);
    }
    PyMem_Free(seen);
    return shown;
}

static PyObject *lane_get_open(Lane *self, void *Py_UNUSED(closure)) { return PyBool_FromLong(self->open); }

static int lane_set_open(Lane *self, PyObject *value, void *Py_UNUSED(closure)) {
    int open = value == NULL ? -1 : PyObject_IsTrue(value);
    if (open < 0) {
        if (value == NULL) PyErr_SetString(PyExc_AttributeError, "the lane's `open` cannot be deleted");
        return -1;
    }
    self->open = open;
    return 0;
}

static PyObject *lane_get_carried(Lane *self, void *Py_UNUSED(closure)) {
    return Py_BuildValue("(LLLL)", self->carried[0], self->carried[1], self->carried[2], self->carried[3]);
}

static PyObject *lane_get_in_flight(Lane *self, void *Py_UNUSED(closure)) { return PyLong_FromSsize_t(self->in_flight); }

static PyGetSetDef lane_getset[] = {
    {"open", (getter)lane_get_open, (setter)lane_set_open, "Do peers send their overlay messages as rows?", NULL},
    {"carried", (getter)lane_get_carried, NULL, "Descriptors carried by the rows made, per kind.", NULL},
    {"in_flight", (getter)lane_get_in_flight, NULL, "Rows queued and not yet taken.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyObject *lane_deliver(Lane *self, PyObject *const *args, Py_ssize_t nargs);
static PyObject *lane_settle(Lane *self, PyObject *unused);

static PyMethodDef lane_methods[] = {
    {"message", (PyCFunction)(void (*)(void))lane_message, METH_FASTCALL,
     "message(dst, mark) -> the message dst's front row stands for, taken off its queue."},
    {"deliver", (PyCFunction)(void (*)(void))lane_deliver, METH_FASTCALL,
     "deliver(deliveries, mailboxes, actors, inline_drain, now, batch) -> bool: an instant that carries marks "
     "delivered as the runtime's deliver would (True), or nothing done (False)."},
    {"render", (PyCFunction)lane_render, METH_O, "render(sends) -> the sends with each mark rendered as its message."},
    {"settle", (PyCFunction)lane_settle, METH_NOARGS,
     "settle(): while deliver runs, the marks it has not handled become the messages they stand for."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject LaneType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "drfemu.nodes._exchange.Lane",
    .tp_basicsize = sizeof(Lane),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The overlay messages of a run in flight as rows (see src/native/_exchange.c).",
    .tp_new = lane_new,
    .tp_dealloc = (destructor)lane_dealloc,
    .tp_traverse = (traverseproc)lane_traverse,
    .tp_clear = (inquiry)lane_clear,
    .tp_methods = lane_methods,
    .tp_getset = lane_getset,
};

static Lane *lane_of(PyObject *self) { /* the peer's lane if it is open, else NULL */
    PyObject *lane = SLOT(self, p_lane);
    return lane != NULL && Py_IS_TYPE(lane, &LaneType) && ((Lane *)lane)->open ? (Lane *)lane : NULL;
}

/* self.outbox.append((dst, <kind>(...))): as a row when the peer's lane is open and dst is one of
 * its actors (payload an exact tuple or a plain store), else as the message object itself. */
static int post(PyObject *self, PyObject *outbox, PyObject *dst, int kind, PyObject *sender, PyObject *payload) {
    Lane *lane = lane_of(self);
    int carries = PyTuple_CheckExact(payload) || is_plain_store(payload);
    Py_ssize_t d = lane == NULL || !PyList_CheckExact(outbox) || !carries ? -1 : actor_index(lane, dst);
    if (d >= 0) {
        if (PyList_Append(outbox, envelope(lane, d, kind)) < 0) return -1;
        if (queue_push(&lane->queues[d], kind, sender, payload) < 0) { /* no mark without its row */
            Py_ssize_t end = PyList_GET_SIZE(outbox);
            if (end > 0) PyList_SetSlice(outbox, end - 1, end, NULL);
            return -1;
        }
        lane->in_flight++;
        lane->carried[kind] += PyTuple_CheckExact(payload) ? PyTuple_GET_SIZE(payload)
                                                           : ((Descriptors *)payload)->length;
        return 0;
    }
    PyObject *msg = message_of(kind, sender, payload), *sent = msg == NULL ? NULL : pair(dst, msg);
    int status = sent == NULL ? -1 : append_to(outbox, sent);
    Py_XDECREF(sent);
    Py_XDECREF(msg);
    return status;
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
    /* Gradient.offer: self._pending.extend(descriptors); self._bound_pending() (its test inlined, for
     * `descriptors` a list or overlay._rank's Descriptors:
     * the compaction itself is the Python method, run once in thousands of offers) */
    PyObject *pending = take(g, g_pending);
    int status = pending == NULL         ? -1
                 : is_store(pending)     ? descriptors_extend((Descriptors *)pending, descriptors)
                                         : extend(pending, descriptors);
    Py_XDECREF(pending);
    if (status < 0) return -1;
    pending = take(g, g_pending);
    if (pending == NULL) return -1;
    /* type(pending) is descriptors and len(pending) > self.COMPACT_AT */
    Py_ssize_t held = (PyObject *)Py_TYPE(pending) != descriptors_fn ? 0
                      : is_store(pending)            ? descriptors_length((Descriptors *)pending)
                      : PyList_CheckExact(pending)   ? PyList_GET_SIZE(pending)
                                                     : PyObject_Length(pending);
    Py_DECREF(pending);
    if (held < 0) return -1;
    if (held <= compact_at) return 0;
    PyObject *done = PyObject_CallMethod(g, "_compact", NULL);
    Py_XDECREF(done);
    return done == NULL ? -1 : 0;
}

/* A field of a message, or (msg NULL) the payload of the row that stands for it; a new reference. */
static PyObject *field_of(PyObject *msg, Py_ssize_t offset, PyObject *payload) {
    return msg != NULL ? take(msg, offset) : Py_NewRef(payload);
}

static int offer_to_peer(PyObject *self, PyObject *msg, Py_ssize_t field, PyObject *payload) {
    /* if self.feeds_gradient: self.gradient.offer(msg.<field>) */
    PyObject *feeds = take(self, p_feeds_gradient);
    int on = feeds == NULL ? -1 : PyObject_IsTrue(feeds);
    Py_XDECREF(feeds);
    if (on <= 0) return on;
    PyObject *g = take(self, p_gradient), *descriptors = g == NULL ? NULL : field_of(msg, field, payload);
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

/* The ranked view of Gradient._merge as rank_fn would give it, on the pending candidates followed by
 * the view as they are, when rank_fn is the kernel's and every input is plain: a new list (of two
 * lists) or store (of two plain stores); NULL with Python's error; or NULL without one when an
 * input is not plain (nothing has changed). The same view as `pending += view; rank(...)`: the
 * kernel takes the two as one, and the old pending candidates, which that extends, are dropped
 * either way. */
static PyObject *rank_on_kernel(PyObject *g) {
    PyObject *pending = SLOT(g, g_pending), *view = SLOT(g, g_view), *ranked = NULL;
    PyObject *me_obj = SLOT(g, g_me), *utility_obj = SLOT(g, g_utility), *size_obj = SLOT(g, g_size);
    PyObject *clock_obj = SLOT(g, g_clock), *max_age_obj = SLOT(g, g_max_age);
    long long me, size;
    double utility, clock, max_age;
    int plain = 0; /* an unset slot is not plain: the call path raises its AttributeError */
    int lists = pending != NULL && PyList_CheckExact(pending) && view != NULL && PyList_CheckExact(view);
    int stores = pending != NULL && is_plain_store(pending) && view != NULL && is_plain_store(view);
    if ((lists || stores) && me_obj != NULL && kernel_plain_int(me_obj, &me) && utility_obj != NULL
        && kernel_plain_float(utility_obj, &utility) && size_obj != NULL && kernel_plain_int(size_obj, &size)
        && size >= 0 && size <= PY_SSIZE_T_MAX && clock_obj != NULL && kernel_plain_float(clock_obj, &clock)
        && max_age_obj != NULL && kernel_plain_float(max_age_obj, &max_age)
        && clock - max_age == clock - max_age) { /* `oldest` not NaN */
        if (lists) {
            ranked = kernel_rank_lists(me, utility, pending, view, (Py_ssize_t)size, clock - max_age, &plain);
        } else {
            /* the view no one else holds is written over, which no one can tell from a new one */
            Descriptors *into = Py_REFCNT(view) == 1 ? (Descriptors *)view : NULL;
            ranked = (PyObject *)descriptors_rank(descriptors_type, me, utility, (Descriptors *)pending,
                                                  (Descriptors *)view, (Py_ssize_t)size, clock - max_age, into);
            plain = 1;
        }
    }
    return plain ? ranked : NULL;
}

/* The ranked view of Gradient._merge, as its Python code computes it: `candidates = self._pending;
 * candidates.extend(self._view); rank(...)` with rank_fn; what rank_fn returns, or NULL with Python's
 * error. */
static PyObject *rank_by_call(PyObject *g) {
    PyObject *candidates = take(g, g_pending), *view = candidates == NULL ? NULL : take(g, g_view);
    int extended = view == NULL            ? -1
                   : is_store(candidates)  ? descriptors_extend((Descriptors *)candidates, view)
                                           : extend(candidates, view);
    Py_XDECREF(view);
    if (extended < 0) {
        Py_XDECREF(candidates);
        return NULL;
    }
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
    return ranked;
}

static PyObject *new_store(void) { /* descriptors(): a new, empty store */
    if (descriptors_type != NULL) return (PyObject *)descriptors_new(descriptors_type, 0);
    return descriptors_fn == (PyObject *)&PyList_Type ? PyList_New(0) : PyObject_CallNoArgs(descriptors_fn);
}

static int gradient_merge(PyObject *g) { /* Gradient._merge */
    PyObject *ranked = rank_is_kernel ? rank_on_kernel(g) : NULL;
    if (ranked == NULL && !PyErr_Occurred()) ranked = rank_by_call(g);
    if (ranked == NULL) return -1;
    put_new(g, g_view, ranked);
    /* self._pending = descriptors(): the plain store the slot alone holds is emptied in place, which
     * no one can tell from a new one */
    PyObject *pending = SLOT(g, g_pending);
    if (pending != NULL && is_plain_store(pending) && Py_REFCNT(pending) == 1) {
        descriptors_clear((Descriptors *)pending);
    } else {
        PyObject *fresh = new_store();
        if (fresh == NULL) return -1;
        put_new(g, g_pending, fresh);
    }
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
 * A stock rng and an exact list or plain store take the fast path; anything else Python's own
 * operations. */
static PyObject *draw_partner(PyObject *g, PyObject *view) {
    PyObject *rng = take(g, g_rng), *chosen = NULL;
    if (rng == NULL) return NULL;
    int store = is_plain_store(view), stock = PyList_CheckExact(view) || store ? is_stock_draw(rng) : 0;
    if (stock > 0) {
        double r;
        if (stock_uniform(rng, &r) == 0) {
            Py_ssize_t n = store ? ((Descriptors *)view)->length : PyList_GET_SIZE(view);
            Py_ssize_t at = (Py_ssize_t)(r * (double)n); /* r < 1: at < n, if n > 0 */
            if (at >= n) {
                PyErr_SetString(PyExc_IndexError, "list index out of range");
            } else if (store) {
                Py_DECREF(rng);
                return PyLong_FromLongLong(((Descriptors *)view)->items[at].node);
            } else {
                chosen = Py_NewRef(PyList_GET_ITEM(view, at));
            }
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

/* Gradient.initiate(now): 1 with the shuffle's *partner and *descriptors, 0 with an empty view, -1 on error */
static int gradient_initiate(PyObject *g, PyObject *now, PyObject **partner, PyObject **descriptors) {
    put(g, g_clock, now);
    if (merge_if_needed(g) < 0) return -1;
    PyObject *view = take(g, g_view);
    if (view == NULL) return -1;
    int any = PyObject_IsTrue(view);
    if (any <= 0) {
        Py_DECREF(view);
        return any;
    }
    PyObject *own = NULL;
    if ((*partner = draw_partner(g, view)) != NULL && (own = own_descriptor(g, now)) != NULL)
        *descriptors = with_own(own, view);
    Py_XDECREF(own);
    Py_DECREF(view);
    if (*descriptors == NULL) Py_CLEAR(*partner);
    return *partner == NULL ? -1 : 1;
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

/* Cyclon's steps on the View's arrays, where its entries are a plain View, `field` an exact int and
 * the draw (if one is needed) the stock generator: what sample_values, merge and pop_oldest do, with
 * the entries sent and received as stores of structs (`_descriptors.h`) instead of tuples of
 * descriptor objects. Each returns NULL (or 0) without an error where that does not hold, before
 * anything changed: the caller then calls the function as the reference does. */

static ViewObject *plain_view(PyObject *c) { /* c.entries, borrowed, if it is a plain View */
    PyObject *entries = SLOT(c, c_entries);
    return view_type != NULL && entries != NULL && Py_IS_TYPE(entries, view_type) && view_plain((ViewObject *)entries)
               ? (ViewObject *)entries : NULL;
}

static int plain_field(PyObject *obj, Py_ssize_t offset, long long *out) { /* obj.<slot>, an exact int: 1 */
    PyObject *value = SLOT(obj, offset);
    return value != NULL && kernel_plain_int(value, out);
}

/* sample_values(self.rng, self.entries, k) as a store of the entries drawn. */
static PyObject *sample_on_arrays(PyObject *c, ViewObject *v, long long k) {
    Py_ssize_t n = v->len;
    if (k < 0 || (n > k && view_comb(n, (Py_ssize_t)k) > VIEW_MAX_TABLE)) return NULL; /* the reference's case */
    Py_ssize_t count = n <= k ? n : (Py_ssize_t)k, small[32], *picks = small;
    if (k == 0) count = 0;
    if (count > 0 && count < n) {
        PyObject *rng = SLOT(c, c_rng);
        double r;
        if (rng == NULL || count > 32 || is_stock_draw(rng) != 1) {
            PyErr_Clear(); /* is_stock_draw raises nothing for a stock generator; anything else: the reference */
            return NULL;
        }
        if (stock_uniform(rng, &r) < 0) return NULL;
        view_picks(n, count, r, picks);
    }
    Descriptors *chosen = descriptors_new(descriptors_type, count);
    if (chosen == NULL) return NULL;
    for (Py_ssize_t i = 0; i < count; i++) chosen->items[i] = view_entry(v, count == n ? i : picks[i]);
    chosen->length = count;
    return (PyObject *)chosen;
}

/* The nodes of what a merge receives or may replace: a plain store's, or an exact tuple's of plain
 * descriptors (_cyclon.c's merge's test); 0 when neither. */
static int exchanged_nodes(PyObject *items, long long *ids) {
    if (is_plain_store(items)) {
        Descriptors *d = (Descriptors *)items;
        for (Py_ssize_t i = 0; i < d->length; i++) ids[i] = d->items[i].node;
        return 1;
    }
    return PyTuple_CheckExact(items) && view_tuple_nodes(items, ids);
}

static Py_ssize_t exchanged_length(PyObject *items) {
    if (is_store(items)) return descriptors_length((Descriptors *)items);
    return PyTuple_Check(items) ? PyTuple_GET_SIZE(items) : -1;
}

/* merge(self.entries, self.me, self.size, received, replaceable) on a View (as _cyclon.c's merge, it
 * need not be plain: the plan reads nodes only): 1 done, 0 not applicable (nothing changed), -1 on
 * error. An entry received in a store joins as C data, one received in a tuple as its object. */
static int merge_on_arrays(PyObject *c, PyObject *received, PyObject *replaceable) {
    ViewObject *v = view_type != NULL && SLOT(c, c_entries) != NULL && Py_IS_TYPE(SLOT(c, c_entries), view_type)
                        ? (ViewObject *)SLOT(c, c_entries) : NULL;
    long long me, size;
    Py_ssize_t m = exchanged_length(received), r = exchanged_length(replaceable);
    if (v == NULL || m < 0 || r < 0 || !plain_field(c, c_me, &me) || !plain_field(c, c_size, &size)) return 0;
    Py_ssize_t n = m + r;
    long long small_ids[64];
    Py_ssize_t small_places[64];
    long long *ids = n <= 64 ? small_ids : PyMem_Malloc(sizeof(long long) * (size_t)(n + 1));
    Py_ssize_t *places = n <= 64 ? small_places : PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(n + 1));
    int status = 0;
    if (ids == NULL || places == NULL) {
        PyErr_NoMemory();
        status = -1;
    } else if (exchanged_nodes(received, ids) && exchanged_nodes(replaceable, ids + m)) {
        Py_ssize_t count = view_merge_plan(v, me, size, ids, m, r, places), *fresh = places;
        status = 1;
        /* a node received twice: the later descriptor, in the first's place */
        for (Py_ssize_t i = 0; status == 1 && i < count; i++)
            if ((is_store(received) ? view_set_plain(v, &((Descriptors *)received)->items[fresh[i]])
                                    : view_set(v, ids[fresh[i]], PyTuple_GET_ITEM(received, fresh[i]))) < 0)
                status = -1;
    }
    if (ids != NULL && ids != small_ids) PyMem_Free(ids);
    if (places != NULL && places != small_places) PyMem_Free(places);
    return status;
}


/* sample_values(self.rng, self.entries, self.length - minus): on the arrays, or by the call. */
static PyObject *sample_entries(PyObject *c, long long minus) {
    ViewObject *v = plain_view(c);
    long long length;
    if (v != NULL && plain_field(c, c_length, &length)) {
        PyObject *chosen = sample_on_arrays(c, v, length - minus);
        if (chosen != NULL || PyErr_Occurred()) return chosen;
    }
    PyObject *rng = take(c, c_rng), *entries = rng == NULL ? NULL : take(c, c_entries);
    PyObject *length_obj = entries == NULL ? NULL : take(c, c_length), *k = length_obj;
    if (minus != 0 && length_obj != NULL) {
        k = PyNumber_Subtract(length_obj, one);
        Py_DECREF(length_obj);
    }
    PyObject *drawn[3] = {rng, entries, k};
    return call_with(sample_fn, drawn, 3);
}

/* pop_oldest(self.entries) on the arrays: the node, or None; NULL without an error when the entries
 * are not a plain View. */
static PyObject *pop_oldest_on_arrays(PyObject *c) {
    ViewObject *v = plain_view(c);
    return v == NULL ? NULL : view_pop_oldest(v);
}

/* Cyclon.initiate(own): 1 with the shuffle's *partner and *entries, 0 with an empty view, -1 on error */
static int cyclon_initiate(PyObject *c, PyObject *own, PyObject **partner, PyObject **sent) {
    PyObject *oldest = pop_oldest_on_arrays(c), *chosen = NULL;
    if (oldest == NULL && !PyErr_Occurred()) {
        PyObject *popped[1] = {take(c, c_entries)};
        oldest = call_with(pop_oldest_fn, popped, 1);
    }
    if (oldest == NULL) return -1;
    if (oldest == Py_None) {
        Py_DECREF(oldest);
        return 0;
    }
    chosen = sample_entries(c, 1); /* sample_values(self.rng, self.entries, self.length - 1) */
    if (chosen != NULL) {
        put(c, c_partner, oldest);
        put(c, c_sent, chosen);
        *sent = with_own(own, chosen);
    }
    Py_XDECREF(chosen);
    if (*sent == NULL) {
        Py_DECREF(oldest);
        return -1;
    }
    *partner = oldest;
    return 1;
}

static int cyclon_merge(PyObject *c, PyObject *received, PyObject *replaceable) { /* Cyclon._merge */
    int done_here = merge_on_arrays(c, received, replaceable);
    if (done_here != 0) return done_here < 0 ? -1 : 0;
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
    PyObject *c = take(self, p_cyclon), *g = take(self, p_gradient), *partner = NULL, *sent = NULL, *outbox = NULL;
    PyObject *own = own_descriptor(g, args[0]);
    int status = own == NULL ? -1 : cyclon_initiate(c, own, &partner, &sent);
    if (status == 1) { /* self.outbox.append(started); self.cyclon_exchanges += 1 */
        outbox = take(self, p_outbox);
        status = outbox == NULL || post(self, outbox, partner, ROW_CS, NULL, sent) < 0
                 || increment(self, p_cyclon_exchanges) < 0 ? -1 : 0;
    } else if (status == 0) {
        status = ask_to_rejoin(self);
    }
    Py_XDECREF(outbox);
    Py_XDECREF(sent);
    Py_XDECREF(partner);
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
    PyObject *g = take(self, p_gradient), *partner = NULL, *sent = NULL, *outbox = NULL;
    int status = gradient_initiate(g, args[0], &partner, &sent);
    if (status == 1) {
        outbox = take(self, p_outbox);
        status = outbox == NULL || post(self, outbox, partner, ROW_GS, NULL, sent) < 0
                 || increment(self, p_gradient_exchanges) < 0 ? -1 : 0;
    }
    Py_XDECREF(outbox);
    Py_XDECREF(sent);
    Py_XDECREF(partner);
    Py_DECREF(g);
    if (status < 0) return NULL;
    Py_RETURN_NONE;
}

/* The four handlers' bodies take the message, or (msg NULL) the fields of the row that stands for
 * it: its payload and, for a CyclonReply, its sender. */

static PyObject *answer_cyclon(PyObject *self, PyObject *msg, PyObject *payload) {
    /* self.outbox.append((msg.sender, self.cyclon.answer(msg))); self.gradient.offer(msg.entries) */
    PyObject *outbox = take(self, p_outbox), *received = outbox == NULL ? NULL : field_of(msg, cs_entries, payload);
    PyObject *sender = received == NULL ? NULL : sender_of(received), *c = sender == NULL ? NULL : take(self, p_cyclon);
    PyObject *chosen = NULL, *me = NULL, *result = NULL;
    if (c == NULL) goto done;
    chosen = sample_entries(c, 0); /* Cyclon.answer: sample_values(self.rng, self.entries, self.length) */
    if (chosen == NULL) goto done;
    Py_SETREF(received, field_of(msg, cs_entries, payload)); /* self._merge(request.entries, chosen) */
    if (received == NULL || cyclon_merge(c, received, chosen) < 0 || (me = take(c, c_me)) == NULL
        || post(self, outbox, sender, ROW_CR, me, chosen) < 0 || offer_to_peer(self, msg, cs_entries, payload) < 0)
        goto done;
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(me);
    Py_XDECREF(chosen);
    Py_XDECREF(c);
    Py_XDECREF(sender);
    Py_XDECREF(received);
    Py_XDECREF(outbox);
    return result;
}

static PyObject *complete_cyclon(PyObject *self, PyObject *msg, PyObject *row_sender, PyObject *payload) {
    /* Cyclon.complete(msg), then self.gradient.offer(msg.entries) */
    PyObject *c = take(self, p_cyclon), *sender = field_of(msg, cr_sender, row_sender), *partner = take(c, c_partner);
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
    received = field_of(msg, cr_entries, payload);
    if (received == NULL || cyclon_merge(c, received, replaceable) < 0
        || offer_to_peer(self, msg, cr_entries, payload) < 0)
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

static PyObject *answer_gradient(PyObject *self, PyObject *msg, PyObject *payload, PyObject *now) {
    /* self.outbox.append((msg.sender, self.gradient.answer(msg, now))) */
    PyObject *outbox = take(self, p_outbox), *received = outbox == NULL ? NULL : field_of(msg, gs_descriptors, payload);
    PyObject *sender = received == NULL ? NULL : sender_of(received);
    PyObject *g = sender == NULL ? NULL : take(self, p_gradient);
    PyObject *own = NULL, *view = NULL, *descriptors = NULL, *result = NULL;
    if (g == NULL) goto done;
    /* Gradient.answer: self._clock = now; self._pending.extend(request.descriptors);
     * return GradientReply((self.descriptor(now), *self._view)) */
    put(g, g_clock, now);
    Py_SETREF(received, field_of(msg, gs_descriptors, payload));
    if (received == NULL || offer(g, received) < 0 || (own = own_descriptor(g, now)) == NULL
        || (view = take(g, g_view)) == NULL || (descriptors = with_own(own, view)) == NULL
        || post(self, outbox, sender, ROW_GR, NULL, descriptors) < 0)
        goto done;
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(descriptors);
    Py_XDECREF(view);
    Py_XDECREF(own);
    Py_XDECREF(g);
    Py_XDECREF(sender);
    Py_XDECREF(received);
    Py_XDECREF(outbox);
    return result;
}

static PyObject *complete_gradient(PyObject *self, PyObject *msg, PyObject *payload) {
    PyObject *g = take(self, p_gradient), *received = g == NULL ? NULL : field_of(msg, gr_descriptors, payload);
    int status = received == NULL ? -1 : offer(g, received); /* Gradient.complete */
    Py_XDECREF(received);
    Py_XDECREF(g);
    if (status < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *on_cyclon_shuffle(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CHECK_ARGS(2, "_on_cyclon_shuffle(msg, now)");
    INLINED_OR_REFERENCE(inlined(self) && Py_IS_TYPE(args[0], cyclon_shuffle_type), ON_CYCLON_SHUFFLE);
    return answer_cyclon(self, args[0], NULL);
}

static PyObject *on_cyclon_reply(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CHECK_ARGS(2, "_on_cyclon_reply(msg, now)");
    INLINED_OR_REFERENCE(inlined(self) && Py_IS_TYPE(args[0], cyclon_reply_type), ON_CYCLON_REPLY);
    return complete_cyclon(self, args[0], NULL, NULL);
}

static PyObject *on_gradient_shuffle(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CHECK_ARGS(2, "_on_gradient_shuffle(msg, now)");
    INLINED_OR_REFERENCE(inlined(self) && Py_IS_TYPE(args[0], gradient_shuffle_type), ON_GRADIENT_SHUFFLE);
    return answer_gradient(self, args[0], NULL, args[1]);
}

static PyObject *on_gradient_reply(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CHECK_ARGS(2, "_on_gradient_reply(msg, now)");
    INLINED_OR_REFERENCE(inlined(self) && Py_IS_TYPE(args[0], gradient_reply_type), ON_GRADIENT_REPLY);
    return complete_gradient(self, args[0], NULL);
}

/* The message `row` stands for, handled at `peer`, whose Cyclon and gradient are inlined (the
 * row's references stay the caller's). */
static PyObject *run_row(PyObject *peer, Row row, PyObject *now) {
    switch (row.kind) {
    case ROW_CS: return answer_cyclon(peer, NULL, row.payload);
    case ROW_CR: return complete_cyclon(peer, NULL, row.sender, row.payload);
    case ROW_GS: return answer_gradient(peer, NULL, row.payload, now);
    default: return complete_gradient(peer, NULL, row.payload);
    }
}

/* _on_row(mark, now): the handler of the lane's marks. It takes the front row of this actor's
 * queue in its lane (a mark and its row out of step: RuntimeError) and handles the message the row
 * stands for: inlined as the four handlers above, or — for a peer whose Cyclon or gradient is of
 * another class — as the message object, through the peer's own handler of its class. */
static PyObject *on_row(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CHECK_ARGS(2, "_on_row(mark, now)");
    PyObject *held = SLOT(self, p_lane), *id = SLOT(self, p_id);
    Lane *lane = held != NULL && Py_IS_TYPE(held, &LaneType) ? (Lane *)held : NULL;
    Py_ssize_t d = lane == NULL || id == NULL ? -1 : actor_index(lane, id);
    if (d < 0) {
        PyErr_SetString(PyExc_RuntimeError, "_on_row: a mark reached a peer outside the overlay lane");
        return NULL;
    }
    Py_INCREF(lane);
    Row row;
    PyObject *result = NULL;
    if (take_row(lane, d, args[0], &row) < 0) {
        Py_DECREF(lane);
        return NULL;
    }
    if (!inlined(self)) {
        PyObject *msg = message_of(row.kind, row.sender, row.payload), *dispatch = NULL, *handler = NULL;
        if (msg != NULL && (dispatch = PyObject_GetAttrString(self, "DISPATCH")) != NULL
            && (handler = PyObject_GetItem(dispatch, (PyObject *)Py_TYPE(msg))) != NULL) {
            PyObject *call[3] = {self, msg, args[1]};
            result = PyObject_Vectorcall(handler, call, 3, NULL);
        }
        Py_XDECREF(handler);
        Py_XDECREF(dispatch);
        Py_XDECREF(msg);
    } else {
        result = run_row(self, row, args[1]);
    }
    Py_XDECREF(row.sender);
    Py_DECREF(row.payload);
    Py_DECREF(lane);
    return result;
}

/* lane.deliver(deliveries, mailboxes, actors, inline_drain, now, batch) -> bool: an instant's
 * delivery phase that carries marks of this lane, as the runtime's `deliver` (its reference, C or
 * Python) would do it, less the mailboxes, the dispatch and the calls in between.
 * False, having run no Python code and changed nothing, unless `batch` is a list and every
 * delivery a (d, message) pair, d an actor of the lane with an empty mailbox, and one message
 * at least a mark: then the runtime's deliver runs. Otherwise True, once it has woken each actor
 * that received something, in the order of its first message, to handle its messages in arrival
 * order, and moved its outbox to `batch`. An actor of a plain class (slots, no instance dict, no
 * __getattr__), with the inline drain and its DISPATCH a dict, it wakes itself: `_on_row` called
 * directly for each mark its DISPATCH maps to it, any other handler called as deliver calls it.
 * Any other actor (a class with a dict, a drain of its own) gets the runtime's deliver, for its
 * messages alone, at its turn. */
static int wakes_here(Lane *self, PyObject *actors, PyObject *inline_drain, Py_ssize_t d, PyObject **dispatch) {
    if (d >= PyList_GET_SIZE(actors) || d >= PyList_GET_SIZE(inline_drain) || PyList_GET_ITEM(inline_drain, d) != Py_True)
        return 0;
    PyTypeObject *type = Py_TYPE(PyList_GET_ITEM(actors, d));
    if (type->tp_getattro != PyObject_GenericGetAttr || type->tp_dictoffset != 0) return 0;
    *dispatch = _PyType_Lookup(type, str_dispatch); /* what getattr(actor, "DISPATCH") gives for such a class */
    return *dispatch != NULL && PyDict_CheckExact(*dispatch);
}

/* deliveries[i], a (d, message or mark) pair (borrowed), or NULL with RuntimeError: the list is
 * the runtime's own, but a handler could reach it and change it. */
static PyObject *delivery_at(PyObject *deliveries, Py_ssize_t i) {
    PyObject *item = i < PyList_GET_SIZE(deliveries) ? PyList_GET_ITEM(deliveries, i) : NULL;
    if (item == NULL || !PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != 2) {
        PyErr_SetString(PyExc_RuntimeError, "an instant's deliveries changed while the overlay lane delivered them");
        return NULL;
    }
    return item;
}

/* The list of the deliveries on the chain from `first` (the pairs, or their messages). */
static PyObject *chain_of(PyObject *deliveries, const Py_ssize_t *next, Py_ssize_t first, int with_pairs) {
    PyObject *list = PyList_New(0);
    for (Py_ssize_t i = first; list != NULL && i >= 0; i = next[i]) {
        PyObject *item = delivery_at(deliveries, i);
        if (item == NULL || PyList_Append(list, with_pairs ? item : PyTuple_GET_ITEM(item, 1)) < 0) Py_CLEAR(list);
    }
    return list;
}

static int wake(Lane *self, PyObject *actor, PyObject *dispatch, PyObject *deliveries, Py_ssize_t first,
                PyObject *now) { /* deliver's wake of an actor: each message through its handler */
    for (Py_ssize_t i = first; i >= 0; i = self->next[i]) {
        self->at = i;
        PyObject *item = delivery_at(deliveries, i);
        if (item == NULL) return -1;
        PyObject *mark = Py_NewRef(PyTuple_GET_ITEM(item, 1)); /* a mark, or another message */
        PyObject *handler = PyDict_GetItemWithError(dispatch, (PyObject *)Py_TYPE(mark)); /* borrowed */
        PyObject *call[3] = {actor, mark, now}, *done;
        if (handler == row_handler && PyObject_TypeCheck(actor, peer_type)) {
            done = on_row(actor, call + 1, 2);
        } else if (handler != NULL) {
            Py_INCREF(handler);
            done = PyObject_Vectorcall(handler, call, 3, NULL);
            Py_DECREF(handler);
        } else { /* as deliver: check_handled names the message, else KeyError */
            PyObject *messages = PyErr_Occurred() ? NULL : chain_of(deliveries, self->next, first, 0);
            done = messages == NULL ? NULL : PyObject_CallMethod(actor, "check_handled", "O", messages);
            Py_XDECREF(messages);
            if (done != NULL) {
                Py_DECREF(done);
                PyErr_SetObject(PyExc_KeyError, (PyObject *)Py_TYPE(mark));
            }
            Py_DECREF(mark);
            return -1;
        }
        Py_DECREF(mark);
        if (done == NULL) return -1;
        Py_DECREF(done);
    }
    return 0;
}

static int move_to_batch(PyObject *actor, PyObject *batch) { /* batch += actor.outbox; actor.outbox.clear() */
    PyObject *outbox = take(actor, p_outbox);
    int status = outbox == NULL ? -1 : outbox_to_batch(outbox, batch);
    Py_XDECREF(outbox);
    return status;
}

/* The runtime's deliver (the reference) for actor d alone: what it would do at d's turn — its
 * messages to its mailbox, its wake, its outbox to the batch. */
static int deliver_one(Lane *self, PyObject *const *args, Py_ssize_t d) {
    PyObject *deliver = imported(&runtime_deliver, "drfemu.nodes.runtime", "deliver");
    PyObject *chain = deliver == NULL ? NULL : chain_of(args[0], self->next, self->first[d], 1);
    if (chain == NULL) return -1;
    PyObject *call[7] = {chain, args[1], args[2], args[3], args[4], args[5], Py_None};
    PyObject *done = PyObject_Vectorcall(deliver, call, 7, NULL);
    Py_DECREF(chain);
    Py_XDECREF(done);
    return done == NULL ? -1 : 0;
}

static PyObject *lane_deliver(Lane *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "deliver(deliveries, mailboxes, actors, inline_drain, now, batch)");
        return NULL;
    }
    PyObject *deliveries = args[0], *mailboxes = args[1], *actors = args[2], *inline_drain = args[3];
    PyObject *now = args[4], *batch = args[5];
    if (row_handler == NULL || self->delivering || !PyList_CheckExact(deliveries) || !PyList_CheckExact(mailboxes)
        || !PyList_CheckExact(actors) || !PyList_CheckExact(inline_drain) || !PyList_CheckExact(batch))
        Py_RETURN_FALSE;
    Py_ssize_t n = PyList_GET_SIZE(deliveries), woken = 0;
    if (n == 0) Py_RETURN_FALSE;
    if (n > self->next_capacity) {
        Py_ssize_t *next = PyMem_Realloc(self->next, sizeof(Py_ssize_t) * (size_t)n);
        if (next == NULL) return PyErr_NoMemory();
        self->next = next;
        self->next_capacity = n;
    }
    unsigned long instant = ++self->instant;
    if (instant == 0) { /* the stamps wrapped: forget them all */
        memset(self->seen, 0, sizeof(unsigned long) * (size_t)(self->n ? self->n : 1));
        instant = self->instant = 1;
    }
    Py_ssize_t marks = 0;
    for (Py_ssize_t i = 0; i < n; i++) { /* each actor's chain in its mailbox's place: no Python code runs here */
        PyObject *item = PyList_GET_ITEM(deliveries, i);
        if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != 2) Py_RETURN_FALSE;
        marks += kind_of(self, PyTuple_GET_ITEM(item, 1)) >= 0;
        Py_ssize_t d = actor_index(self, PyTuple_GET_ITEM(item, 0));
        if (d < 0 || d >= PyList_GET_SIZE(mailboxes)) Py_RETURN_FALSE;
        if (self->seen[d] != instant) {
            PyObject *mailbox = PyList_GET_ITEM(mailboxes, d);
            if (!PyList_CheckExact(mailbox) || PyList_GET_SIZE(mailbox) != 0) Py_RETURN_FALSE;
            self->seen[d] = instant;
            self->first[d] = i;
            self->ready[woken++] = d;
        } else {
            self->next[self->last[d]] = i;
        }
        self->last[d] = i;
        self->next[i] = -1;
    }
    if (marks == 0) Py_RETURN_FALSE;
    self->delivering = Py_NewRef(deliveries); /* the chains index into it */
    self->woken = woken;
    PyObject *result = Py_True;
    for (Py_ssize_t k = 0; k < woken; k++) {
        Py_ssize_t d = self->ready[k];
        PyObject *dispatch;
        self->at_actor = k;
        self->at = -1;
        if (!wakes_here(self, actors, inline_drain, d, &dispatch)) {
            self->at = -2; /* its messages go to its mailbox: settle leaves them to materialize */
            if (deliver_one(self, args, d) < 0) {
                result = NULL;
                break;
            }
            continue;
        }
        PyObject *actor = Py_NewRef(PyList_GET_ITEM(actors, d));
        Py_INCREF(dispatch);
        int status = wake(self, actor, dispatch, deliveries, self->first[d], now);
        if (status == 0) status = move_to_batch(actor, batch);
        Py_DECREF(dispatch);
        Py_DECREF(actor);
        if (status < 0) {
            result = NULL;
            break;
        }
    }
    Py_CLEAR(self->delivering);
    return Py_XNewRef(result);
}

/* lane.settle(): what a network change's materialize calls first. While lane.deliver runs, the
 * marks of its instant not yet handled (after the one being handled, whose row is taken: the
 * rest of its actor's, then every later actor's) stand for the front rows of their actors'
 * queues, and no mailbox holds them; each becomes, in its place in the deliveries, the message
 * its row stands for, so that the rows to come are taken in order, and deliver goes on with
 * the messages as the runtime's deliver would. */
static PyObject *lane_settle(Lane *self, PyObject *Py_UNUSED(unused)) {
    PyObject *deliveries = self->delivering;
    if (deliveries == NULL) Py_RETURN_NONE;
    for (Py_ssize_t k = self->at_actor; k < self->woken; k++) {
        Py_ssize_t d = self->ready[k];
        if (k == self->at_actor && self->at == -2) continue; /* with the runtime's deliver */
        Py_ssize_t i = k > self->at_actor || self->at < 0 ? self->first[d] : self->next[self->at];
        for (; i >= 0; i = self->next[i]) {
            PyObject *item = delivery_at(deliveries, i);
            if (item == NULL) return NULL;
            PyObject *mark = PyTuple_GET_ITEM(item, 1);
            if (kind_of(self, mark) < 0) continue; /* settled before */
            Row row;
            if (take_row(self, d, mark, &row) < 0) return NULL;
            PyObject *msg = message_of(row.kind, row.sender, row.payload);
            Py_XDECREF(row.sender);
            Py_DECREF(row.payload);
            PyObject *pair_ = msg == NULL ? NULL : PyTuple_Pack(2, PyTuple_GET_ITEM(item, 0), msg);
            Py_XDECREF(msg);
            if (pair_ == NULL) return NULL;
            PyList_SetItem(deliveries, i, pair_); /* steals pair_; the mark's envelope is the lane's */
        }
    }
    Py_RETURN_NONE;
}

static PyMethodDef row_method_def = {"_on_row", (PyCFunction)(void (*)(void))on_row, METH_FASTCALL,
                                     "Handle the message a mark of the overlay lane stands for (C; no Python "
                                     "reference: a run without the extension sends message objects)."};

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
        || PyTuple_GET_SIZE(args[4]) != 5 || !PyDict_Check(args[5])) {
        PyErr_SetString(PyExc_TypeError,
                        "peer_methods(peer, cyclon, gradient, (CyclonShuffle, CyclonReply, GradientShuffle, "
                        "GradientReply, JoinRequest), (sample_values, merge, pop_oldest, rank, descriptors), "
                        "references: dict)");
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
        {peer, "id", &p_id}, {peer, "lane", &p_lane}, {peer, "outbox", &p_outbox}, {peer, "cyclon", &p_cyclon},
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
    for (Py_ssize_t i = 0; i < 5; i++)
        if (!PyCallable_Check(PyTuple_GET_ITEM(functions, i))) {
            PyErr_SetString(PyExc_TypeError, "peer_methods: the functions are callables");
            goto done;
        }
    int kernel_ranks = 0; /* `rank` is overlay._rank's */
    PyObject *store_type = NULL; /* `descriptors` is overlay._rank's Descriptors */
    PyObject *compiled_rank = PyImport_ImportModule("drfemu.overlay._rank");
    if (compiled_rank == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_ImportError)) goto done;
        PyErr_Clear(); /* not built: the merge calls `rank`, the gradient keeps what `descriptors` makes */
    } else {
        PyObject *kernel_rank_fn = PyObject_GetAttrString(compiled_rank, "rank");
        PyObject *kernel_store = kernel_rank_fn == NULL ? NULL : PyObject_GetAttrString(compiled_rank, "Descriptors");
        Py_DECREF(compiled_rank);
        if (kernel_store == NULL) {
            Py_XDECREF(kernel_rank_fn);
            goto done;
        }
        kernel_ranks = kernel_rank_fn == PyTuple_GET_ITEM(functions, 3);
        if (kernel_store == PyTuple_GET_ITEM(functions, 4) && PyType_Check(kernel_store)) store_type = kernel_store;
        Py_DECREF(kernel_rank_fn);
        Py_DECREF(kernel_store); /* held by the configuration's `functions` from here on, if used */
    }
    PyObject *cyclon_view = NULL; /* Cyclon's functions are overlay._cyclon's: its steps may run on the View */
    PyObject *compiled_cyclon = store_type == NULL ? NULL : PyImport_ImportModule("drfemu.overlay._cyclon");
    if (compiled_cyclon == NULL && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_ImportError)) goto done;
        PyErr_Clear();
    } else if (compiled_cyclon != NULL) {
        const char *names[3] = {"sample_values", "merge", "pop_oldest"};
        int same = 1;
        for (int i = 0; i < 3; i++) {
            PyObject *f = PyObject_GetAttrString(compiled_cyclon, names[i]);
            if (f == NULL) {
                Py_DECREF(compiled_cyclon);
                goto done;
            }
            same = same && f == PyTuple_GET_ITEM(functions, i);
            Py_DECREF(f);
        }
        PyObject *view = same ? PyObject_GetAttrString(compiled_cyclon, "View") : NULL;
        Py_DECREF(compiled_cyclon);
        if (same && view == NULL) goto done;
        if (view != NULL && PyType_Check(view)) cyclon_view = view; /* the module keeps it alive */
        Py_XDECREF(view);
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
    PyObject *row_method = PyDescr_NewMethod(peer_type, &row_method_def);
    if (row_method == NULL || PyDict_SetItemString(result, row_method_def.ml_name, row_method) < 0) {
        Py_XDECREF(row_method);
        Py_CLEAR(result);
        goto done;
    }
    row_handler = row_method; /* held by configured_methods from here on */
    Py_DECREF(row_method);
    Py_XSETREF(join_request, Py_NewRef(PyTuple_GET_ITEM(messages, 4)));
    Py_XSETREF(sample_fn, Py_NewRef(PyTuple_GET_ITEM(functions, 0)));
    Py_XSETREF(merge_fn, Py_NewRef(PyTuple_GET_ITEM(functions, 1)));
    Py_XSETREF(pop_oldest_fn, Py_NewRef(PyTuple_GET_ITEM(functions, 2)));
    Py_XSETREF(rank_fn, Py_NewRef(PyTuple_GET_ITEM(functions, 3)));
    Py_XSETREF(descriptors_fn, Py_NewRef(PyTuple_GET_ITEM(functions, 4)));
    descriptors_type = (PyTypeObject *)store_type;
    view_type = (PyTypeObject *)cyclon_view;
    rank_is_kernel = kernel_ranks;
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
    view_init();
    one = PyLong_FromLong(1);
    minus_one = PyLong_FromLong(-1);
    empty_tuple = PyTuple_New(0);
    str_dispatch = PyUnicode_InternFromString("DISPATCH");
    if (one == NULL || minus_one == NULL || empty_tuple == NULL || str_dispatch == NULL) return NULL;
    if (PyType_Ready(&LaneType) < 0) return NULL;
    PyObject *created = PyModule_Create(&module);
    if (created != NULL && PyModule_AddObjectRef(created, "Lane", (PyObject *)&LaneType) < 0) Py_CLEAR(created);
    return created;
}
