"""Context-dependent speed (``context_speed``, DESIGN.md §3.3): output speed and TTFT by context size.

A call's context size is its whole input (context re-sent + its own new input, cached or not); its
output speed is multiplied by ``f_tps(input)`` and its drawn TTFT (not the prefill) by ``f_ttft(input)``,
piecewise linear between the knots and flat outside them (agentsim.plan.context_speed, rules.context_factor).
"""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from agentsim.cli.main import app
from agentsim.plan.compiler import compile_plan
from agentsim.sim.simulation import simulate_plan
from conftest import assert_frames_identical, make, model, run, scenario

ENGINES = ["des", "fastpath"]
CURVE = {"tokens": [0, 200000, 600000], "output_tps_x": [1, 0.9, 0.8], "ttft_x": [1, 2, 3]}


def _chain(curve=CURVE, n=7, **model_kw) -> dict:
    """n calls in a growing context: 1,000 system tokens, each call adds 99,000 input and 1,000 output,
    so call k sends exactly 100,000 x k tokens. TTFT 0.5 s, 100 tokens/s, no prefill term."""
    kw = {"context_speed": curve} if curve is not None else {}
    steps = [{"repeat": {"times": n, "steps": [{"call": {"name": "c", "model": "m", "input": 99000, "output": 1000}}]}}]
    return scenario(
        steps, models={"m": model(ttft=0.5, tps=100.0, **kw, **model_kw)}, context={"system": 1000, "grows": True}
    )


# By hand, for CURVE (knots 0, 200k, 600k):
#   call  input   f_tps = output_tps_x                     f_ttft = ttft_x        tps    ttft   decode = 1000/tps
#   1     100k    1 + (0.9-1)·(100k/200k)   = 0.95          1 + 1·0.5  = 1.5       95     0.75   10.526316
#   2     200k    0.9 (a knot)                              2                      90     1.0    11.111111
#   3     300k    0.9 + (0.8-0.9)·(100k/400k) = 0.875       2 + 1·0.25 = 2.25      87.5   1.125  11.428571
#   4     400k    0.85                                      2.5                    85     1.25   11.764706
#   5     500k    0.825                                     2.75                   82.5   1.375  12.121212
#   6     600k    0.8 (the last knot)                       3                      80     1.5    12.5
#   7     700k    0.8 (beyond the last knot: held)          3                      80     1.5    12.5
#   wall = Σ (ttft + decode) = 8.5 + 81.951916 = 90.451916 s (no prefill, no tools)
HAND_TPS = [95.0, 90.0, 87.5, 85.0, 82.5, 80.0, 80.0]
HAND_TTFT = [0.75, 1.0, 1.125, 1.25, 1.375, 1.5, 1.5]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_chain_growing_to_700k_tokens_matches_the_hand_computation(engine):
    res = run(_chain(), engine=engine)
    c = res.calls
    assert c["input_tokens"].tolist() == [100000 * k for k in range(1, 8)]
    assert c["tps"].tolist() == pytest.approx(HAND_TPS, rel=1e-14)
    assert c["ttft_s"].tolist() == pytest.approx(HAND_TTFT, rel=1e-14)
    decode = [1000 / t for t in HAND_TPS]
    assert (c["t_end"] - c["t_first_token"]).tolist() == pytest.approx(decode, rel=1e-12)
    wall = sum(HAND_TTFT) + sum(decode)
    assert res.runs["wall_time_s"].tolist() == pytest.approx([wall], rel=1e-13)
    assert wall == pytest.approx(90.451916, abs=1e-6)
    # the same chain without the curve: 7 x (0.5 + 10) s; cost does not depend on speed
    flat = run(_chain(None), engine=engine)
    assert flat.runs["wall_time_s"].tolist() == pytest.approx([73.5], rel=1e-14)
    assert flat.runs["cost_usd"].tolist() == res.runs["cost_usd"].tolist()
    # 2.8M input tokens at 3 USD/M, 7,000 output tokens at 15 USD/M
    assert res.runs["cost_usd"].tolist() == pytest.approx([8.4 + 0.105], rel=1e-12)


def _identical(a, b):
    assert_frames_identical(a.runs, b.runs)
    assert_frames_identical(a.calls, b.calls)
    assert json.loads(a.to_json()) == json.loads(b.to_json())


FLAT = {"tokens": [0, 100000, 900000], "output_tps_x": [1, 1, 1], "ttft_x": [1.0, 1.0, 1.0]}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_flat_curve_is_byte_identical_to_none(engine):
    m = {
        "ttft": {"lognormal": {"median": 0.8, "p90": 2}},
        "tps": {"gamma": {"mean": 60, "sd": 15}},
        "prefill_tps": 20000,
        "price": {"input_mtok": 3, "output_mtok": 15, "cache_read_mtok": 0.3, "cache_write_mtok": 3.75},
    }
    steps = [
        {"repeat": {"times": {"uniform": {"low": 2, "high": 6}}, "steps": [{"call": {"input": 3000, "output": 300}}]}},
        {"parallel": [{"call": {"output": 100}}, {"call": {"output": 200}}]},
    ]
    ctx = {"system": 5000, "grows": True, "cache": True}
    none = scenario(steps, models={"m": model(**m)}, context=ctx, runs=300)
    flat = scenario(steps, models={"m": model(**m, context_speed=FLAT)}, context=ctx, runs=300)
    _identical(run(none, engine=engine), run(flat, engine=engine))


