"""An independent audit of the streaming semantics (contract v1.1, DESIGN.md §3.2) through the CLI.

Each test writes a small scenario in the contract's vocabulary, runs `agentsim run FILE --json` (on the
DES and, where it runs the scenario, the fast path) and compares `streaming.calls.NAME.METRIC` with numbers
computed by hand from the text of DESIGN.md §3.2 and docs/concepts.md#streaming (never from agentsim's code
or output). The computation is written out above every assertion. The random cases compare with a direct
NumPy Monte-Carlo of the documented formula, with a tolerance of 4 combined standard errors.

Notation (docs/concepts.md): t0 the send time, a_i the arrival of visible token i, d_i its delivery to the
consumer (d_i = a_i without chunks), N visible tokens, R reasoning tokens, tps tokens/s:
a_1 = t0 + ttft + R/tps, end = t0 + ttft + (N + R)/tps (+ stall), a_i evenly spaced from a_1 to end.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from agentsim.cli.main import app

ENGINES = ["des", "fastpath"]
runner = CliRunner()


def summary(tmp_path, text: str, engine: str = "auto", runs: int | None = None) -> dict:
    """`agentsim run FILE --json --engine ENGINE` on the scenario `text`; the parsed summary.json."""
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    args = ["run", str(path), "--json", "--engine", engine]
    if runs is not None:
        args += ["--runs", str(runs)]
    out = runner.invoke(app, args)
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)


def metrics(doc: dict, call: str, variant: str = "baseline") -> dict:
    """{METRIC: {mean, p50, p95}} of one call in one variant."""
    return doc["variants"][variant]["streaming"]["calls"][call]


def means(doc: dict, call: str, variant: str = "baseline") -> dict:
    return {k: v["mean"] for k, v in metrics(doc, call, variant).items()}


def qoe_by_hand(d: list[float], t_expected: float, v: float) -> float:
    """Andes QoE as docs/concepts.md writes it: x_i = T + (i-1)/v, u_i = max(d_i, x_i), T_end = max u_i,
    qoe = sum(T_end - u_i) / sum(T_end - x_i); times from the send time."""
    x = [t_expected + i / v for i in range(len(d))]
    u = [max(di, xi) for di, xi in zip(d, x, strict=True)]
    t_end = max(u)
    return sum(t_end - ui for ui in u) / sum(t_end - xi for xi in x)


HEAD = "name: audit\nseed: 7\nruns: 1\n"


# --------------------------------------------------------------------------- send time, prefill, cache, reasoning


@pytest.mark.parametrize("engine", ENGINES)
def test_a_call_after_a_call_and_a_tool_on_a_cached_growing_context(tmp_path, engine):
    text = (
        HEAD
        + """
models:
  m:
    price: {input_mtok: 1, output_mtok: 10, cache_read_mtok: 0.1, cache_write_mtok: 1.25}
    ttft: 0.5
    prefill_tps: 1000
    output_tps: 20
agent:
  context: {system: 2000, grows: true, cache: true}
  steps:
    - call: {name: p, model: m, input: 1000, output: 40}
    - tool: {name: t, latency: 2, output: 500}
    - call: {name: a, model: m, input: 460, output: 60, reasoning: 20,
             consumer: {reader: {words_per_min: 180}}}
"""
    )
    doc = summary(tmp_path, text, engine)
    # Call p sends 2000 + 1000 = 3000 tokens, nothing cached: ttft = 0.5 + 3000/1000 = 3.5 s, decode
    # 40/20 = 2 s, ends at 5.5 s. The tool runs 5.5 -> 7.5 s. The context is now 3000 + 40 + 500 = 3540.
    # Call a is SENT at t0 = 7.5 s with 3540 + 460 = 4000 tokens, of which the 3000 p sent are a cache read:
    # ttft = 0.5 + (4000 - 3000)/1000 = 1.5 s. Its 20 reasoning tokens take 1 s and are invisible, so
    # a_1 - t0 = 1.5 + 1 = 2.5 s; the call ends at t0 + 1.5 + (60 + 20)/20 = t0 + 5.5 s: 60 tokens from
    # 2.5 s to 5.5 s, gap 3/59 s. Wall time 7.5 + 5.5 = 13 s.
    v = doc["variants"]["baseline"]
    assert v["wall_time_s"]["mean"] == pytest.approx(13.0)
    # Cost: p = 3000 x 1.25 + 40 x 10 (per M) ; a = 3000 x 0.1 + 1000 x 1.25 + (60 + 20) x 10.
    assert v["cost_usd"]["mean"] == pytest.approx((3000 * 1.25 + 400 + 300 + 1250 + 800) / 1e6)
    s = means(doc, "a")
    assert s["ttft_s"] == pytest.approx(2.5)  # d_1 - t0: what the consumer sees, reasoning included
    # 180 words/min = 180 / 0.75 / 60 = 4 tokens/s, slower than the stream (20 tok/s): the reader never
    # catches up after the first token, f_i = 2.5 + i/4 (from t0), so reader_done = 2.5 + 60/4 = 17.5 s and
    # the only waiting is the 2.5 s before the first token (f_0 = t0).
    assert s["reader_done_s"] == pytest.approx(17.5)
    assert s["reader_wait_s"] == pytest.approx(2.5)
    assert s["longest_gap_s"] == pytest.approx(3 / 59)
    # QoE with the defaults T = 1.3 s, v = 4.8 tok/s (a reader's, Andes), from t0.
    d = [2.5 + i * 3 / 59 for i in range(60)]
    assert s["qoe"] == pytest.approx(qoe_by_hand(d, 1.3, 4.8))
    # From the ask (the run's start, 7.5 s before the send): the first word at 7.5 + 2.5 = 10 s, the reader
    # done at 7.5 + 17.5 = 25 s, waiting 7.5 + 2.5 = 10 s; the QoE's expected curve starts at the ask too.
    assert s["first_word_s"] == pytest.approx(10.0)
    assert s["reader_done_from_ask_s"] == pytest.approx(25.0)
    assert s["reader_wait_from_ask_s"] == pytest.approx(10.0)
    assert s["qoe_from_ask"] == pytest.approx(qoe_by_hand([7.5 + x for x in d], 1.3, 4.8))
    assert s["interrupted_share"] == 0 and s["wasted_usd"] == 0
    # a call without a consumer reports no streaming metrics
    assert "p" not in doc["variants"]["baseline"]["streaming"]["calls"]


def test_metrics_are_measured_from_the_send_time_not_the_submit_time(tmp_path):
    # One slot (DES only): a and b are submitted together at 0; b waits for a (1 + 100/10 = 11 s) and is
    # sent at 11 s. Measured from its send time, b's stream is exactly a's: ttft 1 s; reader at 5 tok/s
    # f_i = 1 + i/5 -> done 21 s, waited 1 s. Wall time 22 s.
    text = (
        HEAD
        + """
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: 1, output_tps: 10}
limits:
  acct: {models: [m], concurrency: 1}
agent:
  steps:
    - parallel:
        - call: {name: a, model: m, output: 100, consumer: {reader: {tokens_per_s: 5}}}
        - call: {name: b, model: m, output: 100, consumer: {reader: {tokens_per_s: 5}}}
"""
    )
    doc = summary(tmp_path, text, "des")
    assert doc["variants"]["baseline"]["wall_time_s"]["mean"] == pytest.approx(22.0)
    for call in ("a", "b"):
        s = means(doc, call)
        assert s["ttft_s"] == pytest.approx(1.0)
        assert s["reader_done_s"] == pytest.approx(21.0)
        assert s["reader_wait_s"] == pytest.approx(1.0)


@pytest.mark.parametrize("engine", ENGINES)
def test_summary_percentiles_over_the_instances_of_a_step(tmp_path, engine):
    text = (
        HEAD
        + """
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: 0.5, prefill_tps: 1000, output_tps: 10}
agent:
  context: {system: 0, grows: true}
  steps:
    - repeat:
        times: 3
        steps:
          - call: {name: a, model: m, input: 1000, output: 100, consumer: {render: {tokens: 10}}}
