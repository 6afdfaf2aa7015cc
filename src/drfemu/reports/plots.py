"""Matplotlib figures of a sweep report, one function per figure kind (`report_spec`), and the
same figure as an interactive chart of the report's page (`reports.pages`): the chart's lines are
read back from the drawn axes, so the PNG and the page show the same series.

Every protocol has one colour, marker and line style in every figure, so a reader tells
them apart in colour and in grey; other series (machines, users) cycle through a fixed
palette. Axes are always labelled (the spec's labels, else the parameter or metric name).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from itertools import cycle
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.ticker
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from drfemu.observers.harness import TOLERANCES  # noqa: E402
from drfemu.protocols.registry import PROTOCOLS  # noqa: E402
from drfemu.reports.data import PointData, mean_sd, metric_values, ordered  # noqa: E402
from drfemu.reports.pages import ChartSpec, Series  # noqa: E402
from drfemu.schema.params import readers  # noqa: E402
from drfemu.sweeps.report_spec import matches  # noqa: E402
from drfemu.workloads.points import defaults

__all__ = ["draw_figure", "protocol_style"]

_DASHED = {"--", ":", "-.", "dashed", "dotted", "dashdot"}
MARKED_POINTS = 50  # a chart's series of at most this many points shows them, as the PNG's markers do

_PALETTE = [{"color": c, "marker": m, "linestyle": ls} for c, m, ls in
            zip(("black", "#8c564b", "#7f7f7f", "#1f77b4", "#d62728", "#ff7f0e", "#2ca02c", "#9467bd", "#e377c2",
                 "#17becf", "#bcbd22", "#393b79", "#637939", "#843c39", "#7b4173"), "o*xsv^DPXh<>pd8",
                ("-", ":", ":", "--", "-.", "--", "-", "-.", ":", "--", "-", ":", "-.", "--", "-"))]


def protocol_style(protocol: str) -> dict[str, Any]:
    """A protocol's colour, marker and line style in every figure: fixed by its place in the
    registry, so each protocol looks the same across figures and reports."""
    names = list(PROTOCOLS)
    index = names.index(protocol) if protocol in names else len(names)
    return dict(_PALETTE[index % len(_PALETTE)])


def _styles(series_param: str, values: list[Any]) -> dict[Any, dict[str, Any]]:
    if series_param == "protocol":
        return {v: protocol_style(v) for v in values}
    return dict(zip(values, cycle(_PALETTE)))


def _selected(points: list[PointData], where: Mapping[str, Any]) -> list[PointData]:
    return [p for p in points if p.status == "ok" and matches(p.params, where)]


def _plot_mean(ax: Any, xs: list[Any], groups: list[list[float]], label: str, style: dict[str, Any]) -> bool:
    x_done, means, sds = [], [], []
    for x, values in zip(xs, groups):
        if values:
            mean, sd = mean_sd(values)
            x_done.append(x)
            means.append(mean)
            sds.append(sd or 0.0)
    if not x_done:
        return False
    ax.errorbar(x_done, means, yerr=sds if any(sds) else None, label=label, capsize=3, markersize=5, linewidth=1.4,
                **style)
    return True


def _lines(ax: Any, spec: Mapping[str, Any], points: list[PointData]) -> bool:
    chosen = _selected(points, spec.get("where", {}))
    series = spec.get("series_values") or ordered(p.params[spec["series"]] for p in chosen)
    styles = _styles(spec["series"], series)
    drawn = False
    for value in series:
        mine = [p for p in chosen if p.params[spec["series"]] == value]
        xs = ordered(p.params[spec["x"]] for p in mine)
        groups = [metric_values((p for p in mine if p.params[spec["x"]] == x), spec["y"]) for x in xs]
        drawn |= _plot_mean(ax, xs, groups, f"{spec['series']} = {value}" if spec["series"] != "protocol" else str(value),
                            styles[value])
    ax.set_xlabel(spec.get("xlabel", spec["x"]))
    ax.set_ylabel(spec.get("ylabel", spec["y"]))
    return drawn


@functools.cache
def _reads_both(name: str, one: str, other: str) -> bool:
    who = readers(name) if name in defaults() else []
    return one in who and other in who


def _ratio(ax: Any, spec: Mapping[str, Any], points: list[PointData]) -> bool:
    where = spec.get("where", {})
    metric = spec.get("value", "run_time_s")
    numerators = _selected(points, {**where, **spec["numerator"]})
    denominators = _selected(points, {**where, **spec["denominator"]})

    skip = set(spec["numerator"]) | set(spec["denominator"])

    def paired(p: PointData, q: PointData) -> bool:
        """Does denominator `q` describe the same run conditions as numerator `p`? They must
        agree on every declared parameter both their protocols read (a parameter only one reads,
        such as PDGDRF's centre ties beside DRF, cannot tell their runs apart)."""
        return all(q.params.get(k) == v for k, v in p.params.items()
                   if k not in skip and _reads_both(k, p.params["protocol"], q.params["protocol"]))

    ratios: dict[tuple[Any, Any], list[float]] = {}
    for p in numerators:
        q = next((q for q in denominators if paired(p, q)), None)
        top, bottom = metric_values([p], metric), metric_values([q], metric) if q is not None else []
        if top and bottom and bottom[0] > 0:
            ratios.setdefault((p.params[spec["series"]], p.params[spec["x"]]), []).append(top[0] / bottom[0])
    series = ordered(s for s, _ in ratios)
    styles = _styles(spec["series"], series)
    drawn = False
    for value in series:
        xs = ordered(x for s, x in ratios if s == value)
        drawn |= _plot_mean(ax, xs, [ratios[(value, x)] for x in xs], f"{spec['series']} = {value}", styles[value])
    if drawn:
        ax.axhline(1.0, color="grey", linestyle="--", linewidth=1, label="equal run-time")
    ax.set_xlabel(spec.get("xlabel", spec["x"]))
    ax.set_ylabel(spec.get("ylabel", f"{metric} ratio"))
    return drawn


def _curve_style(curve: Mapping[str, Any], index: int) -> dict[str, Any]:
    base: dict[str, Any] = protocol_style(curve["protocol"]) if "protocol" in curve else dict(_PALETTE[index % len(_PALETTE)])
    base["marker"] = None
    if curve.get("tolerance", 0.0):
        base["linestyle"] = ":"
    return base


def _curve_where(spec: Mapping[str, Any], curve: Mapping[str, Any]) -> dict[str, Any]:
    return {**spec.get("where", {}), **{k: v for k, v in curve.items() if k not in ("label", "tolerance")}}


def _error_series(ax: Any, spec: Mapping[str, Any], points: list[PointData]) -> bool:
    drawn = False
    for i, curve in enumerate(spec["curves"]):
        key = f"{curve.get('tolerance', 0.0):g}"
        style = _curve_style(curve, i)
        for k, point in enumerate(_selected(points, _curve_where(spec, curve))):
            series = point.result.get("error_series", {})
            if key in series:
                ax.plot(series["allocations"], series[key], label=curve["label"] if k == 0 else None, linewidth=1.6,
                        **style)
                drawn = True
    ax.set_xlabel(spec.get("xlabel", "allocations"))
    ax.set_ylabel(spec.get("ylabel", "cumulative error ratio"))
    ax.set_ylim(0, 1)
    return drawn


def _tolerance(ax: Any, spec: Mapping[str, Any], points: list[PointData]) -> bool:
    drawn = False
    xs = [tau * 100 for tau in TOLERANCES]
    for i, curve in enumerate(spec["curves"]):
        chosen = _selected(points, _curve_where(spec, curve))
        groups = [metric_values(chosen, f"error_ratio_by_tolerance.{tau:g}") for tau in TOLERANCES]
        style = protocol_style(curve["protocol"]) if "protocol" in curve else dict(_PALETTE[i % len(_PALETTE)])
        drawn |= _plot_mean(ax, xs, groups, curve["label"], style)
    ax.set_xlabel(f"{spec.get('xlabel', 'tolerance τ')} (%)")
    ax.set_ylabel(spec.get("ylabel", "error ratio"))
    ax.set_ylim(0, 1)
    return drawn


_KINDS = {"lines": _lines, "ratio": _ratio, "error-series": _error_series, "tolerance": _tolerance}


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if np.isfinite(number) else None


def _chart(ax: Any, spec: Mapping[str, Any], chart_id: str) -> ChartSpec:
    """The drawn axes as a chart: each labelled line a series (a line drawn without a label, as
    the error series' further runs, belongs to the labelled one before it, outside the legend);
    error-bar caps and other decorations are left out."""
    series: list[Series] = []
    group: str | None = None
    named_by: dict[int, str] = {}  # an error bar's data line -> its label (matplotlib keeps it on the container)
    caps: set[int] = set()
    for container in ax.containers:
        data_line, cap_lines, _ = container.lines
        if data_line is not None:
            named_by[id(data_line)] = str(container.get_label())
        caps.update(id(cap) for cap in cap_lines)
    for line in ax.get_lines():
        label = named_by.get(id(line), str(line.get_label()))
        if id(line) in caps or label.startswith("_nolegend_") or len(line.get_xdata()) == 0:
            continue
        named = not label.startswith("_")
        if named:
            group = label
        elif group is None:
            continue
        xs = [_number(x) for x in line.get_xdata()]
        if line.get_transform() != ax.transData:  # a reference line across the axes (`axhline`)
            xs = [_number(x) for x in ax.get_xlim()]
        if any(x is None for x in xs):
            xs = [float(k) for k in range(len(xs))]  # a categorical axis: its values in order
        series.append(Series(label if named else f"{group} ({len(series) + 1})", [x or 0.0 for x in xs],
                             [_number(y) for y in line.get_ydata()], group=group,
                             dash=line.get_linestyle() in _DASHED, legend=named,
                             markers=line.get_marker() not in (None, "None", "") and len(xs) <= MARKED_POINTS))
    return ChartSpec(chart_id, f"Figure {spec['id']}. {spec.get('title', '')}", ax.get_xlabel(), ax.get_ylabel(),
                     series, y_min=None, x_log=spec.get("xscale") == "log", y_log=spec.get("yscale") == "log")


def draw_figure(spec: Mapping[str, Any], points: list[PointData], path: Path,
                chart_id: str = "figure") -> ChartSpec | None:
    """Draw `spec` from `points` into the PNG `path`, and return the same figure as a chart of the
    page (`chart_id`); None (and no file) when nothing can be drawn."""
    fig, ax = plt.subplots(figsize=(7.5, 4.6), dpi=110)
    try:
        if not _KINDS[spec["kind"]](ax, spec, points):
            return None
        ax.set_xscale(spec.get("xscale", "linear"))
        ax.set_yscale(spec.get("yscale", "linear"))
        if spec.get("xscale") == "log" and spec["kind"] in ("lines", "ratio"):
            # Label the swept values themselves, not powers of ten.
            xs: list[float] = sorted({float(x) for line in ax.get_lines()
                                      for x in np.asarray(line.get_xdata(), dtype=float) if x > 0})
            ax.set_xticks(xs, [f"{x:g}" for x in xs])
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        if spec["kind"] in ("lines", "ratio") and spec.get("x") in ("neighbors", "users", "machines") \
                and spec.get("xscale", "linear") == "linear":
            ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax.set_title(f"Figure {spec['id']}. {spec.get('title', '')}", fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, loc="best")
        fig.tight_layout()
        fig.savefig(path)
        return _chart(ax, spec, chart_id)
    finally:
        plt.close(fig)
