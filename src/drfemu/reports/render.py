"""`drfemu report`: a sweep directory → Markdown tables, PNG figures and one HTML page.

Reads `sweep.json` and the run records of a sweep (finished or partial) and draws every
experiment's `[[tables]]` and `[[figures]]` (`sweeps.report_spec`). A cell or a plotted
point is the mean over the points that match it (the replicates); with more than one, the
spread is the sample standard deviation, shown as `mean ± sd` in tables and as error bars
in figures. Points whose run has no record yet, or failed, are left out and counted in the
experiment's header, so a partial sweep still gives a report.

Output (in `--out`, default `SWEEP_DIR/report`): `report.md` (tables inline, figures
linked), `figures/<experiment>-<id>.png`, and `report.html`, one self-contained page whose
figures are interactive charts of the same series (`reports.pages`), with each experiment's runs
linked to their pages where the sweep kept them (`drfemu sweep --pages`).
"""

from __future__ import annotations

import html
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drfemu.kernel.errors import InputError
from drfemu.reports.data import (
    PointData,
    load_points,
    mean_sd,
    metric_values,
    ordered,
)
from drfemu.reports.pages import PAGES, ChartSpec, chart_page, chart_slot
from drfemu.reports.plots import draw_figure
from drfemu.sweeps.report_spec import matches

__all__ = ["ReportSummary", "reference_cells", "table_cells", "write_report"]


@dataclass(frozen=True)
class ReportSummary:
    tables: int
    figures: int
    runs: int
    missing: int


def _cell(values: list[float], failed: bool, fmt: str, statistic: str = "mean") -> str:
    if not values:
        return "failed" if failed else "–"
    if statistic != "mean":
        return f"{format(min(values) if statistic == 'min' else max(values), fmt)} ({statistic} of {len(values)})"
    mean, sd = mean_sd(values)
    return format(mean, fmt) + ("" if sd is None else f" ± {format(sd, fmt)} (n={len(values)})")


def variant_cells(spec: Mapping[str, Any], points: list[PointData]) -> tuple[list[Any], list[Any], list[list[str]]]:
    """Row labels, column values and cells of a table with `variants` (see `report_spec`)."""
    where = spec.get("where", {})
    chosen = [p for p in points if matches(p.params, where)]
    columns = spec.get("column_values") or ordered(p.params[spec["columns"]] for p in chosen)
    fmt = spec.get("format", ".4g")
    pair_on = spec.get("pair_on", [spec["columns"], "seed"])
    reference = {}
    if "relative_to" in spec:
        for p in points:
            if p.status == "ok" and matches(p.params, {**where, **spec["relative_to"]}):
                reference[tuple(p.params.get(k) for k in pair_on)] = metric_values([p], spec["value"])
    rows, cells = [], []
    for variant in spec["variants"]:
        rows.append(variant["label"])
        selected = [p for p in chosen if matches(p.params, {k: v for k, v in variant.items() if k != "label"})]
        line = []
        for column in columns:
            group = [p for p in selected if p.params[spec["columns"]] == column]
            values = []
            for p in group:
                if p.status != "ok":
                    continue
                value = metric_values([p], spec["value"])
                if "relative_to" in spec:
                    base = reference.get(tuple(p.params.get(k) for k in pair_on))
                    value = [value[0] / base[0]] if value and base and base[0] else []
                values += value
            line.append(_cell(values, any(p.status == "failed" for p in group), fmt, spec.get("statistic", "mean")))
        cells.append(line)
    return rows, columns, cells


