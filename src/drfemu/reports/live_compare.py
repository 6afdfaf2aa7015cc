"""Live against virtual (issue 17): `drfemu live-report FILE...` on result documents of
`drfemu run --json` and `drfemu live --json`.

Runs are grouped by what they ran — protocol, machines, users, neighbours, tick — and within
that by mode: virtual or live at a time scale, with the latency model (`--latency`; for a live
run, the bound its timeouts assume) and, for virtual runs, the fault scenario. The reference
of a group is its virtual runs without a scenario at the latency the live runs assume (or
the only latency its plain virtual runs have). Every other row is paired with the reference
by seed. (A live run has resilience on; a virtual run has it with any scenario, so `--faults
configs/faults/none.toml` gives the virtual run that sends what a live one sends; a virtual
run with jittered latency shows how far a seed's result moves under timing noise alone.)
For each row the report gives the mean minimum share, Gini, error ratio, run-time (protocol
seconds), messages and wall time, the difference of the mean minimum share from the
reference's and the largest difference of one seed's, and for live rows the live-only
figures (one-way latency, late ticks). Nothing given is left out: a row without a reference
is reported without the paired columns.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from drfemu.kernel.errors import InputError
from drfemu.reports.fault_study import markdown_table
from drfemu.schema.params import readers

__all__ = ["live_report"]

KEYS = ("protocol", "machines", "users", "neighbors", "tick_s")
NEEDED = (*KEYS, "latency", "seed", "min_dominant_share", "gini", "error_ratio", "run_time_s", "messages_total",
          "status", "wall_time_s")


def _key(document: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(document[k] for k in KEYS)


def _label(key: tuple[Any, ...]) -> str:
    protocol, machines, users, neighbors = key[:4]
    return f"{protocol} {machines} × {users}" + (f", P = {neighbors}" if protocol in readers("neighbors") else "")


def _check(name: str, document: Mapping[str, Any]) -> None:
    missing = [k for k in NEEDED if k not in document]
    if missing:
        raise InputError(f"{name}: not a run's result document (no {', '.join(missing)})")
    if document.get("finite_tasks"):
        raise InputError(f"{name}: a run of tasks that end; the live report compares endless runs")


Mode = tuple[float | None, str, str | None]  # (live time scale or None, latency, fault scenario)


def live_report(documents: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """Markdown: one row per (parameters, mode) group; `documents` are (name, result) pairs."""
    groups: dict[tuple[Any, ...], dict[Mode, dict[int, Mapping[str, Any]]]] = defaultdict(lambda: defaultdict(dict))
    for name, document in documents:
        _check(name, document)
        seed = int(document["seed"])
        scenario = document.get("fault_scenario")
        scale = float(document["live"]["time_scale"]) if "live" in document else None
        mode = (scale, str(document["latency"]), None if scale is not None or not scenario else Path(scenario).name)
        runs = groups[_key(document)][mode]
        if seed in runs:
            raise InputError(f"{name}: a second run of seed {seed} of the same parameters and mode")
        runs[seed] = document
    rows = []
    for key in sorted(groups, key=str):
        modes = groups[key]
        reference = _reference(modes)
        twins = modes[reference] if reference is not None else {}
        latencies = {mode[1] for mode in modes}
        latency = reference[1] if reference is not None else latencies.pop() if len(latencies) == 1 else None
        order = sorted(modes, key=lambda m: (m[0] is not None, -(m[0] or 0.0), m != reference, m[1], m[2] or ""))
        for mode in order:
            rows.append(_row(_label(key), _describe(mode, latency), modes[mode], {} if mode == reference else twins))
    header = ["runs", "mode", "seeds", "status", "min share", "Δ min share: mean / largest of a seed", "Gini",
              "error ratio", "run-time (s)", "messages", "wall (s)", "latency p50 / p99 (µs)",
              "ticks late > ½ tick"]
    return "\n".join(markdown_table(header, rows)) + "\n"


def _reference(modes: Mapping[Mode, Any]) -> Mode | None:
    """The plain virtual mode the others are paired with (see the module's docstring)."""
    plain = {mode[1]: mode for mode in modes if mode[0] is None and mode[2] is None}
    assumed = {mode[1] for mode in modes if mode[0] is not None} & set(plain)
    if len(assumed) == 1:
        return plain[assumed.pop()]
    return next(iter(plain.values())) if len(plain) == 1 else None


def _describe(mode: Mode, reference_latency: str | None) -> str:
    scale, latency, scenario = mode
    parts = ["virtual" if scale is None else f"live × {scale:g}"]
    if latency != reference_latency:
        parts.append(f"latency {latency}")
    if scenario:
        parts.append(f"--faults {scenario}")
    return ", ".join(parts)


def _mean(runs: Mapping[int, Mapping[str, Any]], field: str) -> float:
    return float(np.mean([run[field] for run in runs.values()]))


def _row(label: str, mode: str, runs: Mapping[int, Mapping[str, Any]],
         twins: Mapping[int, Mapping[str, Any]]) -> list[str]:
    statuses = sorted({run["status"] for run in runs.values()})
    seeds = [seed for seed in sorted(runs) if seed in twins and twins[seed]["min_dominant_share"] > 0]
    delta = "–" if not twins else "no seed paired"
    if seeds:
        ratios = [runs[s]["min_dominant_share"] / twins[s]["min_dominant_share"] - 1 for s in seeds]
        mean = (np.mean([runs[s]["min_dominant_share"] for s in seeds])
                / np.mean([twins[s]["min_dominant_share"] for s in seeds]) - 1)
        delta = f"{100 * mean:+.2f} % / {100 * max(ratios, key=abs):+.2f} % ({len(seeds)} of {len(runs)} paired)"
    latency = ticks = "–"
    if mode.startswith("live"):
        p50 = [run["live"]["one_way_latency_us"]["p50"] for run in runs.values()]
        p99 = [run["live"]["one_way_latency_us"]["p99"] for run in runs.values()]
        if all(x is not None for x in p50 + p99):
            latency = f"{np.median(p50):,.0f} / {np.median(p99):,.0f}"
        ticks = f"{sum(run['live']['ticks_late_over_half_tick'] for run in runs.values()):,}"
    return [label, mode, ", ".join(str(s) for s in sorted(runs)), "/".join(statuses),
            f"{_mean(runs, 'min_dominant_share'):.4f}", delta, f"{_mean(runs, 'gini'):.4f}",
            f"{100 * _mean(runs, 'error_ratio'):.2f} %", f"{_mean(runs, 'run_time_s'):,.1f}",
            f"{_mean(runs, 'messages_total'):,.0f}", f"{_mean(runs, 'wall_time_s'):,.1f}", latency, ticks]
