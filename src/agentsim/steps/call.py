"""``call: {name, model, input, output, reasoning, speed, consumer, interrupt}``: one model request.

``input`` is the new tokens the call adds on top of the context; ``output`` visible tokens (they join
the context), ``reasoning`` hidden ones (decode time, billed, not in the context): all drawn per
instance. The call runs on its model's tier in each variant: the variant's ``model``/``speed`` keys
by the call's name, then by the names of the steps around it (innermost first), then by model name.

A call's timing is the rule of :mod:`agentsim.sim.rules` (``ttft = ttft0 + uncached / prefill_tps``,
``decode = (output + reasoning) / tps``, ``end = t0 + ((ttft + decode) + stall)``) and its timeline
one typed value (:mod:`agentsim.sim.call_timeline`). Its seconds go to the ``queue``, ``ttft``,
``decode`` and ``stall`` slots; each instance is a row of the calls table. A ``consumer`` (or the
scenario's) streams the answer to a reader, a voice or a UI; an ``interrupt`` lets the user cut it off
(:mod:`agentsim.sim.streaming`).

The call is the engines' atom: its forms are the runner's and the evaluator's own call primitives
(with admission, retries and fallbacks on the DES when the plan has limits or failures), which
every other kind is built around.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated

from pydantic import Field, model_validator
from pydantic_core import PydanticCustomError

from agentsim.model.base import Prob, Problem, StrictModel, suggest
from agentsim.model.consumers import QOE_TTFT, ConsumerSpec
from agentsim.model.distributions import Dist
from agentsim.model.domain import Of
from agentsim.model.registry import StepKind, consumer_kind, consumer_kinds, register_step
from agentsim.model.steps import StepModel
from agentsim.plan.distributions import Sampler
from agentsim.plan.nodes import (
    INPUT,
    INTERRUPT_P,
    INTERRUPT_X,
    MAX_TOKENS,
    OUTPUT,
    REASONING,
    U_TPS,
    U_TTFT,
    ConsumerCfg,
    InterruptCfg,
    Node,
    can_be_positive,
)

__all__ = ["CallNode", "CallSpec", "CallStep", "InterruptSpec"]

INTERRUPT_AFTER = ("first_token", "first_word", "first_audio")  # what an interruption's delay counts from


class InterruptSpec(StrictModel):
    """The person barges in: with probability ``p``, a time after the first word (token) or the first audio.

    The interruption is the person's (contract v1.2): it happens at its time whether or not the model is
    still generating. Reading and speech stop there; the call is cut (billing stops, the call ends) only
    if it is still running then."""

    p: Annotated[Prob, Of("prob")] = Field(description="Probability that the person interrupts the answer.")
    after_first_token: Annotated[Dist | None, Of("duration")] = Field(
        None, description="Seconds after the first visible token."
    )
    after_first_word: Annotated[Dist | None, Of("duration")] = Field(
        None, description="Or: seconds after the first word the person sees (the first visible token delivered)."
    )
    after_first_audio: Annotated[Dist | None, Of("duration")] = Field(
        None, description="Or: seconds after the first audio (a consumer with a voice, e.g. speech)."
    )

    @model_validator(mode="after")
    def _one(self) -> InterruptSpec:
        given = [k for k in INTERRUPT_AFTER if getattr(self, f"after_{k}") is not None]
        if len(given) != 1:
            raise PydanticCustomError(
                "interrupt_when",
                "an interrupt takes one of after_first_word, after_first_token or after_first_audio; got {got}",
                {"got": ", ".join(f"after_{k}" for k in given) or "none"},
            )
        return self

    @property
    def after(self) -> str:
        """``first_token``, ``first_word`` or ``first_audio``."""
        return next(k for k in INTERRUPT_AFTER if getattr(self, f"after_{k}") is not None)


class CallSpec(StrictModel):
    name: str | None = Field(None, description="Step name, used in records and variant overrides.")
    model: str | None = Field(None, description="A key of models; may be omitted when there is only one.")
    input: Annotated[Dist, Of("tokens")] = Field(0.0, description="New tokens this call adds (on top of the context).")
    output: Annotated[Dist, Of("tokens")] = Field(description="Output tokens (visible; joins the context).")
    reasoning: Annotated[Dist, Of("tokens")] = Field(
        0.0, description="Reasoning tokens: decode time, billed, not in the context."
    )
    speed: str | None = Field(None, description="Speed tier of the model for this call.")
    consumer: ConsumerSpec | None = Field(
        None, description="Who consumes the streamed answer (default: the scenario's consumer)."
    )
    interrupt: InterruptSpec | None = Field(None, description="The user may cut the answer off.")


class CallStep(StepModel):
    call: CallSpec


@dataclass(eq=False)
class CallNode(Node):
    input: Sampler = None
    output: Sampler = None
    reasoning: Sampler = None
    tiers: tuple[int, ...] = ()  # tier index per variant
    consumer: ConsumerCfg | None = None
    interrupt: InterruptCfg | None = None
    kind = "call"
    record = "call"

    def can_take_time(self, tiers) -> bool:
        used = [tiers[t] for t in self.tiers]
        return (
            any(can_be_positive(t.ttft) or math.isfinite(t.prefill_tps) for t in used)
            or can_be_positive(self.output)
            or can_be_positive(self.reasoning)
        )

    def mean_time_lower(self, tiers) -> float:
        """E[TTFT] + E[tokens] / E[TPS] on the fastest tier it runs on (Jensen: E[1/X] >= 1/E[X])."""
        used = [tiers[t] for t in self.tiers]
        tokens = self.output.mean + self.reasoning.mean
        return min(_lower(t, tokens) for t in used)


def _lower(t, tokens: float) -> float:
    """A lower bound of a call's mean time on tier ``t``: E[TTFT] + tokens / E[TPS] at its fastest context size."""
    cs = t.context_speed
    if cs is None:
        return t.ttft.mean * t.ttft_x + tokens / (t.output_tps.mean * t.tps_x)
    gx = cs.ttft.lowest if cs.ttft is not None else 1.0
    fx = cs.tps.highest if cs.tps is not None else 1.0
    return t.ttft.mean * t.ttft_x * gx + tokens / (t.output_tps.mean * t.tps_x * fx)


