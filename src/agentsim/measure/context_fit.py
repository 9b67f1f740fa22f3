"""Speed by context size from measurements: the ``context_speed`` block of a calibrated profile.

``calibrate`` (measured requests) and ``fit`` (recorded agent sessions) both call
:func:`fit_context_speed` with each request's context size ``n`` (its whole input: cached or not),
its output speed and, where known, its base TTFT (TTFT minus its fitted prefill time). The method:

1. **Span.** Only requests with a positive, known ``n`` and a positive speed count. Their context
   sizes must span a factor of :data:`MIN_SPAN` (4) between the 5th and 95th percentiles; otherwise
   nothing is fitted (and nothing changes in the profile).
2. **Is there an effect?** A robust (Huber) regression of ``log tps`` on ``log n`` (and of
   ``log base TTFT`` on ``log n``); the curve is written only when the slope is at least
   :data:`MIN_SLOPE_T` (3) standard errors from zero. Noise never becomes a curve.
3. **Bins.** The span from the smallest to the largest ``n`` is cut into up to :data:`MAX_BINS`
   log-spaced bins (about one per doubling); a bin with fewer than :data:`MIN_PER_BIN` requests is
   left out. Fewer than two bins left: no curve.
4. **Factors.** Per bin, the median speed (and median base TTFT) relative to the first bin's; then
   made monotone with the bins' request counts as weights (pool-adjacent-violators: speeds
   non-increasing, TTFTs non-decreasing with context) and divided by the first bin's smoothed value,
   so the first factor is 1. The knots are the bins' median context sizes (``tokens``), and
   between them the simulator interpolates as it always does (:func:`agentsim.sim.rules.context_factor`:
   flat before the first knot and after the last).
5. **No double counting.** The profile's ``output_tps`` and ``ttft`` must then describe the smallest
   context, so the caller refits them to ``tps / f_tps(n)`` and ``base / f_ttft(n)``
   (:meth:`ContextFit.normalised_tps`, :meth:`ContextFit.normalised_base`).

The bins (their context ranges, requests and medians) and the slopes are reported in the profile's
``fit.context_speed`` section.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agentsim.plan.context_speed import Piecewise
from agentsim.sim.rules import context_factor_array

__all__ = ["MAX_BINS", "MIN_PER_BIN", "MIN_SLOPE_T", "MIN_SPAN", "ContextFit", "fit_context_speed"]

MIN_SPAN = 4.0  # the 95th percentile of context sizes over the 5th
MIN_PER_BIN = 10  # requests a bin needs for its median
MAX_BINS = 6
MIN_SLOPE_T = 3.0  # standard errors of the log-log slope for an effect worth writing


@dataclass(frozen=True)
class ContextFit:
    """What :func:`fit_context_speed` found: the profile block (None: nothing to write), and why."""

    block: dict[str, list] | None
    note: str
    bins: list[dict[str, Any]] = field(default_factory=list)
    slopes: dict[str, dict[str, float]] = field(default_factory=dict)

    def _curve(self, key: str) -> Piecewise | None:
        if self.block is None or key not in self.block:
            return None
        return Piecewise(tuple(float(t) for t in self.block["tokens"]), tuple(float(v) for v in self.block[key]))

    def normalised_tps(self, n: np.ndarray, tps: np.ndarray) -> np.ndarray:
        """Speeds as at the smallest context: ``tps / f_tps(n)`` (unchanged without a speed curve)."""
        curve = self._curve("output_tps_x")
        return tps if curve is None else tps / context_factor_array(_known(n), curve)

    def normalised_base(self, n: np.ndarray, base: np.ndarray) -> np.ndarray:
        """Base TTFTs as at the smallest context: ``base / f_ttft(n)`` (unchanged without a TTFT curve)."""
        curve = self._curve("ttft_x")
        return base if curve is None else base / context_factor_array(_known(n), curve)

    def details(self) -> dict[str, Any]:
        """The profile's ``fit.context_speed`` section (numbers to 4 significant digits: read by people)."""
        slopes = {k: {q: _sig(v) for q, v in s.items()} for k, s in self.slopes.items()}
        bins = [{k: (_sig(v) if isinstance(v, float) else v) for k, v in b.items()} for b in self.bins]
        return {"method": _METHOD, "slopes": slopes, "bins": bins, "note": self.note}


_METHOD = (
    "log-spaced bins of context size (a request's whole input); per bin the median speed and base TTFT over "
    "the first bin's, made monotone (pool-adjacent-violators, weighted by requests); written when the "
    f"robust log-log slope is {MIN_SLOPE_T:g} standard errors from zero"
)


def _sig(x: float) -> float:
    return float(f"{x:.4g}") if math.isfinite(x) else x


def _known(n: np.ndarray) -> np.ndarray:
    return np.where(np.isfinite(n), n, 0.0)


