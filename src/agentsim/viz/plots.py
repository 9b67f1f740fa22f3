"""Figures: pure functions, a DataFrame in and a matplotlib ``Figure`` out.

They never show or save anything; callers decide (``fig.savefig(...)``). They build
:class:`Figure` objects (a matplotlib ``Figure`` that shows itself in Jupyter) directly,
so they need no pyplot backend and never change the one a notebook uses.

Conventions, so that figures read the same everywhere:

* a variant keeps its colour in every figure (:func:`variant_colors`, by its order
  in the scenario); the critical-path categories (queue, TTFT, decode, tool, wait)
  have colours of their own (:data:`SEGMENT_COLORS`);
* units are in the axis labels (s, USD, USD/h);
* points that are not on the Pareto frontier are drawn grey; the frontier is a
  line (``gid="frontier"``) through markers (``gid="frontier-points"``);
* point labels are placed where they overlap neither other labels nor points, or
  left out (the legend and the tables still name everything).

What each figure takes:

==========================  ============================================================
:func:`tradeoff_figure`     ``Results.summary()`` (or :func:`agentsim.analysis.tradeoffs.variant_table`)
:func:`frontier_figure`     a sweep table (:attr:`agentsim.analysis.sweeps.Sweep.table`)
:func:`sweep_figure`        a sweep table and one swept column
:func:`cdf_figure`          ``Results.runs``
:func:`breakdown_figure`    ``Results.runs``
:func:`timeline_figure`     :func:`agentsim.analysis.timeline.run_timeline`
:func:`breakeven_figure`    one row per variant with ``wall_mean_s`` and ``cost_mean_usd``
==========================  ====================================================="""

from __future__ import annotations

import io

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure as _MplFigure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch


class Figure(_MplFigure):
    """A matplotlib ``Figure`` that shows itself in Jupyter (``_repr_png_``), whatever the backend.

    Figures made this way are not registered with pyplot, so scripts keep no global figure state,
    and notebooks display them without ``%matplotlib inline``.
    """

    def _repr_png_(self) -> bytes:
        buf = io.BytesIO()
        self.savefig(buf, format="png", dpi=100)
        return buf.getvalue()


__all__ = [
    "SEGMENT_COLORS",
    "Figure",
    "breakdown_figure",
    "breakeven_figure",
    "cdf_figure",
    "frontier_figure",
    "sweep_figure",
    "timeline_figure",
    "tradeoff_figure",
    "variant_colors",
]

DOMINATED = "#b8b8b8"
SEGMENT_COLORS = {"queue": "#9e9e9e", "ttft": "#f4a259", "decode": "#3d7ea6", "tool": "#8fc1a9", "wait": "#bc4b51"}
SEGMENT_LABELS = {"queue": "queue", "ttft": "TTFT", "decode": "decode", "tool": "tool", "wait": "wait"}
STALL_COLOR = "#6a4c93"  # breakdown_s.stall: present only when some stream can stall
LISTEN_COLOR = "#c9a227"  # breakdown_s.listen: present only when the agent has a listen step
MAX_FACETS = 4


def variant_colors(names) -> dict[str, str]:
    """A colour per variant, in order (the default matplotlib cycle)."""
    cycle = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    return {n: cycle[i % len(cycle)] for i, n in enumerate(names)}


def _figure(figsize) -> Figure:
    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)  # a renderer, to measure labels
    return fig


def note_figure(title: str, text: str) -> Figure:
    """A figure that says, in words, why there is nothing to draw (never an empty axis)."""
    import textwrap

    fig = _figure((7, 2.2))
    ax = fig.subplots()
    ax.set_axis_off()
    ax.set_title(title)
    ax.text(0.5, 0.5, textwrap.fill(text, 70), ha="center", va="center", transform=ax.transAxes, fontsize=10)
    return fig


def _frontier(time, cost) -> np.ndarray:
    from agentsim.analysis.tradeoffs import pareto_mask

    return pareto_mask(np.asarray(time, dtype=float), np.asarray(cost, dtype=float))


def _draw_frontier(ax, x, y) -> None:
    """A staircase through the frontier points (sorted by time): the best cost reachable at each time."""
    order = np.argsort(x, kind="stable")
    ax.step(
        np.asarray(x)[order],
        np.asarray(y)[order],
        where="post",
        color="0.25",
        lw=1.2,
        ls="--",
        zorder=2,
        gid="frontier",
        label="Pareto frontier",
    )


LABEL_GAP_PT = 3.0  # points between a point label and the edge of its axes

