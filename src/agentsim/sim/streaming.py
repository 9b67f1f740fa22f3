"""Streaming: how a call's answer arrives, token by token; where the person interrupts.

The engines decide when a call starts and ends; this module decides what happens in between,
for any number of calls at once (NumPy arrays over calls, never a Python loop per token).
Both engines call the same functions, so their streaming numbers agree to the last bit. What the
consumers live through is :mod:`agentsim.sim.stream_metrics`.

**Arrival of the visible tokens** (DESIGN.md §3.2). A call sent at ``t0`` with TTFT ``ttft``,
``N`` visible and ``R`` reasoning tokens at ``tps`` tokens/s::

    a_1 = t0 + ttft + R / tps                       (reasoning decode is invisible)
    end = t0 + ((ttft + (N + R) / tps) + stall)     (the call's end, as the engines compute it)
    a_i = a_1 + (i - 1) * (end - stall - a_1) / (N - 1)     for i = 1..N,   a_N = end

* ``jitter_cv``: the ``N - 1`` gaps are re-spaced by weights ``w_j`` (lognormal, mean 1, that CV),
  ``a_i = a_1 + (end - stall - a_1) * (w_1 + ... + w_{i-1}) / (w_1 + ... + w_{N-1})``; the end stays.
* ``stall``: the stream pauses, and every later token arrives that much later, and so does the call's
  end (the engines add a call's total stall to it; the breakdown reports it as ``stall``): once per call
  with probability ``p``, after token ``k = 1 + floor(u * (N - 1))`` (``u`` uniform), or as a process
  (``per_chunk``, ``per_token``, ``at_chunks``), any number of times (:mod:`agentsim.sim.stalls`).
* ``chunk_tokens``: tokens are delivered in groups (sizes drawn per group); a group is delivered at
  the arrival of its last token, the first group at ``a_1``. The consumer sees delivery times ``d_i``.

**Interruption** (:func:`interruption`, contract v1.2): the person barges in at ``t = d_1 + X`` (or first
audio + X), whatever the model is doing then. If that is before the call's end the call is *cut*: it
ends at ``t``; its reasoning and the visible tokens that have arrived by ``t`` (``a_i <= t``) are billed;
only those join the context. Reading and speech stop at ``t`` either way (:mod:`~agentsim.sim.stream_metrics`).

**Engines.** The DES applies :func:`streams`, :func:`interruption`, ``stalls.stalled_by`` and the start
of a step that follows the call (``Node.starts_on``: a pipeline's) to one call at a time; the fast path
to all the runs of one instance slot at once. Every operation is per row, so both get the same bits.

What a consumer kind adds (a voice's sentences and first audio) is its module's (:mod:`agentsim.consumers`),
and when a step that follows a call starts is its kind's (``Node.starts_on``). Per-token random numbers
(jitter weights, chunk sizes, stall places) come from streams
keyed like every other draw (:mod:`agentsim.sim.stream_draws`), filled token-major so a call's numbers
do not depend on the other calls.
"""

from __future__ import annotations

import math

import numpy as np

from agentsim.model import special
from agentsim.model.registry import consumer_kind
from agentsim.plan.nodes import CHUNKS, GAPS, INTERRUPT_P, INTERRUPT_X, Plan
from agentsim.plan.sampling import Block
from agentsim.sim.call_timeline import CallSlot, CallTimeline
from agentsim.sim.stalls import one_token_chunks, stall_events
from agentsim.sim.stream_draws import BATCH_ELEMENTS, columns, group_sizes, token_rows

__all__ = [
    "BATCH_ELEMENTS",
    "StreamBatch",
    "arrived",
    "delivered",
    "interrupt_times",
    "interruption",
    "seen",
    "slot_values",
    "slot_width",
    "streams",
]

ARRIVED_TOL = 1e-9  # a token arriving within this many seconds after t counts as arrived by t

# --------------------------------------------------------------------------- timelines