def fit_context_speed(n, tps, base_ttft=None) -> ContextFit:
    """Fit the factors by context size (see the module doc). ``base_ttft``: None when unknown."""
    n = np.asarray(n, dtype=float)
    tps = np.asarray(tps, dtype=float)
    base = np.full(n.shape, np.nan) if base_ttft is None else np.asarray(base_ttft, dtype=float)
    ok = np.isfinite(n) & (n > 0) & np.isfinite(tps) & (tps > 0)
    if ok.sum() < 2 * MIN_PER_BIN:
        return ContextFit(None, f"fewer than {2 * MIN_PER_BIN} requests with a known context size")
    n, tps, base = n[ok], tps[ok], base[ok]
    lo, hi = np.percentile(n, [5, 95])
    span = hi / lo
    if span < MIN_SPAN:
        return ContextFit(None, f"context sizes span {span:.2g}x (5th to 95th percentile), less than {MIN_SPAN:g}x")
    slopes = {"output_tps": _slope(n, tps)}
    has_base = np.isfinite(base) & (base > 0)
    if has_base.sum() >= 2 * MIN_PER_BIN:
        slopes["ttft"] = _slope(n[has_base], base[has_base])
    clear = {k: abs(s["t"]) >= MIN_SLOPE_T for k, s in slopes.items()}
    bins = _bins(n)
    if len(bins) < 2 or not any(clear.values()):
        why = "too few requests per bin" if len(bins) < 2 else "no clear change with context size"
        return ContextFit(None, _note(span, slopes, why), _bin_rows(bins, n, tps, base), slopes)
    block: dict[str, list] = {"tokens": [round(float(np.median(n[b]))) for b in bins]}
    if clear["output_tps"]:
        block["output_tps_x"] = _factors([tps[b] for b in bins], decreasing=True)
    if clear.get("ttft"):
        block["ttft_x"] = _factors([base[b][np.isfinite(base[b]) & (base[b] > 0)] for b in bins], decreasing=False)
    written = [k for k in ("output_tps_x", "ttft_x") if k in block]
    return ContextFit(
        block, _note(span, slopes, "written: " + ", ".join(written)), _bin_rows(bins, n, tps, base), slopes
    )


def _slope(n: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Robust (Huber) slope of log y on log n, with its standard error and t."""
    import statsmodels.api as sm

    x = np.log(n)
    design = sm.add_constant(x, has_constant="add")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sm.RLM(np.log(y), design, M=sm.robust.norms.HuberT()).fit()
    b, se = float(res.params[1]), float(res.bse[1])
    t = b / se if se > 0 else (math.inf if b else 0.0)
    return {"log_log_slope": b, "se": se, "t": t}


def _bins(n: np.ndarray) -> list[np.ndarray]:
    """Indices of the requests in each log-spaced bin of context size that has enough of them."""
    lo, hi = float(n.min()), float(n.max())
    k = int(min(MAX_BINS, max(2, math.ceil(math.log2(hi / lo)))))
    edges = np.geomspace(lo, hi, k + 1)
    which = np.clip(np.searchsorted(edges, n, side="right") - 1, 0, k - 1)
    return [idx for i in range(k) if (idx := np.flatnonzero(which == i)).size >= MIN_PER_BIN]


def _factors(groups: list[np.ndarray], decreasing: bool) -> list[float]:
    """Median per group over the first group's, monotone (weighted PAV), the first factor 1; 3 significant digits."""
    med = np.array([float(np.median(g)) if g.size else np.nan for g in groups])
    w = np.array([g.size for g in groups], dtype=float)
    keep = np.isfinite(med)
    smooth = _pav(med[keep], w[keep], decreasing)
    full = np.interp(np.arange(len(med)), np.flatnonzero(keep), smooth)  # a group without values: between
    return [float(f"{v:.3g}") for v in full / full[0]]


def _pav(y: np.ndarray, w: np.ndarray, decreasing: bool) -> np.ndarray:
    """Weighted least-squares monotone fit (pool adjacent violators)."""
    sign = -1.0 if decreasing else 1.0
    blocks: list[list[float]] = []  # [value, weight, count]
    for v, wt in zip(sign * y, w, strict=True):
        blocks.append([float(v), float(wt), 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            (v2, w2, c2), (v1, w1, c1) = blocks.pop(), blocks.pop()
            blocks.append([(v1 * w1 + v2 * w2) / (w1 + w2), w1 + w2, c1 + c2])
    return sign * np.concatenate([np.full(c, v) for v, _, c in blocks])


def _bin_rows(bins, n, tps, base) -> list[dict[str, Any]]:
    rows = []
    for b in bins:
        bb = base[b][np.isfinite(base[b]) & (base[b] > 0)]
        rows.append(
            {
                "input_tokens": [int(n[b].min()), int(n[b].max())],
                "requests": int(b.size),
                "median_tps": float(np.median(tps[b])),
                **({"median_base_ttft_s": float(np.median(bb))} if bb.size else {}),
            }
        )
    return rows


def _note(span: float, slopes: dict, outcome: str) -> str:
    parts = [f"{k} log-log slope {s['log_log_slope']:.3g} ± {s['se']:.2g}" for k, s in slopes.items()]
    return f"context sizes span {span:.3g}x; " + "; ".join(parts) + f": {outcome}"
