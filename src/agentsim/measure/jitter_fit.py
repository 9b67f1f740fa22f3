"""Gap jitter, told apart from the timing noise of the measurement, by matching simulated statistics.

The simulator spaces a call's tokens by weights ``w`` (lognormal, mean 1, CV ``jitter_cv``) and
delivers them in groups (:mod:`agentsim.sim.streaming`); a delivery gap is the sum of its group's
token gaps. A moment estimate of ``jitter_cv`` (the squared CV of the gaps, corrected for the group
sizes) was the first version; it is exact for that model but counts *everything* uneven as jitter.
Measured against a loopback server of known jitter 0.6 it gave 0.71-0.79 on quiet runs and 1.40 on
a busy one (issue 28), for two reasons:

* **outliers**: a scheduler hiccup delays one event by several ms and bunches the next; a squared
  deviation lets a few of those dominate. Here every statistic is computed on the log gaps (each
  call's over its median, removing the call's speed) *winsorised* at their 5th and 95th percentiles
  (values beyond count as those percentiles), so a few per cent of gaps can be anything;
* **timing noise**: every event is seen a little late, by the server's sleep overshoot and the
  client's wake-up delay (``e_j >= 0``), so a measured gap is ``g_j + e_j − e_{j−1}``. That widens
  every gap, and leaves a fingerprint the model's gaps do not have: consecutive gaps are negatively
  correlated (a late event makes its gap longer and the next one shorter), while the model's gaps,
  sums over disjoint tokens, are nearly independent.

So two statistics are matched: ``S = `` the winsorised variance of the log gaps, and ``ρ = `` their
lag-1 autocorrelation (consecutive ordinary gaps of a call). They are simulated with the measured
calls' own structure (each call's tokens per delivery, measured or drawn from the fitted
``chunk_tokens``; its mean gap; the partial first and last gaps left out when groups hold several
tokens; several copies of the calls, ``SIM_TOKENS`` token draws), under the simulator's model plus a
timing noise that makes each event late by an exponential time of mean ``τ`` (an event seen before
the previous one is seen with it: a gap of 0, left out of both statistics, as in the measurement).
The same random numbers serve every trial value, so ``S`` and ``ρ`` are smooth functions of
``(jitter_cv, τ)``. For each ``τ``, ``jitter_cv(τ)`` makes the simulated ``S`` equal the measured one
(Brent's root finder); then ``τ`` makes ``ρ`` equal too (Brent again; ``τ = 0`` when the measured
gaps are no more anti-correlated than the model's). This is indirect inference: consistent for the
simulator's model whatever the chunking, exact to the simulation's error (about 0.005 on the CV).
``τ`` is reported as the rig's timing noise; it is *not* part of the profile (the simulator draws
what the provider does, not what a client's clock saw). A measured spread below what the groups
alone give fits ``jitter_cv = 0``.

**Uncertainty.** ``BOOTSTRAP`` resamples of the calls (seeded) each give measured statistics, mapped to
``(jitter_cv, τ)`` through the local inverse of the simulated map; the spread of ``jitter_cv`` is
written as a factor (lognormal, median 1, ``p90 = exp(1.2816 sd of the log ratios)``, as calibrate
writes the TTFT's and the speed's) and as a 95% interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize

__all__ = ["MIN_GAPS", "JitterFit", "fit_jitter"]

MIN_GAPS = 30  # ordinary gaps needed to fit a jitter (else 0)
SIM_TOKENS = 80_000  # token weights drawn per trial value (copies of the measured calls)
BOOTSTRAP = 100
MAX_CV = 5.0
TRIM = 0.05  # share of the pooled log gaps winsorised at either end
Z90 = 1.2815515655446004
SEED = 20281


@dataclass(frozen=True)
class JitterFit:
    cv: float
    report: dict
    factor_p90: float | None  # the bootstrap spread as a factor's p90 (None: no spread to state)


def _centred(g: np.ndarray, use: np.ndarray) -> np.ndarray:
    """``log(gap / its row's median)`` over the positive cells ``use`` of a matrix of gaps (rows: calls), else NaN."""
    use = use & (g > 0)
    lg = np.log(np.where(use, g, 1.0))
    srt = np.sort(np.where(use, lg, np.inf), axis=1)
    m = use.sum(axis=1)
    rows = np.arange(len(m))
    lo, hi = np.maximum((m - 1) // 2, 0), np.minimum(np.maximum(m // 2, 0), srt.shape[1] - 1)
    med = np.where(m > 0, 0.5 * (srt[rows, lo] + srt[rows, hi]), 0.0)
    return np.where(use, lg - med[:, None], np.nan)


def _pooled(r: np.ndarray) -> tuple[float, float]:
    """``(S, ρ)``: winsorised variance and lag-1 autocorrelation of a NaN-padded matrix of centred log gaps."""
    vals = r[~np.isnan(r)]
    lo, hi = np.percentile(vals, [100 * TRIM, 100 * (1 - TRIM)])
    w = np.clip(r, lo, hi) - float(np.mean(np.clip(vals, lo, hi)))
    var = float(np.nanmean(w * w))
    lag = w[:, 1:] * w[:, :-1]
    rho = float(np.nanmean(lag) / var) if var > 0 and np.any(~np.isnan(lag)) else 0.0
    return var, rho


class _Simulated:
    """Measured gaps of copies of the calls under the simulator's model plus timing noise, for trial values."""

    def __init__(self, counts: list[np.ndarray], scale: np.ndarray, partial: bool, rng: np.random.Generator):
        n_tok = int(sum(int(c.sum()) for c in counts))
        copies = max(2, math.ceil(SIM_TOKENS / max(n_tok, 1)))  # simulation error below the sampling error
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
        self.gap = valid[:, 1:].copy()  # the gaps that exist
        use = self.gap.copy()
        if partial:  # the first and the last gap span partial groups: left out, as in the measurement
            use[np.arange(len(rows)), np.maximum(valid.sum(axis=1) - 2, 0)] = False
            use[:, 0] = False
        self.idx, self.use, self.first = idx, use, first
        self.scale = np.tile(scale, copies)[:, None]
        self.z = rng.standard_normal(off)
        self.late = rng.standard_exponential(idx.shape)
        self.last: tuple = (None, (0.0, 0.0))

    def statistics(self, cv: float, tau: float) -> tuple[float, float]:
        """The simulated ``(S, ρ)`` at this jitter and timing noise (the last answer is kept)."""
        key = (float(cv), float(tau))
        if key != self.last[0]:
            self.last = (key, self._statistics(*key))
        return self.last[1]

    def _statistics(self, cv: float, tau: float) -> tuple[float, float]:
        s = math.sqrt(math.log1p(cv * cv))
        w = np.exp(s * self.z - 0.5 * s * s)
        w[self.first] = 0.0
        t = np.cumsum(w)[self.idx]
        g = np.where(self.gap, t[:, 1:] - t[:, :-1], 0.0)
        mean = g.sum(axis=1, keepdims=True) / np.maximum(self.gap.sum(axis=1, keepdims=True), 1)
        g = g * (self.scale / np.where(mean > 0, mean, 1.0))  # each call at its measured mean gap
        if tau > 0:
            d = np.concatenate([np.zeros((len(g), 1)), np.cumsum(g, axis=1)], axis=1) + tau * self.late
            g = np.diff(np.maximum.accumulate(d, axis=1), axis=1)
        return _pooled(_centred(g, self.use))


def _matrix(gaps: list[np.ndarray], keep: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The calls' gaps as a zero-padded matrix, and the cells to use."""
    width = max(g.size for g in gaps)
    g = np.zeros((len(gaps), width))
    use = np.zeros((len(gaps), width), dtype=bool)
    for i, (x, k) in enumerate(zip(gaps, keep, strict=True)):
        g[i, : x.size], use[i, : x.size] = x, k
    return g, use


def _cv_at(sim: _Simulated, s_obs: float, tau: float) -> float:
    """The ``jitter_cv`` whose simulated spread ``S`` at timing noise ``τ`` is ``s_obs`` (0 or MAX_CV at the ends)."""
    f = lambda c: sim.statistics(c, tau)[0] - s_obs  # noqa: E731
    if f(0.0) >= 0:
        return 0.0
    if f(MAX_CV) <= 0:
        return MAX_CV
    return float(optimize.brentq(f, 0.0, MAX_CV, xtol=2e-4))


def _solve(sim: _Simulated, target: tuple[float, float], gap_s: float) -> tuple[float, float]:
    """``(jitter_cv, τ)`` whose simulated ``(S, ρ)`` equal ``target``. ``τ = 0`` when the measured gaps are no
    more anti-correlated than the model's at that spread; else Newton steps on ``(jitter_cv, τ²)`` (the noise
    acts through its variance) from a moment guess, and where they reach a bound or do not converge, the
    nested root finding of :func:`_solve_nested`."""
    t = np.array(target)
    cv = _cv_at(sim, t[0], 0.0)
    rho0 = sim.statistics(cv, 0.0)[1]
    if rho0 <= t[1]:
        return cv, 0.0
    x = np.array([max(cv, 0.01), max((rho0 - t[1]) * t[0], 1e-8) * gap_s * gap_s])  # (cv, v = τ²)
    tol = np.array([1e-4 * max(t[0], 1e-3), 1e-4])
    for _ in range(8):
        f = np.array(sim.statistics(x[0], math.sqrt(x[1]))) - t
        if np.all(np.abs(f) <= tol):
            return float(x[0]), math.sqrt(float(x[1]))
        h = np.array([max(0.01, 0.02 * x[0]), 0.05 * x[1]])
        jac = np.column_stack(
            [(np.array(sim.statistics(x[0] + h[0], math.sqrt(x[1]))) - t - f) / h[0],
             (np.array(sim.statistics(x[0], math.sqrt(x[1] + h[1]))) - t - f) / h[1]]
        )  # fmt: skip
        if abs(np.linalg.det(jac)) < 1e-12:
            break
        x = x + np.linalg.solve(jac, -f)
        if not (0 < x[0] < MAX_CV and 0 < x[1] < gap_s * gap_s):
            break
    return _solve_nested(sim, t, gap_s)


def _solve_nested(sim: _Simulated, t: np.ndarray, gap_s: float) -> tuple[float, float]:
    """The robust, slower way: for each ``τ`` the ``jitter_cv`` that matches ``S`` (0 once the noise alone
    explains it, at ``τ_all``); then the ``τ`` in ``[0, τ_all]`` that matches ``ρ`` (a bound when none does)."""

    def noise_only(tau: float) -> float:
        return sim.statistics(0.0, tau)[0] - t[0]

    if noise_only(0.0) >= 0:  # the groups alone give the measured spread: neither jitter nor noise
        return 0.0, 0.0
    tau_all = gap_s  # unless a lateness below a whole gap explains the spread alone
    if noise_only(gap_s) >= 0:
        tau_all = float(optimize.brentq(noise_only, 0.0, gap_s, xtol=1e-4 * gap_s))

    def excess(tau: float) -> float:  # > 0: the simulated gaps are less anti-correlated than the measured
        return sim.statistics(_cv_at(sim, t[0], tau), tau)[1] - t[1]

    if excess(tau_all) > 0:
        return _cv_at(sim, t[0], tau_all), tau_all
    tau = float(optimize.brentq(excess, 0.0, tau_all, xtol=1e-3 * tau_all))
    return _cv_at(sim, t[0], tau), tau


def fit_jitter(
    gaps: list[np.ndarray],
    keep: list[np.ndarray],
    counts: list[np.ndarray],
    partial: bool,
    bootstrap: bool = True,
) -> JitterFit:
    """``jitter_cv`` from the calls' ``gaps`` (``keep``: the ordinary gaps to use; ``counts``: each call's
    tokens per delivery, for the simulation; ``partial``: groups of several tokens, whose first and last
    gaps are partial and left out of ``keep`` already; ``bootstrap``: also its uncertainty)."""
    g, use = _matrix(gaps, keep)
    r = _centred(g, use)
    used = int(np.count_nonzero(~np.isnan(r)))
    if used < MIN_GAPS:
        return JitterFit(0.0, {"cv": 0.0, "gaps_used": used, "note": f"fewer than {MIN_GAPS} ordinary gaps"}, None)
    measured = _pooled(r)
    scale = np.array([float(np.mean(x[k])) if k.any() else float(np.mean(x)) for x, k in zip(gaps, keep, strict=True)])
    sim = _Simulated(counts, scale, partial, np.random.default_rng(SEED))
    cv, tau = _solve(sim, measured, gap_s=float(np.median(scale)))
    fitted = sim.statistics(cv, tau)
    report = {
        "cv": cv,
        "method": "winsorised variance and lag-1 autocorrelation of log(gap / call median), matched by "
        "simulating the calls' groups with a timing noise",
        "gaps_used": used,
        "timing_noise_s": tau,
        "statistics": {
            "measured": list(measured),
            "fitted": list(fitted),
            "with_no_jitter": list(sim.statistics(0, 0)),
        },
    }
    factor = _bootstrap(sim, r, measured, (cv, tau), report) if bootstrap and cv > 0 else None
    return JitterFit(cv, report, factor)


def _bootstrap(sim: _Simulated, r: np.ndarray, measured, sol: tuple[float, float], report: dict) -> float | None:
    """Resample the calls; map each resample's statistics through the local inverse of the simulated map."""
    cv, tau = sol
    h_c, h_t = max(0.02, 0.05 * cv), max(1e-5, 0.1 * tau)
    base = np.array(sim.statistics(cv, tau))
    dc = (np.array(sim.statistics(cv + h_c, tau)) - base) / h_c
    if tau > 0:
        dt = (np.array(sim.statistics(cv, tau + h_t)) - base) / h_t
        jac = np.column_stack([dc, dt])
    else:  # τ at its bound: only the spread moves the estimate
        jac = None
        if not dc[0] > 0:
            return None
    rng = np.random.default_rng(SEED + 1)
    n, cvs = len(r), []
    for _ in range(BOOTSTRAP):
        b = np.array(_pooled(r[rng.integers(0, n, n)])) - np.array(measured)
        step = np.linalg.lstsq(jac, b, rcond=None)[0][0] if jac is not None else b[0] / dc[0]  # dc[0] > 0
        cvs.append(max(cv + step, 1e-6))
    arr = np.array(cvs)
    lo, hi = np.percentile(arr, [2.5, 97.5])
    report["ci95"] = [float(lo), float(hi)]
    report["se"] = float(np.std(arr, ddof=1))
    report["bootstrap"] = BOOTSTRAP
    return math.exp(Z90 * float(np.std(np.log(arr / cv), ddof=1)))
