"""`drfemu live-report` (reports.live_compare): grouping, pairing by seed, bad input."""

from __future__ import annotations

from typing import Any

import pytest

from drfemu.kernel.errors import InputError
from drfemu.reports.live_compare import live_report


def _document(seed: int, min_share: float, scale: float | None = None, protocol: str = "drf") -> dict[str, Any]:
    document: dict[str, Any] = {
        "protocol": protocol, "machines": 10, "users": 3, "neighbors": 5, "tick_s": 0.1, "latency": "constant 1ms",
        "seed": seed, "min_dominant_share": min_share, "gini": 0.01, "error_ratio": 0.0, "run_time_s": 50.0,
        "messages_total": 700, "status": "saturated", "wall_time_s": 1.0, "finite_tasks": False,
    }
    if scale is not None:
        document["live"] = {"time_scale": scale, "one_way_latency_us": {"p50": 90.0, "p99": 400.0},
                            "ticks_late_over_half_tick": 2}
    return document


def _rows(text: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in text.splitlines()[2:]]


def test_live_groups_sit_beside_their_virtual_twins_with_the_largest_paired_difference() -> None:
    documents = [("v1", _document(1, 0.30)), ("v2", _document(2, 0.40)),
                 ("l1", _document(1, 0.33, 0.1)), ("l2", _document(2, 0.40, 0.1)), ("m1", _document(1, 0.30, 0.01))]
    rows = _rows(live_report(documents))
    assert [row[1] for row in rows] == ["virtual", "live × 0.1", "live × 0.01"]
    assert rows[0][4] == "0.3500" and rows[1][4] == "0.3650"
    assert rows[0][5] == "–"
    assert rows[1][5] == "+4.29 % / +10.00 % (2 of 2 paired)" and rows[2][5] == "+0.00 % / +0.00 % (1 of 1 paired)"
    assert rows[1][11] == "90 / 400" and rows[1][12] == "4"


def test_every_variant_is_paired_with_the_plain_virtual_run_at_the_assumed_latency() -> None:
    resilient = {**_document(1, 0.31), "fault_scenario": "/x/configs/faults/none.toml"}
    jittered = {**_document(1, 0.27), "latency": "uniform 0.5–1.5ms"}
    rows = _rows(live_report([("l", _document(1, 0.33, 0.1)), ("j", jittered), ("r", resilient),
                              ("v", _document(1, 0.30))]))
    assert [row[1] for row in rows] == ["virtual", "virtual, --faults none.toml",
                                        "virtual, latency uniform 0.5–1.5ms", "live × 0.1"]
    assert [row[5] for row in rows] == ["–", "+3.33 % / +3.33 % (1 of 1 paired)",
                                        "-10.00 % / -10.00 % (1 of 1 paired)", "+10.00 % / +10.00 % (1 of 1 paired)"]


def test_a_live_run_without_its_twin_is_still_reported() -> None:
    rows = _rows(live_report([("l1", _document(1, 0.33, 0.1, protocol="pdgdrf"))]))
    assert len(rows) == 1 and rows[0][1] == "live × 0.1" and rows[0][5] == "–"


@pytest.mark.parametrize("documents, message", [
    ([("a.json", {"protocol": "drf"})], "a.json: not a run's result document"),
    ([("a", _document(1, 0.3)), ("b", _document(1, 0.31))], "b: a second run of seed 1"),
    ([("f", {**_document(1, 0.3), "finite_tasks": True})], "f: a run of tasks that end"),
])
def test_bad_input_is_named(documents: list[tuple[str, dict[str, Any]]], message: str) -> None:
    with pytest.raises(InputError, match=message):
        live_report(documents)
