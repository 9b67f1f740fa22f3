"""The summary-only path: per-call statistics read the first runs' calls, and summary.json does not depend on
how the runs are spread over workers or whether the calls table is built."""

from __future__ import annotations

import json

import numpy as np
import pytest

import agentsim
from agentsim.plan.compiler import compile_plan
from agentsim.sim import results as results_mod
from agentsim.sim import simulation
from agentsim.sim.executors import Placement
from conftest import SCENARIOS, assert_frames_identical, make, model, scenario

# Calls that are not always made (a repeat of 2 to 6 iterations), on two models, over three blocks.
DOC = scenario(
    [
        {"call": {"output": 50, "model": "m"}},
        {
            "repeat": {
                "times": {"uniform": {"low": 2, "high": 6}},
                "steps": [{"call": {"output": {"lognormal": {"median": 80, "p90": 200}}, "model": "g"}}],
            }
        },
    ],
    models={
        "m": model(ttft={"lognormal": {"median": 1, "p90": 3}}),
        "g": model(tps={"gamma": {"mean": 60, "sd": 20}}),
    },
    variants={"base": {}, "all-m": {"model": {"g": "m"}}},
    runs=9000,
)


def _sample(monkeypatch, share: int, least: int, cap: int) -> None:
    # the rule of per_call_runs, scaled down to a simulation of 9,000 runs (~5 calls a run)
    monkeypatch.setattr(results_mod, "PER_CALL_SHARE", share)
    monkeypatch.setattr(results_mod, "PER_CALL_MIN", least)
    monkeypatch.setattr(results_mod, "PER_CALL_CAP", cap)


def test_per_call_runs_grow_with_the_runs_between_a_floor_and_a_cap():
    per_call_runs = results_mod.per_call_runs
    assert per_call_runs(300, 75.0) == 300  # a small simulation: every call (2^16 calls is 874 runs)
    assert per_call_runs(20_000, 96.0) == 1250  # one run in 16
    assert per_call_runs(50_000, 96.0) == 3125
    assert per_call_runs(200_000, 96.0) == 2**20 // 96  # about 2^20 calls at most
    assert per_call_runs(10**6, 96.0) == 2**20 // 96
    assert per_call_runs(5000, 96.0) == 683  # at least about 2^16 calls: ceil(65536 / 96)
    assert per_call_runs(10**6, 0.0) == 10**6  # no call: nothing to sample, nothing to bound
    assert per_call_runs(10**6, 10**7) == 1  # one run, however many calls it makes


@pytest.mark.parametrize(
    ("share", "least", "cap"), [(16, 1000, 30000), (4, 100, 10**9), (1, 10**9, 10**9), (16, 10, 20)]
)
def test_per_call_statistics_read_every_completed_call_of_the_first_runs(monkeypatch, share, least, cap):
    _sample(monkeypatch, share, least, cap)
    plan = compile_plan(make(DOC))
    res = simulation.simulate_plan(plan, 9000, 3, engine="fastpath")  # summary-only, one process
    first = results_mod.per_call_runs(9000, simulation._calls_per_run(plan))
    # Independently: every completed call of runs 0 .. first - 1 from the calls table, block by block in node order.
    calls = res.calls
    for name in plan.variants:
        c = calls[(calls["variant"] == name) & (calls["status"] == "ok") & (calls["run"] < first)]
        block = c["run"].to_numpy() // 4096
        order = np.lexsort((c["instance"].to_numpy(), c["run"].to_numpy(), c["node"].to_numpy(), block))
        ttft = c["ttft_s"].to_numpy()[order]
        got = res.summary_dict()["variants"][name]["per_call"]["ttft_s"]
        assert got["mean"] == pytest.approx(float(np.mean(ttft)), rel=1e-12)
        assert got["p95"] == pytest.approx(float(np.percentile(ttft, 95)), rel=1e-12)


