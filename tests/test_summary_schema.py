"""``summary.json`` follows its published JSON Schema (schema/summary.schema.json, made from the typed model).

Every bundled scenario's summary is checked against the committed schema file (the golden copies of
tests/golden/summaries are those summaries, byte for byte), and so are summaries with the optional
sections the bundled ones lack (success, limits of replications, parameter uncertainty). The schema
forbids unknown keys, so a field added to the document but not to agentsim.sim.summary_model fails.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

import agentsim
from agentsim.sim.summary_model import Summary, as_summary
from conftest import model, scenario

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((ROOT / "schema" / "summary.schema.json").read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def _errors(doc: dict) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in VALIDATOR.iter_errors(doc)]


def test_the_published_schema_is_a_valid_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["title"] == "agentsim summary.json"


@pytest.mark.parametrize(
    "golden", sorted((ROOT / "tests" / "golden" / "summaries").glob("*.json")), ids=lambda p: p.stem
)
def test_every_bundled_scenarios_summary_follows_the_schema(golden):
    assert _errors(json.loads(golden.read_text(encoding="utf-8"))) == []


@pytest.mark.parametrize("path", sorted((ROOT / "tests" / "scenarios").glob("*.yaml")), ids=lambda p: p.stem)
def test_test_scenarios_summaries_follow_the_schema(path):
    assert _errors(agentsim.simulate(path, runs=60).summary_dict()) == []


def test_optional_sections_follow_the_schema():
    m = model(error_rate=0.2, uncertainty={"output_tps_x": {"uniform": {"low": 0.8, "high": 1.2}}})
    doc = scenario(
        [{"call": {"output": 100}}, {"fail": {"p": 0.2}}],
        models={"m": m},
        runs=40,
        limits={"acct": {"models": ["m"], "concurrency": 2}},
        value_of_time={"usd_per_hour": 50},
        uncertainty="parameters",
    )
    summary = agentsim.simulate(doc).summary_dict()
    v = summary["variants"]["baseline"]
    assert {"success", "limits", "total_cost_usd"} <= set(v) and "param_ci95" in v["wall_time_s"]
    assert _errors(summary) == []


def test_an_unknown_field_breaks_the_schema():
    doc = json.loads((ROOT / "tests" / "golden" / "summaries" / "chat-turn.json").read_text(encoding="utf-8"))
    next(iter(doc["variants"].values()))["surprise"] = 1
    assert _errors(doc)


def test_summary_model_is_the_validated_document():
    res = agentsim.simulate(scenario([{"call": {"output": 100}}], runs=20))
    typed = res.summary_model()
    assert isinstance(typed, Summary)
    assert typed == Summary.model_validate(res.summary_dict())
    assert (
        typed.variants["baseline"].wall_time_s.mean == res.summary_dict()["variants"]["baseline"]["wall_time_s"]["mean"]
    )
    assert as_summary(typed) is typed and as_summary(res.summary_dict()) == typed
