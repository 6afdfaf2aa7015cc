"""No protocol stops while tasks still fit (issue 52): the stalls that were found, each by the
run that showed it.

- BDGDRF and PDGDRF after transient faults (`../shared/data/faults/*-stall-*.toml`): a user took a
  gateway's answer naming a server it had heard was down, sent its task there until the server
  came back, and was then homed twice — the stale share of the second home held every home's band
  below the user's true share. A user now ignores such an answer (`nodes.user`).
- C-ADRF on endless users, without faults: its lowest user's task fits nowhere, and with no task
  ending nothing frees room. The rule leaves fitting tasks by design; the run now ends *blocked*,
  with that reason, instead of stalling for 1,000 ticks (`observers.harness`).

And the campaign's judgment as a property: drawn transient schedules on small endless cases, for
every protocol.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import drfemu
from drfemu.kernel.messages import PeerDown, PeerUp, ServerReply, ServerRequest, TaskRequest
from drfemu.nodes.user import UserNode
from drfemu.protocols.registry import PROTOCOLS, GradientUse
from drfemu.reports.fault_campaign import failed
from drfemu.sweeps.campaign import CampaignCase, run_case, run_twin
from drfemu.workloads.fault_schedules import random_schedule
from drfemu.workloads.points import run_workload

FAULTS = Path(__file__).resolve().parents[2] / "shared" / "data" / "faults"


def _sent(user: UserNode) -> list[tuple[int, object]]:
    out = list(user.outbox)
    user.outbox.clear()
    return out


def test_a_user_ignores_a_gateway_answer_naming_a_server_it_heard_is_down() -> None:
    user = UserNode(10, gateway=9, demand=(1.0, 1.0), total=(10.0, 10.0), rto=0.05)
    user.start(0.0)
    assert [type(m) for _, m in _sent(user)] == [ServerRequest]
    user.on_peer_down(PeerDown(3), 0.01)
    user.on_server_reply(ServerReply(3), 0.02)  # answered before the gateway heard of the crash
    assert _sent(user) == [] and user.allocator == -1
    user.on_server_reply(ServerReply(4), 0.03)  # the answer to the question asked again
    sent = _sent(user)
    assert [(dst, type(m)) for dst, m in sent] == [(4, TaskRequest)] and user.allocator == 4


def test_a_server_back_up_may_be_named_again() -> None:
    user = UserNode(10, gateway=9, demand=(1.0, 1.0), total=(10.0, 10.0), rto=0.05)
    user.start(0.0)
    _sent(user)
    user.on_peer_down(PeerDown(3), 0.01)
    user.on_peer_up(PeerUp(3), 0.02)
    user.on_server_reply(ServerReply(3), 0.03)
    assert [dst for dst, _ in _sent(user)] == [3]


def test_c_adrf_on_endless_users_ends_blocked_with_its_reason() -> None:
    """`drfemu workload google --machines 50 --users 10 --case-seed 4`, then C-ADRF: it stalled after
    1,356 allocations for 1,000 ticks; it now ends there, blocked, naming why."""
    result = drfemu.run(protocol="c-adrf", machines=50, users=10, case_seed=4)
    assert result.status == "blocked" and result.allocations == 1356
    assert "holds every allocation back for user" in result.end_reason and "no task ends" in result.end_reason
    assert result.virtual_time_s < result.run_time_s + 1.0  # ended at once, not 1,000 ticks later
    assert drfemu.run(protocol="naive-adrf", machines=50, users=10, case_seed=4).status == "saturated"


CRASHED_SCHEDULER = """\
loss = 0.2

[loss_by_type]
Proposal = 0.2
ProbeTask = 0.1

[[event]]
at = 14.421
action = "latency"
latency = "uniform:1ms:97ms"
duration = 17.111

[[event]]
at = 4.902
action = "crash"
target = "scheduler"
duration = 9.752

[churn]
servers = 5
up = "exp:22"
down = "exp:1"
start = "4.276s"
end = "14.902s"
"""


@pytest.mark.slow
def test_c_adrf_ends_blocked_when_an_accept_arrives_after_the_block(tmp_path: Path) -> None:
    """Campaign case 289 (issue 52): a task proposed before the rule blocked was accepted after
    the block was reported; the harness took that allocation for the block's end, and the run
    stalled after 940 allocations for 1,000 ticks. The scheduler now reports a block's end."""
    schedule = tmp_path / "faults.toml"
    schedule.write_text(CRASHED_SCHEDULER)
    result = drfemu.run(protocol="c-adrf", machines=50, users=10, case_seed=3, seed=425, neighbors=10,
                        faults=str(schedule))
    assert result.status == "blocked", result.end_reason
    assert result.allocations == 940 and result.ledger["lost"] == 0


