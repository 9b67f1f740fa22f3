"""One call's token timeline (agentsim.analysis.stream_timeline) and the stream figure, against hand-computed timelines.

Every expected number is computed from DESIGN.md §3.2 in the comment above it: visible token 1 at
a_1 = t0 + TTFT, token N at the call's end, evenly spaced in between; a reader at r tokens/s finishes
token i at f_i = max(d_i, f_{i-1}) + 1/r; sentence k plays from s_k = max(d_{e_k} + first_audio, s_{k-1} + l_{k-1}).
"""

from __future__ import annotations

import numpy as np
import pytest

import agentsim
from agentsim.analysis.stream_timeline import StreamTimelineError, token_timelines
from agentsim.plan.validation import parse
from agentsim.viz.plots_stream import stream_figure
from conftest import SCENARIOS, barge_in_turn, model, run, scenario

PRICE = {"input_mtok": 1, "output_mtok": 10}


def two_speeds(consumer, **call):
    # 100 tokens, TTFT 1 s, at 10 tokens/s (variant slow) or 20 tokens/s (variant fast)
    models = {"slow": model(ttft=1.0, tps=10.0, price=PRICE), "fast": model(ttft=1.0, tps=20.0, price=PRICE)}
    step = {"name": "a", "model": "slow", "output": 100, "consumer": consumer, **call}
    return scenario([{"call": step}], models=models, variants={"slow": {}, "fast": {"model": {"a": "fast"}}}, runs=3)


def test_even_stream_and_a_reader_by_hand():
    frame = token_timelines(parse(two_speeds({"reader": {"tokens_per_s": 5}})))
    i = np.arange(1, 101)
    slow, fast = (frame[frame.variant == v] for v in ("slow", "fast"))
    # slow: a_i = 1 + (i-1) 10/99 (last token at 1 + 100/10 = 11 s); fast: a_i = 1 + (i-1) 5/99 (6 s)
    np.testing.assert_allclose(slow["arrival_s"], 1 + (i - 1) * 10 / 99, rtol=1e-12)
    np.testing.assert_allclose(fast["arrival_s"], 1 + (i - 1) * 5 / 99, rtol=1e-12)
    np.testing.assert_array_equal(slow["delivered_s"], slow["arrival_s"])  # no chunking
    # the reader (0.2 s a token) is slower than both streams: f_i = 1 + 0.2 i in both variants
    np.testing.assert_allclose(slow["read_s"], 1 + 0.2 * i, rtol=1e-12)
    np.testing.assert_allclose(fast["read_s"], 1 + 0.2 * i, rtol=1e-12)
    assert frame["spoken_s"].isna().all()


def test_a_fast_reader_waits_on_every_token():
    # a reader at 50 tokens/s (0.02 s a token) outruns gaps of 10/99 s: f_i = a_i + 0.02
    frame = token_timelines(parse(two_speeds({"reader": {"tokens_per_s": 50}})))
    slow = frame[frame.variant == "slow"]
    np.testing.assert_allclose(slow["read_s"], slow["arrival_s"] + 0.02, rtol=1e-12)


