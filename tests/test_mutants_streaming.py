"""Survivors of ``make mutate ONLY='$(MUTATE_STREAM)'`` (docs/validation.md §7), each killed by a hand-computed case.

The streaming rules (``sim/streaming.py``, ``sim/stalls.py``), what a consumer lives through
(``sim/stream_metrics.py`` and the consumer kinds' ``measure``), their summary (``sim/stream_stats.py``),
SLO attainment (``sim/slo.py``) and the workload loop (``sim/workload.py``). Every expected value is
worked out in the comments from the rules in the modules' docstrings: token 1 arrives at ``t0 + TTFT``,
token ``N`` at the call's end, evenly spaced; a stall before token ``i`` delays it and every later one.
"""

from __future__ import annotations

import types

import numpy as np
import pytest

from agentsim.sim import stream_metrics, streaming
from agentsim.sim.slo import meets, slo_section, turn_values, wilson
from agentsim.sim.stalls import stall_position
from conftest import model, run, scenario

ENGINES = ["des", "fastpath"]
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")  # a NumPy warning is a failure here


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
    # The targeted metric beside the share, the missing value the worst: ttft sorted [1, 2, 3, missing], mean of
    # the three = 2; p50 at position 0.5 x 3 = 1.5: 2 + 0.5 x (3 - 2) = 2.5; p95 at 2.85 reaches the missing
    # value: null. qoe (a floor: the value 95% reach, worst first) sorted [0.5, 0.9, 0.9, 0.9] from the worst;
    # p50 at 1.5: 0.9; p95 at 2.85 from the worst end [0.9, 0.9, 0.9, 0.5]: 0.9 - 0.85 x 0.4 = 0.56;
    # p99 at 2.97: 0.9 - 0.97 x 0.4 = 0.512; mean 3.2 / 4 = 0.8.
    sec = slo_section({"ttft_s": 2, "qoe": 0.8}, vals.__getitem__, 4)
    ttft = {"target": 2.0, "share": 0.5, "ci95": wilson(2, 4), "runs": 4, "mean": 2.0, "p50": 2.5, "p95": None,
            "p99": None}  # fmt: skip
    assert sec["ttft_s"] == ttft
    qoe = {k: sec["qoe"].pop(k) for k in ("mean", "p50", "p95", "p99")}
    assert sec["qoe"] == {"target": 0.8, "share": 0.75, "ci95": wilson(3, 4), "runs": 4}
    assert qoe == pytest.approx({"mean": 0.8, "p50": 0.9, "p95": 0.56, "p99": 0.512}, rel=1e-12)
    assert sec["all"] == {"share": 0.25, "ci95": wilson(1, 4), "runs": 4}
    empty = slo_section({"ttft_s": 2}, lambda m: np.zeros(0), 0)  # no run whose outcome is known
    assert empty["ttft_s"] == {"target": 2.0, "share": None, "ci95": [None, None], "runs": 0, "mean": None,
                               "p50": None, "p95": None, "p99": None}  # fmt: skip
    assert empty["all"] == {"share": None, "ci95": [None, None], "runs": 0}


# --------------------------------------------------------------------------- streaming: timelines, cuts, pipelines

# A model whose 5-token answers arrive at whole seconds: TTFT 1 s, 1.25 tok/s, so the call ends at
# 1 + 5 / 1.25 = 5 s and a_i = 1 + (i - 1) x (5 - 1) / 4 = i exactly (no rounding anywhere).
WHOLE = {"m": model(ttft=1.0, tps=1.25, price={"input_mtok": 1, "output_mtok": 10})}


def test_arrived_counts_a_token_within_the_tolerance_after_t():
    # a token at 1.0 has arrived by 1 - 1e-9 (ARRIVED_TOL inclusive), not by 1 - 2e-9; NaN (no token) never
    A = np.array([[1.0, 2.0, np.nan]])
    assert streaming.arrived(A, np.array([1.0 - 1e-9])).tolist() == [1]
    assert streaming.arrived(A, np.array([1.0 - 2e-9])).tolist() == [0]
    assert streaming.arrived(A, np.array([2.0])).tolist() == [2]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_pipeline_by_first_sentence_reads_the_speech_consumers_sentences(engine):
    # The voice speaks sentences of 3 tokens: the pipeline starts at a_3 = 3 s, not at a_20 (the pipeline's own
    # default, beyond this 5-token answer: its last token, 5 s), nor at the end of the second sentence.
    speech = {"speech": {"tokens_per_s": 3, "sentence_tokens": 3}}
    steps = [
        {"call": {"name": "a", "output": 5, "consumer": speech}},
        {"pipeline": {"after": "first_sentence", "steps": [{"wait": {"name": "w", "latency": 1}}]}},
    ]
    res = run(scenario(steps, models=WHOLE), engine=engine)
    assert res.spans.set_index("step").loc["w", "t_start"] == 3.0