def table_cells(spec: Mapping[str, Any], points: list[PointData]) -> tuple[list[Any], list[Any], list[list[str]]]:
    """Row values, column values and formatted cells of a table spec."""
    if "variants" in spec:
        return variant_cells(spec, points)
    chosen = [p for p in points if matches(p.params, spec.get("where", {}))]
    rows = spec.get("row_values") or ordered(p.params[spec["rows"]] for p in chosen)
    columns = spec.get("column_values") or ordered(p.params[spec["columns"]] for p in chosen)
    fmt = spec.get("format", ".4g")
    cells = []
    for row in rows:
        line = []
        for column in columns:
            group = [p for p in chosen if p.params[spec["rows"]] == row and p.params[spec["columns"]] == column]
            values = metric_values((p for p in group if p.status == "ok"), spec["value"])
            cell = _cell(values, any(p.status == "failed" for p in group), fmt, spec.get("statistic", "mean"))
            if "beside" in spec and values:
                beside = metric_values((p for p in group if p.status == "ok"), spec["beside"])
                cell += f" ({_cell(beside, False, fmt, spec.get('statistic', 'mean'))})"
            line.append(cell)
        cells.append(line)
    return rows, columns, cells


def reference_cells(spec: Mapping[str, Any], rows: list[Any], columns: list[Any]) -> dict[Any, list[str]]:
    """Published values (a table's `reference`) per row, formatted like the table; '·' where none is given."""
    reference = spec.get("reference")
    if not reference:
        return {}
    fmt = spec.get("format", ".4g")
    published = {str(k): v for k, v in reference["rows"].items()}
    listed = [_label(c) for c in reference.get("columns", columns)]
    out = {}
    for row in rows:
        values = published.get(_label(row))
        if values is not None:
            by_column = dict(zip(listed, values))
            out[row] = [format(by_column[_label(c)], fmt) if _label(c) in by_column else "·" for c in columns]
    return out


