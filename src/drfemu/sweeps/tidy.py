"""The tidy table of a sweep: one row per run, one column per parameter or scalar metric.

Columns: `id`, `experiments` (the experiments whose points use the run, `;`-separated),
`status` (`ok` | `failed`), `error`, every canonical run parameter, then the run's scalar
results with nested mappings flattened by `.` (`error_ratio_by_tolerance.0.01`,
`utilization.cpu`, `placement.walks`, `overlay.centre_checks`). The run's own outcome
(`saturated`, `stalled`, `time-cap`) is the column `outcome`. Per-message-type counts,
per-user shares, the error series and the workload description stay in the run's JSON.
Missing values are empty in the CSV and null in Parquet.

`runs.parquet` is written when pyarrow is installed (the `sweep` extra); CSV always is.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from drfemu.sweeps.records import load_records, read_manifest
from drfemu.workloads.points import defaults

__all__ = ["flatten_result", "tidy_rows", "write_tidy"]

_SKIP = {"messages", "messages_dropped", "bytes", "dominant_shares", "unplaceable_users", "error_series", "workload",
         "resources", "status"}
_PER_USER = {"tasks", "queueing_delay_p99_by_user_s"}
"""Mappings by user, left out at any depth (a reference run's too): one column per user is no table."""


def flatten_result(result: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Scalar values of a run result, nested mappings joined with `.`; lists are left out."""
    flat: dict[str, Any] = {}
    for key, value in result.items():
        if (not prefix and key in _SKIP) or key in _PER_USER:
            continue
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten_result(value, f"{name}."))
        elif value is None or isinstance(value, (bool, int, float, str)):
            flat[name] = value
    return flat


def tidy_rows(out: Path) -> list[dict[str, Any]]:
    """One row per run record in `out/runs`, in run-id order."""
    membership: dict[str, list[str]] = {}
    manifest = out / "sweep.json"
    if manifest.exists():
        for experiment in read_manifest(manifest):
            for point in experiment.get("points", ()):
                names = membership.setdefault(point["run"], [])
                if experiment["name"] not in names:
                    names.append(experiment["name"])
    rows = []
    for run, record in sorted(load_records(out).items()):
        row: dict[str, Any] = {"id": run, "experiments": ";".join(membership.get(run, [])),
                               "status": record["status"], "error": record.get("error")}
        row.update({name: record["params"].get(name) for name in defaults()})
        result = record.get("result") or {}
        row["outcome"] = result.get("status")
        row.update(flatten_result(result))
        rows.append(row)
    return rows


def _columns(rows: list[dict[str, Any]]) -> list[str]:
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    return list(columns)


def _column_values(rows: list[dict[str, Any]], column: str) -> list[Any]:
    """A column's values with one type: ints become floats where any value is a float."""
    values = [row.get(column) for row in rows]
    present = [v for v in values if v is not None]
    if any(isinstance(v, float) for v in present) and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                          for v in present):
        return [None if v is None else float(v) for v in values]
    if len({type(v) for v in present}) > 1:
        return [None if v is None else str(v) for v in values]
    return values


def write_tidy(out: Path) -> Path | None:
    """Write `runs.csv`, and `runs.parquet` when pyarrow is installed; return the Parquet path or None."""
    rows = tidy_rows(out)
    columns = _columns(rows)
    with (out / "runs.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, restval="")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return None
    table = pa.table({column: _column_values(rows, column) for column in columns}) if rows else pa.table({})
    pq.write_table(table, out / "runs.parquet")
    return out / "runs.parquet"
