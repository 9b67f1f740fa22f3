"""Where a scenario's prices and speeds come from, in words a reader of a result can check.

A forwarded report (or the ``run`` table) must say which price list it used: for each model
(and each speed tier with a price of its own) either ``explicit prices in the scenario: SOURCE``
(the price's ``source:``, where the figures come from and when; without one the text says that no
source or date was given) or ``catalog PROVIDER/MODEL as of DATE (CONTEXT; NAME in genai-prices VERSION,
released DAY)``: the date the prices were looked up as of (the price's own ``date:``, else the scenario's
``prices_as_of``, else the day the scenario was compiled, which :class:`~agentsim.plan.Plan` records), the
catalog's name of the model, and the catalog that was looked in with its release date
(:mod:`agentsim.pricing.catalog_release`): a catalog knows no price announced after its release. Every
verdict (a variant pays off, or not) quotes the sources of the prices it rests on
(``agentsim.viz.report_page.variant_prices``). Speeds come from a profile (its name, kind, date and source)
or from the scenario.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from agentsim.model.scenario import PriceSpec, Scenario
from agentsim.pricing.catalog_notes import ended_per_notes
from agentsim.pricing.catalog_release import catalog_release

__all__ = ["ended_per_notes", "price_sources", "speed_sources"]

EXPLICIT = "explicit prices in the scenario"
UNDATED = "no source or date given: add price.source"


def _price_text(spec: PriceSpec, default_date: dt.date | None) -> str:
    if spec.catalog is None:
        return f"{EXPLICIT}: {spec.source}" if spec.source else f"{EXPLICIT} ({UNDATED})"
    day = spec.date or default_date
    text = f"catalog {spec.catalog} as of {day.isoformat() if day else 'today'}"
    context = [", ".join(f"{k}={v}" for k, v in spec.context.items())] if spec.context else []
    text += " (" + "; ".join([*context, _catalog_name(spec.catalog) + catalog_release().text()]) + ")"
    overrides = [k for k, v in spec.model_dump(exclude_none=True).items() if k.endswith(("_mtok", "_kcount"))]
    if overrides:
        text += f"; explicit {', '.join(overrides)}"
    if spec.source:
        text += f": {spec.source}"
    return text


def _catalog_name(ref: str) -> str:
    """The catalog's own name of a model (``Claude Opus 5.5, ``), or nothing when it has none."""
    from agentsim.pricing.rates import PriceError, find_catalog_model

    try:
        _, model = find_catalog_model(ref)
    except PriceError:  # pragma: no cover - the scenario was priced from it
        return ""
    return f"{model.name} in " if model.name else ""


def price_sources(scenario: Scenario, prices_as_of: dt.date | None = None) -> dict[str, str]:
    """``{"opus": "explicit prices in the scenario", "opus/fast": "catalog ... as of 2026-03-01", ...}``.

    ``prices_as_of`` is the date catalog prices without their own date were looked up as of
    (``Plan.prices_as_of``); a tier priced by ``price_x`` reads as a multiple of its model's price.
    """
    default = scenario.prices_as_of or prices_as_of
    out: dict[str, str] = {}
    for name, m in scenario.models.items():
        out[name] = _price_text(m.price, default)
        for tier, s in m.speeds.items():
            if s.price is not None:
                out[f"{name}/{tier}"] = _price_text(s.price, default)
            elif s.price_x is not None:
                out[f"{name}/{tier}"] = f"{s.price_x:g} × the {name} price"
    return out


def speed_sources(scenario: Scenario, base_dir: Path | None = None) -> dict[str, str]:
    """Per model: ``profile REF (kind, date): source`` (REF as the scenario names it) or ``set in the scenario``."""
    from agentsim.model.profiles import load_profile

    out: dict[str, str] = {}
    for name, m in scenario.models.items():
        if m.profile is None:
            out[name] = "set in the scenario"
            continue
        try:
            prof, _ = load_profile(m.profile, base_dir)
        except Exception:  # the profile was read when the scenario loaded; this only words it
            out[name] = f"profile {m.profile}"
            continue
        out[name] = f"profile {m.profile} ({prof.kind}, {prof.date.isoformat()}): {' '.join(prof.source.split())}"
    return out
