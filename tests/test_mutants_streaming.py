"""Survivors of ``make mutate ONLY='$(MUTATE_STREAM)'`` (docs/validation.md §7), each killed by a hand-computed case.

The streaming rules (``sim/streaming.py``, ``sim/stalls.py``), what a consumer lives through
(``sim/stream_metrics.py`` and the consumer kinds' ``measure``), their summary (``sim/stream_stats.py``),
SLO attainment (``sim/slo.py``) and the workload loop (``sim/workload.py``). Every expected value is
worked out in the comments from the rules in the modules' docstrings: token 1 arrives at ``t0 + TTFT``,
token ``N`` at the call's end, evenly spaced; a stall before token ``i`` delays it and every later one.
"""

from __future__ import annotations

import numpy as np
import pytest

from agentsim.sim.slo import meets, slo_section, turn_values, wilson
from conftest import model, run, scenario

ENGINES = ["des", "fastpath"]


def baseline(res) -> dict:
    return res.summary_dict()["variants"]["baseline"]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_zero_token_call_stalls_as_stall_not_decode(engine):
    # output 0, TTFT 1 s, a certain single stall of 3 s: the call lasts 1 + 0 + 3 = 4 s, of which 3 s are stall
    # and none decode (there is nothing to decode); a per-token process has no opportunity (N - 1 < 1): 1 s.
    m = model(ttft=1.0, tps=10.0, stream={"stall": {"p": 1, "seconds": 3}})
    v = baseline(run(scenario([{"call": {"name": "a", "output": 0}}], models={"m": m}), engine=engine))
    assert v["wall_time_s"]["mean"] == 4.0
    assert v["breakdown_s"]["stall"] == 3.0 and v["breakdown_s"]["decode"] == 0.0
    m["stream"] = {"stall": {"per_token": 1, "seconds": 3}}
    v = baseline(run(scenario([{"call": {"name": "a", "output": 0}}], models={"m": m}), engine=engine))
    assert v["wall_time_s"]["mean"] == 1.0 and v["breakdown_s"]["stall"] == 0.0


# --------------------------------------------------------------------------- slo: targets on the turn


def test_wilson_interval_against_published_values():
    # Wilson score interval at 95% (Newcombe 1998, table I; z = 1.96): 8 of 10 -> [0.4902, 0.9433];
    # 1 of 10 -> [0.0179, 0.4042]; 0 of 10 -> [0, 0.2775]; 10 of 10 -> [0.7225, 1]; 0 of 1 -> [0, 0.7935].
    assert wilson(8, 10) == pytest.approx([0.4902, 0.9433], abs=5e-5)
    assert wilson(1, 10) == pytest.approx([0.0179, 0.4042], abs=5e-5)
    assert wilson(0, 10) == pytest.approx([0.0, 0.2775], abs=5e-5)
    assert wilson(10, 10) == pytest.approx([0.7225, 1.0], abs=5e-5)
    assert wilson(0, 1) == pytest.approx([0.0, 0.7935], abs=5e-5)
    assert wilson(1, 1) == pytest.approx([0.2065, 1.0], abs=5e-5)
    assert wilson(0, 0) == [None, None]


def test_wilson_interval_is_exactly_0_and_1_at_the_ends():
    # centre - half for 0 of 3 is 5.55e-17 in floating point, centre + half for 10 of 10 is 0.9999999999999999:
    # the ends are written as exact 0 and 1 (a share of 0 or 1 reads [0, x] and [x, 1], not 1e-17).
    assert wilson(0, 3)[0] == 0.0
    assert wilson(10, 10)[1] == 1.0


def test_turn_values_take_the_first_moment_the_worst_qoe_and_the_last_end():
    # two calls per run; run 0: a answers at 1 s, b at 3 s; run 1: a never answers (NaN), b at 2 s.
    cols = {
        "a.ttft_s": np.array([1.0, np.nan]),
        "b.ttft_s": np.array([3.0, 2.0]),
        "a.first_word_s": np.array([4.0, 6.0]),
        "b.first_word_s": np.array([5.0, 1.0]),
        "a.voice_to_voice_s": np.array([0.5, 0.9]),
        "b.voice_to_voice_s": np.array([0.7, 0.8]),
        "a.qoe": np.array([0.9, 0.2]),
        "b.qoe": np.array([0.5, 0.7]),
        "a.reader_done_s": np.array([10.0, 3.0]),
        "b.reader_done_s": np.array([8.0, 4.0]),
        "v1.2.speech_done_s": np.array([7.0, 9.0]),  # a call named "v1.2": its metric is the part after the last dot
        "wall_time_s": np.array([99.0, 99.0]),  # a run column, not a call's metric
    }
    assert turn_values(cols, "ttft_s", 2).tolist() == [1.0, 2.0]  # the first answer's (NaN skipped)
    assert turn_values(cols, "first_word_s", 2).tolist() == [4.0, 1.0]
    assert turn_values(cols, "voice_to_voice_s", 2).tolist() == [0.5, 0.8]
    assert turn_values(cols, "qoe", 2).tolist() == [0.5, 0.2]  # the worst
    assert turn_values(cols, "reader_done_s", 2).tolist() == [10.0, 4.0]  # the last
    assert turn_values(cols, "speech_done_s", 2).tolist() == [7.0, 9.0]
    none = turn_values(cols, "first_render_s", 3)  # no call has it: NaN for every run
    assert none.shape == (3,) and none.dtype == np.float64 and np.isnan(none).all()


def test_a_qoe_target_is_a_floor_met_at_equality_and_a_time_target_a_ceiling():
    # qoe >= 0.8 is met by 0.8 itself; ttft <= 2 by 2 itself; a missing value (NaN) never meets a target;
    # "v1.2.qoe" is call v1.2's QoE: a floor too.
    assert meets("qoe", np.array([0.8, 0.79, np.nan]), 0.8).tolist() == [True, False, False]
    assert meets("v1.2.qoe", np.array([0.8, 0.79]), 0.8).tolist() == [True, False]
    assert meets("qoe_from_ask", np.array([0.9]), 0.8).tolist() == [True]
    assert meets("a.ttft_s", np.array([2.0, 2.01, np.nan]), 2.0).tolist() == [True, False, False]


def test_slo_section_by_hand_and_with_no_run():
    # 4 runs: ttft [1, 3, 2, NaN] <= 2 -> runs 0 and 2 (2 of 4); qoe [0.9, 0.9, 0.5, 0.9] >= 0.8 -> runs 0, 1, 3;
    # both: run 0 only (1 of 4).
    vals = {"ttft_s": np.array([1.0, 3.0, 2.0, np.nan]), "qoe": np.array([0.9, 0.9, 0.5, 0.9])}
    sec = slo_section({"ttft_s": 2, "qoe": 0.8}, vals.__getitem__, 4)
    assert sec["ttft_s"] == {"target": 2.0, "share": 0.5, "ci95": wilson(2, 4), "runs": 4}
    assert sec["qoe"] == {"target": 0.8, "share": 0.75, "ci95": wilson(3, 4), "runs": 4}
    assert sec["all"] == {"share": 0.25, "ci95": wilson(1, 4), "runs": 4}
    empty = slo_section({"ttft_s": 2}, lambda m: np.zeros(0), 0)  # no run whose outcome is known
    assert empty["ttft_s"] == {"target": 2.0, "share": None, "ci95": [None, None], "runs": 0}
    assert empty["all"] == {"share": None, "ci95": [None, None], "runs": 0}
