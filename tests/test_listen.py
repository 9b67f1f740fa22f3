"""The ``listen`` step (contract v1.2): a voice turn's input side, end-pointing then speech-to-text.

Hand-computed timelines (its seconds, its breakdown slot, its span rows, the start both engines keep
per run and instance), a Monte-Carlo check of its drawn duration, and its refusals.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from agentsim.model.loading import ScenarioError
from agentsim.plan.compiler import compile_plan
from agentsim.plan.sampling import block_spans
from agentsim.sim.simulation import simulate_block
from conftest import make, model, run, scenario

ENGINES = ("des", "fastpath")
ANSWER = {"call": {"name": "answer", "input": 30, "output": 20}}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_listen_takes_end_of_speech_plus_stt_in_its_own_slot(engine):
    steps = [{"listen": {"name": "user", "end_of_speech": 0.2, "stt": 0.3}}, ANSWER]
    res = run(scenario(steps, models={"m": model(ttft=0.3, tps=40.0)}, context={"grows": True}, runs=4), engine=engine)
    v = res.summary_dict()["variants"]["baseline"]
    # 0.2 + 0.3 s of listening, then TTFT 0.3 s and 20 tokens at 40 tokens/s
    assert v["wall_time_s"]["mean"] == pytest.approx(0.5 + 0.3 + 0.5)
    assert v["breakdown_s"]["listen"] == pytest.approx(0.5)
    assert v["breakdown_s"]["wait"] == 0.0 and v["breakdown_s"]["tool"] == 0.0
    assert v["tokens"]["input"] == 30  # it adds nothing to the context
    spans = res.spans
    assert list(spans["kind"]) == ["listen"] * 4 and list(spans["step"]) == ["user"] * 4
    assert (spans["t_start"] == 0.0).all() and np.allclose(spans["t_end"], 0.5)
    assert res.runs["listen_s"].tolist() == pytest.approx([0.5] * 4)
    calls = res.calls
    assert np.allclose(calls["t_start"], 0.5)  # the answer is sent once the words are recognised


def test_a_plan_without_listen_reports_no_listen_slot():
    res = run(scenario([ANSWER], runs=3))
    assert "listen" not in res.summary_dict()["variants"]["baseline"]["breakdown_s"]
    assert "listen_s" not in res.runs


@pytest.mark.parametrize("summary_only", [False, True])
def test_both_engines_keep_each_listen_start_the_end_of_the_users_speech(summary_only):
    # three turns: the user speaks (a wait), the agent listens and answers; each listen starts when speech ends
    turn = [{"wait": {"latency": 2}}, {"listen": {"end_of_speech": 0.2, "stt": 0.3}}, ANSWER]
    doc = scenario(
        [{"repeat": {"times": {"choice": {"values": [1, 3]}}, "steps": turn}}],
        models={"m": model(ttft=0.3, tps=40.0)},
        runs=40,
    )
    plan = compile_plan(make(doc))
    (listen,) = plan.nodes_of("listen")
    span = block_spans(40)[0]
    des = simulate_block(plan, 1, span, "des")[1][0].starts[listen.id]
    fast = simulate_block(plan, 1, span, "fastpath", summary_only=summary_only)[1][0].starts[listen.id]
    assert des.shape == fast.shape == (40, 3)
    np.testing.assert_array_equal(des, fast)
    # a turn lasts 2 + 0.5 + 0.3 + 0.5 = 3.3 s: turn i's listen starts at 3.3 i + 2
    made = ~np.isnan(des)
    assert made[:, 0].all() and (made.sum(axis=1) >= 1).all() and {1, 3} == set(made.sum(axis=1))
    expected = np.array([3.3 * i + 2.0 for i in range(3)])
    np.testing.assert_allclose(np.where(made, des, 0.0), np.where(made, expected, 0.0), rtol=0, atol=1e-12)


def test_drawn_durations_have_their_means():
    # end_of_speech uniform(0.1, 0.5) (mean 0.3) and stt lognormal {mean 0.4, sd 0.2}: the step lasts 0.7 s on average
    steps = [
        {
            "listen": {
                "end_of_speech": {"uniform": {"low": 0.1, "high": 0.5}},
                "stt": {"lognormal": {"mean": 0.4, "sd": 0.2}},
            }
        }
    ]
    res = run(scenario(steps, runs=20000))
    x = res.runs["listen_s"].to_numpy()
    se = math.sqrt((0.4**2 / 12 + 0.2**2) / x.size)
    assert abs(x.mean() - 0.7) < 5 * se
    assert x.min() > 0.1


def test_a_listen_that_can_go_negative_is_refused():
    steps = [{"listen": {"end_of_speech": {"normal": {"mean": 0.2, "sd": 0.1}}}}, ANSWER]
    with pytest.raises(ScenarioError, match="end of speech cannot be negative"):
        compile_plan(make(scenario(steps)))
    with pytest.raises(ScenarioError, match="unknown key 'stt_s'"):
        make(scenario([{"listen": {"stt_s": 0.3}}]))