LOST_REQUESTS = """\
loss = 0.2

[[event]]
at = 23.943
action = "latency"
latency = "uniform:1ms:74ms"
duration = 11.485

[[event]]
at = 12.701
action = "partition"
servers = 2
duration = 1.668

[[event]]
at = 7.650
action = "partition"
servers = [2, 7, 8]
duration = 17.421

[[event]]
at = 3.320
action = "crash"
target = "scheduler"
duration = 6.819
"""


@pytest.mark.slow
def test_c_adrf_is_not_blocked_while_a_fitting_user_s_task_is_on_its_way(tmp_path: Path) -> None:
    """Campaign case 49 (issue 52): the rule blocked on a user whose task fitted nowhere while
    another user, with no task yet, had its request lost; the run ended blocked at 34.3 s with
    that user at share 0. A block ends a run only once every fitting user's task is among those
    the rule weighed: the lost request came again, was served, and the run saturates."""
    schedule = tmp_path / "faults.toml"
    schedule.write_text(LOST_REQUESTS)
    result = drfemu.run(protocol="c-adrf", machines=20, users=5, case_seed=2, seed=991, neighbors=10,
                        faults=str(schedule))
    assert result.status == "saturated", result.end_reason
    assert min(result.dominant_shares.values()) > 0


def test_c_adrf_with_tasks_that_end_waits_and_finishes() -> None:
    finite = drfemu.synthetic_case(10, 3, seed=1, tasks=20, arrivals="poisson:2", durations="exp:5")
    assert drfemu.run(protocol="c-adrf", workload=finite).status == "finished"


@pytest.mark.slow
@pytest.mark.skipif(not FAULTS.is_dir(), reason=f"the shared fault schedules are not at {FAULTS}")
@pytest.mark.parametrize("protocol, machines, users, seed, schedule", [
    ("bdgdrf", 30, 6, 3, "bdgdrf-stall-g30.toml"),
    ("pdgdrf", 20, 5, 7, "pdgdrf-stall-g20.toml"),
])
def test_the_schedules_that_stalled_now_saturate(protocol: str, machines: int, users: int, seed: int,
                                                 schedule: str) -> None:
    result = drfemu.run(protocol=protocol, machines=machines, users=users, case_seed=seed,
                        faults=str(FAULTS / schedule))
    assert result.status == "saturated", result.end_reason
    assert result.ledger["lost"] == 0


@pytest.mark.slow
@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(draw=st.integers(0, 2**32 - 1), size=st.sampled_from([(6, 2), (10, 3), (20, 5)]), case_seed=st.integers(1, 5))
def test_after_transient_faults_an_endless_run_saturates_or_ends_by_design(
        protocol: str, draw: int, size: tuple[int, int], case_seed: int, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The campaign's judge on drawn transient schedules: no stall while a task fits, nothing lost,
    a clean log, the same result twice."""
    machines, users = size
    spec = PROTOCOLS[protocol]
    scenario = random_schedule(random.Random(draw), machines, central=spec.central_rule is not None,
                               gradient=spec.gradient is not GradientUse.OFF)
    case = CampaignCase(0, protocol, machines, users, finite=False, case_seed=case_seed, seed=draw % 1000 + 1,
                        scenario=scenario)
    path = tmp_path_factory.mktemp("schedule") / "faults.toml"
    path.write_text(scenario)
    record = run_case(case, path, run_twin(case, run_workload), run_workload)
    assert failed(record) == [], (record.get("error") or record.get("end_reason"), scenario)


def test_a_task_the_scheduler_forgot_is_never_launched_afterwards(tmp_path: Path) -> None:
    """The draw that found it (fifo, 10 × 3): a crash cut off a proposal the user had accepted, the
    user asked again, and with jittered latency the scheduler's `Forgotten` reached the user after
    its second proposal — the user gave the task up while the scheduler launched it."""
    spec = PROTOCOLS["fifo"]
    scenario = random_schedule(random.Random(5940), 10, central=spec.central_rule is not None,
                               gradient=spec.gradient is not GradientUse.OFF)
    case = CampaignCase(0, "fifo", 10, 3, finite=False, case_seed=1, seed=941, scenario=scenario)
    path = tmp_path / "faults.toml"
    path.write_text(scenario)
    record = run_case(case, path, run_twin(case, run_workload), run_workload)
    assert failed(record) == [], record.get("error") or record.get("end_reason")
