"""Price tables compiled once into per-token rates, with genai-prices' semantics.

**Kinds of token.** A call's bill has six token kinds, each with a price in USD
per million tokens: uncached input (``input_mtok``), cache reads
(``cache_read_mtok``), 5-minute cache writes (``cache_write_mtok``), 1-hour
cache writes (``cache_write_1h_mtok``), visible output (``output_mtok``) and
reasoning output (``output_reasoning_mtok``), plus an optional fee per request
(``requests_kcount``, USD per 1000 requests, used by e.g. Perplexity). A
missing price falls back exactly as ``genai_prices.calc_price`` bills it: cache
reads and writes as input, 1-hour writes as (5-minute) writes, reasoning as
output.

**Usage semantics** are genai-prices': a call's *input* counts every input
token, cached ones included; its *cache writes* include the 1-hour ones; its
*output* includes reasoning. :func:`call_cost` takes the parts separately
(``output`` visible, ``reasoning`` on top) because that is how the simulator
counts them.

**Long-context tiers.** Any price may be ``{base: 3, tiers: [{start: 200000,
price: 6}]}``: when the call's *total input* (cached tokens included) exceeds a
tier's ``start``, that tier's price applies to *every* token of that kind in
the call (a cliff, not a marginal rate).

**The catalog.** ``{catalog: anthropic/claude-opus-4-8}`` (or a bare model id)
takes the prices from the installed ``genai-prices`` package, never from a
hand-copied table. A price *context* selects a variant the provider sells:
``{speed: fast}``, ``{service_tier: flex | priority}``,
``{processing: batch}``. Every key of the context must select a variant the
model offers on the price date, otherwise it is an error (never a silent
standard price). Explicit fields next to ``catalog`` override single catalog
fields (negotiated rates).

**Dates.** Catalog prices are looked up as of a date: the price's own
``date:``, else the scenario's ``prices_as_of:``, else *today*: the UTC
calendar date when the scenario is compiled. The look-up instant is 12:00 UTC
on that date (this matters only for time-of-day prices such as DeepSeek's
off-peak hours). The date used is recorded in :attr:`Rates.as_of`, in
``summary.json`` (``prices_as_of`` and ``prices``) and in the resolved scenario.

Look-ups happen when a scenario is compiled, never per simulated call: the
engines only multiply token counts by the compiled floats, in one fixed order
(:func:`call_cost`) that both share.
"""

from __future__ import annotations

import datetime as dt
import difflib
import sys
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from agentsim.model.scenario import PRICE_FIELDS, PriceSpec, TieredPrice, suggest

__all__ = [
    "PRICE_KINDS",
    "PriceError",
    "Rate",
    "Rates",
    "call_cost",
    "catalog_price_fields",
    "closest_names",
    "compile_price",
    "describe_catalog_model",
    "find_catalog_model",
    "needs_default_date",
    "price_table",
    "prices_summary",
    "search_catalog",
    "today",
]

PER = 1_000_000.0

# The price fields agentsim simulates, in display order (genai-prices names).
PRICE_KINDS = PRICE_FIELDS
# Catalog price keys that do apply to a plain text call, mapped by rates_from_fields.
_EXTRA_KEYS = ("cache_write_5m_mtok",)
NOON = dt.time(12, 0)


class PriceError(ValueError):
    """A price that cannot be compiled; ``subpath`` is relative to the price spec."""

    def __init__(self, message: str, hint: str = "", subpath: tuple = ()):
        super().__init__(message)
        self.message, self.hint, self.subpath = message, hint, subpath


def today() -> dt.date:
    """The UTC calendar date now: what "today" means for catalog prices."""
    return dt.datetime.now(dt.UTC).date()


# --------------------------------------------------------------------------- compiled rates