"""
    )
    doc = summary(tmp_path, text, engine)
    # No cache, the context grows by 1000 + 100 per iteration: inputs 1000, 2100, 3200, so
    # ttft = 0.5 + input/1000 = 1.5, 2.6, 3.7 s. Over these three calls: mean 2.6, p50 2.6,
    # p95 (linear interpolation at rank 0.95 x 2 = 1.9) = 2.6 + 0.9 x 1.1 = 3.59.
    s = metrics(doc, "a")
    assert s["ttft_s"]["mean"] == pytest.approx(2.6)
    assert s["ttft_s"]["p50"] == pytest.approx(2.6)
    assert s["ttft_s"]["p95"] == pytest.approx(3.59)
    # first render after 10 tokens: ttft + 9 gaps of 10/99 s (100 tokens over 100/10 = 10 s).
    assert s["first_render_s"]["mean"] == pytest.approx(2.6 + 90 / 99)
    assert s["first_render_s"]["p95"] == pytest.approx(3.59 + 90 / 99)


# --------------------------------------------------------------------------- chunks


@pytest.mark.parametrize("engine", ENGINES)
def test_chunks_with_a_short_last_group_and_reasoning(tmp_path, engine):
    text = (
        HEAD
        + """
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: 1, output_tps: 10, stream: {chunk_tokens: 10}}
agent:
  steps:
    - parallel:
        - call: {name: read, model: m, output: 25, reasoning: 10, consumer: {reader: {tokens_per_s: 20}}}
        - call: {name: draw, model: m, output: 25, reasoning: 10, consumer: {render: {tokens: 15}}}
        - call: {name: all, model: m, output: 25, reasoning: 10, consumer: {render: {tokens: 500}}}
"""
    )
    doc = summary(tmp_path, text, engine)
    # Each call: a_1 = 1 + 10/10 = 2 s, end = 1 + 35/10 = 4.5 s, 25 tokens, gap 2.5/24 s.
    # Groups of 10: tokens 1-10 delivered at a_1 = 2 (the first group at TTFT), 11-20 at
    # a_20 = 2 + 19 x 2.5/24 = 3.979 s, 21-25 (short) at a_25 = 4.5 s.
    a20 = 2 + 19 * 2.5 / 24
    gaps = [a20 - 2, 4.5 - a20]  # 1.979 s and 0.521 s
    s = means(doc, "read")
    assert s["ttft_s"] == pytest.approx(2.0)
    assert s["longest_gap_s"] == pytest.approx(max(gaps))
    assert s["gaps_over_1s"] == 1 and s["gaps_over_250ms"] == 2
    assert s["itl_p50_s"] == pytest.approx(sum(gaps) / 2)  # median of two = their mean
    assert s["itl_p99_s"] == pytest.approx(gaps[1] + 0.99 * (gaps[0] - gaps[1]))
    # Reader at 20 tok/s (0.05 s a token): group 1 read 2 -> 2.5; group 2 arrives 3.979, read until 4.479;
    # group 3 arrives 4.5, read until 4.75. reader_done = 4.75, waiting = 4.75 - 25/20 = 3.5 s.
    assert s["reader_done_s"] == pytest.approx(4.75)
    assert s["reader_wait_s"] == pytest.approx(3.5)
    # Render after 15 tokens: token 15 is delivered with its group, at a_20.
    assert means(doc, "draw")["first_render_s"] == pytest.approx(a20)
    # Render needing more tokens than the answer has: at its last token, the call's end.
    assert means(doc, "all")["first_render_s"] == pytest.approx(4.5)
    # chunks move no end: three parallel calls of 4.5 s
    assert doc["variants"]["baseline"]["wall_time_s"]["mean"] == pytest.approx(4.5)


def chunk_run_by_hand(sizes: np.ndarray, n_tokens: int, arrivals: np.ndarray) -> list[float]:
    """Delivery times of one call: groups of `sizes` (in order), each at its last token's arrival,
    the first at a_1; the last group cut at N."""
    ends = np.minimum(np.cumsum(sizes), n_tokens)
    ends = ends[: int(np.searchsorted(ends, n_tokens)) + 1]
    times = arrivals[ends - 1].copy()
    times[0] = arrivals[0]
    return list(times)


def test_random_chunk_sizes_against_a_monte_carlo(tmp_path):
    text = """
name: audit
seed: 11
runs: 4000
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: 1, output_tps: 10,
      stream: {chunk_tokens: {choice: {values: [1, 4], p: [0.5, 0.5]}}}}
agent:
  steps:
    - call: {name: a, model: m, output: 20, consumer: {render: {tokens: 1}}}
"""
    doc = summary(tmp_path, text)
    # 20 tokens from 1 s to 3 s (gap 2/19 = 0.105 s). Chunks of 1 or 4 tokens (p = 1/2 each), drawn per chunk.
    # A delivery gap of one 1-token chunk is 0.105 s, of a 4-token chunk 0.421 s; the second delivery's gap
    # counts from a_1, and the last group may be cut short. Monte-Carlo of that rule:
    rng = np.random.default_rng(2024)
    arrivals = 1 + np.arange(20) * 2 / 19
    over, longest = [], []
    for _ in range(50_000):
        sizes = rng.choice([1, 4], size=20)
        g = np.diff(chunk_run_by_hand(sizes, 20, arrivals))
        over.append(np.sum(g > 0.25))
        longest.append(g.max())
    s = metrics(doc, "a")
    for name, sample in (("gaps_over_250ms", np.array(over)), ("longest_gap_s", np.array(longest))):
        se = sample.std() * math.sqrt(1 / 4000 + 1 / len(sample))
        assert abs(s[name]["mean"] - sample.mean()) < 4 * se, (name, s[name]["mean"], sample.mean(), se)
    assert s["ttft_s"]["mean"] == pytest.approx(1.0)
    assert doc["variants"]["baseline"]["wall_time_s"]["p95"] == pytest.approx(3.0)


# --------------------------------------------------------------------------- jitter


def test_jitter_respaces_gaps_but_moves_neither_end_against_a_monte_carlo(tmp_path):
    text = """
name: audit
seed: 3
runs: 4000
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: 1, output_tps: 10, stream: {jitter_cv: 0.5}}
agent:
  steps:
    - call: {name: a, model: m, output: 3, consumer: {render: {tokens: all}}}
