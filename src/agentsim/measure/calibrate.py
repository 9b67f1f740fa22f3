"""Calibration: from measured requests to a model speed profile.

agentsim times a call as ``ttft + output / output_tps`` with
``ttft = base + uncached_input / prefill_tps`` (DESIGN.md §4). Calibration fits
those three quantities to a table of measured requests (see
:mod:`agentsim.traces.measurements`):

1. **TTFT.** A robust linear regression (Huber M-estimator, ``statsmodels`` RLM)
   of measured TTFT on uncached input tokens. The slope is ``1 / prefill_tps``.
   Because the base TTFT does not depend on the input size, the slope is
   estimated without bias whatever the shape of the base distribution; the
   Huber loss keeps a few queueing spikes from tilting it. The base TTFTs
   ``ttft - slope x uncached_input`` are then fitted with a lognormal: location and
   scale of their logarithms by Huber's proposal 2, so that a few bases pushed near
   zero by the slope's error do not inflate the spread. When the input sizes barely vary
   (coefficient of variation below :data:`MIN_INPUT_CV`), or the slope is not
   clearly positive (below :data:`MIN_SLOPE_T` standard errors), the prefill
   term is dropped and the lognormal is fitted to the whole TTFT; the profile
   says so.
2. **Output speed.** Per-request ``tps = output_tokens / (latency - ttft)`` is
   fitted by maximum likelihood with a lognormal and with a gamma (both with two
   parameters); the one with the higher likelihood is kept.
3. **Goodness of fit.** The Kolmogorov-Smirnov statistic (largest distance
   between the measured and the fitted CDF) and measured vs fitted p50/p90/p95,
   for TTFT (the fitted TTFT is the mixture of the base lognormal shifted by each
   request's prefill time) and for TPS. The statistic is descriptive: with
   parameters estimated from the same data its usual p-value does not apply.
4. **Inter-token jitter** (when the files have every gap): how uneven the gaps
   within a request are, reported under ``fit.itl``; and the ``stream:`` description the
   simulator uses (chunks, gap jitter, a stall process; :mod:`agentsim.measure.stream_fit`), with
   its rule, family choice, goodness of fit and bootstrap uncertainty under ``fit.stream``. The
   pause time the stall process accounts for is taken out of each request's decode time before
   step 2, since the simulator adds stalls on top of the output speed. Files without per-gap
   timings give no ``stream:``.
5. **Where the fit holds** (:mod:`agentsim.measure.measured_range`): the input and output token
   ranges and the concurrency the requests were measured at, and the terms dropped for
   lack of spread. The profile records them under ``measured:``; ``validate`` and ``run``
   warn when a scenario goes outside them.
7. **Parameter uncertainty.** :data:`BOOTSTRAP` bootstrap resamples of the usable requests
   (seeded, so the same files give the same profile), each refitted: the base TTFT median
   (step 1), the prefill speed and the mean output speed. Their spread, as factors on the
   estimates, is written as the profile's ``uncertainty:`` (lognormal factors of median 1 whose
   p90 is ``exp(1.2816 x sd of the log ratios)``), which ``uncertainty: parameters`` uses
   (:mod:`agentsim.sim.param_uncertainty`). The factors are treated as independent.
6. **Queueing** (:mod:`agentsim.measure.queueing`): a wait that shows in the time to response
   headers growing with the requests in flight is taken out of TTFT before step 1; TTFT
   that still grows with them is flagged. Either is said in the notes and the profile.
8. **Provider conditions** (:mod:`agentsim.measure.conditions_fit`): when the requests were sent
   over enough time windows (``--window``, default 10 minutes), the between-window spread of the log
   base TTFT and log speed becomes the profile's ``conditions:`` block (a factor per simulated run),
   and steps 1-2 are refitted with each window's effect taken out so the spread is not counted twice.
9. **Speed by context size** (:mod:`agentsim.measure.context_fit`): when the requests' whole inputs
   span at least 4x and the speed (or base TTFT) clearly changes with it, the profile gets a
   ``context_speed:`` block (medians per log-spaced bin of context size, relative to the smallest,
   made monotone), and steps 1-2 are refitted to the requests brought to the smallest context.
   Requests that do not span context sizes leave the profile as it was.

Failed and incomplete requests are counted and left out. Fewer than
:data:`MIN_REQUESTS` usable requests is an error: the fits would be noise.
"""

