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
from matplotlib.category import StrCategoryFormatter
from matplotlib.figure import Figure as _MplFigure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.text import Text
from matplotlib.ticker import FixedFormatter, FuncFormatter, PercentFormatter

from agentsim.model.safe_text import visible
from agentsim.sim import slots
from agentsim.sim.slots import ENGINE_SLOTS
from agentsim.viz.format import Unit, fmt_time


class Figure(_MplFigure):
    """A matplotlib ``Figure`` that shows itself in Jupyter (``_repr_png_``), whatever the backend.

    Figures made this way are not registered with pyplot, so scripts keep no global figure state,
    and notebooks display them without ``%matplotlib inline``. Whenever it is drawn (saved, shown,
    embedded in a page), every text on it (titles, labels, legends, ticks) is made visible first
    (:func:`agentsim.model.safe_text.visible`): a name's bidirectional or invisible characters are
    written out, never drawn as nothing.
    """

    def _repr_png_(self) -> bytes:
        buf = io.BytesIO()
        self.savefig(buf, format="png", dpi=100)
        return buf.getvalue()

    def draw(self, renderer):
        _names_visible(self)
        super().draw(renderer)


class _VisibleLabels(FuncFormatter):
    """A tick formatter that may give names (fixed labels, categories, a function) with its labels made visible."""

    def __init__(self, inner):
        super().__init__(lambda x, pos=None: visible(str(inner(x, pos)), lines=True))
        self.inner = inner

    def get_offset(self) -> str:
        return visible(self.inner.get_offset(), lines=True)


def _names_visible(fig: _MplFigure) -> None:
    """Every text of ``fig`` (titles, labels, legends, annotations) and every tick label that is a name (fixed
    labels, categories) made visible (:func:`agentsim.model.safe_text.visible`)."""
    for text in fig.findobj(Text):
        label = text.get_text()
        if label and not label.isprintable():
            shown = visible(label, lines=True)
            if shown != label:
                text.set_text(shown)
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for get, put in ((axis.get_major_formatter, axis.set_major_formatter),
                             (axis.get_minor_formatter, axis.set_minor_formatter)):  # fmt: skip
                formatter = get()
                named = isinstance(formatter, FixedFormatter | StrCategoryFormatter | FuncFormatter)
                if named and not isinstance(formatter, _VisibleLabels):
                    put(_VisibleLabels(formatter))


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
# The breakdown slots' colours and legends are the slots' own (agentsim.sim.slots: the engines', then each step
# kind's, such as listen); these are the five every run has.
SEGMENT_COLORS = {s.name: s.colour for s in ENGINE_SLOTS[:5]}
SEGMENT_LABELS = {s.name: s.legend for s in ENGINE_SLOTS[:5]}
_CALL_SEGMENTS = ("queue", "ttft", "decode")  # a call's parts in a run's timeline (the rest are spans' slots)
MAX_FACETS = 4
SECONDS: Unit = ("s", 1.0)  # the time axes' default unit (a page passes the unit of its tables)


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


def tradeoff_figure(summary: pd.DataFrame, title: str = "", unit: Unit = SECONDS) -> Figure:
    """Mean cost per run against mean and p95 wall time, one labelled point per variant.

    ``summary`` is :meth:`Results.summary` (index: variant; columns ``wall_mean_s``,
    ``wall_p95_s``, ``cost_mean_usd``). In each panel the Pareto frontier is drawn
    and dominated variants are grey. ``unit``: the time axis' unit (:func:`agentsim.viz.format.time_unit`:
    a page draws its figures in the unit its tables use).
    """
    colors = variant_colors(summary.index)
    fig = _figure((10, 4.4))
    axes = fig.subplots(1, 2, sharey=True)
    for ax, col, label in (
        (axes[0], "wall_mean_s", f"mean wall time per run ({unit[0]})"),
        (axes[1], "wall_p95_s", f"p95 wall time per run ({unit[0]})"),
    ):
        x, y = summary[col].to_numpy(float) / unit[1], summary["cost_mean_usd"].to_numpy(float)
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


