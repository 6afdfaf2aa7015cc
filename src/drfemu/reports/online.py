"""The trace-replay report (issue 15): `drfemu trace-replay --report PAGE`.

From each protocol's result on the trace's own arrivals (`sweeps.online`): one
Markdown table — time-averaged minimum share, Gini and Jain over the users present, queueing
delay p50/p95/p99, time-averaged utilisation, the error ratio at allocation instants, the mean
RMSE against SWM, messages per task, wall time — and figures beside the page: minimum share,
Gini, tasks waiting and memory utilisation over time, RMSE against SWM over time, and the
delay CDFs. The same content as one self-contained HTML page (`<page>.html`).

The page keeps what is written above the line `MARKER` (the discussion) and regenerates
everything below it; an existing page without the marker is refused rather than overwritten.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from drfemu.kernel.errors import InputError  # noqa: E402
from drfemu.kernel.files import read_text  # noqa: E402
from drfemu.reports.plots import protocol_style  # noqa: E402

__all__ = ["MARKER", "kept_part", "online_table", "write_online_report"]

MARKER = "<!-- generated below by drfemu trace-replay --report; edit above this line -->"

COLUMNS = ("protocol", "outcome", "makespan s", "min share", "Gini", "Jain", "delay p50 s", "p95 s", "p99 s",
           "CPU used", "memory used", "error ratio τ=0", "RMSE vs SWM", "messages / task", "wall s")


def _number(x: float | None, form: str) -> str:
    return "–" if x is None else format(x, form)


def online_table(results: Mapping[str, Mapping[str, Any]]) -> list[list[str]]:
    """One row per protocol, in `COLUMNS` order."""
    rows = []
    for protocol, r in results.items():
        averaged, delay, used = r["time_averaged"], r["queueing_delay_s"], r["utilization"]
        tasks = r["ledger"]["finished"] + r["ledger"]["running"]
        rows.append([protocol, r["status"], _number(r["run_time_s"], ",.0f"), _number(averaged["min_share"], ".4f"),
                     _number(averaged["gini"], ".3f"), _number(averaged["jain"], ".3f"),
                     _number(delay["p50"], ",.0f"), _number(delay["p95"], ",.0f"), _number(delay["p99"], ",.0f"),
                     _number(used.get("cpu"), ".1%"), _number(used.get("mem"), ".1%"),
                     _number(r["error_ratio"], ".2%"), _number(r["swm"].get("mean_rmse"), ".2%"),
                     _number(r["messages_total"] / tasks if tasks else None, ",.0f"),
                     _number(r["wall_time_s"], ",.0f")])
    return rows


Curves = Callable[[Mapping[str, Any]], tuple[Any, Any] | None]  # a result → (xs, ys), or None: no curve


def _figure(results: Mapping[str, Mapping[str, Any]], curves: Curves, title: str, xlabel: str, ylabel: str,
            path: Path, xscale: str = "linear", yscale: str = "linear", markers: bool = False) -> None:
    """One curve per protocol, in its fixed style."""
    fig, ax = plt.subplots(figsize=(8, 4.4), dpi=110)
    for protocol, r in results.items():
        curve = curves(r)
        if curve is not None:
            style = protocol_style(protocol)
            ax.plot(*curve, label=protocol, color=style["color"], linestyle=style["linestyle"], linewidth=1.0,
                    marker=style["marker"] if markers else None, markersize=3)
    ax.set_xscale(xscale)
    if yscale == "symlog":
        ax.set_yscale("symlog", linthresh=1.0)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _series(key: str) -> Curves:
    def curve(r: Mapping[str, Any]) -> tuple[Any, Any]:
        series = r["series"]
        return series["time"], np.array([np.nan if v is None else v for v in series[key]], dtype=float)

    return curve


def _rmse_curve(r: Mapping[str, Any]) -> tuple[Any, Any] | None:
    swm = r["swm"]
    return (swm["times"], swm["rmse"]) if swm.get("available") else None


def _delay_curve(r: Mapping[str, Any]) -> tuple[Any, Any] | None:
    quantiles = r["queueing_delay_quantiles_s"]
    return ([max(q, 1e-3) for q in quantiles], np.linspace(0, 1, len(quantiles))) if quantiles else None


def kept_part(page: Path) -> str:
    """What a report page keeps: its text above `MARKER` ("" for a new page). An existing page
    without the marker raises `InputError` (one line), so nothing written there is lost."""
    if not page.exists():
        return ""
    if not page.is_file():
        raise InputError(f"{page}: not a regular file (the report page's text above the marker is kept, so it is "
                         "read first)")
    text = read_text(page, "a text page (its part above the marker is kept)")
    if MARKER not in text:
        raise InputError(f"{page} exists without the line {MARKER!r}: add it where the generated part starts "
                         "(everything above it is kept), or write to a new page")
    return text[:text.index(MARKER)].rstrip() + "\n\n"


def write_online_report(results: Mapping[str, Mapping[str, Any]], page: Path) -> list[Path]:
    """Write `page` (Markdown; its part above `MARKER` kept), `page` with `.html`, and the figures
    in `<page stem>/`; returns the figures."""
    kept = kept_part(page)
    figures = page.parent / page.stem
    figures.mkdir(parents=True, exist_ok=True)
    time = "virtual time, s"
    drawn: list[tuple[str, str, Callable[[Path], None]]] = [
        ("min-share.png", "Minimum dominant share of the users present", lambda p: _figure(
            results, _series("min_share"), "Minimum dominant share over time", time, "minimum G_i (users present)", p)),
        ("gini.png", "Gini of the dominant shares of the users present", lambda p: _figure(
            results, _series("gini"), "Gini over time", time, "Gini (users present)", p)),
        ("waiting.png", "Tasks submitted and not yet started", lambda p: _figure(
            results, _series("waiting"), "Tasks waiting over time", time, "tasks waiting", p, yscale="symlog")),
        ("memory.png", "Memory utilisation", lambda p: _figure(
            results, _series("utilization_mem"), "Memory utilisation over time", time, "memory in use", p)),
        ("rmse.png", "Relative RMSE against SWM", lambda p: _figure(
            results, _rmse_curve, "Distance to the SWM optimum (seed 002's measure, every 700 s)", time,
            "relative RMSE of dominant shares against SWM", p, markers=True)),
        ("delays.png", "Queueing delay CDF", lambda p: _figure(
            results, _delay_curve, "Queueing delay of every task", "queueing delay, s (submission to start; 1 ms "
            "floor)", "CDF", p, xscale="log")),
    ]
    paths = []
    for name, _, draw in drawn:
        draw(figures / name)
        paths.append(figures / name)
    rows = online_table(results)
    lines = [kept + MARKER, "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    lines.append("")
    for (name, caption, _), path in zip(drawn, paths):
        lines.append(f"![{caption}]({figures.name}/{name})")
        lines.append("")
    page.write_text("\n".join(lines), encoding="utf-8")
    esc = html.escape
    body = ["<!doctype html><html><head><meta charset='utf-8'><title>drfemu trace replay</title></head><body>",
            "<h1>drfemu trace replay</h1><table border='1' cellpadding='3'><thead><tr>"
            + "".join(f"<th>{esc(c)}</th>" for c in COLUMNS) + "</tr></thead><tbody>"]
    body += ["<tr>" + "".join(f"<td>{esc(cell)}</td>" for cell in row) + "</tr>" for row in rows]
    body.append("</tbody></table>")
    for (name, caption, _), path in zip(drawn, paths):
        encoded = base64.b64encode(path.read_bytes()).decode("ascii")
        body.append(f"<figure><img alt='{esc(caption)}' src='data:image/png;base64,{encoded}'>"
                    f"<figcaption>{esc(caption)}</figcaption></figure>")
    body.append("</body></html>")
    page.with_suffix(".html").write_text("\n".join(body) + "\n", encoding="utf-8")
    return paths
