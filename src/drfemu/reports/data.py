"""A sweep's points joined to their run records, and the statistics reports draw from them."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drfemu.kernel.errors import InputError
from drfemu.kernel.files import read_json
from drfemu.sweeps.records import load_records
from drfemu.sweeps.tidy import flatten_result

__all__ = ["PointData", "load_points", "mean_sd", "metric_values", "ordered"]


@dataclass(frozen=True)
class PointData:
    """A point of an experiment with its run's record, if there is one."""

    params: dict[str, Any]
    run: str
    status: str  # ok | failed | missing
    metrics: dict[str, Any]
    result: dict[str, Any]


def _manifest_shape(document: Any) -> bool:
    experiments = document.get("experiments") if isinstance(document, dict) else None
    return isinstance(experiments, list) and all(
        isinstance(e, dict) and isinstance(e.get("name"), str) and isinstance(e.get("points"), list)
        and all(isinstance(p, dict) and isinstance(p.get("params"), dict) and isinstance(p.get("run"), str)
                for p in e["points"])
        for e in experiments)


def load_points(sweep_dir: Path) -> list[tuple[dict[str, Any], list[PointData]]]:
    """Each experiment of the sweep with its points joined to their run records."""
    manifest = sweep_dir / "sweep.json"
    if not manifest.is_file():
        raise InputError(f"{sweep_dir} is not a sweep directory (no sweep.json)")
    records = load_records(sweep_dir)
    document = read_json(manifest, "a sweep manifest")
    if not _manifest_shape(document):
        raise InputError(f"{manifest}: not a sweep manifest (expected experiments, each with name and points of "
                         "params and run)")
    experiments = []
    for experiment in document["experiments"]:
        points = []
        for point in experiment["points"]:
            record = records.get(point["run"])
            status = "missing" if record is None else record["status"]
            result = record.get("result", {}) if record is not None and status == "ok" else {}
            points.append(PointData(point["params"], point["run"], status, flatten_result(result), result))
        experiments.append((experiment, points))
    return experiments


def ordered(values: Iterable[Any]) -> list[Any]:
    """Distinct values: numbers ascending, anything else in order of first appearance."""
    distinct = list(dict.fromkeys(values))
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in distinct):
        return sorted(distinct)
    return distinct


def mean_sd(values: list[float]) -> tuple[float, float | None]:
    """The mean and (with two or more values) the sample standard deviation."""
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else None)


def metric_values(points: Iterable[PointData], metric: str) -> list[float]:
    """The finite values of `metric` among `points` with a result."""
    out = []
    for point in points:
        value = point.metrics.get(metric)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            out.append(float(value))
    return out
