"""Stall processes (contract v1.2, DESIGN.md §3.3): any number of stalls per call, by hand and in closed form.

``stall: {per_chunk: p, seconds: D}`` puts a stall before each delivered chunk after the first with
probability ``p``; ``per_token`` the same before each token; ``at_chunks: [...]`` a fixed schedule. A
stall before token ``i`` delays it and every later token (and the call's end) by its length; it starts
when token ``i - 1`` arrives. Every expected number is computed in the comments from those rules and
the streaming rules of docs/concepts.md (token 1 at TTFT, token N at the call's end, evenly spaced).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from agentsim.model.loading import ScenarioError
from conftest import make, model, run, scenario

ENGINES = ["des", "fastpath"]


def one_answer(stall, output=100, tps=10.0, chunk=5, consumer=None, **call):
    m = model(ttft=1.0, tps=tps, price={"input_mtok": 1, "output_mtok": 10})
    m["stream"] = {"chunk_tokens": chunk, "stall": stall}
    step = {"name": "a", "output": output, **call}
    if consumer is not None:
        step["consumer"] = consumer
    return scenario([{"call": step}], models={"m": m})


def streaming(res, call="a"):
    v = res.summary_dict()["variants"]["baseline"]
    calls = v.get("streaming", {"calls": {}})["calls"]
    return v, {k: s["mean"] for k, s in calls.get(call, {}).items()}


def hand_deliveries(stalled_chunks, n=100, chunk=5, a1=1.0, decode=10.0, pause=0.5):
    """Delivery time of each token: arrivals evenly spaced from a1 over ``decode`` seconds, each stall delaying
    its chunk's first token and all later ones; a chunk is delivered at its last token, the first at a_1."""
    gap = decode / (n - 1)
    first_tokens = {(j - 1) * chunk + 1 for j in stalled_chunks}  # 1-based token a stall comes before
    a, shift = [], 0.0
    for i in range(1, n + 1):
        shift += pause if i in first_tokens else 0.0
        a.append(a1 + (i - 1) * gap + shift)
    d = [a[min(((i - 1) // chunk + 1) * chunk, n) - 1] for i in range(1, n + 1)]
    d[:chunk] = [a[0]] * chunk
    return a, d


def hand_reader(d, send, rate):
    f, wait = send, 0.0
    for x in d:  # f_i = max(d_i, f_{i-1}) + 1/r
        wait += max(0.0, x - f)
        f = max(x, f) + 1 / rate
    return f - send, wait


def hand_speech(d, send, sentence, first_audio, rate):
    starts, prev_end, silence = [], None, 0.0
    for e in range(sentence, len(d) + 1, sentence):  # s_k = max(d_{e_k} + fa, s_{k-1} + l_{k-1})
        s = d[e - 1] + first_audio if prev_end is None else max(d[e - 1] + first_audio, prev_end)
        if prev_end is not None:
            silence += s - prev_end
        starts.append(s)
        prev_end = s + sentence / rate
    return starts[0] - send, silence


@pytest.mark.parametrize("engine", ENGINES)
def test_a_schedule_of_three_stalls_by_hand(engine):
    # 100 tokens at 10 tok/s after a 1 s TTFT, chunks of 5 (20 chunks), stalls of 0.5 s before chunks 3, 7, 12:
    # the call ends at 1 + 10 + 1.5 = 12.5 s, the breakdown has 1.5 s of stall and 10 s of decode.
    reader = {"reader": {"tokens_per_s": 20}}
    v, s = streaming(run(one_answer({"at_chunks": [3, 7, 12], "seconds": 0.5}, consumer=reader), engine=engine))
    assert v["wall_time_s"]["mean"] == pytest.approx(12.5)
    assert v["breakdown_s"]["stall"] == pytest.approx(1.5)
    assert v["breakdown_s"]["decode"] == pytest.approx(10.0)
    # Chunk gaps: 5 tokens x 10/99 s = 0.50505 s; the first (a_1 to a_10) 9 x 10/99 = 0.90909 s; the three
    # stalled ones 0.50505 + 0.5 = 1.00505 s: longest 1.00505 s, 3 gaps over 1 s, all 19 over 250 ms.
    assert s["longest_gap_s"] == pytest.approx(5 * 10 / 99 + 0.5)
    assert s["gaps_over_1s"] == 3
    assert s["gaps_over_250ms"] == 19
    _, d = hand_deliveries([3, 7, 12])
    done, wait = hand_reader(d, 0.0, 20.0)
    assert s["reader_done_s"] == pytest.approx(done, abs=1e-9)
    assert s["reader_wait_s"] == pytest.approx(wait, abs=1e-9)
    # the reader is faster than the stream: it waits for the last chunk, delivered at the end, then reads it
    assert done == pytest.approx(12.5 + 5 / 20)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_schedule_and_a_voice_by_hand(engine):
    speech = {"speech": {"first_audio": 0.2, "tokens_per_s": 8, "sentence_tokens": 20}}
    _, s = streaming(run(one_answer({"at_chunks": [3, 7, 12], "seconds": 0.5}, consumer=speech), engine=engine))
    _, d = hand_deliveries([3, 7, 12])
    first_audio, silence = hand_speech(d, 0.0, 20, 0.2, 8.0)
    assert s["first_audio_s"] == pytest.approx(first_audio, abs=1e-9)
    assert s["silence_s"] == pytest.approx(silence, abs=1e-9)
    # sentence 1 ends at token 20 (chunk 4, after the stall before chunk 3): a_20 = 1 + 19 x 10/99 + 0.5
    assert first_audio == pytest.approx(1 + 19 * 10 / 99 + 0.5 + 0.2)


@pytest.mark.parametrize("engine", ENGINES)
def test_chunks_beyond_the_answer_do_not_stall(engine):
    # 30 tokens in chunks of 5: 6 chunks; a stall listed before chunk 9 never happens: 1 + 3 + 0.5 = 4.5 s.
    v, _ = streaming(run(one_answer({"at_chunks": [2, 9], "seconds": 0.5}, output=30), engine=engine))
    assert v["wall_time_s"]["mean"] == pytest.approx(1 + 3 + 0.5)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_certain_stall_before_every_chunk(engine):
    # per_chunk 1: a stall before each of chunks 2..20 (19 stalls of 0.25 s): 1 + 10 + 4.75 s; per_token 1 with
    # one-token chunks: 99 stalls of 0.01 s: 1 + 10 + 0.99 s.
    v, _ = streaming(run(one_answer({"per_chunk": 1, "seconds": 0.25}), engine=engine))
    assert v["wall_time_s"]["mean"] == pytest.approx(11 + 19 * 0.25)
    reader = {"reader": {"tokens_per_s": 5}}
    v, s = streaming(run(one_answer({"per_token": 1, "seconds": 0.01}, chunk=1, consumer=reader), engine=engine))
    assert v["wall_time_s"]["mean"] == pytest.approx(11 + 0.99)
    assert s["itl_p50_s"] == pytest.approx(10 / 99 + 0.01)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("form", "p"), [("per_chunk", 0.1), ("per_token", 0.025), ("per_chunk", 0.5)])
def test_stall_count_and_time_match_the_closed_form(engine, form, p):
    # N = 200 tokens at 1000 tok/s, in chunks of 4 (K = 50 chunks) for per_chunk, of 1 for per_token (so that
    # two stalls never share a delivered gap); stalls of uniform(0.3, 0.5) s.
    # per_chunk 0.1: count ~ Binomial(K - 1 = 49, 0.1): mean 4.9, var 4.41; per_token 0.025: Binomial(199, 0.025):
    # mean 4.975, var 4.851; per_chunk 0.5: Binomial(49, 0.5): mean 24.5, var 12.25 (stalls at neighbouring
    # chunks: a process whose places skipped a neighbour would give about 49 / 2.5 = 19.6).
    # Total stall: E = E[count] x 0.4; Var = E[count] Var(L) + Var(count) 0.4^2 with Var(L) = 0.2^2 / 12.
    # Every stall makes one gap over 250 ms (a gap without one is 0.001 s or a chunk's 0.004 s).
    runs = 4000
    trials, chunk = {"per_chunk": (49, 4), "per_token": (199, 1)}[form]
    mean_n, var_n = trials * p, trials * p * (1 - p)
    doc = one_answer(
        {form: p, "seconds": {"uniform": {"low": 0.3, "high": 0.5}}},
        output=200,
        tps=1000.0,
        chunk=chunk,
        consumer={"reader": {"tokens_per_s": 5}},
    )
    v, s = streaming(run(doc, runs=runs, seed=7, engine=engine))
    var_total = mean_n * 0.2**2 / 12 + var_n * 0.4**2
    assert v["breakdown_s"]["stall"] == pytest.approx(mean_n * 0.4, abs=4 * math.sqrt(var_total / runs))
    assert s["gaps_over_250ms"] == pytest.approx(mean_n, abs=4 * math.sqrt(var_n / runs))
    # the call's time is its TTFT, decode and stalls, run by run
    assert v["wall_time_s"]["mean"] == pytest.approx(1 + 0.2 + v["breakdown_s"]["stall"])


def test_engines_agree_on_a_stall_process_with_interruptions_and_pipelines():
    m = model(ttft=0.5, tps=80.0, price={"input_mtok": 1, "output_mtok": 10})
    m["stream"] = {
        "chunk_tokens": {"uniform": {"low": 1, "high": 6}},
        "jitter_cv": 0.4,
        "stall": {"per_chunk": 0.08, "seconds": {"lognormal": {"median": 0.4, "p90": 1.0}}},
    }
    steps = [
        {
            "call": {
                "name": "a",
                "output": {"uniform": {"low": 0, "high": 300}},
                "consumer": {"speech": {"first_audio": 0.2, "tokens_per_s": 3, "sentence_tokens": 15}},
                "interrupt": {"p": 0.4, "after_first_token": {"uniform": {"low": 0.5, "high": 4}}},
            }
        },
        {"pipeline": {"after": {"tokens": 30}, "steps": [{"tool": {"name": "t", "latency": 0.7}}]}},
        {
            "repeat": {
                "times": 3,
                "steps": [{"call": {"name": "b", "output": 120, "consumer": {"reader": {"words_per_min": 250}}}}],
            }
        },
    ]
    doc = scenario(steps, models={"m": m}, runs=300)
    des, fast = run(doc, engine="des"), run(doc, engine="fastpath")
    a, b = des.summary_dict(), fast.summary_dict()
    a.pop("engine"), b.pop("engine")
    assert a == b
    assert a["variants"]["baseline"]["breakdown_s"]["stall"] > 0


def test_the_single_stall_keeps_its_meaning():
    # stall: {p, seconds} is still one stall per call: with p = 1 and 10 chunks, exactly one stall of 2 s.
    v, _ = streaming(run(one_answer({"p": 1, "seconds": 2}, output=50), runs=3))
    assert v["wall_time_s"]["mean"] == pytest.approx(1 + 5 + 2)


@pytest.mark.parametrize(
    ("stall", "message"),
    [
        ({"p": 0.1, "per_chunk": 0.1, "seconds": 1}, "one of p"),
        ({"at_chunks": [1, 3], "seconds": 1}, "at least 2"),
        ({"per_chunk": 1.5, "seconds": 1}, "per_chunk"),
        ({"per_token": float("nan"), "seconds": 1}, "per_token"),
        ({"at_chunks": ["3"], "seconds": 1}, "at_chunks"),
        ({"per_chunk": 0.1, "seconds": 1e12}, "seconds"),
    ],
)
def test_bad_stall_processes_are_refused_with_their_place(stall, message):
    with pytest.raises(ScenarioError) as exc:
        make(one_answer(stall))
    assert message in str(exc.value)
    assert "stall" in str(exc.value)


def test_the_draws_of_a_process_do_not_depend_on_the_batch():
    # The same call streamed alone (as the DES does) and among all the runs of its block (the fast path)
    # gets the same stalls: the rows are token-major and a prefix is stable.
    from agentsim.plan.compiler import compile_plan
    from agentsim.plan.nodes import OUTPUT
    from agentsim.plan.sampling import sample_block
    from agentsim.sim.call_timeline import CallSlot
    from agentsim.sim.stalls import stall_draws, stall_events

    doc = one_answer(
        {"per_chunk": 0.2, "seconds": {"uniform": {"low": 0.1, "high": 1}}},
        output={"uniform": {"low": 2, "high": 400}},
        chunk={"uniform": {"low": 1, "high": 5}},
    )
    plan = compile_plan(make(doc))
    block = sample_block(plan, 5, 0, 0, 64)
    node = plan.calls[0]
    tier = plan.tiers[node.tiers[0]]
    N = np.asarray(block.get(node.id, OUTPUT)).reshape(-1).astype(np.int64)
    total = np.asarray(stall_draws(plan, block, node, tier.index)[0]).reshape(-1)
    every = stall_events(tier.stream, CallSlot(block, node, 0, np.arange(64)), N, total, np.zeros(64))
    assert np.array_equal(every.total, total)
    for r in (0, 17, 63):
        alone = stall_events(tier.stream, CallSlot(block, node, 0, np.array([r])), N[[r]], total[[r]], np.zeros(1))
        k = alone.pos.shape[1]
        assert np.array_equal(alone.pos[0], every.pos[r, :k]) and (every.pos[r, k:] == -1).all()
        assert alone.total[0] == total[r]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("empty", [{"fanout": {"n": 0, "join": {"k": 1}}}, {"repeat": {"times": 0}}])
def test_a_stalled_call_with_no_instance_in_a_block_adds_nothing(engine, empty):
    # A fan-out of 0 copies (or a repeat of 0 times) around a call of a stalling model: the block has no
    # instance of it, so nothing stalls and nothing runs (this was a reshape of 0 elements, exit 1; found by
    # `make fuzz`, seed 1018239909). The run is the first call alone: 1 s + 10 tokens at 10 tok/s = 2.0 s.
    m = model(ttft=1.0, tps=10.0, price={"input_mtok": 1, "output_mtok": 10})
    m["stream"] = {"chunk_tokens": 2, "stall": {"per_chunk": 0.5, "seconds": 1.0}}
    kind, spec = next(iter(empty.items()))
    inner = {"call": {"name": "b", "output": 20, "consumer": {"reader": {"tokens_per_s": 5}}}}
    steps = [{"call": {"name": "a", "output": 10}}, {kind: {**spec, "steps": [inner]}}]
    res = run(scenario(steps, models={"m": {**m, "stream": {"chunk_tokens": 2}}}), engine=engine)
    base = res.summary_dict()["variants"]["baseline"]["wall_time_s"]["mean"]
    assert base == pytest.approx(2.0)
    res = run(scenario(steps, models={"m": m}), engine=engine)
    stalled = res.summary_dict()["variants"]["baseline"]
    # the first call stalls too now (4 chunk boundaries, each with p 0.5): at least its own 2.0 s, and b is absent
    assert stalled["wall_time_s"]["mean"] >= 2.0 and "b" not in res.calls["step"].tolist()


@pytest.mark.parametrize("engine", ENGINES)
def test_a_scheduled_stall_before_the_last_chunk_is_taken(engine):
    # 100 tokens in chunks of 5: chunks 1..20, opportunities (chunk boundaries) before chunks 2..20. A stall
    # scheduled before chunk 20, the last, delays its 5 tokens and the end: 1 + 10 + 0.5 = 11.5 s. One before a
    # chunk 21 that no answer has is dropped: 11.0 s.
    v, _ = streaming(run(one_answer({"at_chunks": [20], "seconds": 0.5}), engine=engine))
    assert v["wall_time_s"]["mean"] == pytest.approx(11.5) and v["breakdown_s"]["stall"] == pytest.approx(0.5)
    v, _ = streaming(run(one_answer({"at_chunks": [21], "seconds": 0.5}), engine=engine))
    assert v["wall_time_s"]["mean"] == pytest.approx(11.0)


@pytest.mark.parametrize("form", ["per_chunk", "per_token"])
def test_stall_places_do_not_depend_on_how_many_gaps_are_drawn_first(monkeypatch, form):
    # _places draws a first guess of geometric gaps and doubles it until every call's places pass its answer;
    # the draws are token-major, so a first guess of 1 (every call needs more) gives the same stalls, bit for
    # bit, as the usual guess (which nearly always suffices)
    from agentsim.sim import stalls

    doc = one_answer({form: 0.3, "seconds": {"uniform": {"low": 0.1, "high": 0.5}}}, output=200, chunk=2)
    doc["runs"] = 64
    usual = {engine: run(doc, engine=engine).summary_dict() for engine in ENGINES}
    monkeypatch.setattr(stalls, "_first_rows", lambda p, top: 1)
    assert {engine: run(doc, engine=engine).summary_dict() for engine in ENGINES} == usual


@pytest.mark.parametrize("engine", ENGINES)
def test_chunks_of_two_tokens_are_delivered_in_pairs(engine):
    # 5 tokens at 1, 2, 3, 4, 5 s (TTFT 1 s, 1.25 tok/s), chunks of 2: [1, 2] delivered at a_1 = 1 s (the first
    # group at its first token), [3, 4] at a_4 = 4 s, [5] at 5 s. A pipeline after 3 tokens starts when token 3
    # is delivered, with its chunk: 4 s (one-token chunks would give 3 s).
    m = model(ttft=1.0, tps=1.25, price={"input_mtok": 1, "output_mtok": 10})
    m["stream"] = {"chunk_tokens": 2}
    steps = [
        {"call": {"name": "a", "output": 5}},
        {"pipeline": {"after": {"tokens": 3}, "steps": [{"wait": {"name": "w", "latency": 1}}]}},
    ]
    res = run(scenario(steps, models={"m": m}), engine=engine)
    assert res.spans.set_index("step").loc["w", "t_start"] == 4.0
