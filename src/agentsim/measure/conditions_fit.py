"""Provider conditions from measurements spread over time: the part of TTFT and speed that calls share.

A provider has slow and fast spells: requests sent close together see the same load. ``calibrate``
separates that shared part from the per-request spread with a one-way random-effects analysis of
variance (method of moments), once for the log base TTFT (TTFT minus the fitted prefill time) and
once for the log output speed.

**Windowing.** Each usable request with a send time ``start_s`` falls in window
``floor(start_s / w)`` (``w`` = ``--window``, default :data:`DEFAULT_WINDOW_S` = 10 minutes; windows
are aligned to multiples of ``w`` on the measurements' clock). Windows holding fewer than
:data:`MIN_PER_WINDOW` requests are left out; fewer than :data:`MIN_WINDOWS` windows left means no
estimate (the profile then gets no ``conditions`` block, and calibrate says why).

**Estimator.** With ``k`` windows, ``n_i`` requests in window ``i`` (``N`` in all), ``y_ij`` the
log values, ``ȳ_i`` a window's mean and ``ȳ`` the grand mean::

    MSB = Σ n_i (ȳ_i − ȳ)² / (k − 1)
    MSW = Σ Σ (y_ij − ȳ_i)² / (N − k)
    n0  = (N − Σ n_i² / N) / (k − 1)
    σ_b² = max(0, (MSB − MSW) / n0)          shared between requests of a window
    σ_w² = MSW                                per request

and the standard error of σ_b² from the mean squares' chi-square spread (exact for equal ``n_i``)::

    Var(σ_b²) ≈ (2 MSB² / (k − 1) + 2 MSW² / (N − k)) / n0²

The profile's ``conditions`` block is ``{lognormal: {median: 1, p90: exp(1.2816 σ_b)}}`` for
``ttft_x`` and ``output_tps_x`` (a plain 1 where σ_b is 0): one factor per simulated run, which is
what a run spread over minutes sees of the provider's spell.

**No double counting.** The per-request TTFT and speed distributions must then hold only the spread
within a window, so calibrate fits them to the requests with their window's effect taken out: each
log value minus the best linear predictor of its window's effect,
``â_i = n_i σ_b² / (n_i σ_b² + σ_w²) × (ȳ_i − ȳ)``
(:meth:`ConditionsFit.centred_ttft`, :meth:`ConditionsFit.centred_tps`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agentsim.plan.distributions import Z90

__all__ = [
    "DEFAULT_WINDOW_S",
    "MIN_PER_WINDOW",
    "MIN_WINDOWS",
    "Anova",
    "ConditionsFit",
    "anova",
    "fit_conditions",
]

DEFAULT_WINDOW_S = 600.0
MIN_WINDOWS = 5  # windows needed for a between-window variance worth writing
MIN_PER_WINDOW = 2  # requests a window needs to say anything about the spread within it


@dataclass(frozen=True)
class Anova:
    """One-way random-effects analysis of variance of log values grouped by window."""

    windows: int
    requests: int
    msb: float
    msw: float
    n0: float
    sigma_between: float
    sigma_within: float
    se_var_between: float  # standard error of sigma_between**2
    effects: np.ndarray  # per request: the shrunken effect of its window (the BLUP), 0 when sigma_between is 0

    def summary(self) -> dict[str, Any]:
        return {
            "windows": self.windows,
            "requests": self.requests,
            "msb": self.msb,
            "msw": self.msw,
            "n0": self.n0,
            "sigma_between": self.sigma_between,
            "sigma_within": self.sigma_within,
            "se_var_between": self.se_var_between,
        }


def anova(y: np.ndarray, group: np.ndarray) -> Anova:
    """The estimator of the module docstring for values ``y`` in groups ``group`` (at least 2 groups)."""
    y = np.asarray(y, dtype=float)
    labels, g = np.unique(group, return_inverse=True)
    k, n_all = len(labels), y.size
    n = np.bincount(g, minlength=k).astype(float)
    means = np.bincount(g, weights=y, minlength=k) / n
    grand = float(y.mean())
    msb = float(np.sum(n * (means - grand) ** 2) / (k - 1))
    msw = float(np.sum((y - means[g]) ** 2) / (n_all - k))
    n0 = float((n_all - np.sum(n**2) / n_all) / (k - 1))
    var_b = max(0.0, (msb - msw) / n0)
    se = math.sqrt((2 * msb**2 / (k - 1) + 2 * msw**2 / (n_all - k)) / n0**2)
    if var_b > 0:
        shrink = n * var_b / (n * var_b + msw) if msw > 0 else np.ones(k)
        effects = (shrink * (means - grand))[g]
    else:
        effects = np.zeros(n_all)
    return Anova(k, n_all, msb, msw, n0, math.sqrt(var_b), math.sqrt(msw), se, effects)


@dataclass(frozen=True)
class ConditionsFit:
    """What the windows say: the ``conditions`` block (or None) and why."""

    window_s: float
    block: dict[str, Any] | None
    note: str
    ttft: Anova | None = None
    tps: Anova | None = None
    rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # positions of the rows used

    def centred_ttft(self, ttft_s: np.ndarray, prefill_s: np.ndarray) -> np.ndarray:
        """TTFTs with their window's shared effect taken out of the base (the prefill time kept)."""
        return self._centre(ttft_s, prefill_s, self.ttft)

    def centred_tps(self, tps: np.ndarray) -> np.ndarray:
        """Output speeds with their window's shared effect taken out."""
        return self._centre(tps, np.zeros(len(tps)), self.tps)

    def _centre(self, values: np.ndarray, offset: np.ndarray, a: Anova | None) -> np.ndarray:
        out = np.array(values, dtype=float, copy=True)
        if a is None or a.sigma_between == 0 or self.rows.size == 0:
            return out
        base = out[self.rows] - offset[self.rows]
        out[self.rows] = offset[self.rows] + base * np.exp(-a.effects)
        return out

    def details(self) -> dict[str, Any]:
        """For the profile's ``fit.conditions``: the windowing and both analyses."""
        out: dict[str, Any] = {
            "method": "one-way random-effects ANOVA of log values by send-time window (method of moments)",
            "window_s": self.window_s,
        }
        if self.ttft is not None:
            out["log_base_ttft"] = self.ttft.summary()
        if self.tps is not None:
            out["log_output_tps"] = self.tps.summary()
        return out


