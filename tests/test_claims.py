"""The seed claims (scenarios/claims/): `agentsim run` prints the figures each claim is about, and they
equal the arithmetic done by hand here, from the claims' own numbers (not copied from a run)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from agentsim.cli.main import app
from conftest import SCENARIOS

CLAIMS = SCENARIOS / "claims"
WORDS_PER_TOKEN = 0.75


def run_json(name: str) -> dict:
    result = CliRunner().invoke(app, ["run", str(CLAIMS / name), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["variants"]


def wall(v: dict) -> float:
    return v["wall_time_s"]["mean"]


# --------------------------------------------------------------------------- (a) seconds per step


@pytest.mark.parametrize(
    ("name", "calls", "ttft", "tokens", "tps", "variants"),
    [
        # variant -> (ttft multiplier, output speed multiplier), as the scenario's speed tiers say
        (
            "seconds-per-step-30.yaml",
            30,
            1.0,
            200,
            100,
            {"as-claimed-90s": (1, 1), "save-1s-per-step": (1, 2), "save-2s-per-step": (0.5, 4)},
        ),
        (
            "seconds-per-step-40.yaml",
            40,
            0.75,
            150,
            100,
            {"as-claimed-90s": (1, 1), "save-1s-per-step": (1, 3), "save-1.5s-per-step": (0.5, 4)},
        ),
    ],
)
def test_saving_a_second_per_step(name, calls, ttft, tokens, tps, variants):
    got = run_json(name)
    per_call = {v: ttft * tx + tokens / (tps * sx) for v, (tx, sx) in variants.items()}
    for v, seconds in per_call.items():
        assert wall(got[v]) == pytest.approx(calls * seconds, abs=1e-9), v
    # The claim's job is 90 s; one second saved per call leaves 90 - calls, not 30 s.
    assert wall(got["as-claimed-90s"]) == pytest.approx(90.0)
    assert wall(got["save-1s-per-step"]) == pytest.approx(90.0 - calls)
    assert per_call["as-claimed-90s"] - per_call["save-1s-per-step"] == pytest.approx(1.0)
    # What the claim actually needs: (90 - 30) / calls seconds saved per call -> 30 s.
    needed = (90.0 - 30.0) / calls
    last = list(variants)[-1]
    assert per_call["as-claimed-90s"] - per_call[last] == pytest.approx(needed)
    assert wall(got[last]) == pytest.approx(30.0)


# --------------------------------------------------------------------------- (b) reading speed


def test_fifty_tokens_per_second_outruns_a_reader_nine_times_not_ten():
    words = 600
    tokens = words / WORDS_PER_TOKEN  # 800
    words_per_s = 50 * WORDS_PER_TOKEN  # 37.5, the claim's "~37 words/s"
    reader_words_per_s = 250 / 60
    got = run_json("reading-speed.yaml")
    assert wall(got["model-at-50-tps"]) == pytest.approx(tokens / 50)  # 16 s
    assert wall(got["reader-at-250-wpm"]) == pytest.approx(words / reader_words_per_s, rel=1e-6)  # 144 s
    ratio = wall(got["reader-at-250-wpm"]) / wall(got["model-at-50-tps"])
    assert ratio == pytest.approx(words_per_s / reader_words_per_s, rel=1e-6)
    assert ratio == pytest.approx(9.0, rel=1e-6)  # not 10
    # 10x needs 10 x 250 words/min = 41.67 words/s = 55.6 tokens/s.
    ten_x_tps = 10 * reader_words_per_s / WORDS_PER_TOKEN
    assert wall(got["model-10x-the-reader"]) == pytest.approx(tokens / ten_x_tps, rel=1e-6)
    assert wall(got["reader-at-250-wpm"]) / wall(got["model-10x-the-reader"]) == pytest.approx(10.0, rel=1e-6)
    assert got["model-at-50-tps"]["per_call"]["tps"]["mean"] == pytest.approx(50)


# --------------------------------------------------------------------------- (c) fast mode, USD per hour


def coding_session(speed_x: float, price_x: float) -> tuple[float, float]:
    """Wall time (s) and cost (USD) of claims/fast-mode-coding-session.yaml, by hand.

    Context of 12,000 tokens that grows by each call's new input and output and each tool's output;
    every call reads the previous call's prompt from the cache and writes the rest.
    """
    ttft0, prefill, tps = 2.0, 15000.0, 60.0 * speed_x
    rate = {"read": 0.5e-6 * price_x, "write": 6.25e-6 * price_x, "out": 25e-6 * price_x}
    context, cached = 12000, 0
    time = cost = 0.0
    calls = [(2000, 600, 0, 0.0)] + [(50, 250, 300, 2.7)] * 35  # (new input, output, reasoning, tool after)
    for new, out, reasoning, tool in calls:
        sent = context + new
        write = sent - cached
        time += ttft0 + write / prefill + (out + reasoning) / tps + tool
        cost += cached * rate["read"] + write * rate["write"] + (out + reasoning) * rate["out"]
        cached = sent
        context = sent + out + (800 if tool else 0)
    return time, cost


def test_fast_mode_usd_per_hour_saved_for_a_coding_session():
    t_std, c_std = coding_session(1.0, 1.0)
    t_fast, c_fast = coding_session(2.5, 6.0)
    got = run_json("fast-mode-coding-session.yaml")
    assert wall(got["standard"]) == pytest.approx(t_std, rel=1e-12)
    assert wall(got["fast"]) == pytest.approx(t_fast, rel=1e-12)
    assert got["standard"]["cost_usd"]["mean"] == pytest.approx(c_std, rel=1e-12)
    assert got["fast"]["cost_usd"]["mean"] == pytest.approx(c_fast, rel=1e-12)
    per_hour = (c_fast - c_std) / ((t_std - t_fast) / 3600)
    vs = got["fast"]["vs_baseline"]
    assert vs["usd_per_hour_saved"] == pytest.approx(per_hour, rel=1e-9)
    assert vs["pays_off"] is (per_hour < 100)
    # "2.5x faster" output is not a 2.5x faster session: TTFT, prefill and tools stay.
    assert 1.5 < t_std / t_fast < 2.0


# --------------------------------------------------------------------------- (d) the monologue


def test_ten_thousand_word_monologue_at_fifteen_thousand_tokens_per_second():
    tokens = round(10_000 / WORDS_PER_TOKEN)  # 13,333
    got = run_json("monologue.yaml")
    for variant, tps in (("at-15000-tps", 15000), ("at-1000-tps", 1000), ("at-60-tps", 60)):
        assert wall(got[variant]) == pytest.approx(tokens / tps, rel=1e-12), variant
        assert got[variant]["tokens"]["reasoning"] == tokens
    seconds = wall(got["at-15000-tps"])
    assert 0.1 < seconds < 1.0  # under a second (flow of thought), but not instant (0.1 s)
