/* The cycle-driven overlay (overlay.cycle.run_cycles_python) in C: Cyclon and the gradient over
 * plain arrays, PeerSim's cycle-driven semantics, draw for draw the reference's.
 *
 * bootstrap(overlay) -> None: every node's first Cyclon view, offered to its gradient.
 * run_cycles(overlay, first, gradient_turns) -> None
 *   overlay: an overlay.cycle.CycleOverlay; its arrays are changed in place. Cycles `first`,
 *   `first + 1`, ... run, one per item of `gradient_turns` (each node's gradient exchanges in that
 *   cycle): the node order is shuffled (Fisher-Yates from the last position down), then each
 *   node in turn shuffles with Cyclon and makes its gradient exchanges, as the module docstring of
 *   overlay.cycle describes.
 *
 * The fast path takes only what it can check first: `first` and every turn exact ints in range,
 * the sizes and `max_age` exact numbers, every array C-contiguous, writable, of its dtype and
 * shape; every view's length within its row, its nodes distinct, in range, never the node
 * itself, its padding -1 with zero utility and stamp; no NaN; the order a permutation. Then it
 * runs no Python code, so nothing can change its input under it, and leaves the arrays exactly
 * as the reference would. Anything else is handed, untouched, to the reference (imported at
 * first need), which gives Python's answer or exception.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_accelerator.h"
#include "_overlay_kernel.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>


typedef KernelDescriptor Descriptor;

typedef struct {
    double *utility;
    int32_t *node;
    double *stamp;
    int32_t *length;
    Py_ssize_t width;
} Views;

typedef struct {
    Py_ssize_t n, cyclon_view, shuffle_length, view_size;
    double max_age;
    double *utility;
    Views cyclon, gradient, answer; /* answer: the gradient view as read at the start of the cycle */
    uint64_t *rng;
    int64_t *counters;
    int32_t *order;
    Descriptor *kept, *ranked_view, *sent, *reply, *view, *theirs, *chosen;
    Py_ssize_t *ranked, *above, *below;     /* the rank's, as indices into `kept` */
    Py_ssize_t *positions, *table, *places; /* places: the merge plan's fresh and evicted */
} Overlay;