@pytest.mark.parametrize("engine", ENGINES)
def test_fixed_calls_scale_by_system_plus_input(engine):
    # no growth, no cache: the DES computes these calls up front. Context 1000 + 299,000 = 300k tokens:
    # f_tps = 0.875, f_ttft = 2.25 (the table above) -> 87.5 tok/s, 1.125 s TTFT, 1000/87.5 s decode.
    doc = scenario(
        [{"call": {"input": 299000, "output": 1000}}] * 2,
        models={"m": model(ttft=0.5, tps=100.0, context_speed=CURVE)},
        context={"system": 1000},
    )
    c = run(doc, engine=engine).calls
    assert c["tps"].tolist() == pytest.approx([87.5, 87.5], rel=1e-14)
    assert c["ttft_s"].tolist() == pytest.approx([1.125, 1.125], rel=1e-14)


def test_the_prefill_term_is_not_scaled():
    # 100k tokens, 50,000 tokens/s of prefill: TTFT = 0.5 x 1.5 + 100000 / 50000 = 2.75 s
    doc = _chain(n=1, prefill_tps=50000)
    for engine in ENGINES:
        assert run(doc, engine=engine).calls["ttft_s"].tolist() == pytest.approx([2.75], rel=1e-14)


def test_a_tier_curve_replaces_the_models():
    tier = {"output_tps_x": 2, "price_x": 2, "context_speed": {"tokens": [0, 700000], "output_tps_x": [1, 0.5]}}
    doc = _chain(speeds={"fast": tier})
    doc["variants"] = {"standard": {}, "fast": {"speed": {"m": "fast"}}}
    for engine in ENGINES:
        c = run(doc, engine=engine).calls
        fast = c[c["variant"] == "fast"]
        # 200 tok/s x (1 - 0.5 x k/7) at k x 100k tokens; the model's ttft_x curve is replaced too (TTFT 0.5 s)
        assert fast["tps"].tolist() == pytest.approx([200 * (1 - 0.5 * k / 7) for k in range(1, 8)], rel=1e-13)
        assert fast["ttft_s"].tolist() == pytest.approx([0.5] * 7, rel=1e-14)
        assert c[c["variant"] == "standard"]["tps"].tolist() == pytest.approx(HAND_TPS, rel=1e-14)


def test_cached_tokens_count_as_context():
    # the cache makes prefill cheaper, not the context smaller: call 2 sends 200k tokens, 100k read from cache
    doc = _chain(n=2)
    doc["agent"]["context"]["cache"] = True
    for engine in ENGINES:
        c = run(doc, engine=engine).calls
        assert c["cache_read_tokens"].tolist() == [0, 100000]
        assert c["tps"].tolist() == pytest.approx(HAND_TPS[:2], rel=1e-14)


def test_limited_calls_and_fallbacks_run_at_their_context_speed():
    # Every attempt on m fails at its first token (TTFT 0.5 x 1.5 = 0.75 s at 100k tokens); after one failure the
    # call falls back, at once, to n, whose own curve gives 0.5 at 100k tokens: 1 s + 100 / (100 x 0.5) = 3 s.
    m = model(
        ttft=0.5,
        tps=100.0,
        context_speed=CURVE,
        error_rate=1.0,
        retry={"max_attempts": 2, "backoff_base": 0, "jitter": "none"},
        fallback={"model": "n", "after": 1},
    )
    n = model(context_speed={"tokens": [0, 100000], "output_tps_x": [1, 0.5]})
    doc = scenario([{"call": {"model": "m", "input": 99000, "output": 100}}], models={"m": m, "n": n})
    doc["agent"]["context"] = {"system": 1000}
    call = simulate_plan(compile_plan(make(doc)), 1, 1).calls.iloc[0]
    assert call["t_start"] == 0.75 and call["tps"] == 50.0 and call["t_end"] == 3.75


def test_limited_calls_agree_with_the_plain_des():
    # shared limits that never bind switch every call to the DES's limited path: the same numbers as the plain DES
    base = _chain()
    limited = _chain()
    limited["limits"] = {"p": {"models": ["m"], "concurrency": 100}}
    a, b = run(base), run(limited)
    assert a.calls["tps"].tolist() == b.calls["tps"].tolist()
    assert a.runs["wall_time_s"].tolist() == b.runs["wall_time_s"].tolist()


