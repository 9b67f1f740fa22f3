"""Targets lead: the rows of the ``run`` table for a scenario's ``slo`` targets and its barge-ins, and the verdict.

With ``slo:`` targets the ``run`` table opens with them (:func:`target_rows`): per target the share of runs
within it and its 95% interval, then the targeted metric's mean, p95 and p99 (the value 95 and 99% of the
runs meet), the share meeting every target (several targets), and each variant's rank on the targets
(:func:`agentsim.analysis.targets.rank_variants`). Under the table, :func:`verdict_text` says in one line
which variant leads and which meet each target for 95% of runs. Where the person can interrupt an answer,
:func:`barge_in_rows` say what that costs per turn (the ``barge_in`` section of ``summary.json``).
``optimize`` leads its result table and its frontier with the same figures (:func:`optimize_target_rows`,
:func:`frontier_target_cells`).
"""

from __future__ import annotations

from typing import NamedTuple

from agentsim.analysis.targets import is_floor, rank_variants, target_names, verdict
from agentsim.cli.tables import Rows
from agentsim.sim.summary_model import SloTarget, Summary, as_summary
from agentsim.viz import format as fmt

__all__ = [
    "barge_in_rows",
    "frontier_target_cells",
    "optimize_target_rows",
    "share_with_ci",
    "target_label",
    "target_rows",
    "value_text",
    "verdict_text",
]


def value_text(metric: str, x) -> str:
    """A value of a targeted metric: a duration, USD, or a number."""
    if x is None:
        return fmt.DASH
    if metric.endswith("_s"):
        return fmt.durations([x])[0]
    if metric.endswith("_usd"):
        return fmt.usd(x)
    return f"{x:.3g}"


def target_label(metric: str, target: float) -> str:
    """``voice_to_voice_s ≤ 0.80 s``; a target on each turn says so."""
    op = "≥" if is_floor(metric) else "≤"
    name = "each turn (turn_s)" if metric == "turn_s" else metric
    return f"{name} {op} {value_text(metric, target)}"


class Share(NamedTuple):
    """A share of runs within a target and its 95% interval (an ``optimize`` row's, as a :class:`SloTarget` has
    them)."""

    share: float | None
    ci95: list


def share_with_ci(entry: SloTarget | Share | None) -> str:
    """``44.5% (42.3–46.7%)``: a share and its 95% interval."""
    if entry is None or entry.share is None:
        return fmt.DASH
    lo, hi = entry.ci95
    return f"{fmt.pct(entry.share)} ({100 * lo:.1f}–{fmt.pct(hi)})"


def target_rows(rows: Rows, doc: Summary | dict) -> None:
    """The targets section that leads the ``run`` table (module doc); nothing without targets. ``rows``: one
    column per variant of ``doc``, each a :class:`~agentsim.sim.summary_model.Variant`."""
    doc = as_summary(doc)
    names = target_names(doc)
    if not names:
        return
    rows.heading("targets: share within (95% CI)")
    for metric in names:
        first = next(iter(rows.variants.values())).slo[metric]
        rows.text(f"  {target_label(metric, first.target)}", lambda v, m=metric: share_with_ci(v.slo.get(m)))
        stats = [(f"    {k}", lambda v, m=metric, k=k: getattr(v.slo[m], k)) for k in ("mean", "p95", "p99")]
        if metric.endswith("_s"):
            rows.times(stats)
        else:
            for label, get in stats:
                rows.text(label, lambda v, m=metric, g=get: value_text(m, g(v)))
    if len(names) > 1:
        rows.text("  every target met", lambda v: share_with_ci(v.slo["all"]))
    rank = {name: i + 1 for i, name in enumerate(rank_variants(doc))}
    rows.t.add_row("  rank on targets", *[str(rank[n]) for n in rows.variants])


def barge_in_rows(rows: Rows) -> None:
    """What the person's interruptions cost per turn (scenarios with an ``interrupt``)."""
    first = next(iter(rows.variants.values()))
    if first.barge_in is None:
        return
    rows.heading("barge-ins (the person interrupts)")
    rows.text("  interruptions per turn", lambda v: fmt.pct(v.barge_in.interruptions_per_turn))
    rows.text("  wasted per turn", lambda v: fmt.usd(v.barge_in.wasted_usd_per_turn))
    rows.text("  share of cost wasted", lambda v: fmt.pct(v.barge_in.wasted_share_of_cost))


