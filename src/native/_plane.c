/* The overlay plane (issue 57): Cyclon and the gradient of every overlay peer of a run, their state in
 * C arrays and their messages in flight as rows, driven by the runtime's drivers and deliveries.
 *
 * `nodes.overlay_peer.OverlayPeer` runs Cyclon (`overlay.cyclon.Cyclon`) and the gradient
 * (`overlay.gradient.Gradient`) as Python objects; its rounds and handlers in Python
 * (`nodes.overlay_peer.PYTHON_EXCHANGES`) are the reference, and a message object per exchange is the
 * reference of a row. Where this extension is built, the assembly makes one Plane per run
 * (`nodes.plane.attach_plane`) and each peer it can hold is *adopted*: its Cyclon view, the entries it
 * sent, its partner, its gradient view and pending candidates, its utility, clock and staleness move
 * into the plane's arrays (plain descriptors, `KernelDescriptor`), and its `cyclon` and `gradient`
 * become views of the plane (`nodes.plane.PlaneCyclon`, `PlaneGradient`) with the reference's
 * interface. The rounds and the four handlers then run here on the arrays, with the overlay kernel's
 * merge rule and rank (`_overlay_kernel.h`), the same draws from the peer's own stream, and send rows.
 *
 * Hand-off. Anything the arrays cannot hold — a descriptor that is not plain (an exact 3-tuple of an
 * exact float, an exact int of 64 bits and an exact float, neither float NaN), a draw that is not the
 * stock generator, a `now` that is not an exact float, an outbox that is not a list — is seen before
 * the step changes anything; the peer is then *evicted* (the plane's `evict(peer)`, Python: its state
 * goes back into reference objects, which its views forward to from then on) and the step runs as the
 * Python reference. So any input gets the reference's answer, and a run of plain inputs never leaves
 * the arrays.
 *
 * Rows. While the plane is open (the network's latency is fixed: `nodes.lane`), an adopted peer sends
 * an overlay message to actor d in 0..n-1 as a row: its kind, sender and descriptors go to d's queue,
 * and the list of sends gets the shared mark (d, marks[kind]). The k-th mark d receives stands for the
 * k-th row of its queue (`nodes.lane` says why), so `_on_row`, the marks' handler, takes the front
 * row. A mark reaching an actor that is not adopted (evicted, or of another class) is turned into
 * the message it stands for and handed to the actor's own handler of that type. Closed, the plane's
 * peers send message objects, and handle those they receive by reading them into arrays.
 *
 * The runtime's side is the lane's (`nodes.lane.Lane`: open, in_flight, carried, message, render,
 * deliver, settle) plus `fire`, a periodic driver's round (the runtime's `fire_each`) that runs the
 * plane's Cyclon and gradient rounds of adopted peers without a call per peer.
 *
 * peer_methods(peer, messages, references, view_type, compact_at) -> {name: method}: configured once,
 *   with the OverlayPeer class (state in __slots__), (CyclonShuffle, CyclonReply, GradientShuffle,
 *   GradientReply, JoinRequest), {name: Python method} for the six rounds and handlers, the type
 *   `overlay._cyclon.View` (or None: a peer's entries are then read as a dict) and Gradient.COMPACT_AT.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_accelerator.h"
#include "_overlay_kernel.h"
#include "_stock_draw.h"
#include "_view.h"

typedef KernelDescriptor Desc;

#define SLOT(obj, offset) (*(PyObject **)((char *)(obj) + (offset)))
#define SMALL 64 /* descriptors a step keeps on the stack */

enum { ROW_CS, ROW_CR, ROW_GS, ROW_GR, ROW_KINDS };
enum { CYCLON_ROUND, GRADIENT_ROUND, ON_CYCLON_SHUFFLE, ON_CYCLON_REPLY, ON_GRADIENT_SHUFFLE, ON_GRADIENT_REPLY,
       METHODS };
static const char *method_names[METHODS] = {"cyclon_round", "gradient_round", "_on_cyclon_shuffle",
                                            "_on_cyclon_reply", "_on_gradient_shuffle", "_on_gradient_reply"};
static PyObject *references[METHODS];  /* the Python methods */
static PyObject *method_objects[METHODS + 1]; /* the C methods as configured, and `_on_row` last */
static PyObject *configured_methods;
static PyTypeObject *peer_type, *message_types[ROW_KINDS];
static PyObject *join_request, *view_type, *str_dispatch, *str_check_handled;
static PyObject *runtime_fire_each, *runtime_deliver; /* nodes.runtime's, imported at first need */
static Py_ssize_t compact_at = PY_SSIZE_T_MAX;
static Py_ssize_t p_id, p_lane, p_outbox, p_gossip_gradient, p_feeds_gradient, p_rejoin_via;
static Py_ssize_t m_field[ROW_KINDS], m_sender; /* each message's descriptors; CyclonReply's sender */

/* -- Python's small operations ---------------------------------------------------------------- */

static int truth(PyObject *value) { return value == Py_True ? 1 : value == Py_False ? 0 : PyObject_IsTrue(value); }

static PyObject *call_reference(int which, PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    PyObject *full[3] = {self, nargs > 0 ? args[0] : NULL, nargs > 1 ? args[1] : NULL};
    return PyObject_Vectorcall(references[which], full, (size_t)nargs + 1, NULL);
}

/* A plain descriptor `d` into *out: 1; 0 when it is not one (no error). */
static int read_plain(PyObject *d, Desc *out) {
    return PyTuple_CheckExact(d) && PyTuple_GET_SIZE(d) == 3 && kernel_plain_float(PyTuple_GET_ITEM(d, 0), &out->utility)
           && kernel_plain_int(PyTuple_GET_ITEM(d, 1), &out->node) && kernel_plain_float(PyTuple_GET_ITEM(d, 2), &out->stamp);
}

/* The items of an exact tuple or list of plain descriptors into a buffer: `small` (SMALL of them) or
 * one allocated (*owned, to free); 1 with *n set, 0 when they are not that, -1 with MemoryError. */
static int read_descriptors(PyObject *items, Desc *small, Desc **out, Py_ssize_t *n) {
    *out = NULL;
    if (!PyTuple_CheckExact(items) && !PyList_CheckExact(items)) return 0;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(items);
    Desc *into = count <= SMALL ? small : PyMem_Malloc(sizeof(Desc) * (size_t)count);
    if (into == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < count; i++)
        if (!read_plain(PySequence_Fast_GET_ITEM(items, i), &into[i])) {
            if (into != small) PyMem_Free(into);
            return 0;
        }
    *out = into;
    *n = count;
    return 1;
}

static PyObject *box_all(const Desc *d, Py_ssize_t n, int as_list) { /* the descriptors as a tuple or list of tuples */
    PyObject *items = as_list ? PyList_New(n) : PyTuple_New(n);
    for (Py_ssize_t i = 0; items != NULL && i < n; i++) {
        PyObject *t = kernel_box_descriptor(&d[i]);
        if (t == NULL) Py_CLEAR(items);
        else if (as_list) PyList_SET_ITEM(items, i, t);
        else PyTuple_SET_ITEM(items, i, t);
    }
    return items;
}

/* The message a row (or a send) stands for. */
static PyObject *message_of(int kind, long long sender, const Desc *d, Py_ssize_t n) {
    PyObject *items = box_all(d, n, 0);
    if (items == NULL) return NULL;
    PyTypeObject *type = message_types[kind];
    PyObject *msg = type->tp_alloc(type, 0);
    if (msg != NULL) {
        SLOT(msg, m_field[kind]) = Py_NewRef(items);
        if (kind == ROW_CR && (SLOT(msg, m_sender) = PyLong_FromLongLong(sender)) == NULL) Py_CLEAR(msg);
    }
    Py_DECREF(items);
    return msg;
}

/* -- the plane's state ------------------------------------------------------------------------ */

typedef struct {
    int kind, n;
    long long sender; /* CyclonReply's; the others carry their sender first */
} RowHead;

typedef struct {
    RowHead *heads;
    Desc *payload; /* capacity rows of `width` descriptors */
    Py_ssize_t head, count, capacity; /* a ring; capacity a power of two */
} Queue;

typedef struct {
    PyObject *peer; /* the adopted actor (owned), NULL when none */
    PyObject *rng;  /* its stream (owned) */
    StockSeen rng_seen; /* is_stock_draw_seen's memory of it */
    Desc *cview, *sent, *gview; /* one block: c, l and p of them */
    Py_ssize_t clen, slen, glen;
    long long partner; /* -1: none */
    Desc *pending;
    Py_ssize_t plen, pcap;
    double utility, clock;
    double own_utility, own_stamp; /* the own descriptor last made (Gradient._own): reused while both match */
    Py_ssize_t compact_next;
    int stale;
    long long exchanges[2]; /* the Cyclon shuffles and gradient exchanges it started while held */
    PyObject *view_list; /* the gradient view as Python last read it, until it changes */
} Peer;

typedef struct {
    PyObject_HEAD
    Py_ssize_t n, c, l, p, width; /* actors; Cyclon view, shuffle length, gradient view; a row's descriptors */
    double max_age;
    PyObject *evict;
    Queue *queues;
    Peer *peers;
    PyObject *marks[ROW_KINDS];
    PyObject **envelopes; /* (d, marks[kind]) at d * ROW_KINDS + kind */
    int open;
    long long carried[ROW_KINDS];
    Py_ssize_t in_flight, adopted;
    /* the gradient's scratch: kept descriptors, and indices (table, above, below, out) */
    Desc *kept;
    Py_ssize_t kept_cap, *index, index_cap;
    /* deliver's scratch, as the lane's: per actor its first and last delivery of the instant (valid
     * where seen[d] == instant); the actors in the order of their first; per delivery, the next one
     * to the same actor */
    Py_ssize_t *first, *last, *ready, *next;
    unsigned long *seen;
    unsigned long instant;
    Py_ssize_t next_capacity;
    /* while deliver runs: its deliveries, how many actors it wakes, and where it is (the k-th of them,
     * its delivery at `at`; -1 before the first, -2 with the runtime's deliver) */
    PyObject *delivering;
    Py_ssize_t woken, at_actor, at;
} Plane;

static PyTypeObject PlaneType;

static Py_ssize_t actor_index(Plane *plane, PyObject *d) { /* d as an actor of the plane, or -1 (no error) */
    long long at;
    if (!PyLong_CheckExact(d) || !int64_of(d, &at)) return -1;
    return at >= 0 && at < (long long)plane->n ? (Py_ssize_t)at : -1;
}

/* The plane that adopted `self`, with its state; NULL (no error) when none did. */
static Peer *adopted(PyObject *self, Plane **plane) {
    if (!PyObject_TypeCheck(self, peer_type)) return NULL;
    PyObject *held = SLOT(self, p_lane), *id = SLOT(self, p_id);
    if (held == NULL || !Py_IS_TYPE(held, &PlaneType) || id == NULL) return NULL;
    Py_ssize_t i = actor_index((Plane *)held, id);
    if (i < 0 || ((Plane *)held)->peers[i].peer != self) return NULL;
    *plane = (Plane *)held;
    return &(*plane)->peers[i];
}

static Py_ssize_t me_of(Plane *plane, Peer *s) { return s - plane->peers; }

