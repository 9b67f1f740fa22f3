"""The parts of the report's summary box that weigh a decision: targets, the month, and what it rests on.

* **Targets first.** A scenario with ``slo:`` targets asks "which setup keeps the person's turns within
  them?", not "which is fastest on average": the box then leads with the share of turns (runs, where a
  run holds several turns) meeting every target, with its 95% interval, per variant **ranked by that
  share** (ties: the cheaper first), and each target's own share where there are several
  (:func:`targets_lead`).
* **The month.** With a volume: each variant's API spend, the hours of waiting it saves against the
  baseline and its net value at the value of time (hours saved × value of time − extra spend), and what
  counts as waiting (every run's wall time, or the person's turns where the scenario has turns:
  :func:`agentsim.analysis.tradeoffs.waiting_note`) (:func:`monthly_sentence`).
* **What it rests on.** The price lines of the models and tiers the variants use (none that no variant
  runs on) with their catalogs and dates, and each speed tier's speed-up (:func:`price_lines`,
  :func:`speed_lines`).
"""

from __future__ import annotations

from markupsafe import Markup

from agentsim.sim.summary_model import SloTarget, Summary
from agentsim.viz import format as fmt
from agentsim.viz import sections

__all__ = ["monthly_sentence", "price_lines", "rank_by_targets", "speed_lines", "targets_lead", "tier_keys"]


def tier_keys(plan) -> dict[str, list[str]]:
    """Per variant, the models and tiers its calls run on, as :func:`price_sources` names them
    (``opus``, ``opus/fast``), in order of first use."""
    out: dict[str, list[str]] = {}
    for v, name in enumerate(plan.variants):
        keys = []
        for call in plan.calls:
            tier = plan.tiers[call.tiers[v]]
            key = tier.model if tier.speed == "standard" else f"{tier.model}/{tier.speed}"
            if key not in keys:
                keys.append(key)
        out[name] = keys
    return out


def price_lines(plan, sources: dict[str, str]) -> dict[str, str]:
    """The price sources (:func:`agentsim.pricing.provenance.price_sources`) of the models and tiers some
    variant runs on, in the sources' order: a tier without a price of its own is priced as its model, and
    a tier priced as a multiple of its model's price (``6 × the opus price``) needs its model's line too."""
    used: set[str] = set()
    for keys in tier_keys(plan).values():
        for key in keys:
            model = key.split("/", 1)[0]
            used.add(key if key in sources else model)
            if key in sources and sources[key].endswith(f"the {model} price"):
                used.add(model)
    return {k: text for k, text in sources.items() if k in used}


def speed_lines(plan) -> dict[str, str]:
    """Per speed tier some variant runs on: its speed-up against its model's standard speed
    (``2.5× output speed, TTFT unchanged``)."""
    used = {k for keys in tier_keys(plan).values() for k in keys}
    out = {}
    for tier in plan.tiers:
        key = f"{tier.model}/{tier.speed}"
        if tier.speed == "standard" or key not in used or key in out:
            continue
        ttft = "TTFT unchanged" if tier.ttft_x == 1 else f"{tier.ttft_x:g}× the TTFT"
        out[key] = f"{tier.tps_x:g}× output speed, {ttft}"
    return out


# --------------------------------------------------------------------------- targets (slo:)


def _turn_word(a, entry: SloTarget) -> str:
    """What an slo share counts: turns (a ``turn_s`` target, or runs that are one turn each) or runs."""
    return "turns" if "turns" in entry.model_fields_set or not a.res.plan.turn_nodes else "runs"


def _every_target_shares(doc: Summary | dict) -> dict[str, float | None]:
    """Per variant, its share of runs meeting every target: of the typed summary, or of a dict that has (at least)
    each variant's ``slo`` section."""
    if isinstance(doc, Summary):
        return {name: v.slo["all"].share for name, v in doc.variants.items()}
    return {name: v["slo"]["all"]["share"] for name, v in doc["variants"].items()}


def rank_by_targets(doc: Summary | dict, cost: dict[str, float]) -> list[str]:
    """The variants by their share meeting every ``slo`` target, highest first (none last; ties: the cheaper,
    then the earlier)."""
    shares = _every_target_shares(doc)
    names = list(shares)

    def key(name: str):
        share = shares[name]
        c = cost.get(name)
        return (share is None, -(share or 0.0), c if c is not None and c == c else float("inf"), names.index(name))

    return sorted(names, key=key)


