"""Fitting a model's ``stream:`` description (chunks, gap jitter, stalls) from measured gaps.

Input: for each measured call, the gaps between successive deliveries the client saw (seconds; the
first delivery carries the first token, so a call with ``k`` deliveries has ``k - 1`` gaps) and
either the tokens in each delivery or, as every importer has it (``measure`` JSONL, vLLM ``itls``,
AIPerf ``inter_chunk_latency``), only the call's output tokens ``N``. Output: ``{chunk_tokens,
jitter_cv, stall: {p, seconds}}`` in the scenario vocabulary (DESIGN.md §3.2), the model
:mod:`agentsim.sim.streaming` draws from:

* **stalls**: a gap longer than ``STALL_FACTOR`` times the call's median gap and than ``STALL_MIN_S``
  is a stall; ``p`` = the share of calls with one, ``seconds`` = the median of (stall gap − the call's
  median gap) — the pause on top of the gap that would have been there (a lognormal when at least
  ``MIN_STALLS_FOR_SPREAD`` pauses vary);
* **chunks**: with per-delivery counts, a constant when every delivery (the first excepted) has the
  same count, else ``{uniform: {low, high}}`` over their 5th-95th percentiles. With totals only: a
  constant ``c`` when every call's deliveries are ``ceil(N / c)``, as fixed groups give; else a
  ``uniform`` of mean ``m = Σ(N − ½) / Σ(k − ½)`` (the last group holds half a group on average) and
  standard deviation ``s``, ``s² = mean over calls of k (N/k − m)²`` (a call's mean group size
  varies by ``s² / k``), at least one token wide, narrowed (same mean) to start at one token;
* **jitter**: without stalls, a delivery gap of ``m`` tokens is the sum of ``m`` token gaps
  ``w_j × base`` with ``w`` independent, mean 1 and CV ``c``, so its squared CV is ``c² / m̄ +
  Var(m) / m̄²``. Gaps are divided by their call's mean (removing each call's speed), pooled with
  ``k − 1`` degrees of freedom per call, and ``c² = m̄ CV² − Var(m) / m̄``. When deliveries hold
  several tokens, each call's first and last gaps (partial groups) are left out of this step.

:func:`fit_table` applies the fit to the usable rows of a measurement table
(:mod:`agentsim.traces.measurements`) and also returns each row's stall pause, which calibration
takes out of the decode time before fitting the output speed: the simulator adds stalls on top of
the speed (DESIGN.md §3.2), so counting them in both would predict them twice.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "MIN_STREAM_REQUESTS",
    "STALL_FACTOR",
    "STALL_MIN_S",
    "StreamFit",
    "fit_stream",
    "fit_table",
]

STALL_FACTOR = 8.0  # a gap this many times the call's median gap ...
STALL_MIN_S = 0.25  # ... and at least this long is a stall
MIN_STREAM_REQUESTS = 10  # requests with every gap needed to fit a stream description
MIN_STALLS_FOR_SPREAD = 10  # stalls needed before their length is written as a distribution
Z90 = 1.2815515655446004


def _stall_mask(g: np.ndarray) -> tuple[np.ndarray, float]:
    med = float(np.median(g))
    return (g > STALL_FACTOR * med) & (g >= STALL_MIN_S), med


def _chunks_from_counts(chunk_tokens: Sequence[Sequence[int]]) -> tuple[Any, float, float]:
    """(spec, mean, variance) of the tokens per delivery, the first delivery of each call excepted."""
    m = np.concatenate([np.asarray(c, dtype=np.float64)[1:] for c in chunk_tokens if len(c) > 1] or [np.ones(1)])
    if np.all(m == m[0]):
        return int(m[0]), float(m[0]), 0.0
    lo, hi = np.percentile(m, [5, 95])
    return {"uniform": {"low": float(np.floor(lo)), "high": float(np.ceil(hi))}}, float(m.mean()), float(m.var())


def _chunks_from_totals(tokens: np.ndarray, deliveries: np.ndarray) -> tuple[Any, float, float]:
    """(spec, mean, variance) of the tokens per delivery from each call's totals (see the module doc)."""
    n, k = tokens.astype(np.float64), deliveries.astype(np.float64)
    mean = float(np.sum(n - 0.5) / np.sum(k - 0.5))
    c = max(1, round(mean))
    if np.all(np.ceil(n / c) == k):
        return int(c), float(c), 0.0
    var = float(np.mean(k * (n / k - mean) ** 2))
    half = max(math.sqrt(3 * var), 0.5)  # rint of a uniform one token wide keeps its mean exactly
    half = min(half, max(mean - 1.0, 0.5))  # no group below one token: narrower, same mean
    low, high = max(1.0, mean - half), mean + half
    spec = {"uniform": {"low": round(low, 2), "high": round(high, 2)}}
    return spec, mean, (high - low) ** 2 / 12


