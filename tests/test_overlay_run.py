"""Overlay-only emulations on the runtime: the issue's convergence bars, determinism, memory."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import pytest

from drfemu.assembly.overlay_run import OverlayConfig, run_overlay
from drfemu.kernel.errors import InputError
from drfemu.nodes.gc_tuning import paused_gc
from drfemu.overlay import gradient
from drfemu.studies.overlay import run_overlay_config

PERF_KEYS = ("wall_time_s", "observer_wall_s", "emulation_wall_s", "events_per_s", "exchanges_per_s")


def without_timing(result: dict) -> dict:
    rest = {k: v for k, v in result.items() if k not in PERF_KEYS}
    rest["round_rows"] = [{k: v for k, v in row.items()} for row in result["round_rows"]]
    return rest


@pytest.fixture(scope="module")
def cyclon_1000() -> dict:
    return run_overlay(OverlayConfig.build(nodes=1000, neighbors=10, rounds=50, seed=3, observe_every=10))


@pytest.mark.slow
def test_cyclon_1000_nodes_50_rounds_connected_and_clean(cyclon_1000: dict) -> None:
    last = cyclon_1000["round_rows"][-1]
    assert last["round"] == 50
    assert last["cyclon_connected"] and last["cyclon_strongly_connected"]
    assert last["cyclon_self_links"] == 0 and last["cyclon_duplicates"] == 0
    assert last["cyclon_indegree_mean"] == pytest.approx(10.0)  # every view full
    assert 0 < last["indegree_std"] < 10  # reported, and far from a star
    assert cyclon_1000["cyclon_exchanges"] == 1000 * 50


@pytest.mark.slow
def test_same_seed_same_run_other_seed_other_run(cyclon_1000: dict) -> None:
    again = run_overlay(OverlayConfig.build(nodes=1000, neighbors=10, rounds=50, seed=3, observe_every=10))
    assert without_timing(again) == without_timing(cyclon_1000)
    other = run_overlay(OverlayConfig.build(nodes=1000, neighbors=10, rounds=50, seed=4, observe_every=10))
    assert other["round_rows"][-1]["indegree_std"] != cyclon_1000["round_rows"][-1]["indegree_std"]


@pytest.mark.slow
def test_the_python_merge_gives_the_same_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The C merge is an accelerator only: swapping in `rank_python` changes nothing but speed."""
    config = OverlayConfig.build(nodes=300, neighbors=4, rounds=25, seed=5, perturbations=3, observe_every=5)
    compiled = run_overlay(config)
    monkeypatch.setattr(gradient, "rank", gradient.rank_python)
    python = run_overlay(config)
    assert compiled.pop("gradient_merge") == gradient.RANK_IMPLEMENTATION
    python.pop("gradient_merge")
    assert without_timing(python) == without_timing(compiled)


@pytest.mark.slow
@pytest.mark.parametrize("view", range(2, 11))
def test_gradient_converges_within_30_rounds(view: int) -> None:
    result = run_overlay(OverlayConfig.build(nodes=1000, neighbors=view, rounds=30, seed=1))
    converged = result["rounds_to_converge"]
    assert converged is not None and converged <= 30, f"P={view}: not converged in 30 rounds"
    row = result["round_rows"][converged]
    assert row["centre_believes"] and row["false_centres"] == 0 and row["centre_view_exact"]


@pytest.mark.slow
def test_view_10_reaches_95_percent_ideal_views_within_50_rounds() -> None:
    result = run_overlay(OverlayConfig.build(nodes=1000, neighbors=10, rounds=50, seed=2, observe_every=5))
    assert max(row["ideal_view_fraction"] for row in result["round_rows"]) >= 0.95


@pytest.mark.slow
def test_perturbed_centre_is_replaced_and_validated_within_bounded_rounds() -> None:
    result = run_overlay(OverlayConfig.build(nodes=300, neighbors=5, rounds=30, seed=5, perturbations=25, recovery_cap=50))
    assert len(result["perturbation_rows"]) == 25
    assert result["recovery"]["recovered"] == 25
    assert result["recovery"]["max"] <= 50
    assert all(p["new_centre"] != p["old_centre"] for p in result["perturbation_rows"])


