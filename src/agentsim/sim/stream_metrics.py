"""What a person lives through while an answer streams: each call's metrics, from the send and from the ask.

For every completed call with a consumer (a reader, a voice, a UI, or none but an interruption), the
call's token timeline is rebuilt from its records with the engines' rules
(:func:`agentsim.sim.streaming.streams`), and the metrics are read from it (times in seconds):

* **from the send** ``t0`` (DESIGN.md §3.2): ``ttft_s = d_1 - t0`` (the first visible token, delivered);
  the gaps between successive deliveries give ``longest_gap_s``, ``gaps_over_250ms``, ``gaps_over_1s``
  and the ITL percentiles ``itl_p50_s``, ``itl_p95_s``, ``itl_p99_s`` (linear interpolation over the call's
  gaps); the consumer kind's own metrics (``reader_done_s``, ``first_audio_s``...: its module in
  :mod:`agentsim.consumers`); the Andes QoE (arXiv 2404.16283 §3.1) with expected token times
  ``x_i = t0 + T + (i - 1) / v`` and digested times ``u_i = max(d_i, x_i)``:
  ``qoe = sum (T_end - u_i) / sum (T_end - x_i)``, ``T_end = max u_i`` (1 when both sums are 0);
* **from the ask** (contract v1.2): the person asked at the run's start ``t_ask``, and every step before
  the answer (tools, routing calls, retrieval, queueing) is part of their wait. ``first_word_s = d_1 -
  t_ask``; each of the kind's metrics that counts from the send (``ConsumerKind.since_send``) has a twin
  ``<name>_from_ask_s`` = the metric + ``(t0 - t_ask)`` (``reader_wait_from_ask_s`` counts the wait before
  the send too); ``qoe_from_ask`` is the QoE with ``x_i = t_ask + T + (i - 1) / v``; and for a voice
  ``voice_to_voice_s`` = first audio − the end of the person's speech (the start of the latest ``listen``
  step at or before the send; the ask when the scenario has none);
* **interruptions**: the person barges in at ``t`` when drawn (:func:`agentsim.sim.streaming.interruption`),
  whatever the model is doing (contract v1.2): the call is *interrupted*. The consumer stops there
  (reading, speech: their kinds' ``stop``; one that had consumed the whole answer by ``t`` has nothing
  left to stop); the call is *cut* only when the model was still generating (the engines end it at
  ``t``). ``interrupted_share`` counts the person's interruptions (the same share whatever the model's
  speed), ``cut_share`` the cuts, ``wasted_usd`` the cost of the interrupted calls (0 for the others).

:func:`block_metrics` gives, per call node, each metric's values over the block's completed calls (run
order, then instance) and each call's run (``_run``); :func:`run_values` the runs table's columns
``CALL.METRIC``: the value of the call's first completed instance in each run.
"""

from __future__ import annotations

import numpy as np

from agentsim.model.consumers import COMMON, VOICE, from_ask, metrics_of
from agentsim.model.registry import consumer_kind, consumer_kinds, table_metrics
from agentsim.plan.nodes import OUTPUT, ConsumerCfg, Plan
from agentsim.sim.call_timeline import CallSlot, timeline
from agentsim.sim.stalls import stall_draws
from agentsim.sim.stream_draws import batch_runs
from agentsim.sim.streaming import (
    StreamBatch,
    delivered,
    interrupt_times,
    seen,
    slot_width,
    streams,
)

__all__ = [
    "COMMON",
    "COMMON_LABELS",
    "COMMON_TABLE",
    "VOICE",
    "block_metrics",
    "consumer_metrics",
    "consumer_timeline",
    "from_ask",
    "label_of",
    "metrics_of",
    "person_stop",
    "reading_order",
    "recorded",
    "run_values",
    "table_rows",
]

