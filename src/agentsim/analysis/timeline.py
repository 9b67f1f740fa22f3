"""The timeline of a run, and its critical path, rebuilt from the ``calls`` and ``spans`` tables.

Every model call, tool run and wait of a run is an *activity* with a start and an
end (a call starts when it is submitted, so its queueing is part of it). The
*critical path* is the chain of activities that decided when the run ended:
start from the activity that ends last, and step back, each time to the activity
that ended exactly when the current one started (the one it was waiting for: the
previous step, or the last branch of a parallel join to finish). Activities are
exact in time: a step starts at the very float at which what it waited for ended,
so the chain is found by equality, not by closeness. When several activities end
at that instant (parallel branches with identical times), the completed one that
comes first in plan order is taken.

Speeding up an activity that is not on the critical path does not shorten the
run: that is why the optimiser (:mod:`agentsim.analysis.optimize`) measures candidates by
simulation, and why :func:`critical_share` reports, per step, how much of the
wall time it accounts for on the critical path.

Lanes (for drawing a Gantt chart): activities that overlap in time go to separate
lanes. With the plan at hand, each parallel branch (or fan-out copy) keeps one lane
and steps outside any branch are on lane 0 (``main``).
"""

from __future__ import annotations

import bisect
import itertools
from typing import Any

import numpy as np
import pandas as pd

from agentsim.sim import slots

__all__ = [
    "SEGMENTS",
    "activities",
    "branch_context",
    "critical_path",
    "critical_share",
    "run_timeline",
    "span_slots",
    "summarised",
]

SEGMENTS = slots.BREAKDOWN  # the critical-path breakdown categories every run has


