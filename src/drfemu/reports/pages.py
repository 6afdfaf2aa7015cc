"""Self-contained HTML pages of interactive charts: a run's (`reports.run_page`) and a sweep's
(`reports.render`).

A page is one file: its charts as data (`ChartSpec`, JSON in the page) and the package's own
drawing script (`charts.js`: SVG, hover values, a legend that highlights a series), inline. It
needs no network and no library. Decision: a small script of our own rather than a charting
library, so that a page works offline, stays small (a run's trace hour under 2 MB) and is the
same in every copy of drfemu; numbers are written to 6 significant digits.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.resources import files
from typing import Any

__all__ = ["PAGES", "Band", "ChartSpec", "Series", "chart_page", "chart_slot"]

PAGES = "pages"
"""Where a sweep keeps its runs' pages (`drfemu sweep --pages`): `SWEEP_DIR/pages/<run>.html`."""

DIGITS = 6  # significant digits a page keeps of a figure


def _round(value: float | None) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return float(f"{value:.{DIGITS}g}")


@dataclass(frozen=True)
class Series:
    """One line: `y[k]` at `x[k]` (None breaks it); series of one `group` highlight together."""

    name: str
    x: Sequence[float]
    y: Sequence[float | None]
    group: str | None = None
    dash: bool = False
    width: float = 1.5
    legend: bool = True
    markers: bool = False

    def to_json(self) -> dict[str, Any]:
        if len(self.x) != len(self.y):
            raise ValueError(f"series {self.name!r}: {len(self.x)} x values and {len(self.y)} y values")
        out: dict[str, Any] = {"name": self.name, "x": [_round(v) for v in self.x], "y": [_round(v) for v in self.y],
                               "width": self.width}
        if self.group is not None:
            out["group"] = self.group
        if self.dash:
            out["dash"] = True
        if not self.legend:
            out["legend"] = False
        if self.markers:
            out["markers"] = True
        return out


@dataclass(frozen=True)
class Band:
    """A shaded span of x (a fault window)."""

    start: float
    end: float
    label: str


@dataclass(frozen=True)
class ChartSpec:
    """A chart: its id on the page, its title and axes, its lines and shaded spans."""

    id: str
    title: str
    x_label: str
    y_label: str
    series: list[Series]
    bands: list[Band] = field(default_factory=list)
    y_min: float | None = 0.0
    x_log: bool = False
    y_log: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "x_label": self.x_label, "y_label": self.y_label,
                "series": [s.to_json() for s in self.series], "y_min": self.y_min, "x_log": self.x_log,
                "y_log": self.y_log,
                "bands": [{"start": _round(b.start), "end": _round(b.end), "label": b.label} for b in self.bands]}


CSS = """
body{font-family:system-ui,sans-serif;max-width:960px;margin:2em auto;color:#222}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:2em}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}
td:first-child,th:first-child{text-align:left}.meta{color:#555}
figure.chart{margin:1.5em 0}figcaption{font-weight:600;margin-bottom:4px}
svg{max-width:100%;height:auto;background:#fff}.axis{stroke:#444}.grid{stroke:#eee}
.tick{font-size:11px;fill:#444}.name{font-size:12px;fill:#222}.band{fill:#f4a261;opacity:.25}
.series.dim{opacity:.12}.series.bold{stroke-width:3}.cursor{stroke:#999;stroke-dasharray:2 2}
.legend{font-size:12px}.entry{cursor:pointer;margin-right:12px;display:inline-block}
.tip{font-size:12px;color:#333;min-height:1.3em}
"""


def chart_slot(chart_id: str) -> str:
    """Where in a page's body the chart `chart_id` is drawn (charts without a slot follow the body)."""
    return f"<div data-chart='{html.escape(chart_id)}'></div>"


def chart_page(title: str, body: str, charts: Sequence[ChartSpec], css: str = "") -> str:
    """One self-contained page: `body` (HTML, already escaped) with `charts` drawn in the browser,
    each at its `chart_slot` or after the body; `css` adds to the page's style."""
    script = files("drfemu.reports").joinpath("charts.js").read_text(encoding="utf-8")
    data = json.dumps([c.to_json() for c in charts], separators=(",", ":"), allow_nan=False)
    data = data.replace("</", "<\\/")  # nothing in the data can close the script element
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{CSS}{css}</style></head><body>{body}<div id='charts'></div>"
            f"<script>{script}</script>"
            f"<script id='drfemu-charts' type='application/json'>{data}</script>"
            "<script>drfemuCharts.render(document.getElementById('charts'),"
            "JSON.parse(document.getElementById('drfemu-charts').textContent));</script></body></html>\n")
