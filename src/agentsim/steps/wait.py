"""``wait: {name, latency}``: a human or fixed delay -- the step only takes ``latency`` seconds (drawn per instance).

Its seconds go to the ``wait`` breakdown slot; each instance is a row of the spans table (``kind: wait``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from agentsim.model.base import StrictModel
from agentsim.model.distributions import Dist
from agentsim.model.domain import Of
from agentsim.model.registry import StepKind, register_step
from agentsim.model.steps import StepModel
from agentsim.plan.distributions import Sampler
from agentsim.plan.nodes import LATENCY, MAX_SECONDS, Node, can_be_positive
from agentsim.sim.slots import WAIT

__all__ = ["WaitNode", "WaitSpec", "WaitStep"]


class WaitSpec(StrictModel):
    name: str | None = Field(None, description="Step name, used in records and variant overrides.")
    latency: Annotated[Dist, Of("duration")] = Field(description="Seconds of human or fixed delay.")


class WaitStep(StepModel):
    wait: WaitSpec


@dataclass(eq=False)
class WaitNode(Node):
    latency: Sampler = None
    kind = "wait"
    record = "span"
    slot = "wait"

    def can_take_time(self, tiers) -> bool:
        return can_be_positive(self.latency)

    def mean_time_lower(self, tiers) -> float:
        return self.latency.mean


def compile_wait(c, step: WaitStep, scope, path) -> WaitNode:
    w = step.wait
    p = (*path, "wait")
    node = c.new_node(WaitNode, w.name or f"wait{len(c.nodes)}", scope, p)
    node.latency = c.sampler(w.latency, (*p, "latency"), "wait latency", upper=MAX_SECONDS)
    c.draw(node, LATENCY, scope, node.latency)
    return node


def des(run, node: WaitNode, flow, flat: int):
    """One timeout of the drawn latency."""
    return run.span(node, flow, flat, WAIT, run.value(node, LATENCY, flow.r, flat), 0)


def fast(ev, node: WaitNode, st, ix: tuple) -> None:
    ev.span(node, st, ix, WAIT, ev.values(node, LATENCY, ix), None)


DOCS = (  # the kind's sections of docs/scenarios.md: (its model, heading, example, where it is written)
    (
        WaitSpec,
        "Step `wait`",
        """\
wait: {name: human-review, latency: {lognormal: {median: 120, p90: 600}}}
""",
        ("wait",),
    ),
)


KIND = register_step(StepKind("wait", WaitStep, compile_wait, des, fast, docs=DOCS, summary="a human or fixed delay"))