from __future__ import annotations

import datetime as dt
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from agentsim.measure.conditions_fit import DEFAULT_WINDOW_S, ConditionsFit, fit_conditions
from agentsim.measure.context_fit import ContextFit, fit_context_speed
from agentsim.measure.measured_range import measured_range
from agentsim.measure.queueing import find_queueing
from agentsim.measure.stream_fit import StreamFit, fit_table
from agentsim.plan.distributions import Z90
from agentsim.traces.measurements import rows_summary

__all__ = [
    "MIN_INPUT_CV",
    "MIN_REQUESTS",
    "MIN_SLOPE_T",
    "Calibration",
    "CalibrationError",
    "TpsFit",
    "TtftFit",
    "calibrate",
    "profile_document",
    "select_model",
    "write_profile",
]

MIN_REQUESTS = 20  # usable requests needed for a fit
MIN_INPUT_CV = 0.10  # input sizes must vary at least this much (sd / mean) to fit a prefill rate
MIN_SLOPE_T = 3.0  # the prefill slope must be this many standard errors above zero
MIXTURE_POINTS = 400  # input sizes (quantiles) used to represent the fitted TTFT mixture
PERCENTILES = (50, 90, 95)
BOOTSTRAP = 20  # bootstrap resamples for the parameter uncertainty
CONSTANT_RTOL = 1e-6  # measured values whose range is below this share of their median are one constant


class CalibrationError(ValueError):
    """The measurements cannot be calibrated (too few usable requests, ambiguous model)."""


@dataclass(frozen=True)
class TtftFit:
    median_s: float  # base TTFT lognormal: median and log-sd
    sigma: float
    prefill_tps: float | None  # None when the prefill term was dropped
    slope_s_per_token: float  # 0 when dropped
    slope_se: float | None
    input_cv: float | None
    prefill_note: str
    nonpositive_base: int  # requests whose TTFT is below their fitted prefill time (left out of the base fit)

    @property
    def p90_s(self) -> float:
        return self.median_s * math.exp(Z90 * self.sigma)

    @property
    def mu(self) -> float:
        return math.log(self.median_s)


@dataclass(frozen=True)
class TpsFit:
    family: str  # lognormal | gamma
    params: dict[str, float]  # lognormal: median, sigma; gamma: shape, scale
    loglik: dict[str, float]

    def dist(self):
        if self.family == "constant":  # a point mass, as a lognormal of negligible spread (for CDFs and plots)
            return stats.lognorm(1e-9, scale=self.params["value"])
        if self.family == "lognormal":
            return stats.lognorm(self.params["sigma"], scale=self.params["median"])
        return stats.gamma(self.params["shape"], scale=self.params["scale"])

    @property
    def mean(self) -> float:
        return float(self.dist().mean())

    @property
    def median(self) -> float:
        return float(self.dist().median())

    def spec(self) -> dict[str, Any]:
        """The distribution in scenario vocabulary."""
        if self.family == "constant":
            return _sig(self.params["value"])
        if self.family == "lognormal":
            med = self.params["median"]
            return {"lognormal": {"median": _sig(med), "p90": _sig(med * math.exp(Z90 * self.params["sigma"]))}}
        d = self.dist()
        return {"gamma": {"mean": _sig(d.mean()), "sd": _sig(d.std())}}