def test_engines_agree_on_streamed_interrupted_and_pipelined_calls():
    from test_engines_agree import assert_same, both

    runs = 64
    curve = {"tokens": [0, 2000, 20000], "output_tps_x": [1.2, 0.8, 0.5], "ttft_x": [0.8, 1.5, 2.5]}
    m = model(ttft={"lognormal": {"median": 0.6, "p90": 1.5}}, tps={"gamma": {"mean": 60, "sd": 15}}, prefill_tps=9000)
    m["context_speed"] = curve
    m["stream"] = {"chunk_tokens": 3, "jitter_cv": 0.3, "stall": {"p": 0.3, "seconds": 1.0}}
    m["speeds"] = {"fast": {"output_tps_x": 2, "price_x": 3, "context_speed": {"tokens": [5000], "ttft_x": [0.7]}}}
    call = {"call": {"input": {"lognormal": {"median": 1500, "p90": 6000}}, "output": 200}}
    steps = [
        call,
        {
            "call": {
                "output": 300,
                "consumer": {"reader": {"tokens_per_s": 8}},
                "interrupt": {"p": 0.4, "after_first_token": 2},
            }
        },
        {"pipeline": {"after": {"tokens": 30}, "steps": [call]}},
        {"parallel": {"branches": [[call], [call, call]], "join": "any"}},
        {"fanout": {"n": 3, "steps": [call], "join": {"k": 2}}},
        {"repeat": {"times": 3, "steps": [call, {"tool": {"latency": 0.5, "output": 2000}}]}},
    ]
    doc = scenario(
        steps,
        models={"m": m},
        context={"system": 800, "grows": True, "cache": True},
        variants={"standard": {}, "fast": {"speed": {"m": "fast"}}},
        runs=runs,
    )
    plan = compile_plan(make(doc))
    assert_same(*both(plan, runs, 5))


def test_a_summary_only_run_reports_the_speeds_calls_ran_at():
    from agentsim.sim.fastpath import summary_only_reasons

    doc = _chain()
    doc["runs"] = 5
    plan = compile_plan(make(doc))
    assert not summary_only_reasons(plan)
    lean = json.loads(simulate_plan(plan, 5, 1, engine="fastpath").to_json())
    full = json.loads(simulate_plan(plan, 5, 1, engine="fastpath", keep_calls=True).to_json())
    assert lean == full


def test_a_profile_carries_context_speed(tmp_path):
    prof = tmp_path / "p.yaml"
    prof.write_text(
        "profile: p\nkind: measured\nsource: a test\ndate: 2026-06-01\nttft: 0.5\noutput_tps: 100\n"
        "context_speed: {tokens: [0, 200000, 600000], output_tps_x: [1, 0.9, 0.8], ttft_x: [1, 2, 3]}\n"
    )
    doc = _chain(None)
    doc["models"]["m"] = {"price": {"input_mtok": 3, "output_mtok": 15}, "profile": str(prof)}
    assert run(doc).calls["tps"].tolist() == pytest.approx(HAND_TPS, rel=1e-14)


BAD = [
    ({"tokens": [0, 600000, 200000], "output_tps_x": [1, 0.9, 0.8]}, "tokens", "increase strictly"),
    ({"tokens": [0, 200000, 600000], "output_tps_x": [1, 0.9]}, "output_tps_x", "one factor per context size"),
    ({"tokens": [0, 200000], "ttft_x": [1, 2, 3]}, "ttft_x", "one factor per context size"),
    ({"tokens": [0, 200000], "output_tps_x": [1, 0]}, "output_tps_x[1]", "at least 0.001"),
    ({"tokens": [0, float("nan")], "output_tps_x": [1, 0.9]}, "tokens[1]", "NaN"),
    ({"tokens": [0, 200000], "ttft_x": [1, float("nan")]}, "ttft_x[1]", "NaN"),
    ({"tokens": [-1, 200000], "output_tps_x": [1, 0.9]}, "tokens[0]", "at least 0"),
    ({"tokens": [0, 200000]}, "context_speed", "needs output_tps_x or ttft_x"),
    ({"tokens": [], "output_tps_x": []}, "tokens", "at least one context size"),
]


@pytest.mark.parametrize(("curve", "key", "words"), BAD, ids=[f"{b[1]}-{b[2]}" for b in BAD])
def test_bad_context_speed_exits_2_with_its_file_line_and_key(tmp_path, curve, key, words):
    doc = _chain(curve)
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False, default_flow_style=False))
    res = CliRunner().invoke(app, ["validate", str(p)])
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    lines = p.read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if text.strip().startswith("context_speed:"))
    where = f"models.m.context_speed.{key}" if key != "context_speed" else "models.m.context_speed:"
    first = res.output.replace("\n", " ")
    assert f"{p.name}:" in first and where in first and words in first
    got = int(first.split(f"{p.name}:", 1)[1].split(":", 1)[0])
    assert line <= got <= line + 12  # the line of the key, inside the context_speed block