static int grow_pending(Peer *s, Py_ssize_t need) {
    if (need <= s->pcap) return 0;
    Py_ssize_t cap = s->pcap < 16 ? 16 : s->pcap;
    while (cap < need) cap *= 2;
    Desc *more = PyMem_Realloc(s->pending, sizeof(Desc) * (size_t)cap);
    if (more == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    s->pending = more;
    s->pcap = cap;
    return 0;
}

/* The gradient's scratch for `n` candidates (kept: n; indices: the table and three lists of n). */
static int scratch_for(Plane *plane, Py_ssize_t n) {
    if (n > plane->kept_cap) {
        Desc *kept = PyMem_Realloc(plane->kept, sizeof(Desc) * (size_t)n);
        if (kept == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        plane->kept = kept;
        plane->kept_cap = n;
    }
    Py_ssize_t need = (Py_ssize_t)kernel_slots(n) + 3 * n;
    if (need > plane->index_cap) {
        Py_ssize_t *index = PyMem_Realloc(plane->index, sizeof(Py_ssize_t) * (size_t)need);
        if (index == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        plane->index = index;
        plane->index_cap = need;
    }
    return 0;
}

static void forget_view_list(Peer *s) { Py_CLEAR(s->view_list); }

/* -- Cyclon on the arrays (overlay.cyclon.Cyclon) --------------------------------------------- */

/* sample_values(rng, entries, k) (overlay.cyclon.sample_python): the chosen entries into `out` (k at
 * most c of them); their count, or -1 with Python's error. The draw is the stock generator's
 * (checked by the caller before the step began). */
static Py_ssize_t sample(Plane *plane, Peer *s, Py_ssize_t k, Desc *out) {
    Py_ssize_t n = s->clen;
    if (n <= k) {
        memcpy(out, s->cview, sizeof(Desc) * (size_t)n);
        return n;
    }
    if (k <= 0) return 0;
    double r;
    if (view_comb(n, k) <= VIEW_MAX_TABLE) { /* one draw picks a subset: `_subset_table` */
        Py_ssize_t small[SMALL], *picks = k <= SMALL ? small : PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)k);
        if (picks == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        int drawn = stock_uniform(s->rng, &r);
        if (drawn == 0) {
            view_picks(n, k, r, picks);
            for (Py_ssize_t i = 0; i < k; i++) out[i] = s->cview[picks[i]];
        }
        if (picks != small) PyMem_Free(picks);
        return drawn < 0 ? -1 : k;
    }
    Py_ssize_t small[SMALL], *pool = n <= SMALL ? small : PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)n);
    if (pool == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) pool[i] = i;
    for (Py_ssize_t i = 0; i < k; i++) { /* the partial Fisher-Yates of sample_python */
        if (stock_uniform(s->rng, &r) < 0) {
            if (pool != small) PyMem_Free(pool);
            return -1;
        }
        Py_ssize_t j = i + (Py_ssize_t)(r * (double)(n - i)), t = pool[i];
        pool[i] = pool[j];
        pool[j] = t;
    }
    for (Py_ssize_t i = 0; i < k; i++) out[i] = s->cview[pool[i]];
    if (pool != small) PyMem_Free(pool);
    (void)plane;
    return k;
}

/* pop_oldest: the entry with the smallest stamp (the first of equal ones) leaves the view; its node. */
static long long pop_oldest(Peer *s) {
    Py_ssize_t best = 0;
    for (Py_ssize_t i = 1; i < s->clen; i++)
        if (s->cview[i].stamp < s->cview[best].stamp) best = i;
    long long node = s->cview[best].node;
    memmove(s->cview + best, s->cview + best + 1, sizeof(Desc) * (size_t)(s->clen - best - 1));
    s->clen--;
    return node;
}

/* Cyclon's merge rule (overlay.cyclon.merge_python) on the view: the kernel's plan, carried out on the
 * array (an evicted entry leaves its place, the fresh join at the end, a node received twice the later
 * in the first's place). 0, or -1 with MemoryError. */
static int merge(Plane *plane, Peer *s, const Desc *received, Py_ssize_t m, const Desc *replaceable, Py_ssize_t r) {
    Py_ssize_t small[2 * SMALL], *places = m + r <= 2 * SMALL ? small : PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(m + r));
    if (places == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t *fresh = places, *evict = places + m, evicted;
    Py_ssize_t count = kernel_merge_plan(me_of(plane, s), plane->c, kernel_descriptor_nodes(s->cview), s->clen,
                                         kernel_descriptor_nodes(received), m, kernel_descriptor_nodes(replaceable), r,
                                         fresh, evict, &evicted);
    if (evicted > 0) { /* the rest close up, in order */
        Py_ssize_t to = evict[0];
        for (Py_ssize_t from = evict[0], e = 0; from < s->clen; from++) {
            if (e < evicted && from == evict[e]) e++;
            else s->cview[to++] = s->cview[from];
        }
        s->clen = to;
    }
    count = kernel_merge_fresh(kernel_descriptor_nodes(received), fresh, count);
    for (Py_ssize_t i = 0; i < count; i++) s->cview[s->clen++] = received[fresh[i]];
    if (places != small) PyMem_Free(places);
    return 0;
}

/* -- the gradient on the arrays (overlay.gradient.Gradient) ---------------------------------- */

/* Gradient._compact: each node's freshest pending descriptor (freshest_python), once more are pending
 * than the last compaction kept plus its margin. */
static int compact(Plane *plane, Peer *s) {
    if (s->plen <= s->compact_next) return 0;
    if (scratch_for(plane, s->plen) < 0) return -1;
    size_t slots = kernel_slots(s->plen);
    memset(plane->index, 0, sizeof(Py_ssize_t) * slots);
    Py_ssize_t unique = 0;
    for (Py_ssize_t i = 0; i < s->plen; i++)
        kernel_keep_freshest(s->pending[i], i, plane->kept, NULL, &unique, plane->index, slots);
    memcpy(s->pending, plane->kept, sizeof(Desc) * (size_t)unique);
    s->plen = unique;
    s->compact_next = unique + (compact_at > unique / 2 ? compact_at : unique / 2);
    return 0;
}

/* Gradient.offer: the candidates join the pending ones (then `_bound_pending`). */
static int offer(Plane *plane, Peer *s, const Desc *d, Py_ssize_t n) {
    if (grow_pending(s, s->plen + n) < 0) return -1;
    memcpy(s->pending + s->plen, d, sizeof(Desc) * (size_t)n);
    s->plen += n;
    return s->plen > compact_at ? compact(plane, s) : 0;
}

/* rank(me, utility, pending + view, p, clock - max_age) into `out` (p of them): its length, or -1. */
static Py_ssize_t rank_into(Plane *plane, Peer *s, Desc *out) {
    Py_ssize_t n = s->plen + s->glen;
    if (scratch_for(plane, n) < 0) return -1;
    Py_ssize_t *table = plane->index, *above = table + kernel_slots(n), *below = above + n, *ranked = below + n;
    Py_ssize_t length = kernel_rank(me_of(plane, s), s->utility, s->pending, s->plen, s->gview, s->glen, 0, plane->p,
                                    s->clock - plane->max_age, plane->kept, NULL, table, above, below, ranked);
    for (Py_ssize_t i = 0; i < length; i++) out[i] = plane->kept[ranked[i]];
    return length;
}