def summarised(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs that summaries describe: completed ones (and, in a workload, those counted in its window),
    as ``Results.summary_dict`` selects them."""
    keep = np.ones(len(runs), dtype=bool)
    if "status" in runs:
        keep &= (runs["status"] == 0).to_numpy()
    if "counted" in runs:
        keep &= runs["counted"].to_numpy(dtype=bool)
    return runs if keep.all() else runs[keep]


def span_slots() -> list[str]:
    """The breakdown slots a span's time can go to (``tool``, ``wait``, then each step kind's own: ``listen``)."""
    return [name for name in slots.names() if name not in slots.CALL_SLOTS]


def activities(calls: pd.DataFrame, spans: pd.DataFrame) -> pd.DataFrame:
    """Calls and spans (tools, waits, listens...) as one table of activities with their segments.

    Columns: ``variant, run, node, instance, step, kind, status, start, end`` and the segment durations
    ``queue, ttft, decode`` (a call's) and one per slot a span's time can go to (:func:`span_slots`: ``tool,
    wait, listen``...; a span's whole time is in its ``slot``, as in the breakdown) (s); ``model``/``speed``
    for calls.
    """
    span_cols = span_slots()
    parts = [p for p in (_call_rows(calls, span_cols), _span_rows(spans, span_cols)) if len(p)]
    if not parts:
        return _call_rows(calls, span_cols)
    out = pd.concat(parts, ignore_index=True)
    out["_v"] = pd.Categorical(
        out["variant"],
        categories=list(dict.fromkeys(calls["variant"]).keys())
        + [v for v in dict.fromkeys(spans["variant"]) if v not in set(calls["variant"])],
    )
    out = out.sort_values(["_v", "run", "start", "node", "instance"], kind="stable", ignore_index=True)
    return out.drop(columns="_v")


def _common(table: pd.DataFrame) -> dict:
    return {k: table[k].to_numpy() for k in ("variant", "run", "node", "instance", "step")}


def _call_rows(calls: pd.DataFrame, span_cols: list[str]) -> pd.DataFrame:
    """The calls as activities: queue (submit to start), TTFT and decode; no span slot."""
    c = pd.DataFrame(
        {
            **_common(calls),
            "kind": "call",
            "status": calls["status"].to_numpy(),
            "start": calls["t_submit"].to_numpy(),
            "t_start": calls["t_start"].to_numpy(),
            "t_first": calls["t_first_token"].to_numpy(),
            "end": calls["t_end"].to_numpy(),
            "model": calls["model"].to_numpy(),
            "speed": calls["speed"].to_numpy(),
        }
    )
    # A call cancelled before its first token has no t_first: all of it so far is TTFT.
    first = np.fmin(c["t_first"].to_numpy(), c["end"].to_numpy())
    first = np.where(np.isnan(first), c["end"].to_numpy(), first)
    c["queue"] = c["t_start"] - c["start"]
    c["ttft"] = first - c["t_start"]
    c["decode"] = c["end"] - first
    for k in span_cols:
        c[k] = 0.0
    return c


def _span_rows(spans: pd.DataFrame, span_cols: list[str]) -> pd.DataFrame:
    """The spans as activities: all of a span's time in its node's slot, whatever its kind."""
    s = pd.DataFrame(
        {
            **_common(spans),
            "kind": spans["kind"].to_numpy(),
            "status": spans["status"].to_numpy(),
            "start": spans["t_start"].to_numpy(),
            "t_start": spans["t_start"].to_numpy(),
            "t_first": np.nan,
            "end": spans["t_end"].to_numpy(),
            "model": None,
            "speed": None,
        }
    )
    dur = (s["end"] - s["start"]).to_numpy()
    for k in ("queue", "ttft", "decode"):
        s[k] = 0.0
    slot = (spans["slot"] if "slot" in spans else spans["kind"]).to_numpy()  # (a table of an older version)
    for k in span_cols:
        s[k] = np.where(slot == k, dur, 0.0)
    return s


def critical_path(start: np.ndarray, end: np.ndarray, ok: np.ndarray | None = None) -> np.ndarray:
    """Indices (in time order) of the activities on the critical path of one run.

    ``start``/``end`` are the activities' times, listed in plan order (node, instance);
    ``ok`` marks completed ones (preferred over cancelled ones ending at the same instant).
    """
    n = len(start)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    ok = np.ones(n, dtype=bool) if ok is None else np.asarray(ok, dtype=bool)
    by_end = sorted(range(n), key=lambda i: (end[i], bool(ok[i]), -i))  # ascending; last = preferred at ties
    ends = [end[i] for i in by_end]
    cur = by_end[-1]
    path = [cur]
    seen = {cur}
    while True:
        s = start[cur]
        hi = bisect.bisect_right(ends, s)  # activities ending at or before s
        if hi == 0:
            break
        t = ends[hi - 1]
        if t != s:  # nothing ended exactly when this began: this is where the run started
            break
        j = hi - 1
        nxt = None
        while j >= 0 and ends[j] == t:
            if by_end[j] not in seen:
                nxt = by_end[j]
                break
            j -= 1
        if nxt is None:
            break
        path.append(nxt)
        seen.add(nxt)
        cur = nxt
    return np.array(path[::-1], dtype=np.int64)


def _lanes(start: np.ndarray, end: np.ndarray, context: np.ndarray | None = None) -> np.ndarray:
    """Lane of each activity (given in start order).

    ``context`` (optional, from the plan): the id of the parallel branch or fan-out body
    an activity is in, -1 outside any. An activity continues in the lane of the
    activity of its own branch that ended exactly when it started; one outside any
    branch goes to lane 0; otherwise the lowest free lane. Without ``context``, an
    activity starting when nothing else runs goes to lane 0, otherwise it continues
    the lane that ended exactly at its start.
    """
    lane_end: list[float] = []
    lane_ctx: list[int] = []
    lanes = np.zeros(len(start), dtype=np.int64)
    for i in range(len(start)):
        s = start[i]
        ctx = -2 if context is None else int(context[i])
        free = [k for k, e in enumerate(lane_end) if e <= s]
        if ctx == -1 or (ctx == -2 and len(free) == len(lane_end)):
            k = 0 if (not lane_end or 0 in free) else (free[0] if free else len(lane_end))
        else:
            exact = [k for k in free if lane_end[k] == s and (ctx == -2 or lane_ctx[k] == ctx)]
            k = exact[0] if exact else (free[0] if free else len(lane_end))
        if k == len(lane_end):
            lane_end.append(end[i])
            lane_ctx.append(ctx)
        else:
            lane_end[k] = end[i]
            lane_ctx[k] = ctx
        lanes[i] = k
    return lanes


def branch_context(plan) -> dict[int, int]:
    """Node id -> id of the innermost parallel branch or fan-out body around it (-1: none)."""
    out: dict[int, int] = {}

    def walk(node, ctx: int) -> None:
        out[node.id] = ctx
        for child in node.children():  # a node whose children run beside each other gives each a lane
            walk(child, child.id if node.lanes else ctx)

    walk(plan.root, -1)
    return out


def run_timeline(calls: pd.DataFrame, spans: pd.DataFrame, run: int = 0, plan=None) -> pd.DataFrame:
    """The activities of one run in every variant, with ``lane`` and ``critical`` columns.

    Times are from the run's start. With the ``plan`` (``Results.plan``), each parallel
    branch keeps a lane of its own.
    """
    acts = activities(calls[calls["run"] == run], spans[spans["run"] == run])
    ctx_of = branch_context(plan) if plan is not None else None
    frames = []
    for _, df in acts.groupby("variant", sort=False):
        df = df.reset_index(drop=True)
        t0 = float(df["start"].min())  # the run's start (runs of a workload start later than 0)
        for c in ("start", "t_start", "t_first", "end"):
            df[c] = df[c] - t0
        order = df.sort_values(["node", "instance"], kind="stable").index.to_numpy()
        crit = critical_path(
            df["start"].to_numpy()[order], df["end"].to_numpy()[order], (df["status"] == "ok").to_numpy()[order]
        )
        df["critical"] = False
        df.loc[order[crit], "critical"] = True
        ctx = None if ctx_of is None else np.array([ctx_of.get(int(n), -1) for n in df["node"]])
        df["lane"] = _lanes(df["start"].to_numpy(), df["end"].to_numpy(), ctx)
        frames.append(df)
    if not frames:
        return acts.assign(critical=pd.Series(dtype=bool), lane=pd.Series(dtype=np.int64))
    return pd.concat(frames, ignore_index=True)


def critical_share(
    calls: pd.DataFrame, spans: pd.DataFrame, runs: pd.DataFrame, max_runs: int | None = 500, progress=None
) -> pd.DataFrame:
    """Per variant and step: time spent, time on the critical path, and its share of the wall time.

    Columns: ``variant, step, kind, busy_s`` (mean seconds per run the step's activities
    took), ``critical_s`` (mean seconds per run it was on the critical path), ``share``
    (``critical_s`` / mean wall time) and ``on_path`` (fraction of runs in which it was
    on the critical path at least once). The runs summaries describe (:func:`summarised`)
    among the first ``max_runs`` are used. ``progress(done, total)``: runs (of every variant) walked so far.
    """
    runs = summarised(runs)
    if max_runs is not None:
        runs = runs[runs["run"] < max_runs]
    keys = pd.MultiIndex.from_frame(runs[["variant", "run"]].astype({"variant": object}))
    calls = calls[pd.MultiIndex.from_frame(calls[["variant", "run"]].astype({"variant": object})).isin(keys)]
    spans = spans[pd.MultiIndex.from_frame(spans[["variant", "run"]].astype({"variant": object})).isin(keys)]
    acts = activities(calls, spans)
    acts["_v"] = pd.Categorical(acts["variant"], categories=list(dict.fromkeys(acts["variant"])))
    acts = acts.sort_values(["_v", "run", "node", "instance"], kind="stable", ignore_index=True).drop(columns="_v")
    acts["critical"] = False
    crit_col = np.zeros(len(acts), dtype=bool)
    keys = acts[["variant", "run"]]
    bounds = np.flatnonzero((keys != keys.shift()).any(axis=1).to_numpy())
    bounds = np.append(bounds, len(acts))
    start, end, ok = acts["start"].to_numpy(), acts["end"].to_numpy(), (acts["status"] == "ok").to_numpy()
    for i, (a, b) in enumerate(itertools.pairwise(bounds)):
        crit_col[a + critical_path(start[a:b], end[a:b], ok[a:b])] = True
        if progress is not None and i % 100 == 0:
            progress(i, len(bounds) - 1)
    acts["critical"] = crit_col
    acts["dur"] = acts["end"] - acts["start"]
    acts["crit_dur"] = np.where(crit_col, acts["dur"], 0.0)
    rows: list[dict[str, Any]] = []
    for variant, df in acts.groupby("variant", sort=False):
        r = runs[runs["variant"] == variant]
        n, wall = len(r), float(r["wall_time_s"].mean())
        for (step, kind), g in df.groupby(["step", "kind"], sort=False):
            rows.append(
                {
                    "variant": variant,
                    "step": step,
                    "kind": kind,
                    "busy_s": float(g["dur"].sum()) / n,
                    "critical_s": float(g["crit_dur"].sum()) / n,
                    "share": float(g["crit_dur"].sum()) / n / wall if wall > 0 else np.nan,
                    "on_path": g.loc[g["critical"], "run"].nunique() / n,
                }
            )
    return pd.DataFrame(rows)