"""
    doc = summary(tmp_path, text)
    s = metrics(doc, "a")
    # 3 tokens: a_1 = 1 s, a_3 = end = 1.3 s whatever the jitter; two gaps 0.3 w_j / (w_1 + w_2) with w
    # lognormal of mean 1 and cv 0.5 (sigma^2 = ln 1.25, mu = -sigma^2/2). Exact: ttft, the render of all
    # tokens (a_3), the wall time, and the median of two gaps (their mean) = 0.15 s in every run.
    assert s["ttft_s"]["p95"] == pytest.approx(1.0) and s["ttft_s"]["mean"] == pytest.approx(1.0)
    assert s["first_render_s"]["mean"] == pytest.approx(1.3)
    assert s["first_render_s"]["p95"] == pytest.approx(1.3)
    assert s["itl_p50_s"]["mean"] == pytest.approx(0.15)
    assert s["itl_p50_s"]["p95"] == pytest.approx(0.15)
    assert doc["variants"]["baseline"]["wall_time_s"]["p95"] == pytest.approx(1.3)
    # The longest gap, 0.3 max(w_1, w_2) / (w_1 + w_2), by Monte-Carlo:
    rng = np.random.default_rng(99)
    sigma = math.sqrt(math.log(1.25))
    w = rng.lognormal(-(sigma**2) / 2, sigma, size=(1_000_000, 2))
    longest = 0.3 * w.max(axis=1) / w.sum(axis=1)
    se = longest.std() * math.sqrt(1 / 4000 + 1 / len(longest))
    assert abs(s["longest_gap_s"]["mean"] - longest.mean()) < 4 * se
    # and the jitter really moved the gaps (not the even 0.15 s): p95 of the longest gap clearly above it
    assert s["longest_gap_s"]["p95"] == pytest.approx(np.quantile(longest, 0.95), abs=0.01)


# --------------------------------------------------------------------------- stalls and speed tiers


@pytest.mark.parametrize("engine", ENGINES)
def test_a_stall_in_a_two_token_answer_is_exact(tmp_path, engine):
    text = (
        HEAD
        + """
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: 1, output_tps: 10, stream: {stall: {p: 1, seconds: 3}}}
agent:
  steps:
    - parallel:
        - call: {name: r, model: m, output: 2, consumer: {reader: {tokens_per_s: 1}}}
        - call: {name: s, model: m, output: 2,
                 consumer: {speech: {first_audio: 0.5, tokens_per_s: 1, sentence_tokens: 1}}}
"""
    )
    doc = summary(tmp_path, text, engine)
    # Two tokens: a stall can only come after token 1 (k = 1 + floor(u (N - 1)) = 1). a_1 = 1 s and
    # a_2 = end = 1 + 2/10 + 3 = 4.2 s: the stall adds its 3 s to the call.
    v = doc["variants"]["baseline"]
    assert v["wall_time_s"]["mean"] == pytest.approx(4.2)
    assert v["breakdown_s"]["stall"] == pytest.approx(3.0)
    assert v["breakdown_s"]["ttft"] == pytest.approx(1.0)
    assert v["breakdown_s"]["decode"] == pytest.approx(0.2)
    r = means(doc, "r")
    assert r["longest_gap_s"] == pytest.approx(3.2)
    # Reader at 1 tok/s: f_1 = 1 + 1 = 2, f_2 = max(4.2, 2) + 1 = 5.2; waited 5.2 - 2 = 3.2 s (1 s + 2.2 s).
    assert r["reader_done_s"] == pytest.approx(5.2)
    assert r["reader_wait_s"] == pytest.approx(3.2)
    # Speech, one-token sentences of 1 s: s_1 = a_1 + 0.5 = 1.5; s_2 = max(a_2 + 0.5, s_1 + 1) = 4.7;
    # silence = 4.7 - 2.5 = 2.2 s (the longest too); speech ends 5.7 s; first sentence at a_1 = 1 s.
    s = means(doc, "s")
    assert s["first_sentence_s"] == pytest.approx(1.0)
    assert s["first_audio_s"] == pytest.approx(1.5)
    assert s["silence_s"] == pytest.approx(2.2)
    assert s["longest_silence_s"] == pytest.approx(2.2)
    assert s["speech_done_s"] == pytest.approx(5.7)


@pytest.mark.parametrize("engine", ENGINES)
def test_stream_settings_under_speed_tiers(tmp_path, engine):
    text = (
        HEAD
        + """
models:
  m:
    price: {input_mtok: 1, output_mtok: 10}
    ttft: 1
    output_tps: 10
    stream: {chunk_tokens: 10}
    speeds:
      plain: {output_tps_x: 2}
      smooth: {output_tps_x: 2, stream: {chunk_tokens: 1}}
      stally: {output_tps_x: 2, stream: {stall: {p: 1, seconds: 4}}}
agent:
  steps:
    - call: {name: a, model: m, output: 100, consumer: {render: {tokens: 15}}}
variants:
  baseline: {}
  plain: {speed: {m: plain}}
  smooth: {speed: {m: smooth}}
  stally: {speed: {a: stally}}
"""
    )
    doc = summary(tmp_path, text, engine)
    # baseline: 100 tokens from 1 s to 11 s (gap 10/99), chunks of 10: token 15 comes with token 20 at
    # 1 + 19 x 10/99; 9 delivery gaps, the first 19 token-gaps long (1.919 s), the others 10 (1.0101 s).
    b = means(doc, "a")
    assert b["first_render_s"] == pytest.approx(1 + 190 / 99)
    assert b["longest_gap_s"] == pytest.approx(190 / 99)
    assert b["gaps_over_1s"] == 9
    # plain tier (no stream of its own: the model's chunks stay), twice as fast: 1 s to 6 s, gap 5/99.
    p = means(doc, "a", "plain")
    assert p["first_render_s"] == pytest.approx(1 + 19 * 5 / 99)
    assert p["longest_gap_s"] == pytest.approx(95 / 99)
    assert p["gaps_over_250ms"] == 9 and p["gaps_over_1s"] == 0
    # smooth tier: its stream replaces the model's, one token a delivery: token 15 at 1 + 14 x 5/99.
    m = means(doc, "a", "smooth")
    assert m["first_render_s"] == pytest.approx(1 + 70 / 99)
    assert m["longest_gap_s"] == pytest.approx(5 / 99)
    # stally tier (chosen by step name): no chunks, one certain 4 s stall: the call ends at 1 + 5 + 4 = 10 s,
    # the longest gap is one token gap plus the stall.
    st = doc["variants"]["stally"]
    assert st["wall_time_s"]["mean"] == pytest.approx(10.0)
    assert st["breakdown_s"]["stall"] == pytest.approx(4.0)
    assert means(doc, "a", "stally")["longest_gap_s"] == pytest.approx(4 + 5 / 99)
    for name in ("baseline", "plain", "smooth"):
        assert doc["variants"][name]["breakdown_s"]["stall"] == 0
    assert doc["variants"]["plain"]["wall_time_s"]["mean"] == pytest.approx(6.0)


# --------------------------------------------------------------------------- consumers


@pytest.mark.parametrize("engine", ENGINES)
def test_speech_on_a_chunked_stream(tmp_path, engine):
    text = (
        HEAD
        + """
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: 1, output_tps: 10, stream: {chunk_tokens: 10}}
agent:
  steps:
    - parallel:
        - call: {name: slow, model: m, output: 25, reasoning: 10,
                 consumer: {speech: {first_audio: 0.2, tokens_per_s: 5, sentence_tokens: 15}}}
        - call: {name: quick, model: m, output: 25, reasoning: 10,
                 consumer: {speech: {first_audio: 0.2, tokens_per_s: 50, sentence_tokens: 15}}}
