"""``tool: {name, latency, output}``: a tool run; it takes ``latency`` seconds, its ``output`` tokens join the context.

Both are drawn per instance. The tool's seconds go to the ``tool`` breakdown slot; each instance is a
row of the spans table (``kind: tool``). A tool cut by a race (a lost ``join: any`` branch) stops at
the join and returns nothing.
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
from agentsim.plan.nodes import LATENCY, MAX_SECONDS, MAX_TOKENS, OUTPUT, Node, can_be_positive
from agentsim.sim.slots import TOOL

__all__ = ["ToolNode", "ToolSpec", "ToolStep"]


class ToolSpec(StrictModel):
    name: str | None = Field(None, description="Step name, used in records and variant overrides.")
    latency: Annotated[Dist, Of("duration")] = Field(description="Seconds the tool runs.")
    output: Annotated[Dist, Of("tokens")] = Field(0.0, description="Tokens the tool returns into the context.")


class ToolStep(StepModel):
    tool: ToolSpec


@dataclass(eq=False)
class ToolNode(Node):
    latency: Sampler = None
    output: Sampler = None
    kind = "tool"
    record = "span"
    slot = "tool"

    def can_take_time(self, tiers) -> bool:
        return can_be_positive(self.latency)

    def mean_time_lower(self, tiers) -> float:
        return self.latency.mean


def compile_tool(c, step: ToolStep, scope, path) -> ToolNode:
    t = step.tool
    p = (*path, "tool")
    node = c.new_node(ToolNode, t.name or f"tool{len(c.nodes)}", scope, p)
    node.latency = c.sampler(t.latency, (*p, "latency"), "tool latency", upper=MAX_SECONDS)
    node.output = c.sampler(t.output, (*p, "output"), "tool output tokens", upper=MAX_TOKENS)
    c.draw(node, LATENCY, scope, node.latency)
    c.draw(node, OUTPUT, scope, node.output, integer=True)
    return node


def des(run, node: ToolNode, flow, flat: int):
    """One timeout of the drawn latency; then the output joins the context."""
    r = flow.r
    return run.span(node, flow, flat, TOOL, run.value(node, LATENCY, r, flat), run.value(node, OUTPUT, r, flat))


def fast(ev, node: ToolNode, st, ix: tuple) -> None:
    """The same for every run at once (masked where the instance does not happen)."""
    ev.span(node, st, ix, TOOL, ev.values(node, LATENCY, ix), ev.values(node, OUTPUT, ix))


DOCS = (  # the kind's sections of docs/scenarios.md: (its model, heading, example, where it is written)
    (
        ToolSpec,
        "Step `tool`",
        """\
tool: {name: run-tests, latency: {lognormal: {median: 1.5, p90: 6}}, output: 800}
""",
        ("tool",),
    ),
)


KIND = register_step(
    StepKind(
        "tool",
        ToolStep,
        compile_tool,
        des,
        fast,
        docs=DOCS,
        summary="a tool run: its latency, and output tokens that join the context",
    )
)
