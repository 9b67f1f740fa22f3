"""A scenario that ``extends:`` another can drop an inherited variant (``variants: {NAME: null}``): the rest keep
their order and their results, the first left is the baseline; a name the base lacks, dropping every variant,
or a null variant in a file that extends nothing is refused with file:line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import agentsim
from agentsim.cli.main import app
from agentsim.model.loading import ScenarioError
from conftest import SCENARIOS

runner = CliRunner()
BASE = SCENARIOS / "coding-agent.yaml"


def _child(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "child.yaml"
    path.write_text(f"extends: {BASE}\n{text}", encoding="utf-8")
    return path


def test_a_dropped_variant_is_gone_and_the_rest_unchanged(tmp_path):
    path = _child(tmp_path, "name: today-only\nvariants:\n  fast: null\n  fast-plan-only: null\n  plan-too: {}\n")
    sc = agentsim.load(path)
    assert list(sc.variant_specs()) == ["standard", "fast-now", "plan-too"]
    got = agentsim.simulate(sc, runs=40, seed=3).summary_dict()["variants"]
    want = agentsim.simulate(BASE, runs=40, seed=3).summary_dict()["variants"]
    for name in ("standard", "fast-now"):  # common random numbers: the same runs, whatever else is compared
        assert got[name]["wall_time_s"] == want[name]["wall_time_s"]
        assert got[name]["cost_usd"] == want[name]["cost_usd"]
    assert got["fast-now"]["vs_baseline"] == want["fast-now"]["vs_baseline"]


def test_dropping_the_baseline_makes_the_next_one_the_baseline(tmp_path):
    sc = agentsim.load(_child(tmp_path, "variants: {standard: null}\n"))
    assert list(sc.variant_specs()) == ["fast", "fast-now", "fast-plan-only"]
    doc = agentsim.simulate(sc, runs=20).summary_dict()
    assert doc["variants"]["fast"]["vs_baseline"]["delta_cost_usd"] == 0


@pytest.mark.parametrize(
    ("text", "line", "message", "hint"),
    [
        ("variants:\n  fast-plan-onyl: null\n", 3, "has no variant 'fast-plan-onyl'", "did you mean 'fast-plan-only'"),
        ("variants: {standard: null, fast: null, fast-now: null, fast-plan-only: null}\n", 2,
         "drops every variant of", "keep one of them, or add a variant"),
    ],
)  # fmt: skip
def test_bad_drops_are_refused_at_their_line(tmp_path, text, line, message, hint):
    path = _child(tmp_path, text)
    with pytest.raises(ScenarioError) as err:
        agentsim.load(path)
    (item,) = err.value.items
    assert (item.file, item.line) == (str(path), line)
    assert message in item.message and hint in item.hint
    r = runner.invoke(app, ["validate", str(path)])
    assert r.exit_code == 2 and "Traceback" not in r.output


def test_a_null_variant_without_extends_is_refused(tmp_path):
    path = tmp_path / "solo.yaml"
    text = BASE.read_text(encoding="utf-8").replace(
        "  fast-plan-only: {speed", "  gone: null\n  fast-plan-only: {speed"
    )
    path.write_text(text, encoding="utf-8")
    r = runner.invoke(app, ["run", str(path), "--runs", "5", "--json"])
    assert r.exit_code == 2
    assert "variants.gone: variant 'gone' is null: null drops a variant inherited through extends:" in r.output


def test_the_schema_allows_a_null_variant():
    jsonschema = pytest.importorskip("jsonschema")
    import yaml

    schema = json.loads((SCENARIOS.parent / "schema" / "scenario.schema.json").read_text(encoding="utf-8"))
    doc = yaml.safe_load(BASE.read_text(encoding="utf-8"))
    doc["prices_as_of"] = str(doc["prices_as_of"])  # a date as JSON writes it
    doc["variants"]["fast"] = None
    jsonschema.validate(doc, schema)
    doc["variants"]["fast"] = 3
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, schema)
