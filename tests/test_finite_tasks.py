"""Tasks that end (issue 15): the finite user, the ledger, homes' idle users, task exits, and
every protocol on random arrivals and durations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drfemu.assembly.config import RunConfig
from drfemu.assembly.run import run_emulation
from drfemu.kernel.events import TaskAllocated, TaskDispatched, TaskFinished, TaskSubmitted
from drfemu.kernel.messages import (
    Launch,
    ServerReply,
    ServerRequest,
    TaskEnded,
    TaskExit,
    TaskRequest,
    TaskStarted,
    UserShare,
)
from drfemu.nodes.resource_node import ResourceNode
from drfemu.nodes.user import FiniteUserNode
from drfemu.nodes.wakes import SubmitDue
from drfemu.observers.ledger import LedgerViolation, TaskLedger
from drfemu.protocols.homes import HomeUsers
from drfemu.protocols.registry import PROTOCOLS
from drfemu.schema.workload import Server, Task, User, Workload

WALL = ("wall_time_s", "events_per_s")


def test_finite_user_submits_on_time_and_reports_its_share() -> None:
    user = FiniteUserNode(5, 9, [(0.0, (1.0, 1.0)), (2.0, (2.0, 1.0))], (4.0, 4.0))
    user.start(0.0)
    port = user.take_port()
    assert [type(e).__name__ for e in port] == ["TaskSubmitted", "WakeUp", "TaskDispatched"]
    assert user.take_outbox() == [(9, ServerRequest(5))]
    user.receive(ServerReply(3), 0.001)
    assert user.take_outbox() == [(3, TaskRequest(5, 0, (1.0, 1.0), 0.0))]
    user.receive(TaskStarted(0, 3), 0.005)
    assert user.share == 0.25
    assert user.take_outbox() == [(3, UserShare(5, 0.25, False))]  # nothing waiting now
    user.on_timer(SubmitDue(), 2.0)
    user.take_port()
    assert user.take_outbox() == [(9, ServerRequest(5))]
    user.receive(ServerReply(3), 2.001)
    user.take_outbox()
    user.receive(TaskEnded(5, 0, 3), 3.0)
    assert user.share == 0.0 and user.take_outbox() == [(3, UserShare(5, 0.0, True))]  # its waiting task's allocator
    assert user.counters() == {"submitted": 2, "waiting": 0, "placing": 1, "running": 0, "finished": 1}


def test_an_idle_user_does_not_count_in_its_homes_utility() -> None:
    homes = HomeUsers({1: 0.1, 2: 0.1}, total=(10.0, 10.0), active=False)
    assert homes.utility() == float("-inf")  # finite users count once a task arrives
    homes.task_arrived(TaskRequest(1, 0, (1.0, 1.0), 0.3))
    homes.task_arrived(TaskRequest(2, 0, (2.0, 1.0), 0.5))
    assert homes.utility() == -0.3 and homes.records[2].task_share == 0.2
    assert homes.share_reported(UserShare(1, 0.4, False))
    assert homes.utility() == -0.5  # user 1 has nothing waiting: user 2 is the lowest that counts
    assert not homes.share_reported(UserShare(7, 0.0, False))  # not homed here


def test_the_saturation_retry_doubles_up_to_its_cap() -> None:
    homes = HomeUsers({1: 0.1}, saturation_retry=0.1, total=(10.0, 10.0), active=False, retry_cap=1.0)
    homes.task_arrived(TaskRequest(1, 0, (1.0, 1.0), 0.0))
    now, waits = 0.0, []
    for _ in range(8):
        homes.records[1].busy = True
        _, retry_at = homes.walk_failed(1, 0, now)
        assert retry_at is not None
        waits.append(round(retry_at - now, 9))
        now = retry_at
    assert waits == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0, 1.0]  # never past the cap: a stall window cannot outlast it
    assert HomeUsers({1: 0.1}, saturation_retry=float("inf"), retry_cap=1.0).retry_cap == float("inf")  # 0: never


def test_a_task_exit_frees_the_server_and_tells_user_and_scheduler() -> None:
    node = ResourceNode(0, (4.0, 4.0), scheduler=8)
    node.receive(Launch(5, 0, (1.0, 3.0)), 0.0)
    node.take_outbox()
    node.receive(TaskExit(5, 0), 10.0)
    assert node.free == [4.0, 4.0]
    assert node.take_outbox() == [(5, TaskEnded(5, 0, 0)), (8, TaskEnded(5, 0, 0))]
    assert [type(e) for e in node.take_port()] == [TaskAllocated, TaskFinished]


def test_the_ledger_follows_every_task_and_refuses_impossible_moves() -> None:
    ledger = TaskLedger()
    ledger.on_submitted(TaskSubmitted(0.0, 5, 0, (1.0,)))
    ledger.on_dispatched(TaskDispatched(0.0, 5, 0))
    ledger.on_allocated(TaskAllocated(2.5, 0, 5, 0, (1.0,)))
    assert ledger.counts == {"waiting": 0, "placing": 0, "running": 1, "finished": 0, "killed": 0,
                             "resubmitted": 0} and ledger.delays == [2.5]
    with pytest.raises(LedgerViolation, match="started while running"):
        ledger.on_allocated(TaskAllocated(3.0, 1, 5, 0, (1.0,)))
    with pytest.raises(LedgerViolation, match="never submitted"):
        ledger.on_finished(TaskFinished(3.0, 0, 5, 9, (1.0,)))
    own = {5: {"submitted": 1, "waiting": 0, "placing": 0, "running": 1, "finished": 0}}
    assert ledger.check(own, expected=2)["lost"] == 1  # the workload submitted one more than anyone saw
    with pytest.raises(LedgerViolation, match="the users count"):
        ledger.check({5: {"submitted": 1, "waiting": 0, "placing": 0, "running": 0, "finished": 1}})


def test_times_finer_than_the_clock_are_kept_to_the_microsecond() -> None:
    """A submit time between two microseconds once woke its user at an instant before it, for
    ever; times are now rounded to the clock's resolution."""
    from drfemu.schema.workload import parse_workload

    w = parse_workload({"resources": ["a"], "servers": [{"capacity": [2]}], "users": [{"demand": [1], "tasks": [
        {"submit": 1.0000004, "duration": 0.5}, {"submit": 4e-7, "duration": 1e-6}]}]})
    assert [(t.submit, t.duration) for t in w.users[0].tasks or ()] == [(0.0, 1e-6), (1.0, 0.5)]
    assert _run(w, "drf")["ledger"]["finished"] == 2