def frontier_figure(table: pd.DataFrame, time: str = "mean", title: str = "", unit: Unit = SECONDS) -> Figure:
    """Every (grid point × variant) of a sweep: mean cost against mean or p95 wall time, frontier drawn.

    Frontier points are coloured by variant; dominated ones grey. Up to eight frontier
    points are labelled with their variant and swept values where room allows.
    """
    col = {"mean": "wall_mean_s", "p95": "wall_p95_s"}[time]
    variants = list(dict.fromkeys(table["variant"]))
    colors = variant_colors(variants)
    x, y = table[col].to_numpy(float) / unit[1], table["cost_mean_usd"].to_numpy(float)
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
    ax.set_xlabel(f"{time} wall time per run ({unit[0]})")
    ax.set_ylabel("mean cost per run (USD)")
    ax.grid(True, alpha=0.3)
    ax.margins(0.08)
    _label_frontier(fig, ax, table, (x, y), front, colors)
    handles = [Line2D([], [], marker="o", ls="", color=colors[v], label=str(v)) for v in variants]
    handles += [
        Line2D([], [], marker="o", ls="", color=DOMINATED, label="dominated"),
        Line2D([], [], color="0.25", ls="--", label="Pareto frontier"),
    ]
    ax.legend(handles=handles, loc="best", fontsize=8)
    if title:
        ax.set_title(f"{title}: {int(front.sum())} of {len(x)} configurations on the frontier", fontsize=10)
    return fig


def _label_frontier(fig: Figure, ax, table: pd.DataFrame, xy: tuple, front: np.ndarray, colors: dict) -> None:
    """Label the frontier points with their variant and swept values, where there are at most eight distinct
    ones (identical points, a parameter that does not matter, share one label)."""
    x, y = xy
    swept = [c for c in table.columns if c not in _NOT_SWEPT and not c.startswith("pareto_")]
    first: dict[tuple, list] = {}
    for i in np.flatnonzero(front):
        first.setdefault((x[i], y[i]), []).append(i)
    if len(first) > 8:
        return
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


def sweep_figure(
    table: pd.DataFrame,
    column: str,
    label: str | None = None,
    title: str = "",
    swept: list[str] | None = None,
    unit: Unit = SECONDS,
) -> Figure:
    """Wall time and cost per run against one swept column, one line per variant, 95% CI bands.

    Left: mean wall time (solid, band = CI of the mean) and p95 (dashed). Middle: mean cost (band = CI).
    Where runs can fail (the table has ``failed_share``), a third panel: the share of runs that failed or did
    not finish, with the points whose time and cost describe the completed runs only (above 1% failed)
    drawn hollow. ``swept``: the other swept columns (the columns varied *independently* of ``column``; a
    column zipped with it is not one); default: every column that is not a figure of the table. With other
    swept columns, one row of panels per combination of their values (at most four, evenly picked; the row
    title says which). Text values (a preset's name, a YAML value) are category ticks, wrapped and slanted.
    """
    others = swept if swept is not None else [c for c in table.columns if _swept_like(c)]
    others = [c for c in others if c != column]
    combos = list(dict.fromkeys(map(tuple, table[others].to_numpy()))) if others else [()]
    if len(combos) > MAX_FACETS:
        pick = np.linspace(0, len(combos) - 1, MAX_FACETS).round().astype(int)
        combos = [combos[i] for i in dict.fromkeys(pick)]
    variants = list(dict.fromkeys(table["variant"]))
    colors = variant_colors(variants)
    numeric = pd.api.types.is_numeric_dtype(table[column]) and not pd.api.types.is_bool_dtype(table[column])
    cats = None if numeric else list(dict.fromkeys(table[column]))
    failing = "failed_share" in table.columns
    ncols = 3 if failing else 2
    fig = _figure((5 * ncols, 3.4 * len(combos) + (1.4 if cats is not None else 0.6)))
    grid = np.atleast_2d(fig.subplots(len(combos), ncols, squeeze=False))
    xlabel = label or column
    for r, combo in enumerate(combos):
        sub = table
        for c, v in zip(others, combo, strict=True):
            sub = sub[sub[c] == v]
        for name in variants:
            d = sub[sub["variant"] == name]
            d = d.sort_values(column, kind="stable") if numeric else d
            xv = d[column].to_numpy(float) if numeric else np.array([cats.index(v) for v in d[column]], dtype=float)
            _sweep_lines(grid[r], xv, d, name, colors[name], unit[1])
        for ax in grid[r]:
            ax.set_xlabel(xlabel)
            ax.grid(True, alpha=0.3)
            if cats is not None:
                ax.set_xticks(range(len(cats)), [_tick(c) for c in cats], rotation=30, ha="right", fontsize=8)
        _sweep_row_labels(grid[r], unit, failing)
        if others:
            grid[r][0].set_title(
                ", ".join(f"{_short(c)} = {_fmt(v)}" for c, v in zip(others, combo, strict=True)),
                fontsize=9,
                loc="left",
            )
    grid[0][0].legend(handles=_sweep_handles(variants, colors, failing), loc="best", fontsize=8)
    if title:
        fig.suptitle(f"{title}: wall time and cost vs {xlabel}" + (" (hollow: completed runs only)" if failing else ""))
    return fig


