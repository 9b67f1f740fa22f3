"""The words of the HTML report: the summary box a team lead forwards, the header table, the notes.

The summary box holds what decides the purchase, in full sentences that start with a capital: the
fastest and the cheapest variant, the cheapest overall at the scenario's value of time, one verdict
per variant with **the prices it rests on and their date** (:func:`variant_prices`: the price list of
every model and tier the variant runs on and the baseline does not), the completed-runs warning of
``run`` where it applies (:mod:`agentsim.analysis.completion`) and, with a volume, the monthly spend
and how the volume was derived (:mod:`agentsim.analysis.volume`).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from markupsafe import Markup

from agentsim.viz import format as fmt

__all__ = ["header_rows", "reproduce_command", "summary_box", "variant_prices"]


def _t(x) -> str:
    """A duration in a sentence: the unit that reads best for this one value."""
    return fmt.fmt_time(x, fmt.time_unit([x]))


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


def variant_prices(plan, sources: dict[str, str]) -> dict[str, list[tuple[str, str]]]:
    """Per variant, ``(model or tier, where its prices come from)`` for every tier it runs on (a tier
    without a price of its own is priced as its model)."""
    out = {}
    for name, keys in tier_keys(plan).items():
        seen, rows = set(), []
        for key in keys:
            key = key if key in sources else key.split("/", 1)[0]
            if key not in seen and key in sources:
                seen.add(key)
                rows.append((key, sources[key]))
        out[name] = rows
    return out


def _prices_text(rows: list[tuple[str, str]]) -> Markup:
    return Markup("; ").join(Markup("<code>{}</code>: {}").format(k, text) for k, text in rows)


def _headline(vt, vot) -> list[Markup]:
    order = vt.reset_index().sort_values(["wall_mean_s", "cost_mean_usd"], kind="stable")
    fastest = order["variant"].iloc[0]  # of variants equally fast, the cheaper
    order = vt.reset_index().sort_values(["cost_mean_usd", "wall_mean_s"], kind="stable")
    cheapest = order["variant"].iloc[0]  # of variants equally cheap, the faster
    if vt.attrs.get("basis") == "per success":  # figures per successful task (tradeoffs.per_success)
        mean, unit = "to success", "per success"
    else:
        mean, unit = "mean", "per run"
    parts = [
        Markup("Fastest: <b>{}</b> ({} {}, {} {}). Cheapest: <b>{}</b> ({}, {} {}).").format(
            fastest, _t(vt.loc[fastest, "wall_mean_s"]), mean, fmt.usd(vt.loc[fastest, "cost_mean_usd"]), unit,
            cheapest, _t(vt.loc[cheapest, "wall_mean_s"]), fmt.usd(vt.loc[cheapest, "cost_mean_usd"]), unit,
        )
    ]  # fmt: skip
    return parts


def _cheapest_at(env, vot) -> Markup | None:
    if vot is None:
        return None
    row = env[(env["from_usd_per_hour"] <= vot) & (vot < env["to_usd_per_hour"])]
    if not len(row):
        return None
    return Markup("At your value of time ({}/h) the cheapest overall is <b>{}</b>.").format(
        fmt.usd(vot), row["variant"].iloc[0]
    )


def _verdict(name: str, r, vot) -> Markup | None:
    """One variant against the baseline, in a sentence (None for the baseline itself)."""
    when = r["pays_off_when"]
    if when == "baseline":
        return None
    if when == "unknown":
        return Markup("Variant <b>{}</b> has no verdict: it or the baseline completed no run").format(name)
    v_star = fmt.usd(r["break_even_usd_per_hour"])
    if when == "above":
        text = Markup("Variant <b>{}</b> pays off when an hour of waiting is worth at least {}, its extra cost "
                      "per hour saved").format(name, v_star)  # fmt: skip
    elif when == "below":
        text = Markup("Variant <b>{}</b> is slower and cheaper: it pays off while an hour of waiting is worth at "
                      "most {}").format(name, v_star)  # fmt: skip
    elif when == "always":
        text = Markup("Variant <b>{}</b> is faster and cheaper: it pays off at any value of time").format(name)
    else:
        text = Markup("Variant <b>{}</b> is slower and costs more: it never pays off").format(name)
    if vot is not None and when in ("above", "below"):
        text += Markup("; at your {}/h it {}").format(fmt.usd(vot), "does" if r.get("pays_off") else "does not")
    return text


def summary_box(a) -> dict:
    """The summary box: headline, per-variant verdicts with their prices, warnings, the monthly total.

    ``a`` is the report's analysis (:class:`agentsim.viz.report.Analysis`)."""
    vt, be, vot = a.vt, a.be, a.res.value_of_time
    if vt["wall_mean_s"].isna().all():
        head = [Markup("No variant completed a run: every run failed (see the limits and failures below).")]
        return {"head": head, "verdicts": [], "warnings": _warnings(a), "monthly": None}
    head = _headline(vt, vot)
    cheapest = _cheapest_at(a.env, vot)
    if cheapest is not None:
        head.append(cheapest)
    prices = variant_prices(a.res.plan, a.sources)
    base = be.index[0]
    verdicts = []
    if len(be) > 1:
        lead = Markup("Against the baseline <b>{}</b> (prices: {}).")
        verdicts.append(lead.format(base, _prices_text(prices[base])))
    for name, r in be.iterrows():
        sentence = _verdict(name, r, vot)
        if sentence is None:
            continue
        own = [p for p in prices[name] if p not in prices[base]]
        tail = Markup(" (prices: {}).").format(_prices_text(own)) if own else Markup(" (the baseline's prices).")
        verdicts.append(sentence + tail)
    return {"head": head, "verdicts": verdicts, "warnings": _warnings(a), "monthly": _monthly(a)}