/* -- the generator (overlay.cycle.SplitMix64) ------------------------------------------------ */
static inline uint64_t next_word(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static inline Py_ssize_t below(uint64_t *state, Py_ssize_t n) {
    return (Py_ssize_t)((double)(next_word(state) >> 11) * 0x1.0p-53 * (double)n);
}

/* -- views ------------------------------------------------------------------------------------ */
static Py_ssize_t read_view(const Views *v, Py_ssize_t u, Descriptor *out) {
    Py_ssize_t k = v->length[u], base = u * v->width;
    for (Py_ssize_t i = 0; i < k; i++) {
        out[i].utility = v->utility[base + i];
        out[i].node = v->node[base + i];
        out[i].stamp = v->stamp[base + i];
    }
    return k;
}

static void write_view(Views *v, Py_ssize_t u, const Descriptor *entries, Py_ssize_t k) {
    Py_ssize_t base = u * v->width;
    for (Py_ssize_t i = 0; i < v->width; i++) {
        if (i < k) {
            v->utility[base + i] = entries[i].utility;
            v->node[base + i] = entries[i].node;
            v->stamp[base + i] = entries[i].stamp;
        } else {
            v->utility[base + i] = 0.0;
            v->node[base + i] = -1;
            v->stamp[base + i] = 0.0;
        }
    }
    v->length[u] = (int32_t)k;
}

/* What `u` heard (distinct nodes) joins its gradient view (distinct nodes): the kernel's rank of
 * what it heard, then its view (overlay.cycle's `_offer`). */
static void offer(Overlay *o, Py_ssize_t u, const Descriptor *heard, Py_ssize_t m, double now) {
    Py_ssize_t k = read_view(&o->gradient, u, o->kept);
    Py_ssize_t length = kernel_rank(u, o->utility[u], heard, m, o->kept, k, 1, o->view_size, now - o->max_age,
                                    o->kept, NULL, o->table, o->above, o->below, o->ranked);
    for (Py_ssize_t i = 0; i < length; i++) o->ranked_view[i] = o->kept[o->ranked[i]];
    write_view(&o->gradient, u, o->ranked_view, length);
}

static Py_ssize_t sample(Overlay *o, const Descriptor *entries, Py_ssize_t n, Py_ssize_t k, Descriptor *out) {
    if (n <= k) {
        memcpy(out, entries, (size_t)n * sizeof(Descriptor));
        return n;
    }
    Py_ssize_t *positions = o->positions;
    for (Py_ssize_t i = 0; i < n; i++) positions[i] = i;
    for (Py_ssize_t i = 0; i < k; i++) {
        Py_ssize_t j = i + below(o->rng, n - i);
        Py_ssize_t t = positions[i];
        positions[i] = positions[j];
        positions[j] = t;
    }
    for (Py_ssize_t i = 0; i < k; i++) out[i] = entries[positions[i]];
    return k;
}

static int holds(const Descriptor *view, Py_ssize_t k, long long node) {
    for (Py_ssize_t i = 0; i < k; i++)
        if (view[i].node == node) return 1;
    return 0;
}

/* Cyclon's merge rule on `view` (length *k): the kernel's plan over the nodes, carried out on the
 * array (an evicted node leaves its place, the fresh join at the end). */
static void merge(Overlay *o, Py_ssize_t me, Descriptor *view, Py_ssize_t *k, const Descriptor *received, Py_ssize_t m,
                  const Descriptor *replaceable, Py_ssize_t r) {
    Py_ssize_t *fresh = o->places, *evict = o->places + m, evicted;
    Py_ssize_t count = kernel_merge_plan(me, o->cyclon_view, kernel_descriptor_nodes(view), *k,
                                         kernel_descriptor_nodes(received), m, kernel_descriptor_nodes(replaceable), r,
                                         fresh, evict, &evicted);
    if (evicted > 0) { /* the rest close up, in order */
        Py_ssize_t to = evict[0];
        for (Py_ssize_t from = evict[0], e = 0; from < *k; from++) {
            if (e < evicted && from == evict[e]) e++;
            else view[to++] = view[from];
        }
        *k = to;
    }
    count = kernel_merge_fresh(kernel_descriptor_nodes(received), fresh, count);
    for (Py_ssize_t i = 0; i < count; i++) view[(*k)++] = received[fresh[i]];
}

static void cyclon_turn(Overlay *o, Py_ssize_t u, double now) {
    Descriptor *view = o->view, *theirs = o->theirs, *chosen = o->chosen, *request = o->sent, *reply = o->reply;
    Py_ssize_t k = read_view(&o->cyclon, u, view);
    if (k == 0) return;
    Py_ssize_t oldest = 0;
    for (Py_ssize_t i = 1; i < k; i++)
        if (view[i].stamp < view[oldest].stamp) oldest = i;
    int32_t partner = view[oldest].node;
    memmove(view + oldest, view + oldest + 1, (size_t)(k - oldest - 1) * sizeof(Descriptor));
    k--;
    Py_ssize_t c = sample(o, view, k, o->shuffle_length - 1, chosen);
    request[0] = (Descriptor){o->utility[u], (int32_t)u, now};
    memcpy(request + 1, chosen, (size_t)c * sizeof(Descriptor));
    Py_ssize_t m = c + 1;
    Py_ssize_t t = read_view(&o->cyclon, partner, theirs);
    Py_ssize_t r = sample(o, theirs, t, o->shuffle_length, reply);
    merge(o, partner, theirs, &t, request, m, reply, r);
    write_view(&o->cyclon, partner, theirs, t);
    offer(o, partner, request, m, now);
    merge(o, u, view, &k, reply, r, chosen, c);
    write_view(&o->cyclon, u, view, k);
    offer(o, u, reply, r, now);
    o->counters[0] += 1;
    o->counters[2] += m;
    o->counters[3] += r;
}

static void gradient_turn(Overlay *o, Py_ssize_t u, double now) {
    Descriptor *sent = o->sent, *reply = o->reply;
    Py_ssize_t k = read_view(&o->answer, u, sent + 1); /* its view as read at the start of the cycle */
    if (k == 0) return;
    int32_t partner = sent[1 + below(o->rng, k)].node;
    sent[0] = (Descriptor){o->utility[u], (int32_t)u, now};
    reply[0] = (Descriptor){o->utility[partner], partner, now};
    Py_ssize_t r = read_view(&o->answer, partner, reply + 1);
    offer(o, partner, sent, k + 1, now);
    offer(o, u, reply, r + 1, now);
    o->counters[1] += 1;
    o->counters[4] += k + 1;
    o->counters[5] += r + 1;
}

/* -- checking the input ------------------------------------------------------------------------ */
typedef struct {
    Py_buffer buffers[16];
    int held;
} Buffers;

static void release(Buffers *b) {
    for (int i = 0; i < b->held; i++) PyBuffer_Release(&b->buffers[i]);
    b->held = 0;
}

/* The buffer of attribute `name`: 1 and *data set when it is C-contiguous, writable, of
 * `format`, `ndim` dimensions and shape (rows, cols) (cols ignored for one dimension); 0 when
 * not (the reference then runs); -1 on error. */
static int array(PyObject *overlay, const char *name, char format, Py_ssize_t itemsize, int ndim, Py_ssize_t rows,
                 Py_ssize_t cols, Buffers *b, void **data) {
    PyObject *value = PyObject_GetAttrString(overlay, name);
    if (value == NULL) {
        if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Clear();
            return 0;
        }
        return -1;
    }
    if (!PyObject_CheckBuffer(value)) {
        Py_DECREF(value);
        return 0;
    }
    Py_buffer *view = &b->buffers[b->held];
    int got = PyObject_GetBuffer(value, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE);
    Py_DECREF(value);
    if (got < 0) {
        if (PyErr_ExceptionMatches(PyExc_BufferError) || PyErr_ExceptionMatches(PyExc_TypeError)
            || PyErr_ExceptionMatches(PyExc_ValueError)) {
            PyErr_Clear();
            return 0;
        }
        return -1;
    }
    b->held++;
    const char *f = view->format ? view->format : "B";
    if (f[0] == '<' || f[0] == '=' || f[0] == '@') f++;
    int format_ok = view->itemsize == itemsize && f[1] == '\0'
                    && (f[0] == format || (format == 'q' && (f[0] == 'l' && sizeof(long) == 8))
                        || (format == 'Q' && (f[0] == 'L' && sizeof(unsigned long) == 8))
                        || (format == 'i' && f[0] == 'l' && sizeof(long) == 4));
    if (!format_ok || view->ndim != ndim || view->shape[0] != rows || (ndim == 2 && view->shape[1] != cols))
        return 0;
    *data = view->buf;
    return 1;
}

