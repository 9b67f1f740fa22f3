"""Hand-computed checks of rules a plausible one-line bug would break while every other test still passed.

Each test names the rule it pins and the bug it is there to catch (found by mutation testing,
docs/validation.md "Mutation testing"). The expected values are worked out in the comments, never copied
from the program's output.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import simpy

from agentsim.analysis.tradeoffs import break_even
from agentsim.plan.limits import Bucket, Slots
from agentsim.sim.results import compare, describe
from conftest import model, run, scenario

ENGINES = ["des", "fastpath"]

# Student t quantiles from printed tables (not from SciPy), to 10 digits: t_{0.975, df}
T975 = {4: 2.776445105, 9: 2.262157163}


# --------------------------------------------------------------------------- percentiles and CI


def test_describe_percentiles_interpolate_and_ci_uses_the_sample_sd():
    # x = 1, 2, 3, 4, 10 (n = 5). Linear interpolation at rank (n - 1) p:
    #   p50: rank 2 -> 3;  p90: rank 3.6 -> 4 + 0.6 x 6 = 7.6;  p95: 3.8 -> 8.8;  p99: 3.96 -> 9.76
    # (nearest rank would give 3, 10, 10, 10). Mean 4; squared deviations 9 + 4 + 1 + 0 + 36 = 50;
    # sample sd (n - 1) sqrt(50 / 4) = 3.53553; half-width t_{0.975,4} x sd / sqrt(5) = 4.38995
    # (with the population sd, sqrt(50 / 5), it would be 3.92649).
    d = describe(np.array([4.0, 1.0, 10.0, 3.0, 2.0]))
    assert d["mean"] == pytest.approx(4.0, rel=1e-15)
    assert d["p50"] == pytest.approx(3.0, rel=1e-15)
    assert d["p90"] == pytest.approx(7.6, rel=1e-12)
    assert d["p95"] == pytest.approx(8.8, rel=1e-12)
    assert d["p99"] == pytest.approx(9.76, rel=1e-12)
    half = T975[4] * math.sqrt(50 / 4) / math.sqrt(5)
    assert half == pytest.approx(4.38995, abs=1e-5)
    assert d["ci95"][0] == pytest.approx(4 - half, rel=1e-9)
    assert d["ci95"][1] == pytest.approx(4 + half, rel=1e-9)


def test_describe_small_and_empty_samples():
    one = describe(np.array([2.5]))
    assert one["ci95"] == [2.5, 2.5] and one["p90"] == 2.5
    none = describe(np.array([]))
    assert none["mean"] is None and none["ci95"] == [None, None] and none["p99"] is None
    # two values: p90 = 1 + 0.9 x (3 - 1) = 2.8; sd = sqrt(2); half = t_{0.975,1} sd / sqrt(2) = 12.7062
    two = describe(np.array([3.0, 1.0]))
    assert two["p90"] == pytest.approx(2.8, rel=1e-12)
    assert two["ci95"][1] - 2.0 == pytest.approx(12.706204736174696, rel=1e-9)


def _hand_percentile(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    rank = (len(xs) - 1) * p / 100
    lo = math.floor(rank)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (rank - lo) * (xs[hi] - xs[lo])


def test_summary_statistics_of_wall_time_match_a_hand_computation():
    # 10 runs of one tool with latency drawn from {1, 2, 4, 8}: summary.json's figures recomputed from the
    # runs table with the textbook formulas (sample sd, t quantile from the table, linear interpolation).
    doc = scenario([{"tool": {"latency": {"choice": {"values": [1, 2, 4, 8]}}}}], runs=10)
    res = run(doc)
    xs = res.runs["wall_time_s"].tolist()
    assert len(set(xs)) >= 3  # the sample is not degenerate (the seed is fixed)
    s = res.summary_dict()["variants"]["baseline"]["wall_time_s"]
    mean = sum(xs) / 10
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / 9)
    half = T975[9] * sd / math.sqrt(10)
    assert s["mean"] == pytest.approx(mean, rel=1e-12)
    assert s["ci95"] == pytest.approx([mean - half, mean + half], rel=1e-9)
    for p in (50, 90, 95, 99):
        assert s[f"p{p}"] == pytest.approx(_hand_percentile(xs, p), rel=1e-12), p


# --------------------------------------------------------------------------- critical branch on ties


def _call(name: str, out: int) -> dict:
    return {"call": {"name": name, "input": 0, "output": out}}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("tool_last", [True, False])
def test_tie_in_join_all_takes_the_last_branch_as_critical(engine, tool_last):
    # A call of TTFT 1 s + 200 tokens at 100 tok/s (1 s TTFT + 2 s decode) and a 3 s tool end together
    # at t = 3. The critical path follows the last of the tied branches (in branch order).
    call, tool = [_call("c", 200)], [{"tool": {"latency": 3}}]
    branches = [call, tool] if tool_last else [tool, call]
    res = run(scenario([{"parallel": {"branches": branches}}], runs=2), engine=engine)
    for _, r in res.runs.iterrows():
        assert r.wall_time_s == 3.0
        parts = (r.ttft_s, r.decode_s, r.tool_s)
        assert parts == ((0.0, 0.0, 3.0) if tool_last else (1.0, 2.0, 0.0))


@pytest.mark.parametrize("engine", ENGINES)
def test_tie_in_fanout_takes_the_last_copy_as_critical(engine):
    # Each of 3 copies chooses a 3 s call (1 s TTFT + 2 s decode) or a 3 s tool: all end at t = 3, and
    # the breakdown is the last copy's (instance 2): whatever that copy chose, read from the records.
    pick = {
        "choose": {"options": [{"p": 0.5, "steps": [_call("c", 200)]}, {"p": 0.5, "steps": [{"tool": {"latency": 3}}]}]}
    }
    res = run(scenario([{"fanout": {"n": 3, "steps": [pick]}}], runs=40), engine=engine)
    last_called = set(res.calls.loc[res.calls["instance"] == 2, "run"])
    mixed = 0
    for _, r in res.runs.iterrows():
        copies_calling = (res.calls["run"] == r.run).sum()
        mixed += 0 < copies_calling < 3
        expected = (1.0, 2.0, 0.0) if r.run in last_called else (0.0, 0.0, 3.0)
        assert (r.ttft_s, r.decode_s, r.tool_s) == expected, r.run
    assert mixed >= 10  # enough runs where the copies differ for the rule to matter


# --------------------------------------------------------------------------- context and cache at a join


@pytest.mark.parametrize("engine", ENGINES)
def test_cache_entries_after_a_join(engine):
    # System prompt 1000, grows, cached. Branch a sends 1000 + 100 = 1100 (cache entry 1100) and adds
    # 150; branch b sends 1000 + 400 = 1400 (entry 1400) and adds 500. After the join the context is
    # 1000 + 150 + 500 = 1650 (a's tokens before b's). a's entry is still a prefix of it (1100); b's is
    # not (a's tokens now sit between the system prompt and b's), only its first 1000 tokens are.
    # The call after the join reads 1100 and writes 550 (not 1400 and 250).
    doc = scenario(
        [
            {
                "parallel": {
                    "branches": [
                        [{"call": {"name": "a", "input": 100, "output": 50}}],
                        [{"call": {"name": "b", "input": 400, "output": 100}}],
                    ]
                }
            },
            {"call": {"name": "after", "input": 0, "output": 10}},
        ],
        models={"m": model(price={"input_mtok": 3, "output_mtok": 15, "cache_read_mtok": 0.3})},
        context={"system": 1000, "grows": True, "cache": True},
    )
    res = run(doc, engine=engine)
    c = res.calls.set_index("step")
    assert (c.loc["a", "input_tokens"], c.loc["b", "input_tokens"]) == (1100, 1400)
    after = c.loc["after"]
    assert after.input_tokens == 1650
    assert after.cache_read_tokens == 1100 and after.cache_write_tokens == 550


# --------------------------------------------------------------------------- prices


@pytest.mark.parametrize("engine", ENGINES)
def test_price_x_scales_long_context_tier_prices(engine):
    # Input $3/M up to 200k tokens, $6/M above; output $15/M, $22.5/M above. A 300k-token call with
    # 1000 output tokens: 300000 x 6e-6 + 1000 x 22.5e-6 = $1.8225 standard, x 6 = $10.935 fast.
    # A 100k-token call stays on the base prices: 0.3 + 0.015 = $0.315, fast $1.89.
    tiered = {
        "input_mtok": {"base": 3, "tiers": [{"start": 200_000, "price": 6}]},
        "output_mtok": {"base": 15, "tiers": [{"start": 200_000, "price": 22.5}]},
    }
    doc = scenario(
        [
            {"call": {"name": "long", "input": 300_000, "output": 1000}},
            {"call": {"name": "short", "input": 100_000, "output": 1000}},
        ],
        models={"m": model(price=tiered, speeds={"fast": {"output_tps_x": 2, "price_x": 6}})},
        variants={"standard": {}, "fast": {"speed": {"m": "fast"}}},
    )
    res = run(doc, engine=engine)
    cost = res.calls.set_index(["variant", "step"])["cost_usd"]
    assert cost["standard", "long"] == pytest.approx(1.8225, rel=1e-12)
    assert cost["fast", "long"] == pytest.approx(10.935, rel=1e-12)
    assert cost["standard", "short"] == pytest.approx(0.315, rel=1e-12)
    assert cost["fast", "short"] == pytest.approx(1.89, rel=1e-12)


# --------------------------------------------------------------------------- shared limits


def test_token_bucket_never_holds_more_than_its_capacity():
    # rpm 10: capacity 10, refilled at 1 every 6 s. After 10 idle minutes it holds 10 (not 110): 12
    # requests at t = 600 -> 10 at once, the 11th at 606, the 12th at 612.
    env = simpy.Environment()
    bucket = Bucket(env, 10)
    starts = []

    def client():
        yield env.timeout(600)
        waits = [bucket.take(1) for _ in range(12)]
        for w in waits:
            if w is not None:
                yield w
            starts.append(env.now)

    env.process(client())
    env.run()
    assert starts == [600.0] * 10 + [606.0, 612.0]
    assert bucket.level == pytest.approx(0.0, abs=1e-9)


def test_reject_mode_bucket_holding_the_tokens_to_the_last_bit_admits():
    # rpm 7 refills 7/60 per second: emptied at t = 1000, it holds exactly 1 token at t = 1000 + 60/7.
    # The float refill gives 0.9999999999999981; a retry-after of (1 - level) / rate = 1.6e-14 s is below
    # one tick of the clock at t = 1008 (1.1e-13 s), so SimPy cannot advance by it: the client would be
    # refused again at the same instant, forever with a closed workload and no think time (found while
    # pinning the property tests' examples). The bucket counts the tokens to a 1e-9 share of its capacity,
    # as the queue path already did.
    env = simpy.Environment()
    bucket = Bucket(env, 7)
    env.run(until=1000.0)
    assert bucket.check(7) is None  # takes the whole bucket
    env.run(until=1000.0 + 60 / 7)
    assert bucket.shortfall(1) is None
    assert bucket.check(1) is None
    assert bucket.level == pytest.approx(0.0, abs=1e-12)
    # still short by more than the rounding: told to wait, and the wait moves the clock
    wait = bucket.shortfall(1)
    assert wait == pytest.approx(60 / 7, rel=1e-9) and env.now + wait > env.now


def test_bucket_after_idling_in_a_scenario():
    # The same through a scenario: a 600 s wait, then a fan-out of 12 calls of 2 s (TTFT 1 + 100 tokens
    # at 100 tok/s) through an rpm-10 account: starts 600 (x10), 606, 612; the run ends at 614.
    doc = scenario(
        [{"wait": {"latency": 600}}, {"fanout": {"n": 12, "steps": [_call("x", 100)]}}],
        limits={"acct": {"models": ["m"], "rpm": 10}},
    )
    res = run(doc)
    starts = res.calls.sort_values("instance")["t_start"].tolist()
    assert starts == [600.0] * 10 + [606.0, 612.0]
    assert res.runs.iloc[0].wall_time_s == 614.0 and res.runs.iloc[0].queue_s == 12.0


def test_concurrency_slots_are_served_first_in_first_out():
    # Concurrency 1; a (2 s) submitted at 0, b (3 s) at 0.1, c (4 s) at 0.2. FIFO: a 0-2, b 2-5, c 5-9
    # (last in, first out would run c at 2-6 and b at 6-9).
    doc = scenario(
        [
            {
                "parallel": {
                    "branches": [
                        [_call("a", 100)],
                        [{"wait": {"latency": 0.1}}, _call("b", 200)],
                        [{"wait": {"latency": 0.2}}, _call("c", 300)],
                    ]
                }
            }
        ],
        limits={"acct": {"models": ["m"], "concurrency": 1}},
    )
    c = run(doc).calls.set_index("step")
    assert c.loc[["a", "b", "c"], "t_submit"].tolist() == [0.0, 0.1, 0.2]
    assert c.loc[["a", "b", "c"], "t_start"].tolist() == [0.0, 2.0, 5.0]
    assert c.loc[["a", "b", "c"], "t_end"].tolist() == [2.0, 5.0, 9.0]


def test_slots_unit_fifo():
    env = simpy.Environment()
    slots = Slots(env, 1)
    order = []

    def user(name, arrive, hold):
        yield env.timeout(arrive)
        ev = slots.request()
        if ev is not None:
            yield ev
        order.append((name, env.now))
        yield env.timeout(hold)
        slots.release()

    for name, arrive in (("a", 0), ("b", 1), ("c", 2), ("d", 3)):
        env.process(user(name, arrive, 10))
    env.run()
    assert order == [("a", 0), ("b", 10), ("c", 20), ("d", 30)]


REASONING_PRICE = {"input_mtok": 3, "output_mtok": 15, "output_reasoning_mtok": 10}


def test_cancelled_call_under_limits_bills_reasoning_first():
    # A race: a call (TTFT 1 s, 300 reasoning + 100 visible tokens at 100 tok/s) against a 3 s tool, through
    # an account (so the limited path runs). At t = 3 the call has generated (3 - 1) x 100 = 200 tokens,
    # all of them reasoning (reasoning comes first): billed 1000 x 3e-6 + 200 x 10e-6 = $0.005
    # (visible first would bill 100 visible + 100 reasoning: $0.0055).
    doc = scenario(
        [
            {
                "parallel": {
                    "join": "any",
                    "branches": [
                        [{"call": {"name": "think", "input": 1000, "output": 100, "reasoning": 300}}],
                        [{"tool": {"latency": 3}}],
                    ],
                }
            }
        ],
        models={"m": model(price=REASONING_PRICE)},
        limits={"acct": {"models": ["m"], "concurrency": 5}},
    )
    res = run(doc)
    c = res.calls.iloc[0]
    assert c.status == "cancelled" and c.t_end == 3.0
    assert (c.output_tokens, c.reasoning_tokens) == (0, 200)
    assert c.cost_usd == pytest.approx(0.005, rel=1e-12)
    assert res.runs.iloc[0].wall_time_s == 3.0


def test_timed_out_attempt_bills_reasoning_first():
    # TTFT 2 s, 200 reasoning + 1000 visible tokens at 100 tok/s, client timeout 5 s: 300 tokens generated,
    # 200 reasoning (x $4/M) then 100 visible (x $10/M) = $0.0018. Then the fallback: 1 s TTFT +
    # 1200 tokens at 1000 tok/s = 2.2 s, billed 1200 x $1/M (reasoning at the output price) = $0.0012.
    res = run(
        scenario(
            [{"call": {"model": "slow", "output": 1000, "reasoning": 200}}],
            models={
                "slow": {
                    "price": {"input_mtok": 0, "output_mtok": 10, "output_reasoning_mtok": 4},
                    "ttft": 2,
                    "output_tps": 100,
                    "timeout": 5,
                    "retry": {"max_attempts": 2, "jitter": "none", "backoff_base": 1},
                    "fallback": {"model": "quick", "after": 1},
                },
                "quick": {"price": {"input_mtok": 0, "output_mtok": 1}, "ttft": 1, "output_tps": 1000},
            },
        )
    )
    r = res.runs.iloc[0]
    # attempt 1: 0-5 s, back-off 1 s, attempt 2 on quick: 6 + 2.2 = 8.2 s
    assert r.wall_time_s == pytest.approx(8.2, rel=1e-12)
    assert r.cost_usd == pytest.approx(200 * 4e-6 + 100 * 10e-6 + 1200 * 1e-6, rel=1e-12)


# --------------------------------------------------------------------------- compare and break-even


def _summary(t: float, c: float) -> dict:
    return {"wall_time_s": {"mean": t}, "cost_usd": {"mean": c}}


@pytest.mark.parametrize(
    ("t", "c", "vot", "pays"),
    [
        (100.0, 1.0, 50.0, False),  # same time, same cost: nothing to gain
        (120.0, 1.0, 50.0, False),  # same cost, slower: worse at any value of time
        (120.0, 1.0, 0.01, False),  # ... at any value of time above 0
        (
            120.0,
            1.0,
            0.0,
            False,
        ),  # at $0/h the totals tie, but a variant neither faster nor cheaper gains nothing (payoff rule)
        (80.0, 1.0, 0.0, True),  # same cost, faster: pays off even at $0/h (a tie counts)
        (100.0, 0.9, 50.0, True),  # same time, cheaper
        (100.0, 1.1, 1e6, False),  # same time, dearer
        # 36 s faster for $0.90 more: $90 per hour saved; pays off at $90/h (the tie), not at $89.99/h
        (64.0, 1.9, 90.0, True),
        (64.0, 1.9, 89.99, False),
        # 36 s slower for $0.90 less: pays off at or below $90/h
        (136.0, 0.1, 90.0, True),
        (136.0, 0.1, 90.01, False),
    ],
)
def test_compare_pays_off_at_the_boundaries(t, c, vot, pays):
    out = compare(_summary(100.0, 1.0), _summary(t, c), vot)
    assert out["pays_off"] is pays
    assert out["delta_time_s"] == pytest.approx(t - 100.0) and out["delta_cost_usd"] == pytest.approx(c - 1.0)
    if t < 100.0:
        assert out["usd_per_hour_saved"] == pytest.approx((c - 1.0) / ((100.0 - t) / 3600.0))
    else:
        assert out["usd_per_hour_saved"] is None
    assert compare(_summary(100.0, 1.0), _summary(t, c), None)["pays_off"] is None


def test_break_even_at_equal_cost_or_equal_time():
    table = pd.DataFrame(
        {
            "wall_mean_s": [100.0, 120.0, 80.0, 100.0, 100.0, 100.0],
            "cost_mean_usd": [1.0, 1.0, 1.0, 0.5, 2.0, 1.0],
        },
        index=pd.Index(["base", "same-cost-slower", "same-cost-faster", "cheaper", "dearer", "twin"]),
    )
    be = break_even(table, value_of_time=1.0)
    when = be["pays_off_when"].to_dict()
    assert when == {
        "base": "baseline",
        "same-cost-slower": "never",  # no value of time makes waiting longer for nothing worth it
        "same-cost-faster": "always",
        "cheaper": "always",
        "dearer": "never",
        "twin": "never",
    }
    assert be["break_even_usd_per_hour"].isna().all()  # no crossing for any of them
    assert be.loc["same-cost-faster", "usd_per_hour_saved"] == 0.0
    # at $1/h: the same cost and faster pays off, slower for nothing does not
    assert be.loc["same-cost-faster", "pays_off"] and not be.loc["same-cost-slower", "pays_off"]
    assert not be.loc["twin", "pays_off"] and be.loc["cheaper", "pays_off"]


@pytest.mark.parametrize("engine", ENGINES)
def test_cache_entries_after_a_fanout_join(engine):
    # Two copies fork the context (system 1000) and each sends 1000 + i_k (i_k drawn from {100, 400}),
    # adding i_k + 50. After the join the context is 1000 + (i_0 + 50) + (i_1 + 50): copy 0's entry
    # (1000 + i_0) is still a prefix of it; copy 1's is cut back to the system prompt (copy 0's tokens
    # now come first). So the call after the join reads exactly 1000 + i_0, whatever copy 1 sent.
    doc = scenario(
        [
            {
                "fanout": {
                    "n": 2,
                    "steps": [{"call": {"name": "x", "input": {"choice": {"values": [100, 400]}}, "output": 50}}],
                }
            },
            {"call": {"name": "after", "input": 0, "output": 10}},
        ],
        context={"system": 1000, "grows": True, "cache": True},
        runs=30,
    )
    res = run(doc, engine=engine)
    c = res.calls
    x = c[c["step"] == "x"].pivot(index="run", columns="instance", values="input_tokens")
    after = c[c["step"] == "after"].set_index("run")
    assert (after["input_tokens"] == x[0] + x[1] - 1000 + 100).all()
    assert (after["cache_read_tokens"] == x[0]).all()
    assert (x[1] > x[0]).sum() >= 3  # runs where keeping copy 1's entry whole would read more


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("gap", "read"), [(300.0, 1000), (300.5, 0)])
def test_cache_entry_lives_exactly_its_ttl(engine, gap, read):
    # Context of 1000 system tokens, no growth, 5-minute cache. The first call (TTFT 1 s + 100 tokens at
    # 100 tok/s) ends at t = 2 and leaves an entry of the system prompt, last used at 2. After a wait of
    # 300 s the next call starts at 302: idle exactly its TTL, still there (reads 1000); 300.5 s: gone.
    doc = scenario(
        [_call("first", 100), {"wait": {"latency": gap}}, _call("second", 100)],
        context={"system": 1000, "grows": False, "cache": True},
    )
    c = run(doc, engine=engine).calls.set_index("step")
    assert c.loc["second", "t_start"] == 2.0 + gap
    assert c.loc["second", "cache_read_tokens"] == read


@pytest.mark.parametrize("engine", ENGINES)
def test_branches_start_from_the_context_and_cache_at_the_fork(engine):
    # Call a sends 1000 + 100 = 1100 (entry 1100) and the context grows to 1150. In the parallel step,
    # branch b's call sends the whole context at the fork, 1150, and reads a's entry, 1100.
    doc = scenario(
        [
            {"call": {"name": "a", "input": 100, "output": 50}},
            {"parallel": {"branches": [[_call("b", 10)], [{"tool": {"latency": 1}}]]}},
        ],
        context={"system": 1000, "grows": True, "cache": True},
    )
    c = run(doc, engine=engine).calls.set_index("step")
    assert c.loc["b", "input_tokens"] == 1150 and c.loc["b", "cache_read_tokens"] == 1100