@pytest.mark.parametrize("engine", ENGINES)
def test_a_pipeline_after_a_one_token_answer_starts_at_its_token_not_the_end(engine):
    # 1 token at 1.25 tok/s after a 1 s TTFT: the token arrives at 1 s, the call ends at 1 + 1/1.25 = 1.8 s
    steps = [
        {"call": {"name": "a", "output": 1}},
        {"pipeline": {"after": {"tokens": 1}, "steps": [{"wait": {"name": "w", "latency": 1}}]}},
    ]
    res = run(scenario(steps, models=WHOLE), engine=engine)
    assert res.spans.set_index("step").loc["w", "t_start"] == 1.0


@pytest.mark.parametrize("engine", ENGINES)
def test_a_pipeline_whose_token_arrives_exactly_at_the_cut_starts_with_its_chunk(engine):
    # Chunks of 5: the whole answer is one chunk, delivered at a_1 = 1 s. The person barges in 2 s after the
    # first token: the cut is at 3 s = a_3 exactly, so token 3 has arrived (within the tolerance) and the pipeline
    # after 3 tokens starts when its chunk was delivered, at 1 s; the call bills the 3 tokens that arrived.
    m = {"m": {**WHOLE["m"], "stream": {"chunk_tokens": 5}}}
    steps = [
        {"call": {"name": "a", "output": 5, "interrupt": {"p": 1, "after_first_token": 2}}},
        {"pipeline": {"after": {"tokens": 3}, "steps": [{"wait": {"name": "w", "latency": 1}}]}},
    ]
    res = run(scenario(steps, models=m), engine=engine)
    assert res.spans.set_index("step").loc["w", "t_start"] == 1.0
    call = res.calls.set_index("step").loc["a"]
    assert call["t_end"] == 3.0 and call["output_tokens"] == 3


@pytest.mark.parametrize("engine", ENGINES)
def test_a_one_token_answer_can_be_interrupted_and_one_at_the_end_is_not_cut(engine):
    # 1 token at 1 s, end 1.8 s: a barge-in 0.5 s after the token (1.5 s) cuts the call (still generating),
    # billing its 1 token. 5 tokens at 1..5 s: a barge-in 4 s after the first token is at the end (5 s): not cut
    # (the call is over). Both are the person's interruptions (DESIGN.md §3.3: interrupted_share counts every
    # one, whatever the model has done by then; cut_share only the calls cut while generating).
    steps = [
        {"call": {"name": "one", "output": 1, "interrupt": {"p": 1, "after_first_token": 0.5}}},
        {"call": {"name": "five", "output": 5, "interrupt": {"p": 1, "after_first_token": 4}}},
    ]
    res = run(scenario(steps, models=WHOLE), engine=engine)
    c = res.calls.set_index("step")
    assert c.loc["one", "t_end"] - c.loc["one", "t_start"] == 0.5 + 1.0 and c.loc["one", "output_tokens"] == 1
    assert c.loc["five", "t_end"] - c.loc["five", "t_start"] == 5.0 and c.loc["five", "output_tokens"] == 5
    s = baseline(res)["streaming"]["calls"]
    assert s["one"]["cut_share"]["mean"] == 1.0 and s["one"]["interrupted_share"]["mean"] == 1.0
    assert s["five"]["cut_share"]["mean"] == 0.0 and s["five"]["interrupted_share"]["mean"] == 1.0


@pytest.mark.parametrize("engine", ENGINES)
def test_a_two_token_answer_ends_exactly_with_its_last_token(engine):
    # The last token is placed at the call's end itself. Sent at 0.1 s (after a wait) with TTFT 0.08 s and
    # 2 tokens at 3 tok/s: end = 0.1 + (0.08 + 2/3) = 0.8466666666666667, while a_1 + (end - a_1) with
    # a_1 = 0.1 + 0.08 rounds to 0.8466666666666666: a render needing both tokens draws at end - send exactly.
    m = {"m": model(ttft=0.08, tps=3.0)}
    steps = [{"wait": {"latency": 0.1}}, {"call": {"name": "a", "output": 2, "consumer": {"render": {"tokens": 2}}}}]
    res = run(scenario(steps, models=m), engine=engine)
    c = res.calls.iloc[0]
    assert 0.1 + 0.08 + ((0.1 + (0.08 + 2 / 3)) - (0.1 + 0.08)) != 0.1 + (0.08 + 2 / 3)  # the rounding the rule avoids
    assert res.runs["a.first_render_s"].iloc[0] == c["t_end"] - c["t_start"]


