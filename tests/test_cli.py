"""The `drfemu` command line, end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from drfemu.cli import main
from drfemu.reports.online import MARKER
from drfemu.schema.overlay_config import OverlayConfig
from drfemu.studies.scale import users_for
from drfemu.tools.bench import _bench_bare, _bench_runtime, run_bench

RESULT_KEYS = {
    "protocol", "machines", "users", "seed", "saturated", "stalled", "run_time_s", "allocations",
    "min_dominant_share", "gini", "std_dominant_share", "ratio_20_20", "jain", "utilization",
    "error_ratio", "error_ratio_by_tolerance", "messages", "bytes", "wall_time_s", "events_per_s",
    "dominant_shares",
}


@pytest.mark.slow
def test_default_run_writes_json_and_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, log = tmp_path / "r.json", tmp_path / "alloc.jsonl"
    assert main(["run", "--json", str(out), "--log", str(log)]) == 0
    assert "minimum dominant share" in capsys.readouterr().out
    r = json.loads(out.read_text())
    assert RESULT_KEYS <= set(r)
    assert (r["protocol"], r["machines"], r["users"], r["seed"]) == ("drf", 100, 20, 1)
    assert r["saturated"] and r["error_ratio"] == 0
    assert set(r["error_ratio_by_tolerance"]) == {"0", "0.01", "0.05", "0.1", "0.15"}
    assert set(r["utilization"]) == {"cpu", "mem"} and len(r["dominant_shares"]) == 20
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    allocations = [line for line in lines if line["event"] == "allocation"]
    assert len(allocations) == r["allocations"] == sum(line["event"] == "start" for line in lines)
    first = allocations[0]
    assert {"event", "time", "user", "server", "share_before", "share_after", "error"} <= set(first)
    assert first["user"] in r["dominant_shares"] and lines[0]["event"] == "run"


def test_same_command_twice_writes_the_same_json(tmp_path: Path) -> None:
    outs = [tmp_path / "a.json", tmp_path / "b.json"]
    for out in outs:
        assert main(["run", "--protocol", "fifo", "--seed", "4", "--latency", "pair:1ms:5ms:1ms", "--json", str(out)]) == 0
    a, b = (json.loads(p.read_text()) for p in outs)
    for doc in (a, b):
        del doc["wall_time_s"], doc["events_per_s"]
    assert a == b


def test_run_with_a_workload_file(tmp_path: Path) -> None:
    case = tmp_path / "case.json"
    case.write_text(json.dumps({
        "resources": ["cpu", "mem"],
        "servers": [{"id": "s0", "capacity": [9, 18]}],
        "users": [{"id": "A", "demand": [1, 4]}, {"id": "B", "demand": [3, 1]}],
    }))
    out = tmp_path / "r.json"
    assert main(["run", "--workload", str(case), "--protocol", "fifo", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["machines"] == 1


def test_workload_google_then_run(tmp_path: Path) -> None:
    case = tmp_path / "case.json"
    assert main(["workload", "google", "--machines", "50", "--users", "8", "--case-seed", "3", "-o", str(case)]) == 0
    data = json.loads(case.read_text())
    assert len(data["servers"]) == 50 and len(data["users"]) == 8
    assert main(["run", "--workload", str(case), "--tick", "50ms", "--latency", "uniform:1ms:2ms"]) == 0


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["run", "--protocol", "nope"], "unknown protocol 'nope'"),
        (["run", "--workload", "/nonexistent/case.json"], "not found"),
        (["run", "--machines", "20000"], "12551"),
        (["run", "--machines", "x"], "--machines"),
        (["run", "--tick", "soon"], "--tick"),
        (["run", "--latency", "pair:1ms"], "bad latency"),
        (["run", "--bogus"], "No such option"),
        (["workload", "google", "--users", "0", "-o", "unused.json"], "at least 1"),
        (["overlay", "--nodes", "5", "--neighbors", "5"], "needs more than 5 nodes"),
        (["overlay", "--utilities", "nowhere.json"], "neither random, google nor a workload file"),
        (["overlay", "--shuffles-per-tick", "-1"], "--shuffles-per-tick"),
        (["overlay", "--nodes", "20", "--cyclon-view", "4", "--shuffle-length", "9"], "--shuffle-length"),
        (["overlay", "--utilities", "google", "--nodes", "50", "--users", "600"], "505"),
        (["run", "--protocol", "dgdrf", "--neighbors", "0"], "--neighbors must be at least 1"),
        (["run", "--protocol", "pdgdrf", "--shuffles-per-tick", "0"], "--shuffles-per-tick must be positive"),
        (["run", "--protocol", "probe", "--probe-d", "0"], "probe-d"),
        (["run", "--protocol", "dgdrf", "--walk-ttl", "-1"], "walk-ttl"),
        (["run", "--protocol", "dgdrf", "--cyclon-view", "4", "--shuffle-length", "5"], "shuffle-length"),
        (["run", "--protocol", "dgdrf", "--saturation-retry", "-2"], "saturation-retry"),
        (["run", "--protocol", "ddrf", "--neighbors", "2"], "unknown protocol 'ddrf'"),
    ],
)
def test_bad_input_is_one_line_and_nonzero(args: list[str], needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("drfemu: error:") and needle in err


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("{not json", "line 1: not JSON"),
        ('{"resources": ["cpu", "mem"], "servers": [{"capacity": [9, 18]}], "users": [{"demand": [1]}]}', "1 entries"),
        ('{"resources": ["cpu", "mem"], "servers": [{"capacity": [0, -1]}], "users": [{"demand": [1, 1]}]}', "negative"),
        ('{"resources": ["cpu", "mem"], "servers": [{"capacity": [0, 0]}], "users": [{"demand": [1, 1]}]}', "zero capacity"),
    ],
)
def test_bad_workload_files(tmp_path: Path, content: str, needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    case = tmp_path / "case.json"
    case.write_text(content)
    assert main(["run", "--workload", str(case)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err


def test_unplaceable_user_is_warned_and_the_run_goes_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = tmp_path / "case.json"
    case.write_text(json.dumps({
        "resources": ["cpu", "mem"],
        "servers": [{"capacity": [9, 18]}],
        "users": [{"id": "ok", "demand": [1, 4]}, {"id": "huge", "demand": [10, 1]}],
    }))
    out = tmp_path / "r.json"
    assert main(["run", "--workload", str(case), "--json", str(out)]) == 0
    assert "'huge'" in capsys.readouterr().err
    r = json.loads(out.read_text())
    assert r["unplaceable_users"] == ["huge"] and r["tasks"] == {"ok": 4}


@pytest.mark.slow
def test_installed_script_runs_and_fails_cleanly() -> None:
    ok = subprocess.run([sys.executable, "-m", "drfemu.cli", "protocols"], capture_output=True, text=True)
    assert ok.returncode == 0 and "drf-bestfit" in ok.stdout
    bad = subprocess.run([sys.executable, "-m", "drfemu.cli", "run", "--protocol", "x"], capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_bench_reports_every_design_and_the_fraction_of_the_limit() -> None:
    result = run_bench(actors=50, in_flight=2, messages=5_000, naive_messages=2_000, repeats=1).to_dict()
    assert {"messages_per_s", "naive_messages_per_s", "speedup", "bare_messages_per_s", "limit_fraction"} <= set(result)
    assert result["messages_per_s"] > 0 and result["naive_messages_per_s"] > 0
    assert result["limit_fraction"] == result["messages_per_s"] / result["bare_messages_per_s"]


def test_the_bare_loop_moves_the_same_messages_as_the_runtime() -> None:
    runtime_delivered, _ = _bench_runtime(40, 3, 0.001, 6_000, 1)
    bare_delivered, _ = _bench_bare(40, 3, 0.001, 6_000, 1)
    assert bare_delivered == runtime_delivered == 6_000


def test_the_scale_curve_reports_each_point_as_table_json_and_figure(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    out, png = tmp_path / "scale.json", tmp_path / "scale.png"
    args = ["bench", "scale", "--servers", "40,20", "--protocols", "pdgdrf", "--span", "2s", "--json", str(out),
            "--figure", str(png)]
    assert main(args) == 0
    assert "cost curve" in capsys.readouterr().out
    points = json.loads(out.read_text())["points"]
    assert [(p["protocol"], p["servers"], p["users"]) for p in points] == [("pdgdrf", 20, 4), ("pdgdrf", 40, 8)]
    for p in points:
        assert p["virtual_s"] == pytest.approx(2.0) and p["ticks"] == 20
        assert p["messages_per_server_tick"] == p["messages"] / (p["servers"] * 20) > 1  # every server gossips
        assert p["peak_rss_mib"] > 0 and p["wall_per_virtual_s"] > 0
    assert png.stat().st_size > 0
    again = tmp_path / "again.png"
    assert main(["bench", "scale", "--servers", "20", "--protocols", "pdgdrf", "--span", "1s", "--figure", str(again),
                 "--baseline", str(out)]) == 0
    assert again.stat().st_size > 0
    assert main(["bench", "scale", "--servers", "20", "--baseline", str(png)]) == 2  # not a curve's JSON


def test_the_overlay_benchmark_reports_a_run_s_overlay_traffic_beside_the_bare_loop(tmp_path: Path) -> None:
    """`drfemu bench overlay`: four messages a server a tick (a Cyclon shuffle and a gradient
    exchange, each answered), measured in a fresh process, beside the bare loop."""
    out = tmp_path / "overlay.json"
    assert main(["bench", "overlay", "--nodes", "200", "--rounds", "3", "--repeats", "1", "--json", str(out)]) == 0
    figures = json.loads(out.read_text())
    assert (figures["nodes"], figures["rounds"], figures["neighbors"]) == (200, 3, 5)
    assert figures["messages_per_s"] > figures["exchanges_per_s"] > 0 and figures["bare_events_per_s"] > 0
    assert figures["bare_multiple"] == figures["messages_per_s"] / figures["bare_events_per_s"]
    assert main(["bench", "overlay", "--nodes", "3", "--neighbors", "5"]) == 2  # too few nodes: one line


def test_users_of_a_scale_point_are_a_fifth_of_the_servers_at_most_the_trace_s() -> None:
    assert [users_for(n) for n in (1, 4, 100, 2_525, 10_000)] == [1, 1, 20, 505, 505]


OVERLAY_ROUND_KEYS = {"round", "centre_correct", "centre_view_exact", "ideal_view_fraction", "cyclon_connected",
                      "indegree_std"}


def test_overlay_prints_rounds_and_writes_json_and_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, png = tmp_path / "overlay.json", tmp_path / "overlay.png"
    args = ["overlay", "--nodes", "150", "--neighbors", "4", "--rounds", "15", "--perturbations", "3",
            "--json", str(out), "--plot", str(png)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "rounds to converge" in printed and "recovery after 3 perturbations" in printed
    result = json.loads(out.read_text())
    assert [row["round"] for row in result["round_rows"]] == list(range(16))
    assert all(OVERLAY_ROUND_KEYS <= set(row) for row in result["round_rows"])
    assert "rounds_to_converge" in result and len(result["perturbation_rows"]) == 3
    assert list(result["config"]) == [p.name for p in OverlayConfig.PARAMS]  # the parameters, by declared name
    assert (result["config"]["rounds"], result["config"]["perturbations"], result["config"]["nodes"]) == (15, 3, 150)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_overlay_with_a_workload_file_refuses_a_node_count(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = tmp_path / "case.json"
    assert main(["workload", "google", "--machines", "30", "--users", "6", "-o", str(case)]) == 0
    assert main(["overlay", "--utilities", str(case), "--neighbors", "3", "--rounds", "5"]) == 0
    assert main(["overlay", "--utilities", str(case), "--nodes", "40"]) == 2
    assert "cannot be combined" in capsys.readouterr().err


@pytest.mark.slow
def test_a_distributed_run_reports_its_parameters_and_placement(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.json"
    args = ["run", "--protocol", "pdgdrf", "--machines", "30", "--users", "6", "--neighbors", "3",
            "--shuffles-per-tick", "2", "--walk-ttl", "12", "--cyclon-view", "6", "--shuffle-length", "3",
            "--no-mark-saturated", "--json", str(out)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "placement" in printed and "marking off" in printed
    r = json.loads(out.read_text())
    assert (r["neighbors"], r["shuffles_per_tick"], r["walk_ttl"], r["cyclon_view"], r["shuffle_length"]) == (3, 2.0, 12, 6, 3)
    assert r["mark_saturated"] is False and r["distributed"] is True
    assert r["messages"]["GradientShuffle"] > 0 and r["bytes"]["GradientShuffle"] > 0
    assert r["error_series"]["allocations"][-1] == r["allocations"]


def test_policy_tda_json_has_slots_averages_and_bound(tmp_path: Path) -> None:
    out = tmp_path / "tda.json"
    assert main(["policy", "tda", "--capacity", "15,15", "--demand", "5,2", "--demand", "3,3.5", "--json", str(out)]) == 0
    r = json.loads(out.read_text())
    assert [len(u["allocation"]) for u in r["users"]] == [2, 2]
    assert r["min_average_share"] >= 7 / 15 and r["drf_shares"] == pytest.approx([5 / 15, 10.5 / 15])
    assert sum(s["duration"] for s in r["slots"]) == pytest.approx(1) and r["bound"] >= r["min_average_share"]
    assert {"duration", "tasks", "shares"} <= set(r["slots"][0]) and len(r["average_shares"]) == 2


def test_policy_drf_lists_users_in_demand_order(tmp_path: Path) -> None:
    out = tmp_path / "drf.json"
    assert main(["policy", "drf", "--capacity", "100,10000", "--demand", "2,300", "--demand", "6,100",
                 "--json", str(out)]) == 0
    users = json.loads(out.read_text())["users"]
    assert [u["tasks"] for u in users] == [20, 10]
    assert users[0]["allocation"] == [40, 6000] and users[1]["dominant_share"] == pytest.approx(0.6)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["policy", "tda", "--capacity", "15,0", "--demand", "1,1", "--demand", "1,1"], "capacity must be positive"),
        (["policy", "drf", "--capacity", "15,15", "--demand", "1,1,1"], "has 3 entries"),
        (["policy", "tda", "--capacity", "15,15", "--demand", "1,1"], "exactly two users"),
        (["policy", "drf", "--capacity", "1,x", "--demand", "1,1"], "comma-separated numbers"),
        (["policy", "nope", "--capacity", "1,1", "--demand", "1,1"], "unknown policy 'nope'"),
        (["policy", "tda", "--capacity", "15,15", "--demand", "1,1", "--demand", "1,2", "--divisible"], "whole tasks"),
    ],
)
def test_bad_policy_input_is_one_line(args: list[str], needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("drfemu: error:") and needle in err


def test_policy_ffmra_and_mlf_drs_fill_the_pool(tmp_path: Path) -> None:
    for name in ("ffmra", "mlf-drs"):
        out = tmp_path / f"{name}.json"
        assert main(["policy", name, "--capacity", "9,18", "--demand", "1,4", "--demand", "3,1", "--json", str(out)]) == 0
        r = json.loads(out.read_text())
        assert r["utilization"] == pytest.approx([1, 1]) and len(r["users"]) == 2
    assert json.loads((tmp_path / "ffmra.json").read_text())["users"][0]["allocation"] == pytest.approx([2, 14])


@pytest.mark.parametrize("name", ["adrf", "swm"])
def test_policy_adrf_and_swm_report_welfare(name: str, tmp_path: Path) -> None:
    if name == "swm":
        pytest.importorskip("cvxpy", reason="the SWM optimum needs cvxpy (the optimum extra)")
    out = tmp_path / f"{name}.json"
    assert main(["policy", name, "--capacity", "9,18", "--demand", "1,4", "--demand", "3,1", "--alpha", "1",
                 "--json", str(out)]) == 0
    r = json.loads(out.read_text())
    assert r["alpha"] == 1 and r["social_welfare"] < 0 and len(r["users"]) == 2
    if name == "swm":
        assert [u["dominant_share"] for u in r["users"]] == pytest.approx([10 / 11, 6 / 11], rel=1e-5)


def test_policy_swm_without_cvxpy_names_the_extra(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        import cvxpy  # noqa: F401
    except ImportError:
        assert main(["policy", "swm", "--capacity", "9,18", "--demand", "1,4", "--alpha", "1"]) == 2
        assert "pip install 'drfemu[optimum]'" in capsys.readouterr().err
    else:
        pytest.skip("cvxpy is installed: the message for its absence cannot be seen")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["policy", "swm", "--capacity", "9,18", "--demand", "1,4"], "--alpha is required"),
        (["policy", "drf", "--capacity", "9,18", "--demand", "1,4", "--alpha", "2"], "--alpha is required"),
        (["policy", "adrf", "--capacity", "9,18", "--demand", "1,4", "--alpha", "0"], "alpha must be positive"),
        (["policy", "swm", "--capacity", "9,18", "--demand", "1,4", "--alpha", "1", "--beta", "d-max"], "adrf only"),
        (["experiment", "nope"], "No such command 'nope'"),
    ],
)
def test_bad_alpha_beta_and_experiment_are_one_line(args: list[str], needle: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err


@pytest.mark.slow
def test_experiment_online_replays_the_trace_on_the_emulator(tmp_path: Path) -> None:
    pytest.importorskip("cvxpy", reason="the online experiment compares with the SWM optimum (the optimum extra)")
    out = tmp_path / "online.json"
    assert main(["experiment", "online", "--minutes", "5", "--tick", "100ms", "--plots", str(tmp_path / "plots"),
                 "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    rows = {row["rule"]: row for row in result["rows"]}
    assert set(rows) == {"c-adrf", "naive-adrf", "cpu", "mem", "fifo"}
    assert all(row["status"] == "finished" and row["tasks"] == result["tasks"] for row in rows.values())
    assert 0 <= rows["c-adrf"]["mean_rmse"] <= rows["fifo"]["mean_rmse"]  # the first 5 min separate no rule
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == ["online-queueing-delay.png",
                                                                    "online-rmse-alpha-1.png"]


def test_experiment_online_rejects_an_empty_pool(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["experiment", "online", "--load-fraction", "0"]) == 2
    assert "--load-fraction must be positive, got 0.0" in capsys.readouterr().err


def test_grid_renders_the_committed_page_from_the_committed_json(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parent.parent
    page = tmp_path / "grid.md"
    assert main(["grid", "--from-json", str(root / "docs" / "data" / "protocol_grid.json"), "--out", str(page)]) == 0
    assert page.read_text(encoding="utf-8") == (root / "docs" / "protocol_grid.md").read_text(encoding="utf-8")
    assert main(["grid", "--out", str(page)]) == 2  # one source is needed


@pytest.mark.slow
def test_overlay_study_prints_markdown_and_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = tmp_path / "rounds.csv"
    assert main(["overlay-study", "--seeds", "1", "--rounds", "5", "--perturbations", "0", "--csv", str(rows)]) == 0
    assert "### Convergence on 1,000 nodes" in capsys.readouterr().out
    assert rows.read_text().splitlines()[0] == "view,round,ideal_view_fraction,centre_correct,centre_view_exact"


def test_workload_online_then_run_then_trace_replay(tmp_path: Path) -> None:
    """The trace's first minute as a finite workload, run by `drfemu run`, then every named
    protocol on it with the report (end to end through the CLI)."""
    case = tmp_path / "minute.json"
    assert main(["workload", "online", "--minutes", "1", "-o", str(case)]) == 0
    data = json.loads(case.read_text())
    assert data["source"]["kind"] == "google-2011-online" and all("tasks" in u for u in data["users"])
    out = tmp_path / "r.json"
    assert main(["run", "--workload", str(case), "--protocol", "c-adrf", "--json", str(out)]) == 0
    r = json.loads(out.read_text())
    tasks = sum(len(u["tasks"]) for u in data["users"])
    assert r["status"] == "finished" and r["ledger"] == {"waiting": 0, "placing": 0, "running": 0,
                                                         "finished": tasks, "killed": 0, "resubmitted": 0,
                                                         "rerun": 0, "lost": 0}
    assert set(r["queueing_delay_s"]) == {"p50", "p95", "p99", "mean"} and r["time_averaged"]["gini"] is not None
    page = tmp_path / "online.md"
    page.write_text(f"# Discussion kept\n\n{MARKER}\n\nstale table\n")
    assert main(["trace-replay", "--out", str(tmp_path / "replay"), "--minutes", "1", "--protocols", "drf,pdgdrf",
                 "--workers", "1", "--report", str(page)]) == 0
    text = page.read_text()
    assert "| pdgdrf | finished |" in text and text.startswith("# Discussion kept") and "stale" not in text
    assert page.with_suffix(".html").exists()
    assert len(list((tmp_path / "online").glob("*.png"))) == 6


@pytest.mark.parametrize(("argv", "needle"), [
    (["workload", "online", "--minutes", "61", "-o", "x.json"], "--minutes must be at most 60 (the extract holds"),
    (["workload", "online", "--machines", "3", "--pool", "-o", "x.json"], "not both"),
    (["trace-replay", "--out", "x", "--protocols", "drf,nope"], "unknown protocol 'nope'"),
    (["trace-replay", "--out", "x", "--report", "README.md"], "exists without the line"),
    (["run", "--protocol", "wmmf", "--wmmf-resource", "2"], "--wmmf-resource 2 names no resource"),
])
def test_finite_workload_commands_reject_bad_input(argv: list[str], needle: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "README.md").write_text("a page of someone's words\n")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1
