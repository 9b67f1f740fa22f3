"""The shared simulation rules (agentsim.sim.rules): hand-computed values, scalar and array forms agreeing,
and the rules seen through both engines (a tie at a join, a cut fan-out of one-call branches)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agentsim.sim import rules
from conftest import model, run, scenario

ENGINES = ["des", "fastpath"]


def test_call_timing_by_hand():
    # 0.5 s drawn TTFT + (3000 - 1000 cached) tokens at 4000 tok/s of prefill = 1.0 s
    assert rules.first_token(0.5, 3000, 1000, 4000.0) == 1.0
    assert rules.first_token(0.5, 3000, 0, math.inf) == 0.5  # no prefill term
    assert rules.decode(200, 100, 60.0) == 5.0  # 300 tokens at 60 tok/s
    assert rules.duration(1.0, 5.0) == 6.0
    assert rules.duration(1.0, 5.0, 2.0) == 8.0  # a 2 s stall
    assert rules.first_visible(10.0, 1.0, 100, 50.0) == 13.0  # 100 reasoning tokens first, unseen


def test_timing_keeps_the_order_of_operations():
    # (ttft + dec) + stall, not ttft + (dec + stall): these differ in the last bit
    ttft, dec, stall = 0.1, 0.2, 0.3
    assert rules.duration(ttft, dec, stall) == (ttft + dec) + stall
    assert rules.duration(ttft, dec, stall) != ttft + (dec + stall)
    a = np.array([ttft, 1.0])
    assert rules.duration(a, np.array([dec, 2.0]), np.array([stall, 0.0])).tolist() == [(ttft + dec) + stall, 3.0]


@pytest.mark.parametrize(
    ("T", "expect"),
    [
        (0.5, (0, 0)),  # before the first token (t0 + ttft = 1 s): nothing generated
        (1.0, (0, 0)),  # at the first token: still nothing
        (3.5, (0, 25)),  # 2.5 s x 10 tok/s = 25 tokens, all reasoning (30 come first)
        (5.0, (10, 30)),  # 40 tokens: 30 reasoning, then 10 visible
        (100.0, (50, 30)),  # capped at what the call would have generated
    ],
)
def test_cut_tokens_by_hand(T, expect):
    # a call started at 0, TTFT 1 s, 10 tok/s, 50 visible and 30 reasoning tokens, cut at T
    assert rules.cut_tokens(T, 0.0, 1.0, 10.0, 50, 30) == expect
    vis, rb = rules.cut_tokens_array(np.array([T]), np.array([1.0]), np.array([10.0]), np.array([50]), np.array([30]))
    assert (int(vis[0]), int(rb[0])) == expect


def test_an_error_generates_nothing():
    assert rules.cut_tokens(5.0, 0.0, 1.0, 10.0, 50, 30, generating=False) == (0, 0)


def test_cut_tokens_scalar_and_array_agree():
    rng = np.random.default_rng(3)
    n = 2000
    t0 = rng.uniform(0, 5, n)
    ttft = rng.exponential(1.0, n)
    tps = rng.uniform(5, 200, n)
    out = rng.integers(0, 500, n)
    reas = rng.integers(0, 300, n)
    T = t0 + rng.uniform(0, 8, n)
    vis, rb = rules.cut_tokens_array(T, t0 + ttft, tps, out, reas)
    for i in range(n):
        expect = rules.cut_tokens(float(T[i]), float(t0[i]), float(ttft[i]), float(tps[i]), int(out[i]), int(reas[i]))
        assert (int(vis[i]), int(rb[i])) == expect


def test_join_all_tie_goes_to_the_last_branch():
    assert rules.critical_all([3.0, 5.0, 5.0, 1.0]) == 2
    assert rules.critical_all([2.0]) == 0
    assert rules.critical_all_array(np.array([[3.0, 5.0, 5.0, 1.0], [7.0, 5.0, 5.0, 1.0]])).tolist() == [2, 0]


def test_race_ranks_by_end_then_branch_order():
    ends = [4.0, 2.0, 2.0, None, 1.0]  # branch 3 did not finish
    assert rules.race(ends, 1) == (4, [4])
    assert rules.race(ends, 2) == (1, [1, 4])
    assert rules.race(ends, 3) == (2, [1, 2, 4])  # the tie at 2.0: branch 1 before branch 2
    arr = np.array([[4.0, 2.0, 2.0, np.inf, 1.0]])
    for k, (crit, winners) in ((1, (4, [4])), (2, (1, [1, 4])), (3, (2, [1, 2, 4]))):
        c, w = rules.race_array(arr, k)
        assert c.tolist() == [[crit]]
        assert np.flatnonzero(w[0]).tolist() == winners


def test_join_rules_scalar_and_array_agree():
    rng = np.random.default_rng(5)
    ends = rng.integers(0, 4, (500, 6)).astype(float)  # small integers: many ties
    ks = rng.integers(1, 7, 500)
    crit_all = rules.critical_all_array(ends)
    crit_k, win_k = rules.race_array(ends, ks)
    for i in range(500):
        row = ends[i].tolist()
        assert crit_all[i] == rules.critical_all(row)
        crit, winners = rules.race(row, int(ks[i]))
        assert crit_k[i, 0] == crit
        assert np.flatnonzero(win_k[i]).tolist() == winners


def test_breakdown_of_a_cut_call_and_a_pipeline_lead_in():
    # started at 2 s, TTFT 1.5 s, cut at 10 s after 0.5 s of stall: 8 - 1.5 - 0.5 = 6 s of decode
    assert rules.cut_decode(10.0, 2.0, 1.5, 0.5) == 6.0
    # a pipeline starting 1 s after the call: all of it TTFT (1.5 s not yet over)
    assert [float(x) for x in rules.lead_in(2.0, 3.0, 1.5, 0.0)] == [1.0, 0.0]
    # starting 4 s after: 1.5 s TTFT, 4 - 1.5 - 0.5 stalled = 2 s decode
    assert [float(x) for x in rules.lead_in(2.0, 6.0, 1.5, 0.5)] == [1.5, 2.0]
    # the engines' slots first, then the step kinds' own in the vocabulary's order: listen's is the first of those
    from agentsim.sim import slots

    assert (rules.Q, rules.TTFT, rules.DEC, rules.STALL, slots.index("listen")) == (0, 1, 2, 5, 6)
    assert slots.names()[:7] == ("queue", "ttft", "decode", "tool", "wait", "stall", "listen")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("shape", ["parallel", "fanout"])
def test_tie_at_a_join_takes_the_last_branch_breakdown(engine, shape):
    # Model m: 1 s TTFT + 200 tokens at 100 tok/s = ends at 3 s (1 s TTFT, 2 s decode).
    # Model n: 2 s TTFT + 200 tokens at 200 tok/s = ends at 3 s too (2 s TTFT, 1 s decode).
    # The tie goes to the later branch (n's): the breakdown is 2 s TTFT + 1 s decode.
    a = {"call": {"model": "m", "input": 0, "output": 200}}
    b = {"call": {"model": "n", "input": 0, "output": 200}}
    if shape == "parallel":
        steps = [{"parallel": [a, b]}]
    else:  # copies of one call: the same ends, so the last copy is critical (its numbers are the same)
        steps = [{"parallel": [{"fanout": {"n": 3, "steps": [a]}}, b]}]
    doc = scenario(steps, models={"m": model(), "n": model(ttft=2.0, tps=200.0)})
    res = run(doc, engine=engine)
    bd = res.summary_dict()["variants"]["baseline"]["breakdown_s"]
    assert res.runs["wall_time_s"].iloc[0] == pytest.approx(3.0)
    assert bd["ttft"] == pytest.approx(2.0)
    assert bd["decode"] == pytest.approx(1.0)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_race_cuts_a_fanout_of_one_call_branches(engine):
    # Branch A: 4 copies of a 1 s TTFT + 50 reasoning + 300 output call at 100 tok/s (4.5 s each).
    # Branch B: a 2 s wait wins. At 2 s each copy has generated 100 tokens: 50 reasoning + 50 output.
    doc = scenario(
        [
            {
                "parallel": {
                    "join": "any",
                    "branches": [
                        {
                            "fanout": {
                                "n": 4,
                                "steps": [{"call": {"name": "c", "input": 10, "output": 300, "reasoning": 50}}],
                            }
                        },
                        {"wait": {"latency": 2}},
                    ],
                }
            },
            {"call": {"name": "after", "input": 0, "output": 100}},
        ]
    )
    res = run(doc, engine=engine)
    assert res.runs["wall_time_s"].iloc[0] == pytest.approx(2.0 + 2.0)
    cut = res.calls[res.calls["step"] == "c"]
    assert len(cut) == 4
    assert (cut["status"] == "cancelled").all()
    assert (cut["t_end"] == 2.0).all()
    assert cut["reasoning_tokens"].tolist() == [50] * 4
    assert cut["output_tokens"].tolist() == [50] * 4
    assert cut["cost_usd"].sum() == pytest.approx(4 * (10 * 3e-6 + 100 * 15e-6))


# ---------------------------------------------------------------------------- speed by context size
def _piecewise(knots, values):
    from agentsim.plan.context_speed import Piecewise

    return Piecewise(tuple(float(k) for k in knots), tuple(float(v) for v in values))


def test_context_factor_by_hand():
    curve = _piecewise([0, 200000, 800000], [1, 0.9, 0.8])
    assert rules.context_factor(0, curve) == 1.0
    assert rules.context_factor(100000, curve) == 1.0 + (0.9 - 1.0) * 0.5  # halfway along the first segment
    assert rules.context_factor(200000, curve) == 0.9  # a knot: its own factor
    assert rules.context_factor(500000, curve) == 0.9 + (0.8 - 0.9) * 0.5
    assert rules.context_factor(800000, curve) == 0.8
    assert rules.context_factor(10**9, curve) == 0.8  # beyond the last knot: the last factor holds
    late = _piecewise([1000, 2000], [2, 3])
    assert rules.context_factor(0, late) == 2.0  # before the first knot: the first factor
    assert rules.context_factor(1500, late) == 2.5
    one = _piecewise([5000], [0.7])
    assert rules.context_factor(0, one) == 0.7 and rules.context_factor(10**6, one) == 0.7


def test_context_factor_scalar_and_array_agree():
    rng = np.random.default_rng(5)
    for knots, values in (
        ([0, 200000, 800000], [1, 0.9, 0.8]),
        ([1000, 1700, 9000, 123457], [0.3, 1.7, 0.9, 2.2]),
        ([5000], [0.7]),
    ):
        curve = _piecewise(knots, values)
        n = np.concatenate([rng.integers(0, 10**6, 3000), np.array(knots, dtype=np.int64), [0, knots[-1] + 1]])
        arr = rules.context_factor_array(n, curve)
        assert arr.tolist() == [rules.context_factor(int(x), curve) for x in n]
        ttft0, tps = rng.uniform(0.1, 5, n.size), rng.uniform(5, 200, n.size)
        from agentsim.plan.context_speed import ContextSpeed

        cs = ContextSpeed(curve, curve)
        a0, a1 = rules.context_speeds(ttft0, tps, n, cs)
        for i in range(0, n.size, 97):
            s0, s1 = rules.context_speeds(float(ttft0[i]), float(tps[i]), int(n[i]), cs)
            assert (s0, s1) == (a0[i], a1[i])


def test_a_flat_curve_compiles_to_nothing():
    from agentsim.model.scenario import ContextSpeedSpec
    from agentsim.plan.context_speed import compile_context_speed

    flat = ContextSpeedSpec(tokens=[0, 100000], output_tps_x=[1, 1], ttft_x=[1, 1])
    assert compile_context_speed(flat) is None
    half = compile_context_speed(ContextSpeedSpec(tokens=[0, 100000], output_tps_x=[1, 1], ttft_x=[1, 2]))
    assert half is not None and half.tps is None and half.ttft.values == (1.0, 2.0)
