"""Generated documentation: the scenario and summary.json JSON Schemas, the scenario and CLI references.

Four files are written from the code itself, so they cannot drift from it:

* ``schema/scenario.schema.json``: the JSON Schema of a scenario file, for editors (the VS Code YAML
  extension completes keys and flags mistakes with it). It is pydantic's schema of
  :class:`agentsim.model.scenario.Scenario`, made readable and made to accept exactly what the loader accepts:
  distributions and steps become named definitions, pydantic's ``gt``/``ge`` become JSON Schema's
  ``exclusiveMinimum``/``minimum``, ``min``/``max`` may sit inside a distribution's family mapping,
  ``ttft`` and ``output_tps`` are only required when no ``profile`` gives them, and ``extends`` is allowed.
* ``schema/summary.schema.json``: the JSON Schema of ``summary.json``, pydantic's schema of
  :class:`agentsim.sim.summary_model.Summary` (the tests validate every bundled scenario's summary against it).
* ``docs/scenarios.md``: every key of a scenario file with its type, unit, default and
  description, and an example per section (the examples are validated by the tests).
* ``docs/cli.md``: every command and option, from the typer app (typer's own Markdown rendering,
  the one behind ``typer agentsim.cli.main utils docs``).

Regenerate all four with ``python -m agentsim.docs_gen`` (``--check`` only reports stale files);
``tests/test_docs_gen.py`` fails when a committed file differs from what the code generates.
"""

from __future__ import annotations

import copy
import functools
import json
import sys
from pathlib import Path
from typing import Any

__all__ = [
    "CLI_REF_PATH",
    "SCENARIO_REF_PATH",
    "SCHEMA_PATH",
    "SUMMARY_SCHEMA_PATH",
    "cli_reference",
    "definitions",
    "folded",
    "generated",
    "model_of",
    "scenario_reference",
    "scenario_schema",
    "sections",
    "stale",
    "unit_of",
    "write_generated",
]

SCHEMA_PATH = "schema/scenario.schema.json"
SUMMARY_SCHEMA_PATH = "schema/summary.schema.json"
SCENARIO_REF_PATH = "docs/scenarios.md"
CLI_REF_PATH = "docs/cli.md"
REGENERATE = "python -m agentsim.docs_gen"

DIST = "Distribution"
STEP = "Step"
PARAM_DEFS = {
    "uniform": "UniformParams",
    "normal": "NormalParams",
    "lognormal": "LognormalParams",
    "gamma": "GammaParams",
    "exponential": "ExponentialParams",
    "choice": "ChoiceParams",
    "empirical": "EmpiricalParams",
}
_KEYWORDS = {"gt": "exclusiveMinimum", "ge": "minimum", "lt": "exclusiveMaximum", "le": "maximum"}

# --------------------------------------------------------------------------- the JSON Schema


def _ref(name: str) -> dict:
    return {"$ref": f"#/$defs/{name}"}


def _walk(node: Any, fn) -> Any:
    """Apply ``fn`` to every schema node (dict), depth first, rebuilding the tree."""
    if isinstance(node, list):
        return [_walk(x, fn) for x in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key in ("properties", "$defs"):
            out[key] = {k: _walk(v, fn) for k, v in value.items()}
        elif key in ("default", "examples", "const", "enum", "required"):
            out[key] = value
        else:
            out[key] = _walk(value, fn)
    return fn(out)


def scenario_schema() -> dict:
    """The JSON Schema of a scenario file (see the module docstring for what is changed from pydantic's)."""
    from agentsim.model.registry import step_kinds
    from agentsim.model.scenario import DIST_FAMILIES, Scenario

    raw = Scenario.model_json_schema()
    defs = raw["$defs"]
    dist_options = [{"type": "number"}] + [_ref(f.capitalize() + "Dist") for f in DIST_FAMILIES]
    step_options = [_ref(_vocabulary_name(kind.step)) for kind in step_kinds().values()]

    def tidy(node: dict) -> dict:
        for old, new in _KEYWORDS.items():  # constraints pydantic could not translate (after a BeforeValidator)
            if old in node and "type" in node:
                node[new] = node.pop(old)
        if node.pop("x-distribution", False):  # a distribution named by a model's json_schema_extra
            node.update(_ref(DIST))
        if node.get("oneOf") == dist_options:
            node.pop("oneOf")
            node.update(_ref(DIST))
        elif node.get("oneOf") == step_options:
            node.pop("oneOf")
            node.update(_ref(STEP))
        if "title" in node and "properties" not in node:
            node.pop("title")  # pydantic's per-field titles ("Output Tps") only repeat the key
        return node

    schema = _walk(raw, tidy)
    defs = schema["$defs"]
    defs[DIST] = {
        "description": "A number (a constant) or a mapping with one distribution family key, "
        "e.g. {lognormal: {median: 2, p90: 4.5}}; optional min/max clip the draws.",
        "oneOf": dist_options,
    }
    defs[STEP] = {"description": "One step: a mapping with exactly one step-type key.", "oneOf": step_options}
    # min/max may be written inside the family mapping too ({normal: {mean: 60, sd: 10, min: 10}}).
    for family, name in PARAM_DEFS.items():
        props = defs[name]["properties"]
        for bound in ("min", "max"):
            clip = copy.deepcopy(defs["NormalDist"]["properties"][bound])
            clip["description"] = clip["description"].rstrip(".") + f" (may also be written beside '{family}')."
            props[bound] = clip
    # A profile fills ttft and output_tps: they are only required without one.
    model = defs["ModelSpec"]
    model["required"] = [k for k in model["required"] if k not in ("ttft", "output_tps")]
    model["if"] = {"not": {"required": ["profile"]}}
    model["then"] = {"required": ["ttft", "output_tps"]}
    for key in ("ttft", "output_tps"):
        model["properties"][key]["description"] += " Required unless a profile gives it."
    top = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "agentsim scenario",
        "description": "An agentsim scenario file: models, the agent's steps, variants to compare, and optional "
        "shared limits and workload. Units: seconds, tokens, tokens per second, USD per million tokens.",
    }
    props = _null_drops_a_variant({"extends": {"type": "string", "description": EXTENDS}, **schema["properties"]})
    rest = {k: v for k, v in schema.items() if k not in ("$defs", "properties", "title")}
    return {**top, **rest, "properties": props, "$defs": dict(sorted(defs.items()))}


