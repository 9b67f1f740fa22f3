"""Stalls: where a call's stream pauses, for how long, and how much of it has passed by a time ``t``.

A stall is a pause of the stream between two visible tokens: the tokens after it arrive its length
later, and so does the call's end (the engines add a call's total stall to it:
``end = t0 + ((ttft + decode) + stall)``; the breakdown reports it as ``stall``). A stall *before* token
``i`` starts when token ``i - 1`` arrives. A tier's ``stream.stall`` has one of four forms
(DESIGN.md §3.2-3.3):

* ``{p, seconds}`` (``once``): with probability ``p`` a call stalls once, after token
  ``k = 1 + floor(u (N - 1))`` (``u`` uniform; :func:`stall_position`);
* ``{per_chunk, seconds}``: a stall *process*: before each delivered chunk after the first, a stall with
  probability ``per_chunk`` (a call of ``K`` chunks: on average ``(K - 1) per_chunk`` stalls, each
  of its own drawn length). With one-token chunks this is ``per_token``;
* ``{per_token, seconds}``: the same before each visible token after the first;
* ``{at_chunks: [j, ...], seconds}``: a stall before each listed chunk the answer has (a schedule).

**How a process is drawn.** The places are a Bernoulli process over the call's ``M`` opportunities
(``M = K - 1`` chunk starts, or ``N - 1`` tokens). Instead of one draw per opportunity, the ``k``-th row
of a token-major stream (:mod:`agentsim.sim.stream_draws`, purpose ``STALL_GAPS``) gives the number of
opportunities from the previous stall to the ``k``-th, geometric: ``g = max(1, ceil(log(1 - u) /
log(1 - p)))`` (``g = 1`` when ``p = 1``); the stall is at opportunity ``g_1 + ... + g_k`` while that is
at most ``M``. Its length is the ``k``-th row of a second stream (``STALL_LENS``) through the
``seconds`` distribution. So a process costs draws in proportion to its stalls, not to the tokens, and
a call's stalls depend only on its own tokens and chunks (common random numbers across variants).

:func:`stall_draws` gives the engines each call's total stall before it starts (from the block's
draws alone: tokens and chunk sizes do not depend on timing); :func:`stall_events` gives the streaming
rules each stall's place and length; :func:`stalled_by` the seconds of stall spent by a time ``t`` (the
cut of an interruption, the start of a pipeline).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

import numpy as np

from agentsim.model import special
from agentsim.plan.nodes import CHUNKS, OUTPUT, STALL_AT, STALL_GAPS, STALL_LENS, STALL_P, STALL_S, Plan
from agentsim.sim.stream_draws import batch_runs, columns, group_sizes, token_rows

__all__ = ["StallEvents", "one_token_chunks", "stall_draws", "stall_events", "stall_position", "stalled_by"]

_U_MAX = 1.0 - 2.0**-53  # the largest uniform below 1: log(1 - u) stays finite


@dataclass(frozen=True)
class StallEvents:
    """The stalls of a batch of calls: ``pos[c, r]`` the 0-based index of the token the ``r``-th stall
    delays (it and every later token), ``length[c, r]`` its seconds (0 where the call has fewer stalls);
    ``total[c]`` their sum, added left to right."""

    pos: np.ndarray
    length: np.ndarray
    total: np.ndarray


def one_token_chunks(stream) -> bool:
    """Whether a tier's answer is delivered one token at a time (no stream, or chunks of a constant 1)."""
    return stream is None or (stream.chunk.is_constant and stream.chunk.constant_value <= 1.5)