# Offsets (points) tried for a label, in order; (dx, dy, ha, va).
_OFFSETS = [(7, 7, "left", "bottom"), (7, -7, "left", "top"), (-7, 7, "right", "bottom"), (-7, -7, "right", "top"),
            (0, 11, "center", "bottom"), (0, -11, "center", "top"), (12, 0, "left", "center"),
            (-12, 0, "right", "center"), (14, 16, "left", "bottom"), (-14, -16, "right", "top")]  # fmt: skip


def _place_labels(fig: Figure, ax, xs, ys, texts, colors=None, avoid=None) -> list:
    """Annotate points without overlapping each other or the points (and the ``avoid`` points, an
    (n, 2) array in data units); labels that do not fit are left out."""
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    pts = np.column_stack([xs, ys]) if len(xs) else np.zeros((0, 2))
    if avoid is not None and len(avoid):
        pts = np.vstack([pts, np.asarray(avoid, dtype=float)])
    pts = ax.transData.transform(pts) if len(pts) else pts
    r = 5.0 * fig.dpi / 72  # marker radius, pixels
    taken = [(p[0] - r, p[1] - r, p[0] + r, p[1] + r) for p in pts]
    axbox = ax.get_window_extent(renderer)
    gap = LABEL_GAP_PT * fig.dpi / 72  # a label keeps this far from the axes' edges
    placed = []
    for i, text in enumerate(texts):
        for dx, dy, ha, va in _OFFSETS:
            ann = ax.annotate(
                text,
                (xs[i], ys[i]),
                textcoords="offset points",
                xytext=(dx, dy),
                ha=ha,
                va=va,
                fontsize=8.5,
                color=(colors[i] if colors else "0.15"),
                zorder=5,
            )
            ann.set_in_layout(False)
            bb = ann.get_window_extent(renderer)
            box = (bb.x0 - 1, bb.y0 - 1, bb.x1 + 1, bb.y1 + 1)
            inside = (
                bb.x0 >= axbox.x0 + gap
                and bb.x1 <= axbox.x1 - gap
                and bb.y0 >= axbox.y0 + gap
                and bb.y1 <= axbox.y1 - gap
            )
            if inside and not any(_overlap(box, t) for t in taken):
                taken.append(box)
                placed.append(ann)
                break
            ann.remove()
    return placed


def _overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


# --------------------------------------------------------------------------- trade-off scatter


def tradeoff_figure(summary: pd.DataFrame, title: str = "") -> Figure:
    """Mean cost per run against mean and p95 wall time, one labelled point per variant.

    ``summary`` is :meth:`Results.summary` (index: variant; columns ``wall_mean_s``,
    ``wall_p95_s``, ``cost_mean_usd``). In each panel the Pareto frontier is drawn
    and dominated variants are grey.
    """
    colors = variant_colors(summary.index)
    fig = _figure((10, 4.4))
    axes = fig.subplots(1, 2, sharey=True)
    for ax, col, label in (
        (axes[0], "wall_mean_s", "mean wall time per run (s)"),
        (axes[1], "wall_p95_s", "p95 wall time per run (s)"),
    ):
        x, y = summary[col].to_numpy(float), summary["cost_mean_usd"].to_numpy(float)
        front = _frontier(x, y)
        for i, name in enumerate(summary.index):
            face = colors[name] if front[i] else DOMINATED
            ax.scatter(
                x[i],
                y[i],
                s=70 if front[i] else 45,
                color=face,
                edgecolors=colors[name],
                linewidths=1.5,
                zorder=3,
                label=str(name),
                gid="frontier-points" if front[i] else "dominated-points",
            )
        if front.sum() > 1:
            _draw_frontier(ax, x[front], y[front])
        ax.set_xlabel(label)
        ax.grid(True, alpha=0.3)
        ax.margins(0.25)
        _place_labels(
            fig,
            ax,
            x,
            y,
            [str(n) for n in summary.index],
            [colors[n] if front[i] else "0.45" for i, n in enumerate(summary.index)],
        )
    axes[0].set_ylabel("mean cost per run (USD)")
    handles = [Line2D([], [], marker="o", ls="", color=colors[n], label=str(n)) for n in summary.index]
    handles.append(Line2D([], [], marker="o", ls="", color=DOMINATED, label="dominated (grey)"))
    handles.append(Line2D([], [], color="0.25", ls="--", label="Pareto frontier"))
    axes[1].legend(handles=handles, loc="best", fontsize=8)
    if title:
        fig.suptitle(f"{title}: cost vs wall time")
    return fig


