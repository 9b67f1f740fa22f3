"""Streaming (contract v1.1): token timelines, consumers, stalls, interruptions and pipelines, by hand.

Every expected number below is computed in the comment above it from the rules of DESIGN.md §3.2
(written out in docs/concepts.md): visible token 1 at a_1 = t0 + TTFT + reasoning / tps, token N at
the call's end, evenly spaced in between.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from agentsim.model.loading import ScenarioError
from conftest import make, model, run, scenario

ENGINES = ["des", "fastpath"]
M10 = {"m": model(ttft=1.0, tps=10.0, price={"input_mtok": 1, "output_mtok": 10})}


def stream_of(res, call, variant=None):
    doc = res.summary_dict()
    v = doc["variants"][variant or next(iter(doc["variants"]))]
    return {k: s["mean"] for k, s in v["streaming"]["calls"][call].items()}


def one_call(consumer, output=100, stream=None, reasoning=0, tps=10.0, ttft=1.0, **call):
    m = model(ttft=ttft, tps=tps, price={"input_mtok": 1, "output_mtok": 10})
    if stream is not None:
        m["stream"] = stream
    step = {"name": "a", "output": output, "reasoning": reasoning, **call}
    if consumer is not None:
        step["consumer"] = consumer
    return scenario([{"call": step}], models={"m": m})


# --------------------------------------------------------------------------- even streaming and readers


@pytest.mark.parametrize("engine", ENGINES)
def test_even_stream_reader_slower_than_stream(engine):
    # a_i = 1 + (i-1) * 10/99 (100 tokens from 1 s to 11 s). A reader at 5 tok/s never catches up:
    # f_i = 1 + 0.2 i, so reader_done = 21 s and the only wait is the first token's 1 s.
    s = stream_of(run(one_call({"reader": {"tokens_per_s": 5}}), engine=engine), "a")
    assert s["ttft_s"] == pytest.approx(1.0)
    assert s["reader_done_s"] == pytest.approx(21.0)
    assert s["reader_wait_s"] == pytest.approx(1.0)
    assert s["longest_gap_s"] == pytest.approx(10 / 99)
    assert s["itl_p50_s"] == pytest.approx(10 / 99)
    assert s["gaps_over_250ms"] == 0 and s["gaps_over_1s"] == 0
    assert s["interrupted_share"] == 0 and s["wasted_usd"] == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_reader_faster_than_stream_waits_on_every_token(engine):
    # A reader at 50 tok/s (0.02 s a token) outruns gaps of 10/99 s: it finishes 0.02 s after the last
    # token arrives at 11 s, so reader_done = 11.02 s and it waited 11.02 - 100/50 = 9.02 s in all.
    s = stream_of(run(one_call({"reader": {"tokens_per_s": 50}}), engine=engine), "a")
    assert s["reader_done_s"] == pytest.approx(11.02)
    assert s["reader_wait_s"] == pytest.approx(9.02)


def test_words_per_minute_and_reasoning():
    # 225 words/min = 225 / 0.75 / 60 = 5 tokens/s. 50 reasoning tokens at 10 tok/s delay the first visible
    # token to 1 + 5 = 6 s; the call ends at 1 + 150/10 = 16 s; the reader finishes at 6 + ... = 6 + 100/5 = 26 s.
    s = stream_of(run(one_call({"reader": {"words_per_min": 225}}, reasoning=50)), "a")
    assert s["ttft_s"] == pytest.approx(6.0)
    assert s["reader_done_s"] == pytest.approx(26.0)
    assert s["reader_wait_s"] == pytest.approx(6.0)


@pytest.mark.parametrize("engine", ENGINES)
def test_chunks_are_delivered_at_their_last_token(engine):
    # chunk_tokens 10: the first group at a_1 = 1 s, group g (g >= 2) at a_{10 g} = 1 + (10 g - 1) 10/99.
    # Gaps: a_20 - a_1 = 190/99 = 1.919 s, then 8 gaps of 100/99 = 1.0101 s: 9 gaps, all above 1 s.
    # A reader at 50 tok/s reads each group in 0.2 s and finishes at a_100 + 0.2 = 11.2 s.
    res = run(one_call({"reader": {"tokens_per_s": 50}}, stream={"chunk_tokens": 10}), engine=engine)
    s = stream_of(res, "a")
    assert s["ttft_s"] == pytest.approx(1.0)
    assert s["longest_gap_s"] == pytest.approx(190 / 99)
    assert s["gaps_over_1s"] == 9 and s["gaps_over_250ms"] == 9
    assert s["reader_done_s"] == pytest.approx(11.2)
    assert res.summary_dict()["variants"]["baseline"]["wall_time_s"]["mean"] == pytest.approx(
        11.0
    )  # chunks move no end


@pytest.mark.parametrize("engine", ENGINES)
def test_one_stall_adds_to_the_call_and_the_breakdown(engine):
    # A certain stall of 3 s: the call ends at 1 + 10 + 3 = 14 s, the breakdown has stall = 3 s, and one gap
    # is 10/99 + 3 s long (wherever it falls). A fast reader finishes 0.02 s after the last token: 14.02 s.
    res = run(
        one_call({"reader": {"tokens_per_s": 50}}, stream={"stall": {"p": 1, "seconds": 3}}), runs=5, engine=engine
    )
    v = res.summary_dict()["variants"]["baseline"]
    assert v["wall_time_s"]["mean"] == pytest.approx(14.0)
    assert v["breakdown_s"]["stall"] == pytest.approx(3.0)
    assert v["breakdown_s"]["decode"] == pytest.approx(10.0)
    s = stream_of(res, "a")
    assert s["longest_gap_s"] == pytest.approx(3 + 10 / 99)
    assert s["gaps_over_1s"] == 1
    assert s["reader_done_s"] == pytest.approx(14.02)
    assert res.calls["t_end"].to_numpy() == pytest.approx(14.0)


# --------------------------------------------------------------------------- speech and render


@pytest.mark.parametrize("engine", ENGINES)
def test_speech_that_never_starves(engine):
    # 60 tokens from 1 s to 7 s (gap 6/59). Sentences of 20: e = 20, 40, 60. a_20 = 1 + 19*6/59 = 2.9322;
    # first audio 0.3 s later: s_1 = 3.2322. Each sentence lasts 20/3 s; a_40 + 0.3 and a_60 + 0.3 come before
    # the previous sentence ends, so no silence; speech ends at s_1 + 20 s.
    speech = {"speech": {"first_audio": 0.3, "tokens_per_s": 3, "sentence_tokens": 20}}
    s = stream_of(run(one_call(speech, output=60), engine=engine), "a")
    a20 = 1 + 19 * 6 / 59
    assert s["first_sentence_s"] == pytest.approx(a20)
    assert s["first_audio_s"] == pytest.approx(a20 + 0.3)
    assert s["silence_s"] == 0 and s["longest_silence_s"] == 0
    assert s["speech_done_s"] == pytest.approx(a20 + 0.3 + 20)


@pytest.mark.parametrize("engine", ENGINES)
def test_speech_that_starves(engine):
    # A slow model: 60 tokens at 2 tok/s from 1 s to 31 s (gap 30/59); sentences of 20 tokens spoken at 10 tok/s
    # (2 s each). A new sentence is ready every 20*30/59 = 10.169 s, so after each of sentences 1 and 2 the
    # voice is silent 600/59 - 2 = 8.169 s: silence = 2 x 8.169 = 16.339 s, longest 8.169 s.
    speech = {"speech": {"first_audio": 0.3, "tokens_per_s": 10, "sentence_tokens": 20}}
    s = stream_of(run(one_call(speech, output=60, tps=2.0), engine=engine), "a")
    assert s["first_audio_s"] == pytest.approx(1 + 19 * 30 / 59 + 0.3)
    assert s["silence_s"] == pytest.approx(2 * (600 / 59 - 2))
    assert s["longest_silence_s"] == pytest.approx(600 / 59 - 2)


def test_speech_last_sentence_is_shorter():
    # 50 tokens, sentences of 20: 20, 20, 10. Fast model (tokens at 1 + (i-1)*0.05/49... all by 1.5 s),
    # speaking 10 tok/s: s_1 = a_20 + 0 and the sentences play back to back: done = s_1 + 2 + 2 + 1.
    speech = {"speech": {"tokens_per_s": 10, "sentence_tokens": 20}}
    s = stream_of(run(one_call(speech, output=50, tps=100.0)), "a")
    a20 = 1 + 19 * 0.5 / 49
    assert s["first_audio_s"] == pytest.approx(a20)
    assert s["speech_done_s"] == pytest.approx(a20 + 5.0)
    assert s["silence_s"] == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_render_first_draw(engine):
    # render after 20 tokens: a_20 = 1 + 19*10/99; render `all`: the last token, at the call's end (11 s).
    s = stream_of(run(one_call({"render": {"tokens": 20}}), engine=engine), "a")
    assert s["first_render_s"] == pytest.approx(1 + 190 / 99)
    s = stream_of(run(one_call({"render": {"tokens": "all"}}), engine=engine), "a")
    assert s["first_render_s"] == pytest.approx(11.0)
    assert "reader_done_s" not in s and "silence_s" not in s


def test_qoe_by_hand():
    # Expected: first token at 1 s, then 5 tok/s: x = (1, 1.2). Actual: TTFT 3 s, 2 tokens at 1 tok/s:
    # a_1 = 3, a_2 = end = 5. Digested u = max(a, x) = (3, 5); T_end = 5.
    # QoE = sum(T_end - u) / sum(T_end - x) = (2 + 0) / (4 + 3.8) = 2 / 7.8.
    doc = one_call(
        {"render": {"tokens": 1}, "qoe": {"expected_ttft": 1, "tokens_per_s": 5}}, output=2, tps=1.0, ttft=3.0
    )
    assert stream_of(run(doc), "a")["qoe"] == pytest.approx(2 / 7.8)
    # a stream ahead of the expectation everywhere scores 1
    assert stream_of(run(one_call({"reader": {"tokens_per_s": 5}})), "a")["qoe"] == pytest.approx(1.0)


def test_apparate_point_is_the_consumers_pace():
    doc = one_call({"reader": {"words_per_min": 225}})
    app = run(doc).summary_dict()["variants"]["baseline"]["streaming"]["apparate"]["a"]
    assert app == {"consumer": "reader", "tokens_per_s": pytest.approx(5.0), "faster_share": 1.0}


# --------------------------------------------------------------------------- interruptions


@pytest.mark.parametrize("engine", ENGINES)
def test_interruption_billed_to_the_exact_token(engine):
    # Interrupted at a_1 + 2.05 = 3.05 s: tokens with 1 + (i-1)*10/99 <= 3.05 are i <= 21 (20.295 gaps).
    # Billed: 21 output tokens x $10/M = $0.00021, the call ends at 3.05 s; the next call sees 21 tokens of
    # context and ends 1 + 10/10 = 2 s later.
    doc = scenario(
        [
            {
                "call": {
                    "name": "a",
                    "output": 100,
                    "consumer": {"reader": {"tokens_per_s": 5}},
                    "interrupt": {"p": 1, "after_first_token": 2.05},
                }
            },
            {"call": {"name": "b", "output": 10}},
        ],
        models=M10,
        context={"system": 0, "grows": True},
    )
    res = run(doc, engine=engine)
    calls = res.calls.set_index("step")
    assert calls.loc["a", "output_tokens"] == 21
    assert calls.loc["a", "t_end"] == pytest.approx(3.05)
    assert calls.loc["a", "cost_usd"] == pytest.approx(21 * 10e-6)
    assert calls.loc["b", "input_tokens"] == 21
    v = res.summary_dict()["variants"]["baseline"]
    assert v["wall_time_s"]["mean"] == pytest.approx(5.05)
    s = stream_of(res, "a")
    assert s["interrupted_share"] == 1.0
    assert s["wasted_usd"] == pytest.approx(21 * 10e-6)
    # the person stops reading when they interrupt (contract v1.2), at 3.05 s, mid-way through the 21 tokens
    assert s["reader_done_s"] == pytest.approx(3.05)
    assert s["cut_share"] == 1.0
    assert v["breakdown_s"]["ttft"] + v["breakdown_s"]["decode"] == pytest.approx(5.05)


@pytest.mark.parametrize("engine", ENGINES)
def test_interruption_after_first_audio(engine):
    # Speech: s_1 = a_20 + 0.3 = 1 + 19*6/59 + 0.3; cut 1 s later at t = 3.2322 + 1: tokens with
    # 1 + (i-1)*6/59 <= 4.2322 are i <= 32.
    speech = {"speech": {"first_audio": 0.3, "tokens_per_s": 3, "sentence_tokens": 20}}
    doc = one_call(speech, output=60, interrupt={"p": 1, "after_first_audio": 1})
    res = run(doc, engine=engine)
    t = 1 + 19 * 6 / 59 + 0.3 + 1
    assert res.calls["output_tokens"].iloc[0] == 1 + int((t - 1) // (6 / 59))
    assert res.calls["t_end"].iloc[0] == pytest.approx(t)


def test_interruption_probability_and_after_the_end():
    # p = 0: never interrupted. A delay beyond the call's end (and the reading's, 1 + 100/5 = 21 s): the person's
    # interruption still happens (contract v1.2: it is theirs, whatever the model does), but it cuts nothing
    # and stops nothing.
    for spec, share in (({"p": 0, "after_first_token": 1}, 0), ({"p": 1, "after_first_token": 50}, 1)):
        res = run(one_call({"reader": {"tokens_per_s": 5}}, interrupt=spec))
        assert res.calls["output_tokens"].iloc[0] == 100
        s = stream_of(res, "a")
        assert s["interrupted_share"] == share and s["cut_share"] == 0
        assert s["reader_done_s"] == pytest.approx(21.0)


def test_interruption_share_is_p():
    # p = 0.3 over 4000 runs: the share is within 4 standard errors of 0.3.
    doc = one_call(
        {"reader": {"tokens_per_s": 5}}, interrupt={"p": 0.3, "after_first_token": {"uniform": {"low": 1, "high": 5}}}
    )
    share = stream_of(run(doc, runs=4000), "a")["interrupted_share"]
    assert abs(share - 0.3) < 4 * np.sqrt(0.3 * 0.7 / 4000)


# --------------------------------------------------------------------------- pipelines


@pytest.mark.parametrize("engine", ENGINES)
def test_pipeline_shortens_the_wall_time_by_hand(engine):
    # Call a: 100 tokens from 1 s to 11 s. A 20 s tool after it ends at 31 s; started once 20 tokens have
    # streamed (a_20 = 1 + 190/99 = 2.919 s) it ends at 22.919 s, and call b (2 s) follows the later of the two.
    # Saving: 31 - 22.919 = 11 - 190/99 - 1 = 8.0808 s.
    seq = [{"call": {"name": "a", "output": 100}}]
    tool = {"tool": {"name": "t", "latency": 20, "output": 7}}
    after = [{"call": {"name": "b", "output": 10}}]
    ctx = {"system": 0, "grows": True}
    plain = run(scenario([*seq, tool, *after], models=M10, context=ctx), engine=engine)
    piped = run(
        scenario([*seq, {"pipeline": {"after": {"tokens": 20}, "steps": [tool]}}, *after], models=M10, context=ctx),
        engine=engine,
    )
    w0 = plain.summary_dict()["variants"]["baseline"]["wall_time_s"]["mean"]
    w1 = piped.summary_dict()["variants"]["baseline"]["wall_time_s"]["mean"]
    assert w0 == pytest.approx(33.0)
    assert w1 == pytest.approx(1 + 190 / 99 + 20 + 2)
    assert w0 - w1 == pytest.approx(10 - 190 / 99)
    # the join appends the call's output, then the pipeline's: b sees 100 + 7 tokens either way
    assert piped.calls.set_index("step").loc["b", "input_tokens"] == 107
    b = piped.summary_dict()["variants"]["baseline"]["breakdown_s"]
    assert b["ttft"] + b["decode"] + b["tool"] == pytest.approx(w1)
    assert b["tool"] == pytest.approx(20.0)


@pytest.mark.parametrize("engine", ENGINES)
def test_pipeline_after_first_sentence_and_when_the_call_is_longer(engine):
    # first_sentence with a speech consumer of 20-token sentences: starts at a_20 = 1 + 190/99; a 1 s tool ends
    # long before the call (11 s), so the call is the critical path: wall = 11 s.
    steps = [
        {"call": {"name": "a", "output": 100, "consumer": {"speech": {"tokens_per_s": 3, "sentence_tokens": 20}}}},
        {"pipeline": {"after": "first_sentence", "steps": [{"tool": {"name": "t", "latency": 1}}]}},
    ]
    res = run(scenario(steps, models=M10), engine=engine)
    assert res.spans["t_start"].iloc[0] == pytest.approx(1 + 190 / 99)
    assert res.summary_dict()["variants"]["baseline"]["wall_time_s"]["mean"] == pytest.approx(11.0)


def test_the_fast_path_runs_interrupts_and_pipelines():
    from agentsim.plan.compiler import compile_plan
    from agentsim.sim.simulation import choose_engine, des_reasons

    tool = [{"tool": {"latency": 1}}]
    steps = [
        {"call": {"output": 10, "interrupt": {"p": 1, "after_first_token": 1}}},
        {"pipeline": {"after": {"tokens": 5}, "steps": tool}},
    ]
    plan = compile_plan(make(scenario(steps)))
    assert des_reasons(plan) == [] and choose_engine(plan, "auto") == "fastpath"


def test_engines_agree_on_pipelines():
    stream = {"jitter_cv": 0.4, "chunk_tokens": {"uniform": {"low": 1, "high": 5}}, "stall": {"p": 0.5, "seconds": 2}}
    m = model(ttft={"lognormal": {"median": 1, "p90": 2}}, tps={"gamma": {"mean": 40, "sd": 10}}, stream=stream)
    speech = {"speech": {"first_audio": 0.2, "tokens_per_s": 4, "sentence_tokens": {"uniform": {"low": 5, "high": 25}}}}
    call = {
        "name": "say",
        "output": {"uniform": {"low": 5, "high": 150}},
        "consumer": speech,
        "interrupt": {"p": 0.4, "after_first_token": {"exponential": {"mean": 3}}},
    }
    body = [
        {"tool": {"name": "t", "latency": {"exponential": {"mean": 2}}, "output": 40}},
        {"call": {"name": "inner", "output": 30}},
    ]
    doc = scenario(
        [
            {
                "repeat": {
                    "times": {"uniform": {"low": 1, "high": 3}},
                    "steps": [
                        {"call": call},
                        {"pipeline": {"after": "first_sentence", "steps": body}},
                    ],
                }
            },
            {
                "fanout": {
                    "n": 2,
                    "steps": [
                        {"call": {"name": "f", "output": {"uniform": {"low": 10, "high": 90}}}},
                        {"pipeline": {"after": {"tokens": 20}, "steps": [{"tool": {"latency": 3, "output": 5}}]}},
                    ],
                }
            },
            {
                "choose": {
                    "options": [
                        {
                            "p": 0.5,
                            "steps": [
                                {"call": {"name": "c", "output": 40}},
                                {"pipeline": {"after": {"tokens": 10}, "steps": [{"wait": {"latency": 9}}]}},
                            ],
                        },
                        {"p": 0.5, "steps": []},
                    ]
                }
            },
            {"call": {"name": "after", "output": 20}},
        ],
        models={"m": m},
        runs=300,
        context={"system": 200, "grows": True, "cache": True},
    )
    a = run(doc, engine="des")
    b = run(doc, engine="fastpath")
    ja = a.to_json().replace('"engine": "des"', '"engine": "E"')
    jb = b.to_json().replace('"engine": "fastpath"', '"engine": "E"')
    assert ja == jb
    for col in ("t_start", "t_end", "output_tokens", "input_tokens", "cache_read_tokens", "cost_usd"):
        assert np.array_equal(a.calls[col].to_numpy(), b.calls[col].to_numpy(), equal_nan=True), col
    assert np.array_equal(a.spans["t_start"].to_numpy(), b.spans["t_start"].to_numpy())


@pytest.mark.parametrize("after", ["after_first_token", "after_first_audio"])
def test_engines_agree_on_interruptions(after):
    # interruptions inside repeats and fan-outs (with races), with stalls, jitter and chunks, on a growing cached
    # context: the fast path applies the same rule as the DES, to the last bit
    stream = {"jitter_cv": 0.4, "chunk_tokens": {"uniform": {"low": 1, "high": 5}}, "stall": {"p": 0.5, "seconds": 2}}
    m = model(ttft={"lognormal": {"median": 1, "p90": 2}}, tps={"gamma": {"mean": 40, "sd": 10}}, stream=stream)
    speech = {
        "speech": {"first_audio": {"uniform": {"low": 0.1, "high": 0.6}}, "tokens_per_s": 4, "sentence_tokens": 15}
    }
    cut = {"p": 0.6, after: {"exponential": {"mean": 2}}}
    call = {
        "name": "say",
        "output": {"uniform": {"low": 5, "high": 150}},
        "reasoning": 20,
        "consumer": speech,
        "interrupt": cut,
    }
    doc = scenario(
        [
            {
                "repeat": {
                    "times": {"uniform": {"low": 1, "high": 4}},
                    "steps": [{"call": call}, {"tool": {"latency": 0.5, "output": 30}}],
                }
            },
            {"fanout": {"n": 3, "join": "any", "steps": [{"call": {**call, "name": "race"}}]}},
            {"call": {"name": "after", "output": 20}},
        ],
        models={"m": m},
        runs=300,
        context={"system": 200, "grows": True, "cache": True},
    )
    a = run(doc, engine="des")
    b = run(doc, engine="fastpath")
    ja = a.to_json().replace('"engine": "des"', '"engine": "E"')
    jb = b.to_json().replace('"engine": "fastpath"', '"engine": "E"')
    assert ja == jb
    share = json.loads(ja)["variants"]["baseline"]["streaming"]["calls"]["say"]["interrupted_share"]["mean"]
    assert 0.2 < share < 0.7
    for col in ("t_end", "output_tokens", "input_tokens", "cost_usd"):
        assert np.array_equal(a.calls[col].to_numpy(), b.calls[col].to_numpy()), col


# --------------------------------------------------------------------------- theory: jitter moves no end


def _jitter_doc(stream, consumer=None):
    m = model(ttft={"lognormal": {"median": 1, "p90": 2}}, tps={"normal": {"mean": 60, "sd": 10, "min": 10}})
    if stream is not None:
        m["stream"] = stream
    call = {"name": "act", "output": {"lognormal": {"median": 300, "p90": 900}}, "reasoning": 50}
    if consumer is not None:
        call["consumer"] = consumer
    steps = [
        {"repeat": {"times": {"uniform": {"low": 2, "high": 6}}, "steps": [{"call": call}, {"tool": {"latency": 1}}]}},
        {"parallel": [{"call": {"name": "r1", "output": 200}}, {"call": {"name": "r2", "output": 300}}]},
    ]
    return scenario(steps, models={"m": m}, runs=300, context={"system": 1000, "grows": True, "cache": True})


@pytest.mark.parametrize("engine", ENGINES)
def test_jitter_and_chunks_leave_every_figure_bit_identical(engine):
    base = run(_jitter_doc(None), engine=engine)
    jit = run(_jitter_doc({"jitter_cv": 0.8, "chunk_tokens": {"uniform": {"low": 1, "high": 8}}}), engine=engine)
    assert base.to_json() == jit.to_json()
    assert np.array_equal(base.calls["t_end"].to_numpy(), jit.calls["t_end"].to_numpy())
    # with a consumer the old figures stay too; only the streaming section is added
    cons = run(_jitter_doc({"jitter_cv": 0.8}, {"reader": {"tokens_per_s": 6}}), engine=engine)
    d0, d1 = base.summary_dict(), cons.summary_dict()
    for v in d1["variants"].values():
        s = v.pop("streaming")
        assert s["calls"]["act"]["ttft_s"]["mean"] is not None
    assert json.dumps(d0) == json.dumps(d1)


def test_jitter_respaces_the_gaps_without_moving_the_first_or_last_token():
    # Reader at 1000 tok/s finishes 0.001 s after the last token, which stays at the call's end (11 s);
    # the first token stays at 1 s; the gaps are now uneven (p99 above p50).
    s = stream_of(run(one_call({"reader": {"tokens_per_s": 1000}}, stream={"jitter_cv": 1.0})), "a")
    assert s["ttft_s"] == pytest.approx(1.0)
    assert s["reader_done_s"] == pytest.approx(11.001)
    assert s["itl_p99_s"] > 2 * s["itl_p50_s"]


def test_engines_agree_on_streaming_metrics():
    stream = {
        "jitter_cv": 0.5,
        "chunk_tokens": {"choice": {"values": [1, 4, 16]}},
        "stall": {"p": 0.4, "seconds": {"exponential": {"mean": 2}}},
    }
    doc = _jitter_doc(
        stream,
        {
            "speech": {
                "first_audio": {"uniform": {"low": 0.1, "high": 0.5}},
                "tokens_per_s": 4,
                "sentence_tokens": {"uniform": {"low": 5, "high": 30}},
            }
        },
    )
    doc["consumer"] = {"render": {"tokens": 50}}  # the default for r1 and r2
    a = run(doc, engine="des").to_json().replace('"engine": "des"', '"engine": "E"')
    b = run(doc, engine="fastpath").to_json().replace('"engine": "fastpath"', '"engine": "E"')
    assert a == b
    v = json.loads(a)["variants"]["baseline"]
    assert set(v["streaming"]["calls"]) == {"act", "r1", "r2"}
    assert "first_render_s" in v["streaming"]["calls"]["r1"]
    assert v["breakdown_s"]["stall"] > 0


def test_no_stream_no_consumer_no_new_keys():
    v = run(scenario([{"call": {"output": 10}}])).summary_dict()["variants"]["baseline"]
    assert "streaming" not in v and "stall" not in v["breakdown_s"]
    v = run(one_call({"reader": {"tokens_per_s": 5}}, stream={"jitter_cv": 0.3})).summary_dict()["variants"]["baseline"]
    assert "stall" not in v["breakdown_s"]


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("steps", "extra", "message"),
    [
        ([{"pipeline": {"after": {"tokens": 5}, "steps": [{"tool": {"latency": 1}}]}}], {}, "not a call"),
        (
            [{"tool": {"latency": 1}}, {"pipeline": {"after": "first_sentence", "steps": [{"tool": {"latency": 1}}]}}],
            {},
            "not a call",
        ),
        ([{"call": {"output": 5, "interrupt": {"p": 1, "after_first_audio": 1}}}], {}, "speech consumer"),
        (
            [{"call": {"output": 5, "consumer": {"reader": {"tokens_per_s": 5}, "render": {"tokens": 3}}}}],
            {},
            "exactly one",
        ),
        ([{"call": {"output": 5, "consumer": {"reader": {"tokens_per_s": 5, "words_per_min": 200}}}}], {}, "one of"),
        (
            [{"call": {"output": 5, "consumer": {"reader": {"tokens_per_s": 5}}, "interrupt": {"p": 1}}}],
            {},
            "after_first",
        ),
        ([{"call": {"output": 5, "consumer": {"reder": {"tokens_per_s": 5}}}}], {}, "reader"),
    ],
)
def test_invalid_streaming_keys(steps, extra, message):
    with pytest.raises(ScenarioError) as exc:
        run(scenario(steps, **extra))
    assert message in str(exc.value)


def test_bad_stream_values():
    m = model(stream={"chunk_tokens": 0})
    with pytest.raises(ScenarioError, match="chunk tokens must be above zero"):
        run(scenario([{"call": {"output": 5}}], models={"m": m}))
    m = model(stream={"jitter_cv": -1})
    with pytest.raises(ScenarioError):
        run(scenario([{"call": {"output": 5}}], models={"m": m}))


def test_speed_tier_stream_overrides_the_models():
    # the fast tier never stalls; the standard one always does (3 s)
    m = model(tps=10.0, stream={"stall": {"p": 1, "seconds": 3}}, speeds={"fast": {"stream": {"jitter_cv": 0}}})
    doc = scenario([{"call": {"output": 100}}], models={"m": m}, variants={"std": {}, "fast": {"speed": {"m": "fast"}}})
    v = run(doc).summary_dict()["variants"]
    assert v["std"]["wall_time_s"]["mean"] == pytest.approx(14.0)
    assert v["fast"]["wall_time_s"]["mean"] == pytest.approx(11.0)
    assert v["fast"]["breakdown_s"]["stall"] == 0.0


def test_profile_brings_its_stream(tmp_path):
    # A profile's stream applies unless the scenario gives its own: a certain 2 s stall makes the
    # 100-token call end at 1 + 10 + 2 = 13 s.
    (tmp_path / "p.yaml").write_text(
        "profile: p\nkind: assumption\nsource: test\ndate: 2026-01-01\nttft: 1\noutput_tps: 10\n"
        "stream: {stall: {p: 1, seconds: 2}}\n"
    )
    (tmp_path / "s.yaml").write_text(
        "name: s\nruns: 2\nmodels:\n  m: {profile: p.yaml, price: {input_mtok: 1, output_mtok: 1}}\n"
        "agent:\n  steps:\n    - call: {output: 100}\n"
    )
    import agentsim

    v = agentsim.simulate(tmp_path / "s.yaml").summary_dict()["variants"]["baseline"]
    assert v["wall_time_s"]["mean"] == pytest.approx(13.0)
    assert v["breakdown_s"]["stall"] == pytest.approx(2.0)


@pytest.mark.parametrize("engine", ENGINES)
def test_interruptible_call_without_consumer_reports_its_stream(engine):
    res = run(one_call(None, interrupt={"p": 1, "after_first_token": 2.05}), engine=engine)
    s = stream_of(res, "a")
    assert s["interrupted_share"] == 1.0 and s["ttft_s"] == pytest.approx(1.0)
    assert "reader_done_s" not in s
    assert res.calls["output_tokens"].iloc[0] == 21


@pytest.mark.parametrize("engine", ENGINES)
def test_interruptible_call_cancelled_by_a_race(engine):
    # join: any against a 2 s wait: the call (tokens from 1 s) is cancelled at 2 s with floor((2 - 1) x 10) = 10
    # tokens generated, as any cancelled call.
    call = {"call": {"name": "a", "output": 100, "interrupt": {"p": 0, "after_first_token": 1}}}
    doc = scenario([{"parallel": {"branches": [call, {"wait": {"latency": 2}}], "join": "any"}}], models=M10)
    res = run(doc, engine=engine)
    row = res.calls.iloc[0]
    assert row["status"] == "cancelled" and row["output_tokens"] == 10 and row["t_end"] == pytest.approx(2.0)
    assert res.summary_dict()["variants"]["baseline"]["wall_time_s"]["mean"] == pytest.approx(2.0)


@pytest.mark.parametrize("engine", ENGINES)
def test_pipeline_starts_at_the_interruption_when_that_comes_first(engine):
    # The call is cut at 3.05 s (21 tokens), before its 50th token would arrive (5.95 s): the pipeline starts at
    # 3.05 s and its 1 s tool ends at 4.05 s, the run's end.
    steps = [
        {"call": {"name": "a", "output": 100, "interrupt": {"p": 1, "after_first_token": 2.05}}},
        {"pipeline": {"after": {"tokens": 50}, "steps": [{"tool": {"name": "t", "latency": 1}}]}},
    ]
    res = run(scenario(steps, models=M10), engine=engine)
    assert res.spans["t_start"].iloc[0] == pytest.approx(3.05)
    assert res.summary_dict()["variants"]["baseline"]["wall_time_s"]["mean"] == pytest.approx(4.05)


@pytest.mark.parametrize("join", ["all", "any", {"k": 2}])
def test_engines_agree_with_stalls_in_fanouts_races_and_subagents(join):
    stream = {"stall": {"p": 0.5, "seconds": {"uniform": {"low": 0.5, "high": 4}}}, "chunk_tokens": 3}
    m = model(ttft={"lognormal": {"median": 1, "p90": 2}}, tps={"gamma": {"mean": 50, "sd": 15}}, stream=stream)
    reader = {"reader": {"tokens_per_s": 8}}
    doc = scenario(
        [
            {
                "fanout": {
                    "n": {"uniform": {"low": 1, "high": 4}},
                    "join": join,
                    "steps": [
                        {"call": {"name": "f", "output": {"uniform": {"low": 20, "high": 200}}, "consumer": reader}},
                        {"tool": {"latency": {"exponential": {"mean": 1}}}},
                    ],
                }
            },
            {
                "choose": {
                    "options": [
                        {"p": 0.5, "steps": [{"subagent": {"workflow": "w"}}]},
                        {
                            "p": 0.5,
                            "steps": [{"call": {"name": "c", "output": 80, "consumer": {"render": {"tokens": 30}}}}],
                        },
                    ]
                }
            },
        ],
        models={"m": m},
        runs=200,
        context={"system": 500, "grows": True, "cache": True},
        workflows={"w": {"steps": [{"call": {"name": "s", "output": 120, "consumer": reader}}]}},
    )
    a = run(doc, engine="des").to_json().replace('"engine": "des"', '"engine": "E"')
    b = run(doc, engine="fastpath").to_json().replace('"engine": "fastpath"', '"engine": "E"')
    assert a == b
    assert set(json.loads(a)["variants"]["baseline"]["streaming"]["calls"]) == {"f", "c", "s"}


@pytest.mark.parametrize("engine", ENGINES)
def test_edge_cases_empty_and_tiny_answers(engine):
    # 0 tokens: no streaming figure (null), no crash; 1 token: TTFT and first render at a_1, no gaps;
    # a renderer needing more tokens than the answer has draws at the last token (a_5 = end = 1 + 5/10 = 1.5 s);
    # chunks larger than the answer: one group, delivered at a_1 (the first group's rule), no gap at all.
    models = {"m": model(ttft=1.0, tps=10.0), "c": model(ttft=1.0, tps=10.0, stream={"chunk_tokens": 50})}
    steps = [
        {"call": {"name": "zero", "model": "m", "output": 0, "consumer": {"reader": {"tokens_per_s": 5}}}},
        {"call": {"name": "one", "model": "m", "output": 1, "consumer": {"render": {"tokens": 1}}}},
        {"call": {"name": "five", "model": "m", "output": 5, "consumer": {"render": {"tokens": 100}}}},
        {"call": {"name": "chunky", "model": "c", "output": 5, "consumer": {"render": {"tokens": 3}}}},
    ]
    res = run(scenario(steps, models=models), engine=engine)
    calls = res.summary_dict()["variants"]["baseline"]["streaming"]["calls"]
    assert calls["zero"]["ttft_s"]["mean"] is None
    assert calls["one"]["ttft_s"]["mean"] == pytest.approx(1.0)
    assert calls["one"]["first_render_s"]["mean"] == pytest.approx(1.0)
    assert calls["one"]["longest_gap_s"]["mean"] == 0.0
    assert calls["five"]["first_render_s"]["mean"] == pytest.approx(1.5)
    assert calls["chunky"]["first_render_s"]["mean"] == pytest.approx(1.0)
    assert calls["chunky"]["longest_gap_s"]["mean"] == 0.0


def test_interruptions_and_pipelines_with_shared_limits():
    # One slot: two interruptible calls in parallel run one after the other. Each is cut at a_1 + 2.05 = 3.05 s
    # after its start with 21 tokens, so the second starts at 3.05 s (queued 3.05 s) and ends at 6.1 s; the
    # pipeline after the second starts once it has streamed 5 tokens (a_5 = 1 + 4 x 10/99 after its start).
    cut = {"p": 1, "after_first_token": 2.05}
    calls = [{"call": {"name": n, "output": 100, "interrupt": cut}} for n in ("x", "y")]
    steps = [
        {"parallel": calls},
        {"call": {"name": "z", "output": 100}},
        {"pipeline": {"after": {"tokens": 5}, "steps": [{"tool": {"name": "t", "latency": 1}}]}},
    ]
    doc = scenario(steps, models=M10, limits={"acct": {"models": ["m"], "concurrency": 1}})
    res = run(doc)
    c = res.calls.set_index("step")
    assert c.loc["x", "output_tokens"] == 21 and c.loc["y", "output_tokens"] == 21
    assert c.loc["y", "t_start"] == pytest.approx(3.05)
    assert c.loc["y", "t_end"] == pytest.approx(6.1)
    assert res.spans["t_start"].iloc[0] == pytest.approx(6.1 + 1 + 40 / 99)
    v = res.summary_dict()["variants"]["baseline"]
    assert v["wall_time_s"]["mean"] == pytest.approx(6.1 + 11)
    assert v["streaming"]["calls"]["x"]["interrupted_share"]["mean"] == 1.0
