"""Figures for shared limits: in-flight requests and bucket levels over time, and queue-wait CDFs.

Pure functions: a DataFrame in, a matplotlib ``Figure`` out (see :mod:`agentsim.viz.plots`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from agentsim.viz.plots import Figure, variant_colors

__all__ = ["envelope", "limits_figure", "wait_cdf_figure"]


MAX_STEPS = 2000  # points per line of the limits figure: a day of a busy account has ~10^5 changes


def envelope(t: np.ndarray, y: np.ndarray, keep, bins: int = MAX_STEPS) -> tuple[np.ndarray, np.ndarray]:
    """A step series (value ``y[i]`` from ``t[i]`` on) cut to at most ``bins`` steps of equal width, each
    holding the extreme the series reached inside it (``keep``: ``np.maximum`` for requests in flight,
    whose peaks matter; ``np.minimum`` for bucket levels, whose troughs do). The series as it is when short."""
    if t.size <= bins:
        return t, y
    edges = np.linspace(t[0], t[-1], bins + 1)
    idx = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, bins - 1)
    out = np.full(bins, np.nan)
    start = np.searchsorted(idx, np.arange(bins), side="left")  # t is sorted, so idx is too
    has = np.diff(np.append(start, idx.size)) > 0
    out[has] = keep.reduceat(y, start[has])
    # a bin with no change keeps the value the series had on entering it
    last = np.maximum(np.searchsorted(t, edges[:-1], side="right") - 1, 0)
    entering = y[last]
    out = np.where(has, keep(out, entering), entering)
    return edges[:-1], out


def limits_figure(series: pd.DataFrame, window: tuple[float, float] | None = None) -> Figure:
    """One row per account: requests in flight (left) and token-bucket levels as a share of capacity (right).

    ``series`` has columns ``variant, account, series, t_s, value, limit`` (as from
    :meth:`Results.limits_timeseries`); ``series`` is ``in_flight``, ``rpm``, ``input_tpm`` or ``output_tpm``.
    """
    accounts = list(pd.unique(series["account"]))  # in order of appearance, without iterating in Python
    colors = variant_colors(list(pd.unique(series["variant"])))
    fig = Figure(figsize=(11, 2.8 * max(1, len(accounts))), layout="constrained")
    axes = fig.subplots(max(1, len(accounts)), 2, squeeze=False)
    styles = {"rpm": "-", "input_tpm": "--", "output_tpm": ":"}
    for row, account in enumerate(accounts):
        left, right = axes[row]
        a = series[series["account"] == account]
        for (variant, kind), g in a.groupby(["variant", "series"], sort=False, observed=True):
            g = g.sort_values("t_s", kind="stable")
            t = g["t_s"].to_numpy() / 60
            if kind == "in_flight":
                x, y = envelope(t, g["value"].to_numpy(), np.maximum)
                left.step(x, y, where="post", color=colors[variant], lw=0.8, label=str(variant))
            else:
                x, y = envelope(t, (g["value"] / g["limit"]).to_numpy(), np.minimum)
                right.step(x, y, where="post", color=colors[variant], lw=0.8, ls=styles.get(kind, "-"),
                           label=f"{variant} {kind}")  # fmt: skip
        lim = a.loc[a["series"] == "in_flight", "limit"]
        if len(lim) and np.isfinite(lim.iloc[0]):
            left.axhline(lim.iloc[0], color="grey", ls="--", lw=0.8, label="limit")
        left.set_title(f"{account}: requests in flight")
        left.set_ylabel("requests")
        right.set_title(f"{account}: token buckets")
        right.set_ylabel("level (share of capacity)")
        right.set_ylim(-0.05, 1.05)
        for ax in (left, right):
            ax.set_xlabel("simulated time (min)")
            ax.grid(True, alpha=0.3)
            if window is not None:
                ax.axvspan(window[0] / 60, window[1] / 60, color="0.9", zorder=0)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=7, loc="upper right")
    return fig


def wait_cdf_figure(calls: pd.DataFrame) -> Figure:
    """Empirical CDF of each successful call's queue wait (submit to start), one line per variant (at most
    :data:`MAX_STEPS` of its points: evenly spaced ranks of a long one)."""
    fig = Figure(figsize=(7, 4), layout="constrained")
    ax = fig.subplots()
    names = list(pd.unique(calls["variant"]))
    colors = variant_colors(names)
    variant = calls["variant"].to_numpy()
    ok = (calls["status"] == "ok").to_numpy()
    wait = calls["t_start"].to_numpy() - calls["t_submit"].to_numpy()  # two columns, never a copy of the table
    for name in names:
        w = np.sort(wait[(variant == name) & ok])
        if not len(w):
            continue
        # the empirical CDF; past MAX_STEPS calls, at MAX_STEPS evenly spaced ranks (each point still exact)
        rank = np.arange(w.size) if w.size <= MAX_STEPS else np.unique(np.linspace(0, w.size - 1, MAX_STEPS).round())
        rank = rank.astype(np.int64)
        ax.step(w[rank], (rank + 1) / w.size, where="post", color=colors[name], label=str(name))
    ax.set_xlabel("queue wait per call (s)")
    ax.set_ylabel("share of calls")
    ax.set_ylim(0, 1.01)
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend()
    ax.set_title("Queue wait per call (submit to start)")
    return fig
