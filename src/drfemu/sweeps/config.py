"""Sweep configs: TOML files that name runs by grids over run parameters (issue 5).

A config holds:

- `name`, `title`: the experiment's name (unique within a sweep) and a one-line title;
- `include = ["other.toml", …]`: further configs (relative to this file) swept alongside;
- `[base]`: run parameters shared by every point (any name of ``schema.params``);
- `[[cases]]`: parameter sets taken one at a time (e.g. machines and users together); a
  list value in a case expands that case like a grid;
- `[[grids]]`: tables of lists; each grid is the cartesian product of its lists, and the
  points are every case × every combination of every grid; in a case or a grid,
  `protocol = "all"` stands for every registered protocol, in registry order;
- `seeds = [1, 2, …]` or `replicates = N` (seeds 1..N): the replicates of every point;
- `[[tables]]` and `[[figures]]`: what `drfemu report` draws from this experiment
  (`sweeps.report_spec` checks them).

A config without `cases` or `grids` has one empty case or grid; one with only `include`
is a suite. Points that describe the same run (after `canonical_params`) share one run.
Every problem — unknown key, a parameter that is not a run parameter, a bad value — raises
`SweepConfigError` naming the file and the problem, before anything runs.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from drfemu.kernel.errors import InputError
from drfemu.kernel.files import read_toml
from drfemu.protocols.registry import PROTOCOLS, get_protocol
from drfemu.schema.params import protocol_defaults
from drfemu.sweeps.report_spec import check_figure, check_table
from drfemu.workloads.points import canonical_params, defaults, run_id

__all__ = ["Experiment", "Point", "Sweep", "SweepConfigError", "load_sweep", "sweep_from_document"]

EVERY_PROTOCOL = "all"
_KEYS = {"name", "title", "include", "base", "cases", "grids", "seeds", "replicates", "tables", "figures"}


class SweepConfigError(InputError):
    """A config that cannot be swept; the message names the file and the problem."""


@dataclass(frozen=True)
class Point:
    """One point of an experiment: its declared parameters (defaults filled in — the protocol's
    own first — and a workload file named as the config names it, so reports can filter and
    label by it) and its run (whose canonical parameters hold the resolved path)."""

    params: dict[str, Any]
    run: str


@dataclass(frozen=True)
class Experiment:
    name: str
    title: str
    source: str
    points: tuple[Point, ...]
    tables: tuple[dict[str, Any], ...] = ()
    figures: tuple[dict[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "title": self.title, "source": self.source,
                "points": [{"params": p.params, "run": p.run} for p in self.points],
                "tables": list(self.tables), "figures": list(self.figures)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Experiment:
        return cls(data["name"], data["title"], data["source"],
                   tuple(Point(p["params"], p["run"]) for p in data["points"]),
                   tuple(data.get("tables", ())), tuple(data.get("figures", ())))


@dataclass(frozen=True)
class Sweep:
    experiments: tuple[Experiment, ...]
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Run id → canonical parameters, every distinct run once, in first-seen order."""


def _fail(path: Path, message: str) -> SweepConfigError:
    return SweepConfigError(f"{path}: {message}")


def _as_list(path: Path, where: str, value: Any) -> list[Any]:
    values = value if isinstance(value, list) else [value]
    if not values:
        raise _fail(path, f"{where} is an empty list")
    return values


def _tables(path: Path, document: Mapping[str, Any], key: str) -> list[dict[str, Any]]:
    value = document.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise _fail(path, f"{key} must be an array of tables ([[{key}]])")
    return value


def _seeds(path: Path, document: Mapping[str, Any]) -> list[int]:
    if "seeds" in document and "replicates" in document:
        raise _fail(path, "give either seeds or replicates, not both")
    if "replicates" in document:
        n = document["replicates"]
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise _fail(path, f"replicates must be a positive integer, not {n!r}")
        return list(range(1, n + 1))
    seeds = document.get("seeds", [1])
    if (not isinstance(seeds, list) or not seeds
            or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds)):
        raise _fail(path, f"seeds must be a non-empty list of non-negative integers, not {seeds!r}")
    if len(set(seeds)) != len(seeds):
        raise _fail(path, "seeds repeat a value")
    return seeds


def _combinations(path: Path, grid: Mapping[str, Any], index: int, key: str) -> list[dict[str, Any]]:
    names = list(grid)
    lists = [list(PROTOCOLS) if name == "protocol" and grid[name] == EVERY_PROTOCOL
             else _as_list(path, f"{key}[{index}].{name}", grid[name]) for name in names]
    return [dict(zip(names, values)) for values in itertools.product(*lists)]