@pytest.mark.parametrize("engine", ENGINES)
def test_runs_of_a_batch_read_their_own_first_audio_and_pipeline_token(engine):
    # 6 runs with different TTFTs (uniform 0.5-2.5 s), 20 tokens at 10 tok/s, sentences of 4 tokens, first audio
    # 0.5 s later: the person barges in 1 s after first audio, at ttft + 3 x 20 / (19 x 10)... per run:
    # a_i = ttft + (i - 1) x 2 / 19 (the call ends at ttft + 2), first audio = a_4 + 0.5, cut = first audio + 1;
    # a pipeline after 10 tokens starts at a_10 = ttft + 18 / 19, before the cut. Each run reads its own row.
    m = {"m": model(ttft={"uniform": {"low": 0.5, "high": 2.5}}, tps=10.0)}
    speech = {"speech": {"tokens_per_s": 3, "sentence_tokens": 4, "first_audio": 0.5}}
    steps = [
        {"call": {"name": "a", "output": 20, "consumer": speech, "interrupt": {"p": 1, "after_first_audio": 1}}},
        {"pipeline": {"after": {"tokens": 10}, "steps": [{"wait": {"name": "w", "latency": 1}}]}},
    ]
    res = run(scenario(steps, models=m, runs=6), engine=engine)
    c = res.calls.sort_values("run")
    ttft = c["t_first_token"].to_numpy()  # t_start is 0: the first token at the TTFT
    assert len(set(ttft)) == 6
    cut = ttft + 3 * 2 / 19 + 0.5 + 1
    assert c["t_end"].to_numpy() == pytest.approx(cut)
    # tokens arrived by the cut: 1 + floor((cut - ttft) x 19 / 2) = 1 + floor(1.8158 x 9.5) = 18
    assert (c["output_tokens"].to_numpy() == 18).all()
    w = res.spans[res.spans["step"] == "w"].sort_values("run")
    assert w["t_start"].to_numpy() == pytest.approx(ttft + 9 * 2 / 19)


# --------------------------------------------------------------------------- stalls: places, the stall spent by a time


def test_a_single_stall_falls_after_token_1_plus_floor_u_times_n_minus_1():
    # k = 1 + floor(u (N - 1)) in 1..N-1: N = 11 -> u = 0: 1, u = 0.5: 6, u = 0.999: 10; N = 2: always 1;
    # an answer of one token or none stalls after its last token (N)
    u = np.array([0.0, 0.5, 0.999, 0.7, 0.3, 0.9])
    n = np.array([11, 11, 11, 2, 1, 0])
    assert stall_position(u, n).tolist() == [1, 6, 10, 1, 1, 0]


@pytest.mark.parametrize("engine", ENGINES)
def test_per_token_stalls_come_before_every_token_even_in_chunks(engine):
    # 5 tokens in chunks of 5 (one chunk), per_token 1, 0.5 s each: 4 stalls (before tokens 2..5), not one per
    # chunk (none: a single chunk has no later chunk): the call lasts 1 + 4 + 4 x 0.5 = 7 s.
    m = {"m": {**WHOLE["m"], "stream": {"chunk_tokens": 5, "stall": {"per_token": 1, "seconds": 0.5}}}}
    v = baseline(run(scenario([{"call": {"name": "a", "output": 5}}], models=m), engine=engine))
    assert v["wall_time_s"]["mean"] == 7.0 and v["breakdown_s"]["stall"] == 2.0


@pytest.mark.parametrize("engine", ENGINES)
def test_a_cut_during_a_stall_counts_the_stall_from_the_token_before_it(engine):
    # Tokens at 1 and 2 s, then a 0.5 s stall before token 3 (at_chunks [3], one-token chunks): the stall runs
    # from a_2 = 2 s to 2.5 s. The person barges in 1.25 s after the first token, at 2.25 s: the call is cut with
    # 2 tokens, 0.25 s into its stall: TTFT 1 s, decode 1 s, stall 0.25 s (not the whole 0.5 s, not from a_1).
    m = {"m": {**WHOLE["m"], "stream": {"stall": {"at_chunks": [3], "seconds": 0.5}}}}
    call = {"name": "a", "output": 5, "interrupt": {"p": 1, "after_first_token": 1.25}}
    res = run(scenario([{"call": call}], models=m), engine=engine)
    v = baseline(res)
    assert v["wall_time_s"]["mean"] == 2.25 and res.calls["output_tokens"].iloc[0] == 2
    assert v["breakdown_s"]["ttft"] == 1.0 and v["breakdown_s"]["decode"] == 1.0 and v["breakdown_s"]["stall"] == 0.25


