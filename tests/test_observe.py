"""Observers on hand-built snapshots: ideal views, centre checks, graph measures."""

from __future__ import annotations

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
    return OverlaySnapshot(
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
    d = [(base.utilities[k], k, 1.0) for k in range(4)]
    stale = (-1.0, 0, 0.5)  # node 0 as node 1 last heard it: lower than 1
    snap = OverlaySnapshot(
        utilities=base.utilities,
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