@dataclass(frozen=True)
class Calibration:
    ttft: TtftFit
    tps: TpsFit
    goodness: dict[str, Any]
    counts: dict[str, Any]
    itl: dict[str, Any] | None
    model: str | None
    notes: tuple[str, ...] = field(default=())
    measured: dict[str, Any] | None = None  # agentsim.measure.measured_range: where the fit holds
    uncertainty: dict[str, Any] | None = None  # bootstrap spread of the estimates, as factor distributions
    conditions: ConditionsFit | None = None  # agentsim.measure.conditions_fit: the shared, per-window part
    stream: StreamFit | None = None  # the stream description fitted from per-gap timings (step 4)
    context: ContextFit | None = None  # agentsim.measure.context_fit: speed by context size (step 9)

    def ttft_cdf(self, t, uncached_input) -> np.ndarray:
        """Fitted CDF of TTFT over requests with these uncached input sizes."""
        return _mixture_cdf(np.asarray(t, dtype=float), self.ttft, _shifts(self.ttft, uncached_input))


# --------------------------------------------------------------------------- fitting


def select_model(table: pd.DataFrame, model: str | None) -> pd.DataFrame:
    """The rows of one model: ``model`` if given, else the only model in the table.

    Rows whose file names no model (llmperf, a CSV without a ``model`` column) are kept either way.
    """
    names = sorted({str(m) for m in table["model"].dropna()})
    if model is not None:
        if not names:
            return table
        if model not in names:
            raise CalibrationError(f"model '{model}' is not in the measurements; they hold: {', '.join(names)}")
        return table[(table["model"] == model) | table["model"].isna()]
    if len(names) > 1:
        raise CalibrationError(
            f"the measurements hold {len(names)} models ({', '.join(names)}); choose one with --model"
        )
    return table


def calibrate(table: pd.DataFrame, model: str | None = None, window_s: float = DEFAULT_WINDOW_S) -> Calibration:
    """Fit TTFT (base + prefill) and output TPS to the usable rows of a measurement table.

    ``window_s``: the send-time windows in which provider conditions are estimated (step 8)."""
    table = select_model(table, model)
    counts = rows_summary(table)
    use = table[table["usable"]]
    if len(use) < MIN_REQUESTS:
        found = ", ".join(f"{k}: {v}" for k, v in counts["excluded_because"].items()) or "nothing left out"
        raise CalibrationError(
            f"only {len(use)} usable requests (of {counts['requests']}; {counts['failed']} failed, "
            f"{counts['incomplete']} incomplete: {found}); at least {MIN_REQUESTS} are needed for a fit"
        )
    names = sorted({str(m) for m in use["model"].dropna()})
    queue = find_queueing(use)
    if queue.removed_s.any():  # the wait for headers is queueing, not time to first token
        use = use.assign(ttft_s=use["ttft_s"].to_numpy(float) - queue.removed_s)
    stream = fit_table(use)
    if stream.pause_s.any():  # stalls are simulated on top of the speed: not part of it
        decode = use["decode_s"].to_numpy(float)
        kept = np.where(stream.pause_s < decode, decode - stream.pause_s, decode)
        use = use.assign(tps=use["output_tokens"].to_numpy(float) / kept)
    measured = measured_range(use, dropped=None)
    ttft = fit_ttft(use["ttft_s"].to_numpy(float), use["uncached_input_tokens"].to_numpy(float))
    use, ttft, conditions = _shared_part(use, ttft, window_s)
    use, ttft, context = _context_part(use, ttft)
    tps = fit_tps(use["tps"].to_numpy(float))
    goodness = {
        "ttft": _ttft_goodness(use, ttft),
        "output_tps": _goodness(use["tps"].to_numpy(float), tps.dist(), tps.params.get("value")),
    }
    return Calibration(
        ttft=ttft,
        tps=tps,
        goodness=goodness,
        counts=counts,
        itl=_itl_summary(use),
        model=model or (names[0] if names else None),
        measured=_with_queueing(measured, ttft, queue),
        uncertainty=_bootstrap(use, ttft),
        notes=tuple(queue.warnings()),
        conditions=conditions,
        stream=stream,
        context=context,
    )


