"""The generated docs (JSON Schema, scenario reference, CLI reference) match the code, and the schema is right.

The schema is checked with an independent validator (``jsonschema``, as editors use it): it must accept every
bundled scenario and every example of the reference, and reject the mistakes the loader rejects.
"""

from __future__ import annotations

import datetime as dt
import json

import jsonschema
import pytest
import yaml
from pydantic import TypeAdapter

from agentsim import docs_gen
from agentsim.model import scenario
from agentsim.plan.validation import parse
from conftest import ROOT, SCENARIOS

GENERATED = list(docs_gen.generated())
ALL_SCENARIOS = sorted(SCENARIOS.glob("*.yaml")) + sorted((SCENARIOS / "claims").glob("*.yaml"))  # not profiles/


@pytest.fixture(scope="module")
def generated():
    return docs_gen.generated()


@pytest.fixture(scope="module")
def validator():
    schema = docs_gen.scenario_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("rel", GENERATED)
def test_committed_file_is_up_to_date(rel, generated):
    path = ROOT / rel
    assert path.exists(), f"{rel} is missing: run `{docs_gen.REGENERATE}` from the repository root and commit it"
    assert path.read_text(encoding="utf-8") == generated[rel], (
        f"{rel} is out of date with the code: run `{docs_gen.REGENERATE}` from the repository root and commit it"
    )


def _as_editor_sees_it(data):
    """YAML as a YAML 1.2 editor reads it: dates are strings."""
    if isinstance(data, dict):
        return {k: _as_editor_sees_it(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_as_editor_sees_it(v) for v in data]
    return data.isoformat() if isinstance(data, dt.date) else data


@pytest.mark.parametrize("path", ALL_SCENARIOS, ids=lambda p: str(p.relative_to(SCENARIOS)))
def test_schema_accepts_every_bundled_scenario(path, validator):
    data = _as_editor_sees_it(yaml.safe_load(path.read_text()))
    errors = [f"{list(e.absolute_path)}: {e.message[:200]}" for e in validator.iter_errors(data)]
    assert not errors, errors


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda d: d["models"]["m"].update(ouput_tps=5), "unknown key"),
        (lambda d: d["models"]["m"].pop("ttft"), "ttft without a profile"),
        (lambda d: d["models"]["m"].update(output_tps={"lognorm": {"median": 1, "p90": 2}}), "unknown family"),
        (lambda d: d["models"]["m"].update(prefill_tps=0), "prefill_tps must be > 0"),
        (lambda d: d["agent"]["steps"].append({"cal": {"output": 1}}), "unknown step type"),
        (lambda d: d.update(runs=0), "runs >= 1"),
        (lambda d: d["models"]["m"].update(error_rate=1.5), "a probability above 1"),
    ],
)
def test_schema_rejects_what_the_loader_rejects(change, where, validator):
    good = {
        "name": "t",
        "models": {
            "m": {
                "price": {"input_mtok": 1, "output_mtok": 2},
                "ttft": 1,
                "output_tps": {"normal": {"mean": 60, "sd": 10, "min": 10}},
            }
        },
        "agent": {"steps": [{"call": {"output": 10}}]},
    }
    assert not list(validator.iter_errors(good))
    parse(json.loads(json.dumps(good)))
    bad = json.loads(json.dumps(good))
    change(bad)
    assert list(validator.iter_errors(bad)), where
    with pytest.raises(Exception):  # noqa: B017
        parse(bad)


def test_profile_makes_ttft_optional(validator):
    doc = {
        "name": "t",
        "models": {"m": {"price": {"input_mtok": 1, "output_mtok": 2}, "profile": "gpt-5.1"}},
        "agent": {"steps": [{"call": {"output": 10}}]},
    }
    assert not list(validator.iter_errors(doc))
    parse(doc)


def test_every_definition_is_documented():
    defs = set(docs_gen.scenario_schema()["$defs"])
    documented = {s[0] for s in docs_gen.SECTIONS} | {s[0] for s in docs_gen.DIST_SECTIONS} | docs_gen.FOLDED
    assert defs - documented == set(), "add a section for these definitions to agentsim.docs_gen.SECTIONS"
    assert documented - defs - {"Scenario"} == set(), "SECTIONS names definitions the schema no longer has"