@dataclass(frozen=True)
class Rate:
    """USD per million tokens, possibly tiered by the call's total input tokens."""

    base: float
    starts: tuple[int, ...] = ()
    prices: tuple[float, ...] = ()

    @property
    def tiered(self) -> bool:
        return bool(self.starts)

    def at(self, total_input):
        """The applicable rate for a total input (a Python int or a NumPy array)."""
        if not self.starts:
            return self.base
        np = sys.modules.get("numpy")  # not imported => not an array (keeps `agentsim prices` light)
        if np is not None and isinstance(total_input, np.ndarray):
            out = np.full(total_input.shape, self.base)
            for start, price in zip(self.starts, self.prices, strict=True):  # ascending: last match wins
                out = np.where(total_input > start, price, out)
            return out
        for start, price in zip(reversed(self.starts), reversed(self.prices), strict=True):
            if total_input > start:
                return price
        return self.base

    def scaled(self, x: float) -> Rate:
        return Rate(self.base * x, self.starts, tuple(p * x for p in self.prices))

    def to_json(self):
        if not self.starts:
            return self.base
        return {
            "base": self.base,
            "tiers": [{"start": s, "price": p} for s, p in zip(self.starts, self.prices, strict=True)],
        }


ZERO = Rate(0.0)


@dataclass(frozen=True)
class Rates:
    """The per-kind rates of one model at one speed tier (USD per million tokens)."""

    input: Rate
    cache_read: Rate
    cache_write: Rate  # 5-minute writes
    cache_write_1h: Rate
    output: Rate
    reasoning: Rate
    source: str = "explicit"  # 'explicit' or 'catalog:provider/model[@context]#date' (+ overrides)
    requests: Rate = ZERO  # USD per 1000 requests (genai-prices requests_kcount)
    as_of: dt.date | None = None  # the date of the catalog look-up (None: explicit table)

    def _all(self) -> tuple[Rate, ...]:
        return (
            self.input,
            self.cache_read,
            self.cache_write,
            self.cache_write_1h,
            self.output,
            self.reasoning,
            self.requests,
        )

    @property
    def tiered(self) -> bool:
        return any(r.tiered for r in self._all())

    def scaled(self, x: float, source: str) -> Rates:
        return Rates(*(r.scaled(x) for r in self._all()[:6]), source, self.requests.scaled(x), self.as_of)

    def to_json(self) -> dict:
        return {
            "input_mtok": self.input.to_json(),
            "cache_read_mtok": self.cache_read.to_json(),
            "cache_write_mtok": self.cache_write.to_json(),
            "cache_write_1h_mtok": self.cache_write_1h.to_json(),
            "output_mtok": self.output.to_json(),
            "output_reasoning_mtok": self.reasoning.to_json(),
            "requests_kcount": self.requests.to_json(),
            "source": self.source,
            "as_of": self.as_of.isoformat() if self.as_of else None,
        }


def call_cost(rates: Rates, total_input, cache_read, cache_write, cache_write_1h, output, reasoning, *, uncached=None):
    """USD for one call (or an array of calls); the one formula both engines use.

    ``total_input`` counts all input tokens, cached ones included; ``cache_write``
    counts all cache writes, ``cache_write_1h`` the 1-hour ones among them;
    ``output`` is the visible output and ``reasoning`` comes on top of it.
    Works on Python numbers and NumPy arrays alike, with the same operations in
    the same order, so both give the same bits.

    ``uncached`` (``total_input - cache_read - cache_write``, the same integers) may be given by a
    caller that knows it without computing it: ``0`` where every uncached input token is written to
    the prompt cache (the fast path's calls with a cache), which saves two array passes and a term.
    """
    if uncached is None:
        uncached = _minus(_minus(total_input, cache_read), cache_write)
    write_5m = _minus(cache_write, cache_write_1h)
    cost = 0.0
    first = True
    for count, rate in (
        (uncached, rates.input),
        (cache_read, rates.cache_read),
        (write_5m, rates.cache_write),
        (cache_write_1h, rates.cache_write_1h),
        (output, rates.output),
        (reasoning, rates.reasoning),
    ):
        # Token counts and rates are never negative, so a term is +0.0 or more and adding a +0.0 term
        # changes no bit: a count that is a plain zero (not an array) is left out, saving array passes.
        if _plain_zero(count):
            continue
        term = count * rate.at(total_input)
        cost, first = (term if first else cost + term), False
    cost = cost / PER
    if rates.requests.base or rates.requests.tiered:
        cost = cost + rates.requests.at(total_input) / 1000.0
    return cost


def _minus(a, b):
    """``a - b`` of token counts; ``a`` itself when ``b`` is a plain zero (integers: the same values)."""
    return a if _plain_zero(b) else a - b


def _plain_zero(x) -> bool:
    """Whether ``x`` is a zero number (a Python or NumPy scalar, or a 0-d array), not an array of values."""
    return getattr(x, "ndim", 0) == 0 and x == 0


