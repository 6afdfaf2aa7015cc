"""The distributed protocols' server roles, driven by hand: no event loop, no network."""

from __future__ import annotations

import random
from typing import Any

import pytest

from nodes.messages import Accept, Decline, Proposal, TaskRequest, TaskStarted, WalkFailed, WalkTask
from nodes.server import AllocatingServer, HomeServer, PlacementStats
from overlay.gradient import NEG_INF
from protocols.ddrf import DdrfServer, MinShareReply, MinShareRequest
from protocols.dgdrf import CentreAck, CentreCheck, DgdrfServer
from protocols.fairness import gini
from protocols.pdgdrf import PdgdrfServer, lowers_gini
from protocols.probe import LoadReply, LoadRequest, ProbeServer, ProbeTask
from protocols.resources import CapacityViolation


class Recorder:
    """Stands in for the harness: records allocations."""

    def __init__(self) -> None:
        self.allocations: list[tuple[int, int, int]] = []

    def on_allocation(self, now: float, server: int, user: int, task: int, demand: Any) -> None:
        self.allocations.append((server, user, task))


def overlay_kwargs(view: int = 2, ttl: int = 5) -> dict[str, Any]:
    return {"view_size": view, "cyclon_size": 4, "shuffle_length": 2, "overlay_rng": random.Random(1),
            "choices": random.Random(2), "walk_ttl": ttl}


def home(cls: type = HomeServer, sid: int = 0, capacity: tuple[float, ...] = (4.0, 4.0),
         homed: dict[int, float] | None = None, **kw: Any) -> Any:
    extra = {k: kw.pop(k) for k in ("mark_saturated", "saturation_retry") if k in kw}
    return cls(sid, capacity, Recorder(), PlacementStats(), homed if homed is not None else {100: 0.1},
               **extra, **overlay_kwargs(**kw))


def request(user: int, task: int, share: float, demand: tuple[float, ...] = (1.0, 1.0)) -> TaskRequest:
    return TaskRequest(user, task, demand, share)


# -- the allocating server: reservations, the handshake, walks ----------------------------------

def test_a_proposal_reserves_and_a_decline_gives_it_back() -> None:
    s = AllocatingServer(0, (2.0, 2.0), Recorder(), PlacementStats(), **overlay_kwargs())
    s.propose(100, 0, (2.0, 1.0))
    assert s.take_outbox() == [(100, Proposal(0, 0))] and s.free == [0.0, 1.0]
    with pytest.raises(CapacityViolation):
        s.propose(101, 0, (1.0, 1.0))  # the reservation counts: it would oversubscribe the CPU
    s.receive(Decline(100, 0), 0.0)
    assert s.free == [2.0, 2.0]


def test_an_accept_starts_the_task_and_tells_the_user() -> None:
    s = AllocatingServer(3, (2.0, 2.0), Recorder(), PlacementStats(), **overlay_kwargs())
    s.propose(100, 7, (1.0, 1.0))
    s.take_outbox()
    s.receive(Accept(100, 7), 1.5)
    assert s.monitor.allocations == [(3, 100, 7)]  # type: ignore[attr-defined]
    assert s.take_outbox() == [(100, TaskStarted(7, 3))] and s.free == [1.0, 1.0]


def test_a_walk_without_room_goes_to_a_random_unvisited_server_it_has_heard_of() -> None:
    s = AllocatingServer(0, (1.0, 1.0), Recorder(), PlacementStats(), **overlay_kwargs())
    s.cyclon.bootstrap([(0.0, 1, 0.0), (0.0, 2, 0.0), (0.0, 7, 0.0)])
    s.receive(WalkTask(100, 4, (2.0, 1.0), 9, 3, (9, 1, 0), (5, 7)), 0.0)
    [(dst, walk)] = s.take_outbox()
    # The frontier gains the Cyclon neighbours not yet visited or known (2), loses the next hop.
    assert dst in (5, 7, 2) and walk.hops == 4 and walk.visited == (9, 1, 0, dst)
    assert sorted(walk.frontier + (dst,)) == [2, 5, 7]