def frontier_figure(table: pd.DataFrame, time: str = "mean", title: str = "") -> Figure:
    """Every (grid point × variant) of a sweep: mean cost against mean or p95 wall time, frontier drawn.

    Frontier points are coloured by variant; dominated ones grey. Up to eight frontier
    points are labelled with their variant and swept values where room allows.
    """
    col = {"mean": "wall_mean_s", "p95": "wall_p95_s"}[time]
    variants = list(dict.fromkeys(table["variant"]))
    colors = variant_colors(variants)
    x, y = table[col].to_numpy(float), table["cost_mean_usd"].to_numpy(float)
    front = _frontier(x, y)
    fig = _figure((8, 5))
    ax = fig.subplots()
    ax.scatter(x[~front], y[~front], s=18, color=DOMINATED, zorder=2, gid="dominated-points", label="dominated")
    fx, fy, fv = x[front], y[front], table["variant"].to_numpy()[front]
    ax.scatter(
        fx,
        fy,
        s=55,
        c=[colors[v] for v in fv],
        edgecolors="black",
        linewidths=0.7,
        zorder=3,
        gid="frontier-points",
        label="on the frontier",
    )
    if front.sum() > 1:
        _draw_frontier(ax, fx, fy)
    ax.set_xlabel(f"{time} wall time per run (s)")
    ax.set_ylabel("mean cost per run (USD)")
    ax.grid(True, alpha=0.3)
    ax.margins(0.08)
    swept = [c for c in table.columns if c not in _NOT_SWEPT and not c.startswith("pareto_")]
    idx = np.flatnonzero(front)
    first: dict[tuple, list] = {}  # identical frontier points (a parameter that does not matter): one label
    for i in idx:
        first.setdefault((x[i], y[i]), []).append(i)
    if len(first) <= 8:
        lead = [g[0] for g in first.values()]
        texts = [
            f"{table['variant'].iloc[i]}"
            + "".join(f", {_short(c)}={_fmt(table[c].iloc[i])}" for c in swept)
            + (f" (+{len(g) - 1} identical)" if len(g) > 1 else "")
            for i, g in zip(lead, first.values(), strict=True)
        ]
        _place_labels(
            fig,
            ax,
            x[lead],
            y[lead],
            texts,
            [colors[table["variant"].iloc[i]] for i in lead],
            avoid=np.column_stack([x[~front], y[~front]]),
        )
    handles = [Line2D([], [], marker="o", ls="", color=colors[v], label=str(v)) for v in variants]
    handles += [
        Line2D([], [], marker="o", ls="", color=DOMINATED, label="dominated"),
        Line2D([], [], color="0.25", ls="--", label="Pareto frontier"),
    ]
    ax.legend(handles=handles, loc="best", fontsize=8)
    if title:
        ax.set_title(f"{title}: {int(front.sum())} of {len(x)} configurations on the frontier", fontsize=10)
    return fig


_NOT_SWEPT = {"point", "variant", "wall_mean_s", "wall_ci95_lo_s", "wall_ci95_hi_s", "wall_p50_s", "wall_p90_s",
              "wall_p95_s", "wall_p99_s", "cost_mean_usd", "cost_ci95_lo_usd", "cost_ci95_hi_usd", "cost_p95_usd",
              "calls_mean", "input_tokens_mean", "cache_read_tokens_mean", "cache_write_tokens_mean",
              "output_tokens_mean", "reasoning_tokens_mean", "queue_s", "ttft_s", "decode_s", "tool_s", "wait_s",
              "delta_time_s", "delta_cost_usd", "usd_per_hour_saved", "pays_off"}  # fmt: skip


def _short(path: str) -> str:
    return path.rsplit(".", 1)[-1]


def _fmt(v) -> str:
    if isinstance(v, float | np.floating):
        return f"{v:g}"
    return str(v)


# --------------------------------------------------------------------------- sweeps