def verdict_text(doc: Summary | dict) -> str | None:
    """One line under the table: the variant that leads on the targets, its share and interval, and per target
    the variants meeting it for 95% of runs (or the best p95 when none does); None without targets."""
    doc = as_summary(doc)
    v = verdict(doc)
    if v is None:
        return None
    names = target_names(doc)
    first = next(iter(doc.variants.values())).slo
    what = f"within {target_label(names[0], first[names[0]].target)}" if len(names) == 1 else "within every target"
    lo, hi = v.ci95
    ci = f" (95% CI {fmt.pct(lo)}–{fmt.pct(hi)})" if lo is not None else ""
    parts = [f"targets: {v.best} leads, {fmt.pct(v.share)} of runs {what}{ci}"]
    for t in names:
        label = target_label(t, first[t].target)
        if v.at_p95[t]:
            parts.append(f"{label} for 95% of runs: {', '.join(v.at_p95[t])}")
        else:
            who, p = v.best_p95[t]
            parts.append(f"no variant meets {label} for 95% of runs (best p95 {value_text(t, p)}, {who})")
    return "; ".join(parts) + "."


# --------------------------------------------------------------------------- optimize


def _row_entry(row: dict, key: str) -> Share | None:
    """A target's figures from an ``optimize`` summary row (``slo_KEY_share``, ``_ci95_lo``...), as in summary.json."""
    share = row.get(f"slo_{key}_share")
    if share is None or share != share:  # None or NaN: no run with an outcome
        return None
    return Share(share, [row.get(f"slo_{key}_ci95_lo"), row.get(f"slo_{key}_ci95_hi")])


def _points(base, chosen) -> str:
    if base is None or chosen is None or base != base or chosen != chosen:
        return fmt.DASH
    return ("+" if chosen >= base else "") + f"{100 * (chosen - base):.1f} pts"


def optimize_target_rows(table, opt) -> None:
    """The rows that lead ``optimize``'s result table with targets: per target the share within it (95% CI) in
    the base and the chosen assignment and the change, then the targeted metric's p95 and p99."""
    b, c = opt.baseline, opt.chosen
    for key, target in opt.targets.items():
        table.add_row(target_label(key, target), share_with_ci(_row_entry(b, key)), share_with_ci(_row_entry(c, key)),
                      _points(b.get(f"slo_{key}_share"), c.get(f"slo_{key}_share")))  # fmt: skip
        for stat in ("p95", "p99"):
            x, y = b.get(f"slo_{key}_{stat}"), c.get(f"slo_{key}_{stat}")
            if key.endswith("_s"):
                unit = fmt.time_unit([v for v in (x, y) if v is not None])
                dec = fmt.decimals_for([v for v in (x, y) if v is not None], unit[1])
                delta = fmt.signed_time(y - x, unit, dec) if x is not None and y is not None else fmt.DASH
                table.add_row(f"  {stat}", fmt.fmt_time(x, unit, dec), fmt.fmt_time(y, unit, dec), delta)
            else:
                table.add_row(f"  {stat}", value_text(key, x), value_text(key, y), fmt.DASH)
    if len(opt.targets) > 1:
        table.add_row("every target met", share_with_ci(_row_entry(b, "all")), share_with_ci(_row_entry(c, "all")),
                      _points(b.get("slo_all_share"), c.get("slo_all_share")))  # fmt: skip


def frontier_target_cells(opt) -> tuple[list[str], list[list[str]]]:
    """Columns of ``optimize``'s frontier for the targets: per target the share within it and the metric's p95
    (and the share meeting every target, with several); ``(headers, cells per frontier row)``."""
    heads, cols = [], []
    front = opt.frontier
    for key, target in opt.targets.items():
        heads += [f"within {target_label(key, target)}", f"p95 {key}"]
        cols.append([fmt.pct(x) for x in front.get(f"slo_{key}_share", [None] * len(front))])
        cols.append([value_text(key, _none(x)) for x in front.get(f"slo_{key}_p95", [None] * len(front))])
    if len(opt.targets) > 1:
        heads.append("every target")
        cols.append([fmt.pct(x) for x in front.get("slo_all_share", [None] * len(front))])
    return heads, [list(r) for r in zip(*cols, strict=True)] if cols else [[] for _ in range(len(front))]


def _none(x):
    return None if x is None or x != x else x
