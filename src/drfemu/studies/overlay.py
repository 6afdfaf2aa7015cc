"""The overlay study behind `docs/overlay.md`: convergence per view size, recovery, scale.

    drfemu overlay-study [--seeds 5] [--perturbations 100] [--csv rounds.csv] > study.md

prints Markdown: (1) for P = 2..10 on 1,000 nodes with random static utilities, rounds to
converge per seed and the ideal-view fraction every 5 rounds (seed 1); (2) the recovery
distribution over sequential centre perturbations for random utilities and for a Google
case; (3) nothing about wall time — that is `drfemu overlay --nodes 10000 ...`.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from drfemu.assembly.overlay_run import OverlayConfig, run_overlay
from drfemu.schema.workload import Workload, load_workload
from drfemu.workloads.google import google_case

__all__ = ["overlay_study", "overlay_workload", "run_overlay_config"]


def overlay_workload(config: OverlayConfig) -> Workload | None:
    """The workload whose users' shares give the utilities of `--utilities google` (a Google case
    of `nodes` × `users`, drawn with `seed`) or of a workload file; None for random utilities."""
    if config.utilities == "random":
        return None
    if config.utilities == "google":
        assert config.nodes is not None, "OverlayConfig.build fills in the node count"
        return google_case(config.nodes, config.users, config.seed)
    return load_workload(Path(config.utilities))


def run_overlay_config(config: OverlayConfig, **options: Any) -> dict[str, Any]:
    """`run_overlay` of `config`, with the workload its `--utilities` names."""
    return run_overlay(config, overlay_workload(config), **options)


def _convergence(seeds: int, rounds: int, csv_rows: list[list[str]]) -> list[str]:
    lines = ["### Convergence on 1,000 nodes (random static utilities)", "",
             f"Rounds to converge per seed 1..{seeds} (centre recognises itself, no false centre, centre view = "
             "true top-P), and the fraction of nodes whose view is their ideal view after r rounds (seed 1).", ""]
    marks = list(range(0, rounds + 1, 5))
    lines.append("| P | rounds to converge (seeds) | " + " | ".join(f"r={r}" for r in marks) + " | first r ≥ 0.95 |")
    lines.append("|---|---|" + "---|" * len(marks) + "---|")
    for view in range(2, 11):
        conv: list[str] = []
        fractions: list[float] = []
        for seed in range(1, seeds + 1):
            result = run_overlay_config(OverlayConfig.build(nodes=1000, neighbors=view, rounds=rounds, seed=seed))
            conv.append("–" if result["rounds_to_converge"] is None else str(result["rounds_to_converge"]))
            if seed == 1:
                fractions = [row["ideal_view_fraction"] for row in result["round_rows"]]
                csv_rows.extend([str(view), str(row["round"]), f"{row['ideal_view_fraction']:.4f}",
                                 str(int(row["centre_correct"])), str(int(row["centre_view_exact"]))]
                                for row in result["round_rows"])
        first = next((r for r, f in enumerate(fractions) if f >= 0.95), None)
        lines.append(f"| {view} | {', '.join(conv)} | " + " | ".join(f"{fractions[r]:.3f}" for r in marks)
                     + f" | {'–' if first is None else first} |")
    return lines


BUCKETS = ((1, 1), (2, 2), (3, 3), (4, 5), (6, 10), (11, 20), (21, 50), (51, 10**9))


def _histogram(counts: dict[int, int]) -> str:
    """Recovery rounds in buckets: '1: 70, 2: 30, 4–5: 3, >50: 1'."""
    parts = []
    for low, high in BUCKETS:
        n = sum(v for k, v in counts.items() if low <= k <= high)
        if n:
            label = str(low) if low == high else (f">{low - 1}" if high == 10**9 else f"{low}–{high}")
            parts.append(f"{label}: {n}")
    return ", ".join(parts)


def _recovery_row(label: str, result: dict[str, Any]) -> str:
    rec = result["recovery"]
    counts = Counter(p["recovery_rounds"] for p in result["perturbation_rows"] if p["recovery_rounds"] is not None)
    return (f"| {label} | {rec['recovered']}/{len(result['perturbation_rows'])} | {rec['min']} | {rec['median']} | "
            f"{rec['mean']:.2f} | {rec['p90']} | {rec['max']} | {_histogram(counts)} |")


def _recovery(perturbations: int) -> list[str]:
    lines = ["### Recovery after the centre's utility drops", "",
             f"{perturbations} sequential perturbations after 30 static rounds (seed 1). Rounds until the new true "
             "centre believes it is the centre, no other node does, its view is the true top-P and the §3.3.1 "
             "validation succeeds.", "",
             "| case | recovered | min | median | mean | p90 | max | rounds: count |",
             "|---|---|---|---|---|---|---|---|"]
    for view in (2, 5, 10):
        config = OverlayConfig.build(nodes=1000, neighbors=view, rounds=30, perturbations=perturbations)
        result = run_overlay_config(config)
        lines.append(_recovery_row(f"random, 1,000 nodes, P={view}, drop below 1..P nodes", result))
    for view in (2, 10):
        config = OverlayConfig.build(nodes=1000, neighbors=view, rounds=30, perturbations=perturbations, drop_rank=100)
        result = run_overlay_config(config)
        lines.append(_recovery_row(f"random, 1,000 nodes, P={view}, drop below 1..100 nodes", result))
    for view in (2, 10):
        config = OverlayConfig.build(nodes=100, neighbors=view, rounds=30, utilities="google", users=20,
                                     perturbations=perturbations)
        result = run_overlay_config(config)
        lines.append(_recovery_row(f"Google 100×20 (eq. 4.2), P={view}, one allocation each", result))
    return lines


def overlay_study(seeds: int = 5, rounds: int = 50, perturbations: int = 100) -> tuple[str, list[list[str]]]:
    """The study's Markdown, and every round of seed 1 as CSV rows (P, round, fraction, centre ok,
    view exact); `perturbations = 0` skips the recovery study."""
    csv_rows: list[list[str]] = [["view", "round", "ideal_view_fraction", "centre_correct", "centre_view_exact"]]
    lines = _convergence(seeds, rounds, csv_rows)
    if perturbations:
        lines += [""] + _recovery(perturbations)
    return "\n".join(lines) + "\n", csv_rows