def test_summary_bytes_do_not_depend_on_workers_the_sample_or_reading_calls(monkeypatch):
    _sample(monkeypatch, 2, 100, 10**9)  # the first 4,500 runs: past the first block of 4,096
    plan = compile_plan(make(DOC))
    one = simulation.simulate_plan(plan, 9000, 5, engine="fastpath")
    text = one.to_json()
    two = simulation.simulate_plan(plan, 9000, 5, engine="fastpath", where=Placement(workers=2))
    assert two.to_json() == text
    assert len(one.calls) > 0 and one.to_json() == text  # building the calls table changes nothing
    des = simulation.simulate_plan(plan, 9000, 5, engine="des")
    assert json.loads(des.to_json())["variants"] == json.loads(text)["variants"]


# --------------------------------------------------------------------------- summary-only blocks

BUNDLED = sorted(SCENARIOS.glob("*.yaml")) + sorted((SCENARIOS / "claims").glob("*.yaml"))


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.stem)
def test_summary_only_gives_the_same_summary_bytes_and_runs_as_full_blocks(path):
    """Every bundled scenario: summary-only blocks (no per-call tensors) against full blocks kept for .calls."""
    sc = agentsim.load(path)
    plan = compile_plan(sc)
    lean = simulation.simulate_plan(plan, 300, sc.seed, keep_calls=False)
    full = simulation.simulate_plan(plan, 300, sc.seed, keep_calls=True)
    assert lean.to_json() == full.to_json()
    assert_frames_identical(lean.runs, full.runs)


# Every shape of instance order the running sums must follow: a fan-out inside a repeat (in order), a
# repeat inside a fan-out (out of order: kept as a tensor), partial fan-outs and repeats, a choice, a
# fail step, a growing cached context (per-run input), tiered input prices, constants and draws.
ORDERS = scenario(
    [
        {"call": {"name": "plan", "model": "m", "input": 500, "output": {"lognormal": {"median": 300, "p90": 900}}}},
        {
            "repeat": {
                "times": {"uniform": {"low": 1, "high": 4}},
                "steps": [
                    {
                        "fanout": {
                            "n": {"uniform": {"low": 1, "high": 3}},
                            "steps": [{"call": {"model": "g", "output": 80}}],
                        }
                    },
                    {"tool": {"latency": 0.5, "output": 700}},
                ],
            }
        },
        {
            "fanout": {
                "n": 3,
                "steps": [
                    {
                        "repeat": {
                            "times": {"uniform": {"low": 0, "high": 3}},
                            "steps": [{"call": {"model": "m", "output": {"exponential": {"mean": 100}}}}],
                        }
                    }
                ],
            }
        },
        {"fail": {"p": 0.1}},
        {
            "choose": {
                "options": [
                    {"p": 0.3, "steps": [{"call": {"model": "g", "output": 40}}]},
                    {"p": 0.7, "steps": [{"wait": {"latency": 1}}]},
                ]
            }
        },
    ],
    models={
        "m": model(
            price={
                "input_mtok": {"base": 3, "tiers": [{"start": 2000, "price": 6}]},
                "output_mtok": 15,
                "cache_read_mtok": 0.3,
                "cache_write_mtok": 3.75,
            },
            ttft={"lognormal": {"median": 1, "p90": 3}},
        ),
        "g": model(tps={"gamma": {"mean": 60, "sd": 20}}),
    },
    context={"system": 1000, "grows": True, "cache": True},
    variants={"base": {}, "all-g": {"model": {"m": "g"}}},
    runs=600,
)


def test_summary_only_follows_every_instance_order_to_the_bit():
    plan = compile_plan(make(ORDERS))
    assert simulation.summary_only_possible(plan, "fastpath")
    lean = simulation.simulate_plan(plan, 5000, 11, engine="fastpath", keep_calls=False)
    full = simulation.simulate_plan(plan, 5000, 11, engine="fastpath", keep_calls=True)
    des = simulation.simulate_plan(plan, 5000, 11, engine="des")
    assert_frames_identical(lean.runs, full.runs)
    assert_frames_identical(lean.runs, des.runs)
    assert lean.to_json() == full.to_json()
    assert (lean.runs["status"] == 1).any() and (lean.runs["calls"].nunique() > 5)  # the shapes did occur
    assert_frames_identical(lean.calls, full.calls)  # re-simulated in full on demand: the same table
    assert_frames_identical(lean.spans, full.spans)


