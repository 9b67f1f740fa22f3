"""Every figure on the bundled scenarios: the elements it promises, units, series, frontier, labels."""

from __future__ import annotations

import itertools

import matplotlib.colors as mcolors
import numpy as np
import pytest
from matplotlib.text import Annotation

import agentsim
from agentsim.analysis.sweeps import parse_set, run_sweep
from agentsim.analysis.timeline import run_timeline
from agentsim.analysis.tradeoffs import cheapest_intervals, pareto_mask, variant_table
from agentsim.viz import plots
from conftest import SCENARIOS

BUNDLED = sorted(p.name for p in SCENARIOS.glob("*.yaml"))


@pytest.fixture(scope="module")
def results():
    return {name: agentsim.simulate(SCENARIOS / name, runs=150) for name in BUNDLED}


def by_gid(ax, prefix: str) -> list:
    return [a for a in ax.get_children() if (a.get_gid() or "").startswith(prefix)]


def label_boxes(fig, ax) -> list:
    renderer = fig.canvas.get_renderer()
    return [t.get_window_extent(renderer) for t in ax.texts if isinstance(t, Annotation)]


def assert_no_overlap(boxes) -> None:
    for a, b in itertools.combinations(boxes, 2):
        assert not a.overlaps(b), (a, b)


@pytest.mark.parametrize("name", BUNDLED)
def test_tradeoff_figure(results, name, tmp_path):
    res = results[name]
    summary = res.summary()
    fig = plots.tradeoff_figure(summary, name)
    fig.savefig(tmp_path / "t.png")
    axes = fig.axes
    assert len(axes) == 2
    assert axes[0].get_ylabel() == "mean cost per run (USD)"
    for ax, col in zip(axes, ("wall_mean_s", "wall_p95_s"), strict=True):
        assert "(s)" in ax.get_xlabel()
        front = pareto_mask(summary[col], summary["cost_mean_usd"])
        on, off = by_gid(ax, "frontier-points"), by_gid(ax, "dominated-points")
        assert len(on) == front.sum() and len(off) == (~front).sum()
        for coll in off:  # dominated points are grey
            assert mcolors.to_hex(coll.get_facecolor()[0]) == plots.DOMINATED
        assert len(by_gid(ax, "frontier")) - len(on) == (1 if front.sum() > 1 else 0)  # the frontier line
        labels = [t.get_text() for t in ax.texts if isinstance(t, Annotation)]
        assert sorted(labels) == sorted(summary.index)  # every variant labelled ...
        assert_no_overlap(label_boxes(fig, ax))  # ... without overlaps
        axbox = ax.get_window_extent(fig.canvas.get_renderer())
        for box in label_boxes(fig, ax):  # ... and none touches the edge of its panel
            assert box.x0 > axbox.x0 + 1 and box.x1 < axbox.x1 - 1, (box, axbox)
            assert box.y0 > axbox.y0 + 1 and box.y1 < axbox.y1 - 1, (box, axbox)


@pytest.mark.parametrize("name", BUNDLED)
def test_cdf_figure(results, name):
    res = results[name]
    fig = plots.cdf_figure(res.runs, name)
    (ax,) = fig.axes
    assert ax.get_xlabel() == "wall time per run (s)"
    lines = by_gid(ax, "cdf:")
    assert [ln.get_gid() for ln in lines] == [f"cdf:{v}" for v in res.variants]
    colors = plots.variant_colors(res.variants)
    for ln, v in zip(lines, res.variants, strict=True):
        assert mcolors.to_hex(ln.get_color()) == mcolors.to_hex(colors[v])  # consistent colours
        x, y = ln.get_data()
        assert y[-1] == 1.0 and np.all(np.diff(x) >= 0)


@pytest.mark.parametrize("name", BUNDLED)
def test_breakdown_figure_bars_add_up_to_the_wall_time(results, name):
    res = results[name]
    fig = plots.breakdown_figure(res.runs, name)
    (ax,) = fig.axes
    assert "(s)" in ax.get_xlabel()
    segs = by_gid(ax, "segment:")
    assert segs, "no segments"
    totals = np.zeros(len(res.variants))
    for container in ax.containers:
        totals += [b.get_width() for b in container.patches]  # one bar per variant, in order
    # the critical-path breakdown of a run adds up to its wall time (runs the summaries describe)
    doc = res.summary_dict()["variants"]
    means = np.array([doc[v]["wall_time_s"]["mean"] for v in res.variants])
    np.testing.assert_allclose(totals, means, rtol=1e-9)