/* Gradient._merge, if pending or stale. */
static int merge_if_needed(Plane *plane, Peer *s) {
    if (s->plen == 0 && !s->stale) return 0;
    Desc view[SMALL], *into = plane->p <= SMALL ? view : PyMem_Malloc(sizeof(Desc) * (size_t)plane->p);
    if (into == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t length = rank_into(plane, s, into);
    if (length >= 0) {
        memcpy(s->gview, into, sizeof(Desc) * (size_t)length);
        s->glen = length;
        s->plen = 0;
        s->stale = 0;
        forget_view_list(s);
    }
    if (into != view) PyMem_Free(into);
    return length < 0 ? -1 : 0;
}

/* May the plane's steps run on this peer now: `now` an exact float, the clocks a merge would use not NaN,
 * and (for a step that `draws`) the stream the stock generator? 1; 0 when not (hand off); -1 on error. A
 * step that draws nothing never reads the stream, as its reference does not. */
static int steps_run(Plane *plane, Peer *s, PyObject *now, int draws) {
    if (!PyFloat_CheckExact(now)) return 0;
    double oldest = PyFloat_AS_DOUBLE(now) - plane->max_age;
    if (oldest != oldest || s->clock - plane->max_age != s->clock - plane->max_age) return 0;
    return draws ? is_stock_draw_seen(s->rng, &s->rng_seen) : 1;
}

/* -- sending -------------------------------------------------------------------------------- */

static int queue_push(Queue *q, Py_ssize_t width, int kind, long long sender, const Desc *d, Py_ssize_t n) {
    if (q->count == q->capacity) {
        Py_ssize_t capacity = q->capacity ? 2 * q->capacity : 4;
        RowHead *heads = PyMem_Malloc(sizeof(RowHead) * (size_t)capacity);
        Desc *payload = heads == NULL ? NULL : PyMem_Malloc(sizeof(Desc) * (size_t)(capacity * width));
        if (payload == NULL) {
            PyMem_Free(heads);
            PyErr_NoMemory();
            return -1;
        }
        for (Py_ssize_t i = 0; i < q->count; i++) {
            Py_ssize_t at = (q->head + i) & (q->capacity - 1);
            heads[i] = q->heads[at];
            memcpy(payload + i * width, q->payload + at * width, sizeof(Desc) * (size_t)q->heads[at].n);
        }
        PyMem_Free(q->heads);
        PyMem_Free(q->payload);
        q->heads = heads;
        q->payload = payload;
        q->head = 0;
        q->capacity = capacity;
    }
    Py_ssize_t at = (q->head + q->count) & (q->capacity - 1);
    q->heads[at] = (RowHead){kind, (int)n, sender};
    memcpy(q->payload + at * width, d, sizeof(Desc) * (size_t)n);
    q->count++;
    return 0;
}

/* Send to `dst` (a node named by a descriptor) the message of `kind` with descriptors d[0..n): a row
 * and its mark appended to `out` while the plane is open and dst is one of its actors, else the pair
 * (dst, message). 0, or -1 with Python's error. */
static int post(Plane *plane, PyObject *out, long long dst, int kind, long long sender, const Desc *d, Py_ssize_t n) {
    if (plane->open && dst >= 0 && dst < (long long)plane->n && n <= plane->width) {
        Queue *q = &plane->queues[dst];
        if (queue_push(q, plane->width, kind, sender, d, n) < 0) return -1;
        if (PyList_Append(out, plane->envelopes[dst * ROW_KINDS + kind]) < 0) { /* no row without its mark */
            q->count--;
            return -1;
        }
        plane->in_flight++;
        plane->carried[kind] += n;
        return 0;
    }
    PyObject *msg = message_of(kind, sender, d, n), *to = msg == NULL ? NULL : PyLong_FromLongLong(dst);
    PyObject *sent = to == NULL ? NULL : PyTuple_Pack(2, to, msg);
    int status = sent == NULL ? -1 : PyList_Append(out, sent);
    Py_XDECREF(sent);
    Py_XDECREF(to);
    Py_XDECREF(msg);
    return status;
}

/* Gradient.descriptor(now): the own descriptor last made while its stamp and utility equal now and the
 * utility (as Python compares them: -0.0 stays -0.0), else (utility, me, now), kept. */
static Desc own_of(Plane *plane, Peer *s, double now) {
    if (!(s->own_stamp == now && s->own_utility == s->utility)) {
        s->own_utility = s->utility;
        s->own_stamp = now;
    }
    return (Desc){s->own_utility, me_of(plane, s), s->own_stamp};
}

/* The own descriptor followed by the gradient view: what a gradient exchange carries. */
static Py_ssize_t with_own(Plane *plane, Peer *s, double now, Desc *out) {
    out[0] = own_of(plane, s, now);
    memcpy(out + 1, s->gview, sizeof(Desc) * (size_t)s->glen);
    return s->glen + 1;
}

/* -- the rounds and handlers on the arrays -------------------------------------------------------
 * Each runs after `steps_run` said yes, on an adopted peer `self` whose state is `s`, appending what
 * it sends to `out` (the peer's outbox, or a driver's batch when the outbox is empty). */

static int ask_to_rejoin(PyObject *self, PyObject *out, Plane *plane) { /* elif self.rejoin_via >= 0: ... */
    PyObject *via = SLOT(self, p_rejoin_via), *zero = PyLong_FromLong(0);
    if (via == NULL || zero == NULL) {
        Py_XDECREF(zero);
        if (via == NULL) PyErr_SetString(PyExc_AttributeError, "an overlay peer's rejoin_via is unset");
        return -1;
    }
    Py_INCREF(via);
    int rejoin = PyObject_RichCompareBool(via, zero, Py_GE);
    Py_DECREF(zero);
    PyObject *request = NULL, *sent = NULL, *size = NULL;
    int status = rejoin;
    if (rejoin > 0) {
        size = PyLong_FromSsize_t(plane->c);
        PyObject *id = SLOT(self, p_id);
        request = size == NULL ? NULL : PyObject_CallFunctionObjArgs(join_request, id, size, NULL);
        sent = request == NULL ? NULL : PyTuple_Pack(2, via, request);
        status = sent == NULL ? -1 : PyList_Append(out, sent);
    }
    Py_XDECREF(size);
    Py_XDECREF(request);
    Py_XDECREF(sent);
    Py_DECREF(via);
    return status < 0 ? -1 : 0;
}

static int cyclon_round_here(Plane *plane, Peer *s, PyObject *self, double now, PyObject *out) {
    if (s->clen == 0) { /* the own descriptor is made first, as the reference's call makes it */
        own_of(plane, s, now);
        return ask_to_rejoin(self, out, plane);
    }
    Desc sent[SMALL + 1], *shuffle = plane->l <= SMALL ? sent : PyMem_Malloc(sizeof(Desc) * (size_t)(plane->l + 1));
    if (shuffle == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    shuffle[0] = own_of(plane, s, now);
    long long oldest = pop_oldest(s);
    Py_ssize_t chosen = sample(plane, s, plane->l - 1, shuffle + 1);
    int status = -1;
    if (chosen >= 0) {
        s->partner = oldest;
        memcpy(s->sent, shuffle + 1, sizeof(Desc) * (size_t)chosen);
        s->slen = chosen;
        status = post(plane, out, oldest, ROW_CS, 0, shuffle, chosen + 1);
        s->exchanges[0] += status == 0;
    }
    if (shuffle != sent) PyMem_Free(shuffle);
    return status;
}

static int gradient_round_here(Plane *plane, Peer *s, PyObject *self, double now, PyObject *out) {
    s->clock = now;
    if (merge_if_needed(plane, s) < 0) return -1;
    if (s->glen == 0) return 0;
    double r;
    if (stock_uniform(s->rng, &r) < 0) return -1;
    long long partner = s->gview[(Py_ssize_t)(r * (double)s->glen)].node;
    Desc small[SMALL + 1], *sent = plane->p < SMALL ? small : PyMem_Malloc(sizeof(Desc) * (size_t)(plane->p + 1));
    if (sent == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t n = with_own(plane, s, now, sent);
    int status = post(plane, out, partner, ROW_GS, 0, sent, n);
    s->exchanges[1] += status == 0;
    if (sent != small) PyMem_Free(sent);
    return status;
}

static int feeds(PyObject *self) { /* self.feeds_gradient, as `if` reads it */
    PyObject *value = SLOT(self, p_feeds_gradient);
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "an overlay peer's feeds_gradient is unset");
        return -1;
    }
    Py_INCREF(value);
    int on = truth(value);
    Py_DECREF(value);
    return on;
}

/* The message of `kind` with descriptors d[0..n) (sender: CyclonReply's), handled at s. */
static int handle_here(Plane *plane, Peer *s, PyObject *self, int kind, long long sender, const Desc *d, Py_ssize_t n,
                       double now, PyObject *out) {
    if (kind == ROW_CS) { /* reply with l random entries, merge the request, offer it */
        Desc small[SMALL], *chosen = plane->l <= SMALL ? small : PyMem_Malloc(sizeof(Desc) * (size_t)plane->l);
        if (chosen == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        Py_ssize_t k = sample(plane, s, plane->l, chosen);
        int status = k < 0 || merge(plane, s, d, n, chosen, k) < 0
                     || post(plane, out, d[0].node, ROW_CR, me_of(plane, s), chosen, k) < 0 ? -1 : 0;
        if (chosen != small) PyMem_Free(chosen);
        if (status < 0) return -1;
    } else if (kind == ROW_CR) { /* merge the reply, replacing what was sent if it is the partner's */
        Py_ssize_t r = 0; /* the entries sent stay in place: the merge only reads them */
        if (sender == s->partner) {
            r = s->slen;
            s->slen = 0;
            s->partner = -1;
        }
        if (merge(plane, s, d, n, s->sent, r) < 0) return -1;
    } else if (kind == ROW_GS) { /* queue the request, reply with the view as last merged */
        s->clock = now;
        if (offer(plane, s, d, n) < 0) return -1;
        Desc small[SMALL + 1], *reply = plane->p < SMALL ? small : PyMem_Malloc(sizeof(Desc) * (size_t)(plane->p + 1));
        if (reply == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        Py_ssize_t k = with_own(plane, s, now, reply);
        int status = post(plane, out, d[0].node, ROW_GR, 0, reply, k);
        if (reply != small) PyMem_Free(reply);
        return status;
    } else {
        return offer(plane, s, d, n);
    }
    int on = feeds(self); /* a Cyclon message's entries go to the gradient */
    return on <= 0 ? on : offer(plane, s, d, n);
}

/* -- eviction: the hand-off to the reference ---------------------------------------------------- */

static int evict(Plane *plane, PyObject *self) {
    PyObject *done = PyObject_CallOneArg(plane->evict, self);
    Py_XDECREF(done);
    if (done != NULL && adopted(self, &plane) != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the overlay plane's evict() left the peer adopted");
        return -1;
    }
    return done == NULL ? -1 : 0;
}

/* Evict `self`, then run the reference `which` with the call's arguments. */
static PyObject *hand_off(Plane *plane, int which, PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_INCREF(plane);
    int status = evict(plane, self);
    Py_DECREF(plane);
    return status < 0 ? NULL : call_reference(which, self, args, nargs);
}

/* -- the peer's methods -------------------------------------------------------------------------- */

#define CHECK_ARGS(count, usage)                                                                   \
    if (nargs != (count)) {                                                                        \
        PyErr_Format(PyExc_TypeError, usage " takes %d arguments, %zd given", (count), nargs);     \
        return NULL;                                                                               \
    }

static PyObject *outbox_of(PyObject *self) { /* self.outbox if it is an exact list (borrowed), else NULL */
    PyObject *outbox = SLOT(self, p_outbox);
    return outbox != NULL && PyList_CheckExact(outbox) ? outbox : NULL;
}

static PyObject *round_method(int which, PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CHECK_ARGS(1, "a round(now)");
    Plane *plane;
    Peer *s = adopted(self, &plane);
    if (s == NULL) return call_reference(which, self, args, nargs);
    if (which == GRADIENT_ROUND) { /* if not self.gossip_gradient: return */
        PyObject *gossip = SLOT(self, p_gossip_gradient);
        if (gossip == NULL) return hand_off(plane, which, self, args, nargs); /* the reference's AttributeError */
        Py_INCREF(gossip);
        int on = truth(gossip);
        Py_DECREF(gossip);
        if (on <= 0) return on < 0 ? NULL : Py_NewRef(Py_None);
    }
    PyObject *outbox = outbox_of(self);
    int runs = outbox == NULL ? 0 : steps_run(plane, s, args[0], 1);
    if (runs < 0) return NULL;
    if (runs == 0) return hand_off(plane, which, self, args, nargs);
    Py_INCREF(self);
    Py_INCREF(outbox);
    double now = PyFloat_AS_DOUBLE(args[0]);
    int status = which == CYCLON_ROUND ? cyclon_round_here(plane, s, self, now, outbox)
                                       : gradient_round_here(plane, s, self, now, outbox);
    Py_DECREF(outbox);
    Py_DECREF(self);
    if (status < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *cyclon_round(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return round_method(CYCLON_ROUND, self, args, nargs);
}

static PyObject *gradient_round(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return round_method(GRADIENT_ROUND, self, args, nargs);
}

/* A handler given a message object: on the arrays where the peer is adopted and the message plain. */
static PyObject *message_method(int which, int kind, PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CHECK_ARGS(2, "a handler(msg, now)");
    Plane *plane;
    Peer *s = adopted(self, &plane);
    if (s == NULL) return call_reference(which, self, args, nargs);
    PyObject *msg = args[0], *outbox = outbox_of(self);
    Desc small[SMALL], *d = NULL;
    Py_ssize_t n = 0;
    long long sender = 0;
    int runs = outbox != NULL && Py_IS_TYPE(msg, message_types[kind]) && SLOT(msg, m_field[kind]) != NULL
               && (kind != ROW_CR || (SLOT(msg, m_sender) != NULL && kernel_plain_int(SLOT(msg, m_sender), &sender)))
                   ? read_descriptors(SLOT(msg, m_field[kind]), small, &d, &n) : 0;
    if (runs > 0 && (n == 0 && kind != ROW_CR && kind != ROW_GR)) runs = 0; /* no sender: the reference's error */
    if (runs > 0) runs = steps_run(plane, s, args[1], kind == ROW_CS);
    PyObject *result = NULL;
    if (runs < 0) {
        result = NULL;
    } else if (runs == 0) {
        result = hand_off(plane, which, self, args, nargs);
    } else {
        Py_INCREF(self);
        Py_INCREF(outbox);
        result = handle_here(plane, s, self, kind, sender, d, n, PyFloat_AS_DOUBLE(args[1]), outbox) < 0
                     ? NULL : Py_NewRef(Py_None);
        Py_DECREF(outbox);
        Py_DECREF(self);
    }
    if (d != NULL && d != small) PyMem_Free(d);
    return result;
}

static PyObject *on_cyclon_shuffle(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return message_method(ON_CYCLON_SHUFFLE, ROW_CS, self, args, nargs);
}

static PyObject *on_cyclon_reply(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return message_method(ON_CYCLON_REPLY, ROW_CR, self, args, nargs);
}

static PyObject *on_gradient_shuffle(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return message_method(ON_GRADIENT_SHUFFLE, ROW_GS, self, args, nargs);
}

static PyObject *on_gradient_reply(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return message_method(ON_GRADIENT_REPLY, ROW_GR, self, args, nargs);
}

/* -- rows ------------------------------------------------------------------------------------ */

static int kind_of(Plane *plane, PyObject *mark) { /* the kind `mark` stands for, or -1 */
    for (int i = 0; i < ROW_KINDS; i++)
        if (plane->marks[i] == mark) return i;
    return -1;
}

/* The front row of d's queue, which must be of mark's kind, copied into `into` (width descriptors) and
 * taken off: 0, or -1 with RuntimeError. */
static int take_row(Plane *plane, Py_ssize_t d, int kind, RowHead *head, Desc *into) {
    Queue *q = &plane->queues[d];
    if (kind < 0 || q->count == 0 || q->heads[q->head].kind != kind) {
        PyErr_Format(PyExc_RuntimeError, "the overlay plane is out of step with actor %zd's messages", d);
        return -1;
    }
    *head = q->heads[q->head];
    memcpy(into, q->payload + q->head * plane->width, sizeof(Desc) * (size_t)head->n);
    q->head = (q->head + 1) & (q->capacity - 1);
    q->count--;
    plane->in_flight--;
    return 0;
}

/* A row's buffer: `small` or one allocated for the plane's width. */
static Desc *row_buffer(Plane *plane, Desc *small) {
    Desc *buffer = plane->width <= SMALL ? small : PyMem_Malloc(sizeof(Desc) * (size_t)plane->width);
    if (buffer == NULL) PyErr_NoMemory();
    return buffer;
}

static const int row_method[ROW_KINDS] = {ON_CYCLON_SHUFFLE, ON_CYCLON_REPLY, ON_GRADIENT_SHUFFLE, ON_GRADIENT_REPLY};

/* Handle the row just taken at actor `self` (of the plane's actors): on the arrays where it is adopted,
 * else as the message object through the actor's own handler of its class (DISPATCH). */
static PyObject *run_row(Plane *plane, PyObject *self, RowHead head, const Desc *d, PyObject *now, PyObject *out) {
    Plane *owner;
    Peer *s = adopted(self, &owner);
    if (s != NULL && owner == plane) {
        int runs = steps_run(plane, s, now, head.kind == ROW_CS);
        if (runs < 0) return NULL;
        if (runs > 0 && (out != NULL || (out = outbox_of(self)) != NULL)) {
            Py_INCREF(out); /* held: a handler's Python (a hostile flag's truth) could replace the outbox */
            int status = handle_here(plane, s, self, head.kind, head.sender, d, head.n, PyFloat_AS_DOUBLE(now), out);
            Py_DECREF(out);
            return status < 0 ? NULL : Py_NewRef(Py_None);
        }
        PyObject *msg = message_of(head.kind, head.sender, d, head.n);
        if (msg == NULL) return NULL;
        PyObject *call[2] = {msg, now};
        PyObject *result = hand_off(plane, row_method[head.kind], self, call, 2);
        Py_DECREF(msg);
        return result;
    }
    PyObject *msg = message_of(head.kind, head.sender, d, head.n), *dispatch = NULL, *handler = NULL, *result = NULL;
    if (msg != NULL && (dispatch = PyObject_GetAttr(self, str_dispatch)) != NULL
        && (handler = PyObject_GetItem(dispatch, (PyObject *)Py_TYPE(msg))) != NULL) {
        PyObject *call[3] = {self, msg, now};
        result = PyObject_Vectorcall(handler, call, 3, NULL);
    }
    Py_XDECREF(handler);
    Py_XDECREF(dispatch);
    Py_XDECREF(msg);
    return result;
}

/* _on_row(mark, now): the handler of the plane's marks. It takes the front row of this actor's queue
 * (a mark and its row out of step: RuntimeError) and handles the message it stands for. */
static PyObject *on_row(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    CHECK_ARGS(2, "_on_row(mark, now)");
    PyObject *held = PyObject_TypeCheck(self, peer_type) ? SLOT(self, p_lane) : NULL;
    PyObject *id = held == NULL ? NULL : SLOT(self, p_id);
    Plane *plane = held != NULL && Py_IS_TYPE(held, &PlaneType) ? (Plane *)held : NULL;
    Py_ssize_t d = plane == NULL || id == NULL ? -1 : actor_index(plane, id);
    if (d < 0) {
        PyErr_SetString(PyExc_RuntimeError, "_on_row: a mark reached a peer outside the overlay plane");
        return NULL;
    }
    Desc small[SMALL], *row = row_buffer(plane, small);
    if (row == NULL) return NULL;
    Py_INCREF(plane);
    RowHead head;
    PyObject *result = NULL;
    if (take_row(plane, d, kind_of(plane, args[0]), &head, row) == 0) result = run_row(plane, self, head, row, args[1], NULL);
    Py_DECREF(plane);
    if (row != small) PyMem_Free(row);
    return result;
}

/* -- the runtime's side: the lane's interface ------------------------------------------------- */

static PyObject *plane_message(Plane *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "message(dst, mark)");
        return NULL;
    }
    Py_ssize_t d = actor_index(self, args[0]);
    if (d < 0) {
        PyErr_Format(PyExc_ValueError, "message: %R is not an actor of the plane", args[0]);
        return NULL;
    }
    Desc small[SMALL], *row = row_buffer(self, small);
    if (row == NULL) return NULL;
    RowHead head;
    PyObject *msg = take_row(self, d, kind_of(self, args[1]), &head, row) < 0 ? NULL
                                                                            : message_of(head.kind, head.sender, row, head.n);
    if (row != small) PyMem_Free(row);
    return msg;
}

static PyObject *plane_render(Plane *self, PyObject *sends) {
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
            Queue *q = d < 0 ? NULL : &self->queues[d];
            Py_ssize_t k = d < 0 ? 0 : seen[d]++;
            Py_ssize_t at = q == NULL || k >= q->count ? -1 : (q->head + k) & (q->capacity - 1);
            if (at < 0 || q->heads[at].kind != kind) {
                PyErr_Format(PyExc_RuntimeError, "the overlay plane is out of step with the sends (item %zd)", i);
            } else {
                PyObject *msg = message_of(kind, q->heads[at].sender, q->payload + at * self->width, q->heads[at].n);
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

static int move_to_batch(PyObject *actor, PyObject *batch) { /* batch += actor.outbox; actor.outbox.clear() */
    PyObject *outbox = PyObject_TypeCheck(actor, peer_type) ? SLOT(actor, p_outbox) : NULL;
    if (outbox == NULL) {
        outbox = PyObject_GetAttrString(actor, "outbox");
        if (outbox == NULL) return -1;
    } else {
        Py_INCREF(outbox);
    }
    int status = outbox_to_batch(outbox, batch);
    Py_DECREF(outbox);
    return status;
}

/* deliver(deliveries, mailboxes, actors, inline_drain, now, batch) -> bool: an instant's delivery phase
 * that carries marks of this plane, as the runtime's `deliver` would do it (the lane's contract,
 * `nodes.lane.Lane.deliver`). False, having run no Python code and changed nothing, unless `batch` is a
 * list and every delivery a (d, message) pair, d an actor of the plane with an empty mailbox, and one
 * message at least a mark. Otherwise True, once it has woken each actor that received something, in
 * the order of its first message, to handle its messages in arrival order, and moved its outbox to
 * `batch`. An actor of a plain class (slots, no instance dict, generic getattr) with the inline drain
 * and a DISPATCH dict it wakes itself: each mark its DISPATCH maps to `_on_row` handled here (an
 * adopted peer's whose outbox is empty straight into the batch: nothing else of its sends is between),
 * any other handler called as deliver calls it. Any other actor gets the runtime's deliver, for its
 * messages alone, at its turn. */
static int wakes_here(PyObject *actors, PyObject *inline_drain, Py_ssize_t d, PyObject **dispatch) {
    if (d >= PyList_GET_SIZE(actors) || d >= PyList_GET_SIZE(inline_drain) || PyList_GET_ITEM(inline_drain, d) != Py_True)
        return 0;
    PyTypeObject *type = Py_TYPE(PyList_GET_ITEM(actors, d));
    if (type->tp_getattro != PyObject_GenericGetAttr || type->tp_dictoffset != 0) return 0;
    *dispatch = _PyType_Lookup(type, str_dispatch);
    return *dispatch != NULL && PyDict_CheckExact(*dispatch);
}

static PyObject *delivery_at(PyObject *deliveries, Py_ssize_t i) { /* deliveries[i], a pair (borrowed) */
    PyObject *item = i < PyList_GET_SIZE(deliveries) ? PyList_GET_ITEM(deliveries, i) : NULL;
    if (item == NULL || !PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != 2) {
        PyErr_SetString(PyExc_RuntimeError, "an instant's deliveries changed while the overlay plane delivered them");
        return NULL;
    }
    return item;
}

static PyObject *chain_of(PyObject *deliveries, const Py_ssize_t *next, Py_ssize_t first, int with_pairs) {
    PyObject *list = PyList_New(0);
    for (Py_ssize_t i = first; list != NULL && i >= 0; i = next[i]) {
        PyObject *item = delivery_at(deliveries, i);
        if (item == NULL || PyList_Append(list, with_pairs ? item : PyTuple_GET_ITEM(item, 1)) < 0) Py_CLEAR(list);
    }
    return list;
}

/* An actor's wake: each of its messages through its handler, in arrival order. The rows of a peer this plane
 * holds go straight to its arrays, and while nothing else has run in its wake (its outbox empty) its sends
 * straight into the batch. */
static int wake(Plane *self, PyObject *actor, PyObject *dispatch, PyObject *deliveries, Py_ssize_t d, PyObject *now,
                PyObject *batch) {
    Peer *s = self->peers[d].peer == actor ? &self->peers[d] : NULL; /* adopted: no need to read the actor */
    PyObject *start = s != NULL ? outbox_of(actor) : NULL;
    PyObject *direct = start != NULL && PyList_GET_SIZE(start) == 0 ? batch : NULL; /* cleared once anything else runs */
    Desc small[SMALL], *row = row_buffer(self, small);
    if (row == NULL) return -1;
    int status = 0;
    for (Py_ssize_t i = self->first[d]; status == 0 && i >= 0; i = self->next[i]) {
        self->at = i;
        PyObject *item = delivery_at(deliveries, i);
        if (item == NULL) {
            status = -1;
            break;
        }
        PyObject *mark = Py_NewRef(PyTuple_GET_ITEM(item, 1)); /* a mark, or another message */
        PyObject *handler = PyDict_GetItemWithError(dispatch, (PyObject *)Py_TYPE(mark)); /* borrowed */
        PyObject *done = NULL;
        int kind = kind_of(self, mark);
        if (handler == method_objects[METHODS] && kind >= 0) {
            RowHead head;
            if (take_row(self, d, kind, &head, row) == 0) {
                int runs = s != NULL && s->peer == actor ? steps_run(self, s, now, kind == ROW_CS) : 0;
                PyObject *out = runs <= 0 ? NULL : direct != NULL ? direct : outbox_of(actor);
                if (runs < 0) {
                    done = NULL;
                } else if (out != NULL) {
                    Py_INCREF(out);
                    int status = handle_here(self, s, actor, kind, head.sender, row, head.n, PyFloat_AS_DOUBLE(now), out);
                    Py_DECREF(out);
                    done = status < 0 ? NULL : Py_NewRef(Py_None);
                } else { /* evicted, or it must hand off: as any actor's row */
                    direct = NULL;
                    done = run_row(self, actor, head, row, now, NULL);
                }
            }
        } else if (handler != NULL) {
            direct = NULL; /* a send of another handler may come between */
            Py_INCREF(handler);
            PyObject *call[3] = {actor, mark, now};
            done = PyObject_Vectorcall(handler, call, 3, NULL);
            Py_DECREF(handler);
        } else { /* as deliver: check_handled names the message, else KeyError */
            PyObject *messages = PyErr_Occurred() ? NULL : chain_of(deliveries, self->next, self->first[d], 0);
            done = messages == NULL ? NULL : PyObject_CallMethodOneArg(actor, str_check_handled, messages);
            Py_XDECREF(messages);
            if (done != NULL) {
                Py_CLEAR(done);
                PyErr_SetObject(PyExc_KeyError, (PyObject *)Py_TYPE(mark));
            }
        }
        Py_DECREF(mark);
        if (done == NULL) status = -1;
        Py_XDECREF(done);
    }
    if (row != small) PyMem_Free(row);
    return status;
}

/* The runtime's deliver (the reference) for actor d alone, at d's turn. */
static int deliver_one(Plane *self, PyObject *const *args, Py_ssize_t d) {
    PyObject *deliver = imported(&runtime_deliver, "drfemu.nodes.runtime", "deliver");
    PyObject *chain = deliver == NULL ? NULL : chain_of(args[0], self->next, self->first[d], 1);
    if (chain == NULL) return -1;
    PyObject *call[7] = {chain, args[1], args[2], args[3], args[4], args[5], Py_None};
    PyObject *done = PyObject_Vectorcall(deliver, call, 7, NULL);
    Py_DECREF(chain);
    Py_XDECREF(done);
    return done == NULL ? -1 : 0;
}

static PyObject *plane_deliver(Plane *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "deliver(deliveries, mailboxes, actors, inline_drain, now, batch)");
        return NULL;
    }
    PyObject *deliveries = args[0], *mailboxes = args[1], *actors = args[2], *inline_drain = args[3];
    PyObject *now = args[4], *batch = args[5];
    if (configured_methods == NULL || self->delivering || !PyList_CheckExact(deliveries)
        || !PyList_CheckExact(mailboxes) || !PyList_CheckExact(actors) || !PyList_CheckExact(inline_drain)
        || !PyList_CheckExact(batch))
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
        if (!wakes_here(actors, inline_drain, d, &dispatch)) {
            self->at = -2; /* its messages go to its mailbox: settle leaves them to materialize */
            if (deliver_one(self, args, d) < 0) {
                result = NULL;
                break;
            }
            continue;
        }
        PyObject *actor = Py_NewRef(PyList_GET_ITEM(actors, d));
        Py_INCREF(dispatch);
        int status = wake(self, actor, dispatch, deliveries, d, now, batch);
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

/* settle(): while deliver runs, the marks of its instant not yet handled (after the one being handled:
 * the rest of its actor's, then every later actor's) become, in their places in the deliveries, the
 * messages their rows stand for, so that the rows to come are taken in order. */
static PyObject *plane_settle(Plane *self, PyObject *Py_UNUSED(unused)) {
    PyObject *deliveries = self->delivering;
    if (deliveries == NULL) Py_RETURN_NONE;
    Desc small[SMALL], *row = row_buffer(self, small);
    if (row == NULL) return NULL;
    PyObject *result = Py_None;
    for (Py_ssize_t k = self->at_actor; result != NULL && k < self->woken; k++) {
        Py_ssize_t d = self->ready[k];
        if (k == self->at_actor && self->at == -2) continue; /* with the runtime's deliver */
        Py_ssize_t i = k > self->at_actor || self->at < 0 ? self->first[d] : self->next[self->at];
        for (; result != NULL && i >= 0; i = self->next[i]) {
            PyObject *item = delivery_at(deliveries, i);
            int kind = item == NULL ? -1 : kind_of(self, PyTuple_GET_ITEM(item, 1));
            if (item == NULL) {
                result = NULL;
                break;
            }
            if (kind < 0) continue; /* settled before */
            RowHead head;
            PyObject *msg = take_row(self, d, kind, &head, row) < 0 ? NULL : message_of(head.kind, head.sender, row, head.n);
            PyObject *pair = msg == NULL ? NULL : PyTuple_Pack(2, PyTuple_GET_ITEM(item, 0), msg);
            Py_XDECREF(msg);
            if (pair == NULL) result = NULL;
            else PyList_SetItem(deliveries, i, pair); /* steals pair; the mark's envelope is the plane's */
        }
    }
    if (row != small) PyMem_Free(row);
    return Py_XNewRef(result);
}

/* fire(actors, action, now, batch, flush, skip_idle): a periodic driver's round, the runtime's
 * `fire_each` (its reference): where `action` is the plane's Cyclon or gradient round and `batch` a
 * list, each adopted peer with an empty outbox runs the round here, its send straight into the batch;
 * every other actor is called as fire_each calls it. Anything else is fire_each's. */
static PyObject *plane_fire(Plane *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "fire(actors, action, now, batch, flush, skip_idle)");
        return NULL;
    }
    PyObject *actors = args[0], *action = args[1], *now = args[2], *batch = args[3];
    int which = action == method_objects[CYCLON_ROUND] ? CYCLON_ROUND
                : action == method_objects[GRADIENT_ROUND] ? GRADIENT_ROUND : -1;
    if (which < 0 || !PyList_CheckExact(actors) || !PyList_CheckExact(batch) || !PyFloat_CheckExact(now)
        || args[5] != Py_False) {
        PyObject *fire_each = imported(&runtime_fire_each, "drfemu.nodes.runtime", "fire_each");
        return fire_each == NULL ? NULL : PyObject_Vectorcall(fire_each, args, 6, NULL);
    }
    double at = PyFloat_AS_DOUBLE(now);
    Py_INCREF(actors);
    PyObject *result = Py_None;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(actors); i++) {
        PyObject *actor = Py_NewRef(PyList_GET_ITEM(actors, i));
        Plane *plane;
        Peer *s = adopted(actor, &plane);
        PyObject *outbox = s != NULL && plane == self ? outbox_of(actor) : NULL; /* another plane's: its method */
        int status = 0, here = 0;
        if (outbox != NULL && PyList_GET_SIZE(outbox) == 0) {
            if (which == GRADIENT_ROUND) { /* if not self.gossip_gradient: return */
                PyObject *gossip = SLOT(actor, p_gossip_gradient);
                here = gossip == Py_True ? 1 : gossip == Py_False ? 2 : 0;
            } else {
                here = 1;
            }
            if (here == 1 && (status = steps_run(plane, s, now, 1)) <= 0) here = 0;
        }
        if (status >= 0 && here == 1)
            status = which == CYCLON_ROUND ? cyclon_round_here(plane, s, actor, at, batch)
                                           : gradient_round_here(plane, s, actor, at, batch);
        else if (status >= 0 && here == 0) {
            PyObject *call[2] = {actor, now}, *done = PyObject_Vectorcall(action, call, 2, NULL);
            status = done == NULL ? -1 : move_to_batch(actor, batch);
            Py_XDECREF(done);
        }
        Py_DECREF(actor);
        if (status < 0) {
            result = NULL;
            break;
        }
    }
    Py_DECREF(actors);
    return Py_XNewRef(result);
}

/* -- adoption and the views' reads ---------------------------------------------------------- */

static void release_peer(Peer *s) {
    Py_CLEAR(s->peer);
    Py_CLEAR(s->rng);
    Py_CLEAR(s->view_list);
    PyMem_Free(s->cview);
    PyMem_Free(s->pending);
    s->cview = s->sent = s->gview = s->pending = NULL;
    s->clen = s->slen = s->glen = s->plen = s->pcap = 0;
}

static Py_ssize_t index_arg(Plane *self, PyObject *arg) { /* an adopted peer's index, or -1 with ValueError */
    Py_ssize_t i = actor_index(self, arg);
    if (i < 0 || self->peers[i].peer == NULL) {
        PyErr_Format(PyExc_ValueError, "%R is not a peer the overlay plane holds", arg);
        return -1;
    }
    return i;
}

/* Descriptors of `items` into dst (at most `cap`), all plain, nodes distinct where `distinct`: 1; 0. */
static int load(PyObject *items, Desc *dst, Py_ssize_t cap, Py_ssize_t *n, int distinct) {
    if (!PyTuple_CheckExact(items) || PyTuple_GET_SIZE(items) > cap) return 0;
    *n = PyTuple_GET_SIZE(items);
    for (Py_ssize_t i = 0; i < *n; i++) {
        if (!read_plain(PyTuple_GET_ITEM(items, i), &dst[i])) return 0;
        for (Py_ssize_t j = 0; distinct && j < i; j++)
            if (dst[j].node == dst[i].node) return 0;
    }
    return 1;
}

/* adopt(peer, rng, entries, partner, sent, utility, clock, view, pending, stale, compact_next, own) -> bool:
 * hold the overlay state of `peer` (actor peer.id, its lane this plane): its Cyclon entries in view
 * order, partner and entries sent, its gradient's utility, clock, view, pending candidates, staleness,
 * next compaction and own descriptor last made, all as plain values in tuples. False, holding nothing, when any is not plain or
 * not within the plane's sizes, or the stream is not the stock generator. */
static PyObject *plane_adopt(Plane *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 12) {
        PyErr_SetString(PyExc_TypeError, "adopt(peer, rng, entries, partner, sent, utility, clock, view, pending, stale, "
                                         "compact_next, own)");
        return NULL;
    }
    PyObject *peer = args[0];
    Py_ssize_t i = PyObject_TypeCheck(peer, peer_type) && SLOT(peer, p_id) != NULL ? actor_index(self, SLOT(peer, p_id)) : -1;
    long long partner, compact_next;
    double utility, clock;
    Desc own;
    int stock = is_stock_draw(args[1]);
    if (stock < 0) return NULL;
    if (i < 0 || SLOT(peer, p_lane) != (PyObject *)self || !stock || !kernel_plain_int(args[3], &partner)
        || !kernel_plain_float(args[5], &utility) || !kernel_plain_float(args[6], &clock)
        || !PyBool_Check(args[9]) || !kernel_plain_int(args[10], &compact_next) || compact_next < 0
        || !PyTuple_CheckExact(args[8]) || !read_plain(args[11], &own) || own.node != i)
        Py_RETURN_FALSE;
    Peer fresh = {0};
    fresh.cview = PyMem_Malloc(sizeof(Desc) * (size_t)(self->c + self->l + self->p));
    if (fresh.cview == NULL) return PyErr_NoMemory();
    fresh.sent = fresh.cview + self->c;
    fresh.gview = fresh.sent + self->l;
    Py_ssize_t plen = PyTuple_GET_SIZE(args[8]);
    if (grow_pending(&fresh, plen) < 0) {
        release_peer(&fresh);
        return NULL;
    }
    if (!load(args[2], fresh.cview, self->c, &fresh.clen, 1) || !load(args[4], fresh.sent, self->l, &fresh.slen, 0)
        || !load(args[7], fresh.gview, self->p, &fresh.glen, 0) || !load(args[8], fresh.pending, plen, &fresh.plen, 0)) {
        release_peer(&fresh);
        Py_RETURN_FALSE;
    }
    for (Py_ssize_t k = 0; k < fresh.clen; k++)
        if (fresh.cview[k].node == i) { /* a view never names its own node */
            release_peer(&fresh);
            Py_RETURN_FALSE;
        }
    fresh.partner = partner;
    fresh.utility = utility;
    fresh.clock = clock;
    fresh.own_utility = own.utility;
    fresh.own_stamp = own.stamp;
    fresh.stale = args[9] == Py_True;
    fresh.compact_next = (Py_ssize_t)compact_next;
    fresh.peer = Py_NewRef(peer);
    fresh.rng = Py_NewRef(args[1]);
    Peer *s = &self->peers[i];
    if (s->peer == NULL) self->adopted++;
    release_peer(s);
    *s = fresh;
    Py_RETURN_TRUE;
}