EXTENDS = "Another scenario file (relative to this one) to start from; mappings merge key by key."


def _null_drops_a_variant(props: dict) -> dict:
    """In a file that extends another, a variant may be null: it drops the variant the base defines."""
    props["extends"]["description"] = props["extends"]["description"][:-1] + (
        " (variants: {NAME: null} drops a variant it defines)."
    )
    variants = props["variants"]
    mapping = next(s for s in variants["anyOf"] if s.get("type") == "object")
    mapping["additionalProperties"] = {"anyOf": [mapping["additionalProperties"], {"type": "null"}]}
    variants["description"] += " In a file that extends another, NAME: null drops an inherited variant."
    return props


def schema_text() -> str:
    return json.dumps(scenario_schema(), indent=2, ensure_ascii=False) + "\n"


def summary_schema_text() -> str:
    from agentsim.sim.summary_model import summary_schema

    return json.dumps(summary_schema(), indent=2, ensure_ascii=False) + "\n"


# --------------------------------------------------------------------------- units

UNITS: dict[str, str] = {
    "Scenario.seed": "—",
    "Scenario.runs": "runs",
    "PriceSpec.requests_kcount": "USD / 1000 requests",
    "Tier.start": "tokens (total input)",
    "Tier.price": "USD / Mtok",
    "TieredPrice.base": "USD / Mtok",
    "ValueOfTime.usd_per_hour": "USD / hour",
    "Volume.runs_per_month": "runs / month",
    "Volume.runs_per_day": "runs / day",
    "Volume.seats": "seats",
    "Volume.runs_per_seat_per_day": "runs / seat / day",
    "Volume.working_days": "days / month",
    "Arrivals.per_hour": "runs / hour",
    "Workload.concurrent": "agents",
    "Workload.think_time": "s",
    "LimitSpec.concurrency": "requests",
    "LimitSpec.rpm": "requests / min",
    "RetrySpec.max_attempts": "attempts",
    "FallbackSpec.after": "failed attempts",
    "KJoin.k": "branches",
    "Duration.seconds": "s",
    "Duration.minutes": "min",
    "Duration.hours": "h",
    "Duration.days": "days",
    "ContextSpec.system": "tokens",
    "CompactSpec.above": "tokens",
    "CompactSpec.to": "tokens",
    "ByModel.default": "probability",
    "ByModelCount.default": "iterations",
    "SweepRange.start": "the swept value's",
    "SweepRange.stop": "the swept value's",
    "SweepRange.step": "the swept value's",
    "StreamSpec.chunk_tokens": "tokens",
    "StreamSpec.jitter_cv": "× (sd / mean of a gap)",
    "StallSpec.seconds": "s",
    "StallSpec.per_chunk": "probability per chunk",
    "StallSpec.per_token": "probability per token",
    "StallSpec.at_chunks": "chunk numbers",
    "QoeSpec.expected_ttft": "s",
    "QoeSpec.tokens_per_s": "tokens/s",
}
_BY_NAME = {
    "ttft": "s",
    "latency": "s",
    "timeout": "s",
    "backoff_base": "s",
    "backoff_cap": "s",
    "input": "tokens",
    "output": "tokens",
    "reasoning": "tokens",
    "error_rate": "probability",
    "continue_p": "probability",
    "p": "probability",
}


def unit_of(definition: str, key: str) -> str | None:
    """The unit of a numeric key (``None`` when unknown: the reference test then fails): the vocabulary's
    (:data:`UNITS`), its kind's (``StepKind.units``, keyed by its own classes), the unit of the quantity kind
    its annotation names (``Of("duration")``: s), then by the key's name."""
    try:
        model = model_of(definition)
    except KeyError:
        model = None
    kind = _owner(definition)
    name = model.__name__ if model is not None else definition
    if kind is None and f"{name}.{key}" in UNITS:  # the vocabulary's (by its class's name)
        return UNITS[f"{name}.{key}"]
    if kind is not None and model is not None:
        if f"{model.__name__}.{key}" in kind.units:
            return kind.units[f"{model.__name__}.{key}"]
        unit = _quantity_unit(model, key)
        if unit:
            return unit
    if definition.endswith("Params") or definition.endswith("Dist"):
        return "the quantity's"  # distribution parameters carry the unit of what they describe
    if key in _BY_NAME:
        return _BY_NAME[key]
    for suffix, unit in (("_mtok", "USD / Mtok"), ("_tps", "tokens/s"), ("_tpm", "tokens / min"), ("_x", "×")):
        if key.endswith(suffix):
            return unit
    return None


def _quantity_unit(model: type, key: str) -> str:
    """The unit of the quantity kind a field's annotation names (``Of``), or ''."""
    from agentsim.model.domain import KINDS, Of

    field = next((f for name, f in model.model_fields.items() if (f.alias or name) == key), None)
    kinds = [m.kind for m in (field.metadata if field is not None else ()) if isinstance(m, Of)]
    return KINDS[kinds[0]].unit if kinds else ""