def test_a_walk_visits_every_server_once_and_then_reports_no_room() -> None:
    s = AllocatingServer(0, (1.0, 1.0), Recorder(), PlacementStats(), **overlay_kwargs(ttl=50))
    s.cyclon.bootstrap([(0.0, 1, 0.0)])
    s.receive(WalkTask(100, 4, (2.0, 1.0), 9, 3, (9, 1, 0), ()), 0.0)
    assert s.take_outbox() == [(9, WalkFailed(100, 4))]  # nothing left to visit


def test_a_walk_with_room_proposes_and_one_out_of_hops_reports_to_the_home() -> None:
    s = AllocatingServer(0, (4.0, 4.0), Recorder(), PlacementStats(), **overlay_kwargs(ttl=5))
    s.cyclon.bootstrap([(0.0, 1, 0.0)])
    s.receive(WalkTask(100, 4, (2.0, 1.0), 9, 5, (9,), ()), 0.0)
    assert s.take_outbox() == [(100, Proposal(4, 0))]
    s.receive(WalkTask(100, 5, (3.0, 1.0), 9, 5, (9,), (3,)), 0.0)
    assert s.take_outbox() == [(9, WalkFailed(100, 5))] and s.stats.walks_failed == 1


# -- the home server: utility, saturation marks and retries ------------------------------------

def test_home_utility_is_minus_the_lowest_share_and_minus_infinity_without_users() -> None:
    assert home(homed={}).gradient.utility == NEG_INF
    s = home(homed={100: 0.1, 101: 0.2})
    assert s.gradient.utility == 0.0  # users known from the start, at G = 0 (eq. 4.2)
    s.receive(request(100, 3, 0.3), 0.0)
    s.receive(request(101, 1, 0.2), 0.0)
    assert s.gradient.utility == -0.2 and s.lowest() == (101, s.users[101])


def test_a_failed_walk_marks_the_user_saturated_and_retries_with_doubling_waits() -> None:
    s = home(homed={100: 0.1, 101: 0.2}, capacity=(1.0, 1.0), saturation_retry=5.0)
    s.cyclon.bootstrap([(0.0, 1, 0.0)])
    s.receive(request(100, 0, 0.1, demand=(2.0, 2.0)), 0.0)
    s.receive(request(101, 0, 0.4), 0.0)
    s.allocate(100, s.users[100])
    assert s.users[100].busy and s.take_outbox()[0][1].__class__ is WalkTask
    s.receive(WalkFailed(100, 0), 1.0)
    assert s.users[100].saturated and s.gradient.utility == -0.4  # +∞ for the marked user
    s.retry_saturated(5.9)
    assert s.take_outbox() == []
    s.retry_saturated(6.0)
    assert s.stats.retries == 1 and s.users[100].busy and s.take_outbox()
    s.receive(WalkFailed(100, 0), 7.0)
    assert s.users[100].retry_at == 17.0  # the wait doubled
    s.receive(request(100, 1, 0.2), 8.0)  # a retry elsewhere placed it: the mark ends
    assert not s.users[100].saturated and s.gradient.utility == -0.2


def test_without_marking_a_failed_walk_leaves_the_user_competing() -> None:
    s = home(homed={100: 0.1}, capacity=(1.0, 1.0), mark_saturated=False)
    s.cyclon.bootstrap([(0.0, 1, 0.0)])
    s.receive(request(100, 0, 0.1, demand=(2.0, 2.0)), 0.0)
    s.allocate(100, s.users[100])
    s.receive(WalkFailed(100, 0), 1.0)
    assert not s.users[100].saturated and s.users[100].idle() and s.gradient.utility == -0.1


# -- DDRF (Algorithm 5) ------------------------------------------------------------------------