static int exact_size(PyObject *overlay, const char *name, Py_ssize_t low, Py_ssize_t high, Py_ssize_t *out) {
    PyObject *value = PyObject_GetAttrString(overlay, name);
    if (value == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
        PyErr_Clear();
        return 0;
    }
    int ok = 0;
    if (PyLong_CheckExact(value)) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (!overflow && v >= low && v <= high) {
            *out = (Py_ssize_t)v;
            ok = 1;
        }
    }
    Py_DECREF(value);
    return ok;
}

/* Every view of `v` well formed (see the module comment). */
static int views_ok(const Views *v, Py_ssize_t n, int32_t *seen_at, Py_ssize_t stamp_base) {
    for (Py_ssize_t u = 0; u < n; u++) {
        Py_ssize_t k = v->length[u], base = u * v->width;
        if (k < 0 || k > v->width) return 0;
        for (Py_ssize_t i = 0; i < v->width; i++) {
            int32_t node = v->node[base + i];
            double utility = v->utility[base + i], stamp = v->stamp[base + i];
            if (i >= k) {
                if (node != -1 || utility != 0.0 || stamp != 0.0 || signbit(utility) || signbit(stamp)) return 0;
                continue;
            }
            if (node < 0 || node >= n || node == u || isnan(utility) || isnan(stamp)) return 0;
            if (seen_at[node] == (int32_t)(stamp_base + u)) return 0; /* a repeat within the view */
            seen_at[node] = (int32_t)(stamp_base + u);
        }
    }
    return 1;
}