def _shared_part(use: pd.DataFrame, ttft: TtftFit, window_s: float) -> tuple[pd.DataFrame, TtftFit, ConditionsFit]:
    """Step 8: the provider conditions; with a block, the requests centred on their windows and TTFT refitted."""
    x = use["uncached_input_tokens"].to_numpy(float)
    prefill_s = ttft.slope_s_per_token * np.where(np.isfinite(x), x, 0.0)
    y = use["ttft_s"].to_numpy(float)
    cond = fit_conditions(use["start_s"].to_numpy(float), y - prefill_s, use["tps"].to_numpy(float), window_s, _sig)
    if cond.block is None:
        return use, ttft, cond
    use = use.assign(ttft_s=cond.centred_ttft(y, prefill_s), tps=cond.centred_tps(use["tps"].to_numpy(float)))
    return use, fit_ttft(use["ttft_s"].to_numpy(float), x), cond


def _context_part(use: pd.DataFrame, ttft: TtftFit) -> tuple[pd.DataFrame, TtftFit, ContextFit]:
    """Step 9: speed by context size; with a curve, the requests brought to the smallest context and TTFT refitted."""
    n = use["input_tokens"].to_numpy(float)
    x = use["uncached_input_tokens"].to_numpy(float)
    prefill_s = ttft.slope_s_per_token * np.where(np.isfinite(x), x, 0.0)
    y = use["ttft_s"].to_numpy(float)
    tps = use["tps"].to_numpy(float)
    ctx = fit_context_speed(n, tps, y - prefill_s)
    if ctx.block is None:
        return use, ttft, ctx
    use = use.assign(ttft_s=prefill_s + ctx.normalised_base(n, y - prefill_s), tps=ctx.normalised_tps(n, tps))
    return use, fit_ttft(use["ttft_s"].to_numpy(float), x), ctx


def _bootstrap(use: pd.DataFrame, ttft: TtftFit, n: int = BOOTSTRAP) -> dict[str, Any] | None:
    """Factor distributions of the base TTFT median, prefill speed and mean output speed (see step 7)."""
    y = use["ttft_s"].to_numpy(float)
    x = use["uncached_input_tokens"].to_numpy(float)
    tps = use["tps"].to_numpy(float)
    rng = np.random.default_rng(20260)
    logs: dict[str, list[float]] = {"ttft_x": [], "output_tps_x": [], "prefill_tps_x": []}
    for _ in range(n):
        i = rng.integers(0, y.size, y.size)
        try:
            with warnings.catch_warnings():  # a resample of near-equal values makes Huber's scale divide by 0
                warnings.simplefilter("ignore", RuntimeWarning)
                b = fit_ttft(y[i], x[i])
        except CalibrationError:
            continue
        logs["ttft_x"].append(math.log(b.median_s / ttft.median_s))
        logs["output_tps_x"].append(math.log(float(np.mean(tps[i])) / float(np.mean(tps))))
        if ttft.prefill_tps is not None and b.prefill_tps is not None:
            logs["prefill_tps_x"].append(math.log(b.prefill_tps / ttft.prefill_tps))
    out: dict[str, Any] = {}
    for key, vals in logs.items():
        if len(vals) >= 2:
            p90 = _sig(math.exp(Z90 * float(np.std(vals, ddof=1))))
            out[key] = {"lognormal": {"median": 1, "p90": p90}} if p90 > 1 else 1  # below 1e-4: no spread
    return out or None


def _with_queueing(measured: dict[str, Any] | None, ttft: TtftFit, queue) -> dict[str, Any] | None:
    out = dict(measured or {})
    if ttft.prefill_tps is None:
        out["dropped"] = ["prefill_tps"]
    block = queue.block()
    if block is not None:
        out["queueing"] = {k: v for k, v in block.items() if v is not None}
    return out or None


