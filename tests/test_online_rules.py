"""The online rules (seed 002 §V), the trace's first hour, and the emulator's central online
protocols checked against the job-simulator oracle (`tests/oracles/jobsim.py`)."""

from __future__ import annotations

import pytest

from drfemu.assembly.config import RunConfig
from drfemu.assembly.run import run_emulation
from drfemu.kernel.resources import CapacityViolation
from drfemu.observers.swm import relative_rmse
from drfemu.policies.online import RULES, OnlineScheduler
from drfemu.policies.pool import PolicyInputError
from drfemu.protocols.central import PendingTask
from drfemu.protocols.cluster import ClusterView
from drfemu.protocols.online_central import CAdrf, NaiveAdrf, Wmmf
from drfemu.schema.workload import Server, Task, User, Workload
from drfemu.workloads.online import load_first_hour, offered_load
from tests.oracles.jobsim import Job, simulate


def starvation(rule: str, demand_2: tuple[float, float]) -> tuple[list[str], int]:
    """Seed 002 §V-A: <9 CPU, 18 GB>, three running <3,1> jobs of user 1 (with more queued);
    user 2 arrives; user 1's jobs then end one at a time. Returns who starts after each end,
    and after how many ends user 2's job started (0: never, within 6 ends)."""
    s = OnlineScheduler(rule, (9, 18))
    for job in range(10):
        s.submit(job, 1, (3, 1))
    assert s.schedule() == [0, 1, 2]
    s.submit(100, 2, demand_2)
    assert s.schedule() == []
    running, served, log = [0, 1, 2], 0, []
    for end in range(1, 7):
        s.finish(running.pop(0))
        started = s.schedule()
        log.append(",".join("u2" if j == 100 else "u1" for j in started) or "-")
        running += [j for j in started if j != 100]
        if 100 in started and not served:
            served = end
    return log, served


def test_printed_starvation_example_does_not_starve() -> None:
    """As printed (user 2 asks <1,2>), one freed <3,1> job already fits it: both rules serve it
    at the first end. The seed's argument needs a job larger than one freed job (docs/policies.md)."""
    assert starvation("naive-adrf", (1, 2))[1] == 1
    assert starvation("c-adrf", (1, 2))[1] == 1


def test_naive_adrf_starves_and_c_adrf_cumulates() -> None:
    """User 2 asks <4,2>: more than one freed job, at most two."""
    log, served = starvation("naive-adrf", (4, 2))
    assert served == 0 and log == ["u1"] * 6  # every freed slot goes back to user 1
    log, served = starvation("c-adrf", (4, 2))
    assert served == 2 and log[:2] == ["-", "u2"]  # waits one end, then serves user 2


def test_fifo_blocks_behind_its_head_and_wmmf_orders_by_one_resource() -> None:
    s = OnlineScheduler("fifo", (10, 10))
    s.submit(0, 1, (8, 1))
    s.submit(1, 2, (5, 1))
    s.submit(2, 3, (1, 1))
    assert s.schedule() == [0]  # job 1 does not fit, so job 2 waits behind it
    m = OnlineScheduler("mem", (10, 10))
    m.submit(0, 1, (1, 6))
    m.submit(1, 2, (6, 1))
    m.submit(2, 1, (1, 1))
    m.submit(3, 2, (1, 1))
    # User 2 holds 10 % of memory after its first job, user 1 60 %: user 2 goes first next.
    assert m.schedule() == [0, 1, 3, 2]


def test_rules_and_inputs_are_checked() -> None:
    with pytest.raises(PolicyInputError, match="unknown online rule"):
        OnlineScheduler("drf", (1, 1))
    with pytest.raises(PolicyInputError, match="more than the pool"):
        OnlineScheduler("fifo", (1, 1)).submit(0, 0, (2, 0.5))


@pytest.mark.parametrize("rule", RULES)
def test_simulation_never_overcommits_and_is_deterministic(rule: str) -> None:
    jobs = [Job(u, t, 30.0 + 7 * (k % 5), (1 + k % 3, 1 + (k * 7) % 4))
            for k, (u, t) in enumerate((k % 4, 3.0 * k) for k in range(60))]
    first = simulate(jobs, rule, (6, 6), sample_every=20)
    again = simulate(jobs, rule, (6, 6), sample_every=20)
    assert first.delays == again.delays and first.samples == again.samples
    assert all(d >= 0 for d in first.delays) and len(first.delays) == 60
    # Every start is checked against the free capacity (CapacityViolation otherwise); shares stay in [0, 1].
    assert all(0 <= x <= 1 + 1e-9 for sample in first.samples for x in sample.shares)


