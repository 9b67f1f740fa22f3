"""`agentsim prices`, `agentsim profiles`, bad price fixtures, the bundled profiles and the fast-mode scenario."""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import pytest
from typer.testing import CliRunner

import agentsim
from agentsim.cli.main import app
from agentsim.model.profiles import bundled_profiles, load_profile
from agentsim.plan.compiler import compile_plan
from agentsim.plan.distributions import sampler
from agentsim.sim.simulation import simulate_plan
from conftest import FIXTURES, SCENARIOS

runner = CliRunner()

# fixture -> (line, dotted path, words the message must contain)
BAD_PRICES = {
    "unknown-catalog-model.yaml": (6, "models.opus.price.catalog", "closest catalog names: anthropic/claude-opus-4-8"),
    "tier-not-offered.yaml": (16, "models.opus.speeds.fast.price.context.speed", "has no price for speed=fast"),
    "tiers-out-of-order.yaml": (9, "models.big.price.input_mtok.tiers", "tier starts must be strictly increasing"),
    "negative-price.yaml": (9, "models.m.price.cache_read_mtok", "must be at least 0"),
}


@pytest.mark.parametrize("fixture", sorted(BAD_PRICES))
@pytest.mark.parametrize("command", ["validate", "run"])
def test_bad_prices_exit_2_with_file_line_path_and_message(fixture, command):
    line, path, words = BAD_PRICES[fixture]
    f = FIXTURES / "bad_prices" / fixture
    result = runner.invoke(app, [command, str(f)])
    assert result.exit_code == 2, result.output
    msg = result.stderr
    assert f"{f}:{line}: {path}: " in msg and words in msg
    assert "Traceback" not in result.output
    assert len(msg.strip().splitlines()) == 1  # one problem, one paragraph


def test_tier_not_offered_lists_what_the_model_offers():
    r = runner.invoke(app, ["validate", str(FIXTURES / "bad_prices" / "tier-not-offered.yaml")])
    assert "on 2026-11-01" in r.stderr and "it offers: processing=batch from 2026-10-14" in r.stderr


# --------------------------------------------------------------------------- agentsim prices


def test_prices_search_table_lists_models_prices_and_variants():
    r = runner.invoke(app, ["prices", "opus", "4-8", "--date", "2026-11-01"], env={"COLUMNS": "250"})
    assert r.exit_code == 0, r.output
    out = r.stdout
    assert "as of 2026-11-01" in out and "anthropic/claude-opus-4-8" in out
    assert "speed=fast" in out and "processing=batch (from 2026-10-14)" in out
    row = next(line for line in out.splitlines() if "anthropic/claude-opus-4-8 " in line)
    assert [c.strip() for c in row.split("│")[2:7]] == ["5", "25", "0.5", "6.25", "10"]


def test_prices_search_shows_long_context_tiers():
    r = runner.invoke(app, ["prices", "anthropic/claude-opus-4-6", "--date", "2026-03-01"], env={"COLUMNS": "250"})
    assert "5 | 10 >200k" in r.stdout and "25 | 37.5 >200k" in r.stdout


def test_prices_search_json_and_limit():
    r = runner.invoke(app, ["prices", "gpt-5.2", "--json", "--date", "2026-11-01", "--limit", "0"])
    doc = json.loads(r.stdout)  # only JSON on stdout
    assert doc["as_of"] == "2026-11-01" and doc["matches"] == len(doc["models"]) > 1
    gpt = next(m for m in doc["models"] if m["ref"] == "openai/gpt-5.2")
    flex = next(v for v in gpt["variants"] if v["when"] == {"service_tier": "flex"})
    assert flex["from"] == "from 2026-10-12" and flex["active"] is True
    assert flex["resolved"]["input_mtok"] == gpt["prices"]["input_mtok"] / 2
    r = runner.invoke(app, ["prices", "claude", "--limit", "3"])
    assert r.exit_code == 0 and "more match" in r.stderr