def is_numeric(node: dict) -> bool:
    """Whether a property takes a number (plain, tiered price, or distribution)."""
    if node.get("type") in ("number", "integer"):
        return True
    if node.get("$ref") in (f"#/$defs/{DIST}",):
        return True
    return any(is_numeric(x) for x in node.get("anyOf", []) + node.get("oneOf", []) if isinstance(x, dict))


# --------------------------------------------------------------------------- the scenario reference


# (definition, heading, example YAML, path of the example object inside it). Every definition of the
# schema is either in SECTIONS or in FOLDED; tests/test_docs_gen.py checks that, and validates every example.
# A kind's module gives its sections with its models themselves (``(RepeatSpec, heading, example, where)``):
# the definition name is the one pydantic gives the model in the schema (``RepeatSpec``, or a longer one when
# another model has the same name), looked up here, never guessed from the class name.


def _kinds() -> list:
    """Every registered step kind, then every consumer kind."""
    from agentsim.model.registry import consumer_kinds, step_kinds

    return [*step_kinds().values(), *consumer_kinds().values()]


def definitions() -> dict[type, str]:
    """Each pydantic model of the scenario's schema -> the name of its definition there (``$defs``)."""
    from agentsim.model.registry import version

    return _definitions(version())


@functools.lru_cache(maxsize=4)
def _definitions(version: int) -> dict[type, str]:
    from pydantic.json_schema import GenerateJsonSchema

    from agentsim.model.scenario import Scenario

    found: dict[str, str] = {}

    class Names(GenerateJsonSchema):  # records the definition names pydantic settles on (after shortening)
        def _build_definitions_remapping(self):
            remap = super()._build_definitions_remapping()
            for (ref, mode), long in self.core_to_defs_refs.items():
                if mode == "validation":
                    found[ref.rsplit(":", 1)[0]] = remap.defs_remapping.get(long, long)
            return remap

    defs = Scenario.model_json_schema(schema_generator=Names).get("$defs", {})
    out = {}
    for where, name in found.items():
        model = _class_at(where)
        if model is not None and name in defs:  # (the top level is the schema itself, not a definition)
            out[model] = name
    for model in _models_of_kinds():  # (were the private hook above to change: the class's own name)
        out.setdefault(model, model.__name__)
    return out


def _class_at(where: str) -> type | None:
    """The class named ``module.QualName`` (a model of the schema), or None."""
    parts = where.split(".")
    for i in range(len(parts) - 1, 0, -1):
        module = sys.modules.get(".".join(parts[:i]))
        if module is not None:
            obj: Any = module
            for attr in parts[i:]:
                obj = getattr(obj, attr, None)
            return obj if isinstance(obj, type) else None
    return None


def _vocabulary_name(definition: str | type) -> str:
    """The definition name of a section's model: a kind's (given as its class) or the vocabulary's (given by the
    class's name, the name it has unless a kind's model has the same one)."""
    from agentsim.model import scenario

    model = definition if isinstance(definition, type) else getattr(scenario, definition, None)
    if not isinstance(model, type):
        return str(definition)  # the top level, the consumer model: named as written
    return definitions().get(model, model.__name__)


def _models_of_kinds() -> list[type]:
    """The pydantic models a kind's module defines: its step or spec model and those inside it."""
    from agentsim.model.field_kinds import models_in

    out: list[type] = []
    for kind in _kinds():
        top = getattr(kind, "step", None) or kind.spec
        todo = [top]
        while todo:
            model = todo.pop()
            if model in out or model.__module__ != top.__module__:
                continue
            out.append(model)
            todo += [m for f in model.model_fields.values() for m, _ in models_in(f.annotation)]
    return out


def _kind_section(section: tuple) -> tuple[str, str, str, tuple]:
    """A section with its definition's name (a kind gives its model itself, the vocabulary a class name)."""
    definition, *rest = section
    return (_vocabulary_name(definition), *rest)


def _step_sections() -> list[tuple[str, str, str, tuple]]:
    """Each step kind's own sections (its module's ``docs``), in the vocabulary's order."""
    from agentsim.model.registry import step_kinds

    return [_kind_section(section) for kind in step_kinds().values() for section in kind.docs]


def _step_models() -> set[str]:
    """The definitions of the steps themselves (``CallStep``...), folded into the Step union's section."""
    from agentsim.model.registry import step_kinds

    return {_vocabulary_name(kind.step) for kind in step_kinds().values()}


def _consumer_sections() -> list[tuple[str, str, str, tuple]]:
    """Each consumer kind's own sections (its module's ``docs``), in the vocabulary's order."""
    from agentsim.model.registry import consumer_kinds

    return [_kind_section(section) for kind in consumer_kinds().values() for section in kind.docs]


def sections() -> list[tuple[str, str, str, tuple]]:
    """Every section of the scenario reference: the vocabulary's and each registered kind's, in page order."""
    named = [_kind_section(s) for s in (*_BEFORE_STEPS, *_BEFORE_CONSUMERS, *_AFTER_CONSUMERS)]
    before, between = (
        named[: len(_BEFORE_STEPS)],
        named[len(_BEFORE_STEPS) : len(_BEFORE_STEPS) + len(_BEFORE_CONSUMERS)],
    )
    after = named[len(_BEFORE_STEPS) + len(_BEFORE_CONSUMERS) :]
    return [*before, *_step_sections(), *between, *_consumer_sections(), *after]


def _owner(definition: str):
    """The kind whose module defines ``definition`` (None: the vocabulary's)."""
    names = definitions()
    for kind in _kinds():
        top = getattr(kind, "step", None) or kind.spec
        if any(names.get(m) == definition for m in _models_of_kinds() if m.__module__ == top.__module__):
            return kind
    return None