def stall_position(u: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Token after which a single stall happens: ``1 + floor(u (N - 1))`` in ``1..N-1`` (``N`` when N <= 1)."""
    k = 1 + np.floor(u * np.maximum(n - 1, 0)).astype(np.int64)
    return np.where(n >= 2, np.clip(k, 1, np.maximum(n - 1, 1)), n)


def stall_draws(plan: Plan, block, node, tier_index: int):
    """``(seconds, u)`` per call instance of ``node`` on a tier (shape ``(n, *instances)``), or None.

    ``seconds`` is each call's total stall (0 where it does not stall); ``u`` places a single stall
    (:func:`stall_position`; 0 for a process, whose places :func:`stall_events` draws). Both engines add
    ``seconds`` to the call: ``end = t0 + ((ttft + dec) + stall)``.
    """
    st = plan.tiers[tier_index].stream
    if st is None or st.stall_p <= 0:
        return None
    key = ("stall", node.id, tier_index)
    cache = block.stream_cache
    if key in cache:
        return cache[key]
    if st.stall_process:
        cache[key] = (_process_totals(st, block, node), np.zeros(()))
        return cache[key]
    if (node.id, STALL_P) not in block.values:
        return None
    hit = special.ndtr(block.get(node.id, STALL_P)) < st.stall_p
    secs = np.maximum(st.stall_s.transform(np.asarray(block.get(node.id, STALL_S), dtype=np.float64)), 0.0)
    cache[key] = (np.where(hit, secs, 0.0), special.ndtr(block.get(node.id, STALL_AT)))
    return cache[key]


def _process_totals(st, block, node) -> np.ndarray:
    """Each call instance's total stall under a process, for every run of the block (``(n, *instances)``)."""
    dims = block.shape(node.scope)
    n, width = block.n, int(np.prod(dims, dtype=np.int64))
    if width == 0:  # no instance in this block (a fan-out of 0 copies, a repeat of 0 times): nothing stalls
        return np.zeros((n, *dims))
    N = np.broadcast_to(block.get(node.id, OUTPUT), (n, *dims)).reshape(n, width).astype(np.int64)
    total = np.zeros((n, width))
    for flat in range(width):  # in batches of calls (stream_draws.batch_runs; per call: the same bits)
        step = batch_runs(int(N[:, flat].max()) if n else 0)
        for lo in range(0, n, step):
            runs = np.arange(lo, min(lo + step, n))
            total[runs, flat] = _process(st, block, node.id, flat, runs, N[runs, flat], True).total
    return total.reshape((n, *dims))


def stall_events(stream, slot, N: np.ndarray, stall, stall_u, cache: bool = False) -> StallEvents | None:
    """The stalls of the calls of ``slot`` (``N`` visible tokens each) on a tier with ``stream``, or None.

    ``stall``/``stall_u``: each call's single stall and its uniform (the ``once`` form, from
    :func:`stall_draws`); a process draws its own (the same numbers as :func:`stall_draws` summed).
    """
    if stream is None or stream.stall_p <= 0 or stall is None:
        return None
    if stream.stall_process:
        return _process(stream, slot.block, slot.node.id, slot.flat, np.asarray(slot.runs), N, cache)
    stall = np.asarray(stall, dtype=np.float64)
    if not stall.any():
        return None
    k = stall_position(np.asarray(stall_u), N)
    return StallEvents(k[:, None], stall[:, None], stall)


def _process(st, block, key_node: int, flat: int, runs: np.ndarray, N: np.ndarray, cache: bool) -> StallEvents:
    """A stall process over the calls ``runs`` of one instance slot (see the module doc)."""
    C = len(runs)
    by_token = st.stall_form == "per_token" or one_token_chunks(st)
    starts = None
    if by_token:
        M = np.maximum(N - 1, 0)
    else:  # chunk j + 2 starts at token cum[:, j] (0-based) when that is below N
        starts = np.cumsum(group_sizes(st.chunk, block, key_node, CHUNKS, flat, runs, N, cache), axis=1)
        M = np.count_nonzero(starts < N[:, None], axis=1)
    opp = _places(st, block, key_node, flat, runs, M, cache)  # (C, R) opportunities, 1-based, increasing
    valid = opp <= M[:, None]
    R = int(valid.sum(axis=1).max()) if C else 0
    valid, opp = valid[:, :R], opp[:, :R]
    o = np.where(valid, opp, 1).astype(np.int64)
    pos = o if by_token else np.take_along_axis(starts, o - 1, axis=1)
    pos = np.where(valid, pos, -1)
    if st.stall_s.is_constant:
        length = np.where(valid, max(float(st.stall_s.constant_value), 0.0), 0.0)
    else:
        z = columns(token_rows(block, key_node, STALL_LENS, flat, R, cache), runs, block.n)
        length = np.where(valid, np.maximum(st.stall_s.transform(z), 0.0), 0.0)
    return StallEvents(pos, length, _sum_left_to_right(length))


def _sum_left_to_right(x: np.ndarray) -> np.ndarray:
    """Each row's sum, added left to right from 0.0 (``((0 + x_1) + x_2) + ...``, as the token timeline
    accumulates the stalls): a running sum, which NumPy adds in order (a plain sum adds pairwise)."""
    if not x.shape[1]:
        return np.zeros(x.shape[0])
    return np.cumsum(np.concatenate([np.zeros((x.shape[0], 1)), x], axis=1), axis=1)[:, -1]


def _places(st, block, key_node: int, flat: int, runs: np.ndarray, M: np.ndarray, cache: bool) -> np.ndarray:
    """The opportunities (1-based, increasing per call) where stalls happen; beyond ``M`` they do not."""
    C, top = len(runs), int(M.max()) if len(M) else 0
    if st.stall_form == "at_chunks":  # chunk j is opportunity j - 1; chunks none of these answers has are dropped
        at = st.stall_at[: bisect.bisect_right(st.stall_at, top + 1)]
        return np.broadcast_to(np.asarray(at, dtype=np.float64) - 1.0, (C, len(at)))
    p = st.stall_p
    if p >= 1.0 or top == 0:
        return np.broadcast_to(np.arange(1, top + 1, dtype=np.float64), (C, top))
    log_q = math.log1p(-p)
    rows = _first_rows(p, top)
    while True:  # more rows until every call's places pass its M (rows are token-major: a prefix is stable)
        z = columns(token_rows(block, key_node, STALL_GAPS, flat, rows, cache), runs, block.n)
        u = np.minimum(special.ndtr(z), _U_MAX)
        opp = np.cumsum(np.maximum(np.ceil(np.log1p(-u) / log_q), 1.0), axis=1)
        if rows >= top or bool(np.all(opp[:, -1] > M)):
            return opp
        rows = min(top, 2 * rows)


def _first_rows(p: float, top: int) -> int:
    """How many geometric gaps :func:`_places` draws at first for answers of up to ``top`` opportunities: the
    expected stalls plus 4 standard deviations and 4 (it draws more, doubling, when a call needs them; the
    places do not depend on how many were drawn)."""
    return min(top, math.ceil(p * top + 4.0 * math.sqrt(p * top) + 4.0))


def stalled_by(sb, t: np.ndarray) -> np.ndarray:
    """Seconds of each call's stalls already spent at ``t`` (a stall before token ``i`` starts when token
    ``i - 1`` arrives; the stall of an answer without a visible token ends the call: it starts at
    ``end - stall``)."""
    C = len(sb.N)
    ev = sb.stalls
    if ev is None:
        return np.zeros(C)
    width = sb.A.shape[1]
    at = np.take_along_axis(sb.A, np.clip(ev.pos - 1, 0, width - 1), axis=1)  # (calls, stalls): when each starts
    at = np.where((sb.N > 0)[:, None], at, (sb.end - ev.total)[:, None])
    live = ev.length > 0
    t = np.asarray(t, dtype=np.float64)[:, None]
    return _sum_left_to_right(np.where(live, np.minimum(np.maximum(t - np.where(live, at, t), 0.0), ev.length), 0.0))
