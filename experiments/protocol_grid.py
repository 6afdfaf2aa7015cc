"""The thesis's protocol grid (chapter 5, Tables 5.1, 5.3, 5.4; issue 4's acceptance grid).

Runs `drf`, `fifo`, `probe`, `ddrf-random`, `ddrf-gradient`, `dgdrf` and `pdgdrf` on the
embedded Google 2011 cases 100 × 20 and 200 × 40 (seed 1) for every `P` in 2..10 — the
central protocols do not depend on `P` and run once per case — and writes a Markdown report
of minimum dominant share, error ratios, run-time, wall time, events/s and messages per
allocation, with the acceptance checks, plus every run's result document as JSON.

    python -m experiments.protocol_grid --out docs/protocol_grid.md --json docs/data/protocol_grid.json

`--from-json FILE` re-renders the report from an earlier `--json` file without running.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from experiments.google import google_case
from experiments.runner import RunConfig, run_emulation

__all__ = ["CASES", "DISTRIBUTED", "NEIGHBOURS", "grid_points", "render", "run_point"]

CASES = ((100, 20), (200, 40))
NEIGHBOURS = tuple(range(2, 11))
CENTRAL = ("drf", "fifo")
DISTRIBUTED = ("probe", "ddrf-random", "ddrf-gradient", "dgdrf", "pdgdrf")
SEED = 1
KEEP = ("protocol", "machines", "users", "neighbors", "status", "end_reason", "allocations", "min_dominant_share",
        "gini", "error_ratio", "error_ratio_by_tolerance", "run_time_s", "wall_time_s", "events", "events_per_s",
        "messages_total", "bytes_total", "messages_per_allocation", "messages", "bytes", "ticks", "homes",
        "placement", "overlay", "utilization")


def grid_points(cases: Iterable[tuple[int, int]] = CASES, neighbours: Iterable[int] = NEIGHBOURS,
                protocols: Iterable[str] = CENTRAL + DISTRIBUTED) -> list[tuple[int, int, str, int]]:
    """(machines, users, protocol, P) of every run; central protocols once per case, at P = 2."""
    ps = list(neighbours)
    points = []
    for machines, users in cases:
        for protocol in protocols:
            for p in ps[:1] if protocol in CENTRAL else ps:
                points.append((machines, users, protocol, p))
    return points


def run_point(point: tuple[int, int, str, int]) -> dict[str, Any]:
    machines, users, protocol, p = point
    result = run_emulation(RunConfig(google_case(machines, users, SEED), protocol=protocol, seed=SEED,
                                     neighbors=p)).to_dict()
    return {key: result.get(key) for key in KEEP}


def _by(rows: list[dict[str, Any]], machines: int, protocol: str, p: int) -> dict[str, Any]:
    for row in rows:
        if row["machines"] == machines and row["protocol"] == protocol and (protocol in CENTRAL or row["neighbors"] == p):
            return row
    raise KeyError((machines, protocol, p))


def _table(rows: list[dict[str, Any]], machines: int, protocols: Iterable[str], cell: Any, title: str) -> list[str]:
    lines = [f"**{title}**", "", "| solution | " + " | ".join(str(p) for p in NEIGHBOURS) + " |",
             "|---" * (len(NEIGHBOURS) + 1) + "|"]
    for protocol in protocols:
        lines.append(f"| {protocol} | " + " | ".join(cell(_by(rows, machines, protocol, p)) for p in NEIGHBOURS) + " |")
    return lines + [""]


def _checks(rows: list[dict[str, Any]], machines: int) -> list[str]:
    drf = _by(rows, machines, "drf", 2)["min_dominant_share"]
    out = []
    dg = [_by(rows, machines, "dgdrf", p) for p in NEIGHBOURS]
    pd = [_by(rows, machines, "pdgdrf", p) for p in NEIGHBOURS]
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
                 >= _by(rows, machines, "ddrf-random", p)["min_dominant_share"] for p in NEIGHBOURS)
    out.append(f"- ddrf-gradient minimum share ≥ ddrf-random's for {better} of {len(NEIGHBOURS)} values of P")
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


def render(rows: list[dict[str, Any]], wall: float) -> str:
    lines = ["# The protocol grid: Google 2011 cases, every protocol, P = 2..10", "",
             "Generated by `python -m experiments.protocol_grid` (seed 1, tick 100 ms, latency 1 ms, defaults of "
             "`drfemu run`); do not edit by hand. Central protocols do not depend on P and ran once per case. "
             f"{len(rows)} runs took {wall / 60:.1f} min of wall time on this machine.", ""]
    protocols = CENTRAL + DISTRIBUTED
    for machines, users in CASES:
        lines += [f"## {machines} machines × {users} users", ""]
        lines += _checks(rows, machines) + [""]
        lines += _table(rows, machines, protocols, lambda r: f"{r['min_dominant_share']:.4f}",
                        "Minimum dominant share (thesis Table 5.1 / Fig. 5.4)")
        lines += _table(rows, machines, DISTRIBUTED, lambda r: f"{r['error_ratio']:.2%}",
                        "Error ratio at τ = 0 (thesis Tables 5.3 / 5.4)")
        lines += _table(rows, machines, DISTRIBUTED, lambda r: f"{r['error_ratio_by_tolerance']['0.01']:.2%}",
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="Markdown report to write")
    parser.add_argument("--json", type=Path, help="every run's result rows, as JSON")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--from-json", type=Path, help="re-render an earlier --json file instead of running")
    args = parser.parse_args(argv)
    if args.from_json is not None:
        document = json.loads(args.from_json.read_text(encoding="utf-8"))
        args.out.write_text(render(document["runs"], document["wall_s"]), encoding="utf-8")
        return 0
    points = grid_points()
    # Longest first, so the two workers finish together.
    order = sorted(points, key=lambda pt: (pt[2] in ("dgdrf", "pdgdrf"), pt[0], pt[3]), reverse=True)
    started = time.perf_counter()
    with ProcessPoolExecutor(args.workers) as pool:
        rows = list(pool.map(run_point, order))
    wall = time.perf_counter() - started
    rows.sort(key=lambda r: (r["machines"], r["protocol"], r["neighbors"]))
    args.out.write_text(render(rows, wall), encoding="utf-8")
    if args.json is not None:
        args.json.write_text(json.dumps({"wall_s": wall, "runs": rows}, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
