"""The `[[tables]]` and `[[figures]]` entries of a sweep config, checked before a sweep runs.

Values name run parameters (`protocol`, `neighbors`, …: the point's declared parameters)
and metrics (columns of the tidy table: `min_dominant_share`, `error_ratio_by_tolerance.0.01`,
`utilization.cpu`, …). `where` filters points: `{machines = 100, protocol = ["drf", "fifo"]}`.

Tables: `rows`, `columns` (parameters), `value` (a metric), optional `row_values` /
`column_values` (order and subset), `format` (a Python format spec such as ".4f" or ".2%"),
and `reference`: published numbers shown under the matching rows, `{ label = "thesis",
columns = [...], rows = { drf = [...], … } }` (`columns` defaults to the table's; row and
column values are matched as text).

A table with `variants` instead of `rows` has one row per variant: each is a where-filter
with a `label` (`{ label = "pdgdrf, strict ties", protocol = "pdgdrf", centre_ties =
"strict" }`). With `relative_to` (a where-filter, e.g. `{ protocol = "drf" }`) every value
is divided by that of the reference point that has the same values of `pair_on` (a list of
parameters; default the table's `columns` and `seed`), before the mean over replicates: a
table of run-time or minimum share relative to DRF, over seeds. Every table may set
`statistic`: `mean` (mean ± sd and the count, the default), `min` or `max` (the least or
greatest value and the count: "on every draw" is a claim about the least). A table with
`rows` may set `beside`, a second metric shown in parentheses in every cell (a user's tasks
beside the reference run's: `reference.poorest_tasks` beside `reference.poorest_reference_tasks`).

Figures, by `kind`:
- `lines`: `x` (parameter), `y` (metric), `series` (parameter), optional `series_values`;
- `ratio`: `numerator` and `denominator` (where-filters), `value` (metric, default
  `run_time_s`), `x`, `series`; points are paired on every declared parameter except
  those the two filters set; a dashed line marks 1;
- `error-series`: `curves`, each a where-filter with a `tolerance` (0, 0.01, …) and a
  `label`: the cumulative error ratio over the allocation count (thesis Fig. 5.6);
- `tolerance`: `curves`, where-filters with a `label`: the final error ratio against the
  tolerance τ (thesis Fig. 5.7).
Every figure may set `title`, `xlabel`, `ylabel`, `xscale`/`yscale` ("linear" | "log").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drfemu.kernel.errors import InputError
from drfemu.observers.harness import TOLERANCES
from drfemu.workloads.points import defaults

__all__ = ["FIGURE_KINDS", "STATISTICS", "check_figure", "check_table", "matches"]

FIGURE_KINDS = ("lines", "ratio", "error-series", "tolerance")
_TOLERANCE_KEYS = {f"{tau:g}" for tau in TOLERANCES}


def _require(spec: Mapping[str, Any], what: str, keys: tuple[str, ...], optional: tuple[str, ...]) -> None:
    missing = [k for k in keys if k not in spec]
    if missing:
        raise InputError(f"{what} {spec.get('id', '?')!r} needs {', '.join(missing)}")
    unknown = sorted(set(spec) - set(keys) - set(optional))
    if unknown:
        raise InputError(f"{what} {spec.get('id', '?')!r}: unknown key(s) {', '.join(unknown)}")


def _parameter(what: str, name: Any) -> None:
    if name not in defaults():
        raise InputError(f"{what}: {name!r} is not a run parameter")


def _where(what: str, where: Any) -> None:
    if not isinstance(where, dict):
        raise InputError(f"{what}: where must be a table of parameter = value(s)")
    for name in where:
        _parameter(what, name)


def matches(params: Mapping[str, Any], where: Mapping[str, Any]) -> bool:
    """Do declared `params` satisfy the filter (a value, or a list of allowed values)?"""
    for name, wanted in where.items():
        allowed = wanted if isinstance(wanted, list) else [wanted]
        if params.get(name) not in allowed:
            return False
    return True


_COMMON = ("id", "title", "where", "note", "statistic")
STATISTICS = ("mean", "min", "max")
"""What a table cell shows of its values: mean ± sd (the default), or the least or greatest."""
_AXES = ("xlabel", "ylabel", "xscale", "yscale")


def check_table(spec: dict[str, Any]) -> dict[str, Any]:
    if spec.get("statistic", "mean") not in STATISTICS:
        raise InputError(f"table {spec.get('id', '?')!r}: statistic must be one of {', '.join(STATISTICS)}, got "
                         f"{spec['statistic']!r}")
    if "variants" in spec:
        return _check_variants_table(spec)
    _require(spec, "table", ("id", "rows", "columns", "value"),
             _COMMON + ("row_values", "column_values", "format", "reference", "beside"))
    what = f"table {spec['id']!r}"
    reference = spec.get("reference")
    if reference is not None:
        rows = reference.get("rows") if isinstance(reference, dict) else None
        if not isinstance(rows, dict) or not all(isinstance(v, list) and all(isinstance(x, (int, float)) for x in v)
                                                 for v in rows.values()):
            raise InputError(f"{what}: reference needs rows = {{ row = [numbers, …] }}")
    if "beside" in spec and not isinstance(spec["beside"], str):
        raise InputError(f"{what}: beside must name a metric")
    _parameter(what, spec["rows"])
    _parameter(what, spec["columns"])
    _where(what, spec.get("where", {}))
    try:
        format(0.5, spec.get("format", ".4g"))  # a bad format spec fails here, not in the report
    except (TypeError, ValueError) as error:
        raise InputError(f"{what}: format {spec.get('format')!r}: {error}") from None
    return spec


def _check_variants_table(spec: dict[str, Any]) -> dict[str, Any]:
    _require(spec, "table", ("id", "variants", "columns", "value"),
             _COMMON + ("column_values", "format", "relative_to", "pair_on"))
    what = f"table {spec['id']!r}"
    variants = spec["variants"]
    if not isinstance(variants, list) or not variants or not all(isinstance(v, dict) and "label" in v
                                                                  for v in variants):
        raise InputError(f"{what}: variants must be a non-empty array of tables, each with a label")
    for variant in variants:
        _where(what, {k: v for k, v in variant.items() if k != "label"})
    _parameter(what, spec["columns"])
    _where(what, spec.get("where", {}))
    if "relative_to" in spec:
        _where(what, spec["relative_to"])
    pair_on = spec.get("pair_on", [spec["columns"], "seed"])
    if not isinstance(pair_on, list):
        raise InputError(f"{what}: pair_on must be a list of parameters")
    for name in pair_on:
        _parameter(what, name)
    try:
        format(0.5, spec.get("format", ".4g"))
    except (TypeError, ValueError) as error:
        raise InputError(f"{what}: format {spec.get('format')!r}: {error}") from None
    return spec


def check_figure(spec: dict[str, Any]) -> dict[str, Any]:
    kind = spec.get("kind")
    if kind not in FIGURE_KINDS:
        raise InputError(f"figure {spec.get('id', '?')!r}: kind must be one of {', '.join(FIGURE_KINDS)}, not {kind!r}")
    what = f"figure {spec.get('id', '?')!r}"
    optional = _COMMON + _AXES + ("kind",)
    if kind == "lines":
        _require(spec, "figure", ("id", "x", "y", "series"), optional + ("series_values",))
        _parameter(what, spec["x"])
        _parameter(what, spec["series"])
    elif kind == "ratio":
        _require(spec, "figure", ("id", "numerator", "denominator", "x", "series"), optional + ("value",))
        _parameter(what, spec["x"])
        _parameter(what, spec["series"])
        _where(what, spec["numerator"])
        _where(what, spec["denominator"])
    else:
        _require(spec, "figure", ("id", "curves"), optional)
        if not isinstance(spec["curves"], list) or not spec["curves"]:
            raise InputError(f"{what}: curves must be a non-empty array of tables")
        for curve in spec["curves"]:
            if not isinstance(curve, dict) or "label" not in curve:
                raise InputError(f"{what}: every curve needs a label")
            tolerance = curve.get("tolerance", 0.0) if kind == "error-series" else 0.0
            if f"{tolerance:g}" not in _TOLERANCE_KEYS:
                raise InputError(f"{what}: tolerance {tolerance!r} is not one of {', '.join(sorted(_TOLERANCE_KEYS))}")
            _where(what, {k: v for k, v in curve.items() if k not in ("label", "tolerance")})
    _where(what, spec.get("where", {}))
    for axis in ("xscale", "yscale"):
        if spec.get(axis, "linear") not in ("linear", "log"):
            raise InputError(f"{what}: {axis} must be linear or log")
    return spec
