"""Sweep configs and run parameters: expansion, shared runs, and one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from drfemu.assembly.run import run_emulation
from drfemu.schema.result import Echo
from drfemu.sweeps.config import SweepConfigError, load_sweep
from drfemu.workloads.points import build_run_config, canonical_params, defaults, run_id

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
# Result fields that echo a parameter rather than measure the run, and the wall clock.
ECHOES = set(Echo.echoed()) | {"cyclon_view", "shuffle_length", "walk_ttl", "wall_time_s", "events_per_s"}


def write(tmp_path: Path, text: str, name: str = "c.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_points_are_cases_times_grids_times_seeds(tmp_path: Path) -> None:
    sweep = load_sweep(write(tmp_path, """
name = "x"
seeds = [3, 4]
[base]
tick = "50ms"
[[cases]]
machines = 12
users = 4
[[cases]]
machines = 20
users = [5, 6]
[[grids]]
protocol = ["dgdrf"]
neighbors = [2, 3]
[[grids]]
protocol = "drf"
"""))
    (experiment,) = sweep.experiments
    # 3 cases (the second expands to two) × (2 + 1 grid combinations) × 2 seeds.
    assert len(experiment.points) == 3 * 3 * 2
    first = experiment.points[0].params
    assert first == dict(defaults(), machines=12, users=4, tick="50ms", protocol="dgdrf", neighbors=2, seed=3, case_seed=3)
    assert {(p.params["users"], p.params["seed"]) for p in experiment.points} == {(u, s) for u in (4, 5, 6) for s in (3, 4)}
    assert len(sweep.runs) == len(experiment.points)


def test_points_that_name_the_same_run_share_it(tmp_path: Path) -> None:
    sweep = load_sweep(write(tmp_path, """