def test_prices_show_all_fields_tiers_variants_and_history():
    r = runner.invoke(app, ["prices", "show", "anthropic/claude-opus-4-8", "--json", "--date", "2026-11-01"])
    d = json.loads(r.stdout)
    assert d["ref"] == "anthropic/claude-opus-4-8" and d["as_of"] == "2026-11-01"
    assert d["prices"]["cache_write_1h_mtok"] == 10 and d["prices"]["not_simulated"]["web_searches_kcount"] == 10
    fast = next(v for v in d["variants"] if v["context"] == "speed=fast")
    assert fast["active"] and fast["resolved"]["output_mtok"] == 50 and fast["from"] is None
    r = runner.invoke(
        app, ["prices", "show", "anthropic/claude-opus-4-6", "--date", "2026-03-01"], env={"COLUMNS": "200"}
    )
    assert r.exit_code == 0
    for words in (
        "Claude Opus 4.6",
        "price history",
        "from 2026-03-13",
        "5 | 10 >200k",
        "processing=batch",
        "not yet",
        "cache write 1h",
    ):
        assert words in r.stdout, words


def test_prices_show_dated_variant_is_offered_only_from_its_start():
    before = json.loads(
        runner.invoke(app, ["prices", "show", "openai/gpt-5.2", "--json", "--date", "2026-10-11"]).stdout
    )
    after = json.loads(
        runner.invoke(app, ["prices", "show", "openai/gpt-5.2", "--json", "--date", "2026-10-12"]).stdout
    )
    flex = [next(v for v in d["variants"] if v["context"] == "service_tier=flex") for d in (before, after)]
    assert (flex[0]["active"], flex[1]["active"]) == (False, True)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["prices", "show", "anthropic/claude-opus-4-9"], "closest catalog names: anthropic/claude-opus-4-8"),
        (["prices", "show"], "takes one catalog name"),
        (["prices", "opus", "--date", "March 1"], "--date 'March 1' is not a date"),
        (["prices", "show", "antropic/claude-opus-4-8"], "did you mean 'anthropic'"),
    ],
)
def test_prices_bad_input_exits_2(args, words):
    r = runner.invoke(app, args)
    assert r.exit_code == 2 and words in r.stderr and "Traceback" not in r.output


def test_prices_no_match_is_not_an_error():
    r = runner.invoke(app, ["prices", "no-such-model-anywhere"])
    assert r.exit_code == 0 and "no catalog model matches" in r.stderr
    r = runner.invoke(app, ["prices", "no-such-model-anywhere", "--json"])
    assert json.loads(r.stdout)["models"] == []


# --------------------------------------------------------------------------- agentsim profiles


def test_profiles_table_and_json():
    r = runner.invoke(app, ["profiles"], env={"COLUMNS": "250"})
    assert r.exit_code == 0
    for name in bundled_profiles():
        assert name in r.stdout
    rows = json.loads(runner.invoke(app, ["profiles", "--json"]).stdout)
    by_name = {row["name"]: row for row in rows}
    assert set(by_name) == set(bundled_profiles())
    assert by_name["gemini-3-flash"]["output_tps_p50"] == pytest.approx(218)
    assert by_name["gpt-5.2-instant"]["ttft_p50_s"] == pytest.approx(3.0)
    assert by_name["taalas-hc1-llama-3.1-8b"]["output_tps_p50"] == pytest.approx(16_000)


EXPECTED_PROFILES = {
    # name -> (sourced median output speed, kind); from the list of public figures
    "gemini-3-flash": (218, "measured"),
    "gpt-5.1": (125, "measured"),
    "gpt-5.2-instant": (36, "measured"),
    "claude-opus-4-6": (65, "measured"),
    "claude-opus-4-8": (62, "measured"),
    "cerebras-kimi-k2.6": (981, "measured"),
    "gpt-5.3-codex-spark": (1000, "vendor-claimed"),
    "taalas-hc1-llama-3.1-8b": (16_000, "vendor-claimed"),
}


