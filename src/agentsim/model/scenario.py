"""The scenario: what a user writes, as validated, frozen pydantic models (the root of the vocabulary).

A scenario describes one agent (its steps), the models it calls (their speed and prices), the
variants to compare (speed tiers or model swaps), and how many Monte-Carlo runs to do. Units
everywhere: seconds, tokens, tokens per second and USD per million tokens (``*_mtok``, as
genai-prices names them).

The vocabulary (contract v1 of DESIGN.md §3) is split by concept: :mod:`~agentsim.model.base`
(strict models, numbers), :mod:`~agentsim.model.distributions`, :mod:`~agentsim.model.prices`,
:mod:`~agentsim.model.models` (models, tiers, streams), :mod:`~agentsim.model.consumers`,
:mod:`~agentsim.model.steps` and :mod:`~agentsim.model.workload` (workloads and limits). This
module holds the root (:class:`Scenario`, the agent, workflows, variants) and the rules that need
the whole scenario (a call naming an undefined model, a variant naming an unknown step):
:func:`check_references` returns :class:`Problem` objects carrying the dotted path of the offending
value so that :mod:`agentsim.model.loading` can point at the file and line. Every public name of
the vocabulary is importable from here.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, PrivateAttr, model_validator
from pydantic_core import PydanticCustomError

from agentsim.model import domain
from agentsim.model.base import (
    INT64_MAX,
    MAX_SECONDS,
    Memo,
    NonNegNum,
    Num,
    PosNum,
    PriceDate,
    Prob,
    Problem,
    StrictModel,
    integer,
    number,
    suggest,
)
from agentsim.model.consumers import RUN_METRICS, ConsumerSpec, QoeSpec, metrics_of
from agentsim.model.distributions import DIST_FAMILIES, ByModel, ByModelCount, Count, Dist, ModelProb, max_p
from agentsim.model.models import (
    CacheSpec,
    ConditionsSpec,
    ContextSpeedSpec,
    FallbackSpec,
    HourlyFactors,
    ModelSpec,
    RetrySpec,
    SpeedSpec,
    StallSpec,
    StreamSpec,
    TimeOfDaySpec,
    UncertaintySpec,
)
from agentsim.model.prices import PRICE_FIELDS, PriceSpec, Rate, Tier, TieredPrice
from agentsim.model.registry import kind_of
from agentsim.model.steps import Join, KJoin, Step, iter_steps, join_k, sequences, step_kind_names, step_name, walk_step
from agentsim.model.workload import Arrivals, ClockTime, Duration, LimitSpec, Volume, Workload

__all__ = [
    "DIST_FAMILIES",
    "INT64_MAX",
    "MAX_SECONDS",
    "PRICE_FIELDS",
    "WARNING_KEYS",
    "Agent",
    "Arrivals",
    "ByModel",
    "ByModelCount",
    "CacheSpec",
    "ClockTime",
    "ConditionsSpec",
    "ConsumerSpec",
    "ContextSpec",
    "ContextSpeedSpec",
    "Count",
    "Dist",
    "Duration",
    "FallbackSpec",
    "HourlyFactors",
    "Join",
    "KJoin",
    "LimitSpec",
    "ModelProb",
    "ModelSpec",
    "NonNegNum",
    "Num",
    "PosNum",
    "PriceDate",
    "PriceSpec",
    "Prob",
    "Problem",
    "QoeSpec",
    "Rate",
    "RetrySpec",
    "Scenario",
    "SpeedSpec",
    "StallSpec",
    "Step",
    "StreamSpec",
    "StrictModel",
    "SweepRange",
    "SweepSpec",
    "Tier",
    "TieredPrice",
    "TimeOfDaySpec",
    "UncertaintySpec",
    "ValueOfTime",
    "VariantSpec",
    "Volume",
    "WarningsSpec",
    "Workflow",
    "Workload",
    "all_steps",
    "check_references",
    "integer",
    "iter_steps",
    "join_k",
    "kind_of",
    "max_p",
    "number",
    "sequences",
    "step_kind_names",
    "step_name",
    "suggest",
    "walk_step",
]


class CompactSpec(StrictModel):
    """Compaction: when the context grows past ``above`` tokens, its history is summarised into ``to`` tokens."""

    above: domain.PosTokens = Field(description="Tokens past which the context is compacted.")
    to: domain.Tokens = Field(description="Tokens the compacted context keeps (a summary: nothing of it cached).")

    @model_validator(mode="after")
    def _smaller(self) -> CompactSpec:
        if self.to >= self.above:
            raise PydanticCustomError(
                "compact_to",
                "compact.to ({to}) must be below compact.above ({above})",
                {"to": self.to, "above": self.above},
            )
        return self


class ContextSpec(StrictModel):
    system: Annotated[int, BeforeValidator(integer), Field(ge=0)] = Field(
        0, description="Tokens every call re-sends first."
    )
    grows: bool = Field(False, description="Calls' new input and output, and tool output, join the context.")
    cache: bool | CacheSpec = Field(False, description="Prompt caching: true, false, or {ttl: 5m|1h}.")
    compact: CompactSpec | None = Field(
        None,
        description="With grows: when tokens joining the context take it past compact.above, it is compacted to "
        "compact.to tokens (an agent's automatic compaction), and the prompt cache holds nothing of it.",
    )

    @model_validator(mode="after")
    def _compact_needs_growth(self) -> ContextSpec:
        if self.compact is not None and not self.grows:
            raise PydanticCustomError(
                "compact_grows", "compact only applies to a context that grows: add grows: true", {}
            )
        return self

    @property
    def cache_on(self) -> bool:
        return self.cache is not False

    @property
    def cache_ttl(self) -> str | None:
        return self.cache.ttl if isinstance(self.cache, CacheSpec) else None

    @property
    def cache_per_model(self) -> bool:
        """One cache per (model, speed tier), as providers keep them: the default; ``scope: context`` opts out."""
        return not (isinstance(self.cache, CacheSpec) and self.cache.scope == "context")


class Agent(StrictModel):
    context: ContextSpec = Field(default_factory=ContextSpec, description="Context growth and prompt caching.")
    steps: list[Step] = Field(min_length=1, description="The agent's steps, run in order.")


class Workflow(StrictModel):
    context: ContextSpec | None = Field(
        None, description="The subagent's own context (default: an empty one, as for an agent without context)."
    )
    steps: list[Step] = Field(min_length=1, description="The workflow's steps, run in order.")


class VariantSpec(StrictModel):
    speed: dict[str, str] = Field(default_factory=dict, description="Model or step name -> speed tier.")
    model: dict[str, str] = Field(default_factory=dict, description="Model or step name -> model.")
    description: str | None = Field(None, description="What the variant is, for readers.")


class ValueOfTime(StrictModel):
    usd_per_hour: NonNegNum = Field(description="What an hour of waiting for the agent is worth.")


class SweepRange(StrictModel):
    start: Num = Field(description="First value.")
    stop: Num = Field(description="Last value, included when it lies on the grid start + k * step.")
    step: Num = Field(description="Distance between values (negative to go down).")


class SweepSpec(StrictModel):
    """One swept place (see agentsim.analysis.sweeps): ``{set: path, values: [...]}`` or ``{set: path, range: {...}}``;
    or several varied together (zipped, not crossed): ``{together: [{set, values}, {set, values}]}``."""

    set: str | None = Field(None, description="Dotted path into the scenario, e.g. agent.steps[1].repeat.times.")
    values: list[Any] | None = Field(None, min_length=1, description="The values it takes.")
    range: SweepRange | None = Field(None, description="Or: a range {start, stop, step}.")
    label: str | None = Field(None, description="Axis label for figures, with its unit.")
    together: list[SweepSpec] | None = Field(
        None,
        min_length=2,
        description="Instead of set: places varied together, value i of each at grid point i (zipped, not "
        "crossed); each {set, values | range, label}, all with the same number of values.",
    )

    @model_validator(mode="after")
    def _one(self) -> SweepSpec:
        if self.together is not None:
            if self.set is not None or self.values is not None or self.range is not None:
                raise PydanticCustomError(
                    "sweep_together", "a sweep has together: (places varied together) or set:, not both", {}
                )
            if any(t.together is not None for t in self.together):
                raise PydanticCustomError("sweep_together", "together: lists places ({set, values}), not groups", {})
            return self
        if self.set is None:
            raise PydanticCustomError("sweep_set", "a sweep needs set: (a path), or together: (several)", {})
        if (self.values is None) == (self.range is None):
            raise PydanticCustomError("sweep_values", "a sweep takes one of values or range", {})
        return self


# The plausibility warnings' keys (agentsim.plan.plausibility checks them), written once.
WARNING_KEYS = (
    "ttft_over_60s",
    "speed_multiplier_over_20",
    "price_multiplier_over_20",
    "output_tps_over_50000",
    "output_tps_under_1",
    "run_over_a_day",
)


class WarningsSpec(StrictModel):
    """Values that are allowed but usually typing slips are warned about (not refused) by `validate` and, on
    stderr above the table, by `run`, each with file:line: `ttft_over_60s` (a median TTFT over 60 s: milliseconds
    typed as seconds?), `speed_multiplier_over_20` (a tier's `output_tps_x` or `ttft_x` over 20),
    `price_multiplier_over_20` (a tier's `price_x` over 20), `output_tps_over_50000` and `output_tps_under_1`
    (a median output speed outside 1 to 50,000 tokens/s) and, after simulating, `run_over_a_day` (a variant's
    mean wall time over 24 hours). List the keys a scenario means under `ignore` to silence them."""

    ignore: list[Literal[WARNING_KEYS]] = Field(
        default_factory=list, description="Warning keys not to show, e.g. [ttft_over_60s]."
    )


class Scenario(StrictModel):
    name: str = Field(description="Scenario name, shown in tables and figures.")
    description: str | None = Field(None, description="One line on what the scenario asks.")
    seed: Annotated[int, BeforeValidator(integer), Field(ge=0)] = Field(
        0, description="Random seed: same seed, same results."
    )
    runs: Annotated[int, BeforeValidator(integer), Field(ge=1)] = Field(
        1000, description="Monte-Carlo runs of the agent per variant."
    )
    models: dict[str, ModelSpec] = Field(min_length=1, description="The models calls can use, by name.")
    agent: Agent = Field(description="The agent: its context settings and steps.")
    workflows: dict[str, Workflow] = Field(default_factory=dict, description="Workflows subagent steps run.")
    variants: dict[str, VariantSpec] | None = Field(None, description="Variants compared; the first is the baseline.")
    value_of_time: ValueOfTime | None = Field(None, description="What waiting costs, for break-even.")
    prices_as_of: PriceDate | None = Field(None, description="Date for catalog prices; default: today (UTC).")
    limits: dict[str, LimitSpec] | None = Field(None, description="Shared provider accounts and their limits.")
    workload: Workload | None = Field(None, description="Many agents over time sharing limits; spend volume.")
    sweeps: list[SweepSpec] | None = Field(None, description="Grid of values to sweep (agentsim sweep).")
    consumer: ConsumerSpec | None = Field(
        None, description="Default consumer of every call's streamed answer (a call's own consumer wins)."
    )
    warnings: WarningsSpec | None = Field(None, description="Plausibility warnings to silence: {ignore: [KEY, ...]}.")
    slo: dict[str, domain.Number] | None = Field(
        None,
        description="Targets on what the person lives through, measured from the ask: {METRIC: target}. METRIC is a "
        "streaming metric (the turn's: the first of its answers for first_word_s, ttft_s, first_* and "
        "voice_to_voice_s, the last for the others), CALL.METRIC (that call's), wall_time_s or cost_usd. A run "
        "meets a target when its value is at most the target (at least, for qoe and qoe_from_ask). summary.json "
        "gives per variant the share of runs meeting each target and all of them, with a 95% interval.",
    )
    uncertainty: Literal["parameters"] | None = Field(
        None,
        description="parameters: also report an interval of the mean wall time that includes the models' "
        "speed uncertainty (models.NAME.uncertainty); costs 20 more simulations.",
    )

    _source: str | None = PrivateAttr(None)  # the file it was loaded from (for relative paths)
    _inputs: tuple = PrivateAttr(())  # every file read to make it (the file, its bases, profiles), as Paths
    # its compiled plan: agentsim.plan.compiler.compile_plan compiles a scenario once (it is frozen)
    _plan: Memo = PrivateAttr(default_factory=Memo)

    def variant_specs(self) -> dict[str, VariantSpec]:
        """The variants to compare; a scenario without any has one, ``baseline``."""
        return dict(self.variants) if self.variants else {"baseline": VariantSpec()}


# The recursive step models (ParallelSpec, RepeatSpec, PipelineStep, Agent, ...) name each other before all
# are defined. No model_rebuild() here: every model defers building its validator to its first use
# (defer_build on StrictModel), when the forward references resolve from this module's names. So `agentsim prices`
# builds none, and `validate` builds Scenario's schema (its nested models inline) once.


def all_steps(scenario: Scenario):
    """Every step of the agent and of every workflow, with its dotted path."""
    yield from iter_steps(scenario.agent.steps, ("agent", "steps"))
    for wname, wf in scenario.workflows.items():
        yield from iter_steps(wf.steps, ("workflows", wname, "steps"))


def each_step(scenario: Scenario):
    """Every step of the agent and of every workflow: ``(path, step, previous step in its list or None)``."""
    roots = [(("agent", "steps"), scenario.agent.steps)]
    roots += [(("workflows", w, "steps"), wf.steps) for w, wf in scenario.workflows.items()]
    for root_path, root in roots:
        for steps, paths in sequences(root, root_path):
            for i, (step, path) in enumerate(zip(steps, paths, strict=True)):
                yield path, step, steps[i - 1] if i else None


def check_references(scenario: Scenario) -> list[Problem]:
    """Checks that need the whole scenario: names that must exist, tiers that must be offered.

    Each step kind checks its own steps (its ``check``: a call's model and tier, a subagent's
    workflow, a parallel's k, a pipeline that must follow a call); the rest is checked here.
    """
    problems, step_names = _check_steps(scenario)
    problems.extend(_check_subagent_cycles(scenario))
    problems.extend(_check_slo(scenario))
    problems.extend(_check_models(scenario))
    problems.extend(_check_variants(scenario, step_names))
    return problems


def _check_steps(scenario: Scenario) -> tuple[list[Problem], set[str]]:
    """Each step checked by its kind, and the step names."""
    problems: list[Problem] = []
    step_names: set[str] = set()
    for path, step, previous in each_step(scenario):
        name = step_name(step)
        if name:
            step_names.add(name)
        check = kind_of(step).check
        if check is not None:
            problems.extend(check(scenario, step, path, previous))
    return problems, step_names


def _check_models(scenario: Scenario) -> list[Problem]:
    """A model's time-of-day conditions need a start clock time; its fallback must be another defined model."""
    problems: list[Problem] = []
    models = scenario.models
    model_names = list(models)
    start = scenario.workload.start if scenario.workload is not None else None
    for mname, m in models.items():
        if m.conditions is not None and m.conditions.time_of_day is not None and start is None:
            problems.append(
                Problem(
                    ("models", mname, "conditions", "time_of_day"),
                    "time-of-day conditions need the clock time the simulation starts at",
                    'add workload: {start: "09:00"} (quoted; any clock time)',
                )
            )
        if m.fallback is not None:
            where = ("models", mname, "fallback", "model")
            if m.fallback.model not in models:
                problems.append(
                    Problem(
                        where,
                        f"fallback model '{m.fallback.model}' is not defined under models",
                        suggest(m.fallback.model, model_names) or "defined: " + ", ".join(model_names),
                    )
                )
            elif m.fallback.model == mname:
                problems.append(Problem(where, "a model cannot fall back to itself", "name another model"))
    return problems


def _check_variants(scenario: Scenario, step_names: set[str]) -> list[Problem]:
    """A variant's model and speed keys each name a model or a step (not both); a model it assigns must exist."""
    problems: list[Problem] = []
    models = scenario.models
    model_names = list(models)
    for vname, v in scenario.variant_specs().items():
        for kind, mapping in (("model", v.model), ("speed", v.speed)):
            for key, value in mapping.items():
                where = ("variants", vname, kind, key)
                if key in models and key in step_names:
                    problems.append(Problem(where, f"'{key}' is both a model and a step name", "rename the step"))
                    continue
                if key not in models and key not in step_names:
                    problems.append(
                        Problem(
                            where,
                            f"'{key}' is neither a model nor a step name",
                            suggest(key, [*model_names, *step_names]) or "models: " + ", ".join(model_names),
                        )
                    )
                    continue
                if kind == "model" and value not in models:
                    problems.append(
                        Problem(
                            where,
                            f"model '{value}' is not defined under models",
                            suggest(value, model_names) or "defined: " + ", ".join(model_names),
                        )
                    )
    return problems


def slo_kind(metric: str) -> str:
    """The domain kind of an slo target on ``metric`` (``answer.first_word_s`` or ``first_word_s``)."""
    m = metric.rsplit(".", 1)[-1]
    if m.startswith("qoe") or m.endswith("_share"):
        return "prob"
    return "duration" if m.endswith("_s") else "usd" if m.endswith("_usd") else "number"


def streamed_calls(scenario: Scenario) -> dict[str, str]:
    """Call name -> the kind of its consumer (``none``: interruptible, no consumer) for the calls that stream."""
    out: dict[str, str] = {}
    for _path, step, _previous in each_step(scenario):
        spec = getattr(step, "call", None)
        if spec is None or spec.name is None:
            continue
        cons = spec.consumer or scenario.consumer
        if cons is not None:
            out.setdefault(spec.name, cons.kind)
        elif spec.interrupt is not None:
            out.setdefault(spec.name, "none")
    return out


def _check_slo(scenario: Scenario) -> list[Problem]:
    """Each slo target names a metric the scenario has, and its value is of the metric's kind."""
    if not scenario.slo:
        return []
    calls = streamed_calls(scenario)
    turn = {m for kind in set(calls.values()) for m in metrics_of(kind)}
    known = [*RUN_METRICS, *sorted(turn), *(f"{c}.{m}" for c, k in calls.items() for m in metrics_of(k))]
    problems = []
    for metric, target in scenario.slo.items():
        where = ("slo", metric)
        if metric not in known:
            if not calls and metric not in RUN_METRICS:
                hint = "no named call streams to a consumer: add consumer: {...} (and name:) to the answer's call"
            else:
                hint = suggest(metric, known) or "targets: " + ", ".join(known[:12]) + (
                    " ..." if len(known) > 12 else ""
                )
            problems.append(Problem(where, f"'{metric}' is not a metric of this scenario", hint))
            continue
        msg = domain.problem(slo_kind(metric), target)
        if msg is not None:
            problems.append(Problem(where, msg, "give the target in the metric's unit (seconds, USD, a share)"))
    return problems


def _check_subagent_cycles(scenario: Scenario) -> list[Problem]:
    calls: dict[str, set[str]] = {}
    for wname, wf in scenario.workflows.items():
        # a step whose spec names a workflow runs it (a subagent)
        calls[wname] = {w for _, s in iter_steps(wf.steps, ()) if (w := getattr(s.spec, "workflow", None))}
    problems = []
    for start in calls:
        stack, seen = [start], set()
        while stack:
            w = stack.pop()
            for nxt in calls.get(w, ()):
                if nxt == start:
                    problems.append(
                        Problem(
                            ("workflows", start),
                            f"workflow '{start}' calls itself through subagents: it would never end",
                            "remove the cycle",
                        )
                    )
                    stack = []
                    break
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
    return problems