def _sweep_row_labels(axes, unit: Unit, failing: bool) -> None:
    """The y labels of one row of :func:`sweep_figure`'s panels."""
    axes[0].set_ylabel(f"wall time per run ({unit[0]})")
    axes[1].set_ylabel("mean cost per run (USD)")
    if failing:
        axes[2].set_ylabel("runs failed or unfinished")
        axes[2].yaxis.set_major_formatter(PercentFormatter(1.0))


def _sweep_lines(axes, xv, d: pd.DataFrame, name: str, color, scale: float = 1.0) -> None:
    """One variant's lines in one row of :func:`sweep_figure`'s panels (times divided by ``scale``)."""
    ax_t, ax_c = axes[0], axes[1]
    d = d.assign(**{c: d[c] / scale for c in ("wall_mean_s", "wall_ci95_lo_s", "wall_ci95_hi_s", "wall_p95_s")})
    ax_t.plot(xv, d["wall_mean_s"], color=color, marker="o", ms=3.5, label=f"{name} mean", gid=f"line:{name}")
    ax_t.fill_between(xv, d["wall_ci95_lo_s"], d["wall_ci95_hi_s"], color=color, alpha=0.2, lw=0, gid=f"band:{name}")
    ax_t.plot(xv, d["wall_p95_s"], color=color, ls="--", lw=1, label=f"{name} p95", gid=f"p95:{name}")
    ax_c.plot(xv, d["cost_mean_usd"], color=color, marker="o", ms=3.5, label=name, gid=f"line:{name}")
    ax_c.fill_between(
        xv, d["cost_ci95_lo_usd"], d["cost_ci95_hi_usd"], color=color, alpha=0.2, lw=0, gid=f"band:{name}"
    )
    if len(axes) > 2:
        share = d["failed_share"].to_numpy(float)
        axes[2].plot(xv, share, color=color, marker="o", ms=3.5, gid=f"failed:{name}")
        only = share > 0.01  # figures of the completed runs only (agentsim.analysis.completion.THRESHOLD)
        for ax, col in ((ax_t, "wall_mean_s"), (ax_c, "cost_mean_usd")):
            ax.plot(xv[only], d[col].to_numpy(float)[only], ls="", marker="o", ms=6, mfc="white", mec=color,
                    gid=f"completed-only:{name}")  # fmt: skip


def _sweep_handles(variants: list, colors: dict, failing: bool) -> list:
    handles = [Line2D([], [], color=colors[n], marker="o", ms=3.5, label=str(n)) for n in variants]
    handles += [
        Line2D([], [], color="0.3", label="mean (band: 95% CI)"),
        Line2D([], [], color="0.3", ls="--", label="p95"),
    ]
    if failing:
        handles.append(Line2D([], [], color="0.3", ls="", marker="o", mfc="white", label="> 1% of runs failed"))
    return handles


def _tick(value, width: int = 18) -> str:
    """A category's tick label: its text, cut to two wrapped lines of ``width`` characters."""
    import textwrap

    lines = textwrap.wrap(_fmt(value), width) or [""]
    return "\n".join(lines[:2]) + ("…" if len(lines) > 2 else "")


def _swept_like(column: str) -> bool:
    """Whether a column of a sweep table may be a swept path (not a figure the sweep computed)."""
    return column not in _NOT_SWEPT and not column.startswith(("pareto_", "slo_")) and column not in _FIGURE_COLUMNS


_FIGURE_COLUMNS = {"success_share", "cost_per_success_usd", "time_to_success_s", "runs_counted", "runs_completed",
                   "failed_share", "throughput_runs_per_hour", "rejected_429", "binding_account", "binding_limit",
                   "completed_runs_only", "api_usd_per_month", "waiting_mean_s", "waiting_p95_s", "turn_p95_s",
                   "turns_mean", "time_basis", "delta_waiting_s"}  # fmt: skip