@pytest.mark.parametrize("engine", ENGINES)
def test_a_one_token_answer_cut_during_its_stall(engine):
    # 1 token at 1 s, then its stall of 0.5 s (after its only token); cut 0.25 s after the token: 0.25 s of stall,
    # no decode (the token came with the TTFT)
    m = {"m": {**WHOLE["m"], "stream": {"stall": {"p": 1, "seconds": 0.5}}}}
    call = {"name": "a", "output": 1, "interrupt": {"p": 1, "after_first_token": 0.25}}
    v = baseline(run(scenario([{"call": call}], models=m), engine=engine))
    assert v["wall_time_s"]["mean"] == 1.25
    assert v["breakdown_s"]["stall"] == 0.25 and v["breakdown_s"]["decode"] == 0.0


@pytest.mark.parametrize("engine", ENGINES)
def test_a_pipeline_after_a_zero_token_call_inherits_its_stall_as_stall(engine):
    # An answer of no visible token with a certain 3 s stall ends at 1 + 0 + 3 = 4 s; a pipeline after it starts at
    # its end (no token ever comes) and waits 10 s: the critical path is TTFT 1, stall 3, wait 10 (before the fix
    # the 3 s of stall were booked as decode: the stall of an answer without tokens was never "spent").
    m = {"m": {**WHOLE["m"], "stream": {"stall": {"p": 1, "seconds": 3}}}}
    steps = [
        {"call": {"name": "a", "output": 0}},
        {"pipeline": {"after": {"tokens": 1}, "steps": [{"wait": {"latency": 10}}]}},
    ]
    v = baseline(run(scenario(steps, models=m), engine=engine))
    assert v["wall_time_s"]["mean"] == 14.0
    assert v["breakdown_s"] == {"queue": 0.0, "ttft": 1.0, "decode": 0.0, "tool": 0.0, "wait": 10.0, "stall": 3.0}


def test_engines_agree_on_stall_processes_over_random_chunks():
    # the DES builds one call's timeline at a time, the fast path a batch of runs: with random chunk sizes, random
    # answers and a per_chunk process every call reads its own chunk starts and places (the same bits)
    stream = {
        "chunk_tokens": {"uniform": {"low": 1, "high": 6}},
        "stall": {"per_chunk": 0.3, "seconds": {"uniform": {"low": 0.1, "high": 2}}},
    }
    m = {"m": {**model(ttft=0.5, tps=20.0), "stream": stream}}
    call = {"name": "a", "output": {"uniform": {"low": 5, "high": 60}}, "consumer": {"reader": {"tokens_per_s": 8}}}
    steps = [{"call": call}, {"pipeline": {"after": {"tokens": 12}, "steps": [{"wait": {"latency": 1}}]}}]
    doc = scenario(steps, models=m, runs=60)
    a = run(doc, engine="des").to_json().replace('"engine": "des"', "")
    b = run(doc, engine="fastpath").to_json().replace('"engine": "fastpath"', "")
    assert a == b


# --------------------------------------------------------------------------- what consumers live through, summarised


def test_a_zero_token_answer_has_no_qoe_and_no_gaps_to_speak_of():
    # no token: the QoE is undefined (null), not a perfect 1.0; TTFT and the reader's figures too; no gap
    m = {"m": model(ttft=1.0, tps=10.0)}
    res = run(scenario([{"call": {"name": "z", "output": 0, "consumer": {"reader": {"tokens_per_s": 5}}}}], models=m))
    s = baseline(res)["streaming"]["calls"]["z"]
    for metric in ("qoe", "qoe_from_ask", "ttft_s", "first_word_s", "reader_done_s", "itl_p50_s"):
        assert s[metric]["mean"] is None, metric
    assert s["longest_gap_s"]["mean"] == 0.0


def test_every_consumer_with_a_pace_has_its_apparate_point_and_speed_equal_to_it_counts():
    # A reader of 5 tok/s and a voice of 5 tok/s behind a model at exactly 5 tok/s: the stream reaches their pace
    # (faster_share 1, "at least as fast"); a render has no pace (no entry).
    m = {"m": model(ttft=1.0, tps=5.0)}
    steps = [
        {"call": {"name": "r", "output": 20, "consumer": {"reader": {"tokens_per_s": 5}}}},
        {"call": {"name": "s", "output": 20, "consumer": {"speech": {"tokens_per_s": 5}}}},
        {"call": {"name": "u", "output": 20, "consumer": {"render": {"tokens": 5}}}},
    ]
    app = baseline(run(scenario(steps, models=m)))["streaming"]["apparate"]
    assert app == {
        "r": {"consumer": "reader", "tokens_per_s": 5.0, "faster_share": 1.0},
        "s": {"consumer": "speech", "tokens_per_s": 5.0, "faster_share": 1.0},
    }


