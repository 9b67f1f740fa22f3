"""The rate and cost computation of :mod:`agentsim.pricing.rates`, by hand (docs/validation.md §7).

Every price below is a distinct round number, so that a token kind billed at another kind's rate, a
tier boundary moved by one token, or a fall-back taken from the wrong field changes the total.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import pytest

from agentsim.model.scenario import PriceSpec, TieredPrice
from agentsim.pricing.rates import (
    ZERO,
    PriceError,
    Rate,
    Rates,
    call_cost,
    compile_price,
    needs_default_date,
    rates_from_fields,
)

TIERED = Rate(2.0, (1000, 5000), (3.0, 7.0))  # 2 up to 1000 input tokens, 3 above 1000, 7 above 5000


def rates(**kw) -> Rates:
    base = {
        "input": Rate(1.0),
        "cache_read": Rate(0.1),
        "cache_write": Rate(1.25),
        "cache_write_1h": Rate(2.0),
        "output": Rate(5.0),
        "reasoning": Rate(8.0),
        "source": "explicit",
    }
    base.update(kw)
    return Rates(**base)


# --------------------------------------------------------------------------- Rate


def test_an_untiered_rate_is_its_base_for_any_input():
    r = Rate(4.5)
    assert not r.tiered
    assert r.at(0) == 4.5
    assert r.at(10**9) == 4.5
    assert r.at(np.array([0, 10**9])) == 4.5
    assert r.to_json() == 4.5


@pytest.mark.parametrize(
    ("total_input", "expected"),
    [(0, 2.0), (1000, 2.0), (1001, 3.0), (4999, 3.0), (5000, 3.0), (5001, 7.0), (10**7, 7.0)],
)
def test_a_tier_applies_strictly_above_its_start_scalar_and_array(total_input, expected):
    assert TIERED.tiered
    assert TIERED.at(total_input) == expected
    arr = TIERED.at(np.array([total_input, 0, 5001], dtype=np.int64))
    assert arr.tolist() == [expected, 2.0, 7.0]


def test_scaling_a_rate_scales_base_and_tiers_but_not_starts():
    s = TIERED.scaled(2.5)
    assert s == Rate(5.0, (1000, 5000), (7.5, 17.5))
    assert s.to_json() == {"base": 5.0, "tiers": [{"start": 1000, "price": 7.5}, {"start": 5000, "price": 17.5}]}


def test_rates_scale_every_kind_and_the_request_fee():
    r = rates(requests=Rate(4.0), as_of=dt.date(2026, 1, 2), reasoning=TIERED)
    s = r.scaled(3.0, "x3")
    assert (s.input, s.cache_read, s.cache_write, s.cache_write_1h, s.output) == (
        Rate(3.0),
        Rate(0.1 * 3.0),
        Rate(3.75),
        Rate(6.0),
        Rate(15.0),
    )
    assert s.reasoning == Rate(6.0, (1000, 5000), (9.0, 21.0))
    assert s.requests == Rate(12.0)
    assert s.source == "x3"
    assert s.as_of == dt.date(2026, 1, 2)


def test_rates_are_tiered_when_any_kind_is():
    assert not rates().tiered
    for kind in ("input", "cache_read", "cache_write", "cache_write_1h", "output", "reasoning", "requests"):
        assert rates(**{kind: TIERED}).tiered, kind


def test_rates_to_json_names_every_kind():
    r = rates(requests=Rate(4.0), as_of=dt.date(2026, 3, 4), output=TIERED)
    assert r.to_json() == {
        "input_mtok": 1.0,
        "cache_read_mtok": 0.1,
        "cache_write_mtok": 1.25,
        "cache_write_1h_mtok": 2.0,
        "output_mtok": {"base": 2.0, "tiers": [{"start": 1000, "price": 3.0}, {"start": 5000, "price": 7.0}]},
        "output_reasoning_mtok": 8.0,
        "requests_kcount": 4.0,
        "source": "explicit",
        "as_of": "2026-03-04",
    }
    assert rates().to_json()["as_of"] is None
    assert rates().to_json()["requests_kcount"] == 0.0


# --------------------------------------------------------------------------- call_cost


def test_call_cost_bills_each_token_kind_at_its_rate():
    # input 10,000 of which 3,000 read and 4,000 written (1,000 of them 1-hour): uncached 3,000
    #   3,000 x 1 + 3,000 x 0.1 + 3,000 x 1.25 + 1,000 x 2 + 500 x 5 + 200 x 8
    #   = 3,000 + 300 + 3,750 + 2,000 + 2,500 + 1,600 = 13,150 per million = $0.01315
    cost = call_cost(rates(), 10_000, 3_000, 4_000, 1_000, 500, 200)
    assert cost == pytest.approx(0.01315, rel=1e-12)


def test_call_cost_adds_the_request_fee_per_thousand_calls():
    # $4 per 1000 requests: $0.004 a call on top of 1,000 input x $1 = $0.001
    assert call_cost(rates(requests=Rate(4.0)), 1_000, 0, 0, 0, 0, 0) == pytest.approx(0.005, rel=1e-12)
    # a tiered fee (0 up to 1000 input tokens, $6 above) that is zero at this call's size still applies above
    fee = Rate(0.0, (1000,), (6.0,))
    assert call_cost(rates(requests=fee), 1_000, 0, 0, 0, 0, 0) == pytest.approx(0.001, rel=1e-12)
    assert call_cost(rates(requests=fee), 2_000, 0, 0, 0, 0, 0) == pytest.approx(0.002 + 0.006, rel=1e-12)


def test_call_cost_prices_every_kind_at_the_tier_of_the_total_input():
    # every kind at TIERED: total input 6,000 > 5,000 -> 7 per million for all 6,000 + 100 + 50 tokens
    all_tiered = Rates(TIERED, TIERED, TIERED, TIERED, TIERED, TIERED)
    assert call_cost(all_tiered, 6_000, 1_000, 2_000, 500, 100, 50) == pytest.approx(6_150 * 7 / 1e6, rel=1e-12)
    # at 1,000 input the base rate 2 applies
    assert call_cost(all_tiered, 1_000, 0, 0, 0, 100, 0) == pytest.approx(1_100 * 2 / 1e6, rel=1e-12)
    # arrays: the same formula element by element
    got = call_cost(
        all_tiered,
        np.array([6_000, 1_000]),
        np.array([1_000, 0]),
        np.array([2_000, 0]),
        np.array([500, 0]),
        np.array([100, 100]),
        np.array([50, 0]),
    )
    assert got.tolist() == pytest.approx([6_150 * 7 / 1e6, 1_100 * 2 / 1e6], rel=1e-12)


@pytest.mark.parametrize(
    ("kind", "args", "tokens"),
    [
        # (kind priced at 1000/Mtok, call_cost arguments after the rates, tokens billed at that kind)
        ("input", (700, 0, 0, 0, 0, 0), 700),
        ("cache_read", (700, 300, 0, 0, 0, 0), 300),
        ("cache_write", (700, 0, 300, 100, 0, 0), 200),
        ("cache_write_1h", (700, 0, 300, 100, 0, 0), 100),
        ("output", (0, 0, 0, 0, 40, 9), 40),
        ("reasoning", (0, 0, 0, 0, 40, 9), 9),
    ],
)
def test_each_kind_is_billed_at_its_own_rate(kind, args, tokens):
    zero = dict.fromkeys(("input", "cache_read", "cache_write", "cache_write_1h", "output", "reasoning"), ZERO)
    zero[kind] = Rate(1000.0)
    assert call_cost(Rates(**zero), *args) == pytest.approx(tokens / 1000, rel=1e-12)


# --------------------------------------------------------------------------- compiling a table


def test_rates_from_fields_fall_back_as_genai_prices_does():
    r = rates_from_fields({"input_mtok": 3, "output_mtok": 15}, "explicit")
    assert (r.input, r.cache_read, r.cache_write, r.cache_write_1h, r.output, r.reasoning, r.requests) == (
        Rate(3.0),
        Rate(3.0),
        Rate(3.0),
        Rate(3.0),
        Rate(15.0),
        Rate(15.0),
        ZERO,
    )
    assert r.source == "explicit"
    assert r.as_of is None
    # a write price serves 5-minute and 1-hour writes; a 5m catalog key beats it for 5-minute writes
    r = rates_from_fields(
        {"input_mtok": 3, "output_mtok": 15, "cache_write_mtok": 4, "cache_read_mtok": 0.3}, "s", dt.date(2026, 1, 1)
    )
    assert (r.cache_read, r.cache_write, r.cache_write_1h) == (Rate(0.3), Rate(4.0), Rate(4.0))
    assert r.as_of == dt.date(2026, 1, 1)
    r = rates_from_fields(
        {
            "input_mtok": 3,
            "output_mtok": 15,
            "cache_write_mtok": 4,
            "cache_write_5m_mtok": 3.75,
            "cache_write_1h_mtok": 6,
            "output_reasoning_mtok": 20,
            "requests_kcount": Decimal("0.5"),
        },
        "s",
    )
    assert (r.cache_write, r.cache_write_1h, r.reasoning, r.requests) == (Rate(3.75), Rate(6.0), Rate(20.0), Rate(0.5))
    # nothing given: free
    empty = rates_from_fields({}, "s")
    assert (empty.input, empty.output, empty.cache_read, empty.reasoning) == (ZERO, ZERO, ZERO, ZERO)


def test_rates_from_fields_read_tiered_prices_of_either_form():
    ours = TieredPrice.model_validate({"base": 3, "tiers": [{"start": 200_000, "price": 6}]})
    r = rates_from_fields({"input_mtok": ours, "output_mtok": 15}, "s")
    assert r.input == Rate(3.0, (200_000,), (6.0,))
    assert r.cache_read == r.input  # the fall-back keeps the tiers

    from genai_prices.types import Tier, TieredPrices

    theirs = TieredPrices(base=Decimal("1.5"), tiers=[Tier(start=128_000, price=Decimal("3"))])
    r = rates_from_fields({"input_mtok": 1, "output_mtok": theirs}, "s")
    assert r.output == Rate(1.5, (128_000,), (3.0,))
    assert isinstance(r.output.starts[0], int)
    assert isinstance(r.output.prices[0], float)


def test_compile_an_explicit_price():
    spec = PriceSpec.model_validate(
        {"input_mtok": 2, "output_mtok": 10, "cache_write_mtok": 2.5, "cache_write_1h_mtok": 4, "requests_kcount": 1}
    )
    r = compile_price(spec, prices_as_of=dt.date(2026, 1, 1))
    assert r.source == "explicit"
    assert r.as_of is None  # an explicit table has no date, whatever prices_as_of says
    assert (r.input, r.cache_read, r.cache_write, r.cache_write_1h, r.output, r.reasoning, r.requests) == (
        Rate(2.0),
        Rate(2.0),
        Rate(2.5),
        Rate(4.0),
        Rate(10.0),
        Rate(10.0),
        Rate(1.0),
    )


def test_a_one_hour_write_price_without_the_write_price_is_refused():
    spec = PriceSpec.model_validate({"input_mtok": 2, "output_mtok": 10, "cache_write_1h_mtok": 4})
    with pytest.raises(PriceError) as err:
        compile_price(spec)
    assert err.value.subpath == ("cache_write_1h_mtok",)
    assert err.value.message == "cache_write_1h_mtok is given without cache_write_mtok"
    assert err.value.hint == (
        "add cache_write_mtok (the 5-minute write price): genai-prices rejects a 1-hour write price without it"
    )


def test_a_rate_whose_tiers_and_prices_differ_in_length_is_refused_not_truncated():
    # Rate's tiers are pairs (start, price): zip(..., strict=True) refuses a price list of another length
    broken = Rate(1.0, (100, 200), (2.0,))
    with pytest.raises(ValueError):
        broken.at(0)  # below every start: the scalar loop walks all the pairs
    with pytest.raises(ValueError):
        broken.at(np.array([0, 500]))
    with pytest.raises(ValueError):
        broken.to_json()


D = dt.date(2026, 11, 1)


def test_catalog_overrides_are_named_in_the_source_label():
    one = compile_price(PriceSpec.model_validate({"catalog": "anthropic/claude-opus-4-8", "output_mtok": 20}), D)
    assert one.source == "catalog:anthropic/claude-opus-4-8#2026-11-01 with output_mtok overridden"
    two = compile_price(
        PriceSpec.model_validate({"catalog": "anthropic/claude-opus-4-8", "output_mtok": 20, "input_mtok": 4}), D
    )
    assert two.source == "catalog:anthropic/claude-opus-4-8#2026-11-01 with input_mtok, output_mtok overridden"
    assert (two.input, two.output, two.as_of) == (Rate(4.0), Rate(20.0), D)


def test_a_catalog_model_without_token_prices_is_refused_at_the_catalog_key():
    with pytest.raises(PriceError) as err:
        compile_price(PriceSpec.model_validate({"catalog": "openai/tts-1"}), D)
    assert err.value.message == (
        "catalog model 'openai/tts-1' has no input_mtok price on 2026-11-01 (not a text model, or listed "
        "without prices)"
    )
    assert err.value.subpath == ("catalog",)
    assert err.value.hint == "give it yourself next to catalog, e.g. {catalog: openai/tts-1, input_mtok: 0}"
    with pytest.raises(PriceError) as err:
        compile_price(PriceSpec.model_validate({"catalog": "openai/tts-1", "input_mtok": 0}), D)
    assert "no output_mtok price" in err.value.message


def test_needs_default_date_only_for_a_catalog_price_without_its_own_date():
    explicit = PriceSpec.model_validate({"input_mtok": 1, "output_mtok": 2})
    undated = PriceSpec.model_validate({"catalog": "anthropic/claude-opus-4-8"})
    dated = PriceSpec.model_validate({"catalog": "anthropic/claude-opus-4-8", "date": "2026-01-05"})
    assert not needs_default_date([])
    assert not needs_default_date([None, explicit, dated])
    assert needs_default_date([explicit, undated])
    assert needs_default_date([None, dated, undated])