def test_a_start_beyond_capacity_is_caught() -> None:
    s = OnlineScheduler("naive-adrf", (4, 4))
    s.submit(0, 1, (3, 3))
    s.free[0] = 3.5
    assert s.schedule() == [0]
    s.submit(1, 1, (1, 1))
    s.free[1] = 0.5  # pretend memory was taken behind the scheduler's back
    assert s.schedule() == []  # the rule does not start what does not fit
    with pytest.raises(CapacityViolation):
        s._start(1, [])


def test_first_hour_extract_and_load() -> None:
    jobs, users = load_first_hour()
    assert len(jobs) == 37337 and len(users) == 43
    assert all(j.runtime >= 0 and j.demand[0] > 0 and j.demand[1] > 0 for j in jobs)
    cpu, mem = offered_load(jobs)
    assert 150 < cpu < 160 and 220 < mem < 230  # docs/policies.md: 153.1 and 226.5


def test_relative_rmse() -> None:
    assert relative_rmse([1, 2], [1, 2]) == 0
    assert relative_rmse([0, 2], [1, 2]) == pytest.approx((0.5) ** 0.5)


def _starvation_workload() -> tuple[Workload, list[Job]]:
    """Seed 002 §V-A as tasks that end: user 1 submits ten <3,1> tasks at 0 that would end one
    at a time (10 s apart); user 2 asks <4,2> at 1 s — more than one freed task, at most two."""
    one = [Task(0.0, 10.0 * (k + 1), (3.0, 1.0)) for k in range(10)]
    two = [Task(1.0, 5.0, (4.0, 2.0))]
    workload = Workload(("cpu", "mem"), (Server("pool", (9.0, 18.0)),),
                        (User("u1", (3.0, 1.0), tuple(one)), User("u2", (4.0, 2.0), tuple(two))))
    jobs = [Job(0, t.submit, t.duration, t.demand) for t in one] + [Job(1, t.submit, t.duration, t.demand) for t in two]
    return workload, jobs


@pytest.mark.parametrize(("protocol", "rule"), [("c-adrf", "c-adrf"), ("naive-adrf", "naive-adrf")])
def test_emulator_online_protocols_start_what_the_oracle_starts(protocol: str, rule: str) -> None:
    """The emulator's central protocol and the job simulator start the same tasks at the same
    times, up to the handshake (one start per user per 1 ms tick, 1 µs latency)."""
    workload, jobs = _starvation_workload()
    starts: dict[tuple[int, int], float] = {}
    result = run_emulation(RunConfig.build(workload, protocol=protocol, tick="1ms", latency="1us",
                                           allocations_per_tick=0, swm_every=0),
                           log=lambda _, **kw: starts.__setitem__((kw["user"], kw["task"]), kw["time"]))
    assert result["status"] == "finished" and result["ledger"]["lost"] == 0
    oracle = simulate(jobs, rule, (9, 18))
    expected = [job.submit + delay for job, delay in zip(jobs, oracle.delays)]
    emulated = [starts[(0, k)] for k in range(10)] + [starts[(1, 0)]]
    assert emulated == pytest.approx(expected, abs=0.02)
    user_2 = emulated[-1]
    if rule == "c-adrf":
        assert 20 <= user_2 < 20.1  # it waits one end, cumulates, starts at the second
    else:
        assert user_2 > 40  # every freed slot went back to user 1 while it had tasks


def test_online_rule_order_is_the_policy_librarys() -> None:
    """`wmmf` orders by one resource's held share, as the library's `mem` rule does."""
    view = ClusterView([(10, 10)])
    pending = [PendingTask(1, 0, (1, 1), 0.0, 1, (1.0, 6.0)), PendingTask(2, 0, (1, 1), 0.0, 2, (6.0, 1.0))]
    chosen, _ = Wmmf(wmmf_resource=1).choose(pending, view)  # type: ignore[misc]
    assert chosen.user == 2
    chosen, _ = Wmmf(wmmf_resource=0).choose(pending, view)  # type: ignore[misc]
    assert chosen.user == 1
    blocked = [PendingTask(1, 0, (20, 1), 0.0, 1, ()), PendingTask(2, 0, (1, 1), 0.0, 2, (5.0, 5.0))]
    assert CAdrf().choose(blocked, view) is None  # the poorest does not fit: nothing starts
    chosen, _ = NaiveAdrf().choose(blocked, view)  # type: ignore[misc]
    assert chosen.user == 2
