"""Observers: measure the overlays from a snapshot of every node's views (SPEC §4.1).

Observers belong to the emulator, never to a node: they read every node's state at once,
including the *true* utilities, which no node knows. Reading never changes a node — the
gradient view is taken with `Gradient.peek`, which does not merge.

What is measured, per snapshot (`measure`):

- the **true centre** (the top of the total order of true utilities), whether it believes
  it is the centre (eq. 3.11, on the utilities its descriptors carry), and how many other
  nodes wrongly believe they are;
- whether the centre's view is exactly the **true top-P** and whether the validation of
  thesis §3.3.1 would succeed on the current views;
- the fraction of nodes whose view is their **ideal view** — the `P` nodes just above
  them in the total order, topped up with those just below (eq. 3.9 on true utilities);
- Cyclon: weak and strong connectivity, self-links, duplicate entries, in-degree mean and
  spread;
- gradient: in-degree spread, and the mean hop count from a node to the centre along view
  links (nodes that cannot reach it are counted apart).

Decision (issue 51): a snapshot is a few arrays — the views padded with −1 — and the measures
are array operations (numpy, and scipy's sparse-graph routines for connectivity and hops), so
an observation of a million nodes takes seconds and leaves nothing behind but its figures.
The graph of a snapshot as networkx sees it (`cyclon_graph`, `gradient_graph`) is still there
for a user's own analysis; edges repeated in a view count once, as they do there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import breadth_first_order, connected_components

from drfemu.overlay.cyclon import Cyclon
from drfemu.overlay.gradient import Gradient
from drfemu.overlay.messages import Descriptor

if TYPE_CHECKING:
    import networkx as nx

__all__ = [
    "CentreStatus",
    "OverlayMetrics",
    "OverlaySnapshot",
    "centre_status",
    "cyclon_graph",
    "gradient_graph",
    "ideal_view_fraction",
    "ideal_views",
    "measure",
    "snapshot",
    "total_order",
]

NO_NODE = -1
"""What pads a view shorter than its row."""


@dataclass(frozen=True, eq=False)
class OverlaySnapshot:
    """Every node's true utility, Cyclon neighbours and gradient view at one instant, as arrays:
    `cyclon[u]` and `gradient[u]` are node `u`'s views in view order (most preferred first for the
    gradient), padded with −1; `believed[u, k]` is the utility the descriptor of `gradient[u, k]`
    carries."""

    utilities: np.ndarray
    cyclon: np.ndarray
    gradient: np.ndarray
    believed: np.ndarray
    view_size: int

    @classmethod
    def of(cls, utilities: Sequence[float], cyclon: Sequence[Sequence[int]],
           gradient: Sequence[Sequence[Descriptor]], view_size: int) -> OverlaySnapshot:
        """A snapshot from per-node sequences: Cyclon neighbours, and gradient descriptors
        `(utility, node, stamp)`."""
        n = len(utilities)
        cyclon_nodes = np.full((n, max((len(v) for v in cyclon), default=0)), NO_NODE, dtype=np.int64)
        width = max((len(v) for v in gradient), default=0)
        gradient_nodes = np.full((n, width), NO_NODE, dtype=np.int64)
        believed = np.zeros((n, width))
        for u in range(n):
            row = cyclon[u]
            cyclon_nodes[u, : len(row)] = row
            view = gradient[u]
            if view:
                gradient_nodes[u, : len(view)] = [d[1] for d in view]
                believed[u, : len(view)] = [d[0] for d in view]
        return cls(np.asarray(utilities, dtype=float), cyclon_nodes, gradient_nodes, believed, view_size)

    @property
    def nodes(self) -> int:
        return len(self.utilities)


class _Peer(Protocol):
    """What the observer reads of a peer (`nodes.overlay_peer.OverlayPeer`)."""

    cyclon: Cyclon
    gradient: Gradient


def snapshot(peers: Sequence[_Peer]) -> OverlaySnapshot:
    """Read all peers (ids must be 0..n−1 in order) without changing any of them.

    This is the emulator-side observer of the overlay-only study (global knowledge, read
    between rounds); allocation runs never use it on their nodes."""
    return OverlaySnapshot.of([p.gradient.utility for p in peers], [p.cyclon.neighbors() for p in peers],
                              [p.gradient.peek() for p in peers], peers[0].gradient.size if peers else 0)


def total_order(utilities: Sequence[float] | np.ndarray) -> list[int]:
    """Nodes from the bottom to the top of the total order `(utility, node)`."""
    order: list[int] = _order(np.asarray(utilities, dtype=float)).tolist()
    return order


def _order(utilities: np.ndarray) -> np.ndarray:
    return np.lexsort((np.arange(len(utilities)), utilities))


def _ideal_matrix(order: np.ndarray, size: int) -> np.ndarray:
    """Row `u`: node `u`'s ideal view (the `size` nodes just above it in `order`, topped up from
    just below), in no particular order; needs more than `size` nodes."""
    n = len(order)
    position = np.arange(n)[:, None]
    above = np.minimum(size, n - 1 - np.arange(n))[:, None]
    j = np.arange(size)[None, :]
    index = np.where(j < above, position + 1 + j, position - (j - above + 1))
    ideal = np.empty((n, size), dtype=np.int64)
    ideal[order] = order[index]
    return ideal


def ideal_views(utilities: Sequence[float], size: int) -> list[frozenset[int]]:
    """Each node's ideal view: the `size` nodes just above it, topped up from just below."""
    order = _order(np.asarray(utilities, dtype=float))
    n = len(order)
    if n > size:
        return [frozenset(row) for row in _ideal_matrix(order, size).tolist()]
    return [frozenset(int(v) for v in order if v != node) for node in range(n)]


