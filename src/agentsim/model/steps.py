"""The steps of an agent (contract v1 and v1.1 of DESIGN.md §3): one mapping with one step-type key each.

A step is ``call``, ``tool``, ``wait``, ``parallel``, ``fanout``, ``repeat``, ``choose``,
``subagent``, ``pipeline`` or ``fail`` (:data:`STEP_KINDS`); :data:`Step` is their tagged union and
:data:`Branch` a parallel branch (one step or a list). :func:`iter_steps` and :func:`walk_step` walk
nested steps with their dotted paths; :func:`sequences` yields every list of steps run in order.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Discriminator, Field, Tag, field_validator, model_validator
from pydantic_core import PydanticCustomError

from agentsim.model.base import StrictModel, integer, suggest
from agentsim.model.consumers import ConsumerSpec, InterruptSpec
from agentsim.model.distributions import ByModel, Count, Dist, ModelProb, max_p

__all__ = ["STEP_KINDS", "Branch", "Step", "iter_steps", "sequences", "step_name", "walk_step"]


class CallSpec(StrictModel):
    name: str | None = Field(None, description="Step name, used in records and variant overrides.")
    model: str | None = Field(None, description="A key of models; may be omitted when there is only one.")
    input: Dist = Field(0.0, description="New tokens this call adds (on top of the context).")
    output: Dist = Field(description="Output tokens (visible; joins the context).")
    reasoning: Dist = Field(0.0, description="Reasoning tokens: decode time, billed, not in the context.")
    speed: str | None = Field(None, description="Speed tier of the model for this call.")
    consumer: ConsumerSpec | None = Field(
        None, description="Who consumes the streamed answer (default: the scenario's consumer)."
    )
    interrupt: InterruptSpec | None = Field(None, description="The user may cut the answer off.")


class ToolSpec(StrictModel):
    name: str | None = Field(None, description="Step name, used in records and variant overrides.")
    latency: Dist = Field(description="Seconds the tool runs.")
    output: Dist = Field(0.0, description="Tokens the tool returns into the context.")


class WaitSpec(StrictModel):
    name: str | None = Field(None, description="Step name, used in records and variant overrides.")
    latency: Dist = Field(description="Seconds of human or fixed delay.")


class KJoin(StrictModel):
    k: Annotated[int, BeforeValidator(integer), Field(ge=1)] = Field(
        description="The join completes when k branches have finished."
    )


Join = Literal["all", "any"] | KJoin


class ParallelSpec(StrictModel):
    name: str | None = Field(None, description="Step name, used in records and variant overrides.")
    branches: list[Branch] = Field(min_length=1, description="Branches: each one step, or a list of steps in order.")
    join: Join = Field("all", description="all, any (the first to finish), or {k: N} (the first N).")


class FanoutSpec(StrictModel):
    name: str | None = Field(None, description="Step name, used in records and variant overrides.")
    n: Dist = Field(description="Number of parallel copies (rounded).")
    steps: list[Step] = Field(min_length=1, description="The steps each copy runs, in order.")
    join: Join = Field("all", description="all, any (the first to finish), or {k: N} (the first N).")


class RepeatSpec(StrictModel):
    name: str | None = Field(None, description="Step name, used in records and variant overrides.")
    times: Count | None = Field(
        None, description="Number of iterations (rounded; may depend on a call's model: {by: CALL, MODEL: n})."
    )
    continue_p: ModelProb | None = Field(
        None, description="After each iteration another follows with this p (may depend on a call's model)."
    )
    max: Annotated[int, BeforeValidator(integer), Field(ge=1)] | None = Field(
        None, description="Cap on iterations with continue_p."
    )
    steps: list[Step] = Field(min_length=1, description="The steps of one iteration, in order.")

    @model_validator(mode="after")
    def _ends(self) -> RepeatSpec:
        if (self.times is None) == (self.continue_p is None):
            raise PydanticCustomError("repeat_count", "repeat needs exactly one of times or continue_p (with max)", {})
        if self.times is not None and self.max is not None:
            raise PydanticCustomError("repeat_max", "max goes with continue_p, not with times", {})
        if self.continue_p is not None and max_p(self.continue_p) >= 1 and self.max is None:
            raise PydanticCustomError(
                "repeat_never_ends",
                "this repeat can never end: continue_p is {p} and there is no max; set continue_p below 1 or add max",
                {"p": max_p(self.continue_p)},
            )
        return self


class ChooseOption(StrictModel):
    p: ModelProb = Field(
        description="Probability of this option (the options' p sum to 1; may depend on a call's model)."
    )
    steps: list[Step] = Field(default_factory=list, description="The steps of this option (none: skip).")
    name: str | None = Field(None, description="Option name.")


class ChooseSpec(StrictModel):
    name: str | None = Field(None, description="Step name, used in records and variant overrides.")
    options: list[ChooseOption] = Field(min_length=1, description="One option is drawn per run by its p.")

    @model_validator(mode="after")
    def _sums_to_one(self) -> ChooseSpec:
        if any(isinstance(o.p, ByModel) for o in self.options):
            return self  # checked per variant when the plan is compiled
        total = math.fsum(o.p for o in self.options)
        if abs(total - 1.0) > 1e-9:
            raise PydanticCustomError("p_sum", "option probabilities sum to {total}, not 1", {"total": f"{total:.6g}"})
        return self


class AfterTokens(StrictModel):
    tokens: Annotated[int, Field(ge=1)] = Field(description="Tokens the previous call must have streamed.")


class PipelineSpec(StrictModel):
    """Steps that start on the previous call's partial output, alongside the rest of its stream."""

    name: str | None = Field(None, description="Step name, used in records and variant overrides.")
    after: AfterTokens | Literal["first_sentence"] = Field(
        description="Start once the previous call has streamed {tokens: N} tokens, or its first_sentence."
    )
    sentence_tokens: Dist | None = Field(
        None, description="Sentence length for first_sentence (default: the call's speech consumer's, else 20)."
    )
    steps: list[Step] = Field(min_length=1, description="The steps to run, in order.")


