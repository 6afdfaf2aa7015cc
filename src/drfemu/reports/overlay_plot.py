"""A PNG of an overlay run: convergence per round, and recovery after perturbations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["plot_overlay"]


def plot_overlay(result: dict[str, Any], path: Path) -> None:
    """Draw the ideal-view fraction and centre state per round (and recoveries, if any)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    rows = result["round_rows"]
    recoveries = [p["recovery_rounds"] for p in result["perturbation_rows"] if p["recovery_rounds"] is not None]
    panels = 2 if result["perturbation_rows"] else 1
    figure, axes = plt.subplots(1, panels, figsize=(6.5 * panels, 4.2), squeeze=False)
    ax = axes[0][0]
    rounds = [r["round"] for r in rows]
    ax.plot(rounds, [r["ideal_view_fraction"] for r in rows], label="nodes with their ideal view", color="tab:blue")
    ax.step(rounds, [1.0 if r["centre_correct"] and r["centre_view_exact"] else 0.0 for r in rows],
            where="post", label="centre correct and its view exact", color="tab:green", alpha=0.7)
    converged = result["rounds_to_converge"]
    if converged is not None:
        ax.axvline(converged, color="tab:green", linestyle=":", label=f"converged (round {converged})")
    ax.set_xlabel("round (allocation ticks)")
    ax.set_ylabel("fraction of nodes / indicator")
    ax.set_ylim(-0.03, 1.03)
    config = result["config"]
    ax.set_title(f"gradient, {config['nodes']} nodes, P = {config['neighbors']} (seed {config['seed']})")
    ax.legend(loc="lower right", fontsize="small")
    ax.grid(alpha=0.3)
    if panels == 2:
        ax = axes[0][1]
        if recoveries:
            ax.hist(recoveries, bins=range(max(recoveries) + 2), color="tab:orange", align="left")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("rounds until the new centre is recognised and validated")
        ax.set_ylabel("perturbations")
        failed = len(result["perturbation_rows"]) - len(recoveries)
        ax.set_title(f"recovery after {len(result['perturbation_rows'])} perturbations"
                     + (f" ({failed} not within {config['recovery_cap']})" if failed else ""))
        ax.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
