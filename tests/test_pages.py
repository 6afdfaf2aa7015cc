"""A run's page and a sweep's (issue 61): samples that do not change the run, bounded in number,
a typed table, and pages checked in a real browser (headless Chromium; skipped without it)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import drfemu
from drfemu.assembly.run import Run
from drfemu.cli import main
from drfemu.nodes.trace import EventTrace
from drfemu.observers.samples import Sampler
from drfemu.reports.run_page import run_charts, run_page
from drfemu.workloads.points import build_run_config, canonical_params
from tests.browser import ARTIFACTS, browse, needs_browser

ROOT = Path(__file__).resolve().parents[1]


def _comparable(document: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in document.items() if k not in ("wall_time_s", "events_per_s", "samples")}


def test_a_sampled_run_is_the_same_run_event_for_event() -> None:
    params = canonical_params({"protocol": "pdgdrf", "machines": 16, "users": 5, "neighbors": 2})
    runs = []
    for samples in (0, 40):
        trace = EventTrace()
        result = Run(build_run_config(params), trace=trace, samples=samples).execute()
        runs.append((trace.digest(), _comparable(result.to_dict()), result.samples))
    assert runs[0][:2] == runs[1][:2]
    assert runs[0][2] is None and runs[1][2] is not None


def test_samples_stay_between_points_and_twice_as_many_and_end_at_the_runs_end() -> None:
    result = drfemu.run(protocol="drf", machines=30, users=6, samples=7)
    table = result.samples
    assert table is not None
    n = len(table.time_s)
    assert 7 <= n <= 2 * 7 + 1 and table.time_s[-1] == result.virtual_time_s
    assert table.time_s == sorted(table.time_s) and table.every_ticks > 1
    gaps = {round(b - a, 6) for a, b in zip(table.time_s[:-2], table.time_s[1:-1])}
    assert gaps == {round(table.every_ticks * result.tick_s, 6)}  # evenly spaced, the end aside
    assert table.allocations[-1] == result.allocations and table.min_share[-1] == pytest.approx(result.min_dominant_share)
    assert set(table.dominant_shares) == set(result.tasks) and table.drf_reference is not None
    assert table.waiting is None and table.ideal_view_fraction is None  # endless users; no gradient
    assert table.started[-1] == result.allocations and table.delay_total_s == sorted(table.delay_total_s)


def test_the_samples_are_a_dataframe_with_a_column_per_user() -> None:
    pytest.importorskip("pandas", reason="samples_table needs pandas (the tables extra)")
    result = drfemu.run(protocol="drf", machines=30, users=6, samples=7)
    table = result.samples
    assert table is not None
    frame = result.samples_table()
    assert len(frame) == len(table.time_s) and "share:" + next(iter(table.dominant_shares)) in frame.columns


def test_the_sampler_refuses_a_size_it_cannot_keep() -> None:
    with pytest.raises(ValueError):
        Sampler(drfemu.google_case(5, 2, seed=1), None, dict, points=0)  # type: ignore[arg-type]
    with pytest.raises(drfemu.InputError, match="--samples"):
        drfemu.run(protocol="drf", machines=10, users=3, samples=-1)


def test_a_run_page_has_a_chart_per_view_and_needs_no_network() -> None:
    result = drfemu.run(protocol="pdgdrf", machines=20, users=4, neighbors=2, samples=30)
    charts = {c.id: c for c in run_charts(result)}
    assert list(charts) == ["shares", "utilization", "allocations", "messages", "ideal-views", "delay"]
    assert len(charts["shares"].series) == 4 + 4 + 1  # each user, its DRF reference, the minimum
    points = len(result.samples.time_s)  # type: ignore[union-attr]
    assert all(len(s.x) == points for s in charts["utilization"].series)
    page = run_page(result)
    assert not re.search(r"(src|href)\s*=\s*['\"]?(https?:)?//", page)  # nothing fetched from anywhere
    finite = drfemu.run(protocol="drf", workload=str(ROOT / "configs/workloads/finite-10x3.json"), samples=20)
    assert {"queue", "delays"} <= {c.id for c in run_charts(finite)}


def test_show_draws_a_kept_result_and_refuses_one_without_samples(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    kept, plain = tmp_path / "kept.json", tmp_path / "plain.json"
    assert main(["run", "--machines", "12", "--users", "3", "--samples", "20", "--json", str(kept)]) == 0
    assert main(["run", "--machines", "12", "--users", "3", "--json", str(plain)]) == 0
    assert "samples" in json.loads(kept.read_text()) and "samples" not in json.loads(plain.read_text())
    assert main(["show", str(kept), "--html", str(tmp_path / "kept.html")]) == 0
    assert (tmp_path / "kept.html").read_text().startswith("<!doctype html>")
    capsys.readouterr()
    assert main(["show", str(plain), "--html", str(tmp_path / "plain.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no samples" in err
    assert main(["run", "--machines", "12", "--users", "3", "--samples", "0", "--html", str(tmp_path / "x.html")]) == 2


# -- in a real browser ---------------------------------------------------------------------------
def _expect_drawn(seen: dict[str, Any], charts: list[Any]) -> None:
    assert seen["errors"] == [] and seen["console"] == []
    assert seen["drawn"] == {c.id: {"series": len(c.series), "points": [len(s.x) for s in c.series]} for c in charts}


@needs_browser
@pytest.mark.slow
def test_a_run_page_opens_offline_with_every_chart_drawn(tmp_path: Path) -> None:
    page = tmp_path / "run.html"
    assert main(["run", "--protocol", "pdgdrf", "--html", str(page), "--json", str(tmp_path / "run.json")]) == 0
    result = drfemu.RunResult.of_document(json.loads((tmp_path / "run.json").read_text()))
    seen = browse(page, ARTIFACTS / "run-page.png")
    _expect_drawn(seen, run_charts(result))
    assert page.stat().st_size < 2_000_000


@needs_browser
@pytest.mark.slow
def test_a_fault_scenarios_windows_and_a_finite_runs_queue_show_on_their_pages(tmp_path: Path) -> None:
    scenario = tmp_path / "faults.toml"
    scenario.write_text('[[event]]\nat = "5s"\naction = "loss"\nloss = 0.3\nduration = "10s"\n'
                        '[[event]]\nat = "20s"\naction = "crash"\ntarget = "centre"\nduration = "10s"\n')
    faulted = tmp_path / "faults.html"
    assert main(["run", "--protocol", "pdgdrf", "--machines", "20", "--users", "4", "--neighbors", "2",
                 "--faults", str(scenario), "--html", str(faulted)]) == 0
    seen = browse(faulted, ARTIFACTS / "fault-page.png")
    assert seen["errors"] == [] and seen["console"] == []
    assert seen["dom"].count('class="band"') >= 4  # at least one window on each chart over time
    finite = tmp_path / "finite.html"
    assert main(["run", "--protocol", "drf", "--workload", str(ROOT / "configs/workloads/finite-10x3.json"),
                 "--html", str(finite)]) == 0
    seen = browse(finite)
    assert seen["errors"] == [] and {"queue", "delays"} <= set(seen["drawn"])


@needs_browser
@pytest.mark.slow
def test_a_sweeps_report_page_draws_its_figures_and_links_the_runs_pages(tmp_path: Path) -> None:
    config = tmp_path / "small.toml"
    config.write_text("""name = "small"
title = "pages"
[base]
machines = 12
users = 3
neighbors = 2
[[grids]]
protocol = ["drf", "pdgdrf"]
users = [3, 4]
[[figures]]
id = "1"
kind = "lines"
x = "users"
y = "min_dominant_share"
series = "protocol"
""")
    out = tmp_path / "sweep"
    assert main(["sweep", str(config), "--out", str(out), "--workers", "1", "--pages"]) == 0
    assert main(["report", str(out)]) == 0
    seen = browse(out / "report" / "report.html", ARTIFACTS / "sweep-page.png")
    assert seen["errors"] == [] and seen["console"] == []
    assert seen["drawn"] == {"small-1": {"series": 2, "points": [2, 2]}}
    links = re.findall(r'href="([^"]+\.html)"', seen["dom"])
    assert len(links) == 4 and all((out / "report" / link).resolve().is_file() for link in links)
    record = json.loads(next((out / "runs").glob("*.json")).read_text())
    assert "samples" not in record["result"]  # the record is an unsampled run's