# Labels of the common metrics (a consumer kind labels its own: ConsumerKind.labels), in reading order; the CLI
# table shows those of COMMON_TABLE, around each kind's own (ConsumerKind.table)
COMMON_LABELS = {
    "ttft_s": "TTFT seen",
    "first_word_s": "first word from ask",
    VOICE: "voice to voice",
    "longest_gap_s": "longest gap",
    "gaps_over_250ms": "gaps over 250 ms",
    "gaps_over_1s": "gaps over 1 s",
    "itl_p50_s": "ITL p50",
    "itl_p95_s": "ITL p95",
    "itl_p99_s": "ITL p99",
    "qoe": "QoE",
    "qoe_from_ask": "QoE from ask",
    "interrupted_share": "interrupted",
    "cut_share": "cut while generating",
    "wasted_usd": "wasted",
}
COMMON_TABLE = ("ttft_s", "first_word_s", "longest_gap_s", "qoe", "interrupted_share")
_FIRST = 3  # the metrics read before a kind's own: TTFT, the first word, voice to voice


def table_rows() -> list[tuple[str, str]]:
    """(metric, label) of the streaming rows of the CLI table: TTFT, each consumer kind's, then the others."""
    rows = [(m, COMMON_LABELS[m]) for m in COMMON_TABLE[:2]]
    for kind in consumer_kinds().values():
        rows += [(m, label_of(m)) for m in table_metrics(kind)]
        if kind.voice:
            rows.append((VOICE, COMMON_LABELS[VOICE]))
    return rows + [(m, COMMON_LABELS[m]) for m in COMMON_TABLE[2:]]


def label_of(metric: str) -> str:
    """A streaming metric's short label: the common ones', its consumer kind's, else its name in words."""
    if metric in COMMON_LABELS:
        return COMMON_LABELS[metric]
    for kind in consumer_kinds().values():
        if metric in kind.labels:
            return kind.labels[metric]
    return metric.removesuffix("_s").replace("_", " ")


def reading_order() -> list[str]:
    """Every labelled streaming metric in reading order: TTFT, the first word and voice to voice, each consumer
    kind's own (in its ``labels`` order), then the other common ones."""
    common = list(COMMON_LABELS)
    own = [m for kind in consumer_kinds().values() for m in kind.labels if m not in COMMON_LABELS]
    return [*common[:_FIRST], *own, *common[_FIRST:]]


# --------------------------------------------------------------------------- one batch of calls


def consumer_metrics(cons: ConsumerCfg, sb: StreamBatch, n: np.ndarray, draws=None, stop=None, ask=None) -> dict:
    """Per-call metrics of one consumer over the first ``n`` delivered tokens of each call (see module doc):
    the common ones here, the consumer kind's own from its ``measure`` (with ``draws``, what its ``draws``
    gave: a voice's sentence lengths and first-audio latencies). ``stop``: where the person interrupts
    (absolute; ``inf``: not); ``ask``: when the person asked (absolute; default: the send). ``_end``: when the
    consumer would have consumed the whole answer (``inf`` when it was cut off)."""
    D, send = sb.D, sb.send
    C, width = D.shape
    Dv = delivered(sb, n)
    has = n > 0
    out: dict[str, np.ndarray] = {"ttft_s": np.where(has, D[:, 0] - send, np.nan)}
    out.update(_gaps(sb, Dv, C, width))
    i = np.arange(width)
    missing = None if (n >= width).all() else i[None, :] >= n[:, None]  # where Dv is NaN: beyond n
    out["qoe"] = _qoe(cons, Dv, send, n, missing)
    if ask is not None:
        out["qoe_from_ask"] = _qoe(cons, Dv, ask, n, missing)
    last = np.take_along_axis(D, np.clip(n - 1, 0, max(width - 1, 0))[:, None], axis=1)[:, 0] if width else send
    out["_end"] = np.where(n >= sb.N, last, np.inf)  # without a consumer of its own: the last token
    if cons.kind != "none":
        out.update(consumer_kind(cons.kind).measure(cons, sb, n, stop=stop, **(draws or {})))
    return out


