"""Prompt-cache TTLs, hand-computed: a 10-minute tool call expires a 5-minute entry and not a 1-hour one.

The agent: a 1000-token system prompt (growing context, caching on), then
``call(input 100, output 50)`` -> a 600 s tool -> ``call(input 100, output 50)``.
Each call takes 1 s TTFT + 50 / 100 tok/s = 1.5 s, so the first call starts (and
writes its cache entry) at t = 0 and the second starts at t = 601.5 s:

* call 1 sends 1000 + 100 = 1100 tokens and writes all of them;
* the context is then 1100 + 50 = 1150 tokens, and call 2 sends 1150 + 100 = 1250;
* with a 1-hour entry (601.5 s < 3600 s) call 2 reads 1100 and writes 150 (1-hour writes);
* with a 5-minute entry (601.5 s > 300 s) it is gone: call 2 reads 0 and writes 1250.

Prices (USD per Mtok): input 3, output 15, cache read 0.3, 5-minute write 3.75, 1-hour write 6.
"""

from __future__ import annotations

import pytest

from conftest import model, run, scenario

PRICE = {"input_mtok": 3, "output_mtok": 15, "cache_read_mtok": 0.3, "cache_write_mtok": 3.75, "cache_write_1h_mtok": 6}
STEPS = [{"call": {"input": 100, "output": 50}}, {"tool": {"latency": 600}}, {"call": {"input": 100, "output": 50}}]

# ttl in effect -> (reads, writes, 1h writes, call costs in USD)
EXPECT = {
    "1h": ([0, 1100], [1100, 150], [1100, 150], [(1100 * 6 + 50 * 15) / 1e6, (1100 * 0.3 + 150 * 6 + 50 * 15) / 1e6]),
    "5m": ([0, 0], [1100, 1250], [0, 0], [(1100 * 3.75 + 50 * 15) / 1e6, (1250 * 3.75 + 50 * 15) / 1e6]),
}


def _check(res, ttl):
    reads, writes, w1h, costs = EXPECT[ttl]
    c = res.calls
    assert c["input_tokens"].tolist() == [1100, 1250]
    assert c["cache_read_tokens"].tolist() == reads
    assert c["cache_write_tokens"].tolist() == writes
    assert c["cache_write_1h_tokens"].tolist() == w1h
    assert c["cost_usd"].tolist() == pytest.approx(costs, rel=1e-12)
    assert res.runs["wall_time_s"].iloc[0] == pytest.approx(603.0)
    assert res.runs["cost_usd"].iloc[0] == pytest.approx(sum(costs), rel=1e-12)


@pytest.mark.parametrize("engine", ["des", "fastpath"])
@pytest.mark.parametrize(
    ("context_cache", "model_cache", "in_effect"),
    [
        ({"ttl": "5m"}, None, "5m"),
        ({"ttl": "1h"}, None, "1h"),
        (True, None, "5m"),  # the default TTL is 5 minutes
        ({"ttl": "5m"}, {"ttl": "1h"}, "1h"),  # a model's own TTL overrides the context's
        ({"ttl": "1h"}, {"ttl": "5m"}, "5m"),
    ],
)
def test_ten_minute_tool_expires_5m_entries_not_1h_ones(engine, context_cache, model_cache, in_effect):
    m = model(price=PRICE) if model_cache is None else model(price=PRICE, cache=model_cache)
    doc = scenario(STEPS, models={"m": m}, context={"system": 1000, "grows": True, "cache": context_cache})
    _check(run(doc, engine=engine), in_effect)


@pytest.mark.parametrize("engine", ["des", "fastpath"])
def test_per_model_ttls_side_by_side_in_one_run(engine):
    # With scope: model, two models in one agent keep separate cache entries, each with its own TTL.
    steps = [
        {"call": {"name": "a1", "model": "short", "input": 100, "output": 50}},
        {"call": {"name": "b1", "model": "long", "input": 0, "output": 50}},
        {"tool": {"latency": 600}},
        {"call": {"name": "a2", "model": "short", "input": 0, "output": 50}},
        {"call": {"name": "b2", "model": "long", "input": 0, "output": 50}},
    ]
    doc = scenario(
        steps,
        models={"short": model(price=PRICE), "long": model(price=PRICE, cache={"ttl": "1h"})},
        context={"system": 1000, "grows": True, "cache": {"scope": "model"}},
    )
    c = run(doc, engine=engine).calls.set_index("step")
    # a1 sends 1100 (t=0); b1 sends 1150 (t=1.5; new entry for its model); the context is then 1200.
    # a2 (t=603) finds its 5-minute entry expired: writes all 1200. b2 (t=604.5) reads its 1150 and writes 50 for 1 h.
    assert c.loc["a2", "cache_read_tokens"] == 0 and c.loc["a2", "cache_write_tokens"] == 1250 - 50
    assert c.loc["b2", "cache_read_tokens"] == 1150 and c.loc["b2", "cache_write_1h_tokens"] == 1250 - 1150
    assert c.loc["b2", "cost_usd"] == pytest.approx((1150 * 0.3 + 100 * 6 + 50 * 15) / 1e6, rel=1e-12)