def _label(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _value_label(spec: Mapping[str, Any]) -> str:
    relative = spec.get("relative_to")
    if not relative:
        return spec["value"] + (f" ({spec['beside']})" if "beside" in spec else "")
    return spec["value"] + " / the same of " + ", ".join(f"{k} = {v}" for k, v in relative.items())


def _markdown_table(spec: Mapping[str, Any], rows: list[Any], columns: list[Any], cells: list[list[str]]) -> list[str]:
    head = f"| {spec.get('rows', 'variant')} \\ {spec['columns']} | " + " | ".join(_label(c) for c in columns) + " |"
    lines = [f"**Table {spec['id']}.** {spec.get('title', '')} — `{_value_label(spec)}`", "", head,
             "|---" * (len(columns) + 1) + "|"]
    published = reference_cells(spec, rows, columns)
    label = spec.get("reference", {}).get("label", "reference")
    for row, line in zip(rows, cells):
        lines.append(f"| {_label(row)} | " + " | ".join(line) + " |")
        if row in published:
            lines.append(f"| ↳ *{label}* | " + " | ".join(f"*{c}*" for c in published[row]) + " |")
    if spec.get("note"):
        lines += ["", spec["note"]]
    return lines + [""]


def _html_table(spec: Mapping[str, Any], rows: list[Any], columns: list[Any], cells: list[list[str]]) -> str:
    esc = html.escape
    head = "".join(f"<th>{esc(_label(c))}</th>" for c in columns)
    published = reference_cells(spec, rows, columns)
    label = esc(spec.get("reference", {}).get("label", "reference"))
    body = ""
    for row, line in zip(rows, cells):
        body += f"<tr><th>{esc(_label(row))}</th>" + "".join(f"<td>{esc(c)}</td>" for c in line) + "</tr>"
        if row in published:
            body += (f"<tr class='ref'><th>↳ {label}</th>" + "".join(f"<td>{esc(c)}</td>" for c in published[row])
                     + "</tr>")
    note = f"<p class='note'>{esc(spec['note'])}</p>" if spec.get("note") else ""
    return (f"<figure class='table'><figcaption><b>Table {esc(spec['id'])}.</b> {esc(spec.get('title', ''))} "
            f"— <code>{esc(_value_label(spec))}</code></figcaption><table><thead><tr>"
            f"<th>{esc(spec.get('rows', 'variant'))} \\ "
            f"{esc(spec['columns'])}</th>{head}</tr></thead><tbody>{body}</tbody></table>{note}</figure>")


_CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;font-size:0.9em;margin:0.5em 0}th,td{border:1px solid #ccc;padding:3px 7px;
text-align:right}thead th{background:#f0f0f0}tbody th{text-align:left;background:#fafafa}figure{margin:1.5em 0}
figcaption{margin-bottom:0.4em}tr.ref td,tr.ref th{color:#666;font-style:italic}.meta{color:#555}code{font-size:0.95em}"""


def _run_pages(points: list[PointData], pages: Path, out: Path) -> str:
    """A list of the experiment's points linked to their runs' pages, where the sweep kept them."""
    kept = sorted({p.run for p in points if p.status == "ok" and (pages / f"{p.run}.html").is_file()})
    if not kept:
        return ""
    items = "".join(f"<li><a href='{html.escape(os.path.relpath(pages / f'{run}.html', out))}'>{html.escape(run)}</a></li>"
                    for run in kept)
    return f"<details><summary>The runs' pages ({len(kept)})</summary><ul>{items}</ul></details>"


def write_report(sweep_dir: Path, out: Path) -> ReportSummary:
    """Write report.md, report.html and figures/*.png for the sweep in `sweep_dir`; `InputError`
    if it has no finished run."""
    experiments = load_points(sweep_dir)
    if not any(p.status == "ok" for _, points in experiments for p in points):
        raise InputError(f"{sweep_dir} holds no finished run yet: nothing to report")
    figures_dir = out / "figures"
    try:
        figures_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InputError(f"cannot create {figures_dir}: {error.strerror}") from None
    md = ["# drfemu sweep report", "", f"Sweep directory: `{sweep_dir}`. Cells and plotted points are means over "
          "replicates (± sample standard deviation when there are several); – marks a point without a result.", ""]
    page = ["<h1>drfemu sweep report</h1><p class='meta'>Sweep directory <code>"
            f"{html.escape(str(sweep_dir))}</code>. Cells and plotted points are means over replicates (± sample "
            "standard deviation when there are several); – marks a point without a result. Hover a figure for its "
            "values; click a legend entry to highlight it.</p>"]
    charts: list[ChartSpec] = []
    pages = sweep_dir / PAGES
    n_tables = n_figures = missing = 0
    finished: set[str] = set()
    for experiment, points in experiments:
        counts = {s: sum(p.status == s for p in points) for s in ("ok", "failed", "missing")}
        finished.update(p.run for p in points if p.status == "ok")
        missing += counts["failed"] + counts["missing"]
        header = (f"{len(points)} points ({len({p.run for p in points})} runs): {counts['ok']} with a result, "
                  f"{counts['failed']} failed, {counts['missing']} not run yet. Config: `{Path(experiment['source']).name}`.")
        md += [f"## {experiment['name']} — {experiment['title']}", "", header, ""]
        page.append(f"<h2>{html.escape(experiment['name'])} — {html.escape(experiment['title'])}</h2>"
                    f"<p class='meta'>{html.escape(header.replace('`', ''))}</p>")
        for spec in experiment.get("tables", []):
            rows, columns, cells = table_cells(spec, points)
            md += _markdown_table(spec, rows, columns, cells)
            page.append(_html_table(spec, rows, columns, cells))
            n_tables += 1
        for spec in experiment.get("figures", []):
            name = f"{experiment['name']}-{spec['id']}".replace("/", "_").replace(" ", "_")
            path = figures_dir / f"{name}.png"
            chart = draw_figure(spec, points, path, chart_id=name)
            caption = f"Figure {spec['id']}. {spec.get('title', '')}"
            if chart is None:
                md += [f"*{caption}: no finished runs yet.*", ""]
                page.append(f"<p><i>{html.escape(caption)}: no finished runs yet.</i></p>")
                continue
            md += [f"![{caption}](figures/{path.name})", "", f"*{caption}*", ""]
            page.append(chart_slot(name))
            charts.append(chart)
            n_figures += 1
        page.append(_run_pages(points, pages, out))
    (out / "report.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    (out / "report.html").write_text(chart_page("drfemu sweep report", "\n".join(page), charts, _CSS),
                                     encoding="utf-8")
    return ReportSummary(n_tables, n_figures, len(finished), missing)
