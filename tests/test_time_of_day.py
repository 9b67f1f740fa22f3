"""Provider conditions by time of day (issue 16 item 4; agentsim.plan.time_of_day).

Every expected number here is worked out by hand in the comments: a closed workload queueing for one
slot through a slow hour, a call that runs over an hour boundary (the factor at its start holds), the
linear curve between hour midpoints, and the TTFT factor leaving the prefill term alone.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from agentsim.cli.main import app
from agentsim.model.loading import ScenarioError
from agentsim.plan.compiler import compile_plan
from agentsim.plan.time_of_day import Curve, TimeOfDay
from agentsim.sim.simulation import EngineError, choose_engine, des_reasons, simulate_plan
from conftest import assert_frames_identical, make, model, scenario


def hourly(**at) -> list[float]:
    """24 factors of 1 except the hours given as h14=0.5."""
    out = [1.0] * 24
    for k, v in at.items():
        out[int(k[1:])] = v
    return out


def slow_afternoon_workload(duration_s=7000, slow=0.5) -> dict:
    # two agents, one slot: each run is one call of 3600 tokens at 10 tok/s (360 s), 720 s from 14:00 to 15:00
    return {
        "name": "diurnal",
        "models": {
            "m": {
                "price": {"input_mtok": 1, "output_mtok": 1},
                "ttft": 0,
                "output_tps": 10,
                "conditions": {"time_of_day": {"output_tps_x": {"hourly": hourly(h14=slow)}}},
            }
        },
        "limits": {"acct": {"models": ["m"], "concurrency": 1, "policy": "queue"}},
        "workload": {"concurrent": 2, "duration": {"seconds": duration_s}, "start": "13:00"},
        "agent": {"steps": [{"call": {"output": 3600}}]},
    }


def test_a_queue_through_the_slow_hour_by_hand():
    # The slot serves calls back to back: call k starts at S_k and takes 360 s, or 720 s when S_k falls in
    # 14:00-15:00 (t in [3600, 7200)). S = 0, 360, ..., 3240 (ten fast calls), 3600, 4320, 5040, 5760, 6480
    # (five slow), 7200, 7560 (fast again). Agents alternate, so run k is submitted when the other agent's
    # call starts, S_{k-1} (runs 0 and 1 at 0): wall_k = S_{k+1} - S_{k-1}, queue_k = S_k - S_{k-1}.
    # Counted runs are those submitted by 7000 s: k = 0..15.
    res = simulate_plan(compile_plan(make(slow_afternoon_workload())), 1, 1)
    calls = res.calls.sort_values("t_start")
    S = [360.0 * k for k in range(10)] + [3600.0, 4320.0, 5040.0, 5760.0, 6480.0, 7200.0]
    assert calls["t_start"].tolist() == S  # the calls of the counted runs
    assert calls["tps"].tolist() == [10.0] * 10 + [5.0] * 5 + [10.0]
    runs = res.runs[res.runs["counted"]].sort_values("run")
    walls = [360.0, 720.0] + [720.0] * 8 + [1080.0, 1440.0, 1440.0, 1440.0, 1440.0, 1080.0]
    assert runs["wall_time_s"].tolist() == walls
    queue = [0.0] + [360.0] * 10 + [720.0] * 5
    assert runs["queue_s"].tolist() == queue
    v = res.summary_dict()["variants"]["baseline"]
    assert v["wall_time_s"]["mean"] == pytest.approx(14760 / 16)  # 922.5 s
    assert v["limits"]["queue_wait_s"]["mean"] == pytest.approx(sum(queue) / 16)  # (10 x 360 + 5 x 720) / 16
    flat = simulate_plan(compile_plan(make(slow_afternoon_workload(slow=1.0))), 1, 1)
    # without the slow hour S_k = 360 k, runs 0..20 are submitted by 7000 s: (360 + 20 x 720) / 21 = 702.9 s
    assert flat.summary_dict()["variants"]["baseline"]["wall_time_s"]["mean"] == pytest.approx(14760 / 21)
    # throughput: ten calls finish in 13:00-14:00, five in 14:00-15:00
    ends = calls["t_end"].to_numpy()
    assert ((ends > 0) & (ends <= 3600)).sum() == 10 and ((ends > 3600) & (ends <= 7200)).sum() == 5


def _chain(start: str, tod: dict, steps=None, runs=1, **model_kw) -> dict:
    m = model(ttft=2.0, tps=10.0, conditions={"time_of_day": tod}, **model_kw)
    return scenario(
        steps or [{"call": {"name": "a", "output": 3600}}, {"call": {"name": "b", "output": 3600}}],
        models={"m": m},
        runs=runs,
        workload={"start": start},
    )


def test_a_call_over_an_hour_boundary_keeps_the_factor_of_its_start():
    # From 13:57: call a starts in hour 13 (factors 1): TTFT 2 + 1000/1000 prefill = 3 s, decode 360 s, so it
    # ends at 14:03:03 having run 3 minutes into the slow hour at full speed. Call b starts in hour 14: TTFT
    # 2 x 3 + 1 (the prefill term is not multiplied) = 7 s, decode 3600 / (10 x 0.5) = 720 s.
    tod = {"ttft_x": {"hourly": hourly(h14=3.0)}, "output_tps_x": {"hourly": hourly(h14=0.5)}}
    steps = [
        {"call": {"name": "a", "input": 1000, "output": 3600}},
        {"call": {"name": "b", "input": 1000, "output": 3600}},
    ]
    res = simulate_plan(compile_plan(make(_chain("13:57", tod, steps, prefill_tps=1000))), 1, 1)
    calls = res.calls.set_index("step")
    assert calls.loc["a", "ttft_s"] == 3.0 and calls.loc["a", "tps"] == 10.0
    assert calls.loc["b", "t_start"] == 363.0
    assert calls.loc["b", "ttft_s"] == 7.0 and calls.loc["b", "tps"] == 5.0
    assert calls.loc["b", "t_end"] == 363.0 + 727.0
    assert res.runs["wall_time_s"].tolist() == [1090.0]


def test_linear_curve_between_hour_midpoints():
    # linear: the factor is F[13] at 13:30 and F[14] at 14:30. From 13:45, p = 13.75 - 0.5 = 13.25, so call a
    # runs at 10 x (1 + (0.5 - 1) x 0.25) = 8.75 tok/s: 2 + 3600 / 8.75 s. Call b starts 13:45 + that.
    tod = {"output_tps_x": {"hourly": hourly(h14=0.5), "curve": "linear"}}
    res = simulate_plan(compile_plan(make(_chain("13:45", tod))), 1, 1)
    calls = res.calls.set_index("step")
    assert calls.loc["a", "tps"] == 8.75
    d_a = 2.0 + 3600 / 8.75
    assert calls.loc["b", "t_start"] == pytest.approx(d_a, rel=1e-15)
    p = (13 * 3600 + 45 * 60 + d_a) / 3600 - 0.5 - 13  # hours past 13:30
    assert calls.loc["b", "tps"] == pytest.approx(10 * (1 - 0.5 * p), rel=1e-12)
    # wrapping: between 23:30 and 00:30 the line joins F[23] and F[0]
    c = Curve(np.array(hourly(h23=3.0)), linear=True)
    assert c.at(0.0) == pytest.approx(2.0) and c.at(23.5 * 3600) == 3.0 and c.at(0.5 * 3600) == 1.0


def test_the_one_rule_gives_the_same_bits_for_one_time_and_for_many():
    rng = np.random.default_rng(4)
    vals = rng.uniform(0.3, 3.0, 24)
    t = np.concatenate([rng.uniform(0, 3 * 86400, 500), np.arange(0, 86400 * 2, 1800.0), [86400 - 1e-9]])
    for linear in (False, True):
        tod = TimeOfDay(9 * 3600.0, Curve(vals, linear), Curve(vals[::-1].copy(), linear))
        fx, fy = tod.factors(t)
        one = np.array([tod.factors(float(x)) for x in t])
        assert np.array_equal(one[:, 0], fx) and np.array_equal(one[:, 1], fy)
    # steps: the hour's factor, wrapping every 24 h from the start clock
    tod = TimeOfDay(9 * 3600.0, Curve(vals, False), None)
    assert tod.factors(0.0) == (vals[9], 1.0) and tod.factors(15 * 3600.0 + 1)[0] == vals[0]


def test_replications_start_at_the_clock_and_only_the_des_runs_them():
    tod = {"output_tps_x": {"hourly": hourly(h14=0.5)}}
    plan = compile_plan(make(_chain("14:10", tod, runs=3)))
    reasons = des_reasons(plan)
    assert any("time of day" in r for r in reasons)
    assert choose_engine(plan) == "des"
    with pytest.raises(EngineError, match="time_of_day"):
        choose_engine(plan, "fastpath")
    res = simulate_plan(plan, 3, 1)
    assert res.runs["wall_time_s"].tolist() == [2 * (2 + 720.0)] * 3  # every replication starts at 14:10


def test_without_time_of_day_a_start_changes_nothing():
    base = scenario(
        [{"repeat": {"times": 3, "steps": [{"call": {"input": 100, "output": 50}}]}}],
        models={"m": model(ttft={"lognormal": {"median": 1, "p90": 2}}, tps={"gamma": {"mean": 80, "sd": 20}})},
        runs=50,
    )
    started = json.loads(json.dumps(base))
    started["workload"] = {"start": "14:00"}
    a = simulate_plan(compile_plan(make(base)), 50, 3, engine="fastpath")
    b = simulate_plan(compile_plan(make(started)), 50, 3, engine="fastpath")
    assert_frames_identical(a.runs, b.runs)
    assert_frames_identical(a.calls, b.calls)


@pytest.mark.parametrize(
    ("patch", "expect"),
    [
        ({"workload": None}, "need the clock time"),
        ({"workload": {"start": 840}}, "unquoted 14:00"),
        ({"workload": {"start": "25:00"}}, '"HH:MM" or "HH:MM:SS"'),
        ({"workload": {"start": "9h"}}, '"HH:MM" or "HH:MM:SS"'),
        ({"workload": {"start": "9:5"}}, '"HH:MM" or "HH:MM:SS"'),
        ({"hourly": [1.0] * 23}, "24"),
        ({"hourly": [1.0] * 23 + [0.0]}, "greater than 0"),
    ],
)
def test_bad_time_of_day_input_is_refused_with_its_place(patch, expect):
    doc = _chain("13:00", {"output_tps_x": {"hourly": hourly()}})
    if "workload" in patch:
        if patch["workload"] is None:
            del doc["workload"]
        else:
            doc["workload"] = patch["workload"]
    else:
        doc["models"]["m"]["conditions"]["time_of_day"]["output_tps_x"]["hourly"] = patch["hourly"]
    with pytest.raises(ScenarioError) as e:
        compile_plan(make(doc))
    assert expect in str(e.value)


def test_cli_says_where_the_start_is_missing(tmp_path):
    import yaml

    doc = _chain("13:00", {"output_tps_x": {"hourly": hourly()}})
    del doc["workload"]
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(doc))
    res = CliRunner().invoke(app, ["validate", str(p)])
    assert res.exit_code == 2
    assert "models.m.conditions.time_of_day" in res.output and 'workload: {start: "09:00"}' in res.output


def test_a_fallback_attempt_reads_its_own_models_factors():
    # From 14:00, m (speed halved in hour 14) fails every attempt at its first token (1 s); after one
    # failure the call falls back, without back-off, to n, which has no slow hours: 1 + 100/100 = 2 s.
    # The attempt on n is timed and recorded at n's own speed.
    tod = {"output_tps_x": {"hourly": hourly(h14=0.5)}}
    m = model(
        ttft=1.0,
        tps=100.0,
        conditions={"time_of_day": tod},
        error_rate=1.0,
        retry={"max_attempts": 2, "backoff_base": 0, "jitter": "none"},
        fallback={"model": "n", "after": 1},
    )
    doc = scenario(
        [{"call": {"model": "m", "output": 100}}], models={"m": m, "n": model()}, workload={"start": "14:00"}
    )
    res = simulate_plan(compile_plan(make(doc)), 1, 1)
    call = res.calls.iloc[0]
    assert call["t_start"] == 1.0 and call["t_end"] == 3.0 and call["tps"] == 100.0
    assert res.runs["wall_time_s"].tolist() == [3.0]
