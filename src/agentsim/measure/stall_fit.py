"""Stall lengths: which distribution family, fitted to pauses that are only seen above a limit.

A stall is seen only when its gap stands out of the call's ordinary gaps (the rule is in
:mod:`agentsim.measure.stream_fit`): pause ``j`` is measured only because it exceeded its call's
detection limit ``c_j``. The measured pauses are therefore a sample from the length distribution
**left-truncated** at ``c_j``, and each family is fitted by maximising the truncated likelihood

    ℓ(θ) = Σ_j [ log f(x_j; θ) − log S(c_j; θ) ]          (S = 1 − F, the survival function)

which recovers the whole distribution (short pauses included) when the family is right, and is the
plain likelihood when every limit is far below the pauses (``S(c) ≈ 1``, the usual case: a pause a
person notices is several times longer than any ordinary gap).

**Candidates** are the scenario vocabulary's continuous families (DESIGN.md §3): ``exponential
{mean}`` (one parameter; its truncated MLE is closed-form, ``mean = avg(x − c)``, since it has no
memory), ``uniform {low, high}``, ``gamma {mean, sd}`` and ``lognormal {median, p90}`` (two each;
gamma and lognormal by Nelder–Mead on the log-parameters, from the untruncated log-moments or moments). The uniform's
ends are the unbiased ``min − R/(n−1)`` and ``max + R/(n−1)`` (``R`` the range), not the sample's
own extremes, whose likelihood would flatter it by about two nats. ``constant`` is chosen *before*
the comparison when the pauses hardly vary (coefficient of variation below :data:`CONSTANT_CV`:
what timing noise alone gives a fixed pause), or when there are fewer than :data:`MIN_FOR_FAMILY`
of them; its value is the mean pause, so the fit adds back the pause time it took out.

**Criterion**: the Bayesian information criterion ``BIC = −2ℓ + k ln n`` (``k`` parameters, ``n``
pauses); the lowest wins. BIC is consistent: with enough pauses it picks the true family when it is
a candidate, and it does not prefer a two-parameter family for a one-parameter truth. The report
gives every candidate's BIC, the winner's Kolmogorov–Smirnov distance (between the truncated fitted
CDF and the pauses, through ``u_j = (F(x_j) − F(c_j)) / S(c_j)``, uniform when the fit is right;
descriptive, since the parameters came from the same pauses) and its measured vs fitted quantiles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special, stats

__all__ = ["CONSTANT_CV", "MIN_FOR_FAMILY", "LengthFit", "fit_lengths"]

CONSTANT_CV = 0.05  # pauses varying less than this (sd / mean) are one constant length
MIN_FOR_FAMILY = 10  # fewer pauses: a constant (their mean); no family can be told apart
Z90 = 1.2815515655446004
QUANTILES = (50, 90, 99)


@dataclass(frozen=True)
class LengthFit:
    """The chosen length distribution, as a frozen scipy distribution and in scenario vocabulary."""

    family: str
    dist: object | None  # scipy frozen distribution; None for constant
    value: float  # constant: the length
    report: dict  # criterion, candidates, goodness of fit

    def sf(self, c: np.ndarray) -> np.ndarray:
        """P(pause > c): the share of pauses a limit ``c`` lets through."""
        c = np.asarray(c, dtype=np.float64)
        return (self.value > c).astype(float) if self.dist is None else self.dist.sf(c)

    @property
    def mean(self) -> float:
        return self.value if self.dist is None else float(self.dist.mean())

    def partial_mean(self, c: np.ndarray) -> np.ndarray:
        """``E[X; X < c]``: the pause time per stall that stays below the limit ``c`` (unseen)."""
        c = np.asarray(c, dtype=np.float64)
        if self.dist is None:
            return np.where(self.value < c, self.value, 0.0)
        return _partial_mean(self.family, self.dist, c)

    def spec(self, sig) -> float | dict:
        """The length in scenario vocabulary (``sig`` rounds to significant digits)."""
        if self.dist is None:
            return sig(self.value)
        d = self.dist
        if self.family == "exponential":
            return {"exponential": {"mean": sig(d.mean())}}
        if self.family == "uniform":
            lo, hi = d.support()
            return {"uniform": {"low": sig(lo), "high": sig(hi)}}
        if self.family == "gamma":
            return {"gamma": {"mean": sig(d.mean()), "sd": sig(d.std())}}
        med, s = float(d.median()), float(d.kwds["s"])
        return {"lognormal": {"median": sig(med), "p90": sig(med * math.exp(Z90 * s))}}


def _partial_mean(family: str, d, c: np.ndarray) -> np.ndarray:
    if family == "uniform":
        lo, hi = d.support()
        top = np.clip(c, lo, hi)
        return (top**2 - lo**2) / (2 * (hi - lo))
    if family == "lognormal":
        s, scale = d.kwds["s"], d.kwds["scale"]
        with np.errstate(divide="ignore"):
            z = (np.log(np.maximum(c, 1e-300)) - math.log(scale) - s * s) / s
        return float(d.mean()) * special.ndtr(z)
    a = d.kwds.get("a", 1.0)  # gamma (exponential: a = 1): E[X; X < c] = mean * F_{a+1}(c)
    return float(d.mean()) * stats.gamma.cdf(c, a + 1, scale=d.kwds["scale"])


# --------------------------------------------------------------------------- the candidates


def _exponential(x, c):
    return stats.expon(scale=max(float(np.mean(x - np.minimum(c, x))), 1e-9)), 1


def _uniform(x, c):
    n, lo, hi = x.size, float(x.min()), float(x.max())
    pad = (hi - lo) / (n - 1)
    lo, hi = max(lo - pad, 0.0), hi + pad
    return stats.uniform(loc=lo, scale=max(hi - lo, 1e-9)), 2


def _nll_lognormal(theta, x, lx, c):
    mu, s = theta[0], math.exp(theta[1])
    logpdf = -lx - theta[1] - 0.5 * math.log(2 * math.pi) - (lx - mu) ** 2 / (2 * s * s)
    with np.errstate(divide="ignore"):
        logsf = special.log_ndtr(-(np.log(np.maximum(c, 1e-300)) - mu) / s)
    return -float(np.sum(logpdf - logsf))


def _nll_gamma(theta, x, lx, c):
    a, scale = math.exp(theta[0]), math.exp(theta[1])
    logpdf = (a - 1) * lx - x / scale - special.gammaln(a) - a * theta[1]
    with np.errstate(divide="ignore"):
        logsf = np.log(special.gammaincc(a, np.maximum(c, 0.0) / scale))
    return -float(np.sum(logpdf - logsf))


def _truncated_mle(nll, start: np.ndarray, x, c) -> np.ndarray:
    """Log-parameters maximising the truncated likelihood (Nelder-Mead from ``start``)."""
    lx = np.log(x)

    def f(theta):
        if np.any(np.abs(theta) > 30):
            return np.inf
        v = nll(theta, x, lx, c)
        return v if math.isfinite(v) else np.inf

    res = optimize.minimize(f, start, method="Nelder-Mead", options={"xatol": 1e-7, "fatol": 1e-10, "maxiter": 2000})
    return res.x if np.isfinite(res.fun) and res.fun <= f(start) else start


def _lognormal(x, c):
    logs = np.log(x)
    start = np.array([float(np.mean(logs)), math.log(max(float(np.std(logs)), 1e-3))])
    t = _truncated_mle(_nll_lognormal, start, x, c)
    return stats.lognorm(s=math.exp(t[1]), scale=math.exp(t[0])), 2


def _gamma(x, c):
    m, v = float(np.mean(x)), float(np.var(x))
    start = np.array([math.log(m * m / v), math.log(v / m)])  # the method of moments
    t = _truncated_mle(_nll_gamma, start, x, c)
    return stats.gamma(a=math.exp(t[0]), scale=math.exp(t[1])), 2


CANDIDATES = {"exponential": _exponential, "uniform": _uniform, "gamma": _gamma, "lognormal": _lognormal}


def _loglik(d, x, c) -> float:
    with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
        v = float(np.sum(d.logpdf(x) - d.logsf(c)))
    return v if math.isfinite(v) else -math.inf


# --------------------------------------------------------------------------- choosing


def fit_lengths(pauses, limits) -> LengthFit:
    """The length distribution of ``pauses`` (seconds), each seen only above its ``limit`` (see module doc)."""
    x = np.asarray(pauses, dtype=np.float64)
    c = np.minimum(np.asarray(limits, dtype=np.float64), x)  # a pause is above its limit by definition
    n, mean = x.size, float(np.mean(x))
    cv = float(np.std(x, ddof=1)) / mean if n > 1 and mean > 0 else 0.0
    if n < MIN_FOR_FAMILY or cv < CONSTANT_CV:
        why = (
            f"fewer than {MIN_FOR_FAMILY} pauses: their mean, no family"
            if n < MIN_FOR_FAMILY
            else f"the pauses vary by {cv:.3f} (sd / mean) < {CONSTANT_CV}: one constant length"
        )
        return LengthFit("constant", None, mean, {"chosen": "constant", "why": why, "pauses": n})
    cands = {}
    for name, fit in CANDIDATES.items():
        d, k = fit(x, c)
        ll = _loglik(d, x, c)
        cands[name] = {"dist": d, "k": k, "loglik": ll, "bic": -2 * ll + k * math.log(n)}
    best = min(cands, key=lambda f: cands[f]["bic"])
    d = cands[best]["dist"]
    report = {
        "chosen": best,
        "criterion": "lowest BIC = -2 loglik + k ln n, the likelihood truncated at each pause's detection limit",
        "pauses": n,
        "bic": {f: v["bic"] for f, v in cands.items()},
        **_goodness(d, x, c),
    }
    return LengthFit(best, d, float(d.mean()), report)


def _goodness(d, x: np.ndarray, c: np.ndarray) -> dict:
    """KS distance of the truncated fit (probability integral transform) and measured vs fitted quantiles."""
    with np.errstate(divide="ignore", invalid="ignore"):
        fc = d.cdf(c)
        u = np.clip((d.cdf(x) - fc) / np.maximum(1 - fc, 1e-300), 0, 1)
    ks = float(stats.kstest(u, "uniform").statistic)
    c0 = float(np.median(c))
    f0 = float(d.cdf(c0))
    fitted = {f"p{q}": float(d.ppf(f0 + (1 - f0) * q / 100)) for q in QUANTILES}  # above the median limit
    return {
        "ks": ks,
        "measured": {f"p{q}": float(np.percentile(x, q)) for q in QUANTILES},
        "fitted_above_limit": fitted,
        "share_below_limit": f0,
    }