def _edges(views: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct edges u → v of padded views (a node repeated in a row is one edge)."""
    n = len(views)
    rows = np.sort(views, axis=1)
    first = np.ones_like(rows, dtype=bool)
    first[:, 1:] = rows[:, 1:] != rows[:, :-1]
    keep = first & (rows != NO_NODE)
    return np.broadcast_to(np.arange(n)[:, None], rows.shape)[keep], rows[keep]


def _matrix(sources: np.ndarray, targets: np.ndarray, n: int) -> csr_array:
    return csr_array((np.ones(len(sources), dtype=np.int8), (sources, targets)), shape=(n, n))


def _networkx(views: np.ndarray) -> nx.DiGraph:
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_nodes_from(range(len(views)))
    sources, targets = _edges(views)
    graph.add_edges_from(zip(sources.tolist(), targets.tolist()))
    return graph


def cyclon_graph(snap: OverlaySnapshot) -> nx.DiGraph:
    """Directed networkx graph: an edge u → v for every v in u's Cyclon view."""
    return _networkx(snap.cyclon)


def gradient_graph(snap: OverlaySnapshot) -> nx.DiGraph:
    """Directed networkx graph: an edge u → v for every v in u's gradient view."""
    return _networkx(snap.gradient)


def _believers(snap: OverlaySnapshot) -> np.ndarray:
    """Eq. 3.11 for every node: no descriptor in its view is above it, as the descriptors say."""
    me = np.arange(snap.nodes)[:, None]
    utility = snap.utilities[:, None]
    held = snap.gradient != NO_NODE
    above = held & ((snap.believed > utility) | ((snap.believed == utility) & (snap.gradient > me)))
    believers: np.ndarray = ~above.any(axis=1)
    return believers


@dataclass(frozen=True, slots=True)
class OverlayMetrics:
    """The measurements of one snapshot (see the module docstring)."""

    centre: int
    centre_believes: bool
    false_centres: int
    centre_view_exact: bool
    centre_validated: bool
    ideal_view_fraction: float
    cyclon_connected: bool
    cyclon_strongly_connected: bool
    cyclon_self_links: int
    cyclon_duplicates: int
    cyclon_indegree_mean: float
    indegree_std: float
    gradient_indegree_std: float
    gradient_indegree_max: int
    mean_hops_to_centre: float | None
    unreachable_centre: int

    @property
    def centre_correct(self) -> bool:
        """The true centre believes it is the centre and no other node does."""
        return self.centre_believes and self.false_centres == 0

    @property
    def converged(self) -> bool:
        """The convergence condition of the overlay issue: centre correct and its view exact."""
        return self.centre_correct and self.centre_view_exact

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["centre_correct"] = self.centre_correct
        return out


def _std(values: np.ndarray) -> float:
    return float(values.std()) if values.size else 0.0


@dataclass(frozen=True, slots=True)
class CentreStatus:
    """The centre part of the measurements: cheap enough to take every round."""

    centre: int
    centre_believes: bool
    false_centres: int
    centre_view_exact: bool
    centre_validated: bool

    @property
    def recovered(self) -> bool:
        """Centre recognised by itself only, its view the true top-P, validation succeeds."""
        return self.centre_believes and self.false_centres == 0 and self.centre_view_exact and self.centre_validated


def _status(snap: OverlaySnapshot, order: np.ndarray, believers: np.ndarray) -> CentreStatus:
    centre = int(order[-1])
    centre_believes = bool(believers[centre])
    row = snap.gradient[centre]
    held = row != NO_NODE
    view = row[held]
    validated = False
    if centre_believes and view.size:
        believed = snap.believed[centre][held]
        lowest = int(view[np.lexsort((view, believed))[0]])  # the lowest neighbour (validation_set)
        proposed = set(view.tolist()) - {lowest} | {centre}
        partner = snap.gradient[lowest]
        validated = set(partner[partner != NO_NODE].tolist()) == proposed
    return CentreStatus(
        centre=centre,
        centre_believes=centre_believes,
        false_centres=int(believers.sum()) - (1 if centre_believes else 0),
        centre_view_exact=set(view.tolist()) == set(order[-1 - snap.view_size : -1].tolist()),
        centre_validated=validated,
    )


def centre_status(snap: OverlaySnapshot) -> CentreStatus:
    """Who the true centre is and whether the overlay has found it (see the module docstring)."""
    return _status(snap, _order(snap.utilities), _believers(snap))


def ideal_view_fraction(snap: OverlaySnapshot) -> float:
    """The fraction of nodes whose gradient view is their ideal view (a run's samples read it)."""
    return _ideal_fraction(snap, _order(snap.utilities))


def _ideal_fraction(snap: OverlaySnapshot, order: np.ndarray) -> float:
    """The fraction of nodes whose gradient view is their ideal view."""
    n, size = snap.nodes, snap.view_size
    if n == 0:
        return 1.0
    if n <= size or snap.gradient.shape[1] != size:
        ideal = ideal_views(snap.utilities.tolist(), size)
        views = [frozenset(row[row != NO_NODE].tolist()) for row in snap.gradient]
        return sum(1 for node in range(n) if views[node] == ideal[node]) / n
    same = np.sort(snap.gradient, axis=1) == np.sort(_ideal_matrix(order, size), axis=1)
    return int(same.all(axis=1).sum()) / n


def _hops_to_centre(gradient: csr_array, centre: int) -> tuple[float | None, int]:
    """Mean hops from a node to `centre` along view links (over the nodes with a path), and the
    number of nodes without one: a breadth-first search from the centre over reversed links,
    each node's depth then found by pointer doubling over the search tree."""
    n = gradient.shape[0]
    towards = gradient.T.tocsr()  # v → u for every u that holds v: from the centre, the nodes that reach it
    reached, parent = breadth_first_order(towards, centre, directed=True, return_predecessors=True)
    if len(reached) == 1:
        return None, n - 1
    ancestor = np.where(parent < 0, centre, parent)
    depth = (parent >= 0).astype(np.int64)
    while True:
        hop = ancestor[ancestor]
        if np.array_equal(hop, ancestor):
            break
        depth += depth[ancestor]
        ancestor = hop
    total = int(depth[reached].sum())
    return total / (len(reached) - 1), n - len(reached)


def _repeats(views: np.ndarray) -> int:
    """Entries that repeat a node already in their view."""
    if views.shape[1] < 2:
        return 0
    rows = np.sort(views, axis=1)
    return int(((rows[:, 1:] == rows[:, :-1]) & (rows[:, 1:] != NO_NODE)).sum())


def _connected(graph: csr_array, connection: str) -> bool:
    return int(connected_components(graph, directed=True, connection=connection, return_labels=False)) == 1


def measure(snap: OverlaySnapshot) -> OverlayMetrics:
    """Measure one snapshot (of at least one node) against the true utilities."""
    n = snap.nodes
    order = _order(snap.utilities)
    status = _status(snap, order, _believers(snap))
    cyclon_sources, cyclon_targets = _edges(snap.cyclon)
    gradient_sources, gradient_targets = _edges(snap.gradient)
    cyclon_in = np.bincount(cyclon_targets, minlength=n).astype(float)
    gradient_in = np.bincount(gradient_targets, minlength=n).astype(float)
    cyclon = _matrix(cyclon_sources, cyclon_targets, n)
    hops, unreachable = _hops_to_centre(_matrix(gradient_sources, gradient_targets, n), status.centre)
    strong = _connected(cyclon, "strong")
    return OverlayMetrics(
        centre=status.centre,
        centre_believes=status.centre_believes,
        false_centres=status.false_centres,
        centre_view_exact=status.centre_view_exact,
        centre_validated=status.centre_validated,
        ideal_view_fraction=_ideal_fraction(snap, order),
        cyclon_connected=strong or _connected(cyclon, "weak"),
        cyclon_strongly_connected=strong,
        cyclon_self_links=int((cyclon_sources == cyclon_targets).sum()),
        cyclon_duplicates=_repeats(snap.cyclon),
        cyclon_indegree_mean=float(cyclon_in.mean()),
        indegree_std=_std(cyclon_in),
        gradient_indegree_std=_std(gradient_in),
        gradient_indegree_max=int(gradient_in.max()),
        mean_hops_to_centre=hops,
        unreachable_centre=unreachable,
    )