"""
    )
    doc = summary(tmp_path, text, engine)
    # As above: a_1 = 2, a_20 = 2 + 19 x 2.5/24 = 3.979, end = a_25 = 4.5; groups of 10 delivered at
    # 2, a_20, 4.5. Sentences of 15 and 10 tokens end at e_1 = 15 (delivered with its group at a_20) and
    # e_2 = 25 (4.5 s).
    a20 = 2 + 19 * 2.5 / 24
    # slow voice, 5 tok/s: sentence 1 lasts 3 s from s_1 = a_20 + 0.2; s_2 = max(4.5 + 0.2, s_1 + 3) = s_1 + 3:
    # no silence; done s_2 + 10/5 = s_1 + 5.
    s = means(doc, "slow")
    assert s["first_sentence_s"] == pytest.approx(a20)
    assert s["first_audio_s"] == pytest.approx(a20 + 0.2)
    assert s["silence_s"] == 0 and s["longest_silence_s"] == 0
    assert s["speech_done_s"] == pytest.approx(a20 + 5.2)
    # quick voice, 50 tok/s: sentence 1 lasts 0.3 s, ends a_20 + 0.5 = 4.479; s_2 = max(4.7, 4.479) = 4.7:
    # silence 4.7 - (a_20 + 0.5) = 0.221 s; done 4.7 + 10/50 = 4.9.
    q = means(doc, "quick")
    assert q["first_audio_s"] == pytest.approx(a20 + 0.2)
    assert q["silence_s"] == pytest.approx(4.7 - a20 - 0.5)
    assert q["longest_silence_s"] == pytest.approx(4.7 - a20 - 0.5)
    assert q["speech_done_s"] == pytest.approx(4.9)
    # QoE defaults for speech (Andes): T = 1.3 s and a listening pace of 3.3 tok/s, whatever the voice's rate.
    # d: 10 tokens at 2, 10 at a_20, 5 at 4.5.
    d = [2.0] * 10 + [a20] * 10 + [4.5] * 5
    assert s["qoe"] == pytest.approx(qoe_by_hand(d, 1.3, 3.3))
    assert q["qoe"] == pytest.approx(qoe_by_hand(d, 1.3, 3.3))


@pytest.mark.parametrize("engine", ENGINES)
def test_top_level_consumer_words_per_minute_and_render_qoe(tmp_path, engine):
    text = (
        HEAD
        + """
models:
  fast: {price: {input_mtok: 1, output_mtok: 10}, ttft: 0.5, output_tps: 1000}
  slow: {price: {input_mtok: 1, output_mtok: 10}, ttft: 3, output_tps: 2}
consumer: {reader: {words_per_min: 300}}
agent:
  steps:
    - call: {name: r, model: fast, output: 20}
    - call: {name: u, model: slow, output: 5, consumer: {render: {tokens: 1}}}
"""
    )
    doc = summary(tmp_path, text, engine)
    # r has the scenario's consumer: 300 words/min = 300 / 0.75 / 60 = 20/3 tok/s (0.15 s a token). Its 20
    # tokens arrive from 0.5 s to 0.52 s, before the reader needs them: done 0.5 + 20 x 0.15 = 3.5 s, waited 0.5 s.
    r = means(doc, "r")
    assert r["reader_done_s"] == pytest.approx(3.5)
    assert r["reader_wait_s"] == pytest.approx(0.5)
    # QoE of the reader (defaults T = 1.3, v = 4.8): x_i = 1.3 + (i - 1)/4.8 >= a_i everywhere: u = x, qoe = 1.
    assert r["qoe"] == pytest.approx(1.0)
    # u is sent at 0.52 s and has its own consumer (a render): 5 tokens from 3 s to 3 + 5/2 = 5.5 s after its
    # send time, gap 0.625 s. Render QoE defaults: T = 1.3 s, v = 4.8 tok/s, x_i = 1.3 + (i - 1)/4.8 (1.3 to
    # 2.133); u_i = a_i = 3 + 0.625 (i - 1); T_end = 5.5: qoe = (2.5 + 1.875 + 1.25 + 0.625 + 0) / sum(5.5 - x_i)
    # = 6.25 / (27.5 - 6.5 - 10/4.8).
    u = means(doc, "u")
    assert "reader_done_s" not in u
    assert u["first_render_s"] == pytest.approx(3.0)
    assert u["qoe"] == pytest.approx(6.25 / (27.5 - 6.5 - 10 / 4.8))
    assert u["qoe"] == pytest.approx(qoe_by_hand([3 + 0.625 * i for i in range(5)], 1.3, 4.8))
    assert u["longest_gap_s"] == pytest.approx(0.625)
    assert u["gaps_over_250ms"] == 4
    app_r = doc["variants"]["baseline"]["streaming"]["apparate"]["r"]
    assert app_r["tokens_per_s"] == pytest.approx(20 / 3) and app_r["faster_share"] == 1.0


# --------------------------------------------------------------------------- interruptions


@pytest.mark.parametrize("engine", ENGINES)
def test_interruption_bills_input_reasoning_and_arrived_tokens(tmp_path, engine):
    text = (
        HEAD
        + """
models:
  m: {price: {input_mtok: 2, output_mtok: 10}, ttft: 1, output_tps: 10}
agent:
  context: {system: 0, grows: true}
  steps:
    - call: {name: a, model: m, input: 1000, output: 100, reasoning: 20,
             consumer: {reader: {tokens_per_s: 5}}, interrupt: {p: 1, after_first_token: 3}}
    - call: {name: b, model: m, output: 10, consumer: {render: {tokens: 1}}}
"""
    )
    doc = summary(tmp_path, text, engine)
    # a: a_1 = 1 + 20/10 = 3 s; 100 tokens 3 s -> 1 + 120/10 = 13 s, gap 10/99. Cut at t = a_1 + 3 = 6 s:
    # arrived tokens 3 + (i - 1) 10/99 <= 6, i.e. i <= 30 (29.7 gaps). Billed: input 1000 x $2/M = $0.002 and
    # 20 reasoning + 30 visible x $10/M = $0.0005: $0.0025, which is wasted (interrupted call).
    s = means(doc, "a")
    assert s["interrupted_share"] == 1.0
    assert s["wasted_usd"] == pytest.approx(0.0025)
    assert s["ttft_s"] == pytest.approx(3.0)
    # The person interrupts at 6 s and stops reading there (contract v1.2): of the 30 delivered tokens they
    # have read 15 (3 + 15/5 = 6 s); reader done at 6 s, having waited only the 3 s before the first token.
    assert s["reader_done_s"] == pytest.approx(6.0)
    assert s["reader_wait_s"] == pytest.approx(3.0)
    assert s["cut_share"] == 1.0
    # The call ends at 6 s; b (sent at 6 s, context 1000 + 30: reasoning does not join) ends 1 + 1 = 2 s later.
    v = doc["variants"]["baseline"]
    assert v["wall_time_s"]["mean"] == pytest.approx(8.0)
    assert v["tokens"]["input"] == pytest.approx(1000 + 1030)
    assert v["tokens"]["output"] == pytest.approx(30 + 10)
    assert v["tokens"]["reasoning"] == pytest.approx(20)
    assert v["cost_usd"]["mean"] == pytest.approx(0.0025 + 1030 * 2e-6 + 10 * 1e-5)
    b = means(doc, "b")
    assert b["ttft_s"] == pytest.approx(1.0) and b["interrupted_share"] == 0 and b["wasted_usd"] == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_interruption_inside_a_chunk(tmp_path, engine):
    text = (
        HEAD
        + """
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: 1, output_tps: 10, stream: {chunk_tokens: 10}}
agent:
  steps:
    - call: {name: a, model: m, output: 100, reasoning: 20, input: 1000,
             consumer: {reader: {tokens_per_s: 5}}, interrupt: {p: 1, after_first_token: 2.5}}
"""
    )
    doc = summary(tmp_path, text, engine)
    # a_1 = 3 s, gap 10/99; cut at 5.5 s: tokens with (i - 1) 10/99 <= 2.5 have arrived, i <= 25 (24.75).
    # Billed (DESIGN: "the tokens that have arrived by t"): 1000 x $1/M + (20 + 25) x $10/M = $0.00145.
    s = means(doc, "a")
    assert s["wasted_usd"] == pytest.approx(0.00145)
    assert doc["variants"]["baseline"]["tokens"]["output"] == pytest.approx(25)
    # The consumer only got whole groups by 5.5 s (docs: "the consumer's metrics describe the tokens
    # delivered by t"): tokens 1-10 at 3 s, 11-20 at a_20 = 3 + 190/99; 21-30 would come at a_30 > 5.5.
    # Reader at 5 tok/s: 20 tokens would take it to f_20 = 3 + 20/5 = 7 s, but the person stops reading at the
    # interruption (5.5 s), having waited 3 s; one delivery gap of 190/99 s.
    assert s["reader_done_s"] == pytest.approx(5.5)
    assert s["reader_wait_s"] == pytest.approx(3.0)
    assert s["longest_gap_s"] == pytest.approx(190 / 99)
    assert s["gaps_over_1s"] == 1
    d = [3.0] * 10 + [3 + 190 / 99] * 10
    assert s["qoe"] == pytest.approx(qoe_by_hand(d, 1.3, 4.8))


def test_random_interruptions_against_a_monte_carlo(tmp_path):
    text = """