def sweep_figure(table: pd.DataFrame, column: str, label: str | None = None, title: str = "") -> Figure:
    """Wall time and cost per run against one swept column, one line per variant, 95% CI bands.

    Left: mean wall time (solid, band = CI of the mean) and p95 (dashed). Right: mean
    cost (band = CI). With other swept columns, one row of panels per combination of
    their values (at most four, evenly picked; the row title says which).
    """
    others = [c for c in table.columns if c not in _NOT_SWEPT and not c.startswith("pareto_") and c != column]
    combos = list(dict.fromkeys(map(tuple, table[others].to_numpy()))) if others else [()]
    if len(combos) > MAX_FACETS:
        pick = np.linspace(0, len(combos) - 1, MAX_FACETS).round().astype(int)
        combos = [combos[i] for i in dict.fromkeys(pick)]
    variants = list(dict.fromkeys(table["variant"]))
    colors = variant_colors(variants)
    numeric = pd.api.types.is_numeric_dtype(table[column])
    fig = _figure((10, 3.4 * len(combos) + 0.6))
    grid = np.atleast_2d(fig.subplots(len(combos), 2, squeeze=False))
    xlabel = label or column
    for r, combo in enumerate(combos):
        sub = table
        for c, v in zip(others, combo, strict=True):
            sub = sub[sub[c] == v]
        ax_t, ax_c = grid[r]
        for name in variants:
            d = sub[sub["variant"] == name]
            if numeric:
                d = d.sort_values(column, kind="stable")
                xv = d[column].to_numpy(float)
            else:
                cats = list(dict.fromkeys(table[column]))
                xv = np.array([cats.index(v) for v in d[column]], dtype=float)
            color = colors[name]
            ax_t.plot(xv, d["wall_mean_s"], color=color, marker="o", ms=3.5, label=f"{name} mean", gid=f"line:{name}")
            ax_t.fill_between(
                xv, d["wall_ci95_lo_s"], d["wall_ci95_hi_s"], color=color, alpha=0.2, lw=0, gid=f"band:{name}"
            )
            ax_t.plot(xv, d["wall_p95_s"], color=color, ls="--", lw=1, label=f"{name} p95", gid=f"p95:{name}")
            ax_c.plot(xv, d["cost_mean_usd"], color=color, marker="o", ms=3.5, label=name, gid=f"line:{name}")
            ax_c.fill_between(
                xv, d["cost_ci95_lo_usd"], d["cost_ci95_hi_usd"], color=color, alpha=0.2, lw=0, gid=f"band:{name}"
            )
        for ax in (ax_t, ax_c):
            ax.set_xlabel(xlabel)
            ax.grid(True, alpha=0.3)
            if not numeric:
                cats = list(dict.fromkeys(table[column]))
                ax.set_xticks(range(len(cats)), [str(c) for c in cats])
        ax_t.set_ylabel("wall time per run (s)")
        ax_c.set_ylabel("mean cost per run (USD)")
        if others:
            ax_t.set_title(
                ", ".join(f"{_short(c)} = {_fmt(v)}" for c, v in zip(others, combo, strict=True)),
                fontsize=9,
                loc="left",
            )
    handles = [Line2D([], [], color=colors[n], marker="o", ms=3.5, label=str(n)) for n in variants]
    handles += [
        Line2D([], [], color="0.3", label="mean (band: 95% CI)"),
        Line2D([], [], color="0.3", ls="--", label="p95"),
    ]
    grid[0][0].legend(handles=handles, loc="best", fontsize=8)
    if title:
        fig.suptitle(f"{title}: wall time and cost vs {xlabel}")
    return fig


# --------------------------------------------------------------------------- distributions and breakdowns


def _summarised(runs: pd.DataFrame) -> pd.DataFrame:
    from agentsim.analysis.timeline import summarised

    return summarised(runs)


def _variants_of(runs: pd.DataFrame) -> list:
    """The variants of a runs table in order of first appearance (``dict.fromkeys`` of the column, without
    turning each of its rows into a Python string)."""
    return list(pd.unique(runs["variant"]))


CDF_POINTS = 20_000  # a CDF of more runs is drawn through this many of its points (runs in rank order)


def cdf_figure(runs: pd.DataFrame, title: str = "") -> Figure:
    """Empirical CDF of the wall time of a run, one line per variant, with the p95 level dotted.

    Like the summaries, it shows completed runs (and, in a workload, those counted). Past
    :data:`CDF_POINTS` runs a line goes through that many of its points, evenly spaced in rank (the
    first and the last included): each lies exactly on the CDF, and an 8-inch figure has fewer pixels.
    """
    variants = _variants_of(runs)
    runs = _summarised(runs)
    colors = variant_colors(variants)
    fig = _figure((8, 4.4))
    ax = fig.subplots()
    for name in variants:
        w = np.sort(runs.loc[runs["variant"] == name, "wall_time_s"].to_numpy(float))
        p = np.arange(1, w.size + 1) / w.size
        if w.size > CDF_POINTS:  # every point drawn lies on the CDF; more than the figure's pixels show nothing more
            pick = np.unique(np.linspace(0, w.size - 1, CDF_POINTS).round().astype(np.int64))
            w, p = w[pick], p[pick]
        ax.step(w, p, where="post", color=colors[name], lw=1.6, label=str(name), gid=f"cdf:{name}")
    ax.axhline(0.95, color="0.5", ls=":", lw=1, gid="p95-level")
    ax.text(ax.get_xlim()[0], 0.95, " p95", va="bottom", ha="left", fontsize=8, color="0.4")
    ax.set_xlabel("wall time per run (s)")
    ax.set_ylabel("fraction of runs finished")
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    if title:
        ax.set_title(f"{title}: distribution of wall time", fontsize=10)
    return fig