[base]
machines = 12
users = 4
[[grids]]
protocol = ["drf", "ddrf-random", "pdgdrf"]
neighbors = [2, 3]
shuffles_per_tick = [1.0, 2.0]
"""))
    (experiment,) = sweep.experiments
    assert len(experiment.points) == 12
    # drf reads neither P nor the exchange rate; ddrf-random reads P only; pdgdrf both.
    assert len(sweep.runs) == 1 + 2 + 4
    drf = {p.run for p in experiment.points if p.params["protocol"] == "drf"}
    assert len(drf) == 1 and sweep.runs[drf.pop()]["neighbors"] == defaults()["neighbors"]
    # The declared parameters stay as written, for the report's rows and columns.
    assert {p.params["neighbors"] for p in experiment.points if p.params["protocol"] == "drf"} == {2, 3}


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["drf", "fifo", "probe", "ddrf-random", "ddrf-gradient", "dgdrf", "pdgdrf"])
def test_parameters_reset_as_unused_really_are_unused(protocol: str) -> None:
    """Sharing runs is sound: setting every parameter the reset drops changes nothing measured."""
    declared = {"protocol": protocol, "machines": 12, "users": 4, "seed": 2}
    odd = {"neighbors": 3, "shuffles_per_tick": 2.0, "probe_d": 3, "walk_ttl": 7, "cyclon_view": 6,
           "shuffle_length": 3, "mark_saturated": False, "saturation_retry": 9, "max_age": 31, "warmup_cap": 40,
           "freeze_after": 7}
    canonical = canonical_params(declared)
    dropped = {k: v for k, v in odd.items() if canonical_params({**declared, **odd})[k] == defaults()[k]}
    assert dropped, "every protocol ignores some parameter"
    as_set = dict(canonical, **dropped)  # built without the reset
    base = run_emulation(build_run_config(canonical)).to_dict()
    varied = run_emulation(build_run_config(as_set)).to_dict()
    assert {k: v for k, v in base.items() if k not in ECHOES} == {k: v for k, v in varied.items() if k not in ECHOES}


def test_run_id_is_stable_and_readable() -> None:
    params = canonical_params({"protocol": "pdgdrf", "machines": 12, "users": 4, "neighbors": 2})
    assert run_id(params) == run_id(dict(params))
    assert run_id(params).startswith("pdgdrf-12x4-s1-")
    assert run_id(params) != run_id(canonical_params({"protocol": "pdgdrf", "machines": 12, "users": 4, "neighbors": 3}))


def test_thesis_suite_loads_all_eight_experiments() -> None:
    sweep = load_sweep(CONFIGS / "thesis.toml")
    assert [e.name for e in sweep.experiments] == ["E1", "E2", "E3", "E4", "E5", "E6", "E7", "E8"]
    e1 = sweep.experiments[0]
    assert len(e1.points) == 2 * 8 * 9
    # A point shows the protocol's own defaults: PDGDRF's strict centre ties, BDGDRF's keep-room.
    shown = {(p.params["protocol"], p.params["centre_ties"], p.params["placement"]) for p in e1.points}
    assert ("pdgdrf", "strict", "first-fit") in shown and ("bdgdrf", "id", "keep-room") in shown
    # E2 needs no run of its own: all its points are E1 runs.
    assert {p.run for p in sweep.experiments[1].points} <= {p.run for p in e1.points}


def test_idle_gossip_study_thins_one_layer_or_both_and_never_drf() -> None:
    sweep = load_sweep(CONFIGS / "idle-gossip.toml")
    points = sweep.experiments[0].points
    layers = {(p.params["protocol"], p.params["idle_cyclon_every"], p.params["idle_gradient_every"]) for p in points}
    assert len(points) == 5 * (1 + 2 * 4 + 2 * 3 * 2) and len(layers) == 1 + 2 * 10
    assert ("drf", 1, 1) in layers and not any(proto == "drf" and (c, g) != (1, 1) for proto, c, g in layers)
    assert {("pdgdrf", 8, 8), ("dgdrf", 1, 8), ("dgdrf", 8, 1)} <= layers


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("bogus = 1\n[base]\n", "unknown key(s) bogus"),
        ("[base]\nneighbours = 3\n", "unknown run parameter(s): neighbours"),
        ("[base]\nneighbors = 'three'\n", "--neighbors: must be an integer"),
        ("[base]\nprotocol = 'ddrf'\n", "unknown protocol 'ddrf'"),
        ("[base]\nmark_saturated = 1\n", "--mark-saturated: must be true or false"),
        ("[[cases]]\nusers = 4\n[[grids]]\nusers = [5]\n", "users set by both a case and a grid"),
        ("seeds = []\n[base]\n", "seeds must be a non-empty list"),
        ("replicates = 2\nseeds = [1]\n[base]\n", "either seeds or replicates"),
        ("[[grids]]\nneighbors = []\n", "grids[0].neighbors is an empty list"),
        ("[base]\nworkload = 'nowhere.json'\n", "not found"),
        ("[base]\n[[figures]]\nid = 'f'\nkind = 'pie'\n", "kind must be one of"),
        ("[base]\n[[figures]]\nid = 'f'\nkind = 'lines'\nx = 'neighbors'\ny = 'gini'\n", "needs series"),
        ("[base]\n[[tables]]\nid = 't'\nrows = 'protocol'\ncolumns = 'P'\nvalue = 'gini'\n", "'P' is not a run parameter"),
        ("[base]\n[[tables]]\nid = 't'\nrows = 'protocol'\ncolumns = 'seed'\nvalue = 'gini'\nformat = 'q'\n", "format"),
        ("include = ['c.toml']\n", "includes itself"),
        ("[base\n", "not valid TOML"),
    ],
)
def test_bad_configs_name_file_and_problem(tmp_path: Path, text: str, needle: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(SweepConfigError) as caught:
        load_sweep(path)
    message = str(caught.value)
    assert needle in message and str(path) in message and "\n" not in message


def test_run_id_hashes_only_parameters_away_from_their_defaults() -> None:
    # A record written before a parameter existed keeps its name once the parameter is declared
    # with a default that keeps the old behaviour.
    params = canonical_params({"protocol": "ddrf-random", "machines": 12, "users": 4})
    declared = defaults()
    older = {k: v for k, v in params.items()
             if k in ("protocol", "workload", "machines", "users", "case_seed", "seed") or v != declared[k]}
    assert "placement" not in older and run_id(older) == run_id(params)
    # A protocol's own default differs from the declared one, so it is part of the name.
    strict = canonical_params({"protocol": "pdgdrf", "machines": 12, "users": 4})
    ids = canonical_params({"protocol": "pdgdrf", "machines": 12, "users": 4, "centre_ties": "id"})
    assert strict["centre_ties"] == "strict" and run_id(strict) != run_id(ids)