class FailSpec(StrictModel):
    """The run stops here as a failed run with probability ``p`` (contract v1.1)."""

    name: str | None = Field(None, description="Step name, used in records and variant overrides.")
    p: ModelProb = Field(description="Probability that the run fails at this step (may depend on a call's model).")


class SubagentSpec(StrictModel):
    name: str | None = Field(None, description="Step name, used in records and variant overrides.")
    workflow: str = Field(description="A key of the top-level workflows.")
    output: Dist = Field(0.0, description="Tokens the subagent's answer adds to the caller's context.")


class CallStep(StrictModel):
    call: CallSpec


class ToolStep(StrictModel):
    tool: ToolSpec


class WaitStep(StrictModel):
    wait: WaitSpec


class ParallelStep(StrictModel):
    parallel: list[Branch] | ParallelSpec

    @field_validator("parallel")
    @classmethod
    def _non_empty(cls, v: Any) -> Any:
        if isinstance(v, list) and not v:
            raise PydanticCustomError("empty_parallel", "parallel needs at least one branch", {})
        return v

    @property
    def spec(self) -> ParallelSpec:
        if isinstance(self.parallel, ParallelSpec):
            return self.parallel
        # the branches are valid already (validated as this step's list, non-empty): wrap them without
        # validating them again, which would build ParallelSpec's whole schema a second time (~20 ms)
        return ParallelSpec.model_construct(branches=self.parallel)


class FanoutStep(StrictModel):
    fanout: FanoutSpec


class RepeatStep(StrictModel):
    repeat: RepeatSpec


class ChooseStep(StrictModel):
    choose: ChooseSpec


class SubagentStep(StrictModel):
    subagent: SubagentSpec


class PipelineStep(StrictModel):
    pipeline: PipelineSpec


class FailStep(StrictModel):
    fail: FailSpec


STEP_KINDS = ("call", "tool", "wait", "parallel", "fanout", "repeat", "choose", "subagent", "pipeline", "fail")


def _check_step_shape(value: Any) -> Any:
    if isinstance(value, StrictModel):
        return value
    if not isinstance(value, dict) or len(value) != 1:
        got = list(value) if isinstance(value, dict) else type(value).__name__
        raise PydanticCustomError(
            "bad_step",
            "a step is a mapping with exactly one of {kinds}; got {got}",
            {"kinds": ", ".join(STEP_KINDS), "got": got},
        )
    (kind,) = value
    if kind not in STEP_KINDS:
        hint = suggest(kind, STEP_KINDS) or "step types: " + ", ".join(STEP_KINDS)
        raise PydanticCustomError(
            "unknown_step", "unknown step type '{kind}' ({hint})", {"kind": str(kind), "hint": hint}
        )
    return value


