"""The fault study's report (issue 16): `drfemu fault-report DIR` on a sweep of `configs/faults.toml`.

From the run records it writes Markdown with
1. the churn table: per protocol, the minimum share of each seed's fault-free run and of the
   same case with 1 % loss and churn, their ratio (the issue's bar: ≥ 0.95), the crashes, the
   tasks killed and submitted again, and what the faults cost in messages and time;
2. the crash table: per protocol, what the 60-second crash cost (allocation rate before,
   during and after; time to recover; messages), from each run's `fault_windows`;
3. a figure of allocations over time through the crash, each protocol beside its run without
   a fault.
Runs are told apart by their fault scenario's file name (`configs/faults/*.toml`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["fault_report"]

CHURN = "churn-10pct.toml"
CRASHES = {"scheduler-crash.toml": "scheduler", "centre-crash.toml": "gradient's centre"}
NONE = "none.toml"
BAR = 0.95


def markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(row) + " |" for row in rows)]


def _scenario(record: Mapping[str, Any]) -> str | None:
    path = record["params"].get("faults")
    return Path(path).name if path else None


def _churn_table(records: list[dict[str, Any]]) -> list[str]:
    clean: dict[tuple[str, int], dict[str, Any]] = {}
    churned: dict[tuple[str, int], dict[str, Any]] = {}
    for record in records:
        key = (record["params"]["protocol"], record["params"]["seed"])
        scenario = _scenario(record)
        if scenario is None:
            clean[key] = record["result"]
        elif scenario == CHURN:
            churned[key] = record["result"]
    rows = []
    by_protocol: dict[str, list[tuple[int, dict[str, Any], dict[str, Any]]]] = defaultdict(list)
    for key in sorted(set(clean) & set(churned)):
        by_protocol[key[0]].append((key[1], clean[key], churned[key]))
    for protocol, runs in sorted(by_protocol.items()):
        ratios = [c["min_dominant_share"] / f["min_dominant_share"] for _, f, c in runs]
        crashes = [sum(e["action"] == "crash" for e in c["faults"]) for _, _, c in runs]
        rows.append([
            protocol, ", ".join(str(s) for s, _, _ in runs),
            ", ".join(f"{f['min_dominant_share']:.4f}" for _, f, _ in runs),
            ", ".join(f"{c['min_dominant_share']:.4f}" for _, _, c in runs),
            ", ".join(f"{r:.3f}" for r in ratios),
            "yes" if min(ratios) >= BAR else "**no**",
            ", ".join(str(n) for n in crashes),
            ", ".join(str(c["ledger"]["resubmitted"]) for _, _, c in runs),
            ", ".join(str(c["ledger"]["lost"]) for _, _, c in runs),
            ", ".join(f"{c['messages_total'] / f['messages_total']:.2f}" for _, f, c in runs),
            ", ".join(f"{c['run_time_s'] / f['run_time_s']:.2f}" for _, f, c in runs),
            ", ".join(c["status"] for _, _, c in runs),
        ])
    header = ["protocol", "seeds", "min share, fault-free", "min share, churn + 1 % loss", "ratio",
              f"≥ {BAR:g}", "crashes", "tasks resubmitted", "lost", "messages ×", "run time ×", "outcome"]
    return markdown_table(header, rows)


def _crash_runs(records: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """protocol → {"fault": result, "none": result} for the crash experiment (seed 1)."""
    runs: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for record in records:
        scenario = _scenario(record)
        if scenario in CRASHES:
            runs[record["params"]["protocol"]]["fault"] = record["result"]
            runs[record["params"]["protocol"]]["target"] = {"name": CRASHES[scenario]}
        elif scenario == NONE:
            runs[record["params"]["protocol"]]["none"] = record["result"]
    return {p: r for p, r in sorted(runs.items()) if "fault" in r and "none" in r}


def _number(x: float | None, form: str = ".3g") -> str:
    return "–" if x is None else format(x, form)


def _crash_table(runs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    rows = []
    for protocol, pair in runs.items():
        window = next((w for w in pair["fault"]["fault_windows"] if w["fault"] == "crash"), None)
        if window is None:
            continue
        rows.append([protocol, pair["target"]["name"], f"{window['start_s']:g}–{window['end_s']:g} s",
                     _number(window["allocation_rate_before"]), _number(window["allocation_rate_during"]),
                     _number(window["allocation_rate_after"]), _number(window["min_share_before"], ".4f"),
                     _number(window["min_share_during"], ".4f"), _number(window["time_to_recover_s"], ".2f"),
                     f"{window['messages_during']:,}", _number(window["recovery_messages"], ",.0f"),
                     f"{pair['fault']['min_dominant_share']:.4f} / {pair['none']['min_dominant_share']:.4f}",
                     f"{pair['fault']['run_time_s']:.0f} / {pair['none']['run_time_s']:.0f} s"])
    header = ["protocol", "crashed", "down", "allocations/s before", "during", "after", "min share at crash",
              "lowest during", "time to recover (s)", "messages from crash to recovery", "beyond the rate before",
              "final min share: crash / none", "run time: crash / none"]
    return markdown_table(header, rows)


def _figure(runs: Mapping[str, Mapping[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(runs), figsize=(4.2 * len(runs), 3.4), squeeze=False)
    for ax, (protocol, pair) in zip(axes[0], runs.items()):
        end = 0.0
        for key, style, label in (("none", "--", "no fault"), ("fault", "-", f"{pair['target']['name']} crashed")):
            timeline = pair[key]["fault_timeline"]
            t = np.asarray(timeline["time"])
            keep = t <= 300.0
            ax.plot(t[keep], np.asarray(timeline["allocations"])[keep], style, label=label)
            end = max(end, float(t[keep][-1]) if keep.any() else 0.0)
        window = next((w for w in pair["fault"]["fault_windows"] if w["fault"] == "crash"), None)
        if window is not None:
            ax.axvspan(window["start_s"], window["end_s"], color="0.85", zorder=0)
        ax.set_title(protocol)
        ax.set_xlabel("virtual time (s)")
        ax.set_ylabel("allocations so far")
        ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def fault_report(records: Mapping[str, dict[str, Any]], figure: Path, figure_link: str) -> str:
    """The study's Markdown; writes the crash figure to `figure` (linked as `figure_link`)."""
    ok = [r for r in records.values() if r["status"] == "ok"]
    failed = [r["id"] for r in records.values() if r["status"] != "ok"]
    lines = ["# Fault study (issue 16): churn, and a 60-second crash", "",
             "Generated by `drfemu sweep configs/faults.toml --out results/faults` and "
             "`drfemu fault-report results/faults`; regenerate both when the code changes.", "",
             "## Churn: a tenth of the servers crash and recover, 1 % loss", "",
             "Google 100 × 20; `configs/faults/churn-10pct.toml` against the same case and seed without faults. "
             "The bar: each protocol's final minimum share with churn is at least "
             f"{BAR:g} × its fault-free one. Messages × and run time × compare the churn run with the "
             "fault-free one.", ""]
    lines += _churn_table(ok)
    runs = _crash_runs(ok)
    lines += ["", "## A 60-second crash of the central scheduler and of the gradient's centre", "",
              "Google 100 × 20, seed 1, 1 % loss; the same run with `configs/faults/none.toml` (resilience on, no "
              "fault) beside it. Rates are over the crash's length before, during and after it; the time to recover "
              "runs from the end of the crash until the minimum share is back where it was when the crash began "
              "(0: it never fell); the messages beyond the rate before may be negative (a stalled allocator sends "
              "less).", ""]
    lines += _crash_table(runs)
    if runs:
        _figure(runs, figure)
        lines += ["", f"![allocations over time through the crash]({figure_link})", "",
                  "Allocations so far over the first 300 s; the grey band is the crash."]
    if failed:
        lines += ["", f"Failed runs (not in the tables): {', '.join(sorted(failed))}."]
    return "\n".join(lines) + "\n"
