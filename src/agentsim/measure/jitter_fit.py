"""Gap jitter from the *middle* of the gap distribution, matched by simulation.

The simulator spaces a call's tokens by weights ``w`` (lognormal, mean 1, CV ``jitter_cv``) and
delivers them in groups (:mod:`agentsim.sim.streaming`); a delivery gap is the sum of its group's
token gaps. A moment estimate of ``jitter_cv`` (the squared CV of the gaps, corrected for the group
sizes) is what the first version used; it is exact for that model but **not robust**: a squared
deviation lets a few long gaps dominate, and a client on a busy machine sees exactly that, a
scheduler hiccup delaying one event by a few ms and bunching the next. Measured against a server of
known jitter 0.6 it gave 0.71-0.79 on quiet runs and 1.40 on a busy one (issue 28).

Here the statistic is the **interquartile range of the log gaps**, each call's gaps divided by their
median first (removing the call's speed): half the gaps can be anything without moving it, and a
hiccup moves at most one gap up and one down. What IQR a given ``jitter_cv`` produces depends on the
group sizes (a group of ``m`` tokens averages ``m`` weights), on which gaps are partial groups, on
how many gaps each call has (its median is estimated from them); rather than approximate that, it is
**simulated** with the measured calls' own structure (each call's tokens per delivery, measured or
drawn from the fitted ``chunk_tokens``), several copies of it, under the simulator's model, with the
same random numbers for every trial value (so the simulated IQR is a smooth, increasing function of
``jitter_cv``), and ``jitter_cv`` is the value whose simulated IQR equals the measured one (Brent's
root finder). This is indirect inference: the estimator is consistent for the model the simulator
draws from, whatever the chunking, and exact to the simulation's error (``SIM_TOKENS`` token draws:
about 0.005 on the CV). A measured IQR below what the groups alone give (``jitter_cv = 0``) fits 0.

**Uncertainty.** ``BOOTSTRAP`` resamples of the calls (seeded) each give a measured IQR, turned into a
``jitter_cv`` through the local slope of the simulated curve; their spread is written as a factor
(lognormal, median 1, ``p90 = exp(1.2816 sd of the log ratios)``, as calibrate writes the TTFT's
and the speed's) and as a 95% interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize

__all__ = ["MIN_GAPS", "JitterFit", "fit_jitter", "log_spread"]

MIN_GAPS = 30  # ordinary gaps needed to fit a jitter (else 0)
SIM_TOKENS = 150_000  # token weights drawn per trial value (copies of the measured calls)
BOOTSTRAP = 100
MAX_CV = 5.0
Z90 = 1.2815515655446004
SEED = 20281
TRIM = 0.05  # share of the pooled log gaps left out at either end


@dataclass(frozen=True)
class JitterFit:
    cv: float
    report: dict
    factor_p90: float | None  # the bootstrap spread as a factor's p90 (None: no spread to state)


def _spread(x: np.ndarray) -> float:
    """The winsorised variance: values beyond the TRIM and 1 - TRIM quantiles count as those quantiles."""
    lo, hi = np.percentile(x, [100 * TRIM, 100 * (1 - TRIM)])
    return float(np.var(np.clip(x, lo, hi)))


def log_spread(gaps: list[np.ndarray], keep: list[np.ndarray]) -> list[np.ndarray]:
    """Each call's kept, positive gaps as ``log(gap / the call's median kept gap)``."""
    out = []
    for g, k in zip(gaps, keep, strict=True):
        x = g[k & (g > 0)]
        if x.size >= 2:
            lx = np.log(x)
            out.append(lx - np.median(lx))
    return out


class _Simulated:
    """Delivery gaps of copies of the measured calls under the simulator's model, for trial jitters."""

    def __init__(self, counts: list[np.ndarray], partial: bool, rng: np.random.Generator):
        n_tok = int(sum(int(c.sum()) for c in counts))
        copies = max(1, math.ceil(SIM_TOKENS / max(n_tok, 1)))
        rows = [c for _ in range(copies) for c in counts]
        width = max(c.size for c in rows)
        idx = np.zeros((len(rows), width), dtype=np.int64)
        valid = np.zeros((len(rows), width), dtype=bool)
        first = np.zeros(sum(int(c.sum()) for c in rows), dtype=bool)  # no gap before a call's first token
        off = 0
        for r, c in enumerate(rows):
            ends = np.cumsum(c) - 1
            ends[0] = 0  # the first group shows with the first token
            idx[r, : c.size], idx[r, c.size :] = off + ends, off + ends[-1]
            valid[r, : c.size] = True
            first[off] = True
            off += int(c.sum())
        gap_ok = valid[:, 1:].copy()
        if partial:  # the first and the last gap span partial groups: left out, as in the measurement
            gap_ok[np.arange(len(rows)), np.maximum(valid.sum(axis=1) - 2, 0)] = False
            gap_ok[:, 0] = False
        self.idx, self.ok, self.first = idx, gap_ok, first
        self.z = rng.standard_normal(off)

    def spread(self, cv: float) -> float:
        """The pooled IQR of the log gaps (each call over its median) at this ``jitter_cv``."""
        s = math.sqrt(math.log1p(cv * cv))
        w = np.exp(s * self.z - 0.5 * s * s)
        w[self.first] = 0.0
        t = np.cumsum(w)[self.idx]
        lg = np.log(np.where(self.ok, t[:, 1:] - t[:, :-1], 1.0))
        srt = np.sort(np.where(self.ok, lg, np.inf), axis=1)  # each row's kept log gaps first, in order
        m = self.ok.sum(axis=1)
        rows = np.arange(len(m))
        lo, hi = np.maximum((m - 1) // 2, 0), np.maximum(m // 2, 0)
        med = np.where(m > 0, 0.5 * (srt[rows, lo] + srt[rows, np.minimum(hi, srt.shape[1] - 1)]), 0.0)
        return _spread((lg - med[:, None])[self.ok])


def fit_jitter(
    gaps: list[np.ndarray], keep: list[np.ndarray], counts: list[np.ndarray], partial: bool, bootstrap: bool = True
) -> JitterFit:
    """``jitter_cv`` from the calls' ``gaps`` (``keep``: the ordinary gaps to use; ``counts``: each call's
    tokens per delivery, for the simulation; ``partial``: groups of several tokens, whose first and last
    gaps are partial and left out of ``keep`` already; ``bootstrap``: also its uncertainty)."""
    rows = log_spread(gaps, keep)
    used = int(sum(r.size for r in rows))
    if used < MIN_GAPS:
        return JitterFit(0.0, {"cv": 0.0, "gaps_used": used, "note": f"fewer than {MIN_GAPS} ordinary gaps"}, None)
    measured = _spread(np.concatenate(rows))
    sim = _Simulated(counts, partial, np.random.default_rng(SEED))
    at0 = sim.spread(0.0)
    if measured <= at0:
        cv, slope = 0.0, None
    elif measured >= sim.spread(MAX_CV):
        cv, slope = MAX_CV, None
    else:
        cv = float(optimize.brentq(lambda c: sim.spread(c) - measured, 0.0, MAX_CV, xtol=1e-4))
        h = max(0.02, 0.05 * cv)
        slope = (sim.spread(cv + h) - sim.spread(max(cv - h, 0.0))) / (cv + h - max(cv - h, 0.0))
    report = {
        "cv": cv,
        "method": "winsorised variance of log(gap / call median), matched by simulating the calls' groups",
        "gaps_used": used,
        "spread_log_gap": {"measured": measured, "with_no_jitter": at0},
    }
    factor = _bootstrap(rows, measured, cv, slope, report) if bootstrap else None
    return JitterFit(cv, report, factor)


def _bootstrap(rows: list[np.ndarray], measured: float, cv: float, slope, report: dict) -> float | None:
    """Resample the calls; each resample's IQR through the local slope; the spread into ``report``."""
    if slope is None or not slope > 0 or cv <= 0:
        return None
    rng = np.random.default_rng(SEED + 1)
    n = len(rows)
    cvs = []
    for _ in range(BOOTSTRAP):
        pick = rng.integers(0, n, n)
        b = _spread(np.concatenate([rows[i] for i in pick]))
        cvs.append(max(cv + (b - measured) / slope, 1e-6))
    arr = np.array(cvs)
    lo, hi = np.percentile(arr, [2.5, 97.5])
    sd = float(np.std(np.log(arr / cv), ddof=1))
    factor = math.exp(Z90 * sd)
    report["ci95"] = [float(lo), float(hi)]
    report["se"] = float(np.std(arr, ddof=1))
    report["bootstrap"] = BOOTSTRAP
    return factor