def model_of(definition: str) -> type:
    """The pydantic model a schema definition is made from: the vocabulary's, or a step kind's module's."""
    from agentsim.model import scenario

    for model, name in definitions().items():  # (a name is longer than the class's when two models share one)
        if name == definition:
            return model
    if hasattr(scenario, definition):
        return getattr(scenario, definition)
    if definition == "ConsumerSpec":
        from agentsim.model.consumers import consumer_model

        return consumer_model()
    raise KeyError(definition)


# The vocabulary's own sections: before the steps, between the steps and the consumer kinds, after them.
_BEFORE_STEPS: list[tuple[str, str, str, tuple]] = [
    (
        "Scenario",
        "Top level",
        """\
# yaml-language-server: $schema=../schema/scenario.schema.json
name: first-scenario
description: One model, a 10-step chain with a tool between calls.
seed: 1
runs: 2000
models:
  sonnet:
    price: {input_mtok: 3, output_mtok: 15}
    ttft: {lognormal: {median: 1.5, p90: 3.5}}
    output_tps: 70
agent:
  steps:
    - repeat:
        times: 10
        steps:
          - call: {name: act, output: 300}
          - tool: {name: run, latency: 2}
""",
        (),
    ),
    (
        "ModelSpec",
        "models.NAME",
        """\
models:
  opus:
    price: {input_mtok: 5, output_mtok: 25, cache_read_mtok: 0.5, cache_write_mtok: 6.25}
    ttft: {lognormal: {median: 2.0, p90: 4.5}}        # s, excluding prefill
    prefill_tps: 15000                                  # uncached input tokens/s
    output_tps: {normal: {mean: 60, sd: 10, min: 10}}   # tokens/s, drawn per call
    speeds:
      fast: {output_tps_x: 2.5, price_x: 6}
""",
        ("models", "opus"),
    ),
    (
        "PriceSpec",
        "models.NAME.price",
        """\
price: {catalog: anthropic/claude-opus-4-8}                                 # genai-prices catalog
# or: {catalog: anthropic/claude-opus-4-8, context: {speed: fast}}         # a price context
# or: {input_mtok: 3, output_mtok: 15, cache_read_mtok: 0.3, cache_write_mtok: 3.75}
""",
        ("price",),
    ),
    (
        "TieredPrice",
        "Long-context tiers (any `*_mtok` price)",
        """\
input_mtok: {base: 3, tiers: [{start: 200000, price: 6}]}
""",
        ("input_mtok",),
    ),
    (
        "Tier",
        "One tier of a tiered price",
        """\
tier: {start: 200000, price: 6}
""",
        ("tier",),
    ),
    (
        "SpeedSpec",
        "models.NAME.speeds.TIER",
        """\
speeds:
  fast: {output_tps_x: 2.5, price: {input_mtok: 30, output_mtok: 150}}
  priority: {ttft_x: 0.5, price_x: 1.8}
""",
        ("speeds", "fast"),
    ),
    (
        "CacheSpec",
        "Prompt-cache TTL (models.NAME.cache, agent.context.cache)",
        """\
cache: {ttl: 1h}
""",
        ("cache",),
    ),
    (
        "RetrySpec",
        "models.NAME.retry",
        """\
retry: {max_attempts: 11, backoff_base: 0.5, backoff_cap: 8, jitter: full, honour_retry_after: true}
""",
        ("retry",),
    ),
    (
        "FallbackSpec",
        "models.NAME.fallback",
        """\
fallback: {model: sonnet, after: 3}
""",
        ("fallback",),
    ),
    (
        "StreamSpec",
        "models.NAME.stream (also speeds.TIER.stream and profiles)",
        """\
stream:
  chunk_tokens: {choice: {values: [1, 4, 16]}}   # tokens per delivered chunk, drawn per chunk
  jitter_cv: 0.5                                  # uneven gaps; the call's end does not move
  stall: {p: 0.05, seconds: {lognormal: {median: 1.5, p90: 4}}}   # adds to the call's time
""",
        ("stream",),
    ),
    (
        "StallSpec",
        "models.NAME.stream.stall",
        """\
stall: {p: 0.05, seconds: 2}                       # once per call, with probability 0.05
stall: {per_chunk: 0.02, seconds: {uniform: {low: 0.3, high: 1.0}}}   # a process: any number per call
stall: {at_chunks: [3, 7, 12], seconds: 0.5}       # a fixed schedule (chunks counted from 1)
""",
        ("stall",),
    ),
    (
        "ConditionsSpec",
        "models.NAME.conditions (provider conditions)",
        """\
conditions: {ttft_x: 1, output_tps_x: {lognormal: {median: 1, p90: 1.5}}}   # drawn once per run
""",
        ("conditions",),
    ),
    (
        "TimeOfDaySpec",
        "models.NAME.conditions.time_of_day (slow hours)",
        """\
time_of_day:   # the clock starts at workload.start; a call reads the factor of the hour it starts in
  output_tps_x: {hourly: [1, 1, 1, 1, 1, 1, 1, 1, 1, 0.9, 0.8, 0.8, 0.8, 0.7, 0.6, 0.6, 0.7, 0.8, 0.9, 1, 1, 1, 1, 1]}
  ttft_x: {hourly: [1, 1, 1, 1, 1, 1, 1, 1, 1, 1.2, 1.4, 1.4, 1.4, 1.6, 2, 2, 1.6, 1.4, 1.2, 1, 1, 1, 1, 1],
           curve: linear}
""",
        ("time_of_day",),
    ),
    (
        "HourlyFactors",
        "models.NAME.conditions.time_of_day.ttft_x / output_tps_x (hourly factors)",
        """\
output_tps_x: {hourly: [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0.5, 1, 1, 1, 1, 1, 1, 1, 1, 1], curve: steps}
""",
        ("output_tps_x",),
    ),
    (
        "ContextSpeedSpec",
        "models.NAME.context_speed (speed by context size; also speeds.TIER.context_speed and profiles)",
        """\
# piecewise linear in a call's whole input (context re-sent + new input, cached or not); flat outside the points
context_speed: {tokens: [0, 200000, 800000], output_tps_x: [1, 0.9, 0.8], ttft_x: [1, 1.5, 2]}
""",
        ("context_speed",),
    ),
    (
        "UncertaintySpec",
        "models.NAME.uncertainty (parameter uncertainty)",
        """\
uncertainty: {output_tps_x: {uniform: {low: 0.8, high: 1.2}}}   # drawn once per parameter set
""",
        ("uncertainty",),
    ),
    (
        "Agent",
        "agent",
        """\
agent:
  context: {system: 12000, grows: true, cache: true}
  steps:
    - call: {name: plan, model: opus, input: 2000, output: 600}
""",
        ("agent",),
    ),
    (
        "ContextSpec",
        "agent.context, workflows.NAME.context",
        """\
context: {system: 12000, grows: true, cache: {ttl: 5m}}
""",
        ("context",),
    ),
    (
        "CompactSpec",
        "agent.context.compact, workflows.NAME.context.compact (automatic compaction)",
        """\
# past 160,000 tokens of context the agent summarises it to 30,000 (written anew: none of it cached)
compact: {above: 160000, to: 30000}
""",
        ("compact",),
    ),
    (
        "Workflow",
        "workflows.NAME",
        """\
workflows:
  researcher:
    context: {system: 3000, grows: true, cache: true}
    steps:
      - call: {name: search-plan, output: 200}
      - tool: {name: web-search, latency: {lognormal: {median: 2.5, p90: 8}}, output: 3000}
""",
        ("workflows", "researcher"),
    ),
]
_BEFORE_CONSUMERS: list[tuple[str, str, str, tuple]] = [
    (
        "ByModel",
        "A probability that depends on a call's model (`continue_p`, `fail.p`, an option's `p`)",
        """\
continue_p: {by: act, opus: 0.7, opus@fast: 0.72, haiku: 0.82, default: 0.75}
""",
        ("continue_p",),
    ),
    (
        "ByModelCount",
        "A repeat count that depends on a call's model (`repeat.times`)",
        """\
times: {by: act, opus: 30, haiku: {uniform: {low: 35, high: 45}}, default: 40}
""",
        ("times",),
    ),
    (
        "ConsumerSpec",
        "Who consumes a call's answer (call.consumer, top-level consumer)",
        """\
consumer: {reader: {words_per_min: 250}, qoe: {expected_ttft: 1, tokens_per_s: 5.5}}
# or: {speech: {first_audio: 0.3, tokens_per_s: 3, sentence_tokens: 20}}
# or: {render: {tokens: 200}}     (or tokens: all)
""",
        ("consumer",),
    ),
]
_AFTER_CONSUMERS: list[tuple[str, str, str, tuple]] = [
    (
        "QoeSpec",
        "consumer.qoe (Andes QoE, arXiv 2404.16283)",
        """\
qoe: {expected_ttft: 1.0, tokens_per_s: 5}
""",
        ("qoe",),
    ),
    (
        "VariantSpec",
        "variants.NAME",
        """\
variants:
  standard: {}
  fast: {speed: {opus: fast}, description: every Opus call in fast mode}
  fast-plan-only: {speed: {plan: fast}}
  haiku-reviews: {model: {review-a: haiku, review-b: haiku}}
""",
        ("variants", "fast"),
    ),
    (
        "ValueOfTime",
        "value_of_time",
        """\
value_of_time: {usd_per_hour: 100}
""",
        ("value_of_time",),
    ),
    (
        "LimitSpec",
        "limits.NAME",
        """\
limits:
  opus-standard: {models: [opus@standard], rpm: 1000, input_tpm: 450000, output_tpm: 90000}
  gateway: {models: [haiku], concurrency: 20, policy: queue}
""",
        ("limits", "opus-standard"),
    ),
    (
        "Workload",
        "workload",
        """\
workload:
  concurrent: 40
  think_time: {lognormal: {median: 120, p90: 600}}
  duration: {hours: 8}
  warmup: {minutes: 30}
  volume: {runs_per_day: 300}
  start: "09:00"        # the simulated clock, for time_of_day conditions (quoted)
""",
        ("workload",),
    ),
    (
        "Arrivals",
        "workload.arrivals",
        """\
arrivals: {per_hour: 120}
""",
        ("arrivals",),
    ),
    (
        "Duration",
        "Durations (workload.duration, workload.warmup)",
        """\
duration: {hours: 8}
""",
        ("duration",),
    ),
    (
        "Volume",
        "workload.volume",
        """\
volume: {runs_per_month: 20000}
# or: {runs_per_day: 1000}                                  (× 30 days)
# or: {seats: 40, runs_per_seat_per_day: 12, working_days: 21}   (40 × 12 × 21 = 10,080 a month)
""",
        ("volume",),
    ),
    (
        "SweepSpec",
        "sweeps[i] (agentsim sweep; see docs/tradeoffs.md)",
        """\
sweeps:
  - {set: models.opus.speeds.fast.output_tps_x, range: {start: 1.5, stop: 4, step: 0.5}, label: speed-up (×)}
  - {set: 'agent.steps[1].repeat.times', values: [10, 20, 40]}
""",
        ("sweeps", 0),
    ),
    (
        "SweepRange",
        "sweeps[i].range",
        """\
range: {start: 1.5, stop: 4, step: 0.5}
""",
        ("range",),
    ),
    (
        "WarningsSpec",
        "Plausibility warnings (warnings)",
        """\
warnings: {ignore: [ttft_over_60s, run_over_a_day]}   # these values are meant
""",
        ("warnings",),
    ),
]

