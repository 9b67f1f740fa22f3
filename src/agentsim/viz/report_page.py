"""The words of the HTML report: the summary box a team lead forwards, the header table, the notes.

The summary box holds what decides the purchase, in full sentences that start with a capital, and is
what the first printed page shows (:mod:`agentsim.viz.report_verdict`): with ``slo:`` targets, the variants
ranked by the share of turns within them; the fastest and the cheapest variant (on the person's waiting
where the scenario has turns), the cheapest overall at the scenario's value of time, one verdict per
variant naming **the prices it rests on** (:func:`variant_prices`: every model and tier the variant runs
on and the baseline does not), the completed-runs warning of ``run`` where it applies
(:mod:`agentsim.analysis.completion`), with a volume the month (spend, hours of waiting saved, net value
at the value of time, how the volume was derived: :mod:`agentsim.analysis.volume`), and the price and
speed lines in use with their catalogs, dates and speed-ups (:func:`basis_rows`)."""

from __future__ import annotations

import shlex
from pathlib import Path

from markupsafe import Markup

from agentsim.viz import format as fmt
from agentsim.viz.report_verdict import monthly_sentence, price_lines, speed_lines, targets_lead, tier_keys

__all__ = ["basis_rows", "header_rows", "reproduce_command", "summary_box", "variant_prices"]


def _t(x) -> str:
    """A duration in a sentence: the unit that reads best for this one value."""
    return fmt.fmt_time(x, fmt.time_unit([x]))


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


def _only(a, name: str) -> Markup:
    """After a variant's per-run figure: nothing, or, when more than 1% of its runs did not complete, that
    the figure is of the completed runs only (how many of how many): not the population's."""
    c = {x.variant: x for x in a.completion}.get(name)
    if c is None or not c.flagged:
        return Markup("")
    done = c.runs - c.not_completed
    return Markup(" <b>of the {:,} completed runs only ({:,} of {:,}; {} failed or unfinished)</b>").format(
        done, done, c.runs, fmt.pct(c.share)
    )


def _headline(vt, vot, a=None) -> list[Markup]:
    from agentsim.analysis.tradeoffs import time_column

    time = time_column(vt)  # the person's waiting where the scenario has turns, else the wall time
    order = vt.reset_index().sort_values([time, "cost_mean_usd"], kind="stable")
    fastest = order["variant"].iloc[0]  # of variants equally fast, the cheaper
    order = vt.reset_index().sort_values(["cost_mean_usd", time], kind="stable")
    cheapest = order["variant"].iloc[0]  # of variants equally cheap, the faster
    if vt.attrs.get("basis") == "per success":  # figures per successful task (tradeoffs.per_success)
        mean, unit = "to success", "per success"
    elif time != "wall_mean_s":
        mean, unit = "of waiting per run, mean", "per run"
    else:
        mean, unit = "mean", "per run"
    only = (lambda name: _only(a, name)) if a is not None else (lambda name: Markup(""))
    parts = [
        Markup("Fastest: <b>{}</b> ({} {}, {} {}{}). Cheapest: <b>{}</b> ({}, {} {}{}).").format(
            fastest, _t(vt.loc[fastest, time]), mean, fmt.usd(vt.loc[fastest, "cost_mean_usd"]), unit,
            only(fastest), cheapest, _t(vt.loc[cheapest, time]), fmt.usd(vt.loc[cheapest, "cost_mean_usd"]),
            unit, only(cheapest),
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
    """The summary box: with ``slo`` targets the variants ranked by the share of turns within them, then the
    headline, per-variant verdicts (naming the prices they rest on), warnings, the month (spend, hours
    saved, net value) and the price and speed lines the verdicts rest on, with their catalogs and dates.

    ``a`` is the report's analysis (:class:`agentsim.viz.report.Analysis`)."""
    vt, vot = a.vt, a.res.value_of_time
    prices = price_lines(a.res.plan, a.sources)
    basis = {"basis": basis_rows(a, prices)}
    if vt["wall_mean_s"].isna().all():
        head = [Markup("No variant completed a run: every run failed (see the limits and failures below).")]
        return {"targets": [], "head": head, "verdicts": [], "warnings": _warnings(a), "monthly": None, **basis}
    lead, targets = targets_lead(a)
    head = [*lead, *_headline(vt, vot, a)]
    cheapest = _cheapest_at(a.env, vot)
    if cheapest is not None:
        head.append(cheapest)
    return {"targets": targets, "head": head, "verdicts": _verdicts(a, prices), "warnings": _warnings(a),
            "monthly": monthly_sentence(a, _only_month), **basis}  # fmt: skip


def _keys(keys) -> Markup:
    return Markup(", ").join(Markup("<code>{}</code>").format(k) for k in keys)


def _verdicts(a, prices: dict[str, str]) -> list[Markup]:
    """One sentence per variant against the baseline, each naming the price lines it rests on (the box lists
    them in full below)."""
    be, vot = a.be, a.res.value_of_time
    used = variant_prices(a.res.plan, prices)
    base = be.index[0]
    verdicts = []
    if len(be) > 1:
        verdicts.append(
            Markup("Against the baseline <b>{}</b> (prices: {}).").format(base, _keys(k for k, _ in used[base]))
        )
    for name, r in be.iterrows():
        sentence = _verdict(name, r, vot)
        if sentence is None:
            continue
        if _only(a, name) or _only(a, base):  # a verdict from the completed runs of a variant most of whose fail
            sentence += Markup(" (from completed runs only: see the warning below)")
        own = [k for k, text in used[name] if (k, text) not in used[base]]
        tail = Markup(" (prices: {}).").format(_keys(own)) if own else Markup(" (the baseline's prices).")
        verdicts.append(sentence + tail)
    return verdicts


def _warnings(a) -> list[str]:
    return [c.warning() + "." for c in a.completion if c.flagged]


def _only_month(a, name: str) -> Markup:
    c = {x.variant: x for x in a.completion}.get(name)
    if c is None or not c.flagged:
        return Markup("")
    return Markup(" (<b>the cost of its completed runs × the volume; {} of its runs failed or did not finish, so "
                  "this is not what the volume would spend</b>)").format(fmt.pct(c.share))  # fmt: skip


def basis_rows(a, prices: dict[str, str]) -> list[list]:
    """What the verdicts rest on, for the summary box: the price line of every model and tier a variant runs on
    (its catalog and date, or its source), where each model's speeds come from, and each tier's speed-up."""
    from agentsim.model.loading import source_of
    from agentsim.pricing.provenance import speed_sources

    res = a.res
    src = source_of(res.scenario)
    models = {k.split("/", 1)[0] for keys in tier_keys(res.plan).values() for k in keys}
    speeds = speed_sources(res.scenario, Path(src).parent if src else None)
    return [
        *[[f"prices: {name}", text] for name, text in prices.items()],
        *[[f"speeds: {name}", text] for name, text in speeds.items() if name in models],
        *[[f"speeds: {name}", text] for name, text in speed_lines(res.plan).items()],
    ]


def header_rows(a, path: Path, version: str) -> list[list]:
    """The table under the summary box: file, runs per variant (as ``run`` counts them), seed, engine,
    version, value of time and volume (the prices and speeds are in the box: :func:`basis_rows`)."""
    from agentsim.analysis.completion import runs_per_variant

    res = a.res
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