/* 1: `o` is filled and may run; 0: hand to the reference; -1: error. */
static int load(PyObject *overlay, PyObject *turns, Overlay *o, Buffers *b, Py_ssize_t *first, PyObject *first_obj,
                Py_ssize_t **turn_counts, Py_ssize_t *cycle_count) {
    int ok;
    if (!PyLong_CheckExact(first_obj) || !PyList_CheckExact(turns)) return 0;
    int overflow = 0;
    long long f = PyLong_AsLongLongAndOverflow(first_obj, &overflow);
    if (overflow || f < 0 || f > (1LL << 40)) return 0;
    *first = (Py_ssize_t)f;
    Py_ssize_t n_max = 100000000;
    if ((ok = exact_size(overlay, "n", 2, n_max, &o->n)) <= 0) return ok;
    if ((ok = exact_size(overlay, "cyclon_view", 1, o->n - 1, &o->cyclon_view)) <= 0) return ok;
    if ((ok = exact_size(overlay, "shuffle_length", 1, o->cyclon_view, &o->shuffle_length)) <= 0) return ok;
    if ((ok = exact_size(overlay, "view_size", 1, o->n - 1, &o->view_size)) <= 0) return ok;
    if (o->cyclon_view > 4096 || o->view_size > 4096) return 0;
    PyObject *age = PyObject_GetAttrString(overlay, "max_age");
    if (age == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
        PyErr_Clear();
        return 0;
    }
    ok = PyFloat_CheckExact(age) && !isnan(PyFloat_AS_DOUBLE(age));
    o->max_age = ok ? PyFloat_AS_DOUBLE(age) : 0.0;
    Py_DECREF(age);
    if (!ok) return 0;
    Py_ssize_t n = o->n, c = o->cyclon_view, p = o->view_size;
    void *d;
#define ARRAY(name, fmt, size, dims, rows, cols, field)                                  \
    if ((ok = array(overlay, name, fmt, size, dims, rows, cols, b, &d)) <= 0) return ok; \
    o->field = d;
    ARRAY("utility", 'd', 8, 1, n, 0, utility)
    ARRAY("cyclon_node", 'i', 4, 2, n, c, cyclon.node)
    ARRAY("cyclon_utility", 'd', 8, 2, n, c, cyclon.utility)
    ARRAY("cyclon_stamp", 'd', 8, 2, n, c, cyclon.stamp)
    ARRAY("cyclon_length", 'i', 4, 1, n, 0, cyclon.length)
    ARRAY("gradient_node", 'i', 4, 2, n, p, gradient.node)
    ARRAY("gradient_utility", 'd', 8, 2, n, p, gradient.utility)
    ARRAY("gradient_stamp", 'd', 8, 2, n, p, gradient.stamp)
    ARRAY("gradient_length", 'i', 4, 1, n, 0, gradient.length)
    ARRAY("answer_node", 'i', 4, 2, n, p, answer.node)
    ARRAY("answer_utility", 'd', 8, 2, n, p, answer.utility)
    ARRAY("answer_stamp", 'd', 8, 2, n, p, answer.stamp)
    ARRAY("answer_length", 'i', 4, 1, n, 0, answer.length)
    ARRAY("rng", 'Q', 8, 1, 1, 0, rng)
    ARRAY("counters", 'q', 8, 1, 6, 0, counters)
    ARRAY("order", 'i', 4, 1, n, 0, order)
#undef ARRAY
    o->cyclon.width = c;
    o->gradient.width = p;
    o->answer.width = p;
    /* the buffers may overlap (the same array under two names): the reference then decides */
    for (int i = 0; i < b->held; i++)
        for (int j = i + 1; j < b->held; j++) {
            char *a0 = b->buffers[i].buf, *a1 = a0 + b->buffers[i].len;
            char *b0 = b->buffers[j].buf, *b1 = b0 + b->buffers[j].len;
            if (a0 < b1 && b0 < a1) return 0;
        }
    for (Py_ssize_t u = 0; u < n; u++)
        if (isnan(o->utility[u])) return 0;
    Py_ssize_t count = PyList_GET_SIZE(turns);
    *turn_counts = PyMem_Malloc((size_t)(count > 0 ? count : 1) * sizeof(Py_ssize_t));
    if (*turn_counts == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *item = PyList_GET_ITEM(turns, i);
        if (!PyLong_CheckExact(item)) return 0;
        long long v = PyLong_AsLongLongAndOverflow(item, &overflow);
        if (overflow || v < 0 || v > 1000000) return 0;
        (*turn_counts)[i] = (Py_ssize_t)v;
    }
    *cycle_count = count;
    int32_t *seen = PyMem_Malloc((size_t)n * sizeof(int32_t));
    if (seen == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t u = 0; u < n; u++) seen[u] = -1;
    ok = 1;
    for (Py_ssize_t u = 0; u < n && ok; u++) { /* the order: a permutation */
        int32_t v = o->order[u];
        if (v < 0 || v >= n || seen[v] == 0) ok = 0;
        else seen[v] = 0;
    }
    for (Py_ssize_t u = 0; u < n; u++) seen[u] = -1;
    ok = ok && views_ok(&o->cyclon, n, seen, 0);
    for (Py_ssize_t u = 0; u < n; u++) seen[u] = -1;
    ok = ok && views_ok(&o->gradient, n, seen, 0);
    for (Py_ssize_t u = 0; u < n; u++) seen[u] = -1;
    ok = ok && views_ok(&o->answer, n, seen, 0);
    PyMem_Free(seen);
    return ok;
}

