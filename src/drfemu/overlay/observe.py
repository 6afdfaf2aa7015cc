"""Observers: snapshot the overlays as networkx graphs and measure them (SPEC §4.1).

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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

import networkx as nx
import numpy as np

from drfemu.overlay.cyclon import Cyclon
from drfemu.overlay.gradient import Gradient, acknowledges, is_above, validation_set
from drfemu.overlay.messages import Descriptor

__all__ = [
    "CentreStatus",
    "OverlayMetrics",
    "OverlaySnapshot",
    "centre_status",
    "cyclon_graph",
    "gradient_graph",
    "ideal_views",
    "measure",
    "snapshot",
    "total_order",
]


@dataclass(frozen=True, slots=True)
class OverlaySnapshot:
    """Every node's true utility, Cyclon neighbours and gradient view at one instant."""

    utilities: tuple[float, ...]
    cyclon: tuple[tuple[int, ...], ...]
    gradient: tuple[tuple[Descriptor, ...], ...]
    view_size: int


class _Peer(Protocol):
    """What the observer reads of a peer (`nodes.overlay_peer.OverlayPeer`)."""

    cyclon: Cyclon
    gradient: Gradient


def snapshot(peers: Sequence[_Peer]) -> OverlaySnapshot:
    """Read all peers (ids must be 0..n−1 in order) without changing any of them.

    This is the emulator-side observer of the overlay-only study (global knowledge, read
    between rounds); allocation runs never use it on their nodes."""
    return OverlaySnapshot(
        utilities=tuple(p.gradient.utility for p in peers),
        cyclon=tuple(tuple(p.cyclon.neighbors()) for p in peers),
        gradient=tuple(tuple(p.gradient.peek()) for p in peers),
        view_size=peers[0].gradient.size if peers else 0,
    )


def total_order(utilities: Sequence[float]) -> list[int]:
    """Nodes from the bottom to the top of the total order `(utility, node)`."""
    return sorted(range(len(utilities)), key=lambda node: (utilities[node], node))


def ideal_views(utilities: Sequence[float], size: int) -> list[frozenset[int]]:
    """Each node's ideal view: the `size` nodes just above it, topped up from just below."""
    order = total_order(utilities)
    views: list[frozenset[int]] = [frozenset()] * len(order)
    for position, node in enumerate(order):
        above = order[position + 1 : position + 1 + size]
        missing = size - len(above)
        below = order[max(0, position - missing) : position] if missing > 0 else []
        views[node] = frozenset(above) | frozenset(below)
    return views


def cyclon_graph(snap: OverlaySnapshot) -> nx.DiGraph:
    """Directed graph: an edge u → v for every v in u's Cyclon view."""
    graph = nx.DiGraph()
    graph.add_nodes_from(range(len(snap.cyclon)))
    graph.add_edges_from((u, v) for u, view in enumerate(snap.cyclon) for v in view)
    return graph


def gradient_graph(snap: OverlaySnapshot) -> nx.DiGraph:
    """Directed graph: an edge u → v for every v in u's gradient view."""
    graph = nx.DiGraph()
    graph.add_nodes_from(range(len(snap.gradient)))
    graph.add_edges_from((u, d[1]) for u, view in enumerate(snap.gradient) for d in view)
    return graph


def believes_centre(node: int, utility: float, view: Sequence[Descriptor]) -> bool:
    """Eq. 3.11 on a snapshot: no descriptor in the view is above the node."""
    return not any(is_above(d[0], d[1], utility, node) for d in view)


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


def centre_status(snap: OverlaySnapshot) -> CentreStatus:
    """Who the true centre is and whether the overlay has found it (see the module docstring)."""
    utilities = snap.utilities
    order = total_order(utilities)
    centre = order[-1]
    believers = [node for node, view in enumerate(snap.gradient) if believes_centre(node, utilities[node], view)]
    centre_believes = centre in believers
    centre_view = snap.gradient[centre]
    validated = False
    if centre_believes and centre_view:
        partner, proposed = validation_set(centre, centre_view)
        validated = acknowledges(snap.gradient[partner], proposed)
    return CentreStatus(
        centre=centre,
        centre_believes=centre_believes,
        false_centres=len(believers) - (1 if centre_believes else 0),
        centre_view_exact=frozenset(d[1] for d in centre_view) == frozenset(order[-1 - snap.view_size : -1]),
        centre_validated=validated,
    )


def measure(snap: OverlaySnapshot) -> OverlayMetrics:
    """Measure one snapshot against the true utilities."""
    n = len(snap.utilities)
    status = centre_status(snap)
    ideal = ideal_views(snap.utilities, snap.view_size)
    cyclon = cyclon_graph(snap)
    gradient = gradient_graph(snap)
    cyclon_in = np.array([d for _, d in cyclon.in_degree()], dtype=float)
    gradient_in = np.array([d for _, d in gradient.in_degree()], dtype=float)
    hops = nx.single_source_shortest_path_length(gradient.reverse(copy=False), status.centre)
    distances = [d for node, d in hops.items() if node != status.centre]
    return OverlayMetrics(
        centre=status.centre,
        centre_believes=status.centre_believes,
        false_centres=status.false_centres,
        centre_view_exact=status.centre_view_exact,
        centre_validated=status.centre_validated,
        ideal_view_fraction=sum(1 for node, view in enumerate(snap.gradient)
                                if frozenset(d[1] for d in view) == ideal[node]) / n if n else 1.0,
        cyclon_connected=n > 0 and nx.is_weakly_connected(cyclon),
        cyclon_strongly_connected=n > 0 and nx.is_strongly_connected(cyclon),
        cyclon_self_links=nx.number_of_selfloops(cyclon),
        cyclon_duplicates=sum(len(view) - len(set(view)) for view in snap.cyclon),
        cyclon_indegree_mean=float(cyclon_in.mean()) if n else 0.0,
        indegree_std=_std(cyclon_in),
        gradient_indegree_std=_std(gradient_in),
        gradient_indegree_max=int(gradient_in.max()) if n else 0,
        mean_hops_to_centre=sum(distances) / len(distances) if distances else None,
        unreachable_centre=n - len(hops),
    )