def test_ddrf_allocates_only_at_or_below_every_reported_minimum_then_polls() -> None:
    s = home(DdrfServer, homed={100: 0.1, 101: 0.1})
    s.set_neighbours([5, 6])
    s.receive(request(100, 0, 0.3), 0.0)
    s.receive(request(101, 0, 0.5), 0.0)
    s.receive(MinShareReply(5, 0.2), 0.0)
    s.on_tick(0.1)
    assert s.take_outbox() == [(5, MinShareRequest(0, 0.3)), (6, MinShareRequest(0, 0.3))]
    s.receive(MinShareReply(5, 0.3), 0.1)  # equal is enough (Algorithm 5 tests ≤)
    s.on_tick(0.2)
    assert s.take_outbox()[0] == (100, Proposal(0, 0))


def test_ddrf_records_the_requesters_share_and_answers_with_its_own() -> None:
    s = home(DdrfServer, homed={100: 0.1})
    s.set_neighbours([5])
    s.receive(request(100, 0, 0.4), 0.0)
    s.receive(MinShareRequest(7, 0.1), 0.0)  # 7 is not a neighbour: recorded all the same
    assert s.take_outbox() == [(7, MinShareReply(0, 0.4))]
    s.on_tick(0.1)
    assert all(not isinstance(m, Proposal) for _, m in s.take_outbox())  # 0.4 > 0.1


def test_ddrf_skips_a_busy_lowest_user_for_the_next_one() -> None:
    s = home(DdrfServer, homed={100: 0.1, 101: 0.1}, capacity=(8.0, 8.0))
    s.set_neighbours([])
    s.receive(request(100, 0, 0.1), 0.0)
    s.receive(request(101, 0, 0.2), 0.0)
    s.on_tick(0.1)
    s.on_tick(0.2)
    proposals = [(dst, m) for dst, m in s.take_outbox() if isinstance(m, Proposal)]
    assert proposals == [(100, Proposal(0, 0)), (101, Proposal(0, 0))]


# -- DGDRF: centre validation (thesis §3.3.1) ---------------------------------------------------

def dgdrf_with_view(view: list[tuple[float, int, float]], sid: int = 0) -> DgdrfServer:
    s = home(DgdrfServer, sid=sid, view=len(view))
    s.receive(request(100, 0, 0.1), 0.0)
    s.gradient.offer(view)
    return s


def test_dgdrf_centre_asks_its_lowest_neighbour_and_allocates_on_the_ack() -> None:
    s = dgdrf_with_view([(-0.2, 3, 0.0), (-0.5, 4, 0.0)])
    s.on_tick(0.1)
    assert s.take_outbox() == [(4, CentreCheck(0, 1, (0, 3)))]
    s.receive(CentreAck(4, 1), 0.102)
    assert s.take_outbox() == [(100, Proposal(0, 0))]


def test_dgdrf_a_server_that_sees_a_higher_neighbour_does_not_validate() -> None:
    s = dgdrf_with_view([(-0.05, 3, 0.0), (-0.5, 4, 0.0)])
    s.on_tick(0.1)
    assert s.take_outbox() == []


def test_dgdrf_ignores_an_ack_of_an_earlier_check() -> None:
    s = dgdrf_with_view([(-0.2, 3, 0.0), (-0.5, 4, 0.0)])
    s.on_tick(0.1)
    s.on_tick(0.2)
    s.take_outbox()
    s.receive(CentreAck(4, 1), 0.202)
    assert s.take_outbox() == []
    s.receive(CentreAck(4, 2), 0.202)
    assert s.take_outbox() == [(100, Proposal(0, 0))]