/* The state of peer i as adopt takes it (less the peer and its stream; the own descriptor as its utility and
 * stamp, last): (entries, partner, sent, utility, clock, view, pending, stale, compact_next, own utility, own
 * stamp). `release` also lets it go. */
static PyObject *state_of(Peer *s) {
    PyObject *entries = box_all(s->cview, s->clen, 0), *sent = box_all(s->sent, s->slen, 0);
    PyObject *view = box_all(s->gview, s->glen, 0), *pending = box_all(s->pending, s->plen, 0);
    PyObject *state = entries == NULL || sent == NULL || view == NULL || pending == NULL
                          ? NULL : Py_BuildValue("(OLOddOOOndd)", entries, s->partner, sent, s->utility, s->clock, view,
                                                 pending, s->stale ? Py_True : Py_False, s->compact_next,
                                                 s->own_utility, s->own_stamp);
    Py_XDECREF(entries);
    Py_XDECREF(sent);
    Py_XDECREF(view);
    Py_XDECREF(pending);
    return state;
}

static PyObject *plane_state(Plane *self, PyObject *arg) {
    Py_ssize_t i = index_arg(self, arg);
    return i < 0 ? NULL : state_of(&self->peers[i]);
}

static PyObject *plane_release(Plane *self, PyObject *arg) {
    Py_ssize_t i = index_arg(self, arg);
    PyObject *state = i < 0 ? NULL : state_of(&self->peers[i]);
    if (state != NULL) {
        release_peer(&self->peers[i]);
        self->adopted--;
    }
    return state;
}

