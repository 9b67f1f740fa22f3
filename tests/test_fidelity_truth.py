"""The fidelity benchmark's workflows, predicted from the loopback server's hidden truth, against a
direct Monte Carlo of that server's draws (a second, independent computation).

``benchmarks/fidelity.py`` splits each error into calibration (predicted from the calibrated profile
minus predicted from the truth) and the rest. That split is only sound if agentsim, handed the exact
truth, reproduces the server: here the chain (30 calls in a row) and the fan-out (a plan, the slowest
of 8 parallel calls, a synthesis) are drawn directly with NumPy from the server's formula
(tests/sse_server.py ``_Draws.request``: TTFT = median x exp(sigma Z) + words / prefill_tps, decode =
tokens / (median x exp(sigma Z))) and compared with ``agentsim.simulate`` of the benchmark's own
scenario text on ``truth_profile``. Tolerances are 4 combined Monte-Carlo standard errors.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import agentsim
from loopback_workflows import (
    BRANCH,
    BRANCHES,
    CHAIN,
    CHAIN_LENGTH,
    PLAN,
    SYNTH,
    Sizes,
    compare,
    scenarios,
    truth_profile,
)
from sse_server import Hidden

RUNS = 20_000


def _direct(hidden: Hidden, rng: np.random.Generator) -> dict[str, np.ndarray]:
    def call(c, n=RUNS):
        ttft = hidden.ttft_s * np.exp(hidden.ttft_sigma * rng.standard_normal(n)) + c.words / hidden.prefill_tps
        return ttft + c.output / (hidden.tps_median * np.exp(hidden.tps_sigma * rng.standard_normal(n)))

    chain = sum(call(CHAIN) for _ in range(CHAIN_LENGTH))
    fanout = call(PLAN) + np.max([call(BRANCH) for _ in range(BRANCHES)], axis=0) + call(SYNTH)
    return {"chain": chain, "fanout": fanout}


def _p95_se(x: np.ndarray) -> float:
    """Standard error of a sample's 95th percentile: sqrt(p (1 - p) / n) / density there."""
    lo, hi = np.percentile(x, [94, 96])
    return math.sqrt(0.95 * 0.05 / x.size) * (hi - lo) / 0.02


@pytest.mark.parametrize("hidden", [Hidden(), Hidden(ttft_s=0.1, tps_median=200, seed=3)], ids=["benchmark", "fast"])
def test_agentsim_on_the_truth_reproduces_the_server(tmp_path, hidden):
    (tmp_path / "truth.yaml").write_text(truth_profile(hidden))
    direct = _direct(hidden, np.random.default_rng(11))
    texts = scenarios(Sizes(sim_runs=RUNS))
    for name in ("chain", "fanout"):
        text = texts[name].replace("./profile.yaml", "./truth.yaml").replace("uncertainty: parameters\n", "")
        (tmp_path / f"{name}.yaml").write_text(text)
        wall = agentsim.simulate(tmp_path / f"{name}.yaml").summary_dict()["variants"]["baseline"]["wall_time_s"]
        x = direct[name]
        se_mean = x.std(ddof=1) / math.sqrt(x.size) * math.sqrt(2)  # two samples of the same size
        assert abs(wall["mean"] - x.mean()) < 4 * se_mean, (name, wall["mean"], x.mean(), se_mean)
        assert abs(wall["p95"] - np.percentile(x, 95)) < 4 * math.sqrt(2) * _p95_se(x), (name, wall["p95"])


def test_compare_widens_the_interval_by_the_measured_standard_error():
    """Hand-computed: prediction 10 s with param_ci95 [9.6, 10.2]; 4 measured runs of mean 10.5, sd 0.4."""
    measured = [10.1, 10.5, 10.5, 10.9]  # mean 10.5, sample sd 0.32660, se 0.16330
    wall = {"mean": 10.0, "p95": 11.0, "param_ci95": [9.6, 10.2]}
    (row,) = compare({"chain": wall}, {"chain": measured}, {"chain": {"mean": 10.4, "p95": 10.9}})
    se = math.sqrt(((0.4**2) * 2 + 0) / 3) / 2
    assert row["measured_mean_se_s"] == pytest.approx(se)
    assert row["inside"] is False  # 10.5 > 10.2
    lo, hi = row["with_measured_ci95"]
    assert lo == pytest.approx(10.0 - math.hypot(0.4, 1.96 * se))
    assert hi == pytest.approx(10.0 + math.hypot(0.2, 1.96 * se))  # 10.3903...: still below 10.5
    assert row["inside_with_measured"] is (lo <= 10.5 <= hi)
    assert row["inside_with_measured"] is False
    assert row["truth_mean_s"] == 10.4 and row["truth_p95_s"] == 10.9
    # a wider spread of the real runs brings 10.5 inside
    (row,) = compare({"chain": wall}, {"chain": [9.5, 10.5, 10.5, 11.5]}, None)
    assert row["inside"] is False and row["inside_with_measured"] is True
    assert "truth_mean_s" not in row
