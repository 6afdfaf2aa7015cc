"""The protocol grid report (thesis chapter 5, Tables 5.1, 5.3, 5.4; issue 4's acceptance checks).

Renders, from the E1 runs of a sweep directory (`configs/e1-neighbours.toml`: `drf`, `fifo`,
`probe`, `ddrf-random`, `ddrf-gradient`, `dgdrf` and `pdgdrf` on the Google cases 100 × 20
and 200 × 40, P = 2..10), a Markdown page with the acceptance checks of the distributed
protocols, their tables, and the measured message cost per tick against eq. 4.3–4.6; and
optionally the runs' figures as JSON.

    drfemu sweep configs/e1-neighbours.toml --out results/e1 --workers 2
    drfemu grid --sweep results/e1 --out docs/protocol_grid.md --json docs/data/protocol_grid.json

`--from-json FILE` re-renders the page from an earlier `--json` file. The page lists the
registered protocols the sweep ran, in registry order.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from drfemu.protocols.registry import PROTOCOLS
from drfemu.schema.params import protocol_defaults
from drfemu.sweeps.records import load_records
from drfemu.workloads.points import defaults

__all__ = ["CASES", "NEIGHBORS", "render", "sweep_rows"]

CASES = ((100, 20), (200, 40))
NEIGHBORS = tuple(range(2, 11))
KEEP = ("protocol", "machines", "users", "neighbors", "status", "end_reason", "allocations", "min_dominant_share",
        "gini", "error_ratio", "error_ratio_by_tolerance", "run_time_s", "wall_time_s", "events", "events_per_s",
        "messages_total", "bytes_total", "messages_per_allocation", "messages", "bytes", "ticks", "homes",
        "placement", "overlay", "utilization")


THESIS_SETTINGS: dict[str, dict[str, Any]] = {"probe": {"probe_retry": 0, "probe_band": 0.0}}
"""Where the grid shows the thesis's protocol rather than our default (E1 runs the thesis's probe)."""


def sweep_rows(sweep_dir: Path) -> list[dict[str, Any]]:
    """The grid's runs among the finished records of a sweep directory (default parameters — each
    protocol's own, such as PDGDRF's strict centre ties — but `THESIS_SETTINGS`, and seed 1)."""
    rows = []
    shared = {k: v for k, v in defaults().items() if k not in ("protocol", "machines", "users", "neighbors")}
    shared["case_seed"] = 1
    for record in load_records(sweep_dir).values():
        params = record["params"]
        if (record["status"] == "ok" and (params["machines"], params["users"]) in CASES
                and params["protocol"] in PROTOCOLS
                and all(params[k] == v
                        for k, v in {**shared, **protocol_defaults(PROTOCOLS[params["protocol"]], params),
                                     **THESIS_SETTINGS.get(params["protocol"], {})}.items())
                and (not PROTOCOLS[params["protocol"]].distributed or params["neighbors"] in NEIGHBORS)):
            rows.append({key: record["result"].get(key) for key in KEEP})
    rows.sort(key=lambda r: (r["machines"], r["protocol"], r["neighbors"]))
    return rows


def _by(rows: list[dict[str, Any]], machines: int, protocol: str, p: int) -> dict[str, Any]:
    for row in rows:
        if row["machines"] == machines and row["protocol"] == protocol and (
                not PROTOCOLS[protocol].distributed or row["neighbors"] == p):
            return row
    raise KeyError((machines, protocol, p))


def _table(rows: list[dict[str, Any]], machines: int, protocols: Iterable[str], cell: Any, title: str) -> list[str]:
    lines = [f"**{title}**", "", "| solution | " + " | ".join(str(p) for p in NEIGHBORS) + " |",
             "|---" * (len(NEIGHBORS) + 1) + "|"]
    for protocol in protocols:
        lines.append(f"| {protocol} | " + " | ".join(cell(_by(rows, machines, protocol, p)) for p in NEIGHBORS) + " |")
    return lines + [""]


def _checks(rows: list[dict[str, Any]], machines: int) -> list[str]:
    drf = _by(rows, machines, "drf", 2)["min_dominant_share"]
    out = []
    dg = [_by(rows, machines, "dgdrf", p) for p in NEIGHBORS]
    pd = [_by(rows, machines, "pdgdrf", p) for p in NEIGHBORS]
    out.append(f"- dgdrf error ratio at τ = 0 is 0 for every P: "
               f"{'yes' if all(r['error_ratio'] == 0 for r in dg) else 'NO'}")
    out.append(f"- dgdrf minimum share within 5 % of drf's ({drf:.4f}) for every P: "
               f"{'yes' if all(r['min_dominant_share'] >= 0.95 * drf for r in dg) else 'NO'} "
               f"(lowest {min(r['min_dominant_share'] for r in dg):.4f})")
    out.append(f"- pdgdrf minimum share within 5 % of drf's for every P: "
               f"{'yes' if all(r['min_dominant_share'] >= 0.95 * drf for r in pd) else 'NO'} "
               f"(lowest {min(r['min_dominant_share'] for r in pd):.4f})")
    out.append(f"- pdgdrf run-time shorter than dgdrf's for every P: "
               f"{'yes' if all(a['run_time_s'] < b['run_time_s'] for a, b in zip(pd, dg)) else 'NO'}")
    better = sum(_by(rows, machines, "ddrf-gradient", p)["min_dominant_share"]
                 >= _by(rows, machines, "ddrf-random", p)["min_dominant_share"] for p in NEIGHBORS)
    out.append(f"- ddrf-gradient minimum share ≥ ddrf-random's for {better} of {len(NEIGHBORS)} values of P")
    unsaturated = sorted({f"{r['protocol']} {r['status']}" for r in rows
                          if r["machines"] == machines and r["status"] != "saturated"})
    out.append(f"- every run saturated: {'no — ' + ', '.join(unsaturated) if unsaturated else 'yes'}")
    return out


ADDRESS_BYTES, NUMBER_BYTES, OVERHEAD_BYTES = 6, 8, 28  # the CostModel defaults the grid runs with


def _cost_rows(rows: list[dict[str, Any]], machines: int) -> list[str]:
    """Measured protocol messages and bytes per tick next to thesis eq. 4.3–4.6."""
    lines = ["**Message cost per allocation tick, measured against the thesis's cost model** "
             "(x = gradient exchanges per node per tick = 1; adr = 6 B, overhead = 28 B)", "",
             "| protocol | P | messages / tick | model | bytes / tick | model (bytes) |", "|---|---|---|---|---|---|"]
    n = machines
    for protocol, types in (("ddrf-random", ("MinShareRequest", "MinShareReply")),
                            ("probe", ("LoadRequest", "LoadReply")),
                            ("dgdrf", ("GradientShuffle", "GradientReply")),
                            ("pdgdrf", ("GradientShuffle", "GradientReply"))):
        for p in (2, 10):
            r = _by(rows, machines, protocol, p)
            ticks = r["ticks"]
            msgs = sum(r["messages"].get(t, 0) for t in types) / ticks
            size = sum(r["bytes"].get(t, 0) for t in types) / ticks
            if protocol.startswith("ddrf") or protocol == "probe":
                homes = r["homes"] if protocol.startswith("ddrf") else n
                model = f"2·{homes}·{p} = {2 * homes * p} (eq. 4.3 worst case 2·{n}·{p} = {2 * n * p})"
                model_bytes = f"{2 * homes * p * (NUMBER_BYTES + OVERHEAD_BYTES):,} (eq. 4.4, 8 B + overhead)"
            else:
                model = f"2·x·{n} = {2 * n} (eq. 4.6)"
                per = (p + 1) * (NUMBER_BYTES + ADDRESS_BYTES) + OVERHEAD_BYTES
                model_bytes = f"{2 * n * per:,} (eq. 4.5–4.6)"
            lines.append(f"| {protocol} | {p} | {msgs:,.1f} | {model} | {size:,.0f} | {model_bytes} |")
    return lines + [""]


def render(rows: list[dict[str, Any]]) -> str:
    wall = sum(r["wall_time_s"] for r in rows)
    lines = ["# The protocol grid: Google 2011 cases, every protocol, P = 2..10", "",
             "Generated by `drfemu grid` from the E1 runs of a sweep (seed 1, tick 100 ms, "
             "latency 1 ms, defaults of `drfemu run`); do not edit by hand. Central protocols do not depend on P and ran "
             f"once per case. The {len(rows)} runs' wall times add up to {wall / 60:.1f} min on this machine (a sweep "
             "with two workers ran two at a time).", ""]
    ran = {r["protocol"] for r in rows}
    protocols = [name for name in PROTOCOLS if name in ran]
    distributed = [name for name in protocols if PROTOCOLS[name].distributed]
    for machines, users in CASES:
        lines += [f"## {machines} machines × {users} users", ""]
        lines += _checks(rows, machines) + [""]
        lines += _table(rows, machines, protocols, lambda r: f"{r['min_dominant_share']:.4f}",
                        "Minimum dominant share (thesis Table 5.1 / Fig. 5.4)")
        lines += _table(rows, machines, distributed, lambda r: f"{r['error_ratio']:.2%}",
                        "Error ratio at τ = 0 (thesis Tables 5.3 / 5.4)")
        lines += _table(rows, machines, distributed, lambda r: f"{r['error_ratio_by_tolerance']['0.01']:.2%}",
                        "Error ratio at τ = 1 %")
        lines += _table(rows, machines, protocols, lambda r: f"{r['run_time_s']:.0f}",
                        "Run-time, virtual seconds (thesis Figs. 5.8–5.10)")
        lines += _table(rows, machines, protocols, lambda r: f"{r['allocations']}", "Allocations")
        lines += _table(rows, machines, protocols, lambda r: r["status"][:4], "Outcome (satu = saturated, stal = stalled)")
        lines += _table(rows, machines, protocols, lambda r: f"{r['wall_time_s']:.1f}", "Wall time, s")
        lines += _table(rows, machines, protocols, lambda r: f"{r['events_per_s'] / 1000:.0f}k", "Events per wall second")
        lines += _table(rows, machines, protocols, lambda r: f"{r['messages_per_allocation']:.0f}",
                        "Messages per allocation")
        lines += _cost_rows(rows, machines)
    return "\n".join(lines) + "\n"
