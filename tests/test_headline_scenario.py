"""The README's and `make demo`'s scenario (scenarios/coding-agent.yaml) is shaped like measured real use.

TraceLab (arXiv 2606.30560; 4,265 Claude Code and Codex sessions, 357k steps) measured: 59.8% of an agent's
response time in tools, a median of 5.7 s of generation per step, tool calls with a median of 0.3 s and a
p90 of 13.6 s, ~1.2 tool calls per step and a median of 252 output tokens per step. The scenario's figures,
computed from simulate() output (the calls and spans tables), must lie within 15% of the study's
(docs/validation.md lists them side by side). 500 runs: the Monte-Carlo error of each figure is a few
percent (the tool share's standard error is ~2%, the medians' well under 1%), far inside the band.

The file also claims that every variant is priced at today's catalog prices: Claude Opus 5.5 (the catalog's
newest Opus), its fast mode at 2x that table for every call or for the plan only, and fast mode at its launch
multiple of 6x.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import agentsim
from agentsim.plan.compiler import compile_plan
from agentsim.pricing.rates import catalog_price_fields
from conftest import SCENARIOS

STUDY = {"tool_share": 0.598, "generation_p50_s": 5.7, "tool_p50_s": 0.3, "tool_p90_s": 13.6}
RUNS = 500


@pytest.fixture(scope="module")
def figures() -> dict[str, float]:
    res = agentsim.simulate(SCENARIOS / "coding-agent.yaml", runs=RUNS, seed=42)
    runs = res.runs[res.runs["variant"] == "standard"]
    calls = res.calls[(res.calls["variant"] == "standard") & (res.calls["step"] == "act")]
    spans = res.spans[(res.spans["variant"] == "standard") & (res.spans["kind"] == "tool")]
    tool = (spans["t_end"] - spans["t_start"]).to_numpy()
    return {
        "tool_share": float(runs["tool_s"].sum() / runs["wall_time_s"].sum()),
        "generation_p50_s": float(np.median((calls["t_end"] - calls["t_start"]).to_numpy())),
        "tool_p50_s": float(np.percentile(tool, 50)),
        "tool_p90_s": float(np.percentile(tool, 90)),
        "tools_per_step": len(spans) / len(calls),
        "output_p50": float(calls["output_tokens"].median()),
    }


@pytest.mark.parametrize("name", sorted(STUDY))
def test_within_15_percent_of_the_study(figures, name):
    assert figures[name] == pytest.approx(STUDY[name], rel=0.15), (name, figures[name])


def test_steps_look_like_the_study(figures):
    assert figures["tools_per_step"] == pytest.approx(1.2, rel=0.05)  # one, then another with p = 1/6
    assert figures["output_p50"] == pytest.approx(252, rel=0.05)


def test_prices_are_what_the_comments_say():
    """Every variant on today's catalog prices: standard Claude Opus 5.5, fast mode at its 2x catalog price
    (fast-now, also the plan-only variant's), and fast mode at its 6x launch multiple of the same table."""
    sc = agentsim.load(SCENARIOS / "coding-agent.yaml")
    plan = compile_plan(sc)
    rates = {t.label: t.rates for t in plan.tiers}
    day = sc.prices_as_of
    catalog, _ = catalog_price_fields("anthropic/claude-opus-5-5", None, day)
    fast, _ = catalog_price_fields("anthropic/claude-opus-5-5", {"speed": "fast"}, day)
    std = rates["opus"]
    assert (std.input.base, std.output.base, std.cache_read.base) == (4, 20, 0.2)  # the header's figures
    for kind, field in (("input", "input_mtok"), ("output", "output_mtok"), ("cache_read", "cache_read_mtok"),
                        ("cache_write", "cache_write_mtok")):  # fmt: skip
        assert getattr(std, kind).base == pytest.approx(float(catalog[field]))
        assert getattr(rates["opus@fast-now"], kind).base == pytest.approx(float(fast[field]))
        assert getattr(rates["opus@fast-now"], kind).base == pytest.approx(2 * getattr(std, kind).base)
        assert getattr(rates["opus@fast"], kind).base == pytest.approx(6 * getattr(std, kind).base)
    tiers = {v: {plan.tiers[c.tiers[i]].label for c in plan.calls if plan.tiers[c.tiers[i]].model == "opus"}
             for i, v in enumerate(plan.variants)}  # fmt: skip
    assert tiers == {"standard": {"opus"}, "fast": {"opus@fast"}, "fast-now": {"opus@fast-now"},
                     "fast-plan-only": {"opus", "opus@fast-now"}}  # fmt: skip


def _version(model_id: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", model_id.removeprefix("claude-opus-")))


def test_opus_is_the_catalogs_newest():
    """The scenario prices today's Opus: no Anthropic Opus in the installed catalog has a higher version (a
    catalog update that adds one fails here, and the scenario, its README paragraph and docs are redone)."""
    from agentsim.pricing.rates import search_catalog

    opus = [m.id for p, m in search_catalog("anthropic claude-opus") if p.id == "anthropic"]
    newest = max((m for m in opus if re.fullmatch(r"claude-opus-\d+(-\d+)?", m)), key=_version)
    sc = agentsim.load(SCENARIOS / "coding-agent.yaml")
    assert sc.models["opus"].price.catalog == f"anthropic/{newest}"
    assert sc.models["haiku"].price.catalog.startswith("anthropic/claude-haiku-")


def test_readme_states_what_make_demo_prints():
    """The README's headline paragraph quotes `make demo` (`agentsim run scenarios/coding-agent.yaml`: the file's
    runs and seed): the mean wall times, and per fast variant its extra cost a run, USD per hour saved and
    verdict at the file's value of time; and the catalog version, its release date and the prices' date."""
    from agentsim.pricing.catalog_release import catalog_release
    from agentsim.viz import format as fmt

    text = " ".join((SCENARIOS.parent / "README.md").read_text(encoding="utf-8").split())
    head = text[text.index("*`make demo`:") : text.index("## What it answers")]
    sc = agentsim.load(SCENARIOS / "coding-agent.yaml")
    v = agentsim.simulate(sc).summary_dict()["variants"]  # the file's 2,000 runs and seed 42, as make demo
    minutes = {n: f"{x['wall_time_s']['mean'] / 60:.1f}" for n, x in v.items()}
    assert f"from about {minutes['standard']} to {minutes['fast-now']} minutes" in head
    for name in ("fast-now", "fast", "fast-plan-only"):
        vs = v[name]["vs_baseline"]
        assert fmt.usd(vs["delta_cost_usd"]) + " more" in head, name
        assert f"{fmt.usd(vs['usd_per_hour_saved'])} per hour" in head, name
    assert v["fast-now"]["vs_baseline"]["pays_off"] and "it pays at a $100/h developer" in head
    assert not v["fast"]["vs_baseline"]["pays_off"] and "just short of paying at $100/h" in head
    assert f"saves {-v['fast-plan-only']['vs_baseline']['delta_time_s'] / 60:.2f} minutes a run" in head
    rel = catalog_release()
    assert f"prices as of {sc.prices_as_of.isoformat()} in genai-prices {rel.version}" in head
    assert f"released {rel.released.isoformat()}" in head