def _fit(calls, chunk_tokens=None, output_tokens=None) -> tuple[dict, list[float]]:
    """The stream description and each call's stall pause (seconds, 0 without a stall)."""
    stalled, pauses, per_call = 0, [], []
    for g in calls:
        is_stall, med = _stall_mask(g)
        pause = float(np.sum(g[is_stall] - med))
        per_call.append(pause)
        if is_stall.any():
            stalled += 1
            pauses.extend((g[is_stall] - med).tolist())
    if chunk_tokens is not None:
        chunk, mean_m, var_m = _chunks_from_counts(chunk_tokens)
    elif output_tokens is not None:
        deliveries = np.array([g.size + 1 for g in calls])
        tokens = np.maximum(np.asarray(output_tokens, dtype=np.float64), deliveries)
        chunk, mean_m, var_m = _chunks_from_totals(tokens, deliveries)
    else:
        chunk, mean_m, var_m = 1, 1.0, 0.0
    ss, dof = 0.0, 0
    for g in calls:
        is_stall, _ = _stall_mask(g)
        rest = g[~is_stall]
        if mean_m > 1.0:  # partial groups at either end
            rest = rest[1:-1]
        if rest.size >= 2 and rest.mean() > 0:
            ss += float(np.sum((rest / rest.mean() - 1.0) ** 2))
            dof += rest.size - 1
    cv2 = ss / dof if dof else 0.0
    jitter = math.sqrt(max(mean_m * cv2 - var_m / mean_m, 0.0))
    out = {"chunk_tokens": chunk, "jitter_cv": round(jitter, 4)}
    seconds: Any = 0.0
    if pauses:
        logs = np.log(np.maximum(pauses, 1e-9))
        sd = float(np.std(logs, ddof=1)) if len(pauses) > 1 else 0.0
        if len(pauses) >= MIN_STALLS_FOR_SPREAD and sd > 0.1:
            med = math.exp(float(np.mean(logs)))
            seconds = {"lognormal": {"median": round(med, 4), "p90": round(med * math.exp(Z90 * sd), 4)}}
        else:
            seconds = round(float(np.median(pauses)), 4)
    out["stall"] = {"p": round(stalled / len(calls), 4), "seconds": seconds}
    return out, per_call


def _clean(gaps: Sequence[Sequence[float]]) -> list[np.ndarray]:
    calls = [np.asarray(g, dtype=np.float64) for g in gaps]
    return [g[np.isfinite(g) & (g >= 0)] for g in calls]


def fit_stream(
    gaps: Sequence[Sequence[float]],
    chunk_tokens: Sequence[Sequence[int]] | None = None,
    output_tokens: Sequence[float] | None = None,
) -> dict:
    """The ``stream:`` description that fits the measured calls (see the module doc).

    ``chunk_tokens``: tokens per delivery of each call; else ``output_tokens``: each call's total
    (the group size is inferred from the number of deliveries); else one token per delivery.
    """
    calls = _clean(gaps)
    keep = [i for i, g in enumerate(calls) if g.size >= 2]
    if not keep:
        raise ValueError("no call with at least 3 deliveries: the stream cannot be fitted")
    chunks = [chunk_tokens[i] for i in keep] if chunk_tokens is not None else None
    tokens = [output_tokens[i] for i in keep] if output_tokens is not None else None
    return _fit([calls[i] for i in keep], chunks, tokens)[0]


@dataclass(frozen=True)
class StreamFit:
    """What :func:`fit_table` found: the ``stream:`` block (None when it could not be fitted) and why."""

    stream: dict | None
    requests: int  # requests whose gaps were used
    gaps: int  # gaps used
    note: str
    pause_s: np.ndarray  # per row of the table: stall pause (0 without), for the decode time


def fit_table(use) -> StreamFit:
    """Fit the stream description to the usable rows of a measurement table that record every gap."""
    rows = len(use)
    pause = np.zeros(rows)
    calls, tokens, where = [], [], []
    for i, (g, n) in enumerate(zip(use["gaps_s"], use["output_tokens"], strict=True)):
        if isinstance(g, list | tuple | np.ndarray) and len(g) >= 2 and np.isfinite(n):
            calls.append(_clean([g])[0])
            tokens.append(float(n))
            where.append(i)
    keep = [j for j, g in enumerate(calls) if g.size >= 2]
    if len(keep) < MIN_STREAM_REQUESTS:
        why = (
            "the files record no per-gap timings (only per-request summaries)"
            if not calls
            else f"only {len(keep)} requests record every gap (at least {MIN_STREAM_REQUESTS} are needed)"
        )
        return StreamFit(None, len(keep), 0, f"no stream description fitted: {why}", pause)
    calls = [calls[j] for j in keep]
    spec, per_call = _fit(calls, output_tokens=[tokens[j] for j in keep])
    for j, p in zip(keep, per_call, strict=True):
        pause[where[j]] = p
    n_gaps = int(sum(g.size for g in calls))
    stalls = sum(1 for p in per_call if p > 0)
    stalled = f"{stalls} with a stall, whose pause is left out of the output speed" if stalls else "no stalls"
    note = f"stream fitted from {len(calls)} of {rows} usable requests ({n_gaps:,} gaps between deliveries; {stalled})"
    return StreamFit(spec, len(calls), n_gaps, note, pause)
