"""``turns: {n, think, steps}``: a conversation -- the person's turns, each an agent loop (contract v1.3).

A run of a ``turns`` step runs its ``steps`` (one turn: from the person's message to the agent's answer)
``n`` times in sequence (``n`` drawn per instance, rounded, at least 1). Before every turn after the first
the person thinks for ``think`` seconds (drawn per turn): wall time passes, no model works, and prompt
caches age -- an entry idle longer than its lifetime is gone, and the next call writes it again (the
context's own rule, :mod:`agentsim.sim.context`). The context carries across turns.

What the person waits for is the turns, not their own pauses: each turn's ``turn_s`` runs from its start
(the message) to the end of its last step, and a run's ``waiting_s`` is the sum of its turns' (a run
without ``turns`` waits its whole wall time). The engines keep every turn's duration
(``BlockResult.turns``, through their ``turn_ended`` primitive); the think time is a span of its own node
(a row of the spans table with ``kind: turns``, ``slot: think``) in a breakdown slot of its own, ``think``.

The turns are an instance axis run in turn (``axis = IN_TURN``): both engines run them with their
iteration primitive (``Runner.iterate``, ``Evaluator.iterate``), as ``repeat`` does. A ``turns`` step
cannot run inside a parallel, fan-out or pipeline branch (the person would wait for two turns at once) nor
inside another ``turns``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Annotated

from pydantic import Field

from agentsim.model.base import StrictModel
from agentsim.model.distributions import Dist
from agentsim.model.domain import Of
from agentsim.model.registry import Slot, StepKind, register_step
from agentsim.model.steps import Step, StepModel, in_order
from agentsim.plan.distributions import Sampler
from agentsim.plan.nodes import COUNT, IN_TURN, LATENCY, MAX_SECONDS, Node, SeqNode, can_be_positive, count_bounds_of
from agentsim.sim.slots import index

__all__ = ["THINK", "ThinkNode", "TurnsNode", "TurnsSpec", "TurnsStep"]

# The person's pauses between turns: a breakdown slot of their own (breakdown_s.think, the runs table's think_s)
THINK = Slot("think", "the person's pauses", "think (the person's pause)", "#8c564b")


class TurnsSpec(StrictModel):
    """A conversation: ``n`` turns of the person's, each its ``steps``, ``think`` seconds before each but the first."""

    name: str | None = Field(None, description="Step name, used in records and variant overrides.")
    n: Annotated[Dist, Of("count")] = Field(description="Turns per run (rounded, at least 1).")
    think: Annotated[Dist, Of("duration")] = Field(
        0.0, description="Seconds the person pauses before every turn after the first (drawn per turn)."
    )
    steps: list[Step] = Field(min_length=1, description="One turn: from the person's message to the answer.")


class TurnsStep(StepModel):
    turns: TurnsSpec


@dataclass(eq=False)
class ThinkNode(Node):
    """The person's pause before a turn after the first: a span in the turns' axis (turn 0 has none)."""

    seconds: Sampler = None
    kind = "turns"  # (the spans table's kind: the step it belongs to; its slot says what it is)
    record = "span"
    slot = THINK.name

    def can_take_time(self, tiers) -> bool:
        return can_be_positive(self.seconds)

    def mean_time_lower(self, tiers) -> float:
        return self.seconds.mean


@dataclass(eq=False)
class TurnsNode(Node):
    n: Sampler = None
    think: ThinkNode = None
    body: SeqNode = None
    kind = "turns"
    axis = IN_TURN
    turn = True

    def children(self) -> tuple[Node, ...]:
        return (self.think, self.body)

    def count_bounds(self) -> tuple[float, float]:
        mean, most = count_bounds_of(self.n)
        return max(mean, 1.0), max(most, 1.0)

    def can_take_time(self, tiers) -> bool:
        return self.body.can_take_time(tiers) or (self.count_bounds()[1] > 1 and self.think.can_take_time(tiers))

    def mean_time_lower(self, tiers) -> float:
        return self.count_bounds()[0] * self.body.mean_time_lower(tiers)


