"""Fitting a model's ``stream:`` description (chunks, gap jitter, a stall process) from measured gaps.

Input: for each measured call, the gaps between successive deliveries the client saw (seconds; the
first delivery carries the first token, so a call with ``k`` deliveries has ``k - 1`` gaps) and
either the tokens in each delivery (``measure`` records them when the server counts them) or, as
most importers have it (vLLM ``itls``, AIPerf ``inter_chunk_latency``), only the call's output tokens
``N``. Output: ``{chunk_tokens, jitter_cv, stall: {per_chunk, seconds}}`` in the scenario vocabulary
(DESIGN.md §3.3), the model :mod:`agentsim.sim.streaming` draws from: before each delivery after the
first, with probability ``per_chunk``, the stream pauses for a length drawn from ``seconds`` (any
number of pauses per call).

* **stalls, the rule**: a gap over ``max(STALL_FACTOR x the call's median gap, STALL_MIN_S)`` is a
  stall (the median is untouched by a few stalls; the floor keeps fast streams' jitter out). Its
  *pause* is the gap minus the call's mean ordinary (non-stall) gap: the time on top of the gap that
  would have been there, so that what is left of the call is exactly its ordinary gaps. A pause
  shorter than its call's limit ``c = threshold − mean ordinary gap`` cannot be told from jitter.
* **the length** (:mod:`agentsim.measure.stall_fit`): the family among constant, uniform, exponential,
  gamma and lognormal with the lowest BIC on the likelihood truncated at each pause's limit ``c``.
* **the rate**: ``per_chunk = stalls / Σ_calls (k − 1) S(c)``, the pooled stalls per gap, each call's
  gaps counted by the share ``S(c)`` of pauses its limit lets through (1 when pauses are far longer
  than the limit, the usual case). Pauses below the limits are part of the process the profile
  describes, so their expected time, ``per_chunk (k − 1) E[X; X < c]``, is taken out too.
* **the decode speed**: each call's seen pauses plus that expected unseen part are its *removed pause
  time*; :func:`fit_table` returns it per row and calibration takes it out of the decode time before
  fitting the output speed. The simulator adds ``per_chunk x (k − 1) x mean length`` per call, which is
  that removed time in expectation: the fit section prints both.
* **chunks** (whole token counts, so a ``choice`` where they vary): with per-delivery counts, a
  constant when every delivery (each call's first and last, partial groups, excepted) has the same
  count, else ``{choice: {values, p}}`` of their frequencies. With totals only: a constant ``c`` when
  every call's deliveries are ``ceil(N / c)``, as fixed groups give; else the whole sizes of a uniform
  of mean ``m = Σ(N − ½) / Σ(k − ½)`` (the last group holds half a group on average) and standard
  deviation ``s``, ``s² = mean over calls of k (N/k − m)²`` (a call's mean group size varies by
  ``s² / k``), at least one token wide, narrowed (same mean) to start at one token: the ``choice``
  whose probabilities are the shares of that uniform that round to each whole size;
* **jitter** (:mod:`agentsim.measure.jitter_fit`): the winsorised variance and the lag-1
  autocorrelation of the log ordinary gaps (each call's over its median; when deliveries hold several
  tokens, each call's first and last gap, partial groups, left out), matched by simulating the calls'
  own group structure with a timing noise: robust to the scheduler's outliers, and the noise of the
  clocks (which makes consecutive gaps anti-correlated) is told apart from the provider's jitter.

Uncertainty: the jitter's bootstrap (in :mod:`~agentsim.measure.jitter_fit`) and, from ``BOOTSTRAP``
resamples of the calls, the stall rate's and mean length's, each a factor of median 1 whose ``p90``
is ``exp(1.2816 sd of the log ratios)``, in the fit report (``uncertainty``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agentsim.measure.jitter_fit import fit_jitter
from agentsim.measure.stall_fit import fit_lengths

__all__ = [
    "MIN_STREAM_REQUESTS",
    "STALL_FACTOR",
    "STALL_MIN_S",
    "StreamFit",
    "fit_stream",
    "fit_table",
]

STALL_FACTOR = 8.0  # a gap this many times the call's median gap ...
STALL_MIN_S = 0.25  # ... and longer than this is a stall
MIN_STREAM_REQUESTS = 10  # requests with every gap needed to fit a stream description
BOOTSTRAP = 200
Z90 = 1.2815515655446004
SEED = 20282
RULE = (
    f"a gap over max({STALL_FACTOR:g} x its call's median gap, {STALL_MIN_S:g} s) is a stall; "
    "its pause = the gap - the call's mean ordinary gap"
)


def _sig(x: float, digits: int = 4) -> float:
    x = float(x)
    if x == 0 or not math.isfinite(x):
        return x
    return float(round(x, digits - 1 - math.floor(math.log10(abs(x)))))


@dataclass(frozen=True)
class _Marks:
    """One call's stalls: which gaps, their pauses, and the shortest pause its rule can see."""

    stall: np.ndarray  # bool per gap
    pauses: np.ndarray
    limit: float


