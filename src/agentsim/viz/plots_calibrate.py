"""The calibration diagnostic figure: a pure function, measurements and fit in, ``Figure`` out.

Three panels: measured vs fitted CDF of TTFT, the same for output tokens per
second, and TTFT against uncached input tokens with the fitted line (base
median + input / prefill_tps) and the fitted 10-90% band.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from agentsim.measure.calibrate import Calibration
from agentsim.plan.distributions import Z90
from agentsim.viz.plots import Figure

__all__ = ["calibration_figure"]


def _ecdf(ax, x: np.ndarray, label: str) -> None:
    x = np.sort(x)
    ax.step(x, np.arange(1, x.size + 1) / x.size, where="post", label=label, color="black", lw=1.2)


def calibration_figure(measurements: pd.DataFrame, cal: Calibration, title: str = "") -> Figure:
    """Diagnostic figure of a calibration; ``measurements`` is the common table (usable rows are used)."""
    use = measurements[measurements["usable"]]
    y = use["ttft_s"].to_numpy(float)
    x = use["uncached_input_tokens"].to_numpy(float)
    tps = use["tps"].to_numpy(float)
    fig = Figure(figsize=(14, 4.2), layout="constrained")
    a_ttft, a_tps, a_scatter = fig.subplots(1, 3)

    _ecdf(a_ttft, y, f"measured ({y.size})")
    grid = np.linspace(0, float(np.max(y)) * 1.05, 400)
    a_ttft.plot(grid, cal.ttft_cdf(grid, x), color="tab:orange", lw=1.8, label="fitted")
    g = cal.goodness["ttft"]
    a_ttft.set_title(f"TTFT  (KS {g['ks']:.3f})", fontsize=10)
    a_ttft.set_xlabel("time to first token (s)")
    a_ttft.set_ylabel("share of requests")

    _ecdf(a_tps, tps, f"measured ({tps.size})")
    grid = np.linspace(0, float(np.max(tps)) * 1.05, 400)
    a_tps.plot(grid, cal.tps.dist().cdf(grid), color="tab:orange", lw=1.8, label=f"fitted {cal.tps.family}")
    a_tps.set_title(f"output tokens/s  (KS {cal.goodness['output_tps']['ks']:.3f})", fontsize=10)
    a_tps.set_xlabel("output tokens / (latency − TTFT)")

    known = np.isfinite(x)
    a_scatter.scatter(x[known], y[known], s=8, alpha=0.5, color="black", label="measured")
    t = cal.ttft
    xs = np.linspace(0, float(np.max(x[known])) * 1.05 if known.any() else 1.0, 100)
    line = t.median_s + t.slope_s_per_token * xs
    lo = t.median_s * math.exp(-Z90 * t.sigma) + t.slope_s_per_token * xs
    hi = t.p90_s + t.slope_s_per_token * xs
    label = (
        f"fit: {t.median_s:.3g} s + input / {t.prefill_tps:,.0f} tok/s"
        if t.prefill_tps
        else f"fit: {t.median_s:.3g} s (no prefill term)"
    )
    a_scatter.plot(xs, line, color="tab:orange", lw=1.8, label=label)
    a_scatter.fill_between(xs, lo, hi, color="tab:orange", alpha=0.15, label="fitted 10–90%")
    a_scatter.set_xlabel("uncached input tokens")
    a_scatter.set_ylabel("time to first token (s)")
    a_scatter.set_title("TTFT vs input", fontsize=10)

    for ax in (a_ttft, a_tps, a_scatter):
        ax.grid(True, alpha=0.3)
        ax.legend(loc="best", fontsize=8)
    if title:
        fig.suptitle(title)
    return fig