/* exchanges(peer) -> (Cyclon shuffles, gradient exchanges) the peer started while the plane held it; (0, 0)
 * for a peer it does not hold. */
static PyObject *plane_exchanges(Plane *self, PyObject *peer) {
    Plane *owner;
    Peer *s = adopted(peer, &owner);
    if (s == NULL || owner != self) return Py_BuildValue("(ii)", 0, 0);
    return Py_BuildValue("(LL)", s->exchanges[0], s->exchanges[1]);
}

/* holder(i) -> the peer whose state the plane holds as actor i, or None. */
static PyObject *plane_holder(Plane *self, PyObject *arg) {
    Py_ssize_t i = actor_index(self, arg);
    if (i < 0) {
        PyErr_Format(PyExc_ValueError, "%R is not an actor of the plane", arg);
        return NULL;
    }
    return Py_NewRef(self->peers[i].peer != NULL ? self->peers[i].peer : Py_None);
}

static PyObject *plane_holds(Plane *self, PyObject *peer) {
    Plane *owner;
    return PyBool_FromLong(adopted(peer, &owner) != NULL && owner == self);
}

/* entries(i): the Cyclon view as a new View (overlay._cyclon, or a dict without it), node -> descriptor. */
static PyObject *plane_entries(Plane *self, PyObject *arg) {
    Py_ssize_t i = index_arg(self, arg);
    if (i < 0) return NULL;
    Peer *s = &self->peers[i];
    if (view_type == Py_None) {
        PyObject *entries = PyDict_New();
        for (Py_ssize_t k = 0; entries != NULL && k < s->clen; k++) {
            PyObject *node = PyLong_FromLongLong(s->cview[k].node), *d = kernel_box_descriptor(&s->cview[k]);
            if (node == NULL || d == NULL || PyDict_SetItem(entries, node, d) < 0) Py_CLEAR(entries);
            Py_XDECREF(node);
            Py_XDECREF(d);
        }
        return entries;
    }
    PyObject *size = PyLong_FromSsize_t(self->c), *view = size == NULL ? NULL : PyObject_CallOneArg(view_type, size);
    Py_XDECREF(size);
    if (view == NULL) return NULL;
    if (!PyObject_TypeCheck(view, (PyTypeObject *)view_type)) {
        Py_DECREF(view);
        PyErr_SetString(PyExc_TypeError, "the configured View type made something else");
        return NULL;
    }
    for (Py_ssize_t k = 0; k < s->clen; k++)
        if (view_set_plain((ViewObject *)view, &s->cview[k]) < 0) {
            Py_DECREF(view);
            return NULL;
        }
    return view;
}

