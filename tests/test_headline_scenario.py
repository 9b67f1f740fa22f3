"""The README's and `make demo`'s scenario (scenarios/coding-agent.yaml) is shaped like measured real use.

TraceLab (arXiv 2606.30560; 4,265 Claude Code and Codex sessions, 357k steps) measured: 59.8% of an agent's
response time in tools, a median of 5.7 s of generation per step, tool calls with a median of 0.3 s and a
p90 of 13.6 s, ~1.2 tool calls per step and a median of 252 output tokens per step. The scenario's figures,
computed from simulate() output (the calls and spans tables), must lie within 15% of the study's
(docs/validation.md lists them side by side). 500 runs: the Monte-Carlo error of each figure is a few
percent (the tool share's standard error is ~2%, the medians' well under 1%), far inside the band.

The file also claims that its standard Opus table is both Opus 4.6's launch price and the catalog's Claude
Opus 5 price as of 2026-12-01, and that today's fast mode is 2x that table while the launch one was 6x.
"""

from __future__ import annotations

import datetime as dt

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
    plan = compile_plan(agentsim.load(SCENARIOS / "coding-agent.yaml"))
    rates = {t.label: t.rates for t in plan.tiers}
    catalog, _ = catalog_price_fields("anthropic/claude-opus-5", None, dt.date(2026, 12, 1))
    std = rates["opus"]
    for kind, field in (("input", "input_mtok"), ("output", "output_mtok"), ("cache_read", "cache_read_mtok"),
                        ("cache_write", "cache_write_mtok")):  # fmt: skip
        assert getattr(std, kind).base == pytest.approx(float(catalog[field]))
        assert getattr(rates["opus@fast"], kind).base == pytest.approx(6 * getattr(std, kind).base)
        assert getattr(rates["opus@fast-now"], kind).base == pytest.approx(2 * getattr(std, kind).base)