def _step_tag(value: Any) -> str | None:
    if isinstance(value, dict):
        return next(iter(value), None)
    for kind in STEP_KINDS:
        if hasattr(value, kind):
            return kind
    return None


Step = Annotated[
    Annotated[CallStep, Tag("call")]
    | Annotated[ToolStep, Tag("tool")]
    | Annotated[WaitStep, Tag("wait")]
    | Annotated[ParallelStep, Tag("parallel")]
    | Annotated[FanoutStep, Tag("fanout")]
    | Annotated[RepeatStep, Tag("repeat")]
    | Annotated[ChooseStep, Tag("choose")]
    | Annotated[SubagentStep, Tag("subagent")]
    | Annotated[PipelineStep, Tag("pipeline")]
    | Annotated[FailStep, Tag("fail")],
    Discriminator(_step_tag),
    BeforeValidator(_check_step_shape),
]
"""One step: a mapping with exactly one step-type key."""


def _branch_tag(value: Any) -> str:
    return "steps" if isinstance(value, list) else "step"


Branch = Annotated[
    Annotated[Step, Tag("step")] | Annotated[list[Step], Tag("steps")],
    Discriminator(_branch_tag),
]
"""A parallel branch: one step, or a list of steps run in order."""


def iter_steps(steps: list[Any], path: tuple[str | int, ...]):
    """Yield ``(path, step)`` for every step, depth first, including nested ones."""
    for i, step in enumerate(steps):
        yield from walk_step(step, (*path, i))


def walk_step(step: Any, here: tuple[str | int, ...]):
    """Yield ``(path, step)`` for ``step`` and every step nested inside it."""
    yield here, step
    if isinstance(step, ParallelStep):
        base = (*here, "parallel") if isinstance(step.parallel, list) else (*here, "parallel", "branches")
        for b, branch in enumerate(step.spec.branches):
            if isinstance(branch, list):
                yield from iter_steps(branch, (*base, b))
            else:
                yield from walk_step(branch, (*base, b))
    elif isinstance(step, FanoutStep):
        yield from iter_steps(step.fanout.steps, (*here, "fanout", "steps"))
    elif isinstance(step, RepeatStep):
        yield from iter_steps(step.repeat.steps, (*here, "repeat", "steps"))
    elif isinstance(step, ChooseStep):
        for o, opt in enumerate(step.choose.options):
            yield from iter_steps(opt.steps, (*here, "choose", "options", o, "steps"))
    elif isinstance(step, PipelineStep):
        yield from iter_steps(step.pipeline.steps, (*here, "pipeline", "steps"))


def step_name(step: Any) -> str | None:
    for kind in STEP_KINDS:
        spec = getattr(step, kind, None)
        if spec is not None:
            if isinstance(step, ParallelStep):
                return step.spec.name
            return getattr(spec, "name", None)
    return None


def sequences(steps: list[Any], path: tuple[str | int, ...]):
    """Yield ``(path, steps)`` for every list of steps run in order, nested ones included."""
    yield path, steps
    for i, step in enumerate(steps):
        here = (*path, i)
        if isinstance(step, ParallelStep):
            base = (*here, "parallel") if isinstance(step.parallel, list) else (*here, "parallel", "branches")
            for b, branch in enumerate(step.spec.branches):
                if isinstance(branch, list):
                    yield from sequences(branch, (*base, b))
                else:
                    yield from sequences([branch], (*base, b))
        elif isinstance(step, FanoutStep):
            yield from sequences(step.fanout.steps, (*here, "fanout", "steps"))
        elif isinstance(step, RepeatStep):
            yield from sequences(step.repeat.steps, (*here, "repeat", "steps"))
        elif isinstance(step, ChooseStep):
            for o, opt in enumerate(step.choose.options):
                yield from sequences(opt.steps, (*here, "choose", "options", o, "steps"))
        elif isinstance(step, PipelineStep):
            yield from sequences(step.pipeline.steps, (*here, "pipeline", "steps"))
