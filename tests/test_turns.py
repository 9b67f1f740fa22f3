"""``turns`` (contract v1.3): a conversation of the person's turns, worked out by hand, on both engines.

The hand case is two turns of an agent loop with a subagent, and a pause of the person longer than the
prompt cache's 5-minute lifetime between them; every figure of it is computed in the comments.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from typer.testing import CliRunner

import agentsim
from agentsim.cli.main import app
from agentsim.model.loading import ScenarioError

ENGINES = ("fastpath", "des")

HAND = """
name: two-turns
seed: 3
runs: 5
models:
  m:
    price: {input_mtok: 1, output_mtok: 5, cache_read_mtok: 0.1, cache_write_mtok: 1.25}
    ttft: 1
    output_tps: 50
workflows:
  explore:
    context: {system: 20000, grows: true, cache: true}
    steps:
      - call: {name: s0, model: m, input: 1000, output: 50}
      - tool: {name: grep, latency: 2, output: 500}
      - call: {name: s1, model: m, output: 100}
agent:
  context: {system: 100000, grows: true, cache: true}
  steps:
    - turns:
        n: 2
        think: 365
        steps:
          - call: {name: act, model: m, input: 1000, output: 100}
          - subagent: {workflow: explore, output: 300}
          - call: {name: answer, model: m, input: 500, output: 200}
"""


def _load(tmp_path, text: str, name: str = "s.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.mark.parametrize("engine", ENGINES)
def test_two_turns_with_a_subagent_and_an_expired_cache_by_hand(tmp_path, engine):
    res = agentsim.simulate(_load(tmp_path, HAND), engine=engine)
    v = res.summary_dict()["variants"]["baseline"]
    # a turn: act 1 + 100/50 = 3 s; the subagent s0 1 + 1 = 2 s, its tool 2 s, s1 1 + 2 = 3 s (7 s); answer
    # 1 + 200/50 = 5 s: 15 s. Turn 1 [0, 15], the person's pause 365 s, turn 2 [380, 395].
    assert v["wall_time_s"]["mean"] == 395.0
    assert (v["waiting_s"]["mean"], v["turns"]["mean"], v["turn_s"]["mean"], v["turn_s"]["p99"]) == (
        30.0,
        2,
        15.0,
        15.0,
    )
    assert v["breakdown_s"]["think"] == 365.0 and v["breakdown_s"]["ttft"] == 8.0 and v["breakdown_s"]["decode"] == 18.0
    # Tokens (main context 100,000; the subagent's 20,000, fresh each turn):
    #   turn 1: act writes 101,000; s0 writes 21,000; s1 reads 21,000, writes 550; the subagent's 300 join the main
    #   context; answer (101,900) reads act's 101,000 (7 s old), writes 900.
    #   turn 2: act (103,100) finds answer's entry 365 s old (> 300 s): reads nothing, writes 103,100; the
    #   subagent as before; answer (104,000) reads 103,100, writes 900.
    assert v["tokens"]["cache_read"] == 21_000 + 101_000 + 21_000 + 103_100
    assert v["tokens"]["cache_write"] == 101_000 + 21_000 + 550 + 900 + 103_100 + 21_000 + 550 + 900
    # cost: 249,000 written at $1.25/M, 246,100 read at $0.10/M, 900 output at $5/M
    assert math.isclose(v["cost_usd"]["mean"], 0.31125 + 0.02461 + 0.0045, rel_tol=1e-12)
    assert round(v["cost_usd"]["mean"], 2) == 0.34


def test_a_one_hour_cache_outlives_the_pause(tmp_path):
    text = HAND.replace("context: {system: 100000, grows: true, cache: true}",
                        "context: {system: 100000, grows: true, cache: {ttl: 1h}}")  # fmt: skip
    v = agentsim.simulate(_load(tmp_path, text)).summary_dict()["variants"]["baseline"]
    # turn 2's act now reads answer's 101,900 and writes 1,200
    assert v["tokens"]["cache_read"] == 21_000 + 101_000 + 21_000 + 101_900 + 103_100
    assert v["tokens"]["cache_write_1h"] == 101_000 + 900 + 1_200 + 900


def test_the_runs_and_spans_tables_say_what_the_person_waited(tmp_path):
    res = agentsim.simulate(_load(tmp_path, HAND))
    assert (res.runs["waiting_s"] == 30.0).all() and (res.runs["turns"] == 2).all()
    assert (res.runs["think_s"] == 365.0).all()
    think = res.spans[res.spans["slot"] == "think"]
    assert len(think) == 5 and (think["t_end"] - think["t_start"] == 365.0).all()
    assert set(think["instance"]) == {1}  # no pause before the first turn


def test_without_turns_a_run_waits_its_wall_time(tmp_path):
    text = """
