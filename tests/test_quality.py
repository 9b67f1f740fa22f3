"""Quality that costs time and money (DESIGN.md §3.2, issue 17 item 1): ``fail`` steps, success
reporting, and probabilities that depend on the model a named call runs on.

Every expectation is computed by hand or from a closed form; Monte-Carlo checks use fixed seeds and
tolerances from the sample's own standard error (4 standard errors).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from agentsim.cli.main import app
from agentsim.model.loading import ScenarioError
from agentsim.plan.compiler import compile_plan
from agentsim.sim.simulation import des_reasons, simulate_plan
from conftest import assert_frames_identical, make, model, scenario
from test_engines_agree import scenarios

# opus: every call of 100 output tokens takes 1 + 100/50 = 3 s and costs 100 x 25 / 1e6 = 0.0025 USD;
# haiku: 0.5 + 100/200 = 1 s and 100 x 5 / 1e6 = 0.0005 USD.
MODELS = {
    "opus": model({"input_mtok": 5, "output_mtok": 25}, ttft=1.0, tps=50.0),
    "haiku": model({"input_mtok": 1, "output_mtok": 5}, ttft=0.5, tps=200.0),
}
CALL_COST = {"opus": 0.0025, "haiku": 0.0005}
CALL_TIME = {"opus": 3.0, "haiku": 1.0}
VARIANTS = {"opus": {}, "haiku": {"model": {"opus": "haiku"}}}


def both(doc, runs, seed=7):
    plan = compile_plan(make(doc))
    return simulate_plan(plan, runs, seed, engine="des"), simulate_plan(plan, runs, seed, engine="fastpath")


def assert_same(a, b):
    assert_frames_identical(a.runs, b.runs)
    assert_frames_identical(a.calls, b.calls)
    da, db = json.loads(a.to_json()), json.loads(b.to_json())
    da.pop("engine"), db.pop("engine")
    assert da == db


def ratio_se(num: np.ndarray, den: np.ndarray) -> float:
    """Standard error of sum(num)/sum(den) (delta method)."""
    r = num.sum() / den.sum()
    return float(np.std(num - r * den, ddof=1) / (np.mean(den) * math.sqrt(len(num))))


# --------------------------------------------------------------------------- a fail step, by hand


def test_fail_step_share_cost_and_time_to_success_by_hand():
    # call a (3 s, 0.0025), fail with p = 0.2, call b (1 s on haiku, 0.0005).
    doc = scenario(
        [
            {"call": {"name": "a", "model": "opus", "output": 100}},
            {"fail": {"p": 0.2}},
            {"call": {"name": "b", "model": "haiku", "output": 100}},
        ],
        models=MODELS,
    )
    n = 4000
    des, fast = both(doc, n)
    assert_same(des, fast)
    runs = des.runs
    ok = runs["status"] == 0
    # a failed run stops at the fail step: 3 s and only call a's cost; a successful run does both calls
    assert np.all(runs.loc[~ok, "wall_time_s"] == 3.0) and np.all(runs.loc[ok, "wall_time_s"] == 4.0)
    assert np.allclose(runs.loc[~ok, "cost_usd"], 0.0025, rtol=1e-12)
    assert np.allclose(runs.loc[ok, "cost_usd"], 0.0030, rtol=1e-12)
    assert set(des.calls.loc[des.calls["run"].isin(runs.loc[~ok, "run"]), "step"]) == {"a"}
    k = int(ok.sum())
    s = des.summary_dict()["variants"]["baseline"]["success"]
    # given k successes of n runs, by hand:
    assert s["share"] == pytest.approx(k / n, rel=1e-12)
    assert s["cost_per_success_usd"] == pytest.approx((n * 0.0025 + k * 0.0005) / k, rel=1e-9)
    assert s["time_to_success_s"] == pytest.approx((n * 3.0 + k * 1.0) / k, rel=1e-12)
    # and the share is a binomial draw around 0.8
    assert abs(k / n - 0.8) < 4 * math.sqrt(0.8 * 0.2 / n)
    # wall time and cost summaries describe the completed runs, as for runs failed by error_rate
    summary = des.summary_dict()["variants"]["baseline"]
    assert summary["wall_time_s"]["mean"] == 4.0
    assert summary["cost_usd"]["mean"] == pytest.approx(0.0030, rel=1e-12)


def test_fail_step_p_zero_and_one():
    steps = [{"call": {"name": "a", "model": "opus", "output": 100}}, {"fail": {"p": 1}}, {"wait": {"latency": 5}}]
    des, fast = both(scenario(steps, models=MODELS), 50)
    assert_same(des, fast)
    s = des.summary_dict()["variants"]["baseline"]
    assert s["success"] == {"share": 0.0, "cost_per_success_usd": None, "time_to_success_s": None}
    assert np.all(des.runs["wall_time_s"] == 3.0)
    steps[1] = {"fail": {"p": 0}}
    des, _ = both(scenario(steps, models=MODELS), 50)
    s = des.summary_dict()["variants"]["baseline"]["success"]
    assert s["share"] == 1.0 and s["time_to_success_s"] == 8.0


def test_no_fail_step_no_success_section():
    doc = scenario([{"call": {"name": "a", "model": "opus", "output": 100}}], models=MODELS)
    des, _ = both(doc, 20)
    v = des.summary_dict()["variants"]["baseline"]
    assert "success" not in v
    assert "success_share" not in des.summary().columns


def test_fail_inside_a_repeat_stops_the_loop():
    # 5 iterations of (call 3 s, fail p=0.1): P(success) = 0.9^5; the number of calls made is the
    # index of the first failure (or 5): E[calls] = sum_{i<5} 0.9^i.
    doc = scenario(
        [
            {
                "repeat": {
                    "times": 5,
                    "steps": [{"call": {"name": "a", "model": "opus", "output": 100}}, {"fail": {"p": 0.1}}],
                }
            }
        ],
        models=MODELS,
    )
    n = 20000
    des, fast = both(doc, n)
    assert_same(des, fast)
    runs = des.runs
    assert np.array_equal(runs["wall_time_s"].to_numpy(), 3.0 * runs["calls"].to_numpy())
    share = (runs["status"] == 0).mean()
    assert abs(share - 0.9**5) < 4 * math.sqrt(0.9**5 * (1 - 0.9**5) / n)
    mean_calls = sum(0.9**i for i in range(5))
    calls = runs["calls"].to_numpy()
    assert abs(calls.mean() - mean_calls) < 4 * calls.std(ddof=1) / math.sqrt(n)


def test_fail_in_a_parallel_branch_cancels_the_others_by_hand():
    # branch 1: a call of 0.5 s TTFT + 150 tokens at 100 tok/s (2 s); branch 2: wait 1 s, then fail (p = 1).
    # The run fails at t = 1: the call is cancelled there, billed its input (1000) and
    # floor((1 - 0.5) x 100) = 50 output tokens.
    models = {"m": model({"input_mtok": 2, "output_mtok": 10}, ttft=0.5, tps=100.0)}
    doc = scenario(
        [
            {
                "parallel": [
                    {"call": {"name": "long", "input": 1000, "output": 150}},
                    [{"wait": {"latency": 1}}, {"fail": {"p": 1}}],
                ]
            },
            {"call": {"name": "never", "output": 10}},
        ],
        models=models,
    )
    plan = compile_plan(make(doc))
    assert any("fail step" in r for r in des_reasons(plan))
    res = simulate_plan(plan, 3, 1)  # auto: the DES
    assert res.engine == "des"
    assert np.all(res.runs["wall_time_s"] == 1.0) and np.all(res.runs["status"] == 1)
    assert np.allclose(res.runs["cost_usd"], (1000 * 2 + 50 * 10) / 1e6, rtol=1e-12)
    calls = res.calls
    assert list(calls["status"].unique()) == ["cancelled"] and set(calls["step"]) == {"long"}
    assert np.all(calls["output_tokens"] == 50)


# --------------------------------------------------------------------------- model-dependent probabilities


def loop_doc(p_opus=0.7, p_haiku=0.82, cap=8, fail=None):
    steps = [
        {
            "repeat": {
                "continue_p": {"by": "act", "opus": p_opus, "haiku": p_haiku},
                "max": cap,
                "steps": [{"call": {"name": "act", "model": "opus", "output": 100}}],
            }
        }
    ]
    if fail is not None:
        steps.append({"fail": {"p": {"by": "act", **fail}}})
    return scenario(steps, models=MODELS, variants=VARIANTS)


def test_loop_whose_continue_p_depends_on_the_model_closed_form():
    # iterations K: P(K > k) = p^k, capped at max: E[K] = (1 - p^max) / (1 - p)
    n, cap = 20000, 8
    fail = {"opus": 0.05, "haiku": 0.25}
    des, fast = both(loop_doc(cap=cap, fail=fail), n)
    assert_same(des, fast)
    doc = des.summary_dict()["variants"]
    for variant, p in (("opus", 0.7), ("haiku", 0.82)):
        runs = des.runs[des.runs["variant"] == variant]
        k = runs["calls"].to_numpy()
        assert k.min() >= 1 and k.max() <= cap
        closed = (1 - p**cap) / (1 - p)
        assert abs(k.mean() - closed) < 4 * k.std(ddof=1) / math.sqrt(n), (variant, k.mean(), closed)
        # each iteration is one call of fixed time and cost
        assert np.allclose(runs["cost_usd"], k * CALL_COST[variant], rtol=1e-12)
        # cost per success = E[cost] / P(success), the fail draw being independent of the loop
        pf = fail[variant]
        ok = (runs["status"] == 0).to_numpy().astype(float)
        cost = runs["cost_usd"].to_numpy()
        s = doc[variant]["success"]
        closed_cps = CALL_COST[variant] * closed / (1 - pf)
        assert abs(s["cost_per_success_usd"] - closed_cps) < 4 * ratio_se(cost, ok), (variant, s, closed_cps)
        closed_tts = CALL_TIME[variant] * closed / (1 - pf)
        wall = runs["wall_time_s"].to_numpy()
        assert abs(s["time_to_success_s"] - closed_tts) < 4 * ratio_se(wall, ok)
        assert abs(s["share"] - (1 - pf)) < 4 * math.sqrt(pf * (1 - pf) / n)
    # the cheap model is cheaper per run and per success here, but needs more iterations
    assert doc["haiku"]["calls"]["mean"] > doc["opus"]["calls"]["mean"]


def test_model_dependent_counts_keep_common_random_numbers():
    # the same uniform decides every variant's count: a higher continue_p never gives fewer iterations
    des, _ = both(loop_doc(), 3000)
    k_opus = des.runs.loc[des.runs["variant"] == "opus", "calls"].to_numpy()
    k_haiku = des.runs.loc[des.runs["variant"] == "haiku", "calls"].to_numpy()
    assert np.all(k_haiku >= k_opus) and np.any(k_haiku > k_opus)


def test_choose_by_model_and_tier_keys():
    models = {
        "opus": {**MODELS["opus"], "speeds": {"fast": {"output_tps_x": 2, "price_x": 6}}},
        "haiku": MODELS["haiku"],
    }
    doc = scenario(
        [
            {"call": {"name": "act", "model": "opus", "output": 100}},
            {
                "choose": {
                    "options": [
                        {
                            "p": {"by": "act", "opus@fast": 0.1, "opus": 0.5, "default": 0.3},
                            "steps": [{"call": {"name": "fix", "model": "opus", "output": 100}}],
                        },
                        {"p": {"by": "act", "opus@fast": 0.9, "opus": 0.5, "default": 0.7}},
                    ]
                }
            },
        ],
        models=models,
        variants={"opus": {}, "fast": {"speed": {"act": "fast"}}, "haiku": {"model": {"act": "haiku"}}},
    )
    n = 20000
    des, fast = both(doc, n)
    assert_same(des, fast)
    calls = des.calls
    fixed = {}
    for variant, p in (("opus", 0.5), ("fast", 0.1), ("haiku", 0.3)):
        runs_fixed = set(calls.loc[(calls["variant"] == variant) & (calls["step"] == "fix"), "run"])
        share = len(runs_fixed) / n
        assert abs(share - p) < 4 * math.sqrt(p * (1 - p) / n), (variant, share)
        fixed[variant] = runs_fixed
    # common random numbers: option 0 is picked when u < p, so smaller p picks a subset of the runs
    assert fixed["fast"] <= fixed["haiku"] <= fixed["opus"]


# --------------------------------------------------------------------------- validation


def _error(doc) -> str:
    with pytest.raises(ScenarioError) as exc:
        compile_plan(make(doc))
    return str(exc.value)


def test_missing_model_without_default_is_an_error():
    doc = loop_doc()
    doc["agent"]["steps"][0]["repeat"]["continue_p"] = {"by": "act", "opus": 0.7}
    msg = _error(doc)
    assert "no value for model 'haiku'" in msg and "variant 'haiku'" in msg and "default" in msg
    assert "agent.steps[0].repeat.continue_p" in msg


def test_unknown_call_model_or_tier_in_a_by_mapping():
    doc = loop_doc()
    doc["agent"]["steps"][0]["repeat"]["continue_p"] = {"by": "akt", "opus": 0.7, "haiku": 0.8}
    assert "no call is named 'akt'" in _error(doc) and "did you mean 'act'" in _error(doc)
    doc["agent"]["steps"][0]["repeat"]["continue_p"] = {"by": "act", "opsu": 0.7, "haiku": 0.8}
    assert "'opsu' is not a model" in _error(doc)
    doc["agent"]["steps"][0]["repeat"]["continue_p"] = {"by": "act", "opus@turbo": 0.7, "default": 0.8}
    assert "no speed tier 'turbo'" in _error(doc)


def test_by_model_values_must_be_probabilities_and_choose_must_sum_per_variant():
    doc = loop_doc()
    doc["agent"]["steps"][0]["repeat"]["continue_p"] = {"by": "act", "opus": 1.7, "haiku": 0.8}
    with pytest.raises(ScenarioError, match="not a probability"):
        make(doc)
    doc = scenario(
        [
            {"call": {"name": "act", "model": "opus", "output": 1}},
            {"choose": {"options": [{"p": {"by": "act", "opus": 0.5, "haiku": 0.6}}, {"p": 0.5}]}},
        ],
        models=MODELS,
        variants=VARIANTS,
    )
    msg = _error(doc)
    assert "sum to 1.1, not 1, in variant 'haiku'" in msg


def test_cli_validate_names_file_and_line(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text(
        """name: t
