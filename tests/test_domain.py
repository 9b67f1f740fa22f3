"""The table of domain limits (agentsim.model.domain): each kind's edges, strictness, the JSON Schema of its
pydantic types, the field mapping's completeness against the published schema, and the docs page."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

from agentsim.model import domain
from agentsim.model.domain import KINDS, TOKENS_MAX, DomainError, check, check_dist, problem
from agentsim.model.field_kinds import _kind_of, field_kinds, kind_problems

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_refuses_nan_inf_denormals_text_and_booleans(kind):
    for bad in (math.nan, math.inf, -math.inf, 5e-324, -5e-324, "5", True, False, None, [1]):
        assert problem(kind, bad) is not None, (kind, bad)
    k = KINDS[kind]
    assert problem(kind, k.lo) is None and problem(kind, k.hi) is None  # both ends are allowed
    above = k.hi * 2 if k.hi > 0 else 1
    assert problem(kind, above) is not None and str(k.reason) in problem(kind, above)
    assert math.isfinite(k.lo) and math.isfinite(k.hi) and k.lo <= k.hi


def test_integer_kinds_take_whole_numbers_only():
    assert check("tokens", 200.0) == 200 and isinstance(check("tokens", 200.0), int)
    with pytest.raises(DomainError, match="whole number"):
        check("tokens", 2.5)
    with pytest.raises(DomainError, match="outside the range"):
        check("tokens", 2**63)
    assert check("tokens", TOKENS_MAX) == 10**9


def test_token_bound_keeps_simulation_totals_inside_int64():
    # the derivation of docs/limits-of-input.md: 4 counts per call, 2e9 calls (the size guard's default)
    from agentsim.plan.sizeguard import SizeLimits

    calls = SizeLimits().max_calls
    assert 4 * calls * TOKENS_MAX < 2**63 - 1
    assert 4 * calls * (2 * TOKENS_MAX) > 2**63 - 1  # and the bound is not needlessly small


def test_positive_refuses_zero_and_smallest_magnitudes():
    assert problem("duration", 0) is None and problem("duration", 0, positive=True) is not None
    assert problem("duration", 1e-300) is not None  # below a nanosecond: a unit slip
    assert problem("factor", 0) is not None and problem("factor", 1e-3) is None


def test_pydantic_types_are_strict_and_publish_their_range():
    class M(BaseModel):
        t: domain.Tokens
        d: domain.PosDuration
        f: domain.Factor

    schema = M.model_json_schema()["properties"]
    assert schema["t"] == {"maximum": 10**9, "minimum": 0, "title": "T", "type": "integer"}
    assert schema["d"]["minimum"] == 1e-9 and schema["d"]["maximum"] == 10 * 365.25 * 86400
    assert schema["f"]["minimum"] == 1e-3 and schema["f"]["maximum"] == 1e3
    assert M(t=200.0, d=1, f=2).t == 200
    for bad in ({"t": "200"}, {"t": True}, {"d": 0}, {"f": math.nan}, {"t": 5e-324}):
        with pytest.raises(ValidationError):
            M(**{"t": 1, "d": 1, "f": 1, **bad})


def test_distributions_of_a_kind_check_every_location_clip_and_spread():
    found = check_dist("duration", {"lognormal": {"median": 1, "p90": 1e300}, "max": math.inf})
    assert {p for p, _ in found} == {("lognormal", "p90"), ("max",)}
    assert check_dist("tokens", {"choice": {"values": [1, 2.5, 3]}})[0][0] == ("choice", "values", 1)
    assert check_dist("speed", {"normal": {"mean": 60, "sd": 1e300}})[0][0] == ("normal", "sd")
    assert check_dist("speed", {"uniform": {"low": 10, "high": 20}}) == []
    assert check_dist("tokens", {"uniform": {"low": 1, "high": 4, "min": 1e300}})[0][0] == ("uniform", "min")
    assert check_dist("factor", {"choice": {"values": [1, 2], "min": 1e300}})[0][0] == ("choice", "min")


def test_field_kinds_reach_nested_steps_and_by_model_tables():
    data = {
        "agent": {"steps": [{"repeat": {"times": {"by": "a", "m": 1e12}, "steps": [{"call": {"output": 1e300}}]}}]},
        "workload": {"duration": {"days": 1e308}},
    }
    paths = {p for p, _ in kind_problems(data)}
    assert paths == {
        ("agent", "steps", 0, "repeat", "times", "m"),
        ("agent", "steps", 0, "repeat", "steps", 0, "call", "output"),
        ("workload", "duration", "days"),
    }


def test_every_numeric_field_of_the_published_schema_has_a_kind():
    # the mapping is complete: each numeric field the schema walk of the fuzzer finds has a kind
    import test_fuzz_scenarios as fz

    missing = []
    for path in fz.FIELDS:
        if path[0] == "slo":
            continue  # a target's kind is its metric's (agentsim.model.scenario.slo_kind): test_slo_targets_have_kinds
        listed = _kind_of(path) is not None or _kind_of((*path, 0)) is not None  # a field, or a list of them
        if not any(isinstance(k, str) and k in ("values", "p") for k in path[-2:]) and not listed:
            parent = path[:-1]
            if not _inside_kind(parent):
                missing.append(".".join(map(str, path)))
    assert missing == [], missing


def _inside_kind(path: tuple) -> bool:
    """A field of a distribution or a tiered price whose field has a kind (checked through that field)."""
    return any(_kind_of(path[:n]) is not None for n in range(1, len(path) + 1))


def test_the_docs_page_shows_the_table():
    page = (ROOT / "docs" / "limits-of-input.md").read_text(encoding="utf-8")
    for k in KINDS.values():
        assert f"| {k.name} |" in page and k.reason in page
    for pattern, kind, _ in field_kinds():
        assert f"| `{'.'.join(pattern)}` | {kind}" in page
    assert "limits-of-input.md" in (ROOT / "mkdocs.yml").read_text()


def test_slo_targets_have_kinds():
    # a target is of its metric's kind: times are durations, the QoE a probability, cost an amount of money
    from agentsim.model.scenario import slo_kind

    metrics = ("ttft_s", "say.first_audio_s", "wall_time_s", "qoe", "a.qoe_from_ask", "cost_usd")
    assert [slo_kind(m) for m in metrics] == ["duration", "duration", "duration", "prob", "prob", "usd"]