def fit_ttft(ttft_s: np.ndarray, uncached_input: np.ndarray) -> TtftFit:
    """TTFT = lognormal base + slope x uncached input (slope = 1 / prefill_tps), robustly."""
    y = np.asarray(ttft_s, dtype=float)
    x = np.asarray(uncached_input, dtype=float)
    known = np.isfinite(x)
    slope, se, cv = 0.0, None, None
    if known.sum() < MIN_REQUESTS:
        note = "input token counts are unknown, so the prefill term is left out; the base TTFT includes prefill"
    else:
        xs, ys = x[known], y[known]
        mean = float(np.mean(xs))
        cv = float(np.std(xs) / mean) if mean > 0 else 0.0
        if cv < MIN_INPUT_CV:
            note = (
                f"input sizes vary too little (coefficient of variation {cv:.3f} < {MIN_INPUT_CV}) to "
                f"separate prefill from the base TTFT: prefill_tps left out, so the base TTFT includes the "
                f"prefill of about {mean:,.0f} uncached input tokens"
            )
        else:
            slope, se = _robust_slope(xs, ys)
            if not slope > 0 or slope < MIN_SLOPE_T * se:
                note = (
                    f"no clearly positive prefill effect (slope {slope * 1e3:.3g} ± {se * 1e3:.2g} s per "
                    f"1k input tokens, needs {MIN_SLOPE_T:g} standard errors): prefill_tps left out, "
                    "the base TTFT includes prefill"
                )
                slope = 0.0
            else:
                note = (
                    f"robust (Huber) regression of TTFT on uncached input tokens: "
                    f"{slope * 1e3:.4g} ± {se * 1e3:.2g} s per 1k tokens"
                )
    base = y - slope * np.where(known, x, 0.0) if slope > 0 else y
    positive = base > 0
    if not positive.any():
        raise CalibrationError(
            "every request's time to first token is at or below its fitted prefill time, so no base TTFT is left"
        )
    mu, sigma = _robust_log_location_scale(np.log(base[positive]))
    if not sigma > CONSTANT_RTOL:  # the same TTFT every time (a mock server): a constant, no spread
        sigma = 0.0
    return TtftFit(
        median_s=math.exp(mu),
        sigma=sigma,
        prefill_tps=(1.0 / slope) if slope > 0 else None,
        slope_s_per_token=slope,
        slope_se=se,
        input_cv=cv,
        prefill_note=note,
        nonpositive_base=int((~positive).sum()),
    )


def _robust_log_location_scale(logs: np.ndarray) -> tuple[float, float]:
    """Mean and sd of log base TTFTs by Huber's proposal 2 (robust joint location and scale).

    A base TTFT is a measured TTFT minus its fitted prefill time; when the slope is a little too
    steep, a request with a small base and a long prompt gets a base near zero, whose logarithm
    would inflate a plain standard deviation. Huber's estimator bounds that influence, at about
    94% (location) and 72% (scale) of the plain estimators' efficiency on clean lognormal data.
    """
    import statsmodels.api as sm

    if logs.size < 3 or float(np.ptp(logs)) == 0.0:
        return float(np.mean(logs)), float(np.std(logs, ddof=1)) if logs.size > 1 else 0.0
    try:
        with np.errstate(divide="ignore", invalid="ignore"):
            loc, scale = sm.robust.scale.Huber()(logs)
    except (ValueError, FloatingPointError):  # no convergence (e.g. most values equal): plain estimates
        return float(np.mean(logs)), float(np.std(logs, ddof=1))
    if not (np.isfinite(loc) and np.isfinite(scale) and scale > 0):  # over half the values equal: MAD is 0
        return float(np.mean(logs)), float(np.std(logs, ddof=1))
    return float(loc), float(scale)