# --------------------------------------------------------------------------- compiling a table


def _rate(value) -> Rate | None:
    if value is None:
        return None
    if isinstance(value, TieredPrice):
        return Rate(float(value.base), tuple(t.start for t in value.tiers), tuple(float(t.price) for t in value.tiers))
    if isinstance(value, Decimal | int | float):
        return Rate(float(value))
    # genai-prices TieredPrices (tiers sorted by start)
    return Rate(float(value.base), tuple(int(t.start) for t in value.tiers), tuple(float(t.price) for t in value.tiers))


def rates_from_fields(fields: dict, source: str, as_of: dt.date | None = None) -> Rates:
    """Apply genai-prices' fall-backs to a dict of price fields (any may be None)."""
    inp = _rate(fields.get("input_mtok")) or ZERO
    out = _rate(fields.get("output_mtok")) or ZERO
    cr = _rate(fields.get("cache_read_mtok")) or inp
    cw_any = _rate(fields.get("cache_write_mtok")) or inp
    cw_5m = _rate(fields.get("cache_write_5m_mtok")) or cw_any
    cw_1h = _rate(fields.get("cache_write_1h_mtok")) or cw_any
    reas = _rate(fields.get("output_reasoning_mtok")) or out
    req = _rate(fields.get("requests_kcount")) or ZERO
    return Rates(inp, cr, cw_5m, cw_1h, out, reas, source, req, as_of)


def compile_price(spec: PriceSpec, prices_as_of: dt.date | None = None) -> Rates:
    """Compile a price spec (explicit, catalog, or catalog with overrides) to rates.

    A catalog price is looked up as of ``spec.date``, else ``prices_as_of``, else
    :func:`today`.
    """
    fields: dict = {}
    source = "explicit"
    as_of = None
    own = [k for k in PRICE_KINDS if getattr(spec, k, None) is not None]
    if spec.catalog is not None:
        as_of = spec.date or prices_as_of or today()
        fields, source = catalog_price_fields(spec.catalog, spec.context, as_of)
        if own:
            source += " with " + ", ".join(own) + " overridden"
    fields.update({k: getattr(spec, k) for k in own})
    if spec.catalog is not None:
        for kind in ("input_mtok", "output_mtok"):
            if fields.get(kind) is None:
                raise PriceError(
                    f"catalog model '{spec.catalog}' has no {kind} price on {as_of} (not a text model, or listed "
                    "without prices)",
                    f"give it yourself next to catalog, e.g. {{catalog: {spec.catalog}, {kind}: 0}}",
                    ("catalog",),
                )
    if fields.get("cache_write_1h_mtok") is not None and fields.get("cache_write_mtok") is None:
        raise PriceError(
            "cache_write_1h_mtok is given without cache_write_mtok",
            "add cache_write_mtok (the 5-minute write price): genai-prices rejects a 1-hour write price without it",
            ("cache_write_1h_mtok",),
        )
    return rates_from_fields(fields, source, as_of)


def needs_default_date(specs) -> bool:
    """Whether any of these price specs is a catalog price without its own date."""
    return any(s is not None and s.catalog is not None and s.date is None for s in specs)


# --------------------------------------------------------------------------- genai-prices catalog


def _snapshot():
    from genai_prices import data_snapshot

    return data_snapshot.get_snapshot()


def _all_refs(snap, provider_id: str | None = None) -> list[str]:
    return [f"{p.id}/{m.id}" for p in snap.providers if provider_id in (None, p.id) for m in p.models]


def closest_names(word: str, options: list[str], n: int = 3) -> list[str]:
    """Catalog names for a misspelt or shortened one: names that start with it (the shortest first), then
    names that contain it, then the closest by spelling (``difflib``), ``n`` at most and none twice.
    ``google/gemini-3-flash`` finds ``google/gemini-3-flash-preview`` before ``google/gemini-3.8-flash``."""
    w = word.lower()
    low = {o: o.lower() for o in options}
    prefix = sorted((o for o, lo in low.items() if lo.startswith(w) and lo != w), key=lambda o: (len(o), o))
    inside = sorted((o for o, lo in low.items() if w in lo and not lo.startswith(w)), key=lambda o: (len(o), o))
    close = difflib.get_close_matches(w, options, n=n, cutoff=0.5)
    return list(dict.fromkeys([*prefix, *inside, *close]))[:n]


