"""Price tables compiled once into per-token rates, with genai-prices' semantics.

A price table gives USD per million tokens for six kinds of token: uncached
input, cache reads, cache writes (5-minute and 1-hour), visible output and
reasoning output. Any rate may be *tiered* by the call's total input tokens
(long-context pricing): when the total input exceeds a tier's ``start``, that
tier's rate applies to every token of that kind in the call.

Missing rates fall back exactly as ``genai_prices.calc_price`` does: cache reads
and writes are billed as input when they have no rate of their own, 1-hour cache
writes as cache writes, reasoning as output. So the cost computed here equals
``calc_price(...).total_price`` (to float precision) for the same usage, whether
the table was written by hand or looked up in the genai-prices catalog
(``{catalog: anthropic/claude-opus-4-8, context: {speed: fast}}``).

Look-ups happen when a scenario is compiled, never per simulated call: the
engine only multiplies token counts by the compiled floats, in a fixed order
(see :func:`call_cost`) that both engines share.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace
from decimal import Decimal

import numpy as np

from .scenario import PRICE_FIELDS, PriceSpec, TieredPrice, suggest

__all__ = ["PriceError", "Rate", "Rates", "call_cost", "catalog_price_fields", "compile_price"]

PER = 1_000_000.0


class PriceError(ValueError):
    def __init__(self, message: str, hint: str = "", subpath: tuple = ()):
        super().__init__(message)
        self.message, self.hint, self.subpath = message, hint, subpath


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
        if isinstance(total_input, np.ndarray):
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


@dataclass(frozen=True)
class Rates:
    """The six per-kind rates of one model at one speed tier (USD per million tokens)."""

    input: Rate
    cache_read: Rate
    cache_write: Rate
    cache_write_1h: Rate
    output: Rate
    reasoning: Rate
    source: str = "explicit"  # 'explicit' or 'catalog:provider/model[@context][#date]'

    @property
    def tiered(self) -> bool:
        return any(
            r.tiered
            for r in (self.input, self.cache_read, self.cache_write, self.cache_write_1h, self.output, self.reasoning)
        )

    def scaled(self, x: float, source: str) -> Rates:
        return Rates(
            self.input.scaled(x),
            self.cache_read.scaled(x),
            self.cache_write.scaled(x),
            self.cache_write_1h.scaled(x),
            self.output.scaled(x),
            self.reasoning.scaled(x),
            source,
        )

    def to_json(self) -> dict:
        return {
            "input_mtok": self.input.to_json(),
            "cache_read_mtok": self.cache_read.to_json(),
            "cache_write_mtok": self.cache_write.to_json(),
            "cache_write_1h_mtok": self.cache_write_1h.to_json(),
            "output_mtok": self.output.to_json(),
            "output_reasoning_mtok": self.reasoning.to_json(),
            "source": self.source,
        }


def call_cost(rates: Rates, total_input, cache_read, cache_write, cache_write_1h, output, reasoning):
    """USD for one call (or an array of calls); the one formula both engines use.

    ``total_input`` counts all input tokens, cached ones included; ``cache_write``
    counts all cache writes, ``cache_write_1h`` the 1-hour ones among them.
    Works on Python numbers and NumPy arrays alike, with the same operations in
    the same order, so both give the same bits.
    """
    uncached = total_input - cache_read - cache_write
    write_5m = cache_write - cache_write_1h
    return (
        uncached * rates.input.at(total_input)
        + cache_read * rates.cache_read.at(total_input)
        + write_5m * rates.cache_write.at(total_input)
        + cache_write_1h * rates.cache_write_1h.at(total_input)
        + output * rates.output.at(total_input)
        + reasoning * rates.reasoning.at(total_input)
    ) / PER


# --------------------------------------------------------------------------- compiling a table


def _rate(value) -> Rate | None:
    if value is None:
        return None
    if isinstance(value, TieredPrice):
        return Rate(float(value.base), tuple(t.start for t in value.tiers), tuple(float(t.price) for t in value.tiers))
    if isinstance(value, Decimal | int | float):
        return Rate(float(value))
    # genai-prices TieredPrices
    return Rate(float(value.base), tuple(int(t.start) for t in value.tiers), tuple(float(t.price) for t in value.tiers))


def _from_fields(fields: dict, source: str) -> Rates:
    """Apply genai-prices' fall-backs to a dict of price fields (any may be None)."""
    inp = _rate(fields.get("input_mtok")) or Rate(0.0)
    out = _rate(fields.get("output_mtok")) or Rate(0.0)
    cr = _rate(fields.get("cache_read_mtok")) or inp
    cw = _rate(fields.get("cache_write_mtok")) or inp
    cw1h = _rate(fields.get("cache_write_1h_mtok")) or cw
    reas = _rate(fields.get("output_reasoning_mtok")) or out
    return Rates(inp, cr, cw, cw1h, out, reas, source)