name: audit
seed: 5
runs: 4000
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: 1, output_tps: 10}
agent:
  steps:
    - call: {name: a, model: m, output: 100, consumer: {reader: {tokens_per_s: 5}},
             interrupt: {p: 0.5, after_first_token: {uniform: {low: 1, high: 5}}}}
"""
    doc = {e: summary(tmp_path, text, e) for e in ENGINES}
    assert doc["des"] == {**doc["fastpath"], "engine": "des"}
    s = metrics(doc["des"], "a")
    # With probability 1/2 the call is cut at t = a_1 + X, X ~ U(1, 5) (always before the end at 11 s):
    # n = #{i : (i - 1) 10/99 <= X} = 1 + floor(9.9 X) tokens arrived and are billed ($10/M, no input).
    # Otherwise n = 100 and nothing is wasted. The reader at 5 tok/s never catches up (f_n = 1 + n/5 > 1 + X):
    # interrupted, the person stops reading at 1 + X; else done at 1 + 100/5 = 21 s.
    rng = np.random.default_rng(17)
    k = 1_000_000
    cut = rng.random(k) < 0.5
    x = rng.uniform(1, 5, k)
    n = np.where(cut, 1 + np.floor(9.9 * x + 1e-9), 100)
    checks = {
        "interrupted_share": cut.astype(float),
        "wasted_usd": np.where(cut, n * 1e-5, 0.0),
        "reader_done_s": np.where(cut, 1 + x, 21.0),
    }
    for name, sample in checks.items():
        se = sample.std() * math.sqrt(1 / 4000 + 1 / k)
        assert abs(s[name]["mean"] - sample.mean()) < 4 * se, (name, s[name]["mean"], sample.mean(), se)
    # the wall time: 1 + X when cut, 11 s otherwise
    wall = doc["des"]["variants"]["baseline"]["wall_time_s"]["mean"]
    sample = np.where(cut, 1 + rng.uniform(1, 5, k), 11.0)
    assert abs(wall - sample.mean()) < 4 * sample.std() * math.sqrt(1 / 4000 + 1 / k)


@pytest.mark.parametrize("engine", ENGINES)
def test_interruption_during_a_stall_and_on_a_token_boundary(tmp_path, engine):
    text = (
        HEAD
        + """
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: 1, output_tps: 10}
  st: {price: {input_mtok: 1, output_mtok: 10}, ttft: 1, output_tps: 10, stream: {stall: {p: 1, seconds: 3}}}
agent:
  steps:
    - call: {name: s, model: st, output: 2, consumer: {reader: {tokens_per_s: 1}},
             interrupt: {p: 1, after_first_token: 2}}
    - call: {name: x, model: m, output: 11, consumer: {reader: {tokens_per_s: 1}},
             interrupt: {p: 1, after_first_token: 0.33}}
    - call: {name: y, model: m, output: 11, consumer: {reader: {tokens_per_s: 1}},
             interrupt: {p: 1, after_first_token: 0.77}}
"""
    )
    doc = summary(tmp_path, text, engine)
    # s: a_1 = 1, the stall (after token 1, the only place for N = 2) holds token 2 until 1.2 + 3 = 4.2 s.
    # Cut at a_1 + 2 = 3 s, inside the stall: 1 token billed, the call ends at 3 s; the breakdown counts the
    # 1 s TTFT and the 2 s of stall before the cut (the stream "pauses after token k": from a_1 on, so no
    # decode of token 2 happened by 3 s). Reader: f_1 = 1 + 1 = 2, then it waits for a token that never comes
    # until the person interrupts at 3 s: done at 3 s, waited 1 + 1 = 2 s.
    s = means(doc, "s")
    assert s["reader_done_s"] == pytest.approx(3.0)
    assert s["reader_wait_s"] == pytest.approx(2.0)
    assert s["wasted_usd"] == pytest.approx(1e-5)
    assert s["longest_gap_s"] == 0  # one delivered token: no gap
    # x and y: 11 tokens from 1 s to 1 + 11/10 = 2.1 s, gap 0.11 s. Cut at a_1 + 0.33 = token 4 exactly
    # (3 gaps; "within 1e-9 s" counts it): 4 tokens; at a_1 + 0.77 = token 8 exactly: 8 tokens.
    v = doc["variants"]["baseline"]
    assert v["tokens"]["output"] == pytest.approx(1 + 4 + 8)
    # the reader (1 tok/s) is still reading when the person interrupts: done at the interruption
    assert means(doc, "x")["reader_done_s"] == pytest.approx(1.33)
    assert means(doc, "y")["reader_done_s"] == pytest.approx(1.77)
    assert means(doc, "y")["wasted_usd"] == pytest.approx(8e-5)
    # wall = 3 + 1.33 + 1.77; stall slot 2 s, TTFT slots 3 x 1 s, the rest decode (0.33 + 0.77).
    assert v["wall_time_s"]["mean"] == pytest.approx(6.1)
    assert v["breakdown_s"]["stall"] == pytest.approx(2.0)
    assert v["breakdown_s"]["ttft"] == pytest.approx(3.0)
    assert v["breakdown_s"]["decode"] == pytest.approx(1.1)


@pytest.mark.parametrize("engine", ENGINES)
def test_chunked_speech_cut_after_first_audio_then_a_pipeline_on_chunks(tmp_path, engine):
    text = (
        HEAD
        + """
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: 1, output_tps: 10, stream: {chunk_tokens: 10}}
agent:
  steps:
    - call: {name: a, model: m, output: 60,
             consumer: {speech: {first_audio: 0.3, tokens_per_s: 3, sentence_tokens: 15}},
             interrupt: {p: 1, after_first_audio: 1}}
    - call: {name: b, model: m, output: 100}
    - pipeline: {after: {tokens: 15}, steps: [{tool: {name: t, latency: 20}}]}
"""
    )
    doc = summary(tmp_path, text, engine)
    # a: 60 tokens from 1 s to 7 s, gap 6/59; groups of 10 at a_1, a_20, a_30, ... The first sentence (15
    # tokens) is delivered with token 20: d_15 = a_20 = 1 + 19 x 6/59 = 2.932 s; first audio 0.3 s later.
    a20 = 1 + 19 * 6 / 59
    a30 = 1 + 29 * 6 / 59
    t_cut = a20 + 0.3 + 1  # 4.232 s: arrived (i - 1) 6/59 <= 3.232 -> 32 tokens billed
    s = means(doc, "a")
    assert s["first_sentence_s"] == pytest.approx(a20)
    assert s["first_audio_s"] == pytest.approx(a20 + 0.3)
    assert s["wasted_usd"] == pytest.approx(32e-5)
    # Delivered by the cut: groups at a_1, a_20, a_30 (3.949 s; a_40 = 4.966 s is too late): 30 tokens, two
    # 15-token sentences: s_2 = max(a_30 + 0.3, s_1 + 5) = s_1 + 5; but the voice stops when the person barges
    # in (contract v1.2), 1 s into sentence 1: speech done at the cut; two delivery gaps a_20 - a_1, a_30 - a_20.
    assert s["speech_done_s"] == pytest.approx(t_cut)
    assert s["silence_s"] == 0
    assert s["longest_gap_s"] == pytest.approx(a20 - 1)
    assert s["itl_p50_s"] == pytest.approx((a30 - 1) / 2)
    # b is sent at the cut; the pipeline starts once b has delivered 15 tokens, i.e. with token 20:
    # t_cut + 1 + 19 x 10/99, and its 20 s tool outlasts b (11 s): wall = t_cut + 1 + 190/99 + 20.
    v = doc["variants"]["baseline"]
    assert v["wall_time_s"]["mean"] == pytest.approx(t_cut + 1 + 190 / 99 + 20)
    assert v["tokens"]["output"] == pytest.approx(32 + 100)


@pytest.mark.parametrize("engine", ENGINES)
def test_fanout_and_subagent_calls_on_a_cached_context(tmp_path, engine):
    text = (
        HEAD
        + """