# --------------------------------------------------------------------------- distributions and breakdowns


def _summarised(runs: pd.DataFrame) -> pd.DataFrame:
    from agentsim.analysis.timeline import summarised

    return summarised(runs)


def _variants_of(runs: pd.DataFrame) -> list:
    """The variants of a runs table in order of first appearance (``dict.fromkeys`` of the column, without
    turning each of its rows into a Python string)."""
    return list(pd.unique(runs["variant"]))


CDF_POINTS = 20_000  # a CDF of more runs is drawn through this many of its points (runs in rank order)


def cdf_figure(runs: pd.DataFrame, title: str = "", unit: Unit = SECONDS) -> Figure:
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
        w = np.sort(runs.loc[runs["variant"] == name, "wall_time_s"].to_numpy(float)) / unit[1]
        p = np.arange(1, w.size + 1) / w.size
        if w.size > CDF_POINTS:  # every point drawn lies on the CDF; more than the figure's pixels show nothing more
            pick = np.unique(np.linspace(0, w.size - 1, CDF_POINTS).round().astype(np.int64))
            w, p = w[pick], p[pick]
        ax.step(w, p, where="post", color=colors[name], lw=1.6, label=str(name), gid=f"cdf:{name}")
    ax.axhline(0.95, color="0.5", ls=":", lw=1, gid="p95-level")
    ax.text(ax.get_xlim()[0], 0.95, " p95", va="bottom", ha="left", fontsize=8, color="0.4")
    ax.set_xlabel(f"wall time per run ({unit[0]})")
    ax.set_ylabel("fraction of runs finished")
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    if title:
        ax.set_title(f"{title}: distribution of wall time", fontsize=10)
    return fig


def breakdown_figure(runs: pd.DataFrame, title: str = "", unit: Unit = SECONDS) -> Figure:
    """Mean critical-path time per run split into queue / TTFT / decode / tool / wait, a bar per variant.

    Like the summaries, it averages completed runs (and, in a workload, those counted).
    """
    variants = _variants_of(runs)
    runs = _summarised(runs)
    colors = variant_colors(variants)
    # the five every run has, then those only some scenarios have (stall, a step kind's own: listen)
    present = [s for s in slots.slots() if s.name in slots.BREAKDOWN or f"{s.name}_s" in runs]
    seg_colors = {s.name: s.colour for s in present}
    seg_labels = {s.name: s.legend for s in present}
    means = runs.groupby("variant", sort=False)[[f"{k}_s" for k in seg_colors]].mean().reindex(variants) / unit[1]
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
        text = " no completed run" if none else " " + fmt_time(total * unit[1], unit)
        ax.text(total, yi, text, va="center", ha="left", fontsize=8.5)
    ax.set_yticks(y, [str(v) for v in variants])
    for tick, v in zip(ax.get_yticklabels(), variants, strict=True):
        tick.set_color(colors[v])
    ax.set_xlabel(f"mean time on the critical path per run ({unit[0]})")
    ax.set_xlim(0, left.max() * 1.15 if left.max() > 0 else 1)
    ax.grid(True, axis="x", alpha=0.3)
    if used:  # (no variant completed a run: each bar says so, and there is nothing for a legend to name)
        ax.legend(
            loc="upper center",
            bbox_to_anchor=(0.5, -0.35 if len(variants) < 3 else -0.2),
            ncols=len(used),
            fontsize=8,
            frameon=False,
        )
    if title:
        ax.set_title(f"{title}: where the time goes", fontsize=10)
    return fig


