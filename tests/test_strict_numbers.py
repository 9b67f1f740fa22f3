"""No lax numbers in any file agentsim reads (issue 38, closing the second round's cases as classes).

* Every numeric field of every model a file is read into (scenarios, step and consumer kinds, profiles, replay
  configs, limit presets) is strict: pydantic's lax mode would read the text ``'200'`` or the boolean ``true`` as
  a number. Checked on the models' own validation schemas, so a field added later without a strict type fails
  here, and on the two fields the issue found (``render: {tokens: '200'}``, ``pipeline: {after: {tokens: true}}``).
* No NaN or infinity in any file read through the one loader (YAML, JSON, TOML): a profile's measured ranges of
  ``.nan``/``.inf`` are refused with the file, the line and the key, as any other number is.
"""

from __future__ import annotations

import importlib
import math
import pkgutil
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel
from typer.testing import CliRunner

import agentsim
from agentsim.cli.main import app
from agentsim.model.loading import ScenarioError, load_data
from agentsim.model.profiles import profile_problems
from agentsim.plan.validation import parse

runner = CliRunner()
# Models of what agentsim writes, never read from a user's file: summary.json's typed model
OUTPUT_MODULES = ("agentsim.sim.summary_model",)
# schema nodes that hold values of their own: below them, a validator around the node no longer guards a number
CONTAINERS = {"model", "model-fields", "list", "tuple", "dict", "set", "frozenset", "typed-dict", "dataclass",
              "dataclass-args", "arguments"}  # fmt: skip
GUARDS = {"function-before", "function-wrap", "function-plain"}


