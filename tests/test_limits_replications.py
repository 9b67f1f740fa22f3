"""A concurrency limit in plain replications (no workload): every run gets fresh accounts.

Regression: the per-tier admission plans were cached with the first run's accounts, so from the
second replication on, calls queued on the previous run's slots (in an environment that no longer
runs) and never started: a fan-out wider than the limit gave runs with no calls and 0 s wall time.

Hand-computed timeline (constant TTFT 0.1 s, 100 tokens/s): plan 0.1 + 0.8 = 0.9 s; eight 60-token
branches behind 4 slots run in two waves of 0.1 + 0.6 = 0.7 s (the second wave waits 0.7 s each);
synthesis 0.1 + 1.2 = 1.3 s. Every run: 0.9 + 1.4 + 1.3 = 3.6 s, 10 calls, 4 x 0.7 s of queueing.
"""

from __future__ import annotations

import pytest

import agentsim

SCENARIO = {
    "name": "fanout-behind-a-cap",
    "seed": 1,
    "runs": 5,
    "models": {"m": {"ttft": 0.1, "output_tps": 100, "price": {"input_mtok": 1, "output_mtok": 1}}},
    "agent": {
        "steps": [
            {"call": {"name": "plan", "model": "m", "input": 100, "output": 80}},
            {"fanout": {"n": 8, "steps": [{"call": {"name": "branch", "model": "m", "input": 100, "output": 60}}]}},
            {"call": {"name": "synthesis", "model": "m", "input": 100, "output": 120}},
        ]
    },
    "limits": {"provider": {"models": ["m"], "concurrency": 4}},
}


def test_every_replication_has_its_own_slots():
    res = agentsim.simulate(SCENARIO)
    runs = res.runs
    assert len(runs) == 5
    assert runs["wall_time_s"].tolist() == pytest.approx([3.6] * 5, abs=1e-9)
    calls = res.calls
    assert calls.groupby("run").size().tolist() == [10] * 5
    assert calls.groupby("run")["queue_s"].sum().tolist() == pytest.approx([4 * 0.7] * 5, abs=1e-9)
