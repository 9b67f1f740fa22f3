"""The tables of the HTML report, formatted column by column.

A table here is ``{"header": [...], "rows": [[cell, ...], ...]}`` with every cell already text (or
``Markup``). Cells are formatted a column at a time (:func:`format_columns`), so that a column of
durations shares one unit and one number of decimals (:mod:`agentsim.viz.format`): a reader compares
``8.87 min`` with ``5.52 min``, never ``8.9 min`` with ``2.84 s``. A cell that is already text
(``baseline``) is left as it is.

The figures come from the summary document (``summary.json``) and the trade-off tables of
:mod:`agentsim.analysis.tradeoffs`, never recomputed differently.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from agentsim.sim import payoff
from agentsim.sim.summary_model import Summary, Variant
from agentsim.viz import format as fmt
from agentsim.viz import sections

__all__ = [
    "VARIANT_HEADER",
    "accounts_table",
    "bold",
    "break_even_table",
    "cheapest_table",
    "critical_table",
    "format_columns",
    "section_table",
    "slo_table",
    "spend_table",
    "streaming_tables",
    "variants_table",
]

VARIANT_HEADER = [
    "variant",
    "mean wall",
    "95% CI",
    "p50",
    "p95",
    "p99",
    "mean cost",
    "p95 cost",
    "calls",
    "frontier (mean)",
    "frontier (p95)",
]


def bold(x) -> Markup:
    """A table cell in bold (the text is escaped)."""
    return Markup("<b>{}</b>").format(x)


@dataclass(frozen=True)
class Cell:
    """A formatted number and the value it shows: the page writes ``<td data-value="VALUE">TEXT</td>``, the
    value as ``summary.json`` has it (Python's shortest round-trip repr), so a reader (or a script) can check
    every figure against ``run --json``."""

    text: str
    value: float

    def __str__(self) -> str:
        return self.text

    @property
    def raw(self) -> str:
        return repr(float(self.value))


def _wrap(text: str, x):
    """``text`` as a :class:`Cell` of ``x`` when ``x`` is a finite number, else the text alone."""
    return Cell(text, float(x)) if _number(x) and math.isfinite(x) else text


def _number(x) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def format_columns(
    rows: list[list[Any]], kinds: list[str], groups: dict[int, int] | None = None, unit: fmt.Unit | None = None
) -> list[list[Any]]:
    """Format ``rows`` of raw values column by column.

    ``kinds[i]`` is the kind of column ``i``: ``text`` (kept), ``time`` (seconds; one unit and one number
    of decimals per column), ``pm`` (a ± half-width in seconds), ``dtime`` (a signed difference in
    seconds), ``usd``, ``dusd`` (a signed difference), ``usdh`` (USD per hour), ``count``, ``number``,
    ``share`` (a percentage) and ``check`` (✓ when true). ``groups`` maps a column to another whose
    unit it shares (the p50/p95/p99 of a wall time). ``unit``: the unit of every time column (a page's
    wall-time unit, the one its figures use), else each group's own. Text cells (``baseline``) are kept.
    """
    n = len(kinds)
    cols = [[r[i] for r in rows] for i in range(n)]
    units: dict[int, tuple] = {}
    for i, kind in enumerate(kinds):
        if kind in ("time", "pm", "dtime"):
            members = [j for j in range(n) if (groups or {}).get(j, j) == (groups or {}).get(i, i)]
            values = [x for j in members for x in cols[j] if _number(x)]
            u = unit or fmt.time_unit(values)
            units[i] = (u, fmt.decimals_for(values, u[1]))
    out = [list(r) for r in rows]
    for i, kind in enumerate(kinds):
        values = [x for x in cols[i] if _number(x)]
        decimals = fmt.decimals_for(values)
        for r, x in enumerate(cols[i]):
            text = _cell(kind, x, units.get(i), decimals)
            out[r][i] = text if kind in ("text", "check") else _wrap(text, x)
    return out


def _cell(kind: str, x, unit, decimals: int):
    if kind == "text" or isinstance(x, str):
        return fmt.DASH if x is None else x
    if kind == "check":
        return "✓" if bool(x) and x is not None else ""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return fmt.DASH
    if kind == "time":
        return fmt.fmt_time(x, *unit)
    if kind == "pm":
        return "± " + fmt.fmt_time(x, *unit)
    if kind == "dtime":
        return fmt.signed_time(x, *unit)
    if kind == "usd":
        return fmt.usd(x)
    if kind == "dusd":
        return fmt.signed_usd(x)
    if kind == "usdh":
        return fmt.usd_per_hour(x)
    if kind == "count":
        return fmt.count(x)
    if kind == "share":
        return fmt.pct(x)
    return fmt.numbers([x], decimals=decimals)[0]  # number


def _nan(x):
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


# --------------------------------------------------------------------------- the tables


def variants_table(vt, per_success: bool, unit: fmt.Unit | None = None) -> dict:
    """Wall time (mean, CI, percentiles; one unit: ``unit``, else the mean's), cost and calls per variant, with
    the frontier marks; where the scenario has turns (the table's ``time_basis`` is ``waiting_s``), the
    person's mean and p95 waiting per run beside the wall time (what the frontier and the verdicts weigh)."""
    waiting = vt.attrs.get("time_basis") == "waiting_s" and "waiting_mean_s" in vt.columns
    rows = []
    for name, r in vt.iterrows():
        half = None if per_success else (r["wall_ci95_hi_s"] - r["wall_ci95_lo_s"]) / 2
        wait = [r["waiting_mean_s"], r["waiting_p95_s"]] if waiting else []
        rows.append([bold(name), r["wall_mean_s"], "–" if per_success else _nan(half), r["wall_p50_s"],
                     r["wall_p95_s"], r["wall_p99_s"], *wait, r["cost_mean_usd"], r["cost_p95_usd"], r["calls_mean"],
                     r["pareto_mean"], r["pareto_p95"]])  # fmt: skip
    kinds = ["text", "time", "pm", "time", "time", "time", *["time"] * len(wait), "usd", "usd", "number", "check",
             "check"]  # fmt: skip
    header = [*VARIANT_HEADER[:6], *(["mean waiting", "p95 waiting"] if waiting else []), *VARIANT_HEADER[6:]]
    groups = {i: 1 for i in range(2, 6 + len(wait))}
    return {"header": header, "rows": format_columns(rows, kinds, groups, unit)}


_WHEN = {"above": "above {v}", "below": "below {v}", "always": "always", "never": "never", "baseline": "baseline"}
_WHEN["unknown"] = "– (no completed run)"


def break_even_table(be, vot: float | None, unit: fmt.Unit | None = None) -> dict:
    rows = []
    for name, r in be.iterrows():
        base = r["pays_off_when"] == "baseline"
        rows.append([
            bold(name),
            "baseline" if base else _nan(r["delta_time_s"]),
            "baseline" if base else _nan(r["delta_cost_usd"]),
            payoff.premium_text(_nan(r["usd_per_hour_saved"]), fmt.usd, "/h"),
            _WHEN[r["pays_off_when"]].format(v=fmt.usd_per_hour(r["break_even_usd_per_hour"])),
            ("yes" if r.get("pays_off") else "no") if vot is not None and not base else "–",
        ])  # fmt: skip
    waiting = be.attrs.get("time_basis") == "waiting_s"  # the person's turns, their pauses left out
    header = ["variant", "Δ mean waiting" if waiting else "Δ mean wall", "Δ mean cost",
              "USD per hour of waiting saved" if waiting else "USD per hour saved", "pays off when value of time is",
              f"pays off at {fmt.usd(vot)}/h" if vot is not None else "pays off"]  # fmt: skip
    kinds = ["text", "dtime", "dusd", "text", "text", "text"]
    return {"header": header, "rows": format_columns(rows, kinds, unit=unit)}


def cheapest_table(env) -> dict:
    rows = [[bold(r["variant"]), fmt.usd_per_hour(r["from_usd_per_hour"]),
             fmt.usd_per_hour(r["to_usd_per_hour"]) if math.isfinite(r["to_usd_per_hour"]) else "and above"]
            for _, r in env.iterrows()]  # fmt: skip
    return {"header": ["variant", "from", "to"], "rows": rows}


def spend_table(sizing) -> dict:
    net = "net_usd_per_month" in sizing.columns
    base = sizing.index[0]
    rows = []
    for name, r in sizing.iterrows():
        ci = f"{fmt.usd(r['api_usd_per_month_lo'])} – {fmt.usd(r['api_usd_per_month_hi'])}" if (
            "api_usd_per_month_lo" in sizing.columns) else "–"  # fmt: skip
        rows.append([bold(name), r["api_usd_per_month"], ci, r["wait_hours_per_month"],
                     "baseline" if name == base else r["hours_saved_per_month"],
                     "baseline" if name == base else r["extra_usd_per_month"],
                     payoff.premium_text(_nan(r["premium_usd_per_saved_hour"]), fmt.usd, "/h"),
                     *(["baseline" if name == base else r["net_usd_per_month"]] if net else [])])  # fmt: skip
    header = ["variant", "API spend / month", "95% CI", "hours waiting", "hours saved", "extra spend",
              "premium per saved hour", *(["net at value of time"] if net else [])]  # fmt: skip
    kinds = ["text", "usd", "text", "number", "number", "dusd", "text", *(["dusd"] if net else [])]
    formatted = format_columns(rows, kinds)
    hours = [x for r in rows for x in r[3:5] if _number(x)]
    decimals = fmt.decimals_for(hours)  # hours waiting and hours saved side by side: one number of decimals
    for out, r in zip(formatted, rows, strict=True):
        out[3:5] = [x if isinstance(x, str) else _wrap(fmt.numbers([x], " h", decimals=decimals)[0], x) for x in r[3:5]]
    return {"header": header, "rows": formatted}


def critical_table(share) -> dict:
    rows = [[r["variant"], bold(r["step"]), r["kind"], r["busy_s"], r["critical_s"], r["share"], r["on_path"]]
            for _, r in share.iterrows()]  # fmt: skip
    kinds = ["text", "text", "text", "time", "time", "share", "share"]
    return {
        "header": ["variant", "step", "kind", "busy", "on critical path", "share of wall", "runs on path"],
        "rows": format_columns(rows, kinds, {4: 3}),
    }


_KIND = {"time": "time", "usd": "usd", "count": "count", "share": "share", "rate": "share", "number": "number"}


def section_table(doc: Summary, section: sections.Section) -> dict:
    """A section of :mod:`agentsim.viz.sections` as a table: one row per variant, one column per metric."""
    metrics = section.metrics
    rows = [[bold(name), *[m.get(v) for m in metrics]] for name, v in doc.variants.items()]
    kinds = ["text", *[_KIND.get(m.kind, "text") for m in metrics]]
    groups = {}
    for i, m in enumerate(metrics, start=1):
        if m.group is not None:
            groups[i] = next(j for j, x in enumerate(metrics, start=1) if x.group == m.group)
    formatted = format_columns(rows, kinds, groups)
    for i, m in enumerate(metrics, start=1):
        if m.kind == "rate":  # a limit's utilisation: whole percent
            for out, r in zip(formatted, rows, strict=True):
                out[i] = _wrap(fmt.pct(r[i], 0), r[i])
    return {"header": ["variant", *[m.label for m in metrics]], "rows": formatted}


def slo_table(doc: Summary) -> dict | None:
    """The share of runs meeting each ``slo`` target and all of them, per variant, with its 95% interval."""
    section = sections.slo_section(doc)
    if section is None:
        return None
    keys = [k for k in sections.first_variant(doc).slo if k != "all"] + ["all"]
    rows = []
    for name, v in doc.variants.items():
        cells = []
        for k in keys:
            e = v.slo[k]
            lo, hi = e.ci95
            text = f"{fmt.pct(e.share)} ({fmt.pct(lo)}–{fmt.pct(hi)})" if e.share is not None else fmt.DASH
            cells.append(_wrap(text, e.share))
        rows.append([bold(name), *cells])
    return {"header": ["variant", *[m.label for m in section.metrics]], "rows": rows}


def accounts_table(doc: Summary) -> dict | None:
    """One row per variant and account of the shared limits: requests in flight and each limit's use."""
    first = sections.first_variant(doc)
    accounts = list(first.limits.accounts or {}) if first.limits is not None else []
    if not accounts:
        return None
    labels = ["in flight mean", "in flight max", *[f"{k} use" for k in sections.ACCOUNT_KINDS]]
    rows = []
    for account in accounts:
        metrics = {m.label: m for m in sections.account_metrics(doc, account)}
        for name, v in doc.variants.items():
            rows.append([bold(name), account, *[metrics[x].get(v) if x in metrics else None for x in labels]])
    kinds = ["text", "text", "number", "count", *["share"] * len(sections.ACCOUNT_KINDS)]
    formatted = format_columns(rows, kinds)
    for out, r in zip(formatted, rows, strict=True):  # a limit's use: whole percent
        out[4:] = [_wrap(fmt.pct(x, 0), x) for x in r[4:]]
    keep = [i for i in range(len(kinds)) if i < 2 or any(r[i] is not None for r in rows)]
    return {"header": [["variant", "account", *labels][i] for i in keep],
            "rows": [[r[i] for i in keep] for r in formatted]}  # fmt: skip


def streaming_tables(doc: Summary) -> list[dict]:
    """Per call with a consumer: one row per variant and statistic (mean, p50, p95), one column per metric
    of ``summary.json``'s ``streaming`` section, and the speed beyond which the consumer gains nothing. The
    tail row of a score where more is better (QoE) is its worst 5%, the p5, and the row's label says so."""
    out = []
    for call, names, apparate in sections.streaming_sections(doc):
        metrics = {stat: [sections.stream_metric(n, stat, call) for n in names] for stat in ("mean", "p50", "p95")}
        rows, label = [], metrics["mean"]
        for name, v in doc.variants.items():
            for stat, ms in metrics.items():  # the p95 row of a score where more is better shows its p5
                rows.append([bold(name) if stat == "mean" else "", sections.worst_label(stat, names),
                             *[m.get(v) for m in ms]])  # fmt: skip
        kinds = ["text", "text", *[_KIND.get(m.kind, "text") for m in label]]
        table = {"call": call, "header": ["variant", "", *[m.label for m in label]],
                 "rows": format_columns(rows, kinds)}  # fmt: skip
        if apparate is not None:
            table["apparate"] = {
                "consumer": apparate.consumer,
                "rows": [[bold(name), _apparate(v, call)] for name, v in doc.variants.items()],
            }
        out.append(table)
    return out


def _apparate(v: Variant, call: str) -> str:
    a = v.streaming.apparate.get(call) if v.streaming is not None else None
    if a is None:  # (a point has its speed: Apparate.tokens_per_s is never null)
        return fmt.DASH
    return f"{a.tokens_per_s:.1f} tokens/s"