def _closest(word: str, options: list[str]) -> str:
    close = closest_names(word, options)
    if close:
        return "closest catalog names: " + ", ".join(close) + "; `agentsim prices SEARCH` lists more"
    return "run `agentsim prices SEARCH` to list catalog models"


def find_catalog_model(ref: str):
    """Find ``provider/model`` (or a bare model id) in the genai-prices catalog: ``(provider, model)``."""
    from genai_prices.data_snapshot import find_provider_by_id

    snap = _snapshot()
    provider_id, model_ref = ref.split("/", 1) if "/" in ref else (None, ref)
    provider = None
    if provider_id is not None:
        provider = find_provider_by_id(snap.providers, provider_id)
        if provider is None:
            owners = [p.id for p in snap.providers if p.find_model(model_ref) is not None]
            hint = suggest(provider_id, [p.id for p in snap.providers])
            if owners:
                hint = (hint + "; " if hint else "") + f"'{model_ref}' is offered by: " + ", ".join(owners[:6])
            raise PriceError(
                f"unknown catalog provider '{provider_id}' in '{ref}'",
                hint or "providers: " + ", ".join(p.id for p in snap.providers),
                ("catalog",),
            )
    try:
        return snap.find_provider_model(model_ref, provider, None, None)
    except LookupError:
        # A few catalog ids (e.g. aws/regional.*) are not matched by their own model's match rules;
        # accept the exact id so every name `agentsim prices` lists can be used.
        exact = [m for m in (provider.models if provider else ()) if m.id.lower() == model_ref.lower()]
        if exact:
            return provider, exact[0]
        options = _all_refs(snap, provider.id if provider else None)
        if provider is None:
            options = sorted({r.split("/", 1)[1] for r in options}) + options
        raise PriceError(f"'{ref}' is not in the genai-prices catalog", _closest(ref, options), ("catalog",)) from None


def _owner(snap, provider, model):
    """The provider whose model list holds ``model`` (another one when found through a fallback)."""
    if any(model is m for m in provider.models):
        return provider
    for p in snap.providers:
        if any(model is m for m in p.models):
            return p
    return provider  # pragma: no cover


def _fmt_when(when: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in when.items())


def _constraint_text(c) -> str:
    if c is None:
        return ""
    if hasattr(c, "start_date"):
        return f"from {c.start_date.isoformat()}"
    return f"daily {c.start_time.strftime('%H:%M')}-{c.end_time.strftime('%H:%M')} UTC"


def _check_context(snap, provider, model, context: dict, date: dt.date, when: dt.datetime) -> None:
    owner = _owner(snap, provider, model)
    if owner is not provider:
        raise PriceError(
            f"'{provider.id}/{model.id}' takes its prices from '{owner.id}', and genai-prices applies no price "
            f"context through such a fallback",
            f"name the model's own provider: {{catalog: {owner.id}/{model.id}, context: {{{_fmt_when(context)}}}}}",
            ("context",),
        )
    variants = model.price_variants or ()
    active = [v for v in variants if v.constraint is None or v.constraint.active(when)]
    matched = [v for v in active if all(context.get(k) == val for k, val in v.when.items())]
    used = {k for v in matched for k in v.when}
    for key, value in context.items():
        if key in used:
            continue
        offered = [
            _fmt_when(v.when) + (f" {_constraint_text(v.constraint)}" if v.constraint is not None else "")
            for v in variants
        ]
        hint = ("it offers: " + "; ".join(offered)) if offered else "it has no price variants"
        elsewhere = [
            f"{p.id}/{m.id}"
            for p in snap.providers
            if p is not provider
            for m in p.models
            if m.id == model.id and any(v.when.get(key) == value for v in m.price_variants or ())
        ]
        if elsewhere:
            hint += f"; {key}={value} is sold for " + ", ".join(elsewhere)
        raise PriceError(
            f"catalog model '{provider.id}/{model.id}' has no price for {key}={value} on {date.isoformat()}",
            hint,
            ("context", key),
        )


