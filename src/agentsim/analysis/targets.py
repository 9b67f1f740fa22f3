"""Verdicts from targets: which variant meets the scenario's ``slo`` targets in the most runs (turns).

A scenario's ``slo: {METRIC: target}`` asks "how often is the turn good enough?" (contract v1.2); the
``slo`` section of ``summary.json`` answers per variant with the share of runs within each target, its
95% (Wilson) interval, and the targeted metric's mean and the values 50, 95 and 99% of the runs meet
(:mod:`agentsim.sim.slo`). This module reads that section and ranks the variants by it, so that ``run``,
``optimize`` and the Python API lead with the same verdict:

* **rank**: by the share of runs meeting *every* target (one target: its share), highest first; ties by
  the first target's ``p95`` (lower first for a ceiling, higher for a floor), then in the scenario's order.
  A variant with no run whose outcome is known (share ``null``) ranks last.
* **at the 95th percentile**: a variant meets a target "for 95% of runs" when its ``p95`` is within the
  target (equivalently, its share is at least 95%).

:func:`targets_frame` gives the same as a DataFrame, one row per variant and target. Each function takes the
document as a dict (``summary_dict()``, a ``summary.json`` read from disk, or only the parts these read: the
variants' ``slo``) or as the typed :class:`~agentsim.sim.summary_model.Summary`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from agentsim.sim.summary_model import Summary

__all__ = ["LEVEL", "TargetVerdict", "is_floor", "rank_variants", "target_names", "targets_frame", "verdict"]

LEVEL = "p95"  # the percentile a verdict quotes: "meets it for 95% of runs"


def is_floor(metric: str) -> bool:
    """Whether a target on ``metric`` is a floor (higher is better: the QoE); else a ceiling."""
    return metric.rsplit(".", 1)[-1].startswith("qoe")


def _as_dict(doc: Summary | dict) -> dict:
    """The document as the dict these functions read (a :class:`Summary` dumped, as ``summary_dict()`` has it)."""
    return doc.model_dump(exclude_unset=True) if isinstance(doc, Summary) else doc


def target_names(doc: Summary | dict) -> list[str]:
    """The targeted metrics of a ``summary.json`` document, in the scenario's order (``all`` left out)."""
    doc = _as_dict(doc)
    first = next(iter(doc["variants"].values()))
    return [k for k in first.get("slo") or {} if k != "all"]


def _sort_key(doc: dict, order: list[str]):
    targets = target_names(doc)
    lead = targets[0] if targets else None

    def key(name: str) -> tuple:
        slo = doc["variants"][name].get("slo") or {}
        share = (slo.get("all") or {}).get("share")
        p = (slo.get(lead) or {}).get(LEVEL) if lead else None
        worse = p is None
        tie = 0.0 if worse else (-p if is_floor(lead) else p)
        return (share is None, -(share or 0.0), worse, tie, order.index(name))

    return key


def rank_variants(doc: Summary | dict) -> list[str]:
    """The variants of a ``summary.json`` document, best on its targets first (module doc); ``[]`` when the
    scenario has no ``slo`` targets."""
    doc = _as_dict(doc)
    if not target_names(doc):
        return []
    order = list(doc["variants"])
    return sorted(order, key=_sort_key(doc, order))


@dataclass(frozen=True)
class TargetVerdict:
    """The best variant on the targets, and per target the variants that meet it for 95% of runs."""

    best: str
    share: float | None  # its share of runs meeting every target
    ci95: list  # the share's Wilson interval
    at_p95: dict[str, list[str]]  # target -> variants whose p95 is within it (in rank order)
    best_p95: dict[str, tuple[str, float | None]]  # target -> (the variant with the best p95, that p95)


def verdict(doc: Summary | dict) -> TargetVerdict | None:
    """The verdict of a ``summary.json`` document's targets (module doc); None without ``slo`` targets."""
    doc = _as_dict(doc)
    ranked = rank_variants(doc)
    if not ranked:
        return None
    best = doc["variants"][ranked[0]]["slo"]["all"]
    at_p95, best_p95 = {}, {}
    for t in target_names(doc):
        floor = is_floor(t)
        entries = [(n, doc["variants"][n]["slo"][t]) for n in ranked]
        at_p95[t] = [n for n, e in entries if e.get(LEVEL) is not None and _within(e[LEVEL], e["target"], floor)]
        known = [(n, e[LEVEL]) for n, e in entries if e.get(LEVEL) is not None]
        pick = (max if floor else min)(known, key=lambda x: x[1]) if known else (ranked[0], None)
        best_p95[t] = pick
    return TargetVerdict(ranked[0], best["share"], list(best["ci95"]), at_p95, best_p95)


def _within(value: float, target: float, floor: bool) -> bool:
    return value >= target if floor else value <= target


def targets_frame(doc: Summary | dict) -> pd.DataFrame:
    """One row per variant and target (and ``all``): ``variant, target_metric, target, share, ci95_lo,
    ci95_hi, mean, p50, p95, p99, rank`` (rank 1: best on every target); empty without targets."""
    columns = ["variant", "target_metric", "target", "share", "ci95_lo", "ci95_hi", "mean", "p50", "p95", "p99"]
    doc = _as_dict(doc)
    ranked = rank_variants(doc)
    rows: list[dict[str, Any]] = []
    for name in doc["variants"] if ranked else []:
        slo = doc["variants"][name]["slo"]
        for key, e in slo.items():
            rows.append({"variant": name, "target_metric": key, "target": e.get("target"), "share": e["share"],
                         "ci95_lo": e["ci95"][0], "ci95_hi": e["ci95"][1],
                         **{k: e.get(k) for k in ("mean", "p50", "p95", "p99")},
                         "rank": ranked.index(name) + 1})  # fmt: skip
    frame = pd.DataFrame(rows, columns=[*columns, "rank"])
    for c in columns[2:]:
        frame[c] = frame[c].astype("float64")
    return frame