models:
  m: {price: {input_mtok: 1, output_mtok: 10, cache_read_mtok: 0.1, cache_write_mtok: 1.25},
      ttft: 1, prefill_tps: 1000, output_tps: 10}
workflows:
  helper:
    context: {system: 500, grows: true}
    steps:
      - call: {name: h, model: m, input: 500, output: 10, consumer: {render: {tokens: all}}}
agent:
  context: {system: 1000, grows: true, cache: true}
  steps:
    - call: {name: first, model: m, output: 10}
    - fanout:
        n: 3
        steps:
          - call: {name: f, model: m, input: 1000, output: 10, consumer: {reader: {tokens_per_s: 2}},
                   interrupt: {p: 1, after_first_token: 0.5}}
    - subagent: {workflow: helper}
"""
    )
    doc = summary(tmp_path, text, engine)
    # first: 1000 tokens written, ttft 1 + 1000/1000 = 2, decode 1: ends at 3 s; context 1010.
    # Each of the 3 copies of f is sent at 3 s with 1010 + 1000 = 2010 tokens, the 1000 `first` sent are a
    # cache read: ttft = 1 + 1010/1000 = 2.01 s; 10 tokens from 2.01 to 3.01 s (gap 1/9). Cut at 2.51 s:
    # (i - 1)/9 <= 0.5 -> 5 tokens. Billed (wasted): 1000 x 0.1 + 1010 x 1.25 + 5 x 10 = $1412.5/M.
    f = means(doc, "f")
    assert f["ttft_s"] == pytest.approx(2.01)
    assert f["wasted_usd"] == pytest.approx(1412.5e-6)
    # the reader (2 tok/s) has read 1 token when the person interrupts at 2.51 s, and stops there
    assert f["reader_done_s"] == pytest.approx(2.51)
    assert f["reader_wait_s"] == pytest.approx(2.01)
    d = [2.01 + i / 9 for i in range(5)]
    assert f["qoe"] == pytest.approx(qoe_by_hand(d, 1.3, 4.8))  # the defaults: T = 1.3 s, reading 4.8 tok/s
    # The subagent (own context, no cache) is sent at 5.51 s with 500 + 500 tokens: ttft 2 s, done 3 s later.
    h = means(doc, "h")
    assert h["ttft_s"] == pytest.approx(2.0)
    assert h["first_render_s"] == pytest.approx(3.0)
    assert h["qoe"] == pytest.approx(qoe_by_hand([2 + i / 9 for i in range(10)], 1.3, 4.8))
    v = doc["variants"]["baseline"]
    assert v["wall_time_s"]["mean"] == pytest.approx(8.51)
    # $: first 1000 x 1.25 + 100; three f 3 x 1412.5; h 1000 x 1 + 100
    assert v["cost_usd"]["mean"] == pytest.approx((1350 + 3 * 1412.5 + 1100) / 1e6)


def test_random_sentences_and_first_audio_against_a_monte_carlo(tmp_path):
    text = """
name: audit
seed: 13
runs: 4000
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: 1, output_tps: 10}
agent:
  steps:
    - call: {name: a, model: m, output: 100,
             consumer: {speech: {first_audio: {uniform: {low: 0.1, high: 0.5}}, tokens_per_s: 3,
                                 sentence_tokens: {uniform: {low: 5, high: 15}}}}}
"""
    doc = {e: summary(tmp_path, text, e) for e in ENGINES}
    assert doc["des"] == {**doc["fastpath"], "engine": "des"}
    s = metrics(doc["des"], "a")
    # 100 tokens from 1 s to 11 s (gap 10/99). The first sentence ends at e_1 = round(U(5, 15)), its audio
    # starts first_audio ~ U(0.1, 0.5) later. The voice (3 tok/s) is slower than the stream (9.9 tok/s) and
    # sentences are at most 15 tokens, so it never starves after the first sentence: speech_done =
    # first_audio_s + 100/3 and silence = 0 exactly.
    rng = np.random.default_rng(5)
    k = 1_000_000
    e1 = np.maximum(1, np.rint(rng.uniform(5, 15, k)))
    first_sentence = 1 + (e1 - 1) * 10 / 99
    first_audio = first_sentence + rng.uniform(0.1, 0.5, k)
    for name, sample in (("first_sentence_s", first_sentence), ("first_audio_s", first_audio)):
        se = sample.std() * math.sqrt(1 / 4000 + 1 / k)
        assert abs(s[name]["mean"] - sample.mean()) < 4 * se, (name, s[name]["mean"], sample.mean(), se)
    assert s["speech_done_s"]["mean"] == pytest.approx(s["first_audio_s"]["mean"] + 100 / 3)
    assert s["silence_s"]["p95"] == 0 and s["longest_silence_s"]["mean"] == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_metrics_that_do_not_exist_are_left_out_and_an_explicit_qoe(tmp_path, engine):
    text = """
name: audit
seed: 1
runs: 400
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: 1, output_tps: 10}
agent:
  steps:
    - call: {name: a, model: m, output: 100, consumer: {render: {tokens: 50}},
             interrupt: {p: 0.5, after_first_token: 1}}
    - call: {name: b, model: m, output: 100, consumer: {render: {tokens: 50}},
             interrupt: {p: 1, after_first_token: 1}}
    - call: {name: c, model: m, output: 100,
             consumer: {reader: {words_per_min: 90}, qoe: {expected_ttft: 0.5, tokens_per_s: 4}}}
"""
    doc = summary(tmp_path, text, engine)
    # a: 100 tokens from 1 s to 11 s. A cut at a_1 + 1 = 2 s leaves 1 + floor(9.9) = 10 tokens, fewer than
    # the 50 the render needs: that call has no first render and is left out. The others render at
    # a_50 = 1 + 49 x 10/99, so mean = p50 = p95 = that; the interrupted share is ~1/2 (400 runs: SE 0.025).
    a = metrics(doc, "a")
    for stat in ("mean", "p50", "p95"):
        assert a["first_render_s"][stat] == pytest.approx(1 + 490 / 99)
    assert abs(a["interrupted_share"]["mean"] - 0.5) < 4 * 0.025
    assert a["interrupted_share"]["p50"] in (0.0, 0.5, 1.0) and a["interrupted_share"]["p95"] == 1.0
    assert metrics(doc, "a")["wasted_usd"]["p95"] == pytest.approx(10e-5)
    # b is always cut: no call has the metric -> null
    assert metrics(doc, "b")["first_render_s"] == {"mean": None, "p50": None, "p95": None, "p99": None}
    # c: 90 words/min = 2 tok/s: done 1 + 100/2 = 51 s; QoE with T = 0.5 s and v = 4 tok/s as given.
    c = means(doc, "c")
    assert c["reader_done_s"] == pytest.approx(51.0)
    assert c["qoe"] == pytest.approx(qoe_by_hand([1 + i * 10 / 99 for i in range(100)], 0.5, 4.0))
    assert c["qoe"] < 1


def test_a_fast_reader_on_a_jittered_stream_against_a_monte_carlo(tmp_path):
    text = """
