"""Streaming: how a call's answer arrives, token by token, and what its consumer lives through.

The engines decide when a call starts and ends; this module decides what happens in between,
for any number of calls at once (NumPy arrays over calls, never a Python loop per token).
Both engines call the same functions, so their streaming numbers agree to the last bit.

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

**Consumers** (times measured from the send time ``t0``):

* reader at ``r`` tokens/s: ``f_i = max(d_i, f_{i-1}) + 1/r``, ``f_0 = t0``;
  ``reader_done_s = f_N - t0``, ``reader_wait_s = sum max(0, d_i - f_{i-1}) = f_N - t0 - N / r``.
* speech: sentences of ``sentence_tokens`` tokens (the last may be shorter) ending at tokens
  ``e_k``; sentence ``k`` plays from ``s_k = max(d_{e_k} + first_audio, s_{k-1} + l_{k-1})`` for
  ``l_k = tokens_k / tokens_per_s``; ``first_sentence_s = d_{e_1} - t0``, ``first_audio_s = s_1 - t0``,
  ``silence_s = sum_{k>=2} (s_k - (s_{k-1} + l_{k-1}))``, ``longest_silence_s`` its largest term.
* render needing ``m`` tokens: ``first_render_s = d_m - t0`` (``all``: ``m = N``).
* every consumer: ``ttft_s = d_1 - t0``; the gaps between successive deliveries (chunk to chunk)
  give ``longest_gap_s``, ``gaps_over_250ms``, ``gaps_over_1s``, ``itl_p50_s``, ``itl_p99_s``;
  the Andes QoE (arXiv 2404.16283) with expected token times ``x_i = t0 + T + (i - 1) / v`` and
  digested times ``u_i = max(d_i, x_i)``: ``qoe = sum (T_end - u_i) / sum (T_end - x_i)`` with
  ``T_end = max u_i`` (1 when both sums are 0), i.e. 1 - (area between the expected and the actual
  token curves) / (area under the expected curve).

**Interruption** (:func:`interruption`): at ``t = a_1 + X`` (or first audio + X) if that is before
the call's end. The call ends at ``t``; its reasoning and the visible tokens that have arrived by
``t`` (``a_i <= t``) are billed; only those join the context.

**Engines.** The DES applies :func:`streams`, :func:`interruption`, ``stalls.stalled_by`` and
:func:`pipeline_offset` to one call at a time; the fast path to all the runs of one instance slot at
once. Every operation is per row, so both get the same bits. :func:`block_metrics` then computes the
consumer metrics from the records of either engine.

Per-token random numbers (jitter weights, chunk and sentence sizes) come from streams keyed like
every other draw (``SeedSequence(seed, spawn_key=(block, node, purpose, instance))``), filled
token-major so a call's numbers do not depend on the other calls.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from agentsim.model.registry import consumer_kind, consumer_kinds
from agentsim.plan.nodes import CHUNKS, GAPS, INTERRUPT_P, INTERRUPT_X, OUTPUT, SENTENCES, ConsumerCfg, Plan
from agentsim.plan.sampling import Block
from agentsim.sim.call_timeline import CallSlot, CallTimeline, timeline
from agentsim.sim.stalls import one_token_chunks, stall_draws, stall_events
from agentsim.sim.stream_draws import columns, group_sizes, sizes, token_rows

__all__ = [
    "COMMON",
    "StreamBatch",
    "consumer_metrics",
    "consumer_timeline",
    "delivered",
    "interruption",
    "metrics_of",
    "pipeline_offset",
    "recorded",
    "seen",
    "streams",
    "table_rows",
]

BATCH_ELEMENTS = 1 << 21  # tokens per batch of calls (memory of one matrix: 16 MiB)
ARRIVED_TOL = 1e-9  # a token arriving within this many seconds after t counts as arrived by t

# Metrics every consumer has (the order of summary.json): ttft_s, then the consumer kind's own, then the rest.
COMMON = (
    "ttft_s",
    "longest_gap_s",
    "gaps_over_250ms",
    "gaps_over_1s",
    "itl_p50_s",
    "itl_p99_s",
    "qoe",
    "interrupted_share",
    "wasted_usd",
)
# Labels of the common metrics the CLI table shows (a consumer kind labels its own: ConsumerKind.labels)
COMMON_LABELS = {
    "ttft_s": "TTFT seen",
    "longest_gap_s": "longest gap",
    "qoe": "QoE",
    "interrupted_share": "interrupted",
}


def metrics_of(kind: str) -> tuple[str, ...]:
    """The streaming metrics of a consumer kind, in the order of summary.json (``none``: the common ones)."""
    if kind == "none":  # a call without a consumer that can be interrupted
        return COMMON
    return (COMMON[0], *consumer_kind(kind).metrics, *COMMON[1:])


def table_rows() -> list[tuple[str, str]]:
    """(metric, label) of the streaming rows of the CLI table: TTFT, each consumer kind's, then the others."""
    rows = [("ttft_s", COMMON_LABELS["ttft_s"])]
    for kind in consumer_kinds().values():
        rows += list(kind.labels.items())
    return rows + [(m, label) for m, label in COMMON_LABELS.items() if m != "ttft_s"]


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
        with np.errstate(invalid="ignore", divide="ignore"):
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
    """How many tokens of each call have arrived by ``t`` (``a_i <= t``, within ARRIVED_TOL)."""
    with np.errstate(invalid="ignore"):
        return np.sum((t + ARRIVED_TOL)[:, None] >= A, axis=1)