static PyObject *plane_nodes(Plane *self, PyObject *arg) { /* the Cyclon view's nodes, in order */
    Py_ssize_t i = index_arg(self, arg);
    if (i < 0) return NULL;
    Peer *s = &self->peers[i];
    PyObject *nodes = PyList_New(s->clen);
    for (Py_ssize_t k = 0; nodes != NULL && k < s->clen; k++) {
        PyObject *node = PyLong_FromLongLong(s->cview[k].node);
        if (node == NULL) Py_CLEAR(nodes);
        else PyList_SET_ITEM(nodes, k, node);
    }
    return nodes;
}

static PyObject *plane_samples(Plane *self, PyObject *arg) { /* the Cyclon view's descriptors, in order */
    Py_ssize_t i = index_arg(self, arg);
    return i < 0 ? NULL : box_all(self->peers[i].cview, self->peers[i].clen, 1);
}

/* view(i): the gradient view after merging what is pending (Gradient.view): a list, kept until it changes. */
static PyObject *plane_view(Plane *self, PyObject *arg) {
    Py_ssize_t i = index_arg(self, arg);
    if (i < 0) return NULL;
    Peer *s = &self->peers[i];
    if (merge_if_needed(self, s) < 0) return NULL;
    if (s->view_list == NULL && (s->view_list = box_all(s->gview, s->glen, 1)) == NULL) return NULL;
    return Py_NewRef(s->view_list);
}

/* believes(i, strict): Gradient.believes_centre. */
static PyObject *plane_believes(Plane *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t i = nargs == 2 ? index_arg(self, args[0]) : -1;
    int strict = i < 0 ? -1 : PyObject_IsTrue(args[1]);
    if (strict < 0) {
        if (nargs != 2) PyErr_SetString(PyExc_TypeError, "believes(i, strict)");
        return NULL;
    }
    Peer *s = &self->peers[i];
    if (merge_if_needed(self, s) < 0) return NULL;
    if (s->glen == 0) Py_RETURN_TRUE;
    if (strict) { /* max(view)[0] <= self.utility */
        double top = s->gview[0].utility;
        for (Py_ssize_t k = 1; k < s->glen; k++)
            if (s->gview[k].utility > top) top = s->gview[k].utility;
        return PyBool_FromLong(top <= s->utility);
    }
    Desc mine = {s->utility, i, 0.0}; /* view[0] < (self.utility, self.me) */
    return PyBool_FromLong(kernel_before(&s->gview[0], &mine));
}

/* peek(i): the view the next read would give, changing nothing (Gradient.peek). */
static PyObject *plane_peek(Plane *self, PyObject *arg) {
    Py_ssize_t i = index_arg(self, arg);
    if (i < 0) return NULL;
    Peer *s = &self->peers[i];
    if (s->plen == 0 && !s->stale) return box_all(s->gview, s->glen, 1);
    Desc small[SMALL], *into = self->p <= SMALL ? small : PyMem_Malloc(sizeof(Desc) * (size_t)self->p);
    if (into == NULL) return PyErr_NoMemory();
    Py_ssize_t length = rank_into(self, s, into);
    PyObject *view = length < 0 ? NULL : box_all(into, length, 1);
    if (into != small) PyMem_Free(into);
    return view;
}

/* descriptor(i, now) -> Gradient.descriptor(now) for an exact float `now`; None, changing nothing, otherwise. */
static PyObject *plane_descriptor(Plane *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t i = nargs == 2 ? index_arg(self, args[0]) : -1;
    if (i < 0) {
        if (nargs != 2) PyErr_SetString(PyExc_TypeError, "descriptor(i, now)");
        return NULL;
    }
    if (!PyFloat_CheckExact(args[1])) Py_RETURN_NONE;
    Desc own = own_of(self, &self->peers[i], PyFloat_AS_DOUBLE(args[1]));
    return kernel_box_descriptor(&own);
}

static PyObject *plane_utility(Plane *self, PyObject *arg) {
    Py_ssize_t i = index_arg(self, arg);
    return i < 0 ? NULL : PyFloat_FromDouble(self->peers[i].utility);
}

/* set_utility(i, u, stale) -> bool: the utility becomes u (with `stale`, only if it differs, and the view
 * is stale then: Gradient.set_utility; without, as an assignment); False, changing nothing, when u is
 * not a plain float. */
static PyObject *plane_set_utility(Plane *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t i = nargs == 3 ? index_arg(self, args[0]) : -1;
    if (i < 0) {
        if (nargs != 3) PyErr_SetString(PyExc_TypeError, "set_utility(i, utility, stale)");
        return NULL;
    }
    double u;
    if (!kernel_plain_float(args[1], &u)) Py_RETURN_FALSE;
    Peer *s = &self->peers[i];
    if (args[2] != Py_True) {
        s->utility = u;
    } else if (u != s->utility) {
        s->utility = u;
        s->stale = 1;
    }
    Py_RETURN_TRUE;
}

/* offer(i, descriptors) -> bool: Gradient.offer, for an exact tuple or list of plain descriptors;
 * False, changing nothing, for anything else. */
static PyObject *plane_offer(Plane *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t i = nargs == 2 ? index_arg(self, args[0]) : -1;
    if (i < 0) {
        if (nargs != 2) PyErr_SetString(PyExc_TypeError, "offer(i, descriptors)");
        return NULL;
    }
    Desc small[SMALL], *d;
    Py_ssize_t n;
    int plain = read_descriptors(args[1], small, &d, &n);
    if (plain <= 0) return plain < 0 ? NULL : Py_NewRef(Py_False);
    int status = offer(self, &self->peers[i], d, n);
    if (d != small) PyMem_Free(d);
    if (status < 0) return NULL;
    Py_RETURN_TRUE;
}

/* forget(i, node, which) -> bool: drop `node` from the Cyclon view (which 1: Cyclon.forget, the
 * exchange under way with it too) or from the gradient's view and pending candidates (2:
 * Gradient.forget); False, changing nothing, when node is not an exact int. */
