"""Fault scenarios (issue 16): the file format, its one-line errors, and the network faults."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from drfemu.cli import main
from drfemu.kernel.latency import ConstantLatency, UniformLatency
from drfemu.kernel.messages import Accept, Proposal
from drfemu.nodes.network import Network
from drfemu.schema.faults import Action, ScenarioError, load_scenario, parse_scenario

ISSUE_EXAMPLE = """
loss = 0.01
[[event]]
at = "60s"
action = "crash"
servers = 10
[[event]]
at = "120s"
action = "recover"
servers = "crashed"
[[event]]
at = "200s"
action = "crash"
target = "scheduler"
duration = "60s"
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "faults.toml"
    path.write_text(text)
    return path


def test_the_issues_example_parses(tmp_path: Path) -> None:
    scenario = load_scenario(_write(tmp_path, ISSUE_EXAMPLE))
    assert scenario.loss == 0.01
    assert [(e.at, e.action, e.duration) for e in scenario.events] == [
        (60.0, Action.CRASH, None), (120.0, Action.RECOVER, None), (200.0, Action.CRASH, 60.0)]
    assert scenario.events[0].servers is not None and scenario.events[0].servers.count == 10
    assert scenario.events[1].servers is not None and scenario.events[1].servers.crashed


@pytest.mark.parametrize(("text", "expected"), [
    ("loss = 0.01\n[[event]]\nat = '1s'\naction = 'explode'\nservers = 1\n", "unknown action 'explode'"),
    ("[[event]]\nat = '-5s'\naction = 'heal'\n", "event 1: at: not a duration"),
    ("[[event]]\nat = -5\naction = 'heal'\n", "must be a time from 0 on"),
    ("[[event]]\nat = '5'\naction = 'heal'\n", "a unit is required"),
    ("loss = [", "not valid TOML"),
    ("loss = 1.5\n", "loss must be a probability in [0, 1)"),
    ("[[event]]\nat = '1s'\naction = 'crash'\n", "action 'crash' needs servers or a target"),
    ("[[event]]\nat = '1s'\naction = 'crash'\ntarget = 'moon'\n", "unknown target 'moon'"),
    ("[[event]]\nat = '1s'\naction = 'loss'\n", "action 'loss' needs 'loss'"),
    ("[[event]]\nat = '1s'\naction = 'heal'\nservers = 3\n", "action 'heal' takes no servers"),
    ("[[event]]\nat = '1s'\naction = 'latency'\nlatency = 'warp:1'\n", "latency: bad latency"),
    ("[[event]]\nat = '1s'\naction = 'recover'\ntarget = 'centre'\n", "a recovery cannot target 'centre'"),
    ("[[event]]\nat = '1s'\naction = 'loss'\nloss = 0.2\nlinks = [['s2', 's2']]\n", "links a server to itself"),
    ("[churn]\nservers = 0\nup = 'exp:10'\ndown = 'exp:5'\n", "churn: servers must be"),
    ("[churn]\nservers = 2\nup = 'gauss:10'\ndown = 'exp:5'\n", "unknown duration distribution"),
    ("flood = true\n", "unknown key(s) flood"),
])
def test_bad_files_get_one_line_naming_the_problem(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(ScenarioError) as error:
        load_scenario(_write(tmp_path, text))
    message = str(error.value)
    assert expected in message and "\n" not in message and str(tmp_path) in message


@pytest.mark.parametrize(("text", "expected"), [
    ("[[event]]\nat = '1s'\naction = 'partition'\nservers = ['nope']\n", "server 'nope' is not in the workload"),
    ("[[event]]\nat = '1s'\naction = 'partition'\nservers = [7]\n", "server 7 is not a position 0..2"),
    ("[[event]]\nat = '1s'\naction = 'partition'\nservers = 4\n", "4 servers named, the run has 3"),
    ("[[event]]\nat = '99s'\naction = 'heal'\n", "is not before the run's time cap (50 s)"),
    ("[loss_by_type]\nGossip = 0.1\n", "unknown message type(s) Gossip"),
    ("[[event]]\nat = '1s'\naction = 'crash'\ntarget = 'centre'\n", "target 'centre' needs a gradient protocol"),
    # issue 37: what would have done nothing, or something other than it says
    ("[loss_by_type]\nTaskExit = 0.1\n", "loss_by_type: loss on TaskExit would do nothing"),
    ("[[event]]\nat = '1s'\naction = 'loss'\nloss = 0.2\nmessages = ['PeerDown', 'PeerUp', 'WalkTask']\n",
     "event 1: loss on PeerDown, PeerUp would do nothing: they are delivered into a mailbox"),
    ("[[event]]\nat = '1s'\naction = 'loss'\nloss = 0.2\nlinks = [[1, 'b']]\n", "names one server twice"),
    ("[[event]]\nat = '1s'\naction = 'partition'\nservers = ['a', 'b']\nduration = '10s'\n"
     "[[event]]\nat = '5s'\naction = 'partition'\nservers = ['c', 'b']\n",
     "event 2: server 'b' is still on the island of event 1"),
])
def test_what_needs_the_run_is_checked_against_it(text: str, expected: str) -> None:
    scenario = parse_scenario(__import__("tomllib").loads(text), "s.toml")
    with pytest.raises(ScenarioError, match="^s.toml: ") as error:
        scenario.bind(["a", "b", "c"], central=True, gradient=False, max_time=50.0)
    assert expected in str(error.value)


def test_loss_by_link_wins_over_type_which_wins_over_the_overall_loss() -> None:
    network = Network(ConstantLatency(0.001), loss_rng=random.Random(1))
    assert network.fixed_us == 1000
    network.set_loss(0.999999, message_type=Proposal)
    network.set_loss(0.0, link=(1, 2))
    assert network.fixed_us == -1
    assert network.due(0, 2, Proposal(1, 0), 0) == -1
    assert network.due(1, 2, Proposal(1, 1), 0) == 1000
    assert network.due(0, 2, Accept(0, 1), 0) == 1000
    assert network.causes == {"loss": 1, "partition": 0, "down": 0}
    network.set_loss(None, message_type=Proposal)
    network.set_loss(None, link=(1, 2))
    assert network.fixed_us == 1000  # back on the batched path


def test_islands_and_down_actors_drop_by_cause() -> None:
    network = Network(UniformLatency(0.001, 0.002, random.Random(2)), loss_rng=random.Random(1))
    network.isolate([3, 4], 1)
    assert network.due(3, 4, Proposal(1, 3), 0) > 0  # inside one island
    assert network.due(3, 5, Proposal(1, 3), 0) == -1 and network.due(5, 4, Proposal(1, 5), 0) == -1
    network.heal([3])
    assert network.due(3, 5, Proposal(1, 3), 0) > 0 and network.due(5, 4, Proposal(1, 5), 0) == -1
    network.set_down(7, True)
    assert network.due(7, 1, Accept(7, 1), 0) == -1 and network.due(1, 7, Accept(1, 1), 0) == -1
    assert network.causes == {"loss": 0, "partition": 3, "down": 2}
    assert sum(t.dropped for t in network.tally().values()) == 0  # nothing was counted as sent
    network.heal()
    network.set_down(7, False)
    assert network.due(7, 4, Accept(7, 1), 0) > 0


def test_a_run_plays_its_scenario_and_logs_it(tmp_path: Path) -> None:
    faults = _write(tmp_path, """
[loss_by_type]
CyclonReply = 0.2
[[event]]
at = "2s"
action = "partition"
servers = 4
duration = "3s"
[[event]]
at = "6s"
action = "latency"
latency = "uniform:1ms:5ms"
duration = "2s"
""")
    out = tmp_path / "r.json"
    args = ["run", "--protocol", "dgdrf", "--machines", "12", "--users", "4", "--neighbors", "2",
            "--faults", str(faults), "--max-time", "30s", "--json", str(out)]
    assert main(args) == 0
    result = json.loads(out.read_text())
    actions = [f["action"] for f in result["faults"]]
    assert actions == ["partition", "fence", "end of partition", "latency", "end of latency"]
    assert len(result["faults"][0]["servers"]) == 4
    fence = result["faults"][1]  # cut off past the failure detector's delay: fenced until the heal
    assert fence["servers"] == result["faults"][0]["servers"] and fence["at"] < 2.5
    causes = result["messages_dropped_by_cause"]
    assert causes["loss"] > 0 and causes["partition"] > 0 and causes["down"] > 0
    assert result["messages_dropped"]["CyclonReply"] >= causes["loss"]
    again = tmp_path / "again.json"
    assert main(args[:-1] + [str(again)]) == 0
    second = json.loads(again.read_text())
    assert {k: v for k, v in second.items() if k not in ("wall_time_s", "events_per_s")} == {
        k: v for k, v in result.items() if k not in ("wall_time_s", "events_per_s")}


def test_drfemu_run_refuses_a_bad_scenario_before_running(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    faults = _write(tmp_path, "[[event]]\nat = '1s'\naction = 'crash'\ntarget = 'scheduler'\n")
    assert main(["run", "--protocol", "dgdrf", "--machines", "12", "--users", "4", "--faults", str(faults)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "needs a central protocol" in err[0]
    assert main(["run", "--faults", str(tmp_path / "missing.toml")]) == 2
    assert "not found" in capsys.readouterr().err


def test_a_sweep_config_names_its_scenario_relative_to_itself_and_by_content(tmp_path: Path) -> None:
    from drfemu.sweeps.config import load_sweep

    (tmp_path / "f.toml").write_text("loss = 0.01\n")
    config = tmp_path / "c.toml"
    config.write_text('[base]\nmachines = 8\nusers = 3\nfaults = "f.toml"\n[[grids]]\nprotocol = ["drf"]\n')
    (run, params), = load_sweep(config).runs.items()
    assert params["faults"] == str((tmp_path / "f.toml").resolve())
    (tmp_path / "f.toml").write_text("loss = 0.02\n")
    assert next(iter(load_sweep(config).runs)) != run
    config.write_text('[base]\nfaults = "nowhere.toml"\n')
    with pytest.raises(ScenarioError.__mro__[1], match="--faults: file .* not found"):
        load_sweep(config)


def test_a_run_with_faults_is_the_same_run_event_by_event(tmp_path: Path) -> None:
    from drfemu.tools.check import check_runs
    from drfemu.workloads.points import build_run_config, canonical_params, run_id

    faults = _write(tmp_path, "loss = 0.05\n[[event]]\nat = '1s'\naction = 'partition'\nservers = 3\n"
                              "duration = '2s'\n[[event]]\nat = '2s'\naction = 'latency'\nlatency = 'pair:1ms:9ms'\n")
    params = canonical_params({"protocol": "pdgdrf", "machines": 12, "users": 4, "neighbors": 2,
                               "faults": str(faults), "max_time": 20.0})
    (verdict,) = check_runs([(run_id(params), params)], build_run_config, workers=1)
    assert verdict.ok and verdict.events > 1000


def test_partitions_that_heal_or_come_one_after_another_are_accepted() -> None:
    text = ("[[event]]\nat = '1s'\naction = 'partition'\nservers = ['a', 'b']\nduration = '4s'\n"
            "[[event]]\nat = '5s'\naction = 'partition'\nservers = ['b']\n"  # its island healed at 5 s
            "[[event]]\nat = '6s'\naction = 'heal'\n"
            "[[event]]\nat = '7s'\naction = 'partition'\nservers = ['b', 'c']\n")
    scenario = parse_scenario(__import__("tomllib").loads(text), "s.toml")
    assert scenario.bind(["a", "b", "c"], central=True, gradient=False, max_time=50.0) == {"a": 0, "b": 1, "c": 2}


def test_a_latency_that_outlasts_dgdrfs_centre_check_is_refused_for_it(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """DGDRF's check must be answered within the tick it was sent in (a later acknowledgement
    never counts): a round trip of 110 ms at the 100 ms tick stalled the run for good."""
    def bind(latency: str, within: float | None) -> None:
        text = f"[[event]]\nat = '1s'\naction = 'latency'\nlatency = '{latency}'\n"
        parse_scenario(__import__("tomllib").loads(text), "s.toml").bind(["a", "b"], central=False, gradient=True,
                                                                         max_time=50.0, round_trip_within=within)

    bind("50ms", 0.1)  # a 100 ms round trip is answered before the next tick
    bind("uniform:30ms:90ms", 0.1)  # some round trips are short enough: DGDRF slows down (docs/live.md)
    bind("uniform:1ms:200ms", None)  # protocols without the check take any latency
    for latency in ("55ms", "uniform:51ms:90ms", "pair:60ms:80ms"):
        with pytest.raises(ScenarioError, match="longer than the 100 ms tick"):
            bind(latency, 0.1)
    scenario = _write(tmp_path, "[[event]]\nat = '1s'\naction = 'latency'\nlatency = '55ms'\n")
    assert main(["run", "--protocol", "dgdrf", "--machines", "12", "--users", "3", "--faults", str(scenario)]) == 2
    assert "every round trip at least 110 ms" in capsys.readouterr().err
    assert main(["run", "--protocol", "pdgdrf", "--machines", "12", "--users", "3", "--faults", str(scenario),
                 "--max-time", "60s"]) == 0