def _robust_slope(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    import statsmodels.api as sm

    scale = 1000.0  # regress on thousands of tokens: better conditioned
    design = sm.add_constant(x / scale, has_constant="add")
    with warnings.catch_warnings():  # a perfect fit (a mock server) is fine, not a convergence problem
        warnings.simplefilter("ignore", category=sm.tools.sm_exceptions.ConvergenceWarning)
        res = sm.RLM(y, design, M=sm.robust.norms.HuberT()).fit()
    return float(res.params[1]) / scale, float(res.bse[1]) / scale


def fit_tps(tps: np.ndarray) -> TpsFit:
    """Lognormal and gamma by maximum likelihood (location 0); keep the likelier.

    Speeds that do not vary (a mock server, a fixed-rate replay) have no spread to fit: the
    result is the ``constant`` family, written to the profile as a plain number."""
    x = np.asarray(tps, dtype=float)
    if float(np.ptp(x)) <= CONSTANT_RTOL * float(np.median(x)):
        return TpsFit("constant", {"value": float(np.median(x))}, {})
    s, _, scale_ln = stats.lognorm.fit(x, floc=0)
    a, _, scale_g = stats.gamma.fit(x, floc=0)
    ll = {
        "lognormal": float(np.sum(stats.lognorm.logpdf(x, s, scale=scale_ln))),
        "gamma": float(np.sum(stats.gamma.logpdf(x, a, scale=scale_g))),
    }
    if ll["gamma"] > ll["lognormal"]:
        return TpsFit("gamma", {"shape": float(a), "scale": float(scale_g)}, ll)
    return TpsFit("lognormal", {"median": float(scale_ln), "sigma": float(s)}, ll)


# --------------------------------------------------------------------------- goodness of fit


def _shifts(fit: TtftFit, uncached_input) -> np.ndarray:
    """Prefill times of a representative set of input sizes (quantiles), for the TTFT mixture."""
    if fit.slope_s_per_token <= 0:
        return np.zeros(1)
    x = np.asarray(uncached_input, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return np.zeros(1)
    k = min(x.size, MIXTURE_POINTS)
    return fit.slope_s_per_token * np.quantile(x, (np.arange(k) + 0.5) / k)


def _mixture_cdf(t: np.ndarray, fit: TtftFit, shifts: np.ndarray) -> np.ndarray:
    t = np.atleast_1d(t).astype(float)
    out = np.empty(t.shape)
    flat, res = t.ravel(), out.ravel()
    for i in range(0, flat.size, 2048):
        d = flat[i : i + 2048, None] - shifts[None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            z = (np.log(np.where(d > 0, d, 1.0)) - fit.mu) / fit.sigma if fit.sigma > 0 else None
            cdf = special.ndtr(z) if z is not None else (d >= fit.median_s).astype(float)
        res[i : i + 2048] = np.where(d > 0, cdf, 0.0).mean(axis=1)
    return out


def _mixture_quantile(p: float, fit: TtftFit, shifts: np.ndarray) -> float:
    lo = float(shifts.min())
    hi = float(shifts.max()) + fit.median_s * math.exp(8 * max(fit.sigma, 1e-3))
    if fit.sigma <= 0:
        return float(np.quantile(shifts + fit.median_s, p))
    return float(optimize.brentq(lambda t: _mixture_cdf(np.array([t]), fit, shifts)[0] - p, lo, hi, xtol=1e-9))


def _ttft_goodness(use: pd.DataFrame, fit: TtftFit) -> dict[str, Any]:
    y = use["ttft_s"].to_numpy(float)
    shifts = _shifts(fit, use["uncached_input_tokens"].to_numpy(float))
    if fit.sigma == 0 and not shifts.any():  # a constant TTFT: the CDF is one step
        ks = _point_mass_ks(y, fit.median_s)
    else:
        ks = stats.kstest(y, lambda t: _mixture_cdf(t, fit, shifts)).statistic
    measured = {f"p{p}": float(np.percentile(y, p)) for p in PERCENTILES}
    fitted = {f"p{p}": _mixture_quantile(p / 100, fit, shifts) for p in PERCENTILES}
    return {"ks": float(ks), "measured": measured, "fitted": fitted}


def _point_mass_ks(x: np.ndarray, value: float) -> float:
    """The KS distance between measured values and a point mass at ``value``: the share on either side."""
    tol = CONSTANT_RTOL * abs(value)
    return float(max(np.mean(x < value - tol), np.mean(x > value + tol)))


def _goodness(x: np.ndarray, dist, constant: float | None = None) -> dict[str, Any]:
    ks = stats.kstest(x, dist.cdf).statistic if constant is None else _point_mass_ks(x, constant)
    return {
        "ks": float(ks),
        "measured": {f"p{p}": float(np.percentile(x, p)) for p in PERCENTILES},
        "fitted": {f"p{p}": float(dist.ppf(p / 100)) for p in PERCENTILES},
    }


def _itl_summary(use: pd.DataFrame) -> dict[str, Any] | None:
    itl = use["itl_s"].to_numpy(float)
    itl = itl[np.isfinite(itl)]
    if itl.size == 0:
        return None
    out: dict[str, Any] = {"mean_gap_s": {f"p{p}": float(np.percentile(itl, p)) for p in (50, 95)}}
    cvs, ratios, gaps_all = [], [], []
    for gaps in use["gaps_s"]:
        if not isinstance(gaps, list | tuple | np.ndarray) or len(gaps) < 3:
            continue
        g = np.asarray(gaps, dtype=float)
        m = float(np.mean(g))
        if m > 0:
            cvs.append(float(np.std(g) / m))
            ratios.append(g / m)
            gaps_all.append(g)
    if cvs:
        r = np.concatenate(ratios)
        out["jitter"] = {
            "requests": len(cvs),
            "cv_within_request_median": float(np.median(cvs)),
            "gap_over_request_mean": {f"p{p}": float(np.percentile(r, p)) for p in (5, 50, 95, 99)},
            "share_of_gaps_below_1ms": float(np.mean(np.concatenate(gaps_all) < 1e-3)),
        }
    return out


# --------------------------------------------------------------------------- the profile file


def _sig(x: float, digits: int = 4) -> float:
    """``x`` rounded to ``digits`` significant digits (profiles are read by people)."""
    x = float(x)
    if x == 0 or not math.isfinite(x):
        return x
    return float(round(x, digits - 1 - math.floor(math.log10(abs(x)))))


def _tidy(obj: Any) -> Any:
    """Diagnostics as plain data for a profile: numbers to 4 significant digits, NaN and infinities as null."""
    if isinstance(obj, dict):
        return {str(k): _tidy(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_tidy(v) for v in obj]
    if isinstance(obj, bool | str) or obj is None:
        return obj
    if isinstance(obj, int | np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        return _sig(float(obj)) if math.isfinite(obj) else None  # a profile holds finite numbers only: none here
    return obj


def profile_document(
    cal: Calibration,
    name: str,
    sources: list[str],
    formats: list[str],
    date: dt.date,
    date_source: str,
    notes: tuple[str, ...] = (),
    tool: str = "agentsim calibrate",
) -> dict[str, Any]:
    """The profile (``agentsim.model.profiles`` format, ``kind: calibrated``) with a ``fit:`` section."""
    t = cal.ttft
    ttft_spec: Any = (
        {"lognormal": {"median": _sig(t.median_s), "p90": _sig(t.p90_s)}} if t.sigma > 0 else _sig(t.median_s)
    )
    tps_spec = cal.tps.spec()
    c = cal.counts
    doc: dict[str, Any] = {
        "profile": name,
        "description": f"{cal.model or name}: calibrated from {c['usable']} measured requests",
        "kind": "calibrated",
        "source": f"{tool} of {', '.join(sources)} ({', '.join(sorted(set(formats)))}; "
        f"{c['requests']} requests, {c['usable']} usable)",
        "date": date,
        "ttft": ttft_spec,
    }
    if t.prefill_tps is not None:
        doc["prefill_tps"] = _sig(t.prefill_tps)
    doc["output_tps"] = tps_spec
    fitted_stream = cal.stream is not None and cal.stream.stream is not None
    if fitted_stream:
        doc["stream"] = cal.stream.stream
    if cal.measured is not None:
        doc["measured"] = cal.measured
    if cal.uncertainty is not None:
        doc["uncertainty"] = cal.uncertainty
    shared = cal.conditions if cal.conditions is not None and cal.conditions.block is not None else None
    if shared is not None:
        doc["conditions"] = shared.block
    context = cal.context if cal.context is not None and cal.context.block is not None else None
    if context is not None:
        doc["context_speed"] = context.block
    stream_note = [cal.stream.note[0].upper() + cal.stream.note[1:] + "."] if fitted_stream else []
    doc["notes"] = " ".join(
        [
            t.prefill_note + ".",
            *stream_note,
            *(f"Warning: {w}." for w in cal.notes),
            *([shared.note + "."] if shared else []),
            *([f"Speed by context size: {context.note}."] if context else []),
        ]
    )
    doc["fit"] = _fit_section(cal, sources, formats, date_source, notes, shared, fitted_stream)
    if context is not None:
        doc["fit"]["context_speed"] = _tidy(context.details())
    return doc


def _fit_section(cal: Calibration, sources, formats, date_source: str, notes, shared, fitted_stream: bool) -> dict:
    """The profile's ``fit:`` section: what was read and how each quantity was fitted (diagnostics)."""
    t = cal.ttft
    c = cal.counts
    g = cal.goodness
    fit = {
        "model": cal.model,
        "files": list(sources),
        "formats": sorted(set(formats)),
        "date_source": date_source,
        "requests": c,
        "ttft": {
            "model": "ttft = base + uncached_input / prefill_tps; base lognormal",
            "base": {"median_s": t.median_s, "p90_s": t.p90_s, "sigma": t.sigma},
            "prefill": {
                "kept": t.prefill_tps is not None,
                "prefill_tps": t.prefill_tps,
                "slope_s_per_1k_tokens": t.slope_s_per_token * 1e3,
                "slope_se_s_per_1k_tokens": t.slope_se * 1e3 if t.slope_se is not None else None,
                "input_tokens_cv": t.input_cv,
                "note": t.prefill_note,
            },
            "requests_below_prefill_time": t.nonpositive_base,
            **g["ttft"],
        },
        "output_tps": {
            "definition": "output_tokens / (latency - ttft)",
            "chosen": cal.tps.family,
            "loglik": cal.tps.loglik,
            **g["output_tps"],
        },
        "ks_note": "KS statistic = largest gap between measured and fitted CDF (descriptive; "
        "parameters were fitted to the same data)",
    }
    if cal.itl is not None:
        fit["itl"] = cal.itl
    if shared is not None:
        fit["conditions"] = shared.details()
    if fitted_stream:
        fit["stream"] = {
            "requests": cal.stream.requests,
            "gaps": cal.stream.gaps,
            "note": cal.stream.note,
            **cal.stream.report,
        }
    if notes:
        fit["notes"] = list(notes)
    return _tidy(fit)


def write_profile(path: str | Path, doc: dict[str, Any], inputs=()) -> Path:
    """Write a profile document as YAML, atomically; ``path`` must be none of ``inputs`` (the files read)."""
    import yaml

    from agentsim.viz.outdir import write_file

    path = Path(path)

    class _Dumper(yaml.SafeDumper):
        pass

    def _list(dumper, data):  # short lists of numbers on one line, lists of sentences as blocks
        flow = all(isinstance(v, int | float) or (isinstance(v, str) and len(v) < 40) for v in data)
        return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)

    _Dumper.add_representer(list, _list)
    text = yaml.dump(doc, Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=None, width=110)
    return write_file(path, lambda p: p.write_text(text, encoding="utf-8"), "-o", inputs=inputs)