def _marks(g: np.ndarray) -> _Marks:
    med = float(np.median(g))
    threshold = max(STALL_FACTOR * med, STALL_MIN_S)
    stall = g > threshold
    ordinary = g[~stall]
    base = float(np.mean(ordinary)) if ordinary.size else med
    return _Marks(stall, g[stall] - base, threshold - base)


# --------------------------------------------------------------------------- chunks


def _choice(values, probs) -> dict:
    """``{choice: {values, p}}`` over whole token counts, ``p`` to 4 decimals and summing to 1."""
    keep = [(int(v), float(q)) for v, q in zip(values, probs, strict=True) if q >= 5e-5]
    total = math.fsum(q for _, q in keep)
    p = [round(q / total, 4) for _, q in keep[:-1]]
    return {"choice": {"values": [v for v, _ in keep], "p": [*p, round(1.0 - math.fsum(p), 4)]}}  # sum: 1 to 1e-15


def _chunks_from_counts(chunk_tokens: Sequence[Sequence[int]]) -> tuple[Any, float, float]:
    """(spec, mean, variance) of the tokens per delivery: their frequencies, each call's first delivery and,
    when it has three or more, its last (partial groups) excepted."""
    m = np.concatenate(
        [np.asarray(c, dtype=np.float64)[1 : -1 if len(c) > 2 else None] for c in chunk_tokens if len(c) > 1]
        or [np.ones(1)]
    )
    if np.all(m == m[0]):
        return int(m[0]), float(m[0]), 0.0
    values, counts = np.unique(np.rint(m).astype(np.int64), return_counts=True)
    return _choice(values, counts / counts.sum()), float(m.mean()), float(m.var())


def _uniform_as_choice(low: float, high: float) -> dict:
    """The whole sizes ``rint(uniform(low, high))`` gives, as a ``choice`` (token counts are whole numbers)."""
    ks = np.arange(max(1, math.floor(low + 0.5)), math.floor(high + 0.5) + 1)
    widths = np.clip(np.minimum(ks + 0.5, high) - np.maximum(ks - 0.5, low), 0.0, None)
    return _choice(ks, widths / widths.sum())


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
    return _uniform_as_choice(low, high), mean, (high - low) ** 2 / 12