class StreamBatch:
    """Arrival (``A``) and delivery (``D``) times of the visible tokens of a batch of calls.

    Matrices are ``(calls, width)``; entries beyond a call's ``N`` are NaN. ``chunk_start[c, i]``
    is True where token ``i`` (0-based) starts a new delivery (a gap the client sees). ``stalls``: the
    calls' :class:`~agentsim.sim.stalls.StallEvents` (None: no stall).
    """

    __slots__ = ("A", "D", "N", "chunk_start", "end", "send", "stalls")

    def __init__(self, A, D, N, chunk_start, send, end, stalls=None):
        self.A, self.D, self.N, self.chunk_start, self.send, self.end = A, D, N, chunk_start, send, end
        self.stalls = stalls


def streams(tier, slot: CallSlot, tl: CallTimeline, stall_u: np.ndarray, *, cache: bool = False) -> StreamBatch:
    """Token timelines of the calls of ``slot`` (their timeline ``tl``: arrays over them), on ``tier``.

    ``tl.stall`` is each call's total stall (an array, 0 where none) and ``stall_u`` the uniform placing a
    single stall (the ``once`` form; a stall process draws its places, :mod:`agentsim.sim.stalls`).
    """
    block, node, flat, runs = slot.block, slot.node, slot.flat, slot.runs
    send, a1, end, N, stall = tl.send, tl.first_visible, tl.end, tl.output, tl.stall
    C = len(runs)
    width = max(int(N.max()) if C else 1, 1)
    i = np.arange(width)
    span = (end - stall) - a1
    st = tier.stream
    if st is not None and st.jitter_cv > 0 and width >= 2:
        sigma = math.sqrt(math.log1p(st.jitter_cv**2))
        z = columns(token_rows(block, node.id, GAPS, flat, width - 1, cache), runs, block.n)
        w = np.exp(sigma * z - 0.5 * sigma * sigma)
        w = np.where(i[None, 1:] < N[:, None], w, 0.0)  # gap j (1-based) exists when j < N
        cum = np.concatenate([np.zeros((C, 1)), np.cumsum(w, axis=1)], axis=1)
        total = cum[np.arange(C), np.maximum(N - 1, 0)]
        with np.errstate(invalid="ignore"):  # 0 / 0 for an answer of at most one token (no gap): NaN, replaced below
            A = a1[:, None] + span[:, None] * (cum / total[:, None])
    else:
        denom = np.maximum(N - 1, 1).astype(np.float64)
        A = a1[:, None] + (span[:, None] * i[None, :]) / denom[:, None]
    A[:, 0] = a1
    ev = stall_events(st, slot, N, stall, stall_u, cache)
    if ev is not None and ev.pos.size:  # each stall delays its token and every later one
        S = np.zeros((C, width + 1))
        np.put_along_axis(S, np.where(ev.pos >= 0, np.minimum(ev.pos, width), width), ev.length, axis=1)
        A = A + np.cumsum(S[:, :width], axis=1)
    many = N >= 2
    A[many, N[many] - 1] = end[many]
    A[i[None, :] >= N[:, None]] = np.nan
    # chunks: a group is delivered when its last token arrives; the first group at a_1
    if one_token_chunks(st):
        D = A
        chunk_start = np.ones((C, width), dtype=bool)
    else:
        sizes_ = group_sizes(st.chunk, block, node.id, CHUNKS, flat, runs, N, cache)
        ends = np.cumsum(sizes_, axis=1) - 1  # 0-based index of each group's last token
        is_end = np.zeros((C, width + 1), dtype=bool)
        np.put_along_axis(is_end, np.minimum(ends, width), True, axis=1)
        is_end = is_end[:, :width]
        is_end[np.arange(C), np.maximum(N - 1, 0)] = True
        idx = np.where(is_end, i[None, :], width - 1)
        last = np.minimum.accumulate(idx[:, ::-1], axis=1)[:, ::-1]
        D = np.take_along_axis(A, last, axis=1)
        first = i[None, :] <= last[:, :1]
        D = np.where(first, A[:, :1], D)
        D[i[None, :] >= N[:, None]] = np.nan
        chunk_start = np.ones((C, width), dtype=bool)
        chunk_start[:, 1:] = last[:, 1:] != last[:, :-1]
    return StreamBatch(A, D, N, chunk_start, send, end, ev)


