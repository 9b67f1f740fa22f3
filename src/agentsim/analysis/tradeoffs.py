"""Trade-offs for a buying decision: Pareto frontier, break-even value of time, monthly spend.

Every option (a variant, or a variant at one grid point of a sweep) is a point
(wall time, cost per run). The questions a team lead asks, and how they are answered:

* **Which options are worth considering at all?** The *Pareto frontier*: the points
  that no other point beats on both time and cost. A point is *dominated* when another
  is at least as fast and at least as cheap, and strictly better on one of them.
  Time is the mean or the p95 wall time; cost is always the mean (what you pay in
  total is the mean times the number of runs).
* **Is the faster option worth its price?** With ``Δt`` and ``Δc`` the differences of
  mean wall time (s) and mean cost (USD) of a variant against the baseline, the
  variant costs ``Δc / (-Δt / 3600)`` USD per hour of waiting saved. Valuing an hour of
  waiting at ``V`` USD, a run's *total cost* is ``API cost + V × wall time / 3600``;
  the variant pays off when ``Δc + V × Δt / 3600 <= 0``, i.e. (for a faster variant)
  when ``V`` is at or above the *break-even value of time* ``V* = -3600 Δc / Δt``,
  which is the same number as the USD per hour saved. A slower variant pays off at
  or below ``V*`` (it is the cheaper choice when time is worth little). This is the
  rule of ``summary.json``'s ``pays_off`` (:mod:`agentsim.sim.payoff`).
* **Which option is cheapest overall at my value of time?** Each option's total cost
  is a line in ``V``; the lower envelope of the lines says which option is cheapest
  for each range of ``V`` (:func:`cheapest_intervals`).
* **What will it cost per month?** With ``N`` runs per month (:mod:`agentsim.analysis.volume`:
  an option, seats × runs per seat × working days, or ``workload.volume``): API spend
  ``N × mean cost``, waiting ``N × mean wall time / 3600`` hours, hours saved against the
  baseline, and the premium paid per saved hour
  (:func:`spend_sizing`). This counts every run's wall time as someone's waiting.

When the scenario defines success (it has a ``fail`` step), every decision is made **per
successful task** (:func:`per_success`): a variant's cost is its cost per success (all runs' cost /
successful runs) and its mean time its time to success (all runs' wall time / successful runs), i.e.
what one delivered result costs when failed runs are retried. A cheap model that fails more often, or
loops longer, can win on cost per run and lose on cost per success.

Sweeps (:mod:`agentsim.analysis.sweeps`) build on this module (never the other way round).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pandas as pd

from agentsim.model import special
from agentsim.model.scenario import Scenario
from agentsim.sim import payoff
from agentsim.sim.results import Results, summary_frame, summary_rows
from agentsim.sim.summary_model import Summary

__all__ = [
    "break_even",
    "cheapest_intervals",
    "mark_pareto",
    "paired_deltas",
    "pareto_mask",
    "per_success",
    "runs_per_month",
    "spend_sizing",
    "time_basis",
    "time_column",
    "variant_table",
    "waiting_note",
]

TIME_COLUMNS = {"mean": "wall_mean_s", "p95": "wall_p95_s"}
WAITING_COLUMNS = {"mean": "waiting_mean_s", "p95": "waiting_p95_s"}


def time_column(table: pd.DataFrame, stat: str = "mean") -> str:
    """The column of the time a table's variants are weighed on (``mean`` or ``p95``): the person's waiting
    where the scenario has turns (``time_basis: waiting_s``, contract v1.3), else the wall time; a table put on
    a per-success basis (:func:`per_success`) weighs the time to success."""
    if "basis" not in table.columns and "time_basis" in table.columns and (table["time_basis"] == "waiting_s").all():
        return WAITING_COLUMNS[stat]
    return TIME_COLUMNS[stat]


def waiting_note(basis: str) -> str:
    """What the hours of waiting of a table are, in words (contract v1.3: a conversation's pauses are not waiting)."""
    if basis == "waiting_s":
        return "waiting is the person's turns, from each message to the answer, not their pauses between turns"
    return "every run's wall time counts as waiting"


def time_basis(table: pd.DataFrame) -> str:
    """``waiting_s`` or ``wall_time_s``: what :func:`time_column` reads (per success: the wall time to success)."""
    return "waiting_s" if time_column(table) == WAITING_COLUMNS["mean"] else "wall_time_s"


# --------------------------------------------------------------------------- Pareto


def pareto_mask(time, cost) -> np.ndarray:
    """Which points are on the Pareto frontier of (time, cost), both to be minimised.

    A point is on the frontier when no other point is at least as good on both and
    strictly better on one. Identical points are all on it (none beats the other).
    Points with a NaN coordinate are never on it.
    """
    t = np.asarray(time, dtype=np.float64)
    c = np.asarray(cost, dtype=np.float64)
    if t.shape != c.shape or t.ndim != 1:
        raise ValueError("time and cost must be 1-d and of the same length")
    mask = np.zeros(t.size, dtype=bool)
    idx = np.flatnonzero(np.isfinite(t) & np.isfinite(c))
    order = idx[np.lexsort((c[idx], t[idx]))]  # by time, then cost
    best = math.inf  # lowest cost among strictly faster points
    i = 0
    while i < order.size:
        j = i
        while j < order.size and t[order[j]] == t[order[i]]:
            j += 1
        group = order[i:j]
        low = c[group[0]]
        if low < best:
            mask[group[c[group] == low]] = True
            best = low
        i = j
    return mask


PER_SUCCESS = "per success"  # the ``basis`` of a table ranked per successful task


def per_success(row: dict[str, Any]) -> dict[str, Any]:
    """A summary row (:func:`summary_rows`) put on a per-success basis, when it reports success.

    ``cost_mean_usd`` becomes the cost per success and ``wall_mean_s`` the time to success (``inf``
    when no run succeeded), so that Pareto frontiers, break-even, spend sizing and the optimizer rank
    by them; the per-run figures stay as ``cost_per_run_usd`` and ``wall_per_run_s``, and ``basis``
    says ``per success``. The cost's confidence interval (of the per-run mean) is dropped. A row
    without success figures is returned unchanged.
    """
    if "cost_per_success_usd" not in row:
        return row
    out = {k: v for k, v in row.items() if k not in ("cost_ci95_lo_usd", "cost_ci95_hi_usd")}
    out["cost_per_run_usd"] = row["cost_mean_usd"]
    out["wall_per_run_s"] = row["wall_mean_s"]
    cps, tts = row["cost_per_success_usd"], row["time_to_success_s"]
    out["cost_mean_usd"] = math.inf if cps is None else cps
    out["wall_mean_s"] = math.inf if tts is None else tts
    out["basis"] = PER_SUCCESS
    return out


def mark_pareto(table: pd.DataFrame) -> pd.DataFrame:
    """Add ``pareto_mean`` and ``pareto_p95`` columns: on the frontier of (mean or p95 wall time, mean cost);
    and ``pareto_per_success`` (time to success, cost per success) for per-run rows that report success."""
    out = table.copy()
    for key in TIME_COLUMNS:
        out[f"pareto_{key}"] = pareto_mask(out[time_column(out, key)].to_numpy(), out["cost_mean_usd"].to_numpy())
    if "cost_per_success_usd" in out.columns and "basis" not in out.columns:
        # rows per run (a sweep table) of a scenario with success: also the frontier per successful task
        out["pareto_per_success"] = pareto_mask(
            out["time_to_success_s"].to_numpy(dtype=np.float64, na_value=np.nan),
            out["cost_per_success_usd"].to_numpy(dtype=np.float64, na_value=np.nan),
        )
    return out


# --------------------------------------------------------------------------- per-variant tables


def variant_table(res: Results, doc: Summary | dict | None = None) -> pd.DataFrame:
    """One row per variant (index) with every summary figure (:func:`summary_rows`) and Pareto marks.

    When the scenario defines success the rows are per successful task (:func:`per_success`) and the
    table's ``attrs["basis"]`` is ``"per success"``. ``doc``: the summary (``res.summary_model()``, or its
    dict) when already made.
    """
    rows = [per_success(r) for r in summary_rows(doc if doc is not None else res.summary_model())]
    table = mark_pareto(summary_frame(rows)).set_index("variant")
    if rows and rows[0].get("basis") == PER_SUCCESS:
        table.attrs["basis"] = PER_SUCCESS
    table.attrs["time_basis"] = time_basis(table)
    return table


def paired_deltas(runs: pd.DataFrame, baseline: str | None = None) -> pd.DataFrame:
    """Δ mean wall time and Δ mean cost against the baseline with 95% CIs from paired runs.

    Variants share their random numbers (common random numbers), so run *r* of two
    variants differ only by the variant: the per-run differences have a much smaller
    spread than either variant, and their Student-t interval is the honest CI of Δ.
    Runs that did not complete in both variants are left out (their mean difference is
    then not exactly the difference of the summaries' means). In a workload, run *r* of
    two variants is not the same draw, so this pairing means little there.
    """
    from agentsim.analysis.timeline import summarised

    names = list(dict.fromkeys(runs["variant"]))
    baseline = baseline or names[0]
    runs = summarised(runs)
    base = runs[runs["variant"] == baseline].set_index("run").sort_index()
    rows = []
    for name in names:
        df = runs[runs["variant"] == name].set_index("run").sort_index()
        both = df.index.intersection(base.index)  # runs completed in both variants
        row: dict[str, Any] = {"variant": name}
        for col, key in (("wall_time_s", "delta_time_s"), ("cost_usd", "delta_cost_usd")):
            d = (df.loc[both, col] - base.loc[both, col]).to_numpy()
            mean = float(d.mean())
            t = float(special.stdtrit(d.size - 1, 0.975)) if d.size > 1 else 0.0  # = stats.t.ppf, bit for bit
            half = t * float(d.std(ddof=1)) / math.sqrt(d.size) if d.size > 1 else 0.0
            row[key] = mean
            row[f"{key}_lo"] = mean - half
            row[f"{key}_hi"] = mean + half
        rows.append(row)
    return pd.DataFrame(rows).set_index("variant")


# --------------------------------------------------------------------------- break-even


def break_even(table: pd.DataFrame, baseline: str | None = None, value_of_time: float | None = None) -> pd.DataFrame:
    """Per variant against the baseline: Δ time, Δ cost, USD per hour saved, break-even value of time.

    ``table`` has one row per variant (index) with ``wall_mean_s`` and ``cost_mean_usd``.
    Columns: ``delta_time_s``, ``delta_cost_usd``, ``usd_per_hour_saved`` (NaN unless the
    variant is faster), ``break_even_usd_per_hour`` (``V*``; NaN when Δt = 0),
    ``pays_off_when`` (``above``/``below`` V*, ``always``, ``never``, ``baseline``, or ``unknown`` when a
    variant or the baseline completed no run) and,
    with a ``value_of_time``, ``pays_off`` and ``total_usd_per_run`` at that value.
    """
    baseline = baseline if baseline is not None else table.index[0]
    time = time_column(table)
    t0, c0 = float(table.loc[baseline, time]), float(table.loc[baseline, "cost_mean_usd"])
    rows = []
    for name, r in table.iterrows():
        dt, dc = float(r[time]) - t0, float(r["cost_mean_usd"]) - c0
        per_hour = payoff.usd_per_hour_saved(dt, dc)
        if name == baseline:
            when, v_star = "baseline", None
        elif not (math.isfinite(dt) and math.isfinite(dc)):
            when, v_star = "unknown", None  # this variant or the baseline completed no run
        else:
            when, v_star = payoff.break_even(dt, dc)
        row = {
            "variant": name,
            "delta_time_s": dt,
            "delta_cost_usd": dc,
            "usd_per_hour_saved": per_hour if per_hour is not None else math.nan,
            "break_even_usd_per_hour": v_star if v_star is not None else math.nan,
            "pays_off_when": when,
        }
        if value_of_time is not None:
            row["pays_off"] = payoff.pays_off(dt, dc, value_of_time) if when not in ("baseline", "unknown") else None
            row["total_usd_per_run"] = float(r["cost_mean_usd"]) + value_of_time * float(r[time]) / 3600.0
        rows.append(row)
    out = pd.DataFrame(rows).set_index("variant")
    out.attrs["time_basis"] = time_basis(table)  # what the hours saved are of
    return out


def cheapest_intervals(table: pd.DataFrame) -> pd.DataFrame:
    """For which values of time (USD/h) each variant has the lowest total cost per run.

    Total cost of variant *i* at value ``V``: ``cost_i + V × wall_i / 3600``, a line in
    ``V``. Returns the lower envelope on ``[0, ∞)`` as rows ``variant, from_usd_per_hour,
    to_usd_per_hour`` (the last ``to`` is ``inf``). Ties go to the earlier variant; totals and crossings
    within a relative 1e-9 (:data:`agentsim.sim.payoff.TIE_TOLERANCE`) count as ties, so rounding makes no
    sliver of an interval where three lines meet.
    """
    time = time_column(table)
    table = table[np.isfinite(table["cost_mean_usd"].to_numpy(np.float64) + table[time].to_numpy(np.float64))]
    if table.empty:  # no variant completed a run: nothing is cheapest
        return pd.DataFrame(columns=["variant", "from_usd_per_hour", "to_usd_per_hour"])
    names = list(table.index)
    c = table["cost_mean_usd"].to_numpy(dtype=np.float64)
    t = table[time].to_numpy(dtype=np.float64) / 3600.0
    cuts = {0.0}
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            if t[i] != t[j]:
                v = (c[j] - c[i]) / (t[i] - t[j])
                if v > 0 and math.isfinite(v):
                    cuts.add(float(v))
    edges: list[float] = []
    for v in sorted(cuts):  # crossings a rounding error apart (three lines meeting at one V) are one cut
        if not edges or v - edges[-1] > payoff.TIE_TOLERANCE * v:
            edges.append(v)
    probes = [(a + b) / 2 for a, b in itertools.pairwise(edges)] + [edges[-1] + max(1.0, edges[-1])]
    rows: list[dict[str, Any]] = []
    for lo, probe in zip(edges, probes, strict=True):
        total = c + probe * t
        low = float(total.min())
        best = int(np.flatnonzero(total <= low + payoff.TIE_TOLERANCE * abs(low))[0])  # ties: the earlier variant
        if rows and rows[-1]["variant"] == names[best]:
            continue
        if rows:
            rows[-1]["to_usd_per_hour"] = lo
        rows.append({"variant": names[best], "from_usd_per_hour": lo, "to_usd_per_hour": math.inf})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- monthly spend


DAYS_PER_MONTH = 30.0  # as Volume.per_month counts runs_per_day


def runs_per_month(
    scenario: Scenario,
    override: float | None = None,
    *,
    seats: float | None = None,
    runs_per_seat_per_day: float | None = None,
    working_days: float | None = None,
) -> float:
    """Runs per month by the one rule of :func:`agentsim.analysis.volume.monthly_volume` (the number only;
    that function also says how it was derived). ValueError when no volume is given."""
    from agentsim.analysis.volume import monthly_volume

    return monthly_volume(
        scenario, override, seats=seats, runs_per_seat_per_day=runs_per_seat_per_day, working_days=working_days
    ).runs_per_month


def spend_sizing(
    table: pd.DataFrame, per_month: float, baseline: str | None = None, value_of_time: float | None = None
) -> pd.DataFrame:
    """Monthly API spend, hours of waiting, hours saved and the premium per saved hour, per variant.

    ``table``: one row per variant (index) with ``wall_mean_s``, ``wall_p95_s``,
    ``cost_mean_usd`` and optionally ``cost_ci95_lo_usd``/``cost_ci95_hi_usd``.
    ``premium_usd_per_saved_hour`` = extra spend / hours saved (NaN unless hours are
    saved); ``net_usd_per_month`` = hours saved × value of time − extra spend (with a
    value of time; positive means the variant is worth it).
    """
    baseline = baseline if baseline is not None else table.index[0]
    n = float(per_month)
    mean, p95 = time_column(table, "mean"), time_column(table, "p95")
    base_cost = float(table.loc[baseline, "cost_mean_usd"]) * n
    base_hours = float(table.loc[baseline, mean]) * n / 3600.0
    rows = []
    for name, r in table.iterrows():
        spend = float(r["cost_mean_usd"]) * n
        hours = float(r[mean]) * n / 3600.0
        saved = base_hours - hours
        extra = spend - base_cost
        row: dict[str, Any] = {
            "variant": name,
            "runs_per_month": n,
            "api_usd_per_month": spend,
        }
        if "cost_ci95_lo_usd" in table.columns:
            row["api_usd_per_month_lo"] = float(r["cost_ci95_lo_usd"]) * n
            row["api_usd_per_month_hi"] = float(r["cost_ci95_hi_usd"]) * n
        row.update(
            {
                "wait_hours_per_month": hours,
                "mean_wait_s": float(r[mean]),
                "p95_wait_s": float(r[p95]),
                "hours_saved_per_month": saved,
                "extra_usd_per_month": extra,
                "premium_usd_per_saved_hour": extra / saved if saved > 0 else math.nan,
            }
        )
        if value_of_time is not None:
            row["net_usd_per_month"] = saved * value_of_time - extra
        rows.append(row)
    out = pd.DataFrame(rows).set_index("variant")
    out.attrs["time_basis"] = time_basis(table)  # waiting_s: the person's turns, their pauses left out
    return out