@pytest.mark.parametrize("name", sorted(EXPECTED_PROFILES))
def test_each_profile_is_sourced_and_its_numbers_match_its_figures(name):
    prof, _ = load_profile(name)
    tps, kind = EXPECTED_PROFILES[name]
    assert prof.kind == kind and prof.source and prof.date and prof.notes
    assert "ASSUMPTION" in prof.notes.upper()  # what is not sourced says so
    median = float(sampler(prof.output_tps).ppf(np.array([0.5]))[0])
    assert median == pytest.approx(tps)
    speeds = [f for f in prof.figures if "output speed" in f.quantity and f.unit == "tokens/s"]
    assert speeds, "an output-speed figure backs the profile"
    lo = min(f.value for f in speeds)
    hi = max(f.high or f.value for f in speeds)
    assert lo * (1 - 1e-9) <= median <= hi * (1 + 1e-9)  # the profile's median lies within what its sources say
    for f in prof.figures:
        assert f.source and f.unit and (f.url or f.kind == "derived")
    for tier, effect in prof.speeds.items():
        claimed = [f.value for f in prof.figures if "multiplier" in f.quantity and tier in f.quantity]
        assert claimed == [effect.output_tps_x] and effect.ttft_x == 1.0  # fast mode: TTFT unchanged


def test_opus_profile_gives_a_fast_tier_its_speed_effect():
    doc = {
        "name": "p",
        "runs": 1,
        "models": {
            "opus": {
                "profile": "claude-opus-4-8",
                "price": {"input_mtok": 5, "output_mtok": 25},
                "speeds": {"fast": {"price_x": 2}},
            }
        },
        "agent": {"steps": [{"call": {"output": 100}}]},
        "variants": {"std": {}, "fast": {"speed": {"opus": "fast"}}},
    }
    plan = compile_plan(agentsim.plan.validation.parse(doc))
    fast = next(t for t in plan.tiers if t.speed == "fast")
    assert (fast.tps_x, fast.ttft_x) == (2.5, 1.0)


# --------------------------------------------------------------------------- the fast-mode history scenario


def test_fast_mode_history_runs_the_seed_era_coding_agent_unchanged():
    # the seed-era coding agent (as coding-agent.yaml was before it was shaped like measured use), which
    # team-of-agents.yaml runs too
    history = agentsim.load(SCENARIOS / "fast-mode-pricing-history.yaml")
    base = agentsim.load(SCENARIOS / "team-of-agents.yaml")
    assert history.agent == base.agent
    for name in ("opus", "opus-4-6"):
        m, b = history.models[name], base.models["opus"]
        assert (m.ttft, m.output_tps, m.prefill_tps) == (b.ttft, b.output_tps, b.prefill_tps)
        assert m.speeds["fast"].output_tps_x == b.speeds["fast"].output_tps_x == 2.5
    # the same Haiku (the team's has its own retry policy for the shared limits)
    assert history.models["haiku"] == base.models["haiku"].model_copy(update={"retry": None})


def test_fast_mode_history_prices_are_what_the_comments_say():
    sc = agentsim.load(SCENARIOS / "fast-mode-pricing-history.yaml")
    plan = compile_plan(sc)
    rates = {t.label: t.rates for t in plan.tiers}
    # Launch fast mode is 6x the launch-era standard table, every kind and tier; Opus 4.8 fast is 2x in the catalog.
    for a, b, x in (("opus-4-6@fast", "opus-4-6", 6.0), ("opus@fast", "opus", 2.0)):
        for kind in ("input", "cache_read", "cache_write", "cache_write_1h", "output"):
            fast, std = getattr(rates[a], kind), getattr(rates[b], kind)
            assert fast.base == pytest.approx(x * std.base) and fast.starts == std.starts
            assert fast.prices == pytest.approx(tuple(x * p for p in std.prices))
    assert rates["opus-4-6@fast"].input.at(200_001) == 60 and rates["opus-4-6@fast"].output.at(200_001) == 225
    assert rates["opus"].source == "catalog:anthropic/claude-opus-4-8#2026-11-29"

    res = simulate_plan(plan, 30, 42, engine="fastpath")
    calls = res.calls.set_index(["run", "node", "instance"])
    v = {name: calls[calls.variant == name] for name in res.variants}
    # Same tokens and timeline across variants (common random numbers): each opus call of the launch fast
    # variant costs exactly 6x the launch standard one, and the haiku reviews cost the same everywhere.
    opus46 = v["opus-4.6-fast-launch"][v["opus-4.6-fast-launch"].model == "opus-4-6"]
    std46 = v["opus-4.6-standard-launch"].loc[opus46.index]
    assert (opus46["input_tokens"] == std46["input_tokens"]).all()
    assert np.allclose(opus46["cost_usd"], 6 * std46["cost_usd"], rtol=1e-12)
    fast48 = v["opus-4.8-fast-now"]
    assert np.allclose(
        fast48[fast48.model == "opus"]["cost_usd"],
        2 * v["opus-4.8-standard"].loc[fast48[fast48.model == "opus"].index]["cost_usd"],
        rtol=1e-12,
    )
    walls = res.runs.groupby("variant")["wall_time_s"].mean()
    assert walls["opus-4.6-fast-launch"] == walls["opus-4.8-fast-now"] < walls["opus-4.8-standard"]


