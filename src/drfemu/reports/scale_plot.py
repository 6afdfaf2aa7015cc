"""A log-log PNG of the cost curve (`drfemu bench scale`): wall time per virtual second and
messages per server-tick against the number of servers, a line per protocol."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["plot_scale_curve"]


def plot_scale_curve(points: Sequence[Mapping[str, Any]], path: Path, title: str,
                     baseline: Sequence[Mapping[str, Any]] = (), baseline_label: str = "baseline") -> None:
    """Draw `points` (`ScalePoint.to_dict()` rows) into `path`; `baseline` (an earlier curve)
    dashed in the same colours beside them."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (cost, traffic) = plt.subplots(1, 2, figsize=(11, 4.2))
    protocols = list(dict.fromkeys(p["protocol"] for p in [*points, *baseline]))
    for colour, protocol in enumerate(protocols):
        for rows_of, style, suffix in ((baseline, "--", f" ({baseline_label})"), (points, "-", "")):
            rows = sorted((p for p in rows_of if p["protocol"] == protocol), key=lambda p: p["servers"])
            if not rows:
                continue
            servers = [p["servers"] for p in rows]
            line = {"marker": "o", "linestyle": style, "color": f"C{colour}", "label": protocol + suffix}
            cost.plot(servers, [p["wall_per_virtual_s"] for p in rows], **line)
            traffic.plot(servers, [p["messages_per_server_tick"] for p in rows], **line)
    cost.set_ylabel("wall seconds per virtual second")
    traffic.set_ylabel("messages per server and tick")
    for ax in (cost, traffic):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("servers (users = servers / 5, at most 505)")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize="small")
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
