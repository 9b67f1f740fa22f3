"""Samplers: their draws against their exact means, supports and clipping."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import TypeAdapter

from agentsim.model.scenario import Dist
from agentsim.plan.distributions import sampler

ADAPTER = TypeAdapter(Dist)
U = (np.random.default_rng(12345).random(400_000) + 0.5 / 400_000).clip(1e-15, 1 - 1e-15)

SPECS = [
    3.5,
    {"constant": 2},
    {"uniform": {"low": 2, "high": 5}},
    {"normal": {"mean": 60, "sd": 10}},
    {"normal": {"mean": 60, "sd": 10, "min": 55}},
    {"lognormal": {"median": 2, "p90": 4.5}},
    {"lognormal": {"mean": 3, "sd": 2}},
    {"lognormal": {"median": 2, "p90": 4.5}, "max": 3},
    {"gamma": {"mean": 70, "sd": 15}},
    {"exponential": {"mean": 2}},
    {"exponential": {"mean": 2}, "min": 0.5, "max": 4},
    {"choice": {"values": [1, 2, 10], "p": [0.5, 0.3, 0.2]}},
    {"choice": {"values": [1, 2, 10]}},
    {"empirical": {"values": [3, 1, 4, 1, 5, 9, 2, 6]}},
]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: str(s)[:40])
def test_draws_match_exact_mean(spec):
    s = sampler(ADAPTER.validate_python(spec))
    x = s.ppf(U)
    se = np.std(x) / math.sqrt(x.size)
    assert abs(x.mean() - s.mean) <= 4 * se + 1e-12, (x.mean(), s.mean)
    lo, hi = s.support
    assert x.min() >= lo and x.max() <= hi


def test_lognormal_quantiles_are_what_the_user_wrote():
    s = sampler(ADAPTER.validate_python({"lognormal": {"median": 2, "p90": 4.5}}))
    assert s.ppf(np.array([0.5]))[0] == pytest.approx(2.0)
    assert s.ppf(np.array([0.9]))[0] == pytest.approx(4.5)


def test_gamma_moments():
    s = sampler(ADAPTER.validate_python({"gamma": {"mean": 70, "sd": 15}}))
    x = s.ppf(U)
    assert np.std(x) == pytest.approx(15, rel=0.02)


def test_min_max_inside_or_beside_the_family_are_the_same():
    a = ADAPTER.validate_python({"normal": {"mean": 60, "sd": 10, "min": 10}})
    b = ADAPTER.validate_python({"normal": {"mean": 60, "sd": 10}, "min": 10})
    assert a == b and a.min == 10


@pytest.mark.parametrize(
    "bad",
    [
        {"lognorm": {"median": 1, "p90": 2}},
        {"lognormal": {"median": 1}},
        {"lognormal": {"median": 2, "p90": 1}},
        {"uniform": {"low": 3, "high": 1}},
        {"choice": {"values": [1, 2], "p": [0.5, 0.6]}},
        {"normal": {"mean": 1, "sd": 1}, "min": 5, "max": 1},
        "fast",
        True,
    ],
)
def test_bad_distributions_are_rejected(bad):
    with pytest.raises(Exception):  # noqa: B017
        ADAPTER.validate_python(bad)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: str(s)[:40])
def test_scalar_quantile_agrees_with_the_array_transform(spec):
    # quantile(z) (plain floats, what the compiler's checks and the plausibility warnings read) against
    # transform (NumPy, what the engines draw), at the points the checks use and in both tails
    s = sampler(ADAPTER.validate_python(spec))
    top = 7.0344869100478356  # Phi^-1(1 - 1e-12), where the compiler reads a distribution's practical maximum
    zs = [-9.0, -top, -1.5, 0.0, 0.3, 1.2815515655446004, top, 9.0]
    got = np.array([s.quantile(z) for z in zs])
    want = s.transform(np.array(zs))
    # math.exp and NumPy's exp may differ in the last bit: 2 ulp allowed, nothing more
    np.testing.assert_allclose(got, want, rtol=4.5e-16, atol=0)
    assert all(type(s.quantile(z)) is float for z in zs)
    if s.family == "lognormal":
        # the median (z = 0) is exp(mu), whatever the clip bounds leave of it
        assert s.quantile(0.0) == pytest.approx(min(max(math.exp(s.params["mu"]), s.lo or 0), s.hi or math.inf))