name: audit
seed: 21
runs: 4000
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: 1, output_tps: 10, stream: {jitter_cv: 1.5}}
agent:
  steps:
    - call: {name: a, model: m, output: 3, consumer: {reader: {tokens_per_s: 20}}}
"""
    doc = summary(tmp_path, text)
    # a_1 = 1, a_2 = 1 + 0.3 w_1/(w_1 + w_2), a_3 = 1.3. Reader at 20 tok/s (0.05 s a token):
    # f_1 = 1.05, f_2 = max(a_2, 1.05) + 0.05, f_3 = max(1.3, f_2) + 0.05; waited f_3 - 3/20.
    rng = np.random.default_rng(8)
    sigma = math.sqrt(math.log(1 + 1.5**2))
    w = rng.lognormal(-(sigma**2) / 2, sigma, size=(1_000_000, 2))
    a2 = 1 + 0.3 * w[:, 0] / w.sum(axis=1)
    f3 = np.maximum(1.3, np.maximum(a2, 1.05) + 0.05) + 0.05
    s = metrics(doc, "a")
    for name, sample in (("reader_done_s", f3), ("reader_wait_s", f3 - 0.15)):
        se = sample.std() * math.sqrt(1 / 4000 + 1 / len(sample))
        assert se > 0
        assert abs(s[name]["mean"] - sample.mean()) < 4 * se, (name, s[name]["mean"], sample.mean(), se)


def test_random_stalls_against_a_monte_carlo(tmp_path):
    text = """
name: audit
seed: 4
runs: 4000
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: 1, output_tps: 10,
      stream: {stall: {p: 0.3, seconds: {exponential: {mean: 2}}}}}
agent:
  steps:
    - call: {name: a, model: m, output: 100, consumer: {reader: {tokens_per_s: 50}}}
"""
    doc = {e: summary(tmp_path, text, e) for e in ENGINES}
    assert doc["des"] == {**doc["fastpath"], "engine": "des"}
    v = doc["des"]["variants"]["baseline"]
    # With probability 0.3 the stream pauses once for S ~ Exp(mean 2 s): the call (and the run) takes
    # 11 + S s instead of 11 s, the stall slot of the breakdown is S, the longest gap 10/99 + S (else 10/99),
    # and a reader at 50 tok/s (faster than the stream) finishes 0.02 s after the last token: 11.02 + S.
    rng = np.random.default_rng(12)
    k = 1_000_000
    stall = np.where(rng.random(k) < 0.3, rng.exponential(2.0, k), 0.0)
    s = metrics(doc["des"], "a")
    checks = (
        (v["wall_time_s"]["mean"], 11 + stall),
        (v["breakdown_s"]["stall"], stall),
        (s["longest_gap_s"]["mean"], 10 / 99 + stall),
        (s["reader_done_s"]["mean"], 11.02 + stall),
    )
    for got, sample in checks:
        se = sample.std() * math.sqrt(1 / 4000 + 1 / k)
        assert abs(got - sample.mean()) < 4 * se, (got, sample.mean(), se)
    # the decode slot does not include the stall: exactly 10 s in every run
    assert v["breakdown_s"]["decode"] == pytest.approx(10.0)


def test_streaming_is_measured_from_the_attempt_that_succeeds(tmp_path):
    text = (
        HEAD
        + """
models:
  big: {price: {input_mtok: 1, output_mtok: 10}, ttft: 1, output_tps: 10, timeout: 3,
        retry: {max_attempts: 2, backoff_base: 0.5, jitter: none}, fallback: {model: small, after: 1}}
  small: {price: {input_mtok: 1, output_mtok: 10}, ttft: 0.5, output_tps: 100}
agent:
  steps:
    - call: {name: a, model: big, output: 100, consumer: {reader: {tokens_per_s: 5}},
             interrupt: {p: 1, after_first_token: 0.5}}
"""
    )
    doc = summary(tmp_path, text, "des")
    # Attempt 1 on big (11 s long) is cancelled by the 3 s timeout, having generated the tokens with
    # 1 + (i - 1) 10/99 <= 3: 20 (billed to the run, $0.0002). Back-off 0.5 x 2^0 = 0.5 s (no jitter), then
    # attempt 2 on the fallback `small`, sent at 3.5 s: a_1 = 0.5 s after it, 100 tokens over 1 s (gap 1/99).
    # The interruption applies to this attempt: cut at a_1 + 0.5 = 1 s after its send, tokens with
    # (i - 1)/99 <= 0.5: 50. Wall 3.5 + 1 = 4.5 s. The reader (5 tok/s), reading from 0.5 s, stops at the
    # interruption, 1 s after the send (contract v1.2).
    v = doc["variants"]["baseline"]
    assert v["wall_time_s"]["mean"] == pytest.approx(4.5)
    assert v["tokens"]["output"] == pytest.approx(50)
    assert v["cost_usd"]["mean"] == pytest.approx(70e-5)
    s = means(doc, "a")
    assert s["ttft_s"] == pytest.approx(0.5)
    assert s["reader_done_s"] == pytest.approx(1.0)
    assert s["reader_wait_s"] == pytest.approx(0.5)
    assert s["longest_gap_s"] == pytest.approx(1 / 99)
    # wasted_usd: the interrupted call's own bill (its 50 tokens); the timed-out attempt is the run's cost
    assert s["wasted_usd"] == pytest.approx(50e-5)


@pytest.mark.parametrize("engine", ENGINES)
def test_speed_tier_and_provider_conditions_move_the_stream(tmp_path, engine):
    text = (
        HEAD
        + """
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: 2, output_tps: 10,
      speeds: {fast: {output_tps_x: 2, ttft_x: 0.5}},
      conditions: {ttft_x: 1.5, output_tps_x: 0.5}}
  other: {price: {input_mtok: 1, output_mtok: 10}, ttft: 0.25, output_tps: 100}
agent:
  steps:
    - call: {name: a, model: m, output: 100, consumer: {reader: {tokens_per_s: 50}}}
variants:
  baseline: {}
  fast: {speed: {m: fast}}
  other: {model: {a: other}}
"""
    )
    doc = summary(tmp_path, text, engine)
    # baseline: ttft 2 x 1.5 = 3 s, tps 10 x 0.5 = 5: 100 tokens from 3 s to 3 + 20 = 23 s (gap 20/99);
    # the reader (50 tok/s) is faster: it finishes 0.02 s after the last token, 23.02 s, waiting 23.02 - 2.
    b = means(doc, "a")
    assert b["ttft_s"] == pytest.approx(3.0)
    assert b["reader_done_s"] == pytest.approx(23.02)
    assert b["reader_wait_s"] == pytest.approx(21.02)
    assert b["longest_gap_s"] == pytest.approx(20 / 99)
    # fast tier: ttft 2 x 0.5 x 1.5 = 1.5 s, tps 10 x 2 x 0.5 = 10: tokens 1.5 -> 11.5 s.
    f = means(doc, "a", "fast")
    assert f["ttft_s"] == pytest.approx(1.5)
    assert f["reader_done_s"] == pytest.approx(11.52)
    assert f["longest_gap_s"] == pytest.approx(10 / 99)
    # another model (no conditions): 0.25 s, then 100 tokens in 1 s; the reader is now the bottleneck:
    # done 0.25 + 100/50 = 2.25 s and its only wait is the first token's.
    o = means(doc, "a", "other")
    assert o["reader_done_s"] == pytest.approx(2.25)
    assert o["reader_wait_s"] == pytest.approx(0.25)
    assert doc["variants"]["other"]["streaming"]["apparate"]["a"]["faster_share"] == 1.0
    assert doc["variants"]["baseline"]["streaming"]["apparate"]["a"]["faster_share"] == 0.0


# --------------------------------------------------------------------------- fixed: a cut inside the first group

CUT_IN_FIRST_GROUP = (
    HEAD
    + """
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: 1, output_tps: 10, stream: {chunk_tokens: 10}}
agent:
  context: {system: 0, grows: true}
  steps:
    - call: {name: a, model: m, output: 100, consumer: {reader: {tokens_per_s: 5}},
             interrupt: {p: 1, after_first_token: 0.5}}
    - call: {name: b, model: m, output: 1}
