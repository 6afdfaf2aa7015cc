"""Sweeps end to end: records, resuming, failures, Dask against the process pool, tables and reports."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import drfemu.workloads.points as runner_module
from drfemu.cli import main
from drfemu.kernel.errors import InputError
from drfemu.reports.data import PointData
from drfemu.reports.render import reference_cells, table_cells, write_report
from drfemu.sweeps.config import load_sweep
from drfemu.sweeps.execute import process_pool, run_sweep
from drfemu.sweeps.report_spec import check_table
from tests.browser import ARTIFACTS, browse, needs_browser

MEASURED_ON_THE_WALL = {"wall_time_s", "events_per_s"}

SMALL = """
name = "small"
title = "a small sweep"
seeds = [1, 2]
[base]
machines = 12
users = 4
[[grids]]
protocol = ["drf", "pdgdrf", "ddrf-gradient"]
neighbors = [2, 3]
[[tables]]
id = "t"
title = "minimum share"
rows = "protocol"
columns = "neighbors"
value = "min_dominant_share"
format = ".4f"
[[figures]]
id = "lines"
kind = "lines"
x = "neighbors"
y = "min_dominant_share"
series = "protocol"
[[figures]]
id = "ratio"
kind = "ratio"
numerator = { protocol = "pdgdrf" }
denominator = { protocol = "drf" }
x = "neighbors"
series = "users"
[[figures]]
id = "series"
kind = "error-series"
curves = [{ label = "pdgdrf", protocol = "pdgdrf", neighbors = 2 },
          { label = "pdgdrf, 1 %", protocol = "pdgdrf", neighbors = 2, tolerance = 0.01 }]