@pytest.mark.parametrize("engine", ENGINES)
def test_jittered_chunked_stalled_answers_of_zero_one_and_two_tokens_are_quiet(engine):
    # answers of 0, 1 and 2 tokens on a stream with jitter, random chunks and a stall process, batched with a
    # longer one: no gap to re-space (0 / 0 is silenced, never warned), the short ones as without a stream
    stream = {
        "jitter_cv": 0.5,
        "chunk_tokens": {"uniform": {"low": 1, "high": 3}},
        "stall": {"per_token": 0.5, "seconds": 0.2},
    }
    m = {"m": {**model(ttft=1.0, tps=10.0), "stream": stream}}
    out = {"choice": {"values": [0, 1, 2, 30]}}
    call = {
        "name": "a",
        "output": out,
        "consumer": {"reader": {"tokens_per_s": 5}},
        "interrupt": {"p": 0.5, "after_first_word": 1},
    }
    steps = [{"call": call}, {"pipeline": {"after": {"tokens": 2}, "steps": [{"wait": {"latency": 1}}]}}]
    res = run(scenario(steps, models=m, runs=40), engine=engine)
    c = res.calls
    one = c[c["output_tokens"] == 1]
    assert len(one) and (one["t_first_token"] - one["t_start"] == 1.0).all()


def test_the_cli_table_rows_common_then_each_kind_then_the_rest():
    # TTFT and first word first; each consumer kind's labels in registry order (a voice adds voice to voice);
    # then the remaining common rows
    assert stream_metrics.table_rows() == [
        ("ttft_s", "TTFT seen"),
        ("first_word_s", "first word from ask"),
        ("reader_done_s", "reader done"),
        ("reader_wait_s", "reader waits"),
        ("first_audio_s", "first audio"),
        ("silence_s", "silence"),
        ("voice_to_voice_s", "voice to voice"),
        ("first_render_s", "first render"),
        ("longest_gap_s", "longest gap"),  # (ITL p99 is in the report, not in the run table)
        ("qoe", "QoE"),
        ("interrupted_share", "interrupted"),
    ]


def test_a_token_read_exactly_when_the_person_stops_is_still_read():
    # tokens delivered at 1, 2, 3 s to a reader of 1 tok/s sent at 0: read at f_i = i + max(0, max_j d_j - (j - 1))
    # = 2, 3, 4 s; the person stops at 3 s: the token read at 3 s counts, the one at 4 s does not
    from agentsim.consumers.reader import ReaderCfg

    D = np.array([[1.0, 2.0, 3.0]])
    sb = streaming.StreamBatch(D, D, np.array([3]), np.ones((1, 3), dtype=bool), np.array([0.0]), np.array([3.0]))
    cons = ReaderCfg("reader", 1.0, qoe_ttft=1.3, qoe_rate=1.0)
    slot = types.SimpleNamespace()
    got = stream_metrics.consumer_timeline(cons, sb, np.array([3]), slot, stop=np.array([3.0]))
    assert np.array_equal(got["read_s"], np.array([[2.0, 3.0, np.nan]]), equal_nan=True)


@pytest.mark.parametrize("engine", ENGINES)
def test_each_call_of_a_batch_has_its_own_inter_token_latencies(engine):
    # answers of 3 or 5 tokens at 1.25 tok/s after a 1 s TTFT: 5 tokens end at 5 s, gaps of (5 - 1) / 4 = 1 s;
    # 3 tokens end at 1 + 3 / 1.25 = 3.4 s, gaps of 2.4 / 2 = 1.2 s. Each run's ITL percentiles are its own gaps'.
    call = {"name": "a", "output": {"choice": {"values": [3, 5]}}, "consumer": {"reader": {"tokens_per_s": 9}}}
    res = run(scenario([{"call": call}], models=WHOLE, runs=30), engine=engine)
    runs = res.runs.set_index("run")
    out = res.calls.set_index("run")["output_tokens"]
    assert set(out) == {3, 5}
    for q in ("itl_p50_s", "itl_p95_s", "itl_p99_s"):
        assert runs[f"a.{q}"].to_numpy() == pytest.approx(np.where(out.loc[runs.index] == 3, 1.2, 1.0).astype(float))


