"""The timing rules of :mod:`agentsim.sim.rules` where a mutant would change a result: the order of the
floating-point operations (shown by values whose orders differ in the last bit), reasoning billed before
visible output, ties at a join, a stable ranking of more branches than an insertion sort handles, and
calls cut before their first token. Every expected value is worked out in the comments
(docs/validation.md §7); the engine tests run the same hand case through both engines."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from agentsim.sim import rules
from conftest import model, run, scenario

ENGINES = ["des", "fastpath"]

# ------------------------------------------------------------------ the order of operations


def test_first_visible_is_first_token_then_reasoning():
    # (t0 + ttft) + reas / tps = (0.1 + 0.2) + 3 / 10 = 0.30000000000000004 + 0.3 = 0.6000000000000001,
    # where t0 + (ttft + reas / tps) would give 0.1 + 0.5 = 0.6
    assert rules.first_visible(0.1, 0.2, 3, 10.0) == 0.6000000000000001
    got = rules.first_visible(np.array([0.1, 0.0]), np.array([0.2, 1.0]), np.array([3, 50]), np.array([10.0, 25.0]))
    assert got.tolist() == [0.6000000000000001, 3.0]


def test_first_token_prefills_only_the_uncached_input():
    # 0.5 s + (3000 - 1000) / 4000 = 1.0 s; with the cached count added instead: 0.5 + 1.0 = 1.5 s
    assert rules.first_token(0.5, 3000, 1000, 4000.0) == 1.0
    # (inp - read) first: (7 - 4) / 10 = 0.3 exactly, then 0.1 + 0.3 = 0.4;
    # inp / p - read / p would be 0.7 - 0.4 = 0.29999999999999993
    assert rules.first_token(0.1, 7, 4, 10.0) == 0.4
    got = rules.first_token(np.array([0.1, 0.5]), np.array([7, 3000]), np.array([4, 1000]), np.array([10.0, 4000.0]))
    assert got.tolist() == [0.4, 1.0]
    # a plain-number read is skipped only when it is 0: one cached token still comes off (0.5 + 2999 / 1000)
    assert rules.first_token(0.5, 3000, 1, 1000.0) == 0.5 + 2999 / 1000
    assert rules.first_token(0.5, 3000, np.int64(1), 1000.0) == 0.5 + 2999 / 1000
    assert rules.first_token(0.5, 3000, 0, 1000.0) == 0.5 + 3000 / 1000


def test_decode_adds_the_tokens_before_dividing():
    # (1 + 2) / 10 = 0.3; 1 / 10 + 2 / 10 = 0.30000000000000004
    assert rules.decode(1, 2, 10.0) == 0.3
    assert rules.decode(np.array([1, 200]), np.array([2, 100]), 10.0).tolist() == [0.3, 30.0]


def test_cut_tokens_measure_from_the_recorded_first_token():
    # t_first = t0 + ttft = 0.1 + 0.2 = 0.30000000000000004; (0.6 - t_first) * 10 = 2.9999999999999996,
    # floor 2 (computed as ((T - t0) - ttft) * tps it would be 0.3 * 10 = 3.0, floor 3)
    assert rules.cut_tokens(0.6, 0.1, 0.2, 10.0, 50, 0) == (2, 0)
    vis, rb = rules.cut_tokens_array(np.array([0.6]), np.array([0.1 + 0.2]), np.array([10.0]), 50, 0)
    assert (vis.tolist(), rb.tolist()) == ([2], [0])


def test_cut_decode_subtracts_in_order():
    # ((T - t0) - ttft) - stalled = ((1.0 - 0.0) - 0.1) - 0.3 = 0.9 - 0.3 = 0.6000000000000001,
    # where (T - t0) - (ttft + stalled) = 1.0 - 0.4 = 0.6
    assert rules.cut_decode(1.0, 0.0, 0.1, 0.3) == 0.6000000000000001
    # (0.6 - 0.1) - 0.2 = 0.5 - 0.2 = 0.3, where 0.6 - (0.1 + 0.2) = 0.29999999999999993
    assert rules.cut_decode(0.6, 0.1, 0.2, 0.0) == 0.3


def test_lead_in_subtracts_in_order():
    # elapsed = 1.0 - 0.0; TTFT min(0.1, 1.0) = 0.1; DEC (1.0 - 0.1) - 0.3 = 0.6000000000000001
    first, dec = rules.lead_in(0.0, 1.0, 0.1, 0.3)
    assert (float(first), float(dec)) == (0.1, 0.6000000000000001)
    # elapsed = 0.6 - 0.1 = 0.5; TTFT 0.2; DEC 0.5 - 0.2 = 0.3
    first, dec = rules.lead_in(0.1, 0.6, 0.2, 0.0)
    assert (float(first), float(dec)) == (0.2, 0.3)
    # arrays: a pipeline that starts before the first token (all TTFT) and one after it
    first, dec = rules.lead_in(np.array([2.0, 0.0]), np.array([3.0, 1.0]), np.array([1.5, 0.1]), np.array([0.0, 0.3]))
    assert first.tolist() == [1.0, 0.1]
    assert dec.tolist() == [0.0, 0.6000000000000001]


def test_duration_with_and_without_a_stall():
    # (0.1 + 0.2) + 0.3 = 0.6000000000000001 (0.1 + (0.2 + 0.3) = 0.6); no stall: 0.1 + 0.2 alone
    assert rules.duration(0.1, 0.2, 0.3) == 0.6000000000000001
    assert rules.duration(0.1, 0.2) == 0.30000000000000004
    assert rules.duration(0.1, 0.2, 0.0) == 0.30000000000000004


# ------------------------------------------------------------------ partial tokens


@pytest.mark.parametrize(
    ("T", "expect"),
    [
        (0.0, (0, 0)),  # at its start: nothing
        (0.9, (0, 0)),  # before the first token at 1 s
        (1.05, (0, 0)),  # 0.05 s x 10 tok/s = 0.5 tokens: none whole yet
        (3.0, (0, 20)),  # 2 s x 10 = 20 tokens, all of them reasoning (30 come first)
        (4.0, (0, 30)),  # exactly the reasoning
        (4.25, (2, 30)),  # 3.25 s x 10 = 32.5: 32 tokens, the last 2 visible
        (9.0, (50, 30)),  # 80 tokens: the whole call
        (60.0, (50, 30)),  # capped at what the call generates
    ],
)
def test_a_cut_call_bills_reasoning_first(T, expect):
    # a call started at 0, TTFT 1 s, 10 tok/s, 50 visible and 30 reasoning tokens, cut at T
    assert rules.cut_tokens(T, 0.0, 1.0, 10.0, 50, 30) == expect
    vis, rb = rules.cut_tokens_array(np.array([T]), np.array([1.0]), np.array([10.0]), np.array([50]), np.array([30]))
    assert (vis.tolist(), rb.tolist()) == ([expect[0]], [expect[1]])


def test_cut_tokens_with_no_reasoning_or_no_output():
    # 2.5 s after the first token at 10 tok/s: 25 tokens
    assert rules.cut_tokens(3.5, 0.0, 1.0, 10.0, 40, 0) == (25, 0)
    assert rules.cut_tokens(3.5, 0.0, 1.0, 10.0, 0, 40) == (0, 25)
    assert rules.cut_tokens(3.5, 0.0, 1.0, 10.0, 0, 10) == (0, 10)  # capped at the reasoning
    assert rules.cut_tokens(3.5, 0.0, 1.0, 10.0, 5, 10) == (5, 10)  # capped at the whole call


def test_cut_token_counts_are_integers():
    # token counts go into integer columns of the calls table: an int64 array, whole numbers in the scalar form
    vis, rb = rules.cut_tokens_array(
        np.array([3.5, 0.5]), np.array([1.0, 1.0]), np.array([10.0, 10.0]), np.array([50, 50]), np.array([30, 30])
    )
    assert vis.dtype == np.int64 and rb.dtype == np.int64
    assert (vis.tolist(), rb.tolist()) == ([0, 0], [25, 0])
    assert all(type(x) is int for x in rules.cut_tokens(3.5, 0.0, 1.0, 10.0, 50, 30))


def test_a_call_without_a_first_token_is_cut_silently():
    # A branch that never got going records its first token at infinity (and may be "cut" at infinity):
    # inf - inf is NaN, which the rule discards without a floating-point warning: nothing was generated.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        vis, rb = rules.cut_tokens_array(
            np.array([math.inf, 2.0]), np.array([math.inf, math.inf]), np.array([10.0, 10.0]), 50, 30
        )
    assert (vis.tolist(), rb.tolist()) == ([0, 0], [0, 0])
    # the scalar form says the same: T <= t0 + ttft (here inf <= inf) means nothing streamed yet
    assert rules.cut_tokens(math.inf, math.inf, 0.0, 10.0, 50, 30) == (0, 0)
    assert rules.cut_tokens(2.0, 0.0, math.inf, 10.0, 50, 30) == (0, 0)


# ------------------------------------------------------------------ joins


def test_join_all_of_many_branches_ties_to_the_last():
    ends = [2.0, 1.0, 2.0, 1.0, 2.0, 1.0, 2.0, 1.0, 0.5, 2.0, 1.0]
    assert rules.critical_all(ends) == 9
    assert rules.critical_all([5.0, 5.0]) == 1
    assert rules.critical_all([5.0, 4.0]) == 0
    assert rules.critical_all_array(np.array(ends)) == 9  # one run: a 1-d array
    # reversed: 1, 2, 0.5, 1, 2, 1, 2, 1, 2, 1, 2: the last 2 s branch is 10
    assert rules.critical_all_array(np.array([ends, ends[::-1]])).tolist() == [9, 10]


def test_a_race_of_many_branches_ranks_ties_in_branch_order():
    # ends 2, 1, 2, 1, 2, 1, 2, 1: ranked (a stable sort) 1, 3, 5, 7 (at 1 s), then 0, 2, 4, 6 (at 2 s).
    # k = 5: the winners are 0, 1, 3, 5, 7 and the 5th, branch 0, is critical. (NumPy's default quicksort
    # ranks 1, 3, 7, 5, 2, 0, 4, 6 here: branch 2 would be critical.)
    ends = [2.0, 1.0] * 4
    assert rules.race(ends, 5) == (0, [0, 1, 3, 5, 7])
    c, w = rules.race_array(np.array([ends]), 5)
    assert c.tolist() == [[0]]
    assert np.flatnonzero(w[0]).tolist() == [0, 1, 3, 5, 7]
    # k per run: 6 (critical branch 2), 1 (branch 1), and 8 (all: the last at 2 s, branch 6)
    c, w = rules.race_array(np.array([ends] * 3), np.array([6, 1, 8]))
    assert c.tolist() == [[2], [1], [6]]
    assert [np.flatnonzero(row).tolist() for row in w] == [[0, 1, 2, 3, 5, 7], [1], list(range(8))]


def test_a_race_of_twenty_equal_branches_takes_the_first_k():
    ends = np.array([[3.0] * 20, [3.0] * 10 + [1.0] * 10])
    c, w = rules.race_array(ends, 4)
    assert c.tolist() == [[3], [13]]
    assert [np.flatnonzero(row).tolist() for row in w] == [[0, 1, 2, 3], [10, 11, 12, 13]]
    assert rules.race(ends[1].tolist(), 4) == (13, [10, 11, 12, 13])


def test_a_race_for_none_of_no_branches():
    # a fan-out of 0 copies (k = 0): the critical index is 0 (its end is not used), nobody wins
    c, w = rules.race_array(np.array([[np.inf, np.inf], [2.0, 1.0]]), np.array([0, 1]))
    assert c.tolist() == [[0], [1]]
    assert w.tolist() == [[False, False], [False, True]]


def test_a_race_skips_branches_that_did_not_end():
    # None: did not end (the DES); the array form puts them at infinity
    assert rules.race([None, 3.0, None, 1.0], 2) == (1, [1, 3])
    c, w = rules.race_array(np.array([[np.inf, 3.0, np.inf, 1.0]]), 2)
    assert c.tolist() == [[1]] and np.flatnonzero(w[0]).tolist() == [1, 3]


# ------------------------------------------------------------------ through both engines


def _breakdown(res):
    return res.summary_dict()["variants"]["baseline"]["breakdown_s"]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_call_cut_mid_reasoning_bills_only_reasoning(engine):
    # The call: 1 s TTFT, then 150 reasoning and 100 visible tokens at 100 tok/s. A 2 s wait wins the race:
    # by 2 s the call has generated 100 tokens, all reasoning. Billed: 10 input at $3/M + 100 at $15/M.
    # The wait is critical: 2 s of WAIT, no TTFT or decode on the critical path.
    doc = scenario(
        [
            {
                "parallel": {
                    "join": "any",
                    "branches": [
                        {"call": {"name": "c", "input": 10, "output": 100, "reasoning": 150}},
                        {"wait": {"latency": 2}},
                    ],
                }
            }
        ]
    )
    res = run(doc, engine=engine)
    c = res.calls.set_index("step").loc["c"]
    assert (c["status"], c["t_end"]) == ("cancelled", 2.0)
    assert (int(c["reasoning_tokens"]), int(c["output_tokens"])) == (100, 0)
    assert c["cost_usd"] == pytest.approx(10 * 3e-6 + 100 * 15e-6, rel=1e-12)
    bd = _breakdown(res)
    assert (bd["wait"], bd["ttft"], bd["decode"]) == (pytest.approx(2.0), 0.0, 0.0)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_cut_call_counts_tokens_from_its_recorded_first_token(engine):
    # A 0.1 s wait, then a call (0.2 s TTFT, 10 tok/s, 50 tokens) raced against a 0.5 s wait, which ends
    # at 0.1 + 0.5 = 0.6. The call's first token came at 0.1 + 0.2 = 0.30000000000000004; by 0.6 it has
    # generated floor((0.6 - 0.30000000000000004) * 10) = floor(2.9999999999999996) = 2 tokens.
    m = model(ttft=0.2, tps=10.0)
    doc = scenario(
        [
            {"wait": {"latency": 0.1}},
            {
                "parallel": {
                    "join": "any",
                    "branches": [{"call": {"name": "c", "input": 0, "output": 50}}, {"wait": {"latency": 0.5}}],
                }
            },
        ],
        models={"m": m},
    )
    res = run(doc, engine=engine)
    c = res.calls.set_index("step").loc["c"]
    assert (c["status"], c["t_end"], int(c["output_tokens"])) == ("cancelled", 0.6, 2)
    assert res.runs["wall_time_s"].iloc[0] == 0.6


@pytest.mark.parametrize("engine", ENGINES)
def test_a_race_of_eight_branches_breaks_ties_in_branch_order(engine):
    # Eight branches ending at 2, 1, 2, 1, 2, 1, 2, 1 s; join {k: 5}: the four 1 s waits win, then of the
    # four tied at 2 s branch 0 comes first: it is the 5th winner and critical. Branch 0 is a 2 s tool, the
    # other 2 s branches are waits: the breakdown is 2 s of tool and no wait.
    branches = [{"tool": {"latency": 2}}]
    for b in range(1, 8):
        branches.append({"wait": {"latency": 1 if b % 2 else 2}})
    doc = scenario([{"parallel": {"join": {"k": 5}, "branches": branches}}])
    res = run(doc, engine=engine)
    assert res.runs["wall_time_s"].iloc[0] == 2.0
    bd = _breakdown(res)
    assert (bd["tool"], bd["wait"]) == (pytest.approx(2.0), 0.0)


@pytest.mark.parametrize("engine", ENGINES)
def test_join_all_of_eight_tied_branches_takes_the_last(engine):
    # Eight branches all ending at 2 s: seven 2 s tools, then a 2 s wait. The last (the wait) is critical.
    branches = [{"tool": {"latency": 2}} for _ in range(7)] + [{"wait": {"latency": 2}}]
    res = run(scenario([{"parallel": branches}]), engine=engine)
    bd = _breakdown(res)
    assert (bd["tool"], bd["wait"]) == (0.0, pytest.approx(2.0))


def test_join_rules_along_the_last_axis_of_one_or_three_dimensional_ends():
    # one run (a 1-d array): the same ranking as above; k = 5 of 2, 1, 2, 1, 2, 1, 2, 1 -> branch 0
    c, w = rules.race_array(np.array([2.0, 1.0] * 4), 5)
    assert c.tolist() == [0]
    assert np.flatnonzero(w).tolist() == [0, 1, 3, 5, 7]
    # runs x copies x branches (a fan-out inside a fan-out): the ranking is along the branches only
    ends = np.array([[[3.0, 1.0, 2.0], [1.0, 1.0, 5.0]], [[2.0, 2.0, 2.0], [4.0, 0.0, 4.0]]])
    c, w = rules.race_array(ends, 2)
    # ranks: 1, 2, 0 -> 2nd is 2; 0, 1, 2 -> 1; 0, 1, 2 -> 1; 1, 0, 2 -> 0
    assert c[..., 0].tolist() == [[2, 1], [1, 0]]
    assert w.tolist() == [[[False, True, True], [True, True, False]], [[True, True, False], [True, True, False]]]
    c, _ = rules.race_array(ends, np.array([[1, 3], [3, 2]]))  # k per run and copy
    assert c[..., 0].tolist() == [[1, 2], [2, 0]]
    # join all: the last of the latest: 0; 2; 2 (a three-way tie); 2 (a tie of 0 and 2)
    assert rules.critical_all_array(ends).tolist() == [[0, 2], [2, 2]]