@pytest.mark.parametrize("name", BUNDLED)
def test_timeline_figure(results, name):
    res = results[name]
    tl = run_timeline(res.calls, res.spans, 0, res.plan)
    fig = plots.timeline_figure(tl, name)
    axes = [ax for ax in fig.axes if ax.get_title(loc="left")]
    assert len(axes) == len(res.variants)
    assert axes[-1].get_xlabel() == "time since the run started (s)"
    for ax, v in zip(axes, res.variants, strict=True):
        crit = by_gid(ax, "critical:")  # the bars (rectangles) on the critical path
        assert crit, "the critical path is drawn"
        wall = res.runs[(res.runs.variant == v) & (res.runs.run == 0)]["wall_time_s"].iloc[0]
        # the outlined bars tile the run from start to end
        assert sum(p.get_width() for p in crit) == pytest.approx(wall, rel=1e-9)
        n_lanes = int(tl.loc[tl.variant == v, "lane"].max()) + 1
        assert len(ax.get_yticks()) == n_lanes
    if name == "research-fanout.yaml":  # 8 parallel searchers: 8 lanes, a fan-out copy stays in its lane
        assert int(tl["lane"].max()) == 7
        sub = tl[(tl.variant == res.variants[0]) & tl.step.isin(["query", "web-search", "digest"])]
        assert (sub.groupby("instance")["lane"].nunique() == 1).all()
    if name == "coding-agent.yaml":  # two reviews in parallel: two lanes, and only one decides the end
        assert int(tl["lane"].max()) == 1
        reviews = tl[tl.step.isin(["review-a", "review-b"])]
        assert reviews.groupby("variant")["critical"].sum().eq(1).all()


@pytest.mark.parametrize("name", BUNDLED)
def test_breakeven_figure(results, name):
    res = results[name]
    vt = variant_table(res)
    fig = plots.breakeven_figure(vt, res.value_of_time, name)
    (ax,) = fig.axes
    assert ax.get_xlabel() == "value of an hour of waiting (USD/h)"
    assert "(USD)" in ax.get_ylabel()
    assert len(by_gid(ax, "total:")) == len(res.variants)
    assert len(by_gid(ax, "envelope")) == 1
    env = cheapest_intervals(vt)
    assert len(by_gid(ax, "switch")) == len(env) - 1
    assert len(by_gid(ax, "value-of-time")) == (res.value_of_time is not None)
    assert_no_overlap(label_boxes(fig, ax))


@pytest.fixture(scope="module")
def sweep_table():
    axes = [parse_set("models.opus.speeds.fast.output_tps_x=2:4:1"), parse_set("agent.steps[1].repeat.times=5,10")]
    return run_sweep(SCENARIOS / "coding-agent.yaml", axes, runs=100, workers=1).table


@pytest.mark.parametrize("time", ["mean", "p95"])
def test_frontier_figure(sweep_table, time):
    fig = plots.frontier_figure(sweep_table, time, "coding-agent")
    (ax,) = fig.axes
    assert ax.get_xlabel() == f"{time} wall time per run (s)" and "(USD)" in ax.get_ylabel()
    (on,) = by_gid(ax, "frontier-points")
    (off,) = by_gid(ax, "dominated-points")
    assert len(on.get_offsets()) == sweep_table[f"pareto_{time}"].sum()
    assert len(off.get_offsets()) == (~sweep_table[f"pareto_{time}"]).sum()
    assert by_gid(ax, "frontier")
    assert_no_overlap(label_boxes(fig, ax))


def test_sweep_figure(sweep_table):
    col = "models.opus.speeds.fast.output_tps_x"
    fig = plots.sweep_figure(sweep_table, col, "fast-mode speed-up (×)", "coding-agent")
    grid = fig.axes
    assert len(grid) == 2 * 2  # one row per value of the other swept column (repeat times 5, 10)
    variants = list(dict.fromkeys(sweep_table.variant))
    for ax in grid:
        assert ax.get_xlabel() == "fast-mode speed-up (×)"
        assert len(by_gid(ax, "line:")) == len(variants)
        assert len(by_gid(ax, "band:")) == len(variants)  # confidence bands
    assert grid[0].get_ylabel() == "wall time per run (s)" and grid[1].get_ylabel() == "mean cost per run (USD)"
    # the fast variant's wall time falls as its speed-up grows; the standard one does not move
    line = next(ln for ln in by_gid(grid[0], "line:fast") if ln.get_gid() == "line:fast")
    assert np.all(np.diff(line.get_ydata()) < 0)
    std = next(ln for ln in by_gid(grid[0], "line:standard"))
    assert np.ptp(std.get_ydata()) == 0