def test_perturbations_as_allocations_on_a_google_case() -> None:
    result = run_overlay_config(OverlayConfig.build(nodes=60, neighbors=4, rounds=20, utilities="google", users=12,
                                                    seed=1, perturbations=12, recovery_cap=60))
    assert result["config"]["users"] == 12
    assert result["rounds_to_converge"] is not None
    assert result["recovery"]["recovered"] == 12


def test_workload_file_and_slow_gradient(tmp_path: Path) -> None:
    case = tmp_path / "case.json"
    case.write_text(json.dumps({
        "resources": ["cpu", "mem"],
        "servers": [{"id": f"s{i}", "capacity": [1, 1]} for i in range(30)],
        "users": [{"id": f"u{i}", "demand": [0.1, 0.05 * (i + 1)]} for i in range(8)],
    }))
    result = run_overlay_config(OverlayConfig.build(utilities=str(case), neighbors=3, rounds=20, shuffles_per_tick=0.5))
    assert result["config"]["nodes"] == 30
    assert result["gradient_rounds"] == 10 and result["cyclon_rounds"] == 20


def test_message_accounting_matches_exchanges() -> None:
    r = run_overlay(OverlayConfig.build(nodes=200, neighbors=6, rounds=10, observe_every=10))
    assert r["messages"]["CyclonShuffle"] == r["messages"]["CyclonReply"] == r["cyclon_exchanges"] == 2000
    assert r["messages"]["GradientShuffle"] == r["gradient_exchanges"] == 2000
    # A full gradient message: P + 1 descriptors of 2 numbers and 1 address, plus overhead.
    full = 7 * (2 * 8 + 6) + 28
    assert r["bytes"]["GradientShuffle"] <= 2000 * full
    assert r["bytes"]["GradientShuffle"] >= 1900 * full


def test_a_run_leaves_no_cyclic_garbage_that_grows_with_its_length() -> None:
    """The collector is off during runs (nodes.gc_tuning); runs must not create cycles per event."""
    def garbage_after(rounds: int) -> int:
        gc.collect()
        gc.disable()
        try:
            run_overlay(OverlayConfig.build(nodes=100, neighbors=4, rounds=rounds, observe_every=rounds))
            return gc.collect()
        finally:
            gc.enable()

    # 60 more rounds are 24,000 more messages; the only cycles are set-up's and the observers'.
    assert abs(garbage_after(90) - garbage_after(30)) <= 10


def test_set_up_runs_with_the_collector_paused_and_restores_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """`Run` builds the nodes with the cyclic collector off (`paused_gc`); on or off before, it is as before."""
    from drfemu import configure
    from drfemu.assembly import run as run_module

    seen: list[bool] = []
    build = run_module.build_nodes
    monkeypatch.setattr(run_module, "build_nodes", lambda *a, **k: seen.append(gc.isenabled()) or build(*a, **k))
    config = configure("pdgdrf", machines=20, users=4)
    for enabled in (True, False):
        (gc.enable if enabled else gc.disable)()
        try:
            with pytest.raises(ZeroDivisionError), paused_gc():
                seen.append(gc.isenabled())
                raise ZeroDivisionError
            seen.append(gc.isenabled())
            run_module.Run(config)
            seen.append(gc.isenabled())
        finally:
            gc.enable()
    assert seen == [False, True, False, True, False, False, False, False]


@pytest.mark.parametrize(
    ("given", "needle"),
    [
        ({"nodes": 1}, "--nodes must be at least 2, got 1"),
        ({"nodes": 10, "neighbors": 10}, "needs more than 10 nodes"),
        ({"shuffle_length": 11}, "--shuffle-length"),
        ({"shuffles_per_tick": 0}, "--shuffles-per-tick must be positive"),
        ({"latency": "soon"}, "bad latency"),
        ({"observe_every": 0}, "--observe-every must be at least 1"),
        ({"tick": "100"}, "--tick"),
        ({"view": 3}, "unknown run parameter 'view'"),
    ],
)
def test_bad_configs_are_refused_with_the_option_named(given: dict[str, Any], needle: str) -> None:
    with pytest.raises(InputError, match=needle):
        OverlayConfig.build(**given)
