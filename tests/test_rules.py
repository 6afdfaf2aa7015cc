"""Central allocation rules as pure functions (SPEC §4)."""

from __future__ import annotations

from drfemu.protocols.central import PendingTask
from drfemu.protocols.cluster import ClusterView
from drfemu.protocols.drf import Drf, DrfBestFit
from drfemu.protocols.fifo import Fifo
from drfemu.protocols.registry import PROTOCOLS, UnknownProtocol, get_protocol


def task(user: int, share: float, arrival: int, demand: tuple[float, ...] = (1, 1)) -> PendingTask:
    return PendingTask(user, 0, demand, share, arrival)


def test_drf_takes_lowest_share_then_lowest_user() -> None:
    view = ClusterView([(10, 10)])
    pending = [task(5, 0.3, 1), task(3, 0.2, 2), task(2, 0.2, 3)]
    chosen, server = Drf().choose(pending, view)  # type: ignore[misc]
    assert (chosen.user, server) == (2, 0)


def test_drf_skips_a_user_that_fits_nowhere() -> None:
    view = ClusterView([(2, 2), (3, 3)])
    pending = [task(1, 0.0, 1, (4, 4)), task(2, 0.5, 2, (3, 1))]
    chosen, server = Drf().choose(pending, view)  # type: ignore[misc]
    assert (chosen.user, server) == (2, 1)
    assert Drf().choose([task(1, 0.0, 1, (4, 4))], view) is None


def test_best_fit_places_by_profile() -> None:
    view = ClusterView([(12, 2), (2, 12)])
    chosen, server = DrfBestFit().choose([task(1, 0.0, 1, (0.2, 1))], view)  # type: ignore[misc]
    assert server == 1


def test_fifo_takes_earliest_arrival_that_fits() -> None:
    view = ClusterView([(2, 2)])
    pending = [task(1, 0.0, 9), task(2, 0.9, 4, (3, 3)), task(3, 0.5, 6)]
    chosen, _ = Fifo().choose(pending, view)  # type: ignore[misc]
    assert chosen.user == 3


def test_registry() -> None:
    assert {"drf", "drf-bestfit", "fifo"} <= set(PROTOCOLS)
    assert get_protocol("drf").gateway == "central"
    try:
        get_protocol("sparrowish")
    except UnknownProtocol as error:
        assert "drf" in str(error)
    else:
        raise AssertionError("unknown protocol accepted")