def _finite(capacities: list[list[int]], users: list[list[tuple[float, float, list[int]]]]) -> Workload:
    servers = tuple(Server(f"s{i}", tuple(float(x) for x in c)) for i, c in enumerate(capacities))
    return Workload(("a", "b"), servers, tuple(
        User(f"u{k}", tuple(float(x) for x in tasks[0][2]),
             tuple(sorted((Task(s, d, tuple(float(x) for x in dem)) for s, d, dem in tasks), key=lambda t: t.submit)))
        for k, tasks in enumerate(users)))


def _run(w: Workload, protocol: str, **kw: Any) -> dict[str, Any]:
    params = {"neighbors": max(1, min(2, len(w.servers) - 1)), "probe_d": 1, "sample_every": 1.0, "swm_every": 0,
              **kw}
    return run_emulation(RunConfig.build(w, protocol=protocol, **params)).to_dict()


_task = st.tuples(st.floats(0, 20).map(lambda x: round(x, 3)), st.floats(0.05, 10).map(lambda x: round(x, 3)),
                  st.lists(st.integers(0, 4), min_size=2, max_size=2).filter(any))
finite_workloads = st.builds(
    _finite,
    st.lists(st.lists(st.integers(4, 8), min_size=2, max_size=2), min_size=1, max_size=4),
    st.lists(st.lists(_task, min_size=1, max_size=6), min_size=1, max_size=4),
)


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(finite_workloads, st.sampled_from(sorted(PROTOCOLS)), st.integers(1, 3))
def test_every_protocol_finishes_random_finite_workloads_without_loss(w: Workload, protocol: str, seed: int) -> None:
    """No capacity violation (the harness raises), every task finished and none lost, and the
    same seed gives the same result."""
    r = _run(w, protocol, seed=seed)
    assert r["status"] == "finished", r["end_reason"]
    assert r["ledger"] == {"waiting": 0, "placing": 0, "running": 0, "finished": w.task_count, "killed": 0,
                           "resubmitted": 0, "rerun": 0, "lost": 0}
    assert r["allocations"] == w.task_count and len(r["queueing_delay_quantiles_s"]) == 101
    again = _run(w, protocol, seed=seed)
    assert {k: v for k, v in again.items() if k not in WALL} == {k: v for k, v in r.items() if k not in WALL}


