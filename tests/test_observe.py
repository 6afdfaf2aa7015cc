"""Observers on hand-built snapshots: ideal views, centre checks, graph measures."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from drfemu.overlay.gradient import NEG_INF
from drfemu.overlay.observe import (
    OverlaySnapshot,
    cyclon_graph,
    ideal_views,
    measure,
    total_order,
)


def test_total_order_and_ideal_views() -> None:
    utilities = [0.3, 0.9, 0.1, 0.5, 0.7]  # order bottom→top: 2, 0, 3, 4, 1
    assert total_order(utilities) == [2, 0, 3, 4, 1]
    ideal = ideal_views(utilities, 2)
    assert ideal[2] == {0, 3}  # the two just above
    assert ideal[3] == {4, 1}
    assert ideal[4] == {1, 3}  # one above, topped up with the closest below
    assert ideal[1] == {4, 3}  # the centre: the true top-P below it


def test_ideal_views_with_ties_and_minus_infinity() -> None:
    utilities = [0.0, NEG_INF, 0.0, NEG_INF, -0.5]  # order: 1, 3, 4, 0, 2 (ties by id)
    assert total_order(utilities) == [1, 3, 4, 0, 2]
    assert ideal_views(utilities, 2)[3] == {4, 0}


def converged_snapshot() -> OverlaySnapshot:
    # Four nodes on a line 0 < 1 < 2 < 3, P = 2, each view its ideal one.
    u = (0.0, 0.1, 0.2, 0.3)
    d = [(u[k], k, 1.0) for k in range(4)]
    return OverlaySnapshot.of(
        utilities=u,
        cyclon=((1, 2), (2, 3), (3, 0), (0, 1)),
        gradient=((d[1], d[2]), (d[2], d[3]), (d[3], d[1]), (d[2], d[1])),
        view_size=2,
    )


def test_measure_a_converged_overlay() -> None:
    m = measure(converged_snapshot())
    assert m.centre == 3 and m.centre_believes and m.false_centres == 0
    assert m.centre_view_exact and m.centre_validated and m.converged
    assert m.ideal_view_fraction == 1.0
    assert m.cyclon_connected and m.cyclon_strongly_connected
    assert m.cyclon_self_links == 0 and m.cyclon_duplicates == 0
    assert m.indegree_std == 0.0
    assert m.mean_hops_to_centre == 4 / 3  # 2→3, 1→3, 0→2→3
    assert m.unreachable_centre == 0


def test_measure_sees_false_centres_stale_views_and_a_broken_graph() -> None:
    base = converged_snapshot()
    d = [(float(base.utilities[k]), k, 1.0) for k in range(4)]
    stale = (-1.0, 0, 0.5)  # node 0 as node 1 last heard it: lower than 1
    snap = OverlaySnapshot.of(
        utilities=base.utilities.tolist(),
        cyclon=((1, 1), (0,), (3,), (2,)),  # a duplicate, and two components
        gradient=((d[1], d[2]), (stale,), (d[3], d[1]), (d[2], d[0])),
        view_size=2,
    )
    m = measure(snap)
    assert m.centre_believes and m.false_centres == 1  # node 1 believes it tops node 0 only
    assert not m.centre_view_exact and not m.centre_validated and not m.converged
    assert m.ideal_view_fraction == 0.5  # nodes 0 and 2
    assert not m.cyclon_connected and m.cyclon_duplicates == 1
    assert cyclon_graph(snap).number_of_edges() == 5 - 1  # networkx merges the duplicate edge


# -- the array measures against graphs built with networkx, on arbitrary snapshots ------------
def _reference(snap: OverlaySnapshot) -> dict[str, object]:
    """The measures as networkx computes them (the observers' implementation before issue 51)."""
    import networkx as nx

    n = snap.nodes
    utilities = snap.utilities.tolist()
    cyclon = [[v for v in row if v >= 0] for row in snap.cyclon.tolist()]
    views = [[(b, v) for v, b in zip(nodes, believed) if v >= 0]
             for nodes, believed in zip(snap.gradient.tolist(), snap.believed.tolist())]
    order = sorted(range(n), key=lambda node: (utilities[node], node))
    centre = order[-1]
    believers = [u for u in range(n) if not any((b, v) > (utilities[u], u) for b, v in views[u])]
    believes = centre in believers
    validated = False
    if believes and views[centre]:
        lowest = min(views[centre])[1]
        proposed = {v for _, v in views[centre] if v != lowest} | {centre}
        validated = {v for _, v in views[lowest]} == proposed
    ideal = ideal_views(utilities, snap.view_size)
    graph_c, graph_g = nx.DiGraph(), nx.DiGraph()
    graph_c.add_nodes_from(range(n))
    graph_g.add_nodes_from(range(n))
    graph_c.add_edges_from((u, v) for u in range(n) for v in cyclon[u])
    graph_g.add_edges_from((u, v) for u in range(n) for _, v in views[u])
    c_in = np.array([d for _, d in graph_c.in_degree()], dtype=float)
    g_in = np.array([d for _, d in graph_g.in_degree()], dtype=float)
    hops = nx.single_source_shortest_path_length(graph_g.reverse(copy=False), centre)
    distances = [d for node, d in hops.items() if node != centre]
    return {
        "centre": centre, "centre_believes": believes, "false_centres": len(believers) - believes,
        "centre_view_exact": {v for _, v in views[centre]} == set(order[-1 - snap.view_size:-1]),
        "centre_validated": validated,
        "ideal_view_fraction": sum(1 for u in range(n) if {v for _, v in views[u]} == ideal[u]) / n,
        "cyclon_connected": nx.is_weakly_connected(graph_c),
        "cyclon_strongly_connected": nx.is_strongly_connected(graph_c),
        "cyclon_self_links": nx.number_of_selfloops(graph_c),
        "cyclon_duplicates": sum(len(row) - len(set(row)) for row in cyclon),
        "cyclon_indegree_mean": float(c_in.mean()), "indegree_std": float(c_in.std()),
        "gradient_indegree_std": float(g_in.std()), "gradient_indegree_max": int(g_in.max()),
        "mean_hops_to_centre": sum(distances) / len(distances) if distances else None,
        "unreachable_centre": n - len(hops),
    }


@st.composite
def snapshots(draw: st.DrawFn) -> OverlaySnapshot:
    n = draw(st.integers(1, 12))
    size = draw(st.integers(1, 4))
    utility = st.sampled_from([NEG_INF, -1.0, -0.5, 0.0, 0.25])
    utilities = draw(st.lists(utility, min_size=n, max_size=n))
    node = st.integers(0, n - 1)
    cyclon = draw(st.lists(st.lists(node, max_size=4), min_size=n, max_size=n))  # self-links and repeats allowed
    gradient = [[(draw(utility), v, 1.0) for v in draw(st.lists(node, max_size=size, unique=True))]
                for _ in range(n)]
    return OverlaySnapshot.of(utilities, cyclon, gradient, size)


@settings(max_examples=300, deadline=None)
@given(snapshots())
def test_the_array_measures_are_the_graph_measures(snap: OverlaySnapshot) -> None:
    measured = measure(snap).to_dict()
    del measured["centre_correct"]
    assert measured == _reference(snap)