def compile_price(spec: PriceSpec, prices_as_of: dt.date | None = None) -> Rates:
    """Compile a price spec (explicit, catalog, or catalog with overrides) to rates."""
    fields: dict = {}
    source = "explicit"
    if spec.catalog is not None:
        date = _as_date(spec.date) or prices_as_of or dt.datetime.now(dt.UTC).date()
        fields, source = catalog_price_fields(spec.catalog, spec.context, date)
    overrides = {k: getattr(spec, k) for k in PRICE_FIELDS if getattr(spec, k) is not None}
    if overrides and spec.catalog is not None:
        source += " with " + ", ".join(sorted(overrides)) + " overridden"
    fields.update(overrides)
    return _from_fields(fields, source)


def _as_date(value) -> dt.date | None:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(str(value))


# --------------------------------------------------------------------------- genai-prices catalog


def _snapshot():
    from genai_prices import data_snapshot

    return data_snapshot.get_snapshot()


def find_catalog_model(ref: str):
    """Find ``provider/model`` (or a bare model id) in the genai-prices catalog."""
    snap = _snapshot()
    provider_id, _, model_ref = ref.partition("/") if "/" in ref else (None, "", ref)
    providers = {p.id: p for p in snap.providers}
    if provider_id is not None and provider_id.lower() not in providers:
        from genai_prices.data_snapshot import find_provider_by_id

        if find_provider_by_id(snap.providers, provider_id) is None:
            raise PriceError(
                f"unknown catalog provider '{provider_id}'",
                suggest(provider_id, list(providers)) or "run `agentsim prices SEARCH` to list catalog models",
                ("catalog",),
            )
    try:
        return snap.find_provider_model(model_ref, None, provider_id, None)
    except LookupError:
        candidates = []
        for p in snap.providers:
            if provider_id is None or p.id == provider_id.lower():
                candidates += [f"{p.id}/{m.id}" for m in p.models]
        import difflib

        close = difflib.get_close_matches(ref.lower(), candidates, n=3, cutoff=0.5)
        hint = (
            ("did you mean " + " or ".join(f"'{c}'" for c in close) + "?")
            if close
            else ("run `agentsim prices SEARCH` to list catalog models")
        )
        raise PriceError(f"'{ref}' is not in the genai-prices catalog", hint, ("catalog",)) from None


def catalog_price_fields(ref: str, context: dict | None, date: dt.date) -> tuple[dict, str]:
    """The six price fields of a catalog model on ``date`` under a price ``context``."""
    provider, model = find_catalog_model(ref)
    when = dt.datetime.combine(date, dt.time(12, 0), tzinfo=dt.UTC)
    if context:
        offered = []
        matched = False
        for variant in model.price_variants or ():
            if variant.constraint is not None and not variant.constraint.active(when):
                start = getattr(variant.constraint, "start_date", None)
                offered.append(_fmt_when(variant.when) + (f" (from {start})" if start else ""))
                continue
            offered.append(_fmt_when(variant.when))
            if all(context.get(k) == v for k, v in variant.when.items()):
                matched = True
        if not matched:
            raise PriceError(
                f"catalog model '{provider.id}/{model.id}' has no price for context {_fmt_when(context)} on {date}",
                ("it offers: " + "; ".join(offered)) if offered else "it has no price variants (tiers)",
                ("context",),
            )
    price = model.get_prices(when, context or None)
    fields = {k: getattr(price, k, None) for k in PRICE_FIELDS}
    label = f"catalog:{provider.id}/{model.id}"
    if context:
        label += "@" + _fmt_when(context)
    label += f"#{date.isoformat()}"
    return fields, label


def _fmt_when(when: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in when.items())


def with_source(rates: Rates, source: str) -> Rates:
    return replace(rates, source=source)