def compile_call(c, step: CallStep, scope, path) -> CallNode:
    spec = step.call
    p = (*path, "call")
    declared = spec.model if spec.model is not None else next(iter(c.sc.models))
    node = c.new_node(CallNode, spec.name or f"{declared}#{len(c.nodes)}", scope, p)
    node.input = c.sampler(spec.input, (*p, "input"), "input tokens", upper=MAX_TOKENS)
    node.output = c.sampler(spec.output, (*p, "output"), "output tokens", upper=MAX_TOKENS)
    node.reasoning = c.sampler(spec.reasoning, (*p, "reasoning"), "reasoning tokens", upper=MAX_TOKENS)
    node.tiers = _tiers(c, spec, declared, p)
    for purpose in (U_TTFT, U_TPS):
        c.draw(node, purpose, scope, None)
    c.draw(node, INPUT, scope, node.input, integer=True)
    c.draw(node, OUTPUT, scope, node.output, integer=True)
    c.draw(node, REASONING, scope, node.reasoning, integer=True)
    own = spec.consumer is not None
    node.consumer = compile_consumer(
        c, spec.consumer if own else c.sc.consumer, node, (*p, "consumer") if own else ("consumer",)
    )
    if node.consumer is None and spec.interrupt is not None:
        node.consumer = ConsumerCfg("none", 0.0, qoe_ttft=QOE_TTFT, qoe_rate=4.8)  # still reports its stream
    if spec.interrupt is not None:
        it, ip = spec.interrupt, (*p, "interrupt")
        after = it.after
        delay = getattr(it, f"after_{after}")
        node.interrupt = InterruptCfg(it.p, after, c.sampler(delay, (*ip, f"after_{after}"), "interrupt delay"))
        c.draw(node, INTERRUPT_P, scope, None)
        c.draw(node, INTERRUPT_X, scope, node.interrupt.delay)
    return node


def _tiers(c, spec: CallSpec, declared: str, p: tuple) -> tuple[int, ...]:
    """The tier of the call in each variant: keys by its name, then the enclosing names, then its model."""
    tiers = []
    names = c.groups[::-1]  # the call's own name (when named), then the enclosing named steps, innermost first
    for vname, v in c.variants.items():
        vpath = ("variants", vname)
        model = declared
        by_name = next((n for n in names if n in v.model), None)
        if by_name is not None:
            model = v.model[by_name]
        elif declared in v.model:
            model = v.model[declared]
        speed, where = spec.speed or "standard", (*p, "speed")
        by_name = next((n for n in names if n in v.speed), None)
        if by_name is not None:
            speed, where = v.speed[by_name], (*vpath, "speed", by_name)
        elif model in v.speed:
            speed, where = v.speed[model], (*vpath, "speed", model)
        elif spec.speed is not None and model != declared:
            where = (*vpath, "model")
        t = c.tier(model, speed, where)
        tiers.append(t if t is not None else 0)
    return tuple(tiers)