def _warnings(a) -> list[str]:
    return [c.warning() + "." for c in a.completion if c.flagged]


def _monthly(a) -> Markup | None:
    if a.sizing is None:
        return None
    spend = Markup(", ").join(
        Markup("<b>{}</b> {}").format(name, fmt.usd(r["api_usd_per_month"])) for name, r in a.sizing.iterrows()
    )
    basis = " (per successful task: failed runs retried)" if a.res.plan.defines_success else ""
    return Markup("Monthly API spend{}: {}. Volume: {}.").format(basis, spend, a.volume.derivation)


def header_rows(a, path: Path, version: str) -> list[list]:
    """The table under the summary box: file, runs per variant (as ``run`` counts them), seed, engine,
    version, prices and speeds with their sources and dates, value of time and volume."""
    from agentsim.analysis.completion import runs_per_variant
    from agentsim.model.loading import source_of
    from agentsim.pricing.provenance import speed_sources

    res = a.res
    src = source_of(res.scenario)
    speeds = speed_sources(res.scenario, Path(src).parent if src else None)
    counts = runs_per_variant(a.doc, res.n_runs)
    if res.plan.workload is not None:
        runs = "; ".join(f"{name} {n:,}" for name, n in counts.items()) + " (runs counted in the workload's window)"
    else:
        runs = f"{res.n_runs:,}"
    vot = res.value_of_time
    return [
        ["scenario file", Markup("<code>{}</code>").format(path)],
        ["runs per variant", runs],
        ["seed", str(res.seed)],
        ["engine", res.engine],
        ["agentsim version", version],
        *[[f"prices: {name}", text] for name, text in a.sources.items()],
        *[[f"speeds: {name}", text] for name, text in speeds.items()],
        ["value of time", fmt.usd(vot) + "/h" if vot is not None else "not given"],
        ["volume", a.volume.derivation if a.volume is not None else "not given"],
    ]


def reproduce_command(path: Path, res, volume, sweep: bool) -> str:
    """The command that makes the same page: every option that changed it, the resolved runs and seed."""
    words = ["agentsim", "report", str(path)]
    if res.plan.workload is None:  # a workload's runs are its arrivals: --runs changes nothing
        words += ["--runs", str(res.n_runs)]
    words += ["--seed", str(res.seed)]
    if volume is not None:
        words += list(volume.options)
    if not sweep and res.scenario.sweeps:
        words.append("--no-sweep")
    return " ".join(shlex.quote(w) for w in words)