def _drawn_counts(spec: Any, tokens: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
    """Tokens per delivery of calls of ``tokens`` tokens, drawn from the fitted ``chunk_tokens``."""
    out = []
    for n in tokens.astype(np.int64):
        if isinstance(spec, dict):
            ch = spec["choice"]
            sizes = rng.choice(np.asarray(ch["values"], dtype=np.int64), size=int(n), p=np.asarray(ch["p"]))
        else:
            sizes = np.full(int(n), int(spec), dtype=np.int64)
        ends = np.cumsum(sizes)
        k = int(np.searchsorted(ends, n)) + 1
        sizes = sizes[:k].copy()
        sizes[-1] -= int(ends[k - 1] - n)
        out.append(sizes)
    return out


def _chunks(calls, chunk_tokens, output_tokens) -> tuple[Any, float, list[np.ndarray]]:
    """(chunk spec, mean tokens per delivery, each call's tokens per delivery for the jitter simulation)."""
    rng = np.random.default_rng(SEED)
    if chunk_tokens is not None:
        chunk, mean_m, _ = _chunks_from_counts(chunk_tokens)
        return chunk, mean_m, [np.maximum(np.asarray(c, dtype=np.int64), 1) for c in chunk_tokens]
    deliveries = np.array([g.size + 1 for g in calls])
    if output_tokens is None:
        return 1, 1.0, [np.ones(k, dtype=np.int64) for k in deliveries]
    tokens = np.maximum(np.asarray(output_tokens, dtype=np.float64), deliveries)
    chunk, mean_m, _ = _chunks_from_totals(tokens, deliveries)
    return chunk, mean_m, _drawn_counts(chunk, np.rint(tokens), rng)


# --------------------------------------------------------------------------- stalls


@dataclass
class _Stalls:
    spec: dict | None  # {per_chunk, seconds}, None without stalls
    per_call: np.ndarray  # removed pause time per call (seen + expected unseen)
    report: dict = field(default_factory=dict)
    uncertainty: dict = field(default_factory=dict)


def _stall_process(calls: list[np.ndarray], marks: list[_Marks], bootstrap: bool = True) -> _Stalls:
    """The stall rate and length (see the module doc), and each call's removed pause time."""
    pauses = np.concatenate([m.pauses for m in marks])
    n_gaps = np.array([g.size for g in calls], dtype=np.float64)
    seen = np.array([float(m.pauses.sum()) for m in marks])
    if pauses.size == 0:
        return _Stalls(None, seen, {"rule": RULE, "found": 0, "gaps": int(n_gaps.sum())})
    limits = np.concatenate([np.full(m.pauses.size, m.limit) for m in marks])
    length = fit_lengths(pauses, limits)
    call_limit = np.array([m.limit for m in marks])
    exposure = float(np.sum(n_gaps * length.sf(call_limit)))
    rate = min(pauses.size / exposure, 1.0) if exposure > 0 else 1.0
    unseen = rate * n_gaps * length.partial_mean(call_limit)
    per_call = seen + unseen
    spec = {"per_chunk": _sig(rate), "seconds": length.spec(_sig)}
    report = {
        "rule": RULE,
        "found": int(pauses.size),
        "gaps": int(n_gaps.sum()),
        "per_chunk": rate,
        "length": length.report,
        "pause_s": {
            "seen": float(seen.sum()),
            "unseen_expected": float(unseen.sum()),
            "removed_from_decode": float(per_call.sum()),
            "added_by_the_fit": rate * length.mean * float(n_gaps.sum()),
        },
    }
    return _Stalls(spec, per_call, report, _stall_uncertainty(marks, n_gaps, length) if bootstrap else {})


def _stall_uncertainty(marks: list[_Marks], n_gaps: np.ndarray, length) -> dict:
    """Bootstrap factors of the stall rate and the mean pause (calls resampled; the family kept)."""
    rng = np.random.default_rng(SEED + 1)
    counts = np.array([m.pauses.size for m in marks], dtype=np.float64)
    sums = np.array([float(m.pauses.sum()) for m in marks])
    exp = n_gaps * length.sf(np.array([m.limit for m in marks]))
    rates, means = [], []
    for _ in range(BOOTSTRAP):
        i = rng.integers(0, len(marks), len(marks))
        if counts[i].sum() > 0 and exp[i].sum() > 0:
            rates.append(counts[i].sum() / exp[i].sum())
            means.append(sums[i].sum() / counts[i].sum())
    out = {}
    for key, vals, est in (
        ("stall_per_chunk_x", rates, counts.sum() / exp.sum()),
        ("stall_seconds_x", means, sums.sum() / counts.sum()),
    ):
        if len(vals) >= 2 and est > 0:
            out[key] = _factor(np.array(vals) / est)
    return out


def _factor(ratios: np.ndarray) -> Any:
    p90 = _sig(math.exp(Z90 * float(np.std(np.log(ratios), ddof=1))))
    return {"lognormal": {"median": 1, "p90": p90}} if p90 > 1 else 1


# --------------------------------------------------------------------------- the whole description


def _fit(calls, chunk_tokens=None, output_tokens=None, bootstrap=True) -> tuple[dict, np.ndarray, dict]:
    """The stream description, each call's removed pause time, and the fit report (``bootstrap``: with the
    uncertainty)."""
    marks = [_marks(g) for g in calls]
    stalls = _stall_process(calls, marks, bootstrap)
    chunk, mean_m, counts = _chunks(calls, chunk_tokens, output_tokens)
    partial = mean_m > 1.0
    keep = []
    for m in marks:
        k = ~m.stall
        if partial:  # partial groups at either end
            k[0] = k[-1] = False
        keep.append(k)
    jitter = fit_jitter(calls, keep, counts, partial, bootstrap)
    out: dict[str, Any] = {"chunk_tokens": chunk, "jitter_cv": round(jitter.cv, 4)}
    if stalls.spec is not None:
        out["stall"] = stalls.spec
    uncertainty = dict(stalls.uncertainty)
    if jitter.factor_p90 is not None:
        uncertainty["jitter_cv_x"] = (
            {"lognormal": {"median": 1, "p90": _sig(jitter.factor_p90)}} if _sig(jitter.factor_p90) > 1 else 1
        )
    report = {"stalls": stalls.report, "jitter": jitter.report}
    if uncertainty:
        report["uncertainty"] = uncertainty
    return out, stalls.per_call, report


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
    return fit_stream_report(gaps, chunk_tokens, output_tokens, bootstrap=False)[0]


def fit_stream_report(gaps, chunk_tokens=None, output_tokens=None, bootstrap=True) -> tuple[dict, dict]:
    """:func:`fit_stream`, and the fit report (rule, family choice, goodness of fit, and with ``bootstrap``
    the uncertainty)."""
    calls = _clean(gaps)
    keep = [i for i, g in enumerate(calls) if g.size >= 2]
    if not keep:
        raise ValueError("no call with at least 3 deliveries: the stream cannot be fitted")
    chunks = [chunk_tokens[i] for i in keep] if chunk_tokens is not None else None
    tokens = [output_tokens[i] for i in keep] if output_tokens is not None else None
    spec, _, report = _fit([calls[i] for i in keep], chunks, tokens, bootstrap)
    return spec, report


@dataclass(frozen=True)
class StreamFit:
    """What :func:`fit_table` found: the ``stream:`` block (None when it could not be fitted) and why."""

    stream: dict | None
    requests: int  # requests whose gaps were used
    gaps: int  # gaps used
    note: str
    pause_s: np.ndarray  # per row of the table: removed pause time (0 without), for the decode time
    report: dict = field(default_factory=dict)  # the fit report (fit_stream_report)


def _counts_of(row_counts, n_gaps: int) -> list[int] | None:
    """A row's tokens per delivery, when recorded for every delivery (each at least one token)."""
    if not isinstance(row_counts, list | tuple | np.ndarray) or len(row_counts) != n_gaps + 1:
        return None
    if not all(c is not None and math.isfinite(c) and c >= 1 for c in row_counts):
        return None
    return [round(c) for c in row_counts]


def fit_table(use) -> StreamFit:
    """Fit the stream description to the usable rows of a measurement table that record every gap."""
    rows = len(use)
    pause = np.zeros(rows)
    calls, tokens, counts, where = [], [], [], []
    per_event = use["event_tokens"] if "event_tokens" in use else [None] * rows
    for i, (g, n, c) in enumerate(zip(use["gaps_s"], use["output_tokens"], per_event, strict=True)):
        if isinstance(g, list | tuple | np.ndarray) and len(g) >= 2 and np.isfinite(n):
            g = _clean([g])[0]
            if g.size >= 2:
                calls.append(g)
                tokens.append(float(n))
                counts.append(_counts_of(c, g.size))
                where.append(i)
    if len(calls) < MIN_STREAM_REQUESTS:
        why = (
            "the files record no per-gap timings (only per-request summaries)"
            if not calls
            else f"only {len(calls)} requests record every gap (at least {MIN_STREAM_REQUESTS} are needed)"
        )
        return StreamFit(None, len(calls), 0, f"no stream description fitted: {why}", pause)
    every = all(c is not None for c in counts)
    spec, per_call, report = _fit(calls, counts if every else None, None if every else tokens)
    pause[where] = per_call
    n_gaps = int(sum(g.size for g in calls))
    found = report["stalls"]["found"]
    stalled = f"{found} stalls, whose pause time is left out of the output speed" if found else "no stalls"
    note = (
        f"stream fitted from {len(calls)} of {rows} usable requests ({n_gaps:,} gaps between deliveries"
        f"{', tokens per delivery as recorded' if every else ''}; {stalled})"
    )
    return StreamFit(spec, len(calls), n_gaps, note, pause, report)
