"""Where a scenario's prices and speeds come from, in words a reader of a result can check.

A forwarded report (or the ``run`` table) must say which price list it used: for each model
(and each speed tier with a price of its own) either ``explicit prices in the scenario: SOURCE``
(the price's ``source:``, where the figures come from and when; without one the text says that no
source or date was given) or ``catalog PROVIDER/MODEL as of DATE`` (the price's own ``date:``, else
the scenario's ``prices_as_of``, else the day the scenario was compiled, which
:class:`~agentsim.plan.Plan` records). Every verdict (a variant pays off, or not) quotes the
sources of the prices it rests on (``agentsim.viz.report_page.variant_prices``). Speeds come from a
profile (its name, kind, date and source) or from the scenario.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from agentsim.model.scenario import PriceSpec, Scenario

__all__ = ["ended_per_notes", "price_sources", "speed_sources"]

EXPLICIT = "explicit prices in the scenario"
UNDATED = "no source or date given: add price.source"


def _price_text(spec: PriceSpec, default_date: dt.date | None) -> str:
    if spec.catalog is None:
        return f"{EXPLICIT}: {spec.source}" if spec.source else f"{EXPLICIT} ({UNDATED})"
    day = spec.date or default_date
    text = f"catalog {spec.catalog} as of {day.isoformat() if day else 'today'}"
    if spec.context:
        text += " (" + ", ".join(f"{k}={v}" for k, v in spec.context.items()) + ")"
    overrides = [k for k, v in spec.model_dump(exclude_none=True).items() if k.endswith(("_mtok", "_kcount"))]
    if overrides:
        text += f"; explicit {', '.join(overrides)}"
    if spec.source:
        text += f": {spec.source}"
    return text


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


# --------------------------------------------------------------------------- end dates the catalog gives in prose

_ENDS = re.compile(r"\b(remov|end|retir|discontinu|withdraw|sunset|deprecat|until|no longer)", re.I)
_DATE = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")


def ended_per_notes(comments: str | None, when: dict[str, str]) -> tuple[dt.date, str] | None:
    """The date the catalog's *notes* (its price comments, prose) say a price variant ends, and the sentence.

    genai-prices gives a variant's start as data but an end (if at all) only in words, e.g. "Anthropic
    removes fast mode from Opus 4.8 on 2026-11-30". A sentence counts when it names one of the variant's
    context values (``fast`` of ``{speed: fast}``, as a word), a word of ending (remove, end, retire,
    discontinue, withdraw, sunset, deprecate, until, no longer) and one ISO date; the earliest such date is
    returned. None when no sentence says so (the variant may still end: nothing is guessed).
    """
    if not comments or not when:
        return None
    words = [str(v).lower() for v in when.values()]
    found = []
    for sentence in re.split(r"(?<=[.!?])\s+", " ".join(comments.split())):
        low = sentence.lower()
        dates = _DATE.findall(sentence)
        if len(dates) != 1 or not _ENDS.search(sentence):
            continue
        if not any(re.search(rf"\b{re.escape(w)}\b", low) for w in words):
            continue
        try:
            found.append((dt.date.fromisoformat(dates[0]), sentence))
        except ValueError:
            continue
    return min(found) if found else None