def _share(entry: SloTarget) -> str:
    lo, hi = entry.ci95
    if entry.share is None:
        return fmt.DASH
    return f"{fmt.pct(entry.share)} ({fmt.pct(lo)}–{fmt.pct(hi)})"


def targets_lead(a) -> tuple[list[Markup], list[Markup]]:
    """With ``slo:`` targets: the sentence that leads the box and one line per variant, ranked by the share
    meeting every target (else two empty lists)."""
    section = sections.slo_section(a.doc)
    if section is None:
        return [], []
    first = sections.first_variant(a.doc).slo
    keys = [k for k in first if k != "all"]
    labels = dict(zip(keys, [m.label for m in section.metrics], strict=False))
    cost = {name: float(a.vt.loc[name, "cost_mean_usd"]) for name in a.vt.index}
    order = rank_by_targets(a.doc, cost)
    unit = _turn_word(a, first["all"])
    best = a.doc.variants[order[0]].slo["all"]
    every = "the target" if len(keys) == 1 else "every target"
    named = f"the target ({labels[keys[0]]})" if len(keys) == 1 else "every target"
    head = Markup("Most {} within {}: <b>{}</b>, {} of them (95% interval {}–{}).").format(
        unit, named, order[0], fmt.pct(best.share), fmt.pct(best.ci95[0]), fmt.pct(best.ci95[1])
    ) if best.share else Markup("No {} within {} in any variant.").format(unit, named)  # fmt: skip
    lines = []
    for name in order:  # (the page numbers them)
        slo = a.doc.variants[name].slo
        line = Markup("<b>{}</b>: {} of {} within {}").format(name, _share(slo["all"]), unit, every)
        if len(keys) > 1:
            line += Markup(" (") + Markup("; ").join(
                Markup("{} {}").format(labels[k], _share(slo[k])) for k in keys
            ) + Markup(")")  # fmt: skip
        lines.append(line + Markup("; {} per run.").format(fmt.usd(cost.get(name))))
    return [head], lines


# --------------------------------------------------------------------------- the month


def monthly_sentence(a, only_month) -> Markup | None:
    """Per month: spend, hours of waiting saved and net value at the value of time, per variant (None
    without a volume). ``only_month(a, name)`` adds a variant's completed-runs caveat."""
    from agentsim.analysis.tradeoffs import waiting_note

    if a.sizing is None:
        return None
    sz, vot = a.sizing, a.res.value_of_time
    base = sz.index[0]
    hours = fmt.decimals_for([*sz["wait_hours_per_month"], *sz["hours_saved_per_month"]])
    parts = [Markup("<b>{}</b> {} API spend, {} of waiting{}").format(
        base, fmt.usd(sz.loc[base, "api_usd_per_month"]), _hours(sz.loc[base, "wait_hours_per_month"], hours),
        only_month(a, base))]  # fmt: skip
    for name, r in sz.iloc[1:].iterrows():
        text = Markup("<b>{}</b> {} ({}): {} {}").format(
            name, fmt.usd(r["api_usd_per_month"]), fmt.signed_usd(r["extra_usd_per_month"]),
            _hours(abs(r["hours_saved_per_month"]), hours),
            "of waiting saved" if r["hours_saved_per_month"] >= 0 else "more waiting")  # fmt: skip
        if "net_usd_per_month" in sz.columns:
            text += Markup(", net {} at {}/h").format(fmt.signed_usd(r["net_usd_per_month"]), fmt.usd(vot))
        parts.append(text + only_month(a, name))
    basis = " (per successful task: failed runs retried)" if a.res.plan.defines_success else ""
    note = waiting_note(sz.attrs.get("time_basis", "wall_time_s"))
    return Markup("Per month{}, at {}: {}. {}.").format(
        basis, a.volume.derivation, Markup("; ").join(parts), fmt.capitalise(note)
    )


def _hours(x, decimals: int) -> str:
    return fmt.numbers([x], " h", decimals=decimals)[0]
