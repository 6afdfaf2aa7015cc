"""The fault campaign (issue 37): drawn schedules, the judge of a case, the report, the command."""

from __future__ import annotations

import json
from dataclasses import replace
import random
import tomllib
from pathlib import Path
from typing import Any

import pytest

from drfemu.cli import main
from drfemu.kernel.errors import InputError
from drfemu.protocols.registry import PROTOCOLS
from drfemu.reports.fault_campaign import BEGIN, END, campaign_rows, failed, with_campaign
from drfemu.schema.faults import Action, parse_scenario
from drfemu.sweeps.campaign import campaign_cases, parse_sizes
from drfemu.workloads.fault_schedules import BURST, ScheduleBounds, random_schedule


def _crashes_for_good(text: str, servers: int = 20) -> int:
    """How many crash events of `text` name servers that no duration and no later recover heals."""
    scenario = parse_scenario(tomllib.loads(text))
    scenario.bind([f"s{i}" for i in range(servers)], central=True, gradient=True, max_time=1000.0)
    recovered = [(e.at, e.servers) for e in scenario.events if e.action is Action.RECOVER]
    return sum(e.action is Action.CRASH and e.servers is not None and e.duration is None
               and not any(at > e.at and named == e.servers for at, named in recovered)
               for e in scenario.events)


def test_a_drawn_schedule_is_valid_bounded_and_heals() -> None:
    rng = random.Random(7)
    bounds = ScheduleBounds(max_loss=0.1)
    for _ in range(200):
        text = random_schedule(rng, 20, central=True, gradient=True, bounds=bounds)
        scenario = parse_scenario(tomllib.loads(text))
        scenario.bind([f"s{i}" for i in range(20)], central=True, gradient=True, max_time=1000.0)
        assert scenario.loss <= 0.1 and all(p <= 0.1 for p in scenario.loss_by_type.values())
        for event in scenario.events:
            assert bounds.start <= event.at <= bounds.horizon + bounds.longest
            if event.action is Action.LOSS and event.loss is not None and event.loss > 0.1:
                assert event.duration is not None and event.duration <= BURST  # heavy loss comes in bursts
            if event.action in (Action.PARTITION, Action.LOSS, Action.LATENCY) or event.target is not None:
                assert event.duration is not None
        assert _crashes_for_good(text) == 0  # every fault heals
        assert scenario.churn is None or scenario.churn.end is not None


def test_a_permanent_schedule_crashes_servers_for_good() -> None:
    rng = random.Random(8)
    texts = [random_schedule(rng, 20, central=False, gradient=True, transient=False) for _ in range(50)]
    assert all(_crashes_for_good(text) >= 1 for text in texts)


def test_the_same_seed_draws_the_same_cases_and_every_protocol_runs_endless_and_finite() -> None:
    names = sorted(PROTOCOLS)
    first = campaign_cases(4 * len(names), 3, names, parse_sizes("6x2,100x20"))
    assert first == campaign_cases(4 * len(names), 3, names, parse_sizes("6x2,100x20"))
    assert first != campaign_cases(4 * len(names), 4, names, parse_sizes("6x2,100x20"))
    for name in names:
        assert {c.finite for c in first if c.protocol == name} == {False, True}


@pytest.mark.parametrize("text", ["6", "6x", "x2", "1x1", "6x2,ax3"])
def test_a_bad_size_is_one_line_naming_it(text: str) -> None:
    with pytest.raises(InputError, match="SERVERSxUSERS"):
        parse_sizes(text)


def _record(**kw: Any) -> dict[str, Any]:
    base = {"index": 0, "protocol": "drf", "machines": 6, "users": 2, "finite": False, "scenario": "s.toml",
            "twin_status": "saturated", "twin_min_share": 0.5, "twin_virtual_time_s": 10.0, "status": "saturated",
            "end_reason": "", "ended": True, "by_design": False, "min_share": 0.4, "virtual_time_s": 12.0, "lost": 0,
            "reruns": 0, "resubmitted": 3, "deterministic": True, "log_ok": True, "log_violation": None}
    return base | kw


def test_a_case_fails_for_each_thing_it_got_wrong() -> None:
    assert failed(_record()) == []
    assert failed(_record(lost=1, deterministic=False)) == ["lost", "not deterministic"]
    assert failed(_record(ended=False, log_ok=False)) == ["log refused", "did not end"]
    assert failed({"error": "CapacityViolation: …"}) == ["raised"]