static PyObject *call_reference(const char *name, PyObject *const *args, Py_ssize_t nargs) {
    static PyObject *functions[2];
    PyObject **cache = &functions[strcmp(name, "bootstrap_python") == 0];
    PyObject *function = imported(cache, "drfemu.overlay.cycle", name);
    if (function == NULL) return NULL;
    return PyObject_Vectorcall(function, args, (size_t)nargs, NULL);
}

static void bootstrap_views(Overlay *o) {
    Py_ssize_t n = o->n, c = o->cyclon_view;
    Descriptor *entries = o->view;
    for (Py_ssize_t u = 0; u < n; u++) {
        Py_ssize_t k = 0;
        while (k < c) {
            Py_ssize_t other = below(o->rng, n - 1);
            other += other >= u;
            if (!holds(entries, k, (int32_t)other)) entries[k++] = (Descriptor){o->utility[other], (int32_t)other, 0.0};
        }
        write_view(&o->cyclon, u, entries, k);
        offer(o, u, entries, k, 0.0);
    }
}

static void cycles(Overlay *o, Py_ssize_t first, const Py_ssize_t *turn_counts, Py_ssize_t count) {
    for (Py_ssize_t cycle = 0; cycle < count; cycle++) {
        double now = (double)(first + cycle);
        for (Py_ssize_t i = o->n - 1; i > 0; i--) {
            Py_ssize_t j = below(o->rng, i + 1);
            int32_t t = o->order[i];
            o->order[i] = o->order[j];
            o->order[j] = t;
        }
        size_t cells = (size_t)(o->n * o->view_size); /* every node reads its view */
        memcpy(o->answer.node, o->gradient.node, cells * sizeof(int32_t));
        memcpy(o->answer.utility, o->gradient.utility, cells * sizeof(double));
        memcpy(o->answer.stamp, o->gradient.stamp, cells * sizeof(double));
        memcpy(o->answer.length, o->gradient.length, (size_t)o->n * sizeof(int32_t));
        for (Py_ssize_t i = 0; i < o->n; i++) {
            Py_ssize_t u = o->order[i];
            cyclon_turn(o, u, now);
            for (Py_ssize_t g = 0; g < turn_counts[cycle]; g++) gradient_turn(o, u, now);
        }
    }
}