def test_dgdrf_the_lowest_neighbour_acks_only_a_set_equal_to_its_view() -> None:
    p = dgdrf_with_view([(-0.1, 0, 0.0), (-0.2, 3, 0.0)], sid=4)
    p.receive(CentreCheck(0, 9, (0, 3)), 0.0)
    assert p.take_outbox() == [(0, CentreAck(4, 9))]
    p.receive(CentreCheck(0, 10, (0, 5)), 0.0)
    assert p.take_outbox() == []


# -- PDGDRF (Algorithm 6, eq. 4.7) --------------------------------------------------------------

def test_lowers_gini_examples() -> None:
    assert not lowers_gini(0.0, 0.1, [0.0, 0.0])  # all equal: any allocation raises the Gini
    assert lowers_gini(0.2, 0.05, [-0.1, -0.4])  # the middle value rising lowers it (mean grows)
    assert not lowers_gini(0.4, 0.05, [-0.1, -0.2])  # the richest growing raises it
    assert lowers_gini(0.1, 0.05, [NEG_INF, -0.3])  # −∞ neighbours (no users) are left out
    assert gini([1, 2, 3, 4, 5]) == pytest.approx(0.2667, abs=1e-4)


def test_pdgdrf_centre_allocates_and_others_follow_the_gini_rule() -> None:
    centre = home(PdgdrfServer, homed={100: 0.05})
    centre.receive(request(100, 0, 0.1), 0.0)
    centre.gradient.offer([(-0.2, 3, 0.0), (-0.4, 4, 0.0)])
    centre.on_tick(0.1)
    assert centre.take_outbox() == [(100, Proposal(0, 0))] and centre.by_centre == 1
    middle = home(PdgdrfServer, homed={100: 0.05})
    middle.receive(request(100, 0, 0.2), 0.0)
    middle.gradient.offer([(-0.1, 3, 0.0), (-0.4, 4, 0.0)])
    middle.on_tick(0.1)
    assert middle.take_outbox() == [(100, Proposal(0, 0))] and middle.by_gini == 1
    low = home(PdgdrfServer, homed={100: 0.05})
    low.receive(request(100, 0, 0.4), 0.0)
    low.gradient.offer([(-0.1, 3, 0.0), (-0.2, 4, 0.0)])
    low.on_tick(0.1)
    assert low.take_outbox() == []


# -- probes (Algorithm 4) ----------------------------------------------------------------------

def probe(capacity: tuple[float, ...] = (4.0, 4.0)) -> ProbeServer:
    s = ProbeServer(0, capacity, Recorder(), PlacementStats(), probe_d=2, **overlay_kwargs())
    s.set_neighbours([1, 2, 3])
    return s


def test_probe_forwards_to_the_two_least_loaded_neighbours() -> None:
    s = probe()
    s.receive(LoadReply(1, 0.9), 0.0)
    s.receive(LoadReply(2, 0.1), 0.0)
    s.receive(LoadReply(3, 0.5), 0.0)
    s.receive(request(100, 0, 0.3), 0.0)
    assert s.take_outbox() == [(2, ProbeTask(100, 0, (1.0, 1.0), 0.3)), (3, ProbeTask(100, 0, (1.0, 1.0), 0.3))]


def test_probe_tick_polls_and_proposes_the_lowest_share_task_that_fits() -> None:
    s = probe(capacity=(2.0, 2.0))
    s.receive(ProbeTask(100, 0, (3.0, 1.0), 0.1), 0.0)  # lowest share, but does not fit
    s.receive(ProbeTask(101, 0, (1.0, 1.0), 0.3), 0.0)
    s.receive(ProbeTask(102, 0, (1.0, 1.0), 0.2), 0.0)
    s.on_tick(0.1)
    out = s.take_outbox()
    assert out[:3] == [(n, LoadRequest(0)) for n in (1, 2, 3)]
    assert out[3:] == [(102, Proposal(0, 0))]
    assert s.load() == pytest.approx(0.5)
    s.receive(LoadRequest(2), 0.1)
    assert s.take_outbox() == [(2, LoadReply(0, 0.5))]