models:
  opus: {price: {input_mtok: 5, output_mtok: 25}, ttft: 1, output_tps: 50}
  haiku: {price: {input_mtok: 1, output_mtok: 5}, ttft: 1, output_tps: 50}
agent:
  steps:
    - call: {name: act, model: opus, output: 10}
    - fail: {p: {by: act, opus: 0.1}}
variants:
  cheap: {model: {act: haiku}}
"""
    )
    r = CliRunner().invoke(app, ["validate", str(f)])
    assert r.exit_code == 2
    assert "s.yaml:8" in r.stderr and "no value for model 'haiku'" in r.stderr
    assert "Traceback" not in r.output


# --------------------------------------------------------------------------- decisions per success


def quality_doc(with_fail=True):
    """One `solve` loop: opus needs fewer iterations and fails less; haiku is cheaper per call.

    E[iterations] = (1 - p^50) / (1 - p): opus (p = 0.5) 2.000, haiku (p = 0.9) 9.948. Per run:
    opus 2.000 x 0.0025 = 0.00500 USD, haiku 9.948 x 0.0004 = 0.00398 USD (haiku wins). Per success
    (fail 0.02 vs 0.4, independent of the loop): opus 0.00500 / 0.98 = 0.00510, haiku 0.00398 / 0.6 =
    0.00663 USD (haiku loses).
    """
    models = {
        "opus": model({"input_mtok": 5, "output_mtok": 25}, ttft=1.0, tps=50.0),
        "haiku": model({"input_mtok": 1, "output_mtok": 4}, ttft=0.5, tps=200.0),
    }
    steps = [
        {
            "repeat": {
                "name": "solve",
                "continue_p": {"by": "act", "opus": 0.5, "haiku": 0.9},
                "max": 50,
                "steps": [{"call": {"name": "act", "model": "opus", "output": 100}}],
            }
        }
    ]
    if with_fail:
        steps.append({"fail": {"name": "wrong", "p": {"by": "act", "opus": 0.02, "haiku": 0.4}}})
    return scenario(steps, models=models, runs=4000, seed=5)


CLOSED = {  # (cost per run, cost per success)
    "opus": (0.0025 * (1 - 0.5**50) / 0.5, 0.0025 * (1 - 0.5**50) / 0.5 / 0.98),
    "haiku": (0.0004 * (1 - 0.9**50) / 0.1, 0.0004 * (1 - 0.9**50) / 0.1 / 0.6),
}


def test_optimizer_ranks_by_cost_per_success():
    from agentsim.analysis.optimize import optimize

    doc = quality_doc()
    # the same two candidates as plain variants, to know the Monte-Carlo error of their figures
    check = json.loads(json.dumps(doc))
    check["variants"] = {"opus": {}, "haiku": {"model": {"solve": "haiku"}}}
    plan = compile_plan(make(check))
    res = simulate_plan(plan, 4000, 5)
    for variant, (per_run, per_success) in CLOSED.items():
        runs = res.runs[res.runs["variant"] == variant]
        cost = runs["cost_usd"].to_numpy()
        ok = (runs["status"] == 0).to_numpy().astype(float)
        assert abs(cost.mean() - per_run) < 4 * cost.std(ddof=1) / math.sqrt(len(cost))
        s = res.summary_dict()["variants"][variant]["success"]
        assert abs(s["cost_per_success_usd"] - per_success) < 4 * ratio_se(cost, ok)

    opt = optimize(make(doc), max_time_s=1e9, metric="mean", models=["haiku"])
    assert opt.choices == {"solve": "standard"}  # stays on opus: cheaper per success
    assert opt.chosen["basis"] == "per success"
    assert opt.chosen["cost_mean_usd"] == pytest.approx(
        res.summary_dict()["variants"]["opus"]["success"]["cost_per_success_usd"], rel=1e-12
    )

    # the same decision without a notion of success moves the loop to the cheaper-per-run model
    opt = optimize(make(quality_doc(with_fail=False)), max_time_s=1e9, metric="mean", models=["haiku"])
    assert opt.choices == {"solve": "haiku"}
    assert "basis" not in opt.chosen


def test_size_counts_successful_tasks(tmp_path):
    import yaml

    doc = quality_doc()
    doc["variants"] = {"opus": {}, "haiku": {"model": {"solve": "haiku"}}}
    doc["runs"] = 500
    f = tmp_path / "q.yaml"
    f.write_text(yaml.safe_dump(doc))
    r = CliRunner().invoke(app, ["size", str(f), "--runs-per-month", "1000", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)["variants"]
    res = simulate_plan(compile_plan(make(doc)), 500, 5)
    summary = res.summary_dict()["variants"]
    for v in ("opus", "haiku"):
        s = summary[v]["success"]
        assert out[v]["api_usd_per_month"] == pytest.approx(1000 * s["cost_per_success_usd"], rel=1e-12)
        assert out[v]["wait_hours_per_month"] == pytest.approx(1000 * s["time_to_success_s"] / 3600, rel=1e-12)
    r = CliRunner().invoke(app, ["size", str(f), "--runs-per-month", "1000"])
    assert r.exit_code == 0 and "successful tasks per month" in r.stdout


def test_fail_steps_in_a_workload():
    # closed loop, 3 agents for 10 minutes; a run is call a (1.5 s), fail p = 0.3, call b (1.5 s)
    models = {"m": model({"input_mtok": 1, "output_mtok": 5}, ttft=0.5, tps=100.0)}
    doc = scenario(
        [{"call": {"name": "a", "output": 100}}, {"fail": {"p": 0.3}}, {"call": {"name": "b", "output": 100}}],
        models=models,
        workload={"concurrent": 3, "duration": {"minutes": 10}},
    )
    res = simulate_plan(compile_plan(make(doc)), 1, 1)
    v = res.summary_dict()["variants"]["baseline"]
    runs = res.runs[res.runs["counted"]]
    failed, ok = runs[runs["status"] == 1], runs[runs["status"] == 0]
    assert np.all(failed["wall_time_s"] == 1.5) and np.all(ok["wall_time_s"] == 3.0)
    n, k = len(failed) + len(ok), len(ok)
    assert v["workload"]["runs_failed"] == len(failed) and v["workload"]["runs_completed"] == k
    assert v["success"]["share"] == pytest.approx(k / n, rel=1e-12)
    assert v["success"]["time_to_success_s"] == pytest.approx((1.5 * n + 1.5 * k) / k, rel=1e-12)
    assert v["success"]["cost_per_success_usd"] == pytest.approx((n * 500 + k * 500) / 1e6 / k, rel=1e-9)
    assert abs(k / n - 0.7) < 4 * math.sqrt(0.21 / n)


# --------------------------------------------------------------------------- engines agree on random scenarios


def _with_quality(doc, fail_p, cont, where):
    """A random scenario (tests/test_engines_agree.py) with a named pivot call, model-dependent fail and
    continue probabilities, a by-model choose and provider conditions on both models."""
    doc = json.loads(json.dumps(doc))
    steps = doc["agent"]["steps"]
    by = {"by": "pivot", "a": fail_p, "a@fast": fail_p / 2, "default": 0.3}
    loop = {
        "repeat": {
            "continue_p": {"by": "pivot", "a": cont, "b": 0.9, "default": 0.5},
            "max": 5,
            "steps": [{"call": {"model": "b", "output": 20}}, {"fail": {"p": by}}],
        }
    }
    pick = {
        "choose": {
            "options": [
                {"p": {"by": "pivot", "a": 0.2, "default": 0.7}, "steps": [{"fail": {"p": 0.5}}]},
                {"p": {"by": "pivot", "a": 0.8, "default": 0.3}, "steps": [{"wait": {"latency": 1}}]},
            ]
        }
    }
    steps.insert(0, {"call": {"name": "pivot", "model": "a", "output": 30}})
    steps.insert(min(where, len(steps)), loop)
    steps.append(pick)
    steps.append({"fail": {"p": by}})
    doc["models"]["a"]["conditions"] = {"ttft_x": {"lognormal": {"median": 1, "p90": 1.5}}}
    doc["models"]["b"]["conditions"] = {"output_tps_x": {"uniform": {"low": 0.5, "high": 1.5}}}
    return doc


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(scenarios(), st.sampled_from([0.0, 0.2, 0.6]), st.sampled_from([0.3, 0.95]), st.integers(1, 4))
def test_random_scenarios_with_quality_keys_agree(doc, fail_p, cont, where):
    doc = _with_quality(doc, fail_p, cont, where)
    plan = compile_plan(make(doc))
    assert not des_reasons(plan)
    des, fast = (
        simulate_plan(plan, 24, doc["seed"], engine="des"),
        simulate_plan(plan, 24, doc["seed"], engine="fastpath"),
    )
    assert_same(des, fast)
    assert_frames_identical(des.spans, fast.spans)


def test_per_success_rows_and_frontier():
    import pandas as pd

    from agentsim.analysis.tradeoffs import mark_pareto, per_success

    # cheap: 1 USD and 10 s per run, half the runs succeed (2 USD, 20 s per success);
    # good: 1.5 USD and 12 s per run, all succeed
    rows = [
        {"variant": "cheap", "wall_mean_s": 10.0, "wall_p95_s": 15.0, "cost_mean_usd": 1.0, "cost_ci95_lo_usd": 0.9,
         "cost_ci95_hi_usd": 1.1, "success_share": 0.5, "cost_per_success_usd": 2.0, "time_to_success_s": 20.0},
        {"variant": "good", "wall_mean_s": 12.0, "wall_p95_s": 16.0, "cost_mean_usd": 1.5, "cost_ci95_lo_usd": 1.4,
         "cost_ci95_hi_usd": 1.6, "success_share": 1.0, "cost_per_success_usd": 1.5, "time_to_success_s": 12.0},
    ]  # fmt: skip
    per_run = mark_pareto(pd.DataFrame(rows)).set_index("variant")
    assert per_run["pareto_mean"].tolist() == [True, False]  # per run "cheap" is faster and cheaper
    assert per_run["pareto_per_success"].tolist() == [False, True]  # per success "good" beats "cheap"
    ranked = per_success(rows[0])
    assert (ranked["cost_mean_usd"], ranked["wall_mean_s"], ranked["cost_per_run_usd"]) == (2.0, 20.0, 1.0)
    assert "cost_ci95_lo_usd" not in ranked and ranked["basis"] == "per success"
    assert per_success({"wall_mean_s": 1.0, "cost_mean_usd": 2.0}) == {"wall_mean_s": 1.0, "cost_mean_usd": 2.0}


def test_every_by_model_problem_is_reported_at_once():
    doc = loop_doc(fail={"opus": 0.1})  # fail.p has no haiku value
    doc["agent"]["steps"][0]["repeat"]["continue_p"] = {"by": "akt", "opus": 0.7}  # unknown call
    msg = _error(doc)
    assert "no call is named 'akt'" in msg and "no value for model 'haiku'" in msg
    assert "agent.steps[0].repeat.continue_p.by" in msg and "agent.steps[1].fail.p" in msg