def test_summary_only_blocks_hold_no_per_call_tensors_and_their_totals_match_the_calls():
    """A summary-only block keeps only per-run sums; summed again from the full block's priced calls
    (an independent computation: per-call tensors, price_calls, run_totals) they are the same bits."""
    from agentsim.sim.records import run_totals

    plan = compile_plan(make(ORDERS))
    span = (0, 0, 700)
    _, lean = simulation.simulate_block(plan, 3, span, "fastpath", summary_only=True, samples=False)
    _, full = simulation.simulate_block(plan, 3, span, "fastpath")
    for a, b in zip(lean, full, strict=True):
        assert a.calls == {} and a.spans == {}
        expect = run_totals(plan, b)
        got = a.totals
        assert sorted(got) == sorted(expect)
        for k in expect:
            assert np.array_equal(np.broadcast_to(got[k], expect[k].shape), expect[k]), k


@pytest.mark.parametrize(
    "steps",
    [
        [{"parallel": {"branches": [[{"call": {"output": 10}}], [{"call": {"output": 90}}]], "join": "any"}}],
        [{"fanout": {"n": 3, "join": {"k": 2}, "steps": [{"call": {"output": 10}}]}}],
    ],
)
def test_races_need_per_call_tensors(steps):
    plan = compile_plan(make(scenario(steps)))
    assert not simulation.summary_only_possible(plan, "fastpath")
    assert not simulation.summary_only_possible(compile_plan(make(DOC)), "des")


def test_running_row_sums_chunk_by_chunk_are_the_cumulative_row_sum():
    from agentsim.sim.records import row_sum, running_row_sum

    x = np.random.default_rng(4).lognormal(size=(50, 11)) * 1e-3
    acc = running_row_sum(None, x[:, :0])  # an empty first chunk: nothing yet
    assert acc is None
    for a, b in ((0, 3), (3, 4), (4, 11)):
        acc = running_row_sum(acc, x[:, a:b])
    assert np.array_equal(acc, row_sum(x))
    assert np.array_equal(acc, np.cumsum(x, axis=1)[:, -1])  # strictly left to right, not pairwise


def test_constant_recognises_only_values_that_are_one_by_construction():
    from agentsim.sim.totals import constant

    assert constant(3) == 3 and constant(2.5) == 2.5 and constant(np.int64(7)) == 7
    assert constant(np.array(4)) == 4
    assert constant(np.broadcast_to(np.int64(9), (5, 3))) == 9
    assert constant(np.full(4, 9)) is None  # equal values, but an ordinary array: not assumed
    assert constant("9") is None


def test_call_cost_without_plain_zero_terms_is_the_same_bits_as_with_zero_arrays():
    from agentsim.pricing.rates import Rate, Rates, call_cost

    rates = Rates(Rate(3.0, (2000,), (6.0,)), Rate(0.3), Rate(3.75), Rate(6.0), Rate(15.0), Rate(15.0), "explicit")
    rng = np.random.default_rng(8)
    inp = rng.integers(0, 5000, 1000)
    read = np.minimum(rng.integers(0, 3000, 1000), inp)
    out = rng.integers(0, 900, 1000)
    zeros = np.zeros(1000, dtype=np.int64)
    arrays = call_cost(rates, inp, read, inp - read, zeros, out, zeros)
    plain = call_cost(rates, inp, read, inp - read, 0, out, 0)
    assert np.array_equal(arrays.view(np.int64), plain.view(np.int64))  # bit for bit
    assert call_cost(rates, 0, 0, 0, 0, 0, 0) == 0.0
