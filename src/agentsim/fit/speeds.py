"""A model's recorded speeds as a calibrated profile: lognormal TTFT and output speed.

The fitted scenario times a call as agentsim does: ``duration = TTFT + (output + reasoning) / tps``
with ``TTFT`` and ``tps`` lognormal (no prefill term: the recorded durations of coding agents do
not separate it). Two cases:

* **TTFT recorded** (OTel ``time_to_first_chunk``, Langfuse ``completionStartTime``, LangSmith
  ``first_token_time``) for at least half the calls: the TTFT sample is the recorded one, the speed
  sample ``output / (duration - TTFT)`` of the calls that have both; each lognormal is the one
  through the sample's median and 90th percentile.
* **Durations only** (Claude Code, Codex): TTFT and speed are not observed apart, but their mixture
  is: short answers show the TTFT, long ones the speed. The four parameters (median and spread of
  each) are fitted by **simulated quantile matching**: the calls are cut into up to
  :data:`BINS` bins by output tokens; in each, the 10th, 25th, 50th, 75th and 90th percentiles of
  the recorded durations are compared, in log, with those of ``TTFT + output / tps`` simulated for
  the bin's own calls (:data:`DRAWS` fixed normal pairs per call: common random numbers make the
  objective smooth and the fit reproducible; at most :data:`MAX_FIT_CALLS` calls, a seeded
  subsample), and ``scipy.optimize.least_squares`` minimises the squared errors. The start: a
  line through the bins' median durations (intercept = TTFT, slope = 1 / speed).

**Speed by context size.** When the calls' context sizes (their whole input, cached included) span
enough (:func:`agentsim.measure.context_fit.fit_context_speed`, the rule ``calibrate`` uses: log-spaced
bins, medians relative to the smallest context, made monotone, written only for a clear log-log
slope), the profile gets a ``context_speed`` block, and the speeds are refitted as at the smallest
context so the effect is not counted twice:

* TTFT recorded: the per-call speeds ``output / (duration - TTFT)`` and TTFTs (the profile has no
  prefill term, so the whole TTFT is the residual) go to the rule; the lognormals are then refitted
  to ``speed / f_tps(n)`` and ``TTFT / f_ttft(n)``.
* Durations only: each call whose expected decode is at least twice the fitted TTFT gives an implied
  speed ``output / (duration - TTFT median)``; only ``output_tps_x`` is fitted from them, and the
  quantile matching is run again on the outputs scaled to the smallest context (``output / f_tps(n)``:
  a call of ``o`` tokens at ``tps x f`` takes as long as ``o / f`` tokens at ``tps``).

The fit's diagnostics (method, calls, the KS distance between the recorded durations and those the
fitted profile gives the same calls) go in the profile's ``fit`` section.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from agentsim.measure.context_fit import ContextFit, fit_context_speed

__all__ = ["BINS", "DRAWS", "SpeedFit", "fit_speeds"]

BINS = 8
DRAWS = 16
MAX_FIT_CALLS = 3000  # quantile matching uses at most this many calls (a seeded subsample): ~1 s
QUANTILES = (0.10, 0.25, 0.50, 0.75, 0.90)
Z90 = 1.2815515655446004
MIN_CALLS = 5


@dataclass
class SpeedFit:
    ttft_median: float
    ttft_sigma: float
    tps_median: float
    tps_sigma: float
    method: str
    calls: int
    ks: float
    recorded: dict
    fitted: dict
    context: ContextFit | None = None  # speed by context size (None: the calls' inputs were not given)

    def dist(self, which: str) -> dict:
        med, sigma = (self.ttft_median, self.ttft_sigma) if which == "ttft" else (self.tps_median, self.tps_sigma)
        return {"lognormal": {"median": _sig(med), "p90": _sig(med * math.exp(Z90 * max(sigma, 1e-6)))}}


def _sig(x: float) -> float:
    return float(f"{x:.4g}")


def _lognormal_of(sample: np.ndarray) -> tuple[float, float]:
    med = float(np.median(sample))
    p90 = float(np.percentile(sample, 90))
    return med, max(math.log(max(p90, med) / med) / Z90, 1e-6)


def _normals(n: int, seed: int = 20261102) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, DRAWS)), rng.standard_normal((n, DRAWS))


def _simulate(theta, out: np.ndarray, z1: np.ndarray, z2: np.ndarray) -> np.ndarray:
    t_mu, t_ls, r_mu, r_ls = theta
    ttft = np.exp(t_mu + np.exp(t_ls) * z1)
    tps = np.exp(r_mu + np.exp(r_ls) * z2)
    return ttft + out[:, None] / tps


def _bins(out: np.ndarray) -> list[np.ndarray]:
    order = np.argsort(out, kind="stable")
    k = max(1, min(BINS, len(out) // 40))
    return [b for b in np.array_split(order, k) if len(b)]


def _start(out: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """(log TTFT, log sigma, log tps, log sigma) from the medians of the bins: a line through them."""
    xs, ys = [], []
    for b in _bins(out):
        xs.append(float(np.median(out[b])))
        ys.append(float(np.median(dur[b])))
    if len(xs) >= 2 and max(xs) > min(xs):
        slope, icpt = np.polyfit(xs, ys, 1)
    else:
        slope, icpt = float(np.median(dur / np.maximum(out, 1))) / 2, float(np.median(dur)) / 2
    icpt = max(icpt, 0.05 * float(np.median(dur)), 1e-3)
    slope = max(slope, 1e-4)
    return np.array([math.log(icpt), math.log(0.5), math.log(1.0 / slope), math.log(0.3)])


def _quantile_match(out: np.ndarray, dur: np.ndarray) -> np.ndarray:
    from scipy.optimize import least_squares

    if len(out) > MAX_FIT_CALLS:
        pick = np.sort(np.random.default_rng(11).choice(len(out), MAX_FIT_CALLS, replace=False))
        out, dur = out[pick], dur[pick]
    bins = _bins(out)
    qs = np.array(QUANTILES) * 100
    targets = [np.log(np.percentile(dur[b], qs)) for b in bins]
    z1, z2 = _normals(len(out))

    def residuals(theta):
        sim = _simulate(theta, out, z1, z2)
        res = [np.log(np.percentile(sim[b].ravel(), qs)) - t for b, t in zip(bins, targets, strict=True)]
        return np.concatenate(res)

    fit = least_squares(residuals, _start(out, dur), method="trf", x_scale=1.0, max_nfev=400)
    return fit.x


def _ks(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import ks_2samp

    return float(ks_2samp(a, b).statistic)


def fit_speeds(durations, outputs, ttfts, inputs=None) -> SpeedFit | None:
    """The speed profile of one model's calls (``ttfts`` holds None where no TTFT was recorded; ``inputs``:
    each call's whole input, for speed by context size); None when fewer than :data:`MIN_CALLS` calls have
    a positive duration and output tokens (the speed is not observed without them)."""
    dur = np.asarray(durations, dtype=float)
    out = np.asarray(outputs, dtype=float)
    ttft = np.array([np.nan if t is None else t for t in ttfts], dtype=float)
    n = np.full(dur.shape, np.nan) if inputs is None else np.asarray(inputs, dtype=float)
    ok = (dur > 0) & np.isfinite(dur)
    if ok.sum() < MIN_CALLS or (ok & (out > 0)).sum() < MIN_CALLS:  # no output tokens: no speed to see
        return None
    dur, out, ttft, n = dur[ok], out[ok], ttft[ok], n[ok]
    have = np.isfinite(ttft)
    if have.mean() >= 0.5:
        fit = _from_recorded_ttft(dur[have], out[have], ttft[have], n[have], inputs is not None)
        if fit is not None:
            fit.recorded, fit.fitted, fit.ks = _compare(fit, out, dur, n)
            return fit
    return _from_durations(out, dur, n, inputs is not None)


def _from_recorded_ttft(dur, out, ttft, n, with_inputs: bool) -> SpeedFit | None:
    """Lognormals through the recorded TTFTs' and speeds' p50 and p90 (as at the smallest context, with a curve)."""
    t = np.maximum(ttft, 1e-3)
    decode = dur - ttft
    use = (decode > 0) & (out > 0)
    speed, n_speed = (out / np.where(use, decode, 1.0))[use], n[use]
    if len(speed) < MIN_CALLS:
        return None
    ctx = None
    if with_inputs:
        base = np.where(use, t, np.nan)  # the TTFTs of the calls whose speed is known, beside their speeds
        ctx = fit_context_speed(n_speed, speed, base[use])
        speed, t = ctx.normalised_tps(n_speed, speed), ctx.normalised_base(n, t)
    t_med, t_sig = _lognormal_of(t)
    r_med, r_sig = _lognormal_of(speed)
    return SpeedFit(t_med, t_sig, r_med, r_sig, "recorded TTFT; lognormal through p50 and p90", 0, 0.0, {}, {}, ctx)


def _from_durations(out, dur, n, with_inputs: bool) -> SpeedFit:
    """Simulated quantile matching (see the module doc), with the outputs scaled to the smallest context."""
    theta = _quantile_match(out, dur)
    method = (
        f"durations only: simulated quantile matching of duration = TTFT + output / tps ({len(_bins(out))} bins "
        "by output tokens, p10-p90)"
    )
    ctx = None
    if with_inputs:
        t_med, r_med = math.exp(theta[0]), math.exp(theta[2])
        decode_led = (out / r_med >= 2 * t_med) & (dur > t_med)  # calls whose time is mostly decode
        implied = out[decode_led] / (dur[decode_led] - t_med)
        ctx = fit_context_speed(n[decode_led], implied)
        if ctx.block is not None:
            theta = _quantile_match(_scaled_out(ctx, n, out), dur)
            method += "; outputs scaled to the smallest context (context_speed)"
    fit = SpeedFit(*(math.exp(x) for x in theta), method, 0, 0.0, {}, {}, ctx)
    fit.recorded, fit.fitted, fit.ks = _compare(fit, out, dur, n)
    return fit


def _scaled_out(ctx: ContextFit | None, n: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Outputs as at the smallest context: ``output / f_tps(n)`` (the same decode time at the base speed)."""
    if ctx is None or ctx.block is None:
        return out
    return out * (ctx.normalised_tps(n, np.ones_like(out)))


def _compare(fit: SpeedFit, out, dur, n) -> tuple[dict, dict, float]:
    """(recorded, fitted) duration percentiles and their KS distance, the fitted profile run on the same calls."""
    res = _result(
        fit.ttft_median,
        fit.ttft_sigma,
        fit.tps_median,
        fit.tps_sigma,
        fit.method,
        _scaled_out(fit.context, n, out),
        dur,
    )
    fit.calls = res.calls
    return res.recorded, res.fitted, res.ks


def _result(t_med, t_sig, r_med, r_sig, method, out, dur) -> SpeedFit:
    z1, z2 = _normals(len(out), seed=7)
    sim = _simulate((math.log(t_med), math.log(t_sig), math.log(r_med), math.log(r_sig)), out, z1[:, :1], z2[:, :1])
    sim = sim[:, 0]
    qs = (50, 90, 95)
    return SpeedFit(
        t_med,
        t_sig,
        r_med,
        r_sig,
        method,
        len(dur),
        _ks(dur, sim),
        {f"p{q}": _sig(float(np.percentile(dur, q))) for q in qs},
        {f"p{q}": _sig(float(np.percentile(sim, q))) for q in qs},
    )