def arrived(A: np.ndarray, t: np.ndarray) -> np.ndarray:
    """How many tokens of each call have arrived by ``t`` (``a_i <= t``, within ARRIVED_TOL; NaN: no token)."""
    return np.sum((t + ARRIVED_TOL)[:, None] >= A, axis=1)


def seen(sb: StreamBatch, t: np.ndarray) -> np.ndarray:
    """How many tokens of each call cut at ``t`` its consumer has: those delivered by ``t``, but never more
    than have arrived (the first group is delivered at ``a_1``; of a call cut before the group's last
    token, only the arrived, billed tokens exist)."""
    return np.minimum(arrived(sb.D, t), arrived(sb.A, t))


# --------------------------------------------------------------------------- interruptions


def interruption(plan: Plan, slot: CallSlot, tier, sb: StreamBatch):
    """Where the person interrupts each call of ``slot``: ``(drawn, t, cut, billed visible tokens)`` arrays.

    The person barges in at ``t`` (:func:`interrupt_times`) when drawn, whatever the model is doing then
    (contract v1.2). The call is ``cut`` -- it ends at ``t`` with its reasoning and the visible tokens that
    have arrived by ``t`` (``a_i <= t``) billed -- only when ``t`` falls before its end.
    """
    drawn, t = interrupt_times(slot, sb)
    cut = drawn & (t < sb.end)
    return drawn, t, cut, np.where(cut, arrived(sb.A, t), sb.N)


def interrupt_times(slot: CallSlot, sb: StreamBatch):
    """``(drawn, t)``: whether the person interrupts each call of ``slot`` (``u < p``, an answer with tokens)
    and when: ``t = d_1 + X`` (``after_first_word`` / ``after_first_token``: the first visible token, as
    delivered) or ``first audio + X`` (``after_first_audio``: the call's consumer kind's ``first_audio``)."""
    block, node, flat, runs = slot.block, slot.node, slot.flat, slot.runs
    cfg = node.interrupt
    u = special.ndtr(slot_values(block.get(node.id, INTERRUPT_P), block, node, runs, flat))
    x = slot_values(block.get(node.id, INTERRUPT_X), block, node, runs, flat)
    if cfg.after == "first_audio":  # a kind with a voice (the call's check): when the person first hears it
        cons = node.consumer
        t = consumer_kind(cons.kind).first_audio(cons, slot, sb) + x
    else:  # first_token, first_word: the first visible token, delivered at a_1
        t = sb.D[:, 0] + x
    return (u < cfg.p) & (sb.N > 0), t


def slot_width(block: Block, node) -> int:
    """The instance slots of ``node`` in one run (the product of its repeat and fan-out counts)."""
    return int(np.prod(block.shape(node.scope), dtype=np.int64))


def slot_values(x, block: Block, node, runs, flat: int) -> np.ndarray:
    """The values of a draw ``x`` (shaped, or broadcast to, ``(runs, *instances)`` of ``node``) at the calls
    ``runs`` of instance slot ``flat``, without copying the block's array (the DES asks for one call at a time)."""
    dims = block.shape(node.scope)
    where = np.unravel_index(flat, dims) if dims else ()
    return np.broadcast_to(x, (block.n, *dims))[(np.asarray(runs), *where)]


def delivered(sb: StreamBatch, n: np.ndarray) -> np.ndarray:
    """The delivery times of each call's first ``n`` tokens (calls x tokens; NaN beyond)."""
    if np.array_equal(n, sb.N):
        return sb.D  # NaN beyond each call's N already
    i = np.arange(sb.D.shape[1])
    return np.where(i[None, :] < n[:, None], sb.D, np.nan)