@pytest.mark.parametrize("engine", ENGINES)
def test_a_runs_column_takes_its_first_completed_instance(engine):
    # a repeat of 2 answers per run: the first is asked at 0 and seen at 1 s (first word 1 s), the second is sent
    # when the first ends (5 s) and seen at 6 s; the runs table's a.first_word_s is each run's first instance: 1 s
    call = {"name": "a", "output": 5, "consumer": {"reader": {"tokens_per_s": 9}}}
    res = run(scenario([{"repeat": {"times": 2, "steps": [{"call": call}]}}], models=WHOLE, runs=3), engine=engine)
    assert res.runs["a.first_word_s"].tolist() == [1.0, 1.0, 1.0]
    s = baseline(res)["streaming"]["calls"]["a"]["first_word_s"]
    assert s["mean"] == pytest.approx((1.0 + 6.0) / 2) and s["p50"] == pytest.approx(3.5)
    # a run without the call has no value: with 0 or 2 answers per run (seed 7 draws 2, 0, 2, 0), the last run's
    # column stays empty (not a value of another run's second answer)
    repeat = {"repeat": {"times": {"choice": {"values": [0, 2]}}, "steps": [{"call": call}]}}
    res = run(scenario([repeat], models=WHOLE, runs=4), seed=7, engine=engine)
    assert res.runs["calls"].tolist() == [2, 0, 2, 0]  # the draws this case is built on
    assert np.array_equal(res.runs["a.first_word_s"].to_numpy(), [1.0, np.nan, 1.0, np.nan], equal_nan=True)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_consumer_call_that_never_completes_leaves_the_next_ones_measured(engine):
    # the first node with a consumer sits in an option never taken: it has no completed call; the next node is
    # still measured (TTFT 1 s)
    reader = {"reader": {"tokens_per_s": 9}}
    steps = [
        {
            "choose": {
                "options": [
                    {"p": 1, "steps": []},
                    {"p": 0, "steps": [{"call": {"name": "x", "output": 5, "consumer": reader}}]},
                ]
            }
        },
        {"call": {"name": "b", "output": 5, "consumer": reader}},
    ]
    s = baseline(run(scenario(steps, models=WHOLE, runs=3), engine=engine))["streaming"]["calls"]
    assert s["b"]["ttft_s"]["mean"] == 1.0 and "x" not in s


def test_in_a_workload_every_figure_from_the_ask_counts_from_its_own_runs_start():
    # One agent runs one answer after another: TTFT 1 s, 5 tokens ending at 5 s; runs start at 0, 5, 10, ... s.
    # From its own ask, every run sees its first word at 1 s (not at its start + 1 s).
    call = {"name": "a", "output": 5, "consumer": {"reader": {"tokens_per_s": 9}}}
    doc = scenario([{"call": call}], models=WHOLE, workload={"concurrent": 1, "duration": {"seconds": 60}})
    res = run(doc)
    starts = res.runs["wall_time_s"]  # each run lasts 5 s
    assert len(starts) >= 10 and (res.runs["a.first_word_s"] == 1.0).all()
    s = baseline(res)["streaming"]["calls"]["a"]
    assert s["first_word_s"]["mean"] == 1.0 and s["reader_done_from_ask_s"]["mean"] == s["reader_done_s"]["mean"]


@pytest.mark.parametrize("engine", ENGINES)
def test_voice_to_voice_counts_from_each_runs_own_latest_listen_at_or_before_the_send(engine):
    # The person speaks for a drawn time (a wait), the agent listens with no endpointing and no STT, so the answer
    # is sent the instant the speech ends (listen start == send); a second listen after the answer does not count.
    # Voice to voice is first audio - end of speech = first_audio_s (the send), in every run.
    speech = {"speech": {"tokens_per_s": 3, "sentence_tokens": 2, "first_audio": 0.2}}
    steps = [
        {"wait": {"latency": {"uniform": {"low": 0.5, "high": 2.5}}}},
        {"listen": {"end_of_speech": 0, "stt": 0}},
        {"call": {"name": "a", "output": 5, "consumer": speech}},
        {"listen": {"end_of_speech": 1, "stt": 1}},
    ]
    res = run(scenario(steps, models=WHOLE, runs=6), engine=engine)
    r = res.runs
    # the waits differ, the first audio does not: its first sentence ends at a_2 = 2 s after the send, + 0.2 s
    assert r["a.first_audio_s"].to_numpy() == pytest.approx([2.2] * 6) and len(set(r["a.first_word_s"])) == 6
    assert (r["a.voice_to_voice_s"] == r["a.first_audio_s"]).all()