DIST_SECTIONS: list[tuple[str, str, str]] = [
    ("ConstantDist", "constant", "{constant: 2} (or just 2)"),
    ("UniformParams", "uniform", "{uniform: {low: 30, high: 40}}"),
    ("NormalParams", "normal", "{normal: {mean: 60, sd: 10, min: 10}}"),
    ("LognormalParams", "lognormal", "{lognormal: {median: 2, p90: 4.5}}"),
    ("GammaParams", "gamma", "{gamma: {mean: 70, sd: 15}}"),
    ("ExponentialParams", "exponential", "{exponential: {mean: 2}}"),
    ("ChoiceParams", "choice", "{choice: {values: [1, 3], p: [0.7, 0.3]}}"),
    ("EmpiricalParams", "empirical", "{empirical: {file: latencies.csv, column: seconds}}"),
]
DIST_DRAW = {
    "constant": "the value",
    "uniform": "low + (high − low)·u",
    "normal": "mean + sd·z",
    "lognormal": "exp(μ + σz), μ = ln median, σ = (ln p90 − ln median)/1.2816; from mean/sd: "
    "σ² = ln(1 + sd²/mean²), μ = ln mean − σ²/2",
    "gamma": "shape (mean/sd)², scale sd²/mean",
    "exponential": "−mean·ln(1 − u)",
    "choice": "values[i] with probability p[i] (equal if p is omitted)",
    "empirical": "one of the values, each equally likely",
}


