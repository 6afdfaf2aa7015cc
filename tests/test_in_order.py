"""`--placement in-order` (issue 60): a walk takes the fitting server first in the cluster's order."""

from __future__ import annotations

import json
from pathlib import Path

import drfemu
from drfemu.cli import main


def _burst_case(path: Path) -> Path:
    """Three 32-core servers; four users whose 8-core tasks arrive first and run long, and a user
    whose 32-core tasks (a whole server) arrive later and end soon."""
    servers = [{"id": f"s{i}", "capacity": [32.0, 128.0]} for i in range(3)]
    users = [{"id": f"small{i}", "demand": [8.0, 8.0], "tasks": [{"submit": float(i), "duration": 1000.0}]}
             for i in range(4)]
    users.append({"id": "big", "demand": [32.0, 32.0],
                  "tasks": [{"submit": 20.0, "duration": 10.0}, {"submit": 40.0, "duration": 10.0}]})
    path.write_text(json.dumps({"resources": ["cpu", "mem"], "servers": servers, "users": users}))
    return path


def _run(workload: Path, placement: str, protocol: str = "bdgdrf") -> drfemu.RunResult:
    options = {"neighbors": 2} if protocol != "drf" else {}
    return drfemu.run(protocol, str(workload), placement=placement, max_time=2000.0, allocation_log=True, **options)


def test_tasks_that_end_fill_the_first_server_and_leave_a_later_one_whole(tmp_path: Path) -> None:
    workload = _burst_case(tmp_path / "burst.json")
    in_order, spread = _run(workload, "in-order"), _run(workload, "keep-room")
    small_servers = {r["server"] for r in in_order.allocation_log if r["event"] == "allocation" and r["user"] != "big"}
    assert small_servers == {"s0"}
    assert in_order.queueing_delay_p99_by_user_s["big"] < 1.0  # a whole server was there when it came
    assert spread.queueing_delay_p99_by_user_s["big"] > 900.0  # keep-room spread the small tasks: none was whole
    assert in_order.placement_mode == "in-order"


def test_central_drf_in_order_is_first_fit(tmp_path: Path) -> None:
    workload = _burst_case(tmp_path / "burst.json")
    in_order, first_fit = _run(workload, "in-order", "drf"), _run(workload, "first-fit", "drf")
    assert in_order.allocation_log == first_fit.allocation_log
    assert in_order.queueing_delay_p99_by_user_s == first_fit.queueing_delay_p99_by_user_s


def test_in_order_runs_through_the_cli(tmp_path: Path) -> None:
    workload, out = _burst_case(tmp_path / "burst.json"), tmp_path / "run.json"
    assert main(["run", "--workload", str(workload), "--protocol", "bdgdrf", "--neighbors", "2",
                 "--placement", "in-order", "--max-time", "2000s", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["placement_mode"] == "in-order"