static PyObject *plane_forget(Plane *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t i = nargs == 3 ? index_arg(self, args[0]) : -1;
    long long node, which;
    if (i < 0 || !kernel_plain_int(args[2], &which)) {
        if (i >= 0 || nargs != 3) PyErr_SetString(PyExc_TypeError, "forget(i, node, which)");
        return NULL;
    }
    if (!kernel_plain_int(args[1], &node)) Py_RETURN_FALSE;
    Peer *s = &self->peers[i];
    Desc *arrays[2] = {which == 1 ? s->cview : s->gview, which == 1 ? NULL : s->pending};
    Py_ssize_t *lengths[2] = {which == 1 ? &s->clen : &s->glen, which == 1 ? NULL : &s->plen};
    for (int a = 0; a < 2; a++) {
        if (arrays[a] == NULL) continue;
        Py_ssize_t kept = 0;
        for (Py_ssize_t k = 0; k < *lengths[a]; k++)
            if (arrays[a][k].node != node) arrays[a][kept++] = arrays[a][k];
        *lengths[a] = kept;
    }
    if (which == 1 && s->partner == node) {
        s->partner = -1;
        s->slen = 0;
    }
    if (which != 1) forget_view_list(s);
    Py_RETURN_TRUE;
}

/* bootstrap(i, descriptors) -> bool: Cyclon.bootstrap for an exact tuple or list; False, changing
 * nothing, when a descriptor it would read is not plain (or for any other iterable). */
static PyObject *plane_bootstrap(Plane *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t i = nargs == 2 ? index_arg(self, args[0]) : -1;
    if (i < 0) {
        if (nargs != 2) PyErr_SetString(PyExc_TypeError, "bootstrap(i, descriptors)");
        return NULL;
    }
    PyObject *items = args[1];
    if (!PyTuple_CheckExact(items) && !PyList_CheckExact(items)) Py_RETURN_FALSE;
    Peer *s = &self->peers[i];
    Desc small[SMALL], *view = self->c <= SMALL ? small : PyMem_Malloc(sizeof(Desc) * (size_t)self->c);
    if (view == NULL) return PyErr_NoMemory();
    memcpy(view, s->cview, sizeof(Desc) * (size_t)s->clen);
    Py_ssize_t k = s->clen;
    int plain = 1;
    for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(items) && k < self->c; j++) {
        Desc d;
        if (!read_plain(PySequence_Fast_GET_ITEM(items, j), &d)) {
            plain = 0;
            break;
        }
        if (d.node != i && kernel_find(kernel_descriptor_nodes(view), k, d.node) == k) view[k++] = d;
    }
    if (plain) {
        memcpy(s->cview, view, sizeof(Desc) * (size_t)k);
        s->clen = k;
    }
    if (view != small) PyMem_Free(view);
    return PyBool_FromLong(plain);
}

/* reach(i, node, own) -> (node, CyclonShuffle) or None: Cyclon.reach for an exact int node and a plain
 * own descriptor, with the stock stream (None, changing nothing, otherwise). */
static PyObject *plane_reach(Plane *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t i = nargs == 3 ? index_arg(self, args[0]) : -1;
    if (i < 0) {
        if (nargs != 3) PyErr_SetString(PyExc_TypeError, "reach(i, node, own)");
        return NULL;
    }
    Peer *s = &self->peers[i];
    long long node;
    Desc own;
    int stock = is_stock_draw_seen(s->rng, &s->rng_seen);
    if (stock < 0) return NULL;
    if (!stock || !kernel_plain_int(args[1], &node) || !read_plain(args[2], &own)) Py_RETURN_NONE;
    Desc small[SMALL + 1], *shuffle = self->l <= SMALL ? small : PyMem_Malloc(sizeof(Desc) * (size_t)(self->l + 1));
    if (shuffle == NULL) return PyErr_NoMemory();
    shuffle[0] = own;
    Py_ssize_t chosen = sample(self, s, self->l - 1, shuffle + 1);
    PyObject *msg = NULL;
    if (chosen >= 0) {
        s->partner = node;
        memcpy(s->sent, shuffle + 1, sizeof(Desc) * (size_t)chosen);
        s->slen = chosen;
        msg = message_of(ROW_CS, 0, shuffle, chosen + 1);
    }
    if (shuffle != small) PyMem_Free(shuffle);
    PyObject *pair = msg == NULL ? NULL : PyTuple_Pack(2, args[1], msg);
    Py_XDECREF(msg);
    return pair;
}

static PyObject *plane_partner(Plane *self, PyObject *arg) {
    Py_ssize_t i = index_arg(self, arg);
    return i < 0 ? NULL : PyLong_FromLongLong(self->peers[i].partner);
}

/* -- the type ---------------------------------------------------------------------------------- */