@pytest.mark.parametrize("engine", ["des", "fastpath"])
def test_context_scope_reads_what_the_previous_call_sent_whatever_its_model(engine):
    # DESIGN.md §4 read literally (scope: context, the default before caches followed providers): a call reads
    # the part of its input that the previous call of the same context already sent. a1 sends 1100; b1
    # (another model) reads those 1100 and writes 50; a2 reads the 1150
    # b1 sent and writes 50; b2 reads a2's 1200.
    steps = [
        {"call": {"name": "a1", "model": "x", "input": 100, "output": 50}},
        {"call": {"name": "b1", "model": "y", "input": 0, "output": 50}},
        {"call": {"name": "a2", "model": "x", "input": 0, "output": 50}},
        {"call": {"name": "b2", "model": "y", "input": 0, "output": 50}},
    ]
    doc = scenario(
        steps,
        models={"x": model(price=PRICE), "y": model(price=PRICE)},
        context={"system": 1000, "grows": True, "cache": {"scope": "context"}},
    )
    c = run(doc, engine=engine).calls.set_index("step")
    assert c["input_tokens"].tolist() == [1100, 1150, 1200, 1250]
    assert c["cache_read_tokens"].tolist() == [0, 1100, 1150, 1200]
    assert c["cache_write_tokens"].tolist() == [1100, 50, 50, 50]


@pytest.mark.parametrize("engine", ["des", "fastpath"])
def test_one_hour_writes_at_the_catalog_price(engine):
    # Opus 4.8 in the catalog (as of 2026-11-01): input 5, output 25, cache read 0.5, 1-hour write 10.
    doc = scenario(
        STEPS,
        models={"m": model(price={"catalog": "anthropic/claude-opus-4-8"}, cache={"ttl": "1h"})},
        context={"system": 1000, "grows": True, "cache": True},
        prices_as_of="2026-11-01",
    )
    c = run(doc, engine=engine).calls
    assert c["cache_write_1h_tokens"].tolist() == [1100, 150]
    assert c["cost_usd"].tolist() == pytest.approx(
        [(1100 * 10 + 50 * 25) / 1e6, (1100 * 0.5 + 150 * 10 + 50 * 25) / 1e6], rel=1e-12
    )


@pytest.mark.parametrize("engine", ["des", "fastpath"])
@pytest.mark.parametrize("cache", [True, {"scope": "model"}, {"scope": "context"}])
def test_provider_default_one_cache_per_model_and_tier(engine, cache):
    # issue 17: by default (cache: true) a fast call does not read what standard calls wrote. a1 (standard)
    # sends 1100 and writes them; a2 on the fast tier sends 1150 and, with the provider default, finds no
    # entry of its own tier: a cold write of all 1150 at 6x the price; a3 (standard) sends 1200 and reads the
    # 1100 that a1 left (idle 1.25 s), writing 100. With scope: context, a2 reads a1's 1100 (writes 50) and
    # a3 reads a2's 1150 (writes 50).
    steps = [
        {"call": {"name": "a1", "input": 100, "output": 50}},
        {"call": {"name": "a2", "output": 50, "speed": "fast"}},
        {"call": {"name": "a3", "output": 50}},
    ]
    doc = scenario(
        steps,
        models={"x": model(price=PRICE, speeds={"fast": {"output_tps_x": 2, "price_x": 6}})},
        context={"system": 1000, "grows": True, "cache": cache},
    )
    c = run(doc, engine=engine).calls.set_index("step")
    assert c["input_tokens"].tolist() == [1100, 1150, 1200]
    if cache == {"scope": "context"}:
        reads, writes = [0, 1100, 1150], [1100, 50, 50]
    else:
        reads, writes = [0, 0, 1100], [1100, 1150, 100]
    assert c["cache_read_tokens"].tolist() == reads
    assert c["cache_write_tokens"].tolist() == writes
    x = [1, 6, 1]  # a2's fast tier costs 6x every rate
    costs = [(r * 0.3 + w * 3.75 + 50 * 15) * k / 1e6 for r, w, k in zip(reads, writes, x, strict=True)]
    assert c["cost_usd"].tolist() == pytest.approx(costs, rel=1e-12)