def seen(sb: StreamBatch, t: np.ndarray) -> np.ndarray:
    """How many tokens of each call cut at ``t`` its consumer has: those delivered by ``t``, but never more
    than have arrived (the first group is delivered at ``a_1``; of a call cut before the group's last
    token, only the arrived, billed tokens exist)."""
    return np.minimum(arrived(sb.D, t), arrived(sb.A, t))


def sentence_ends(sampler, block: Block, key_node: int, flat: int, runs: np.ndarray, n: np.ndarray, cache=False):
    """Sentence lengths ``(calls, K)`` over ``n`` tokens: the last sentence shortened to fit, then zeros."""
    if sampler.is_constant:
        L = max(1, int(np.rint(sampler.constant_value)))
        K = max(-(-int(n.max()) // L) if len(n) else 1, 1)
        got = sizes(sampler, block, key_node, SENTENCES, flat, runs, K, cache)
    else:
        got = group_sizes(sampler, block, key_node, SENTENCES, flat, runs, n, cache)
    cum = np.minimum(np.cumsum(got, axis=1), n[:, None])
    start = np.concatenate([np.zeros((len(n), 1), dtype=np.int64), cum[:, :-1]], axis=1)
    return cum - start  # tokens per sentence; 0 once the answer is used up


# --------------------------------------------------------------------------- interruptions and pipelines


def first_audio_times(D, sent_tokens, fa):
    """First audio time (absolute) of each call: delivery of the first sentence's last token + first_audio."""
    e1 = np.maximum(sent_tokens[:, 0], 1) - 1
    return np.take_along_axis(D, e1[:, None], axis=1)[:, 0] + fa


def interruption(plan: Plan, slot: CallSlot, tier, sb: StreamBatch, fa=None):
    """Where each call of ``slot`` is interrupted: ``(interrupted, t, billed visible tokens)`` arrays.

    ``t = a_1 + X`` (after_first_token) or ``first audio + X`` (after_first_audio); a call is
    interrupted when drawn (``u < p``) and ``t`` falls before its end.
    """
    block, node, flat, runs = slot.block, slot.node, slot.flat, slot.runs
    cfg = node.interrupt
    shape_flat = np.asarray(runs) * _width(block, node) + flat
    u = special.ndtr(np.asarray(block.get(node.id, INTERRUPT_P)).reshape(-1)[shape_flat])
    x = np.broadcast_to(block.get(node.id, INTERRUPT_X), block.get(node.id, INTERRUPT_P).shape).reshape(-1)[shape_flat]
    if cfg.after == "first_token":
        t = sb.A[:, 0] + x
    else:
        cons = node.consumer
        sent = sentence_ends(cons.sentence, block, node.id, flat, np.asarray(runs), sb.N)
        t = first_audio_times(sb.D, sent, fa) + x
    hit = (u < cfg.p) & (t < sb.end) & (sb.N > 0)
    return hit, t, np.where(hit, arrived(sb.A, t), sb.N)


def pipeline_offset(pnode, slot: CallSlot, sb: StreamBatch, cut=None) -> np.ndarray:
    """When a pipeline after this call starts: delivery of token ``tokens`` (or of the first sentence's last).

    ``cut`` (optional): when each call is interrupted (``inf``: not). A cut call ends at the cut with the
    tokens that arrived by then: the pipeline starts at the cut at the latest, and at the cut too when its
    token never arrived (even if its chunk, the first, was delivered at ``a_1``): the call has fewer tokens.
    """
    block, flat, runs = slot.block, slot.flat, slot.runs
    N = sb.N
    if pnode.after_tokens is not None:
        m = np.minimum(pnode.after_tokens, N)
    else:
        call = pnode.call  # the call's consumer's sentences (a speech consumer's), else the pipeline's own
        own = getattr(call.consumer, "sentence", None)
        sampler, key = (own, call.id) if own is not None else (pnode.sentence, pnode.id)
        m = sentence_ends(sampler, block, key, flat, np.asarray(runs), N, cache=True)[:, 0]
    m = np.maximum(m, 1) - 1
    t = np.take_along_axis(sb.D, m[:, None], axis=1)[:, 0]
    if cut is not None:
        came = (cut + ARRIVED_TOL) >= np.take_along_axis(sb.A, m[:, None], axis=1)[:, 0]
        t = np.where(came, np.minimum(t, cut), cut)
    return np.where(N > 0, t, sb.end)


def _width(block: Block, node) -> int:
    return int(np.prod(block.shape(node.scope), dtype=np.int64))


# --------------------------------------------------------------------------- consumer metrics


def consumer_metrics(cons: ConsumerCfg, sb: StreamBatch, n: np.ndarray, sent_tokens=None, fa=None) -> dict:
    """Per-call metrics of one consumer over the first ``n`` delivered tokens of each call (see module doc):
    the common ones here, the consumer kind's own from its ``measure`` (with its draws: a speech consumer's
    sentence lengths ``sent_tokens`` and first-audio latencies ``fa``)."""
    D, send = sb.D, sb.send
    C, width = D.shape
    i = np.arange(width)
    Dv = delivered(sb, n)
    has = n > 0
    out: dict[str, np.ndarray] = {"ttft_s": np.where(has, D[:, 0] - send, np.nan)}
    # gaps between successive deliveries, as the client sees them (NaN: no gap there)
    with np.errstate(invalid="ignore"):
        if width >= 2:
            gaps = Dv[:, 1:] - Dv[:, :-1]
            if not sb.chunk_start.all():
                gaps[~sb.chunk_start[:, 1:]] = np.nan
            longest = np.fmax.reduce(gaps, axis=1)
            out["longest_gap_s"] = np.where(np.isnan(longest), 0.0, longest)
            out["gaps_over_250ms"] = np.count_nonzero(gaps > 0.25, axis=1).astype(np.float64)
            out["gaps_over_1s"] = np.count_nonzero(gaps > 1.0, axis=1).astype(np.float64)
            out["itl_p50_s"], out["itl_p99_s"] = _row_quantiles(gaps, (0.5, 0.99))
        else:
            out["longest_gap_s"] = np.zeros(C)
            out["gaps_over_250ms"] = out["gaps_over_1s"] = np.zeros(C)
            out["itl_p50_s"] = out["itl_p99_s"] = np.full(C, np.nan)
    # Andes QoE: expected x_i, digested u_i = max(d_i, x_i) over the delivered tokens
    x = send[:, None] + cons.qoe_ttft + i[None, :] / cons.qoe_rate
    u = np.maximum(Dv, x)  # NaN beyond n
    T_end = np.fmax.reduce(u, axis=1)
    x[np.isnan(u)] = np.nan
    nf = n.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        whole = nf * T_end - np.nansum(x, axis=1)
        actual = nf * T_end - np.nansum(u, axis=1)
        out["qoe"] = np.where(~has, np.nan, np.where(whole > 0, np.maximum(actual, 0.0) / whole, 1.0))
    if cons.kind != "none":
        draws = {} if sent_tokens is None else {"sentences": sent_tokens, "first_audio": fa}
        out.update(consumer_kind(cons.kind).measure(cons, sb, n, **draws))
    return out


def delivered(sb: StreamBatch, n: np.ndarray) -> np.ndarray:
    """The delivery times of each call's first ``n`` tokens (calls x tokens; NaN beyond)."""
    if np.array_equal(n, sb.N):
        return sb.D  # NaN beyond each call's N already
    i = np.arange(sb.D.shape[1])
    return np.where(i[None, :] < n[:, None], sb.D, np.nan)


def consumer_timeline(cons: ConsumerCfg, sb: StreamBatch, n: np.ndarray, slot: CallSlot) -> dict[str, np.ndarray]:
    """The consumer kind's per-token times of a batch of calls (``read_s``, ``spoken_s``; none for some kinds)."""
    kind = consumer_kind(cons.kind)
    if kind.timeline is None:
        return {}
    return kind.timeline(cons, sb, n, **(kind.draws(cons, slot, n) if kind.draws else {}))


def _row_quantiles(x: np.ndarray, qs) -> list[np.ndarray]:
    """Quantiles (linear interpolation) of each row's non-NaN values; NaN for a row without any."""
    srt = np.sort(x, axis=1)  # NaN last
    m = np.count_nonzero(~np.isnan(x), axis=1)
    out = []
    for q in qs:
        pos = q * np.maximum(m - 1, 0)
        lo = np.floor(pos).astype(np.int64)
        hi = np.minimum(lo + 1, np.maximum(m - 1, 0))
        a = np.take_along_axis(srt, lo[:, None], axis=1)[:, 0]
        b = np.take_along_axis(srt, hi[:, None], axis=1)[:, 0]
        out.append(np.where(m > 0, a + (b - a) * (pos - lo), np.nan))
    return out


# --------------------------------------------------------------------------- a block's metrics


def block_metrics(plan: Plan, result) -> dict[int, dict[str, np.ndarray]]:
    """Per call node with a consumer: metric -> values over its completed calls (run order, then instance)."""
    from agentsim.sim.records import DONE

    block = result.block
    out: dict[int, dict[str, np.ndarray]] = {}
    for node in plan.calls:
        cons = node.consumer
        if cons is None:
            continue
        t = result.calls[node.id]
        width = _width(block, node)
        status = t["status"].reshape(block.n, width)
        out_drawn = np.broadcast_to(block.get(node.id, OUTPUT), t["status"].shape).reshape(block.n, width)
        parts: dict[str, list] = {k: [] for k in (*metrics_of(cons.kind), "_tps")}
        order: list[np.ndarray] = []
        for flat in range(width):
            done_runs = np.nonzero(status[:, flat] == DONE)[0]
            tiers = t["tier"].reshape(block.n, width)[done_runs, flat]
            for tid in np.unique(tiers):
                runs_t = done_runs[tiers == tid]
                step = max(1, BATCH_ELEMENTS // max(1, int(out_drawn[runs_t, flat].max())))
                for lo in range(0, len(runs_t), step):
                    slot = CallSlot(block, node, flat, runs_t[lo : lo + step])
                    vals = _batch(plan, result, slot, int(tid))
                    for k in parts:
                        parts[k].append(vals[k])
                    order.append(slot.runs * width + flat)
        if not order:
            continue
        flat_index = np.concatenate(order)
        perm = np.argsort(flat_index, kind="stable")
        out[node.id] = {k: np.concatenate(v)[perm] for k, v in parts.items()}
        out[node.id]["_run"] = flat_index[perm] // width  # the block-local run of each call
    return out


def recorded(plan: Plan, result, slot: CallSlot, tier_index: int, cache: bool = True):
    """The token timelines of recorded calls (a block's, of ``slot``, run on one tier), rebuilt from their
    records with the engines' own rules: ``(stream, tokens the consumer got, interrupted)``."""
    block, node = slot.block, slot.node
    t = result.calls[node.id]
    width = _width(block, node)

    def pick(x):  # the slot's calls' values of a (runs, *instances) array (or one that broadcasts to it)
        return np.broadcast_to(x, t["status"].shape).reshape(block.n, width)[slot.runs, slot.flat]

    N = pick(block.get(node.id, OUTPUT)).astype(np.int64)
    stall, stall_u = np.zeros(len(slot.runs)), np.zeros(len(slot.runs))
    sd = stall_draws(plan, block, node, tier_index)
    if sd is not None:
        stall, stall_u = pick(sd[0]), pick(sd[1])
    tl = timeline(pick(t["t_start"]), pick(t["ttft"]), N, pick(t["reasoning"]), pick(t["tps"]), stall)
    sb = streams(plan.tiers[tier_index], slot, tl, stall_u, cache=cache)
    interrupted = result.interrupted.get(node.id)
    hit = np.zeros(len(slot.runs), dtype=bool) if interrupted is None else pick(interrupted)
    return sb, np.where(hit, seen(sb, pick(t["t_end"])), N), hit


def _batch(plan: Plan, result, slot: CallSlot, tier_index: int) -> dict[str, np.ndarray]:
    """The consumer metrics of a batch of recorded calls (of one slot and tier)."""
    cons = slot.node.consumer
    sb, n, hit = recorded(plan, result, slot, tier_index)
    kind = None if cons.kind == "none" else consumer_kind(cons.kind)
    draws = kind.draws(cons, slot, n) if kind is not None and kind.draws else {}
    vals = consumer_metrics(cons, sb, n, draws.get("sentences"), draws.get("first_audio"))
    width = _width(slot.block, slot.node)
    t = result.calls[slot.node.id]
    vals["_tps"] = t["tps"].reshape(slot.block.n, width)[slot.runs, slot.flat]  # for the apparate point
    vals["interrupted_share"] = hit.astype(np.float64)
    vals["wasted_usd"] = np.where(hit, t["cost"].reshape(slot.block.n, width)[slot.runs, slot.flat], 0.0)
    return vals