def catalog_price_fields(ref: str, context: dict | None, date: dt.date) -> tuple[dict, str]:
    """The price fields of a catalog model on ``date`` under a price ``context``, and a source label."""
    provider, model = find_catalog_model(ref)
    when = dt.datetime.combine(date, NOON, tzinfo=dt.UTC)
    if context:
        _check_context(_snapshot(), provider, model, context, date, when)
    price = model.get_prices(when, context or None)
    fields = {k: getattr(price, k, None) for k in (*PRICE_KINDS, *_EXTRA_KEYS)}
    label = f"catalog:{provider.id}/{model.id}"
    if context:
        label += "@" + _fmt_when(context)
    label += f"#{date.isoformat()}"
    return fields, label


def _json_price(value):
    if isinstance(value, Decimal):
        return float(value)
    return {"base": float(value.base), "tiers": [{"start": int(t.start), "price": float(t.price)} for t in value.tiers]}


def price_table(price) -> dict[str, Any]:
    """A genai-prices ``ModelPrice`` as JSON: the simulated fields, then ``not_simulated`` (other units)."""
    out: dict[str, Any] = {}
    for k in PRICE_KINDS:
        v = getattr(price, k, None)
        if v is not None:
            out[k] = _json_price(v)
    other = {
        k: _json_price(v)
        for k, v in price.__dict__.items()
        if v is not None and not k.startswith("_") and k not in PRICE_KINDS
    }
    if other:
        out["not_simulated"] = other
    return out


def search_catalog(query: str = "") -> list[tuple[Any, Any]]:
    """``(provider, model)`` pairs whose ``provider/model`` id or name contains every word of ``query``."""
    words = query.lower().split()
    hits = []
    for p in _snapshot().providers:
        for m in p.models:
            hay = f"{p.id}/{m.id} {m.name or ''}".lower()
            if all(w in hay for w in words) or (len(words) == 1 and "/" not in words[0] and m.is_match(words[0])):
                hits.append((p, m))
    return hits


def _history(model) -> list[tuple[Any, Any]]:
    from genai_prices.types import ModelPrice

    if isinstance(model.prices, ModelPrice):
        return [(None, model.prices)]
    return [(c.constraint, c.prices) for c in model.prices]


def _variant_status(active: bool, ends: tuple[dt.date, str] | None, date: dt.date) -> str:
    """``offered``, ``not yet``, or what the catalog's notes say about its end (which its data does not have)."""
    if not active:
        return "not yet"
    if ends is None:
        return "offered"
    end = ends[0].isoformat()
    if date > ends[0]:
        return f"not offered since {end}, per the catalog's notes (prose only: its price data still lists it)"
    if date == ends[0]:
        return f"ends on {end}, per the catalog's notes (prose only)"
    return f"offered; ends on {end}, per the catalog's notes (prose only)"


def describe_catalog_model(provider, model, date: dt.date) -> dict[str, Any]:
    """Everything the catalog says about a model's prices: history, variants, and the prices on ``date``."""
    from agentsim.pricing.catalog_notes import ended_per_notes

    when = dt.datetime.combine(date, NOON, tzinfo=dt.UTC)
    comments = model.price_comments or provider.price_comments
    variants = []
    for v in model.price_variants or ():
        active = v.constraint is None or v.constraint.active(when)
        ends = ended_per_notes(comments, dict(v.when))
        variants.append(
            {
                "when": dict(v.when),
                "context": _fmt_when(v.when),
                "from": _constraint_text(v.constraint) or None,
                "active": active,
                "status": _variant_status(active, ends, date),
                "ends_per_notes": {"date": ends[0].isoformat(), "note": ends[1]} if ends else None,
                "prices": price_table(v.prices),
                "resolved": price_table(model.get_prices(when, dict(v.when))) if active else None,
            }
        )
    return {
        "ref": f"{provider.id}/{model.id}",
        "provider": provider.id,
        "model": model.id,
        "name": model.name,
        "description": model.description,
        "context_window": model.context_window,
        "deprecated": bool(model.deprecated),
        "price_comments": comments,
        "as_of": date.isoformat(),
        "prices": price_table(model.get_prices(when)),
        "history": [{"from": _constraint_text(c) or None, "prices": price_table(p)} for c, p in _history(model)],
        "variants": variants,
    }


# --------------------------------------------------------------------------- recording what was used


def prices_summary(tiers) -> dict[str, Any]:
    """The rates each tier used (for ``summary.json``): label -> rates, and the genai-prices version."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        gp = version("genai-prices")
    except PackageNotFoundError:  # pragma: no cover
        gp = None
    return {"genai_prices_version": gp, "tiers": {t.label: t.rates.to_json() for t in tiers}}
