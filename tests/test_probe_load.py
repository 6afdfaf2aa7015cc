"""`--probe-load dominant`: a probe's load on every resource the task demands; the band's minimum."""

from __future__ import annotations

import math

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from drfemu.kernel.messages import Proposal
from drfemu.protocols.probe import (
    HEARD_TICKS,
    STUCK_TICKS,
    LoadRequest,
    LoadsReply,
    LowestShare,
    ProbeRule,
    ProbeTask,
    _same_minimum,
    room_load,
    task_load,
    used_fractions,
)
from tests.test_distributed_roles import node, request


def test_used_fractions_count_a_missing_resource_as_full() -> None:
    assert used_fractions([2.0, 1.0, 0.0], (4.0, 4.0, 0.0)) == pytest.approx((0.5, 0.75, 1.0))


def test_a_tasks_load_is_the_largest_used_fraction_over_what_it_demands() -> None:
    used = (0.1, 0.9, 1.0)  # CPU idle, memory nearly full, no GPU
    assert task_load(used, (1.0, 0.0, 0.0)) == pytest.approx(0.1)
    assert task_load(used, (1.0, 1.0, 0.0)) == pytest.approx(0.9)
    assert task_load(used, (1.0, 1.0, 1.0)) == pytest.approx(1.0)


def test_a_gpu_task_is_forwarded_to_the_neighbours_with_gpus_and_a_cpu_task_by_its_own_load() -> None:
    s = node(ProbeRule(2, "dominant"), capacity=(4.0, 4.0, 1.0), neighbors=[1, 2, 3])
    s.receive(LoadsReply(1, (0.0, 0.0, 1.0), (4.0, 4.0, 0.0)), 0.0)  # idle, but no GPU
    s.receive(LoadsReply(2, (0.6, 0.5, 0.0), (1.6, 2.0, 1.0)), 0.0)
    s.receive(LoadsReply(3, (0.8, 0.2, 0.0), (0.8, 3.2, 1.0)), 0.0)
    s.receive(request(100, 0, 0.3, (1.0, 1.0, 1.0)), 0.0)
    assert sorted(dst for dst, m in s.take_outbox() if isinstance(m, ProbeTask)) == [2, 3]
    s.receive(request(101, 0, 0.3, (1.0, 1.0, 0.0)), 0.0)
    assert sorted(dst for dst, m in s.take_outbox() if isinstance(m, ProbeTask)) == [1, 2]


def test_a_dominant_probe_server_reports_every_resource() -> None:
    s = node(ProbeRule(2, "dominant"), capacity=(4.0, 2.0), neighbors=[1, 2])
    s.propose(100, 0, (1.0, 1.5))
    s.take_outbox()
    s.receive(LoadRequest(2), 0.1)
    assert s.take_outbox() == [(2, LoadsReply(0, pytest.approx((0.25, 0.75)), (3.0, 0.5)))]


def test_room_load_is_the_share_of_free_room_a_task_takes() -> None:
    assert room_load((2.0, 4.0, 0.0), (1.0, 1.0, 0.0)) == pytest.approx(0.5)
    assert room_load((2.0, 0.5, 0.0), (1.0, 1.0, 0.0)) == pytest.approx(2.0)  # does not fit
    assert room_load((2.0, 4.0, 0.0), (1.0, 1.0, 1.0)) == math.inf


def test_room_load_prefers_the_large_machine_with_room_to_the_small_one_at_a_lower_fraction() -> None:
    s = node(ProbeRule(1, "room"), capacity=(4.0, 4.0), neighbors=[1, 2])
    s.receive(LoadsReply(1, (0.5, 0.5), (0.5, 0.5)), 0.0)  # small machine, half used: 0.5 free
    s.receive(LoadsReply(2, (0.9, 0.9), (1.6, 1.6)), 0.0)  # large machine, 90 % used: 1.6 free
    s.receive(request(100, 0, 0.3, (0.4, 0.4)), 0.0)
    assert [dst for dst, m in s.take_outbox() if isinstance(m, ProbeTask)] == [2]


