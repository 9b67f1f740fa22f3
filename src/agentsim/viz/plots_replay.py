"""The figure of replayed sessions: where the time went, per variant (stacked hours).

DataFrame-like :class:`~agentsim.replay.retime.ReplayResult` in, matplotlib :class:`~agentsim.viz.plots.Figure` out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from agentsim.viz.plots import Figure, variant_colors

if TYPE_CHECKING:
    from agentsim.replay.retime import ReplayResult

__all__ = ["breakdown_figure"]


def breakdown_figure(result: ReplayResult) -> Figure:
    """Total wall time per variant, stacked by what it waited on (critical path)."""
    names = result.names
    fig = Figure(figsize=(max(6.0, 1.4 * len(names) + 3), 4.2), layout="constrained")
    ax = fig.subplots()
    bottoms = np.zeros(len(names))
    colors = variant_colors(["ttft", "decode", "tool", "human", "other"])
    for kind, label in (
        ("ttft", "model: TTFT"),
        ("decode", "model: decode"),
        ("tool", "tools"),
        ("human", "human"),
        ("other", "other"),
    ):
        hours = np.array([result.totals(n)["time_s"][kind] / 3600.0 for n in names])
        ax.bar(names, hours, bottom=bottoms, label=label, color=colors[kind])
        bottoms += hours
    ax.set_ylabel("total wall time (hours)")
    ax.set_title("replayed sessions: where the time went")
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    return fig
