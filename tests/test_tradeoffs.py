"""Pareto frontier, break-even, cheapest variant by value of time, spend sizing, paired deltas."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agentsim.analysis.tradeoffs import (
    break_even,
    cheapest_intervals,
    mark_pareto,
    paired_deltas,
    pareto_mask,
    runs_per_month,
    spend_sizing,
    variant_table,
)
from conftest import SCENARIOS, make, model, run, scenario

# --------------------------------------------------------------------------- Pareto


def test_pareto_on_a_hand_made_set():
    # (time, cost): the frontier is a, b, c (and a's twin a2); the rest are dominated.
    pts = {
        "a": (10, 9),
        "a2": (10, 9),  # identical to a: neither beats the other, both stay
        "b": (20, 4),
        "c": (40, 1),
        "d": (20, 5),  # same time as b, dearer
        "e": (30, 4),  # same cost as b, slower
        "f": (50, 2),  # slower and dearer than c
        "g": (15, 9),  # same cost as a, slower
        "h": (math.nan, 0.1),  # unknown time: never on the frontier
    }
    mask = pareto_mask([p[0] for p in pts.values()], [p[1] for p in pts.values()])
    on = {k for k, m in zip(pts, mask, strict=True) if m}
    assert on == {"a", "a2", "b", "c"}


def test_pareto_empty_and_single():
    assert pareto_mask([], []).tolist() == []
    assert pareto_mask([3.0], [2.0]).tolist() == [True]


def _dominated(i, t, c) -> bool:
    return any(t[j] <= t[i] and c[j] <= c[i] and (t[j] < t[i] or c[j] < c[i]) for j in range(len(t)) if j != i)


coords = st.lists(st.tuples(st.integers(0, 12).map(float), st.integers(0, 12).map(float)), min_size=1, max_size=40)


@given(coords)
@example([(1.0, 1.0), (1.0, 1.0)])  # twins: both on the frontier
@example([(0.0, 5.0), (0.0, 3.0), (2.0, 3.0)])  # a tie in time, then a tie in cost
@example([(4.0, 0.0), (0.0, 4.0), (2.0, 2.0), (2.0, 2.0), (3.0, 3.0)])
@example([(3.0, 0.0)])
@settings(max_examples=300, deadline=None)
def test_frontier_has_no_dominated_point_and_covers_the_rest(points):
    t = np.array([p[0] for p in points])
    c = np.array([p[1] for p in points])
    mask = pareto_mask(t, c)
    for i in range(len(points)):
        # on the frontier exactly when no other point dominates it (the definition, checked pairwise)
        assert mask[i] == (not _dominated(i, t, c))
    assert mask.any()


def test_mark_pareto_adds_both_columns():
    df = pd.DataFrame({"wall_mean_s": [1.0, 2.0, 3.0], "wall_p95_s": [5.0, 2.0, 3.0], "cost_mean_usd": [3.0, 2.0, 1.0]})
    out = mark_pareto(df)
    assert out["pareto_mean"].tolist() == [True, True, True]
    assert out["pareto_p95"].tolist() == [False, True, True]  # (5, 3) is beaten by (2, 2)


# --------------------------------------------------------------------------- break-even

TABLE = pd.DataFrame(
    {
        # baseline: 600 s, $1; fast: 360 s, $5 (saves 1/15 h for $4: $60/h);
        # cheap-slow: 900 s, $0.25; worse: 700 s, $2; free-lunch: 500 s, $0.5
        "wall_mean_s": [600.0, 360.0, 900.0, 700.0, 500.0],
        "wall_p95_s": [700.0, 400.0, 1000.0, 800.0, 550.0],
        "cost_mean_usd": [1.0, 5.0, 0.25, 2.0, 0.5],
    },
    index=pd.Index(["base", "fast", "cheap-slow", "worse", "free-lunch"], name="variant"),
)


def test_break_even_hand_computed():
    be = break_even(TABLE, value_of_time=100.0)
    assert be.loc["fast", "delta_time_s"] == -240.0
    assert be.loc["fast", "delta_cost_usd"] == 4.0
    assert be.loc["fast", "usd_per_hour_saved"] == pytest.approx(60.0)
    assert be.loc["fast", "break_even_usd_per_hour"] == pytest.approx(60.0)
    assert be.loc["fast", "pays_off_when"] == "above"
    # slower and cheaper: $0.75 saved for 300 s lost -> pays off below $9/h
    assert be.loc["cheap-slow", "break_even_usd_per_hour"] == pytest.approx(9.0)
    assert be.loc["cheap-slow", "pays_off_when"] == "below"
    assert math.isnan(be.loc["cheap-slow", "usd_per_hour_saved"])
    assert be.loc["worse", "pays_off_when"] == "never"
    assert be.loc["free-lunch", "pays_off_when"] == "always"
    assert be.loc["base", "pays_off_when"] == "baseline"


@pytest.mark.parametrize("vot", [0.0, 8.0, 9.0, 10.0, 59.0, 60.0, 61.0, 1000.0])
def test_pays_off_agrees_with_total_cost(vot):
    be = break_even(TABLE, value_of_time=vot)
    total = TABLE["cost_mean_usd"] + vot * TABLE["wall_mean_s"] / 3600
    for name in TABLE.index[1:]:
        # ties (at the break-even values 9 and 60 USD/h) pay off, as summary.json says
        assert be.loc[name, "pays_off"] == bool(total[name] <= total["base"] + 1e-12), name
        assert be.loc[name, "total_usd_per_run"] == pytest.approx(total[name])


def test_cheapest_intervals_match_a_fine_grid():
    env = cheapest_intervals(TABLE)
    assert env["from_usd_per_hour"].iloc[0] == 0.0 and math.isinf(env["to_usd_per_hour"].iloc[-1])
    assert (env["from_usd_per_hour"].iloc[1:].to_numpy() == env["to_usd_per_hour"].iloc[:-1].to_numpy()).all()
    c = TABLE["cost_mean_usd"].to_numpy()
    t = TABLE["wall_mean_s"].to_numpy() / 3600
    vs = np.linspace(0.01, 500, 997)
    expected = TABLE.index[np.argmin(c[:, None] + vs[None, :] * t[:, None], axis=0)]
    found = env["variant"].to_numpy()[np.searchsorted(env["from_usd_per_hour"].to_numpy(), vs, side="right") - 1]
    assert list(found) == list(expected)
    # by hand: cheap-slow up to 3600*(0.5-0.25)/(900-500) = $2.25/h, then free-lunch up to
    # 3600*(5-0.5)/(500-360) = $115.71/h, then fast
    assert env["variant"].tolist() == ["cheap-slow", "free-lunch", "fast"]
    assert env["to_usd_per_hour"].iloc[0] == pytest.approx(2.25)
    assert env["to_usd_per_hour"].iloc[1] == pytest.approx(3600 * 4.5 / 140)


# --------------------------------------------------------------------------- spend sizing


def test_spend_sizing_hand_computed():
    s = spend_sizing(TABLE, 10_000, value_of_time=100.0)
    assert s.loc["fast", "api_usd_per_month"] == pytest.approx(50_000)
    assert s.loc["fast", "wait_hours_per_month"] == pytest.approx(1000.0)  # 360 s x 10,000 runs
    assert s.loc["fast", "hours_saved_per_month"] == pytest.approx(10_000 * 240 / 3600)
    assert s.loc["fast", "extra_usd_per_month"] == pytest.approx(40_000)
    assert s.loc["fast", "premium_usd_per_saved_hour"] == pytest.approx(60.0)  # = USD per hour saved
    assert s.loc["fast", "net_usd_per_month"] == pytest.approx(10_000 * 240 / 3600 * 100 - 40_000)
    assert math.isnan(s.loc["cheap-slow", "premium_usd_per_saved_hour"])
    assert s.loc["base", "extra_usd_per_month"] == 0


def test_runs_per_month_sources():
    doc = scenario([{"call": {"output": 10}}])
    with pytest.raises(ValueError, match="runs-per-month"):
        runs_per_month(make(doc))
    assert runs_per_month(make(doc), 500) == 500
    with pytest.raises(ValueError):
        runs_per_month(make(doc), 0)
    assert runs_per_month(make({**doc, "workload": {"volume": {"runs_per_day": 100}}})) == 3000
    assert runs_per_month(make({**doc, "workload": {"volume": {"runs_per_month": 20_000}}})) == 20_000


# --------------------------------------------------------------------------- from a simulation


def test_variant_table_and_paired_deltas_agree_with_the_runs():
    doc = scenario(
        [{"call": {"name": "a", "output": {"lognormal": {"median": 400, "p90": 900}}}}],
        models={
            "m": model(
                ttft={"lognormal": {"median": 1, "p90": 3}}, tps=50, speeds={"fast": {"output_tps_x": 2, "price_x": 3}}
            )
        },
        variants={"std": {}, "fast": {"speed": {"m": "fast"}}},
        runs=400,
    )
    res = run(doc, engine="fastpath")
    vt = variant_table(res)
    pd_ = paired_deltas(res.runs)
    for name in ("std", "fast"):
        w = res.runs.loc[res.runs.variant == name, "wall_time_s"]
        assert vt.loc[name, "wall_mean_s"] == pytest.approx(w.mean(), rel=1e-12)
    d_mean = vt.loc["fast", "wall_mean_s"] - vt.loc["std", "wall_mean_s"]
    assert pd_.loc["fast", "delta_time_s"] == pytest.approx(d_mean, rel=1e-9)
    # common random numbers: the paired CI is much narrower than the CI of either mean
    paired_half = (pd_.loc["fast", "delta_time_s_hi"] - pd_.loc["fast", "delta_time_s_lo"]) / 2
    unpaired_half = (vt.loc["std", "wall_ci95_hi_s"] - vt.loc["std", "wall_ci95_lo_s"]) / 2
    assert paired_half < unpaired_half / 2
    # same numbers as summary.json's vs_baseline
    doc_vs = res.summary_dict()["variants"]["fast"]["vs_baseline"]
    be = break_even(vt)
    assert be.loc["fast", "usd_per_hour_saved"] == pytest.approx(doc_vs["usd_per_hour_saved"], rel=1e-12)


def test_bundled_scenarios_have_a_frontier():
    import agentsim

    for f in sorted(SCENARIOS.glob("*.yaml")):
        res = agentsim.simulate(f, runs=100)
        vt = variant_table(res)
        assert vt["pareto_mean"].any() and vt["pareto_p95"].any()
        be = break_even(vt, value_of_time=res.value_of_time)
        doc = res.summary_dict()["variants"]
        if vt.attrs.get("basis") == "per success":
            # trade-offs decide per successful task (docs/tradeoffs.md): the summary's rule on those figures
            from agentsim.sim.results import compare

            def as_means(s):
                return {
                    "wall_time_s": {"mean": s["time_to_success_s"]},
                    "cost_usd": {"mean": s["cost_per_success_usd"]},
                }

            base = as_means(doc[vt.index[0]]["success"])
            for name in vt.index[1:]:
                expected = compare(base, as_means(doc[name]["success"]), res.value_of_time)["pays_off"]
                assert be.loc[name, "pays_off"] == expected
            continue
        for name in vt.index[1:]:  # the same verdict as summary.json
            assert be.loc[name, "pays_off"] == doc[name]["vs_baseline"]["pays_off"]


def test_runs_per_month_from_arrivals_times_daily_hours():
    from agentsim.analysis.tradeoffs import runs_per_month
    from conftest import make, model, scenario

    doc = scenario(
        [{"call": {"output": 1}}],
        models={"m": model()},
        workload={"arrivals": {"per_hour": 120}, "duration": {"hours": 8}},
    )
    assert runs_per_month(make(doc)) == 120 * 8 * 30
    doc["workload"]["volume"] = {"runs_per_day": 500}  # an explicit volume wins
    assert runs_per_month(make(doc)) == 500 * 30
    assert runs_per_month(make(doc), override=1234) == 1234
