"""The distributed protocols' server nodes and rules, driven by hand: no event loop, no network."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from drfemu.kernel.compiled import SKIP_REASON, compiled_module
from drfemu.kernel.events import NeighborsFixed, TaskAllocated
from drfemu.kernel.fairness import gini
from drfemu.kernel.messages import (
    Accept,
    Decline,
    PeerDown,
    Proposal,
    TaskRequest,
    TaskStarted,
    UserShare,
    WalkFailed,
    WalkTask,
)
from drfemu.kernel.resources import CapacityViolation
from drfemu.kernel.streams import NodeStreams
from drfemu.nodes.actor import WakeUp
from drfemu.nodes.server import ServerConfig, ServerNode, server_class
from drfemu.overlay.gradient import NEG_INF
from drfemu.protocols.ddrf import DdrfGradientRule, DdrfRule, MinShareReply, MinShareRequest
from drfemu.protocols.dgdrf import CentreAck, CentreCheck, DgdrfRule
from drfemu.protocols.homes import HomeUsers
from drfemu.protocols.pdgdrf import PdgdrfRule, gini_test, gini_test_implementation, lowers_gini_python
from drfemu.protocols.probe import STUCK_TICKS, LoadReply, LoadRequest, ProbeRule, ProbeTask, cpu_load
from drfemu.protocols.rule import ServerRule


def node(rule: ServerRule | None = None, sid: int = 0, capacity: tuple[float, ...] = (4.0, 4.0),
         homed: dict[int, float] | None = None, view: int = 2, ttl: int = 5, neighbors: list[int] | None = None,
         **kw: Any) -> Any:
    rule = rule if rule is not None else DdrfRule()
    config = ServerConfig(view_size=view, cyclon_view=4, shuffle_length=2, walk_ttl=ttl, tick=0.1, **kw)
    s = server_class(type(rule))(sid, capacity, rule, homed if homed is not None else {100: 0.1}, NodeStreams(1, sid),
                                 config)
    s.start(neighbors or [])
    return s


@pytest.mark.parametrize("gradient_period", [None, 0.1])
def test_only_a_server_whose_gradient_runs_is_offered_cyclons_samples(gradient_period: float | None) -> None:
    """A protocol on fixed random neighbours never reads its servers' gradients: offered every
    Cyclon sample, unread, they were kept for the whole run (5.5 GB on the probe's trace hour)."""
    from drfemu.overlay.messages import CyclonReply, CyclonShuffle
    s = node(ProbeRule() if gradient_period is None else DdrfRule(), gradient_period=gradient_period)
    assert s.feeds_gradient is (gradient_period is not None)
    s.receive(CyclonShuffle(((0.0, 5, 0.0), (0.0, 6, 0.0))), 0.0)
    s.receive(CyclonReply(7, ((0.0, 7, 0.0),)), 0.0)
    assert [d[1] for d in s.gradient._pending] == ([] if gradient_period is None else [5, 6, 7])


def request(user: int, task: int, share: float, demand: tuple[float, ...] = (1.0, 1.0)) -> TaskRequest:
    return TaskRequest(user, task, demand, share)


# -- the allocating server: reservations, the handshake, walks ----------------------------------

def test_a_proposal_reserves_and_a_decline_gives_it_back() -> None:
    s = node(capacity=(2.0, 2.0))
    s.propose(100, 0, (2.0, 1.0))
    assert s.take_outbox() == [(100, Proposal(0, 0))] and s.free == [0.0, 1.0]
    with pytest.raises(CapacityViolation):
        s.propose(101, 0, (1.0, 1.0))  # the reservation counts: it would oversubscribe the CPU
    s.receive(Decline(100, 0), 0.0)
    assert s.free == [2.0, 2.0]


def test_an_accept_starts_the_task_and_tells_the_user() -> None:
    s = node(sid=3, capacity=(2.0, 2.0))
    s.propose(100, 7, (1.0, 1.0))
    s.take_outbox()
    s.receive(Accept(100, 7), 1.5)
    assert s.take_port() == [TaskAllocated(1.5, 3, 100, 7, (1.0, 1.0))]  # reported, to whoever listens
    assert s.take_outbox() == [(100, TaskStarted(7, 3))] and s.free == [1.0, 1.0]


def test_a_walk_without_room_goes_to_a_random_unvisited_server_it_has_heard_of() -> None:
    s = node(capacity=(1.0, 1.0))
    s.cyclon.bootstrap([(0.0, 1, 0.0), (0.0, 2, 0.0), (0.0, 7, 0.0)])
    s.receive(WalkTask(100, 4, (2.0, 1.0), 9, 3, (9, 1, 0), (5, 7)), 0.0)
    [(dst, walk)] = s.take_outbox()
    # The frontier gains the Cyclon neighbours not yet visited or known (2), loses the next hop.
    assert dst in (5, 7, 2) and walk.hops == 4 and walk.visited == (9, 1, 0, dst)
    assert sorted(walk.frontier + (dst,)) == [2, 5, 7]


def test_a_walk_visits_every_server_once_and_then_reports_no_room() -> None:
    s = node(capacity=(1.0, 1.0), ttl=50)
    s.cyclon.bootstrap([(0.0, 1, 0.0)])
    s.receive(WalkTask(100, 4, (2.0, 1.0), 9, 3, (9, 1, 0), ()), 0.0)
    assert s.take_outbox() == [(9, WalkFailed(100, 4))]  # nothing left to visit


def test_a_walk_with_room_proposes_and_one_out_of_hops_reports_to_the_home() -> None:
    s = node(capacity=(4.0, 4.0), ttl=5)
    s.cyclon.bootstrap([(0.0, 1, 0.0)])
    s.receive(WalkTask(100, 4, (2.0, 1.0), 9, 5, (9,), ()), 0.0)
    assert s.take_outbox() == [(100, Proposal(4, 0))]
    s.receive(WalkTask(100, 5, (3.0, 1.0), 9, 5, (9,), (3,)), 0.0)
    assert s.take_outbox() == [(9, WalkFailed(100, 5))] and s.placement["walks_failed"] == 1


# -- the home server: utility, saturation marks and retries ------------------------------------

def test_home_utility_is_minus_the_lowest_share_and_minus_infinity_without_users() -> None:
    assert node(homed={}).gradient.utility == NEG_INF
    s = node(homed={100: 0.1, 101: 0.2})
    assert s.gradient.utility == 0.0  # users known from the start, at G = 0 (eq. 4.2)
    s.receive(request(100, 3, 0.3), 0.0)
    s.receive(request(101, 1, 0.2), 0.0)
    assert s.gradient.utility == -0.2 and s.homes.lowest() == (101, s.homes.records[101])


def test_a_failed_walk_marks_the_user_saturated_and_retries_with_doubling_waits() -> None:
    s = node(homed={100: 0.1, 101: 0.2}, capacity=(1.0, 1.0), saturation_retry=5.0)
    users = s.homes.records
    s.cyclon.bootstrap([(0.0, 1, 0.0)])
    s.receive(request(100, 0, 0.1, demand=(2.0, 2.0)), 0.0)
    s.receive(request(101, 0, 0.4), 0.0)
    s.allocate(100, users[100])
    assert users[100].busy and s.take_outbox()[0][1].__class__ is WalkTask
    s.receive(WalkFailed(100, 0), 1.0)
    assert users[100].saturated and s.gradient.utility == -0.4  # +∞ for the marked user
    [wake] = s.take_port()  # the node asks to be woken for the retry
    assert isinstance(wake, WakeUp) and wake.at == 6.0
    s.on_timer(wake.key, 6.0)
    assert s.placement["retries"] == 1 and users[100].busy and s.take_outbox()
    s.receive(WalkFailed(100, 0), 7.0)
    [wake] = s.take_port()
    assert wake.at == 17.0  # the wait doubled
    s.receive(request(100, 1, 0.2), 8.0)  # a retry elsewhere placed it: the mark ends
    assert not users[100].saturated and s.gradient.utility == -0.2
    s.on_timer(wake.key, 17.0)  # a wake-up no longer wanted is ignored
    assert s.take_outbox() == [] and s.placement["retries"] == 1


def test_without_marking_a_failed_walk_leaves_the_user_competing() -> None:
    s = node(homed={100: 0.1}, capacity=(1.0, 1.0), mark_saturated=False)
    s.cyclon.bootstrap([(0.0, 1, 0.0)])
    s.receive(request(100, 0, 0.1, demand=(2.0, 2.0)), 0.0)
    s.allocate(100, s.homes.records[100])
    s.receive(WalkFailed(100, 0), 1.0)
    record = s.homes.records[100]
    assert not record.saturated and record.idle() and s.gradient.utility == -0.1 and s.take_port() == []


# -- DDRF (Algorithm 5) ------------------------------------------------------------------------

def test_ddrf_allocates_only_at_or_below_every_reported_minimum_then_polls() -> None:
    s = node(DdrfRule(), homed={100: 0.1, 101: 0.1}, neighbors=[5, 6])
    s.receive(request(100, 0, 0.3), 0.0)
    s.receive(request(101, 0, 0.5), 0.0)
    s.receive(MinShareReply(5, 0.2), 0.0)
    s.on_tick(0.1)
    assert s.take_outbox() == [(5, MinShareRequest(0, 0.3)), (6, MinShareRequest(0, 0.3))]
    s.receive(MinShareReply(5, 0.3), 0.1)  # equal is enough (Algorithm 5 tests ≤)
    s.on_tick(0.2)
    assert s.take_outbox()[0] == (100, Proposal(0, 0))


def test_ddrf_records_the_requesters_share_and_answers_with_its_own() -> None:
    s = node(DdrfRule(), homed={100: 0.1}, neighbors=[5])
    s.receive(request(100, 0, 0.4), 0.0)
    s.receive(MinShareRequest(7, 0.1), 0.0)  # 7 is not a neighbour: recorded all the same
    assert s.take_outbox() == [(7, MinShareReply(0, 0.4))]
    s.on_tick(0.1)
    assert all(not isinstance(m, Proposal) for _, m in s.take_outbox())  # 0.4 > 0.1


def test_ddrf_skips_a_busy_lowest_user_for_the_next_one() -> None:
    s = node(DdrfRule(), homed={100: 0.1, 101: 0.1}, capacity=(8.0, 8.0))
    s.receive(request(100, 0, 0.1), 0.0)
    s.receive(request(101, 0, 0.2), 0.0)
    s.on_tick(0.1)
    s.on_tick(0.2)
    proposals = [(dst, m) for dst, m in s.take_outbox() if isinstance(m, Proposal)]
    assert proposals == [(100, Proposal(0, 0)), (101, Proposal(0, 0))]


# -- DGDRF: centre validation (thesis §3.3.1) ---------------------------------------------------

def dgdrf_with_view(view: list[tuple[float, int, float]], sid: int = 0) -> Any:
    s = node(DgdrfRule(), sid=sid, view=len(view))
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

GINI_TESTS = [pytest.param(lowers_gini_python, id="python"), pytest.param(gini_test(), id=gini_test_implementation())]
"""The reference and the test runs use (compiled from `src/native/_gini.c` where it was built)."""


def test_pdgdrf_uses_the_c_gini_test_where_it_was_built() -> None:
    """The README install compiles `src/native/_gini.c`; without it PDGDRF is correct but slower."""
    if compiled_module("drfemu.protocols._gini") is None:
        pytest.skip(f"the optional C extension is not in use ({SKIP_REASON})")
    assert gini_test_implementation() == "C" and PdgdrfRule().lowers_gini is gini_test()


@pytest.mark.parametrize("lowers_gini", GINI_TESTS)
def test_lowers_gini_examples(lowers_gini: Any) -> None:
    assert not lowers_gini(0.0, 0.1, [0.0, 0.0])  # all equal: any allocation raises the Gini
    assert lowers_gini(0.2, 0.05, [-0.1, -0.4])  # the middle value rising lowers it (mean grows)
    assert not lowers_gini(0.4, 0.05, [-0.1, -0.2])  # the richest growing raises it
    assert lowers_gini(0.1, 0.05, [NEG_INF, -0.3])  # −∞ neighbours (no users) are left out
    assert gini([1, 2, 3, 4, 5]) == pytest.approx(0.2667, abs=1e-4)


shares = st.sampled_from([0.0, 0.05, 0.1, 0.125, 0.2, 1 / 3, 0.5]) | st.floats(0, 1)


@pytest.mark.parametrize("lowers_gini", GINI_TESTS)
@given(shares, shares, st.lists(st.one_of(shares.map(lambda x: -x), st.sampled_from([NEG_INF, -0.0])), max_size=12))
def test_lowers_gini_is_the_gini_comparison_float_for_float(lowers_gini: Any, share: float, task_share: float,
                                                            utilities: list[float]) -> None:
    """The fast test (sorted once, both shares inserted) decides exactly as comparing the two
    `gini` values of Algorithm 6 does."""
    others = [-u for u in utilities if math.isfinite(u)]
    assert lowers_gini(share, task_share, utilities) == (gini([share + task_share, *others]) < gini([share, *others]))


@pytest.mark.parametrize("lowers_gini", GINI_TESTS)
def test_lowers_gini_refuses_what_gini_refuses(lowers_gini: Any) -> None:
    with pytest.raises(ValueError, match="non-negative"):
        lowers_gini(0.1, 0.1, [0.2])  # a neighbour's utility above 0: a negative share
    with pytest.raises(ValueError, match="non-negative"):
        lowers_gini(float("nan"), 0.1, [-0.2])


@given(st.dictionaries(st.integers(0, 20), st.tuples(shares, st.booleans(), st.booleans()), max_size=6))
def test_home_users_lowest_is_the_minimum_of_share_then_id(users: dict[int, tuple[float, bool, bool]]) -> None:
    homes = HomeUsers({user: 0.1 for user in users})
    for user, (share, active, saturated) in users.items():
        record = homes.records[user]
        record.share, record.active, record.saturated = share, active, saturated
    expected = min(((u, r) for u, r in homes.records.items() if r.active and not r.saturated),
                   key=lambda item: (item[1].share, item[0]), default=None)
    assert homes.lowest() == expected


def test_pdgdrf_centre_allocates_and_others_follow_the_gini_rule() -> None:
    centre = node(PdgdrfRule(), homed={100: 0.05})
    centre.receive(request(100, 0, 0.1), 0.0)
    centre.gradient.offer([(-0.2, 3, 0.0), (-0.4, 4, 0.0)])
    centre.on_tick(0.1)
    assert centre.take_outbox() == [(100, Proposal(0, 0))] and centre.rule.by_centre == 1
    middle = node(PdgdrfRule(), homed={100: 0.05})
    middle.receive(request(100, 0, 0.2), 0.0)
    middle.gradient.offer([(-0.1, 3, 0.0), (-0.4, 4, 0.0)])
    middle.on_tick(0.1)
    assert middle.take_outbox() == [(100, Proposal(0, 0))] and middle.rule.by_gini == 1
    low = node(PdgdrfRule(), homed={100: 0.05})
    low.receive(request(100, 0, 0.4), 0.0)
    low.gradient.offer([(-0.1, 3, 0.0), (-0.2, 4, 0.0)])
    low.on_tick(0.1)
    assert low.take_outbox() == []


# -- probes (Algorithm 4) ----------------------------------------------------------------------

def probe(capacity: tuple[float, ...] = (4.0, 4.0), thesis: bool = False, **kw: Any) -> Any:
    """A probe server; `thesis`: the thesis's probe (copies wait, no band)."""
    rule = ProbeRule(probe_d=2, probe_retry=0, probe_band=0.0) if thesis else ProbeRule(probe_d=2)
    return node(rule, capacity=capacity, homed={}, neighbors=[1, 2, 3], **kw)


def test_the_band_holds_a_copy_back_while_a_lower_user_waits_and_lets_it_go_once_that_one_is_stuck() -> None:
    # Cluster total (10, 10): task shares 0.1. User 100 (share 0.1) is lower than 101 (share 0.3);
    # 0.3 > 0.1 + 0.5 · 0.1, so 101's copy waits while 100's share is fresh and moving.
    s = probe(capacity=(2.0, 2.0), total=(10.0, 10.0))
    s.receive(ProbeTask(100, 0, (3.0, 1.0), 0.1), 0.0)  # heard, not kept: this server could never hold it
    s.receive(ProbeTask(101, 0, (1.0, 1.0), 0.3), 0.0)
    s.on_tick(0.1)
    assert not any(isinstance(m, Proposal) for _, m in s.take_outbox())
    for tick in range(2, 40):  # 100 keeps asking at the same share: stuck, it stops counting
        s.receive(ProbeTask(100, 0, (3.0, 1.0), 0.1), tick / 10)
        s.on_tick(tick / 10)
        if any(isinstance(m, Proposal) for _, m in s.take_outbox()):
            break
    assert tick > STUCK_TICKS


def test_probe_forwards_to_the_two_least_loaded_neighbours() -> None:
    s = probe()
    s.receive(LoadReply(1, 0.9), 0.0)
    s.receive(LoadReply(2, 0.1), 0.0)
    s.receive(LoadReply(3, 0.5), 0.0)
    s.receive(request(100, 0, 0.3), 0.0)
    assert s.take_outbox() == [(2, ProbeTask(100, 0, (1.0, 1.0), 0.3)), (3, ProbeTask(100, 0, (1.0, 1.0), 0.3))]


@pytest.mark.parametrize("every, polled", [(1, [1, 2, 3, 4, 5, 6, 7]), (3, [1, 4, 7])])
def test_probe_polls_on_every_kth_tick_only_when_asked(every: int, polled: list[int]) -> None:
    s = node(ProbeRule(probe_d=2, probe_poll_every=every), capacity=(4.0, 4.0), homed={}, neighbors=[1, 2, 3])
    ticks = []
    for tick in range(1, 8):
        s.on_tick(tick / 10)
        polls = [dst for dst, m in s.take_outbox() if isinstance(m, LoadRequest)]
        if polls:
            assert polls == [1, 2, 3]
            ticks.append(tick)
    assert ticks == polled


def test_a_probe_answers_every_poll_with_what_holds_now() -> None:
    """A reply unchanged since the last poll is the same message sent again; a changed load is a
    new one (messages are immutable)."""
    s = probe(capacity=(4.0, 4.0))
    s.receive(LoadRequest(1), 0.0)
    s.receive(LoadRequest(2), 0.0)
    first, second = (m for _, m in s.take_outbox())
    assert first == second == LoadReply(s.id, 0.0) and first is second
    s.free[0] = 1.0
    s.republish()  # what the server's own methods do whenever they change `free`
    s.receive(LoadRequest(3), 0.1)
    assert s.take_outbox() == [(3, LoadReply(s.id, 0.75))]


def test_probe_tick_polls_and_proposes_the_lowest_share_task_that_fits() -> None:
    s = probe(capacity=(2.0, 2.0), thesis=True)
    s.receive(ProbeTask(100, 0, (3.0, 1.0), 0.1), 0.0)  # lowest share, but does not fit
    s.receive(ProbeTask(101, 0, (1.0, 1.0), 0.3), 0.0)
    s.receive(ProbeTask(102, 0, (1.0, 1.0), 0.2), 0.0)
    s.on_tick(0.1)
    out = s.take_outbox()
    assert out[:3] == [(n, LoadRequest(0)) for n in (1, 2, 3)]
    assert out[3:] == [(102, Proposal(0, 0))]
    assert cpu_load(s) == pytest.approx(0.5)
    s.receive(LoadRequest(2), 0.1)
    assert s.take_outbox() == [(2, LoadReply(0, 0.5))]


# -- ddrf-gradient's node-local freeze ----------------------------------------------------------

def test_ddrf_gradient_freezes_its_view_once_it_has_been_stable_and_only_then_allocates() -> None:
    s = node(DdrfGradientRule(freeze_after=3, warmup_cap=100), homed={100: 0.1}, view=2)
    s.receive(request(100, 0, 0.0), 0.0)
    s.gradient.offer([(0.0, 3, 0.0), (0.0, 4, 0.0)])
    for k in range(1, 4):  # the view is new at the first tick, then stable for two ticks
        s.on_tick(k * 0.1)
        assert s.take_outbox() == [] and s.take_port() == [] and s.gossip_gradient
    s.on_tick(0.4)  # stable for three ticks: freeze, then allocate and poll as DDRF
    assert s.take_port() == [NeighborsFixed(0.4, 0, (3, 4))]
    assert s.neighbors == [3, 4] and not s.gossip_gradient and s.rule.counters() == {"frozen_servers": 1, "thaws": 0}
    out = s.take_outbox()
    assert out[0] == (100, Proposal(0, 0)) and [dst for dst, _ in out[1:]] == [3, 4]


def test_ddrf_gradient_freezes_at_the_warmup_cap_even_if_its_view_keeps_changing() -> None:
    s = node(DdrfGradientRule(freeze_after=50, warmup_cap=2), homed={}, view=2)
    s.gradient.offer([(0.0, 3, 0.0)])
    s.on_tick(0.1)
    s.gradient.offer([(0.5, 4, 0.0)])
    s.on_tick(0.2)
    assert [type(e) for e in s.take_port()] == [NeighborsFixed]


def test_ddrf_gradient_freezes_freeze_after_ticks_once_its_view_shows_allocation_though_it_keeps_changing() -> None:
    """Issue 52: a home whose view had not settled when allocation began saw it change every tick
    (allocating homes' utilities move) and waited for the warm-up cap while others filled the
    cluster; the first descriptor with a finite utility below zero now starts a countdown."""
    s = node(DdrfGradientRule(freeze_after=3, warmup_cap=100), homed={}, view=2)  # at −∞: all above it
    s.gradient.offer([(0.5, 3, 0.0), (0.4, 4, 0.0)])
    s.on_tick(0.1)
    for k in range(2, 5):  # a closer allocating server each tick: the view never holds still
        s.gradient.offer([(-0.05 - 0.001 * k, 10 + k, 0.0)])
        s.on_tick(k / 10)
        assert s.take_port() == [] and s.gossip_gradient
    s.gradient.offer([(-0.06, 20, 0.0)])
    s.on_tick(0.5)  # three ticks after the view first showed allocation (at 0.2)
    assert [type(e) for e in s.take_port()] == [NeighborsFixed] and not s.gossip_gradient


def _frozen(**kw: Any) -> Any:
    s = node(DdrfGradientRule(freeze_after=1, warmup_cap=100), view=2, **kw)
    s.gradient.offer([(0.0, 3, 0.0), (0.0, 4, 0.0)])
    s.on_tick(0.1)
    s.on_tick(0.2)
    assert s.rule.frozen and [type(e) for e in s.take_port()] == [NeighborsFixed]
    s.take_outbox()
    return s


def test_ddrf_gradient_thaws_when_a_fixed_neighbour_crashes_and_freezes_anew() -> None:
    """Issue 37: a frozen view that keeps a hole where a crashed server was re-forms."""
    s = _frozen(homed={100: 0.1})
    s.receive(request(100, 0, 0.0), 0.25)
    s.receive(PeerDown(3), 0.3)
    assert not s.rule.frozen and s.gossip_gradient and s.neighbors == [4] and s.rule.counters()["thaws"] == 1
    s.on_tick(0.4)  # thawed: no allocation, no poll, until it freezes again
    assert s.take_outbox() == []
    s.gradient.offer([(0.0, 5, 0.0)])
    s.on_tick(0.5)
    s.on_tick(0.6)
    assert [type(e) for e in s.take_port()] == [NeighborsFixed] and s.rule.frozen and 5 in s.neighbors
    assert s.take_outbox()[0] == (100, Proposal(0, 0))


def test_ddrf_gradient_thaws_when_it_adopts_a_user_though_it_froze_without_users() -> None:
    """Issue 37: a re-homed user's new home had frozen among servers without users, every one of
    which reports +∞, so nothing bounded the user; the home re-forms its view first."""
    s = _frozen(homed={}, rto=0.1)
    s.receive(request(100, 0, 0.0), 0.3)  # the gateway re-homed user 100 here after its home crashed
    assert not s.rule.frozen and s.gossip_gradient and s.rule.counters()["thaws"] == 1
    homed = _frozen(homed={100: 0.1}, rto=0.1)
    homed.receive(request(101, 0, 0.0), 0.3)  # a home that adopts one more user keeps its place
    assert homed.rule.frozen


def test_ddrf_forgets_the_share_of_a_server_that_stopped_polling_it() -> None:
    """Issue 37: a server that thawed polls other neighbours; its last share, ever older, would
    bound its former neighbours for good."""
    s = node(DdrfRule(), homed={100: 0.1}, neighbors=[5])
    s.receive(request(100, 0, 0.4), 0.0)
    s.receive(MinShareRequest(7, 0.1), 0.0)
    s.take_outbox()
    for k in range(1, 2 * DdrfRule.STALE_ROUNDS):
        s.on_tick(k * 0.1)
        assert all(not isinstance(m, Proposal) for _, m in s.take_outbox())
    s.on_tick(2 * DdrfRule.STALE_ROUNDS * 0.1)
    assert s.take_outbox()[0] == (100, Proposal(0, 0)) and 7 not in s.rule.reported


_STEPS = st.lists(st.one_of(st.tuples(st.just("ticks"), st.integers(1, 12)),
                            st.tuples(st.just("ask"), st.integers(1, 6), st.floats(0.0, 1.0)),
                            st.tuples(st.just("neighbours"), st.sets(st.integers(1, 6), max_size=3))), max_size=40)


@given(_STEPS)
def test_ddrf_forgets_exactly_the_askers_silent_for_its_stale_rounds(steps: list[tuple[Any, ...]]) -> None:
    """`_forget_silent` against Algorithm 5's table with each asker stamped with the round it last
    asked in: a server not a neighbour whose stamp is more than `STALE_ROUNDS` rounds old at a
    check (every `STALE_ROUNDS` rounds) goes from the table; whoever asks is recorded."""
    s = node(DdrfRule(), homed={100: 0.1}, neighbors=[1, 2])
    s.receive(request(100, 0, 0.4), 0.0)
    table, stamps, rounds = {1: math.inf, 2: math.inf}, {}, 0
    for step in steps:
        if step[0] == "ticks":
            for _ in range(step[1]):
                rounds += 1
                if rounds % DdrfRule.STALE_ROUNDS == 0:
                    for peer, asked in list(stamps.items()):
                        if rounds - asked > DdrfRule.STALE_ROUNDS and peer not in s.neighbors:
                            del stamps[peer]
                            table.pop(peer, None)
                s.on_tick(rounds * 0.1)
                s.take_outbox()
                assert s.rule.reported == table
        elif step[0] == "ask":
            table[step[1]], stamps[step[1]] = step[2], rounds
            s.receive(MinShareRequest(step[1], step[2]), rounds * 0.1)
        else:
            s.neighbors = sorted(step[1])
        s.take_outbox()
        assert s.rule.reported == table


def test_ddrf_answers_with_its_minimum_share_as_it_is_when_asked() -> None:
    """The reply a server publishes is made again whenever its minimum share changes (a task
    arrives, a share is reported, a user is marked saturated), and the request it sends too."""
    s = node(DdrfRule(), homed={100: 0.1, 101: 0.1}, neighbors=[5], capacity=(1.0, 1.0))
    s.cyclon.bootstrap([(0.0, 1, 0.0)])

    def answer() -> float:
        s.receive(MinShareRequest(7, 0.0), 0.0)
        [(dst, reply)] = s.take_outbox()
        assert dst == 7 and reply == MinShareReply(0, s.homes.min_share())
        return reply.share

    assert answer() == 0.0
    s.receive(request(100, 0, 0.3), 0.0)
    s.receive(request(101, 0, 0.5, demand=(2.0, 2.0)), 0.0)
    assert answer() == answer() == 0.3
    s.on_tick(0.1)
    assert [m for _, m in s.take_outbox() if isinstance(m, MinShareRequest)] == [MinShareRequest(0, 0.3)]
    s.allocate(101, s.homes.records[101])
    s.take_outbox()
    s.receive(WalkFailed(101, 0), 0.2)  # 101 marked saturated: no change, 100 is the minimum
    assert answer() == 0.3
    s.receive(UserShare(100, 0.45, True), 0.3)
    assert answer() == 0.45
    s.on_tick(0.4)
    assert [m for _, m in s.take_outbox() if isinstance(m, MinShareRequest)] == [MinShareRequest(0, 0.45)]
    s.receive(UserShare(100, 0.45, False), 0.5)  # no task waiting: 100 no longer counts
    assert answer() == math.inf


def test_a_rule_handler_wins_over_the_servers_and_every_rule_message_is_dispatched() -> None:
    cls = server_class(ProbeRule)
    assert cls.DISPATCH[TaskRequest] is not ServerNode.DISPATCH[TaskRequest]
    assert server_class(ProbeRule) is cls  # made once per rule
    for message_type in (ProbeTask, LoadRequest, LoadReply):
        assert message_type in cls.DISPATCH