def _factor(sigma: float, sig) -> Any:
    p90 = sig(math.exp(Z90 * sigma))
    return {"lognormal": {"median": 1, "p90": p90}} if p90 > 1 else 1


def fit_conditions(
    start_s: np.ndarray,
    base_ttft_s: np.ndarray,
    tps: np.ndarray,
    window_s: float = DEFAULT_WINDOW_S,
    sig=lambda x: x,
) -> ConditionsFit:
    """Between-window spread of log base TTFT and log speed; ``sig`` rounds the numbers written."""
    start = np.asarray(start_s, dtype=float)
    base = np.asarray(base_ttft_s, dtype=float)
    speed = np.asarray(tps, dtype=float)
    ok = np.isfinite(start) & np.isfinite(base) & (base > 0) & np.isfinite(speed) & (speed > 0)
    minutes = f"{window_s / 60:g}-minute"
    if not ok.any():
        return ConditionsFit(window_s, None, "no provider conditions: the measurements record no send times")
    win = np.floor(start / window_s)
    labels, counts = np.unique(win[ok], return_counts=True)
    kept = set(labels[counts >= MIN_PER_WINDOW].tolist())
    rows = np.flatnonzero(ok & np.isin(win, list(kept)))
    if len(kept) < MIN_WINDOWS:
        return ConditionsFit(
            window_s,
            None,
            f"no provider conditions: the requests fall in {len(kept)} {minutes} windows with at least "
            f"{MIN_PER_WINDOW} requests each, and at least {MIN_WINDOWS} are needed to tell slow spells from "
            "per-request spread (measure over a longer time, or pass a shorter --window)",
        )
    g = win[rows]
    a_ttft = anova(np.log(base[rows]), g)
    a_tps = anova(np.log(speed[rows]), g)
    block = {"ttft_x": _factor(a_ttft.sigma_between, sig), "output_tps_x": _factor(a_tps.sigma_between, sig)}
    note = (
        f"provider conditions from {a_ttft.windows} {minutes} windows ({a_ttft.requests} requests): "
        f"between-window log-sd {a_ttft.sigma_between:.3g} for the base TTFT "
        f"(within {a_ttft.sigma_within:.3g}) and {a_tps.sigma_between:.3g} for the output speed "
        f"(within {a_tps.sigma_within:.3g}); the per-request distributions are fitted with each "
        "window's effect taken out"
    )
    return ConditionsFit(window_s, block, note, a_ttft, a_tps, rows)
