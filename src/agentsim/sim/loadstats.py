"""Figures about shared limits and workloads: throughput, utilisation, queue waits, 429s and retries.

Definitions (all per variant):

* **throughput** — runs that finished successfully during the window ``[warmup, duration]``,
  per hour of window; tokens per minute count the calls that *started* in the window;
* **utilisation of concurrency** — the time-weighted mean of requests in flight over the
  window, divided by the limit; of a token bucket — tokens admitted during the window per
  minute, divided by the per-minute limit;
* **queue wait** — for each successful call of a counted run, the time from submitting it
  to the start of its successful attempt (client-side queueing, 429 back-off and failed
  attempts included);
* **attempts** — 429 refusals, server errors, timeouts, retries (failed attempts that were
  followed by another attempt), calls that fell back to another model, and calls and runs
  that failed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["attempt_counts", "queue_wait", "step_mean", "window_admitted"]


def _f(x) -> float | None:
    x = float(x)
    return x if np.isfinite(x) else None


def _columns(log) -> tuple[np.ndarray, np.ndarray]:
    """The times and values of a log of ``(time, value)`` pairs (a :class:`~agentsim.plan.limits.PairLog`, read
    without a copy, or a list of pairs) as two arrays."""
    if hasattr(log, "t"):
        return np.frombuffer(log.t, dtype=np.float64), np.frombuffer(log.v, dtype=log.v.typecode)
    return np.array([t for t, _ in log], dtype=np.float64), np.array([v for _, v in log])


def step_mean(log, t0: float, t1: float, initial: float = 0.0) -> tuple[float, float]:
    """Time-weighted mean and max over ``[t0, t1]`` of a step function given as ``(time, value)`` changes
    (in time order), starting at ``initial``.

    The changes at or before ``t0`` set the level at ``t0`` (the max starts there); the area sums, in time
    order, each level times how long it held, from ``t0`` to the first change at or after ``t1``, then the
    last level until ``t1``. The terms are computed as arrays and added up in order (a running sum, as a
    loop over the changes would: the same bits); the max is the first value above all before it, as the log
    holds it (an in-flight count stays an ``int``).
    """
    if t1 <= t0:
        return float("nan"), float("nan")
    t, v = _columns(log)
    lo = int(np.searchsorted(t, t0, side="right"))  # changes [0, lo) are at or before t0
    hi = lo + int(np.searchsorted(t[lo:], t1, side="left"))  # [lo, hi) inside (t0, t1)
    level = log[lo - 1][1] if lo else initial
    peak, t_prev, area = level, t0, 0.0
    if hi > lo:
        inside, levels = t[lo:hi], v[lo:hi].astype(np.float64)
        held = np.concatenate(([float(level)], levels[:-1])) * (inside - np.concatenate(([t0], inside[:-1])))
        area = float(np.cumsum(held)[-1])
        i = int(np.argmax(levels))
        if levels[i] > peak:
            peak = log[lo + i][1]
        t_prev, level = float(inside[-1]), log[hi - 1][1]
    area += level * (t1 - t_prev)
    return area / (t1 - t0), peak


def window_admitted(admitted, t0: float, t1: float) -> float:
    """Tokens admitted in ``[t0, t1)``: a Python ``sum`` of them in time order."""
    t, v = _columns(admitted)
    return float(sum(v[(t0 <= t) & (t < t1)].tolist()))


def queue_wait(calls: pd.DataFrame) -> dict[str, Any]:
    ok = calls[calls["status"] == "ok"]
    w = (ok["t_start"] - ok["t_submit"]).to_numpy(dtype=float)
    if not len(w):
        return {"mean": None, "p50": None, "p95": None, "share_waiting": None}
    return {
        "mean": _f(w.mean()),
        "p50": _f(np.percentile(w, 50)),
        "p95": _f(np.percentile(w, 95)),
        "share_waiting": _f(np.mean(w > 0)),
    }


def attempt_counts(
    attempts: dict[str, np.ndarray] | None, calls: pd.DataFrame, runs: pd.DataFrame, plan, variant: int
) -> dict[str, Any]:
    out = {
        "rejected_429": 0,
        "errors": 0,
        "timeouts": 0,
        "retries": 0,
        "fallbacks": 0,
        "failed_calls": 0,
        "failed_runs": int((runs["status"] == 1).sum()),
    }
    if attempts is not None and len(attempts.get("outcome", ())):
        o = attempts["outcome"]
        out["rejected_429"] = int((o == 1).sum())
        out["errors"] = int((o == 2).sum())
        out["timeouts"] = int((o == 3).sum())
        out["retries"] = int((o != 0).sum())  # failed attempts; those that ended a failed call come off below
    if len(calls):
        out["failed_calls"] = int((calls["status"] == "failed").sum())
        out["retries"] = max(0, out["retries"] - out["failed_calls"])  # a failed call's last attempt was not retried
        static = {n.id: plan.tiers[n.tiers[variant]].label for n in plan.calls}
        speed = calls["speed"].astype(str)
        label = calls["model"].astype(str) + np.where(speed == "standard", "", "@" + speed)
        out["fallbacks"] = int((label.to_numpy() != calls["node"].map(static).to_numpy()).sum())
    return out