# --------------------------------------------------------------------------- suggestions and end dates (issue 26)


def test_suggestions_put_prefix_and_substring_matches_first():
    from agentsim.pricing.rates import closest_names

    names = [
        "google/gemini-3.8-flash",
        "google/gemini-3.7-flash",
        "google/gemini-3-flash-preview",
        "x/gemini-3-flash-lite",
    ]
    # a prefix match first, then one that contains the name, then the closest by spelling
    assert closest_names("google/gemini-3-flash", names) == [
        "google/gemini-3-flash-preview", "google/gemini-3.8-flash", "google/gemini-3.7-flash"]  # fmt: skip
    assert closest_names("gemini-3-flash", names)[:2] == ["x/gemini-3-flash-lite", "google/gemini-3-flash-preview"]
    assert closest_names("zzz", names) == []


def test_a_catalog_name_without_its_suffix_suggests_the_listed_one(tmp_path):
    bad = tmp_path / "g.yaml"
    bad.write_text(
        "name: g\nmodels: {m: {price: {catalog: google/gemini-3-flash}, ttft: 1, output_tps: 50}}\n"
        "agent: {steps: [{call: {model: m, output: 10}}]}\n",
        encoding="utf-8",
    )
    r = CliRunner().invoke(app, ["validate", str(bad)])
    assert r.exit_code == 2
    assert "google/gemini-3-flash-preview" in r.stderr.split("closest catalog names:", 1)[1].split(";", 1)[0]


def test_ended_per_notes_reads_only_what_the_prose_says():
    from agentsim.pricing.provenance import ended_per_notes

    notes = ("Fast mode is $10 / $50. Anthropic removes fast mode from Opus 4.8 on 2026-11-30. "
             "Batch prices started on 2026-10-14.")  # fmt: skip
    assert ended_per_notes(notes, {"speed": "fast"}) == (
        dt.date(2026, 11, 30), "Anthropic removes fast mode from Opus 4.8 on 2026-11-30.")  # fmt: skip
    assert ended_per_notes(notes, {"processing": "batch"}) is None  # a start, not an end
    assert ended_per_notes("Fast mode is offered until further notice.", {"speed": "fast"}) is None  # no date
    assert ended_per_notes(notes, {"speed": "priority"}) is None
    assert ended_per_notes(None, {"speed": "fast"}) is None


@pytest.mark.parametrize(
    ("date", "status"),
    [
        ("2026-11-29", "offered; ends on 2026-11-30, per the catalog's notes (prose only)"),
        (
            "2026-12-01",
            "not offered since 2026-11-30, per the catalog's notes (prose only: its price data still lists it)",
        ),
    ],
)
def test_prices_show_does_not_call_an_ended_variant_offered(date, status):
    r = CliRunner().invoke(app, ["prices", "show", "anthropic/claude-opus-4-8", "--date", date, "--json"])
    assert r.exit_code == 0, r.output
    fast = next(v for v in json.loads(r.stdout)["variants"] if v["when"] == {"speed": "fast"})
    assert fast["status"] == status
    assert fast["ends_per_notes"]["date"] == "2026-11-30"
    r = CliRunner().invoke(app, ["prices", "show", "anthropic/claude-opus-4-8", "--date", date], env={"COLUMNS": "200"})
    flat = " ".join(r.stdout.split())
    assert status in flat
