/* The overlay kernel: Cyclon's merge rule and the gradient's rank over C arrays, written once.
 *
 * Their contracts are the Python references, overlay.cyclon.merge_python and
 * overlay.gradient.rank_python (with overlay.gradient.freshest_python for the compaction). Every
 * compiled overlay uses this header and nothing else for them: the event-driven overlay's
 * accelerators (_cyclon.c's merge on a View, _rank.c's rank and freshest on lists of descriptor
 * tuples, and the overlay plane's Cyclon and gradient steps on the arrays it holds, _plane.c) and the cycle-driven
 * engine (_cycle.c, on its arrays). Each caller checks its input is plain and reads it into these
 * arrays; the kernel runs no Python code and calls no allocator: every array it writes is the
 * caller's, of the size stated. The last section reads the gradient's descriptor tuples for the
 * callers that hold them in lists, and ranks such lists (`kernel_rank_lists`, which allocates).
 */
#ifndef DRFEMU_OVERLAY_KERNEL_H
#define DRFEMU_OVERLAY_KERNEL_H

#include <Python.h>
#include <string.h>

#include "_accelerator.h"

typedef struct {
    double utility;
    long long node;
    double stamp;
} KernelDescriptor;

/* (utility, node) of a before b: the gradient's total order (overlay.gradient, "Total order") */
static inline int kernel_before(const KernelDescriptor *a, const KernelDescriptor *b) {
    return a->utility < b->utility || (a->utility == b->utility && a->node < b->node);
}

/* The slots of a table that keeps the freshest of `n` candidates: a power of two, at least 16,
 * at most half full. */
static inline size_t kernel_slots(Py_ssize_t n) {
    size_t slots = 16;
    while (slots < 2 * (size_t)n) slots <<= 1;
    return slots;
}

/* Keep candidate `i`, `e`, as its node's freshest descriptor: the larger stamp wins, at equal
 * stamps the later. kept[0..*unique) hold one descriptor per node, in the order of each node's
 * first, and kept_at (if not NULL) the candidate each one is; `table` (`slots` of them, zeroed
 * before the first call) holds an index into `kept` plus one, by node. */
static inline void kernel_keep_freshest(KernelDescriptor e, Py_ssize_t i, KernelDescriptor *kept, Py_ssize_t *kept_at,
                                        Py_ssize_t *unique, Py_ssize_t *table, size_t slots) {
    size_t h = ((unsigned long long)e.node * 0x9E3779B97F4A7C15ULL) >> 32;
    for (;; h++) {
        h &= slots - 1;
        Py_ssize_t at = table[h];
        if (at == 0) {
            table[h] = *unique + 1;
            at = (*unique)++;
        } else if (kept[at - 1].node == e.node) {
            if (e.stamp < kept[--at].stamp) return;
        } else {
            continue;
        }
        kept[at] = e;
        if (kept_at != NULL) kept_at[at] = i;
        return;
    }
}

/* Kept descriptor `d` (an index into `kept`) into `list` (length *n, capacity `cap` >= 1), kept
 * ascending (or descending) in the total order; dropped when it would come after `cap` entries. */
static inline void kernel_insert_capped(const KernelDescriptor *kept, Py_ssize_t *list, Py_ssize_t *n, Py_ssize_t cap,
                                        Py_ssize_t d, int ascending) {
    Py_ssize_t j = *n;
#define KERNEL_FIRST(a, b) (ascending ? kernel_before(&kept[a], &kept[b]) : kernel_before(&kept[b], &kept[a]))
    if (j == cap) {
        if (!KERNEL_FIRST(d, list[j - 1])) return;
        j--;
    } else {
        (*n)++;
    }
    while (j > 0 && KERNEL_FIRST(d, list[j - 1])) {
        list[j] = list[j - 1];
        j--;
    }
#undef KERNEL_FIRST
    list[j] = d;
}

#define KERNEL_SCAN_MAX 16 /* candidates up to which `kernel_rank` finds each node's freshest by a scan (measured: a
                            * scan of 24 or 32 costs more than clearing and probing a table) */

