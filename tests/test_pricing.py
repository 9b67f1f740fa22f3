"""Price tables: tiers, fall-backs, catalog references, contexts, dates and the errors users see."""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import pytest
import yaml

import agentsim.pricing.rates as pricing
from agentsim.model.loading import ScenarioError
from agentsim.model.scenario import PriceSpec
from agentsim.pricing.rates import PriceError, Rate, call_cost, compile_price, find_catalog_model
from agentsim.viz.report import write_results
from conftest import make, model, run, scenario

D = dt.date(2026, 11, 1)


def spec(**kw) -> PriceSpec:
    return PriceSpec(**kw)


def price_error(**kw) -> PriceError:
    with pytest.raises(PriceError) as e:
        compile_price(spec(**kw), D)
    return e.value


# --------------------------------------------------------------------------- explicit tables


def test_tier_applies_to_all_tokens_when_total_input_exceeds_its_start():
    rates = compile_price(spec(input_mtok={"base": 3, "tiers": [{"start": 200_000, "price": 6}]}, output_mtok=15))
    # At exactly 200k the base applies; one token more and every input token costs the tier price.
    assert call_cost(rates, 200_000, 0, 0, 0, 0, 0) == pytest.approx(200_000 * 3e-6)
    assert call_cost(rates, 200_001, 0, 0, 0, 0, 0) == pytest.approx(200_001 * 6e-6)
    # Cached tokens count towards the total that decides the tier.
    assert rates.cache_read.at(250_000) == 6  # cache reads fall back to the (tiered) input price


def test_several_tiers_pick_the_highest_start_exceeded_scalar_and_array_alike():
    r = Rate(1.0, (100, 200), (2.0, 3.0))
    totals = [0, 100, 101, 200, 201, 10**6]
    expect = [1.0, 1.0, 2.0, 2.0, 3.0, 3.0]
    assert [r.at(t) for t in totals] == expect
    assert r.at(np.array(totals)).tolist() == expect


def test_fallbacks_follow_genai_prices():
    r = compile_price(spec(input_mtok=3, output_mtok=15))
    assert (r.cache_read, r.cache_write, r.cache_write_1h) == (r.input, r.input, r.input)
    assert r.reasoning == r.output
    r = compile_price(spec(input_mtok=3, output_mtok=15, cache_write_mtok=3.75))
    assert r.cache_write_1h.base == 3.75  # 1-hour writes fall back to the write price


def test_reasoning_defaults_to_output_and_can_be_priced_apart():
    # 1000 input at $2 + 400 visible output at $8 + 600 reasoning at $3 (or $8 when not priced apart).
    both = compile_price(spec(input_mtok=2, output_mtok=8, output_reasoning_mtok=3))
    assert call_cost(both, 1000, 0, 0, 0, 400, 600) == pytest.approx((2000 + 3200 + 1800) / 1e6)
    same = compile_price(spec(input_mtok=2, output_mtok=8))
    assert call_cost(same, 1000, 0, 0, 0, 400, 600) == pytest.approx((2000 + 8000) / 1e6)


def test_one_hour_writes_are_billed_at_their_own_price():
    r = compile_price(
        spec(input_mtok=5, output_mtok=25, cache_read_mtok=0.5, cache_write_mtok=6.25, cache_write_1h_mtok=10)
    )
    # 10k input: 4k read, 6k written of which 2k for an hour; 100 output.
    expect = (0 * 5 + 4000 * 0.5 + 4000 * 6.25 + 2000 * 10 + 100 * 25) / 1e6
    assert call_cost(r, 10_000, 4000, 6000, 2000, 100, 0) == pytest.approx(expect, rel=1e-12)


def test_one_hour_write_price_needs_the_write_price():
    e = price_error(input_mtok=5, output_mtok=25, cache_write_1h_mtok=10)
    assert e.subpath == ("cache_write_1h_mtok",) and "cache_write_mtok" in e.hint


def test_request_fee_is_per_call_and_scales_with_price_x():
    r = compile_price(spec(input_mtok=1, output_mtok=1, requests_kcount=5))
    assert call_cost(r, 0, 0, 0, 0, 0, 0) == pytest.approx(0.005)
    arr = call_cost(r, np.array([0, 1000]), 0, 0, 0, np.array([0, 0]), 0)
    assert arr.tolist() == pytest.approx([0.005, 0.006])
    assert r.scaled(2, "x2").requests.base == 10


