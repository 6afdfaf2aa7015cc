"""The replayable run log (issue 37): `drfemu run --log` holds every fact a tool written without
this code needs, and `drfemu check-log` re-checks capacity and the tasks from the log alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from drfemu.cli import main
from drfemu.tools.log_check import check_log

FAULTS = """loss = 0.02
[[event]]
at = "5s"
action = "crash"
servers = 2
duration = "10s"
[[event]]
at = "8s"
action = "partition"
servers = 3
duration = "5s"
"""


def _logged(tmp_path: Path, *args: str) -> list[dict[str, Any]]:
    log = tmp_path / "run.jsonl"
    assert main(["run", *args, "--log", str(log)]) == 0
    assert main(["check-log", str(log)]) == 0
    return [json.loads(line) for line in log.read_text().splitlines()]


@pytest.mark.parametrize("protocol", ["pdgdrf", "drf", "probe"])
def test_a_faulty_runs_log_passes_the_log_only_checker(protocol: str, tmp_path: Path) -> None:
    scenario = tmp_path / "faults.toml"
    scenario.write_text(FAULTS)
    records = _logged(tmp_path, "--protocol", protocol, "--machines", "16", "--users", "4", "--neighbors", "2",
                      "--faults", str(scenario), "--max-time", "120s")
    kinds = {r["event"] for r in records}
    assert records[0]["event"] == "run" and len(records[0]["servers"]) == 16
    assert {"submit", "start", "allocation", "crash", "recover", "fault"} <= kinds
    crashed = [r["actor"] for r in records if r["event"] == "crash"]
    assert crashed and all(a in {s["id"] for s in records[0]["servers"]} for a in crashed)
    assert all(isinstance(s, str) for r in records if r["event"] == "fault" for s in r.get("servers", []))


def test_a_finite_runs_log_accounts_for_every_task(tmp_path: Path) -> None:
    workload = Path(__file__).resolve().parent.parent / "configs" / "workloads" / "finite-10x3.json"
    records = _logged(tmp_path, "--protocol", "pdgdrf", "--workload", str(workload), "--neighbors", "2")
    result = check_log(records)
    assert result.ok and result.ledger["submitted"] == result.ledger["started"] == result.ledger["ended"] > 0
    assert result.ledger["running"] == 0


def _header() -> dict[str, Any]:
    return {"event": "run", "time": 0.0, "resources": ["cpu"], "servers": [{"id": "s0", "capacity": [1.0]}],
            "users": ["a"]}


def _task(kind: str, task: int, demand: float = 0.5, server: str = "s0", time: float = 1.0) -> dict[str, Any]:
    return {"event": kind, "time": time, "user": "a", "task": task, "server": server, "demand": [demand]}


@pytest.mark.parametrize(("records", "needle"), [
    ([_task("submit", 0), _task("submit", 1), _task("start", 0, 0.6), _task("start", 1, 0.6)], "over its capacity"),
    ([_task("submit", 0), _task("start", 0), _task("start", 0)], "while it runs on s0"),
    ([_task("start", 0)], "without having been submitted"),
    ([_task("submit", 0), _task("end", 0)], "where it is not running"),
    ([_task("submit", 0), {"event": "crash", "time": 1.0, "actor": "s0"}, _task("start", 0)], "which is down"),
])
def test_the_checker_names_the_first_violation(records: list[dict[str, Any]], needle: str) -> None:
    result = check_log([_header(), *records])
    assert not result.ok and needle in (result.violation or "")


def test_a_crash_kills_what_ran_there_and_frees_its_room() -> None:
    records = [_header(), _task("submit", 0, 0.8), _task("start", 0, 0.8),
               {"event": "crash", "time": 2.0, "actor": "s0"}, {"event": "recover", "time": 3.0, "actor": "s0"},
               _task("submit", 1, 0.8), _task("start", 1, 0.8, time=4.0)]
    result = check_log(records)
    assert result.ok and result.ledger["killed"] == 1 and result.ledger["running"] == 1


def test_a_file_that_is_not_a_run_log_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"event": "start"}\n')
    assert main(["check-log", str(bad)]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0


def test_a_device_runs_log_names_the_devices_and_passes(tmp_path: Path) -> None:
    records = _logged(tmp_path, "--protocol", "bdgdrf", "--workload", "gpu-cluster", "--machines", "20", "--users",
                      "8", "--devices", "gpu", "--placement", "min-fragmentation")
    assert records[0]["devices"] == "gpu"
    gpu_starts = [r for r in records if r["event"] == "start" and r["demand"][2] > 0]
    assert gpu_starts and all(len(r["devices"]) == max(1, round(r["demand"][2])) for r in gpu_starts)


def _device_header() -> dict[str, Any]:
    return {"event": "run", "time": 0.0, "resources": ["cpu", "gpu"], "devices": "gpu",
            "servers": [{"id": "s0", "capacity": [8.0, 2.0]}], "users": ["a"]}


def _on(task: int, gpu: float, devices: list[int]) -> list[dict[str, Any]]:
    start = {**_task("start", task), "demand": [1.0, gpu], "devices": devices}
    return [{**_task("submit", task), "demand": [1.0, gpu]}, start]


@pytest.mark.parametrize(("tasks", "needle"), [
    ([(0, 0.6, [0]), (1, 0.6, [0])], "device 0 would hold 1.2"),  # 1.2 GPU of 2 in all: the scalar check passes
    ([(0, 0.5, [0, 1])], "needs 1 device(s)"),  # a fraction across two devices
    ([(0, 0.5, [0]), (1, 1.0, [0])], "device 0 would hold 1.5"),  # a whole GPU on a partly used device
    ([(0, 2.0, [1])], "needs 2 device(s)"),
])
def test_the_checker_refuses_what_no_device_can_hold(tasks: list[tuple[int, float, list[int]]], needle: str) -> None:
    records = [_device_header()] + [r for task, gpu, devices in tasks for r in _on(task, gpu, devices)]
    result = check_log(records)
    assert not result.ok and needle in (result.violation or "")
    fine = check_log([_device_header(), *_on(0, 0.6, [0]), *_on(1, 0.6, [1])])
    assert fine.ok
