"""A run's page (`drfemu run --html`, `drfemu show RESULT.json --html`): how the run got where it
ended, over virtual time, from its samples (`RunResult.samples`, `observers.samples`).

Charts: each user's dominant share, the minimum bold, and (endless users) each one's share under
DRF on the cluster as one pool, dashed; the utilisation of each resource; allocations a second;
messages a second by type (each rate over 1/120 of the run); for gradient protocols, the fraction
of servers with their ideal view; the mean queueing delay of the tasks started in each window; with
tasks that end, the tasks waiting and running and the queueing delay's quantiles.
Fault windows are shaded on every chart over time. A table of the run's end figures leads.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from drfemu.kernel.errors import InputError
from drfemu.reports.pages import Band, ChartSpec, Series, chart_page
from drfemu.schema.result import RunResult, SampleTable

__all__ = ["run_charts", "run_page"]

TIME = "virtual time (s)"


RATE_WINDOWS = 120
"""A rate is averaged over 1/120 of the run's samples (at least one interval), so that a tick
with one more allocation than the next does not draw a saw-tooth."""


def _per_window(amounts: Sequence[float], per: Sequence[float]) -> list[float | None]:
    """Over the window ending at each sample, the growth of `amounts` per unit of growth of `per`
    (allocations per second of time; delay summed per task started); None before a whole window
    or where `per` did not grow."""
    step = max(1, len(per) // RATE_WINDOWS)
    out: list[float | None] = [None] * min(step, len(per))
    for k in range(step, len(per)):
        span = per[k] - per[k - step]
        out.append((amounts[k] - amounts[k - step]) / span if span > 0 else None)
    return out


def run_charts(result: RunResult) -> list[ChartSpec]:
    """The page's charts of a sampled run; `InputError` if the run was not sampled."""
    table = result.samples
    if table is None:
        raise InputError("the result has no samples over time: run it with --html FILE or --samples N "
                         "(drfemu.run(samples=N)) to draw its page")
    bands = [Band(float(w.start_s), float(w.end_s), w.fault) for w in result.fault_windows]
    time = table.time_s
    charts = [_shares(table, bands), ChartSpec(
        "utilization", "Utilisation per resource", TIME, "fraction of the cluster",
        [Series(name, time, values) for name, values in table.utilization.items()], bands)]
    charts.append(ChartSpec("allocations", "Allocations per second", TIME, "allocations / s",
                            [Series("allocations", time, _per_window(table.allocations, time))], bands))
    charts.append(ChartSpec("messages", "Messages per second, by type", TIME, "messages / s",
                            [Series(name, time, _per_window(sent, time)) for name, sent in table.messages.items()], bands))
    if table.ideal_view_fraction is not None:
        charts.append(ChartSpec("ideal-views", "Servers whose gradient view is their ideal one", TIME, "fraction",
                                [Series("ideal views", time, table.ideal_view_fraction)], bands))
    charts.append(ChartSpec("delay", "Queueing delay of the tasks started (mean over each window)", TIME, "seconds",
                            [Series("mean queueing delay", time,
                                    _per_window(table.delay_total_s, table.started))], bands))
    if table.waiting is not None and table.running is not None:
        charts.append(ChartSpec("queue", "Tasks waiting and running", TIME, "tasks",
                                [Series("waiting", time, table.waiting), Series("running", time, table.running)],
                                bands))
        quantiles = [q for q in result.queueing_delay_quantiles_s]
        if quantiles:
            steps = [k / (len(quantiles) - 1) if len(quantiles) > 1 else 1.0 for k in range(len(quantiles))]
            charts.append(ChartSpec("delays", "Queueing delay by quantile (all tasks)", "quantile", "seconds",
                                    [Series("queueing delay", steps, quantiles)]))
    return charts


def _shares(table: SampleTable, bands: list[Band]) -> ChartSpec:
    time = table.time_s
    series = [Series(user, time, values, group=user) for user, values in table.dominant_shares.items()]
    if table.drf_reference is not None:
        series += [Series(f"{user} (DRF, one pool)", [time[0], time[-1]], [share, share], group=user, dash=True,
                          width=1.0, legend=False) for user, share in table.drf_reference.items()]
    series.append(Series("minimum", time, table.min_share, width=3.0))
    note = " (dashed: DRF on the cluster as one pool)" if table.drf_reference is not None else ""
    return ChartSpec("shares", f"Dominant share of each user{note}", TIME, "dominant share", series, bands)


def _samples_line(table: SampleTable | None) -> str:
    if table is None:
        return "none"
    every = "every tick" if table.every_ticks == 1 else f"every {table.every_ticks} ticks"
    return f"{len(table.time_s):,} ({every} at the end)"


def run_page(result: RunResult) -> str:
    """The self-contained page of a sampled run (see the module)."""
    charts = run_charts(result)
    esc = html.escape
    figures = [("status", f"{result.status}: {result.end_reason}"), ("allocations", f"{result.allocations:,}"),
               ("run-time (virtual)", "–" if result.run_time_s is None else f"{result.run_time_s:,.1f} s"),
               ("minimum dominant share", "–" if result.min_dominant_share is None
                else f"{result.min_dominant_share:.4f}"),
               ("error ratio (τ = 0)", "–" if result.error_ratio is None else f"{result.error_ratio:.2%}"),
               ("messages", f"{result.messages_total:,}"),
               ("samples", _samples_line(result.samples))]
    rows = "".join(f"<tr><td>{esc(k)}</td><td>{esc(v)}</td></tr>" for k, v in figures)
    title = f"drfemu run — {result.protocol} on {result.machines} machines × {result.users} users (seed {result.seed})"
    body = (f"<h1>{esc(title)}</h1><p class='meta'>drfemu result schema {esc(result.schema_version)}; hover a chart "
            f"for its values, click a legend entry to highlight it.</p><table>{rows}</table>")
    return chart_page(title, body, charts)