def test_scalars_and_arrays_give_the_same_bits():
    r = compile_price(
        spec(
            input_mtok={"base": 3, "tiers": [{"start": 1000, "price": 6}]},
            output_mtok=15,
            cache_read_mtok=0.3,
            cache_write_mtok=3.75,
            cache_write_1h_mtok=6,
        )
    )
    rng = np.random.default_rng(0)
    inp = rng.integers(0, 3000, 200)
    cr = inp // 3
    cw = inp // 4
    w1h = cw // 2
    out = rng.integers(0, 500, 200)
    reas = rng.integers(0, 500, 200)
    vec = call_cost(r, inp, cr, cw, w1h, out, reas)
    for i in range(200):
        args = [int(x[i]) for x in (inp, cr, cw, w1h, out, reas)]
        assert call_cost(r, *args) == vec[i]


# --------------------------------------------------------------------------- catalog references


def test_catalog_refs_provider_model_and_bare_ids():
    p, m = find_catalog_model("anthropic/claude-opus-4-8")
    assert (p.id, m.id) == ("anthropic", "claude-opus-4-8")
    assert find_catalog_model("claude-opus-4-8")[1] is m
    assert find_catalog_model("Anthropic/Claude-Opus-4.8")[1] is m  # the catalog's own aliases and casing


def test_unknown_model_suggests_the_closest_catalog_names():
    e = price_error(catalog="anthropic/claude-opus-4-9")
    assert e.subpath == ("catalog",) and "not in the genai-prices catalog" in e.message
    assert "anthropic/claude-opus-4-8" in e.hint


def test_unknown_provider_suggests_providers_and_who_sells_the_model():
    e = price_error(catalog="antropic/claude-opus-4-8")
    assert "unknown catalog provider 'antropic'" in e.message
    assert "did you mean 'anthropic'" in e.hint and "offered by: anthropic" in e.hint


def test_catalog_price_with_a_context_and_overrides():
    std = compile_price(spec(catalog="anthropic/claude-opus-4-8"), D)
    fast = compile_price(spec(catalog="anthropic/claude-opus-4-8", context={"speed": "fast"}), D)
    assert fast.output.base == 2 * std.output.base  # the catalog's fast-mode multiplier for Opus 4.8
    assert fast.source == "catalog:anthropic/claude-opus-4-8@speed=fast#2026-11-01"
    negotiated = compile_price(spec(catalog="anthropic/claude-opus-4-8", output_mtok=20), D)
    assert negotiated.output.base == 20 and negotiated.input == std.input
    assert "output_mtok overridden" in negotiated.source


def test_a_tier_the_model_does_not_offer_is_an_error_not_a_standard_price():
    e = price_error(catalog="anthropic/claude-opus-4-6", context={"speed": "fast"})
    assert e.subpath == ("context", "speed")
    assert "has no price for speed=fast" in e.message and "processing=batch" in e.hint
    # A context key no variant uses is just as wrong, even next to one that is offered.
    e = price_error(catalog="anthropic/claude-opus-4-8", context={"speed": "fast", "region": "eu"})
    assert e.subpath == ("context", "region")


def test_a_tier_not_yet_offered_on_the_date_is_an_error():
    # OpenAI's flex prices start on 2026-10-12 in the catalog.
    assert compile_price(spec(catalog="openai/gpt-5.2", context={"service_tier": "flex"}), D)
    with pytest.raises(PriceError) as e:
        compile_price(spec(catalog="openai/gpt-5.2", context={"service_tier": "flex"}), dt.date(2026, 3, 1))
    assert "on 2026-03-01" in e.value.message and "service_tier=flex from 2026-10-12" in e.value.hint


def test_context_through_a_fallback_provider_is_refused():
    # genai-prices ignores a price context when a provider borrows another's model; agentsim says so.
    e = price_error(catalog="azure/claude-opus-4-8", context={"speed": "fast"})
    assert "takes its prices from 'anthropic'" in e.message and "anthropic/claude-opus-4-8" in e.hint


def test_a_provider_without_the_variant_points_at_one_that_sells_it():
    e = price_error(catalog="google/claude-opus-4-8", context={"speed": "fast"})
    assert "speed=fast is sold for anthropic/claude-opus-4-8" in e.hint


