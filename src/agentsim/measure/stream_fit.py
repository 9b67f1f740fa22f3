"""Fitting a model's ``stream:`` description (chunks, gap jitter, stalls) from measured gaps.

Input: for each measured call, the gaps between successive deliveries the client saw (seconds; the
first delivery is the first token, so a call with ``k`` deliveries has ``k - 1`` gaps) and, where the
file has them, the tokens in each delivery (``measure`` JSONL, AIPerf inter-chunk latencies; vLLM's
``itls`` are per token, one token a delivery). Output: ``{chunk_tokens, jitter_cv, stall: {p, seconds}}``
in the scenario vocabulary (DESIGN.md §3.2), the model :mod:`agentsim.sim.streaming` draws from:

* **stalls**: a gap longer than ``STALL_FACTOR`` times the call's median gap and than ``STALL_MIN_S``
  is a stall; ``p`` = the share of calls with one, ``seconds`` = the median of (stall gap − the call's
  median gap) — the pause on top of the gap that would have been there;
* **chunks**: the tokens per delivery (all but the first, which holds whatever came with the first
  token): a constant when every delivery has the same count, else ``{uniform: {low, high}}`` over the
  observed 5th-95th percentiles;
* **jitter**: without stalls, a delivery gap is the sum of ``m`` token gaps ``w_j × base`` with ``w``
  independent, mean 1 and CV ``c``, so its CV is ``c / sqrt(m)``. Gaps are divided by their call's mean
  (removing each call's speed) and ``c = CV(normalised gaps) × sqrt(mean m)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["STALL_FACTOR", "STALL_MIN_S", "fit_stream"]

STALL_FACTOR = 8.0  # a gap this many times the call's median gap ...
STALL_MIN_S = 0.25  # ... and at least this long is a stall


def fit_stream(gaps: Sequence[Sequence[float]], chunk_tokens: Sequence[Sequence[int]] | None = None) -> dict:
    """The ``stream:`` description that fits the measured calls (see the module doc)."""
    calls = [np.asarray(g, dtype=np.float64) for g in gaps]
    calls = [g[np.isfinite(g) & (g >= 0)] for g in calls]
    calls = [g for g in calls if g.size >= 2]
    if not calls:
        raise ValueError("no call with at least 3 deliveries: the stream cannot be fitted")
    stalled, pauses, normalised = 0, [], []
    for g in calls:
        med = float(np.median(g))
        is_stall = (g > STALL_FACTOR * med) & (g >= STALL_MIN_S)
        if is_stall.any():
            stalled += 1
            pauses.extend((g[is_stall] - med).tolist())
        rest = g[~is_stall]
        if rest.size >= 2 and rest.mean() > 0:
            normalised.append(rest / rest.mean())
    z = np.concatenate(normalised) if normalised else np.zeros(0)
    cv_gap = float(np.std(z)) if z.size else 0.0
    if chunk_tokens is not None:
        m = np.concatenate([np.asarray(c, dtype=np.float64)[1:] for c in chunk_tokens if len(c) > 1] or [np.ones(1)])
    else:
        m = np.ones(1)
    mean_m = float(m.mean())
    if np.all(m == m[0]):
        chunk = int(m[0])
    else:
        lo, hi = np.percentile(m, [5, 95])
        chunk = {"uniform": {"low": float(np.floor(lo)), "high": float(np.ceil(hi))}}
    out = {"chunk_tokens": chunk, "jitter_cv": round(cv_gap * float(np.sqrt(mean_m)), 4)}
    p = stalled / len(calls)
    out["stall"] = {"p": round(p, 4), "seconds": round(float(np.median(pauses)), 4) if pauses else 0.0}
    return out
