"""Fitting the stream description (agentsim.measure.stream_fit): recovery on synthetic calls with known parameters.

The synthetic calls are generated here, independently of agentsim.sim.streaming, from the model of
DESIGN.md §3.2: N - 1 token gaps w_j × base with w lognormal (mean 1, CV c); deliveries of m tokens
(a delivery gap is the sum of its tokens' gaps); with probability p one stall of s seconds added to a gap.
Tolerances are several Monte-Carlo standard errors.
"""

from __future__ import annotations

import numpy as np
import pytest

from agentsim.measure.stream_fit import fit_stream


def synthetic(n_calls, tokens, cv, chunk, p, seconds, seed=7):
    rng = np.random.default_rng(seed)
    sigma = np.sqrt(np.log1p(cv**2))
    gaps, chunks = [], []
    for _ in range(n_calls):
        base = 1 / rng.uniform(30, 300)  # each call its own speed (tokens/s)
        w = rng.lognormal(-0.5 * sigma**2, sigma, tokens - 1) * base
        ends = np.arange(chunk, tokens, chunk) - 1  # 0-based last token of each delivery after the first
        arrive = np.concatenate([[0.0], np.cumsum(w)])
        d = arrive[np.append(ends, tokens - 1)]
        g = np.diff(np.concatenate([[0.0], d]))
        if rng.uniform() < p:
            g[rng.integers(len(g))] += seconds
        gaps.append(g)
        chunks.append([chunk] * (len(g) + 1))
    return gaps, chunks


def test_recovers_per_token_jitter_and_stalls():
    gaps, _ = synthetic(400, 200, cv=0.5, chunk=1, p=0.1, seconds=2.0)
    fit = fit_stream(gaps)
    assert fit["chunk_tokens"] == 1
    # the CV of ~80,000 gaps: standard error well under 0.01
    assert fit["jitter_cv"] == pytest.approx(0.5, abs=0.03)
    # p: 400 calls, se = sqrt(0.1 * 0.9 / 400) = 0.015; every generated stall (2 s >> any gap) is found
    assert fit["stall"]["p"] == pytest.approx(0.1, abs=0.05)
    assert fit["stall"]["p"] == pytest.approx(np.mean([(g > 1.0).any() for g in gaps]))
    assert fit["stall"]["seconds"] == pytest.approx(2.0, abs=0.1)


def test_recovers_chunked_jitter():
    gaps, chunks = synthetic(400, 400, cv=0.6, chunk=4, p=0.0, seconds=0.0)
    fit = fit_stream(gaps, chunks)
    assert fit["chunk_tokens"] == 4
    assert fit["jitter_cv"] == pytest.approx(0.6, abs=0.04)
    assert fit["stall"] == {"p": 0.0, "seconds": 0.0}


def test_even_stream_fits_zero_jitter():
    fit = fit_stream([[0.02] * 50, [0.01] * 80])
    assert fit == {"chunk_tokens": 1, "jitter_cv": 0.0, "stall": {"p": 0.0, "seconds": 0.0}}


def test_varying_chunks_give_a_uniform_range():
    fit = fit_stream([[0.1] * 5], [[3, 1, 2, 3, 5, 4]])
    assert fit["chunk_tokens"] == {"uniform": {"low": 1.0, "high": 5.0}}


def test_nothing_to_fit_is_a_clear_error():
    with pytest.raises(ValueError, match="no call with at least 3 deliveries"):
        fit_stream([[0.1], []])