def _gaps(sb: StreamBatch, Dv: np.ndarray, C: int, width: int) -> dict[str, np.ndarray]:
    """The gaps between successive deliveries, as the client sees them (chunk to chunk)."""
    if width < 2:
        zero, none = np.zeros(C), np.full(C, np.nan)
        return {"longest_gap_s": zero, "gaps_over_250ms": zero, "gaps_over_1s": zero,
                "itl_p50_s": none, "itl_p95_s": none, "itl_p99_s": none}  # fmt: skip
    with np.errstate(invalid="ignore"):
        gaps = Dv[:, 1:] - Dv[:, :-1]
        if not sb.chunk_start.all():
            gaps[~sb.chunk_start[:, 1:]] = np.nan  # NaN: no gap there (inside a chunk)
        longest = np.fmax.reduce(gaps, axis=1)
        out = {
            "longest_gap_s": np.where(np.isnan(longest), 0.0, longest),
            "gaps_over_250ms": np.count_nonzero(gaps > 0.25, axis=1).astype(np.float64),
            "gaps_over_1s": np.count_nonzero(gaps > 1.0, axis=1).astype(np.float64),
        }
    out["itl_p50_s"], out["itl_p95_s"], out["itl_p99_s"] = _row_quantiles(gaps, (0.5, 0.95, 0.99))
    return out


def _qoe(cons: ConsumerCfg, Dv: np.ndarray, origin: np.ndarray, n: np.ndarray, missing) -> np.ndarray:
    """Andes QoE over the delivered tokens, the expected curve starting at ``origin`` (see module doc).
    ``missing``: where ``Dv`` is NaN (beyond ``n``; None: nowhere). The sums leave those tokens out by adding
    zeros there, the same sums as ``nansum`` without its copies (one pass fewer over the batch, per call)."""
    i = np.arange(Dv.shape[1])
    x = origin[:, None] + cons.qoe_ttft + i[None, :] / cons.qoe_rate
    u = np.maximum(Dv, x)  # NaN beyond n
    T_end = np.fmax.reduce(u, axis=1) if Dv.shape[1] else np.full(len(n), np.nan)
    if missing is not None:
        np.copyto(x, 0.0, where=missing)
        np.copyto(u, 0.0, where=missing)
    nf = n.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        whole = nf * T_end - x.sum(axis=1)
        actual = nf * T_end - u.sum(axis=1)
        return np.where(n <= 0, np.nan, np.where(whole > 0, np.maximum(actual, 0.0) / whole, 1.0))


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


def consumer_timeline(
    cons: ConsumerCfg, sb: StreamBatch, n: np.ndarray, slot: CallSlot, stop=None
) -> dict[str, np.ndarray]:
    """The consumer kind's per-token times of a batch of calls (``read_s``, ``spoken_s``; none for some kinds);
    NaN for a token consumed after ``stop`` (the person's interruption), as the metrics count them."""
    kind = consumer_kind(cons.kind)
    if kind.timeline is None:
        return {}
    times = kind.timeline(cons, sb, n, **(kind.draws(cons, slot, n) if kind.draws else {}))
    if stop is None:
        return times
    return {k: np.where(v > stop[:, None], np.nan, v) for k, v in times.items()}  # NaN compares quietly


def person_stop(plan: Plan, slot: CallSlot, tier_index: int, sb: StreamBatch):
    """Where the person interrupts each call of the batch (absolute; ``inf``: they do not), or None for a call
    that cannot be interrupted (:func:`agentsim.sim.streaming.interrupt_times`, as the engines decide it)."""
    if slot.node.interrupt is None:
        return None
    drawn, t = interrupt_times(slot, sb)  # as interruption() decides it, without the billing
    return np.where(drawn, t, np.inf)


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
        width = slot_width(block, node)
        status = t["status"].reshape(block.n, width)
        out_drawn = np.broadcast_to(block.get(node.id, OUTPUT), t["status"].shape).reshape(block.n, width)
        parts: dict[str, list] = {k: [] for k in (*metrics_of(cons.kind), "_tps")}
        order: list[np.ndarray] = []
        for flat in range(width):
            done_runs = np.nonzero(status[:, flat] == DONE)[0]
            tiers = t["tier"].reshape(block.n, width)[done_runs, flat]
            for tid in np.unique(tiers):
                runs_t = done_runs[tiers == tid]
                step = batch_runs(int(out_drawn[runs_t, flat].max()))
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
    records with the engines' own rules: ``(stream, tokens the consumer got, cut)``."""
    block, node = slot.block, slot.node
    t = result.calls[node.id]
    width = slot_width(block, node)

    def pick(x):  # the slot's calls' values of a (runs, *instances) array (or one that broadcasts to it)
        return np.broadcast_to(x, t["status"].shape).reshape(block.n, width)[slot.runs, slot.flat]

    N = pick(block.get(node.id, OUTPUT)).astype(np.int64)
    stall, stall_u = np.zeros(len(slot.runs)), np.zeros(len(slot.runs))
    sd = stall_draws(plan, block, node, tier_index)
    if sd is not None:
        stall, stall_u = pick(sd[0]), pick(sd[1])
    tl = timeline(pick(t["t_start"]), pick(t["ttft"]), N, pick(t["reasoning"]), pick(t["tps"]), stall)
    sb = streams(plan.tiers[tier_index], slot, tl, stall_u, cache=cache)
    cut_by = result.interrupted.get(node.id)
    cut = np.zeros(len(slot.runs), dtype=bool) if cut_by is None else pick(cut_by)
    return sb, np.where(cut, seen(sb, pick(t["t_end"])), N), cut