def _points(path: Path, document: Mapping[str, Any]) -> list[dict[str, Any]]:
    base = document.get("base", {})
    if not isinstance(base, dict):
        raise _fail(path, "base must be a table ([base])")
    cases = [expanded for i, case in enumerate(_tables(path, document, "cases") or [{}])
             for expanded in _combinations(path, case, i, "cases")]
    grids = _tables(path, document, "grids") or [{}]
    seeds = _seeds(path, document)
    combos = [combo for i, grid in enumerate(grids) for combo in _combinations(path, grid, i, "grids")]
    points = []
    for case in cases:
        for combo in combos:
            for seed in seeds:
                params = dict(base)
                params.update(case)
                clash = sorted((set(combo) - set(base)) & set(case))
                if clash:
                    raise _fail(path, f"{', '.join(clash)} set by both a case and a grid")
                params.update(combo)
                if "seed" in params and ("seeds" in document or "replicates" in document):
                    raise _fail(path, "seed is set as a parameter and by seeds/replicates")
                params.setdefault("seed", seed)
                points.append(params)
    return points


def _load(path: Path, seen: tuple[Path, ...], experiments: list[Experiment], runs: dict[str, dict[str, Any]]) -> None:
    path = path.resolve()
    if path in seen:
        raise _fail(path, "includes itself")
    _add(path, read_toml(path, "a sweep config (TOML)", SweepConfigError), seen, experiments, runs)


def _add(path: Path, document: Mapping[str, Any], seen: tuple[Path, ...], experiments: list[Experiment],
         runs: dict[str, dict[str, Any]]) -> None:
    """Add the experiment of `document`, read from `path` (its folder resolves relative paths)."""
    unknown = sorted(set(document) - _KEYS)
    if unknown:
        raise _fail(path, f"unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(_KEYS))})")
    includes = document.get("include", [])
    if not isinstance(includes, list) or not all(isinstance(i, str) for i in includes):
        raise _fail(path, f"include must be a list of file names, not {includes!r}")
    for include in includes:
        _load(path.parent / include, seen + (path,), experiments, runs)
    if not any(k in document for k in ("base", "cases", "grids", "seeds", "replicates", "tables", "figures")):
        return  # a suite of includes only
    name = document.get("name", path.stem)
    if not isinstance(name, str) or not name:
        raise _fail(path, "name must be a non-empty string")
    if any(e.name == name for e in experiments):
        raise _fail(path, f"experiment name {name!r} is used twice in this sweep")
    points = []
    for declared in _points(path, document):
        try:
            canonical = canonical_params(declared, base_dir=path.parent)
        except InputError as error:
            raise _fail(path, str(error)) from None
        full = {**defaults(), **protocol_defaults(get_protocol(canonical["protocol"]), declared), **declared}
        if full["case_seed"] is None:
            full["case_seed"] = full["seed"]
        identifier = run_id(canonical)
        runs.setdefault(identifier, canonical)
        points.append(Point(full, identifier))
    try:
        tables = tuple(check_table(t) for t in _tables(path, document, "tables"))
        figures = tuple(check_figure(f) for f in _tables(path, document, "figures"))
    except InputError as error:
        raise _fail(path, str(error)) from None
    experiments.append(Experiment(name, str(document.get("title", name)), str(path), tuple(points), tables, figures))


def _sweep(experiments: list[Experiment], runs: dict[str, dict[str, Any]], path: Path) -> Sweep:
    if not experiments:
        raise _fail(path, "defines no experiment (no base, cases, grids or includes with them)")
    return Sweep(tuple(experiments), runs)


def sweep_from_document(document: Mapping[str, Any], name: str = "sweep", folder: Path | None = None) -> Sweep:
    """A config given as data (the structure of a TOML config), as if read from `folder/NAME.toml`
    (default: the current folder): its relative paths and includes are taken from `folder`."""
    if not isinstance(document, Mapping):
        raise SweepConfigError(f"a sweep config is a table of keys, not {type(document).__name__}")
    path = (folder or Path.cwd()).resolve() / f"{name}.toml"
    experiments: list[Experiment] = []
    runs: dict[str, dict[str, Any]] = {}
    _add(path, document, (), experiments, runs)
    return _sweep(experiments, runs, path)


def load_sweep(path: Path) -> Sweep:
    """Read a config (and its includes) into experiments and the distinct runs they need."""
    experiments: list[Experiment] = []
    runs: dict[str, dict[str, Any]] = {}
    _load(Path(path), (), experiments, runs)
    return _sweep(experiments, runs, Path(path).resolve())