def test_a_newer_task_of_a_user_replaces_its_dead_copy() -> None:
    s = node(ProbeRule(2), capacity=(4.0, 4.0), homed={}, neighbors=[1, 2, 3])
    s.receive(ProbeTask(100, 0, (9.0, 1.0), 0.1), 0.0)  # never fits here
    s.receive(ProbeTask(100, 1, (1.0, 1.0), 0.2), 0.0)  # the user's next task: task 0 started elsewhere
    s.receive(ProbeTask(100, 0, (1.0, 1.0), 0.1), 0.0)  # a late copy of the old task: ignored
    s.on_tick(0.1)
    assert [m for _, m in s.take_outbox() if isinstance(m, Proposal)] == [Proposal(1, 0)]


def _least_that_counts(rule: ProbeRule) -> tuple[float, int, int] | None:
    """The band's minimum by its definition: the least (share, user, task) of every entry heard."""
    now = rule.ticks
    counting = [(share, user, task) for user, (share, last, since, task) in rule.heard.items()
                if now - last <= HEARD_TICKS and now - since <= STUCK_TICKS]
    return min(counting, default=None)


@given(st.lists(st.one_of(st.none(), st.tuples(st.integers(0, 3), st.integers(0, 2),
                                               st.sampled_from([0.0, -0.0, 0.1, 0.2, 0.3]))), max_size=120),
       st.sets(st.integers(0, 119)))
@example([(0, 0, -0.0), (0, 0, 0.0)], {1})  # heard again in its tick, equal but not the same share
def test_the_bands_minimum_is_the_least_entry_that_counts(steps: list[tuple[int, int, float] | None],
                                                           asked: set[int]) -> None:
    """Whatever the hearings and ticks (the same entry heard again in a tick, `0.0` after `-0.0`),
    and whenever a load request asks for it, the minimum is the least entry still counting (looked
    for among `counting` only, `ProbeRule._lowest`), and the notice answered says it exactly."""
    s = node(ProbeRule(2), capacity=(4.0, 4.0), homed={}, neighbors=[1, 2])
    rule = s.rule
    heard: dict[int, tuple[float, int, int, int]] = {}  # what `hear` keeps, by its definition
    for at, step in enumerate(steps):
        if step is None:
            s.on_tick(at * 0.1)
        else:
            user, task, share = step
            s.receive(LowestShare(100 + user, task, share), at * 0.1)
            entry = heard.get(100 + user)
            if entry is None or task >= entry[3]:
                since = entry[2] if entry is not None and entry[0] == share else rule.ticks
                heard[100 + user] = (share, rule.ticks, since, task)
        s.take_outbox()
        assert repr(sorted(rule.heard.items())) == repr(sorted(heard.items()))  # repr: -0.0 is not 0.0
        if at in asked:
            least = _least_that_counts(rule)
            s.receive(LoadRequest(1), at * 0.1)
            notices = [m for _, m in s.take_outbox() if isinstance(m, LowestShare)]
            said = [(m.share, m.user, m.task) for m in notices]
            assert said == [] if least is None else len(said) == 1 and _same_minimum(said[0], least)
    lowest, least = rule._lowest(), _least_that_counts(rule)
    assert lowest == least if least is None else _same_minimum(lowest, least)


def test_a_notice_is_reused_only_for_a_minimum_it_says_exactly() -> None:
    assert _same_minimum((0.25, 101, 3), (0.25, 101, 3))
    assert not _same_minimum((0.25, 101, 3), (0.25, 101, 4)) and not _same_minimum(None, (0.25, 101, 3))
    assert not _same_minimum((0.0, 101, 3), (-0.0, 101, 3))  # equal, but another message
    assert not _same_minimum((0, 101, 3), (0.0, 101, 3))
    assert not _same_minimum((float("nan"), 101, 3), (float("nan"), 101, 3))  # two NaNs: not equal