name: plain
runs: 200
models:
  m: {price: {input_mtok: 1, output_mtok: 5}, ttft: {lognormal: {median: 1, p90: 3}}, output_tps: 50}
agent:
  steps:
    - call: {name: a, model: m, output: 100}
"""
    res = agentsim.simulate(_load(tmp_path, text))
    v = res.summary_dict()["variants"]["baseline"]
    assert (res.runs["waiting_s"] == res.runs["wall_time_s"]).all() and (res.runs["turns"] == 1).all()
    assert v["waiting_s"]["mean"] == v["wall_time_s"]["mean"] and v["turn_s"]["p95"] == v["wall_time_s"]["p95"]
    assert v["vs_baseline"]["basis"] == "wall_time_s"


def test_turns_and_pauses_drawn_match_their_expectations(tmp_path):
    """E[waiting] = E[n] × turn; E[wall] = E[waiting] + (E[n] - 1) E[think] (n and think independent), each
    within 4 standard errors of the sample, and the turns rounded and at least 1."""
    text = """
name: drawn
seed: 11
runs: 4000
models:
  m: {price: {input_mtok: 1, output_mtok: 5}, ttft: 1, output_tps: 100}
agent:
  steps:
    - turns:
        n: {uniform: {low: 0, high: 6}}
        think: {exponential: {mean: 60}}
        steps:
          - call: {name: a, model: m, output: 100}
"""
    runs = agentsim.simulate(_load(tmp_path, text)).runs
    n = runs["turns"].to_numpy()
    # rint of U(0, 6), at least 1: P(1) = P(u < 1.5) = 1.5/6; P(2) .. P(5) = 1/6; P(6) = 0.5/6
    expect = {1: 1.5 / 6, 2: 1 / 6, 3: 1 / 6, 4: 1 / 6, 5: 1 / 6, 6: 0.5 / 6}
    for k, p in expect.items():
        se = math.sqrt(p * (1 - p) / n.size)
        assert abs((n == k).mean() - p) < 4 * se, k
    assert np.allclose(runs["waiting_s"], 2.0 * n, rtol=0, atol=1e-9)  # each turn 1 + 100/100 s (end - start)
    pause = (runs["wall_time_s"] - runs["waiting_s"]).to_numpy()
    mean_n = sum(k * p for k, p in expect.items())
    var_n = sum(k * k * p for k, p in expect.items()) - mean_n**2
    # Var[(n-1) X] for X ~ Exp(60) independent of n: E[(n-1)^2] E[X^2] - (E[n-1] E[X])^2
    var = ((mean_n - 1) ** 2 + var_n) * 2 * 60.0**2 - ((mean_n - 1) * 60.0) ** 2
    assert abs(pause.mean() - (mean_n - 1) * 60.0) < 4 * math.sqrt(var / pause.size)


@pytest.mark.parametrize("engine", ENGINES)
def test_an_slo_on_each_turn_counts_turns(tmp_path, engine):
    text = HAND.replace("n: 2\n", "n: {choice: {values: [1, 3], p: [0.5, 0.5]}}\n").replace(
        "runs: 5", "runs: 400\nslo: {turn_s: 15, waiting_s: 20}"
    )
    res = agentsim.simulate(_load(tmp_path, text), engine=engine)
    slo = res.summary_dict()["variants"]["baseline"]["slo"]
    turns = int(res.runs["turns"].sum())
    # every turn takes 15 s: all within 15 s; a run waits 15 s (1 turn) or 45 s (3 turns)
    every = {"mean": 15.0, "p50": 15.0, "p95": 15.0, "p99": 15.0}  # the turns' own distribution: all 15 s
    assert (
        slo["turn_s"]
        == {"target": 15.0, "share": 1.0, "ci95": slo["turn_s"]["ci95"], "runs": 400, "turns": turns} | every
    )
    one = int((res.runs["turns"] == 1).sum())
    assert slo["waiting_s"]["share"] == one / 400 and slo["all"]["share"] == one / 400
    tight = agentsim.simulate(_load(tmp_path, text.replace("turn_s: 15", "turn_s: 14.9"), "t.yaml"), engine=engine)
    assert tight.summary_dict()["variants"]["baseline"]["slo"]["turn_s"]["share"] == 0.0


def test_value_of_time_is_weighed_against_waiting_with_turns(tmp_path):
    text = (
        HAND.replace("runs: 5", "runs: 5\nvalue_of_time: {usd_per_hour: 100}")
        + """
variants:
  standard: {}
  quick: {model: {act: quick, answer: quick}}