def breakdown_figure(runs: pd.DataFrame, title: str = "") -> Figure:
    """Mean critical-path time per run split into queue / TTFT / decode / tool / wait, a bar per variant.

    Like the summaries, it averages completed runs (and, in a workload, those counted).
    """
    variants = _variants_of(runs)
    runs = _summarised(runs)
    colors = variant_colors(variants)
    optional = {"stall": STALL_COLOR, "listen": LISTEN_COLOR}  # slots only some scenarios have
    seg_colors = {**SEGMENT_COLORS, **{k: c for k, c in optional.items() if f"{k}_s" in runs}}
    seg_labels = {**SEGMENT_LABELS, "stall": "stall", "listen": "listen (end of speech + STT)"}
    means = runs.groupby("variant", sort=False)[[f"{k}_s" for k in seg_colors]].mean().reindex(variants)
    empty = means.isna().all(axis=1).to_numpy()  # variants without a completed run
    means = means.fillna(0.0)
    used = [k for k in seg_colors if (means[f"{k}_s"] > 0).any()]
    fig = _figure((8, 1.1 + 0.55 * len(variants)))
    ax = fig.subplots()
    y = np.arange(len(variants))[::-1]
    left = np.zeros(len(variants))
    for k in used:
        vals = means[f"{k}_s"].to_numpy(float)
        ax.barh(y, vals, left=left, color=seg_colors[k], height=0.6, label=seg_labels[k], gid=f"segment:{k}")
        left += vals
    for yi, total, none in zip(y, left, empty, strict=True):
        ax.text(total, yi, " no completed run" if none else f" {total:,.1f} s", va="center", ha="left", fontsize=8.5)
    ax.set_yticks(y, [str(v) for v in variants])
    for tick, v in zip(ax.get_yticklabels(), variants, strict=True):
        tick.set_color(colors[v])
    ax.set_xlabel("mean time on the critical path per run (s)")
    if not used:  # no variant completed a run: an empty legend entry instead of a matplotlib warning
        ax.plot([], [], alpha=0, label="no completed run")
    ax.set_xlim(0, left.max() * 1.15 if left.max() > 0 else 1)
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(
        loc="upper center",
        bbox_to_anchor=(0.5, -0.35 if len(variants) < 3 else -0.2),
        ncols=max(1, len(used)),
        fontsize=8,
        frameon=False,
    )
    if title:
        ax.set_title(f"{title}: where the time goes", fontsize=10)
    return fig