def _batch(plan: Plan, result, slot: CallSlot, tier_index: int) -> dict[str, np.ndarray]:
    """The consumer metrics of a batch of recorded calls (of one slot and tier), from the send and the ask."""
    node, block = slot.node, slot.block
    cons = node.consumer
    sb, n, cut = recorded(plan, result, slot, tier_index)
    kind = None if cons.kind == "none" else consumer_kind(cons.kind)
    draws = kind.draws(cons, slot, n) if kind is not None and kind.draws else {}
    stop = person_stop(plan, slot, tier_index, sb)  # the engines cut there if running
    start = np.zeros(block.n) if result.start is None else result.start
    ask = start[slot.runs]
    vals = consumer_metrics(cons, sb, n, draws, stop=stop, ask=ask)
    vals.pop("_end")
    interrupted = np.zeros(len(n), dtype=bool) if stop is None else np.isfinite(stop)
    lead = sb.send - ask  # from the ask to the send
    vals["first_word_s"] = vals["ttft_s"] + lead
    for m in () if kind is None else kind.since_send:
        vals[from_ask(m)] = vals[m] + lead
    if kind is not None and kind.voice:  # from the end of the person's speech to the voice's first audio
        vals[VOICE] = vals[kind.voice] + (sb.send - _speech_end(result, slot, sb.send, ask))
    width = slot_width(block, node)
    t = result.calls[node.id]
    vals["_tps"] = t["tps"].reshape(block.n, width)[slot.runs, slot.flat]  # for the apparate point
    vals["interrupted_share"] = interrupted.astype(np.float64)
    vals["cut_share"] = cut.astype(np.float64)
    vals["wasted_usd"] = np.where(interrupted, t["cost"].reshape(block.n, width)[slot.runs, slot.flat], 0.0)
    return vals


def _speech_end(result, slot: CallSlot, send: np.ndarray, ask: np.ndarray) -> np.ndarray:
    """When the person stopped speaking before each call: the start of the latest ``listen`` step (a step
    that keeps its start) at or before the send, else the ask."""
    best = np.full(len(send), -np.inf)
    for starts in result.starts.values():
        s = starts.reshape(slot.block.n, -1)[slot.runs]
        ok = s <= send[:, None]  # NaN (a listen that did not happen) is never before (and compares quietly)
        if s.shape[1]:
            best = np.maximum(best, np.where(ok, s, -np.inf).max(axis=1))
    return np.where(np.isfinite(best), best, ask)


def run_values(plan: Plan, per_node: dict[int, dict[str, np.ndarray]], n: int) -> dict[str, np.ndarray]:
    """The runs table's streaming columns ``CALL.METRIC``: per run, the value of the call's first completed
    instance (NaN where the run has none). Nodes sharing a step name fill one column, in node order."""
    out: dict[str, np.ndarray] = {}
    for node in plan.calls:
        if node.consumer is None:
            continue
        names = metrics_of(node.consumer.kind)
        m = per_node.get(node.id)
        for metric in names:
            col = out.setdefault(f"{node.name}.{metric}", np.full(n, np.nan))
            if m is None or not len(m["_run"]):
                continue
            runs, first = np.unique(m["_run"], return_index=True)
            fill = np.isnan(col[runs])
            col[runs[fill]] = m[metric][first[fill]]
    return out