def _all_models() -> list[type[BaseModel]]:
    for info in pkgutil.walk_packages(agentsim.__path__, "agentsim."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)

    def below(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from below(sub)

    return sorted(
        {c for c in below(BaseModel) if c.__module__.startswith("agentsim.") and c.__module__ not in OUTPUT_MODULES},
        key=lambda c: (c.__module__, c.__qualname__),
    )


def _lax_numbers(schema: dict, where: str = "", guarded: bool = False) -> list[str]:
    """Places in a core schema where an int or float is validated in lax mode with no validator of ours before it
    (a ``number``/``integer``/domain validator refuses text and booleans before pydantic sees them)."""
    kind = schema.get("type")
    out = []
    if kind in ("int", "float") and not schema.get("strict") and not guarded:
        out.append(where or kind)
    guarded = (guarded or kind in GUARDS) and kind not in CONTAINERS
    for key, value in schema.items():
        if key in ("serialization", "metadata", "ref", "cls"):
            continue
        if isinstance(value, dict):
            out += _lax_numbers(value, f"{where}.{key}", guarded)
        elif isinstance(value, list | tuple):
            for i, v in enumerate(value):
                if isinstance(v, dict):
                    out += _lax_numbers(v, f"{where}.{key}[{i}]", guarded)
                elif isinstance(v, tuple):
                    out += [
                        p for x in v if isinstance(x, dict) for p in _lax_numbers(x, f"{where}.{key}[{i}]", guarded)
                    ]
    return out


def _own_fields(cls: type[BaseModel]) -> dict:
    cls.model_rebuild(force=True)
    stack = [cls.__pydantic_core_schema__]
    while stack:
        node = stack.pop()
        if node.get("type") == "model" and node.get("cls") is cls:
            inner = node["schema"]
            while inner.get("type") != "model-fields" and "schema" in inner:
                inner = inner["schema"]
            return inner.get("fields", {})
        stack += [v for v in node.values() if isinstance(v, dict)]
        stack += [d for v in node.values() if isinstance(v, list) for d in v if isinstance(d, dict)]
    return {}


def test_every_numeric_field_of_every_file_model_is_strict():
    models = _all_models()
    assert len(models) > 60  # the walk found the vocabulary (scenario, steps, consumers, profiles, replay...)
    lax = [
        f"{cls.__module__}.{cls.__qualname__}.{name}"
        for cls in models
        for name, field in _own_fields(cls).items()
        if _lax_numbers(field)
    ]
    assert lax == [], "numeric fields read in pydantic's lax mode (text and booleans become numbers): " + ", ".join(lax)


def test_the_checker_sees_a_lax_field():
    class Loose(BaseModel):
        n: int
        m: list[float] | None = None

    assert sorted(_own_fields(Loose)) == ["m", "n"]
    assert _lax_numbers(_own_fields(Loose)["n"]) and _lax_numbers(_own_fields(Loose)["m"])


HEAD = """name: t
runs: 5
models:
  m: {price: {input_mtok: 1, output_mtok: 2}, ttft: 0.5, output_tps: 50}
agent:
  steps:
    - call: {name: a, model: m, output: 100, consumer: {render: {tokens: 200}}}
"""


@pytest.mark.parametrize(
    "text,place,what",
    [
        (HEAD.replace("tokens: 200", "tokens: '200'"), "render.tokens", "in quotes"),
        (HEAD.replace("tokens: 200", "tokens: true"), "render.tokens", "got true"),
        (HEAD.replace("tokens: 200", "tokens: 2.5"), "render.tokens", "whole number"),
        (HEAD + "    - pipeline: {after: {tokens: true}, steps: [{wait: {latency: 1}}]}\n", "after.tokens", "got true"),
        (HEAD + "    - pipeline: {after: {tokens: '50'}, steps: [{wait: {latency: 1}}]}\n", "after.tokens", "quotes"),
        (
            HEAD + "workload:\n  arrivals: {per_hour: 10}\n  duration: {hours: 1}\n"
            "  volume: {runs_per_day: 5, working_days: '21'}\n",
            "working_days",
            "quotes",
        ),
        (HEAD + "slo: {wall_time_s: .inf}\n", "slo.wall_time_s", "an infinity"),
        (HEAD.replace("ttft: 0.5", "ttft: .nan"), "models.m.ttft", "NaN"),
    ],
    ids=["render-text", "render-bool", "render-fraction", "after-bool", "after-text", "days-text", "inf", "nan"],
)
def test_text_booleans_and_non_finite_numbers_are_refused(tmp_path: Path, text, place, what):
    f = tmp_path / "s.yaml"
    f.write_text(text)
    r = runner.invoke(app, ["validate", str(f)])
    assert r.exit_code == 2, r.output
    assert place in r.output and what in r.output and "Traceback" not in r.output


def test_render_all_and_whole_numbers_still_read():
    for tokens in ("all", "200", "200.0"):
        doc = yaml.safe_load(HEAD.replace("tokens: 200", f"tokens: {tokens}"))
        sc = parse(doc)
        got = sc.agent.steps[0].call.consumer.render.tokens
        assert got == ("all" if tokens == "all" else 200) and type(got) is (str if tokens == "all" else int)


PROFILE = """profile: p
kind: measured
source: a test
date: 2026-01-01
ttft: 0.5
output_tps: 50
measured: {input_tokens: [100, 2000], output_tokens: [50, 400], concurrency: 2}
figures:
  - {quantity: output speed, value: 50, unit: tokens/s, kind: measured, source: a test}
"""


@pytest.mark.parametrize(
    "old,new,place",
    [
        ("[100, 2000]", "[.nan, .inf]", "measured.input_tokens[0]"),
        ("[50, 400]", "[50, .inf]", "measured.output_tokens[1]"),
        ("[100, 2000]", "['100', 2000]", "measured.input_tokens"),
        ("concurrency: 2", "concurrency: true", "measured.concurrency"),
        ("value: 50", "value: .nan", "figures[0].value"),
        ("value: 50", "value: '50'", "figures[0].value"),
    ],
)
def test_a_profile_refuses_non_finite_text_and_boolean_numbers(tmp_path: Path, old, new, place):
    prof = tmp_path / "p.yaml"
    prof.write_text(PROFILE.replace(old, new))
    f = tmp_path / "s.yaml"
    f.write_text(HEAD.replace("m: {price:", "m: {profile: p.yaml, price:").replace("ttft: 0.5, output_tps: 50", ""))
    r = runner.invoke(app, ["validate", str(f)])
    assert r.exit_code == 2, r.output
    assert f"p.yaml:{7 if 'measured' in place else 9}: {place}" in r.output and "inf" not in r.output.split(place)[0]


def test_the_valid_profile_reads(tmp_path: Path):
    prof = tmp_path / "p.yaml"
    prof.write_text(PROFILE)
    data, _ = load_data(prof, kind="profile")
    assert profile_problems(data) == []
    assert data["measured"]["input_tokens"] == [100, 2000]


def test_toml_and_json_refuse_non_finite_numbers(tmp_path: Path):
    t = tmp_path / "s.toml"
    t.write_text('name = "t"\nruns = 5\n[models.m]\nttft = inf\n')
    with pytest.raises(ScenarioError, match="an infinity") as err:
        load_data(t)
    assert err.value.items[0].path == ("models", "m", "ttft")
    j = tmp_path / "s.json"
    j.write_text('{"name": "t", "runs": 5, "x": {"y": [1, .NaN]}}')
    with pytest.raises(ScenarioError, match="NaN") as err:
        load_data(j)
    assert err.value.items[0].path == ("x", "y", 1) and err.value.items[0].line == 1
    ok = tmp_path / "ok.json"
    ok.write_text('{"a": 1.5e+308}')
    assert math.isfinite(load_data(ok)[0]["a"])
