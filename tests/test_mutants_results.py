"""Summary statistics of :mod:`agentsim.sim.results` by hand: mean, CI, percentiles, per-call figures,
comparisons and success (docs/validation.md §7)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agentsim.plan.compiler import compile_plan
from agentsim.sim import results
from agentsim.sim.results import CallStats, compare, describe
from agentsim.sim.simulation import simulate_plan
from conftest import make, model, run, scenario

T975_2 = 4.302652730  # Student t_{0.975, 2}, from a printed table


def test_describe_three_values_with_chosen_percentiles():
    # 1, 2, 6: mean 3; deviations 4, 1, 9 -> sd sqrt(14 / 2) = sqrt(7); half = t_{.975,2} sqrt(7) / sqrt(3)
    # p25 at rank 0.5 -> 1.5; p80 at rank 1.6 -> 2 + 0.6 x 4 = 4.4
    d = describe([6, 1, 2], percentiles=(25, 80))
    half = T975_2 * math.sqrt(7) / math.sqrt(3)
    assert d["mean"] == 3.0
    assert d["ci95"] == pytest.approx([3 - half, 3 + half], rel=1e-9)
    assert d["p25"] == pytest.approx(1.5, rel=1e-15)
    assert d["p80"] == pytest.approx(4.4, rel=1e-15)
    assert set(d) == {"mean", "ci95", "p25", "p80"}
    assert all(type(v) is float for v in (d["mean"], *d["ci95"], d["p25"], d["p80"]))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_describe_of_one_value_and_of_none_and_of_infinities():
    assert describe([7.0], percentiles=(50,)) == {"mean": 7.0, "ci95": [7.0, 7.0], "p50": 7.0}
    assert describe([], percentiles=(50, 95)) == {"mean": None, "ci95": [None, None], "p50": None, "p95": None}
    inf = describe([1.0, math.inf], percentiles=(50,))
    assert inf == {"mean": None, "ci95": [None, None], "p50": None}  # JSON-safe: no inf, no NaN


def test_f_and_mean_are_json_safe():
    assert results._f(2) == 2.0 and type(results._f(2)) is float
    assert results._f(math.nan) is None
    assert results._f(-math.inf) is None
    assert results._mean(np.array([1.0, 2.0, 6.0])) == 3.0
    assert results._mean(np.array([])) is None


def test_call_stats_keep_at_most_the_cap_of_calls():
    cs = CallStats()
    cs.add(np.array([1.0, 3.0]), np.array([10.0, 40.0]))
    assert cs.kept == 2
    s = cs.summary()
    # TTFT 1, 3: mean 2, p50 2, p95 1 + 0.95 x 2 = 2.9; TPS 10, 40: ITL 0.1, 0.025 -> mean 0.0625
    assert s["ttft_s"] == pytest.approx({"mean": 2.0, "p50": 2.0, "p95": 2.9}, rel=1e-12)
    assert s["tps"] == pytest.approx({"mean": 25.0, "p50": 25.0, "p95": 38.5}, rel=1e-12)
    assert s["itl_s"] == pytest.approx({"mean": 0.0625, "p50": 0.0625, "p95": 0.09625}, rel=1e-12)
    # two calls short of the cap: of three more, two are kept, then none
    cs.kept = results.PER_CALL_LIMIT - 2
    cs.add(np.array([5.0, 7.0, 100.0]), np.array([20.0, 20.0, 1.0]))
    assert cs.kept == results.PER_CALL_LIMIT
    assert [a.tolist() for a in cs.ttft] == [[1.0, 3.0], [5.0, 7.0]]
    assert [a.tolist() for a in cs.tps] == [[10.0, 40.0], [20.0, 20.0]]
    cs.add(np.array([9.0]), np.array([9.0]))
    assert len(cs.ttft) == 2 and cs.kept == results.PER_CALL_LIMIT
    # exactly at the cap with room 1: one kept
    one = CallStats(kept=results.PER_CALL_LIMIT - 1)
    one.add(np.array([4.0, 8.0]), np.array([2.0, 2.0]))
    assert [a.tolist() for a in one.ttft] == [[4.0]] and one.kept == results.PER_CALL_LIMIT


def test_call_stats_of_no_calls():
    s = CallStats().summary()
    empty = {"mean": None, "p50": None, "p95": None}
    assert s == {"ttft_s": empty, "tps": empty, "itl_s": empty}


def _summary(t, c):
    return {"wall_time_s": {"mean": t}, "cost_usd": {"mean": c}}


def test_compare_figures_and_missing_means():
    # 36 s faster for $0.90 more: $90 per hour saved
    out = compare(_summary(100.0, 1.0), _summary(64.0, 1.9), 100.0)
    assert out == {
        "delta_time_s": -36.0,
        "delta_cost_usd": pytest.approx(0.9, rel=1e-12),
        "usd_per_hour_saved": pytest.approx(90.0, rel=1e-12),
        "pays_off": True,
        "delta_waiting_s": None,  # runs without turns: their wall time is the time waited
        "basis": "wall_time_s",
    }
    none = {"delta_time_s": None, "delta_cost_usd": None, "usd_per_hour_saved": None, "pays_off": None,
            "delta_waiting_s": None, "basis": "wall_time_s"}  # fmt: skip
    for base, v in (
        (_summary(None, 1.0), _summary(64.0, 1.9)),
        (_summary(100.0, None), _summary(64.0, 1.9)),
        (_summary(100.0, 1.0), _summary(None, 1.9)),
        (_summary(100.0, 1.0), _summary(64.0, None)),
    ):
        assert compare(base, v, 100.0) == none


# --------------------------------------------------------------------------- success, from runs

# opus: 1 s TTFT + 100 tokens at 50 tok/s = 3 s, 100 x 25 / 1e6 = $0.0025 per call;
# haiku: 0.5 s + 100 / 200 = 1 s, $0.0005 per call
MODELS = {
    "opus": model({"input_mtok": 5, "output_mtok": 25}, ttft=1.0, tps=50.0),
    "haiku": model({"input_mtok": 1, "output_mtok": 5}, ttft=0.5, tps=200.0),
}


def test_success_share_cost_and_time_per_success_counted_from_the_runs():
    # call a (opus), fail with p = 0.5, call b (haiku): a failed run costs $0.0025 and lasts 3 s,
    # a successful one $0.0030 and 4 s. Variant "cheap" runs call a on haiku: $0.0005 / 1 s, $0.0010 / 2 s.
    doc = scenario(
        [
            {"call": {"name": "a", "model": "opus", "output": 100}},
            {"fail": {"p": 0.5}},
            {"call": {"name": "b", "model": "haiku", "output": 100}},
        ],
        models=MODELS,
        variants={"base": {}, "cheap": {"model": {"opus": "haiku"}}},
        runs=40,
    )
    res = run(doc)
    doc_out = res.summary_dict()["variants"]
    for name, (fail_cost, fail_t, ok_cost, ok_t) in {
        "base": (0.0025, 3.0, 0.0030, 4.0),
        "cheap": (0.0005, 1.0, 0.0010, 2.0),
    }.items():
        runs = res.runs[res.runs["variant"] == name]
        k = int((runs["status"] == 0).sum())
        n = len(runs)
        assert n == 40 and 0 < k < n  # a mix of both (the seed is fixed)
        s = doc_out[name]["success"]
        assert s["share"] == pytest.approx(k / n, rel=1e-15)
        assert s["cost_per_success_usd"] == pytest.approx(((n - k) * fail_cost + k * ok_cost) / k, rel=1e-12)
        assert s["time_to_success_s"] == pytest.approx(((n - k) * fail_t + k * ok_t) / k, rel=1e-12)


def test_success_when_no_run_succeeds():
    doc = scenario([{"call": {"name": "a", "model": "opus", "output": 100}}, {"fail": {"p": 1}}], models=MODELS, runs=3)
    s = run(doc).summary_dict()["variants"]["baseline"]["success"]
    assert s == {"share": 0.0, "cost_per_success_usd": None, "time_to_success_s": None}


def _workload(tool_s: float, fail_before_tool: bool = True) -> dict:
    # closed loop of 3 agents counted for 10 s (and stopped at 20 s); a run: a 4 s call (2 s TTFT + 100 tokens
    # at 50 tok/s), a fail step (p = 0.5) and a tool, or the tool first and the fail step last
    steps = [{"call": {"output": 100}}, {"fail": {"p": 0.5}}, {"tool": {"latency": tool_s}}]
    if not fail_before_tool:
        steps = [steps[0], steps[2], steps[1]]
    return scenario(
        steps, models={"m": model(ttft=2.0, tps=50.0)}, workload={"concurrent": 3, "duration": {"seconds": 10}}
    )


@pytest.mark.parametrize(("tool_s", "seed"), [(8.0, 1), (15.0, 1)])
def test_success_in_a_workload_counts_the_counted_runs_whose_outcome_is_known(tool_s, seed):
    res = simulate_plan(compile_plan(make(_workload(tool_s))), 1, seed)
    r = res.runs
    counted = r["counted"].to_numpy(dtype=bool)
    status = r["status"].to_numpy()
    known = counted & (status != 2)
    k, n = int((known & (status == 0)).sum()), int(known.sum())
    # the seeds give what the rule must sort out: successes and failures among the counted runs, and
    # an uncounted run with an outcome (8 s tools) or a counted one still going at the end (15 s tools)
    assert 0 < k < n
    if tool_s == 8.0:
        assert (~counted & (status != 2)).any()
    else:
        assert (counted & (status == 2)).any()
    s = res.summary_dict()["variants"]["baseline"]["success"]
    assert s["share"] == pytest.approx(k / n, rel=1e-15)
    assert s["cost_per_success_usd"] == pytest.approx(r.loc[known, "cost_usd"].sum() / k, rel=1e-12)
    assert s["time_to_success_s"] == pytest.approx(r.loc[known, "wall_time_s"].sum() / k, rel=1e-12)


def test_success_in_a_workload_where_no_counted_run_finished():
    # every counted run is still in its 100 s tool at 20 s: no outcome is known
    res = simulate_plan(compile_plan(make(_workload(100.0, fail_before_tool=False))), 1, 1)
    assert set(res.runs["status"]) == {2}
    s = res.summary_dict()["variants"]["baseline"]["success"]
    assert s == {"share": None, "cost_per_success_usd": None, "time_to_success_s": None}
