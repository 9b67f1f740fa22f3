"""Trade-off tables of :mod:`agentsim.analysis.tradeoffs` and the displays of :mod:`agentsim.sim.payoff`,
on small tables whose every figure is worked out by hand (docs/validation.md §7).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from agentsim.analysis.tradeoffs import (
    PER_SUCCESS,
    break_even,
    cheapest_intervals,
    mark_pareto,
    pareto_mask,
    per_success,
    spend_sizing,
)
from agentsim.sim import payoff

# --------------------------------------------------------------------------- premium_text


def test_premium_text_says_always_pays_only_below_zero():
    money = "${:.2f}".format
    assert payoff.premium_text(0.0, money, "/h") == "$0.00/h"  # faster at the same price: $0 per hour saved
    assert payoff.premium_text(0.5, money, "/h") == "$0.50/h"
    assert payoff.premium_text(-0.01, money, "/h") == "always pays"
    assert payoff.premium_text(12.0, money) == "$12.00"


# --------------------------------------------------------------------------- per success


ROW = {
    "variant": "v",
    "wall_mean_s": 30.0,
    "cost_mean_usd": 0.2,
    "cost_ci95_lo_usd": 0.1,
    "cost_ci95_hi_usd": 0.3,
    "wall_p95_s": 50.0,
    "success_share": 0.5,
    "cost_per_success_usd": 0.4,
    "time_to_success_s": 60.0,
}


def test_per_success_rebases_cost_and_time_and_drops_the_cost_ci():
    out = per_success(ROW)
    assert out == {
        "variant": "v",
        "wall_mean_s": 60.0,
        "cost_mean_usd": 0.4,
        "wall_p95_s": 50.0,
        "success_share": 0.5,
        "cost_per_success_usd": 0.4,
        "time_to_success_s": 60.0,
        "cost_per_run_usd": 0.2,
        "wall_per_run_s": 30.0,
        "basis": PER_SUCCESS,
    }
    assert PER_SUCCESS == "per success"
    assert ROW["cost_mean_usd"] == 0.2  # the input row is left as it was


def test_per_success_without_successes_is_infinitely_dear_and_slow():
    out = per_success({**ROW, "success_share": 0.0, "cost_per_success_usd": None, "time_to_success_s": None})
    assert out["cost_mean_usd"] == math.inf
    assert out["wall_mean_s"] == math.inf
    assert (out["cost_per_run_usd"], out["wall_per_run_s"]) == (0.2, 30.0)


def test_per_success_leaves_a_row_without_success_unchanged():
    row = {"variant": "v", "wall_mean_s": 1.0, "cost_mean_usd": 2.0, "cost_ci95_lo_usd": 1.5}
    assert per_success(row) is row


# --------------------------------------------------------------------------- Pareto marks


def table(**cols) -> pd.DataFrame:
    return pd.DataFrame(cols, index=pd.Index([f"v{i}" for i in range(len(next(iter(cols.values()))))]))


def test_mark_pareto_per_success_column_for_per_run_rows_with_success():
    t = table(
        wall_mean_s=[10.0, 20.0, 30.0],
        wall_p95_s=[40.0, 25.0, 35.0],
        cost_mean_usd=[3.0, 2.0, 1.0],
        # per success: v0 never succeeds (None -> NaN, never on the frontier); v1 (40 s, $4) beats v2 (50 s, $5)
        time_to_success_s=[None, 40.0, 50.0],
        cost_per_success_usd=[None, 4.0, 5.0],
    )
    out = mark_pareto(t)
    assert out["pareto_mean"].tolist() == [True, True, True]
    # p95: v1 (25, $2) is dominated by nobody; v2 (35, $1) neither; v0 (40, $3) is beaten by v1
    assert out["pareto_p95"].tolist() == [False, True, True]
    assert out["pareto_per_success"].tolist() == [False, True, False]
    assert "pareto_per_success" not in t.columns  # a copy is marked


def test_mark_pareto_has_no_per_success_column_without_success_or_on_a_per_success_basis():
    t = table(wall_mean_s=[10.0, 20.0], wall_p95_s=[10.0, 20.0], cost_mean_usd=[1.0, 2.0])
    out = mark_pareto(t)
    assert list(out.columns) == ["wall_mean_s", "wall_p95_s", "cost_mean_usd", "pareto_mean", "pareto_p95"]
    assert out["pareto_mean"].tolist() == [True, False]
    rebased = t.assign(cost_per_success_usd=[1.0, 2.0], time_to_success_s=[10.0, 20.0], basis=PER_SUCCESS)
    assert "pareto_per_success" not in mark_pareto(rebased).columns


# --------------------------------------------------------------------------- break-even


def test_break_even_against_a_named_baseline_and_unknown_variants():
    t = pd.DataFrame(
        {"wall_mean_s": [600.0, 360.0, math.nan], "cost_mean_usd": [1.0, 5.0, math.nan]},
        index=pd.Index(["slow", "fast", "empty"], name="variant"),
    )
    be = break_even(t, baseline="fast", value_of_time=36.0)
    # slow against fast: 240 s slower, $4 cheaper: pays off below 3600 x 4 / 240 = $60/h
    assert be.loc["slow", "delta_time_s"] == 240.0
    assert be.loc["slow", "delta_cost_usd"] == -4.0
    assert be.loc["slow", "pays_off_when"] == "below"
    assert be.loc["slow", "break_even_usd_per_hour"] == pytest.approx(60.0, rel=1e-12)
    assert be.loc["slow", "pays_off"] is True  # $36/h < $60/h
    # total at $36/h: 1 + 36 x 600 / 3600 = 7; fast: 5 + 36 x 360 / 3600 = 8.6
    assert be.loc["slow", "total_usd_per_run"] == pytest.approx(7.0, rel=1e-12)
    assert be.loc["fast", "total_usd_per_run"] == pytest.approx(8.6, rel=1e-12)
    assert be.loc["fast", "pays_off_when"] == "baseline"
    assert be.loc["fast", "pays_off"] is None
    assert be.loc["empty", "pays_off_when"] == "unknown"
    assert be.loc["empty", "pays_off"] is None
    assert math.isnan(be.loc["empty", "break_even_usd_per_hour"])
    assert list(be.columns) == [
        "delta_time_s",
        "delta_cost_usd",
        "usd_per_hour_saved",
        "break_even_usd_per_hour",
        "pays_off_when",
        "pays_off",
        "total_usd_per_run",
    ]
    assert be.index.name == "variant"
    assert "pays_off" not in break_even(t).columns  # without a value of time
    # an unknown baseline makes every variant unknown
    assert set(break_even(t, baseline="empty")["pays_off_when"]) == {"unknown", "baseline"}


# --------------------------------------------------------------------------- cheapest intervals


def envelope(costs, walls) -> pd.DataFrame:
    return cheapest_intervals(table(cost_mean_usd=costs, wall_mean_s=walls))


def test_cheapest_intervals_of_two_lines_crossing_below_one_dollar_an_hour():
    # v0: $1.00, 3600 s; v1: $1.50, 0 s... lines 1 + V and 1.5: they cross at V = 0.5 USD/h
    env = envelope([1.0, 1.5], [3600.0, 0.0])
    assert env["variant"].tolist() == ["v0", "v1"]
    assert env["from_usd_per_hour"].tolist() == [0.0, 0.5]
    assert env["to_usd_per_hour"].tolist() == [0.5, math.inf]


def test_cheapest_intervals_with_close_cuts_probe_each_interval_inside_it():
    # totals at V (USD/h), walls in hours: v0 = 0 + 1.0 V, v1 = 2.5 + 0.75 V, v2 = 5.5 + 0.55 V
    # v0 = v1 at V = 10; v1 = v2 at V = 3 / 0.2 = 15; v0 = v2 at 5.5 / 0.45 = 12.2 (not on the envelope)
    env = envelope([0.0, 2.5, 5.5], [3600.0, 2700.0, 1980.0])
    assert env["variant"].tolist() == ["v0", "v1", "v2"]
    assert env["from_usd_per_hour"].tolist() == pytest.approx([0.0, 10.0, 15.0], rel=1e-12)
    assert env["to_usd_per_hour"].tolist()[:2] == pytest.approx([10.0, 15.0], rel=1e-12)


@pytest.mark.parametrize(("costs", "walls"), [([2.0], [10.0]), ([1.0, 2.0], [10.0, 20.0]), ([1.0, 1.0], [5.0, 5.0])])
def test_cheapest_intervals_with_one_winner_everywhere(costs, walls):
    # one variant, one that is both cheaper and faster, or identical variants (ties go to the first)
    env = envelope(costs, walls)
    assert env.to_dict("records") == [{"variant": "v0", "from_usd_per_hour": 0.0, "to_usd_per_hour": math.inf}]


def test_cheapest_intervals_of_variants_without_runs_are_empty_even_with_no_figures_at_all():
    for figures in ([math.nan, math.nan], [None, None]):
        env = envelope(pd.Series(figures, dtype=object).tolist(), pd.Series(figures, dtype=object).tolist())
        assert env.empty
        assert list(env.columns) == ["variant", "from_usd_per_hour", "to_usd_per_hour"]
    # a variant without runs is left out of the envelope of the others
    env = envelope([1.0, math.nan, 1.5], [3600.0, math.nan, 0.0])
    assert env["variant"].tolist() == ["v0", "v2"]


# --------------------------------------------------------------------------- spend sizing

SIZING = pd.DataFrame(
    {
        "wall_mean_s": [360.0, 720.0],
        "wall_p95_s": [400.0, 900.0],
        "cost_mean_usd": [0.5, 0.2],
        "cost_ci95_lo_usd": [0.4, 0.15],
        "cost_ci95_hi_usd": [0.6, 0.25],
    },
    index=pd.Index(["fast", "slow"], name="variant"),
)


def test_spend_sizing_every_column_by_hand():
    s = spend_sizing(SIZING, 1000, baseline="slow", value_of_time=10.0)
    # fast against slow at 1,000 runs a month: $500 (CI $400-600), 100 h of waiting, 200 h for slow:
    # 100 h saved for $300 more: $3 per saved hour; net at $10/h: 100 x 10 - 300 = $700
    assert s.loc["fast"].to_dict() == pytest.approx(
        {
            "runs_per_month": 1000.0,
            "api_usd_per_month": 500.0,
            "api_usd_per_month_lo": 400.0,
            "api_usd_per_month_hi": 600.0,
            "wait_hours_per_month": 100.0,
            "mean_wait_s": 360.0,
            "p95_wait_s": 400.0,
            "hours_saved_per_month": 100.0,
            "extra_usd_per_month": 300.0,
            "premium_usd_per_saved_hour": 3.0,
            "net_usd_per_month": 700.0,
        },
        rel=1e-12,
    )
    slow = s.loc["slow"]
    assert (slow["hours_saved_per_month"], slow["extra_usd_per_month"], slow["net_usd_per_month"]) == (0.0, 0.0, 0.0)
    assert math.isnan(slow["premium_usd_per_saved_hour"])  # no hour saved: no premium
    assert (slow["api_usd_per_month_lo"], slow["api_usd_per_month_hi"]) == pytest.approx((150.0, 250.0))
    assert s.index.name == "variant"
    assert list(s.columns)[:3] == ["runs_per_month", "api_usd_per_month", "api_usd_per_month_lo"]


def test_spend_sizing_defaults_to_the_first_variant_and_needs_no_ci_or_value_of_time():
    s = spend_sizing(SIZING[["wall_mean_s", "wall_p95_s", "cost_mean_usd"]], 3600)
    # slow against fast: 360 s x 3600 runs / 3600 = 360 h more waiting, $0.3 x 3600 = $1,080 less
    assert s.loc["slow", "hours_saved_per_month"] == pytest.approx(-360.0, rel=1e-12)
    assert s.loc["slow", "extra_usd_per_month"] == pytest.approx(-1080.0, rel=1e-12)
    assert math.isnan(s.loc["slow", "premium_usd_per_saved_hour"])
    assert "net_usd_per_month" not in s.columns
    assert "api_usd_per_month_lo" not in s.columns
    assert np.isclose(s.loc["fast", "wait_hours_per_month"], 360.0)


def test_break_even_columns_stay_numeric_when_no_variant_is_faster():
    # only slower variants: no USD per hour saved anywhere, and one "never" without a break-even value
    t = pd.DataFrame(
        {"wall_mean_s": [100.0, 136.0, 150.0], "cost_mean_usd": [1.0, 0.1, 2.0]},
        index=pd.Index(["base", "slow-cheap", "slow-dear"], name="variant"),
    )
    be = break_even(t)
    assert be["usd_per_hour_saved"].dtype == np.float64
    assert be["usd_per_hour_saved"].isna().all()
    assert be["pays_off_when"].tolist() == ["baseline", "below", "never"]
    # 36 s slower, $0.90 cheaper: below 3600 x 0.9 / 36 = $90/h
    assert be.loc["slow-cheap", "break_even_usd_per_hour"] == pytest.approx(90.0, rel=1e-12)
    only_base_and_never = break_even(t.loc[["base", "slow-dear"]])
    assert only_base_and_never["break_even_usd_per_hour"].dtype == np.float64
    assert only_base_and_never["break_even_usd_per_hour"].isna().all()


def test_break_even_is_unknown_when_either_figure_is_missing():
    t = pd.DataFrame(
        {"wall_mean_s": [100.0, 50.0, math.nan], "cost_mean_usd": [1.0, math.nan, 0.5]},
        index=["base", "no-cost", "no-time"],
    )
    be = break_even(t, value_of_time=10.0)
    assert be["pays_off_when"].tolist() == ["baseline", "unknown", "unknown"]
    assert be["pays_off"].tolist() == [None, None, None]


@pytest.mark.parametrize(("dt", "dc", "when", "v_star"), [(0.5, -0.1, "below", 720.0), (-0.5, 0.1, "above", 720.0)])
def test_break_even_within_a_second_of_the_baseline(dt, dc, when, v_star):
    # half a second slower for $0.10 less: pays off below 3600 x 0.1 / 0.5 = $720/h (and the mirror case)
    be = payoff.break_even(dt, dc)
    assert be.when == when
    assert be.usd_per_hour == pytest.approx(v_star, rel=1e-12)


def test_pareto_mask_reads_missing_figures_as_never_on_the_frontier():
    mask = pareto_mask([1.0, None, 3.0], [3.0, 1.0, None])
    assert mask.dtype == np.bool_
    assert mask.tolist() == [True, False, False]
    assert pareto_mask([2, 1], [1, 2]).tolist() == [True, True]  # integers are fine too


def test_pareto_mask_refuses_mismatched_or_2d_input():
    for t, c in (([1.0, 2.0], [1.0]), ([[1.0, 2.0]], [[1.0, 2.0]])):
        with pytest.raises(ValueError) as err:
            pareto_mask(t, c)
        assert str(err.value) == "time and cost must be 1-d and of the same length"


def test_spend_sizing_premium_for_less_than_an_hour_saved_a_month():
    # 100 runs a month, 18 s faster for $0.01 more a run: 0.5 h saved for $1: $2 per saved hour
    t = pd.DataFrame(
        {"wall_mean_s": [60.0, 42.0], "wall_p95_s": [60.0, 42.0], "cost_mean_usd": [0.05, 0.06]}, index=["base", "fast"]
    )
    s = spend_sizing(t, 100)
    assert s.loc["fast", "hours_saved_per_month"] == pytest.approx(0.5, rel=1e-12)
    assert s.loc["fast", "premium_usd_per_saved_hour"] == pytest.approx(2.0, rel=1e-12)