"""
    )
    quick = "  quick:\n    price: {input_mtok: 2, output_mtok: 10}\n    ttft: 1\n    output_tps: 100\n"
    text = text.replace("    output_tps: 50\n", "    output_tps: 50\n" + quick, 1)
    doc = agentsim.simulate(_load(tmp_path, text)).summary_dict()["variants"]
    vs = doc["quick"]["vs_baseline"]
    assert vs["basis"] == "waiting_s"
    # quick decodes act and answer twice as fast: each turn 1 + 1 + 7 + 1 + 2 = 12 s, 6 s saved in 2 turns
    assert math.isclose(vs["delta_waiting_s"], -6.0) and math.isclose(vs["delta_time_s"], -6.0)
    assert math.isclose(vs["usd_per_hour_saved"], vs["delta_cost_usd"] / (6.0 / 3600.0), rel_tol=1e-12)
    assert doc["standard"]["total_cost_usd"]["basis"] == "waiting_s"
    assert math.isclose(
        doc["standard"]["total_cost_usd"]["mean"], doc["standard"]["cost_usd"]["mean"] + 100 * 30 / 3600
    )


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ("    - parallel:\n        - turns: {n: 2, steps: [{call: {model: m, output: 5}}]}\n"
         "        - call: {model: m, output: 5}\n", "cannot run inside a parallel"),
        ("    - turns:\n        n: 2\n        steps:\n"
         "          - turns: {n: 2, steps: [{call: {model: m, output: 5}}]}\n", "cannot be inside another turns"),
        ("    - turns: {n: 2, think: -3, steps: [{call: {model: m, output: 5}}]}\n", "think"),
    ],
)  # fmt: skip
def test_turns_where_a_person_cannot_wait_are_refused(tmp_path, steps, message):
    text = (
        "name: bad\nmodels:\n  m: {price: {input_mtok: 1, output_mtok: 1}, ttft: 1, output_tps: 10}\nagent:\n  steps:\n"
    )
    p = _load(tmp_path, text + steps)
    with pytest.raises(ScenarioError, match=message):
        agentsim.load(p)
    r = CliRunner().invoke(app, ["validate", str(p)])
    assert r.exit_code == 2 and "Traceback" not in r.output


def test_both_engines_agree_on_a_drawn_conversation(tmp_path):
    text = (
        HAND.replace("n: 2", "n: {lognormal: {median: 2, p90: 6}}")
        .replace("think: 365", "think: {lognormal: {median: 99, p90: 1300}}")
        .replace("runs: 5", "runs: 300")
    )
    a = agentsim.simulate(_load(tmp_path, text), engine="fastpath")
    b = agentsim.simulate(_load(tmp_path, text), engine="des")
    for col in ("wall_time_s", "waiting_s", "turns", "cost_usd", "cache_read_tokens", "think_s"):
        assert np.array_equal(a.runs[col].to_numpy(), b.runs[col].to_numpy()), col
    da, db = a.summary_dict(), b.summary_dict()
    da.pop("engine"), db.pop("engine")
    assert da == db


LONG = """
name: long-conversation
seed: 5
runs: 300
models:
  m: {price: {input_mtok: 1, output_mtok: 5}, ttft: 1, output_tps: 50}
agent:
  context: {system: 2000, grows: true, cache: true}
  steps:
    - turns:
        n: {choice: {values: [1, 4, 150], p: [0.5, 0.49, 0.01]}}
        think: 60
        steps:
          - call: {name: step, model: m, input: 50, output: 20}
          - repeat:
              times: {choice: {values: [0, 2, 200], p: [0.5, 0.49, 0.01]}}
              steps:
                - tool: {name: tool, latency: 2, output: 30}
                - call: {name: step, model: m, input: 50, output: 20}
"""


def test_a_long_conversation_runs_in_smaller_blocks_with_the_same_numbers_everywhere(tmp_path):
    """150 turns of up to 200 more steps: a run may hold 30,000 calls, so a block holds fewer runs than 4096
    (the plan alone decides how many), and the engines and the worker count still agree."""
    from agentsim.plan.compiler import compile_plan
    from agentsim.plan.sizeguard import BLOCK, runs_per_block

    path = _load(tmp_path, LONG)
    size = runs_per_block(compile_plan(agentsim.load(path)))
    assert 1 <= size < BLOCK and size & (size - 1) == 0
    a = agentsim.simulate(path, engine="fastpath")
    b = agentsim.simulate(path, engine="fastpath", workers=2)
    c = agentsim.simulate(path, engine="des")
    for other in (b, c):
        for col in ("wall_time_s", "waiting_s", "turns", "cost_usd"):
            assert np.array_equal(a.runs[col].to_numpy(), other.runs[col].to_numpy()), col
    assert a.runs["turns"].max() <= 150