def folded() -> set[str]:
    """Definitions documented inside another section rather than on their own (the steps' own models)."""
    families = ("uniform", "normal", "lognormal", "gamma", "exponential", "choice", "empirical")
    return {DIST, STEP} | _step_models() | {f"{f.capitalize()}Dist" for f in families}


def _step_specs() -> set[str]:
    """The definitions whose sections sit under the steps' heading (a level lower)."""
    kinds = {s[0] for s in (*_step_sections(), *_consumer_sections())}
    return kinds | {"ConsumerSpec", "QoeSpec", "ByModel", "ByModelCount"}


_LAZY = {  # module attributes made from the registered kinds when read (a kind may register after import)
    "SECTIONS": sections,
    "STEP_SECTIONS": _step_sections,
    "CONSUMER_SECTIONS": _consumer_sections,
    "FOLDED": folded,
}


def __getattr__(name: str):
    if name in _LAZY:
        return _LAZY[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _anchor(definition: str) -> str:
    return definition.lower()


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ").strip()


def _type(node: dict) -> str:
    """A short human type for a schema node, with links to the sections of referenced definitions."""
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        if name == DIST:
            return "[distribution](#distributions)"
        if name == STEP:
            return "[step](#steps)"
        return f"[{name.removesuffix('Spec')}](#{_anchor(name)})"
    for key in ("anyOf", "oneOf"):
        if key in node:
            parts = [_type(x) for x in node[key] if x.get("type") != "null"]
            if parts[1:] == ["[TieredPrice](#tieredprice)"]:
                return "number or [tiers](#tieredprice)"
            if parts == ["[step](#steps)", "list of [step](#steps)"]:
                return "step or list of steps"
            return " or ".join(dict.fromkeys(parts))
    if "enum" in node:
        return " \\| ".join(f"`{v}`" for v in node["enum"])
    if "const" in node:
        return f"`{node['const']}`"
    t = node.get("type")
    if t == "array":
        return "list of " + _type(node.get("items", {}))
    if t == "object":
        inner = node.get("additionalProperties")
        return "mapping: name → " + (_type(inner) if isinstance(inner, dict) else "string")
    if t == "string" and node.get("format") == "date":
        return "date (YYYY-MM-DD)"
    if t in ("number", "integer"):
        bounds = []
        for key, sym in (("exclusiveMinimum", ">"), ("minimum", "≥"), ("exclusiveMaximum", "<"), ("maximum", "≤")):
            if key in node:
                bounds.append(f"{sym} {node[key]:g}")
        return t + (" " + ", ".join(bounds) if bounds else "")
    return str(t) if t else "any"


def _default(node: dict, required: bool, key: str, definition: str) -> str:
    if required:
        return "**required**"
    if definition == "ModelSpec" and key in ("ttft", "output_tps"):
        return "**required** unless `profile`"
    if "default" not in node:
        t = node.get("type")
        return "`{}`" if t == "object" or "$ref" in node else "`[]`" if t == "array" else "—"
    d = node["default"]
    if d is None:
        return "—"
    return f"`{json.dumps(d) if isinstance(d, str | bool) else f'{d:g}' if isinstance(d, float) else d}`"


def _table(defs: dict, definition: str, node: dict | None = None) -> list[str]:
    node = node or defs[definition]
    required = set(node.get("required", []))
    rows = ["| key | type | unit | default | description |", "|---|---|---|---|---|"]
    for key, prop in node.get("properties", {}).items():
        unit = (unit_of(definition, key) or "?") if is_numeric(prop) else ""
        rows.append(
            f"| `{key}` | {_type(prop)} | {unit} | {_default(prop, key in required, key, definition)} "
            f"| {_md(prop.get('description', ''))} |"
        )
    return rows


def _doc(node: dict) -> str:
    text = node.get("description", "")
    return " ".join(text.replace("``", "`").split())


def _introduction() -> list[str]:
    """The reference page's opening: the format, its units and limits, editor support."""
    return [
        "# Scenario reference",
        "",
        f"<!-- Generated by `{REGENERATE}` from the pydantic models in src/agentsim/model/scenario.py. Do not edit. -->",  # noqa: E501
        "",
        "A scenario file (YAML, JSON or TOML) describes the models, the agent's steps, the variants to compare "
        "and, optionally, shared limits and a workload. This page lists every key, generated from the same "
        "models that validate the file, so it is always complete.",
        "",
        "**Units.** Seconds (`s`), tokens, tokens per second (`tokens/s`) and USD per million tokens "
        "(`USD / Mtok`, the `*_mtok` keys, as genai-prices names them). Where a number is expected a "
        "[distribution](#distributions) may be given instead (a plain number means a constant); token counts "
        "and repeat/fan-out counts are rounded to whole numbers.",
        "",
        "**Keys** written `NAME` or `TIER` are names you choose. Unknown keys are errors (with a "
        "*did you mean* hint), never ignored. A file may start with `extends: base.yaml` to reuse another "
        "scenario: mappings merge key by key, everything else is replaced; a key that excludes others "
        "(a distribution family, a duration unit, `median`/`p90` against `mean`/`sd`, `times` against "
        "`continue_p`, `arrivals` against `concurrent`) replaces the parent's alternatives instead of joining them, "
        "and `variants: {NAME: null}` drops a variant the parent defines (the first left is the baseline; at "
        "least one must be left or added). "
        "Limits that catch typos: at most 10^8 tokens per call, tool output or context (10^6 visible tokens "
        "for an answer streamed token by token: a consumer, an interrupt, a pipeline after it or a stall "
        "process), durations and latencies "
        "of at most 10 years, whole numbers within int64, price dates from 2020 to ten years ahead. "
        "`run`, `sweep`, `size`, `optimize` and `report` refuse simulations estimated above 2·10^9 calls "
        "(2·10^7 on the discrete-event engine), 10^9 tokens streamed token by token, or the machine's memory "
        "(`--max-calls N`, `--no-size-limit`; docs/limits-of-input.md).",
        "",
        "## Editor support { #editor }",
        "",
        f"The JSON Schema of this format is published as [`{SCHEMA_PATH}`](https://json-schema.org/) in the "
        "repository. With the VS Code YAML extension (Red Hat) put this line at the top of a scenario file "
        "(the path is relative to the file):",
        "",
        "```yaml",
        "# yaml-language-server: $schema=../schema/scenario.schema.json",
        "```",
        "",
        "or map every scenario at once in `.vscode/settings.json`:",
        "",
        "```json",
        '{"yaml.schemas": {"./schema/scenario.schema.json": ["scenarios/**/*.yaml"]}}',
        "```",
        "",
        "The editor then completes keys, shows these descriptions on hover and underlines unknown keys. "
        "`agentsim validate FILE` checks everything the schema cannot (names that must exist, probabilities "
        "that must sum to 1, catalog prices).",
        "",
    ]


def scenario_reference() -> str:
    """The Markdown page ``docs/scenarios.md``."""
    from agentsim.model.registry import step_kinds

    schema = scenario_schema()
    defs = {**schema["$defs"], "Scenario": schema}
    out = _introduction()
    steps_at, nested = len(_BEFORE_STEPS), _step_specs()  # the steps' sections come after the vocabulary's first
    for i, (definition, heading, example, _path) in enumerate(sections()):
        if i == steps_at:
            out += [
                "## Steps { #steps }",
                "",
                "A step is a mapping with exactly one of these keys (steps run in order):",
                "",
                *(f"- `{name}`: {kind.summary}" for name, kind in step_kinds().items()),
                "",
                "Every step may have a `name`, used in the calls table and by variants.",
                "",
            ]
        level = "###" if definition in nested else "##"
        node = defs[definition]
        out += [f"{level} {heading} {{ #{_anchor(definition)} }}", ""]
        if _doc(node):
            out += [_doc(node), ""]
        out += _table(defs, definition)
        out += ["", "```yaml", example.rstrip("\n"), "```", ""]
    out += _distributions(defs)
    return "\n".join(out).rstrip("\n") + "\n"


def _distributions(defs: dict) -> list[str]:
    out = [
        "## Distributions { #distributions }",
        "",
        "Wherever the type says *distribution*, write a number (a constant) or a mapping with exactly one "
        "family key. Any family takes optional `min` and `max` that clip its draws, written beside the family "
        "key or inside its mapping (`{normal: {mean: 60, sd: 10}, min: 10}` = "
        "`{normal: {mean: 60, sd: 10, min: 10}}`). Quantities that cannot be negative (tokens, latencies, "
        "counts) must not be able to draw below 0, and speeds must stay above 0: a normal needs a `min`.",
        "",
        "Every draw is `Q(Φ(z))`: the family's quantile function `Q` at the normal CDF of a standard-normal "
        "draw `z` (`u = Φ(z)` below). That is what lets variants share their random numbers "
        "([common random numbers](concepts.md#common-random-numbers)).",
        "",
        "| family | example | draw |",
        "|---|---|---|",
    ]
    for _, family, example in DIST_SECTIONS:
        out.append(f"| `{family}` | `{example}` | {_md(DIST_DRAW[family])} |")
    out.append("")
    for definition, family, _ in DIST_SECTIONS:
        if definition == "ConstantDist":
            node = {k: v for k, v in defs[definition].items()}
            node["properties"] = {k: v for k, v in node["properties"].items() if k == "constant"}
        else:
            node = defs[definition]
        out += [f"### `{family}` {{ #{_anchor(definition)} }}", ""]
        if _doc(node):
            out += [_doc(node), ""]
        out += _table(defs, definition, node)
        out.append("")
    return out


# --------------------------------------------------------------------------- the CLI reference


_OUTPUT_ROWS = (
    (
        ("what is written"),
        ("SIGINT (Ctrl-C) or SIGTERM"),
        ("SIGKILL (or a crash)"),
    ),
    (
        ("one file (`report`, `stream`, `calibrate -o`, `--plot`)"),
        ("the old file, or the new one: it is written beside its target and renamed over it"),
        ("the same; a hidden `.NAME.agentsim-tmp-PID-…` file may remain, removed by the next write there"),
    ),
    (
        ("a result folder (`run`, `sweep`, `replay --out`)"),
        (
            "the old folder or the new one: the new one is swapped in by one `renameat2(RENAME_EXCHANGE)`, and "
            "the old removed"
        ),
        (
            "the same, with a hidden temporary folder beside it (removed by the next write). Without `renameat2` "
            "(not Linux, glibc before 2.28, a file system without it) two renames that SIGINT and SIGTERM wait "
            "for; a SIGKILL between them leaves the target missing and the old folder beside it as "
            "`.NAME.agentsim-old-PID-…`, which the next write to the target moves back first"
        ),
    ),
    (
        ("a set of files in a folder (`fit`, `profiles import`)"),
        ("the old files or the new set: SIGINT and SIGTERM wait until every file is renamed into place"),
        (
            "before the commit, the old files; after it began, a mix **with a journal** (`.agentsim-staged-"
            "PID-….commit.json`) that the next write to the folder finishes first: the set is then wholly new"
        ),
    ),
    (
        ("`measure -o`"),
        (
            "a new file holds every request that finished; an earlier file stays whole until the run ends, then "
            "the new one (the requests kept) replaces it"
        ),
        ("the same; an earlier file stays as it was"),
    ),
)
_OUTPUT_INTRO = """
**Output files.** No command writes over a file it read: an output (`--out`, `-o`, `--plot`, a file `fit`
or `profiles import` writes beside it) that is the scenario, a file it `extends:`, a profile, an empirical
CSV, a replay config, a session, measurement or listing file (the same file by device and inode: through
symbolic links, hard links and `..` alike) exits 2 naming both, before the work; so does a result folder
that holds one (`run results/x/my.yaml --out results/x`). Every replacement is whole at every instant:
"""
_OUTPUT_TAIL = """

A folder or file that is a mount point cannot be renamed: it is filled in place (a `note:` says so) with
SIGINT and SIGTERM waiting, and a SIGKILL can leave it mixed. Names of anything agentsim read are shown with
their bidirectional and invisible characters written out (`[U+202E]`), and every CSV cell that starts like
a formula (`=`, `+`, `-`, `@`) gets a leading `'` (docs/limits-of-input.md).
"""


def _output_files() -> str:
    """The "Output files" part of docs/cli.md: what each kind of output can be left as by each signal."""
    rows = [_OUTPUT_ROWS[0], ("---",) * 3, *_OUTPUT_ROWS[1:]]
    table = "\n".join("| " + " | ".join(row) + " |" for row in rows)
    return _OUTPUT_INTRO + "\n" + table + "\n\n" + _OUTPUT_TAIL.strip("\n") + "\n"


def cli_reference() -> str:
    """The Markdown page ``docs/cli.md``, rendered by typer from the ``agentsim`` app."""
    import typer
    import typer.cli
    from typer.main import get_command

    from agentsim.cli.main import app

    command = get_command(app)
    ctx = typer.Context(command, info_name="agentsim")
    body = typer.cli.get_docs_for_click(obj=command, ctx=ctx, name="agentsim", title="CLI reference")
    head, _, rest = body.partition("\n")
    intro = (
        f"\n<!-- Generated by `{REGENERATE}` from the typer app in src/agentsim/cli/*.py. Do not edit. -->\n\n"
        "Exit codes: `0` success; `2` bad input (a scenario, trace or option: the message names the file, the "
        "place and the fix), or standard output closed by its reader before everything was written (`agentsim "
        "run s.yaml | head -c 0`: the message says the output is incomplete); `1` a run that failed for another "
        "reason; `3` `optimize` found no assignment that "
        'meets its constraint (it shows the closest, and `--json` says `"feasible": false`). Set '
        "`AGENTSIM_DEBUG=1` to see a traceback. Options that print `--json` write only JSON on standard output.\n"
        + _output_files()
    )
    return (head + "\n" + intro + rest).rstrip("\n") + "\n"


# --------------------------------------------------------------------------- files


def generated() -> dict[str, str]:
    """Path (relative to the repository root) -> the text it must have."""
    return {
        SCHEMA_PATH: schema_text(),
        SUMMARY_SCHEMA_PATH: summary_schema_text(),
        SCENARIO_REF_PATH: scenario_reference(),
        CLI_REF_PATH: cli_reference(),
    }


def stale(root: str | Path) -> list[str]:
    """The generated files under ``root`` that differ from what the code generates now."""
    root = Path(root)
    out = []
    for rel, text in generated().items():
        path = root / rel
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            out.append(rel)
    return out


def write_generated(root: str | Path) -> list[Path]:
    """Write the generated files under ``root`` (the repository root)."""
    root = Path(root)
    written = []
    for rel, text in generated().items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    root = Path.cwd()
    if not (root / "pyproject.toml").exists():
        print("error: run this from the repository root (where pyproject.toml is)", file=sys.stderr)
        return 2
    if "--check" in argv:
        bad = stale(root)
        for rel in bad:
            print(f"stale: {rel} (regenerate with `{REGENERATE}`)")
        return 1 if bad else 0
    for path in write_generated(root):
        print(f"wrote {path.relative_to(root)}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
