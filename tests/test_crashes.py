"""Crashes, recoveries, churn and re-homing (issue 16): nothing lost, nothing run twice."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drfemu.assembly.config import RunConfig
from drfemu.assembly.run import run_emulation
from drfemu.kernel.events import TaskResubmitted, TaskSubmitted
from drfemu.kernel.messages import (
    Accept,
    Decline,
    Forgotten,
    Launch,
    PeerDown,
    PeerUp,
    Proposal,
    RequestAck,
    ServerReply,
    ServerRequest,
    ServerState,
    StateAck,
    TaskRequest,
    TaskStarted,
    UserShare,
)
from drfemu.nodes.gateway import Gateway
from drfemu.nodes.scheduler import CentralScheduler
from drfemu.nodes.user import FiniteUserNode, UserNode
from drfemu.protocols.drf import Drf
from drfemu.protocols.registry import PROTOCOLS
from drfemu.schema.workload import Server, Task, User, Workload
from drfemu.workloads.google import google_case

TOTAL = (9.0, 18.0)

# -- the nodes' part, without an event loop ------------------------------------------------


def test_a_user_gives_up_the_tasks_of_a_crashed_server_and_submits_them_again() -> None:
    user = FiniteUserNode(5, gateway=9, tasks=[(0.0, (1.0, 1.0)), (0.0, (2.0, 1.0))], total=TOTAL, rto=0.1)
    user.start(0.0)
    user.receive(ServerReply(3), 0.0)
    user.receive(Proposal(0, 3), 0.01)
    user.receive(TaskStarted(0, 3), 0.02)  # task 0 runs on 3; task 1 goes out to home 3
    user.receive(ServerReply(3), 0.03)
    user.take_outbox()
    user.take_port()
    user.receive(PeerDown(3), 1.0)
    events = [e for e in user.take_port() if isinstance(e, (TaskResubmitted, TaskSubmitted))]
    assert events == [TaskResubmitted(1.0, 5, 0, 2), TaskSubmitted(1.0, 5, 2, (1.0, 1.0)),  # killed
                      TaskResubmitted(1.0, 5, 1, 3), TaskSubmitted(1.0, 5, 3, (2.0, 1.0))]  # its placer died
    assert user.share == 0.0 and user.current == 2  # the copies queue in order; the first goes out
    assert user.take_outbox() == [(9, ServerRequest(5))]  # to the gateway: a new home
    assert user.counters() == {"submitted": 4, "waiting": 1, "placing": 1, "running": 0, "finished": 0}
    user.receive(Proposal(1, 4), 1.1)  # a late offer for the task it gave up
    assert user.take_outbox() == [(4, Decline(5, 1))]


def test_an_endless_user_loses_the_share_of_its_killed_tasks() -> None:
    user = UserNode(5, gateway=9, demand=(3.0, 1.0), total=TOTAL, rto=0.1)
    user.start(0.0)
    for task, server in enumerate([1, 2, 1]):
        user.receive(ServerReply(7), 0.0)
        user.receive(Proposal(task, server), 0.0)
        user.receive(TaskStarted(task, server), 0.0)
    user.receive(ServerReply(7), 0.0)
    user.take_outbox()
    user.take_port()
    user.receive(PeerDown(1), 1.0)
    assert user.tasks == 1 and user.share == pytest.approx(1 / 3)
    assert [e for e in user.take_port() if isinstance(e, TaskResubmitted)] == [
        TaskResubmitted(1.0, 5, 0, -1), TaskResubmitted(1.0, 5, 2, -1)]
    assert user.take_outbox() == [(7, UserShare(5, pytest.approx(1 / 3), True))]  # its allocator hears the share


def test_a_central_user_keeps_its_task_through_the_scheduler_crash() -> None:
    user = UserNode(5, gateway=9, demand=(3.0, 1.0), total=TOTAL, rto=0.1, durable_allocator=True)
    user.start(0.0)
    user.receive(ServerReply(20), 0.0)
    user.receive(Proposal(0, 20), 0.1)
    user.take_outbox()
    user.receive(PeerDown(20), 1.0)
    assert user.task == 0 and user.accepted and user.take_outbox() == []
    user.take_port()
    user.receive(Forgotten(0, 20), 2.0)  # it cannot place it: restarted, or it died unheard with its server
    assert [e for e in user.take_port() if isinstance(e, TaskResubmitted)] == [TaskResubmitted(2.0, 5, 0, 1)]
    assert not user.accepted and user.take_outbox() == [(9, ServerRequest(5))]


def test_the_gateway_rehomes_the_users_of_a_crashed_home_on_live_servers() -> None:
    gateway = Gateway(9, "home", [0, 1, 2], [5, 6, 7, 8], random.Random(3))
    before = dict(gateway.homes)
    dead = before[5]
    gateway.receive(PeerDown(dead), 1.0)
    assert all(home != dead for home in gateway.homes.values())
    assert {u: h for u, h in gateway.homes.items() if before[u] != dead} == {
        u: h for u, h in before.items() if h != dead}
    gateway.receive(ServerRequest(5), 1.1)
    assert gateway.take_outbox() == [(5, ServerReply(gateway.homes[5]))]
    gateway.receive(PeerUp(dead), 2.0)
    assert gateway.live == [0, 1, 2]


def test_a_restarted_scheduler_rebuilds_from_the_reports_before_allocating() -> None:
    scheduler = CentralScheduler(20, Drf(), servers=[0, 1], capacities=[TOTAL, TOTAL], ack_ends=True,
                                 restarted=True, down=[1])
    scheduler.receive(TaskRequest(5, 0, (3.0, 1.0), 0.0), 0.0)
    assert scheduler.take_outbox() == [(5, RequestAck(0, 20))]  # it holds the request ...
    scheduler.on_tick(0.1)
    assert scheduler.take_outbox() == []  # ... but server 0 has not reported
    scheduler.receive(Accept(6, 4), 0.15)
    assert scheduler.take_outbox() == []  # it may run on 0: no answer yet
    scheduler.receive(ServerState(0, ((5, 0, (3.0, 1.0)), (6, 4, (3.0, 1.0)))), 0.2)
    assert scheduler.take_outbox() == [(0, StateAck(0, 20))]
    assert 5 not in scheduler.pending and scheduler.cluster.free[0] == [3.0, 16.0]  # its task already runs
    scheduler.receive(Accept(6, 4), 0.25)
    assert scheduler.take_outbox() == [(0, Launch(6, 4, (3.0, 1.0)))]  # the node repeats the start
    scheduler.receive(Accept(7, 0), 0.3)
    assert scheduler.take_outbox() == [(7, Forgotten(0, 20))]
    scheduler.receive(PeerDown(0), 0.4)
    assert scheduler.launched == {} and scheduler.held == {5: (0.0, 0.0), 6: (0.0, 0.0)}


# -- whole runs ------------------------------------------------------------------------------


def _finite_case(servers: int, users: int, tasks: int, seed: int) -> Workload:
    rng = random.Random(seed)
    return Workload(("a", "b"), tuple(Server(f"s{i}", (float(rng.randint(4, 8)), float(rng.randint(4, 8))))
                                      for i in range(servers)),
                    tuple(User(f"u{k}", (1.0, 1.0), tuple(sorted(
                        (Task(round(rng.uniform(0, 15), 3), round(rng.uniform(0.5, 8), 3),
                              (float(rng.randint(1, 3)), float(rng.randint(0, 3)))) for _ in range(tasks)),
                        key=lambda t: t.submit))) for k in range(users)))


@st.composite
def scenarios(draw: Any, servers: int, central: bool, gradient: bool) -> str:
    """A random fault scenario: loss, crashes of up to 30 % of the servers (recovering or not
    before the end of the faults), a partition, and a crash of the scheduler, the centre or the
    gateway."""
    lines = [f"loss = {draw(st.sampled_from([0.0, 0.01, 0.05, 0.2]))}"]
    most = max(1, int(0.3 * servers))
    for _ in range(draw(st.integers(0, 2))):
        at, length = draw(st.floats(0.5, 12)), draw(st.floats(0.5, 10))
        lines += ["[[event]]", f"at = {at:.3f}", 'action = "crash"', f"servers = {draw(st.integers(1, most))}",
                  f"duration = {length:.3f}"]
    if draw(st.booleans()):
        lines += ["[[event]]", f"at = {draw(st.floats(0.5, 12)):.3f}", 'action = "partition"',
                  f"servers = {draw(st.integers(1, most))}", f"duration = {draw(st.floats(0.5, 8)):.3f}"]
    targets = ["gateway"] + (["scheduler"] if central else []) + (["centre"] if gradient else [])
    if draw(st.booleans()):
        lines += ["[[event]]", f"at = {draw(st.floats(0.5, 12)):.3f}", 'action = "crash"',
                  f'target = "{draw(st.sampled_from(targets))}"', f"duration = {draw(st.floats(0.5, 10)):.3f}"]
    return "\n".join(lines) + "\n"


def _run(w: Workload, protocol: str, faults: Path | None, **kw: Any) -> dict[str, Any]:
    params = {"neighbors": max(1, min(3, len(w.servers) - 1)), "probe_d": 1, "sample_every": 1.0, "swm_every": 0,
              "max_time": 400.0, **kw}
    if faults is not None:
        params["faults"] = str(faults)
    return run_emulation(RunConfig.build(w, protocol=protocol, **params)).to_dict()


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.sampled_from(sorted(PROTOCOLS)), st.integers(4, 10), st.integers(1, 4), st.integers(1, 50))
def test_every_protocol_finishes_every_task_through_random_faults(tmp_path_factory: Any, data: Any, protocol: str,
                                                                  servers: int, users: int, seed: int) -> None:
    """Finite tasks: loss up to 20 %, crashes of up to 30 % of the servers, partitions, a crash of
    the scheduler, centre or gateway — every task finishes (the ledger raises on a second start
    of a task, the harnesses on a capacity violation), none is lost, the run is reproducible. A
    task may finish twice only as a rerun: its start and end notices were lost and its server
    crashed before repeating the end, so its user had to run it again (`ledger`)."""
    spec = PROTOCOLS[protocol]
    text = data.draw(scenarios(servers, spec.central_rule is not None, spec.gradient.value != "off"))
    faults = tmp_path_factory.mktemp("f") / "faults.toml"
    faults.write_text(text)
    w = _finite_case(servers, users, 4, seed)
    r = _run(w, protocol, faults, seed=seed)
    assert r["status"] == "finished", (r["end_reason"], text)
    ledger = r["ledger"]
    assert ledger["finished"] == w.task_count + ledger["rerun"] and ledger["lost"] == 0
    assert ledger["waiting"] == ledger["placing"] == ledger["running"] == 0
    assert ledger["killed"] == 0  # every kill was heard of and the task submitted again
    again = _run(w, protocol, faults, seed=seed)
    assert again["events"] == r["events"] and again["ledger"] == ledger


# A blocking rule (C-ADRF) stops for good on endless tasks once its lowest user fits nowhere, and
# which user that is depends on the arrival order a fault changes; it is checked on finite tasks.
NON_BLOCKING = sorted(p for p, spec in PROTOCOLS.items() if not getattr(spec.central_rule, "BLOCKING", False))


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.sampled_from(NON_BLOCKING), st.integers(6, 12), st.integers(2, 4), st.integers(1, 50))
def test_endless_runs_end_as_they_would_without_faults(tmp_path_factory: Any, data: Any, protocol: str,
                                                       servers: int, users: int, seed: int) -> None:
    """Endless users through the same faults: no capacity violation, no task lost or started
    twice, and the run ends as the fault-free one does (saturated; or stalled only where the
    fault-free run stalls too, or where the protocol strands tasks by design — a probe's task
    waits for ever on full servers, and which servers are full depends on the order of
    allocations that loss changes — or at the time cap while still allocating)."""
    spec = PROTOCOLS[protocol]
    text = data.draw(scenarios(servers, spec.central_rule is not None, spec.gradient.value != "off"))
    faults = tmp_path_factory.mktemp("f") / "faults.toml"
    faults.write_text(text)
    w = google_case(servers, users, seed)
    r = _run(w, protocol, faults, seed=seed, max_time=600.0)
    clean = _run(w, protocol, None, seed=seed, max_time=600.0)
    # A run stuck on a lost message ends as stalled (no allocation for the stall window) long
    # before the time cap; a time-capped run was still allocating — loss slows a run of many
    # small tasks (each handshake is ~10 messages, at 20 % loss most need a timeout).
    strands = spec.server_rule is not None and spec.server_rule.STRANDS
    assert r["status"] in (clean["status"], "saturated", "time-cap") or (strands and r["status"] == "stalled"), (
        r["end_reason"], text)
    assert r["ledger"]["lost"] == 0


@pytest.mark.parametrize("reconnect_every", [0, 10])
def test_the_sides_of_a_healed_partition_find_each_other_again(tmp_path: Path, reconnect_every: int) -> None:
    """Found by the property test above: three servers, among them both users' home, cut off
    for 2 s. By the heal their Cyclon views named only each other, and the mainland's only the
    mainland, so without reconnecting (`OverlayPeer.healing_cyclon_round`) the home's walks saw
    two servers for ever and the run stalled where the fault-free one saturates. Since issue 37
    an island cut off for longer than the failure detector's delay is fenced — its servers go
    down, as a membership service would declare them — and rejoins fresh from the bootstrap
    service when it heals, so the run saturates with or without reconnection."""
    faults = tmp_path / "faults.toml"
    faults.write_text('[[event]]\nat = 1.0\naction = "crash"\nservers = 1\nduration = 0.5\n'
                      '[[event]]\nat = 1.0\naction = "partition"\nservers = 3\nduration = 2.0\n')
    w = google_case(10, 2, 1)
    r = _run(w, "bdgdrf", faults, seed=1, max_time=600.0, reconnect_every=reconnect_every)
    assert r["status"] == "saturated" and r["ledger"]["lost"] == 0
    assert r["reconnect_every"] == reconnect_every
    assert [f["action"] for f in r["faults"]] == ["crash", "partition", "fence", "end of crash", "end of partition"]


@pytest.mark.parametrize(("protocol", "target", "status", "cause"), [
    ("dgdrf", "servers = 1", "saturated", "down for good since event 1"),
    ("drf", "servers = 1", "saturated", "down for good since event 1"),
    ("pdgdrf", "target = 'gateway'", "stalled", "gateway down for good since event 1"),
    ("drf", "target = 'scheduler'", "stalled", "scheduler down for good since event 1"),
])
def test_a_run_with_a_fault_that_never_heals_ends_for_a_reason_that_names_it(
        protocol: str, target: str, status: str, cause: str, tmp_path: Path) -> None:
    """Issue 37: a node down for good no longer holds the end of the run off until the time cap;
    saturation is judged over the servers that are up, a stall counts, and the reason says why."""
    scenario = tmp_path / "never.toml"
    scenario.write_text(f"[[event]]\nat = '5s'\naction = 'crash'\n{target}\n")
    import drfemu

    r = drfemu.run(protocol=protocol, machines=12, users=3, neighbors=2, faults=str(scenario), max_time="5000s",
                   stall_ticks=200)
    assert r.status == status and cause in r.end_reason, r.end_reason
    assert r.virtual_time_s < 1000 and r.ledger["lost"] == 0


def test_ddrf_gradient_keeps_its_fairness_through_a_crash_after_the_views_froze(tmp_path: Path) -> None:
    """Issue 37: Google 50 × 10, seed 3 (views frozen by 7.7 s), server 43 down from 10 s to 24 s.
    Its users' new home had frozen among servers without users and the survivors' views kept a
    hole: the minimum share at saturation was 0.17 of the fault-free run's, the error ratio 39 %
    against 3 %. Frozen views now re-form after a failure (`protocols.ddrf`)."""
    import drfemu

    scenario = tmp_path / "crash.toml"
    scenario.write_text('[[event]]\nat = "10s"\naction = "crash"\nservers = [43]\nduration = "14s"\n')
    clean = drfemu.run(protocol="ddrf-gradient", machines=50, users=10, seed=3)
    r = drfemu.run(protocol="ddrf-gradient", machines=50, users=10, seed=3, faults=str(scenario))
    assert r.status == "saturated" and r.overlay["thaws"] > 0
    assert r.min_dominant_share >= 0.95 * clean.min_dominant_share  # 0.976 of it; 0.167 before
    assert r.error_ratio <= 0.1  # 8 %: the thawed homes allocate in a view still settling; 39 % before