def test_a_catalog_model_without_token_prices_needs_them_given():
    e = price_error(catalog="openai/tts-1")
    assert "no input_mtok price" in e.message and "input_mtok: 0" in e.hint
    assert compile_price(spec(catalog="openai/tts-1", input_mtok=0, output_mtok=0), D).input.base == 0


# --------------------------------------------------------------------------- dates


def test_price_date_beats_prices_as_of_which_beats_today(monkeypatch):
    monkeypatch.setattr(pricing, "today", lambda: dt.date(2026, 3, 1))
    tiered = compile_price(spec(catalog="anthropic/claude-opus-4-6"))  # "today": long-context tiers
    assert tiered.tiered and tiered.as_of == dt.date(2026, 3, 1)
    flat = compile_price(spec(catalog="anthropic/claude-opus-4-6"), dt.date(2026, 3, 13))  # prices_as_of
    assert not flat.tiered
    own = compile_price(spec(catalog="anthropic/claude-opus-4-6", date=dt.date(2026, 3, 12)), dt.date(2026, 3, 13))
    assert own.tiered and own.as_of == dt.date(2026, 3, 12)


def _catalog_doc(**kw):
    return scenario(
        [{"call": {"input": 1000, "output": 100}}],
        models={"m": model(price={"catalog": "anthropic/claude-opus-4-8"})},
        **kw,
    )


def test_the_date_used_is_recorded_in_summary_and_resolved_scenario(tmp_path, monkeypatch):
    import agentsim.plan.compiler

    monkeypatch.setattr(agentsim.plan.compiler, "today", lambda: dt.date(2026, 11, 20))
    res = run(_catalog_doc())
    doc = res.summary_dict()
    assert doc["prices_as_of"] == "2026-11-20"
    tier = doc["prices"]["tiers"]["m"]
    assert tier["source"] == "catalog:anthropic/claude-opus-4-8#2026-11-20" and tier["as_of"] == "2026-11-20"
    assert tier["input_mtok"] == 5.0 and doc["prices"]["genai_prices_version"]
    write_results(res, tmp_path / "out")
    resolved = yaml.safe_load((tmp_path / "out" / "scenario.resolved.yaml").read_text())
    assert resolved["prices_as_of"] == "2026-11-20"  # re-running the resolved scenario prices as of that day
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["prices_as_of"] == "2026-11-20"


def test_explicit_prices_record_no_date_so_outputs_do_not_depend_on_the_day():
    doc = run(scenario([{"call": {"input": 1000, "output": 100}}])).summary_dict()
    assert doc["prices_as_of"] is None
    assert doc["prices"]["tiers"]["m"]["source"] == "explicit"


def test_prices_as_of_applies_to_catalog_prices_without_their_own_date():
    res = run(_catalog_doc(prices_as_of="2026-03-01"))
    assert res.summary_dict()["prices_as_of"] == "2026-03-01"
    assert res.plan.tiers[0].rates.as_of == dt.date(2026, 3, 1)


# --------------------------------------------------------------------------- through scenarios


def test_plan_errors_point_at_the_price_and_its_context():
    doc = scenario(
        [{"call": {"output": 1}}],
        models={
            "m": model(
                price={"catalog": "anthropic/claude-opus-4-8"},
                speeds={"fast": {"price": {"catalog": "anthropic/claude-opus-4-6", "context": {"speed": "fast"}}}},
            )
        },
    )
    from agentsim.plan.compiler import compile_plan

    with pytest.raises(ScenarioError) as e:
        compile_plan(make(doc))
    (item,) = e.value.items
    assert item.path == ("models", "m", "speeds", "fast", "price", "context", "speed")


def test_price_x_on_a_catalog_price_scales_every_rate():
    doc = scenario(
        [{"call": {"input": 1000, "output": 100}}],
        models={"m": model(price={"catalog": "anthropic/claude-opus-4-8"}, speeds={"fast": {"price_x": 2}})},
        variants={"std": {}, "fast": {"speed": {"m": "fast"}}},
        prices_as_of="2026-11-01",
    )
    res = run(doc)
    std, fast = (res.runs.loc[res.runs.variant == v, "cost_usd"].iloc[0] for v in ("std", "fast"))
    assert fast == pytest.approx(2 * std) and std == pytest.approx((1000 * 5 + 100 * 25) / 1e6)