@pytest.mark.parametrize("engine", ENGINES)
def test_uninterrupted_figures_are_over_the_answers_the_person_let_finish(engine):
    # 5 tokens at 1..5 s, interrupted with p = 0.5 half a second after the first token (cut at 1.5 s: one token
    # seen, no gap). The calls section pools both; the uninterrupted section only the whole answers: longest gap
    # 1 s, and no interruption metrics in it.
    call = {"name": "a", "output": 5, "interrupt": {"p": 0.5, "after_first_token": 0.5}}
    sec = baseline(run(scenario([{"call": call}], models=WHOLE, runs=200), engine=engine))["streaming"]
    share = sec["calls"]["a"]["interrupted_share"]["mean"]
    assert 0.3 < share < 0.7  # p = 0.5 over 200 runs: 5 sd = 0.18
    assert sec["calls"]["a"]["longest_gap_s"]["mean"] == pytest.approx(1.0 - share)
    whole = sec["uninterrupted"]["a"]
    assert whole["longest_gap_s"] == {"mean": 1.0, "p50": 1.0, "p95": 1.0, "p99": 1.0}
    assert not {"interrupted_share", "cut_share", "wasted_usd"} & set(whole)
    assert list(whole) == [m for m in sec["calls"]["a"] if m not in ("interrupted_share", "cut_share", "wasted_usd")]


def test_calls_of_one_name_are_pooled_and_a_call_without_interrupt_has_no_uninterrupted_section():
    # two steps named "a" in the two options of a choice (two nodes) are one row of the summary: answers of 3
    # tokens (gaps of 1.2 s) and of 5 (gaps of 1 s) are both in its ITL
    reader = {"reader": {"tokens_per_s": 9}}
    opts = [{"p": 0.5, "steps": [{"call": {"name": "a", "output": n, "consumer": reader}}]} for n in (3, 5)]
    sec = baseline(run(scenario([{"choose": {"options": opts}}], models=WHOLE, runs=40)))["streaming"]
    assert set(sec["calls"]) == {"a"} and "uninterrupted" not in sec
    gaps = sec["calls"]["a"]["itl_p50_s"]
    assert gaps["p50"] in (1.0, 1.2) and 1.0 < gaps["mean"] < 1.2  # both options' calls are in it


def test_summary_statistics_of_a_metric_skip_what_does_not_exist():
    from agentsim.sim.stream_stats import _stats, streaming_frame

    # 1, 2, 3, 4, NaN, inf: mean 2.5, p50 2.5, p95 3.85, p99 3.97 (linear interpolation over 1..4)
    assert _stats(np.array([1.0, 2.0, 3.0, 4.0, np.nan, np.inf])) == pytest.approx(
        {"mean": 2.5, "p50": 2.5, "p95": 3.85, "p99": 3.97}
    )
    assert _stats(np.array([np.nan])) == {"mean": None, "p50": None, "p95": None, "p99": None}
    st_ = {"mean": 1.0, "p50": 1.0, "p95": 2.0, "p99": 3.0}
    frame = streaming_frame({"v": {"calls": {"a": {"ttft_s": st_, "qoe": st_}}}, "w": {"calls": {}}})
    assert frame.values.tolist() == [["v", "a", "ttft_s", 1.0, 1.0, 2.0, 3.0], ["v", "a", "qoe", 1.0, 1.0, 2.0, 3.0]]
    assert list(frame.columns) == ["variant", "call", "metric", "mean", "p50", "p95", "p99"]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_barge_in_after_the_first_audio_of_one_token_sentences(engine):
    # sentences of 1 token: the first is token 1 (at 1 s), heard 0.5 s later (1.5 s); the person barges in 0.25 s
    # after that, at 1.75 s, before token 2 (2 s): the call is cut with 1 token (timed from token 2 it would be 2)
    speech = {"speech": {"tokens_per_s": 3, "sentence_tokens": 1, "first_audio": 0.5}}
    call = {"name": "a", "output": 5, "consumer": speech, "interrupt": {"p": 1, "after_first_audio": 0.25}}
    res = run(scenario([{"call": call}], models=WHOLE), engine=engine)
    c = res.calls.iloc[0]
    assert c["t_end"] == 1.75 and c["output_tokens"] == 1


