"""Figures: pure functions, a DataFrame in and a matplotlib ``Figure`` out.

They never show or save anything; callers decide (``fig.savefig(...)``). They build
``matplotlib.figure.Figure`` objects directly, so they need no pyplot backend and never
change the one a notebook uses.
Variants keep the same colour in every figure (their order in the scenario).
"""

from __future__ import annotations

import io

import matplotlib
import pandas as pd
from matplotlib.figure import Figure as _MplFigure


class Figure(_MplFigure):
    """A matplotlib ``Figure`` that shows itself in Jupyter (``_repr_png_``), whatever the backend.

    Figures made this way are not registered with pyplot, so scripts keep no global figure state,
    and notebooks display them without ``%matplotlib inline``.
    """

    def _repr_png_(self) -> bytes:
        buf = io.BytesIO()
        self.savefig(buf, format="png", dpi=100)
        return buf.getvalue()

__all__ = ["Figure", "tradeoff_figure", "variant_colors"]


def variant_colors(names) -> dict[str, str]:
    cycle = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    return {n: cycle[i % len(cycle)] for i, n in enumerate(names)}


def tradeoff_figure(summary: pd.DataFrame, title: str = "") -> Figure:
    """Mean cost per run against mean and p95 wall time, one labelled point per variant.

    ``summary`` is :meth:`Results.summary` (index: variant; columns ``wall_mean_s``,
    ``wall_p95_s``, ``cost_mean_usd``).
    """
    colors = variant_colors(summary.index)
    fig = Figure(figsize=(10, 4.2), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    for ax, col, label in (
        (axes[0], "wall_mean_s", "mean wall time per run (s)"),
        (axes[1], "wall_p95_s", "p95 wall time per run (s)"),
    ):
        for name, row in summary.iterrows():
            ax.scatter(row[col], row["cost_mean_usd"], s=60, color=colors[name], label=str(name), zorder=3)
            ax.annotate(
                str(name), (row[col], row["cost_mean_usd"]), textcoords="offset points", xytext=(6, 6), fontsize=9
            )
        ax.set_xlabel(label)
        ax.grid(True, alpha=0.3)
        ax.margins(0.2)
    axes[0].set_ylabel("mean cost per run (USD)")
    axes[0].legend(loc="best", fontsize=8)
    if title:
        fig.suptitle(f"{title}: cost vs wall time")
    return fig
