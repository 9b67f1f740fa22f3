"""The TTFT fit is unbiased: its mean over many synthetic measurement sets is the truth.

Each data set is what ``agentsim measure`` sees from a provider that follows the model exactly:
80 requests with uncached inputs uniform over 255-4,055 tokens and
``ttft = base + input / prefill_tps``, base lognormal (median 0.25 s, log-sd 0.35), prefill
20,000 tokens/s (the hidden server of ``benchmarks/fidelity.py``). Over seeded repetitions the
mean of each estimate (base median, log-sd, slope, and the mean TTFT at 1,000 input tokens, which
is what a simulation uses) must lie within a few Monte-Carlo standard errors of the truth; the
truth is computed in closed form here, not taken from the program. A fit that, say, pulled the
slope down under right-skewed noise, or read the spread of residuals around a median line as the
lognormal's, would miss by many standard errors.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from agentsim.measure.calibrate import fit_ttft

MEDIAN, SIGMA, SLOPE = 0.25, 0.35, 1 / 20_000  # seconds, log-sd, seconds per token
REPS, N, K = 300, 80, 4.0  # repetitions, requests per set, tolerance in Monte-Carlo standard errors


def _estimates(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(REPS):
        x = rng.integers(255, 4056, N).astype(float)
        y = MEDIAN * np.exp(SIGMA * rng.standard_normal(N)) + SLOPE * x
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            f = fit_ttft(y, x)
        mean_1k = f.median_s * math.exp(f.sigma**2 / 2) + f.slope_s_per_token * 1000
        out.append((f.median_s, f.sigma, f.slope_s_per_token, mean_1k))
    return np.array(out)


def test_ttft_fit_is_unbiased_over_synthetic_measurements():
    est = _estimates(seed=16)
    truth = [MEDIAN, SIGMA, SLOPE, MEDIAN * math.exp(SIGMA**2 / 2) + SLOPE * 1000]
    for name, col, true in zip(["base median", "sigma", "slope", "mean TTFT at 1k"], est.T, truth, strict=True):
        mcse = col.std(ddof=1) / math.sqrt(REPS)
        got = col.mean()
        assert abs(got - true) <= K * mcse, f"{name}: mean {got:.5g} vs truth {true:.5g} (MCSE {mcse:.2g})"
    # the test has teeth: the slope's spread is a fifth of the truth, so a 10% bias is ~8 MCSE
    assert K * est[:, 2].std(ddof=1) / math.sqrt(REPS) < 0.06 * SLOPE
