"""Exact timelines and bills for cases small enough to compute by hand (DESIGN.md §4)."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import model, run, scenario

ENGINES = ["des", "fastpath"]


@pytest.mark.parametrize("engine", ENGINES)
def test_thirty_call_chain_standard_and_fast(engine):
    # TTFT 1 s + 200 tokens at 100 tok/s = 3 s per call; 30 calls = 90 s.
    # Fast tier: 200 / 250 = 0.8 s decode -> 1.8 s per call = 54 s; 6x the price.
    doc = scenario(
        [{"repeat": {"times": 30, "steps": [{"call": {"input": 1000, "output": 200}}]}}],
        models={"m": model(speeds={"fast": {"output_tps_x": 2.5, "price_x": 6}})},
        variants={"standard": {}, "fast": {"speed": {"m": "fast"}}},
        value_of_time={"usd_per_hour": 100},
        runs=3,
    )
    res = run(doc, engine=engine)
    s = res.summary_dict()["variants"]
    std, fast = s["standard"], s["fast"]
    assert std["wall_time_s"]["mean"] == pytest.approx(90.0, abs=1e-9)
    assert fast["wall_time_s"]["mean"] == pytest.approx(54.0, abs=1e-9)
    # Per call: 1000 input x $3/M + 200 output x $15/M = $0.006; 30 calls = $0.18; fast = 6x = $1.08.
    assert std["cost_usd"]["mean"] == pytest.approx(0.18, rel=1e-12)
    assert fast["cost_usd"]["mean"] == pytest.approx(1.08, rel=1e-12)
    vs = fast["vs_baseline"]
    assert vs["delta_time_s"] == pytest.approx(-36.0)
    assert vs["delta_cost_usd"] == pytest.approx(0.90)
    # $0.90 for 36 s saved = 0.01 h -> $90 per hour saved; pays off at $100/h.
    assert vs["usd_per_hour_saved"] == pytest.approx(90.0)
    assert vs["pays_off"] is True
    assert std["calls"]["mean"] == 30
    assert std["tokens"] == {
        "input": 30000,
        "cache_read": 0,
        "cache_write": 0,
        "output": 6000,
        "reasoning": 0,
        "cache_write_1h": 0,
    }
    # Critical path: 30 s of TTFT, 60 s of decode.
    assert std["breakdown_s"]["ttft"] == pytest.approx(30.0)
    assert std["breakdown_s"]["decode"] == pytest.approx(60.0)


def _growth_doc(grows: bool, cache):
    return scenario(
        [
            {"call": {"input": 100, "output": 50}},
            {"tool": {"latency": 1, "output": 200}},
            {"call": {"input": 100, "output": 50}},
            {"call": {"input": 0, "output": 50, "reasoning": 30}},
        ],
        models={
            "m": model(price={"input_mtok": 3, "output_mtok": 15, "cache_read_mtok": 0.3, "cache_write_mtok": 3.75})
        },
        context={"system": 1000, "grows": grows, "cache": cache},
    )


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("grows", "cache", "inputs", "reads", "writes"),
    [
        # Context 1000 -> call1 sends 1100, context 1150 -> tool +200 = 1350 -> call2 sends 1450,
        # context 1500 -> call3 sends 1500 (its reasoning does not join the context).
        (True, True, [1100, 1450, 1500], [0, 1100, 1450], [1100, 350, 50]),
        (True, False, [1100, 1450, 1500], [0, 0, 0], [0, 0, 0]),
        # Without growth every call sends the system prompt + its own input; the system prompt is cached.
        (False, True, [1100, 1100, 1000], [0, 1000, 1000], [1100, 100, 0]),
    ],
)
def test_context_growth_and_cache(engine, grows, cache, inputs, reads, writes):
    res = run(_growth_doc(grows, cache), engine=engine)
    calls = res.calls
    assert calls["input_tokens"].tolist() == inputs
    assert calls["cache_read_tokens"].tolist() == reads
    assert calls["cache_write_tokens"].tolist() == writes
    rates = {"in": 3e-6, "out": 15e-6, "read": 0.3e-6, "write": 3.75e-6}
    for row, inp, rd, wr in zip(calls.itertuples(), inputs, reads, writes, strict=True):
        uncached = inp - rd - wr
        expect = uncached * rates["in"] + rd * rates["read"] + wr * rates["write"]
        expect += (row.output_tokens + row.reasoning_tokens) * rates["out"]
        assert row.cost_usd == pytest.approx(expect, rel=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_prefill_and_reasoning_timing(engine):
    # TTFT = 0.5 + uncached 5000 / 10000 = 1.0 s; decode = (100 output + 300 reasoning) / 200 = 2.0 s.
    doc = scenario(
        [{"call": {"input": 5000, "output": 100, "reasoning": 300}}],
        models={"m": model(ttft=0.5, tps=200, prefill_tps=10000)},
    )
    res = run(doc, engine=engine)
    c = res.calls.iloc[0]
    assert c.ttft_s == pytest.approx(1.0)
    assert c.decode_s == pytest.approx(2.0)
    assert res.runs["wall_time_s"].iloc[0] == pytest.approx(3.0)
    # Reasoning is billed as output: (100 + 300) x $15/M + 5000 x $3/M.
    assert c.cost_usd == pytest.approx(400 * 15e-6 + 5000 * 3e-6)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("ttl", "read_after_wait"), [("5m", 0), ("1h", 1100)])
def test_cache_ttl_expires_across_a_long_wait(engine, ttl, read_after_wait):
    # call (1000 system + 100 input) -> a 10-minute tool run -> call: a 5-minute entry is gone, a 1-hour one is not.
    doc = scenario(
        [{"call": {"input": 100, "output": 50}}, {"tool": {"latency": 600}}, {"call": {"input": 100, "output": 50}}],
        models={
            "m": model(
                price={
                    "input_mtok": 3,
                    "output_mtok": 15,
                    "cache_read_mtok": 0.3,
                    "cache_write_mtok": 3.75,
                    "cache_write_1h_mtok": 6,
                }
            )
        },
        context={"system": 1000, "grows": True, "cache": {"ttl": ttl}},
    )
    res = run(doc, engine=engine)
    calls = res.calls
    assert calls["cache_read_tokens"].tolist() == [0, read_after_wait]
    assert calls["cache_write_tokens"].tolist() == [1100, 1250 - read_after_wait]
    if ttl == "1h":
        # 1-hour writes are billed at cache_write_1h_mtok.
        assert calls["cache_write_1h_tokens"].tolist() == [1100, 150]
        second = calls.iloc[1]
        assert second.cost_usd == pytest.approx(1100 * 0.3e-6 + 150 * 6e-6 + 50 * 15e-6)


@pytest.mark.parametrize("engine", ENGINES)
def test_parallel_join_all_any_k(engine):
    def waits(*lat):
        return [{"wait": {"latency": x}} for x in lat]

    for join, expect in (("all", 3.0), ("any", 1.0), ({"k": 2}, 2.0)):
        doc = scenario([{"parallel": {"join": join, "branches": waits(3, 1, 2)}}, {"wait": {"latency": 10}}])
        res = run(doc, engine=engine)
        assert res.runs["wall_time_s"].iloc[0] == pytest.approx(expect + 10)


@pytest.mark.parametrize("engine", ENGINES)
def test_race_cancels_the_loser_and_bills_what_it_generated(engine):
    # Branch A: 1 s TTFT + 100 tokens at 100 tok/s = ends at 2 s and wins.
    # Branch B: 1 s TTFT, 50 reasoning + 300 output tokens; cut at 2 s after 100 tokens: 50 reasoning + 50 output.
    # Branch C: a 3 s tool, cut at 2 s; the call after it never happens.
    doc = scenario(
        [
            {
                "parallel": {
                    "join": "any",
                    "branches": [
                        {"call": {"name": "a", "input": 10, "output": 100}},
                        {"call": {"name": "b", "input": 10, "output": 300, "reasoning": 50}},
                        [
                            {"tool": {"name": "slow", "latency": 3, "output": 500}},
                            {"call": {"name": "c", "output": 10}},
                        ],
                    ],
                }
            },
        ]
    )
    res = run(doc, engine=engine)
    assert res.runs["wall_time_s"].iloc[0] == pytest.approx(2.0)
    calls = res.calls.set_index("step")
    assert set(calls.index) == {"a", "b"}
    assert calls.loc["a", "status"] == "ok"
    assert calls.loc["b", "status"] == "cancelled"
    assert calls.loc["b", "t_end"] == pytest.approx(2.0)
    assert calls.loc["b", "reasoning_tokens"] == 50
    assert calls.loc["b", "output_tokens"] == 50
    assert calls.loc["b", "cost_usd"] == pytest.approx(10 * 3e-6 + 100 * 15e-6)
    spans = res.spans.set_index("step")
    assert spans.loc["slow", "status"] == "cancelled"
    assert spans.loc["slow", "t_end"] == pytest.approx(2.0)
    assert res.runs["calls"].iloc[0] == 2


@pytest.mark.parametrize("engine", ENGINES)
def test_parallel_branches_fork_and_join_context_in_branch_order(engine):
    # Both branches see the 1000-token context; at the join their additions (150 and 60) are appended.
    doc = scenario(
        [
            {"parallel": [{"call": {"input": 100, "output": 50}}, {"call": {"input": 40, "output": 20}}]},
            {"call": {"output": 5}},
        ],
        context={"system": 1000, "grows": True},
    )
    res = run(doc, engine=engine)
    assert res.calls["input_tokens"].tolist() == [1100, 1040, 1000 + 150 + 60]


@pytest.mark.parametrize("engine", ENGINES)
def test_fanout_repeat_subagent(engine):
    doc = scenario(
        [
            {"fanout": {"n": 4, "steps": [{"call": {"input": 0, "output": 100}}]}},  # 4 calls of 2 s, in parallel
            {"repeat": {"times": 3, "steps": [{"wait": {"latency": 5}}]}},  # 15 s
            {"subagent": {"workflow": "helper", "output": 70}},  # one 2 s call, own context of 500
            {"call": {"output": 100}},
        ],
        context={"system": 1000, "grows": True},
        workflows={"helper": {"context": {"system": 500}, "steps": [{"call": {"output": 100}}]}},
    )
    res = run(doc, engine=engine)
    assert res.runs["wall_time_s"].iloc[0] == pytest.approx(2 + 15 + 2 + 2)
    calls = res.calls
    assert len(calls) == 6
    assert calls["input_tokens"].tolist()[:4] == [1000] * 4
    assert calls["input_tokens"].tolist()[4] == 500  # the subagent's own context
    # After the fan-out (4 x 100 output) and the subagent's answer (70 tokens): 1000 + 400 + 70.
    assert calls["input_tokens"].tolist()[5] == 1470


@pytest.mark.parametrize("engine", ENGINES)
def test_price_only_variant_has_exactly_the_same_times(engine):
    doc = scenario(
        [
            {
                "repeat": {
                    "times": {"uniform": {"low": 3, "high": 9}},
                    "steps": [
                        {"call": {"output": {"lognormal": {"median": 300, "p90": 900}}}},
                        {"tool": {"latency": {"exponential": {"mean": 2}}}},
                    ],
                }
            }
        ],
        models={
            "m": model(
                ttft={"lognormal": {"median": 1, "p90": 3}},
                tps={"gamma": {"mean": 80, "sd": 20}},
                speeds={"pricey": {"price_x": 3}},
            )
        },
        variants={"base": {}, "pricey": {"speed": {"m": "pricey"}}},
        runs=500,
    )
    res = run(doc, engine=engine)
    a = res.runs[res.runs.variant == "base"]
    b = res.runs[res.runs.variant == "pricey"]
    assert np.array_equal(a["wall_time_s"].to_numpy(), b["wall_time_s"].to_numpy())
    assert np.allclose(b["cost_usd"].to_numpy(), 3 * a["cost_usd"].to_numpy(), rtol=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_breakdown_sums_to_wall_time(engine):
    res = run(
        scenario(
            [
                {"call": {"output": 100}},
                {
                    "parallel": [
                        {"wait": {"latency": {"exponential": {"mean": 3}}}},
                        [{"call": {"output": 50}}, {"tool": {"latency": {"exponential": {"mean": 2}}}}],
                    ]
                },
                {"wait": {"latency": 1}},
            ],
            runs=200,
        ),
        engine=engine,
    )
    r = res.runs
    total = r[["queue_s", "ttft_s", "decode_s", "tool_s", "wait_s"]].sum(axis=1)
    assert np.allclose(total, r["wall_time_s"], rtol=1e-12, atol=1e-9)


def test_same_seed_same_bytes_and_workers_do_not_matter(tmp_path):
    from agentsim.sim.simulation import simulate

    path = tmp_path / "s.yaml"
    import yaml

    doc = scenario(
        [{"repeat": {"times": {"uniform": {"low": 2, "high": 6}}, "steps": [{"call": {"output": 80}}]}}],
        models={"m": model(ttft={"exponential": {"mean": 1}})},
        runs=9000,  # three blocks
    )
    path.write_text(yaml.safe_dump(doc))
    a = simulate(path).to_json()
    b = simulate(path).to_json()
    c = simulate(path, workers=2).to_json()
    assert a == b == c
    d = simulate(path, seed=2).to_json()
    assert d != a


@pytest.mark.parametrize("engine", ENGINES)
def test_speed_tier_without_a_price_costs_the_model_price(engine):
    doc = scenario(
        [{"call": {"input": 1000, "output": 200}}],
        models={"m": model(speeds={"double": {"output_tps_x": 2}})},
        variants={"base": {}, "double": {"speed": {"m": "double"}}},
    )
    r = run(doc, engine=engine).runs.set_index("variant")
    assert r.loc["base", "wall_time_s"] == pytest.approx(3.0) and r.loc["double", "wall_time_s"] == pytest.approx(2.0)
    assert r.loc["base", "cost_usd"] == r.loc["double", "cost_usd"] == pytest.approx(1000 * 3e-6 + 200 * 15e-6)


@pytest.mark.parametrize(("vot", "pays"), [(89.0, False), (90.0, True), (91.0, True)])
def test_pays_off_when_value_of_time_is_at_least_usd_per_hour_saved(vot, pays):
    # Same chain as above: $0.90 more for 36 s saved = $90 per hour saved (DESIGN.md §4: pays off when vot >= that).
    doc = scenario(
        [{"repeat": {"times": 30, "steps": [{"call": {"input": 1000, "output": 200}}]}}],
        models={"m": model(speeds={"fast": {"output_tps_x": 2.5, "price_x": 6}})},
        variants={"standard": {}, "fast": {"speed": {"m": "fast"}}},
        value_of_time={"usd_per_hour": vot},
    )
    v = run(doc, engine="fastpath").summary_dict()["variants"]
    assert v["fast"]["vs_baseline"]["pays_off"] is pays
    # total cost = API cost + value of time x wall time
    assert v["fast"]["total_cost_usd"]["mean"] == pytest.approx(1.08 + vot * 54 / 3600)
    assert v["standard"]["total_cost_usd"]["mean"] == pytest.approx(0.18 + vot * 90 / 3600)