def test_every_number_has_a_unit():
    schema = docs_gen.scenario_schema()
    defs = {**schema["$defs"], "Scenario": schema}
    missing = [
        f"{d}.{k}"
        for d, node in defs.items()
        for k, prop in node.get("properties", {}).items()
        if docs_gen.is_numeric(prop) and docs_gen.unit_of(d, k) is None
    ]
    assert not missing, f"give these keys a unit in agentsim.docs_gen.UNITS: {missing}"


def test_every_key_has_a_description():
    schema = docs_gen.scenario_schema()
    defs = {**schema["$defs"], "Scenario": schema}
    missing = [
        f"{d}.{k}"
        for d, node in defs.items()
        if d not in docs_gen.FOLDED
        for k, prop in node.get("properties", {}).items()
        if not prop.get("description")
    ]
    assert not missing, f"add Field(description=...) in agentsim/model/scenario.py for: {missing}"


@pytest.mark.parametrize("section", docs_gen.SECTIONS, ids=lambda s: s[0])
def test_reference_examples_are_valid(section, validator):
    definition, _heading, example, path = section
    data = yaml.safe_load(example)
    if definition == "Scenario":
        parse(data)
        assert not list(validator.iter_errors(data))
        return
    for key in path:
        data = data[key]
    TypeAdapter(docs_gen.model_of(definition)).validate_python(data)
    sub = jsonschema.Draft202012Validator(
        {"$defs": docs_gen.scenario_schema()["$defs"], "$ref": f"#/$defs/{definition}"}
    )
    assert not list(sub.iter_errors(data))


def test_reference_lists_every_top_level_key(generated):
    page = generated[docs_gen.SCENARIO_REF_PATH]
    for key in scenario.Scenario.model_fields:
        assert f"| `{key}` |" in page


def test_cli_reference_lists_every_command(generated):
    import typer
    from typer.main import get_command

    from agentsim.cli.main import app

    command = get_command(app)
    page = generated[docs_gen.CLI_REF_PATH]
    names = command.list_commands(typer.Context(command))
    assert "run" in names and "validate" in names
    for name in names:
        assert f"## `agentsim {name}`" in page


def _code_words(page: str) -> set[str]:
    import re

    spans = re.findall(r"`([^`]+)`", page)
    return set(re.split(r"[^A-Za-z0-9_]+", " ".join(spans)))


def _keys(doc, skip=("variants", "tiers", "accounts")) -> set[str]:
    out = set()
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.add(k)
            if k in skip and isinstance(v, dict):  # names chosen by the user: look inside one of them
                v = next(iter(v.values()), {})
            out |= _keys(v, skip)
    return out


def test_metrics_glossary_defines_every_output_field():
    """Every column of the runs/calls/spans tables and every key of summary.json is named in docs/metrics.md."""
    from conftest import make, run

    doc = {
        "name": "glossary",
        "seed": 1,
        "models": {"m": {"price": {"input_mtok": 1, "output_mtok": 2}, "ttft": 1, "output_tps": 50}},
        "limits": {"acct": {"models": ["m"], "concurrency": 2, "rpm": 30, "input_tpm": 5000, "output_tpm": 5000}},
        "workload": {"arrivals": {"per_hour": 120}, "duration": {"minutes": 5}, "warmup": {"minutes": 1}},
        "agent": {"steps": [{"call": {"input": 100, "output": 20}}, {"tool": {"latency": 1, "output": 10}}]},
    }
    make(doc)
    res = run(doc)
    page = (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")
    words = _code_words(page)
    fields = set(res.runs.columns) | set(res.calls.columns) | set(res.spans.columns) | _keys(res.summary_dict())
    plain = run({**{k: v for k, v in doc.items() if k not in ("limits", "workload")}, "runs": 3})
    fields |= _keys(plain.summary_dict())
    missing = sorted(f for f in fields if f not in words)
    assert not missing, f"define these output fields in docs/metrics.md: {missing}"