def _turn_count(z, draw, by_variant, s: Sampler):
    """Turns of each instance from its normals: the draw rounded, at least 1."""
    import numpy as np

    return np.maximum(np.rint(s.transform(z)), 1).astype(np.int64)


def compile_turns(c, step: TurnsStep, scope, path) -> TurnsNode:
    t = step.turns
    p = (*path, "turns")
    node = c.new_node(TurnsNode, t.name or f"turns{len(c.nodes)}", scope, p)
    if c.branch_depth:
        c.problem(
            p,
            "a turns step is a conversation the person waits through turn by turn; it cannot run inside a "
            "parallel, fanout or pipeline branch",
            "move the turns step out of the branch (a branch may be a turn's step instead)",
        )
    if any(isinstance(c.nodes[i], TurnsNode) for i in scope):
        c.problem(p, "a turns step cannot be inside another turns step", "put the inner steps in the outer turn")
    node.n = c.sampler(t.n, (*p, "n"), "turns n")
    c.draw(node, COUNT, scope, None, transform=partial(_turn_count, s=node.n), counts=True)
    inner = (*scope, node.id)
    node.think = c.new_node(ThinkNode, f"{node.name} think", inner, (*p, "think"))
    node.think.seconds = c.sampler(t.think, (*p, "think"), "think time", upper=MAX_SECONDS)
    c.draw(node.think, LATENCY, inner, node.think.seconds)
    node.body = c.seq(t.steps, inner, (*p, "steps"))
    return node


def sequences(step: TurnsStep, here: tuple):
    yield in_order(step.turns.steps, (*here, "turns", "steps"))


def des(run, node: TurnsNode, flow, flat: int):
    """Turn after turn (the runner's iteration primitive): the person's pause, then the turn, timed."""
    think, body, slot, env = node.think, node.body, index(THINK.name), run.env

    def turn(k: int, at: int):
        if k:
            yield from run.span(think, flow, at, slot, run.value(think, LATENCY, flow.r, at), 0)
        t0 = env.now
        yield from run.seq(body, flow, at)
        run.turn_ended(node, flow, at, t0)

    return run.iterate(node, flow, flat, turn)


def fast(ev, node: TurnsNode, st, ix: tuple) -> None:
    """The same for every run at once (the evaluator's iteration primitive); the first turn has no pause."""
    think, body, slot = node.think, node.body, index(THINK.name)

    def turn(k: int, st_k, ix_k: tuple) -> None:
        if k:
            ev.span(think, st_k, ix_k, slot, ev.values(think, LATENCY, ix_k), None)
        else:
            ev.not_made(think, ix_k)
        t0 = st_k.t
        ev.seq(body, st_k, ix_k)
        ev.turn_ended(node, st_k, ix_k, t0)

    ev.iterate(node, st, ix, turn)


DOCS = (  # the kind's sections of docs/scenarios.md: (its model, heading, example, where it is written)
    (
        TurnsSpec,
        "Step `turns`",
        """\
turns:                                          # a conversation (contract v1.3)
  n: {lognormal: {median: 2, p90: 6}}           # turns per run (rounded, at least 1)
  think: {lognormal: {median: 99, p90: 1300}}   # the person's pause before every turn after the first, s
  steps:                                        # one turn: from the person's message to the answer
    - call: {name: act, model: m, input: 2000, output: 250}
    - tool: {name: run, latency: {lognormal: {median: 9, p90: 67}}}
""",
        ("turns",),
    ),
)


KIND = register_step(
    StepKind(
        "turns",
        TurnsStep,
        compile_turns,
        des,
        fast,
        sequences=sequences,
        slots=(THINK,),
        docs=DOCS,
        units={"TurnsSpec.n": "turns"},
        summary="a conversation: n turns of the person's, each its steps, their pause before all but the first",
    )
)