@pytest.mark.parametrize("engine", ENGINES)
def test_a_pipeline_by_first_sentence_without_a_speech_consumer_reads_its_own_sentences(engine):
    # 100 tokens, TTFT 1 s, 10 tok/s: a_i = 1 + (i - 1) * 10 / 99 from the send. Behind a reader (no sentences
    # of its own) a pipeline with sentence_tokens 12 starts at a_12 = 1 + 110/99; behind a call without a
    # consumer, one with the default of 20 tokens at a_20 = 1 + 190/99.
    steps = [
        {"call": {"name": "a", "output": 100, "consumer": {"reader": {"tokens_per_s": 5}}}},
        {
            "pipeline": {
                "after": "first_sentence",
                "sentence_tokens": 12,
                "steps": [{"wait": {"name": "w", "latency": 1}}],
            }
        },
        {"call": {"name": "b", "output": 100}},
        {"pipeline": {"after": "first_sentence", "steps": [{"wait": {"name": "w2", "latency": 1}}]}},
    ]
    res = run(scenario(steps, models={"m": model(ttft=1.0, tps=10.0)}), engine=engine)
    spans, calls = res.spans.set_index("step"), res.calls.set_index("step")
    assert spans.loc["w", "t_start"] - calls.loc["a", "t_start"] == pytest.approx(1 + 110 / 99, abs=1e-12)
    assert spans.loc["w2", "t_start"] - calls.loc["b", "t_start"] == pytest.approx(1 + 190 / 99, abs=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_an_answer_without_a_visible_token_is_never_interrupted(engine):
    # Output 0, reasoning 20 at 10 tok/s: TTFT 1 s, then 2 s of reasoning, end at 3 s. A barge-in "0.5 s after
    # the first token" has no first token to follow: nothing is interrupted or cut, and the call runs to 3 s.
    steps = [{"call": {"name": "z", "output": 0, "reasoning": 20, "interrupt": {"p": 1, "after_first_token": 0.5}}}]
    res = run(scenario(steps, models={"m": model(ttft=1.0, tps=10.0)}), engine=engine)
    c = res.calls.iloc[0]
    assert c["t_end"] - c["t_start"] == 3.0 and c["reasoning_tokens"] == 20
    s = baseline(res)["streaming"]["calls"]["z"]
    assert s["interrupted_share"]["mean"] == 0.0 and s["cut_share"]["mean"] == 0.0 and s["wasted_usd"]["mean"] == 0.0


def test_the_streaming_frame_of_no_stream_still_has_its_columns():
    # res.streaming of a scenario without consumers: an empty table with the same columns (code that selects
    # columns of it keeps working), not a table without any
    from agentsim.sim.stream_stats import streaming_frame

    empty = streaming_frame({"baseline": {"calls": {}}})
    assert list(empty.columns) == ["variant", "call", "metric", "mean", "p50", "p95", "p99"] and empty.empty


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("runs", [1, 64])  # one call at a time (speech._one_call), and calls in a batch
@pytest.mark.parametrize(("first_audio", "silence"), [(0.0, 3.4), (0.5, 3.5)])
def test_the_silence_of_a_voice_interrupted_while_waiting_is_counted_once(engine, runs, first_audio, silence):
    # 20 tokens, TTFT 1 s, 2 tok/s: a_i = 1 + (i - 1) 10/19, the call ends at 11 s. Sentences of 5 tokens said
    # at 20 tok/s (0.25 s each); first audio fa after a sentence's last token: b_k = a_5k + fa. The person barges
    # in 4 s after the first audio: stop = b_1 + 4 = 5 + 40/19 + fa (the call is cut there).
    # fa = 0: 12 tokens arrived, sentences 5, 5, 2. Silences: b_2 - e_1 = 50/19 - 0.25, b_3 - e_2 = 20/19 - 0.25
    #   (b_3 = a_12 = 1 + 110/19 plays 0.1 s), then waiting for more until the stop: 3.9 - 70/19. Total 3.4.
    # fa = 0.5: 13 tokens, sentences 5, 5, 3; b_3 = a_13 + 0.5 = 1.5 + 120/19 is after the stop, so sentence 3
    #   never plays: silences 50/19 - 0.25, then from e_2 = 1.75 + 90/19 to the stop: 3.75 - 50/19, once.
    #   Total 3.5 (the wait before the stop was counted twice: 4.62).
    m = model(ttft=1.0, tps=2.0, price={"input_mtok": 1, "output_mtok": 10})
    speech = {"speech": {"first_audio": first_audio, "tokens_per_s": 20, "sentence_tokens": 5}}
    call = {"name": "say", "output": 20, "consumer": speech, "interrupt": {"p": 1, "after_first_audio": 4}}
    s = baseline(run(scenario([{"call": call}], models={"m": m}, runs=runs), engine=engine))["streaming"]["calls"]
    assert s["say"]["silence_s"]["mean"] == pytest.approx(silence, abs=1e-12)
    assert s["say"]["longest_silence_s"]["mean"] == pytest.approx(50 / 19 - 0.25, abs=1e-12)
