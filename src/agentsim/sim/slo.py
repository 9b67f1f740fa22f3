"""Targets on the turn (``slo:``): the share of runs that meet each target, and all of them together.

A scenario's ``slo: {METRIC: target, ...}`` (contract v1.2, DESIGN.md §3.3) names per-run figures:

* ``CALL.METRIC``: a streaming metric of one call (the runs table's column: the call's first completed
  instance in the run);
* ``METRIC``: the turn's value of a streaming metric over every call with a consumer in the run: the
  *first* answer's for the metrics of a first moment (``ttft_s``, ``first_word_s``, ``first_*``,
  ``voice_to_voice_s``: the earliest), the worst for the QoE (the lowest), the *last* or largest for the
  others (``reader_done_from_ask_s``: when the person has read everything);
* ``wall_time_s``, ``cost_usd``: the run's own.

A run meets a target when its value is at most the target (at least, for ``qoe`` and ``qoe_from_ask``);
a run without the value (its answer never came, it failed, or the person interrupted before it) does not.
The share is over the runs whose outcome is known (completed or failed; in a workload, counted), with
the Wilson score interval at 95% (it stays inside [0, 1] and is honest near 0 and 1, where the normal
interval is not): for ``k`` of ``n`` runs, ``p = k / n``, ``z = 1.96``,

    centre = (p + z²/2n) / (1 + z²/n),   half = z sqrt(p (1 - p) / n + z²/4n²) / (1 + z²/n).

This is what serving benchmarks call SLO attainment or goodput (vLLM, AIPerf), for the whole turn.

Beside the share, each target reports the targeted metric itself over the same runs (turns): ``mean`` (of
the runs that have a value) and ``p50``, ``p95``, ``p99``, the value that 50, 95 or 99% of them meet. For a
ceiling that is the ordinary percentile; for a floor (the QoE) the value 95% reach or beat, i.e. the 5th
percentile. A run without the value counts as the worst, so ``p95 <= target`` exactly when ``share >=
0.95``; a percentile that falls among the runs without a value is ``null``. Percentiles interpolate
linearly (NumPy's default, as every other percentile of ``summary.json``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from agentsim.model.consumers import higher_is_better

__all__ = ["LEVELS", "Z95", "meets", "met_by", "slo_section", "turn_values", "wilson"]

Z95 = 1.959963984540054  # the standard normal's 97.5th percentile
LEVELS = (50, 95, 99)  # the percentiles of a targeted metric: the value that 50, 95, 99% of runs meet


def _first_moment(metric: str) -> bool:
    return metric.startswith(("ttft", "first_", "voice_to_voice"))


def _floor(metric: str) -> bool:
    """Whether a target on ``metric`` is a floor (higher is better): the QoE."""
    return higher_is_better(metric)


def turn_values(columns: dict[str, np.ndarray], metric: str, n: int) -> np.ndarray:
    """The turn's value of a streaming ``metric`` per run, from the runs' ``CALL.METRIC`` columns (NaN: none)."""
    cols = [v for k, v in columns.items() if k.rsplit(".", 1)[-1] == metric and "." in k]
    if not cols:
        return np.full(n, np.nan)
    stack = np.vstack(cols)  # fmin/fmax skip NaN (a call without the value) quietly
    if _first_moment(metric) or _floor(metric):
        return np.fmin.reduce(stack, axis=0)
    return np.fmax.reduce(stack, axis=0)


def meets(metric: str, values: np.ndarray, target: float) -> np.ndarray:
    """Which runs meet ``target`` on ``metric`` (a missing value never does)."""
    return values >= target if _floor(metric) else values <= target  # NaN compares False, without a warning


def met_by(metric: str, values: np.ndarray) -> dict[str, float | None]:
    """``{mean, p50, p95, p99}`` of a targeted ``metric``: its mean over the values there are, and the value
    that 50, 95, 99% of the runs meet (module doc: a missing value, NaN, is the worst; null where it decides)."""
    values = np.asarray(values, dtype=np.float64)
    present = values[~np.isnan(values)]
    m, n = int(present.size), int(values.size)
    out: dict[str, float | None] = {"mean": float(np.mean(present)) if m else None}
    if not m:
        return out | {f"p{q}": None for q in LEVELS}
    sign = -1.0 if _floor(metric) else 1.0  # a floor: the worst are the lowest
    worst_last = sign * present
    filled = np.concatenate([worst_last, np.full(n - m, worst_last.max())])  # only decides where it is null
    for q in LEVELS:
        pos = q / 100 * (n - 1)
        ok = math.ceil(pos) < m  # both values the percentile interpolates between are present
        out[f"p{q}"] = float(sign * np.percentile(filled, q)) if ok else None
    return out


def wilson(k: int, n: int, z: float = Z95) -> list[float | None]:
    """The Wilson score interval of a share of ``k`` successes in ``n`` (``[None, None]`` for no runs)."""
    if n <= 0:
        return [None, None]
    p, z2 = k / n, z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    lo = 0.0 if k == 0 else max(0.0, centre - half)  # exactly 0 and 1 at the ends (no rounding residue)
    return [lo, 1.0 if k == n else min(1.0, centre + half)]


def slo_section(targets: dict[str, float], value_of, n: int) -> dict[str, Any]:
    """``{METRIC: {target, share, ci95, runs, mean, p50, p95, p99}, all: {share, ci95, runs}}`` over ``n`` runs;
    ``value_of(metric)`` gives each run's value."""
    out: dict[str, Any] = {}
    every = np.ones(n, dtype=bool)
    for metric, target in targets.items():
        values = value_of(metric)
        if metric == "turn_s":  # a target on each turn: the share of turns; a run meets it when all its turns do
            per_turn, per_run = values
            every &= meets(metric, per_run, target)
            k, m = int(np.count_nonzero(meets(metric, per_turn, target))), int(per_turn.size)
            out[metric] = {"target": float(target), "share": k / m if m else None, "ci95": wilson(k, m), "runs": n,
                           "turns": m, **met_by(metric, per_turn)}  # fmt: skip
            continue
        ok = meets(metric, values, target)
        every &= ok
        k = int(np.count_nonzero(ok))
        out[metric] = {"target": float(target), "share": k / n if n else None, "ci95": wilson(k, n), "runs": n,
                       **met_by(metric, values)}  # fmt: skip
    k = int(np.count_nonzero(every))
    out["all"] = {"share": k / n if n else None, "ci95": wilson(k, n), "runs": n}
    return out
