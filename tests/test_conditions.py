"""Provider conditions (DESIGN.md §3.2, issue 16 item 4): a TTFT factor and a speed factor drawn once per
run per model and shared by all that run's calls to the model (every speed tier).

Checked by hand (constant speeds: every call of a run sees the same factor) and against the closed-form
variance of a chain's wall time with shared factors (fixed seed, tolerance from the Monte-Carlo error).
"""

from __future__ import annotations

import json
import math

import numpy as np

from agentsim.plan.compiler import compile_plan
from agentsim.sim.simulation import simulate_plan
from conftest import assert_frames_identical, make, model, scenario

Z90 = 1.2815515655446004  # standard-normal 90th percentile


def both(doc, runs, seed=11):
    plan = compile_plan(make(doc))
    return simulate_plan(plan, runs, seed, engine="des"), simulate_plan(plan, runs, seed, engine="fastpath")


def assert_same(a, b):
    assert_frames_identical(a.runs, b.runs)
    assert_frames_identical(a.calls, b.calls)
    da, db = json.loads(a.to_json()), json.loads(b.to_json())
    da.pop("engine"), db.pop("engine")
    assert da == db


def test_every_call_of_a_run_shares_the_factors_across_tiers():
    # constant TTFT 1 s and 100 tok/s: a call's TTFT is the run's ttft factor A (x 0.5 on the priority
    # tier), its speed 100 B (x 2 on the fast tier), whatever repeat or fanout it sits in.
    m = model(
        ttft=1.0,
        tps=100.0,
        conditions={
            "ttft_x": {"lognormal": {"median": 1, "p90": 2}},
            "output_tps_x": {"uniform": {"low": 0.5, "high": 1.5}},
        },
        speeds={"fast": {"output_tps_x": 2, "price_x": 2}, "priority": {"ttft_x": 0.5}},
    )
    doc = scenario(
        [
            {"call": {"name": "a", "output": 100}},
            {"repeat": {"times": 3, "steps": [{"call": {"name": "b", "output": 50, "speed": "fast"}}]}},
            {"fanout": {"n": 2, "steps": [{"call": {"name": "c", "output": 10, "speed": "priority"}}]}},
        ],
        models={"m": m},
        runs=200,
    )
    des, fast = both(doc, 200)
    assert_same(des, fast)
    calls = des.calls
    a = calls[calls["step"] == "a"].set_index("run")
    A, B = a["ttft_s"], a["tps"] / 100.0
    assert A.nunique() == 200 and B.nunique() == 200  # one factor per run, different between runs
    for step, ttft_x, tps_x in (("b", 1.0, 2.0), ("c", 0.5, 1.0)):
        rows = calls[calls["step"] == step]
        assert np.array_equal(rows["ttft_s"].to_numpy(), A.loc[rows["run"]].to_numpy() * ttft_x)
        assert np.allclose(rows["tps"].to_numpy(), 100.0 * tps_x * B.loc[rows["run"]].to_numpy(), rtol=1e-15)
    # the per-run wall time by hand: A + 1/B + 3 (A + 0.25/B) + (0.5 A + 0.1/B)
    wall = des.runs.set_index("run")["wall_time_s"]
    by_hand = A + 1 / B + 3 * (A + 0.25 / B) + (0.5 * A + 0.1 / B)
    assert np.allclose(wall.loc[A.index].to_numpy(), by_hand.to_numpy(), rtol=1e-12)


def _ln_moment(mu: float, sigma: float, r: float) -> float:
    """E[X^r] of a lognormal with log-mean mu and log-sd sigma."""
    return math.exp(r * mu + r * r * sigma * sigma / 2)


def test_chain_variance_with_shared_factors_closed_form():
    # k calls: W = A * sum T_i + (1/B) * sum D_i, with T_i ~ LN(0, sT) per call, D_i = O / S_i with
    # S_i ~ LN(ln 100, sS) per call, and per-run A ~ LN(0, sA), B ~ LN(0, sB), all independent.
    k, out = 10, 200
    sT, sS, sA, sB = math.log(2) / Z90, math.log(1.3) / Z90, math.log(1.5) / Z90, math.log(1.4) / Z90
    conditions = {
        "ttft_x": {"lognormal": {"median": 1, "p90": 1.5}},
        "output_tps_x": {"lognormal": {"median": 1, "p90": 1.4}},
    }
    m = model(
        ttft={"lognormal": {"median": 1, "p90": 2}},
        tps={"lognormal": {"median": 100, "p90": 130}},
        conditions=conditions,
    )
    doc = scenario([{"repeat": {"times": k, "steps": [{"call": {"output": out}}]}}], models={"m": m})
    n = 40000
    plan = compile_plan(make(doc))
    wall = simulate_plan(plan, n, 3, engine="fastpath").runs["wall_time_s"].to_numpy()

    ET, ET2 = _ln_moment(0, sT, 1), _ln_moment(0, sT, 2)
    muD = math.log(out / 100)
    ED, ED2 = _ln_moment(muD, sS, 1), _ln_moment(muD, sS, 2)
    EX, EX2 = k * ET, k * (ET2 - ET**2) + (k * ET) ** 2  # X = sum of T
    EY, EY2 = k * ED, k * (ED2 - ED**2) + (k * ED) ** 2  # Y = sum of D
    EA, EA2 = _ln_moment(0, sA, 1), _ln_moment(0, sA, 2)
    EiB, EiB2 = _ln_moment(0, sB, 1), _ln_moment(0, sB, 2)  # 1/B is LN(0, sB) too
    mean = EA * EX + EiB * EY
    var = EA2 * EX2 + 2 * EA * EX * EiB * EY + EiB2 * EY2 - mean**2

    m2 = wall.var(ddof=1)
    m4 = np.mean((wall - wall.mean()) ** 4)
    se_var = math.sqrt((m4 - m2**2) / n)
    assert abs(wall.mean() - mean) < 4 * wall.std(ddof=1) / math.sqrt(n)
    assert abs(m2 - var) < 4 * se_var, (m2, var, se_var)
    # without the shared factors the variance is only k Var(T) + k Var(D): much narrower
    var_independent = k * (ET2 - ET**2) + k * (ED2 - ED**2)
    assert var > 3 * var_independent and m2 > 3 * var_independent


def test_no_conditions_leaves_results_unchanged():
    # a model whose conditions are both the constant 1 gives the very same numbers as no conditions
    base = scenario(
        [{"repeat": {"times": 3, "steps": [{"call": {"input": 100, "output": 50}}]}}],
        models={"m": model(ttft={"lognormal": {"median": 1, "p90": 2}}, tps={"gamma": {"mean": 80, "sd": 20}})},
    )
    ones = json.loads(json.dumps(base))
    ones["models"]["m"]["conditions"] = {"ttft_x": 1, "output_tps_x": 1}
    a, _ = both(base, 100)
    b, _ = both(ones, 100)
    assert_frames_identical(a.runs, b.runs)
    assert_frames_identical(a.calls, b.calls)