/* The gradient's rank (overlay.gradient.rank_python) of the candidates `first[0..m)` followed by
 * `second[0..k)` (one list, in that order): of each node its freshest descriptor (the larger
 * stamp; at equal stamps the later), none stamped before `oldest`, none of `me`; of those, the
 * `size` nearest above (my_utility, me) in the total order, nearest first, topped up with the
 * nearest below, nearest first. Each node's freshest goes to `kept` (and, if `kept_at` is not
 * NULL, the index of the candidate it is, counting through both parts, to `kept_at`); the
 * ranked view goes to `out` as indices into `kept`; returns its length. With `distinct`, each
 * of the two parts names distinct nodes (what one message carried, and a view), and a node of
 * the first part is only looked for in the second; `kept` may then be `second` itself, which it
 * overwrites. Scratch, all the caller's: `kept` and `kept_at` of m + k, `table` of
 * kernel_slots(m + k) (unread when `distinct` or for up to KERNEL_SCAN_MAX candidates), `above`
 * and `below` of min(size, m + k) each; `out` holds as many. Stamps and utilities are never NaN
 * (the callers check). */
static inline Py_ssize_t kernel_rank(long long me, double my_utility, const KernelDescriptor *first, Py_ssize_t m,
                                     const KernelDescriptor *second, Py_ssize_t k, int distinct, Py_ssize_t size,
                                     double oldest, KernelDescriptor *kept, Py_ssize_t *kept_at, Py_ssize_t *table,
                                     Py_ssize_t *above, Py_ssize_t *below, Py_ssize_t *out) {
    Py_ssize_t n = m + k, unique = 0;
    if (distinct) { /* the second part stands where the first has no fresher copy */
        if (kept != second) memcpy(kept, second, sizeof(KernelDescriptor) * (size_t)k);
        if (kept_at != NULL)
            for (Py_ssize_t j = 0; j < k; j++) kept_at[j] = m + j;
        unique = k;
        for (Py_ssize_t i = 0; i < m; i++) {
            Py_ssize_t j = 0;
            while (j < k && kept[j].node != first[i].node) j++;
            if (j == k) j = unique++;
            else if (!(first[i].stamp > kept[j].stamp)) continue;
            kept[j] = first[i];
            if (kept_at != NULL) kept_at[j] = i;
        }
    } else if (n <= KERNEL_SCAN_MAX) { /* few: a scan of those kept costs less than clearing a table */
        for (Py_ssize_t i = 0; i < n; i++) {
            const KernelDescriptor *d = i < m ? &first[i] : &second[i - m];
            if (d->stamp < oldest || d->node == me) continue; /* dropped before or after: the same */
            Py_ssize_t j = 0;
            while (j < unique && kept[j].node != d->node) j++;
            if (j == unique) unique++;
            else if (d->stamp < kept[j].stamp) continue;
            kept[j] = *d;
            if (kept_at != NULL) kept_at[j] = i;
        }
    } else {
        size_t slots = kernel_slots(n);
        memset(table, 0, sizeof(Py_ssize_t) * slots);
        for (Py_ssize_t i = 0; i < n; i++) {
            const KernelDescriptor *d = i < m ? &first[i] : &second[i - m];
            if (d->stamp < oldest || d->node == me) continue;
            kernel_keep_freshest(*d, i, kept, kept_at, &unique, table, slots);
        }
    }
    /* Nodes are unique now, so (utility, node) orders them totally: a bounded insertion into
     * each side, O(unique * size), no full sort. A node's freshest copy is dropped when it is too
     * old (then every copy is: dropping before finding the freshest, as the reference does, or
     * after gives the same) or names `me`. */
    KernelDescriptor mine = {my_utility, me, 0.0};
    Py_ssize_t cap = size < unique ? size : unique, n_above = 0, n_below = 0;
    for (Py_ssize_t i = 0; cap > 0 && i < unique; i++) {
        if (kept[i].stamp < oldest || kept[i].node == me) continue;
        if (kernel_before(&kept[i], &mine)) kernel_insert_capped(kept, below, &n_below, cap, i, 0);
        else kernel_insert_capped(kept, above, &n_above, cap, i, 1);
    }
    Py_ssize_t length = 0;
    for (Py_ssize_t i = 0; i < n_above; i++) out[length++] = above[i];
    for (Py_ssize_t i = 0; i < n_below && length < size; i++) out[length++] = below[i];
    return length;
}

/* -- The gradient's descriptors as Python keeps them: (utility, node, stamp) tuples in lists ------- */

