"""The order runs start in: a sweep's and a trace replay's, longest expected first."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from drfemu.sweeps import execute
from drfemu.sweeps.execute import order_runs
from drfemu.workloads.points import canonical_params


def _point(protocol: str, **given: Any) -> dict[str, Any]:
    return canonical_params({"protocol": protocol, "seed": 1, **given})


def test_live_gradients_first_then_other_distributed_then_central_larger_first() -> None:
    runs = {"drf-big": _point("drf", machines=400, users=40), "probe": _point("probe", machines=100, users=20),
            "pdgdrf-small": _point("pdgdrf", machines=50, users=20), "fifo": _point("fifo", machines=100, users=20),
            "pdgdrf-big": _point("pdgdrf", machines=200, users=20), "ddrf": _point("ddrf-random", machines=100,
                                                                                    users=20)}
    assert order_runs(runs) == ["pdgdrf-big", "pdgdrf-small", "probe", "ddrf", "drf-big", "fifo"]


def test_a_workload_file_is_read_once_however_many_runs_name_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from drfemu.workloads.online import online_case
    path = tmp_path / "workload.json"
    online_case(1, 0.8, None, 1).save(path)
    runs = {p: canonical_params({"protocol": p, "seed": 1, "workload": str(path)})
            for p in ("drf", "probe", "dgdrf", "bdgdrf")}
    reads: list[str] = []
    real = execute._workload_size

    def counted(name: str) -> tuple[int, int]:
        reads.append(name)
        return real(name)

    monkeypatch.setattr(execute, "_workload_size", counted)
    assert order_runs(runs) == ["dgdrf", "bdgdrf", "probe", "drf"]
    assert reads == [str(path)]


class _RecordOrder:
    """A run point that notes which protocol it was asked to run, in order, and returns a stand-in
    document (the replay stores what it is given)."""

    def __init__(self, log: Path) -> None:
        self.log = log

    def __call__(self, params: dict[str, Any]) -> dict[str, Any]:
        with self.log.open("a", encoding="utf-8") as f:
            f.write(params["protocol"] + "\n")
        return {"protocol": params["protocol"]}


def test_a_trace_replay_starts_its_runs_longest_expected_first_and_reports_them_as_given(tmp_path: Path) -> None:
    from drfemu.sweeps.online import run_online_protocols
    log = tmp_path / "started"
    given = ["drf", "probe", "fifo", "ddrf-random", "pdgdrf", "bdgdrf"]
    results = run_online_protocols(tmp_path / "out", given, _RecordOrder(log), {"seed": 1}, minutes=1, workers=1)
    assert log.read_text(encoding="utf-8").split() == ["pdgdrf", "bdgdrf", "probe", "ddrf-random", "drf", "fifo"]
    assert list(results) == given
    assert all(json.loads((tmp_path / "out" / f"{p}.json").read_text())["result"] == {"protocol": p} for p in given)