"""
)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_cut_inside_the_first_group_shows_only_the_tokens_that_exist(tmp_path, engine):
    # 100 tokens from 1 s (gap 10/99), groups of 10, the first delivered at a_1. Cut at a_1 + 0.5 = 1.5 s:
    # (i - 1) 10/99 <= 0.5 -> 5 tokens have arrived; they are billed ($5e-5) and join the context (b's input
    # is 5); "the rest never happens". The consumer can then have 5 tokens, not the 10 of the first group
    # (before the fix it read 10: reader_done 1 + 10/5 = 3 s, tokens that were never generated or billed).
    # Reader at 5 tok/s: f_5 would be 1 + 5/5 = 2 s, but the person stops reading at the interruption, 1.5 s;
    # one delivery, no gap.
    doc = summary(tmp_path, CUT_IN_FIRST_GROUP, engine)
    v = doc["variants"]["baseline"]
    assert v["tokens"]["input"] == pytest.approx(5)
    assert v["tokens"]["output"] == pytest.approx(5 + 1)
    s = means(doc, "a")
    assert s["wasted_usd"] == pytest.approx(5e-5)
    assert s["reader_done_s"] == pytest.approx(1.5)
    assert s["reader_wait_s"] == pytest.approx(1.0)
    assert s["longest_gap_s"] == 0


def test_a_cut_inside_the_first_group_in_the_token_timeline(tmp_path):
    from agentsim.analysis.stream_timeline import token_timelines

    path = tmp_path / "cut.yaml"
    path.write_text(CUT_IN_FIRST_GROUP)
    frame = token_timelines(path, "a")
    # the 5 tokens that arrived, all delivered with the first group at a_1 = 1 s; read at 1 + 0.2 i until the
    # person stops reading at the interruption, 1.5 s: tokens 1 and 2 are read, the others never
    assert len(frame) == 5
    np.testing.assert_allclose(frame["arrival_s"], 1 + np.arange(5) * 10 / 99, rtol=1e-12)
    np.testing.assert_allclose(frame["delivered_s"], 1.0)
    np.testing.assert_allclose(frame["read_s"], [1.2, 1.4, np.nan, np.nan, np.nan], rtol=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_pipeline_on_a_call_cut_inside_its_first_group_starts_at_the_cut(tmp_path, engine):
    text = (
        HEAD
        + """
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: 1, output_tps: 10, stream: {chunk_tokens: 10}}
agent:
  steps:
    - call: {name: a, model: m, output: 100, interrupt: {p: 1, after_first_token: 0.2}}
    - pipeline: {after: {tokens: 5}, steps: [{tool: {name: t, latency: 20}}]}
    - call: {name: b, model: m, output: 100}
    - pipeline: {after: {tokens: 5}, steps: [{tool: {name: u, latency: 20}}]}
"""
    )
    doc = summary(tmp_path, text, engine)
    # a: cut at a_1 + 0.2 = 1.2 s with (i - 1) 10/99 <= 0.2 -> 2 tokens. The pipeline needs 5: the call has
    # fewer, so it starts at the call's end (docs: "d_tokens, or the call's end if it has fewer"), 1.2 s, not at
    # a_1 = 1 s where the first group (tokens 1-10, 8 of which never come) would have been delivered.
    # Its tool ends at 21.2 s. b (not cut) is sent then; its pipeline starts with the first group, at
    # b's a_1 (token 5 is in it): 21.2 + 1, and ends 20 s later, after b (11 s): wall 21.2 + 21 = 42.2 s.
    v = doc["variants"]["baseline"]
    assert v["tokens"]["output"] == pytest.approx(2 + 100)
    assert v["wall_time_s"]["mean"] == pytest.approx(42.2)
    assert v["breakdown_s"]["tool"] == pytest.approx(40.0)
    assert v["breakdown_s"]["ttft"] + v["breakdown_s"]["decode"] == pytest.approx(2.2)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_pipeline_whose_token_arrived_but_whose_group_is_cut_starts_at_the_cut(tmp_path, engine):
    text = (
        HEAD
        + """
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: 1, output_tps: 10, stream: {chunk_tokens: 10}}
agent:
  steps:
    - call: {name: a, model: m, output: 100, interrupt: {p: 1, after_first_token: 1.5}}
    - pipeline: {after: {tokens: 15}, steps: [{tool: {name: t, latency: 20}}]}
"""
    )
    doc = summary(tmp_path, text, engine)
    # a: a_i = 1 + (i - 1) 10/99; cut at 1 + 1.5 = 2.5 s, with (i - 1) 10/99 <= 1.5 -> 15 tokens arrived.
    # Token 15 arrived (a_15 = 2.414 s), but its group (tokens 11-20) would be delivered at a_20 = 2.919 s,
    # after the call ended at the cut: the pipeline starts at the cut, 2.5 s, and its tool ends at 22.5 s.
    v = doc["variants"]["baseline"]
    assert v["tokens"]["output"] == pytest.approx(15)
    assert v["wall_time_s"]["mean"] == pytest.approx(22.5)
    assert v["breakdown_s"]["tool"] == pytest.approx(20.0)


@pytest.mark.parametrize("engine", ENGINES)
def test_one_token_answer_default_consumer_in_a_subagent_and_a_cut_call_winning_a_race(tmp_path, engine):
    text = (
        HEAD
        + """
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: 3, output_tps: 10}
consumer: {render: {tokens: all}}
workflows:
  w:
    steps:
      - call: {name: sub, model: m, output: 1}
agent:
  steps:
    - subagent: {workflow: w}
    - parallel:
        branches:
          - call: {name: racer, model: m, output: 100, consumer: {reader: {tokens_per_s: 5}},
                   interrupt: {p: 1, after_first_token: 2}}
          - tool: {name: slow, latency: 6}
        join: any
"""
    )
    doc = summary(tmp_path, text, engine)
    # sub (inside a subagent) takes the scenario's consumer, a render of all tokens. Its one token arrives at
    # a_1 = ttft = 3 s (docs: "a one-token answer arrives at a_1"); the call ends at 3 + 1/10 = 3.1 s.
    # QoE (defaults T = 1.3, v = 4.8): x_1 = 1.3 < d_1 = 3, T_end = 3: (3 - 3) / (3 - 1.3) = 0. No gap.
    sub = means(doc, "sub")
    assert sub["first_render_s"] == pytest.approx(3.0)
    assert sub["qoe"] == 0
    assert sub["longest_gap_s"] == 0
    # racer is sent at 3.1 s; cut at a_1 + 2 = 5 s after that (8.1 s) with (i - 1) 10/99 <= 2 -> 20 tokens,
    # before the 6 s tool ends (9.1 s): the cut call wins the race, the run ends at 8.1 s.
    racer = means(doc, "racer")
    assert racer["interrupted_share"] == 1
    assert racer["wasted_usd"] == pytest.approx(20e-5)
    assert racer["reader_done_s"] == pytest.approx(5.0)  # reading stops at the interruption (contract v1.2)
    v = doc["variants"]["baseline"]
    assert v["wall_time_s"]["mean"] == pytest.approx(8.1)
    assert v["tokens"]["output"] == pytest.approx(1 + 20)