static inline int kernel_plain_float(PyObject *number, double *out) { /* an exact float other than NaN */
    if (!PyFloat_CheckExact(number)) return 0;
    *out = PyFloat_AS_DOUBLE(number);
    return *out == *out;
}

static inline int kernel_plain_int(PyObject *number, long long *out) { /* an exact int of 64 bits */
    return PyLong_CheckExact(number) && int64_of(number, out);
}

/* The items of `list` read as descriptors, if every one is a plain descriptor (an exact 3-tuple of
 * an exact float, an exact int of 64 bits and an exact float, neither float NaN); else 0, and
 * nothing read is kept. Runs no Python code. */
static inline int kernel_read_descriptors(PyObject *list, KernelDescriptor *out) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
        PyObject *d = PyList_GET_ITEM(list, i);
        if (!PyTuple_CheckExact(d) || PyTuple_GET_SIZE(d) != 3
            || !kernel_plain_float(PyTuple_GET_ITEM(d, 0), &out[i].utility)
            || !kernel_plain_int(PyTuple_GET_ITEM(d, 1), &out[i].node)
            || !kernel_plain_float(PyTuple_GET_ITEM(d, 2), &out[i].stamp))
            return 0;
    }
    return 1;
}

/* The descriptor tuple (utility, node, stamp) of `e`, a new reference; NULL with MemoryError. */
static inline PyObject *kernel_box_descriptor(const KernelDescriptor *e) {
    PyObject *u = PyFloat_FromDouble(e->utility), *n = PyLong_FromLongLong(e->node), *s = PyFloat_FromDouble(e->stamp);
    PyObject *t = u == NULL || n == NULL || s == NULL ? NULL : PyTuple_Pack(3, u, n, s);
    Py_XDECREF(u);
    Py_XDECREF(n);
    Py_XDECREF(s);
    return t;
}

#define KERNEL_SMALL 128 /* candidates ranked without an allocation */

/* overlay.gradient.rank_python on the list `first` followed by `second` (NULL: none), two exact
 * lists, as one list of candidates: a new list of the chosen descriptor objects; NULL with
 * Python's error; or NULL with no error and *plain 0 when a candidate is not a plain descriptor
 * (then nothing has run: the caller hands off to the reference). Runs no Python code. */
static inline PyObject *kernel_rank_lists(long long me, double my_utility, PyObject *first, PyObject *second,
                                          Py_ssize_t size, double oldest, int *plain) {
    Py_ssize_t m = PyList_GET_SIZE(first), n = m + (second != NULL ? PyList_GET_SIZE(second) : 0);
    Py_ssize_t cap = size < n ? size : n;
    size_t slots = kernel_slots(n);
    /* descriptors: the candidates read, those kept; indices: the table, where each kept one is,
     * above, below and the ranked view */
    KernelDescriptor small[2 * KERNEL_SMALL];
    Py_ssize_t small_indices[6 * KERNEL_SMALL];
    int fits = n <= KERNEL_SMALL && slots <= 2 * KERNEL_SMALL;
    KernelDescriptor *read = fits ? small : PyMem_Malloc(sizeof(KernelDescriptor) * (size_t)(2 * n + 1));
    Py_ssize_t *table = fits ? small_indices : PyMem_Malloc(sizeof(Py_ssize_t) * (slots + (size_t)(n + 3 * cap)));
    PyObject *result = NULL;
    *plain = 1;
    if (read == NULL || table == NULL) {
        PyErr_NoMemory();
    } else if (!kernel_read_descriptors(first, read)
               || (second != NULL && !kernel_read_descriptors(second, read + m))) {
        *plain = 0;
    } else {
        Py_ssize_t *kept_at = table + slots, *above = kept_at + n, *below = above + cap, *out = below + cap;
        Py_ssize_t length = kernel_rank(me, my_utility, read, n, NULL, 0, 0, size, oldest, read + n, kept_at, table,
                                        above, below, out);
        result = PyList_New(length);
        for (Py_ssize_t k = 0; result != NULL && k < length; k++) {
            Py_ssize_t at = kept_at[out[k]];
            PyObject *chosen = at < m ? PyList_GET_ITEM(first, at) : PyList_GET_ITEM(second, at - m);
            PyList_SET_ITEM(result, k, Py_NewRef(chosen));
        }
    }
    if (read != NULL && read != small) PyMem_Free(read);
    if (table != NULL && table != small_indices) PyMem_Free(table);
    return result;
}