def test_speech_by_hand():
    # sentences of 20 tokens, 2 tokens/s (10 s each), first audio 0.5 s. slow: sentence 1 ends at
    # d_20 = 1 + 19 * 10/99, so s_1 = d_20 + 0.5; later sentences are ready long before: s_k = s_1 + 10 (k-1).
    # Token j of sentence k is said at s_k + j / 2.
    doc = two_speeds({"speech": {"first_audio": 0.5, "tokens_per_s": 2, "sentence_tokens": 20}})
    slow = token_timelines(parse(doc)).query("variant == 'slow'")
    s1 = 1 + 19 * 10 / 99 + 0.5
    i = np.arange(100)
    expected = s1 + 10 * (i // 20) + (i % 20 + 1) / 2
    np.testing.assert_allclose(slow["spoken_s"], expected, rtol=1e-12)


def test_chunks_arrive_with_their_last_token():
    # chunk_tokens 10: tokens 1..10 are delivered at a_1 (the first group), group g at a_{10 g}
    models = {"m": model(ttft=1.0, tps=10.0, price=PRICE, stream={"chunk_tokens": 10})}
    doc = scenario([{"call": {"name": "a", "output": 100, "consumer": {"render": {"tokens": 30}}}}], models=models)
    frame = token_timelines(parse(doc))
    i = np.arange(1, 101)
    a = 1 + (i - 1) * 10 / 99
    group_last = np.where(i <= 10, 1, np.ceil(i / 10) * 10).astype(int)
    np.testing.assert_allclose(frame["delivered_s"], a[group_last - 1], rtol=1e-12)


def test_the_figure_draws_the_simulated_arrivals():
    frame = token_timelines(parse(two_speeds({"reader": {"tokens_per_s": 5}})))
    fig = stream_figure(frame)
    lines = {line.get_label(): line for line in fig.axes[0].get_lines()}
    assert set(lines) == {"slow: delivered", "slow: read", "fast: delivered", "fast: read"}
    i = np.arange(1, 101)
    np.testing.assert_allclose(lines["slow: delivered"].get_xdata(), 1 + (i - 1) * 10 / 99, rtol=1e-12)
    np.testing.assert_array_equal(lines["slow: delivered"].get_ydata(), i)
    np.testing.assert_allclose(lines["fast: read"].get_xdata(), 1 + 0.2 * i, rtol=1e-12)


def test_results_plot_stream_uses_the_same_runs():
    res = run(two_speeds({"reader": {"tokens_per_s": 5}}))
    fig = res.plot_stream(call="a")
    x = {line.get_label(): line.get_xdata() for line in fig.axes[0].get_lines()}
    np.testing.assert_allclose(x["fast: delivered"], 1 + np.arange(100) * 5 / 99, rtol=1e-12)


def test_the_representative_run_is_the_median_one():
    # the answer's length varies; the chosen run's call took the median time of the first variant
    sc = agentsim.load(SCENARIOS / "chat-turn.yaml")
    frame = token_timelines(sc, "answer", runs=51)
    res = agentsim.simulate(sc, runs=51, engine="des")
    calls = res.calls
    first = calls[(calls["variant"] == "gpt-5.2-instant") & (calls["step"] == "answer")].sort_values("run")
    took = (first["t_end"] - first["t_start"]).to_numpy()
    r = int(frame["run"].iloc[0])
    mine = frame[frame.variant == "gpt-5.2-instant"]
    assert mine["delivered_s"].iloc[-1] == pytest.approx(np.median(took), rel=1e-12)
    assert len(mine) == int(first["output_tokens"].to_numpy()[r])


def test_engines_give_the_same_timeline():
    path = SCENARIOS / "generated-ui.yaml"
    a = token_timelines(path, runs=40, engine="des")
    b = token_timelines(path, runs=40, engine="fastpath")
    assert a.equals(b)


def test_an_unknown_call_is_a_clear_error():
    with pytest.raises(StreamTimelineError, match=r"no call named 'nope'.*answer"):
        token_timelines(SCENARIOS / "chat-turn.yaml", "nope", runs=5)


@pytest.mark.parametrize("engine", ["des", "fastpath"])
def test_the_turn_from_the_ask_by_hand(engine):
    # the hand timeline is in conftest.barge_in_turn's comment
    frame = token_timelines(parse(barge_in_turn()), "answer", engine=engine)
    fast, slow = (frame[frame.variant == v] for v in ("fast", "slow"))
    i = np.arange(1, 101)
    np.testing.assert_allclose(fast["delivered_s"], 6.1 + (i - 1) * 2 / 99, rtol=1e-12)
    np.testing.assert_allclose(slow["delivered_s"], 6.1 + np.arange(31) * 10 / 99, rtol=1e-12)  # cut at 9.2 s
    np.testing.assert_allclose(frame["send_s"], 5.1, rtol=1e-12)
    np.testing.assert_allclose(frame["interrupt_s"], 9.2, rtol=1e-12)
    # the reader (0.2 s a token) reads token i at 6.1 + 0.2 i in both, and stops at 9.2 s: 15 tokens read
    for g in (fast, slow):
        read = g["read_s"].to_numpy()
        np.testing.assert_allclose(read[:15], 6.1 + 0.2 * np.arange(1, 16), rtol=1e-12)
        assert np.isnan(read[15:]).all()
    want = [("listen", "caller", 0.0, 0.5), ("tool", "retrieve", 0.5, 1.1), ("call", "route", 1.1, 5.1),
            ("ttft", "answer", 5.1, 6.1)]  # fmt: skip
    for v in ("fast", "slow"):
        got = [(p["kind"], p["step"], p["start_s"], p["end_s"]) for p in frame.attrs["phases"] if p["variant"] == v]
        assert [g[:2] for g in got] == [w[:2] for w in want]
        np.testing.assert_allclose([g[2:] for g in got], [w[2:] for w in want], rtol=1e-12)


def test_the_timeline_from_the_ask_and_the_from_ask_metrics_agree_to_the_bit():
    doc = barge_in_turn(runs=3)
    frame = token_timelines(parse(doc), "answer")
    runs = run(doc).runs
    for v in ("fast", "slow"):
        g = frame[frame.variant == v]
        r = runs[(runs.variant == v) & (runs.run == g["run"].iloc[0])].iloc[0]
        assert g["delivered_s"].iloc[0] == r["answer.first_word_s"]
        assert np.nanmax(g["read_s"]) <= r["answer.reader_done_from_ask_s"] == g["interrupt_s"].iloc[0]


def test_queueing_before_the_answer_is_a_phase():
    # One slot for model m: two branches submitted at 0; 'pre' (1 s TTFT, 10 tokens at 10 tok/s: 0 -> 2 s) takes it,
    # the answer waits for it: a queue phase 0 -> 2 s, then its own wait for the first word 2 -> 3 s.
    branch = {"call": {"name": "answer", "output": 10, "consumer": {"reader": {"tokens_per_s": 5}}}}
    doc = scenario([{"parallel": [{"call": {"name": "pre", "output": 10}}, branch]}],
                   models={"m": model(ttft=1.0, tps=10.0, price=PRICE)},
                   limits={"one": {"models": ["m"], "concurrency": 1}})  # fmt: skip
    frame = token_timelines(parse(doc), "answer")
    got = [(p["kind"], p["step"], p["start_s"], p["end_s"]) for p in frame.attrs["phases"]]
    assert got == [("call", "pre", 0.0, 2.0), ("queue", "answer", 0.0, 2.0), ("ttft", "answer", 2.0, 3.0)]
    assert frame["delivered_s"].iloc[0] == pytest.approx(3.0)


def test_the_figure_runs_from_the_ask_with_the_phases_shaded():
    # conftest.barge_in_turn by hand: listen 0-0.5, retrieve 0.5-1.1, route 1.1-5.1, first word 5.1-6.1, then the
    # answer streaming 6.1-8.1 (fast) or 6.1-9.13 (slow: its 31st token at 6.1 + 30 x 10/99); barge-in at 9.2 s
    fig = stream_figure(token_timelines(parse(barge_in_turn()), "answer"))
    main, strip = fig.axes
    lines = {line.get_label(): line for line in main.get_lines()}
    np.testing.assert_allclose(lines["fast: delivered"].get_xdata()[0], 6.1, rtol=1e-12)
    np.testing.assert_allclose(lines["slow: interrupted"].get_xdata(), [9.2, 9.2], rtol=1e-12)
    bars = []
    for coll in strip.collections:
        (x0, y0), (x1, _) = coll.get_paths()[0].vertices.min(axis=0), coll.get_paths()[0].vertices.max(axis=0)
        bars.append((round(y0), x0, x1))
    fast = sorted((a, b) for y, a, b in bars if y == 1)  # the first variant on the top row
    slow = sorted((a, b) for y, a, b in bars if y == 0)
    want = [(0, 0.5), (0.5, 1.1), (1.1, 5.1), (5.1, 6.1)]
    np.testing.assert_allclose(fast, [*want, (6.1, 8.1)], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(slow, [*want, (6.1, 6.1 + 30 * 10 / 99)], rtol=1e-12, atol=1e-12)
    assert "seconds since the ask" in strip.get_xlabel()