def timeline_figure(timeline: pd.DataFrame, title: str = "") -> Figure:
    """A Gantt chart of one run per variant: a lane per concurrent branch, the critical path outlined.

    ``timeline`` is :func:`agentsim.analysis.timeline.run_timeline`. Calls are split into
    queue / TTFT / decode; activities off the critical path are drawn faint.
    """
    variants = list(dict.fromkeys(timeline["variant"]))
    colors = variant_colors(variants)
    lanes = [int(timeline.loc[timeline["variant"] == v, "lane"].max()) + 1 for v in variants]
    fig = _figure((10, 0.9 + sum(0.45 * n + 0.75 for n in lanes)))
    axes = fig.subplots(
        len(variants), 1, sharex=True, squeeze=False, gridspec_kw={"height_ratios": [n + 1.2 for n in lanes]}
    )[:, 0]
    seg_colors = {**SEGMENT_COLORS, **({"listen": LISTEN_COLOR} if "listen" in timeline else {})}
    for ax, name, n_lanes in zip(axes, variants, lanes, strict=True):
        d = timeline[timeline["variant"] == name]
        for crit in (False, True):
            part = d[d["critical"] == crit]
            for seg in seg_colors:
                if seg in ("queue", "ttft", "decode"):
                    rows = part[part["kind"] == "call"]
                    lo = {"queue": rows["start"], "ttft": rows["t_start"], "decode": rows["t_start"] + rows["ttft"]}[
                        seg
                    ]
                else:
                    rows = part[part["kind"] == seg]
                    lo = rows["start"]
                width = rows[seg].to_numpy(float)
                keep = width > 0
                if not keep.any():
                    continue
                ax.barh(
                    -rows["lane"].to_numpy()[keep],
                    width[keep],
                    left=lo.to_numpy(float)[keep],
                    height=0.62,
                    color=seg_colors[seg],
                    alpha=1.0 if crit else 0.35,
                    edgecolor="black" if crit else "none",
                    linewidth=0.6 if crit else 0,
                    gid=f"{'critical' if crit else 'other'}:{seg}",
                )
        ax.set_yticks(-np.arange(n_lanes), ["main" if i == 0 else f"branch {i + 1}" for i in range(n_lanes)])
        ax.set_ylim(-n_lanes + 0.4, 0.6)
        wall = float(d["end"].max()) if len(d) else 0.0
        ax.set_title(
            f"{name}: run {int(d['run'].iloc[0]) if len(d) else 0}, wall time {wall:,.1f} s",
            fontsize=9,
            loc="left",
            color=colors[name],
        )
        ax.grid(True, axis="x", alpha=0.3)
    axes[-1].set_xlabel("time since the run started (s)")
    used = [k for k in seg_colors if (timeline[k] > 0).any()]
    labels = {**SEGMENT_LABELS, "listen": "listen"}
    handles = [Patch(color=seg_colors[k], label=labels[k]) for k in used]
    handles.append(Patch(facecolor="white", edgecolor="black", label="on the critical path"))
    handles.append(Patch(facecolor="0.8", alpha=0.5, label="off the critical path (faint)"))
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), fontsize=8, frameon=False)
    if title:
        fig.suptitle(f"{title}: one sampled run per variant")
    return fig


# --------------------------------------------------------------------------- break-even


def breakeven_figure(table: pd.DataFrame, value_of_time: float | None = None, title: str = "") -> Figure:
    """Total cost per run (API cost + value of time × wall time) against the value of time.

    One line per variant; the lowest (the cheapest variant at each value of time) is
    traced thick (``gid="envelope"``), the values where the cheapest variant changes
    are marked and labelled, and the scenario's own value of time is a dotted line.
    """
    from agentsim.analysis.tradeoffs import cheapest_intervals

    variants = list(table.index)
    colors = variant_colors(variants)
    env = cheapest_intervals(table)
    switches = [v for v in env["from_usd_per_hour"].iloc[1:]]
    top = max([*switches, value_of_time or 0.0, 50.0]) * 1.6
    v = np.linspace(0.0, top, 400)
    fig = _figure((8, 4.6))
    ax = fig.subplots()
    c = table["cost_mean_usd"].to_numpy(float)
    t = table["wall_mean_s"].to_numpy(float) / 3600.0
    totals = c[:, None] + v[None, :] * t[:, None]
    for i, name in enumerate(variants):
        ax.plot(v, totals[i], color=colors[name], lw=1.5, label=str(name), gid=f"total:{name}")
    ax.plot(v, totals.min(axis=0), color="0.1", lw=4, alpha=0.18, gid="envelope", label="cheapest")
    xs, ys, texts = [], [], []
    for s in switches:
        y = float((c + s * t).min())
        ax.plot([s], [y], marker="o", ms=7, mfc="white", mec="0.1", ls="", zorder=4, gid="switch")
        xs.append(s)
        ys.append(y)
        texts.append(f"${s:,.0f}/h")
    if value_of_time is not None:
        ax.axvline(value_of_time, color="0.35", ls=":", lw=1.2, gid="value-of-time")
        ax.text(
            value_of_time,
            0.98,
            f" your value of time: ${value_of_time:,.0f}/h",
            transform=ax.get_xaxis_transform(),
            va="top",
            ha="left",
            fontsize=8,
            color="0.3",
        )
    ax.set_xlim(0, top)
    ax.set_ylim(0, None)
    ax.set_xlabel("value of an hour of waiting (USD/h)")
    ax.set_ylabel("total cost per run: API + waiting (USD)")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    _place_labels(fig, ax, np.array(xs), np.array(ys), texts)
    if title:
        ax.set_title(f"{title}: which variant is cheapest overall", fontsize=10, pad=14)
    return fig
