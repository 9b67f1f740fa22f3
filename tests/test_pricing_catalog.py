"""agentsim's per-call cost equals ``genai_prices.calc_price(...).total_price`` (to 1e-9 relative).

The reference is genai-prices itself, called the way a user prices a logged call:
``calc_price(Usage(...), model_ref, provider_id=..., genai_request_timestamp=...,
price_context=...)``. Its usage semantics: ``input_tokens`` counts every input
token (cached included), ``cache_write_tokens`` includes the 1-hour writes, and
``output_tokens`` includes reasoning, with ``output_reasoning_tokens`` a subset.

Three independent checks:

* the whole catalog (every text model, every price variant active on the date,
  token mixes below and above every long-context tier start) through
  :func:`compile_price` + :func:`call_cost`;
* random explicit tables against genai-prices' own ``ModelPrice.calc_price``;
* end to end: the ``calls`` table of a simulated scenario (prompt cache with
  5-minute and 1-hour entries, reasoning, long context, fast/flex tiers,
  a per-request fee), both engines.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from genai_prices import Usage, calc_price
from genai_prices.data_snapshot import get_snapshot
from genai_prices.types import ModelPrice, Tier, TieredPrices
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agentsim.model.scenario import PriceSpec
from agentsim.pricing.rates import PRICE_KINDS, call_cost, compile_price
from conftest import model, run, scenario

NOON = dt.time(12, 0)
DATES = (dt.date(2026, 3, 1), dt.date(2026, 11, 1))  # before and after many catalog price changes

# (input, cache_read, cache_write, cache_write_1h, visible output, reasoning)
MIXES = (
    (1_200, 0, 0, 0, 300, 0),
    (60_000, 48_000, 10_000, 4_000, 900, 1_500),
    (250_000, 200_000, 40_000, 15_000, 3_000, 2_000),
)


def usage(inp, cr, cw, cw1h, out, reas) -> Usage:
    return Usage(
        input_tokens=inp,
        cache_read_tokens=cr,
        cache_write_tokens=cw,
        cache_write_1h_tokens=cw1h,
        output_tokens=out + reas,
        output_reasoning_tokens=reas,
    )


def reference(mix, provider_id, model_ref, date, context=None) -> float:
    ts = dt.datetime.combine(date, NOON, tzinfo=dt.UTC)
    return float(
        calc_price(
            usage(*mix), model_ref, provider_id=provider_id, genai_request_timestamp=ts, price_context=context
        ).total_price
    )


def assert_close(ours, theirs, what):
    assert ours == pytest.approx(theirs, rel=1e-9, abs=1e-15), what


def _prices(m):
    return [m.prices] if isinstance(m.prices, ModelPrice) else [c.prices for c in m.prices]


def _tier_starts(m) -> set[int]:
    return {t.start for p in _prices(m) for v in p.__dict__.values() if isinstance(v, TieredPrices) for t in v.tiers}


def _text_model(m, date) -> bool:
    p = m.get_prices(dt.datetime.combine(date, NOON, tzinfo=dt.UTC))
    return getattr(p, "input_mtok", None) is not None and getattr(p, "output_mtok", None) is not None


def _catalog_cases():
    """(ref, context, date, mix) for every text model, variant and tier boundary in the installed catalog."""
    cases = []
    for p in get_snapshot().providers:
        for m in p.models:
            for date in DATES:
                if not _text_model(m, date):
                    continue
                when = dt.datetime.combine(date, NOON, tzinfo=dt.UTC)
                mixes = list(MIXES)
                for start in sorted(_tier_starts(m)):  # exactly at a tier start is below it; one more is above
                    for total in (start, start + 1):
                        mixes.append((total, total // 2, total // 4, total // 10, 700, 400))
                contexts = [None] + [
                    dict(v.when) for v in m.price_variants or () if v.constraint is None or v.constraint.active(when)
                ]
                for ctx in contexts:
                    for mix in mixes if ctx is None else mixes[1:]:
                        cases.append((p.id, m.id, ctx, date, mix))
    return cases


def test_every_catalog_text_model_matches_calc_price():
    cases = _catalog_cases()
    assert len(cases) > 5000  # the whole catalog, not a sample
    compiled = {}
    unmatched = {}
    snap = get_snapshot()
    for p in snap.providers:
        for m in p.models:
            try:
                snap.find_provider_model(m.id, p, None, None)
            except LookupError:
                unmatched[(p.id, m.id)] = (p, m)
    assert len(unmatched) < 200
    for provider_id, model_id, ctx, date, mix in cases:
        key = (provider_id, model_id, tuple(sorted((ctx or {}).items())), date)
        if key not in compiled:
            spec = PriceSpec(catalog=f"{provider_id}/{model_id}", context=ctx, date=date)
            compiled[key] = compile_price(spec)
        ours = call_cost(compiled[key], *mix)
        if (provider_id, model_id) in unmatched:  # calc_price cannot find these by id: price the model itself
            prov, mod = unmatched[(provider_id, model_id)]
            ts = dt.datetime.combine(date, NOON, tzinfo=dt.UTC)
            theirs = float(mod.calc_price(usage(*mix), prov, genai_request_timestamp=ts, price_context=ctx).total_price)
        else:
            theirs = reference(mix, provider_id, model_id, date, ctx)
        assert_close(ours, theirs, (provider_id, model_id, ctx, date, mix))


# A hand-picked grid named in the issue: fast mode, service tiers, batch, long context, 1h writes, request fees.
GRID = [
    ("anthropic/claude-opus-4-8", None, dt.date(2026, 11, 1)),
    ("anthropic/claude-opus-4-8", {"speed": "fast"}, dt.date(2026, 11, 1)),
    ("anthropic/claude-opus-4-8", {"processing": "batch"}, dt.date(2026, 11, 1)),
    ("anthropic/claude-opus-4-6", None, dt.date(2026, 3, 1)),  # long-context tiers before 2026-03-13
    ("anthropic/claude-opus-4-6", None, dt.date(2026, 3, 13)),  # flat prices from that day on
    ("claude-opus-4-8", {"speed": "fast"}, dt.date(2026, 11, 1)),  # a bare model id
    ("openai/gpt-5.2", {"service_tier": "flex"}, dt.date(2026, 11, 1)),
    ("openai/gpt-5.2", {"service_tier": "priority"}, dt.date(2026, 11, 1)),
    ("openai/gpt-5.2", None, dt.date(2026, 11, 1)),
    ("perplexity/sonar", None, dt.date(2026, 11, 1)),  # a fee per request
    ("perplexity/sonar-deep-research", None, dt.date(2026, 11, 1)),  # reasoning priced on its own
    ("deepseek/deepseek-chat", None, dt.date(2026, 11, 1)),  # time-of-day prices: 12:00 UTC
]


@pytest.mark.parametrize(("ref", "ctx", "date"), GRID, ids=[f"{r}{c or ''}@{d}" for r, c, d in GRID])
@pytest.mark.parametrize(
    "mix", [*MIXES, (200_000, 100_000, 50_000, 20_000, 700, 400), (200_001, 100_000, 50_000, 20_000, 700, 400)]
)
def test_named_grid_matches_calc_price(ref, ctx, date, mix):
    rates = compile_price(PriceSpec(catalog=ref, context=ctx, date=date))
    provider_id, model_ref = ref.split("/", 1) if "/" in ref else (None, ref)
    assert_close(call_cost(rates, *mix), reference(mix, provider_id, model_ref, date, ctx), ref)


def test_the_grid_exercises_what_it_claims():
    # Guard against a catalog update quietly removing what the grid is meant to cover.
    d = dt.date(2026, 11, 1)
    fast = compile_price(PriceSpec(catalog="anthropic/claude-opus-4-8", context={"speed": "fast"}, date=d))
    std = compile_price(PriceSpec(catalog="anthropic/claude-opus-4-8", date=d))
    assert fast.output.base > std.output.base and std.cache_write_1h.base > std.cache_write.base
    assert compile_price(PriceSpec(catalog="anthropic/claude-opus-4-6", date=dt.date(2026, 3, 1))).tiered
    assert compile_price(PriceSpec(catalog="perplexity/sonar", date=d)).requests.base > 0
    deep = compile_price(PriceSpec(catalog="perplexity/sonar-deep-research", date=d))
    assert deep.reasoning.base != deep.output.base


# --------------------------------------------------------------------------- explicit tables


def _gp_value(v):
    if isinstance(v, dict):
        return TieredPrices(
            base=Decimal(str(v["base"])),
            tiers=[Tier(start=t["start"], price=Decimal(str(t["price"]))) for t in v["tiers"]],
        )
    return Decimal(str(v))


price_value = st.one_of(
    st.decimals(min_value=0, max_value=200, places=3).map(float),
    st.builds(
        lambda base, starts, prices: {
            "base": base,
            "tiers": [{"start": s, "price": p} for s, p in zip(sorted(starts), prices, strict=False)],
        },
        st.decimals(min_value=0, max_value=50, places=2).map(float),
        st.sets(st.integers(0, 400_000), min_size=1, max_size=3),
        st.lists(st.decimals(min_value=0, max_value=100, places=2).map(float), min_size=3, max_size=3),
    ),
)
optional = ("cache_read_mtok", "cache_write_mtok", "cache_write_1h_mtok", "output_reasoning_mtok", "requests_kcount")


@st.composite
def table_and_usage(draw):
    table = {"input_mtok": draw(price_value), "output_mtok": draw(price_value)}
    for k in optional:
        if k == "cache_write_1h_mtok" and "cache_write_mtok" not in table:
            continue  # genai-prices requires the parent price (agentsim rejects it too: test_pricing.py)
        if draw(st.booleans()):
            table[k] = (
                draw(price_value)
                if k != "requests_kcount"
                else draw(price_value.filter(lambda v: not isinstance(v, dict)))
            )
    inp = draw(st.integers(0, 600_000))
    cr = draw(st.integers(0, inp))
    cw = draw(st.integers(0, inp - cr))
    cw1h = draw(st.integers(0, cw))
    return table, (inp, cr, cw, cw1h, draw(st.integers(0, 50_000)), draw(st.integers(0, 50_000)))


_TIERED = {
    "input_mtok": {"base": 3.0, "tiers": [{"start": 200_000, "price": 6.0}]},
    "output_mtok": {"base": 15.0, "tiers": [{"start": 200_000, "price": 22.5}]},
    "cache_read_mtok": {"base": 0.3, "tiers": [{"start": 200_000, "price": 0.6}]},
}


@settings(max_examples=300, deadline=None, derandomize=True)
@given(table_and_usage())
# exactly at a long-context tier's start (base price) and one token past it (the tier price for every token)
@example((_TIERED, (200_000, 50_000, 0, 0, 1000, 0)))
@example((_TIERED, (200_001, 50_000, 0, 0, 1000, 0)))
@example(
    ({"input_mtok": 3.0, "output_mtok": {"base": 15.0, "tiers": [{"start": 0, "price": 30.0}]}}, (0, 0, 0, 0, 10, 0))
)
def test_explicit_tables_follow_genai_prices_semantics(case):
    table, mix = case
    ours = call_cost(compile_price(PriceSpec(**table)), *mix)
    theirs = ModelPrice(**{k: _gp_value(v) for k, v in table.items()}).calc_price(usage(*mix))["total_price"]
    assert_close(ours, float(theirs), (table, mix))


def test_catalog_5m_write_price_is_used_for_5m_writes(monkeypatch):
    # No catalog model prices cache_write_5m_mtok today; should one, 5-minute writes use it and 1-hour
    # writes fall back to cache_write_mtok, as genai-prices bills usage that reports 5m writes.
    import agentsim.pricing.rates as pricing

    fields = {
        "input_mtok": Decimal(3),
        "output_mtok": Decimal(15),
        "cache_write_mtok": Decimal("3.75"),
        "cache_write_5m_mtok": Decimal(4),
    }
    monkeypatch.setattr(pricing, "catalog_price_fields", lambda ref, ctx, date: (dict(fields), "catalog:x"))
    rates = compile_price(PriceSpec(catalog="x/y", date=dt.date(2026, 1, 1)))
    mix = (10_000, 2_000, 3_000, 1_000, 100, 0)
    u = usage(*mix)
    u.cache_write_5m_tokens = 2_000
    theirs = ModelPrice(**fields).calc_price(u)["total_price"]
    assert_close(call_cost(rates, *mix), float(theirs), "5m")
    assert set(PRICE_KINDS) >= {"input_mtok", "cache_write_1h_mtok", "requests_kcount"}


# --------------------------------------------------------------------------- end to end


E2E_MODELS = {
    # (model name, speed) -> (provider, model ref, context, date)
    ("opus", "standard"): ("anthropic", "claude-opus-4-8", None, dt.date(2026, 11, 1)),
    ("opus", "fast"): ("anthropic", "claude-opus-4-8", {"speed": "fast"}, dt.date(2026, 11, 1)),
    ("old-opus", "standard"): ("anthropic", "claude-opus-4-6", None, dt.date(2026, 3, 1)),
    ("gpt", "standard"): ("openai", "gpt-5.2", None, dt.date(2026, 11, 1)),
    ("gpt", "flex"): ("openai", "gpt-5.2", {"service_tier": "flex"}, dt.date(2026, 11, 1)),
    ("sonar", "standard"): ("perplexity", "sonar", None, dt.date(2026, 11, 1)),
}


def _e2e_doc():
    def m(ref, date=None, **kw):
        price = {"catalog": ref} if date is None else {"catalog": ref, "date": date}
        return model(price=price, ttft=1.0, tps=100.0, **kw)

    models = {
        "opus": m(
            "anthropic/claude-opus-4-8",
            speeds={
                "fast": {
                    "output_tps_x": 2.5,
                    "price": {"catalog": "anthropic/claude-opus-4-8", "context": {"speed": "fast"}},
                }
            },
        ),
        "old-opus": m("anthropic/claude-opus-4-6", date="2026-03-01", cache={"ttl": "1h"}),
        "gpt": m(
            "openai/gpt-5.2",
            speeds={
                "flex": {
                    "output_tps_x": 0.5,
                    "price": {"catalog": "openai/gpt-5.2", "context": {"service_tier": "flex"}},
                }
            },
        ),
        "sonar": m("perplexity/sonar"),
    }
    body = []
    for name in ("opus", "old-opus", "gpt", "sonar"):
        body += [
            {"call": {"name": f"{name}-act", "model": name, "input": 20_000, "output": 400, "reasoning": 600}},
            {"tool": {"name": f"{name}-run", "latency": 30, "output": 15_000}},
        ]
    steps = [
        {"repeat": {"name": "loop", "times": 3, "steps": body}},
        {"tool": {"name": "long-build", "latency": 600}},  # 10 minutes: 5-minute entries expire, 1-hour ones do not
        {"call": {"name": "final-old-opus", "model": "old-opus", "output": 300}},
        {"call": {"name": "final-opus", "model": "opus", "output": 300}},
    ]
    return scenario(
        steps,
        models=models,
        context={"system": 40_000, "grows": True, "cache": {"scope": "model"}},
        variants={"standard": {}, "fast": {"speed": {"opus": "fast"}}, "flex": {"speed": {"gpt": "flex"}}},
        prices_as_of="2026-11-01",
        runs=2,
    )


@pytest.mark.parametrize("engine", ["des", "fastpath"])
def test_simulated_calls_are_billed_as_calc_price_bills_them(engine):
    res = run(_e2e_doc(), engine=engine)
    calls = res.calls
    # The scenario really exercises long context, cache reads, 5m and 1h writes, an expired entry, reasoning.
    assert calls["input_tokens"].max() > 200_000 and calls["input_tokens"].min() < 200_000
    assert (calls["cache_read_tokens"] > 0).any() and (calls["cache_write_1h_tokens"] > 0).any()
    assert ((calls["cache_write_tokens"] - calls["cache_write_1h_tokens"]) > 0).any()
    final = calls[calls.step == "final-opus"]
    assert (final["cache_read_tokens"] == 0).all()  # its 5-minute entry expired during the 10-minute build
    assert (calls[calls.step == "final-old-opus"]["cache_read_tokens"] > 0).all()  # the 1-hour one did not
    assert set(zip(calls.model, calls.speed, strict=True)) == set(E2E_MODELS)
    for row in calls.itertuples():
        provider_id, ref, ctx, date = E2E_MODELS[(row.model, row.speed)]
        mix = (
            row.input_tokens,
            row.cache_read_tokens,
            row.cache_write_tokens,
            row.cache_write_1h_tokens,
            row.output_tokens,
            row.reasoning_tokens,
        )
        assert_close(row.cost_usd, reference(mix, provider_id, ref, date, ctx), (row.model, row.speed, mix))
    # The per-run cost is the sum of its calls.
    per_run = calls.groupby(["variant", "run"])["cost_usd"].sum()
    runs = res.runs.set_index(["variant", "run"])["cost_usd"]
    for key, total in per_run.items():
        assert runs[key] == pytest.approx(total, rel=1e-12)
