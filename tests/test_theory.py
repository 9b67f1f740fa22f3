"""Simulated means against closed-form results, with tolerances from the Monte-Carlo error.

Each check uses a fixed seed and accepts the simulated mean when it lies within
4 standard errors (sample sd / sqrt(runs)) of the exact value: a false alarm
has probability ~6e-5, while a real bias of a few per cent fails loudly.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from agentsim.plan.distributions import Z90
from conftest import model, run, scenario

Z = 4.0


def within(sample: np.ndarray, exact: float):
    se = np.std(sample, ddof=1) / math.sqrt(len(sample))
    assert abs(np.mean(sample) - exact) <= Z * se, (np.mean(sample), exact, se)


def test_chain_of_lognormal_ttfts():
    median, p90, n = 2.0, 4.5, 10
    mu, sigma = math.log(median), (math.log(p90) - math.log(median)) / Z90
    doc = scenario(
        [{"repeat": {"times": n, "steps": [{"call": {"output": 0}}]}}],
        models={"m": model(ttft={"lognormal": {"median": median, "p90": p90}})},
        runs=20000,
    )
    wall = run(doc, engine="fastpath").runs["wall_time_s"].to_numpy()
    within(wall, n * math.exp(mu + sigma**2 / 2))


@pytest.mark.parametrize(
    ("join", "expect"),
    [
        ("all", lambda m, n: m * sum(1 / i for i in range(1, n + 1))),  # max of n: mean x H_n
        ("any", lambda m, n: m / n),  # min of n
        ({"k": 2}, lambda m, n: m * (1 / n + 1 / (n - 1))),  # 2nd order statistic
    ],
)
def test_order_statistics_of_parallel_exponential_branches(join, expect):
    mean, n = 2.0, 5
    branches = [{"wait": {"latency": {"exponential": {"mean": mean}}}} for _ in range(n)]
    doc = scenario([{"parallel": {"join": join, "branches": branches}}], runs=20000)
    wall = run(doc, engine="fastpath").runs["wall_time_s"].to_numpy()
    within(wall, expect(mean, n))


def test_fanout_max_matches_parallel_formula():
    mean, n = 1.5, 8
    doc = scenario(
        [{"fanout": {"n": n, "steps": [{"wait": {"latency": {"exponential": {"mean": mean}}}}]}}], runs=20000
    )
    wall = run(doc, engine="fastpath").runs["wall_time_s"].to_numpy()
    within(wall, mean * sum(1 / i for i in range(1, n + 1)))


@pytest.mark.parametrize(("p", "cap"), [(0.6, 50), (0.8, 4)])
def test_repeat_continue_p_count_is_truncated_geometric(p, cap):
    doc = scenario([{"repeat": {"continue_p": p, "max": cap, "steps": [{"call": {"output": 1}}]}}], runs=20000)
    calls = run(doc, engine="fastpath").runs["calls"].to_numpy().astype(float)
    assert calls.min() >= 1 and calls.max() <= cap
    within(calls, (1 - p**cap) / (1 - p))


def test_choose_frequencies():
    doc = scenario(
        [
            {
                "choose": {
                    "options": [
                        {"p": 0.25, "steps": [{"wait": {"latency": 1}}]},
                        {"p": 0.75, "steps": [{"wait": {"latency": 3}}]},
                    ]
                }
            }
        ],
        runs=20000,
    )
    wall = run(doc, engine="fastpath").runs["wall_time_s"].to_numpy()
    assert set(np.unique(wall)) == {1.0, 3.0}
    within(wall, 0.25 * 1 + 0.75 * 3)


def test_des_agrees_with_theory_too():
    # The same max-of-n check on the DES (smaller sample; the engines are also compared bit for bit).
    mean, n = 2.0, 3
    branches = [{"wait": {"latency": {"exponential": {"mean": mean}}}} for _ in range(n)]
    wall = run(scenario([{"parallel": branches}], runs=4000), engine="des").runs["wall_time_s"].to_numpy()
    within(wall, mean * (1 + 1 / 2 + 1 / 3))