/* Check the input, then `bootstrap_views` (turns NULL) or `cycles`; else the reference `name`. */
static PyObject *checked_call(const char *name, PyObject *overlay, PyObject *first_obj, PyObject *turns,
                              PyObject *const *args, Py_ssize_t nargs) {
    Overlay o;
    memset(&o, 0, sizeof o);
    Buffers b;
    b.held = 0;
    Py_ssize_t first = 0, count = 0, *turn_counts = NULL;
    int ok = load(overlay, turns, &o, &b, &first, first_obj, &turn_counts, &count);
    if (ok <= 0) {
        release(&b);
        PyMem_Free(turn_counts);
        return ok < 0 ? NULL : call_reference(name, args, nargs);
    }
    Py_ssize_t slots = 2 * (o.view_size + o.cyclon_view + 2) + o.shuffle_length;
    Descriptor *scratch = PyMem_Malloc((size_t)(7 * slots) * sizeof(Descriptor));
    o.positions = PyMem_Malloc((size_t)(o.cyclon_view + 1) * sizeof(Py_ssize_t));
    o.table = PyMem_Malloc(kernel_slots(slots) * sizeof(Py_ssize_t));
    o.places = PyMem_Malloc((size_t)(5 * slots) * sizeof(Py_ssize_t));
    if (scratch == NULL || o.positions == NULL || o.table == NULL || o.places == NULL) {
        PyMem_Free(scratch);
        PyMem_Free(o.positions);
        PyMem_Free(o.table);
        PyMem_Free(o.places);
        PyMem_Free(turn_counts);
        release(&b);
        return PyErr_NoMemory();
    }
    Descriptor **parts[] = {&o.kept, &o.ranked_view, &o.sent, &o.reply, &o.view, &o.theirs, &o.chosen};
    for (int i = 0; i < 7; i++) *parts[i] = scratch + i * slots;
    o.ranked = o.places + 2 * slots;
    o.above = o.ranked + slots;
    o.below = o.above + slots;
    if (strcmp(name, "bootstrap_python") == 0) bootstrap_views(&o);
    else cycles(&o, first, turn_counts, count);
    PyMem_Free(scratch);
    PyMem_Free(o.positions);
    PyMem_Free(o.table);
    PyMem_Free(o.places);
    PyMem_Free(turn_counts);
    release(&b);
    Py_RETURN_NONE;
}

static PyObject *run_cycles(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) return call_reference("run_cycles_python", args, nargs);
    return checked_call("run_cycles_python", args[0], args[1], args[2], args, nargs);
}

static PyObject *bootstrap(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 1) return call_reference("bootstrap_python", args, nargs);
    PyObject *zero = PyLong_FromLong(0), *none = PyList_New(0);
    PyObject *result = zero == NULL || none == NULL ? NULL
                                                   : checked_call("bootstrap_python", args[0], zero, none, args, nargs);
    Py_XDECREF(zero);
    Py_XDECREF(none);
    return result;
}

static PyMethodDef methods[] = {
    {"run_cycles", (PyCFunction)(void (*)(void))run_cycles, METH_FASTCALL,
     "run_cycles(overlay, first, gradient_turns): cycles of the cycle-driven overlay (overlay.cycle)."},
    {"bootstrap", (PyCFunction)(void (*)(void))bootstrap, METH_FASTCALL,
     "bootstrap(overlay): every node's first Cyclon view, offered to its gradient (overlay.cycle)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_cycle", NULL, -1, methods};

PyMODINIT_FUNC PyInit__cycle(void) {
    if (main_interpreter_only("drfemu.overlay._cycle") < 0) return NULL;
    return PyModule_Create(&module_def);
}