/* Node ids as the caller keeps them: the i-th at `first + i * stride` (a plain array: stride 1;
 * the nodes of an array of KernelDescriptor: `kernel_descriptor_nodes`). */
typedef struct {
    const long long *first;
    Py_ssize_t stride;
} KernelNodes;

#define KERNEL_NODE(nodes, i) ((nodes).first[(i) * (nodes).stride])

static inline KernelNodes kernel_descriptor_nodes(const KernelDescriptor *descriptors) {
    KernelNodes nodes = {&descriptors->node, sizeof(KernelDescriptor) / sizeof(long long)};
    return nodes;
}

/* The place of `node` among the distinct nodes[0..k), or k. The scan does not stop at the match:
 * on a view of a few nodes, a loop without an early exit costs less than the mispredicted exit. */
static inline Py_ssize_t kernel_find(KernelNodes nodes, Py_ssize_t k, long long node) {
    Py_ssize_t at = k;
    for (Py_ssize_t j = 0; j < k; j++) at = KERNEL_NODE(nodes, j) == node ? j : at;
    return at;
}

/* Cyclon's merge rule (overlay.cyclon.merge_python) as a plan over node ids: the view holds
 * `view[0..k)` (distinct) of at most `size`; `received[0..m)` and `replaceable[0..r)` are the
 * nodes of the descriptors received and of those sent in the exchange. The received that name
 * neither `me` nor a node of the view are new. When there are more than the free slots, the
 * replaceable still in the view leave it, in order, until there is room (their places in the
 * view go to `evict`, ascending, *n_evict of them); the new that still do not fit are
 * dropped from the last, as Python's `del new[room:]`. The indices into `received` of the new
 * that stay go to `fresh`; returns how many. The caller then removes the evicted places and sets,
 * in order, node -> descriptor for each fresh one (a node received twice: the later descriptor
 * in the first's place; `kernel_merge_fresh` resolves that for a caller that appends). `fresh`
 * holds m, `evict` r. */
static inline Py_ssize_t kernel_merge_plan(long long me, long long size, KernelNodes view, Py_ssize_t k,
                                           KernelNodes received, Py_ssize_t m, KernelNodes replaceable, Py_ssize_t r,
                                           Py_ssize_t *fresh, Py_ssize_t *evict, Py_ssize_t *n_evict) {
    *n_evict = 0;
    Py_ssize_t count = 0;
    for (Py_ssize_t i = 0; i < m; i++) {
        long long node = KERNEL_NODE(received, i);
        if (node != me && kernel_find(view, k, node) == k) fresh[count++] = i;
    }
    long long room = size - (long long)k;
    if (count == 0 || count <= room) return count;
    for (Py_ssize_t s = 0; s < r; s++) { /* in the order the entries were sent */
        Py_ssize_t j = kernel_find(view, k, KERNEL_NODE(replaceable, s));
        if (j == k) continue;
        Py_ssize_t e = 0; /* a node sent twice leaves once */
        while (e < *n_evict && evict[e] != j) e++;
        if (e < *n_evict) continue;
        Py_ssize_t at = (*n_evict)++; /* kept ascending */
        while (at > 0 && evict[at - 1] > j) {
            evict[at] = evict[at - 1];
            at--;
        }
        evict[at] = j;
        if (++room == count) break;
    }
    long long keep = room >= 0 ? room : count + room; /* as Python's `del new[room:]` */
    if (keep < 0) keep = 0;
    return keep < count ? (Py_ssize_t)keep : count;
}

/* The fresh of a merge plan as the view takes them: a node received twice is set twice, the
 * later descriptor in the first's place, so the later's index goes in the first's place and the
 * later leaves the list. Returns the new count: each then names a node the view does not hold. */
static inline Py_ssize_t kernel_merge_fresh(KernelNodes received, Py_ssize_t *fresh, Py_ssize_t count) {
    Py_ssize_t kept = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        long long node = KERNEL_NODE(received, fresh[i]);
        Py_ssize_t j = 0;
        while (j < kept && KERNEL_NODE(received, fresh[j]) != node) j++;
        fresh[j] = fresh[i];
        if (j == kept) kept++;
    }
    return kept;
}

#endif