static PyObject *plane_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    Py_ssize_t n, c, l, p;
    double max_age;
    PyObject *marks, *evict_fn;
    static char *names[] = {"n", "marks", "cyclon_view", "shuffle_length", "view_size", "max_age", "evict", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "nO!nnndO:Plane", names, &n, &PyTuple_Type, &marks, &c, &l, &p,
                                     &max_age, &evict_fn))
        return NULL;
    if (configured_methods == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Plane: nodes._plane is not configured (peer_methods first)");
        return NULL;
    }
    if (n < 0 || n > PY_SSIZE_T_MAX / (Py_ssize_t)(ROW_KINDS * sizeof(PyObject *)) || PyTuple_GET_SIZE(marks) != ROW_KINDS
        || c < 1 || c > 4096 || l < 1 || l > c || p < 1 || p > 4096 || !(max_age > 0) || !PyCallable_Check(evict_fn)) {
        PyErr_SetString(PyExc_ValueError, "Plane(n, marks, cyclon_view, shuffle_length, view_size, max_age, evict): "
                                          "n >= 0 actors, four marks, 1 <= shuffle_length <= cyclon_view <= 4096, "
                                          "1 <= view_size <= 4096, max_age > 0, evict callable");
        return NULL;
    }
    for (int i = 0; i < ROW_KINDS; i++)
        for (int j = 0; j < i; j++)
            if (Py_TYPE(PyTuple_GET_ITEM(marks, i)) == Py_TYPE(PyTuple_GET_ITEM(marks, j))) {
                PyErr_SetString(PyExc_ValueError, "Plane: each mark is of a class of its own");
                return NULL;
            }
    Plane *self = (Plane *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    size_t actors = n ? (size_t)n : 1;
    self->queues = PyMem_Calloc(actors, sizeof(Queue));
    self->peers = PyMem_Calloc(actors, sizeof(Peer));
    self->envelopes = PyMem_Calloc(actors * ROW_KINDS, sizeof(PyObject *));
    self->first = PyMem_Calloc(actors, sizeof(Py_ssize_t));
    self->last = PyMem_Calloc(actors, sizeof(Py_ssize_t));
    self->ready = PyMem_Calloc(actors, sizeof(Py_ssize_t));
    self->seen = PyMem_Calloc(actors, sizeof(unsigned long));
    if (self->queues == NULL || self->peers == NULL || self->envelopes == NULL || self->first == NULL
        || self->last == NULL || self->ready == NULL || self->seen == NULL) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    self->n = n;
    self->c = c;
    self->l = l;
    self->p = p;
    self->width = l > p + 1 ? l : p + 1;
    self->max_age = max_age;
    self->evict = Py_NewRef(evict_fn);
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

static int plane_traverse(Plane *self, visitproc visit, void *arg) {
    Py_VISIT(self->delivering);
    Py_VISIT(self->evict);
    for (int i = 0; i < ROW_KINDS; i++) Py_VISIT(self->marks[i]);
    if (self->peers != NULL)
        for (Py_ssize_t d = 0; d < self->n; d++) {
            Py_VISIT(self->peers[d].peer);
            Py_VISIT(self->peers[d].rng);
            Py_VISIT(self->peers[d].view_list);
        }
    if (self->envelopes != NULL)
        for (Py_ssize_t i = 0; i < self->n * ROW_KINDS; i++) Py_VISIT(self->envelopes[i]);
    return 0;
}

static int plane_clear(Plane *self) {
    Py_CLEAR(self->delivering);
    Py_CLEAR(self->evict);
    for (int i = 0; i < ROW_KINDS; i++) Py_CLEAR(self->marks[i]);
    if (self->peers != NULL)
        for (Py_ssize_t d = 0; d < self->n; d++) release_peer(&self->peers[d]);
    self->adopted = 0;
    if (self->queues != NULL)
        for (Py_ssize_t d = 0; d < self->n; d++) self->queues[d].count = 0;
    self->in_flight = 0;
    if (self->envelopes != NULL)
        for (Py_ssize_t i = 0; i < self->n * ROW_KINDS; i++) Py_CLEAR(self->envelopes[i]);
    return 0;
}

static void plane_dealloc(Plane *self) {
    PyObject_GC_UnTrack(self);
    plane_clear(self);
    if (self->queues != NULL)
        for (Py_ssize_t d = 0; d < self->n; d++) {
            PyMem_Free(self->queues[d].heads);
            PyMem_Free(self->queues[d].payload);
        }
    PyMem_Free(self->queues);
    PyMem_Free(self->peers);
    PyMem_Free(self->envelopes);
    PyMem_Free(self->first);
    PyMem_Free(self->last);
    PyMem_Free(self->ready);
    PyMem_Free(self->seen);
    PyMem_Free(self->next);
    PyMem_Free(self->kept);
    PyMem_Free(self->index);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *plane_get_open(Plane *self, void *Py_UNUSED(closure)) { return PyBool_FromLong(self->open); }

static int plane_set_open(Plane *self, PyObject *value, void *Py_UNUSED(closure)) {
    int open = value == NULL ? -1 : PyObject_IsTrue(value);
    if (open < 0) {
        if (value == NULL) PyErr_SetString(PyExc_AttributeError, "the plane's `open` cannot be deleted");
        return -1;
    }
    self->open = open;
    return 0;
}

static PyObject *plane_get_carried(Plane *self, void *Py_UNUSED(closure)) {
    return Py_BuildValue("(LLLL)", self->carried[0], self->carried[1], self->carried[2], self->carried[3]);
}

static PyObject *plane_get_in_flight(Plane *self, void *Py_UNUSED(closure)) { return PyLong_FromSsize_t(self->in_flight); }

static PyObject *plane_get_adopted(Plane *self, void *Py_UNUSED(closure)) { return PyLong_FromSsize_t(self->adopted); }

static PyObject *plane_get_sizes(Plane *self, void *Py_UNUSED(closure)) {
    return Py_BuildValue("(nnnd)", self->c, self->l, self->p, self->max_age);
}

static PyGetSetDef plane_getset[] = {
    {"open", (getter)plane_get_open, (setter)plane_set_open, "Do the plane's peers send their overlay messages as rows?",
     NULL},
    {"carried", (getter)plane_get_carried, NULL, "Descriptors carried by the rows made, per kind.", NULL},
    {"in_flight", (getter)plane_get_in_flight, NULL, "Rows queued and not yet taken.", NULL},
    {"adopted", (getter)plane_get_adopted, NULL, "Peers whose overlay state the plane holds.", NULL},
    {"sizes", (getter)plane_get_sizes, NULL, "(cyclon_view, shuffle_length, view_size, max_age).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

#define FASTCALL(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL

static PyMethodDef plane_methods[] = {
    {"message", FASTCALL(plane_message), "message(dst, mark) -> the message dst's front row stands for, taken off."},
    {"deliver", FASTCALL(plane_deliver),
     "deliver(deliveries, mailboxes, actors, inline_drain, now, batch) -> bool: an instant that carries marks "
     "delivered as the runtime's deliver would (True), or nothing done (False)."},
    {"render", (PyCFunction)plane_render, METH_O, "render(sends) -> the sends with each mark rendered as its message."},
    {"settle", (PyCFunction)plane_settle, METH_NOARGS,
     "settle(): while deliver runs, the marks it has not handled become the messages they stand for."},
    {"fire", FASTCALL(plane_fire), "fire(actors, action, now, batch, flush, skip_idle): a driver's round (fire_each)."},
    {"adopt", FASTCALL(plane_adopt), "adopt(peer, rng, entries, partner, sent, utility, clock, view, pending, stale, "
                                     "compact_next, own) -> bool: hold the peer's overlay state."},
    {"state", (PyCFunction)plane_state, METH_O, "state(i) -> the state adopt took, as it is now."},
    {"release", (PyCFunction)plane_release, METH_O, "release(i) -> the state, which the plane no longer holds."},
    {"holds", (PyCFunction)plane_holds, METH_O, "holds(peer) -> does the plane hold this peer's overlay state?"},
    {"holder", (PyCFunction)plane_holder, METH_O, "holder(i) -> the peer held as actor i, or None."},
    {"exchanges", (PyCFunction)plane_exchanges, METH_O,
     "exchanges(peer) -> the (Cyclon, gradient) exchanges it started while held."},
    {"entries", (PyCFunction)plane_entries, METH_O, "entries(i) -> a new View of the Cyclon view."},
    {"nodes", (PyCFunction)plane_nodes, METH_O, "nodes(i) -> the Cyclon view's nodes."},
    {"samples", (PyCFunction)plane_samples, METH_O, "samples(i) -> the Cyclon view's descriptors."},
    {"partner", (PyCFunction)plane_partner, METH_O, "partner(i) -> the partner of the shuffle under way, or -1."},
    {"view", (PyCFunction)plane_view, METH_O, "view(i) -> the gradient view, pending candidates merged."},
    {"believes", FASTCALL(plane_believes), "believes(i, strict) -> Gradient.believes_centre."},
    {"peek", (PyCFunction)plane_peek, METH_O, "peek(i) -> the view the next read would give."},
    {"utility", (PyCFunction)plane_utility, METH_O, "utility(i) -> the gradient's own utility."},
    {"descriptor", FASTCALL(plane_descriptor), "descriptor(i, now) -> Gradient.descriptor(now), or None."},
    {"set_utility", FASTCALL(plane_set_utility), "set_utility(i, utility, stale) -> bool."},
    {"offer", FASTCALL(plane_offer), "offer(i, descriptors) -> bool: Gradient.offer."},
    {"forget", FASTCALL(plane_forget), "forget(i, node, which) -> bool: Cyclon's (1) or the gradient's (2) forget."},
    {"bootstrap", FASTCALL(plane_bootstrap), "bootstrap(i, descriptors) -> bool: Cyclon.bootstrap."},
    {"reach", FASTCALL(plane_reach), "reach(i, node, own) -> (node, CyclonShuffle), or None: Cyclon.reach."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject PlaneType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "drfemu.nodes._plane.Plane",
    .tp_basicsize = sizeof(Plane),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The overlay state and messages of a run's peers (see src/native/_plane.c).",
    .tp_new = plane_new,
    .tp_dealloc = (destructor)plane_dealloc,
    .tp_traverse = (traverseproc)plane_traverse,
    .tp_clear = (inquiry)plane_clear,
    .tp_methods = plane_methods,
    .tp_getset = plane_getset,
};

/* -- configuration ------------------------------------------------------------------------------ */

static PyMethodDef method_defs[METHODS + 1] = {
    {"cyclon_round", FASTCALL(cyclon_round), "Start a Cyclon shuffle (C; reference: OverlayPeer.cyclon_round)."},
    {"gradient_round", FASTCALL(gradient_round), "Start a gradient exchange (C; reference: OverlayPeer.gradient_round)."},
    {"_on_cyclon_shuffle", FASTCALL(on_cyclon_shuffle),
     "Answer a Cyclon shuffle (C; reference: OverlayPeer._on_cyclon_shuffle)."},
    {"_on_cyclon_reply", FASTCALL(on_cyclon_reply), "Merge a Cyclon reply (C; reference: OverlayPeer._on_cyclon_reply)."},
    {"_on_gradient_shuffle", FASTCALL(on_gradient_shuffle),
     "Answer a gradient exchange (C; reference: OverlayPeer._on_gradient_shuffle)."},
    {"_on_gradient_reply", FASTCALL(on_gradient_reply),
     "Queue a gradient reply (C; reference: OverlayPeer._on_gradient_reply)."},
    {"_on_row", FASTCALL(on_row), "Handle the message a mark of the overlay plane stands for (C; no Python reference: "
                                  "a run without the extension sends message objects)."},
};

static int offset_of(PyObject *cls, const char *name, Py_ssize_t *out) {
    PyObject *slot = PyObject_GetAttrString(cls, name);
    if (slot == NULL) return -1;
    Py_ssize_t offset = slot_offset(slot);
    Py_DECREF(slot);
    if (offset < 0) {
        PyErr_Format(PyExc_TypeError, "%R keeps '%s' in no __slots__ entry", cls, name);
        return -1;
    }
    *out = offset;
    return 0;
}

/* A message class the plane may make by filling its slots: a plain class (no metaclass, no __new__)
 * whose __slots__ are exactly `fields`, as `@message` makes it. */
static int plain_message_class(PyObject *cls, PyObject *fields) {
    PyObject *slots = PyType_Check(cls) ? PyObject_GetAttrString(cls, "__slots__") : NULL;
    int same = slots == NULL ? -1 : PyObject_RichCompareBool(slots, fields, Py_EQ);
    Py_XDECREF(slots);
    if (same < 0) return -1;
    if (!same || !Py_IS_TYPE(cls, &PyType_Type) || ((PyTypeObject *)cls)->tp_new != PyBaseObject_Type.tp_new) {
        PyErr_Format(PyExc_TypeError, "peer_methods: %R is not a plain @message class with the expected fields", cls);
        return -1;
    }
    return 0;
}

static PyObject *peer_methods(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5 || !PyType_Check(args[0]) || !PyTuple_CheckExact(args[1]) || PyTuple_GET_SIZE(args[1]) != 5
        || !PyDict_Check(args[2]) || !PyLong_CheckExact(args[4])) {
        PyErr_SetString(PyExc_TypeError, "peer_methods(peer, (CyclonShuffle, CyclonReply, GradientShuffle, GradientReply, "
                                         "JoinRequest), references: dict, view_type, compact_at: int)");
        return NULL;
    }
    if (configured_methods != NULL) { /* written once */
        if (args[0] == (PyObject *)peer_type) return PyDict_Copy(configured_methods);
        PyErr_SetString(PyExc_RuntimeError, "nodes._plane is configured already, with another peer class");
        return NULL;
    }
    PyObject *peer = args[0], *messages = args[1];
    PyObject *chosen[METHODS];
    for (int i = 0; i < METHODS; i++) {
        chosen[i] = PyDict_GetItemString(args[2], method_names[i]);
        if (chosen[i] == NULL || !PyCallable_Check(chosen[i])) {
            PyErr_Format(PyExc_TypeError, "peer_methods: no callable reference for %s", method_names[i]);
            return NULL;
        }
    }
    Py_ssize_t compact = PyLong_AsSsize_t(args[4]);
    if (compact < 0) {
        if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_TypeError, "peer_methods: COMPACT_AT is an int >= 0");
        }
        return NULL;
    }
    if (args[3] != Py_None && !PyType_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "peer_methods: view_type is overlay._cyclon's View, or None");
        return NULL;
    }
    const char *fields[ROW_KINDS] = {"entries", "entries", "descriptors", "descriptors"};
    for (int k = 0; k < ROW_KINDS; k++) {
        PyObject *cls = PyTuple_GET_ITEM(messages, k);
        PyObject *expected = k == ROW_CR ? Py_BuildValue("(ss)", "sender", "entries") : Py_BuildValue("(s)", fields[k]);
        int plain = expected == NULL ? -1 : plain_message_class(cls, expected);
        Py_XDECREF(expected);
        if (plain < 0 || offset_of(cls, fields[k], &m_field[k]) < 0) return NULL;
    }
    if (offset_of(PyTuple_GET_ITEM(messages, ROW_CR), "sender", &m_sender) < 0) return NULL;
    const struct { const char *name; Py_ssize_t *offset; } slots[] = {
        {"id", &p_id}, {"lane", &p_lane}, {"outbox", &p_outbox}, {"gossip_gradient", &p_gossip_gradient},
        {"feeds_gradient", &p_feeds_gradient}, {"rejoin_via", &p_rejoin_via},
    };
    for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++)
        if (offset_of(peer, slots[i].name, slots[i].offset) < 0) return NULL;
    PyObject *result = PyDict_New();
    PyObject *objects[METHODS + 1] = {NULL};
    for (int i = 0; result != NULL && i <= METHODS; i++) {
        objects[i] = PyDescr_NewMethod((PyTypeObject *)peer, &method_defs[i]);
        if (objects[i] == NULL || PyDict_SetItemString(result, method_defs[i].ml_name, objects[i]) < 0) Py_CLEAR(result);
    }
    if (result == NULL) {
        for (int i = 0; i <= METHODS; i++) Py_XDECREF(objects[i]);
        return NULL;
    }
    peer_type = (PyTypeObject *)Py_NewRef(peer);
    for (int k = 0; k < ROW_KINDS; k++) message_types[k] = (PyTypeObject *)Py_NewRef(PyTuple_GET_ITEM(messages, k));
    join_request = Py_NewRef(PyTuple_GET_ITEM(messages, 4));
    view_type = Py_NewRef(args[3]);
    compact_at = compact;
    for (int i = 0; i < METHODS; i++) references[i] = Py_NewRef(chosen[i]);
    for (int i = 0; i <= METHODS; i++) method_objects[i] = objects[i]; /* owned from here on */
    configured_methods = Py_NewRef(result);
    return result;
}

static PyMethodDef module_methods[] = {
    {"peer_methods", FASTCALL(peer_methods),
     "peer_methods(peer, messages, references, view_type, compact_at) -> {name: C method}"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "nodes._plane", NULL, -1, module_methods};

PyMODINIT_FUNC PyInit__plane(void) {
    if (main_interpreter_only("drfemu.nodes._plane") < 0 || stock_draw_init() < 0) return NULL;
    view_init();
    str_dispatch = PyUnicode_InternFromString("DISPATCH");
    str_check_handled = PyUnicode_InternFromString("check_handled");
    if (str_dispatch == NULL || str_check_handled == NULL) return NULL;
    if (PyType_Ready(&PlaneType) < 0) return NULL;
    PyObject *created = PyModule_Create(&module);
    if (created != NULL && PyModule_AddObjectRef(created, "Plane", (PyObject *)&PlaneType) < 0) Py_CLEAR(created);
    return created;
}
