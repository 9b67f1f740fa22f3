"""The critical path rebuilt from the calls/spans tables, against hand computation and the engine."""

from __future__ import annotations

import numpy as np
import pytest

import agentsim
from agentsim.analysis.timeline import SEGMENTS, activities, critical_path, critical_share, run_timeline
from conftest import SCENARIOS, model, run, scenario


def test_hand_computed_critical_path():
    # m: TTFT 1 s, 100 tokens/s. a = 1 + 1 = 2 s; b = 1 + 9 = 10 s; t = 3 s then c = 1 + 1 = 2 s (5 s);
    # d after the join = 2 s. Critical path: a, b, d (14 s); t and c are off it.
    doc = scenario(
        [
            {"call": {"name": "a", "output": 100}},
            {"parallel": [{"call": {"name": "b", "output": 900}},
                          [{"tool": {"name": "t", "latency": 3}}, {"call": {"name": "c", "output": 100}}]]},
            {"call": {"name": "d", "output": 100}},
        ],
        models={"m": model(ttft=1.0, tps=100.0)},
    )  # fmt: skip
    res = run(doc, engine="fastpath")
    tl = run_timeline(res.calls, res.spans, 0, res.plan)
    crit = tl[tl.critical].sort_values("start")
    assert crit["step"].tolist() == ["a", "b", "d"]
    assert crit["end"].iloc[-1] == 14.0
    lanes = dict(zip(tl.step, tl.lane, strict=True))
    assert lanes["a"] == lanes["d"] == lanes["b"] == 0  # b is the first branch: it continues the main lane
    assert lanes["t"] == lanes["c"] == 1  # the second branch keeps one lane
    share = critical_share(res.calls, res.spans, res.runs).set_index("step")
    assert share.loc["b", "share"] == pytest.approx(10 / 14)
    assert share.loc["t", "on_path"] == 0 and share.loc["c", "critical_s"] == 0
    assert share.loc["c", "busy_s"] == 2.0


def test_race_winner_is_on_the_path():
    # join any: the 2 s branch wins, the 10 s one is cancelled at 2 s and is not on the path
    doc = scenario(
        [{"parallel": {"branches": [{"call": {"name": "slow", "output": 900}},
                                    {"call": {"name": "quick", "output": 100}}], "join": "any"}},
         {"call": {"name": "after", "output": 100}}],
        models={"m": model(ttft=1.0, tps=100.0)},
    )  # fmt: skip
    res = run(doc, engine="fastpath")
    tl = run_timeline(res.calls, res.spans, 0, res.plan)
    assert tl.loc[tl.critical, "step"].tolist() == ["quick", "after"]


def test_ties_prefer_completed_then_plan_order():
    start = np.array([0.0, 0.0, 0.0])
    end = np.array([2.0, 2.0, 2.0])
    assert critical_path(start, end).tolist() == [0]
    assert critical_path(start, end, np.array([False, True, True])).tolist() == [1]
    assert critical_path(np.zeros(0), np.zeros(0)).tolist() == []


@pytest.mark.parametrize("name", sorted(p.name for p in SCENARIOS.glob("*.yaml")))
def test_timeline_critical_path_matches_the_engine_breakdown(name):
    """Independent of the engine's own accumulators: rebuild each run's critical path from the tables."""
    res = agentsim.simulate(SCENARIOS / name, runs=60)
    acts = activities(res.calls, res.spans).sort_values(["variant", "run", "node", "instance"], kind="stable")
    acts = acts[acts["run"] < 60]  # a workload runs many more: the first 60 of each variant are enough
    runs = res.runs.set_index(["variant", "run"])
    for (variant, r), df in acts.groupby(["variant", "run"], sort=False):
        path = critical_path(df["start"].to_numpy(), df["end"].to_numpy(), (df["status"] == "ok").to_numpy())
        on = df.iloc[path]
        row = runs.loc[(variant, r)]
        if "status" in row and row["status"] != 0:
            continue  # a failed or unfinished run: the engine's breakdown leaves its last attempt out
        assert on["start"].iloc[0] == row.get("start_s", 0.0)
        assert on["end"].iloc[-1] - row.get("start_s", 0.0) == row["wall_time_s"]
        for k in SEGMENTS:
            # the activities table keeps a stalled stream's pause inside its decode segment
            want = row[f"{k}_s"] + (row.get("stall_s", 0.0) if k == "decode" else 0.0)
            assert on[k].sum() == pytest.approx(want, rel=1e-9, abs=1e-9), (variant, r, k)
    share = critical_share(res.calls, res.spans, res.runs)
    for _, part in share.groupby("variant"):
        assert part["share"].sum() == pytest.approx(1.0, rel=1e-9)
