"""Where returns diminish along a sweep: the marginal gain per unit of the swept value, and the knee.

Along one swept number ``x`` (an output speed, a concurrency limit...), with a figure ``y`` at each point (a
mean wall time, a share of runs within a target), sorted by ``x``:

* the **marginal gain** of step ``i`` is what one more unit of ``x`` buys between points ``i - 1`` and ``i``,
  ``gain_i = s (y_i - y_{i-1}) / (x_i - x_{i-1})`` with ``s = -1`` for a figure where lower is better (times,
  costs: seconds *saved* per unit) and ``s = +1`` where higher is better (shares, QoE); undefined (NaN) at
  the first point. ``gain_share_i = s (y_i - y_{i-1}) / |y_{i-1}|`` is the same step as a share of the
  figure before it (NaN where that is 0);
* the **knee** is the point after which the gains fall off: Kneedle (Satopää et al., "Finding a 'Kneedle'
  in a Haystack", ICDCS workshops 2011), through the ``kneed`` package with its defaults (sensitivity
  ``S = 1``, the points as they are). Both axes are scaled to [0, 1]; the knee is the point farthest from
  the straight line joining the first and the last, on the side the curve bends to (below it for a
  decreasing convex curve such as ``A + D / x``; of points equally far, the later), provided the curve
  then flattens by more than ``S`` times the mean step. It is a point of the grid (no interpolation), and
  there is none for fewer than three points or for a straight or non-monotone-enough curve (``None``).
  Like any knee, it depends on the scale of ``x``: the grid's values as they are (a geometric grid of
  speeds is not read on a log scale).

Hand check (tests/test_knee.py): ``x = 0..5``, ``y = [10, 4, 2, 1.5, 1.2, 1]`` scale to ``y' = (y - 1) / 9``
and ``x' = x / 5``; the distances below the line ``1 - x'`` are ``[0, 0.467, 0.489, 0.344, 0.178, 0]``, the
largest at ``x = 2``: the knee.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Knee", "find_knee", "higher_is_better", "marginal_gains"]


def higher_is_better(metric: str) -> bool:
    """Whether more of ``metric`` (a sweep table's column) is better: shares met (``slo_*_share``,
    ``success_share``), QoE and throughput; else (times, costs, ``failed_share``) less is."""
    good_share = metric.endswith("_share") and metric != "failed_share"
    return good_share or "qoe" in metric or metric.startswith("throughput")


def marginal_gains(x, y, higher: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``(gain per unit of x, gain as a share of the figure before)`` of each step of ``x`` sorted ascending
    (module doc); NaN at the first point and where a step has no width."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    sign = 1.0 if higher else -1.0
    gain, share = np.full(x.size, np.nan), np.full(x.size, np.nan)
    if x.size > 1:
        dx, dy = np.diff(x), np.diff(y)
        prev = np.abs(y[:-1])
        with np.errstate(divide="ignore", invalid="ignore"):
            gain[1:] = np.where(dx != 0, sign * dy / np.where(dx != 0, dx, 1.0), np.nan) + 0.0  # no -0.0
            share[1:] = np.where(prev > 0, sign * dy / np.where(prev > 0, prev, 1.0), np.nan) + 0.0
    return gain, share


@dataclass(frozen=True)
class Knee:
    """The knee of a curve: the swept value there, the figure there, and the gain per unit beyond it."""

    x: float
    y: float
    gain_after: float | None  # the marginal gain of the step after the knee (None: the knee is the last point)


def find_knee(x, y, higher: bool = False) -> Knee | None:
    """The Kneedle knee of ``y`` along ``x`` (ascending, at least three distinct points; module doc), or None."""
    from kneed import KneeLocator

    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if np.unique(x).size < 3 or np.ptp(y) == 0:
        return None
    # lower is better and falling, or higher is better and rising, flattening out: the curve's shape for kneed
    curve, direction = ("concave", "increasing") if higher else ("convex", "decreasing")
    import warnings

    with warnings.catch_warnings():  # "no knee/elbow found" is an answer here (None), not a warning
        warnings.simplefilter("ignore")
        found = KneeLocator(x, y, curve=curve, direction=direction).knee
    if found is None:
        return None
    i = int(np.nonzero(x == found)[0][0])
    gain, _ = marginal_gains(x, y, higher)
    after = float(gain[i + 1]) if i + 1 < x.size and np.isfinite(gain[i + 1]) else None
    return Knee(float(found), float(y[i]), after)
