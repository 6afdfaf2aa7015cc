"""CDF figures of the online-scheduler experiment (seed 002 Figs. 4–7)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

__all__ = ["plot_online"]

_STYLE = {"c-adrf": ("black", "-"), "naive-adrf": ("#d62728", "--"), "cpu": ("#1f77b4", "-."),
          "g-cpu": ("#17becf", ":"), "mem": ("#2ca02c", "-."), "g-mem": ("#98df8a", ":"), "fifo": ("#7f7f7f", "--")}


def _cdf(ax: Any, values: list[float], label: str) -> None:
    xs = np.sort(np.asarray(values, dtype=float))
    color, style = _STYLE.get(label, ("#9467bd", "-"))
    ax.step(xs, np.arange(1, len(xs) + 1) / len(xs), where="post", label=label, color=color, linestyle=style)


def _quantile_cdf(ax: Any, quantiles: list[float], label: str) -> None:
    color, style = _STYLE.get(label, ("#9467bd", "-"))
    ax.plot(quantiles, np.linspace(0.0, 1.0, len(quantiles)), label=label, color=color, linestyle=style)


def _save(fig: Any, ax: Any, xlabel: str, title: str, path: Path) -> Path:
    ax.set_xlabel(xlabel)
    ax.set_ylabel("CDF")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_online(result: dict[str, Any], out_dir: Path) -> list[Path]:
    """The RMSE CDF (α = 1) and the queueing-delay CDF; returns the PNGs written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
    for rule, values in result["rmse"].items():
        _cdf(ax, values, rule)
    rmse = _save(fig, ax, "relative RMSE of dominant shares against SWM (per 700 s sample)",
                 "Online rules against the SWM optimum, α = 1 (seed 002 Figs. 4–5)",
                 out_dir / "online-rmse-alpha-1.png")
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
    for rule, quantiles in result["delay_quantiles"].items():
        _quantile_cdf(ax, [max(v, 1e-3) for v in quantiles], rule)
    ax.set_xscale("log")
    delays = _save(fig, ax, "task queueing delay, s (submission to start; 1 ms floor for the log axis)",
                   "Queueing delay of the first hour's tasks (seed 002 Figs. 6–7)",
                   out_dir / "online-queueing-delay.png")
    return [rmse, delays]