def compile_consumer(c, spec, node, path) -> ConsumerCfg | None:
    """The call's consumer, compiled by its kind (agentsim.consumers), with the QoE expectation."""
    if spec is None:
        return None
    q, kind = spec.qoe, consumer_kind(spec.kind)
    pace = q.tokens_per_s if q is not None and q.tokens_per_s is not None else kind.qoe_pace
    qoe = (q.expected_ttft if q is not None else QOE_TTFT, pace)
    return kind.compile(c, spec.spec, node, path, qoe)


def check(scenario, step: CallStep, path: tuple, previous) -> list[Problem]:
    """The model must exist (or be the only one) and offer the speed tier; after_first_audio needs a voice."""
    c, models = step.call, scenario.models
    names = list(models)
    problems = _check_interrupt(scenario, c, path)
    if c.model is None and len(models) != 1:
        hint = "add model: one of " + ", ".join(names)
        return [Problem((*path, "call"), "this call names no model and the scenario has several", hint), *problems]
    model = c.model if c.model is not None else names[0]
    if model not in models:
        hint = suggest(model, names) or "defined: " + ", ".join(names)
        return [Problem((*path, "call", "model"), f"model '{model}' is not defined under models", hint), *problems]
    tiers = ["standard", *models[model].speeds]
    if c.speed is not None and c.speed not in tiers:
        hint = suggest(c.speed, tiers) or "tiers: " + ", ".join(tiers)
        problems.insert(0, Problem((*path, "call", "speed"), f"model '{model}' has no speed tier '{c.speed}'", hint))
    return problems


def _check_interrupt(scenario, c: CallSpec, path: tuple) -> list[Problem]:
    if c.interrupt is None or c.interrupt.after_first_audio is None:
        return []
    consumer = c.consumer or scenario.consumer
    if consumer is not None and consumer_kind(consumer.kind).first_audio is not None:
        return []
    voices = [name for name, k in consumer_kinds().items() if k.first_audio is not None]
    return [
        Problem(
            (*path, "call", "interrupt", "after_first_audio"),
            f"after_first_audio needs a consumer with a voice ({' or '.join(f'a {v} consumer' for v in voices)}), "
            "and this call has none",
            f"add consumer: {{{voices[0] if voices else 'speech'}: {{...}}}} to the call (or the scenario), "
            "or use after_first_token",
        )
    ]


def stand_in(spec: dict, name: str | None) -> dict:
    """A valid call keeping the broken one's name and model (the references to them still resolve)."""
    model = {"model": spec["model"]} if isinstance(spec.get("model"), str) else {}
    return {"call": {"output": 0, **model, **({"name": name} if name else {})}}


def des(run, node: CallNode, flow, flat: int):
    """The runner's call (admission, attempts and fallbacks when the plan has limits or failures)."""
    return run.call_step(node, flow, flat)


def fast(ev, node: CallNode, st, ix: tuple) -> None:
    """The evaluator's call: every run's instance at ``ix`` at once."""
    ev.call(node, st, ix)


DOCS = (  # the kind's sections of docs/scenarios.md: (its model, heading, example, where it is written)
    (
        CallSpec,
        "Step `call`",
        """\
call: {name: act, model: opus, input: 50, output: 250, reasoning: 300, speed: fast}
""",
        ("call",),
    ),
    (
        InterruptSpec,
        "call.interrupt",
        """\
interrupt: {p: 0.2, after_first_word: {uniform: {low: 1, high: 5}}}
# or: {p: 0.3, after_first_audio: 2}      (needs a voice, e.g. speech); after_first_token: as after_first_word
""",
        ("interrupt",),
    ),
)


KIND = register_step(
    StepKind(
        "call",
        CallStep,
        compile_call,
        des,
        fast,
        check=check,
        stand_in=stand_in,
        docs=DOCS,
        summary="one model request",
    )
)
