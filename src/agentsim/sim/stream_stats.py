"""The ``streaming`` section of ``summary.json``: consumer metrics per call, summarised per variant.

Blocks of runs hand in, per call node with a consumer, one value per completed call of every
metric (:func:`agentsim.sim.stream_metrics.block_metrics`); this accumulator keeps them (in block order, so
the result does not depend on the number of workers) and summarises each metric over the calls of
a step name: ``{mean, p50, p95, p99}`` of its finite values (and for a score where more is better, the
QoE, its worst tail too: ``p5`` and ``p1``) (a metric that does not exist for a call,
e.g. the first render of an answer interrupted before it had enough tokens, is left out; ``null``
when no call has it).

The *apparate point* of a reader or a speaker is the output speed beyond which the consumer gains
nothing: its own pace, ``tokens_per_s`` (a reader of ``w`` words/min: ``w / 0.75 / 60``). A stream at
least that fast never makes an evenly paced consumer wait after the first token, so only TTFT still
matters; ``faster_share`` is the share of the step's calls whose output speed reached it.

What barge-ins cost (:meth:`StreamStats.barge_in`, the ``barge_in`` section, for scenarios with an
``interrupt``): over the runs whose calls are summarised, the person's interruptions and the cost of the
interrupted calls (``wasted_usd``, the tokens billed for an answer the person stopped) per turn (a run
without ``turns`` is one turn) and per run, and that cost as a share of the runs' whole cost.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from agentsim.model.consumers import higher_is_better
from agentsim.model.registry import consumer_kinds
from agentsim.plan.nodes import Plan
from agentsim.sim.stream_metrics import metrics_of

__all__ = ["StreamStats", "streaming_frame"]


def _stats(x: np.ndarray, metric: str = "") -> dict[str, float | None]:
    """Mean, p50, p95 and p99; for a score where more is better (the QoE) also its worst tail, p5 and p1."""
    low = higher_is_better(metric)
    x = x[np.isfinite(x)]
    if not x.size:
        return {"mean": None, "p50": None, "p95": None, "p99": None, **({"p5": None, "p1": None} if low else {})}
    p50, p95, p99 = np.percentile(x, [50, 95, 99])
    out = {"mean": float(np.mean(x)), "p50": float(p50), "p95": float(p95), "p99": float(p99)}
    if low:
        p5, p1 = np.percentile(x, [5, 1])
        out.update(p5=float(p5), p1=float(p1))
    return out


# Metrics of the interruption itself: not repeated over the calls the person let finish
_INTERRUPTION = ("interrupted_share", "cut_share", "wasted_usd")


class StreamStats:
    """Per-call streaming metrics of one variant, gathered block by block."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self.parts: dict[int, dict[str, list[np.ndarray]]] = {}

    def add(self, block_values: dict[int, dict[str, np.ndarray]] | None) -> None:
        for nid, metrics in (block_values or {}).items():
            store = self.parts.setdefault(nid, {})
            for k, v in metrics.items():
                store.setdefault(k, []).append(v)

    def values(self) -> dict[str, dict[str, np.ndarray]]:
        """Step name -> metric -> values over its calls (nodes of the same name pooled in node order)."""
        out: dict[str, dict[str, list[np.ndarray]]] = {}
        for node in self.plan.calls:
            if node.consumer is None or node.id not in self.parts:
                continue
            dest = out.setdefault(node.name, {})
            for k, arrs in self.parts[node.id].items():
                dest.setdefault(k, []).extend(arrs)
        return {name: {k: np.concatenate(v) for k, v in m.items()} for name, m in out.items()}

    def _consumers(self) -> dict[str, Any]:
        return {node.name: node.consumer for node in self.plan.calls if node.consumer is not None}

    def barge_in(self, runs: int, turns: float, cost_usd: float) -> dict[str, float | None]:
        """``{interruptions_per_turn, wasted_usd_per_turn, wasted_usd_per_run, wasted_share_of_cost}`` over
        ``runs`` runs of ``turns`` turns costing ``cost_usd`` in all (module doc)."""
        interruptible = {node.name for node in self.plan.calls if node.interrupt is not None}
        values = self.values()
        hit = sum(float(np.sum(values[n]["interrupted_share"])) for n in interruptible if n in values)
        wasted = sum(float(np.sum(values[n]["wasted_usd"])) for n in interruptible if n in values)
        return {
            "interruptions_per_turn": hit / turns if turns else None,
            "wasted_usd_per_turn": wasted / turns if turns else None,
            "wasted_usd_per_run": wasted / runs if runs else None,
            "wasted_share_of_cost": wasted / cost_usd if cost_usd > 0 else None,
        }

    def section(self) -> dict[str, Any]:
        """``{calls: {NAME: {METRIC: {mean, p50, p95, p99}}}, apparate: {NAME: {...}}}``, and for calls the
        person can interrupt ``uninterrupted: {NAME: {METRIC: ...}}``: the same over the calls they let finish,
        so that a model is compared on the answers people heard or read to the end."""
        consumers = self._consumers()
        interruptible = {node.name for node in self.plan.calls if node.interrupt is not None}
        calls: dict[str, Any] = {}
        apparate: dict[str, Any] = {}
        uninterrupted: dict[str, Any] = {}
        for name, metrics in self.values().items():
            cons = consumers[name]
            names = [k for k in metrics_of(cons.kind) if k in metrics]
            calls[name] = {k: _stats(metrics[k], k) for k in names}
            if name in interruptible:
                whole = metrics["interrupted_share"] == 0
                uninterrupted[name] = {k: _stats(metrics[k][whole], k) for k in names if k not in _INTERRUPTION}
            kind = consumer_kinds().get(cons.kind)
            pace = kind.pace(cons) if kind is not None and kind.pace is not None else None
            if pace is not None:  # a consumer with a pace of its own (a reader's, a speaker's)
                tps = metrics["_tps"]  # (every consumer call records its speed: stream_metrics)
                apparate[name] = {
                    "consumer": cons.kind,
                    "tokens_per_s": pace,
                    "faster_share": float(np.mean(tps >= pace)) if tps.size else None,
                }
        out: dict[str, Any] = {"calls": calls, "apparate": apparate}
        if uninterrupted:
            out["uninterrupted"] = uninterrupted
        return out


def streaming_frame(sections: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """One row per variant, step and metric: ``mean``, ``p50``, ``p95``, ``p99``."""
    rows = []
    for variant, sec in sections.items():
        for name, metrics in sec["calls"].items():
            for metric, st in metrics.items():
                rows.append({"variant": variant, "call": name, "metric": metric, **st})
    return pd.DataFrame(rows, columns=["variant", "call", "metric", "mean", "p50", "p95", "p99"])