def test_the_table_gives_each_protocol_its_failures_and_ratios() -> None:
    rows = campaign_rows([_record(), _record(min_share=0.25, lost=2),
                          _record(finite=True, virtual_time_s=15.0), _record(protocol="probe", status="stalled",
                                                                             by_design=True)])
    drf, probe = rows
    assert (drf["endless"], drf["finite"], drf["lost"]) == (2, 1, 1)
    assert drf["min share / fault-free (median / worst)"] == "0.650 / 0.500"
    assert drf["finite run length / fault-free (median / worst)"] == "1.500 / 1.500"
    assert probe["ended by design"] == 1


def test_only_a_rule_s_own_design_excuses_fitting_tasks_left() -> None:
    from drfemu.sweeps.campaign import ends_by_design

    case = campaign_cases(1, 1, ["drf"], parse_sizes("6x2"))[0]
    assert ends_by_design(replace(case, protocol="c-adrf"), "blocked")
    assert not ends_by_design(replace(case, protocol="c-adrf"), "stalled")  # its stalls are failures since issue 52
    for protocol in ("drf", "dgdrf", "pdgdrf", "bdgdrf", "probe"):
        assert not ends_by_design(replace(case, protocol=protocol), "stalled")


def test_the_campaign_section_is_replaced_and_kept_by_the_fault_report() -> None:
    page = "# Fault study\n\nbody\n"
    once = with_campaign(page, "## Campaign\nfirst\n")
    assert once.count(BEGIN) == 1 and "first" in once and once.startswith(page.rstrip("\n"))
    twice = with_campaign(once, "## Campaign\nsecond\n")
    assert "first" not in twice and "second" in twice and twice.count(END) == 1
    assert with_campaign(twice, None) == twice  # regenerating the study keeps the campaign


def test_the_command_runs_a_small_campaign_and_writes_its_section(tmp_path: Path) -> None:
    report = tmp_path / "faults-results.md"
    report.write_text("# Fault study\n")
    code = main(["faults-campaign", "--schedules", "6", "--sizes", "6x2,10x3", "--protocols", "drf,dgdrf,probe",
                 "--out", str(tmp_path / "c"), "--report", str(report), "--workers", "1"])
    assert code == 0
    records = [json.loads(line) for line in (tmp_path / "c" / "campaign.jsonl").read_text().splitlines()]
    assert len(records) == 6 and all(not failed(r) for r in records)
    assert all(r["log_ok"] and r["deterministic"] and r["log_records"] > 0 for r in records)
    assert len(list((tmp_path / "c" / "scenarios").iterdir())) == 6
    page = report.read_text()
    assert page.startswith("# Fault study") and "| dgdrf |" in page and "6 cases, 0 failed" in page


@pytest.mark.parametrize("args, message", [
    (["--schedules", "0"], "--schedules"), (["--max-loss", "0.5"], "--max-loss"),
    (["--protocols", "nope"], "nope"), (["--sizes", "6by2"], "SERVERSxUSERS"), (["--faults", "sometimes"], "--faults")])
def test_bad_campaign_options_are_one_line(tmp_path: Path, args: list[str], message: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["faults-campaign", "--out", str(tmp_path / "c"), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_a_campaign_resumes_where_it_stopped(tmp_path: Path) -> None:
    from drfemu.sweeps.campaign import run_campaign
    from drfemu.workloads.points import run_workload

    cases = campaign_cases(4, 2, ["drf", "dgdrf"], parse_sizes("6x2"))
    calls: list[int] = []

    def counting(workload: Any, params: Any, record: Any) -> dict[str, Any]:
        calls.append(1)
        return run_workload(workload, params, record)

    first = run_campaign(cases[:2], tmp_path, counting)
    ran = len(calls)
    assert ran == 2 + 2 * 2  # two twins, each case twice
    again = run_campaign(cases, tmp_path, counting)
    assert len(calls) - ran == 2 + 2 * 2 and again[:2] == first  # only the two new cases and their twins


def test_determinism_is_judged_on_every_field_but_the_wall_clocks() -> None:
    from drfemu.sweeps.campaign import _digest

    document = {"events": 10, "run_time_s": 5.0, "wall_time_s": 0.3, "events_per_s": 33.0}
    assert _digest(document) == _digest(document | {"wall_time_s": 0.9, "events_per_s": 11.0})
    assert _digest(document) != _digest(document | {"run_time_s": 5.1})
