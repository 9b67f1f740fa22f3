"""Quantile tables (gamma, exponential) and choice cut points against SciPy's exact functions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special, stats

from agentsim.plan.distributions import Sampler, gamma_table
from agentsim.plan.qtable import build_table

Z = np.random.default_rng(2026).standard_normal(1_000_000)


def exact_gamma(k: float, z: np.ndarray) -> np.ndarray:
    """SciPy's gamma quantile at Phi(z), computed independently (upper tail through the complement)."""
    upper = z > 0
    x = np.empty(z.shape)
    x[upper] = special.gammainccinv(k, special.ndtr(-z[upper]))
    x[~upper] = special.gammaincinv(k, special.ndtr(z[~upper]))
    return x


@pytest.mark.parametrize("shape", [0.1, 0.5, 1.0, 2.0, 21.8, 400.0])
def test_gamma_draws_within_1e9_of_scipy(shape):
    s = Sampler("gamma", {"shape": shape, "scale": 3.0})
    x = s.transform(Z)
    ref = 3.0 * exact_gamma(shape, Z)
    assert gamma_table(shape) is not None  # the fast path is really in use
    assert np.max(np.abs(x / ref - 1)) <= 1e-9


def test_exponential_draws_within_1e9_of_the_closed_form():
    x = Sampler("exponential", {"mean": 2.0}).transform(Z)
    ref = -2.0 * special.log_ndtr(-Z)  # -mean * log(1 - Phi(z))
    assert np.max(np.abs(x / ref - 1)) <= 1e-9


def test_tails_beyond_the_table_are_exact():
    table = gamma_table(2.0)
    z = np.array([-40.0, -9.0, -8.000001, 8.000001, 9.5, 30.0])
    assert np.all((z < table.lo) | (z > table.hi))
    assert np.array_equal(Sampler("gamma", {"shape": 2.0, "scale": 1.0}).transform(z), exact_gamma(2.0, z))


def test_gamma_draws_pass_ks_against_scipy():
    k, scale = (70 / 15) ** 2, 15**2 / 70  # gamma with mean 70, sd 15
    x = Sampler("gamma", {"shape": k, "scale": scale}).transform(Z)
    assert stats.kstest(x, stats.gamma(k, scale=scale).cdf).pvalue > 0.01


def test_a_function_the_table_cannot_follow_falls_back_to_exact():
    # log x has a kink at z = 0.3: no cubic reaches 1e-10 near it, so no table is built.
    def kinked(z):
        z = np.asarray(z, dtype=np.float64)
        return np.abs(z - 0.3), np.sign(z - 0.3)

    assert build_table(kinked) is None


def test_table_error_bound_shrinks_like_h4():
    # y = sin(z): |y''''| <= 1, so the cubic Hermite error is at most h^4 / 384.
    table = build_table(lambda z: (np.sin(z), np.cos(z)), check_tol=1.0)  # accepted at the first h (1/16)
    z = np.linspace(-8, 8, 100_001)
    err = np.max(np.abs(table.log_x(z) - np.sin(z)))
    assert err <= (1 / 16) ** 4 / 384 * (1 + 1e-6)
    assert err > 0.5 * (1 / 16) ** 4 / 384  # the bound is nearly reached: the table is what we think


@pytest.mark.parametrize("p", [[0.5, 0.3, 0.2], [0.1] * 10, [0.0, 1.0], [1 / 3] * 3])
def test_choice_by_cut_points_matches_the_cdf(p):
    values = np.arange(len(p), dtype=np.float64)
    cum = np.cumsum(p)[:-1]
    x = Sampler("choice", {}, values=values, cum=cum).transform(Z)
    ref = values[np.searchsorted(cum, special.ndtr(Z), side="right")]
    # They could differ only where Phi(z) rounds onto a cut point: never on a million draws.
    assert np.array_equal(x, ref)
    assert math.isclose(float(np.mean(x == 0)), p[0], abs_tol=5 * math.sqrt(0.25 / Z.size))