@pytest.mark.parametrize("protocol", ["dgdrf", "pdgdrf", "bdgdrf"])
def test_a_user_with_nothing_waiting_never_holds_the_others_back(protocol: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Thesis ch. 6: user A runs one short task, then asks for nothing until 50 s; its share
    falls to 0, the lowest. B's ten tasks at 1 s must not wait for A — and do wait when A's home
    keeps counting it (the test's broken home ignores "nothing waiting")."""
    w = _finite([[4, 4], [4, 4], [4, 4]], [[(0.0, 0.5, [1, 1]), (50.0, 0.5, [1, 1])],
                                          [(1.0, 1.0, [1, 1])] * 10])
    r = _run(w, protocol)
    assert r["status"] == "finished" and r["queueing_delay_s"]["p95"] < 1.5

    def keeps_counting(self: HomeUsers, msg: UserShare) -> bool:
        record = self.records.get(msg.user)
        if record is not None:
            record.share = msg.share
        return record is not None

    monkeypatch.setattr(HomeUsers, "share_reported", keeps_counting)
    broken = _run(w, protocol)
    assert broken["queueing_delay_s"]["p95"] > 3.0


@pytest.mark.parametrize("protocol", ["dgdrf", "pdgdrf"])
def test_with_tasks_that_end_a_saturated_user_retries_soon(protocol: str) -> None:
    """B's task arrives at 1 s on a cluster A fills until 1.5 s: its walk fails and marks B. With
    tasks that end the first retry comes after 1 tick (so B starts soon after 1.5 s); the endless
    workloads' 50 ticks make B wait about 5 s."""
    w = _finite([[4, 4], [4, 4]], [[(0.0, 1.5, [2, 2])] * 4, [(1.0, 1.0, [1, 1])]])
    r = _run(w, protocol)
    assert r["saturation_retry_ticks"] == 1 and r["placement"]["saturation_marks"] >= 1
    assert r["queueing_delay_s"]["p99"] < 1.5
    slow = _run(w, protocol, saturation_retry=50)
    assert slow["saturation_retry_ticks"] == 50 and slow["queueing_delay_s"]["p99"] > 4.0


def test_the_saturation_retry_default_depends_on_whether_tasks_end() -> None:
    from drfemu.schema.params import run_params

    assert run_params(protocol="dgdrf").saturation_retry_ticks(False) == 50
    assert run_params(protocol="dgdrf").saturation_retry_ticks(True) == 1
    assert run_params(protocol="dgdrf", saturation_retry=0).saturation_retry_ticks(True) == 0


# -- the trace replay's progress line (issue 40) ---------------------------------------------------

def test_replay_progress_reads_as_one_line() -> None:
    from drfemu.sweeps.online import ReplayProgress
    assert ReplayProgress(3, 11, {"probe": 0.41, "pdgdrf": 0.775}, 372.4).line() == (
        "3 of 11 runs done; running: probe 41%, pdgdrf 78%; ETA 6 min 12 s")
    assert ReplayProgress(0, 2, {}, None).line() == "0 of 2 runs done; running: none; ETA unknown"


def test_the_replay_eta_follows_each_runs_pace(monkeypatch: pytest.MonkeyPatch) -> None:
    """Progress is the lesser of the tasks started and the time to the last task's end on arrival;
    the ETA divides what is left of the running runs, and the queued runs at the mean wall time
    of those that ended, among the workers."""
    from drfemu.sweeps import online
    clock = [100.0]
    monkeypatch.setattr(online.time, "monotonic", lambda: clock[0])
    pace = online._Pace(end=1000.0, tasks=200, queued=3, workers=2)
    assert pace.eta() is None
    pace.heard("a", 250.0, 150)  # a quarter of the time, three quarters of the tasks: a quarter done
    pace.heard("b", 500.0, 50)  # half the time, a quarter of the tasks: a quarter done
    assert pace.share == {"a": 0.25, "b": 0.25}
    clock[0] = 110.0  # 10 s each: 40 s a run, 30 s left each, and one queued run of 40 s
    assert pace.eta() == pytest.approx((30 + 30 + 40) / 2)
    pace.ended("a")  # it ended after 10 s: queued runs now count 10 s each
    assert pace.eta() == pytest.approx((30 + 10) / 2)


class _RunHeldUntilSeen:
    """A run point that, once its run ends, waits (up to two minutes) until the caller's progress
    has shown the run running with a share in (0, 1] (a file in `seen`): the run's end and its
    last report may otherwise reach a loaded caller in the same poll, and the test would depend on
    the host's speed."""

    def __init__(self, seen: Path) -> None:
        self.seen = seen

    def __call__(self, params: dict[str, Any], progress: Any) -> dict[str, Any]:
        import time

        from drfemu.workloads.points import run_point
        result = run_point(params, progress)
        deadline = time.monotonic() + 120.0
        while not (self.seen / params["protocol"]).exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        return result


@pytest.mark.slow
def test_a_trace_replay_reports_its_progress(tmp_path: Path) -> None:
    from drfemu.sweeps.online import ReplayProgress, run_online_protocols
    seen = tmp_path / "seen"
    seen.mkdir()
    heard: list[ReplayProgress] = []

    def hear(state: ReplayProgress) -> None:
        heard.append(state)
        for protocol, share in state.running.items():
            if 0 < share <= 1:
                (seen / protocol).touch()

    results = run_online_protocols(tmp_path / "out", ["pdgdrf", "drf"], _RunHeldUntilSeen(seen), {"seed": 1},
                                   minutes=1, workers=1, on_progress=hear, every_s=0.05)
    assert {p: r["status"] for p, r in results.items()} == {"pdgdrf": "finished", "drf": "finished"}
    assert heard and all(state.total == 2 for state in heard)
    assert [state.done for state in heard] == sorted(state.done for state in heard)
    assert sorted(path.name for path in seen.iterdir()) == ["drf", "pdgdrf"]