[[figures]]
id = "tolerance"
kind = "tolerance"
curves = [{ label = "ddrf-gradient", protocol = "ddrf-gradient", neighbors = 3 }]
"""


def config(tmp_path: Path, text: str = SMALL) -> Path:
    path = tmp_path / "small.toml"
    path.write_text(text, encoding="utf-8")
    return path


def comparable(record: dict[str, Any]) -> dict[str, Any]:
    """A record without what the wall clock measured."""
    result = {k: v for k, v in record["result"].items() if k not in MEASURED_ON_THE_WALL}
    return {**{k: v for k, v in record.items() if k != "result"}, "result": result}


def records(out: Path) -> dict[str, dict[str, Any]]:
    return {p.stem: json.loads(p.read_text()) for p in (out / "runs").glob("*.json")}


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sweep")
    summary = run_sweep(load_sweep(config(out)), out / "out", process_pool(2, runner_module.run_point))
    assert (summary.total, summary.ran, summary.failed) == (10, 10, 0)  # 2 drf + 4 pdgdrf + 4 ddrf-gradient
    return out / "out"


@pytest.mark.slow
def test_every_run_has_a_record_and_a_row(swept: Path) -> None:
    found = records(swept)
    assert len(found) == 10 and all(r["status"] == "ok" for r in found.values())
    with (swept / "runs.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert sorted(r["id"] for r in rows) == sorted(found)
    row = next(r for r in rows if r["protocol"] == "pdgdrf")
    assert row["experiments"] == "small" and row["outcome"] in ("saturated", "stalled")
    assert float(row["min_dominant_share"]) == found[row["id"]]["result"]["min_dominant_share"]
    assert "error_ratio_by_tolerance.0.01" in row and "placement.walks" in row
    pq = pytest.importorskip("pyarrow.parquet")
    table = pq.read_table(swept / "runs.parquet")
    assert table.num_rows == 10 and "min_dominant_share" in table.column_names


def test_a_second_sweep_runs_nothing(swept: Path, tmp_path: Path) -> None:
    before = {p.name: p.stat().st_mtime_ns for p in (swept / "runs").glob("*.json")}
    ran: list[str] = []

    def spy(todo: list[tuple[str, dict[str, Any]]]) -> Any:
        ran.extend(run for run, _ in todo)
        return iter(())

    summary = run_sweep(load_sweep(config(tmp_path)), swept, spy)
    assert ran == [] and summary.skipped == 10
    assert {p.name: p.stat().st_mtime_ns for p in (swept / "runs").glob("*.json")} == before


@pytest.mark.slow
def test_a_failed_run_is_recorded_and_the_sweep_goes_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    import drfemu.assembly.run as assembly

    real = assembly.run_emulation

    def flaky(run_config: Any, **kwargs: Any) -> Any:
        if run_config.params.protocol == "ddrf-gradient":
            raise RuntimeError("the emulator broke")
        return real(run_config, **kwargs)

    monkeypatch.setattr(assembly, "run_emulation", flaky)  # a sweep's worker imports it when it runs a point
    out = tmp_path / "out"
    assert main(["sweep", str(config(tmp_path)), "--out", str(out), "--workers", "1"]) == 1
    err = capsys.readouterr().err
    assert err.count("drfemu: run failed: ddrf-gradient-") == 4 and "RuntimeError: the emulator broke" in err
    found = records(out)
    failed = [r for r in found.values() if r["status"] == "failed"]
    assert len(found) == 10 and len(failed) == 4
    assert all("RuntimeError: the emulator broke" == r["error"] and "Traceback" in r["traceback"] for r in failed)
    # The next sweep retries only the failed runs.
    monkeypatch.setattr(assembly, "run_emulation", real)
    assert main(["sweep", str(config(tmp_path)), "--out", str(out), "--workers", "1"]) == 0
    assert "6 run(s) already finished" in capsys.readouterr().out
    assert all(r["status"] == "ok" for r in records(out).values())


@pytest.mark.slow
def test_an_interrupted_sweep_resumes_without_redoing_finished_runs(tmp_path: Path) -> None:
    text = SMALL.replace("machines = 12", "machines = 40").replace("users = 4", "users = 8").replace(
        '["drf", "pdgdrf", "ddrf-gradient"]', '["pdgdrf"]').replace("[2, 3]", "[2, 3, 4, 5]")
    path, out = config(tmp_path, text), tmp_path / "out"
    command = [sys.executable, "-m", "drfemu.cli", "sweep", str(path), "--out", str(out), "--workers", "1"]
    # A shell's background job ignores SIGINT, and the child would inherit that: restore it.
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while not list((out / "runs").glob("*.json")) and time.monotonic() < deadline:
        time.sleep(0.01)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130 and "run the same command to resume" in err, err
    finished = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in (out / "runs").glob("*.json")}
    assert 1 <= len(finished) < 8, "the interruption came mid-sweep"
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"{len(finished)} run(s) already finished" in done.stdout
    assert f"{8 - len(finished)} ran (0 failed)" in " ".join(done.stdout.split())
    after = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in (out / "runs").glob("*.json")}
    assert len(after) == 8 and all(after[name] == finished[name] for name in finished)


@pytest.mark.slow
def test_dask_local_cluster_gives_the_process_pools_results(swept: Path, tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        out = tmp_path / "dask"
        assert main(["sweep", str(config(tmp_path)), "--out", str(out), "--dask", cluster.scheduler_address]) == 0
    pool, dask = records(swept), records(out)
    assert sorted(pool) == sorted(dask)
    for run in pool:
        assert comparable(pool[run]) == comparable(dask[run])


@needs_browser
def test_every_kind_of_figure_draws_in_the_browser_as_its_png_does(swept: Path, tmp_path: Path) -> None:
    """The report page's charts hold the lines of the PNGs: lines, ratio (with its line at 1),
    error series (a line per run) and tolerance."""
    write_report(swept, tmp_path / "report")
    seen = browse(tmp_path / "report" / "report.html", ARTIFACTS / "sweep-report.png")
    assert seen["errors"] == [] and seen["console"] == []
    assert set(seen["drawn"]) == {"small-lines", "small-ratio", "small-series", "small-tolerance"}
    assert all(chart["series"] >= 1 and min(chart["points"]) >= 1 for chart in seen["drawn"].values())


def test_report_draws_tables_figures_and_one_html_page(swept: Path, tmp_path: Path) -> None:
    summary = write_report(swept, tmp_path / "report")
    assert (summary.tables, summary.figures, summary.runs, summary.missing) == (1, 4, 10, 0)
    md = (tmp_path / "report" / "report.md").read_text()
    page = (tmp_path / "report" / "report.html").read_text()
    assert "| protocol \\ neighbors | 2 | 3 |" in md and "(n=2)" in md
    assert page.count("<div data-chart=") == 4 and "<table>" in page and "drfemuCharts.render" in page
    for name in ("small-lines", "small-ratio", "small-series", "small-tolerance"):
        assert (tmp_path / "report" / "figures" / f"{name}.png").read_bytes().startswith(b"\x89PNG")


def test_report_works_on_a_partial_sweep(swept: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    partial = tmp_path / "partial"
    (partial / "runs").mkdir(parents=True)
    (partial / "sweep.json").write_bytes((swept / "sweep.json").read_bytes())
    for path in (swept / "runs").glob("*.json"):
        if not path.name.startswith("drf-"):
            (partial / "runs" / path.name).write_bytes(path.read_bytes())
    assert main(["report", str(partial)]) == 0
    assert "(4 points without a result)" in " ".join(capsys.readouterr().out.split())
    md = (partial / "report" / "report.md").read_text()
    assert "| drf | – | – |" in md and "0 failed, 4 not run yet" in md


def test_table_cells_are_means_with_their_spread() -> None:
    def point(protocol: str, p: int, seed: int, value: float | None, status: str = "ok") -> PointData:
        metrics = {} if value is None else {"gini": value}
        return PointData({"protocol": protocol, "neighbors": p, "seed": seed}, f"{protocol}{p}{seed}", status, metrics, {})

    points = [point("a", 2, 1, 0.1), point("a", 2, 2, 0.3), point("a", 3, 1, 0.2), point("b", 2, 1, None, "failed"),
              point("b", 3, 1, None, "missing")]
    rows, columns, cells = table_cells({"rows": "protocol", "columns": "neighbors", "value": "gini", "format": ".2f"},
                                       points)
    assert rows == ["a", "b"] and columns == [2, 3]
    assert cells == [["0.20 ± 0.14 (n=2)", "0.20"], ["failed", "–"]]


def test_a_table_shows_the_least_or_greatest_and_a_second_metric_beside_the_first() -> None:
    def point(case: int, users: int, mine: int, theirs: int) -> PointData:
        metrics = {"reference.poorest_tasks": mine, "reference.poorest_reference_tasks": theirs}
        return PointData({"case_seed": case, "users": users}, f"r{case}{users}", "ok", metrics, {})

    points = [point(1, 20, 3, 2), point(2, 20, 5, 5), point(1, 40, 1, 2)]
    spec = {"rows": "case_seed", "columns": "users", "value": "reference.poorest_tasks",
            "beside": "reference.poorest_reference_tasks", "format": ".0f"}
    assert table_cells(spec, points)[2] == [["3 (2)", "1 (2)"], ["5 (5)", "–"]]
    least = {"rows": "users", "columns": "users", "value": "reference.poorest_tasks", "statistic": "min",
             "format": ".0f"}
    assert table_cells(least, points)[2] == [["3 (min of 2)", "–"], ["–", "1 (min of 1)"]]
    with pytest.raises(InputError, match="statistic must be one of mean, min, max"):
        check_table({**least, "id": "T", "statistic": "median"})


def test_published_numbers_sit_under_their_rows() -> None:
    spec = {"format": ".1%", "reference": {"label": "thesis", "columns": ["probe", "dgdrf"],
                                           "rows": {"2": [0.8353, 0.0], "3": [0.8305, 0.0]}}}
    assert reference_cells(spec, [2, 4], ["dgdrf", "pdgdrf", "probe"]) == {2: ["0.0%", "·", "83.5%"]}
    assert reference_cells({}, [2], ["x"]) == {}


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["sweep", "nowhere.toml", "--out", "x"], "nowhere.toml: no such file"),
        (["sweep", "CONFIG", "--out", "OUT", "--workers", "0"], "--workers must be at least 1"),
        (["sweep", "CONFIG", "--out", "OUT", "--workers", "2", "--dask", "tcp://127.0.0.1:1"], "not both"),
        (["report", "OUT"], "not a sweep directory"),
    ],
)
def test_bad_sweep_input_is_one_line(tmp_path: Path, args: list[str], needle: str,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    path = config(tmp_path)
    args = [str(path) if a == "CONFIG" else str(tmp_path / "empty") if a == "OUT" else a for a in args]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("drfemu: error:") and needle in err


@pytest.mark.slow
def test_unreachable_dask_scheduler_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("distributed")
    assert main(["sweep", str(config(tmp_path)), "--out", str(tmp_path / "o"), "--dask", "tcp://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot reach the Dask scheduler" in err


def test_no_temporary_files_are_left_behind(swept: Path) -> None:
    assert not [p for p in (swept / "runs").iterdir() if p.name.startswith(".")]
    assert os.access(swept / "sweep.json", os.R_OK)