def timeline_figure(timeline: pd.DataFrame, title: str = "", unit: Unit = SECONDS) -> Figure:
    """A Gantt chart of one run per variant: a lane per concurrent branch, the critical path outlined.

    ``timeline`` is :func:`agentsim.analysis.timeline.run_timeline`. Calls are split into
    queue / TTFT / decode; activities off the critical path are drawn faint.
    """
    variants = list(dict.fromkeys(timeline["variant"]))
    times = [c for c in ("start", "t_start", "t_first", "end", *(s.name for s in slots.slots())) if c in timeline]
    timeline = timeline.assign(**{c: timeline[c] / unit[1] for c in times})
    colors = variant_colors(variants)
    lanes = [int(timeline.loc[timeline["variant"] == v, "lane"].max()) + 1 for v in variants]
    fig = _figure((10, 0.9 + sum(0.45 * n + 0.75 for n in lanes)))
    axes = fig.subplots(
        len(variants), 1, sharex=True, squeeze=False, gridspec_kw={"height_ratios": [n + 1.2 for n in lanes]}
    )[:, 0]
    # a call's parts, then each slot a span's time goes to that the timeline has (tool, wait, a kind's own: listen)
    present = [s for s in slots.slots() if s.name in _CALL_SEGMENTS or (s.name in timeline and s.name != "stall")]
    seg_colors = {s.name: s.colour for s in present}
    for ax, name, n_lanes in zip(axes, variants, lanes, strict=True):
        d = timeline[timeline["variant"] == name]
        for crit in (False, True):
            _gantt_bars(ax, d[d["critical"] == crit], seg_colors, crit)
        ax.set_yticks(-np.arange(n_lanes), ["main" if i == 0 else f"branch {i + 1}" for i in range(n_lanes)])
        ax.set_ylim(-n_lanes + 0.4, 0.6)
        wall = float(d["end"].max()) if len(d) else 0.0
        run = int(d["run"].iloc[0]) if len(d) else 0
        ax.set_title(
            f"{name}: run {run}, wall time {fmt_time(wall * unit[1], unit)}",
            fontsize=9,
            loc="left",
            color=colors[name],
        )
        ax.grid(True, axis="x", alpha=0.3)
    axes[-1].set_xlabel(f"time since the run started ({unit[0]})")
    used = [s for s in present if (timeline[s.name] > 0).any()]
    handles = [Patch(color=s.colour, label=s.legend) for s in used]
    handles.append(Patch(facecolor="white", edgecolor="black", label="on the critical path"))
    handles.append(Patch(facecolor="0.8", alpha=0.5, label="off the critical path (faint)"))
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), fontsize=8, frameon=False)
    if title:
        fig.suptitle(f"{title}: one sampled run per variant")
    return fig


def _gantt_bars(ax, part: pd.DataFrame, seg_colors: dict[str, str], crit: bool) -> None:
    """The bars of a run's activities on (``crit``) or off the critical path: a call's queue, TTFT and decode;
    a span's whole time in its slot's column, whatever its kind."""
    for seg, colour in seg_colors.items():
        if seg in _CALL_SEGMENTS:
            rows = part[part["kind"] == "call"]
            lo = {"queue": rows["start"], "ttft": rows["t_start"], "decode": rows["t_start"] + rows["ttft"]}[seg]
        else:
            rows = part[part["kind"] != "call"]
            lo = rows["start"]
        width = rows[seg].to_numpy(float)
        keep = width > 0
        if keep.any():
            ax.barh(
                -rows["lane"].to_numpy()[keep],
                width[keep],
                left=lo.to_numpy(float)[keep],
                height=0.62,
                color=colour,
                alpha=1.0 if crit else 0.35,
                edgecolor="black" if crit else "none",
                linewidth=0.6 if crit else 0,
                gid=f"{'critical' if crit else 'other'}:{seg}",
            )


# --------------------------------------------------------------------------- break-even


def breakeven_figure(table: pd.DataFrame, value_of_time: float | None = None, title: str = "") -> Figure:
    """Total cost per run (API cost + value of time × wall time) against the value of time.

    One line per variant; the lowest (the cheapest variant at each value of time) is
    traced thick (``gid="envelope"``), the values where the cheapest variant changes
    are marked and labelled, and the scenario's own value of time is a dotted line.
    """
    from agentsim.analysis.tradeoffs import cheapest_intervals, time_column

    variants = list(table.index)
    colors = variant_colors(variants)
    env = cheapest_intervals(table)
    switches = [v for v in env["from_usd_per_hour"].iloc[1:]]
    top = max([*switches, value_of_time or 0.0, 50.0]) * 1.6
    v = np.linspace(0.0, top, 400)
    fig = _figure((8, 4.6))
    ax = fig.subplots()
    c = table["cost_mean_usd"].to_numpy(float)
    t = table[time_column(table)].to_numpy(float) / 3600.0  # the person's waiting where the scenario has turns
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
